/*
 * test_language.c - NKI's kernel language in the tracer: tile arrays,
 * writes into tiles (and the folds they allow), scalar arguments, affine
 * access patterns, and the allocator's invariant on every built-in kernel.
 * Values are checked against plain loops in double precision here.
 */
#include "test.h"
#include "nklab.h"
#include "nkint.h"
#include "kernels.h"

#include <stdlib.h>
#include <unistd.h>

#define F32 NK_F32

static int g_line; /* a line the next check names */

static nk_array arr2(int64_t r, int64_t c, float scale)
{
    nk_array a;
    nk_array_alloc(&a, F32, 2, (int64_t[]){r, c});
    float *x = a.data;
    for (int64_t i = 0; i < r * c; i++)
        x[i] = (float)((i * 37 % 101) - 50) * scale;
    return a;
}

/* Counts the instructions of each opcode. */
static void count_ops(const nk_program *p, int *n)
{
    memset(n, 0, NK_OP_COUNT * sizeof *n);
    for (uint32_t i = 0; i < p->ninstr; i++)
        n[p->instrs[i].op]++;
}

/* ---- tile arrays and nk_assign */

/* x[512, 64] -> a tile array (4, par_dim(128), 64) filled block by block,
 * then exp of each block stored: NKI's `t[k] = nl.load(...)`. */
static void k_blocks(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = a[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(512, 64), F32, NK_SHARED_HBM);
    nk_tensor t = nk_ndarray(nc, NK_SHAPE(4, nk_par_dim(128), 64), F32, NK_SBUF);
    NK_AFFINE_RANGE(nc, k, 4)
        nk_assign(nc, nk_ix(nc, t, nk_i(k)), nk_load(nc, nk_ix(nc, x, nk_r(k * 128, k * 128 + 128))));
    NK_AFFINE_RANGE(nc, k, 4)
        nk_store(nc, nk_ix(nc, out, nk_r(k * 128, k * 128 + 128)), nk_exp(nc, nk_ix(nc, t, nk_i(k))));
    nk_return(nc, out);
}

TEST(lang_tile_array_filled_by_assign_needs_no_copies)
{
    nk_array x = arr2(512, 64, 0.05f), out[1];
    nk_kernel *k = nk_kernel_new("blocks", k_blocks);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), 0);
    if (p) {
        int n[NK_OP_COUNT];
        count_ops(p, n);
        CHECK_INT(n[NK_OP_LOAD], 4);
        CHECK_INT(n[NK_OP_TENSOR_COPY], 0); /* each load wrote its block */
        CHECK_INT(n[NK_OP_ACTIVATION], 4);
        CHECK_INT(p->ninstr, 12);
        /* each block is a tile of its own: four buffers in a row, each [128, 64] */
        uint32_t b0 = p->instrs[0].dst.buf;
        for (int i = 0; i < 4; i++) {
            const nk_instr *in = NULL;
            for (uint32_t j = 0; j < p->ninstr && !in; j++)
                if (p->instrs[j].op == NK_OP_LOAD && p->instrs[j].dst.buf == b0 + (uint32_t)i)
                    in = &p->instrs[j];
            CHECK(in != NULL);
            if (in) {
                CHECK_INT(in->dst.off, 0);
                CHECK_INT(p->bufs[in->dst.buf].shape[1], 64);
                CHECK_INT(in->src[0].off, i * 128 * 64);
            }
        }
    }
    int nout = 0;
    CHECK_INT(nk_call(k, &x, 1, NULL, out, 1, &nout), 0);
    if (nout == 1) {
        const float *xi = x.data, *y = out[0].data;
        int bad = 0;
        for (int i = 0; i < 512 * 64; i++)
            bad += !(fabs(y[i] - exp(xi[i])) <= 2e-7 * exp(xi[i]));
        CHECK_INT(bad, 0);
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&x);
}

/* A value that is read elsewhere cannot be moved: it is copied, and both
 * handles stay usable. */
static void k_assign_copy(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    nk_tensor v = nk_load(nc, a[0]);
    nk_tensor e = nk_exp(nc, v);
    nk_tensor t = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SBUF);
    nk_assign(nc, t, v); /* v was read by the exp: a copy */
    nk_store(nc, out, nk_add(nc, t, e));
    nk_return(nc, out);
}

TEST(lang_assign_of_a_value_already_read_copies_it)
{
    nk_array x = arr2(128, 64, 0.03f), out[1];
    nk_kernel *k = nk_kernel_new("assign_copy", k_assign_copy);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), 0);
    if (p) {
        int c[NK_OP_COUNT];
        count_ops(p, c);
        CHECK_INT(c[NK_OP_TENSOR_COPY], 1);
    }
    int nout = 0;
    CHECK_INT(nk_call(k, &x, 1, NULL, out, 1, &nout), 0);
    if (nout == 1) {
        const float *xi = x.data, *y = out[0].data;
        int bad = 0;
        for (int i = 0; i < 128 * 64; i++) {
            double want = xi[i] + exp(xi[i]);
            bad += !(fabs(y[i] - want) <= 4e-7 * fabs(want) + 1e-7);
        }
        CHECK_INT(bad, 0);
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&x);
}

