/*
 * test_exec_vmath.c - the executor's vectorised fp32 functions (exec/vmath.c)
 * stay within their bounds of the exact value (SLEEF's u10 functions 1.0
 * ulp, tanh 1.5, the double-precision ones 0.5: sigmoid, silu,
 * gelu_apprx_tanh, softplus, erf, gelu, mish): a sweep over fp32 bit
 * patterns of every sign and exponent, against libm's double functions
 * rounded to the nearest fp32 ulp measure, plus the special values.
 */
#include "test.h"

#include "exec/vmath.h"
#include "nklab.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* scale and bias of the identity: x * 1 + -0 is x, -0 included */
#define ID 1.0f, -0.0f

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
        f(y, x, n, ID);
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

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
/* silu and gelu_apprx_tanh as the executor's scalar functions give them
 * (the limit -0 at -inf) */
static double silu(double x) { return x == -INFINITY ? -0.0 : x / (1.0 + exp(-x)); }
static double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double gelu_tanh(double x)
{
    return x == -INFINITY ? -0.0 : x / (1.0 + exp(-2.0 * 0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
/* gelu and mish as the executor's scalar functions give them */
static double gelu(double x) { return x == -INFINITY ? -0.0 : 0.5 * x * erfc(-x * 0.70710678118654752440); }
static double mish(double x) { return x == -INFINITY ? -0.0 : x * tanh(softplus(x)); }

/* SLEEF's functions within 1.0 ulp; sigmoid, evaluated in double and
 * rounded once, within 0.5 ulp and the double evaluation's hair (silu,
 * gelu_apprx_tanh, softplus, erf, gelu and mish too, the same way); tanh, in
 * fp32 (exec/vmath.c), within 1.5 ulp (every fp32 input, swept once outside
 * the suite, gives 1.16 at most) */
static const struct {
    int func;
    const char *name;
    double (*ref)(double);
    double bound;
} funcs[] = {
    {NK_ACT_EXP, "exp", exp, 1.0},       {NK_ACT_LOG, "log", log, 1.0},
    {NK_ACT_TANH, "tanh", tanh, 1.5},    {NK_ACT_SIGMOID, "sigmoid", sigmoid, 0.5},
    {NK_ACT_SIN, "sin", sin, 1.0},       {NK_ACT_COS, "cos", cos, 1.0},
    {NK_ACT_ARCTAN, "arctan", atan, 1.0},
    {NK_ACT_SILU, "silu", silu, 0.5},    {NK_ACT_GELU_APPRX_TANH, "gelu_tanh", gelu_tanh, 0.5},
    {NK_ACT_SOFTPLUS, "softplus", softplus, 0.5},
    {NK_ACT_ERF, "erf", erf, 0.5},       {NK_ACT_GELU, "gelu", gelu, 0.5},
    {NK_ACT_MISH, "mish", mish, 0.5},
};

TEST(exec_vmath_within_stated_ulp)
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
            printf("  %-9s max %.7f ulp (at %.9g) on %s\n", funcs[k].name, e, (double)wx, nk__vmath_isa());
        /* the bound, and a hair for the reference's own distance from the
         * exact value and from an fp32 */
        if (!(e <= funcs[k].bound + 1e-6))
            nk_test_fail(__FILE__, __LINE__, "%s: %.7f ulp at x = %.9g (bound %.1f)", funcs[k].name, e, (double)wx,
                         funcs[k].bound);
    }
}

/* Special values, and a tail shorter than a vector computed in place. */
TEST(exec_vmath_special_values_and_tails)
{
    if (!strcmp(nk__vmath_isa(), "none"))
        return;
    float x[7] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -88.0f}, y[7];
    nk__vfn e = nk__vmath_f32(NK_ACT_EXP), t = nk__vmath_f32(NK_ACT_TANH), l = nk__vmath_f32(NK_ACT_LOG);
    e(y, x, 7, ID);
    CHECK(y[0] == 1.0f && y[1] == 1.0f && y[2] == INFINITY && y[3] == 0.0f && isnan(y[4]));
    CHECK_NEAR(y[5], exp(1.0), 2e-7, 0);
    CHECK_NEAR(y[6], exp(-88.0), 2e-7, 0);
    t(y, x, 7, ID);
    CHECK(y[0] == 0.0f && !signbit(y[0]) && y[1] == 0.0f && signbit(y[1]));
    CHECK(y[2] == 1.0f && y[3] == -1.0f && isnan(y[4]));
    l(y, x, 7, ID);
    CHECK(y[0] == -INFINITY && y[1] == -INFINITY && y[2] == INFINITY && isnan(y[3]) && isnan(y[4]) && y[5] == 0.0f);
    float v[5] = {1, 2, 3, 4, 5};
    e(v, v, 5, ID); /* in place, n not a multiple of any vector width */
    for (int i = 0; i < 5; i++)
        CHECK_NEAR(v[i], exp(i + 1.0), 2e-7, 0);
    nk__vfn sg = nk__vmath_f32(NK_ACT_SIGMOID);
    sg(y, x, 7, ID);
    CHECK(y[0] == 0.5f && y[1] == 0.5f && y[2] == 1.0f && y[3] == 0.0f && isnan(y[4]));
    CHECK(y[5] == (float)sigmoid(1.0) && y[6] == (float)sigmoid(-88.0) && y[6] > 0);
    float big[4] = {20.0f, -103.0f, -104.5f, 9.5f}, by[4];
    sg(by, big, 4, ID);
    CHECK(by[0] == 1.0f && by[1] == (float)sigmoid(-103.0) && by[1] > 0 && by[2] == 0.0f);
    t(by, big, 4, ID);
    CHECK(by[0] == 1.0f && by[1] == -1.0f && by[3] == 1.0f);
    /* tanh: tiny inputs (subnormal ones included) are their own tanh; both
     * sides of the switch from the polynomial to the exp form */
    float tx[6] = {FLT_TRUE_MIN, -1e-20f, -0x1p-13f, nextafterf(0.75f, 0.0f), 0.75f, -0.75f}, ty[6];
    t(ty, tx, 6, ID);
    CHECK(ty[0] == tx[0] && ty[1] == tx[1] && ty[2] == tx[2]);
    for (int i = 3; i < 6; i++)
        CHECK_NEAR(ty[i], tanh((double)tx[i]), 2e-7, 0);
    CHECK(ty[3] < ty[4] && ty[5] == -ty[4]);
    /* silu and gelu_apprx_tanh: -0, the limits at the infinities, NaN, both
     * ends of the clamps, and large x giving x exactly */
    nk__vfn gs[2] = {nk__vmath_f32(NK_ACT_SILU), nk__vmath_f32(NK_ACT_GELU_APPRX_TANH)};
    double (*gr[2])(double) = {silu, gelu_tanh};
    for (int k = 0; k < 2; k++) {
        gs[k](y, x, 7, ID);
        CHECK(y[0] == 0.0f && !signbit(y[0]) && y[1] == 0.0f && signbit(y[1]));
        CHECK(y[2] == INFINITY && y[3] == 0.0f && signbit(y[3]) && isnan(y[4]));
        CHECK(y[5] == (float)gr[k](1.0) && y[6] == (float)gr[k](-88.0));
        float gx[8] = {40.0f, 1e30f, FLT_MAX, -FLT_MAX, -700.5f, -103.0f, -10.0f, 9.0f}, gy[8];
        gs[k](gy, gx, 8, ID);
        CHECK(gy[0] == 40.0f && gy[1] == 1e30f && gy[2] == FLT_MAX && gy[3] == 0.0f && signbit(gy[3]));
        CHECK(gy[4] == 0.0f && signbit(gy[4]));
        for (int i = 5; i < 8; i++)
            CHECK(gy[i] == (float)gr[k](gx[i]));
    }
    /* softplus: ln2 at +-0, the limits at the infinities, NaN, both sides of
     * the switch of log1p's forms (exp(-|x|) = sqrt(2) - 1 at |x| = 0.8814),
     * the clamp, and large x giving x */
    nk__vfn sp = nk__vmath_f32(NK_ACT_SOFTPLUS);
    sp(y, x, 7, ID);
    CHECK(y[0] == (float)M_LN2 && y[1] == (float)M_LN2 && y[2] == INFINITY && y[3] == 0.0f && !signbit(y[3]));
    CHECK(isnan(y[4]) && y[5] == (float)softplus(1.0) && y[6] == (float)softplus(-88.0) && y[6] > 0);
    float px[9] = {0.88137f, 0.88138f, -0.88137f, -0.88138f, -103.0f, -200.0f, 17.0f, 1e30f, -1e-30f}, py[9];
    sp(py, px, 9, ID);
    for (int i = 0; i < 9; i++)
        CHECK(py[i] == (float)softplus(px[i]));
    CHECK(py[4] > 0 && py[5] == 0.0f && py[7] == 1e30f);
    /* erf: the sign of +-0, +-1 at the infinities, NaN; tiny inputs
     * (subnormal ones included: 2 x / sqrt(pi)); both sides of the switch
     * from the polynomial to exp(-x^2) F(x) at 0.75 and of every boundary
     * of F's intervals; 1 from 3.92 on, to the clamp (11.5) and beyond */
    nk__vfn ef = nk__vmath_f32(NK_ACT_ERF);
    ef(y, x, 7, ID);
    CHECK(y[0] == 0.0f && !signbit(y[0]) && y[1] == 0.0f && signbit(y[1]));
    CHECK(y[2] == 1.0f && y[3] == -1.0f && isnan(y[4]) && y[5] == (float)erf(1.0) && y[6] == -1.0f);
    static const float eb[] = {0.75f, 0.875f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 8.0f, 10.0f, 11.5f};
    enum { NB = sizeof eb / sizeof eb[0] };
    float ex[4 * NB + 6], ey[4 * NB + 6];
    for (int i = 0; i < NB; i++) {
        ex[4 * i] = eb[i];
        ex[4 * i + 1] = nextafterf(eb[i], 0.0f);
        ex[4 * i + 2] = -eb[i];
        ex[4 * i + 3] = -nextafterf(eb[i], 0.0f);
    }
    float et[6] = {FLT_TRUE_MIN, -0x1p-140f, FLT_MIN, -1e-20f, 3.9f, 1e30f};
    memcpy(ex + 4 * NB, et, sizeof et);
    ef(ey, ex, 4 * NB + 6, ID);
    for (int i = 0; i < 4 * NB + 6; i++)
        if (ey[i] != (float)erf(ex[i]))
            nk_test_fail(__FILE__, __LINE__, "erf(%a) = %a, libm %a", (double)ex[i], (double)ey[i], (double)(float)erf(ex[i]));
    CHECK(ey[4 * NB] > 0 && ey[4 * NB + 1] < 0 && ey[4 * NB + 4] < 1.0f && ey[4 * NB + 5] == 1.0f);
    /* gelu: +-0, +inf, -inf giving -0, NaN; next to the switches (erf's
     * points times sqrt2, where -x / sqrt2 is near them); results below
     * FLT_MIN near -14; the clamp at -16 and the huge ones (x, or -0) */
    nk__vfn ge = nk__vmath_f32(NK_ACT_GELU);
    ge(y, x, 7, ID);
    CHECK(y[0] == 0.0f && !signbit(y[0]) && y[1] == 0.0f && signbit(y[1]));
    CHECK(y[2] == INFINITY && y[3] == 0.0f && signbit(y[3]) && isnan(y[4]));
    CHECK(y[5] == (float)gelu(1.0) && y[6] == 0.0f && signbit(y[6]));
    for (int i = 0; i < 4 * NB; i++)
        ex[i] *= (float)M_SQRT2;
    float gt[6] = {-13.5f, -14.1f, -15.9f, -16.5f, 1e30f, -FLT_MAX};
    memcpy(ex + 4 * NB, gt, sizeof gt);
    ge(ey, ex, 4 * NB + 6, ID);
    for (int i = 0; i < 4 * NB + 6; i++)
        if (ey[i] != (float)gelu(ex[i]))
            nk_test_fail(__FILE__, __LINE__, "gelu(%a) = %a, formula %a", (double)ex[i], (double)ey[i],
                         (double)(float)gelu(ex[i]));
    CHECK(ey[4 * NB] < 0 && ey[4 * NB] > -FLT_MIN && ey[4 * NB + 3] == 0.0f && signbit(ey[4 * NB + 3]));
    CHECK(ey[4 * NB + 4] == 1e30f && ey[4 * NB + 5] == 0.0f && signbit(ey[4 * NB + 5]));
    /* mish: +-0, +inf, -inf giving -0, NaN; results below FLT_MIN near -100;
     * the clamps (x at -110, exp's argument at 40) and the huge ones */
    nk__vfn mi = nk__vmath_f32(NK_ACT_MISH);
    mi(y, x, 7, ID);
    CHECK(y[0] == 0.0f && !signbit(y[0]) && y[1] == 0.0f && signbit(y[1]));
    CHECK(y[2] == INFINITY && y[3] == 0.0f && signbit(y[3]) && isnan(y[4]));
    CHECK(y[5] == (float)mish(1.0) && y[6] == (float)mish(-88.0) && y[6] < 0);
    float mx[10] = {-0.5f, 3.0f, -20.0f, -95.0f, -100.0f, -109.0f, -111.0f, 39.0f, 41.0f, -FLT_MAX}, my[10];
    mi(my, mx, 10, ID);
    for (int i = 0; i < 10; i++)
        if (my[i] != (float)mish(mx[i]))
            nk_test_fail(__FILE__, __LINE__, "mish(%a) = %a, formula %a", (double)mx[i], (double)my[i],
                         (double)(float)mish(mx[i]));
    CHECK(my[4] < 0 && my[4] > -FLT_MIN && my[6] == 0.0f && signbit(my[6]) && my[8] == 41.0f);
    CHECK(my[9] == 0.0f && signbit(my[9]));
}

