/*
 * exec.c - the functional interpreter of a compiled program.
 *
 * On-chip memories are real byte arrays laid out as the hardware's
 * partitions, so multi-buffered tiles alias exactly as they do on the chip.
 * Instructions run in program order, which every dependency respects.
 * Engines read operands converted to fp32, compute in fp32 and round to the
 * destination dtype (round to nearest even); PSUM accumulates in fp32;
 * matmul goes through BLAS (sgemm), single-threaded for bit-identical
 * results from run to run.
 */
#include "nkint.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void openblas_set_num_threads(int num_threads);

/* A view in bytes: base pointer, shape and byte strides over 4 dims. */
typedef struct bview {
    uint8_t *base;
    int64_t shape[NK_MAXDIM];
    int64_t bstride[NK_MAXDIM];
    int es;
    nk_dtype dt;
} bview;

typedef struct exec {
    const nk_program *p;
    void *const *hbm;
    uint8_t *mem[3]; /* NK_SBUF, NK_PSUM */
    int64_t pbytes[3];
    float *f[5];     /* scratch */
    size_t fcap[5];
} exec;

static _Thread_local struct arena {
    uint8_t *sbuf, *psum;
    size_t sbuf_size, psum_size;
    float *f[5];
    size_t fcap[5];
} arena;

static float *scratch(exec *x, int i, size_t n)
{
    if (arena.fcap[i] < n) {
        size_t cap = arena.fcap[i] ? arena.fcap[i] : 4096;
        while (cap < n)
            cap *= 2;
        float *q = realloc(arena.f[i], cap * sizeof(float));
        if (!q)
            return NULL;
        arena.f[i] = q;
        arena.fcap[i] = cap;
    }
    x->f[i] = arena.f[i];
    return arena.f[i];
}

static bview view_of(const exec *x, const nk_tensor *t)
{
    bview v;
    memset(&v, 0, sizeof v);
    v.dt = (nk_dtype)t->dtype;
    v.es = nk_dtype_size(v.dt);
    /* right-align the dims into 4: leading dims of size 1 */
    int pad = NK_MAXDIM - t->ndim;
    for (int d = 0; d < NK_MAXDIM; d++) {
        v.shape[d] = 1;
        v.bstride[d] = 0;
    }
    if (t->mem == NK_SHARED_HBM) {
        v.base = (uint8_t *)x->hbm[t->buf] + t->off * v.es;
        for (int d = 0; d < t->ndim; d++) {
            v.shape[pad + d] = t->shape[d];
            v.bstride[pad + d] = t->stride[d] * v.es;
        }
    } else {
        const nk_bufinfo *b = &x->p->bufs[t->buf];
        v.base = x->mem[t->mem] + (int64_t)t->part0 * x->pbytes[t->mem] + b->addr + t->off * v.es;
        v.shape[pad] = t->shape[0];
        v.bstride[pad] = x->pbytes[t->mem];
        for (int d = 1; d < t->ndim; d++) {
            v.shape[pad + d] = t->shape[d];
            v.bstride[pad + d] = t->stride[d] * v.es;
        }
    }
    return v;
}

static int64_t vnumel(const bview *v) { return v->shape[0] * v->shape[1] * v->shape[2] * v->shape[3]; }

/* Reads a view into out[] (row-major), converting to fp32. */
static void gather(const bview *v, float *out)
{
    int64_t n3 = v->shape[3];
    for (int64_t a = 0; a < v->shape[0]; a++)
        for (int64_t b = 0; b < v->shape[1]; b++)
            for (int64_t c = 0; c < v->shape[2]; c++) {
                const uint8_t *row = v->base + a * v->bstride[0] + b * v->bstride[1] + c * v->bstride[2];
                if (v->bstride[3] == v->es) {
                    nk_convert_to_f32(v->dt, row, out, (size_t)n3);
                } else {
                    for (int64_t i = 0; i < n3; i++)
                        nk_convert_to_f32(v->dt, row + i * v->bstride[3], out + i, 1);
                }
                out += n3;
            }
}

