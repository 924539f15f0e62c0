/*
 * optable.c - the op table: one row per opcode with every fact about it
 * (see optable.h), and the few functions that read a row.
 *
 * Sources of the facts (full titles in docs/timing-model.md):
 *   engines, operands, memories: the nki.isa docstrings [ISA] (nc_matmul
 *     reads SBUF and writes PSUM; GpSimd cannot access PSUM [A2]);
 *   cost entries: the legacy nki.isa docstrings [ISA-old];
 *   tile-size limits: target-table fields (src/arch), read by the checks.
 */
#include "isa/optable.h"
#include "exec/exec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- memories the engines reach */

unsigned nk__engine_mems(int engine, int write)
{
    switch (engine) {
    case NK_ENGINE_TENSOR: return write ? NK_MEM(NK_PSUM) : NK_MEM(NK_SBUF); /* [A2] */
    case NK_ENGINE_VECTOR:
    case NK_ENGINE_SCALAR: return NK_MEM_ONCHIP;
    case NK_ENGINE_GPSIMD: return NK_MEM(NK_SBUF); /* no PSUM port [A2] */
    case NK_ENGINE_DMA: return NK_MEM(NK_SHARED_HBM) | NK_MEM(NK_SBUF);
    default: return 0;
    }
}

const char *nk__mem_names(unsigned mask)
{
    static const char *names[8] = {"nothing", "hbm", "sbuf", "hbm or sbuf", "psum", "hbm or psum", "sbuf or psum",
                                   "hbm, sbuf or psum"};
    return names[mask & 7];
}

/* ---- attribute text */

static void put(nk_opbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends one attribute, a space before every one but the first. */
static void put(nk_opbuf *b, const char *fmt, ...)
{
    if (b->len + 1 >= b->n)
        return;
    if (b->len)
        b->s[b->len++] = ' ';
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->s + b->len, b->n - b->len, fmt, ap);
    va_end(ap);
    if (w > 0)
        b->len = (size_t)w < b->n - b->len ? b->len + (size_t)w : b->n - 1;
    b->s[b->len] = 0;
}

static const char *cmp_name(int cmp)
{
    static const char *names[] = {"greater_equal", "greater", "equal", "not_equal", "less_equal", "less"};
    return (unsigned)cmp < sizeof names / sizeof names[0] ? names[cmp] : "invalid";
}

/* c + cp*p + cf[i]*f_i, terms with a zero coefficient left out. */
static void affine_text(char *s, size_t n, const nk_affine *e)
{
    size_t k = (size_t)snprintf(s, n, "%d", e->c);
    if (k < n && e->cp)
        k += (size_t)snprintf(s + k, n - k, "%+d*p", e->cp);
    for (int i = 0; i < NK_MAXDIM - 1 && k < n; i++)
        if (e->cf[i])
            k += (size_t)snprintf(s + k, n - k, "%+d*f%d", e->cf[i], i);
}

static void attrs_none(nk_opbuf *b, const nk_instr *in)
{
    (void)b;
    (void)in;
}

/* load/store: marked when the compile step inserted it to spill a tile */
static void attrs_dma(nk_opbuf *b, const nk_instr *in)
{
    if (in->flags & NK_IF_SPILL)
        put(b, "spill");
}

static void attrs_matmul(nk_opbuf *b, const nk_instr *in)
{
    if (in->flags & NK_IF_ACCUMULATE)
        put(b, "accumulate");
}

static void attrs_activation(nk_opbuf *b, const nk_instr *in)
{
    put(b, "func=%s", nk_act_name((nk_act)in->func));
    if (!(in->flags & NK_IF_OPND0_T))
        put(b, "bias=%g", b->x->imm0);
    if (!(in->flags & NK_IF_OPND1_T))
        put(b, "scale=%g", b->x->imm1);
}

static void attrs_tensor_tensor(nk_opbuf *b, const nk_instr *in) { put(b, "op=%s", nk_alu_name((nk_alu)in->alu0)); }

