/*
 * exec.c - the functional interpreter of a compiled program.
 *
 * On-chip memories are real byte arrays laid out as the hardware's
 * partitions, so multi-buffered tiles alias exactly as they do on the chip.
 * Instructions run in program order, which every dependency respects, each
 * through the function its op-table row names (exec.h).
 *
 * Numerics follow the engines' documented data paths:
 *   - arithmetic: operands converted to fp32, math in fp32, the result
 *     rounded to the destination dtype (round to nearest even);
 *   - bitvec operators (bitwise and/or/xor) work on the integer values
 *     themselves, never through fp32;
 *   - tensor_copy on the Vector or GpSimd engine is bit-accurate when source
 *     and destination dtypes match, an fp32 cast otherwise; the Scalar engine
 *     always goes through fp32;
 *   - activation functions are evaluated to within about one fp32 ulp:
 *     exp, log, sin, cos and arctan by SLEEF's vectorised fp32 functions
 *     (at most 1.0 ulp), tanh by exec/vmath.c's own fp32 one (at most 1.5
 *     ulp), sigmoid, silu, gelu_apprx_tanh and softplus by its
 *     double-precision vector code (rounded once: within 0.5 ulp and a
 *     hair), erf and the other composite functions in double, rounded once
 *     to fp32;
 *   - PSUM accumulates in fp32; matmul goes through BLAS (sgemm, loaded
 *     when the first matmul runs: blas.c), single-threaded for
 *     bit-identical results from run to run.
 * Dispatch on the operator or function happens once per row or per
 * instruction, never per element, so the inner loops vectorize.
 */
#include "exec/exec.h"
#include "exec/blas.h"
#include "exec/vmath.h"
#include "isa/optable.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A view in bytes: base pointer, shape and byte strides over 4 dims. */
typedef struct bview {
    uint8_t *base;
    int64_t shape[NK_MAXDIM];
    int64_t bstride[NK_MAXDIM];
    int es;
    nk_dtype dt;
    const uint8_t *mem; /* tiles: their memory's first byte (NULL in HBM) */
    int64_t pb;         /* tiles: the partition stride; dims of that stride are partitions */
} bview;

typedef struct nk__exec {
    const nk_program *p;
    void *const *hbm;
    uint8_t *mem[3]; /* NK_SBUF, NK_PSUM */
    int64_t pbytes[3];
    uint32_t *stamp[3];
    int64_t ngran[3]; /* granules per partition */
    int parts;
    uint32_t epoch;
    /* the running instruction's operands as access patterns, materialised
       once from the program's interned layouts (absent ones zero) */
    nk_tensor dst, dst2, src[3];
} exec;

enum { NSCRATCH = 6 };

/* On-chip memory starts every run in the same state, whatever ran before on
 * this thread: all bits set, which reads as NaN in every float dtype (and -1
 * in signed ints), so a kernel that reads bytes it never wrote gets the
 * same, visible, values every time. The poison is laid lazily, so a run pays
 * for the bytes its instructions touch, not for the whole footprint: each
 * partition's bytes are cut into granules of GRANULE bytes, and a granule's
 * stamp is the run (epoch) that last touched it. Before an instruction runs,
 * every granule its operands touch that is stale (an older epoch) is filled
 * with the poison, unless the instruction's destination covers it whole, and
 * stamped. Stamps are laid out granule-major ([granule][partition]), so the
 * stamps of one tile row across its partitions are contiguous. */
enum { GRANULE = 256 };

typedef struct memstate {
    uint8_t *bytes;
    size_t size;      /* bytes allocated */
    uint32_t *stamp;  /* [ngran * partitions] */
    size_t nstamp;    /* stamps allocated */
} memstate;

/* Memories and scratch of one thread, kept between runs and freed when the
 * thread exits. */
typedef struct arena {
    memstate m[3]; /* NK_SBUF, NK_PSUM (index 0, HBM, unused) */
    uint32_t epoch;
    void *s[NSCRATCH];
    size_t cap[NSCRATCH]; /* bytes */
} arena_t;

static _Thread_local arena_t *arena; /* the calling thread's, set by nk__execute */
static pthread_key_t arena_key;
static pthread_once_t arena_once = PTHREAD_ONCE_INIT;
static int arena_key_ok;

static void arena_free(void *p)
{
    arena_t *a = p;
    for (int i = 0; i < 3; i++) {
        free(a->m[i].bytes);
        free(a->m[i].stamp);
    }
    for (int i = 0; i < NSCRATCH; i++)
        free(a->s[i]);
    free(a);
}

static void arena_key_init(void) { arena_key_ok = pthread_key_create(&arena_key, arena_free) == 0; }

static arena_t *thread_arena(void)
{
    if (arena)
        return arena;
    pthread_once(&arena_once, arena_key_init);
    arena_t *a = calloc(1, sizeof *a);
    if (!a || !arena_key_ok || pthread_setspecific(arena_key, a)) {
        free(a);
        return NULL;
    }
    return arena = a;
}

/* Scratch slot i with room for `bytes` bytes (kept between runs). */
static void *scratch_bytes(int i, size_t bytes)
{
    if (arena->cap[i] < bytes) {
        size_t cap = arena->cap[i] ? arena->cap[i] : 16384;
        while (cap < bytes)
            cap *= 2;
        void *q = realloc(arena->s[i], cap);
        if (!q)
            return NULL;
        arena->s[i] = q;
        arena->cap[i] = cap;
    }
    return arena->s[i];
}

static float *scratch(int i, size_t n) { return scratch_bytes(i, n * sizeof(float)); }
static int64_t *scratch_i64(int i, size_t n) { return scratch_bytes(i, n * sizeof(int64_t)); }

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
        v.mem = x->mem[t->mem];
        v.pb = x->pbytes[t->mem];
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

/* Visits the innermost rows of a view in row-major order: ROW is the row's
 * first byte, the row has v->shape[3] elements v->bstride[3] bytes apart. */
#define FOR_ROWS(v, ROW)                                                                        \
    for (int64_t a_ = 0; a_ < (v)->shape[0]; a_++)                                              \
        for (int64_t b_ = 0; b_ < (v)->shape[1]; b_++)                                          \
            for (int64_t c_ = 0; c_ < (v)->shape[2]; c_++)                                      \
                for (uint8_t *ROW = (v)->base + a_ * (v)->bstride[0] + b_ * (v)->bstride[1] +   \
                                    c_ * (v)->bstride[2], *once_ = ROW; once_; once_ = NULL)

/* ---- strided rows: packed through a small buffer so conversions run in bulk */

enum { CHUNK = 256 };

static void pack(uint8_t *dst, const uint8_t *src, int64_t bstride, int es, int64_t n)
{
    switch (es) {
    case 1: for (int64_t i = 0; i < n; i++) dst[i] = src[i * bstride]; break;
    case 2: for (int64_t i = 0; i < n; i++) memcpy(dst + 2 * i, src + i * bstride, 2); break;
    default: for (int64_t i = 0; i < n; i++) memcpy(dst + 4 * i, src + i * bstride, 4); break;
    }
}

static void unpack(uint8_t *dst, int64_t bstride, const uint8_t *src, int es, int64_t n)
{
    switch (es) {
    case 1: for (int64_t i = 0; i < n; i++) dst[i * bstride] = src[i]; break;
    case 2: for (int64_t i = 0; i < n; i++) memcpy(dst + i * bstride, src + 2 * i, 2); break;
    default: for (int64_t i = 0; i < n; i++) memcpy(dst + i * bstride, src + 4 * i, 4); break;
    }
}

/* ---- bf16 <-> fp32 in bulk: the rounding of nk_convert_from_f32 (nearest
 * even; NaN kept quiet with its sign and top payload bits), written on
 * vectors of 4 (GCC/clang vector extensions) so it runs as SIMD at -O2 */

typedef uint32_t v4u __attribute__((vector_size(16)));
typedef uint16_t v4h __attribute__((vector_size(8)));

static void bf16_to_f32(const uint8_t *src, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4h h;
        memcpy(&h, src + 2 * i, sizeof h);
        v4u u = __builtin_convertvector(h, v4u) << 16;
        memcpy(dst + i, &u, sizeof u);
    }
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        uint32_t u = (uint32_t)h << 16;
        memcpy(dst + i, &u, 4);
    }
}

static void f32_to_bf16(const float *src, uint8_t *dst, int64_t n)
{
    int64_t i = 0;
    const v4u abs = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
    const v4u inf = {0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000};
    for (; i + 4 <= n; i += 4) {
        v4u u;
        memcpy(&u, src + i, sizeof u);
        v4u nan = (v4u)((u & abs) > inf);
        v4u rne = (u + 0x7fff + ((u >> 16) & 1)) >> 16, q = (u >> 16) | 0x40;
        v4h h = __builtin_convertvector((nan & q) | (~nan & rne), v4h);
        memcpy(dst + 2 * i, &h, sizeof h);
    }
    if (i < n)
        nk_convert_from_f32(NK_BF16, src + i, dst + 2 * i, (size_t)(n - i));
}

