/*
 * test_ops_ref.c - the independent dtype model and kernel helpers behind the
 * numerics tests (see test_ops_ref.h). No tests here.
 */
#include "test_ops_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- float formats by their fields */

enum { KIND_INT = 0, KIND_IEEE, KIND_FN };

typedef struct ffmt {
    int kind;
    int ebits, mbits, bias;
    int is_signed, bits; /* integers */
} ffmt;

static ffmt fmt_of(nk_dtype dt)
{
    switch (dt) {
    case NK_F32: return (ffmt){KIND_IEEE, 8, 23, 127, 1, 32};
    case NK_BF16: return (ffmt){KIND_IEEE, 8, 7, 127, 1, 16};
    case NK_F16: return (ffmt){KIND_IEEE, 5, 10, 15, 1, 16};
    case NK_FP8_E4M3: return (ffmt){KIND_IEEE, 4, 3, 7, 1, 8};
    case NK_FP8_E4M3FN: return (ffmt){KIND_FN, 4, 3, 7, 1, 8};
    case NK_FP8_E5M2: return (ffmt){KIND_IEEE, 5, 2, 15, 1, 8};
    case NK_I8: return (ffmt){KIND_INT, 0, 0, 0, 1, 8};
    case NK_I16: return (ffmt){KIND_INT, 0, 0, 0, 1, 16};
    case NK_I32: return (ffmt){KIND_INT, 0, 0, 0, 1, 32};
    case NK_U8: return (ffmt){KIND_INT, 0, 0, 0, 0, 8};
    case NK_U16: return (ffmt){KIND_INT, 0, 0, 0, 0, 16};
    default: return (ffmt){KIND_INT, 0, 0, 0, 0, 32};
    }
}

int ref_is_float(nk_dtype dt) { return fmt_of(dt).kind != KIND_INT; }

double ref_max(nk_dtype dt)
{
    ffmt f = fmt_of(dt);
    if (f.kind == KIND_INT)
        return f.is_signed ? ldexp(1.0, f.bits - 1) - 1 : ldexp(1.0, f.bits) - 1;
    int emax = (1 << f.ebits) - 2 - f.bias;
    if (f.kind == KIND_FN) /* the all-ones exponent holds numbers; only mantissa all-ones is NaN */
        return (2.0 - ldexp(1.0, 1 - f.mbits)) * ldexp(1.0, emax + 1);
    return (2.0 - ldexp(1.0, -f.mbits)) * ldexp(1.0, emax);
}

double ref_min_int(nk_dtype dt)
{
    ffmt f = fmt_of(dt);
    return f.is_signed ? -ldexp(1.0, f.bits - 1) : 0.0;
}

double ref_decode_code(nk_dtype dt, uint32_t code)
{
    ffmt f = fmt_of(dt);
    if (f.kind == KIND_INT) {
        uint64_t mask = f.bits == 32 ? 0xffffffffull : (1ull << f.bits) - 1;
        uint64_t u = code & mask;
        if (f.is_signed && (u >> (f.bits - 1)))
            return (double)u - ldexp(1.0, f.bits);
        return (double)u;
    }
    uint32_t mfield = code & ((1u << f.mbits) - 1);
    uint32_t efield = (code >> f.mbits) & ((1u << f.ebits) - 1);
    int neg = (code >> (f.ebits + f.mbits)) & 1;
    uint32_t eall = (1u << f.ebits) - 1, mall = (1u << f.mbits) - 1;
    double v;
    if (f.kind == KIND_IEEE && efield == eall)
        v = mfield ? NAN : INFINITY;
    else if (f.kind == KIND_FN && efield == eall && mfield == mall)
        v = NAN;
    else if (efield == 0)
        v = ldexp((double)mfield, 1 - f.bias - f.mbits);
    else
        v = ldexp(1.0 + ldexp((double)mfield, -f.mbits), (int)efield - f.bias);
    return neg ? -v : v;
}

