/*
 * test_ops_elem.c - values of the elementwise language ops against a double
 * reference that models the dtype path: inputs in their dtype, math in
 * double, the result rounded to the output dtype by the model in
 * test_ops_ref.c.
 *
 * Tolerances: +, -, *, /, max, min and casts are exact (0 ulp): the
 * reference rounds the exact result to fp32 (the engine's arithmetic) and
 * then to the output dtype, which is what the engine does step for step.
 * Activation functions: 1 ulp of the output dtype (the fp32 function value
 * is within one fp32 ulp, which may move the final rounding by one step);
 * tanh 1.5 (its fp32 value is within 1.5 fp32 ulps, exec/vmath.c).
 */
#include "test_ops_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parameters of the kernels below, set by each test case before tracing. */
static struct {
    nk_dtype dt;
    nk_act f;
    nk_alu op;
    float s;
    int rev;
    double fill;
    nk_buffer mem;
    nk_shape shape;
} K;

static void k_copy(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    ref_return_tile(nc, nk_copy(nc, nk_load(nc, args[0]), K.dt));
}

static void k_full(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)args;
    (void)nargs;
    ref_return_tile(nc, nk_full(nc, K.shape, K.fill, K.dt, K.mem));
}

static void k_zeros(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)args;
    (void)nargs;
    ref_return_tile(nc, nk_zeros(nc, K.shape, K.dt, K.mem));
}

static void k_unary(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    ref_return_tile(nc, nk_unary_at(nc, NK_HERE, K.f, nk_load(nc, args[0])));
}

static void k_binary(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = nk_load(nc, args[0]), b = nk_load(nc, args[1]);
    ref_return_tile(nc, K.rev ? nk_binary_at(nc, NK_HERE, K.op, b, a) : nk_binary_at(nc, NK_HERE, K.op, a, b));
}

static void k_binary_s(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    ref_return_tile(nc, nk_binary_scalar_at(nc, NK_HERE, K.op, nk_load(nc, args[0]), K.s, K.rev));
}

/* ---- reference arithmetic */

static double ref_alu(nk_alu op, double x, double y)
{
    switch (op) {
    case NK_ALU_ADD: return x + y;
    case NK_ALU_SUBTRACT: return x - y;
    case NK_ALU_MULTIPLY: return x * y;
    case NK_ALU_DIVIDE: return x / y;
    case NK_ALU_MAX: return x > y ? x : y;
    case NK_ALU_MIN: return x < y ? x : y;
    default: return NAN;
    }
}

/* The engine's fp32 result of one operation on fp32 operands: the exact
 * result rounded once to fp32. (x op y in double is exact for +, -, * of fp32
 * values and correctly rounded for /, and rounding that to fp32 is then the
 * correctly rounded fp32 result.) */
static double f32op(nk_alu op, double x, double y) { return ref_round(NK_F32, ref_alu(op, x, y)); }

/* Input values as the engine sees them: the element converted to fp32. */
static double in32(const nk_array *a, size_t i) { return ref_round(NK_F32, arr_get(a, i)); }

/* A range of test values that the dtype holds (integers: small enough that
 * fp32 keeps them exact). */
static double span(nk_dtype dt, double want)
{
    double m = ref_max(dt);
    return m < want ? m : want;
}

/* ---- copy with cast */

/* Values that probe a cast from src: random ones across src's range plus
 * zeros, halves (ties), extremes, infinities and NaN where src has them. */
static void fill_cast_input(nk_array *a, uint64_t *rng)
{
    nk_dtype dt = a->dtype;
    size_t n = nk_array_numel(a);
    double hi = span(dt, 70000.0), lo = ref_is_float(dt) || ref_min_int(dt) < 0 ? -hi : 0.0;
    arr_fill(a, rng, lo, hi);
    for (size_t i = 0; i < n; i += 7) /* a share of small values with fractions */
        arr_set(a, i, ref_uniform(rng, lo < 0 ? -300 : 0, 300));
    const double special[] = {0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 127.5, 128.0, -128.5, 255.5, 256.0, 65504.0,
                              65520.0, 240.0, 248.0, 448.0, 464.0, 57344.0, 61440.0, INFINITY, -INFINITY, NAN,
                              ref_max(dt), -ref_max(dt), ref_min_int(dt)};
    for (size_t k = 0; k < sizeof special / sizeof special[0] && k < n; k++)
        arr_set(a, k, special[k]);
}

