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