static void attrs_tensor_scalar(nk_opbuf *b, const nk_instr *in)
{
    put(b, "op0=%s", nk_alu_name((nk_alu)in->alu0));
    if (!(in->flags & NK_IF_OPND0_T))
        put(b, "operand0=%g", b->x->imm0);
    if (in->flags & NK_IF_REV0)
        put(b, "reverse0");
    if (in->alu1 == NK_ALU_BYPASS)
        return;
    put(b, "op1=%s", nk_alu_name((nk_alu)in->alu1));
    if (!(in->flags & NK_IF_OPND1_T))
        put(b, "operand1=%g", b->x->imm1);
    if (in->flags & NK_IF_REV1)
        put(b, "reverse1");
}

static void attrs_tensor_reduce(nk_opbuf *b, const nk_instr *in)
{
    put(b, "op=%s axis=%d", nk_alu_name((nk_alu)in->alu0), in->axis);
    if (in->flags & NK_IF_KEEPDIMS)
        put(b, "keepdims");
}

static void attrs_memset(nk_opbuf *b, const nk_instr *in)
{
    (void)in;
    put(b, "value=%g", b->x->imm0);
}

static void attrs_iota(nk_opbuf *b, const nk_instr *in)
{
    (void)in;
    char e[96];
    affine_text(e, sizeof e, &b->x->aff);
    put(b, "expr=%s", e);
}

/* on_false is imm0: the value the executor writes where the predicate fails */
static void attrs_affine_select(nk_opbuf *b, const nk_instr *in)
{
    char e[96];
    affine_text(e, sizeof e, &b->x->aff);
    put(b, "pred=%s cmp=%s on_false=%g", e, cmp_name(in->cmp), b->x->imm0);
}

/* tensor_tensor_scan: op0, op1, the initial value when an immediate */
static void attrs_scan(nk_opbuf *b, const nk_instr *in)
{
    put(b, "op0=%s", nk_alu_name((nk_alu)in->alu0));
    if (in->flags & NK_IF_REV0)
        put(b, "reverse0");
    put(b, "op1=%s", nk_alu_name((nk_alu)in->alu1));
    if (in->flags & NK_IF_REV1)
        put(b, "reverse1");
    if (!(in->flags & NK_IF_OPND1_T))
        put(b, "initial=%g", b->x->imm0);
}

/* scalar_tensor_tensor: op0 with operand0 (an immediate or src[1]), op1
 * with the tensor operand1 */
static void attrs_stt(nk_opbuf *b, const nk_instr *in)
{
    put(b, "op0=%s", nk_alu_name((nk_alu)in->alu0));
    if (!(in->flags & NK_IF_OPND0_T))
        put(b, "operand0=%g", b->x->imm0);
    if (in->flags & NK_IF_REV0)
        put(b, "reverse0");
    put(b, "op1=%s", nk_alu_name((nk_alu)in->alu1));
    if (in->flags & NK_IF_REV1)
        put(b, "reverse1");
}

static void attrs_tensor_scalar_reduce(nk_opbuf *b, const nk_instr *in)
{
    put(b, "op0=%s", nk_alu_name((nk_alu)in->alu0));
    if (!(in->flags & NK_IF_OPND0_T))
        put(b, "operand0=%g", b->x->imm0);
    put(b, "reduce_op=%s", nk_alu_name((nk_alu)in->alu1));
}

/* select: on_false is imm0 unless it is the tile src[2] */
static void attrs_select(nk_opbuf *b, const nk_instr *in)
{
    if (!(in->flags & NK_IF_OPND1_T))
        put(b, "on_false=%g", b->x->imm0);
}

/* dropout: the drop probability (an immediate or src[1]) and where in the
 * seed's stream of draws it starts */
static void attrs_dropout(nk_opbuf *b, const nk_instr *in)
{
    if (!(in->flags & NK_IF_OPND0_T))
        put(b, "prob=%g", b->x->imm0);
    put(b, "draw=%.0f", b->x->imm1);
}

/* ---- cost-table work [ISA-old] */

static int is16f(int dt) { return dt == NK_BF16 || dt == NK_F16; }

/* 2N from two SBUF inputs; N with an input in PSUM, or for bf16
 * add/multiply/subtract with both inputs contiguous along the free
 * dimension (stride 1 element) [ISA-old]. */