static void k_use_after_move(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor t = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SBUF);
    nk_tensor v = nk_load(nc, a[0]);
    g_line = __LINE__; nk_assign(nc, t, v);
    nk_exp(nc, v);
    nk_return(nc, a[0]);
}

TEST(lang_a_moved_value_names_the_tile_it_went_to)
{
    nk_array x = arr2(128, 64, 1);
    nk_kernel *k = nk_kernel_new("use_after_move", k_use_after_move);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), NK_EINVAL);
    char want[256];
    snprintf(want, sizeof want, "%s:%d: exp: input is the tile made at %s:%d, whose value was assigned into another "
             "tile at %s:%d; use that tile", __FILE__, g_line + 1, __FILE__, g_line - 1, __FILE__, g_line);
    CHECK_STR(nk_kernel_error(k), want);
    nk_kernel_free(k);
    nk_array_free(&x);
}

/* ---- PSUM accumulation: res += nl.matmul(...) over a K loop, from nl.zeros */

static int g_mode; /* 0: nk_assign_add of nk_matmul; 1: nk_isa_nc_matmul accumulate; 2: zeros over 2 banks */

/* a[K=512, M=128] (already the stationary layout), b[512, N=256]: a^T b */
static void k_acc(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    int64_t N = a[1].shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, N), F32, NK_SHARED_HBM);
    nk_tensor ps = nk_zeros(nc, NK_SHAPE(128, g_mode == 2 ? 2 * N : N), F32, NK_PSUM);
    nk_tensor acc = g_mode == 2 ? nk_ix(nc, ps, NK_ALL, nk_r(0, N)) : ps;
    NK_AFFINE_RANGE(nc, k, 4) {
        nk_tensor st = nk_load(nc, nk_ix(nc, a[0], nk_r(k * 128, k * 128 + 128)));
        nk_tensor mv = nk_load(nc, nk_ix(nc, a[1], nk_r(k * 128, k * 128 + 128)));
        if (g_mode == 0)
            nk_assign_add(nc, acc, nk_matmul(nc, st, mv, 1));
        else
            nk_isa_nc_matmul(nc, acc, st, mv, 1);
    }
    nk_store(nc, out, nk_copy(nc, acc, F32));
    nk_return(nc, out);
}

static void check_acc(int mode, int want_memsets)
{
    g_mode = mode;
    nk_array in[2] = {arr2(512, 128, 0.01f), arr2(512, 256, 0.02f)}, out[1];
    nk_kernel *k = nk_kernel_new("acc", k_acc);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, in, 2, NULL, &p), 0);
    if (p) {
        int c[NK_OP_COUNT], acc = 0, first = -1;
        count_ops(p, c);
        CHECK_INT(c[NK_OP_MATMUL], 4);
        CHECK_INT(c[NK_OP_MEMSET], want_memsets);
        for (uint32_t i = 0; i < p->ninstr; i++)
            if (p->instrs[i].op == NK_OP_MATMUL) {
                if (first < 0)
                    first = !!(p->instrs[i].flags & NK_IF_ACCUMULATE);
                acc += !!(p->instrs[i].flags & NK_IF_ACCUMULATE);
            }
        CHECK_INT(first, want_memsets); /* folded: the first matmul starts the group */
        CHECK_INT(acc, 4 - !want_memsets);
    }
    int nout = 0;
    CHECK_INT(nk_call(k, in, 2, NULL, out, 1, &nout), 0);
    if (nout == 1) {
        const float *a = in[0].data, *b = in[1].data, *y = out[0].data;
        int bad = 0;
        for (int m = 0; m < 128; m++)
            for (int j = 0; j < 256; j++) {
                double s = 0, sa = 0;
                for (int kk = 0; kk < 512; kk++) {
                    s += (double)a[kk * 128 + m] * b[kk * 256 + j];
                    sa += fabs((double)a[kk * 128 + m] * b[kk * 256 + j]);
                }
                /* fp32 products accumulated in fp32: 512 terms */
                bad += !(fabs(y[m * 256 + j] - s) <= 512 * 6e-8 * sa + 1e-12);
            }
        CHECK_INT(bad, 0);
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&in[0]);
    nk_array_free(&in[1]);
}

TEST(lang_zeros_then_plus_equals_matmul_starts_the_group)
{
    check_acc(0, 0);
}

TEST(lang_zeros_then_isa_matmul_accumulate_starts_the_group)
{
    check_acc(1, 0);
}

TEST(lang_zeros_wider_than_the_matmul_is_kept)
{
    check_acc(2, 1); /* the memset covers two banks, the matmuls one: both stay */
}