static void to_f32(nk_dtype dt, const uint8_t *src, float *dst, int64_t n)
{
    if (dt == NK_BF16)
        bf16_to_f32(src, dst, n);
    else
        nk_convert_to_f32(dt, src, dst, (size_t)n);
}

static void from_f32(nk_dtype dt, const float *src, uint8_t *dst, int64_t n)
{
    if (dt == NK_BF16)
        f32_to_bf16(src, dst, n);
    else
        nk_convert_from_f32(dt, src, dst, (size_t)n);
}

/* Reads a view into out[] (row-major), converting to fp32. */
static void gather(const bview *v, float *out)
{
    int64_t n = v->shape[3];
    uint8_t buf[CHUNK * 4];
    FOR_ROWS(v, row) {
        if (v->bstride[3] == v->es) {
            to_f32(v->dt, row, out, n);
        } else {
            for (int64_t i = 0; i < n; i += CHUNK) {
                int64_t m = n - i < CHUNK ? n - i : CHUNK;
                pack(buf, row + i * v->bstride[3], v->bstride[3], v->es, m);
                to_f32(v->dt, buf, out + i, m);
            }
        }
        out += n;
    }
}

/* Writes in[] (row-major fp32) into a view, rounding to its dtype. */
static void scatter(const bview *v, const float *in)
{
    int64_t n = v->shape[3];
    uint8_t buf[CHUNK * 4];
    FOR_ROWS(v, row) {
        if (v->bstride[3] == v->es) {
            from_f32(v->dt, in, row, n);
        } else {
            for (int64_t i = 0; i < n; i += CHUNK) {
                int64_t m = n - i < CHUNK ? n - i : CHUNK;
                from_f32(v->dt, in + i, buf, m);
                unpack(row + i * v->bstride[3], v->bstride[3], buf, v->es, m);
            }
        }
        in += n;
    }
}

/* Raw bytes of a view, row-major, into out. */
static void gather_bytes(const bview *v, uint8_t *out)
{
    int64_t n = v->shape[3], es = v->es;
    FOR_ROWS(v, row) {
        if (v->bstride[3] == es)
            memcpy(out, row, (size_t)(n * es));
        else
            pack(out, row, v->bstride[3], v->es, n);
        out += n * es;
    }
}

static void scatter_bytes(const bview *v, const uint8_t *in)
{
    int64_t n = v->shape[3], es = v->es;
    FOR_ROWS(v, row) {
        if (v->bstride[3] == es)
            memcpy(row, in, (size_t)(n * es));
        else
            unpack(row, v->bstride[3], in, v->es, n);
        in += n * es;
    }
}

/* ---- integer values (bitvec operators, iota, integer memset) */

/* A double to an integer range: round half to even, saturate, NaN to 0. */
static int64_t d2i(double d, int64_t lo, int64_t hi)
{
    if (d != d)
        return 0;
    double r = nearbyint(d);
    if (r <= (double)lo)
        return lo;
    if (r >= (double)hi)
        return hi;
    return (int64_t)r;
}

static void int_range(nk_dtype dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case NK_I8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case NK_I16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case NK_I32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case NK_U8: *lo = 0; *hi = UINT8_MAX; break;
    case NK_U16: *lo = 0; *hi = UINT16_MAX; break;
    case NK_U32: *lo = 0; *hi = UINT32_MAX; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
    }
}

/* Integer values of an integer view (sign- or zero-extended), row-major. */
static void gather_i64(const bview *v, int64_t *out)
{
    int64_t n = v->shape[3], bs = v->bstride[3];
    FOR_ROWS(v, row) {
        switch (v->dt) {
        case NK_I8: for (int64_t i = 0; i < n; i++) { int8_t e; memcpy(&e, row + i * bs, 1); out[i] = e; } break;
        case NK_I16: for (int64_t i = 0; i < n; i++) { int16_t e; memcpy(&e, row + i * bs, 2); out[i] = e; } break;
        case NK_I32: for (int64_t i = 0; i < n; i++) { int32_t e; memcpy(&e, row + i * bs, 4); out[i] = e; } break;
        case NK_U8: for (int64_t i = 0; i < n; i++) out[i] = row[i * bs]; break;
        case NK_U16: for (int64_t i = 0; i < n; i++) { uint16_t e; memcpy(&e, row + i * bs, 2); out[i] = e; } break;
        case NK_U32: for (int64_t i = 0; i < n; i++) { uint32_t e; memcpy(&e, row + i * bs, 4); out[i] = e; } break;
        default: /* a float view: its values rounded to integers */
            for (int64_t i = 0; i < n; i++) {
                float f;
                nk_convert_to_f32(v->dt, row + i * bs, &f, 1);
                out[i] = d2i(f, INT64_MIN, INT64_MAX);
            }
            break;
        }
        out += n;
    }
}

/* Writes integer values into a view. Integer dtypes keep the low bits when
 * wrap (bit patterns) or saturate otherwise (value casts); float dtypes
 * round through fp32. */
static void scatter_i64(const bview *v, const int64_t *in, int wrap)
{
    int64_t n = v->shape[3], bs = v->bstride[3], lo, hi;
    int_range(v->dt, &lo, &hi);
    float fbuf[CHUNK];
    uint8_t bbuf[CHUNK * 4];
    FOR_ROWS(v, row) {
        for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
            int64_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
            const int64_t *src = in + i0;
            if (!nk_dtype_is_float(v->dt)) {
                for (int64_t i = 0; i < m; i++) {
                    int64_t e = wrap ? src[i] : src[i] < lo ? lo : src[i] > hi ? hi : src[i];
                    uint32_t u = (uint32_t)(uint64_t)e; /* little-endian low bytes */
                    if (v->es == 1)
                        bbuf[i] = (uint8_t)u;
                    else if (v->es == 2) {
                        uint16_t h = (uint16_t)u;
                        memcpy(bbuf + 2 * i, &h, 2);
                    } else
                        memcpy(bbuf + 4 * i, &u, 4);
                }
            } else {
                for (int64_t i = 0; i < m; i++)
                    fbuf[i] = (float)src[i];
                nk_convert_from_f32(v->dt, fbuf, bbuf, (size_t)m);
            }
            unpack(row + i0 * bs, bs, bbuf, v->es, m);
        }
        in += n;
    }
}

/* Byte copy between views of the same shape and dtype in different memories
 * (they cannot overlap): row by row, no staging. */
static void copy_direct(const bview *d, const bview *s)
{
    int64_t n = s->shape[3], es = s->es, ss = s->bstride[3], ds = d->bstride[3];
    for (int64_t a = 0; a < s->shape[0]; a++)
        for (int64_t b = 0; b < s->shape[1]; b++)
            for (int64_t c = 0; c < s->shape[2]; c++) {
                const uint8_t *sr = s->base + a * s->bstride[0] + b * s->bstride[1] + c * s->bstride[2];
                uint8_t *dr = d->base + a * d->bstride[0] + b * d->bstride[1] + c * d->bstride[2];
                if (ss == es && ds == es)
                    memcpy(dr, sr, (size_t)(n * es));
                else if (ss == es)
                    unpack(dr, ds, sr, s->es, n);
                else if (ds == es)
                    pack(dr, sr, ss, s->es, n);
                else
                    for (int64_t i = 0; i < n; i++)
                        memcpy(dr + i * ds, sr + i * ss, (size_t)es);
            }
}

