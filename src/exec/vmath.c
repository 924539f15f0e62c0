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
 * is compiled with -mavx.
 */
#include "exec/vmath.h"
#include "nklab.h"

#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define NK_VM_FUNCS(X) X(exp) X(log) X(tanh) X(sin) X(cos) X(atan)

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

#define NK_VM_PICK(f) \
    (tier() == TIER_AVX512 ? f##_avx512 : tier() == TIER_AVX2 ? f##_avx2 : f##_sse2)

nk__vfn nk__vmath_f32(int func)
{
    switch (func) {
    case NK_ACT_EXP: return NK_VM_PICK(exp);
    case NK_ACT_LOG: return NK_VM_PICK(log);
    case NK_ACT_TANH: return NK_VM_PICK(tanh);
    case NK_ACT_SIN: return NK_VM_PICK(sin);
    case NK_ACT_COS: return NK_VM_PICK(cos);
    case NK_ACT_ARCTAN: return NK_VM_PICK(atan);
    default: return NULL;
    }
}

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

const char *nk__vmath_isa(void) { return "none"; }

#endif
