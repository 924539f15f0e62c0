/*
 * vmath.c - SLEEF's vectorised fp32 functions behind one pointer per
 * function (see vmath.h).
 *
 * SLEEF (libsleef, Debian's libsleef-dev) exports each function once per
 * instruction set: Sleef_expf16_u10avx512f, Sleef_expf8_u10avx2,
 * Sleef_expf4_u10sse2, ... ("u10": at most 1.0 ulp of error). The vector
 * types of the wider ones only exist in code compiled for that instruction
 * set, so each tier's loop is compiled with a target attribute and the
 * tier is picked once, from what the processor reports. The entry points
 * are looked up by name when SLEEF is loaded (it is not linked: sleef_load)
 * and called through pointer types of their instruction set (sleef.h only
 * declares the AVX ones when the whole file is compiled with -mavx). tanh
 * (in fp32), sigmoid, silu, gelu_apprx_tanh, softplus, erf, gelu and mish
 * (in double) are this file's own: SLEEF's tanhf cost five times its
 * expf, and its erff (1.07 ulp near FLT_MIN) and erfcf (a 1.5-ulp
 * function) would lose the scalar code's 0.5-ulp bound.
 */
#include "exec/vmath.h"
#include "nklab.h"
#include "core/atomicfile.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <dlfcn.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>

#ifndef NK_SLEEF_LIB
#define NK_SLEEF_LIB "libsleef.so.3"
#endif

#define NK_VM_FUNCS(X) X(exp) X(log) X(sin) X(cos) X(atan)

/* SLEEF is not linked: it is loaded when the first of its functions is
 * asked for (sleef_load), as OpenBLAS is (exec/blas.c), so that a process
 * that runs no exp, log, sin, cos or arctan does not pay its start-up
 * (about 0.5 MB of resident memory). Its entry points, each tier's: */
#define NK_VM_PTRS(f) static void *sl_##f##16, *sl_##f##8, *sl_##f##4;
NK_VM_FUNCS(NK_VM_PTRS)
/* (called through types of the instruction set they need, inside the
 * loops compiled for it: the ABI of wide vector arguments is the callee's) */
#define SL16(f) ((__m512(*)(__m512))sl_##f##16)
#define SL8(f) ((__m256(*)(__m256))sl_##f##8)
#define SL4(f) ((__m128(*)(__m128))sl_##f##4)

/* The affine step before every function, x * sc + bi in fp32 (the product
 * rounded before the bias is added, no fused multiply-add), as the
 * executor's own loops do it. */
#define AFF512(v) _mm512_add_ps(_mm512_mul_ps((v), _mm512_set1_ps(sc)), _mm512_set1_ps(bi))
#define AFF256(v) _mm256_add_ps(_mm256_mul_ps((v), _mm256_set1_ps(sc)), _mm256_set1_ps(bi))
#define AFF128(v) _mm_add_ps(_mm_mul_ps((v), _mm_set1_ps(sc)), _mm_set1_ps(bi))

static float aff(float x, float sc, float bi)
{
    float t = x * sc;
    return t + bi;
}

/* One loop per function and tier; the tail goes through a padded vector
 * (masked loads and stores on AVX-512), so no element is computed twice and
 * none outside [0, n) is read. */
#define NK_VM_LOOPS(f)                                                                          \
    __attribute__((target("avx512f"))) static void f##_avx512(float *y, const float *x, int64_t n, float sc, float bi) \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + 16 <= n; i += 16)                                                            \
            _mm512_storeu_ps(y + i, SL16(f)(AFF512(_mm512_loadu_ps(x + i)))); \
        if (i < n) {                                                                            \
            __mmask16 m = (__mmask16)((1u << (n - i)) - 1);                                     \
            _mm512_mask_storeu_ps(y + i, m, SL16(f)(AFF512(_mm512_maskz_loadu_ps(m, x + i)))); \
        }                                                                                       \
    }                                                                                           \
    __attribute__((target("avx2,fma"))) static void f##_avx2(float *y, const float *x, int64_t n, float sc, float bi) \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + 8 <= n; i += 8)                                                              \
            _mm256_storeu_ps(y + i, SL8(f)(AFF256(_mm256_loadu_ps(x + i))));     \
        if (i < n) {                                                                            \
            float t[8] = {0};                                                                   \
            memcpy(t, x + i, (size_t)(n - i) * sizeof *t);                                      \
            _mm256_storeu_ps(t, SL8(f)(AFF256(_mm256_loadu_ps(t))));             \
            memcpy(y + i, t, (size_t)(n - i) * sizeof *t);                                      \
        }                                                                                       \
    }                                                                                           \
    static void f##_sse2(float *y, const float *x, int64_t n, float sc, float bi)               \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + 4 <= n; i += 4)                                                              \
            _mm_storeu_ps(y + i, SL4(f)(AFF128(_mm_loadu_ps(x + i))));           \
        if (i < n) {                                                                            \
            float t[4] = {0};                                                                   \
            memcpy(t, x + i, (size_t)(n - i) * sizeof *t);                                      \
            _mm_storeu_ps(t, SL4(f)(AFF128(_mm_loadu_ps(t))));                   \
            memcpy(y + i, t, (size_t)(n - i) * sizeof *t);                                      \
        }                                                                                       \
    }
NK_VM_FUNCS(NK_VM_LOOPS)

/* ---- sigmoid in double: exp on vectors of doubles
 *
 * For fp32 x, sigmoid(x) = 1 / (1 + exp(-x)) is evaluated in double and
 * rounded once to fp32, so it is within 0.5 ulp and a hair. exp(z) is
 * 2^k * T[j] * (1 + q(r)) with z = (8k + j) * ln2/8 + r, |r| <= ln2/16, T[j] =
 * 2^(j/8) from an 8-entry table and q(r) = expm1(r) by its Taylor
 * polynomial to r^8 (truncated below 2^-54 of q). Every tier evaluates the
 * same operations in the same order (the fused multiply-adds included), so
 * each gives the same bits; SSE2 does it one element at a time with fma(). */
#define NK_D_MAGIC 0x1.8p52 /* adding it rounds a double below 2^51 to an integer in the low bits */
#define NK_D_8_LN2 0x1.71547652b82fep3
#define NK_D_LN2_8_HI 0x1.62e42fefa3800p-4
#define NK_D_LN2_8_LO 0x1.ef35793c76730p-48
static const double nk_exp2_8th[8] = {
    1.0,
    0x1.172b83c7d517bp+0,
    0x1.306fe0a31b715p+0,
    0x1.4bfdad5362a27p+0,
    0x1.6a09e667f3bcdp+0,
    0x1.8ace5422aa0dbp+0,
    0x1.ae89f995ad3adp+0,
    0x1.d5818dcfba487p+0,
};
/* (expm1(r) - r) / r^2 = 1/2 + r/6 + ... + r^6/8!, highest power first */
static const double nk_expm1_q[7] = {1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5};
/* sigmoid(x) rounds to 1 above 17.4 and to 0 below -104 */
#define NK_SIG_ZMIN (-20.0)
#define NK_SIG_ZMAX 110.0

/* The scalar form: the reference of the vector ones, and SSE2's loop. */
static double dexp_s(double z)
{
    double kd = fma(z, NK_D_8_LN2, NK_D_MAGIC), k = kd - NK_D_MAGIC;
    double r = fma(-k, NK_D_LN2_8_HI, z);
    r = fma(-k, NK_D_LN2_8_LO, r);
    double q = nk_expm1_q[0];
    for (int i = 1; i < 7; i++)
        q = fma(q, r, nk_expm1_q[i]);
    q = fma(q, r * r, r);
    uint64_t kb, magic, nb;
    double m = NK_D_MAGIC, s;
    memcpy(&kb, &kd, 8);
    memcpy(&magic, &m, 8);
    nb = kb - magic;
    uint64_t e = ((nb + 8 * 1023) >> 3) << 52;
    memcpy(&s, &e, 8);
    s *= nk_exp2_8th[nb & 7];
    return fma(s, q, s);
}