static int same_shape(const bview *a, const bview *b)
{
    for (int i = 0; i < NK_MAXDIM; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

/* The bytes a view spans, [lo, hi), offsets from its base; with part, only
 * along its dims that are not partitions (a tile's bytes within each of its
 * partitions). */
static void byte_span(const bview *v, int part, int64_t *lo, int64_t *hi)
{
    int64_t a = 0, b = v->es;
    for (int d = 0; d < NK_MAXDIM; d++) {
        if (part && v->mem && v->bstride[d] == v->pb)
            continue;
        int64_t e = (v->shape[d] - 1) * v->bstride[d];
        if (e < 0)
            a += e;
        else
            b += e;
    }
    *lo = a;
    *hi = b;
}

/* Can an elementwise instruction read s and write d row by row, without
 * staging s? When they are the same view, or touch no common byte: their
 * spans are apart, or (tiles of one memory) their bytes within a partition. */
static int no_hazard(const bview *d, const bview *s)
{
    if (d->base == s->base && !memcmp(d->bstride, s->bstride, sizeof d->bstride) && same_shape(d, s))
        return 1;
    int64_t dl, dh, sl, sh;
    byte_span(d, 0, &dl, &dh);
    byte_span(s, 0, &sl, &sh);
    if (d->base + dh <= s->base + sl || s->base + sh <= d->base + dl)
        return 1;
    if (!d->mem || d->mem != s->mem || d->pb != s->pb)
        return 0;
    /* offsets within a partition, from the partition's first byte */
    int64_t doff = (d->base - d->mem) % d->pb, soff = (s->base - s->mem) % s->pb;
    byte_span(d, 1, &dl, &dh);
    byte_span(s, 1, &sl, &sh);
    dl += doff, dh += doff, sl += soff, sh += soff;
    return dl >= 0 && sl >= 0 && dh <= d->pb && sh <= s->pb && (dh <= sl || sh <= dl);
}

/* fp32 with contiguous rows, aligned: the views elementwise loops read and
 * write in place. */
static int f32_rows(const bview *v) { return v->dt == NK_F32 && v->bstride[3] == 4 && !((uintptr_t)v->base % 4); }

/* The first byte of innermost row r (row-major over dims 0..2) of a view. */
static uint8_t *row_ptr(const bview *v, int64_t r)
{
    int64_t c = r % v->shape[2], q = r / v->shape[2];
    return v->base + (q / v->shape[1]) * v->bstride[0] + (q % v->shape[1]) * v->bstride[1] + c * v->bstride[2];
}

static int64_t nrows(const bview *v) { return v->shape[0] * v->shape[1] * v->shape[2]; }

/* DMA: byte copy between two views of the same element count and dtype. The
 * source is staged so overlapping views copy as if read before written. */
static int copy_bytes(const bview *dst, const bview *src)
{
    uint8_t *tmp = scratch_bytes(5, (size_t)(vnumel(src) * src->es));
    if (!tmp)
        return NK_ENOMEM;
    gather_bytes(src, tmp);
    scatter_bytes(dst, tmp);
    return 0;
}

/* ---- activation functions: one loop per function, in place */

/* v[i] = f(v[i] * scale + bias), the affine part in fp32: the product
 * rounds before the bias is added. */
typedef void (*act_fn)(float *v, int64_t n, float scale, float bias);

#define ACT_LOOP(name, expr)                                                                    \
    static void name(float *v, int64_t n, float scale, float bias)                              \
    {                                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                       \
            float t = v[i] * scale;                                                             \
            float x = t + bias;                                                                 \
            double d = x;                                                                       \
            (void)d;                                                                            \
            v[i] = (float)(expr);                                                               \
        }                                                                                       \
    }

/* x * gate(x) functions (gelu, silu, mish) give their limit 0 at -inf
 * rather than -inf * 0. */
static double softplus(double d) { return d > 0 ? d + log1p(exp(-d)) : log1p(exp(d)); }

ACT_LOOP(act_copy, x)
ACT_LOOP(act_exp, expf(x))
ACT_LOOP(act_log, logf(x))
ACT_LOOP(act_sqrt, sqrtf(x))
ACT_LOOP(act_rsqrt, 1.0 / sqrt(d))
ACT_LOOP(act_tanh, tanh(d))
ACT_LOOP(act_sigmoid, 1.0 / (1.0 + exp(-d)))
ACT_LOOP(act_relu, x > 0.0f ? x : x != x ? x : 0.0f)
ACT_LOOP(act_gelu, d == -INFINITY ? -0.0 : 0.5 * d * erfc(-d * 0.70710678118654752440))
/* 0.5 * (1 + tanh(z)) written as 1 / (1 + exp(-2z)): no cancellation for x < 0.
 * (gelu, gelu_apprx_tanh, silu, softplus, erf and mish run here only without
 * vmath's vector code, which gives these functions' special values and, in
 * double, the same bound.) */
ACT_LOOP(act_gelu_tanh, d == -INFINITY ? -0.0
                        : d / (1.0 + exp(-2.0 * 0.79788456080286535588 * (d + 0.044715 * d * d * d))))
ACT_LOOP(act_silu, d == -INFINITY ? -0.0 : d / (1.0 + exp(-d)))
ACT_LOOP(act_square, x * x)
ACT_LOOP(act_abs, fabsf(x))
ACT_LOOP(act_reciprocal, 1.0f / x)
ACT_LOOP(act_sign, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x)
ACT_LOOP(act_softplus, softplus(d))
ACT_LOOP(act_erf, erf(d))
ACT_LOOP(act_sin, sinf(x))
ACT_LOOP(act_cos, cosf(x))
ACT_LOOP(act_arctan, atan(d))
ACT_LOOP(act_mish, d == -INFINITY ? -0.0 : d * tanh(softplus(d)))

static const act_fn act_table[NK_ACT_COUNT] = {
    [NK_ACT_COPY] = act_copy, [NK_ACT_EXP] = act_exp, [NK_ACT_LOG] = act_log,
    [NK_ACT_SQRT] = act_sqrt, [NK_ACT_RSQRT] = act_rsqrt, [NK_ACT_TANH] = act_tanh,
    [NK_ACT_SIGMOID] = act_sigmoid, [NK_ACT_RELU] = act_relu, [NK_ACT_GELU] = act_gelu,
    [NK_ACT_GELU_APPRX_TANH] = act_gelu_tanh, [NK_ACT_SILU] = act_silu, [NK_ACT_SQUARE] = act_square,
    [NK_ACT_ABS] = act_abs, [NK_ACT_RECIPROCAL] = act_reciprocal, [NK_ACT_SIGN] = act_sign,
    [NK_ACT_SOFTPLUS] = act_softplus, [NK_ACT_ERF] = act_erf, [NK_ACT_SIN] = act_sin,
    [NK_ACT_COS] = act_cos, [NK_ACT_ARCTAN] = act_arctan, [NK_ACT_MISH] = act_mish,
};

/* ---- ALU operators in fp32: one loop per operator */

/* The element expression of an arithmetic operator on floats x, y. Maximum
 * and minimum return the other operand when one is NaN (IEEE maxNum). */
#define ALU_CASES(LOOP)                                                                         \
    case NK_ALU_BYPASS: LOOP(x); break;                                                         \
    case NK_ALU_ADD: LOOP(x + y); break;                                                        \
    case NK_ALU_SUBTRACT: LOOP(x - y); break;                                                   \
    case NK_ALU_MULTIPLY: LOOP(x * y); break;                                                   \
    case NK_ALU_DIVIDE: LOOP(x / y); break;                                                     \
    case NK_ALU_MAX: LOOP(fmaxf(x, y)); break;                                                  \
    case NK_ALU_MIN: LOOP(fminf(x, y)); break;                                                  \
    case NK_ALU_POW: LOOP(powf(x, y)); break;                                                   \
    case NK_ALU_IS_EQUAL: LOOP(x == y ? 1.0f : 0.0f); break;                                    \
    case NK_ALU_NOT_EQUAL: LOOP(x != y ? 1.0f : 0.0f); break;                                   \
    case NK_ALU_IS_GE: LOOP(x >= y ? 1.0f : 0.0f); break;                                       \
    case NK_ALU_IS_GT: LOOP(x > y ? 1.0f : 0.0f); break;                                        \
    case NK_ALU_IS_LE: LOOP(x <= y ? 1.0f : 0.0f); break;                                       \
    case NK_ALU_IS_LT: LOOP(x < y ? 1.0f : 0.0f); break;                                        \
    default: LOOP(NAN); break; /* bitvec operators take the integer path */

/* a[i] = a[i] op b[i] */
static void alu_vv(nk_alu op, float *a, const float *b, int64_t n)
{
#define VV(e) for (int64_t i = 0; i < n; i++) { float x = a[i], y = b[i]; (void)x; (void)y; a[i] = (e); }
    switch (op) { ALU_CASES(VV) }
#undef VV
}

/* a[i] = a[i] op s, or s op a[i] when rev */
static void alu_vs(nk_alu op, float *a, float s, int rev, int64_t n)
{
#define VS(e) for (int64_t i = 0; i < n; i++) { float x = a[i], y = s; (void)x; (void)y; a[i] = (e); }
#define SV(e) for (int64_t i = 0; i < n; i++) { float x = s, y = a[i]; (void)x; (void)y; a[i] = (e); }
    if (rev) {
        switch (op) { ALU_CASES(SV) }
    } else {
        switch (op) { ALU_CASES(VS) }
    }
#undef VS
#undef SV
}

/* ---- row loops on fp32 vectors of 4 (GCC/clang vector extensions: SIMD at
 * -O2 on any x86-64). Each vector operation is the IEEE operation of its
 * lanes, so results are those of the element-by-element loops above. */

typedef float v4f __attribute__((vector_size(16)));

static inline v4f ld4(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void st4(float *p, v4f v) { memcpy(p, &v, sizeof v); }

/* o[i] = a[i] op b[i]; o may be a or b */
static void alu_row3(nk_alu op, float *o, const float *a, const float *b, int64_t n)
{
    int64_t i = 0;
#define V3(e)                                                                                   \
    for (; i + 8 <= n; i += 8) {                                                                \
        v4f x = ld4(a + i), y = ld4(b + i), r0 = (e);                                           \
        x = ld4(a + i + 4), y = ld4(b + i + 4);                                                 \
        v4f r1 = (e);                                                                           \
        st4(o + i, r0);                                                                         \
        st4(o + i + 4, r1);                                                                     \
    }
    switch (op) {
    case NK_ALU_ADD: V3(x + y); break;
    case NK_ALU_SUBTRACT: V3(x - y); break;
    case NK_ALU_MULTIPLY: V3(x * y); break;
    case NK_ALU_DIVIDE: V3(x / y); break;
    default: break;
    }
#undef V3
#define S3(e) for (; i < n; i++) { float x = a[i], y = b[i]; (void)x; (void)y; o[i] = (e); }
    switch (op) { ALU_CASES(S3) }
#undef S3
}

/* o[i] = a[i] op s, or s op a[i] when rev; o may be a */
static void alu_row_s(nk_alu op, float *o, const float *a, float s, int rev, int64_t n)
{
    int64_t i = 0;
    const v4f sv = {s, s, s, s};
#define VS(e)                                                                                   \
    for (; i + 8 <= n; i += 8) {                                                                \
        v4f x = rev ? sv : ld4(a + i), y = rev ? ld4(a + i) : sv, r0 = (e);                     \
        x = rev ? sv : ld4(a + i + 4), y = rev ? ld4(a + i + 4) : sv;                           \
        v4f r1 = (e);                                                                           \
        st4(o + i, r0);                                                                         \
        st4(o + i + 4, r1);                                                                     \
    }
    switch (op) {
    case NK_ALU_BYPASS: if (o != a) memcpy(o, a, (size_t)n * sizeof *o); return;
    case NK_ALU_ADD: VS(x + y); break;
    case NK_ALU_SUBTRACT: VS(x - y); break;
    case NK_ALU_MULTIPLY: VS(x * y); break;
    case NK_ALU_DIVIDE: VS(x / y); break;
    default: break;
    }
#undef VS
    if (i < n) {
        if (o != a)
            memcpy(o + i, a + i, (size_t)(n - i) * sizeof *o);
        alu_vs(op, o + i, s, rev, n - i);
    }
}

/* o[i] = a[i] * scale + bias, the product rounded before the sum (as the
 * activation functions' affine step); o may be a */
static void affine_row(float *o, const float *a, int64_t n, float scale, float bias)
{
    int64_t i = 0;
    const v4f sv = {scale, scale, scale, scale}, bv = {bias, bias, bias, bias};
    for (; i + 4 <= n; i += 4) {
        v4f t = ld4(a + i) * sv;
        st4(o + i, t + bv);
    }
    for (; i < n; i++) {
        float t = a[i] * scale;
        o[i] = t + bias;
    }
}

static int is_bitvec(nk_alu op)
{
    return op == NK_ALU_BITWISE_AND || op == NK_ALU_BITWISE_OR || op == NK_ALU_BITWISE_XOR;
}

/* The integer path: bitvec operators on the values' two's-complement bits;
 * any other operator (only when mixed with a bitvec one) in double. */
static int64_t ialu(nk_alu op, int64_t x, int64_t y)
{
    switch (op) {
    case NK_ALU_BYPASS: return x;
    case NK_ALU_BITWISE_AND: return x & y;
    case NK_ALU_BITWISE_OR: return x | y;
    case NK_ALU_BITWISE_XOR: return x ^ y;
    default: {
        float fx = (float)x, fy = (float)y;
        alu_vs(op, &fx, fy, 0, 1);
        return d2i(fx, INT64_MIN / 2, INT64_MAX / 2);
    }
    }
}

static void ialu_vv(nk_alu op, int64_t *a, const int64_t *b, int64_t n)
{
    switch (op) {
    case NK_ALU_BITWISE_AND: for (int64_t i = 0; i < n; i++) a[i] &= b[i]; break;
    case NK_ALU_BITWISE_OR: for (int64_t i = 0; i < n; i++) a[i] |= b[i]; break;
    case NK_ALU_BITWISE_XOR: for (int64_t i = 0; i < n; i++) a[i] ^= b[i]; break;
    default: for (int64_t i = 0; i < n; i++) a[i] = ialu(op, a[i], b[i]); break;
    }
}

/* ---- per-partition operands: a column tile or an immediate */

static int column(exec *x, int slot, const nk_instr *in, int k, int is_t, double imm, int64_t P, const float **out)
{
    (void)in;
    float *c = scratch(slot, (size_t)P);
    if (!c)
        return NK_ENOMEM;
    if (is_t) {
        bview v = view_of(x, &x->src[k]);
        gather(&v, c);
    } else {
        for (int64_t p = 0; p < P; p++)
            c[p] = (float)imm;
    }
    *out = c;
    return 0;
}

static int column_i64(exec *x, int slot, const nk_instr *in, int k, int is_t, double imm, int64_t P,
                      const int64_t **out)
{
    (void)in;
    int64_t *c = scratch_i64(slot, (size_t)P);
    if (!c)
        return NK_ENOMEM;
    if (is_t) {
        bview v = view_of(x, &x->src[k]);
        gather_i64(&v, c);
    } else {
        for (int64_t p = 0; p < P; p++)
            c[p] = d2i(imm, INT64_MIN, INT64_MAX);
    }
    *out = c;
    return 0;
}

/* ---- instructions */

/* A 2-D view of rows x cols with contiguous, aligned rows: its leading
 * dimension in elements, or 0 when it is not one. */
static int64_t matrix_ld(const bview *v, int64_t rows, int64_t cols)
{
    if (v->shape[0] != 1 || v->shape[1] != 1 || v->shape[2] != rows || v->shape[3] != cols)
        return 0;
    if ((cols > 1 && v->bstride[3] != v->es) || v->bstride[2] <= 0 || v->bstride[2] % v->es ||
        (uintptr_t)v->base % (uintptr_t)v->es || v->bstride[2] / v->es < cols)
        return 0;
    return v->bstride[2] / v->es;
}

/* An operand as an fp32 matrix for sgemm: an fp32 tile in place (its
 * partition stride the leading dimension), else converted once into scratch
 * slot (row-major, leading dimension cols). */
static const float *matmul_operand(const bview *v, int slot, int64_t rows, int64_t cols, int64_t *ld)
{
    int64_t l = matrix_ld(v, rows, cols);
    if (l && v->dt == NK_F32) {
        *ld = l;
        return (const float *)(const void *)v->base;
    }
    float *a = scratch(slot, (size_t)(rows * cols));
    if (!a)
        return NULL;
    if (l) /* one conversion per row, no packing */
        for (int64_t r = 0; r < rows; r++)
            to_f32(v->dt, v->base + r * v->bstride[2], a + r * cols, cols);
    else
        gather(v, a);
    *ld = cols;
    return a;
}

/* dst[M, N] (+)= st[K, M]^T @ mv[K, N] by one sgemm in the Tensor engine's
 * tile order. An fp32 PSUM destination is accumulated in place (beta = 1,
 * its partition stride as ldc), with the same products and sums as a copy
 * out and back would give. */
int nk__exec_matmul(exec *x, const nk_instr *in)
{
    bview st = view_of(x, &x->src[0]), mv = view_of(x, &x->src[1]), d = view_of(x, &x->dst);
    int64_t K = x->src[0].shape[0], M = nk__free_size(&x->src[0]), N = nk__free_size(&x->src[1]);
    int64_t lda, ldb, ldc = d.dt == NK_F32 ? matrix_ld(&d, M, N) : 0;
    const float *a = matmul_operand(&st, 0, K, M, &lda), *b = matmul_operand(&mv, 1, K, N, &ldb);
    if (!a || !b)
        return NK_ENOMEM;
    nk__sgemm_fn *sgemm = nk__sgemm();
    if (!sgemm)
        return NK_EIO;
    int acc = in->flags & NK_IF_ACCUMULATE;
    if (ldc) {
        sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)lda, b,
                    (int)ldb, acc ? 1.0f : 0.0f, (float *)(void *)d.base, (int)ldc);
        return 0;
    }
    float *c = scratch(2, (size_t)(M * N));
    if (!c)
        return NK_ENOMEM;
    if (acc)
        gather(&d, c);
    sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)lda, b, (int)ldb,
                acc ? 1.0f : 0.0f, c, (int)N);
    scatter(&d, c);
    return 0;
}

