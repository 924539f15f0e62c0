/*
 * test_optable.c - the op table (src/isa): every row complete and coherent,
 * one attribute text for the listing and every export, the affine_select
 * on_false regression, the per-target limits the program checker reads from
 * the target table, and DMA queues taken from the target's table.
 */
#include "test.h"
#include "timing_detail.h"
#include "kernels.h"
#include "isa/optable.h"
#include "profile/profile.h"
#include "sched/program_io.h"
#include "view/view.h"

#include <stdlib.h>

/* ---- every row */

TEST(optable_every_row_is_complete)
{
    unsigned compute = NK_ENG(NK_ENGINE_TENSOR) | NK_ENG(NK_ENGINE_VECTOR) | NK_ENG(NK_ENGINE_SCALAR) |
                       NK_ENG(NK_ENGINE_GPSIMD) | NK_ENG(NK_ENGINE_DMA);
    for (int op = 0; op < NK_OP_COUNT; op++) {
        const nk_opdef *d = nk__op_def(op);
        CHECK(d != NULL);
        if (!d)
            continue;
        CHECK(d->name && d->name[0]);
        if (!d->name)
            continue;
        CHECK_STR(nk__op_name(op), d->name);
        for (int o = 0; o < op; o++)
            if (nk__op_def(o)->name && !strcmp(nk__op_def(o)->name, d->name))
                nk_test_fail(__FILE__, __LINE__, "ops %d and %d are both %s", o, op, d->name);
        CHECK(d->engines != 0 && !(d->engines & ~compute));
        CHECK(d->default_engine < NK_ENGINE_COUNT && (d->engines & NK_ENG(d->default_engine)));
        CHECK(d->attrs != NULL);
        CHECK(d->exec != NULL);
        /* a destination, and every operand named with a memory it may use on
           every engine the op runs on */
        CHECK(d->opnd[NK_OPND_DST].name != NULL && !d->opnd[NK_OPND_DST].present_if);
        for (int k = 0; k < NK_OPND_COUNT; k++) {
            const nk_opslot *o = &d->opnd[k];
            if (!o->name) {
                CHECK(!o->mem && !o->present_if);
                continue;
            }
            CHECK(o->name[0] != 0);
            CHECK((o->present_if & ~d->flags) == 0); /* an optional operand's flag is the op's */
            for (int e = 0; e < NK_ENGINE_COUNT; e++) {
                if (!(d->engines & NK_ENG(e)))
                    continue;
                nk_instr in = {.op = (uint8_t)op, .engine = (uint8_t)e};
                if (!nk__op_operand_mems(&in, k))
                    nk_test_fail(__FILE__, __LINE__, "%s on %s: operand %s can be in no memory", d->name,
                                 nk_engine_name((nk_engine)e), o->name);
            }
        }
        CHECK(nk__op_max_srcs(d) <= 3);
        /* the cost entry: a Tensor-engine op says how it streams; a DMA op
           has no cost-table entry */
        if (d->engines & NK_ENG(NK_ENGINE_TENSOR))
            CHECK(d->cost.pe != NK_PE_NONE);
        else
            CHECK(d->cost.pe == NK_PE_NONE);
        if (d->engines & NK_ENG(NK_ENGINE_DMA))
            CHECK(d->engines == NK_ENG(NK_ENGINE_DMA) && !d->cost.work && !d->cost.extra);
        CHECK(d->cost.extra <= NK_COST_EXTRA_POOL_FIXED && d->cost.fast16 <= NK_FAST16_TWO_INPUT);
        CHECK((d->cost.extra_if & ~d->flags) == 0);
    }
    CHECK(nk__op_def(NK_OP_COUNT) == NULL && nk__op_def(-1) == NULL);
    CHECK_STR(nk__op_name(NK_OP_COUNT), "invalid");
}

