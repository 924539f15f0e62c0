/*
 * vmath.c - SLEEF's vectorised fp32 functions behind one pointer per
 * function (see vmath.h).
 *
 * SLEEF (libsleef, Debian's libsleef-dev) exports each function once per
 * instruction set: Sleef_expf16_u10avx512f, Sleef_expf8_u10avx2,
 * Sleef_expf4_u10sse2, ... ("u10": at most 1.0 ulp of error). The vector
 * types of the wider ones only exist in code compiled for that instruction
 * set, so each tier's loop is compiled with a target attribute and the
 * tier is picked once, from what the processor reports. The prototypes are
 * declared here, as sleef.h only declares the AVX ones when the whole file
 * is compiled with -mavx. tanh and sigmoid are this file's own, in double
 * (SLEEF's tanhf cost three times its expf).
 */
#include "exec/vmath.h"
#include "nklab.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define NK_VM_FUNCS(X) X(exp) X(log) X(sin) X(cos) X(atan)

/* (declared for the instruction set they need, as clang checks the ABI of
 * wide vector arguments against the callee's target too) */
#define NK_VM_DECL(f)                                                              \
    __attribute__((target("avx512f"))) __m512 Sleef_##f##f16_u10avx512f(__m512);   \
    __attribute__((target("avx2,fma"))) __m256 Sleef_##f##f8_u10avx2(__m256);      \
    __m128 Sleef_##f##f4_u10sse2(__m128);
NK_VM_FUNCS(NK_VM_DECL)

/* One loop per function and tier; the tail goes through a padded vector
 * (masked loads and stores on AVX-512), so no element is computed twice and
 * none outside [0, n) is read. */
#define NK_VM_LOOPS(f)                                                                          \
    __attribute__((target("avx512f"))) static void f##_avx512(float *y, const float *x, int64_t n) \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + 16 <= n; i += 16)                                                            \
            _mm512_storeu_ps(y + i, Sleef_##f##f16_u10avx512f(_mm512_loadu_ps(x + i)));         \
        if (i < n) {                                                                            \
            __mmask16 m = (__mmask16)((1u << (n - i)) - 1);                                     \
            _mm512_mask_storeu_ps(y + i, m, Sleef_##f##f16_u10avx512f(_mm512_maskz_loadu_ps(m, x + i))); \
        }                                                                                       \
    }                                                                                           \
    __attribute__((target("avx2,fma"))) static void f##_avx2(float *y, const float *x, int64_t n) \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + 8 <= n; i += 8)                                                              \
            _mm256_storeu_ps(y + i, Sleef_##f##f8_u10avx2(_mm256_loadu_ps(x + i)));             \
        if (i < n) {                                                                            \
            float t[8] = {0};                                                                   \
            memcpy(t, x + i, (size_t)(n - i) * sizeof *t);                                      \
            _mm256_storeu_ps(t, Sleef_##f##f8_u10avx2(_mm256_loadu_ps(t)));                     \
            memcpy(y + i, t, (size_t)(n - i) * sizeof *t);                                      \
        }                                                                                       \
    }                                                                                           \
    static void f##_sse2(float *y, const float *x, int64_t n)                                   \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + 4 <= n; i += 4)                                                              \
            _mm_storeu_ps(y + i, Sleef_##f##f4_u10sse2(_mm_loadu_ps(x + i)));                   \
        if (i < n) {                                                                            \
            float t[4] = {0};                                                                   \
            memcpy(t, x + i, (size_t)(n - i) * sizeof *t);                                      \
            _mm_storeu_ps(t, Sleef_##f##f4_u10sse2(_mm_loadu_ps(t)));                           \
            memcpy(y + i, t, (size_t)(n - i) * sizeof *t);                                      \
        }                                                                                       \
    }
NK_VM_FUNCS(NK_VM_LOOPS)

/* ---- tanh and sigmoid in double: exp on vectors of doubles
 *
 * For fp32 x, tanh(x) = t / (t + 2) with t = expm1(2|x|) (the sign put back
 * after), and sigmoid(x) = 1 / (1 + exp(-x)), are evaluated in double and
 * rounded once to fp32, so they are within 0.5 ulp and a hair. exp(z) is
 * 2^k * T[j] * (1 + q(r)) with z = (8k + j) * ln2/8 + r, |r| <= ln2/16, T[j] =
 * 2^(j/8) from an 8-entry table and q(r) = expm1(r) by its Taylor
 * polynomial to r^8 (truncated below 2^-54 of q), and expm1(z) = sT * q +
 * (sT - 1) with sT = 2^k * T[j] (sT - 1 is exact), free of cancellation near
 * 0. Every tier evaluates the same operations in the same order (the fused
 * multiply-adds included), so each gives the same bits; SSE2 does it one
 * element at a time with fma(). */
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
/* |tanh(x)| rounds to 1 above 9.1; sigmoid(x) to 1 above 17.4 and to 0 below -104 */
#define NK_TANH_CLAMP 10.0
#define NK_SIG_ZMIN (-20.0)
#define NK_SIG_ZMAX 110.0

/* The scalar form: the reference of the vector ones, and SSE2's loop. */
static double dexp_s(double z, int em1)
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
    return em1 ? fma(s, q, s - 1.0) : fma(s, q, s);
}

static void tanh_sse2(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double a = fabs((double)x[i]);
        a = NK_TANH_CLAMP < a ? NK_TANH_CLAMP : a; /* (a NaN stays) */
        double t = dexp_s(a + a, 1);
        float f = (float)(t / (t + 2.0));
        y[i] = signbit(x[i]) ? -f : f;
    }
}

static void sigmoid_sse2(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double z = -(double)x[i];
        z = NK_SIG_ZMIN > z ? NK_SIG_ZMIN : z;
        z = NK_SIG_ZMAX < z ? NK_SIG_ZMAX : z;
        y[i] = (float)(1.0 / (1.0 + dexp_s(z, 0)));
    }
}