/* Tensor engine: a matmul with the identity, values through fp32. Vector
 * engine: moves elements, bit-accurate when the dtypes match. */
int nk__exec_transpose(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst);
    int64_t P = x->src[0].shape[0], F = nk__free_size(&x->src[0]);
    if (in->engine != NK_ENGINE_TENSOR && s.dt == d.dt) {
        int es = s.es;
        uint8_t *a = scratch_bytes(0, (size_t)(P * F * es)), *b = scratch_bytes(1, (size_t)(P * F * es));
        if (!a || !b)
            return NK_ENOMEM;
        gather_bytes(&s, a);
        for (int64_t p = 0; p < P; p++)
            for (int64_t f = 0; f < F; f++)
                memcpy(b + (f * P + p) * es, a + (p * F + f) * es, (size_t)es);
        scatter_bytes(&d, b);
        return 0;
    }
    float *a = scratch(0, (size_t)(P * F)), *b = scratch(1, (size_t)(P * F));
    if (!a || !b)
        return NK_ENOMEM;
    gather(&s, a);
    for (int64_t p = 0; p < P; p++)
        for (int64_t f = 0; f < F; f++)
            b[f * P + p] = a[p * F + f];
    scatter(&d, b);
    return 0;
}

/* One partition's values of an activation, from a into o (o may be a, no
 * partial overlap): the affine step, then the function; vmath's functions
 * take both steps in one pass. Only the scalar functions, which work in
 * place, need a copy first. */