TEST(optable_source_counts_follow_the_flags)
{
    nk_instr in = {.op = NK_OP_ACTIVATION};
    CHECK_INT(nk__op_nsrc(&in), 1);
    in.flags = NK_IF_OPND1_T; /* scale a tile, bias an immediate: src[1] absent */
    CHECK_INT(nk__op_nsrc(&in), 3);
    CHECK(!nk__op_operand_present(&in, NK_OPND_SRC0 + 1) && nk__op_operand_present(&in, NK_OPND_SRC0 + 2));
    CHECK(!nk__op_operand_present(&in, NK_OPND_DST2));
    in.flags |= NK_IF_REDUCE;
    CHECK(nk__op_operand_present(&in, NK_OPND_DST2));
    CHECK_STR(nk__op_operand_name(&in, NK_OPND_DST2), "reduce_res");
    in = (nk_instr){.op = NK_OP_MATMUL};
    CHECK_INT(nk__op_nsrc(&in), 2);
    CHECK_STR(nk__op_operand_name(&in, NK_OPND_SRC0), "stationary");
    CHECK_STR(nk__op_operand_name(&in, NK_OPND_SRC0 + 1), "moving");
    in = (nk_instr){.op = NK_OP_IOTA};
    CHECK_INT(nk__op_nsrc(&in), 0);
    /* a transpose reads SBUF and writes PSUM on the Tensor engine, either on the Vector engine */
    in = (nk_instr){.op = NK_OP_TRANSPOSE, .engine = NK_ENGINE_TENSOR};
    CHECK_INT(nk__op_operand_mems(&in, NK_OPND_DST), NK_MEM(NK_PSUM));
    CHECK_INT(nk__op_operand_mems(&in, NK_OPND_SRC0), NK_MEM(NK_SBUF));
    in.engine = NK_ENGINE_VECTOR;
    CHECK_INT(nk__op_operand_mems(&in, NK_OPND_DST), NK_MEM_ONCHIP);
    in = (nk_instr){.op = NK_OP_TENSOR_COPY, .engine = NK_ENGINE_GPSIMD};
    CHECK_INT(nk__op_operand_mems(&in, NK_OPND_SRC0), NK_MEM(NK_SBUF)); /* GpSimd has no PSUM port */
}

/* ---- one attribute text everywhere */

static float on_false_value = -7.0f;

/* Every opcode, with the attributes each can show: tensor operands and
 * immediates, both tensor_scalar operators reversed, keepdims, both
 * transpose engines, an affine_select whose on_false is not 0. */
static void k_all_ops(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_SHARED_HBM);
    nk_tensor ta = nk_load(nc, args[0]); /* [128, 64] */
    nk_tensor tb = nk_load(nc, args[1]); /* [128, 256] */
    nk_tensor ps = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_PSUM);
    nk_isa_nc_matmul(nc, ps, ta, tb, 0);
    nk_isa_nc_matmul(nc, ps, ta, tb, 1);
    nk_tensor s = nk_copy(nc, ps, NK_F32);
    nk_tensor col = nk_iota(nc, NK_SHAPE(64, 1), ((nk_affine){1, 1, {0, 0, 0}}), NK_F32);
    nk_tensor act = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_SBUF);
    nk_tensor red = nk_ndarray(nc, NK_SHAPE(64, 1), NK_F32, NK_SBUF);
    nk_isa_activation(nc, act, NK_ACT_TANH, s, nk_col(col), nk_imm(0.5f), red);
    nk_tensor sel = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_SBUF);
    nk_isa_affine_select(nc, sel, ((nk_affine){0, 4, {-1, 0, 0}}), NK_CMP_GE, act, on_false_value);
    nk_tensor ts = nk_ndarray(nc, NK_SHAPE(64, 256), NK_F32, NK_SBUF);
    nk_isa_tensor_scalar(nc, ts, sel, NK_ALU_SUBTRACT, nk_imm(1.0f), 1, NK_ALU_MULTIPLY, nk_col(red), 1);
    nk_tensor m = nk_ndarray(nc, NK_SHAPE(64, 1), NK_F32, NK_SBUF);
    nk_isa_tensor_reduce(nc, m, ts, NK_ALU_MAX, 1, 1);
    nk_tensor t2 = nk_add(nc, ts, m);
    nk_tensor st = nk_ndarray(nc, NK_SHAPE(64, 12), NK_F32, NK_SBUF);
    nk_isa_bn_stats(nc, nk_ix(nc, st, NK_ALL, nk_r(0, 6)), nk_ix(nc, t2, NK_ALL, nk_r(0, 128)));
    nk_isa_bn_stats(nc, nk_ix(nc, st, NK_ALL, nk_r(6, 12)), nk_ix(nc, t2, NK_ALL, nk_r(128, 256)));
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
    nk_tensor z = nk_ndarray(nc, NK_SHAPE(32, 32), NK_F32, NK_SBUF);
    nk_isa_memset(nc, z, 0.25);
    nk_tensor vt = nk_ndarray(nc, NK_SHAPE(32, 32), NK_F32, NK_SBUF);
    nk_isa_nc_transpose(nc, vt, z, NK_ENGINE_VECTOR);
    nk_tensor tt = nk_transpose(nc, nk_ix(nc, t2, nk_r(0, 32), nk_r(0, 32)));
    nk_tensor t3 = nk_multiply(nc, vt, tt);
    nk_store(nc, nk_ix(nc, out, nk_r(0, 32), nk_r(0, 32)), t3);
    nk_store(nc, nk_ix(nc, out, nk_r(32, 64), NK_ALL), nk_ix(nc, t2, nk_r(32, 64), NK_ALL));
    nk_store(nc, nk_ix(nc, out, nk_r(0, 32), nk_r(32, 256)), nk_ix(nc, sel, nk_r(0, 32), nk_r(32, 256)));
    nk_return(nc, out);
}

