/*
 * reference.c - the example kernels' outputs computed in double precision,
 * and reproducible example inputs.
 *
 * The references read the stored input bits with their own decoder and use
 * nothing of the library but array metadata, so a bug in the executor or in
 * the library's conversions cannot hide in both sides of a comparison.
 */
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- decoding */

/* A small float format: exponent and mantissa widths, bias; ieee says the
 * all-ones exponent is inf/NaN (else only all-ones is NaN, as in e4m3fn). */
static double minifloat(uint32_t code, int ebits, int mbits, int bias, int ieee)
{
    uint32_t sign = code >> (ebits + mbits) & 1;
    uint32_t e = code >> mbits & ((1u << ebits) - 1), m = code & ((1u << mbits) - 1);
    uint32_t emax = (1u << ebits) - 1;
    double v;
    if (ieee && e == emax)
        v = m ? NAN : INFINITY;
    else if (!ieee && e == emax && m == (1u << mbits) - 1)
        v = NAN;
    else if (e == 0)
        v = ldexp((double)m, 1 - bias - mbits);
    else
        v = ldexp((double)(m | (1u << mbits)), (int)e - bias - mbits);
    return sign ? -v : v;
}

static double decode_one(nk_dtype dt, const void *data, size_t i)
{
    const uint8_t *b = data;
    switch (dt) {
    case NK_F32: {
        float f;
        memcpy(&f, b + 4 * i, 4);
        return f;
    }
    case NK_BF16: {
        uint16_t h;
        memcpy(&h, b + 2 * i, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case NK_F16: {
        uint16_t h;
        memcpy(&h, b + 2 * i, 2);
        return minifloat(h, 5, 10, 15, 1);
    }
    case NK_FP8_E4M3: return minifloat(b[i], 4, 3, 7, 1);
    case NK_FP8_E4M3FN: return minifloat(b[i], 4, 3, 7, 0);
    case NK_FP8_E5M2: return minifloat(b[i], 5, 2, 15, 1);
    case NK_I8: return (int8_t)b[i];
    case NK_U8: return b[i];
    case NK_I16: { int16_t v; memcpy(&v, b + 2 * i, 2); return v; }
    case NK_U16: { uint16_t v; memcpy(&v, b + 2 * i, 2); return v; }
    case NK_I32: { int32_t v; memcpy(&v, b + 4 * i, 4); return v; }
    case NK_U32: { uint32_t v; memcpy(&v, b + 4 * i, 4); return v; }
    default: return NAN;
    }
}

int nk_ref_decode(const nk_array *a, double *out)
{
    if ((unsigned)a->dtype >= NK_DTYPE_COUNT)
        return NK_EDTYPE;
    size_t n = nk_array_numel(a);
    for (size_t i = 0; i < n; i++)
        out[i] = decode_one(a->dtype, a->data, i);
    return 0;
}

/* A decoded copy of an array (caller frees), NULL on failure. */
static double *decoded(const nk_array *a)
{
    size_t n = nk_array_numel(a);
    double *d = malloc((n ? n : 1) * sizeof *d);
    if (d && nk_ref_decode(a, d)) {
        free(d);
        return NULL;
    }
    return d;
}

/* ---- example inputs */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void nk_fill_uniform(nk_array *a, uint64_t seed, double lo, double hi)
{
    size_t n = nk_array_numel(a), es = (size_t)nk_dtype_size(a->dtype);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        double u = (double)(splitmix64(&s) >> 11) * 0x1.0p-53;
        float v = (float)(lo + (hi - lo) * u);
        nk_convert_from_f32(a->dtype, &v, (uint8_t *)a->data + i * es, 1);
    }
}

int nk_kernel_example_args(const nk_kernel_info *k, uint64_t seed, nk_array *args)
{
    for (int i = 0; i < k->nargs; i++) {
        const nk_argspec *s = &k->args[i];
        int rc = nk_array_alloc(&args[i], s->dtype, s->ndim, s->shape);
        if (rc) {
            while (i-- > 0)
                nk_array_free(&args[i]);
            return rc;
        }
        double lo = s->lo, hi = s->hi;
        if (lo == 0 && hi == 0) {
            lo = -1;
            hi = 1;
        }
        nk_fill_uniform(&args[i], seed * 1000003u + (uint64_t)i, lo, hi);
    }
    return 0;
}

/* ---- references */

static int is_2d(const nk_array *a) { return a->ndim == 2; }

int nk_ref_tensor_exp(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    if (nin != 1 || nouts != 1 || n[0] != nk_array_numel(&in[0]))
        return NK_ESHAPE;
    double *x = decoded(&in[0]);
    if (!x)
        return NK_ENOMEM;
    for (size_t i = 0; i < n[0]; i++)
        out[0][i] = exp(x[i]);
    free(x);
    return 0;
}

int nk_ref_tensor_add(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    if (nin != 2 || nouts != 1 || !is_2d(&in[0]) || !is_2d(&in[1]) || in[0].shape[0] != in[1].shape[0] ||
        in[0].shape[1] != in[1].shape[1] || n[0] != nk_array_numel(&in[0]))
        return NK_ESHAPE;
    double *a = decoded(&in[0]), *b = decoded(&in[1]);
    int rc = a && b ? 0 : NK_ENOMEM;
    for (size_t i = 0; !rc && i < n[0]; i++)
        out[0][i] = a[i] + b[i];
    free(a);
    free(b);
    return rc;
}

int nk_ref_matmul(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    if (nin != 2 || nouts != 1 || !is_2d(&in[0]) || !is_2d(&in[1]) || in[0].shape[0] != in[1].shape[0])
        return NK_ESHAPE;
    int64_t K = in[0].shape[0], M = in[0].shape[1], N = in[1].shape[1];
    if (n[0] != (size_t)(M * N))
        return NK_ESHAPE;
    double *a = decoded(&in[0]), *b = decoded(&in[1]);
    int rc = a && b ? 0 : NK_ENOMEM;
    if (!rc) {
        double *c = out[0];
        memset(c, 0, (size_t)(M * N) * sizeof *c);
        for (int64_t k = 0; k < K; k++)
            for (int64_t m = 0; m < M; m++) {
                double s = a[k * M + m];
                const double *brow = b + k * N;
                double *crow = c + m * N;
                for (int64_t j = 0; j < N; j++)
                    crow[j] += s * brow[j];
            }
    }
    free(a);
    free(b);
    return rc;
}

int nk_ref_scale_matmul(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    int rc = nk_ref_matmul(in, nin, out, n, nouts);
    for (size_t i = 0; !rc && i < n[0]; i++)
        out[0][i] *= 2; /* (2 lhsT)^T rhs: exact in bf16, then the same product */
    return rc;
}

int nk_ref_softmax(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    if (nin != 1 || nouts != 1 || !is_2d(&in[0]) || n[0] != nk_array_numel(&in[0]))
        return NK_ESHAPE;
    int64_t R = in[0].shape[0], D = in[0].shape[1];
    double *x = decoded(&in[0]);
    if (!x)
        return NK_ENOMEM;
    for (int64_t r = 0; r < R; r++) {
        const double *row = x + r * D;
        double *y = out[0] + r * D, mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < D; j++)
            mx = row[j] > mx ? row[j] : mx;
        for (int64_t j = 0; j < D; j++)
            sum += (y[j] = exp(row[j] - mx));
        for (int64_t j = 0; j < D; j++)
            y[j] /= sum;
    }
    free(x);
    return 0;
}