static void act_row(int func, act_fn f, nk__vfn vf, float *o, const float *a, int64_t n, float scale, float bias)
{
    if (func == NK_ACT_COPY) {
        affine_row(o, a, n, scale, bias);
    } else if (vf) {
        vf(o, a, n, scale, bias);
    } else {
        if (o != a)
            memcpy(o, a, (size_t)n * sizeof *o);
        f(o, n, scale, bias);
    }
}

/* fp32 source and destination with contiguous rows: each row computed from
 * the source straight into the destination, the reduction (fp32 values as
 * stored) summed from there. */
static int activation_f32(exec *x, const nk_instr *in, const bview *s, const bview *d, int64_t P, act_fn f,
                          nk__vfn vf, const float *bias, const float *scale)
{
    int64_t n = s->shape[3], rows = nrows(s), rpp = rows / P;
    for (int64_t r = 0; r < rows; r++) {
        float *o = (float *)(void *)row_ptr(d, r);
        const float *a = (const float *)(const void *)row_ptr(s, r);
        act_row(in->func, f, vf, o, a, n, scale[r / rpp], bias[r / rpp]);
    }
    if (in->flags & NK_IF_REDUCE) {
        float *red = scratch(3, (size_t)P);
        if (!red)
            return NK_ENOMEM;
        for (int64_t p = 0; p < P; p++) {
            float acc = 0.0f;
            for (int64_t r = p * rpp; r < (p + 1) * rpp; r++) {
                const float *o = (const float *)(const void *)row_ptr(d, r);
                for (int64_t i = 0; i < n; i++)
                    acc += o[i];
            }
            red[p] = acc;
        }
        bview rd = view_of(x, &x->dst2);
        scatter(&rd, red);
    }
    return 0;
}

int nk__exec_activation(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst);
    int64_t P = x->src[0].shape[0], F = nk__free_size(&x->src[0]);
    const float *bias, *scale;
    if (column(x, 1, in, 1, in->flags & NK_IF_OPND0_T, nk__imm0(x->p, in), P, &bias) ||
        column(x, 2, in, 2, in->flags & NK_IF_OPND1_T, nk__imm1(x->p, in), P, &scale))
        return NK_ENOMEM;
    act_fn f = in->func < NK_ACT_COUNT ? act_table[in->func] : NULL;
    if (!f)
        return NK_EINVAL;
    nk__vfn vf = nk__vmath_f32(in->func);
    if (!vf && nk__vmath_missing(in->func))
        return NK_EIO;
    const nk_tensor *d2 = &x->dst2;
    if (f32_rows(&s) && f32_rows(&d) && same_shape(&s, &d) && no_hazard(&d, &s) &&
        (!(in->flags & NK_IF_REDUCE) || d2->mem != x->dst.mem || d2->buf != x->dst.buf))
        return activation_f32(x, in, &s, &d, P, f, vf, bias, scale);
    float *a = scratch(0, (size_t)(P * F));
    if (!a)
        return NK_ENOMEM;
    gather(&s, a);
    for (int64_t p = 0; p < P; p++)
        act_row(in->func, f, vf, a + p * F, a + p * F, F, scale[p], bias[p]);
    scatter(&d, a);
    if (in->flags & NK_IF_REDUCE) {
        /* add-reduction of the fp32 function values, before the output cast */
        float *r = scratch(3, (size_t)P);
        if (!r)
            return NK_ENOMEM;
        for (int64_t p = 0; p < P; p++) {
            float acc = 0.0f;
            for (int64_t i = 0; i < F; i++)
                acc += a[p * F + i];
            r[p] = acc;
        }
        bview rd = view_of(x, d2);
        scatter(&rd, r);
    }
    return 0;
}

int nk__exec_tensor_tensor(exec *x, const nk_instr *in)
{
    bview va = view_of(x, &x->src[0]), vb = view_of(x, &x->src[1]), d = view_of(x, &x->dst);
    int64_t n = vnumel(&va);
    nk_alu op = (nk_alu)in->alu0;
    if (is_bitvec(op)) {
        int64_t *a = scratch_i64(0, (size_t)n), *b = scratch_i64(1, (size_t)n);
        if (!a || !b)
            return NK_ENOMEM;
        gather_i64(&va, a);
        gather_i64(&vb, b);
        ialu_vv(op, a, b, n);
        scatter_i64(&d, a, 1);
        return 0;
    }
    if (f32_rows(&va) && f32_rows(&vb) && f32_rows(&d) && same_shape(&va, &d) && same_shape(&vb, &d) &&
        no_hazard(&d, &va) && no_hazard(&d, &vb)) { /* row by row in place, no staging */
        for (int64_t r = 0, rows = nrows(&d); r < rows; r++)
            alu_row3(op, (float *)(void *)row_ptr(&d, r), (const float *)(const void *)row_ptr(&va, r),
                     (const float *)(const void *)row_ptr(&vb, r), d.shape[3]);
        return 0;
    }
    float *a = scratch(0, (size_t)n), *b = scratch(1, (size_t)n);
    if (!a || !b)
        return NK_ENOMEM;
    gather(&va, a);
    gather(&vb, b);
    alu_row3(op, a, a, b, n);
    scatter(&d, a);
    return 0;
}

static int run_tensor_scalar_int(exec *x, const nk_instr *in, int64_t P, int64_t F)
{
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst);
    int64_t *a = scratch_i64(0, (size_t)(P * F));
    const int64_t *o0, *o1;
    if (!a || column_i64(x, 1, in, 1, in->flags & NK_IF_OPND0_T, nk__imm0(x->p, in), P, &o0) ||
        column_i64(x, 2, in, 2, in->flags & NK_IF_OPND1_T, nk__imm1(x->p, in), P, &o1))
        return NK_ENOMEM;
    gather_i64(&s, a);
    nk_alu op0 = (nk_alu)in->alu0, op1 = (nk_alu)in->alu1;
    int r0 = in->flags & NK_IF_REV0, r1 = in->flags & NK_IF_REV1;
    for (int64_t i = 0; i < P * F; i++) {
        int64_t p = i / F, v = r0 ? ialu(op0, o0[p], a[i]) : ialu(op0, a[i], o0[p]);
        a[i] = r1 ? ialu(op1, o1[p], v) : ialu(op1, v, o1[p]);
    }
    scatter_i64(&d, a, 1);
    return 0;
}

int nk__exec_tensor_scalar(exec *x, const nk_instr *in)
{
    int64_t P = x->src[0].shape[0], F = nk__free_size(&x->src[0]);
    nk_alu op0 = (nk_alu)in->alu0, op1 = (nk_alu)in->alu1;
    if (is_bitvec(op0) || is_bitvec(op1))
        return run_tensor_scalar_int(x, in, P, F);
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst);
    const float *o0, *o1;
    if (column(x, 1, in, 1, in->flags & NK_IF_OPND0_T, nk__imm0(x->p, in), P, &o0) ||
        column(x, 2, in, 2, in->flags & NK_IF_OPND1_T, nk__imm1(x->p, in), P, &o1))
        return NK_ENOMEM;
    int r0 = in->flags & NK_IF_REV0, r1 = in->flags & NK_IF_REV1;
    if (f32_rows(&s) && f32_rows(&d) && same_shape(&s, &d) && no_hazard(&d, &s)) { /* in place */
        int64_t rows = nrows(&d), rpp = rows / P;
        for (int64_t r = 0; r < rows; r++) {
            float *o = (float *)(void *)row_ptr(&d, r);
            alu_row_s(op0, o, (const float *)(const void *)row_ptr(&s, r), o0[r / rpp], r0, d.shape[3]);
            if (op1 != NK_ALU_BYPASS)
                alu_row_s(op1, o, o, o1[r / rpp], r1, d.shape[3]);
        }
        return 0;
    }
    float *a = scratch(0, (size_t)(P * F));
    if (!a)
        return NK_ENOMEM;
    gather(&s, a);
    for (int64_t p = 0; p < P; p++) {
        alu_row_s(op0, a + p * F, a + p * F, o0[p], r0, F);
        if (op1 != NK_ALU_BYPASS)
            alu_row_s(op1, a + p * F, a + p * F, o1[p], r1, F);
    }
    scatter(&d, a);
    return 0;
}

/* Reduction geometry: the free dims padded to 3 as [n0, n1, n2] and the
 * reduced axis r (0..2) or -1 for all of them. */
typedef struct rgeom {
    int64_t n[3];
    int r;
    int64_t kept;
} rgeom;

static rgeom reduce_geom(const exec *x, const nk_instr *in)
{
    const nk_tensor *t = &x->src[0];
    rgeom g = {{1, 1, 1}, -1, 1};
    int nf = t->ndim - 1, pad = 3 - nf;
    for (int i = 0; i < nf; i++)
        g.n[pad + i] = t->shape[1 + i];
    g.r = in->axis == -1 ? -1 : pad + in->axis - 1;
    g.kept = g.r == -1 ? 1 : g.n[0] * g.n[1] * g.n[2] / (g.n[g.r] ? g.n[g.r] : 1);
    return g;
}

/* acc op v[0] op v[1] ... in index order: a sequential reduction. */
static float fold(nk_alu op, float acc, const float *v, int64_t n)
{
#define FOLD(e) for (int64_t i = 0; i < n; i++) { float x = acc, y = v[i]; (void)x; (void)y; acc = (e); }
    switch (op) { ALU_CASES(FOLD) }
#undef FOLD
    return acc;
}

