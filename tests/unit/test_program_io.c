/*
 * test_program_io.c - program files: round trips field by field and by
 * execution, the strict decoder's messages on bad input, and the listing's
 * golden file.
 */
#include "test.h"
#include "kernels.h"
#include "sched/program_io.h"

#include <stdlib.h>
#include <unistd.h>

/* ---- fixtures */

/* A kernel touching every opcode, both loop kinds, tensor operands of
 * activation and tensor_scalar, a reduce output and masked partitions. */
static void k_mix(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_SHARED_HBM);
    nk_tensor out2 = nk_ndarray(nc, NK_SHAPE(64, 1), NK_F32, NK_SHARED_HBM);
    nk_tensor ta = nk_load(nc, args[0]); /* [128, 64]: stationary K x M */
    nk_tensor tb = nk_load(nc, args[1]); /* [128, 256]: moving K x N */
    nk_tensor ps = nk_matmul(nc, ta, tb, 1);
    nk_tensor s = nk_copy(nc, ps, NK_F32);
    nk_tensor col = nk_iota(nc, NK_SHAPE(64, 1), ((nk_affine){1, 1, {0, 0, 0}}), NK_F32);
    nk_tensor act = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_SBUF);
    nk_tensor red = nk_ndarray(nc, NK_SHAPE(64, 1), NK_F32, NK_SBUF);
    nk_isa_activation(nc, act, NK_ACT_TANH, s, nk_col(col), nk_imm(0.5f), red);
    nk_tensor sel = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_SBUF);
    nk_isa_affine_select(nc, sel, ((nk_affine){0, 4, {-1, 0, 0}}), NK_CMP_GE, act, -1.0f);
    nk_tensor m = nk_max(nc, sel, 1, 1);
    nk_tensor t2 = nk_add(nc, sel, m);
    nk_tensor st = nk_ndarray(nc, NK_SHAPE(64, 12), NK_F32, NK_SBUF);
    nk_isa_bn_stats(nc, nk_ix(nc, st, NK_ALL, nk_r(0, 6)), nk_ix(nc, t2, NK_ALL, nk_r(0, 200)));
    nk_isa_bn_stats(nc, nk_ix(nc, st, NK_ALL, nk_r(6, 12)), nk_ix(nc, t2, NK_ALL, nk_r(200, 256)));
    nk_tensor mv = nk_ndarray(nc, NK_SHAPE(64, 2), NK_F32, NK_SBUF);
    nk_isa_bn_aggr(nc, mv, st);
    nk_tensor scan = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_SBUF);
    nk_isa_tensor_tensor_scan(nc, scan, t2, t2, nk_col(m), NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 1);
    nk_tensor stt = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_SBUF);
    nk_isa_scalar_tensor_tensor(nc, stt, t2, NK_ALU_SUBTRACT, nk_imm(0.5f), NK_ALU_MULTIPLY, scan, 1, 0);
    nk_tensor tsr = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_SBUF);
    nk_tensor tsr_r = nk_ndarray(nc, NK_SHAPE(64, 1), NK_F32, NK_SBUF);
    nk_isa_tensor_scalar_reduce(nc, tsr, stt, NK_ALU_MULTIPLY, nk_col(m), NK_ALU_MAX, tsr_r);
    nk_tensor wh = nk_where(nc, tsr, stt, scan), wh_s = nk_where_s(nc, tsr, stt, -2.0f);
    nk_random_seed(nc, nk_ix(nc, tsr_r, nk_r(0, 1), NK_ALL));
    nk_tensor drop = nk_dropout(nc, wh, nk_imm(0.25f)), drop_t = nk_dropout(nc, wh_s, nk_col(tsr_r));
    (void)drop, (void)drop_t;
    nk_tensor dcp = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_SBUF);
    nk_dma_copy(nc, dcp, drop);
    nk_tensor ltr = nk_load_transpose2d(nc, nk_ix(nc, args[1], nk_r(0, 32), nk_r(0, 64)));
    (void)ltr;
    nk_tensor tt = nk_transpose(nc, nk_ix(nc, t2, nk_r(0, 32), nk_r(0, 32)));
    nk_tensor t3 = nk_multiply(nc, nk_ix(nc, t2, nk_r(0, 32), nk_r(0, 32)), tt);
    nk_store(nc, nk_ix(nc, out, nk_r(0, 32), nk_r(0, 32)), t3);
    NK_AFFINE_RANGE(nc, i, 2) {
        nk_tensor acc = nk_zeros(nc, NK_SHAPE(32, 224), NK_F32, NK_SBUF);
        NK_SEQUENTIAL_RANGE(nc, j, 2) {
            nk_tensor part = nk_ix(nc, t2, nk_r(i * 32, i * 32 + 32), nk_r(32 + j * 112, 144 + j * 112));
            nk_tensor sc = nk_multiply_s(nc, part, 0.25f);
            nk_isa_tensor_tensor(nc, nk_ix(nc, acc, NK_ALL, nk_r(j * 112, 112 + j * 112)), sc, sc, NK_ALU_ADD);
        }
        nk_store(nc, nk_ix(nc, out, nk_r(i * 32, i * 32 + 32), nk_r(32, 256)), acc);
    }
    nk_tensor rest = nk_ix(nc, t2, nk_r(32, 64), nk_r(0, 32));
    nk_store(nc, nk_ix(nc, out, nk_r(32, 64), nk_r(0, 32)), rest);
    nk_tensor sum = nk_sum(nc, red, 1, 1);
    nk_store(nc, out2, sum);
    nk_return(nc, out);
    nk_return(nc, out2);
}