/* Writes in[] (row-major fp32) into a view, rounding to its dtype. */
static void scatter(const bview *v, const float *in)
{
    int64_t n3 = v->shape[3];
    for (int64_t a = 0; a < v->shape[0]; a++)
        for (int64_t b = 0; b < v->shape[1]; b++)
            for (int64_t c = 0; c < v->shape[2]; c++) {
                uint8_t *row = v->base + a * v->bstride[0] + b * v->bstride[1] + c * v->bstride[2];
                if (v->bstride[3] == v->es) {
                    nk_convert_from_f32(v->dt, in, row, (size_t)n3);
                } else {
                    for (int64_t i = 0; i < n3; i++)
                        nk_convert_from_f32(v->dt, in + i, row + i * v->bstride[3], 1);
                }
                in += n3;
            }
}

/* DMA: byte copy between two views of the same shape and dtype. The source
 * is staged so overlapping views copy as if read before written. */
static int dma_copy(exec *x, const bview *dst, const bview *src)
{
    int64_t n = vnumel(src), es = src->es;
    uint8_t *tmp = (uint8_t *)scratch(x, 4, (size_t)(n * es + 3) / 4);
    if (!tmp)
        return NK_ENOMEM;
    uint8_t *o = tmp;
    for (int64_t a = 0; a < src->shape[0]; a++)
        for (int64_t b = 0; b < src->shape[1]; b++)
            for (int64_t c = 0; c < src->shape[2]; c++) {
                const uint8_t *row = src->base + a * src->bstride[0] + b * src->bstride[1] + c * src->bstride[2];
                if (src->bstride[3] == es) {
                    memcpy(o, row, (size_t)(src->shape[3] * es));
                    o += src->shape[3] * es;
                } else {
                    for (int64_t i = 0; i < src->shape[3]; i++, o += es)
                        memcpy(o, row + i * src->bstride[3], (size_t)es);
                }
            }
    o = tmp;
    for (int64_t a = 0; a < dst->shape[0]; a++)
        for (int64_t b = 0; b < dst->shape[1]; b++)
            for (int64_t c = 0; c < dst->shape[2]; c++) {
                uint8_t *row = dst->base + a * dst->bstride[0] + b * dst->bstride[1] + c * dst->bstride[2];
                if (dst->bstride[3] == es) {
                    memcpy(row, o, (size_t)(dst->shape[3] * es));
                    o += dst->shape[3] * es;
                } else {
                    for (int64_t i = 0; i < dst->shape[3]; i++, o += es)
                        memcpy(row + i * dst->bstride[3], o, (size_t)es);
                }
            }
    return 0;
}

/* ---- element functions */

static float act(nk_act f, float v)
{
    switch (f) {
    case NK_ACT_COPY: return v;
    case NK_ACT_EXP: return expf(v);
    case NK_ACT_LOG: return logf(v);
    case NK_ACT_SQRT: return sqrtf(v);
    case NK_ACT_RSQRT: return 1.0f / sqrtf(v);
    case NK_ACT_TANH: return tanhf(v);
    case NK_ACT_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case NK_ACT_RELU: return v > 0.0f ? v : 0.0f;
    case NK_ACT_GELU: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case NK_ACT_GELU_APPRX_TANH:
        return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    case NK_ACT_SILU: return v / (1.0f + expf(-v));
    case NK_ACT_SQUARE: return v * v;
    case NK_ACT_ABS: return fabsf(v);
    case NK_ACT_RECIPROCAL: return 1.0f / v;
    case NK_ACT_SIGN: return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v;
    case NK_ACT_SOFTPLUS: return v > 20.0f ? v : log1pf(expf(v));
    case NK_ACT_ERF: return erff(v);
    case NK_ACT_SIN: return sinf(v);
    case NK_ACT_COS: return cosf(v);
    case NK_ACT_ARCTAN: return atanf(v);
    case NK_ACT_MISH: return v * tanhf(v > 20.0f ? v : log1pf(expf(v)));
    default: return NAN;
    }
}

static float alu(nk_alu op, float a, float b)
{
    switch (op) {
    case NK_ALU_BYPASS: return a;
    case NK_ALU_ADD: return a + b;
    case NK_ALU_SUBTRACT: return a - b;
    case NK_ALU_MULTIPLY: return a * b;
    case NK_ALU_DIVIDE: return a / b;
    case NK_ALU_MAX: return a > b ? a : (b == b ? b : a);
    case NK_ALU_MIN: return a < b ? a : (b == b ? b : a);
    case NK_ALU_POW: return powf(a, b);
    case NK_ALU_IS_EQUAL: return a == b;
    case NK_ALU_NOT_EQUAL: return a != b;
    case NK_ALU_IS_GE: return a >= b;
    case NK_ALU_IS_GT: return a > b;
    case NK_ALU_IS_LE: return a <= b;
    case NK_ALU_IS_LT: return a < b;
    case NK_ALU_BITWISE_AND: return (float)((int64_t)a & (int64_t)b);
    case NK_ALU_BITWISE_OR: return (float)((int64_t)a | (int64_t)b);
    case NK_ALU_BITWISE_XOR: return (float)((int64_t)a ^ (int64_t)b);
    default: return NAN;
    }
}