TEST(ops_copy_casts_every_dtype_pair)
{
    uint64_t rng = 11;
    int64_t shape[2] = {128, 24};
    for (int s = 0; s < NK_DTYPE_COUNT; s++)
        for (int d = 0; d < NK_DTYPE_COUNT; d++) {
            nk_array in, out;
            arr_new(&in, (nk_dtype)s, 2, shape);
            fill_cast_input(&in, &rng);
            K.dt = (nk_dtype)d;
            if (run_kernel("copy", k_copy, &in, 1, &out, 1)) {
                nk_array_free(&in);
                continue;
            }
            CHECK_INT(out.dtype, d);
            size_t n = nk_array_numel(&in);
            double *want = malloc(n * sizeof *want);
            /* same dtype: a bit-accurate copy; otherwise through fp32 */
            for (size_t i = 0; i < n; i++)
                want[i] = s == d ? arr_get(&in, i) : in32(&in, i);
            char what[96];
            snprintf(what, sizeof what, "nk_copy %s -> %s", nk_dtype_name((nk_dtype)s), nk_dtype_name((nk_dtype)d));
            CHECK_ARR(what, &out, want, 0, NULL, 0);
            if (s == d)
                CHECK(memcmp(in.data, out.data, nk_array_nbytes(&in)) == 0);
            free(want);
            nk_array_free(&in);
            nk_array_free(&out);
        }
}

/* ---- zeros and full */

TEST(ops_full_and_zeros_every_dtype)
{
    const double values[] = {0.0, 1.0, -2.5, 3.7, 0.1, 1e6, -1e6, 16777217.0, 300.0, -129.5, 65519.0};
    const nk_buffer mems[] = {NK_SBUF, NK_PSUM};
    K.shape = NK_SHAPE(96, 3, 5);
    for (int m = 0; m < 2; m++)
        for (int d = 0; d < NK_DTYPE_COUNT; d++)
            for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
                nk_dtype dt = (nk_dtype)d;
                if (mems[m] == NK_PSUM && dt != NK_F32 && dt != NK_BF16)
                    continue;
                K.dt = dt;
                K.fill = values[v];
                K.mem = mems[m];
                nk_array out;
                if (run_kernel("full", k_full, NULL, 0, &out, 1))
                    continue;
                CHECK_INT(out.ndim, 3);
                CHECK_INT(out.shape[0], 96);
                CHECK_INT(out.shape[2], 5);
                /* float tiles take the fp32 immediate; integer tiles the value itself */
                double want1 = ref_is_float(dt) ? ref_round(NK_F32, values[v]) : values[v];
                size_t n = nk_array_numel(&out);
                double *want = malloc(n * sizeof *want);
                for (size_t i = 0; i < n; i++)
                    want[i] = want1;
                char what[96];
                snprintf(what, sizeof what, "nk_full(%g) in %s", values[v], mems[m] == NK_PSUM ? "PSUM" : "SBUF");
                CHECK_ARR(what, &out, want, 0, NULL, 0);
                free(want);
                nk_array_free(&out);
            }
    /* hand-checked values */
    K.shape = NK_SHAPE(4, 2);
    K.mem = NK_SBUF;
    const struct { nk_dtype dt; double v, want; } hc[] = {
        {NK_I32, 16777217.0, 16777217.0}, {NK_I8, 300.0, 127.0}, {NK_U8, -3.0, 0.0}, {NK_I16, -129.5, -130.0},
        {NK_BF16, 3.7, 3.703125}, {NK_F16, 65519.0, 65504.0}, {NK_FP8_E4M3, 1e6, INFINITY},
        {NK_FP8_E4M3FN, 1e6, NAN},
    };
    for (size_t i = 0; i < sizeof hc / sizeof hc[0]; i++) {
        K.dt = hc[i].dt;
        K.fill = hc[i].v;
        nk_array out;
        if (run_kernel("full", k_full, NULL, 0, &out, 1))
            continue;
        if (!ref_same(arr_get(&out, 5), hc[i].want, 0))
            nk_test_fail(__FILE__, __LINE__, "nk_full(%g, %s) = %.9g, want %.9g", hc[i].v, nk_dtype_name(hc[i].dt),
                         arr_get(&out, 5), hc[i].want);
        nk_array_free(&out);
    }
    /* zeros: every byte zero in every dtype */
    for (int d = 0; d < NK_DTYPE_COUNT; d++) {
        K.dt = (nk_dtype)d;
        K.shape = NK_SHAPE(128, 7);
        nk_array out;
        if (run_kernel("zeros", k_zeros, NULL, 0, &out, 1))
            continue;
        const uint8_t *b = out.data;
        size_t nz = 0;
        for (size_t i = 0; i < nk_array_nbytes(&out); i++)
            nz += b[i] != 0;
        CHECK_INT(nz, 0);
        nk_array_free(&out);
    }
}