/* tanh and the double-precision functions (sigmoid, silu, gelu_apprx_tanh,
 * softplus, erf, gelu, mish) give the same bits on every tier the processor
 * has (the same operations in the same order), tails and in-place calls
 * included. */
TEST(exec_vmath_tiers_agree)
{
    if (!strcmp(nk__vmath_isa(), "none"))
        return;
    enum { N = 4099 };
    static float x[N], y0[N], y1[N];
    static const char *isas[] = {"avx512f", "avx2", "sse2"};
    static const int funcs2[] = {NK_ACT_TANH,     NK_ACT_SIGMOID, NK_ACT_SILU, NK_ACT_GELU_APPRX_TANH,
                                 NK_ACT_SOFTPLUS, NK_ACT_ERF,     NK_ACT_GELU, NK_ACT_MISH};
    static const char *names2[] = {"tanh", "sigmoid", "silu", "gelu_tanh", "softplus", "erf", "gelu", "mish"};
    int compared = 0;
    for (int f = 0; f < (int)(sizeof funcs2 / sizeof funcs2[0]); f++) {
        nk__vfn ref = nk__vmath_f32_on(funcs2[f], "sse2");
        CHECK(ref != NULL && nk__vmath_f32_on(funcs2[f], "none") == NULL);
        if (!ref)
            continue;
        for (uint64_t u = 0; u < (1ull << 32); u += (uint64_t)N * 104729) {
            for (int i = 0; i < N; i++)
                x[i] = u2f((uint32_t)(u + (uint64_t)i * 104729));
            ref(y0, x, N, ID);
            for (int k = 0; k < 2; k++) {
                nk__vfn g = nk__vmath_f32_on(funcs2[f], isas[k]);
                if (!g)
                    continue;
                memcpy(y1, x, sizeof x);
                g(y1, y1, N - (int)(u % 7), ID); /* in place, a tail of 0 to 6 after the vectors */
                int n = N - (int)(u % 7), bad = -1;
                for (int i = 0; i < n && bad < 0; i++)
                    if (memcmp(&y0[i], &y1[i], 4) && !(isnan(y0[i]) && isnan(y1[i])))
                        bad = i;
                if (bad >= 0)
                    nk_test_fail(__FILE__, __LINE__, "%s on %s: x = %.9g gives %.9g, sse2 %.9g", isas[k],
                                 names2[f], (double)x[bad], (double)y1[bad],
                                 (double)y0[bad]);
                compared++;
            }
        }
    }
    CHECK(compared > 0 || !strcmp(nk__vmath_isa(), "sse2"));
}