/* Per-partition operand: a column or an immediate. */
static int column(exec *x, int slot, const nk_instr *in, int k, int is_t, double imm, int64_t P, const float **out)
{
    float *c = scratch(x, slot, (size_t)P);
    if (!c)
        return NK_ENOMEM;
    if (is_t) {
        bview v = view_of(x, &in->src[k]);
        gather(&v, c);
    } else {
        for (int64_t p = 0; p < P; p++)
            c[p] = (float)imm;
    }
    *out = c;
    return 0;
}

/* ---- instructions */

static int run_matmul(exec *x, const nk_instr *in)
{
    bview st = view_of(x, &in->src[0]), mv = view_of(x, &in->src[1]), d = view_of(x, &in->dst);
    int64_t K = in->src[0].shape[0], M = nk__free_size(&in->src[0]), N = nk__free_size(&in->src[1]);
    float *a = scratch(x, 0, (size_t)(K * M)), *b = scratch(x, 1, (size_t)(K * N)), *c = scratch(x, 2, (size_t)(M * N));
    if (!a || !b || !c)
        return NK_ENOMEM;
    gather(&st, a);
    gather(&mv, b);
    int acc = in->flags & NK_IF_ACCUMULATE;
    if (acc)
        gather(&d, c);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)M, b, (int)N,
                acc ? 1.0f : 0.0f, c, (int)N);
    scatter(&d, c);
    return 0;
}

static int run_transpose(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &in->src[0]), d = view_of(x, &in->dst);
    int64_t P = in->src[0].shape[0], F = nk__free_size(&in->src[0]);
    float *a = scratch(x, 0, (size_t)(P * F)), *b = scratch(x, 1, (size_t)(P * F));
    if (!a || !b)
        return NK_ENOMEM;
    gather(&s, a);
    for (int64_t p = 0; p < P; p++)
        for (int64_t f = 0; f < F; f++)
            b[f * P + p] = a[p * F + f];
    scatter(&d, b);
    return 0;
}

static int run_activation(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &in->src[0]), d = view_of(x, &in->dst);
    int64_t P = in->src[0].shape[0], F = nk__free_size(&in->src[0]);
    float *a = scratch(x, 0, (size_t)(P * F));
    const float *bias, *scale;
    if (!a || column(x, 1, in, 1, in->flags & NK_IF_OPND0_T, in->imm0, P, &bias) ||
        column(x, 2, in, 2, in->flags & NK_IF_OPND1_T, in->imm1, P, &scale))
        return NK_ENOMEM;
    gather(&s, a);
    nk_act f = (nk_act)in->func;
    for (int64_t p = 0; p < P; p++) {
        float *row = a + p * F, sc = scale[p], bi = bias[p];
        for (int64_t i = 0; i < F; i++)
            row[i] = act(f, row[i] * sc + bi);
    }
    scatter(&d, a);
    if (in->flags & NK_IF_REDUCE) {
        float *r = scratch(x, 3, (size_t)P);
        if (!r)
            return NK_ENOMEM;
        for (int64_t p = 0; p < P; p++) {
            float acc = 0.0f;
            for (int64_t i = 0; i < F; i++)
                acc += a[p * F + i];
            r[p] = acc;
        }
        bview rd = view_of(x, &in->dst2);
        scatter(&rd, r);
    }
    return 0;
}

static int run_tensor_tensor(exec *x, const nk_instr *in)
{
    bview va = view_of(x, &in->src[0]), vb = view_of(x, &in->src[1]), d = view_of(x, &in->dst);
    size_t n = (size_t)vnumel(&va);
    float *a = scratch(x, 0, n), *b = scratch(x, 1, n);
    if (!a || !b)
        return NK_ENOMEM;
    gather(&va, a);
    gather(&vb, b);
    nk_alu op = (nk_alu)in->alu0;
    switch (op) { /* the common ones as plain loops the compiler vectorizes */
    case NK_ALU_ADD: for (size_t i = 0; i < n; i++) a[i] += b[i]; break;
    case NK_ALU_SUBTRACT: for (size_t i = 0; i < n; i++) a[i] -= b[i]; break;
    case NK_ALU_MULTIPLY: for (size_t i = 0; i < n; i++) a[i] *= b[i]; break;
    default: for (size_t i = 0; i < n; i++) a[i] = alu(op, a[i], b[i]); break;
    }
    scatter(&d, a);
    return 0;
}