static const nk_program *compile_exp(nk_kernel **k, int rows, int cols)
{
    nk_array in;
    int64_t shape[2] = {rows, cols};
    const nk_program *p = NULL;
    *k = nk_kernel_new("tensor_exp", nk_kernel_tensor_exp);
    nk_array_alloc(&in, NK_F32, 2, shape);
    int rc = nk_kernel_compile(*k, &in, 1, NULL, &p);
    if (rc)
        printf("  compile: %s\n", nk_kernel_error(*k));
    nk_array_free(&in);
    return p;
}

static const nk_program *compile_mix(nk_kernel **k, const char *target)
{
    nk_array in[2];
    int64_t sa[2] = {128, 64}, sb[2] = {128, 256};
    nk_options o = {target, 0};
    const nk_program *p = NULL;
    *k = nk_kernel_new("mix", k_mix);
    nk_array_alloc(&in[0], NK_F32, 2, sa);
    nk_array_alloc(&in[1], NK_F32, 2, sb);
    int rc = nk_kernel_compile(*k, in, 2, &o, &p);
    if (rc)
        printf("  compile: %s\n", nk_kernel_error(*k));
    nk_array_free(&in[0]);
    nk_array_free(&in[1]);
    return p;
}

/* ---- an independent field-by-field comparison */

static int same_tensor(const nk_tensor *a, const nk_tensor *b)
{
    if (a->buf != b->buf)
        return 0;
    if (!a->buf)
        return 1;
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->mem != b->mem || a->part0 != b->part0 || a->off != b->off)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] || a->stride[d] != b->stride[d])
            return 0;
    return 1;
}

static void check_same_program(const nk_program *a, const nk_program *b)
{
    CHECK_STR(a->kernel, b->kernel);
    CHECK_STR(a->target, b->target);
    /* b owns its own copy of a's table, value for value */
    CHECK(b->arch == &b->table && b->arch != a->arch);
    if (a->arch && b->arch) {
        CHECK_STR(a->arch->name, b->arch->name);
        CHECK(a->arch->hbm_gbps == b->arch->hbm_gbps && a->arch->pe_ghz == b->arch->pe_ghz &&
              a->arch->dma_engine_gbps == b->arch->dma_engine_gbps);
        CHECK_INT(a->arch->sbuf_partition_bytes, b->arch->sbuf_partition_bytes);
        char *ta = NULL, *tb = NULL;
        CHECK_INT(nk__arch_format(a->arch, &ta), 0);
        CHECK_INT(nk__arch_format(b->arch, &tb), 0);
        if (ta && tb)
            CHECK_STR(ta, tb);
        free(ta);
        free(tb);
    }
    CHECK_INT(a->bufs_default, b->bufs_default);
    CHECK_INT(a->sbuf_peak, b->sbuf_peak);
    CHECK_INT(a->psum_peak, b->psum_peak);
    CHECK_INT(a->ninputs, b->ninputs);
    CHECK_INT(a->noutputs, b->noutputs);
    CHECK_INT(a->nfiles, b->nfiles);
    CHECK_INT(a->nlocs, b->nlocs);
    CHECK_INT(a->nloops, b->nloops);
    CHECK_INT(a->nbufs, b->nbufs);
    CHECK_INT(a->ninstr, b->ninstr);
    CHECK_INT(a->ndeps, b->ndeps);
    CHECK_INT(a->nhbm, b->nhbm);
    if (nk_test_failed())
        return;
    for (uint32_t i = 0; i < a->nfiles; i++)
        CHECK_STR(a->files[i], b->files[i]);
    for (uint32_t i = 0; i < a->nlocs; i++) {
        CHECK_INT(a->locs[i].file, b->locs[i].file);
        CHECK_INT(a->locs[i].line, b->locs[i].line);
    }
    for (uint32_t i = 0; i < a->nloops; i++) {
        const nk_loopinfo *x = &a->loops[i], *y = &b->loops[i];
        CHECK(x->loc == y->loc && x->parent == y->parent && x->trip == y->trip && x->kind == y->kind &&
              x->bufs == y->bufs && x->depth == y->depth);
    }
    for (uint32_t i = 1; i < a->nbufs; i++) {
        const nk_bufinfo *x = &a->bufs[i], *y = &b->bufs[i];
        CHECK(x->mem == y->mem && x->dtype == y->dtype && x->ndim == y->ndim && x->role == y->role &&
              x->index == y->index && x->addr == y->addr && x->bytes == y->bytes && x->loc == y->loc &&
              x->loop == y->loop && x->slot == y->slot && x->nslots == y->nslots);
        for (int d = 0; d < NK_MAXDIM; d++)
            CHECK_INT(x->shape[d], y->shape[d]);
    }
    for (uint32_t i = 0; i < a->ninstr; i++) {
        const nk_instr *x = &a->instrs[i], *y = &b->instrs[i];
        CHECK(x->op == y->op && x->engine == y->engine && x->func == y->func && x->alu0 == y->alu0 &&
              x->alu1 == y->alu1 && x->cmp == y->cmp && x->axis == y->axis && x->nsrc == y->nsrc &&
              x->flags == y->flags && x->queue == y->queue && x->loc == y->loc && x->loop == y->loop &&
              x->iter == y->iter && x->ndep == y->ndep && x->dep_off == y->dep_off);
        const nk_xarg *xa = nk__xarg(a, x), *ya = nk__xarg(b, y);
        CHECK(!memcmp(&xa->imm0, &ya->imm0, sizeof xa->imm0) && !memcmp(&xa->imm1, &ya->imm1, sizeof xa->imm1));
        CHECK(!memcmp(&xa->aff, &ya->aff, sizeof xa->aff));
        nk_tensor xd = nk__opnd_tensor(a, &x->dst), yd = nk__opnd_tensor(b, &y->dst);
        nk_tensor x2 = nk__opnd_tensor(a, nk__dst2(a, x)), y2 = nk__opnd_tensor(b, nk__dst2(b, y));
        CHECK(same_tensor(&xd, &yd) && same_tensor(&x2, &y2));
        for (int k = 0; k < 3; k++) {
            nk_tensor xs = nk__opnd_tensor(a, nk__src(a, x, k)), ys = nk__opnd_tensor(b, nk__src(b, y, k));
            CHECK(same_tensor(&xs, &ys));
        }
        for (uint32_t k = 0; k < x->ndep && k < y->ndep; k++)
            CHECK_INT(a->deps[x->dep_off + k], b->deps[y->dep_off + k]);
        if (nk_test_failed()) {
            printf("  first difference at instruction %u\n", i);
            return;
        }
    }
    for (int i = 0; i < a->ninputs; i++)
        CHECK_INT(a->input_buf[i], b->input_buf[i]);
    for (int i = 0; i < a->noutputs; i++)
        CHECK_INT(a->output_buf[i], b->output_buf[i]);
    for (uint32_t i = 0; i < a->nhbm; i++)
        CHECK_INT(a->hbm_list[i], b->hbm_list[i]);
}