int nk_ref_rmsnorm(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    if (nin != 2 || nouts != 1 || !is_2d(&in[0]) || in[1].ndim != 1 || in[1].shape[0] != in[0].shape[1] ||
        n[0] != nk_array_numel(&in[0]))
        return NK_ESHAPE;
    int64_t R = in[0].shape[0], D = in[0].shape[1];
    double *x = decoded(&in[0]), *g = decoded(&in[1]);
    int rc = x && g ? 0 : NK_ENOMEM;
    for (int64_t r = 0; !rc && r < R; r++) {
        const double *row = x + r * D;
        double ss = 0;
        for (int64_t j = 0; j < D; j++)
            ss += row[j] * row[j];
        double inv = 1.0 / sqrt(ss / (double)D + NK_RMSNORM_EPS);
        for (int64_t j = 0; j < D; j++)
            out[0][r * D + j] = row[j] * inv * g[j];
    }
    free(x);
    free(g);
    return rc;
}

/* ---- references for NKI's other tutorial kernels */

int nk_ref_layernorm(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    if (nin != 3 || nouts != 1 || !is_2d(&in[0]) || in[1].ndim != 1 || in[2].ndim != 1 ||
        in[1].shape[0] != in[0].shape[1] || in[2].shape[0] != in[0].shape[1] || n[0] != nk_array_numel(&in[0]))
        return NK_ESHAPE;
    int64_t R = in[0].shape[0], D = in[0].shape[1];
    double *x = decoded(&in[0]), *g = decoded(&in[1]), *b = decoded(&in[2]);
    int rc = x && g && b ? 0 : NK_ENOMEM;
    for (int64_t r = 0; !rc && r < R; r++) {
        const double *row = x + r * D;
        double mean = 0, var = 0;
        for (int64_t j = 0; j < D; j++)
            mean += row[j];
        mean /= (double)D;
        /* two passes: no cancellation when |mean| >> std */
        for (int64_t j = 0; j < D; j++)
            var += (row[j] - mean) * (row[j] - mean);
        var /= (double)D;
        double inv = 1.0 / sqrt(var + NK_LAYERNORM_EPS);
        for (int64_t j = 0; j < D; j++)
            out[0][r * D + j] = (row[j] - mean) * inv * g[j] + b[j];
    }
    free(x);
    free(g);
    free(b);
    return rc;
}