static int64_t ifold(nk_alu op, int64_t acc, const int64_t *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        acc = ialu(op, acc, v[i]);
    return acc;
}

/* One partition's row folded into out[kept]. */
static void reduce_row(nk_alu op, const rgeom *g, const float *row, float *out, float init)
{
    int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
    if (g->r == -1) {
        out[0] = fold(op, init, row, n0 * n1 * n2);
    } else if (g->r == 2) {
        for (int64_t k = 0; k < n0 * n1; k++)
            out[k] = fold(op, init, row + k * n2, n2);
    } else {
        int64_t inner = g->r == 1 ? n2 : n1 * n2, outer = g->r == 1 ? n0 : 1, len = g->n[g->r];
        for (int64_t o = 0; o < outer; o++) {
            float *dst = out + o * inner;
            for (int64_t k = 0; k < inner; k++)
                dst[k] = init;
            for (int64_t j = 0; j < len; j++)
                alu_vv(op, dst, row + (o * len + j) * inner, inner);
        }
    }
}

static void ireduce_row(nk_alu op, const rgeom *g, const int64_t *row, int64_t *out, int64_t init)
{
    int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
    if (g->r == -1) {
        out[0] = ifold(op, init, row, n0 * n1 * n2);
    } else if (g->r == 2) {
        for (int64_t k = 0; k < n0 * n1; k++)
            out[k] = ifold(op, init, row + k * n2, n2);
    } else {
        int64_t inner = g->r == 1 ? n2 : n1 * n2, outer = g->r == 1 ? n0 : 1, len = g->n[g->r];
        for (int64_t o = 0; o < outer; o++) {
            int64_t *dst = out + o * inner;
            for (int64_t k = 0; k < inner; k++)
                dst[k] = init;
            for (int64_t j = 0; j < len; j++)
                ialu_vv(op, dst, row + (o * len + j) * inner, inner);
        }
    }
}

int nk__exec_tensor_reduce(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst);
    int64_t P = x->src[0].shape[0], F = nk__free_size(&x->src[0]);
    rgeom g = reduce_geom(x, in);
    nk_alu op = (nk_alu)in->alu0;
    if (is_bitvec(op)) {
        int64_t *a = scratch_i64(0, (size_t)(P * F)), *o = scratch_i64(1, (size_t)(P * g.kept));
        if (!a || !o)
            return NK_ENOMEM;
        gather_i64(&s, a);
        for (int64_t p = 0; p < P; p++)
            ireduce_row(op, &g, a + p * F, o + p * g.kept, op == NK_ALU_BITWISE_AND ? -1 : 0);
        scatter_i64(&d, o, 1);
        return 0;
    }
    float *a = scratch(0, (size_t)(P * F)), *o = scratch(1, (size_t)(P * g.kept));
    if (!a || !o)
        return NK_ENOMEM;
    gather(&s, a);
    float init = op == NK_ALU_MAX ? -INFINITY : op == NK_ALU_MIN ? INFINITY : op == NK_ALU_MULTIPLY ? 1.0f : 0.0f;
    for (int64_t p = 0; p < P; p++)
        reduce_row(op, &g, a + p * F, o + p * g.kept, init);
    scatter(&d, o);
    return 0;
}

int nk__exec_tensor_copy(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst);
    if (s.dt == d.dt && in->engine != NK_ENGINE_SCALAR) {
        if (same_shape(&s, &d) && no_hazard(&d, &s)) {
            copy_direct(&d, &s);
            return 0;
        }
        return copy_bytes(&d, &s);
    }
    float *a = scratch(0, (size_t)vnumel(&s));
    if (!a)
        return NK_ENOMEM;
    gather(&s, a);
    scatter(&d, a);
    return 0;
}

/* Integer tiles take the value itself (rounded half to even, saturated);
 * float tiles take it rounded to fp32, then to their dtype. */
int nk__exec_memset(exec *x, const nk_instr *in)
{
    bview d = view_of(x, &x->dst);
    size_t n = (size_t)vnumel(&d);
    if (!nk_dtype_is_float(d.dt)) {
        int64_t *a = scratch_i64(0, n), lo, hi;
        if (!a)
            return NK_ENOMEM;
        int_range(d.dt, &lo, &hi);
        int64_t v = d2i(nk__imm0(x->p, in), lo, hi);
        for (size_t i = 0; i < n; i++)
            a[i] = v;
        scatter_i64(&d, a, 0);
        return 0;
    }
    float *a = scratch(0, n), v = (float)nk__imm0(x->p, in);
    if (!a)
        return NK_ENOMEM;
    for (size_t i = 0; i < n; i++)
        a[i] = v;
    scatter(&d, a);
    return 0;
}

/* Value of an affine expression at every element of t, row-major. */
static void affine_values(const nk_tensor *t, const nk_affine *e, int64_t *out)
{
    int64_t n[3] = {1, 1, 1}, cf[3] = {0, 0, 0};
    for (int i = 1; i < t->ndim; i++) {
        n[i - 1] = t->shape[i];
        cf[i - 1] = e->cf[i - 1];
    }
    for (int64_t p = 0; p < t->shape[0]; p++)
        for (int64_t a = 0; a < n[0]; a++)
            for (int64_t b = 0; b < n[1]; b++) {
                int64_t base = (int64_t)e->c + (int64_t)e->cp * p + cf[0] * a + cf[1] * b;
                for (int64_t c = 0; c < n[2]; c++)
                    *out++ = base + cf[2] * c;
            }
}

/* Integer values, exact; a value outside the dtype's range saturates. */
int nk__exec_iota(exec *x, const nk_instr *in)
{
    bview d = view_of(x, &x->dst);
    int64_t *a = scratch_i64(0, (size_t)vnumel(&d));
    if (!a)
        return NK_ENOMEM;
    affine_values(&x->dst, nk__aff(x->p, in), a);
    scatter_i64(&d, a, 0);
    return 0;
}

int nk__exec_affine_select(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst);
    int64_t n = vnumel(&s);
    float *a = scratch(0, (size_t)n);
    int64_t *e = scratch_i64(1, (size_t)n);
    if (!a || !e)
        return NK_ENOMEM;
    gather(&s, a);
    affine_values(&x->dst, nk__aff(x->p, in), e);
    float f = (float)nk__imm0(x->p, in);
#define SEL(cond) for (int64_t i = 0; i < n; i++) { int64_t v = e[i]; a[i] = (cond) ? a[i] : f; }
    switch (in->cmp) {
    case NK_CMP_GE: SEL(v >= 0); break;
    case NK_CMP_GT: SEL(v > 0); break;
    case NK_CMP_EQ: SEL(v == 0); break;
    case NK_CMP_NE: SEL(v != 0); break;
    case NK_CMP_LE: SEL(v <= 0); break;
    default: SEL(v < 0); break;
    }
#undef SEL
    scatter(&d, a);
    return 0;
}

/* ---- batch-norm statistics [ISA]: fp32 math, the results cast to dst */

/* Count, mean and variance * count (the sum of squared deviations from the
 * mean) of n elements step apart: a two-pass mean and sum in fp32. */
static void moments(const float *v, int64_t n, int64_t step, float *out)
{
    int64_t cnt = 0;
    float sum = 0.0f, m2 = 0.0f;
    for (int64_t i = 0; i < n; i += step, cnt++)
        sum += v[i];
    float mean = cnt ? sum / (float)cnt : 0.0f;
    for (int64_t i = 0; i < n; i += step) {
        float dv = v[i] - mean, sq = dv * dv;
        m2 += sq;
    }
    out[0] = (float)cnt;
    out[1] = mean;
    out[2] = m2;
}

/* Six values per partition: the moments of the even and of the odd
 * positions of its free elements in row-major order. */
int nk__exec_bn_stats(exec *x, const nk_instr *in)
{
    (void)in;
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst);
    int64_t P = x->src[0].shape[0], F = nk__free_size(&x->src[0]);
    float *a = scratch(0, (size_t)(P * F)), *o = scratch(1, (size_t)(P * 6));
    if (!a || !o)
        return NK_ENOMEM;
    gather(&s, a);
    for (int64_t p = 0; p < P; p++) {
        moments(a + p * F, F, 2, o + p * 6);
        moments(a + p * F + 1, F - 1, 2, o + p * 6 + 3);
    }
    scatter(&d, o);
    return 0;
}

/* Mean and population variance per partition from (count, mean, M2)
 * tuples, merged one at a time (Chan, Golub and LeVeque's pairwise update,
 * in fp32); tuples of count 0 add nothing, and no count at all gives 0, 0. */
