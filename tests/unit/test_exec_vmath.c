/*
 * test_exec_vmath.c - the executor's vectorised fp32 functions (SLEEF's u10
 * functions, exec/vmath.c) stay within 1.0 ulp of the exact value: a sweep
 * over fp32 bit patterns of every sign and exponent, against libm's double
 * functions rounded to the nearest fp32 ulp measure, plus the special values.
 */
#include "test.h"

#include "exec/vmath.h"
#include "nklab.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The fp32 ulp at magnitude |r|: 2^(e - 23) for normal values, 2^-149 below. */
static double ulp32(double r)
{
    r = fabs(r);
    if (r < FLT_MIN)
        return ldexp(1.0, -149);
    int e;
    frexp(r, &e); /* r = m * 2^e, m in [0.5, 1) */
    return ldexp(1.0, e - 1 - 23);
}

/* Largest error in fp32 ulps of f over the sweep (and counts disagreements
 * on NaN, infinity and overflow as infinitely wrong). */
static double max_ulp(nk__vfn f, double (*ref)(double), float *worst_x)
{
    enum { N = 4096 };
    static float x[N], y[N];
    double worst = 0;
    uint64_t u = 0;
    while (u < (1ull << 32)) {
        int n = 0;
        for (; n < N && u < (1ull << 32); n++, u += 4093) /* a prime step: every exponent, many mantissas */
            x[n] = u2f((uint32_t)u);
        f(y, x, n);
        for (int i = 0; i < n; i++) {
            double r = ref((double)x[i]), e;
            if (isnan(r) || isnan(y[i]))
                e = isnan(r) && isnan(y[i]) ? 0 : INFINITY;
            else if (fabs(r) > FLT_MAX) /* the exact value overflows fp32: infinity, or FLT_MAX when it rounds down */
                e = (float)r == y[i] ? 0 : INFINITY;
            else if (isinf(y[i]))
                e = INFINITY;
            else
                e = fabs((double)y[i] - r) / ulp32(r);
            if (e > worst) {
                worst = e;
                *worst_x = x[i];
            }
        }
    }
    return worst;
}

static const struct {
    int func;
    const char *name;
    double (*ref)(double);
} funcs[] = {
    {NK_ACT_EXP, "exp", exp}, {NK_ACT_LOG, "log", log},   {NK_ACT_TANH, "tanh", tanh},
    {NK_ACT_SIN, "sin", sin}, {NK_ACT_COS, "cos", cos},   {NK_ACT_ARCTAN, "arctan", atan},
};

TEST(exec_vmath_within_one_ulp)
{
    if (!strcmp(nk__vmath_isa(), "none"))
        return; /* no vectorised functions here: the scalar ones are libm's */
    for (size_t k = 0; k < sizeof funcs / sizeof funcs[0]; k++) {
        nk__vfn f = nk__vmath_f32(funcs[k].func);
        CHECK(f != NULL);
        if (!f)
            continue;
        float wx = 0;
        double e = max_ulp(f, funcs[k].ref, &wx);
        if (getenv("NK_TEST_VERBOSE"))
            printf("  %-6s max %.7f ulp (at %.9g) on %s\n", funcs[k].name, e, (double)wx, nk__vmath_isa());
        /* 1.0 ulp, and a hair for the exact value's own distance from an fp32
         * (tanh of tiny x is x - x^3/3: one ulp above x is 1.00000002 ulp off) */
        if (!(e <= 1.0 + 1e-6))
            nk_test_fail(__FILE__, __LINE__, "%s: %.7f ulp at x = %.9g (bound 1.0)", funcs[k].name, e, (double)wx);
    }
}

/* Special values, and a tail shorter than a vector computed in place. */
TEST(exec_vmath_special_values_and_tails)
{
    if (!strcmp(nk__vmath_isa(), "none"))
        return;
    float x[7] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -88.0f}, y[7];
    nk__vfn e = nk__vmath_f32(NK_ACT_EXP), t = nk__vmath_f32(NK_ACT_TANH), l = nk__vmath_f32(NK_ACT_LOG);
    e(y, x, 7);
    CHECK(y[0] == 1.0f && y[1] == 1.0f && y[2] == INFINITY && y[3] == 0.0f && isnan(y[4]));
    CHECK_NEAR(y[5], exp(1.0), 2e-7, 0);
    CHECK_NEAR(y[6], exp(-88.0), 2e-7, 0);
    t(y, x, 7);
    CHECK(y[0] == 0.0f && !signbit(y[0]) && y[1] == 0.0f && signbit(y[1]));
    CHECK(y[2] == 1.0f && y[3] == -1.0f && isnan(y[4]));
    l(y, x, 7);
    CHECK(y[0] == -INFINITY && y[1] == -INFINITY && y[2] == INFINITY && isnan(y[3]) && isnan(y[4]) && y[5] == 0.0f);
    float v[5] = {1, 2, 3, 4, 5};
    e(v, v, 5); /* in place, n not a multiple of any vector width */
    for (int i = 0; i < 5; i++)
        CHECK_NEAR(v[i], exp(i + 1.0), 2e-7, 0);
    CHECK(nk__vmath_f32(NK_ACT_SIGMOID) == NULL); /* composite functions stay in double */
    CHECK(nk__vmath_f32(NK_ACT_ERF) == NULL);
}