/* Runs p on deterministic inputs; outputs are allocated into outs. */
static int run_program(const nk_program *p, nk_array *outs)
{
    nk_array in[8]; /* at least NK_KERNEL_MAX_ARGS */
    int n = nk_program_num_inputs(p), rc = 0;
    for (int i = 0; i < n; i++) {
        nk_array d;
        nk_program_input(p, i, &d);
        nk_array_alloc(&in[i], d.dtype, d.ndim, d.shape);
        size_t n = nk_array_numel(&in[i]);
        float *x = malloc(n * sizeof *x);
        for (size_t e = 0; x && e < n; e++)
            x[e] = (float)((int)((e * 7 + (size_t)i * 13) % 61) - 30) / 16.0f;
        if (x)
            nk_convert_from_f32(d.dtype, x, in[i].data, n);
        free(x);
    }
    for (int i = 0; i < nk_program_num_outputs(p); i++) {
        nk_array d;
        nk_program_output(p, i, &d);
        nk_array_alloc(&outs[i], d.dtype, d.ndim, d.shape);
    }
    rc = nk_program_run(p, in, n, outs, nk_program_num_outputs(p));
    for (int i = 0; i < n; i++)
        nk_array_free(&in[i]);
    return rc;
}

static void check_same_outputs(const nk_program *a, const nk_program *b)
{
    nk_array oa[4], ob[4];
    CHECK_INT(run_program(a, oa), 0);
    CHECK_INT(run_program(b, ob), 0);
    for (int i = 0; i < nk_program_num_outputs(a); i++) {
        CHECK_INT(nk_array_nbytes(&oa[i]), nk_array_nbytes(&ob[i]));
        CHECK(!memcmp(oa[i].data, ob[i].data, nk_array_nbytes(&oa[i])));
        nk_array_free(&oa[i]);
        nk_array_free(&ob[i]);
    }
}

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
    static char path[128];
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/nklab-progio-XXXXXX");
        if (!mkdtemp(tmpdir))
            return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

/* Removes the (emptied) temporary directory. */
static void tmp_done(void)
{
    if (tmpdir[0])
        rmdir(tmpdir);
    tmpdir[0] = 0;
}

/* Encodes p, lets edit change the bytes, decodes; returns the status and
 * leaves the message in err. */
static int decode_bytes(const uint8_t *b, size_t n, char *err, size_t errlen)
{
    nk_rd r;
    nk_program *q = NULL;
    nk__rd_init(&r, b, n, err, errlen);
    int rc = nk__program_decode(&r, &q);
    if (!rc)
        rc = nk__rd_end(&r);
    nk__program_destroy(q);
    return rc;
}

/* Through the encoder and the decoder: a new program (owned), or NULL. */
static nk_program *reencode(const nk_program *p)
{
    nk_wr w = {0};
    nk_program *q = NULL;
    char err[256] = "";
    if (nk__program_encode(p, &w) == 0) {
        nk_rd r;
        nk__rd_init(&r, w.p, w.n, err, sizeof err);
        if (nk__program_decode(&r, &q) || nk__rd_end(&r)) {
            printf("  decode: %s\n", err);
            nk__program_destroy(q);
            q = NULL;
        }
    }
    nk__wr_free(&w);
    return q;
}

/* Decodes a copy of p changed by edit and returns the decoder's message. */
static int decode_edited(const nk_program *p, void (*edit)(nk_program *), char *err, size_t errlen)
{
    nk_program *q = NULL;
    int rc = nk__program_copy(p, &q);
    if (rc)
        return 1000 + rc;
    edit(q);
    nk_wr w = {0};
    nk__program_encode(q, &w);
    rc = decode_bytes(w.p, w.n, err, errlen);
    nk__wr_free(&w);
    nk__program_destroy(q);
    return rc;
}

/* ---- round trips */

TEST(program_io_traced_programs_pass_the_validator)
{
    nk_kernel *k1, *k2, *k3;
    const nk_program *a = compile_exp(&k1, 250, 512), *b = compile_mix(&k2, "trn1"), *c = compile_mix(&k3, "trn2");
    char err[256] = "";
    CHECK(a && b && c);
    if (a && b && c) {
        CHECK_INT(nk__program_check(a, err, sizeof err), 0);
        CHECK_INT(nk__program_check(b, err, sizeof err), 0);
        CHECK_INT(nk__program_check(c, err, sizeof err), 0);
        if (err[0])
            printf("  %s\n", err);
        /* the mix kernel covers every opcode */
        int seen[NK_OP_COUNT] = {0};
        for (uint32_t i = 0; i < b->ninstr; i++)
            seen[b->instrs[i].op] = 1;
        for (int op = 0; op < NK_OP_COUNT; op++)
            CHECK(seen[op]);
    }
    nk_kernel_free(k1);
    nk_kernel_free(k2);
    nk_kernel_free(k3);
}