int nk_ref_mamba(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    if (nin != 5 || nouts != 1)
        return NK_ESHAPE;
    const nk_array *dl = &in[0], *u = &in[1], *A = &in[2], *B = &in[3], *C = &in[4];
    if (dl->ndim != 3 || u->ndim != 3 || A->ndim != 2 || B->ndim != 3 || C->ndim != 3)
        return NK_ESHAPE;
    int64_t nb = dl->shape[0], nc = dl->shape[1], L = dl->shape[2], S = A->shape[1];
    for (int d = 0; d < 3; d++)
        if (u->shape[d] != dl->shape[d])
            return NK_ESHAPE;
    if (A->shape[0] != nc || B->shape[0] != nb || B->shape[1] != S || B->shape[2] != L ||
        C->shape[0] != nb || C->shape[1] != S || C->shape[2] != L || n[0] != nk_array_numel(dl))
        return NK_ESHAPE;
    double *xd = decoded(dl), *xu = decoded(u), *xa = decoded(A), *xb = decoded(B), *xc = decoded(C);
    int rc = xd && xu && xa && xb && xc ? 0 : NK_ENOMEM;
    if (!rc)
        memset(out[0], 0, n[0] * sizeof *out[0]);
    for (int64_t b = 0; !rc && b < nb; b++)
        for (int64_t c = 0; c < nc; c++) {
            const double *drow = xd + (b * nc + c) * L, *urow = xu + (b * nc + c) * L;
            double *y = out[0] + (b * nc + c) * L;
            for (int64_t s = 0; s < S; s++) {
                const double *brow = xb + (b * S + s) * L, *crow = xc + (b * S + s) * L;
                double a = xa[c * S + s], h = 0; /* the state before t = 0 is zero */
                for (int64_t t = 0; t < L; t++) {
                    h = exp(drow[t] * a) * h + drow[t] * brow[t] * urow[t];
                    y[t] += crow[t] * h;
                }
            }
        }
    free(xd);
    free(xu);
    free(xa);
    free(xb);
    free(xc);
    return rc;
}

/* out[Sq, d] = softmax(scale * q k^T) v for q [Sq, d], k and v [Skv, d], all
 * row-major doubles; the row maximum is subtracted before exp. */
static int attention(const double *q, const double *k, const double *v, int64_t Sq, int64_t Skv, int64_t d,
                     double scale, double *o)
{
    double *w = malloc((size_t)(Skv ? Skv : 1) * sizeof *w);
    if (!w)
        return NK_ENOMEM;
    for (int64_t i = 0; i < Sq; i++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < Skv; j++) {
            double s = 0;
            for (int64_t e = 0; e < d; e++)
                s += q[i * d + e] * k[j * d + e];
            w[j] = scale * s;
            mx = w[j] > mx ? w[j] : mx;
        }
        for (int64_t j = 0; j < Skv; j++)
            sum += (w[j] = exp(w[j] - mx));
        for (int64_t e = 0; e < d; e++) {
            double acc = 0;
            for (int64_t j = 0; j < Skv; j++)
                acc += w[j] * v[j * d + e];
            o[i * d + e] = acc / sum;
        }
    }
    free(w);
    return 0;
}

