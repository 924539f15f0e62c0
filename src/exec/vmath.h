/*
 * vmath.h - vectorised fp32 math for the executor's activation functions
 * (src/exec/vmath.c): SLEEF's 1.0-ulp functions, an fp32 tanh and
 * double-precision sigmoid, silu, gelu_apprx_tanh, softplus, erf, gelu and
 * mish on the widest vectors the machine runs (AVX-512F, AVX2 + FMA, else
 * SSE2), chosen once per process.
 */
#ifndef NK_VMATH_H
#define NK_VMATH_H

#include <stdint.h>

/* y[i] = f(x[i] * scale + bias) for i < n, the product rounded to fp32
 * before the bias is added (scale 1 and bias -0 give f(x[i])); y may be x
 * (not a partial overlap). */
typedef void (*nk__vfn)(float *y, const float *x, int64_t n, float scale, float bias);

/* The vectorised fp32 function of activation func (an nk_act): exp, log,
 * sin, cos, arctan (SLEEF's u10 functions: within 1.0 ulp of the exact
 * value), tanh (in fp32: within 1.5 ulp), sigmoid, silu, gelu_apprx_tanh,
 * softplus, erf, gelu and mish (evaluated in double and rounded once: within
 * 0.5 ulp and a hair); NULL for the others (and on machines without the
 * x86-64 entry points), which the executor evaluates itself. The sweep in
 * tests/unit/test_exec_vmath.c measures them: exp 0.94, log 0.58, sin 0.78,
 * cos 0.93, arctan 0.84, tanh 1.16, the double-precision ones 0.5 on
 * AVX-512. erf is vmath.c's own: SLEEF's erff reaches 1.07 ulp near
 * FLT_MIN. */
nk__vfn nk__vmath_f32(int func);

/* The same function on the vectors isa names ("avx512f", "avx2", "sse2"),
 * NULL if this processor lacks them: for tests comparing the tiers (tanh and
 * the double-precision functions give the same bits on each). */
nk__vfn nk__vmath_f32_on(int func, const char *isa);

/* SLEEF is loaded when one of its functions (exp, log, sin, cos, arctan)
 * is first asked for. 1 when func is one and it could not be loaded (then
 * nk__vmath_f32 gives NULL, and nk_last_error() says why: the executor
 * fails with NK_EIO rather than give other bits); else 0. */
int nk__vmath_missing(int func);

/* Which vectors nk__vmath_f32's functions use: "avx512f", "avx2", "sse2", or
 * "none". */
const char *nk__vmath_isa(void);

#endif