double ref_decode(nk_dtype dt, const void *base, size_t i)
{
    const uint8_t *p = base;
    int sz = fmt_of(dt).kind == KIND_INT ? fmt_of(dt).bits / 8 : (1 + fmt_of(dt).ebits + fmt_of(dt).mbits) / 8;
    uint32_t code = 0;
    for (int b = 0; b < sz; b++) /* little-endian */
        code |= (uint32_t)p[i * sz + b] << (8 * b);
    return ref_decode_code(dt, code);
}

double ref_round(nk_dtype dt, double v)
{
    ffmt f = fmt_of(dt);
    if (f.kind == KIND_INT) {
        if (v != v)
            return 0.0;
        double r = nearbyint(v), lo = ref_min_int(dt), hi = ref_max(dt);
        return r < lo ? lo : r > hi ? hi : r + 0.0; /* + 0.0: integers have no -0 */
    }
    if (v != v)
        return NAN;
    if (isinf(v))
        return f.kind == KIND_FN ? NAN : v;
    if (v == 0)
        return v;
    int e;
    frexp(v, &e); /* |v| = m * 2^e, m in [0.5, 1) */
    int E = e - 1, emin = 1 - f.bias;
    if (E < emin)
        E = emin;
    double q = ldexp(1.0, E - f.mbits); /* spacing of the format at v */
    double r = nearbyint(v / q) * q;   /* v / q is exact: a power-of-two scale */
    if (fabs(r) > ref_max(dt))
        return f.kind == KIND_FN ? NAN : copysign(INFINITY, v);
    return r;
}

uint32_t ref_encode_code(nk_dtype dt, double v)
{
    ffmt f = fmt_of(dt);
    if (f.kind == KIND_INT) {
        int64_t k = (int64_t)v;
        return (uint32_t)(uint64_t)k;
    }
    uint32_t sign = signbit(v) ? 1u << (f.ebits + f.mbits) : 0;
    uint32_t eall = (1u << f.ebits) - 1, mall = (1u << f.mbits) - 1;
    if (v != v)
        return (f.kind == KIND_FN ? (eall << f.mbits) | mall : (eall << f.mbits) | (1u << (f.mbits - 1)));
    if (isinf(v))
        return sign | (eall << f.mbits);
    if (v == 0)
        return sign;
    double a = fabs(v);
    int e, emin = 1 - f.bias;
    frexp(a, &e);
    int E = e - 1;
    if (E < emin) /* subnormal: exponent field 0 */
        return sign | (uint32_t)ldexp(a, f.mbits - emin);
    double m = ldexp(a, f.mbits - E) - ldexp(1.0, f.mbits);
    return sign | ((uint32_t)(E + f.bias) << f.mbits) | (uint32_t)m;
}

void ref_encode(nk_dtype dt, double v, void *base, size_t i)
{
    ffmt f = fmt_of(dt);
    int sz = f.kind == KIND_INT ? f.bits / 8 : (1 + f.ebits + f.mbits) / 8;
    uint32_t code = ref_encode_code(dt, v);
    uint8_t *p = base;
    for (int b = 0; b < sz; b++)
        p[i * sz + b] = (uint8_t)(code >> (8 * b));
}

double ref_ulp(nk_dtype dt, double v)
{
    ffmt f = fmt_of(dt);
    if (f.kind == KIND_INT)
        return 1.0;
    if (v != v || isinf(v))
        return 0.0;
    int e = 0, emin = 1 - f.bias;
    if (v != 0)
        frexp(v, &e);
    int E = v == 0 || e - 1 < emin ? emin : e - 1;
    return ldexp(1.0, E - f.mbits);
}

int ref_same(double a, double b, int signed_zero)
{
    if (a != a || b != b)
        return a != a && b != b;
    if (a != b)
        return 0;
    return !signed_zero || a != 0 || signbit(a) == signbit(b);
}

/* ---- random numbers */

uint64_t ref_rand64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double ref_uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(ref_rand64(s) >> 11) * (1.0 / 9007199254740992.0));
}

/* ---- host arrays */

void arr_new(nk_array *a, nk_dtype dt, int ndim, const int64_t *shape)
{
    int rc = nk_array_alloc(a, dt, ndim, shape);
    if (rc) {
        nk_test_fail(__FILE__, __LINE__, "nk_array_alloc failed: %d", rc);
        abort(); /* a test cannot go on without its arrays */
    }
}