TEST(program_io_roundtrip_in_memory_equals_field_by_field)
{
    const char *targets[2] = {"trn1", "trn2"};
    for (int t = 0; t < 2; t++) {
        nk_kernel *k;
        const nk_program *p = compile_mix(&k, targets[t]);
        CHECK(p != NULL);
        nk_program *q = p ? reencode(p) : NULL, *c = NULL;
        CHECK(q != NULL);
        if (p && q) {
            CHECK_INT(q->owned, 1);
            check_same_program(p, q);
            check_same_outputs(p, q);
        }
        /* the direct deep copy agrees too */
        CHECK_INT(p ? nk__program_copy(p, &c) : -1, 0);
        if (p && c) {
            CHECK_INT(c->owned, 1);
            check_same_program(p, c);
            CHECK(c->instrs != p->instrs && c->deps != p->deps && c->files[0] != p->files[0]);
            /* the mix kernel has third sources and reduce outputs: the side table is copied too */
            CHECK(p->nxop > 0 && c->nxop == p->nxop && c->xop != p->xop);
        }
        nk_program_free(c);
        nk_program_free(q);
        nk_kernel_free(k);
    }
}

/* The operands held apart from the records (third sources, reduce outputs):
 * as many as the instructions that have them, and an index past the table
 * is a broken program, not a read out of bounds. */
TEST(program_io_side_table_holds_exactly_the_operands_used)
{
    nk_kernel *k;
    const nk_program *p = compile_mix(&k, "trn1");
    CHECK(p != NULL);
    if (!p)
        return;
    uint32_t want = 0, at = UINT32_MAX;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        want += (in->xsrc2 != 0) + (in->xdst2 != 0);
        CHECK(!!in->xsrc2 == (in->nsrc > 2 && nk__src(p, in, 2)->buf != 0));
        CHECK(!!in->xdst2 == (nk__dst2(p, in)->buf != 0));
        if (in->xsrc2 && at == UINT32_MAX)
            at = i;
    }
    CHECK(want > 0 && p->nxop == want);
    nk_program *q = NULL;
    CHECK_INT(nk__program_copy(p, &q), 0);
    if (q && at != UINT32_MAX) {
        char err[256] = "";
        q->instrs[at].xsrc2 = q->nxop + 1;
        CHECK_INT(nk__program_check(q, err, sizeof err), NK_EFORMAT);
        char msg[160];
        snprintf(msg, sizeof msg, "instruction %u: operands %u, %u outside the side table of %u", at, q->nxop + 1,
                 q->instrs[at].xdst2, q->nxop);
        CHECK_STR(err, msg);
        q->instrs[at].xsrc2 = 0; /* the source dropped: the op's count of sources no longer holds */
        CHECK_INT(nk__program_check(q, err, sizeof err), NK_EFORMAT);
    }
    nk_program_free(q);
    nk_kernel_free(k);
}

TEST(program_io_every_builtin_kernel_roundtrips)
{
    for (int i = 0; i < nk_builtin_kernel_count; i++) {
        const nk_kernel_info *ki = &nk_builtin_kernels[i];
        nk_array in[NK_KERNEL_MAX_ARGS];
        for (int a = 0; a < ki->nargs; a++)
            nk_array_alloc(&in[a], ki->args[a].dtype, ki->args[a].ndim, ki->args[a].shape);
        nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
        const nk_program *p = NULL;
        nk_program *q = NULL;
        char err[256] = "";
        int rc = nk_kernel_compile(k, in, ki->nargs, NULL, &p);
        CHECK_INT(rc, 0);
        if (!rc) {
            CHECK_INT(nk__program_check(p, err, sizeof err), 0);
            if (err[0])
                printf("  %s: %s\n", ki->name, err);
            q = reencode(p);
            CHECK(q != NULL);
        }
        if (q) {
            check_same_program(p, q);
            check_same_outputs(p, q);
        }
        nk_program_free(q);
        nk_kernel_free(k);
        for (int a = 0; a < ki->nargs; a++)
            nk_array_free(&in[a]);
    }
}

TEST(program_io_save_load_file_roundtrip_and_same_outputs)
{
    nk_kernel *k;
    const nk_program *p = compile_exp(&k, 250, 512);
    const char *path = tmp_path("exp.nkprog");
    nk_program *q = NULL;
    char err[256] = "";
    CHECK_INT(nk_program_save(p, path), 0);
    CHECK_INT(nk_program_load(path, &q, err, sizeof err), 0);
    CHECK_STR(err, "");
    if (q) {
        check_same_program(p, q);
        check_same_outputs(p, q);
        /* the loaded program is timed and listed like the original */
        char *t1 = NULL, *t2 = NULL;
        CHECK_INT(nk_program_dump(p, &t1), 0);
        CHECK_INT(nk_program_dump(q, &t2), 0);
        CHECK_STR(t1, t2);
        free(t1);
        free(t2);
    }
    nk_program_free(q);
    unlink(path);
    tmp_done();
    nk_kernel_free(k);
}