static void sigmoid_sse2(float *y, const float *x, int64_t n, float sc, float bi)
{
    for (int64_t i = 0; i < n; i++) {
        double z = -(double)aff(x[i], sc, bi);
        z = NK_SIG_ZMIN > z ? NK_SIG_ZMIN : z;
        z = NK_SIG_ZMAX < z ? NK_SIG_ZMAX : z;
        y[i] = (float)(1.0 / (1.0 + dexp_s(z)));
    }
}

__attribute__((target("avx512f"))) static inline __m512d dexp_512(__m512d z)
{
    const __m512d magic = _mm512_set1_pd(NK_D_MAGIC);
    __m512d kd = _mm512_fmadd_pd(z, _mm512_set1_pd(NK_D_8_LN2), magic), k = _mm512_sub_pd(kd, magic);
    __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(NK_D_LN2_8_HI), z);
    r = _mm512_fnmadd_pd(k, _mm512_set1_pd(NK_D_LN2_8_LO), r);
    __m512d q = _mm512_set1_pd(nk_expm1_q[0]);
    for (int i = 1; i < 7; i++)
        q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(nk_expm1_q[i]));
    q = _mm512_fmadd_pd(q, _mm512_mul_pd(r, r), r);
    /* T[j] (the index's low 3 bits are kd's) times 2^floor(n / 8) */
    __m512d s = _mm512_scalef_pd(_mm512_permutexvar_pd(_mm512_castpd_si512(kd), _mm512_loadu_pd(nk_exp2_8th)),
                                 _mm512_mul_pd(k, _mm512_set1_pd(0.125)));
    return _mm512_fmadd_pd(s, q, s);
}

__attribute__((target("avx2,fma"))) static inline __m256d dexp_256(__m256d z)
{
    const __m256d magic = _mm256_set1_pd(NK_D_MAGIC);
    __m256d kd = _mm256_fmadd_pd(z, _mm256_set1_pd(NK_D_8_LN2), magic), k = _mm256_sub_pd(kd, magic);
    __m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(NK_D_LN2_8_HI), z);
    r = _mm256_fnmadd_pd(k, _mm256_set1_pd(NK_D_LN2_8_LO), r);
    __m256d q = _mm256_set1_pd(nk_expm1_q[0]);
    for (int i = 1; i < 7; i++)
        q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(nk_expm1_q[i]));
    q = _mm256_fmadd_pd(q, _mm256_mul_pd(r, r), r);
    __m256i nb = _mm256_sub_epi64(_mm256_castpd_si256(kd), _mm256_castpd_si256(magic));
    __m256i e = _mm256_slli_epi64(_mm256_srli_epi64(_mm256_add_epi64(nb, _mm256_set1_epi64x(8 * 1023)), 3), 52);
    __m256d t = _mm256_i64gather_pd(nk_exp2_8th, _mm256_and_si256(nb, _mm256_set1_epi64x(7)), 8);
    __m256d s = _mm256_mul_pd(_mm256_castsi256_pd(e), t);
    return _mm256_fmadd_pd(s, q, s);
}

__attribute__((target("avx512f"))) static inline __m256 sigmoid8_512(__m256 v)
{
    __m512d z = _mm512_sub_pd(_mm512_setzero_pd(), _mm512_cvtps_pd(v));
    z = _mm512_min_pd(_mm512_set1_pd(NK_SIG_ZMAX), _mm512_max_pd(_mm512_set1_pd(NK_SIG_ZMIN), z));
    return _mm512_cvtpd_ps(_mm512_div_pd(_mm512_set1_pd(1.0), _mm512_add_pd(_mm512_set1_pd(1.0), dexp_512(z))));
}

__attribute__((target("avx2,fma"))) static inline __m128 sigmoid4_256(__m128 v)
{
    __m256d z = _mm256_sub_pd(_mm256_setzero_pd(), _mm256_cvtps_pd(v));
    z = _mm256_min_pd(_mm256_set1_pd(NK_SIG_ZMAX), _mm256_max_pd(_mm256_set1_pd(NK_SIG_ZMIN), z));
    return _mm256_cvtpd_ps(_mm256_div_pd(_mm256_set1_pd(1.0), _mm256_add_pd(_mm256_set1_pd(1.0), dexp_256(z))));
}

/* ---- silu and gelu_apprx_tanh: x * sigmoid(g(x)) in double
 *
 * silu(x) = x / (1 + exp(-x)) and gelu_apprx_tanh(x) = 0.5x(1 + tanh(z)) =
 * x / (1 + exp(-2z)), z = sqrt(2/pi) * (x + 0.044715x^3), the exp as
 * sigmoid's, evaluated in double and rounded once: within 0.5 ulp and a hair
 * of the formula (the double evaluation is within a few 2^-53 of it; every
 * fp32 input, swept once outside the suite on AVX-512 and AVX2, gives libm's
 * double formula rounded to fp32 bit for bit). x is first raised to
 * -700 (the result rounds to -0 below -110 for both), so -inf gives -0 as
 * the executor's scalar functions do; the exponent is clamped to [-40, 700]
 * (exp(-40) is below 2^-57 of 1, so large x give x exactly, and 700 keeps
 * exp finite). NaN stays NaN and -0 gives -0. */
#define NK_XG_XMIN (-700.0)
#define NK_XG_ZMIN (-40.0)
#define NK_XG_ZMAX 700.0
/* -2 sqrt(2/pi), and times 0.044715: the exponent is x * (K1 + K3 x^2) */
#define NK_GT_K1 (-2.0 * 0.79788456080286535588)
#define NK_GT_K3 (-2.0 * 0.79788456080286535588 * 0.044715)

static double xgate_s(double d, int gelu)
{
    d = NK_XG_XMIN > d ? NK_XG_XMIN : d; /* (a NaN stays) */
    double z = gelu ? fma(NK_GT_K3, d * d, NK_GT_K1) * d : -d;
    z = NK_XG_ZMIN > z ? NK_XG_ZMIN : z;
    z = NK_XG_ZMAX < z ? NK_XG_ZMAX : z;
    return d / (1.0 + dexp_s(z));
}

static void silu_sse2(float *y, const float *x, int64_t n, float sc, float bi)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)xgate_s(aff(x[i], sc, bi), 0);
}

static void gelut_sse2(float *y, const float *x, int64_t n, float sc, float bi)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)xgate_s(aff(x[i], sc, bi), 1);
}

__attribute__((target("avx512f"))) static inline __m256 xgate8_512(__m256 v, int gelu)
{
    __m512d d = _mm512_max_pd(_mm512_set1_pd(NK_XG_XMIN), _mm512_cvtps_pd(v));
    __m512d z = gelu ? _mm512_mul_pd(_mm512_fmadd_pd(_mm512_set1_pd(NK_GT_K3), _mm512_mul_pd(d, d), _mm512_set1_pd(NK_GT_K1)), d)
                     : _mm512_sub_pd(_mm512_setzero_pd(), d);
    z = _mm512_min_pd(_mm512_set1_pd(NK_XG_ZMAX), _mm512_max_pd(_mm512_set1_pd(NK_XG_ZMIN), z));
    return _mm512_cvtpd_ps(_mm512_div_pd(d, _mm512_add_pd(_mm512_set1_pd(1.0), dexp_512(z))));
}

__attribute__((target("avx2,fma"))) static inline __m128 xgate4_256(__m128 v, int gelu)
{
    __m256d d = _mm256_max_pd(_mm256_set1_pd(NK_XG_XMIN), _mm256_cvtps_pd(v));
    __m256d z = gelu ? _mm256_mul_pd(_mm256_fmadd_pd(_mm256_set1_pd(NK_GT_K3), _mm256_mul_pd(d, d), _mm256_set1_pd(NK_GT_K1)), d)
                     : _mm256_sub_pd(_mm256_setzero_pd(), d);
    z = _mm256_min_pd(_mm256_set1_pd(NK_XG_ZMAX), _mm256_max_pd(_mm256_set1_pd(NK_XG_ZMIN), z));
    return _mm256_cvtpd_ps(_mm256_div_pd(d, _mm256_add_pd(_mm256_set1_pd(1.0), dexp_256(z))));
}