/* ---- activation functions */

typedef struct act_case {
    nk_act f;
    double lo, hi;
    double (*ref)(double);
} act_case;

static double r_copy(double x) { return x; }
static double r_exp(double x) { return exp(x); }
static double r_log(double x) { return log(x); }
static double r_sqrt(double x) { return sqrt(x); }
static double r_rsqrt(double x) { return 1.0 / sqrt(x); }
static double r_tanh(double x) { return tanh(x); }
static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double r_relu(double x) { return x > 0 ? x : 0.0; }
static double r_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double r_gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}
static double r_silu(double x) { return x / (1.0 + exp(-x)); }
static double r_square(double x) { return x * x; }
static double r_abs(double x) { return fabs(x); }
static double r_reciprocal(double x) { return 1.0 / x; }
static double r_sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
static double r_softplus(double x) { return log1p(exp(x)); }
static double r_erf(double x) { return erf(x); }
static double r_sin(double x) { return sin(x); }
static double r_cos(double x) { return cos(x); }
static double r_arctan(double x) { return atan(x); }
static double r_mish(double x) { return x * tanh(log1p(exp(x))); }

static const act_case act_cases[] = {
    {NK_ACT_COPY, -10, 10, r_copy},           {NK_ACT_EXP, -6, 6, r_exp},
    {NK_ACT_LOG, 0.01, 100, r_log},           {NK_ACT_SQRT, 0, 100, r_sqrt},
    {NK_ACT_RSQRT, 0.01, 100, r_rsqrt},       {NK_ACT_TANH, -8, 8, r_tanh},
    {NK_ACT_SIGMOID, -12, 12, r_sigmoid},     {NK_ACT_RELU, -10, 10, r_relu},
    {NK_ACT_GELU, -5, 5, r_gelu},             {NK_ACT_GELU_APPRX_TANH, -5, 5, r_gelu_tanh},
    {NK_ACT_SILU, -12, 12, r_silu},           {NK_ACT_SQUARE, -100, 100, r_square},
    {NK_ACT_ABS, -10, 10, r_abs},             {NK_ACT_RECIPROCAL, -20, 20, r_reciprocal},
    {NK_ACT_SIGN, -3, 3, r_sign},             {NK_ACT_SOFTPLUS, -12, 12, r_softplus},
    {NK_ACT_ERF, -4, 4, r_erf},               {NK_ACT_SIN, -6.5, 6.5, r_sin},
    {NK_ACT_COS, -6.5, 6.5, r_cos},           {NK_ACT_ARCTAN, -20, 20, r_arctan},
    {NK_ACT_MISH, -10, 10, r_mish},
};