/* A decoded [rows, cols] array transposed to [cols, rows] (caller frees). */
static double *decoded_t(const nk_array *a)
{
    int64_t rows = a->shape[0], cols = a->shape[1];
    size_t n = nk_array_numel(a);
    double *x = decoded(a), *t = malloc((n ? n : 1) * sizeof *t);
    if (x && t)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                t[c * rows + r] = x[r * cols + c];
    else {
        free(t);
        t = NULL;
    }
    free(x);
    return t;
}

int nk_ref_attention_fwd(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    if (nin != 3 || nouts != 1 || !is_2d(&in[0]) || !is_2d(&in[1]) || !is_2d(&in[2]))
        return NK_ESHAPE;
    int64_t d = in[0].shape[0], Sq = in[0].shape[1], Skv = in[1].shape[1];
    if (in[1].shape[0] != d || in[2].shape[0] != d || in[2].shape[1] != Skv || Skv < 1 || n[0] != (size_t)(Sq * d))
        return NK_ESHAPE;
    double *q = decoded_t(&in[0]), *k = decoded_t(&in[1]), *v = decoded_t(&in[2]);
    int rc = q && k && v ? attention(q, k, v, Sq, Skv, d, 1.0, out[0]) : NK_ENOMEM;
    free(q);
    free(k);
    free(v);
    return rc;
}

int nk_ref_sd_attention(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    if (nin != 3 || nouts != 1 || !is_2d(&in[0]) || !is_2d(&in[1]) || !is_2d(&in[2]))
        return NK_ESHAPE;
    int64_t Sq = in[0].shape[0], d = in[0].shape[1], Skv = in[1].shape[0];
    if (in[1].shape[1] != d || in[2].shape[0] != Skv || in[2].shape[1] != d || Skv < 1 || n[0] != (size_t)(Sq * d))
        return NK_ESHAPE;
    double *q = decoded(&in[0]), *k = decoded(&in[1]), *v = decoded(&in[2]);
    int rc = q && k && v ? attention(q, k, v, Sq, Skv, d, NK_SD_ATTENTION_SCALE, out[0]) : NK_ENOMEM;
    free(q);
    free(k);
    free(v);
    return rc;
}

int nk_ref_avgpool2d(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    const int64_t p = NK_AVGPOOL2D_POOL;
    if (nin != 1 || nouts != 1 || in[0].ndim != 3)
        return NK_ESHAPE;
    int64_t C = in[0].shape[0], H = in[0].shape[1], W = in[0].shape[2], Ho = H / p, Wo = W / p;
    if (n[0] != (size_t)(C * Ho * Wo))
        return NK_ESHAPE;
    double *x = decoded(&in[0]);
    if (!x)
        return NK_ENOMEM;
    /* rows and columns past the last whole window are not read */
    for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t j = 0; j < Wo; j++) {
                double s = 0;
                for (int64_t di = 0; di < p; di++)
                    for (int64_t dj = 0; dj < p; dj++)
                        s += x[(c * H + i * p + di) * W + j * p + dj];
                out[0][(c * Ho + i) * Wo + j] = s / (double)(p * p);
            }
    free(x);
    return 0;
}

int nk_ref_transpose2d(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts)
{
    if (nin != 1 || nouts != 1 || (in[0].ndim != 2 && in[0].ndim != 3))
        return NK_ESHAPE;
    int64_t P = in[0].shape[0], F1, F2;
    if (in[0].ndim == 3) {
        F1 = in[0].shape[1];
        F2 = in[0].shape[2];
    } else {
        F1 = NK_TRANSPOSE2D_F1;
        if (in[0].shape[1] % F1)
            return NK_ESHAPE;
        F2 = in[0].shape[1] / F1;
    }
    if (n[0] != nk_array_numel(&in[0]))
        return NK_ESHAPE;
    double *x = decoded(&in[0]);
    if (!x)
        return NK_ENOMEM;
    for (int64_t r = 0; r < P; r++)
        for (int64_t i = 0; i < F1; i++)
            for (int64_t j = 0; j < F2; j++)
                out[0][r * F1 * F2 + j * F1 + i] = x[r * F1 * F2 + i * F2 + j];
    free(x);
    return 0;
}