static double work_tensor_tensor(const nk_program *p, const nk_instr *in, double n)
{
    const nk_layout *x = nk__lay(p, &in->src[0]), *y = nk__lay(p, &in->src[1]);
    int one_psum = x->mem == NK_PSUM || y->mem == NK_PSUM;
    int op = in->alu0;
    int bf16_fast = x->dtype == NK_BF16 && y->dtype == NK_BF16 && nk__lay(p, &in->dst)->dtype == NK_BF16 &&
                    (op == NK_ALU_ADD || op == NK_ALU_MULTIPLY || op == NK_ALU_SUBTRACT) &&
                    nk__lay_inner_contiguous(x) && nk__lay_inner_contiguous(y);
    return one_psum || bf16_fast ? n : 2 * n;
}

/* N, or N/2 for a bf16 add or max */
static double work_tensor_reduce(const nk_program *p, const nk_instr *in, double n)
{
    if (nk__lay(p, &in->src[0])->dtype == NK_BF16 && (in->alu0 == NK_ALU_ADD || in->alu0 == NK_ALU_MAX))
        return n / 2;
    return n;
}

/* N, or N/2 for zeros in a 16-bit float tile */
static double work_memset(const nk_program *p, const nk_instr *in, double n)
{
    return nk__imm0(p, in) == 0.0 && is16f(nk__lay(p, &in->dst)->dtype) ? n / 2 : n;
}

/* tensor_tensor_scan: 2N */
static double work_twice(const nk_program *p, const nk_instr *in, double n)
{
    (void)p;
    (void)in;
    return 2 * n;
}

/* scalar_tensor_tensor: N when data and operand1 are bf16, op0 subtract,
 * op1 multiply and N even; else 2N */
static double work_stt(const nk_program *p, const nk_instr *in, double n)
{
    int fast = nk__lay(p, &in->src[0])->dtype == NK_BF16 && nk__lay(p, nk__src(p, in, 2))->dtype == NK_BF16 && in->alu0 == NK_ALU_SUBTRACT &&
               in->alu1 == NK_ALU_MULTIPLY && (int64_t)n % 2 == 0;
    return fast ? n : 2 * n;
}

/* select, priced as tensor_copy_predicated: N when on_true and the
 * predicate are in different memories, else 2N */
static double work_select(const nk_program *p, const nk_instr *in, double n)
{
    return nk__lay(p, &in->src[0])->mem != nk__lay(p, &in->src[1])->mem ? n : 2 * n;
}

/* bn_aggr: 13 cycles per (count, mean, variance*count) tuple */
static double work_bn_aggr(const nk_program *p, const nk_instr *in, double n)
{
    (void)p;
    (void)in;
    return 13 * (n / 3);
}

/* ---- shape relations and limits */

static int fail(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *msg, size_t len, const char *fmt, ...)
{
    if (msg && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap);
        va_end(ap);
    }
    return 1;
}

enum { D = NK_OPND_DST, D2 = NK_OPND_DST2, S0 = NK_OPND_SRC0, S1, S2 };

static int check_dma(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                     size_t len)
{
    (void)a;
    if (n[D] != n[S0] || nk_dtype_size((nk_dtype)nk__lay(p, &in->dst)->dtype) != nk_dtype_size((nk_dtype)nk__lay(p, &in->src[0])->dtype))
        return fail(msg, len, "%s of %lld elements into %lld, or element sizes differ", nk__op_name(in->op),
                    (long long)n[S0], (long long)n[D]);
    return 0;
}

static int check_matmul(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                        size_t len)
{
    int64_t P = nk__lay(p, &in->src[0])->shape[0], M = n[S0] / P, N = n[S1] / nk__lay(p, &in->src[1])->shape[0];
    if (nk__lay(p, &in->src[1])->shape[0] != P || M > a->gemm_stationary_fmax || N > a->gemm_moving_fmax ||
        nk__lay(p, &in->dst)->shape[0] != M || n[D] != M * N)
        return fail(msg, len, "nc_matmul sizes K=%lld/%d M=%lld N=%lld do not fit dst of %lld elements", (long long)P,
                    nk__lay(p, &in->src[1])->shape[0], (long long)M, (long long)N, (long long)n[D]);
    return 0;
}

static int check_transpose(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                           size_t len)
{
    int64_t P = nk__lay(p, &in->src[0])->shape[0], F = n[S0] / P;
    int64_t lim = in->engine == NK_ENGINE_TENSOR ? a->pe_transpose_max : a->dve_transpose_max;
    if (P > lim || F > lim || nk__lay(p, &in->dst)->shape[0] != F || n[D] != P * F)
        return fail(msg, len, "transpose of [%lld, %lld] into %lld elements", (long long)P, (long long)F,
                    (long long)n[D]);
    return 0;
}