TEST(ops_every_activation_function_in_float_dtypes)
{
    const nk_dtype dts[] = {NK_F32, NK_BF16, NK_F16, NK_FP8_E4M3, NK_FP8_E5M2};
    int64_t shape[2] = {128, 64};
    uint64_t rng = 5;
    CHECK_INT(sizeof act_cases / sizeof act_cases[0], NK_ACT_COUNT);
    for (size_t c = 0; c < sizeof act_cases / sizeof act_cases[0]; c++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            const act_case *ac = &act_cases[c];
            nk_array in, out;
            arr_new(&in, dts[d], 2, shape);
            arr_fill(&in, &rng, ac->lo, ac->hi);
            size_t n = nk_array_numel(&in);
            if (ac->f == NK_ACT_RECIPROCAL) /* keep away from the pole */
                for (size_t i = 0; i < n; i++)
                    if (fabs(arr_get(&in, i)) < 0.05)
                        arr_set(&in, i, 0.5);
            arr_set(&in, 1, 0.0); /* zero is in every domain but log's and rsqrt's */
            if (ac->f == NK_ACT_LOG || ac->f == NK_ACT_RSQRT)
                arr_set(&in, 1, 1.0);
            K.f = ac->f;
            if (run_kernel(nk_act_name(ac->f), k_unary, &in, 1, &out, 1)) {
                nk_array_free(&in);
                continue;
            }
            CHECK_INT(out.dtype, dts[d]);
            double *want = malloc(n * sizeof *want);
            for (size_t i = 0; i < n; i++)
                want[i] = ac->ref(arr_get(&in, i));
            char what[96];
            snprintf(what, sizeof what, "%s", nk_act_name(ac->f));
            CHECK_ARR(what, &out, want, ac->f == NK_ACT_TANH ? 1.5 : 1, NULL, 0);
            free(want);
            nk_array_free(&in);
            nk_array_free(&out);
        }
}

/* Outside the comfortable range: overflow to inf, underflow to 0, NaN in. */
TEST(ops_activation_edges)
{
    int64_t shape[2] = {2, 8};
    nk_array in, out;
    arr_new(&in, NK_F32, 2, shape);
    const double x[16] = {100, -100, 89, -104, 0, -0.0, NAN, INFINITY,
                          -INFINITY, 1e-30, -1e-30, 20, 30, -30, 700, 1e10};
    for (int i = 0; i < 16; i++)
        arr_set(&in, (size_t)i, x[i]);
    const struct { nk_act f; double (*ref)(double); } t[] = {
        {NK_ACT_EXP, r_exp}, {NK_ACT_SIGMOID, r_sigmoid}, {NK_ACT_TANH, r_tanh}, {NK_ACT_SOFTPLUS, r_softplus},
        {NK_ACT_SILU, r_silu}, {NK_ACT_ABS, r_abs}, {NK_ACT_SQUARE, r_square}, {NK_ACT_ARCTAN, r_arctan},
        {NK_ACT_GELU, r_gelu}, {NK_ACT_MISH, r_mish}, {NK_ACT_RELU, r_relu}, {NK_ACT_SIGN, r_sign},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        K.f = t[k].f;
        if (run_kernel("edges", k_unary, &in, 1, &out, 1))
            continue;
        double want[16];
        for (int i = 0; i < 16; i++) {
            double v = ref_round(NK_F32, x[i]);
            /* softplus and silu of huge x: the double formula overflows where the value does not */
            want[i] = t[k].ref(v);
            if ((t[k].f == NK_ACT_SOFTPLUS || t[k].f == NK_ACT_SILU) && v > 600)
                want[i] = v;
            if (v == -INFINITY && (t[k].f == NK_ACT_SILU || t[k].f == NK_ACT_GELU || t[k].f == NK_ACT_MISH))
                want[i] = 0.0; /* x * gate(x) at -inf: the limit, not -inf * 0 */
            if (v != v && (t[k].f == NK_ACT_RELU || t[k].f == NK_ACT_SIGN))
                want[i] = NAN; /* NaN passes through */
        }
        CHECK_ARR(nk_act_name(t[k].f), &out, want, t[k].f == NK_ACT_TANH ? 1.5 : 1, NULL, 0);
        nk_array_free(&out);
    }
    nk_array_free(&in);
}