__attribute__((target("avx512f"))) static inline __m256 silu8_512(__m256 v) { return xgate8_512(v, 0); }
__attribute__((target("avx512f"))) static inline __m256 gelut8_512(__m256 v) { return xgate8_512(v, 1); }
__attribute__((target("avx2,fma"))) static inline __m128 silu4_256(__m128 v) { return xgate4_256(v, 0); }
__attribute__((target("avx2,fma"))) static inline __m128 gelut4_256(__m128 v) { return xgate4_256(v, 1); }

/* ---- softplus in double: max(x, 0) + log1p(exp(-|x|))
 *
 * exp as sigmoid's, its argument raised to -110 (the result rounds to 0
 * below -104, and large x give x); log1p(e), e in (0, 1], as 2 atanh(s): s =
 * e / (2 + e) up to sqrt(2) - 1, above it log1p(e) = ln2 + 2 atanh(s), s =
 * (e - 1) / (e + 3), so |s| <= 0.172 and atanh(s) = s + s^3 P(s^2) with P
 * its Taylor polynomial to s^18 (truncated below 2^-55 of s). Evaluated in
 * double and rounded once: within 0.5 ulp and a hair. -inf gives 0, +inf
 * +inf, NaN NaN. */
#define NK_SP_ZMIN (-110.0)
#define NK_SP_SPLIT 0x1.a827999fcef32p-2 /* sqrt(2) - 1 */
#define NK_D_LN2 0x1.62e42fefa39efp-1
/* (atanh(s) - s) / s^3 = 1/3 + s^2/5 + ... + s^18/21, highest power first */
static const double nk_atanh_p[10] = {1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
                                      1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};

static double softplus_s(double d)
{
    double z = 0.0 - fabs(d);
    z = NK_SP_ZMIN > z ? NK_SP_ZMIN : z; /* (a NaN stays) */
    double e = dexp_s(z), s, a;
    if (e > NK_SP_SPLIT) {
        s = (e - 1.0) / (e + 3.0);
        a = NK_D_LN2;
    } else {
        s = e / (2.0 + e);
        a = 0.0;
    }
    double u = s * s, p = nk_atanh_p[0];
    for (int i = 1; i < 10; i++)
        p = fma(p, u, nk_atanh_p[i]);
    double t = s + s;
    double l = fma(t * u, p, t) + a;
    return (0.0 > d ? 0.0 : d) + l;
}

static void softplus_sse2(float *y, const float *x, int64_t n, float sc, float bi)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)softplus_s(aff(x[i], sc, bi));
}

__attribute__((target("avx512f"))) static inline __m256 softplus8_512(__m256 v)
{
    const __m512d zero = _mm512_setzero_pd(), one = _mm512_set1_pd(1.0);
    __m512d d = _mm512_cvtps_pd(v);
    __m512d z = _mm512_max_pd(_mm512_set1_pd(NK_SP_ZMIN), _mm512_sub_pd(zero, _mm512_abs_pd(d)));
    __m512d e = dexp_512(z);
    __mmask8 hi = _mm512_cmp_pd_mask(e, _mm512_set1_pd(NK_SP_SPLIT), _CMP_GT_OQ);
    __m512d sl = _mm512_div_pd(e, _mm512_add_pd(_mm512_set1_pd(2.0), e));
    __m512d sh = _mm512_div_pd(_mm512_sub_pd(e, one), _mm512_add_pd(e, _mm512_set1_pd(3.0)));
    __m512d s = _mm512_mask_blend_pd(hi, sl, sh), a = _mm512_mask_blend_pd(hi, zero, _mm512_set1_pd(NK_D_LN2));
    __m512d u = _mm512_mul_pd(s, s), p = _mm512_set1_pd(nk_atanh_p[0]);
    for (int i = 1; i < 10; i++)
        p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(nk_atanh_p[i]));
    __m512d t = _mm512_add_pd(s, s);
    __m512d l = _mm512_add_pd(_mm512_fmadd_pd(_mm512_mul_pd(t, u), p, t), a);
    return _mm512_cvtpd_ps(_mm512_add_pd(_mm512_max_pd(zero, d), l));
}

__attribute__((target("avx2,fma"))) static inline __m128 softplus4_256(__m128 v)
{
    const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
    __m256d d = _mm256_cvtps_pd(v);
    __m256d z = _mm256_max_pd(_mm256_set1_pd(NK_SP_ZMIN), _mm256_sub_pd(zero, _mm256_andnot_pd(_mm256_set1_pd(-0.0), d)));
    __m256d e = dexp_256(z);
    __m256d hi = _mm256_cmp_pd(e, _mm256_set1_pd(NK_SP_SPLIT), _CMP_GT_OQ);
    __m256d sl = _mm256_div_pd(e, _mm256_add_pd(_mm256_set1_pd(2.0), e));
    __m256d sh = _mm256_div_pd(_mm256_sub_pd(e, one), _mm256_add_pd(e, _mm256_set1_pd(3.0)));
    __m256d s = _mm256_blendv_pd(sl, sh, hi), a = _mm256_and_pd(hi, _mm256_set1_pd(NK_D_LN2));
    __m256d u = _mm256_mul_pd(s, s), p = _mm256_set1_pd(nk_atanh_p[0]);
    for (int i = 1; i < 10; i++)
        p = _mm256_fmadd_pd(p, u, _mm256_set1_pd(nk_atanh_p[i]));
    __m256d t = _mm256_add_pd(s, s);
    __m256d l = _mm256_add_pd(_mm256_fmadd_pd(_mm256_mul_pd(t, u), p, t), a);
    return _mm256_cvtpd_ps(_mm256_add_pd(_mm256_max_pd(zero, d), l));
}

/* ---- erf and gelu in double: erf(a) for small a, exp(-a^2) F(a) above
 *
 * For a = |t| < 0.75, erf(a) = a P(a^2), P of degree 10; above it erfc(a) =
 * exp(-a^2) F(a), F(a) = exp(a^2) erfc(a) by a polynomial of degree 12 in s
 * = a - c on each of 16 quarter-octaves (the last two of [0.5, 1), all of [1,
 * 8), the first two of [8, 16)), picked by a's exponent and two leading
 * mantissa bits, c the interval's middle (a - c is exact: Sterbenz). a^2 = h
 * + l exactly (fma), exp(-a^2) = exp(-h)(1 - l) with sigmoid's exp (|l| <=
 * 2^-46, so l^2 is lost below 2^-92). erf(t) = sign(t) (1 - erfc(a)) above
 * 0.75; erfc(t) is 1 - erf(t) below it, and erfc(a), or 2 - erfc(a) for t <
 * 0, above it. a is clamped to 11.5 first (erfc(11.5) < 2^-195; erf rounds to
 * +-1 above 3.92, and gelu's x is raised to -16 first, as gelu rounds to -0
 * below -14.36, so |t| <= 11.32 there), so infinities give +-1 and 0 or 2
 * without overflow.
 *
 * The coefficients are Chebyshev interpolants (the polynomial through the
 * function at the 11 or 13 Chebyshev nodes of the interval, within a small
 * factor of the minimax one), computed in 60-digit arithmetic (mpmath's erf
 * and erfc) and rounded to double: P is within 2^-56 of erf(a) / a on [0,
 * 0.75] and each F within 2^-53 of its function (the rounding of the
 * coefficients dominates). The whole, evaluated in double, is within a few
 * 2^-53 of erf and erfc; rounded once to fp32, within 0.5 ulp and a hair of
 * libm's erf and of the scalar gelu, 0.5 d erfc(-d / sqrt2), with the same
 * product -d * 0.70710678118654752440 as erfc's argument. Every tier
 * evaluates both forms with the same operations in the same order and keeps
 * the one for its a; SSE2 evaluates only that one, element by element with
 * fma(). */