/* activation, tensor_scalar: elementwise, with per-partition columns */
static int check_columns(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                         size_t len)
{
    (void)a;
    const char *op = nk__op_name(in->op);
    int64_t P = nk__lay(p, &in->src[0])->shape[0];
    if (n[D] != n[S0])
        return fail(msg, len, "%s writes %lld elements from %lld", op, (long long)n[D], (long long)n[S0]);
    for (int k = 1; k < 3; k++)
        if (nk__src(p, in, k)->buf && n[S0 + k] != P)
            return fail(msg, len, "%s: operand %d has %lld elements, not one per partition (%lld)", op, k,
                        (long long)n[S0 + k], (long long)P);
    if (nk__dst2(p, in)->buf && n[D2] != P)
        return fail(msg, len, "%s: reduction output has %lld elements, not %lld", op, (long long)n[D2], (long long)P);
    return 0;
}

static int check_tensor_reduce(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                               size_t len)
{
    (void)a;
    const nk_layout *s = nk__lay(p, &in->src[0]);
    int64_t P = s->shape[0], F = n[S0] / P;
    if (in->axis == 0 || in->axis >= s->ndim)
        return fail(msg, len, "tensor_reduce axis %d is not a free axis of a %u-dim tile", in->axis, s->ndim);
    int64_t kept = in->axis == -1 ? 1 : F / s->shape[in->axis];
    if (n[D] != P * kept)
        return fail(msg, len, "tensor_reduce writes %lld elements, expected %lld", (long long)n[D],
                    (long long)(P * kept));
    return 0;
}

static int check_tensor_tensor(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                               size_t len)
{
    (void)a;
    (void)p;
    (void)in;
    if (n[S1] != n[S0] || n[D] != n[S0])
        return fail(msg, len, "tensor_tensor element counts %lld, %lld -> %lld differ", (long long)n[S0],
                    (long long)n[S1], (long long)n[D]);
    return 0;
}

/* tensor_copy, affine_select: one element out per element in */
static int check_same_count(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                            size_t len)
{
    (void)a;
    (void)p;
    if (n[D] != n[S0])
        return fail(msg, len, "%s element counts %lld -> %lld differ", nk__op_name(in->op), (long long)n[S0],
                    (long long)n[D]);
    return 0;
}

/* bn_stats: at most bn_stats_fmax elements in, six values out per partition */
static int check_bn_stats(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                          size_t len)
{
    int64_t P = nk__lay(p, &in->src[0])->shape[0], F = n[S0] / P;
    if (F > a->bn_stats_fmax || nk__lay(p, &in->dst)->shape[0] != P || n[D] != 6 * P)
        return fail(msg, len, "bn_stats of [%lld, %lld] (at most %lld per partition) into %lld elements",
                    (long long)P, (long long)F, (long long)a->bn_stats_fmax, (long long)n[D]);
    return 0;
}

/* bn_aggr: whole (count, mean, variance*count) tuples in, mean and variance out */
static int check_bn_aggr(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                         size_t len)
{
    (void)a;
    int64_t P = nk__lay(p, &in->src[0])->shape[0], F = n[S0] / P;
    if (F % 3 || nk__lay(p, &in->dst)->shape[0] != P || n[D] != 2 * P)
        return fail(msg, len, "bn_aggr of [%lld, %lld] (tuples of 3) into %lld elements", (long long)P,
                    (long long)F, (long long)n[D]);
    return 0;
}

/* tensor_tensor_scan, scalar_tensor_tensor: src[0], src[1] or src[2] (the
 * second tensor), dst elementwise; a per-partition column where noted */
static int check_scan(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                      size_t len)
{
    (void)a;
    int64_t P = nk__lay(p, &in->src[0])->shape[0];
    if (n[S1] != n[S0] || n[D] != n[S0] || (nk__src(p, in, 2)->buf && n[S2] != P))
        return fail(msg, len, "tensor_tensor_scan element counts %lld, %lld -> %lld (initial %lld of %lld)",
                    (long long)n[S0], (long long)n[S1], (long long)n[D], (long long)n[S2], (long long)P);
    return 0;
}