static const nk_program *compile_all_ops(nk_kernel **k, nk_array *in)
{
    int64_t sa[2] = {128, 64}, sb[2] = {128, 256};
    const nk_program *p = NULL;
    *k = nk_kernel_new("all_ops", k_all_ops);
    nk_array_alloc(&in[0], NK_F32, 2, sa);
    nk_array_alloc(&in[1], NK_F32, 2, sb);
    for (size_t i = 0; i < nk_array_numel(&in[0]); i++)
        ((float *)in[0].data)[i] = (float)(i % 7) * 0.125f - 0.25f;
    for (size_t i = 0; i < nk_array_numel(&in[1]); i++)
        ((float *)in[1].data)[i] = (float)(i % 5) * 0.25f - 0.5f;
    if (nk_kernel_compile(*k, in, 2, NULL, &p))
        printf("  compile: %s\n", nk_kernel_error(*k));
    return p;
}

/* Line i of the listing ("%5u  engine ..."), copied into buf. */
static int dump_line(const char *dump, uint32_t i, char *buf, size_t n)
{
    char head[16];
    snprintf(head, sizeof head, "\n%5u  ", i);
    const char *l = strstr(dump, head);
    if (!l)
        return 0;
    l++;
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    if (len >= n)
        len = n - 1;
    memcpy(buf, l, len);
    buf[len] = 0;
    return 1;
}

/* The attributes of the first instruction of op, from the table. */
static const char *attrs_of(const nk_program *p, int op, char *buf, size_t n)
{
    for (uint32_t i = 0; i < p->ninstr; i++)
        if (p->instrs[i].op == op) {
            nk__op_attrs(p, &p->instrs[i], buf, n);
            return buf;
        }
    return "(no such instruction)";
}