#define NK_EF_SMALL 0.75
#define NK_EF_AMAX 11.5
#define NK_EF_IDX0 ((1022 << 2) | 2) /* 0.75's exponent and two leading mantissa bits (bits >> 50) */
#define NK_GE_XMIN (-16.0)           /* gelu(x) rounds to -0 below -14.36 */
#define NK_GE_RSQRT2 0.70710678118654752440 /* the scalar code's 1 / sqrt2 */
/* P(u) = erf(sqrt(u)) / sqrt(u) on [0, 0.5625], highest power first */
static const double nk_erf_p[11] = {
    0x1.8a312cb07e6ccp-27, -0x1.564f71bbc0d35p-23, 0x1.b90ecd4aeec12p-20, -0x1.f4c5debf1228ap-17,
    0x1.f9a2afa3a8f86p-14, -0x1.c02db1220cfe6p-11, 0x1.565bcd03657c0p-8, -0x1.b82ce31257412p-6,
    0x1.ce2f21a0424c3p-4, -0x1.812746b0379e0p-2, 0x1.20dd750429b6dp+0,
};
/* the intervals' middles, then F's coefficients: nk_erfc_f[k][i] is that of
 * s^(12 - k) on interval i */
static const double nk_erfc_c[16] = {0.8125, 0.9375, 1.125, 1.375, 1.625, 1.875, 2.25, 2.75,
                                     3.25,   3.75,   4.5,   5.5,   6.5,   7.5,   9.0,  11.0};
static const double nk_erfc_f[13][16] = {
    {0x1.1019f1990c6bep-15, 0x1.411c545d6a5fbp-16, 0x1.2b01103f017c5p-17, 0x1.bfa42b0d868e6p-19,
     0x1.5e83abb87c1fbp-20, 0x1.1e564724ba684p-21, 0x1.44f92ff5f9b20p-23, 0x1.0ef27b91683ddp-25,
     0x1.00c9bbdf5bca9p-27, 0x1.1074472257be5p-29, 0x1.6c3d8c092bfccp-32, 0x1.5a6594caf2075p-35,
     0x1.ad0b38ca07b53p-38, 0x1.484a032f5c9c5p-40, 0x1.342dc82d72d13p-43, 0x1.a6b3a6d2e13d0p-47},
    {-0x1.9116a8b0c0a8dp-14, -0x1.e5453647aee2dp-15, -0x1.d50b4239215e4p-16, -0x1.70b2d98674df3p-17,
     -0x1.2ef42ef784635p-18, -0x1.03804e60b7ecap-19, -0x1.3bdb389c97d01p-21, -0x1.1ff8b434248b0p-23,
     -0x1.294e3d5afadbfp-25, -0x1.5649281486fa1p-27, -0x1.00de9991170e1p-29, -0x1.192d2721cb56dp-32,
     -0x1.8b95245af1631p-35, -0x1.53d3a26873434p-37, -0x1.7498dbb19a997p-40, -0x1.317632c6d815bp-43},
    {0x1.1d2918ea0cbefp-12, 0x1.621c0d3aca716p-13, 0x1.62735a11c3355p-14, 0x1.254e37bf7aafep-15,
     0x1.fafbb2e8d214fp-17, 0x1.c858a38809c6bp-18, 0x1.27aa297cf26b2p-19, 0x1.285365481cb12p-21,
     0x1.4ebdb00378173p-23, 0x1.a3bc45e5bfcd9p-25, 0x1.5c4e6a1a6cb62p-27, 0x1.baf9967b4a545p-30,
     0x1.6448f089f8aa6p-32, 0x1.5941b3e7bc2fdp-34, 0x1.b09475c2b09f5p-37, 0x1.ad2bd4a50a5dap-40},
    {-0x1.87346660ed2a1p-11, -0x1.f329aa092d3b6p-12, -0x1.041d7d1596830p-12, -0x1.c5f95ee1f6016p-14,
     -0x1.9d615fbb619ebp-15, -0x1.87a581d87c621p-16, -0x1.1175393aef3fcp-17, -0x1.2d9f3453d43d3p-19,
     -0x1.7539374cfb2b8p-21, -0x1.fe3ad04be1b7dp-23, -0x1.dde919a909a1dp-25, -0x1.5ff2c186d5376p-27,
     -0x1.42f8e6262fa96p-29, -0x1.6089a510329a1p-31, -0x1.02c7b79c90a85p-33, -0x1.33dc8a9ac9493p-36},
    {0x1.01b0620560ab8p-9, 0x1.524f5c6e3860dp-10, 0x1.6fd9a5be90814p-11, 0x1.535f582c3e0eep-12,
     0x1.465ecd36bc883p-13, 0x1.4631c4c960382p-14, 0x1.ec7742e8f2c7cp-16, 0x1.2bfb5d35afb11p-17,
     0x1.97dd7a925a021p-19, 0x1.30c2fc08d1ee7p-20, 0x1.435515ec525edp-22, 0x1.149ce135a9d27p-24,
     0x1.22467e07c6ae4p-26, 0x1.657f3c3d18803p-28, 0x1.342cc664c42b5p-30, 0x1.b82d6391b2ab4p-33},
    {-0x1.44bd2e2d3cb9ap-8, -0x1.b75cb1ae9f8fcp-9, -0x1.f38c6d75c2dd7p-10, -0x1.e8ae690498eafp-11,
     -0x1.f1b43d76dfa48p-12, -0x1.070e0ccd5ad89p-12, -0x1.aed7f201a226fp-14, -0x1.2312b4ba0ec0bp-15,
     -0x1.b45d04727fb05p-17, -0x1.65778bb154732p-18, -0x1.aef9110d7333bp-20, -0x1.add7bcacf1b9fp-22,
     -0x1.028f4aaada28ap-23, -0x1.67f15034543efp-25, -0x1.6ce6b0267d2ccp-27, -0x1.39729c504be52p-29},
    {0x1.859d3cc5fa7e6p-7, 0x1.102167daf789bp-7, 0x1.446c5166c310dp-8, 0x1.51ab9ffce088cp-9,
     0x1.6d609f6aac688p-10, 0x1.99b60e42d9c0bp-11, 0x1.6d7743d1e8f4dp-12, 0x1.131bb160848fdp-13,
     0x1.c882f022fff88p-15, 0x1.9b50d0d2263bfp-16, 0x1.1ad6a31e44879p-17, 0x1.4a17e1965341ap-19,
     0x1.c871a15bf34c8p-21, 0x1.67ca2bf715263p-22, 0x1.adc5f7a8b325dp-24, 0x1.bcbee2903c3efp-26},
    {-0x1.ba6d691685942p-6, -0x1.3fc8366a2e2cfp-6, -0x1.910a5d7bfa019p-7, -0x1.bdf24bcca0a44p-8,
     -0x1.014eae282be7cp-8, -0x1.33237c3ee7628p-9, -0x1.2bd251b95e628p-10, -0x1.f99e41eb4d545p-12,
     -0x1.d25ebba129a98p-13, -0x1.cfcdea1ad3706p-14, -0x1.6d54b11d32f1dp-15, -0x1.f4e46d0e3d226p-17,
     -0x1.8f23feca27427p-18, -0x1.64fcbb7074145p-19, -0x1.f773500229be1p-21, -0x1.3a555d6d9456ap-22},
    {0x1.d7f26045a23f1p-5, 0x1.61fee765ff5d7p-5, 0x1.d4e711a2df991p-6, 0x1.17eba60d31fd1p-6,
     0x1.5a142948a9b34p-7, 0x1.b99589d40f240p-8, 0x1.da595561f845ap-9, 0x1.c2c72fd7278c1p-10,
     0x1.d085857a18035p-11, 0x1.fff032a0df8fep-12, 0x1.d00785f2f524ap-13, 0x1.774f4826ddf01p-14,
     0x1.59b29296c5705p-15, 0x1.5f8a69c9ddd43p-16, 0x1.254381039f032p-17, 0x1.baa1d9d846922p-19},
    {-0x1.d43ed8ca5d7a1p-4, -0x1.6dcc9e7a2c9b5p-4, -0x1.01343a2c92275p-4, -0x1.4bcdb9d9083cep-5,
     -0x1.ba018e642810cp-6, -0x1.2ef92f6f1079ap-6, -0x1.6883f9919a8bdp-7, -0x1.84e9ab30e6d7ap-8,
     -0x1.c24b49c47a3fap-9, -0x1.1434ae05873f7p-9, -0x1.218ed930b7e4ep-10, -0x1.15976ddda4f65p-11,
     -0x1.28787f0e7f9e7p-12, -0x1.5783a27fad41ap-13, -0x1.53c131b5e1b22p-14, -0x1.3672f09815484p-15},
    {0x1.aa32b83507192p-3, 0x1.5c775dfc44978p-3, 0x1.05e72521ca1b8p-3, 0x1.701342cbcea7bp-4,
     0x1.0a15ac2adab35p-4, 0x1.8a6efeed233adp-5, 0x1.0615670e25a7bp-5, 0x1.43b98bac83823p-6,
     0x1.a7eddc9ee6425p-7, 0x1.22f0664f3cbf9p-7, 0x1.62c12cb5f756ep-8, 0x1.95252b932efe1p-9,
     0x1.f75ef7a0fb2dbp-10, 0x1.4d07bba601411p-10, 0x1.876373f4a0f10p-11, 0x1.b1c8923879d84p-12},
    {-0x1.5cbc2c216df00p-2, -0x1.2c84af7c10e14p-2, -0x1.e78b356770fbbp-3, -0x1.797a639d8129dp-3,
     -0x1.2b11e6959934cp-3, -0x1.e36580c7f734ap-4, -0x1.6a70d2bb37410p-4, -0x1.0305781330099p-4,
     -0x1.82a8522b868a1p-5, -0x1.2aa6503acda11p-5, -0x1.aa3eb6a946f71p-6, -0x1.238ca71b93fc2p-6,
     -0x1.a6e2cf277a0cbp-7, -0x1.404455ba9f3bep-7, -0x1.c046699d77d1ep-8, -0x1.2ddd3d589bfadp-8},
    {0x1.f0723ff5acdf9p-2, 0x1.c7f81382721efp-2, 0x1.9531e09b149b5p-2, 0x1.5f88f52f3c76bp-2,
     0x1.3583f6644327bp-2, 0x1.13e5743b60480p-2, 0x1.d94446d627932p-3, 0x1.8c9eb68ff27d7p-3,
     0x1.54a7a08d4bb45p-3, 0x1.2a2af19c14930p-3, 0x1.f5b2a049cf4c6p-4, 0x1.9d8a8f2284f2cp-4,
     0x1.5f75c42e97171p-4, 0x1.31742f4d8d4d3p-4, 0x1.fe6cc4a0f9538p-5, 0x1.a273c57e476cep-5},
};