/* The affine step each function takes first, x * scale + bias (the product
 * rounded first), gives the bits of the two steps done apart, on every tier
 * (the executor used to run them as two passes). */
TEST(exec_vmath_affine_step)
{
    if (!strcmp(nk__vmath_isa(), "none"))
        return;
    enum { N = 1001 };
    static float x[N], t[N], y0[N], y1[N];
    static const char *isas[] = {"avx512f", "avx2", "sse2"};
    const int fs[] = {NK_ACT_EXP,  NK_ACT_LOG,    NK_ACT_TANH, NK_ACT_SIGMOID,         NK_ACT_SIN,
                      NK_ACT_COS,  NK_ACT_ARCTAN, NK_ACT_SILU, NK_ACT_GELU_APPRX_TANH, NK_ACT_SOFTPLUS,
                      NK_ACT_ERF,  NK_ACT_GELU,   NK_ACT_MISH};
    const float sb[][2] = {{-0.7f, 0.25f}, {1.0f, 0.0f}, {3.0f, -0.0f}, {0x1.8p-3f, 1e-3f}};
    uint32_t r = 12345;
    for (int i = 0; i < N; i++) {
        r = r * 1664525u + 1013904223u;
        x[i] = i < 8 ? (float[]){0.0f, -0.0f, INFINITY, -INFINITY, 1e-30f, -1e-30f, 88.0f, -2.0f}[i]
                     : ((float)(r >> 8) / 16777216.0f - 0.5f) * 40.0f;
    }
    int compared = 0;
    for (size_t k = 0; k < sizeof fs / sizeof fs[0]; k++)
        for (int q = 0; q < 3; q++) {
            nk__vfn g = nk__vmath_f32_on(fs[k], isas[q]);
            if (!g)
                continue;
            for (size_t j = 0; j < sizeof sb / sizeof sb[0]; j++) {
                for (int i = 0; i < N; i++) {
                    volatile float p = x[i] * sb[j][0]; /* (rounded, then added) */
                    t[i] = p + sb[j][1];
                }
                g(y0, t, N, ID);
                g(y1, x, N, sb[j][0], sb[j][1]);
                for (int i = 0; i < N; i++)
                    if (memcmp(&y0[i], &y1[i], 4) && !(isnan(y0[i]) && isnan(y1[i]))) {
                        nk_test_fail(__FILE__, __LINE__, "%s, func %d, x = %.9g * %g + %g: %.9g, apart %.9g", isas[q],
                                     fs[k], (double)x[i], (double)sb[j][0], (double)sb[j][1], (double)y1[i],
                                     (double)y0[i]);
                        break;
                    }
                compared++;
            }
        }
    CHECK(compared > 0);
}