/* ---- scalar arguments */

static void k_scale(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    float s = (float)nk_scalar(nc, a[1]);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    nk_store(nc, out, nk_multiply_s(nc, nk_load(nc, a[0]), s));
    nk_return(nc, out);
}

TEST(lang_scalar_arguments_are_part_of_the_signature)
{
    nk_array x = arr2(128, 64, 0.1f), out[1];
    float sv = 2.5f;
    nk_array s = {F32, 0, {0}, &sv};
    nk_array args[2] = {x, s};
    nk_kernel *k = nk_kernel_new("scale", k_scale);
    uint64_t compiles = 0, hits = 0;
    float values[3] = {2.5f, 3.0f, 2.5f};
    for (int r = 0; r < 3; r++) {
        sv = values[r];
        int nout = 0;
        CHECK_INT(nk_call(k, args, 2, NULL, out, 1, &nout), 0);
        if (nout == 1) {
            const float *xi = x.data, *y = out[0].data;
            int bad = 0;
            for (int i = 0; i < 128 * 64; i++)
                bad += y[i] != xi[i] * sv;
            CHECK_INT(bad, 0);
            nk_array_free(&out[0]);
        }
    }
    nk_kernel_cache_stats(k, &compiles, &hits);
    CHECK_INT(compiles, 2);
    CHECK_INT(hits, 1);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, args, 2, NULL, &p), 0);
    if (p)
        CHECK_INT(nk_program_num_inputs(p), 1); /* the scalar is not bound at run time */
    nk_kernel_free(k);
    nk_array_free(&x);
}

static void k_scalar_as_tensor(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    g_line = __LINE__; nk_exp(nc, a[1]);
    nk_return(nc, a[0]);
}

TEST(lang_a_scalar_used_as_a_tensor_is_an_error)
{
    nk_array x = arr2(128, 64, 1);
    int32_t v = 3;
    nk_array args[2] = {x, {NK_I32, 0, {0}, &v}};
    nk_kernel *k = nk_kernel_new("scalar_as_tensor", k_scalar_as_tensor);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, args, 2, NULL, &p), NK_EINVAL);
    char want[256];
    snprintf(want, sizeof want, "%s:%d: exp: input is a scalar argument, not a tensor (read it with nk_scalar)",
             __FILE__, g_line);
    CHECK_STR(nk_kernel_error(k), want);
    nk_kernel_free(k);
    nk_array_free(&x);
}

/* ---- affine access patterns */

/* x[64, 128] in HBM read transposed: view [128 partitions, 64] with the view's
 * axis 0 indexing x's columns (x[i_f, i_p]). */
static void k_ap_transpose(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    nk_aidx idx[2] = {{0, {0, 1}}, {0, {1, 0}}};
    nk_tensor v = nk_ap(nc, a[0], 2, ((int64_t[]){128, 64}), idx);
    nk_store(nc, out, nk_load(nc, v));
    nk_return(nc, out);
}

/* A tile [P, 12] read as [P, 4, 3] with index 3 * j + i at (i, j) ... the
 * transpose2d pattern: out[p, j * 3 + i] = in[p, i * 4 + j]. */
static void k_ap_free(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    int64_t P = a[0].shape[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(P, 12), F32, NK_SHARED_HBM);
    nk_tensor t = nk_load(nc, a[0]);
    nk_aidx idx[2] = {{0, {1, 0, 0}}, {0, {0, 1, 4}}}; /* view (p, j, i) reads in[p, 4 i + j] */
    nk_tensor v = nk_ap(nc, t, 3, ((int64_t[]){P, 4, 3}), idx);
    nk_tensor r = nk_ndarray(nc, NK_SHAPE(P, 4, 3), F32, NK_SBUF);
    nk_isa_tensor_copy(nc, r, v);
    nk_store(nc, out, nk_reshape(nc, r, NK_SHAPE(P, 12)));
    nk_return(nc, out);
}

TEST(lang_affine_access_patterns_transpose_and_interleave)
{
    nk_array x = arr2(64, 128, 1), out[1];
    nk_kernel *k = nk_kernel_new("ap_transpose", k_ap_transpose);
    int nout = 0;
    CHECK_INT(nk_call(k, &x, 1, NULL, out, 1, &nout), 0);
    if (nout == 1) {
        const float *xi = x.data, *y = out[0].data;
        int bad = 0;
        for (int p = 0; p < 128; p++)
            for (int f = 0; f < 64; f++)
                bad += y[p * 64 + f] != xi[f * 128 + p];
        CHECK_INT(bad, 0);
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&x);

    nk_array z = arr2(5, 12, 1);
    k = nk_kernel_new("ap_free", k_ap_free);
    nout = 0;
    CHECK_INT(nk_call(k, &z, 1, NULL, out, 1, &nout), 0);
    if (nout == 1) {
        const float *xi = z.data, *y = out[0].data;
        int bad = 0;
        for (int p = 0; p < 5; p++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 4; j++)
                    bad += y[p * 12 + j * 3 + i] != xi[p * 12 + i * 4 + j];
        CHECK_INT(bad, 0);
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&z);
}