TEST(optable_listing_and_exports_print_the_same_attributes)
{
    nk_kernel *k;
    nk_array in[2];
    const nk_program *p = compile_all_ops(&k, in);
    nk_profile *pr = NULL;
    char *dump = NULL;
    nk_text json = {0}, csv = {0};
    nk_export_opts eo = {0};
    CHECK(p != NULL);
    if (!p)
        goto out;
    CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    CHECK_INT(nk_program_dump(p, &dump), 0);
    if (!pr || !dump)
        goto out;
    CHECK_INT(nk__export_json(pr, &eo, &json), 0);
    CHECK_INT(nk__export_csv(pr, &eo, &csv), 0);
    int seen[NK_OP_COUNT] = {0}, engines[NK_ENGINE_COUNT] = {0};
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *ins = &p->instrs[i];
        char attrs[256], line[1024], opnd[1024], want[1100];
        seen[ins->op] = 1;
        if (ins->op == NK_OP_TRANSPOSE)
            engines[ins->engine] = 1;
        size_t n = nk__op_attrs(p, ins, attrs, sizeof attrs);
        CHECK_INT(n, strlen(attrs));
        /* the listing: the attributes after the operands */
        CHECK(dump_line(dump, i, line, sizeof line));
        if (n) {
            snprintf(want, sizeof want, " %s  deps ", attrs);
            CHECK_CONTAINS(line, want);
        }
        /* every export: the operand text starts with the same attributes */
        nk__view_operands(p, i, opnd, sizeof opnd);
        CHECK(!strncmp(opnd, attrs, n) && (!n || opnd[n] == ' ' || !opnd[n]));
        snprintf(want, sizeof want, "\"operands\":\"%s\"", opnd);
        CHECK_CONTAINS(json.s, want);
        snprintf(want, sizeof want, ",\"%s\",", opnd); /* CSV: quoted, it holds ", " */
        CHECK_CONTAINS(csv.s, want);
    }
    for (int op = 0; op < NK_OP_COUNT; op++)
        if (!seen[op])
            nk_test_fail(__FILE__, __LINE__, "the kernel has no %s", nk__op_name(op));
    CHECK(engines[NK_ENGINE_TENSOR] && engines[NK_ENGINE_VECTOR]);
    /* what the attributes say, in the kernel API's words */
    char b[256];
    CHECK_STR(attrs_of(p, NK_OP_ACTIVATION, b, sizeof b), "func=tanh scale=0.5");
    CHECK_STR(attrs_of(p, NK_OP_AFFINE_SELECT, b, sizeof b), "pred=0+4*p-1*f0 cmp=greater_equal on_false=-7");
    CHECK_STR(attrs_of(p, NK_OP_TENSOR_SCALAR, b, sizeof b),
              "op0=subtract operand0=1 reverse0 op1=multiply reverse1");
    CHECK_STR(attrs_of(p, NK_OP_TENSOR_REDUCE, b, sizeof b), "op=maximum axis=1 keepdims");
    CHECK_STR(attrs_of(p, NK_OP_MEMSET, b, sizeof b), "value=0.25");
    CHECK_STR(attrs_of(p, NK_OP_IOTA, b, sizeof b), "expr=1+1*p");
    CHECK_STR(attrs_of(p, NK_OP_TENSOR_TENSOR, b, sizeof b), "op=multiply");
    CHECK_STR(attrs_of(p, NK_OP_MATMUL, b, sizeof b), ""); /* the first one starts the group */
    CHECK_STR(attrs_of(p, NK_OP_LOAD, b, sizeof b), "");
    /* operands under the kernel API's names */
    for (uint32_t i = 0; i < p->ninstr; i++) {
        char opnd[1024];
        nk__view_operands(p, i, opnd, sizeof opnd);
        if (p->instrs[i].op == NK_OP_ACTIVATION) {
            CHECK_CONTAINS(opnd, " reduce_res=sbuf[");
            CHECK_CONTAINS(opnd, " bias=sbuf[");
        } else if (p->instrs[i].op == NK_OP_MATMUL) {
            CHECK_CONTAINS(opnd, " stationary=sbuf[");
            CHECK_CONTAINS(opnd, " moving=sbuf[");
        } else if (p->instrs[i].op == NK_OP_TENSOR_SCALAR && (p->instrs[i].flags & NK_IF_OPND1_T)) {
            CHECK_CONTAINS(opnd, " operand1=sbuf[");
        } else if (p->instrs[i].op == NK_OP_AFFINE_SELECT) {
            CHECK_CONTAINS(opnd, " on_true=sbuf[");
        }
    }