/* The scalar forms: the reference of the vector ones, and SSE2's loops.
 * erf(a) for 0 <= a < 0.75 (and a larger, which the callers discard): */
static double erf_small_s(double a)
{
    double u = a * a, p = nk_erf_p[0];
    for (int i = 1; i < 11; i++)
        p = fma(p, u, nk_erf_p[i]);
    return a * p;
}

/* erfc(a) for 0.75 <= a <= 11.5 (a NaN stays; a smaller gives a finite
 * value the callers discard) */
static double erfc_big_s(double a)
{
    uint64_t b;
    memcpy(&b, &a, 8);
    unsigned i = (unsigned)((b >> 50) - NK_EF_IDX0) & 15;
    double s = a - nk_erfc_c[i], f = nk_erfc_f[0][i];
    for (int k = 1; k < 13; k++)
        f = fma(f, s, nk_erfc_f[k][i]);
    double h = a * a, l = fma(a, a, -h);
    double e = dexp_s(0.0 - h);
    e = fma(-e, l, e);
    return e * f;
}

static double erf_s(double d)
{
    double a = fabs(d);
    a = NK_EF_AMAX < a ? NK_EF_AMAX : a; /* (a NaN stays) */
    double y = a < NK_EF_SMALL ? erf_small_s(a) : 1.0 - erfc_big_s(a);
    return copysign(y, d); /* y >= 0: erf(-0) is -0 */
}

static double gelu_s(double d)
{
    d = NK_GE_XMIN > d ? NK_GE_XMIN : d; /* (a NaN stays) */
    double t = (0.0 - d) * NK_GE_RSQRT2, a = fabs(t), e; /* (+0 for -+0: erfc is 1 at both) */
    a = NK_EF_AMAX < a ? NK_EF_AMAX : a;
    if (a < NK_EF_SMALL) {
        e = 1.0 - copysign(erf_small_s(a), t);
    } else {
        double c = erfc_big_s(a);
        e = t < 0.0 ? 2.0 - c : c;
    }
    return 0.5 * d * e;
}

static void erf_sse2(float *y, const float *x, int64_t n, float sc, float bi)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)erf_s(aff(x[i], sc, bi));
}

static void gelu_sse2(float *y, const float *x, int64_t n, float sc, float bi)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)gelu_s(aff(x[i], sc, bi));
}

/* erf_small_s (w) and erfc_big_s (c) of every lane; the callers blend. */
__attribute__((target("avx512f"))) static inline void erf_parts_512(__m512d a, __m512d *w, __m512d *c)
{
    __m512d u = _mm512_mul_pd(a, a), p = _mm512_set1_pd(nk_erf_p[0]);
    for (int i = 1; i < 11; i++)
        p = _mm512_fmadd_pd(p, u, _mm512_set1_pd(nk_erf_p[i]));
    *w = _mm512_mul_pd(a, p);
    /* the interval's index in its low 4 bits, which are all the permutes read */
    __m512i j = _mm512_sub_epi64(_mm512_srli_epi64(_mm512_castpd_si512(a), 50), _mm512_set1_epi64(NK_EF_IDX0));
    __m512d s = _mm512_sub_pd(a, _mm512_permutex2var_pd(_mm512_loadu_pd(nk_erfc_c), j, _mm512_loadu_pd(nk_erfc_c + 8)));
    __m512d f = _mm512_permutex2var_pd(_mm512_loadu_pd(nk_erfc_f[0]), j, _mm512_loadu_pd(nk_erfc_f[0] + 8));
    for (int k = 1; k < 13; k++)
        f = _mm512_fmadd_pd(f, s, _mm512_permutex2var_pd(_mm512_loadu_pd(nk_erfc_f[k]), j, _mm512_loadu_pd(nk_erfc_f[k] + 8)));
    __m512d l = _mm512_fmsub_pd(a, a, u); /* u is a * a rounded */
    __m512d e = dexp_512(_mm512_sub_pd(_mm512_setzero_pd(), u));
    e = _mm512_fnmadd_pd(e, l, e);
    *c = _mm512_mul_pd(e, f);
}

__attribute__((target("avx2,fma"))) static inline void erf_parts_256(__m256d a, __m256d *w, __m256d *c)
{
    __m256d u = _mm256_mul_pd(a, a), p = _mm256_set1_pd(nk_erf_p[0]);
    for (int i = 1; i < 11; i++)
        p = _mm256_fmadd_pd(p, u, _mm256_set1_pd(nk_erf_p[i]));
    *w = _mm256_mul_pd(a, p);
    __m256i j = _mm256_and_si256(_mm256_sub_epi64(_mm256_srli_epi64(_mm256_castpd_si256(a), 50), _mm256_set1_epi64x(NK_EF_IDX0)),
                                 _mm256_set1_epi64x(15));
    __m256d s = _mm256_sub_pd(a, _mm256_i64gather_pd(nk_erfc_c, j, 8));
    __m256d f = _mm256_i64gather_pd(nk_erfc_f[0], j, 8);
    for (int k = 1; k < 13; k++)
        f = _mm256_fmadd_pd(f, s, _mm256_i64gather_pd(nk_erfc_f[k], j, 8));
    __m256d l = _mm256_fmsub_pd(a, a, u);
    __m256d e = dexp_256(_mm256_sub_pd(_mm256_setzero_pd(), u));
    e = _mm256_fnmadd_pd(e, l, e);
    *c = _mm256_mul_pd(e, f);
}