static int check_stt(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                     size_t len)
{
    (void)a;
    int64_t P = nk__lay(p, &in->src[0])->shape[0];
    if (n[S2] != n[S0] || n[D] != n[S0] || (in->src[1].buf && n[S1] != P))
        return fail(msg, len, "scalar_tensor_tensor element counts %lld, %lld -> %lld (operand0 %lld of %lld)",
                    (long long)n[S0], (long long)n[S2], (long long)n[D], (long long)n[S1], (long long)P);
    return 0;
}

/* select: predicate, on_true, on_false (when a tile) and dst alike */
static int check_select(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                        size_t len)
{
    (void)a;
    if (n[S1] != n[S0] || n[D] != n[S0] || (nk__src(p, in, 2)->buf && n[S2] != n[S0]))
        return fail(msg, len, "select element counts: predicate %lld, on_true %lld, on_false %lld -> %lld",
                    (long long)n[S0], (long long)n[S1], (long long)n[S2], (long long)n[D]);
    return 0;
}

/* dropout: dst like data, prob one per partition, the seed one element */
static int check_dropout(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                         size_t len)
{
    (void)a;
    int64_t P = nk__lay(p, &in->src[0])->shape[0];
    const nk_opnd *seed = nk__src(p, in, 2);
    if (n[D] != n[S0] || nk__lay(p, &in->dst)->dtype != nk__lay(p, &in->src[0])->dtype || (in->src[1].buf && n[S1] != P) ||
        (seed->buf && (n[S2] != 1 || nk_dtype_size((nk_dtype)nk__opnd_dtype(p, seed)) != 4)))
        return fail(msg, len, "dropout of %lld elements into %lld (dtypes %s, %s), prob %lld, seed %lld",
                    (long long)n[S0], (long long)n[D], nk_dtype_name((nk_dtype)nk__lay(p, &in->src[0])->dtype),
                    nk_dtype_name((nk_dtype)nk__lay(p, &in->dst)->dtype), (long long)n[S1], (long long)n[S2]);
    return 0;
}

/* load_transpose2d: HBM [F, P] into a tile [P, F] */
static int check_load_transpose(const nk_arch *a, const nk_program *p, const nk_instr *in, const int64_t *n, char *msg,
                                size_t len)
{
    const nk_layout *s = nk__lay(p, &in->src[0]), *d = nk__lay(p, &in->dst);
    if (check_dma(a, p, in, n, msg, len))
        return 1;
    if (s->ndim != 2 || d->shape[0] != s->shape[1] || n[D] != n[S0])
        return fail(msg, len, "load_transpose2d of a %u-dim [%d, ...] tensor into a tile of %d partitions", s->ndim,
                    s->shape[0], d->shape[0]);
    return 0;
}

/* ---- the table */

#define E(x) NK_ENG(NK_ENGINE_##x)
#define M(x) NK_MEM(NK_##x)
#define HBM NK_MEM(NK_SHARED_HBM)
#define ONCHIP NK_MEM_ONCHIP