static int run_tensor_scalar(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &in->src[0]), d = view_of(x, &in->dst);
    int64_t P = in->src[0].shape[0], F = nk__free_size(&in->src[0]);
    float *a = scratch(x, 0, (size_t)(P * F));
    const float *o0, *o1;
    if (!a || column(x, 1, in, 1, in->flags & NK_IF_OPND0_T, in->imm0, P, &o0) ||
        column(x, 2, in, 2, in->flags & NK_IF_OPND1_T, in->imm1, P, &o1))
        return NK_ENOMEM;
    gather(&s, a);
    nk_alu op0 = (nk_alu)in->alu0, op1 = (nk_alu)in->alu1;
    int r0 = in->flags & NK_IF_REV0, r1 = in->flags & NK_IF_REV1;
    for (int64_t p = 0; p < P; p++) {
        float *row = a + p * F, s0 = o0[p], s1 = o1[p];
        for (int64_t i = 0; i < F; i++) {
            float v = r0 ? alu(op0, s0, row[i]) : alu(op0, row[i], s0);
            if (op1 != NK_ALU_BYPASS)
                v = r1 ? alu(op1, s1, v) : alu(op1, v, s1);
            row[i] = v;
        }
    }
    scatter(&d, a);
    return 0;
}

static int run_tensor_reduce(exec *x, const nk_instr *in)
{
    const nk_tensor *t = &in->src[0];
    bview s = view_of(x, t), d = view_of(x, &in->dst);
    int64_t P = t->shape[0], F = nk__free_size(t);
    /* free dims padded to 3: [n1, n2, n3]; reduce axis index r in 0..2 or all */
    int64_t n[3] = {1, 1, 1};
    int nf = t->ndim - 1, pad = 3 - nf;
    for (int i = 0; i < nf; i++)
        n[pad + i] = t->shape[1 + i];
    int r = in->axis == -1 ? -1 : pad + in->axis - 1;
    int64_t kept = r == -1 ? 1 : F / n[r];
    float *a = scratch(x, 0, (size_t)(P * F)), *o = scratch(x, 1, (size_t)(P * kept));
    if (!a || !o)
        return NK_ENOMEM;
    gather(&s, a);
    nk_alu op = (nk_alu)in->alu0;
    float ident = op == NK_ALU_MAX ? -INFINITY : op == NK_ALU_MIN ? INFINITY : op == NK_ALU_MULTIPLY ? 1.0f
                  : op == NK_ALU_BITWISE_AND ? -1.0f : 0.0f;
    for (int64_t p = 0; p < P; p++) {
        const float *row = a + p * F;
        float *out = o + p * kept;
        for (int64_t k = 0; k < kept; k++)
            out[k] = ident;
        int64_t idx = 0;
        for (int64_t i0 = 0; i0 < n[0]; i0++)
            for (int64_t i1 = 0; i1 < n[1]; i1++)
                for (int64_t i2 = 0; i2 < n[2]; i2++, idx++) {
                    int64_t k = r == -1 ? 0 : r == 0 ? i1 * n[2] + i2 : r == 1 ? i0 * n[2] + i2 : i0 * n[1] + i1;
                    out[k] = alu(op, out[k], row[idx]);
                }
    }
    scatter(&d, o);
    return 0;
}

static int run_copy(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &in->src[0]), d = view_of(x, &in->dst);
    float *a = scratch(x, 0, (size_t)vnumel(&s));
    if (!a)
        return NK_ENOMEM;
    gather(&s, a);
    scatter(&d, a);
    return 0;
}

static int run_memset(exec *x, const nk_instr *in)
{
    bview d = view_of(x, &in->dst);
    size_t n = (size_t)vnumel(&d);
    float *a = scratch(x, 0, n);
    if (!a)
        return NK_ENOMEM;
    for (size_t i = 0; i < n; i++)
        a[i] = (float)in->imm0;
    scatter(&d, a);
    return 0;
}