__attribute__((target("avx512f"))) static inline __m256 erf8_512(__m256 v)
{
    __m512d d = _mm512_cvtps_pd(v), w, c;
    __m512d a = _mm512_min_pd(_mm512_set1_pd(NK_EF_AMAX), _mm512_abs_pd(d));
    erf_parts_512(a, &w, &c);
    __mmask8 sm = _mm512_cmp_pd_mask(a, _mm512_set1_pd(NK_EF_SMALL), _CMP_LT_OQ);
    __m512d y = _mm512_mask_blend_pd(sm, _mm512_sub_pd(_mm512_set1_pd(1.0), c), w);
    y = _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(y),
                                            _mm512_and_si512(_mm512_castpd_si512(d), _mm512_set1_epi64(INT64_MIN))));
    return _mm512_cvtpd_ps(y);
}

__attribute__((target("avx2,fma"))) static inline __m128 erf4_256(__m128 v)
{
    const __m256d sign = _mm256_set1_pd(-0.0);
    __m256d d = _mm256_cvtps_pd(v), w, c;
    __m256d a = _mm256_min_pd(_mm256_set1_pd(NK_EF_AMAX), _mm256_andnot_pd(sign, d));
    erf_parts_256(a, &w, &c);
    __m256d sm = _mm256_cmp_pd(a, _mm256_set1_pd(NK_EF_SMALL), _CMP_LT_OQ);
    __m256d y = _mm256_blendv_pd(_mm256_sub_pd(_mm256_set1_pd(1.0), c), w, sm);
    return _mm256_cvtpd_ps(_mm256_or_pd(y, _mm256_and_pd(d, sign)));
}

__attribute__((target("avx512f"))) static inline __m256 gelu8_512(__m256 v)
{
    const __m512i sign = _mm512_set1_epi64(INT64_MIN);
    __m512d d = _mm512_max_pd(_mm512_set1_pd(NK_GE_XMIN), _mm512_cvtps_pd(v)), w, c;
    __m512d t = _mm512_mul_pd(_mm512_sub_pd(_mm512_setzero_pd(), d), _mm512_set1_pd(NK_GE_RSQRT2));
    __m512d a = _mm512_min_pd(_mm512_set1_pd(NK_EF_AMAX), _mm512_abs_pd(t));
    erf_parts_512(a, &w, &c);
    /* 1 - erf(t) below 0.75; erfc(a), or 2 - erfc(a) for t < 0, above */
    __m512d ws = _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(w), _mm512_and_si512(_mm512_castpd_si512(t), sign)));
    __m512d es = _mm512_sub_pd(_mm512_set1_pd(1.0), ws);
    __mmask8 neg = _mm512_cmp_pd_mask(t, _mm512_setzero_pd(), _CMP_LT_OQ);
    __m512d eb = _mm512_mask_blend_pd(neg, c, _mm512_sub_pd(_mm512_set1_pd(2.0), c));
    __mmask8 sm = _mm512_cmp_pd_mask(a, _mm512_set1_pd(NK_EF_SMALL), _CMP_LT_OQ);
    __m512d e = _mm512_mask_blend_pd(sm, eb, es);
    return _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(0.5), d), e));
}

__attribute__((target("avx2,fma"))) static inline __m128 gelu4_256(__m128 v)
{
    const __m256d sign = _mm256_set1_pd(-0.0), zero = _mm256_setzero_pd();
    __m256d d = _mm256_max_pd(_mm256_set1_pd(NK_GE_XMIN), _mm256_cvtps_pd(v)), w, c;
    __m256d t = _mm256_mul_pd(_mm256_sub_pd(zero, d), _mm256_set1_pd(NK_GE_RSQRT2));
    __m256d a = _mm256_min_pd(_mm256_set1_pd(NK_EF_AMAX), _mm256_andnot_pd(sign, t));
    erf_parts_256(a, &w, &c);
    __m256d es = _mm256_sub_pd(_mm256_set1_pd(1.0), _mm256_or_pd(w, _mm256_and_pd(t, sign)));
    __m256d eb = _mm256_blendv_pd(c, _mm256_sub_pd(_mm256_set1_pd(2.0), c), _mm256_cmp_pd(t, zero, _CMP_LT_OQ));
    __m256d e = _mm256_blendv_pd(eb, es, _mm256_cmp_pd(a, _mm256_set1_pd(NK_EF_SMALL), _CMP_LT_OQ));
    return _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(0.5), d), e));
}

/* ---- mish in double: x tanh(softplus(x)) = x n / (n + 2), n = u (u + 2)
 *
 * With u = exp(x), exp(softplus(x)) = 1 + u, so tanh(softplus(x)) = ((1 +
 * u)^2 - 1) / ((1 + u)^2 + 1) = n / (n + 2): one exp (sigmoid's) and one
 * division, no cancellation for either sign of x, evaluated in double and
 * rounded once (within 0.5 ulp and a hair of the scalar composition, whose
 * own libm exp, log1p and tanh are each within an ulp of double). x is
 * raised to -110 first (mish rounds to -0 below -108.67, and x n / (n + 2)
 * is -2^-151.9 at -110, so -inf gives -0 as the scalar code does), exp's
 * argument is clamped to 40 (n / (n + 2) is 1 in double above 19.07, so
 * large x give x and +inf +inf). NaN stays NaN, -0 gives -0. */
#define NK_MI_XMIN (-110.0)
#define NK_MI_ZMAX 40.0

static double mish_s(double d)
{
    d = NK_MI_XMIN > d ? NK_MI_XMIN : d; /* (a NaN stays) */
    double z = NK_MI_ZMAX < d ? NK_MI_ZMAX : d;
    double u = dexp_s(z), n = u * (u + 2.0);
    return d * (n / (n + 2.0));
}

static void mish_sse2(float *y, const float *x, int64_t n, float sc, float bi)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)mish_s(aff(x[i], sc, bi));
}

__attribute__((target("avx512f"))) static inline __m256 mish8_512(__m256 v)
{
    const __m512d two = _mm512_set1_pd(2.0);
    __m512d d = _mm512_max_pd(_mm512_set1_pd(NK_MI_XMIN), _mm512_cvtps_pd(v));
    __m512d u = dexp_512(_mm512_min_pd(_mm512_set1_pd(NK_MI_ZMAX), d));
    __m512d n = _mm512_mul_pd(u, _mm512_add_pd(u, two));
    return _mm512_cvtpd_ps(_mm512_mul_pd(d, _mm512_div_pd(n, _mm512_add_pd(n, two))));
}

__attribute__((target("avx2,fma"))) static inline __m128 mish4_256(__m128 v)
{
    const __m256d two = _mm256_set1_pd(2.0);
    __m256d d = _mm256_max_pd(_mm256_set1_pd(NK_MI_XMIN), _mm256_cvtps_pd(v));
    __m256d u = dexp_256(_mm256_min_pd(_mm256_set1_pd(NK_MI_ZMAX), d));
    __m256d n = _mm256_mul_pd(u, _mm256_add_pd(u, two));
    return _mm256_cvtpd_ps(_mm256_mul_pd(d, _mm256_div_pd(n, _mm256_add_pd(n, two))));
}

/* The loops: 8 (AVX-512) or 4 (AVX2) elements at a time, the tail through a
 * padded vector. */