out:
    free(dump);
    nk__text_free(&json);
    nk__text_free(&csv);
    nk_profile_free(pr);
    nk_array_free(&in[0]);
    nk_array_free(&in[1]);
    nk_kernel_free(k);
}

/* The exports once printed affine_select's on_false from the wrong field
 * (imm1, always 0): the text must show the value the executor writes. */
TEST(optable_affine_select_on_false_is_the_value_written)
{
    nk_kernel *k;
    nk_array in[2], out[1];
    int nout = 0;
    const nk_program *p = compile_all_ops(&k, in);
    CHECK(p != NULL);
    CHECK_INT(nk_call(k, in, 2, NULL, out, 1, &nout), 0);
    if (p && nout == 1) {
        /* out[0:32, 32:256] is sel: act where 4p - f >= 0, on_false elsewhere */
        const float *y = out[0].data;
        int nfalse = 0;
        for (int r = 0; r < 32; r++)
            for (int c = 32; c < 256; c++)
                if (4 * r - c < 0) {
                    nfalse++;
                    if (y[r * 256 + c] != on_false_value) {
                        nk_test_fail(__FILE__, __LINE__, "sel[%d, %d] = %g, not on_false %g", r, c,
                                     y[r * 256 + c], on_false_value);
                        r = 32;
                        break;
                    }
                }
        CHECK(nfalse > 0);
        for (uint32_t i = 0; i < p->ninstr; i++)
            if (p->instrs[i].op == NK_OP_AFFINE_SELECT) {
                char opnd[1024];
                CHECK(nk__imm1(p, &p->instrs[i]) == 0 && nk__imm0(p, &p->instrs[i]) == on_false_value);
                nk__view_operands(p, i, opnd, sizeof opnd);
                CHECK_CONTAINS(opnd, "on_false=-7 ");
            }
        nk_array_free(&out[0]);
    }
    nk_array_free(&in[0]);
    nk_array_free(&in[1]);
    nk_kernel_free(k);
}

/* ---- limits from the target table */

/* The program checker reads the tile-size limits from the program's own
 * table: the same instructions pass on trn1 and fail on a table that
 * allows less. */
TEST(optable_checker_reads_limits_from_the_target_table)
{
    nk_kernel *k;
    nk_array in[2];
    const nk_program *p = compile_all_ops(&k, in);
    nk_program *q = NULL;
    char err[256] = "";
    CHECK(p != NULL);
    if (!p || nk__program_copy(p, &q))
        goto out;
    CHECK_INT(nk__program_check(q, err, sizeof err), 0);
    q->table.gemm_moving_fmax = 128; /* the matmuls' moving operands are 256 wide */
    CHECK_INT(nk__program_check(q, err, sizeof err), NK_EFORMAT);
    CHECK_CONTAINS(err, "nc_matmul sizes K=128/128 M=64 N=256 do not fit dst");
    q->table.gemm_moving_fmax = 512;
    q->table.gemm_stationary_fmax = 32;
    CHECK_INT(nk__program_check(q, err, sizeof err), NK_EFORMAT);
    CHECK_CONTAINS(err, "nc_matmul sizes K=128/128 M=64 N=256");
    q->table.gemm_stationary_fmax = 128;
    q->table.dve_transpose_max = 16; /* the Vector-engine transpose is 32 x 32 */
    CHECK_INT(nk__program_check(q, err, sizeof err), NK_EFORMAT);
    CHECK_CONTAINS(err, "transpose of [32, 32] into 1024 elements");
    q->table.dve_transpose_max = 32;
    q->table.pe_transpose_max = 16;
    CHECK_INT(nk__program_check(q, err, sizeof err), NK_EFORMAT);
    CHECK_CONTAINS(err, "transpose of [32, 32] into 1024 elements");
    q->table.pe_transpose_max = 128;
    CHECK_INT(nk__program_check(q, err, sizeof err), 0);
    /* a memory the op's row or its engine does not allow */
    for (uint32_t i = 0; i < q->ninstr; i++)
        if (q->instrs[i].op == NK_OP_MATMUL) {
            q->instrs[i].engine = NK_ENGINE_VECTOR;
            CHECK_INT(nk__program_check(q, err, sizeof err), NK_EFORMAT);
            CHECK_CONTAINS(err, "nc_matmul cannot run on engine 1");
            q->instrs[i].engine = NK_ENGINE_TENSOR;
            break;
        }
    for (uint32_t i = 0; i < q->ninstr; i++)
        if (q->instrs[i].op == NK_OP_TRANSPOSE && q->instrs[i].engine == NK_ENGINE_VECTOR) {
            q->instrs[i].engine = NK_ENGINE_TENSOR; /* its dst is in SBUF */
            CHECK_INT(nk__program_check(q, err, sizeof err), NK_EFORMAT);
            CHECK_CONTAINS(err, ": nc_transpose: dst in sbuf; on the tensor engine it must be in psum");
            q->instrs[i].engine = NK_ENGINE_VECTOR;
            break;
        }
    CHECK_INT(nk__program_check(q, err, sizeof err), 0);
out:
    nk__program_destroy(q);
    nk_array_free(&in[0]);
    nk_array_free(&in[1]);
    nk_kernel_free(k);
}