void arr_fill(nk_array *a, uint64_t *rng, double lo, double hi)
{
    size_t n = nk_array_numel(a);
    for (size_t i = 0; i < n; i++)
        arr_set(a, i, ref_uniform(rng, lo, hi));
}

double arr_get(const nk_array *a, size_t i) { return ref_decode(a->dtype, a->data, i); }

double *arr_values(const nk_array *a)
{
    size_t n = nk_array_numel(a);
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        abort();
    for (size_t i = 0; i < n; i++)
        v[i] = arr_get(a, i);
    return v;
}

void arr_set(nk_array *a, size_t i, double v) { ref_encode(a->dtype, ref_round(a->dtype, v), a->data, i); }

void arr_free_all(nk_array *a, int n)
{
    for (int i = 0; i < n; i++)
        nk_array_free(&a[i]);
}

/* ---- running kernels */

int run_kernel_at(const char *file, int line, const char *name, nk_kernel_fn fn, const nk_array *args, int nargs,
                  nk_array *outs, int nouts)
{
    nk_kernel *k = nk_kernel_new(name, fn);
    if (!k) {
        nk_test_fail(file, line, "%s: nk_kernel_new failed", name);
        return -1;
    }
    int got = 0;
    memset(outs, 0, sizeof *outs * (size_t)nouts);
    int rc = nk_call(k, args, nargs, NULL, outs, nouts, &got);
    if (rc) {
        nk_test_fail(file, line, "%s: nk_call returned %d (%s): %s", name, rc, nk_strerror(rc),
                     nk_kernel_error(k) ? nk_kernel_error(k) : "");
    } else if (got != nouts) {
        nk_test_fail(file, line, "%s: %d outputs, expected %d", name, got, nouts);
        arr_free_all(outs, got);
        rc = -1;
    }
    nk_kernel_free(k);
    return rc;
}

void ref_return_tile(nk_ctx *nc, nk_tensor t)
{
    if (t.mem == NK_PSUM)
        t = nk_copy(nc, t, (nk_dtype)t.dtype);
    nk_shape s = {t.ndim, {0}};
    for (int i = 0; i < t.ndim; i++)
        s.d[i] = t.shape[i];
    nk_tensor out = nk_ndarray(nc, s, (nk_dtype)t.dtype, NK_SHARED_HBM);
    nk_store(nc, out, t);
    nk_return(nc, out);
}

/* ---- comparing */

int check_arr_at(const char *file, int line, const char *what, const nk_array *out, const double *expect,
                 double ulps, const double *atol_each, double atol)
{
    size_t n = nk_array_numel(out), bad = 0, worst = 0;
    double worst_ratio = -1;
    for (size_t i = 0; i < n; i++) {
        double got = arr_get(out, i), want = ref_round(out->dtype, expect[i]);
        double tol = ulps * ref_ulp(out->dtype, want) + atol + (atol_each ? atol_each[i] : 0.0);
        int ok;
        if (want != want || got != got || isinf(want) || isinf(got))
            ok = ref_same(got, want, 0);
        else
            ok = fabs(got - want) <= tol;
        if (!ok) {
            double ratio = isfinite(got) && isfinite(want) && tol > 0 ? fabs(got - want) / tol : INFINITY;
            if (!bad || ratio > worst_ratio) {
                worst_ratio = ratio;
                worst = i;
            }
            bad++;
        }
    }
    if (bad) {
        double got = arr_get(out, worst), want = ref_round(out->dtype, expect[worst]);
        double tol = ulps * ref_ulp(out->dtype, want) + atol + (atol_each ? atol_each[worst] : 0.0);
        nk_test_fail(file, line, "%s (%s): %zu of %zu elements off; worst [%zu]: got %.9g, want %.9g "
                     "(exact %.12g), tolerance %.3g", what, nk_dtype_name(out->dtype), bad, n, worst, got, want,
                     expect[worst], tol);
    }
    return (int)bad;
}