#define NK_D_LOOPS(f)                                                                           \
    __attribute__((target("avx512f"))) static void f##_avx512(float *y, const float *x, int64_t n, float sc, float bi) \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + 8 <= n; i += 8)                                                              \
            _mm256_storeu_ps(y + i, f##8_512(AFF256(_mm256_loadu_ps(x + i))));                  \
        if (i < n) {                                                                            \
            float t[8] = {0};                                                                   \
            memcpy(t, x + i, (size_t)(n - i) * sizeof *t);                                      \
            _mm256_storeu_ps(t, f##8_512(AFF256(_mm256_loadu_ps(t))));                          \
            memcpy(y + i, t, (size_t)(n - i) * sizeof *t);                                      \
        }                                                                                       \
    }                                                                                           \
    __attribute__((target("avx2,fma"))) static void f##_avx2(float *y, const float *x, int64_t n, float sc, float bi) \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + 4 <= n; i += 4)                                                              \
            _mm_storeu_ps(y + i, f##4_256(AFF128(_mm_loadu_ps(x + i))));                        \
        if (i < n) {                                                                            \
            float t[4] = {0};                                                                   \
            memcpy(t, x + i, (size_t)(n - i) * sizeof *t);                                      \
            _mm_storeu_ps(t, f##4_256(AFF128(_mm_loadu_ps(t))));                                \
            memcpy(y + i, t, (size_t)(n - i) * sizeof *t);                                      \
        }                                                                                       \
    }
NK_D_LOOPS(sigmoid)
NK_D_LOOPS(silu)
NK_D_LOOPS(gelut)
NK_D_LOOPS(softplus)
NK_D_LOOPS(erf)
NK_D_LOOPS(gelu)
NK_D_LOOPS(mish)

/* ---- tanh in fp32
 *
 * For |x| < 0.75, tanh(x) = x + x^3 * P(x^2), P of degree 5, minimax for the
 * relative error of tanh (0.03 ulp before rounding); above, tanh(|x|) =
 * 1 - 2 / (E + 1) with E = exp(2|x|) = 2^k * T[j] * (1 + q(r)), 2|x| =
 * (8k + j) * ln2/8 + r, |r| <= ln2/16, T[j] = 2^(j/8) rounded to fp32 and
 * q(r) = expm1(r) by its Taylor polynomial to r^4 (E's error, T[j]'s
 * rounding included, shrinks through 2 / (E + 1)). |x| is clamped to 10 first (tanh
 * rounds to 1 above 9.1), so infinity gives 1 and E never overflows; the
 * sign is put back last (-0 stays -0, NaN stays NaN). Within 1.5 ulp of the
 * exact value: every fp32 input, swept once against libm's double tanh,
 * gives 1.16 ulp at most (tests/unit/test_exec_vmath.c checks the bound on
 * a sample). Twice as fast as tanh in double: fp32 vectors hold twice the
 * lanes. Every tier evaluates both forms with the same operations in the
 * same order and keeps the one for its |x|; SSE2 evaluates only that one,
 * element by element with fmaf(), and so gives the same bits. */
#define NK_FT_POLY 0.75f
#define NK_FT_CLAMP 10.0f
#define NK_FT_MAGIC 0x1.8p23f /* adding it rounds a float below 2^22 to an integer in the low bits */
#define NK_FT_8_LN2 0x1.715476p+3f
#define NK_FT_LN2_8_HI 0x1.62e430p-4f
#define NK_FT_LN2_8_LO (-0x1.05c610p-32f)
/* P(u), highest power first */
static const float nk_tanh_p[6] = {0x1.c75380p-10f, -0x1.f5d34ep-8f, 0x1.5f7856p-6f,
                                   -0x1.b97d3cp-5f, 0x1.110db8p-3f, -0x1.55554ap-2f};
/* 2^(j/8) rounded to fp32, twice over (AVX-512's permute reads 16) */
static const float nk_exp2f_8th[16] = {
    0x1.000000p+0f, 0x1.172b84p+0f, 0x1.306fe0p+0f, 0x1.4bfdaep+0f, 0x1.6a09e6p+0f, 0x1.8ace54p+0f, 0x1.ae89fap+0f, 0x1.d5818ep+0f,
    0x1.000000p+0f, 0x1.172b84p+0f, 0x1.306fe0p+0f, 0x1.4bfdaep+0f, 0x1.6a09e6p+0f, 0x1.8ace54p+0f, 0x1.ae89fap+0f, 0x1.d5818ep+0f,
};
/* (expm1(r) - r) / r^2 = 1/2 + r/6 + r^2/24 (|r| <= ln2/16: r^5/120 < 2^-29) */
#define NK_FT_Q2 0x1.555556p-5f
#define NK_FT_Q1 0x1.555556p-3f

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The scalar form: the reference of the vector ones, and SSE2's loop. */
static float ftanh_s(float x)
{
    float a = fabsf(x), y;
    a = NK_FT_CLAMP < a ? NK_FT_CLAMP : a; /* (a NaN stays) */
    if (a < NK_FT_POLY) {
        float u = a * a, p = nk_tanh_p[0];
        for (int i = 1; i < 6; i++)
            p = fmaf(p, u, nk_tanh_p[i]);
        y = fmaf(a * u, p, a);
    } else {
        float z = a + a;
        float nf = fmaf(z, NK_FT_8_LN2, NK_FT_MAGIC), n = nf - NK_FT_MAGIC;
        float r = fmaf(-n, NK_FT_LN2_8_HI, z);
        r = fmaf(-n, NK_FT_LN2_8_LO, r);
        float q = fmaf(fmaf(NK_FT_Q2, r, NK_FT_Q1), r, 0.5f);
        q = fmaf(q, r * r, r);
        uint32_t nb = f2u(nf) - f2u(NK_FT_MAGIC); /* 2^(nb / 8) = 2^floor(nb / 8) * T[nb % 8] */
        float s = u2f(f2u(nk_exp2f_8th[nb & 7]) + ((nb >> 3) << 23));
        float e = fmaf(s, q, s);
        y = 1.0f - 2.0f / (e + 1.0f);
    }
    return u2f(f2u(y) | (f2u(x) & 0x80000000u));
}

static void tanh_sse2(float *y, const float *x, int64_t n, float sc, float bi)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ftanh_s(aff(x[i], sc, bi));
}

__attribute__((target("avx512f"))) static inline __m512 tanh16_512(__m512 v)
{
    const __m512 magic = _mm512_set1_ps(NK_FT_MAGIC), one = _mm512_set1_ps(1.0f);
    __m512 a = _mm512_min_ps(_mm512_set1_ps(NK_FT_CLAMP), _mm512_abs_ps(v));
    __m512 u = _mm512_mul_ps(a, a), p = _mm512_set1_ps(nk_tanh_p[0]);
    for (int i = 1; i < 6; i++)
        p = _mm512_fmadd_ps(p, u, _mm512_set1_ps(nk_tanh_p[i]));
    __m512 ys = _mm512_fmadd_ps(_mm512_mul_ps(a, u), p, a);
    __m512 z = _mm512_add_ps(a, a);
    __m512 nf = _mm512_fmadd_ps(z, _mm512_set1_ps(NK_FT_8_LN2), magic), n = _mm512_sub_ps(nf, magic);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(NK_FT_LN2_8_HI), z);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(NK_FT_LN2_8_LO), r);
    __m512 q = _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(NK_FT_Q2), r, _mm512_set1_ps(NK_FT_Q1)), r,
                               _mm512_set1_ps(0.5f));
    q = _mm512_fmadd_ps(q, _mm512_mul_ps(r, r), r);
    __m512i nb = _mm512_sub_epi32(_mm512_castps_si512(nf), _mm512_castps_si512(magic));
    __m512 s = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(_mm512_permutexvar_ps(nb, _mm512_loadu_ps(nk_exp2f_8th))),
                                                    _mm512_slli_epi32(_mm512_srli_epi32(nb, 3), 23)));
    __m512 e = _mm512_fmadd_ps(s, q, s);
    __m512 yl = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
    __m512 y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(NK_FT_POLY), _CMP_LT_OQ), yl, ys);
    return _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(y), _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u))));
}