static int g_ap_case;

static void k_ap_bad(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor t = nk_load(nc, a[0]); /* [128, 64] */
    nk_aidx strided[2] = {{0, {2, 0}}, {0, {0, 1}}};
    nk_aidx outside[2] = {{0, {1, 0}}, {1, {0, 1}}};
    g_line = __LINE__; nk_ap(nc, t, 2, ((int64_t[]){64, 64}), g_ap_case ? outside : strided);
    nk_return(nc, a[0]);
}

TEST(lang_affine_access_pattern_errors)
{
    nk_array x = arr2(128, 64, 1);
    const char *want[2] = {"nk_ap: the partition axis of a tile must be read by the view's first axis with "
                           "coefficient 1 (no striding or permuting partitions)",
                           "nk_ap: axis 1 of size 64 is read at indices 1..64"};
    for (g_ap_case = 0; g_ap_case < 2; g_ap_case++) {
        nk_kernel *k = nk_kernel_new("ap_bad", k_ap_bad);
        const nk_program *p = NULL;
        int rc = nk_kernel_compile(k, &x, 1, NULL, &p);
        CHECK(rc == NK_EPARTITION || rc == NK_EBOUNDS);
        char msg[256];
        snprintf(msg, sizeof msg, "%s:%d: %s", __FILE__, g_line, want[g_ap_case]);
        CHECK_STR(nk_kernel_error(k), msg);
        nk_kernel_free(k);
    }
    nk_array_free(&x);
}

static void k_array_unindexed(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor t = nk_ndarray(nc, NK_SHAPE(2, nk_par_dim(128), 64), F32, NK_SBUF);
    g_line = __LINE__; nk_isa_memset(nc, t, 0.0);
    nk_return(nc, a[0]);
}

TEST(lang_engine_ops_take_tiles_not_tile_arrays)
{
    nk_array x = arr2(128, 64, 1);
    nk_kernel *k = nk_kernel_new("array_unindexed", k_array_unindexed);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), NK_ESHAPE);
    char want[256];
    snprintf(want, sizeof want, "%s:%d: memset: dst is a tile array with 1 block dimension before its partition "
             "dimension; index the blocks to get a tile (e.g. nk_block(t, k))", __FILE__, g_line);
    CHECK_CONTAINS(nk_kernel_error(k), "is a tile array with 1 block dimension");
    nk_kernel_free(k);
    nk_array_free(&x);
    (void)want;
}

/* ---- the allocator's invariant, checked independently of it */

/* Two tiles whose uses overlap in time never share a byte: every tile's
 * interval [first use, last use] is computed here from the instructions of
 * a program in trace order (the order liveness is defined in; a list
 * schedule may then move an access that touches none of a neighbour's
 * bytes, which the dependency check below covers). */
static int allocation_overlaps(const nk_program *p, char *why, size_t n)
{
    uint32_t *first = malloc(p->nbufs * sizeof *first), *last = calloc(p->nbufs, sizeof *last);
    if (!first || !last) {
        free(first);
        free(last);
        return -1;
    }
    memset(first, 0xff, p->nbufs * sizeof *first);
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        const nk_opnd *ts[5];
        nk__operands(p, in, ts);
        for (int k = 0; k < 5; k++) {
            uint32_t b = ts[k]->buf;
            if (!b || nk__opnd_mem(p, ts[k]) == NK_SHARED_HBM)
                continue;
            if (first[b] == UINT32_MAX)
                first[b] = i;
            last[b] = i;
        }
    }
    int bad = 0;
    for (uint32_t a = 1; a < p->nbufs && !bad; a++)
        for (uint32_t b = a + 1; b < p->nbufs && !bad; b++) {
            const nk_bufinfo *x = &p->bufs[a], *y = &p->bufs[b];
            if (x->mem != y->mem || x->mem == NK_SHARED_HBM || first[a] == UINT32_MAX || first[b] == UINT32_MAX)
                continue;
            int time = first[a] <= last[b] && first[b] <= last[a];
            if (nk__inst_core(p, x->inst) != nk__inst_core(p, y->inst))
                continue; /* SPMD: another core's memory */
            int space = x->addr < y->addr + y->bytes && y->addr < x->addr + x->bytes;
            if (time && space) {
                snprintf(why, n, "%s: tiles %u and %u", p->kernel, a, b);
                bad = 1;
            }
        }
    free(first);
    free(last);
    return bad;
}