static const nk_opdef optable[NK_OP_COUNT] = {
    [NK_OP_LOAD] = {
        .name = "load", .engines = E(DMA), .default_engine = NK_ENGINE_DMA, .flags = NK_IF_SPILL,
        .opnd = {[D] = {"dst", M(SBUF)}, [S0] = {"src", HBM}},
        .check = check_dma, .attrs = attrs_dma, .exec = nk__exec_dma,
    },
    [NK_OP_STORE] = {
        .name = "store", .engines = E(DMA), .default_engine = NK_ENGINE_DMA, .flags = NK_IF_SPILL,
        .opnd = {[D] = {"dst", HBM}, [S0] = {"src", M(SBUF)}},
        .check = check_dma, .attrs = attrs_dma, .exec = nk__exec_dma,
    },
    [NK_OP_MATMUL] = {
        .name = "nc_matmul", .engines = E(TENSOR), .default_engine = NK_ENGINE_TENSOR,
        .flags = NK_IF_ACCUMULATE,
        .opnd = {[D] = {"dst", M(PSUM)}, [S0] = {"stationary", M(SBUF)}, [S1] = {"moving", M(SBUF)}},
        .cost = {.pe = NK_PE_MOVING},
        .check = check_matmul, .attrs = attrs_matmul, .exec = nk__exec_matmul,
    },
    [NK_OP_TRANSPOSE] = {
        /* Tensor engine: a matmul with the identity, SBUF to PSUM; Vector
           engine: 32x32 blocks, either memory [ISA] */
        .name = "nc_transpose", .engines = E(TENSOR) | E(VECTOR), .default_engine = NK_ENGINE_TENSOR,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"src", ONCHIP}},
        .cost = {.min_ii_floor = 1, .pe = NK_PE_IDENTITY},
        .check = check_transpose, .attrs = attrs_none, .exec = nk__exec_transpose,
    },
    [NK_OP_ACTIVATION] = {
        .name = "activation", .engines = E(SCALAR), .default_engine = NK_ENGINE_SCALAR,
        .flags = NK_IF_OPND0_T | NK_IF_OPND1_T | NK_IF_REDUCE,
        .opnd = {[D] = {"dst", ONCHIP}, [D2] = {"reduce_res", ONCHIP, NK_IF_REDUCE}, [S0] = {"src", ONCHIP},
                 [S1] = {"bias", ONCHIP, NK_IF_OPND0_T}, [S2] = {"scale", ONCHIP, NK_IF_OPND1_T}},
        /* activation_reduce: + MIN_II */
        .cost = {.min_ii_floor = 1, .extra = NK_COST_EXTRA_MIN_II, .extra_if = NK_IF_REDUCE},
        .check = check_columns, .attrs = attrs_activation, .exec = nk__exec_activation,
    },
    [NK_OP_TENSOR_TENSOR] = {
        .name = "tensor_tensor", .engines = E(VECTOR) | E(GPSIMD), .default_engine = NK_ENGINE_VECTOR,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"a", ONCHIP}, [S1] = {"b", ONCHIP}},
        .cost = {.work = work_tensor_tensor, .min_ii_floor = 1, .fast16 = NK_FAST16_TWO_INPUT},
        .check = check_tensor_tensor, .attrs = attrs_tensor_tensor, .exec = nk__exec_tensor_tensor,
    },
    [NK_OP_TENSOR_SCALAR] = {
        .name = "tensor_scalar", .engines = E(VECTOR) | E(SCALAR) | E(GPSIMD), .default_engine = NK_ENGINE_VECTOR,
        .flags = NK_IF_REV0 | NK_IF_REV1 | NK_IF_OPND0_T | NK_IF_OPND1_T,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"src", ONCHIP}, [S1] = {"operand0", ONCHIP, NK_IF_OPND0_T},
                 [S2] = {"operand1", ONCHIP, NK_IF_OPND1_T}},
        .cost = {.min_ii_floor = 1, .fast16 = NK_FAST16_ONE_INPUT},
        .check = check_columns, .attrs = attrs_tensor_scalar, .exec = nk__exec_tensor_scalar,
    },
    [NK_OP_TENSOR_REDUCE] = {
        .name = "tensor_reduce", .engines = E(VECTOR), .default_engine = NK_ENGINE_VECTOR,
        .flags = NK_IF_KEEPDIMS,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"src", ONCHIP}},
        .cost = {.work = work_tensor_reduce}, /* N or N/2, no MIN_II floor */
        .check = check_tensor_reduce, .attrs = attrs_tensor_reduce, .exec = nk__exec_tensor_reduce,
    },
    [NK_OP_TENSOR_COPY] = {
        .name = "tensor_copy", .engines = E(VECTOR) | E(SCALAR) | E(GPSIMD), .default_engine = NK_ENGINE_VECTOR,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"src", ONCHIP}},
        .cost = {.min_ii_floor = 1, .fast16 = NK_FAST16_ONE_INPUT},
        .check = check_same_count, .attrs = attrs_none, .exec = nk__exec_tensor_copy,
    },
    [NK_OP_MEMSET] = {
        .name = "memset", .engines = E(VECTOR) | E(GPSIMD), .default_engine = NK_ENGINE_VECTOR,
        .opnd = {[D] = {"dst", ONCHIP}},
        .cost = {.work = work_memset, .min_ii_floor = 1},
        .attrs = attrs_memset, .exec = nk__exec_memset,
    },
    [NK_OP_IOTA] = {
        .name = "iota", .engines = E(GPSIMD), .default_engine = NK_ENGINE_GPSIMD,
        .opnd = {[D] = {"dst", ONCHIP}},
        .cost = {.extra = NK_COST_EXTRA_POOL_FIXED, .no_overhead = 1}, /* 150 + N */
        .attrs = attrs_iota, .exec = nk__exec_iota,
    },
    [NK_OP_AFFINE_SELECT] = {
        .name = "affine_select", .engines = E(GPSIMD), .default_engine = NK_ENGINE_GPSIMD,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"on_true", ONCHIP}},
        .cost = {.extra = NK_COST_EXTRA_POOL_FIXED, .no_overhead = 1}, /* 150 + N */
        .check = check_same_count, .attrs = attrs_affine_select, .exec = nk__exec_affine_select,
    },
    [NK_OP_BN_STATS] = {
        /* max(MIN_II, N) [ISA-old] */
        .name = "bn_stats", .engines = E(VECTOR), .default_engine = NK_ENGINE_VECTOR,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"data", ONCHIP}},
        .cost = {.min_ii_floor = 1},
        .check = check_bn_stats, .attrs = attrs_none, .exec = nk__exec_bn_stats,
    },
    [NK_OP_BN_AGGR] = {
        /* max(MIN_II, 13*(N/3)) [ISA-old] */
        .name = "bn_aggr", .engines = E(VECTOR), .default_engine = NK_ENGINE_VECTOR,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"data", ONCHIP}},
        .cost = {.work = work_bn_aggr, .min_ii_floor = 1},
        .check = check_bn_aggr, .attrs = attrs_none, .exec = nk__exec_bn_aggr,
    },
    [NK_OP_TENSOR_TENSOR_SCAN] = {
        /* max(MIN_II, 2N) [ISA-old]; initial is src[2] or imm0 */
        .name = "tensor_tensor_scan", .engines = E(VECTOR), .default_engine = NK_ENGINE_VECTOR,
        .flags = NK_IF_REV0 | NK_IF_REV1 | NK_IF_OPND1_T,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"data0", ONCHIP}, [S1] = {"data1", ONCHIP},
                 [S2] = {"initial", ONCHIP, NK_IF_OPND1_T}},
        .cost = {.work = work_twice, .min_ii_floor = 1},
        .check = check_scan, .attrs = attrs_scan, .exec = nk__exec_tensor_tensor_scan,
    },
    [NK_OP_SCALAR_TENSOR_TENSOR] = {
        /* N or 2N, no MIN_II floor in its table [ISA-old]; operand0 is src[1]
           or imm0, operand1 always src[2] */
        .name = "scalar_tensor_tensor", .engines = E(VECTOR), .default_engine = NK_ENGINE_VECTOR,
        .flags = NK_IF_REV0 | NK_IF_REV1 | NK_IF_OPND0_T,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"data", ONCHIP}, [S1] = {"operand0", ONCHIP, NK_IF_OPND0_T},
                 [S2] = {"operand1", ONCHIP}},
        .cost = {.work = work_stt},
        .check = check_stt, .attrs = attrs_stt, .exec = nk__exec_scalar_tensor_tensor,
    },
    [NK_OP_TENSOR_SCALAR_REDUCE] = {
        /* max(MIN_II, N) + MIN_II [ISA-old]; alu1 is the reduce op */
        .name = "tensor_scalar_reduce", .engines = E(VECTOR), .default_engine = NK_ENGINE_VECTOR,
        .flags = NK_IF_OPND0_T,
        .opnd = {[D] = {"dst", ONCHIP}, [D2] = {"reduce_res", ONCHIP}, [S0] = {"data", ONCHIP},
                 [S1] = {"operand0", ONCHIP, NK_IF_OPND0_T}},
        .cost = {.min_ii_floor = 1, .extra = NK_COST_EXTRA_MIN_II},
        .check = check_columns, .attrs = attrs_tensor_scalar_reduce, .exec = nk__exec_tensor_scalar_reduce,
    },
    [NK_OP_SELECT] = {
        /* nl.where; the docs give no lowering or cost: priced as
           tensor_copy_predicated [ISA-old] (assumed) */
        .name = "select", .engines = E(VECTOR), .default_engine = NK_ENGINE_VECTOR,
        .flags = NK_IF_OPND1_T,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"predicate", ONCHIP}, [S1] = {"on_true", ONCHIP},
                 [S2] = {"on_false", ONCHIP, NK_IF_OPND1_T}},
        .cost = {.work = work_select, .min_ii_floor = 1},
        .check = check_select, .attrs = attrs_select, .exec = nk__exec_select,
    },
    [NK_OP_DROPOUT] = {
        /* max(MIN_II, N) [ISA-old]; prob is src[1] or imm0, the seed src[2],
           imm1 the index of its first draw */
        .name = "dropout", .engines = E(VECTOR), .default_engine = NK_ENGINE_VECTOR,
        .flags = NK_IF_OPND0_T | NK_IF_OPND1_T,
        .opnd = {[D] = {"dst", ONCHIP}, [S0] = {"data", ONCHIP}, [S1] = {"prob", ONCHIP, NK_IF_OPND0_T},
                 [S2] = {"seed", ONCHIP, NK_IF_OPND1_T}},
        .cost = {.min_ii_floor = 1},
        .check = check_dropout, .attrs = attrs_dropout, .exec = nk__exec_dropout,
    },
    [NK_OP_DMA_COPY] = {
        /* nisa.dma_copy within SBUF or within HBM [ISA][DMA]; the DMA
           engines' bandwidth and efficiency curve, as a load */
        .name = "dma_copy", .engines = E(DMA), .default_engine = NK_ENGINE_DMA,
        .opnd = {[D] = {"dst", HBM | M(SBUF)}, [S0] = {"src", HBM | M(SBUF)}},
        .check = check_dma, .attrs = attrs_none, .exec = nk__exec_dma,
    },
    [NK_OP_LOAD_TRANSPOSE] = {
        /* nl.load_transpose2d: a DMA whose access pattern transposes [NL][PG] */
        .name = "load_transpose2d", .engines = E(DMA), .default_engine = NK_ENGINE_DMA,
        .opnd = {[D] = {"dst", M(SBUF)}, [S0] = {"src", HBM}},
        .check = check_load_transpose, .attrs = attrs_none, .exec = nk__exec_load_transpose,
    },
};