__attribute__((target("avx2,fma"))) static inline __m256 tanh8_256(__m256 v)
{
    const __m256 magic = _mm256_set1_ps(NK_FT_MAGIC), one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    __m256 a = _mm256_min_ps(_mm256_set1_ps(NK_FT_CLAMP), _mm256_andnot_ps(sign, v));
    __m256 u = _mm256_mul_ps(a, a), p = _mm256_set1_ps(nk_tanh_p[0]);
    for (int i = 1; i < 6; i++)
        p = _mm256_fmadd_ps(p, u, _mm256_set1_ps(nk_tanh_p[i]));
    __m256 ys = _mm256_fmadd_ps(_mm256_mul_ps(a, u), p, a);
    __m256 z = _mm256_add_ps(a, a);
    __m256 nf = _mm256_fmadd_ps(z, _mm256_set1_ps(NK_FT_8_LN2), magic), n = _mm256_sub_ps(nf, magic);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(NK_FT_LN2_8_HI), z);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(NK_FT_LN2_8_LO), r);
    __m256 q = _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(NK_FT_Q2), r, _mm256_set1_ps(NK_FT_Q1)), r,
                               _mm256_set1_ps(0.5f));
    q = _mm256_fmadd_ps(q, _mm256_mul_ps(r, r), r);
    __m256i nb = _mm256_sub_epi32(_mm256_castps_si256(nf), _mm256_castps_si256(magic));
    __m256 s = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(_mm256_permutevar8x32_ps(_mm256_loadu_ps(nk_exp2f_8th), nb)),
                                                    _mm256_slli_epi32(_mm256_srli_epi32(nb, 3), 23)));
    __m256 e = _mm256_fmadd_ps(s, q, s);
    __m256 yl = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
    __m256 y = _mm256_blendv_ps(yl, ys, _mm256_cmp_ps(a, _mm256_set1_ps(NK_FT_POLY), _CMP_LT_OQ));
    return _mm256_or_ps(y, _mm256_and_ps(v, sign));
}

/* 16 (AVX-512) or 8 (AVX2) elements at a time, the tail through a masked or
 * padded vector. */
__attribute__((target("avx512f"))) static void tanh_avx512(float *y, const float *x, int64_t n, float sc, float bi)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, tanh16_512(AFF512(_mm512_loadu_ps(x + i))));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, tanh16_512(AFF512(_mm512_maskz_loadu_ps(m, x + i))));
    }
}

__attribute__((target("avx2,fma"))) static void tanh_avx2(float *y, const float *x, int64_t n, float sc, float bi)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, tanh8_256(AFF256(_mm256_loadu_ps(x + i))));
    if (i < n) {
        float t[8] = {0};
        memcpy(t, x + i, (size_t)(n - i) * sizeof *t);
        _mm256_storeu_ps(t, tanh8_256(AFF256(_mm256_loadu_ps(t))));
        memcpy(y + i, t, (size_t)(n - i) * sizeof *t);
    }
}

enum { TIER_SSE2, TIER_AVX2, TIER_AVX512 };

static int tier(void)
{
    static int t = -1; /* racing threads compute the same value */
    if (t < 0) {
        __builtin_cpu_init();
        t = __builtin_cpu_supports("avx512f")                                           ? TIER_AVX512
            : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")             ? TIER_AVX2
                                                                                        : TIER_SSE2;
    }
    return t;
}

static int tier_of(const char *isa)
{
    int t = !strcmp(isa, "avx512f") ? TIER_AVX512 : !strcmp(isa, "avx2") ? TIER_AVX2 : !strcmp(isa, "sse2") ? TIER_SSE2 : -1;
    return t <= tier() ? t : -1;
}

#define NK_VM_PICK(f) (t == TIER_AVX512 ? f##_avx512 : t == TIER_AVX2 ? f##_avx2 : f##_sse2)

static pthread_once_t sleef_once = PTHREAD_ONCE_INIT;
static int sleef_ok;
static char sleef_why[512];

static void sleef_load(void)
{
    void *h = dlopen(NK_SLEEF_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(sleef_why, sizeof sleef_why, "%s", e ? e : NK_SLEEF_LIB);
        return;
    }
    const char *missing = NULL;
#define NK_VM_SYM(f)                                                                          \
    if (!missing && !(sl_##f##16 = dlsym(h, "Sleef_" #f "f16_u10avx512f")))                   \
        missing = "Sleef_" #f "f16_u10avx512f";                                               \
    if (!missing && !(sl_##f##8 = dlsym(h, "Sleef_" #f "f8_u10avx2")))                        \
        missing = "Sleef_" #f "f8_u10avx2";                                                   \
    if (!missing && !(sl_##f##4 = dlsym(h, "Sleef_" #f "f4_u10sse2")))                        \
        missing = "Sleef_" #f "f4_u10sse2";
    NK_VM_FUNCS(NK_VM_SYM)
#undef NK_VM_SYM
    if (missing) {
        snprintf(sleef_why, sizeof sleef_why, "%s: has no %s", NK_SLEEF_LIB, missing);
        dlclose(h);
        return;
    }
    sleef_ok = 1; /* the handle stays open: the entry points are in it */
}

/* The name of activation func when SLEEF computes it, else NULL. */
static const char *sleef_func(int func)
{
    switch (func) {
    case NK_ACT_EXP: return "exp";
    case NK_ACT_LOG: return "log";
    case NK_ACT_SIN: return "sin";
    case NK_ACT_COS: return "cos";
    case NK_ACT_ARCTAN: return "arctan";
    default: return NULL;
    }
}

int nk__vmath_missing(int func)
{
    const char *name = sleef_func(func);
    if (!name)
        return 0;
    pthread_once(&sleef_once, sleef_load);
    if (!sleef_ok)
        nk__error_set("the %s needs SLEEF, which could not be loaded: %s", name, sleef_why);
    return !sleef_ok;
}

static nk__vfn pick(int func, int t)
{
    if (t < 0 || nk__vmath_missing(func))
        return NULL;
    switch (func) {
    case NK_ACT_EXP: return NK_VM_PICK(exp);
    case NK_ACT_LOG: return NK_VM_PICK(log);
    case NK_ACT_TANH: return NK_VM_PICK(tanh);
    case NK_ACT_SIGMOID: return NK_VM_PICK(sigmoid);
    case NK_ACT_SILU: return NK_VM_PICK(silu);
    case NK_ACT_GELU_APPRX_TANH: return NK_VM_PICK(gelut);
    case NK_ACT_SOFTPLUS: return NK_VM_PICK(softplus);
    case NK_ACT_ERF: return NK_VM_PICK(erf);
    case NK_ACT_GELU: return NK_VM_PICK(gelu);
    case NK_ACT_MISH: return NK_VM_PICK(mish);
    case NK_ACT_SIN: return NK_VM_PICK(sin);
    case NK_ACT_COS: return NK_VM_PICK(cos);
    case NK_ACT_ARCTAN: return NK_VM_PICK(atan);
    default: return NULL;
    }
}

nk__vfn nk__vmath_f32(int func) { return pick(func, tier()); }

nk__vfn nk__vmath_f32_on(int func, const char *isa) { return pick(func, tier_of(isa)); }

const char *nk__vmath_isa(void)
{
    return tier() == TIER_AVX512 ? "avx512f" : tier() == TIER_AVX2 ? "avx2" : "sse2";
}

#else /* no x86-64 SLEEF entry points: the executor's scalar functions */

nk__vfn nk__vmath_f32(int func)
{
    (void)func;
    return NULL;
}

nk__vfn nk__vmath_f32_on(int func, const char *isa)
{
    (void)func;
    (void)isa;
    return NULL;
}

const char *nk__vmath_isa(void) { return "none"; }

int nk__vmath_missing(int func)
{
    (void)func;
    return 0;
}

#endif