/* Value of an affine expression at every element of t, row-major. */
static void affine_values(const nk_tensor *t, const nk_affine *e, float *out)
{
    int64_t n[3] = {1, 1, 1};
    int32_t cf[3] = {0, 0, 0};
    for (int i = 1; i < t->ndim; i++) {
        n[i - 1] = t->shape[i];
        cf[i - 1] = e->cf[i - 1];
    }
    for (int64_t p = 0; p < t->shape[0]; p++)
        for (int64_t a = 0; a < n[0]; a++)
            for (int64_t b = 0; b < n[1]; b++)
                for (int64_t c = 0; c < n[2]; c++)
                    *out++ = (float)((int64_t)e->c + (int64_t)e->cp * p + cf[0] * a + cf[1] * b + cf[2] * c);
}

static int run_iota(exec *x, const nk_instr *in)
{
    bview d = view_of(x, &in->dst);
    float *a = scratch(x, 0, (size_t)vnumel(&d));
    if (!a)
        return NK_ENOMEM;
    affine_values(&in->dst, &in->aff, a);
    scatter(&d, a);
    return 0;
}

static int run_affine_select(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &in->src[0]), d = view_of(x, &in->dst);
    size_t n = (size_t)vnumel(&s);
    float *a = scratch(x, 0, n), *e = scratch(x, 1, n);
    if (!a || !e)
        return NK_ENOMEM;
    gather(&s, a);
    affine_values(&in->dst, &in->aff, e);
    float f = (float)in->imm0;
    for (size_t i = 0; i < n; i++) {
        float v = e[i];
        int keep;
        switch (in->cmp) {
        case NK_CMP_GE: keep = v >= 0; break;
        case NK_CMP_GT: keep = v > 0; break;
        case NK_CMP_EQ: keep = v == 0; break;
        case NK_CMP_NE: keep = v != 0; break;
        case NK_CMP_LE: keep = v <= 0; break;
        default: keep = v < 0; break;
        }
        if (!keep)
            a[i] = f;
    }
    scatter(&d, a);
    return 0;
}

static int run_one(exec *x, const nk_instr *in)
{
    switch (in->op) {
    case NK_OP_LOAD:
    case NK_OP_STORE: {
        bview s = view_of(x, &in->src[0]), d = view_of(x, &in->dst);
        return dma_copy(x, &d, &s);
    }
    case NK_OP_MATMUL: return run_matmul(x, in);
    case NK_OP_TRANSPOSE: return run_transpose(x, in);
    case NK_OP_ACTIVATION: return run_activation(x, in);
    case NK_OP_TENSOR_TENSOR: return run_tensor_tensor(x, in);
    case NK_OP_TENSOR_SCALAR: return run_tensor_scalar(x, in);
    case NK_OP_TENSOR_REDUCE: return run_tensor_reduce(x, in);
    case NK_OP_TENSOR_COPY: return run_copy(x, in);
    case NK_OP_MEMSET: return run_memset(x, in);
    case NK_OP_IOTA: return run_iota(x, in);
    case NK_OP_AFFINE_SELECT: return run_affine_select(x, in);
    default: return NK_EINVAL;
    }
}

static int ensure(uint8_t **m, size_t *have, size_t need)
{
    if (*have >= need)
        return 0;
    uint8_t *q = realloc(*m, need);
    if (!q)
        return NK_ENOMEM;
    *m = q;
    *have = need;
    return 0;
}

int nk_execute(const nk_program *p, void *const *hbm)
{
    static _Thread_local int blas_ready;
    if (!blas_ready) {
        openblas_set_num_threads(1);
        blas_ready = 1;
    }
    exec x;
    memset(&x, 0, sizeof x);
    x.p = p;
    x.hbm = hbm;
    int parts = p->arch->partitions;
    x.pbytes[NK_SBUF] = p->sbuf_peak > 64 ? p->sbuf_peak : 64;
    x.pbytes[NK_PSUM] = p->psum_peak > 64 ? p->psum_peak : 64;
    if (ensure(&arena.sbuf, &arena.sbuf_size, (size_t)(parts * x.pbytes[NK_SBUF])) ||
        ensure(&arena.psum, &arena.psum_size, (size_t)(parts * x.pbytes[NK_PSUM])))
        return NK_ENOMEM;
    x.mem[NK_SBUF] = arena.sbuf;
    x.mem[NK_PSUM] = arena.psum;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        int rc = run_one(&x, &p->instrs[i]);
        if (rc)
            return rc;
    }
    return 0;
}