int nk__exec_bn_aggr(exec *x, const nk_instr *in)
{
    (void)in;
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst);
    int64_t P = x->src[0].shape[0], F = nk__free_size(&x->src[0]);
    float *a = scratch(0, (size_t)(P * F)), *o = scratch(1, (size_t)(P * 2));
    if (!a || !o)
        return NK_ENOMEM;
    gather(&s, a);
    for (int64_t p = 0; p < P; p++) {
        const float *t = a + p * F;
        float n = 0.0f, mean = 0.0f, m2 = 0.0f;
        for (int64_t k = 0; k + 2 < F; k += 3) {
            float nb = t[k], mb = t[k + 1], m2b = t[k + 2];
            if (!(nb > 0.0f))
                continue;
            /* one rounding per operation: no fused multiply-add */
            float tot = n + nb, delta = mb - mean, w = nb / tot, step = delta * w;
            float cross = delta * delta, wn = n * nb / tot, term = cross * wn;
            mean = mean + step;
            m2 = m2 + m2b;
            m2 = m2 + term;
            n = tot;
        }
        o[p * 2] = mean;
        o[p * 2 + 1] = n > 0.0f ? m2 / n : 0.0f;
    }
    scatter(&d, o);
    return 0;
}

/* ---- scans and fused ALU ops [ISA]: fp32 math, results cast to dst */

/* x op y for one pair of fp32 values (for sequential recurrences, where a
 * whole-row loop per operator does not apply) */
static float alu_ss(nk_alu op, float x, float y)
{
    float r;
#define SS(e) r = (e)
    switch (op) { ALU_CASES(SS) }
#undef SS
    return r;
}

/* Per partition: r[i] = op1(op0(data0[i], r[i-1]), data1[i]) over the free
 * elements in row-major order, r[-1] the initial value; reverse0 swaps op0's
 * operands, reverse1 op1's. The state stays in fp32 inside the engine [MAMBA]
 * (only the output is rounded to dst's dtype). */
int nk__exec_tensor_tensor_scan(exec *x, const nk_instr *in)
{
    bview v0 = view_of(x, &x->src[0]), v1 = view_of(x, &x->src[1]), d = view_of(x, &x->dst);
    int64_t P = x->src[0].shape[0], F = nk__free_size(&x->src[0]);
    float *a = scratch(0, (size_t)(P * F)), *b = scratch(1, (size_t)(P * F));
    const float *init;
    if (!a || !b || column(x, 2, in, 2, in->flags & NK_IF_OPND1_T, nk__imm0(x->p, in), P, &init))
        return NK_ENOMEM;
    gather(&v0, a);
    gather(&v1, b);
    nk_alu op0 = (nk_alu)in->alu0, op1 = (nk_alu)in->alu1;
    int r0 = !!(in->flags & NK_IF_REV0), r1 = !!(in->flags & NK_IF_REV1);
    for (int64_t p = 0; p < P; p++) {
        float *u = a + p * F, st = init[p];
        const float *w = b + p * F;
        if (op0 == NK_ALU_MULTIPLY && op1 == NK_ALU_ADD) { /* the linear recurrence, either order */
            for (int64_t i = 0; i < F; i++) {
                float t = u[i] * st;
                u[i] = st = t + w[i];
            }
            continue;
        }
        for (int64_t i = 0; i < F; i++) {
            float t = r0 ? alu_ss(op0, st, u[i]) : alu_ss(op0, u[i], st);
            u[i] = st = r1 ? alu_ss(op1, w[i], t) : alu_ss(op1, t, w[i]);
        }
    }
    scatter(&d, a);
    return 0;
}

/* (data op0 operand0) op1 operand1: operand0 per partition, operand1 a
 * tensor like data; reverse0 / reverse1 swap the operators' operands. */
int nk__exec_scalar_tensor_tensor(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &x->src[0]), o = view_of(x, &x->src[2]), d = view_of(x, &x->dst);
    int64_t P = x->src[0].shape[0], F = nk__free_size(&x->src[0]);
    float *a = scratch(0, (size_t)(P * F)), *b = scratch(1, (size_t)(P * F));
    const float *o0;
    if (!a || !b || column(x, 2, in, 1, in->flags & NK_IF_OPND0_T, nk__imm0(x->p, in), P, &o0))
        return NK_ENOMEM;
    gather(&s, a);
    gather(&o, b);
    nk_alu op0 = (nk_alu)in->alu0, op1 = (nk_alu)in->alu1;
    int r1 = in->flags & NK_IF_REV1;
    for (int64_t p = 0; p < P; p++) {
        alu_vs(op0, a + p * F, o0[p], in->flags & NK_IF_REV0, F);
        if (r1)
            alu_vv(op1, b + p * F, a + p * F, F);
        else
            alu_vv(op1, a + p * F, b + p * F, F);
    }
    scatter(&d, r1 ? b : a);
    return 0;
}

/* dst = data op0 operand0; reduce_res = the reduction (alu1: add,
 * multiply, maximum or minimum) of each partition's fp32 results before
 * they are cast to dst's dtype (assumed: the docs do not say which), in
 * index order from the operator's identity. */
int nk__exec_tensor_scalar_reduce(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst), rd = view_of(x, &x->dst2);
    int64_t P = x->src[0].shape[0], F = nk__free_size(&x->src[0]);
    float *a = scratch(0, (size_t)(P * F)), *r = scratch(3, (size_t)P);
    const float *o0;
    if (!a || !r || column(x, 1, in, 1, in->flags & NK_IF_OPND0_T, nk__imm0(x->p, in), P, &o0))
        return NK_ENOMEM;
    gather(&s, a);
    nk_alu op0 = (nk_alu)in->alu0, rop = (nk_alu)in->alu1;
    float init = rop == NK_ALU_MAX ? -INFINITY : rop == NK_ALU_MIN ? INFINITY : rop == NK_ALU_MULTIPLY ? 1.0f : 0.0f;
    for (int64_t p = 0; p < P; p++) {
        alu_vs(op0, a + p * F, o0[p], 0, F);
        r[p] = fold(rop, init, a + p * F, F);
    }
    scatter(&d, a);
    scatter(&rd, r);
    return 0;
}

/* ---- selection and dropout */

/* Per element: predicate != 0 (NaN counts as true) picks on_true, else
 * on_false (a tile, or imm0). Values move bit for bit when every source has
 * dst's dtype, as integers when all are integers, else through fp32. */
int nk__exec_select(exec *x, const nk_instr *in)
{
    bview pv = view_of(x, &x->src[0]), tv = view_of(x, &x->src[1]), d = view_of(x, &x->dst);
    int tile_f = in->flags & NK_IF_OPND1_T;
    bview fv = tile_f ? view_of(x, &x->src[2]) : d;
    size_t n = (size_t)vnumel(&pv);
    float *pr = scratch(0, n);
    if (!pr)
        return NK_ENOMEM;
    gather(&pv, pr);
    if (tv.dt == d.dt && fv.dt == d.dt) {
        int es = d.es;
        uint8_t *t = scratch_bytes(1, n * (size_t)es), *f = scratch_bytes(2, n * (size_t)es);
        if (!t || !f)
            return NK_ENOMEM;
        gather_bytes(&tv, t);
        if (tile_f) {
            gather_bytes(&fv, f);
        } else { /* the immediate in dst's dtype, repeated */
            uint8_t one[4];
            if (nk_dtype_is_float(d.dt)) {
                float v = (float)nk__imm0(x->p, in);
                nk_convert_from_f32(d.dt, &v, one, 1);
            } else {
                int64_t lo, hi;
                int_range(d.dt, &lo, &hi);
                uint32_t u = (uint32_t)(uint64_t)d2i(nk__imm0(x->p, in), lo, hi);
                memcpy(one, &u, 4);
            }
            for (size_t i = 0; i < n; i++)
                memcpy(f + i * (size_t)es, one, (size_t)es);
        }
        for (size_t i = 0; i < n; i++)
            if (pr[i] == 0.0f)
                memcpy(t + i * (size_t)es, f + i * (size_t)es, (size_t)es);
        scatter_bytes(&d, t);
        return 0;
    }
    if (!nk_dtype_is_float(d.dt) && !nk_dtype_is_float(tv.dt) && !nk_dtype_is_float(fv.dt)) {
        int64_t *t = scratch_i64(1, n), *f = scratch_i64(2, n);
        if (!t || !f)
            return NK_ENOMEM;
        gather_i64(&tv, t);
        if (tile_f)
            gather_i64(&fv, f);
        int64_t lo, hi, v;
        int_range(d.dt, &lo, &hi);
        v = d2i(nk__imm0(x->p, in), lo, hi);
        for (size_t i = 0; i < n; i++)
            if (pr[i] == 0.0f)
                t[i] = tile_f ? f[i] : v;
        scatter_i64(&d, t, 0);
        return 0;
    }
    float *t = scratch(1, n), *f = scratch(2, n);
    if (!t || !f)
        return NK_ENOMEM;
    gather(&tv, t);
    if (tile_f)
        gather(&fv, f);
    for (size_t i = 0; i < n; i++)
        if (pr[i] == 0.0f)
            t[i] = tile_f ? f[i] : (float)nk__imm0(x->p, in);
    scatter(&d, t);
    return 0;
}