TEST(lang_allocation_never_overlaps_live_tiles_in_builtin_kernels)
{
    for (int i = 0; i < nk_builtin_kernel_count; i++) {
        const nk_kernel_info *ki = &nk_builtin_kernels[i];
        nk_array args[NK_KERNEL_MAX_ARGS];
        CHECK_INT(nk_kernel_example_args(ki, 1, args), 0);
        nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
        const nk_program *p = NULL;
        const char *targets[2] = {"trn1", "trn2"};
        for (int t = 0; t < 2; t++) {
            nk_options o = {targets[t], 0, NULL, NK_SCHED_TRACE_ORDER};
            memcpy(o.grid, ki->grid, sizeof o.grid); /* SPMD kernels on their grid */
            int rc = nk_kernel_compile(k, args, ki->nargs, &o, &p);
            CHECK_INT(rc, 0);
            char why[128] = "";
            if (!rc) {
                int bad = allocation_overlaps(p, why, sizeof why);
                if (bad)
                    nk_test_fail(__FILE__, __LINE__, "live tiles overlap: %s on %s", why, targets[t]);
                CHECK(p->sbuf_peak <= p->arch->sbuf_partition_bytes - p->arch->sbuf_reserved_bytes);
                CHECK(p->psum_peak <= p->arch->psum_partition_bytes);
            }
        }
        nk_kernel_free(k);
        for (int a = 0; a < ki->nargs; a++)
            nk_array_free(&args[a]);
    }
}

/* ---- schedules: every conflict ordered, values identical */

/* Does access a (instruction i) conflict with access b (instruction j)? */
static int conflict(const nk_program *p, const nk_instr *x, const nk_instr *y)
{
    const nk_opnd *xs[5], *ys[5];
    nk__operands(p, x, xs);
    nk__operands(p, y, ys);
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++) {
            if (!xs[a]->buf || !ys[b]->buf)
                continue;
            int wa = a < 2 || (a == 0 && (x->flags & NK_IF_ACCUMULATE)), wb = b < 2;
            if (!wa && !wb)
                continue;
            nk__region ra = nk__region_of(p, xs[a]), rb = nk__region_of(p, ys[b]);
            if (nk__regions_overlap(&ra, &rb))
                return 1;
        }
    return 0;
}

/* Every pair of conflicting instructions i < j is ordered for the timing
 * model: j waits for i through the dependencies (transitively) or both run
 * in order on one compute engine (a DMA queue's DMAs may end out of order,
 * each on its own engines). Checked by brute force. */
static int unordered_conflicts(const nk_program *p)
{
    uint32_t n = p->ninstr, words = (n + 63) / 64;
    uint64_t *anc = calloc((size_t)n * words, sizeof *anc);
    if (!anc)
        return -1;
    for (uint32_t j = 0; j < n; j++) {
        const nk_instr *in = &p->instrs[j];
        uint64_t *aj = anc + (size_t)j * words;
        for (uint32_t k = 0; k < in->ndep; k++) {
            uint32_t d = p->deps[in->dep_off + k];
            aj[d / 64] |= 1ull << (d % 64);
            for (uint32_t w = 0; w < words; w++)
                aj[w] |= anc[(size_t)d * words + w];
        }
        /* in order on one unit: the previous instruction of the unit and its ancestors */
        for (uint32_t i = j; i-- > 0;) {
            const nk_instr *o = &p->instrs[i];
            int same = o->engine == in->engine && in->engine != NK_ENGINE_DMA &&
                       nk__instr_core(p, o) == nk__instr_core(p, in);
            if (same) {
                aj[i / 64] |= 1ull << (i % 64);
                for (uint32_t w = 0; w < words; w++)
                    aj[w] |= anc[(size_t)i * words + w];
                break;
            }
        }
    }
    int bad = 0;
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t i = 0; i < j; i++)
            if (!(anc[(size_t)j * words + i / 64] >> (i % 64) & 1) && conflict(p, &p->instrs[i], &p->instrs[j]))
                bad++;
    free(anc);
    return bad;
}