__attribute__((target("avx512f"))) static inline __m512d dexp_512(__m512d z, int em1)
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
    return em1 ? _mm512_fmadd_pd(s, q, _mm512_sub_pd(s, _mm512_set1_pd(1.0))) : _mm512_fmadd_pd(s, q, s);
}

__attribute__((target("avx2,fma"))) static inline __m256d dexp_256(__m256d z, int em1)
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
    return em1 ? _mm256_fmadd_pd(s, q, _mm256_sub_pd(s, _mm256_set1_pd(1.0))) : _mm256_fmadd_pd(s, q, s);
}

__attribute__((target("avx512f"))) static inline __m256 tanh8_512(__m256 v)
{
    __m512d a = _mm512_min_pd(_mm512_set1_pd(NK_TANH_CLAMP), _mm512_abs_pd(_mm512_cvtps_pd(v)));
    __m512d t = dexp_512(_mm512_add_pd(a, a), 1);
    __m256 f = _mm512_cvtpd_ps(_mm512_div_pd(t, _mm512_add_pd(t, _mm512_set1_pd(2.0))));
    return _mm256_or_ps(f, _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));
}

__attribute__((target("avx512f"))) static inline __m256 sigmoid8_512(__m256 v)
{
    __m512d z = _mm512_sub_pd(_mm512_setzero_pd(), _mm512_cvtps_pd(v));
    z = _mm512_min_pd(_mm512_set1_pd(NK_SIG_ZMAX), _mm512_max_pd(_mm512_set1_pd(NK_SIG_ZMIN), z));
    return _mm512_cvtpd_ps(_mm512_div_pd(_mm512_set1_pd(1.0), _mm512_add_pd(_mm512_set1_pd(1.0), dexp_512(z, 0))));
}

__attribute__((target("avx2,fma"))) static inline __m128 tanh4_256(__m128 v)
{
    __m256d a = _mm256_min_pd(_mm256_set1_pd(NK_TANH_CLAMP),
                              _mm256_andnot_pd(_mm256_set1_pd(-0.0), _mm256_cvtps_pd(v)));
    __m256d t = dexp_256(_mm256_add_pd(a, a), 1);
    __m128 f = _mm256_cvtpd_ps(_mm256_div_pd(t, _mm256_add_pd(t, _mm256_set1_pd(2.0))));
    return _mm_or_ps(f, _mm_and_ps(v, _mm_set1_ps(-0.0f)));
}

__attribute__((target("avx2,fma"))) static inline __m128 sigmoid4_256(__m128 v)
{
    __m256d z = _mm256_sub_pd(_mm256_setzero_pd(), _mm256_cvtps_pd(v));
    z = _mm256_min_pd(_mm256_set1_pd(NK_SIG_ZMAX), _mm256_max_pd(_mm256_set1_pd(NK_SIG_ZMIN), z));
    return _mm256_cvtpd_ps(_mm256_div_pd(_mm256_set1_pd(1.0), _mm256_add_pd(_mm256_set1_pd(1.0), dexp_256(z, 0))));
}

/* The loops: 8 (AVX-512) or 4 (AVX2) elements at a time, the tail through a
 * padded vector. */
#define NK_D_LOOPS(f)                                                                           \
    __attribute__((target("avx512f"))) static void f##_avx512(float *y, const float *x, int64_t n) \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + 8 <= n; i += 8)                                                              \
            _mm256_storeu_ps(y + i, f##8_512(_mm256_loadu_ps(x + i)));                          \
        if (i < n) {                                                                            \
            float t[8] = {0};                                                                   \
            memcpy(t, x + i, (size_t)(n - i) * sizeof *t);                                      \
            _mm256_storeu_ps(t, f##8_512(_mm256_loadu_ps(t)));                                  \
            memcpy(y + i, t, (size_t)(n - i) * sizeof *t);                                      \
        }                                                                                       \
    }                                                                                           \
    __attribute__((target("avx2,fma"))) static void f##_avx2(float *y, const float *x, int64_t n) \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + 4 <= n; i += 4)                                                              \
            _mm_storeu_ps(y + i, f##4_256(_mm_loadu_ps(x + i)));                                \
        if (i < n) {                                                                            \
            float t[4] = {0};                                                                   \
            memcpy(t, x + i, (size_t)(n - i) * sizeof *t);                                      \
            _mm_storeu_ps(t, f##4_256(_mm_loadu_ps(t)));                                        \
            memcpy(y + i, t, (size_t)(n - i) * sizeof *t);                                      \
        }                                                                                       \
    }
NK_D_LOOPS(tanh)
NK_D_LOOPS(sigmoid)

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

static nk__vfn pick(int func, int t)
{
    if (t < 0)
        return NULL;
    switch (func) {
    case NK_ACT_EXP: return NK_VM_PICK(exp);
    case NK_ACT_LOG: return NK_VM_PICK(log);
    case NK_ACT_TANH: return NK_VM_PICK(tanh);
    case NK_ACT_SIGMOID: return NK_VM_PICK(sigmoid);
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

#endif