/* ---- DMA queues from the target table */

#define NSTORE 20 /* HBM tensors stored to: one queue each, more than trn1's 16 */

static void k_many_outputs(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor t = nk_load(nc, args[0]);
    for (int i = 0; i < NSTORE; i++) {
        nk_tensor o = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SHARED_HBM);
        nk_store(nc, o, t);
        if (i == 0)
            nk_return(nc, o);
    }
}

/* Distinct DMA queues of a program's instructions and of its timeline's
 * transfers; every one below the table's dma_queues. */
static void queues_used(const nk_program *p, const nk_timeline *tl, int nq, int *in_prog, int *in_tl)
{
    int seen[NK_ARCH_MAX_DMA_QUEUES] = {0}, seen_tl[NK_ARCH_MAX_DMA_QUEUES] = {0};
    *in_prog = *in_tl = 0;
    for (uint32_t i = 0; i < p->ninstr; i++)
        if (p->instrs[i].engine == NK_ENGINE_DMA) {
            int q = p->instrs[i].queue;
            CHECK(q < nq);
            if (q < nq && !seen[q]++)
                (*in_prog)++;
        }
    for (uint32_t i = 0; tl && i < tl->ndspans; i++) {
        int q = tl->dspans[i].queue;
        CHECK(q < nq);
        if (q < nq && !seen_tl[q]++)
            (*in_tl)++;
    }
}

TEST(optable_dma_queues_come_from_the_target_table)
{
    nk_array x = {NK_F32, 2, {128, 512}, NULL};
    nk_kernel *k = nk_kernel_new("many_outputs", k_many_outputs);
    const char *texts[3] = {"base = trn1\n", "base = trn1\nname = q32\ndma_queues = 32\n",
                            "base = trn1\nname = q4\ndma_queues = 4\n"};
    int want[3] = {16, NSTORE + 1, 4}; /* one load, NSTORE stores: each its own queue up to the table's */
    for (int t = 0; t < 3; t++) {
        nk_target *tab = NULL;
        char err[256] = "";
        CHECK_INT(nk_target_parse(texts[t], "test", &tab, err, sizeof err), 0);
        nk_options o = {NULL, 0, tab};
        const nk_program *p = NULL;
        nk_timeline *tl = NULL;
        CHECK_INT(nk_kernel_compile(k, &x, 1, &o, &p), 0);
        if (p) {
            int nq = nk_program_target_table(p)->dma_queues, np, nt;
            CHECK_INT(nq, t == 1 ? 32 : t == 2 ? 4 : 16);
            CHECK_INT(nk__program_check(p, err, sizeof err), 0);
            CHECK_INT(time_detail(p, NULL, &tl), 0);
            queues_used(p, tl, nq, &np, &nt);
            CHECK_INT(np, want[t]);
            CHECK_INT(nt, want[t]);
            /* the file keeps them, and the reader checks them against the file's table */
            nk_wr w = {0};
            nk_program *q = NULL;
            nk_rd r;
            CHECK_INT(nk__program_encode(p, &w), 0);
            nk__rd_init(&r, w.p, w.n, err, sizeof err);
            CHECK_INT(nk__program_decode(&r, &q), 0);
            if (q) {
                for (uint32_t i = 0; i < p->ninstr; i++)
                    CHECK_INT(q->instrs[i].queue, p->instrs[i].queue);
                /* a queue past the table's is malformed */
                for (uint32_t i = 0; i < q->ninstr; i++)
                    if (q->instrs[i].engine == NK_ENGINE_DMA) {
                        q->instrs[i].queue = (uint16_t)nq;
                        CHECK_INT(nk__program_check(q, err, sizeof err), NK_EFORMAT);
                        char m[96];
                        snprintf(m, sizeof m, "DMA queue %d invalid for engine dma", nq);
                        CHECK_CONTAINS(err, m);
                        break;
                    }
            }
            nk__program_destroy(q);
            nk__wr_free(&w);
        }
        nk__timeline_free(tl);
        nk_target_free(tab);
    }
    nk_kernel_free(k);
}