TEST(lang_list_schedules_keep_every_conflict_and_every_value)
{
    for (int i = 0; i < nk_builtin_kernel_count; i++) {
        const nk_kernel_info *ki = &nk_builtin_kernels[i];
        nk_array args[NK_KERNEL_MAX_ARGS];
        CHECK_INT(nk_kernel_example_args(ki, 3, args), 0);
        nk_array outs[2][NK_KERNEL_MAX_OUTS];
        int nouts[2] = {0, 0};
        for (int s = 0; s < 2; s++) {
            nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
            /* SPMD kernels on their grid, over trn2's two cores */
            nk_options o = {ki->grid[0] ? "trn2" : "trn1", 0, NULL, s ? NK_SCHED_TRACE_ORDER : NK_SCHED_LIST};
            memcpy(o.grid, ki->grid, sizeof o.grid);
            const nk_program *p = NULL;
            CHECK_INT(nk_kernel_compile(k, args, ki->nargs, &o, &p), 0);
            if (p && p->ninstr <= 4000) {
                int bad = unordered_conflicts(p);
                if (bad)
                    nk_test_fail(__FILE__, __LINE__, "%s (%s): %d conflicting pairs unordered", ki->name,
                                 s ? "trace order" : "list", bad);
            }
            CHECK_INT(nk_call(k, args, ki->nargs, &o, outs[s], NK_KERNEL_MAX_OUTS, &nouts[s]), 0);
            nk_kernel_free(k);
        }
        CHECK_INT(nouts[0], nouts[1]);
        for (int o = 0; o < nouts[0] && o < nouts[1]; o++) {
            size_t nb = nk_array_nbytes(&outs[0][o]);
            CHECK(nb == nk_array_nbytes(&outs[1][o]) && !memcmp(outs[0][o].data, outs[1][o].data, nb));
        }
        for (int s = 0; s < 2; s++)
            for (int o = 0; o < nouts[s]; o++)
                nk_array_free(&outs[s][o]);
        for (int a = 0; a < ki->nargs; a++)
            nk_array_free(&args[a]);
    }
}

/* The list scheduler keeps the faster of its orders and trace order on the
 * target's model, so it is never slower; on a Vector/Scalar ping-pong with
 * room for more buffers it is faster. */
TEST(lang_list_schedule_is_never_slower_and_pipelines_softmax)
{
    const nk_kernel_info *ki = nk_builtin_kernel("softmax");
    CHECK(ki != NULL);
    if (!ki)
        return;
    nk_array x = {NK_F32, 2, {2048, 256}, NULL};
    double t[2][5];
    for (int bufs = 1; bufs <= 4; bufs++)
        for (int s = 1; s >= 0; s--) { /* trace order first: the list program records its time */
            nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
            nk_options o = {"trn1", bufs, NULL, s ? NK_SCHED_TRACE_ORDER : NK_SCHED_LIST};
            const nk_program *p = NULL;
            nk_profile *pr = NULL;
            t[s][bufs] = -1;
            if (!nk_kernel_compile(k, &x, 1, &o, &p) && !nk_profile_capture(p, NULL, &pr)) {
                nk_metrics m;
                nk_profile_metrics(pr, &m);
                t[s][bufs] = m.total_time;
                if (!s)
                    CHECK_NEAR(p->trace_order_ns * 1e-9, t[1][bufs], 1e-9, 0);
            }
            nk_profile_free(pr);
            nk_kernel_free(k);
        }
    for (int bufs = 1; bufs <= 4; bufs++) {
        CHECK(t[0][bufs] > 0 && t[0][bufs] <= t[1][bufs]);
        printf("  softmax [2048, 256] %d buffer%s: trace order %.2f us, list %.2f us\n", bufs, bufs > 1 ? "s" : "",
               t[1][bufs] * 1e6, t[0][bufs] * 1e6);
    }
    CHECK(t[0][4] < 0.9 * t[1][4]);   /* more buffers help only when the queues may reorder */
    CHECK(t[0][4] < 0.9 * t[0][2]);
}

/* ---- spill and reload */

/* Four [128, 12288] fp32 tiles (48 KiB a partition each) live at once need
 * 192 KiB where 176 KiB are free: one is spilled to HBM and reloaded. */
static void k_spill(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    int64_t F = a[0].shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(512, F), F32, NK_SHARED_HBM);
    nk_tensor t[4];
    for (int i = 0; i < 4; i++)
        t[i] = nk_load(nc, nk_ix(nc, a[0], nk_r(i * 128, i * 128 + 128)));
    for (int i = 0; i < 4; i++)
        nk_store(nc, nk_ix(nc, out, nk_r(i * 128, i * 128 + 128)), t[i]);
    nk_return(nc, out);
}

TEST(lang_sbuf_short_by_one_tile_spills_and_reloads_it)
{
    nk_array x = arr2(512, 12288, 0.5f), out[1];
    nk_kernel *k = nk_kernel_new("spill", k_spill);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), 0);
    if (p) {
        int spills = 0, loads = 0, stores = 0;
        for (uint32_t i = 0; i < p->ninstr; i++)
            if (p->instrs[i].flags & NK_IF_SPILL) {
                spills++;
                loads += p->instrs[i].op == NK_OP_LOAD;
                stores += p->instrs[i].op == NK_OP_STORE;
            }
        CHECK_INT(spills, 2);
        CHECK_INT(loads, 1);
        CHECK_INT(stores, 1);
        CHECK(p->sbuf_peak <= p->arch->sbuf_partition_bytes - p->arch->sbuf_reserved_bytes);
        char why[128] = "";
        CHECK_INT(allocation_overlaps(p, why, sizeof why), 0);
    }
    int nout = 0;
    CHECK_INT(nk_call(k, &x, 1, NULL, out, 1, &nout), 0);
    if (nout == 1) {
        CHECK(!memcmp(out[0].data, x.data, nk_array_nbytes(&x)));
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&x);
}