/* ---- binary ops between tiles */

typedef struct dt_pair {
    nk_dtype a, b, out; /* out: NKI's promotion, stated independently */
} dt_pair;

static const dt_pair bin_pairs[] = {
    {NK_F32, NK_F32, NK_F32},         {NK_BF16, NK_BF16, NK_BF16},   {NK_F16, NK_F16, NK_F16},
    {NK_FP8_E4M3, NK_FP8_E4M3, NK_FP8_E4M3}, {NK_FP8_E5M2, NK_FP8_E5M2, NK_FP8_E5M2},
    {NK_I8, NK_I8, NK_I8},            {NK_I32, NK_I32, NK_I32},      {NK_U8, NK_U8, NK_U8},
    {NK_BF16, NK_F32, NK_F32},        {NK_F16, NK_BF16, NK_F32},     {NK_I8, NK_F32, NK_F32},
    {NK_I32, NK_BF16, NK_BF16},       {NK_U8, NK_I8, NK_I16},        {NK_FP8_E4M3, NK_FP8_E5M2, NK_BF16},
    {NK_I16, NK_I32, NK_I32},         {NK_FP8_E4M3, NK_BF16, NK_BF16}, {NK_I16, NK_U8, NK_I16},
    {NK_I8, NK_U16, NK_I32},          {NK_U16, NK_I32, NK_I32},      {NK_I32, NK_U32, NK_F32},
    {NK_U32, NK_I8, NK_F32},          {NK_FP8_E4M3, NK_F16, NK_F16},
};

static const nk_alu bin_ops[] = {NK_ALU_ADD, NK_ALU_SUBTRACT, NK_ALU_MULTIPLY, NK_ALU_DIVIDE, NK_ALU_MAX,
                                 NK_ALU_MIN};

static void fill_operand(nk_array *a, uint64_t *rng)
{
    double hi = span(a->dtype, 100.0), lo = ref_min_int(a->dtype) < 0 || ref_is_float(a->dtype) ? -hi : 0.0;
    arr_fill(a, rng, lo, hi);
}

TEST(ops_binary_between_tiles)
{
    int64_t shape[3] = {128, 6, 7};
    uint64_t rng = 21;
    for (size_t pi = 0; pi < sizeof bin_pairs / sizeof bin_pairs[0]; pi++)
        for (size_t oi = 0; oi < sizeof bin_ops / sizeof bin_ops[0]; oi++)
            for (int rev = 0; rev < 2; rev++) {
                const dt_pair *pr = &bin_pairs[pi];
                nk_array in[2], out;
                arr_new(&in[0], pr->a, 3, shape);
                arr_new(&in[1], pr->b, 3, shape);
                fill_operand(&in[0], &rng);
                fill_operand(&in[1], &rng);
                K.op = bin_ops[oi];
                K.rev = rev;
                if (run_kernel("binary", k_binary, in, 2, &out, 1)) {
                    arr_free_all(in, 2);
                    continue;
                }
                CHECK_INT(out.dtype, pr->out);
                size_t n = nk_array_numel(&out);
                double *want = malloc(n * sizeof *want);
                for (size_t i = 0; i < n; i++) {
                    double x = in32(&in[0], i), y = in32(&in[1], i);
                    want[i] = f32op(K.op, rev ? y : x, rev ? x : y);
                }
                char what[128];
                snprintf(what, sizeof what, "%s(%s, %s)%s", nk_alu_name(K.op), nk_dtype_name(pr->a),
                         nk_dtype_name(pr->b), rev ? " reversed" : "");
                CHECK_ARR(what, &out, want, 0, NULL, 0);
                free(want);
                arr_free_all(in, 2);
                nk_array_free(&out);
            }
}

/* ---- binary ops with a scalar */