TEST(program_io_file_is_little_endian_with_header)
{
    nk_kernel *k;
    const nk_program *p = compile_exp(&k, 250, 512);
    const char *path = tmp_path("hdr.nkprog");
    CHECK_INT(nk_program_save(p, path), 0);
    uint8_t *d = NULL;
    size_t n = 0;
    char err[128];
    CHECK_INT(nk__file_read_all(path, &d, &n, err, sizeof err), 0);
    CHECK(n > 64);
    if (d && n > 64) {
        CHECK(!memcmp(d, "NKLABPRG", 8));
        CHECK(d[8] == 7 && d[9] == 0 && d[10] == 0 && d[11] == 0); /* format version 7, little-endian */
        uint64_t len = 0, sum = 0;
        for (int i = 7; i >= 0; i--) {
            len = len << 8 | d[16 + i];
            sum = sum << 8 | d[24 + i];
        }
        CHECK_INT(len, n - 32);
        CHECK(nk__checksum(d + 32, n - 32) == sum); /* XXH64: see program_io_checksum_is_xxh64 */
        CHECK(!memcmp(d + 32, "META", 4));
        /* META: u64 length, then the version string with a u32 length */
        CHECK_INT(d[36], 4 + strlen(NK_VERSION));
        CHECK_INT(d[44], strlen(NK_VERSION));
        CHECK(!memcmp(d + 48, NK_VERSION, strlen(NK_VERSION)));
    }
    free(d);
    unlink(path);
    tmp_done();
    nk_kernel_free(k);
}

/* ---- the decoder's messages */

static void e_buf(nk_program *q) { q->instrs[2].src[0].buf = 99; }
static void e_dep(nk_program *q) { q->deps[q->instrs[4].dep_off] = 4; }
static void e_target(nk_program *q) { snprintf(q->target, sizeof q->target, "trn9"); }
static void e_loc(nk_program *q) { q->instrs[1].loc = 500; }
static void e_dtype(nk_program *q) { q->bufs[1].dtype = NK_DTYPE_COUNT; }
static void e_op(nk_program *q) { q->instrs[0].op = 255; }
static void e_engine(nk_program *q) { q->instrs[1].engine = NK_ENGINE_TENSOR; }
static void e_file(nk_program *q) { q->locs[0].file = 7; }
static void e_loop(nk_program *q) { q->instrs[0].iter = 2; }
static void e_bounds(nk_program *q) { q->instrs[0].src[0].off = 250 * 512; }
static void e_part(nk_program *q) { q->instrs[2].dst.part0 = 64; }
static void e_psum(nk_program *q) { q->psum_peak = 1 << 20; }
static void e_role(nk_program *q) { q->bufs[2].index = 3; }
static void e_nsrc(nk_program *q) { q->instrs[1].nsrc = 3; }
static void e_queue(nk_program *q) { q->instrs[0].queue = 16; }
static void e_tile(nk_program *q) { q->bufs[3].addr = 8192; }
/* An operand edited through its access pattern (the layout interned anew). */
#define EDIT_OPND(q, o, stmt)                                                                                    \
    do {                                                                                                       \
        nk_tensor t_ = nk__opnd_tensor((q), (o));                                                              \
        stmt;                                                                                                  \
        nk__opnd_set((q), (o), &t_);                                                                           \
    } while (0)
static void e_shape(nk_program *q) { EDIT_OPND(q, &q->instrs[1].dst, t_.shape[1] = 256); }
static void e_huge(nk_program *q) { q->bufs[3].bytes = INT64_MAX; } /* address + bytes would overflow */
static void e_span(nk_program *q) { EDIT_OPND(q, &q->instrs[0].src[0], t_.stride[0] = (int64_t)1 << 40); } /* 127 * 2^40 + 511 */
static void e_mem(nk_program *q) { EDIT_OPND(q, &q->instrs[0].dst, t_.mem = NK_PSUM); }
static void e_vdtype(nk_program *q) { EDIT_OPND(q, &q->instrs[1].src[0], t_.dtype = NK_F16); } /* a view reinterpreting its tile */
static void e_align(nk_program *q) { q->bufs[4].addr = 4098; }
static void e_peak(nk_program *q) { q->sbuf_peak = 8193; } /* the executor's partition stride */

TEST(program_io_decoder_rejects_bad_fields_with_exact_messages)
{
    nk_kernel *k;
    const nk_program *p = compile_exp(&k, 250, 512);
    /* tensor_exp [250, 512]: buffer 1 the input, 2 the output, 3..6 tiles;
     * per 128-row tile a load, an activation and a store (6 instructions);
     * 6 locations in 2 files */
    struct {
        void (*edit)(nk_program *);
        const char *msg;
    } cases[] = {
        {e_buf, "instruction 2: src[0]: buffer 99 out of range (1..6)"},
        {e_dep, "instruction 4: depends on instruction 4, which is not earlier"},
        {e_target, "TARG: the table is target 'trn1', the header names 'trn9'"},
        {e_loc, "instruction 1: location 500 out of range (6 locations)"},
        {e_dtype, "buffer 1: memory 0, dtype 12, rank 2 or role 0 out of range"},
        {e_op, "instruction 0: opcode 255 out of range"},
        {e_engine, "instruction 1: activation cannot run on engine 0"},
        {e_file, "location 0: file 7 out of range (2 files)"},
        {e_loop, "instruction 0: loop 1 iteration 2 out of range"},
        {e_bounds, "instruction 0: src[0]: elements 128000..193535 outside buffer 1 of 512000 bytes"},
        {e_part, "instruction 2: dst: offset 0 or first partition 64 invalid"},
        {e_psum, "PSUM peak 1048576 outside 0..16384 bytes per partition"},
        {e_role, "buffer 2: output index 3 out of range (0..0)"},
        {e_nsrc, "instruction 1: 3 source operands, activation takes 1"},
        {e_queue, "instruction 0: DMA queue 16 invalid for engine dma"},
        {e_tile, "buffer 3: tile of 2048 bytes at 8192 outside the SBUF peak of 8192 bytes per partition"},
        {e_shape, "instruction 1: activation writes 32768 elements from 65536"},
        {e_huge, "buffer 3: tile of 9223372036854775807 bytes at 0 outside the SBUF peak of 8192 bytes per partition"},
        {e_span, "instruction 0: src[0]: elements 0..139637976728063 outside buffer 1 of 512000 bytes"},
        {e_mem, "instruction 0: dst: memory 2 or dtype 0 differ from buffer 3's (1, 0), or rank 2"},
        {e_vdtype, "instruction 1: src[0]: memory 1 or dtype 2 differ from buffer 3's (1, 0), or rank 2"},
        {e_align, "buffer 4: tile address 4098 not a multiple of the 64-byte allocation unit"},
        {e_peak, "SBUF peak 8193 or PSUM peak 0 not a multiple of the allocation unit (64, 2048 bytes)"},
    };
    for (size_t i = 0; p && i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        CHECK_INT(decode_edited(p, cases[i].edit, err, sizeof err), NK_EFORMAT);
        CHECK_STR(err, cases[i].msg);
    }
    nk_kernel_free(k);
}