#include "view/view.h"

/* The JSON export carries the schedule, every tile's allocation and
 * lifetime, and marks the spills. */
TEST(lang_json_export_has_allocations_spills_and_schedule)
{
    nk_array x = {F32, 2, {512, 12288}, NULL};
    nk_kernel *k = nk_kernel_new("spill", k_spill);
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), 0);
    if (p && !nk_profile_capture(p, NULL, &pr)) {
        nk_text t = {0};
        CHECK_INT(nk__export_json(pr, NULL, &t), 0);
        CHECK_CONTAINS(t.s, "\"schedule\":{\"asked\":\"list\",\"kept\":");
        CHECK_CONTAINS(t.s, "\"attrs\":\"spill\"");
        CHECK_CONTAINS(t.s, "\"allocations\":[\n{\"tile\":");
        CHECK_CONTAINS(t.s, "\"memory\":\"sbuf\",\"partitions\":128,\"addr\":");
        CHECK_CONTAINS(t.s, "\"bytes\":49152,\"shape\":\"[128, 12288]\",\"dtype\":\"float32\"");
        CHECK_CONTAINS(t.s, "\"reloaded\":true}");
        nk__text_free(&t);
    }
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* The insights name the spills, with their bytes and lines. */
TEST(lang_insights_report_spills)
{
    nk_array x = {F32, 2, {512, 12288}, NULL};
    nk_kernel *k = nk_kernel_new("spill", k_spill);
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), 0);
    if (p && !nk_profile_capture(p, NULL, &pr)) {
        char *text = NULL;
        CHECK_INT(nk_profile_insights(pr, 0, &text), 0);
        CHECK_CONTAINS(text, "SBUF ran short: 1 tile spilled to HBM and reloaded");
        CHECK_CONTAINS(text, "evidence: tiles 1, stored 6.00 MiB, reloaded 6.00 MiB");
        free(text);
    }
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* A tile array larger than SBUF whose blocks are all live at once: the
 * blocks are separate tiles, so the compile step spills some of them and
 * the values come back intact. */
static void k_big_array(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    int64_t F = a[0].shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(8 * 128, F), F32, NK_SHARED_HBM);
    nk_tensor t = nk_ndarray(nc, NK_SHAPE(8, nk_par_dim(128), F), F32, NK_SBUF);
    for (int k = 0; k < 8; k++)
        nk_assign(nc, nk_ix(nc, t, nk_i(k)), nk_load(nc, nk_ix(nc, a[0], nk_r(k * 128, k * 128 + 128))));
    for (int k = 0; k < 8; k++)
        nk_store(nc, nk_ix(nc, out, nk_r(k * 128, k * 128 + 128)), nk_ix(nc, t, nk_i(k)));
    nk_return(nc, out);
}

TEST(lang_tile_array_larger_than_sbuf_spills_blocks)
{
    nk_array x = arr2(1024, 8192, 0.25f), out[1];
    nk_kernel *k = nk_kernel_new("big_array", k_big_array);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), 0);
    if (p) {
        int spills = 0;
        for (uint32_t i = 0; i < p->ninstr; i++)
            spills += !!(p->instrs[i].flags & NK_IF_SPILL);
        CHECK(spills >= 2 && spills % 2 == 0);
        printf("  8 x [128, 8192] fp32 blocks live at once: %d spill instructions\n", spills);
    }
    int nout = 0;
    CHECK_INT(nk_call(k, &x, 1, NULL, out, 1, &nout), 0);
    if (nout == 1) {
        CHECK(!memcmp(out[0].data, x.data, nk_array_nbytes(&x)));
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&x);
}

/* ---- nl.shared_constant */

static float g_table[128 * 4];
static int g_const_case;

static void k_const(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_array v = {F32, 2, {128, 4}, g_table};
    nk_tensor c = nk_shared_constant(nc, &v);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 4), F32, NK_SHARED_HBM);
    nk_tensor x = nk_load(nc, a[0]);
    if (g_const_case) {
        g_line = __LINE__; nk_store(nc, c, x);
    }
    nk_store(nc, out, nk_add(nc, x, nk_load(nc, c)));
    nk_return(nc, out);
}