/* A load of 128 partitions is one descriptor per DMA engine of the table,
 * partitions spread evenly, and the profile reader holds transfers to the
 * timing table's engines. */
TEST(optable_dma_engines_come_from_the_target_table)
{
    nk_array x = {NK_F32, 2, {128, 512}, NULL};
    nk_kernel *k = nk_kernel_new("many_outputs", k_many_outputs);
    int engines[3] = {4, 16, 32};
    for (int t = 0; t < 3; t++) {
        char text[96], err[256] = "";
        snprintf(text, sizeof text, "base = trn1\nname = e%d\ndma_engines = %d\n", engines[t], engines[t]);
        nk_target *tab = NULL;
        CHECK_INT(nk_target_parse(text, "test", &tab, err, sizeof err), 0);
        nk_options o = {NULL, 0, tab};
        const nk_program *p = NULL;
        nk_profile *pr = NULL;
        CHECK_INT(nk_kernel_compile(k, &x, 1, &o, &p), 0);
        if (p)
            CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
        if (pr) {
            uint32_t n0 = 0, maxe = 0, spans0 = 0;
            nk_timeline *tl = NULL;
            CHECK_INT(time_detail(p, NULL, &tl), 0);
            for (uint32_t i = 0; tl && i < tl->nxfers; i++) {
                const nk_dma_xfer *d = &tl->xfers[i];
                if (d->instr != 0)
                    continue;
                n0++;
                CHECK_INT(d->partitions, 128 / engines[t]);
                if (d->dma_engine > maxe)
                    maxe = d->dma_engine;
            }
            nk__timeline_free(tl);
            CHECK_INT(n0, engines[t]);
            CHECK_INT(maxe, engines[t] - 1);
            /* the profile's span of that load: every engine, every descriptor */
            for (uint32_t i = 0; i < pr->tl->ndspans; i++)
                if (pr->tl->dspans[i].instr == 0) {
                    spans0++;
                    CHECK_INT(pr->tl->dspans[i].descriptors, engines[t]);
                    CHECK_INT(pr->tl->dspans[i].partitions, 128);
                    CHECK(pr->tl->dspans[i].engines == (1ull << engines[t]) - 1);
                }
            CHECK_INT(spans0, 1);
            CHECK_INT(nk__timeline_check(pr->tl, pr->prog, &pr->arch, err, sizeof err), 0);
            if (engines[t] > 4) { /* read against a table with fewer engines: out of range */
                nk_arch fewer = pr->arch;
                fewer.dma_engines = 4;
                CHECK_INT(nk__timeline_check(pr->tl, pr->prog, &fewer, err, sizeof err), NK_EFORMAT);
                CHECK_CONTAINS(err, "out of range");
            }
        }
        nk_profile_free(pr);
        nk_target_free(tab);
    }
    nk_kernel_free(k);
}