static void put32(uint8_t *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

TEST(program_io_decoder_rejects_every_truncation_and_bad_structure)
{
    nk_kernel *k;
    const nk_program *p = compile_exp(&k, 250, 512);
    nk_wr w = {0};
    char err[256];
    CHECK_INT(nk__program_encode(p, &w), 0);
    CHECK_INT(decode_bytes(w.p, w.n, err, sizeof err), 0);
    /* every proper prefix fails cleanly */
    int fails = 0;
    for (size_t n = 0; n < w.n; n++)
        fails += decode_bytes(w.p, n, err, sizeof err) == NK_EFORMAT;
    CHECK_INT(fails, w.n);
    CHECK_INT(decode_bytes(w.p, 10, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "truncated: 8 bytes needed at offset 4, 6 left");
    /* the layout: PHDR (12-byte section header + fields), TARG, then FILE */
    uint8_t *b = malloc(w.n + 1);
    memcpy(b, w.p, w.n);
    size_t phdr_len = b[4] | (size_t)b[5] << 8, targ_at = 12 + phdr_len;
    CHECK(!memcmp(b + targ_at, "TARG", 4));
    size_t targ_len = b[targ_at + 4] | (size_t)b[targ_at + 5] << 8 | (size_t)b[targ_at + 6] << 16;
    size_t file_at = targ_at + 12 + targ_len;
    CHECK(!memcmp(b + file_at, "FILE", 4));
    put32(b + file_at + 12, 1000000); /* file count far beyond the section */
    CHECK_INT(decode_bytes(b, w.n, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "FILE: files: count 1000000 needs at least 4000000 bytes, 38 left");
    memcpy(b, w.p, w.n);
    memcpy(b + file_at, "FILF", 4);
    CHECK_INT(decode_bytes(b, w.n, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "expected section FILE, found 'FILF'");
    memcpy(b, w.p, w.n);
    b[w.n] = 0;
    CHECK_INT(decode_bytes(b, w.n + 1, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "1 unexpected bytes after the last field");
    /* a buffer record cut after a bad rank: the rank is never used */
    size_t bufs_at = 0;
    for (size_t i = 0; i + 4 <= w.n; i++)
        if (!memcmp(w.p + i, "BUFS", 4)) {
            bufs_at = i;
            break;
        }
    CHECK(bufs_at > 0);
    /* three records pass the count check (3 x 12 <= 36 bytes: four bytes,
     * then eight variable-length fields of one byte at least) when two
     * rank-4 records (15 bytes each, every field 0) leave 6 for the third */
    uint8_t cut[12 + 40];
    memset(cut, 0, sizeof cut);
    memcpy(cut, "BUFS", 4);
    cut[4] = 40;
    cut[12] = 3;
    for (int r = 0; r < 2; r++)
        cut[16 + 15 * r + 2] = 4; /* rank 4 */
    cut[16 + 30 + 2] = 200;       /* the third: rank 200, then an index cut short */
    cut[16 + 34] = cut[16 + 35] = 0x80;
    memcpy(b, w.p, bufs_at);
    memcpy(b + bufs_at, cut, sizeof cut);
    CHECK_INT(decode_bytes(b, bufs_at + sizeof cut, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "BUFS: truncated: variable-length integer at offset 38 runs past the end");
    /* a NUL inside a recorded file name */
    memcpy(b, w.p, w.n);
    b[file_at + 12 + 4 + 4] = 0; /* first byte of the first file name */
    CHECK_INT(decode_bytes(b, w.n, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "FILE: file name: contains a NUL byte");
    free(b);
    nk__wr_free(&w);
    nk_kernel_free(k);
}

static int write_bytes(const char *path, const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t k = fwrite(b, 1, n, f);
    fclose(f);
    return k == n ? 0 : -1;
}

static int load_status(const char *path, char *err, size_t errlen)
{
    nk_program *q = NULL;
    int rc = nk_program_load(path, &q, err, errlen);
    CHECK(rc ? q == NULL : q != NULL);
    nk_program_free(q);
    return rc;
}

TEST(program_io_load_rejects_corrupt_foreign_and_future_files)
{
    nk_kernel *k;
    const nk_program *p = compile_exp(&k, 250, 512);
    const char *good = tmp_path("good.nkprog");
    char path[160], err[256];
    snprintf(path, sizeof path, "%s", tmp_path("bad.nkprog"));
    CHECK_INT(nk_program_save(p, good), 0);
    uint8_t *d = NULL;
    size_t n = 0;
    CHECK_INT(nk__file_read_all(good, &d, &n, err, sizeof err), 0);
    uint8_t *b = malloc(n);
    if (!d || !b)
        return;

    memcpy(b, d, n);
    memcpy(b, "NOTNKLAB", 8);
    write_bytes(path, b, n);
    CHECK_INT(load_status(path, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "not an nklab program file (wrong magic number)");

    memcpy(b, d, n);
    memcpy(b, NK_MAGIC_PROFILE, 8);
    write_bytes(path, b, n);
    CHECK_INT(load_status(path, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "not an nklab program file: this is an nklab profile");

    memcpy(b, d, n);
    b[8] = 8;
    write_bytes(path, b, n);
    CHECK_INT(load_status(path, err, sizeof err), NK_EVERSION);
    CHECK_STR(err, "format version 8 is newer than this nklab reads (7); use a newer nklab");

    memcpy(b, d, n); /* version 1 is read, with its own checksum (FNV-1a), which this content fails */
    b[8] = 1;
    write_bytes(path, b, n);
    CHECK_INT(load_status(path, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "checksum mismatch: the content is corrupt");

    memcpy(b, d, n);
    b[8] = 0;
    write_bytes(path, b, n);
    CHECK_INT(load_status(path, err, sizeof err), NK_EVERSION);
    CHECK_STR(err, "format version 0 is not a valid version");

    write_bytes(path, d, n - 1);
    CHECK_INT(load_status(path, err, sizeof err), NK_EFORMAT);
    char want[160];
    snprintf(want, sizeof want, "truncated: the header announces %zu bytes of content, the file holds %zu", n - 32,
             n - 33);
    CHECK_STR(err, want);

    write_bytes(path, d, 20);
    CHECK_INT(load_status(path, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "truncated: 20 bytes, shorter than the 32-byte header");

    memcpy(b, d, n);
    b[n / 2] ^= 0x10;
    write_bytes(path, b, n);
    CHECK_INT(load_status(path, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "checksum mismatch: the content is corrupt");

    CHECK_INT(load_status(tmp_path("missing.nkprog"), err, sizeof err), NK_EIO);
    CHECK_STR(err, "cannot open: No such file or directory");

    /* a well-formed file holding an invalid program names the section */
    nk_program *q = NULL;
    CHECK_INT(nk__program_copy(p, &q), 0);
    e_buf(q);
    CHECK_INT(nk_program_save(q, path), 0);
    CHECK_INT(load_status(path, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "PROG: instruction 2: src[0]: buffer 99 out of range (1..6)");
    nk_program_free(q);

    free(b);
    free(d);
    unlink(path);
    unlink(good);
    tmp_done();
    nk_kernel_free(k);
}


TEST(program_io_dump_tensor_exp_matches_golden)
{
    nk_kernel *k;
    const nk_program *p = compile_exp(&k, 250, 512);
    char *text = NULL;
    CHECK_INT(nk_program_dump(p, &text), 0);
    if (text) {
        /* one line per instruction after the header */
        int lines = 0;
        for (const char *s = strstr(text, "6 instructions:\n"); s && *s; s++)
            lines += *s == '\n';
        CHECK_INT(lines, 1 + 6);
        CHECK_GOLDEN("program_dump_tensor_exp.txt", text);
    }
    free(text);
    nk_kernel_free(k);
}

/* ---- the checksum and the variable-length fields */

TEST(program_io_checksum_is_xxh64)
{
    /* XXH64 with seed 0 of these inputs, as the xxHash library (0.8.1)
     * computes them */
    uint8_t k[1024];
    for (int i = 0; i < 1024; i++)
        k[i] = (uint8_t)i;
    const char *s52 = "nklab checksum: 32 bytes or more, in four lanes of 8";
    CHECK(nk__checksum("", 0) == 0xef46db3751d8e999ull);
    CHECK(nk__checksum("abc", 3) == 0x44bc2cf5ad770999ull);
    CHECK_INT(strlen(s52), 52);
    CHECK(nk__checksum(s52, 52) == 0x9c7a8f8203aeed99ull);
    CHECK(nk__checksum(k, 1024) == 0x6f3914f18fe4df57ull);
}

/* The bytes w holds, as hex. */
static const char *hex(const nk_wr *w)
{
    static char s[256];
    size_t k = 0;
    for (size_t i = 0; i < w->n && k + 3 < sizeof s; i++)
        k += (size_t)snprintf(s + k, sizeof s - k, "%s%02x", i ? " " : "", w->p[i]);
    s[k] = 0;
    return s;
}

static const char *uv_bytes(uint64_t v)
{
    nk_wr w = {0};
    nk__wr_uv(&w, v);
    const char *s = hex(&w);
    nk__wr_free(&w);
    return s;
}

static const char *sv_bytes(int64_t v)
{
    nk_wr w = {0};
    nk__wr_sv(&w, v);
    const char *s = hex(&w);
    nk__wr_free(&w);
    return s;
}

static const char *fc_bytes(double v)
{
    nk_wr w = {0};
    nk__wr_fc(&w, v);
    const char *s = hex(&w);
    nk__wr_free(&w);
    return s;
}

TEST(program_io_variable_length_fields_have_their_documented_bytes)
{
    /* LEB128: seven bits a byte, low group first, high bit = more follow */
    CHECK_STR(uv_bytes(0), "00");
    CHECK_STR(uv_bytes(127), "7f");
    CHECK_STR(uv_bytes(128), "80 01");
    CHECK_STR(uv_bytes(300), "ac 02");
    CHECK_STR(uv_bytes(16384), "80 80 01");
    CHECK_STR(uv_bytes(1ull << 63), "80 80 80 80 80 80 80 80 80 01");
    CHECK_STR(uv_bytes(UINT64_MAX), "ff ff ff ff ff ff ff ff ff 01");
    /* zigzag: 0, -1, 1, -2 ... as 0, 1, 2, 3 ... */
    CHECK_STR(sv_bytes(0), "00");
    CHECK_STR(sv_bytes(-1), "01");
    CHECK_STR(sv_bytes(1), "02");
    CHECK_STR(sv_bytes(-65), "81 01");
    CHECK_STR(sv_bytes(INT64_MAX), "fe ff ff ff ff ff ff ff ff 01");
    CHECK_STR(sv_bytes(INT64_MIN), "ff ff ff ff ff ff ff ff ff 01");
    /* fc: the bits byte-reversed; 1.0 is 0x3ff0000000000000 -> 0xf03f */
    CHECK_STR(fc_bytes(0.0), "00");
    CHECK_STR(fc_bytes(1.0), "bf e0 03");
    CHECK_STR(fc_bytes(-0.0), "80 01");
    /* fx: the xor with a nearby value; equal values take one byte */
    nk_wr w = {0};
    nk__wr_fx(&w, 1234.5, 1234.5);
    CHECK_STR(hex(&w), "00");
    nk__wr_free(&w);
}

TEST(program_io_variable_length_fields_round_trip_every_value)
{
    const uint64_t u[] = {0, 1, 127, 128, 255, 16383, 16384, 1u << 31, UINT32_MAX, 1ull << 35, 1ull << 63,
                          UINT64_MAX - 1, UINT64_MAX};
    const int64_t sv[] = {0, -1, 1, -64, 64, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX, -1234567890123ll};
    double nan_payload;
    uint64_t nb = 0x7ff8000000001234ull;
    memcpy(&nan_payload, &nb, sizeof nb);
    const double d[] = {0.0, -0.0, 1.0, 0.1, 1e-310, -3.5e300, INFINITY, -INFINITY, nan_payload, 39391215.75};
    nk_wr w = {0};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        nk__wr_uv(&w, u[i]);
    for (size_t i = 0; i < sizeof sv / sizeof sv[0]; i++)
        nk__wr_sv(&w, sv[i]);
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        nk__wr_fc(&w, d[i]);
        nk__wr_fx(&w, d[i], i ? d[i - 1] : 0.0);
    }
    nk_rd r;
    char err[128] = "";
    nk__rd_init(&r, w.p, w.n, err, sizeof err);
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        CHECK(nk__rd_uv(&r) == u[i]);
    for (size_t i = 0; i < sizeof sv / sizeof sv[0]; i++)
        CHECK(nk__rd_sv(&r) == sv[i]);
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        double a = nk__rd_fc(&r), b = nk__rd_fx(&r, i ? d[i - 1] : 0.0);
        CHECK(!memcmp(&a, &d[i], sizeof a) && !memcmp(&b, &d[i], sizeof b)); /* bit for bit */
    }
    CHECK_INT(nk__rd_end(&r), 0);
    CHECK_STR(err, "");
    nk__wr_free(&w);
}

/* Reads one uv (kind 0), uv32 (1) or sv32 (2) from bytes followed by pad
 * bytes; returns the status, the message in err. */
static int read_one(const uint8_t *b, size_t n, size_t pad, int kind, char *err, size_t errlen)
{
    uint8_t buf[32] = {0};
    memcpy(buf, b, n);
    nk_rd r;
    nk__rd_init(&r, buf, n + pad, err, errlen);
    if (kind == 0)
        (void)nk__rd_uv(&r);
    else if (kind == 1)
        (void)nk__rd_uv32(&r);
    else
        (void)nk__rd_sv32(&r);
    return r.rc;
}

TEST(program_io_variable_length_fields_reject_other_encodings)
{
    static const uint8_t overlong[] = {0x80, 0x00};      /* 0 in two bytes */
    static const uint8_t wide[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}; /* 2^64 */
    static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    static const uint8_t cut[] = {0x80};
    static const uint8_t u33[] = {0x80, 0x80, 0x80, 0x80, 0x10}; /* 2^32 */
    static const uint8_t s33[] = {0x81, 0x80, 0x80, 0x80, 0x10}; /* zigzag 2^32 + 1: -2^31 - 1 */
    char err[128];
    /* without and with bytes after them (the decoder's two paths) */
    for (size_t pad = 0; pad <= 12; pad += 12) {
        CHECK_INT(read_one(overlong, sizeof overlong, pad, 0, err, sizeof err), NK_EFORMAT);
        CHECK_STR(err, "malformed variable-length integer at offset 0");
        CHECK_INT(read_one(wide, sizeof wide, pad, 0, err, sizeof err), NK_EFORMAT);
        CHECK_STR(err, "malformed variable-length integer at offset 0");
        CHECK_INT(read_one(eleven, sizeof eleven, pad, 0, err, sizeof err), NK_EFORMAT);
        CHECK_STR(err, "malformed variable-length integer at offset 0");
        CHECK_INT(read_one(u33, sizeof u33, pad, 1, err, sizeof err), NK_EFORMAT);
        CHECK_STR(err, "integer 4294967296 at offset 0 exceeds 32 bits");
        CHECK_INT(read_one(s33, sizeof s33, pad, 2, err, sizeof err), NK_EFORMAT);
        CHECK_STR(err, "integer -2147483649 at offset 0 exceeds 32 bits");
        CHECK_INT(read_one(u33, sizeof u33, pad, 0, err, sizeof err), 0);
    }
    CHECK_INT(read_one(cut, sizeof cut, 0, 0, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "truncated: variable-length integer at offset 0 runs past the end");
}