/* The dropout's random numbers, a counter-based generator (documented in
 * docs/kernel-api.md; the hardware's own generator is not documented):
 * draw k under seed s is SplitMix64's finalizer applied to
 * key(s) + (k + 1) * 0x9E3779B97F4A7C15, with key(s) = mix(s ^ 0x9E3779B97F4A7C15);
 * its top 24 bits are the uniform value in [0, 1). */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Element i (row-major over partitions and free axes) is dropped when draw
 * imm1 + i is below its partition's probability; kept elements are copied
 * bit for bit (dst has data's dtype), dropped ones are zero. */
int nk__exec_dropout(exec *x, const nk_instr *in)
{
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst);
    int64_t P = x->src[0].shape[0], F = nk__free_size(&x->src[0]);
    int es = s.es;
    uint8_t *a = scratch_bytes(0, (size_t)(P * F * es));
    const float *prob;
    if (!a || column(x, 1, in, 1, in->flags & NK_IF_OPND0_T, nk__imm0(x->p, in), P, &prob))
        return NK_ENOMEM;
    uint32_t seed = 0;
    if (in->flags & NK_IF_OPND1_T) { /* the seed's 32 bits as stored */
        bview sv = view_of(x, &x->src[2]);
        gather_bytes(&sv, (uint8_t *)&seed);
    }
    gather_bytes(&s, a);
    const uint64_t golden = 0x9E3779B97F4A7C15ull;
    uint64_t key = mix64((uint64_t)seed ^ golden), k = (uint64_t)nk__imm1(x->p, in);
    for (int64_t p = 0; p < P; p++) {
        double pp = prob[p];
        for (int64_t i = 0; i < F; i++, k++) {
            double u = (double)(mix64(key + (k + 1) * golden) >> 40) * (1.0 / 16777216.0);
            if (u < pp)
                memset(a + (p * F + i) * es, 0, (size_t)es);
        }
    }
    scatter_bytes(&d, a);
    return 0;
}

/* load_transpose2d: the HBM view [F, P] read as [P, F], bytes unchanged */
int nk__exec_load_transpose(exec *x, const nk_instr *in)
{
    (void)in;
    nk_tensor t = x->src[0];
    t.shape[0] = x->src[0].shape[1];
    t.shape[1] = x->src[0].shape[0];
    t.stride[0] = x->src[0].stride[1];
    t.stride[1] = x->src[0].stride[0];
    bview s = view_of(x, &t), d = view_of(x, &x->dst);
    return copy_bytes(&d, &s);
}

/* load, store, dma_copy: a byte copy (row-major order when the shapes
 * differ; staged when the views could overlap) */
int nk__exec_dma(exec *x, const nk_instr *in)
{
    (void)in;
    bview s = view_of(x, &x->src[0]), d = view_of(x, &x->dst);
    if (x->src[0].mem != x->dst.mem && same_shape(&s, &d)) {
        copy_direct(&d, &s);
        return 0;
    }
    return copy_bytes(&d, &s);
}

/* Room for a memory of `parts` partitions of pbytes bytes and its stamps;
 * new stamps are 0, which no run's epoch is. */
static int ensure(memstate *m, int parts, int64_t pbytes)
{
    size_t need = (size_t)parts * (size_t)pbytes;
    size_t ns = (size_t)parts * (size_t)((pbytes + GRANULE - 1) / GRANULE);
    if (m->size < need) {
        uint8_t *q = nk__big_realloc(m->bytes, need);
        if (!q)
            return NK_ENOMEM;
        m->bytes = q;
        m->size = need;
    }
    if (m->nstamp < ns) {
        uint32_t *q = realloc(m->stamp, ns * sizeof *q);
        if (!q)
            return NK_ENOMEM;
        memset(q + m->nstamp, 0, (ns - m->nstamp) * sizeof *q);
        m->stamp = q;
        m->nstamp = ns;
    }
    return 0;
}

/* Poisons the stale granules of bytes [lo, hi) of partitions p0 .. p0+np-1
 * of memory mem and stamps them; with whole, the granules entirely inside
 * [lo, hi) are about to be overwritten, so they are only stamped. */
static void touch_range(exec *x, int mem, int64_t p0, int64_t np, int64_t lo, int64_t hi, int whole)
{
    int64_t pb = x->pbytes[mem];
    if (lo < 0)
        lo = 0;
    if (hi > pb)
        hi = pb;
    if (p0 < 0)
        p0 = 0;
    if (p0 + np > x->parts)
        np = x->parts - p0;
    if (lo >= hi || np <= 0)
        return;
    const uint32_t ep = x->epoch;
    for (int64_t g = lo / GRANULE; g <= (hi - 1) / GRANULE; g++) {
        uint32_t *st = x->stamp[mem] + g * x->parts + p0;
        int64_t glo = g * GRANULE, ghi = glo + GRANULE < pb ? glo + GRANULE : pb;
        if (whole && lo <= glo && hi >= ghi) { /* overwritten whole: only stamped */
            for (int64_t p = 0; p < np; p++)
                st[p] = ep;
            continue;
        }
        uint32_t stale = 0; /* (a pass the compiler vectorises: usually none is) */
        for (int64_t p = 0; p < np; p++)
            stale |= st[p] ^ ep;
        if (!stale)
            continue;
        for (int64_t p = 0; p < np; p++) {
            if (st[p] == ep)
                continue;
            memset(x->mem[mem] + (p0 + p) * pb + glo, 0xff, (size_t)(ghi - glo));
            st[p] = ep;
        }
    }
}

/* The bytes an operand's tile touches in each of its partitions; write: the
 * instruction overwrites them (without reading them first). */
static void touch(exec *x, const nk_tensor *t, int write)
{
    if (!t->buf || (t->mem != NK_SBUF && t->mem != NK_PSUM) || t->ndim < 1 || t->shape[0] <= 0)
        return;
    int64_t es = nk_dtype_size((nk_dtype)t->dtype);
    int64_t lo = x->p->bufs[t->buf].addr + t->off * es, hi = lo + es, expect = 1;
    int dense = 1;
    for (int d = t->ndim - 1; d >= 1; d--) {
        if (t->shape[d] <= 0)
            return;
        int64_t ext = (int64_t)(t->shape[d] - 1) * t->stride[d] * es;
        if (ext < 0)
            lo += ext;
        else
            hi += ext;
        if (t->shape[d] == 1)
            continue;
        dense &= t->stride[d] == expect;
        expect *= t->shape[d];
    }
    touch_range(x, t->mem, t->part0, t->shape[0], lo, hi, write && dense);
}

/* Before an instruction: its sources are read, its destinations written
 * (a matmul that accumulates reads its destination too). */
static void touch_operands(exec *x, const nk_instr *in)
{
    for (int k = 0; k < 3; k++) /* unused slots have no buffer */
        touch(x, &x->src[k], 0);
    touch(x, &x->dst, !(in->flags & NK_IF_ACCUMULATE));
    touch(x, &x->dst2, 1);
}

/* The host bytes between partitions: the peak rounded up to an odd number
 * of 64-byte lines. A power-of-two stride (the usual peak) would put a
 * tile's rows in the same cache sets, so a 128-partition tile thrashes L1
 * and L2 that it would otherwise fit; an odd number of lines spreads them. */
static int64_t partition_stride(int64_t peak)
{
    int64_t lines = (peak > 64 ? peak + 63 : 64) / 64;
    return (lines | 1) * 64;
}

int nk__execute(const nk_program *p, void *const *hbm)
{
    /* The BLAS is OpenBLAS's single-threaded build (Makefile), so there is
     * no thread count to set; in a process that loaded a threaded OpenBLAS
     * first (numpy's, under the same soname), its setting is the host's,
     * and the library leaves it as it is. */
    exec x;
    memset(&x, 0, sizeof x);
    x.p = p;
    x.hbm = hbm;
    x.parts = p->arch->partitions;
    x.pbytes[NK_SBUF] = partition_stride(p->sbuf_peak);
    x.pbytes[NK_PSUM] = partition_stride(p->psum_peak);
    if (!thread_arena())
        return NK_ENOMEM;
    for (int m = NK_SBUF; m <= NK_PSUM; m++) {
        if (ensure(&arena->m[m], x.parts, x.pbytes[m]))
            return NK_ENOMEM;
        x.mem[m] = arena->m[m].bytes;
        x.stamp[m] = arena->m[m].stamp;
        x.ngran[m] = (x.pbytes[m] + GRANULE - 1) / GRANULE;
    }
    /* a new epoch makes every granule stale: nothing is written yet */
    if (++arena->epoch == 0) {
        for (int m = NK_SBUF; m <= NK_PSUM; m++)
            memset(arena->m[m].stamp, 0, arena->m[m].nstamp * sizeof(uint32_t));
        arena->epoch = 1;
    }
    x.epoch = arena->epoch;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        const nk_opdef *d = nk__op_def(in->op);
        NK_ASSERT(d != NULL && in->dst.buf < p->nbufs && in->src[0].buf < p->nbufs);
        x.dst = nk__opnd_tensor(p, &in->dst);
        x.dst2 = nk__opnd_tensor(p, nk__dst2(p, in));
        for (int k = 0; k < 3; k++)
            x.src[k] = nk__opnd_tensor(p, nk__src(p, in, k));
        touch_operands(&x, in);
        int rc = d && d->exec ? d->exec(&x, in) : NK_EINVAL;
        if (rc)
            return rc;
    }
    return 0;
}