TEST(ops_binary_with_scalar_both_orders)
{
    const nk_dtype dts[] = {NK_F32, NK_BF16, NK_F16, NK_FP8_E4M3, NK_FP8_E4M3FN, NK_I8, NK_I32, NK_U8, NK_U16};
    const float scalars[] = {2.5f, -0.75f, 3.0f, 0.1f};
    int64_t shape[2] = {100, 33};
    uint64_t rng = 31;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t oi = 0; oi < sizeof bin_ops / sizeof bin_ops[0]; oi++)
            for (size_t si = 0; si < sizeof scalars / sizeof scalars[0]; si++)
                for (int rev = 0; rev < 2; rev++) {
                    nk_array in, out;
                    arr_new(&in, dts[d], 2, shape);
                    fill_operand(&in, &rng);
                    K.op = bin_ops[oi];
                    K.s = scalars[si];
                    K.rev = rev;
                    if (run_kernel("binary_s", k_binary_s, &in, 1, &out, 1)) {
                        nk_array_free(&in);
                        continue;
                    }
                    CHECK_INT(out.dtype, dts[d]);
                    size_t n = nk_array_numel(&out);
                    double *want = malloc(n * sizeof *want), s = K.s;
                    for (size_t i = 0; i < n; i++) {
                        double x = in32(&in, i);
                        want[i] = f32op(K.op, rev ? s : x, rev ? x : s);
                    }
                    char what[128];
                    snprintf(what, sizeof what, "%s(%s, %g)%s", nk_alu_name(K.op), nk_dtype_name(dts[d]), K.s,
                             rev ? " reversed" : "");
                    CHECK_ARR(what, &out, want, 0, NULL, 0);
                    free(want);
                    nk_array_free(&in);
                    nk_array_free(&out);
                }
}

/* ---- binary ops with a per-partition column [P, 1] */

TEST(ops_binary_with_partition_column_both_sides)
{
    const dt_pair pairs[] = {
        {NK_F32, NK_F32, NK_F32}, {NK_BF16, NK_BF16, NK_BF16}, {NK_BF16, NK_F32, NK_F32},
        {NK_F16, NK_F16, NK_F16}, {NK_I32, NK_I32, NK_I32},    {NK_FP8_E4M3, NK_F16, NK_F16},
    };
    int64_t shape[2] = {128, 50}, cshape[2] = {128, 1};
    uint64_t rng = 41;
    for (size_t pi = 0; pi < sizeof pairs / sizeof pairs[0]; pi++)
        for (size_t oi = 0; oi < sizeof bin_ops / sizeof bin_ops[0]; oi++)
            for (int rev = 0; rev < 2; rev++) {
                nk_array in[2], out;
                arr_new(&in[0], pairs[pi].a, 2, shape);
                arr_new(&in[1], pairs[pi].b, 2, cshape);
                fill_operand(&in[0], &rng);
                fill_operand(&in[1], &rng);
                K.op = bin_ops[oi];
                K.rev = rev; /* rev: the column is the left operand */
                if (run_kernel("binary_col", k_binary, in, 2, &out, 1)) {
                    arr_free_all(in, 2);
                    continue;
                }
                CHECK_INT(out.dtype, pairs[pi].out);
                CHECK_INT(out.shape[1], 50);
                size_t n = nk_array_numel(&out);
                double *want = malloc(n * sizeof *want);
                for (size_t i = 0; i < n; i++) {
                    double x = in32(&in[0], i), c = in32(&in[1], i / 50);
                    want[i] = f32op(K.op, rev ? c : x, rev ? x : c);
                }
                char what[128];
                snprintf(what, sizeof what, "%s(%s, column %s)%s", nk_alu_name(K.op), nk_dtype_name(pairs[pi].a),
                         nk_dtype_name(pairs[pi].b), rev ? " reversed" : "");
                CHECK_ARR(what, &out, want, 0, NULL, 0);
                free(want);
                arr_free_all(in, 2);
                nk_array_free(&out);
            }
}