#undef ONCHIP
#undef HBM
#undef M
#undef E

const nk_opdef *nk__op_def(int op) { return (unsigned)op < NK_OP_COUNT ? &optable[op] : NULL; }

/* ---- reading a row */

int nk__op_operand_present(const nk_instr *in, int k)
{
    const nk_opdef *d = nk__op_def(in->op);
    if (!d || k < 0 || k >= NK_OPND_COUNT || !d->opnd[k].name)
        return 0;
    return !d->opnd[k].present_if || (in->flags & d->opnd[k].present_if);
}

int nk__op_nsrc(const nk_instr *in)
{
    int n = 0;
    for (int k = 0; k < 3; k++)
        if (nk__op_operand_present(in, S0 + k))
            n = k + 1;
    return n;
}

int nk__op_max_srcs(const nk_opdef *d)
{
    int n = 0;
    for (int k = 0; k < 3; k++)
        if (d->opnd[S0 + k].name)
            n = k + 1;
    return n;
}

unsigned nk__op_operand_mems(const nk_instr *in, int k)
{
    const nk_opdef *d = nk__op_def(in->op);
    if (!d || k < 0 || k >= NK_OPND_COUNT)
        return 0;
    return d->opnd[k].mem & nk__engine_mems(in->engine, k < S0);
}

const char *nk__op_operand_name(const nk_instr *in, int k)
{
    const nk_opdef *d = nk__op_def(in->op);
    return d && k >= 0 && k < NK_OPND_COUNT && d->opnd[k].name ? d->opnd[k].name : "?";
}

const nk_opnd *nk__op_operand(const nk_program *p, const nk_instr *in, int k)
{
    return k == D ? &in->dst : k == D2 ? nk__dst2(p, in) : nk__src(p, in, k - S0);
}

size_t nk__op_attrs(const nk_program *p, const nk_instr *in, char *buf, size_t n)
{
    if (!n)
        return 0;
    nk_opbuf b = {buf, n, 0, nk__xarg(p, in)};
    buf[0] = 0;
    const nk_opdef *d = nk__op_def(in->op);
    if (d && d->attrs)
        d->attrs(&b, in);
    return b.len;
}