TEST(lang_shared_constant_is_carried_by_the_program_and_read_only)
{
    for (int i = 0; i < 128 * 4; i++)
        g_table[i] = (float)(i % 7) - 3.0f;
    g_const_case = 0;
    nk_array x = arr2(128, 4, 0.5f), out[1];
    nk_kernel *k = nk_kernel_new("const", k_const);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), 0);
    char path[] = "/tmp/nklab_const_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    nk_program *q = NULL;
    if (p) {
        CHECK_INT(nk_program_num_inputs(p), 1);
        CHECK_INT(nk_program_save(p, path), 0);
        char err[256];
        CHECK_INT(nk_program_load(path, &q, err, sizeof err), 0);
    }
    /* the values come from the program, even after the source array changes */
    for (int i = 0; i < 128 * 4; i++)
        g_table[i] = 1000.0f;
    for (int r = 0; r < 2 && q; r++) {
        nk_array o;
        nk_program_output(r ? q : p, 0, &o);
        CHECK_INT(nk_array_alloc(&out[0], o.dtype, o.ndim, o.shape), 0);
        CHECK_INT(nk_program_run(r ? q : p, &x, 1, out, 1), 0);
        const float *xi = x.data, *y = out[0].data;
        int bad = 0;
        for (int i = 0; i < 128 * 4; i++)
            bad += y[i] != xi[i] + ((float)(i % 7) - 3.0f);
        CHECK_INT(bad, 0);
        nk_array_free(&out[0]);
    }
    nk_program_free(q);
    remove(path);
    nk_kernel_free(k);

    g_const_case = 1;
    k = nk_kernel_new("const_store", k_const);
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), NK_EMEMORY);
    char want[256];
    snprintf(want, sizeof want, "%s:%d: nk_store: the destination is the shared constant made at %s:%d, which is "
             "read-only", __FILE__, g_line, __FILE__, g_line - 4);
    CHECK_STR(nk_kernel_error(k), want);
    nk_kernel_free(k);
    nk_array_free(&x);
}

/* NKI's older style: the kernel writes into a tensor it is given and
 * returns nothing; the caller's array holds the result. */
static void k_into_arg(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_store(nc, a[1], nk_exp(nc, nk_load(nc, a[0])));
}

TEST(lang_kernel_writing_into_its_argument_needs_no_return)
{
    nk_array args[2] = {arr2(128, 64, 0.01f), arr2(128, 64, 0)};
    nk_kernel *k = nk_kernel_new("into_arg", k_into_arg);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, args, 2, NULL, &p), 0);
    if (p) {
        CHECK_INT(nk_program_num_outputs(p), 0);
        CHECK_INT(nk_program_run(p, args, 2, NULL, 0), 0);
        const float *x = args[0].data, *y = args[1].data;
        int bad = 0;
        for (int i = 0; i < 128 * 64; i++)
            bad += !(fabs(y[i] - exp(x[i])) <= 2e-7 * exp(x[i]));
        CHECK_INT(bad, 0);
    }
    nk_kernel_free(k);
    nk_array_free(&args[0]);
    nk_array_free(&args[1]);
}

/* nl.loop_reduce: a running maximum over the iterations of a loop. */
static void k_loop_max(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor acc = nk_full(nc, NK_SHAPE(128, 64), -1e30, F32, NK_SBUF);
    NK_SEQUENTIAL_RANGE(nc, k, 4)
        nk_loop_reduce(nc, acc, nk_load(nc, nk_ix(nc, a[0], nk_r(k * 128, k * 128 + 128))), NK_ALU_MAX);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    nk_store(nc, out, acc);
    nk_return(nc, out);
}

TEST(lang_loop_reduce_takes_the_maximum_over_iterations)
{
    nk_array x = arr2(512, 64, 1), out[1];
    nk_kernel *k = nk_kernel_new("loop_max", k_loop_max);
    int nout = 0;
    CHECK_INT(nk_call(k, &x, 1, NULL, out, 1, &nout), 0);
    if (nout == 1) {
        const float *xi = x.data, *y = out[0].data;
        int bad = 0;
        for (int r = 0; r < 128; r++)
            for (int c = 0; c < 64; c++) {
                float m = -1e30f;
                for (int k2 = 0; k2 < 4; k2++)
                    m = fmaxf(m, xi[(k2 * 128 + r) * 64 + c]);
                bad += y[r * 64 + c] != m;
            }
        CHECK_INT(bad, 0);
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&x);
}

/* An access-pattern axis of one index moves nowhere: its coefficient, even
 * a negative one, is ignored. */
static void k_ap_unit_axis(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 1, 64), F32, NK_SHARED_HBM);
    nk_aidx idx[2] = {{0, {1, 0, 0}}, {0, {0, -5, 1}}};
    nk_tensor v = nk_ap(nc, a[0], 3, ((int64_t[]){128, 1, 64}), idx);
    nk_store(nc, out, nk_load(nc, v));
    nk_return(nc, out);
}

TEST(lang_affine_access_pattern_ignores_unit_axes)
{
    nk_array x = arr2(128, 64, 1), out[1];
    nk_kernel *k = nk_kernel_new("ap_unit_axis", k_ap_unit_axis);
    int nout = 0;
    CHECK_INT(nk_call(k, &x, 1, NULL, out, 1, &nout), 0);
    CHECK_STR(nk_kernel_error(k), "");
    if (nout == 1) {
        CHECK(!memcmp(out[0].data, x.data, nk_array_nbytes(&x)));
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&x);
}
