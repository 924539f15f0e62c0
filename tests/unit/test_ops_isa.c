/*
 * test_ops_isa.c - the ISA-level ops with explicit destinations: activation
 * with bias and scale (immediates and per-partition columns) and its
 * add-reduction, tensor_tensor (arithmetic, power, comparisons, bitvec),
 * tensor_scalar with two operators and reverse flags, tensor_copy and memset
 * on each engine, affine_select.
 *
 * References model the engines' fp32 arithmetic step by step: each fp32
 * operation is the exact result rounded once to fp32 (ref_round), then the
 * result is rounded to the destination dtype. Bitvec operators are checked
 * bit for bit with C's integer operators.
 */
#include "test_ops_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static struct {
    nk_act f;
    nk_dtype dt;
    int bias_col, scale_col, reduce;
    float bias, scale;
    nk_alu op0, op1;
    int r0, r1, col0, col1, psum_in;
    float s0, s1;
    nk_engine eng;
    double fill;
    nk_shape shape;
    nk_affine pred;
    nk_cmp cmp;
    float on_false;
} K;

static double f32(double x) { return ref_round(NK_F32, x); }

static double ref_alu(nk_alu op, double x, double y)
{
    switch (op) {
    case NK_ALU_BYPASS: return x;
    case NK_ALU_ADD: return f32(x + y);
    case NK_ALU_SUBTRACT: return f32(x - y);
    case NK_ALU_MULTIPLY: return f32(x * y);
    case NK_ALU_DIVIDE: return f32(x / y);
    case NK_ALU_MAX: return x > y ? x : y;
    case NK_ALU_MIN: return x < y ? x : y;
    case NK_ALU_POW: return pow(x, y);
    case NK_ALU_IS_EQUAL: return x == y;
    case NK_ALU_NOT_EQUAL: return x != y;
    case NK_ALU_IS_GE: return x >= y;
    case NK_ALU_IS_GT: return x > y;
    case NK_ALU_IS_LE: return x <= y;
    case NK_ALU_IS_LT: return x < y;
    default: return NAN;
    }
}

static nk_tensor new_tile(nk_ctx *nc, nk_tensor like, nk_dtype dt, nk_buffer mem)
{
    nk_shape s = {like.ndim, {0}};
    for (int i = 0; i < like.ndim; i++)
        s.d[i] = like.shape[i];
    return nk_ndarray(nc, s, dt, mem);
}

/* ---- activation */

static void k_act(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]), b = nk_load(nc, args[1]), s = nk_load(nc, args[2]);
    nk_tensor dst = new_tile(nc, x, K.dt, NK_SBUF);
    nk_tensor rd = K.reduce ? nk_ndarray(nc, NK_SHAPE(x.shape[0], 1), NK_F32, NK_SBUF) : NK_NONE;
    nk_isa_activation(nc, dst, K.f, x, K.bias_col ? nk_col(b) : nk_imm(K.bias),
                      K.scale_col ? nk_col(s) : nk_imm(K.scale), rd);
    ref_return_tile(nc, dst);
    if (K.reduce)
        ref_return_tile(nc, rd);
}

static double r_act(nk_act f, double x)
{
    switch (f) {
    case NK_ACT_COPY: return x;
    case NK_ACT_EXP: return exp(x);
    case NK_ACT_TANH: return tanh(x);
    case NK_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case NK_ACT_SQUARE: return x * x;
    case NK_ACT_RELU: return x > 0 ? x : 0;
    case NK_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case NK_ACT_SILU: return x / (1.0 + exp(-x));
    default: return NAN;
    }
}

TEST(isa_activation_bias_scale_and_reduce)
{
    const nk_act fs[] = {NK_ACT_COPY, NK_ACT_EXP, NK_ACT_TANH, NK_ACT_GELU, NK_ACT_SQUARE, NK_ACT_RELU,
                         NK_ACT_SIGMOID, NK_ACT_SILU};
    const struct { nk_dtype in, out; } dts[] = {
        {NK_F32, NK_F32}, {NK_BF16, NK_BF16}, {NK_F32, NK_BF16}, {NK_BF16, NK_F32}, {NK_FP8_E4M3, NK_BF16},
        {NK_F16, NK_F16},
    };
    int64_t shape[2] = {128, 96}, cshape[2] = {128, 1};
    uint64_t rng = 73;
    for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
            for (int mode = 0; mode < 4; mode++) {
                nk_array in[3], out[2];
                arr_new(&in[0], dts[d].in, 2, shape);
                arr_new(&in[1], NK_F32, 2, cshape);
                arr_new(&in[2], NK_BF16, 2, cshape);
                arr_fill(&in[0], &rng, -2, 2);
                arr_fill(&in[1], &rng, -1, 1);
                arr_fill(&in[2], &rng, -1.5, 1.5);
                K.f = fs[fi];
                K.dt = dts[d].out;
                K.bias_col = mode & 1;
                K.scale_col = (mode >> 1) & 1;
                K.reduce = mode == 3 || mode == 0;
                K.bias = 0.25f;
                K.scale = -0.7f;
                int nouts = K.reduce ? 2 : 1;
                if (run_kernel("activation", k_act, in, 3, out, nouts)) {
                    arr_free_all(in, 3);
                    continue;
                }
                double *want = malloc(128 * 96 * sizeof *want), rwant[128], rbound[128];
                for (int p = 0; p < 128; p++) {
                    double b = K.bias_col ? arr_get(&in[1], (size_t)p) : f32(K.bias);
                    double s = K.scale_col ? arr_get(&in[2], (size_t)p) : f32(K.scale);
                    double sum = 0, sabs = 0;
                    for (int i = 0; i < 96; i++) {
                        double x = arr_get(&in[0], (size_t)(p * 96 + i));
                        double y = r_act(K.f, f32(f32(x * s) + b)); /* fp32: scale, then bias */
                        want[p * 96 + i] = y;
                        sum += y;
                        sabs += fabs(y);
                    }
                    rwant[p] = sum;
                    rbound[p] = (96 + 2) * 2 * REF_U32 * sabs; /* fp32 values and fp32 additions */
                }
                char what[128];
                snprintf(what, sizeof what, "activation %s %s -> %s, bias %s, scale %s", nk_act_name(K.f),
                         nk_dtype_name(dts[d].in), nk_dtype_name(dts[d].out), K.bias_col ? "column" : "imm",
                         K.scale_col ? "column" : "imm");
                CHECK_ARR(what, &out[0], want, K.f == NK_ACT_TANH ? 1.5 : 1, NULL, 0); /* (vmath.h) */
                if (K.reduce) {
                    CHECK_INT(out[1].shape[0], 128);
                    CHECK_INT(out[1].shape[1], 1);
                    CHECK_ARR("activation reduce", &out[1], rwant, 1, rbound, 0);
                }
                free(want);
                arr_free_all(out, nouts);
                arr_free_all(in, 3);
            }
}

/* ---- tensor_tensor */

static void k_tt(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = nk_load(nc, args[0]), b = nk_load(nc, args[1]);
    if (K.psum_in) { /* in0 read from PSUM */
        nk_tensor t = new_tile(nc, a, (nk_dtype)a.dtype, NK_PSUM);
        nk_isa_tensor_copy(nc, t, a);
        a = t;
    }
    nk_tensor dst = new_tile(nc, a, K.dt, NK_SBUF);
    nk_isa_tensor_tensor_at(nc, NK_HERE, dst, a, b, K.op0, K.eng);
    ref_return_tile(nc, dst);
}

TEST(isa_tensor_tensor_arithmetic_power_comparisons)
{
    const nk_alu ops[] = {NK_ALU_ADD, NK_ALU_SUBTRACT, NK_ALU_MULTIPLY, NK_ALU_DIVIDE, NK_ALU_MAX, NK_ALU_MIN,
                          NK_ALU_POW, NK_ALU_IS_EQUAL, NK_ALU_NOT_EQUAL, NK_ALU_IS_GE, NK_ALU_IS_GT,
                          NK_ALU_IS_LE, NK_ALU_IS_LT};
    const struct { nk_dtype a, b, dst; } dts[] = {
        {NK_F32, NK_F32, NK_F32}, {NK_BF16, NK_BF16, NK_BF16}, {NK_BF16, NK_F32, NK_F16},
        {NK_F16, NK_F16, NK_U8}, {NK_I32, NK_I32, NK_I32}, {NK_FP8_E5M2, NK_BF16, NK_F32},
    };
    const nk_engine engs[] = {NK_ENGINE_VECTOR, NK_ENGINE_GPSIMD};
    int64_t shape[2] = {128, 60};
    uint64_t rng = 79;
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
            for (int e = 0; e < 2; e++)
                for (int ps = 0; ps < 2; ps++) {
                    if (ps && engs[e] == NK_ENGINE_GPSIMD)
                        continue; /* GpSimd cannot read PSUM */
                    nk_array in[2], out;
                    arr_new(&in[0], dts[d].a, 2, shape);
                    arr_new(&in[1], dts[d].b, 2, shape);
                    int pw = ops[o] == NK_ALU_POW;
                    arr_fill(&in[0], &rng, pw ? 0.1 : -20, pw ? 6 : 20);
                    arr_fill(&in[1], &rng, pw ? -3 : -20, pw ? 3 : 20);
                    for (size_t i = 0; i < 60; i++) /* equal pairs for the comparisons */
                        arr_set(&in[1], i, arr_get(&in[0], i));
                    K.op0 = ops[o];
                    K.dt = dts[d].dst;
                    K.eng = engs[e];
                    K.psum_in = ps;
                    if (run_kernel("tensor_tensor", k_tt, in, 2, &out, 1)) {
                        arr_free_all(in, 2);
                        continue;
                    }
                    double *want = malloc(128 * 60 * sizeof *want);
                    for (size_t i = 0; i < 128 * 60; i++)
                        want[i] = ref_alu(K.op0, f32(arr_get(&in[0], i)), f32(arr_get(&in[1], i)));
                    char what[128];
                    snprintf(what, sizeof what, "tensor_tensor %s(%s, %s) on %s%s", nk_alu_name(K.op0),
                             nk_dtype_name(dts[d].a), nk_dtype_name(dts[d].b), nk_engine_name(K.eng),
                             ps ? ", in0 in PSUM" : "");
                    /* power: within one fp32 ulp, then the output rounding */
                    CHECK_ARR(what, &out, want, pw ? 1 : 0, NULL, 0);
                    free(want);
                    nk_array_free(&out);
                    arr_free_all(in, 2);
                }
}

/* v as a two's-complement bit pattern of dt's width, read back as dt. */
static double wrap(nk_dtype dt, int64_t v)
{
    int bits = 8 * nk_dtype_size(dt);
    uint64_t u = (uint64_t)v & (bits == 64 ? ~0ull : (1ull << bits) - 1);
    if (ref_min_int(dt) < 0 && (u >> (bits - 1)))
        return (double)u - ldexp(1.0, bits);
    return (double)u;
}

static int64_t ref_bit(nk_alu op, int64_t x, int64_t y)
{
    return op == NK_ALU_BITWISE_AND ? x & y : op == NK_ALU_BITWISE_OR ? x | y : x ^ y;
}

TEST(isa_tensor_tensor_bitvec_on_integer_bits)
{
    const nk_alu ops[] = {NK_ALU_BITWISE_AND, NK_ALU_BITWISE_OR, NK_ALU_BITWISE_XOR};
    const struct { nk_dtype a, b, dst; } dts[] = {
        {NK_I32, NK_I32, NK_I32}, {NK_U32, NK_U32, NK_U32}, {NK_I16, NK_I16, NK_I16}, {NK_U8, NK_U8, NK_U8},
        {NK_I8, NK_U8, NK_I16}, {NK_I32, NK_I16, NK_I32}, {NK_U32, NK_I32, NK_U8},
    };
    int64_t shape[3] = {64, 5, 7};
    uint64_t rng = 83;
    for (size_t o = 0; o < 3; o++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            nk_array in[2], out;
            arr_new(&in[0], dts[d].a, 3, shape);
            arr_new(&in[1], dts[d].b, 3, shape);
            for (int k = 0; k < 2; k++) { /* random bits: far beyond fp32's 24-bit integers */
                uint8_t *b = in[k].data;
                for (size_t i = 0; i < nk_array_nbytes(&in[k]); i++)
                    b[i] = (uint8_t)ref_rand64(&rng);
            }
            K.op0 = ops[o];
            K.dt = dts[d].dst;
            K.eng = NK_ENGINE_VECTOR;
            K.psum_in = 0;
            if (run_kernel("tensor_tensor", k_tt, in, 2, &out, 1)) {
                arr_free_all(in, 2);
                continue;
            }
            size_t n = nk_array_numel(&out);
            double *want = malloc(n * sizeof *want);
            for (size_t i = 0; i < n; i++)
                want[i] = wrap(K.dt, ref_bit(K.op0, (int64_t)arr_get(&in[0], i), (int64_t)arr_get(&in[1], i)));
            char what[128];
            snprintf(what, sizeof what, "tensor_tensor %s(%s, %s)", nk_alu_name(K.op0), nk_dtype_name(dts[d].a),
                     nk_dtype_name(dts[d].b));
            CHECK_ARR(what, &out, want, 0, NULL, 0);
            free(want);
            nk_array_free(&out);
            arr_free_all(in, 2);
        }
}

/* ---- tensor_scalar */

static void k_ts(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]), c0 = nk_load(nc, args[1]), c1 = nk_load(nc, args[2]);
    nk_tensor dst = new_tile(nc, x, K.dt, NK_SBUF);
    nk_isa_tensor_scalar_at(nc, NK_HERE, dst, x, K.op0, K.col0 ? nk_col(c0) : nk_imm(K.s0), K.r0, K.op1,
                            K.col1 ? nk_col(c1) : nk_imm(K.s1), K.r1, K.eng);
    ref_return_tile(nc, dst);
}

TEST(isa_tensor_scalar_two_ops_reverse_flags_columns_engines)
{
    const struct { nk_alu op0, op1; } ops[] = {
        {NK_ALU_MULTIPLY, NK_ALU_ADD}, {NK_ALU_SUBTRACT, NK_ALU_MULTIPLY}, {NK_ALU_DIVIDE, NK_ALU_SUBTRACT},
        {NK_ALU_MAX, NK_ALU_MIN},      {NK_ALU_ADD, NK_ALU_BYPASS},      {NK_ALU_SUBTRACT, NK_ALU_DIVIDE},
        {NK_ALU_IS_GT, NK_ALU_MULTIPLY},
    };
    const struct { nk_dtype in, out; } dts[] = {
        {NK_F32, NK_F32}, {NK_F32, NK_BF16}, {NK_BF16, NK_BF16}, {NK_I32, NK_F32}, {NK_FP8_E4M3, NK_F16},
    };
    const nk_engine engs[] = {NK_ENGINE_VECTOR, NK_ENGINE_SCALAR, NK_ENGINE_GPSIMD};
    int64_t shape[3] = {96, 4, 11}, cshape[2] = {96, 1};
    uint64_t rng = 89;
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
            for (int flags = 0; flags < 16; flags++) {
                nk_array in[3], out;
                arr_new(&in[0], dts[d].in, 3, shape);
                arr_new(&in[1], NK_F32, 2, cshape);
                arr_new(&in[2], NK_BF16, 2, cshape);
                arr_fill(&in[0], &rng, -50, 50);
                arr_fill(&in[1], &rng, -3, 3);
                arr_fill(&in[2], &rng, -3, 3);
                K.op0 = ops[o].op0;
                K.op1 = ops[o].op1;
                K.r0 = flags & 1;
                K.r1 = (flags >> 1) & 1;
                K.col0 = (flags >> 2) & 1;
                K.col1 = (flags >> 3) & 1;
                K.s0 = 1.7f;
                K.s1 = -0.3f;
                K.dt = dts[d].out;
                K.eng = engs[(o + d + (size_t)flags) % 3];
                if (run_kernel("tensor_scalar", k_ts, in, 3, &out, 1)) {
                    arr_free_all(in, 3);
                    continue;
                }
                size_t n = nk_array_numel(&out);
                double *want = malloc(n * sizeof *want);
                for (size_t i = 0; i < n; i++) {
                    size_t p = i / 44;
                    double x = f32(arr_get(&in[0], i));
                    double s0 = K.col0 ? arr_get(&in[1], p) : f32(K.s0), s1 = K.col1 ? arr_get(&in[2], p) : f32(K.s1);
                    double t = K.r0 ? ref_alu(K.op0, s0, x) : ref_alu(K.op0, x, s0);
                    want[i] = K.op1 == NK_ALU_BYPASS ? t : K.r1 ? ref_alu(K.op1, s1, t) : ref_alu(K.op1, t, s1);
                }
                char what[160];
                snprintf(what, sizeof what, "tensor_scalar (%s %s %s) %s %s on %s, %s -> %s",
                         K.r0 ? "s0" : "x", nk_alu_name(K.op0), K.r0 ? "x" : (K.col0 ? "col0" : "s0"),
                         nk_alu_name(K.op1), K.r1 ? "reversed" : "", nk_engine_name(K.eng), nk_dtype_name(dts[d].in),
                         nk_dtype_name(dts[d].out));
                CHECK_ARR(what, &out, want, 0, NULL, 0);
                free(want);
                nk_array_free(&out);
                arr_free_all(in, 3);
            }
}

TEST(isa_tensor_scalar_bitvec)
{
    int64_t shape[2] = {128, 33}, cshape[2] = {128, 1};
    uint64_t rng = 97;
    const nk_dtype dts[] = {NK_I32, NK_U32, NK_U16, NK_I8};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (int col = 0; col < 2; col++) {
            nk_array in[3], out;
            arr_new(&in[0], dts[d], 2, shape);
            arr_new(&in[1], NK_I32, 2, cshape);
            arr_new(&in[2], NK_I32, 2, cshape);
            uint8_t *b = in[0].data;
            for (size_t i = 0; i < nk_array_nbytes(&in[0]); i++)
                b[i] = (uint8_t)ref_rand64(&rng);
            arr_fill(&in[1], &rng, 0, 255);
            arr_fill(&in[2], &rng, 0, 7);
            K.op0 = NK_ALU_BITWISE_AND;
            K.op1 = NK_ALU_BITWISE_XOR;
            K.r0 = K.r1 = 0;
            K.col0 = K.col1 = col;
            K.s0 = 240.0f; /* 0xf0 */
            K.s1 = 5.0f;
            K.dt = dts[d];
            K.eng = NK_ENGINE_VECTOR;
            if (run_kernel("tensor_scalar_bits", k_ts, in, 3, &out, 1)) {
                arr_free_all(in, 3);
                continue;
            }
            double want[128 * 33];
            for (size_t i = 0; i < 128 * 33; i++) {
                int64_t x = (int64_t)arr_get(&in[0], i);
                int64_t s0 = col ? (int64_t)arr_get(&in[1], i / 33) : 240;
                int64_t s1 = col ? (int64_t)arr_get(&in[2], i / 33) : 5;
                want[i] = wrap(dts[d], (x & s0) ^ s1);
            }
            CHECK_ARR("tensor_scalar (x & s0) ^ s1", &out, want, 0, NULL, 0);
            nk_array_free(&out);
            arr_free_all(in, 3);
        }
}

/* ---- tensor_copy and memset on each engine */

static void k_copy_eng(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]);
    nk_tensor dst = new_tile(nc, x, K.dt, NK_SBUF);
    nk_isa_tensor_copy_at(nc, NK_HERE, dst, x, K.eng);
    ref_return_tile(nc, dst);
}

TEST(isa_tensor_copy_on_each_engine)
{
    const nk_engine engs[] = {NK_ENGINE_VECTOR, NK_ENGINE_SCALAR, NK_ENGINE_GPSIMD};
    const struct { nk_dtype in, out; } dts[] = {
        {NK_I32, NK_I32}, {NK_U32, NK_U32}, {NK_F32, NK_BF16}, {NK_BF16, NK_F32}, {NK_F32, NK_I16},
        {NK_I32, NK_F32}, {NK_FP8_E4M3FN, NK_FP8_E4M3FN},
    };
    int64_t shape[2] = {128, 45};
    uint64_t rng = 101;
    for (int e = 0; e < 3; e++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            nk_array in, out;
            arr_new(&in, dts[d].in, 2, shape);
            if (ref_is_float(dts[d].in))
                arr_fill(&in, &rng, -40000, 40000);
            else { /* every bit pattern: integers beyond 2^24 */
                uint8_t *b = in.data;
                for (size_t i = 0; i < nk_array_nbytes(&in); i++)
                    b[i] = (uint8_t)ref_rand64(&rng);
            }
            K.dt = dts[d].out;
            K.eng = engs[e];
            if (run_kernel("copy_eng", k_copy_eng, &in, 1, &out, 1)) {
                nk_array_free(&in);
                continue;
            }
            /* Vector and GpSimd copy bits when the dtypes match; the Scalar
             * engine (and any cast) goes through fp32 */
            int exact = dts[d].in == dts[d].out && engs[e] != NK_ENGINE_SCALAR;
            double *want = malloc(128 * 45 * sizeof *want);
            for (size_t i = 0; i < 128 * 45; i++)
                want[i] = exact ? arr_get(&in, i) : f32(arr_get(&in, i));
            char what[96];
            snprintf(what, sizeof what, "tensor_copy on %s %s -> %s", nk_engine_name(engs[e]),
                     nk_dtype_name(dts[d].in), nk_dtype_name(dts[d].out));
            CHECK_ARR(what, &out, want, 0, NULL, 0);
            free(want);
            nk_array_free(&out);
            nk_array_free(&in);
        }
}

static void k_memset_eng(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)args;
    (void)nargs;
    nk_tensor t = nk_ndarray(nc, K.shape, K.dt, NK_SBUF);
    nk_isa_memset_at(nc, NK_HERE, t, K.fill, K.eng);
    ref_return_tile(nc, t);
}

TEST(isa_memset_on_vector_and_gpsimd)
{
    const nk_engine engs[] = {NK_ENGINE_VECTOR, NK_ENGINE_GPSIMD};
    const double fills[] = {0.0, -1.5, 1e-3, 123456789.0, -7.5};
    K.shape = NK_SHAPE(64, 2, 9);
    for (int e = 0; e < 2; e++)
        for (int d = 0; d < NK_DTYPE_COUNT; d++)
            for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
                K.dt = (nk_dtype)d;
                K.eng = engs[e];
                K.fill = fills[f];
                nk_array out;
                if (run_kernel("memset", k_memset_eng, NULL, 0, &out, 1))
                    continue;
                double want[64 * 18];
                for (int i = 0; i < 64 * 18; i++)
                    want[i] = ref_is_float(K.dt) ? f32(fills[f]) : fills[f];
                char what[96];
                snprintf(what, sizeof what, "memset %g on %s", fills[f], nk_engine_name(K.eng));
                CHECK_ARR(what, &out, want, 0, NULL, 0);
                nk_array_free(&out);
            }
}

/* ---- affine_select */

static void k_select(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]);
    nk_tensor dst = new_tile(nc, x, K.dt, NK_SBUF);
    nk_isa_affine_select(nc, dst, K.pred, K.cmp, x, K.on_false);
    ref_return_tile(nc, dst);
}

TEST(isa_affine_select_every_comparison)
{
    const nk_affine preds[] = {
        {0, 1, {-1, 0, 0}},  /* p - f: a causal mask */
        {-10, 0, {1, 2, 0}}, /* f0 + 2 f1 - 10 on a 3-D tile */
        {5, -2, {0, 0, 1}},
    };
    const int64_t shapes[][3] = {{128, 128, 1}, {64, 8, 5}, {32, 4, 6}};
    int64_t ndims[3] = {2, 3, 3};
    uint64_t rng = 103;
    for (size_t pi = 0; pi < 3; pi++)
        for (int c = 0; c <= NK_CMP_LT; c++)
            for (int d = 0; d < 2; d++) {
                nk_array in, out;
                nk_dtype dt = d ? NK_BF16 : NK_F32;
                arr_new(&in, dt, (int)ndims[pi], shapes[pi]);
                arr_fill(&in, &rng, -5, 5);
                K.pred = preds[pi];
                K.cmp = (nk_cmp)c;
                K.dt = dt;
                K.on_false = d ? -3.0e38f : -INFINITY;
                if (run_kernel("affine_select", k_select, &in, 1, &out, 1)) {
                    nk_array_free(&in);
                    continue;
                }
                size_t n = nk_array_numel(&out);
                double *want = malloc(n * sizeof *want);
                int64_t f1 = ndims[pi] == 3 ? shapes[pi][2] : 1, f0 = shapes[pi][1];
                for (size_t i = 0; i < n; i++) {
                    int64_t p = (int64_t)i / (f0 * f1), a = ((int64_t)i / f1) % f0, b = (int64_t)i % f1;
                    if (ndims[pi] == 2)
                        b = 0;
                    int64_t v = preds[pi].c + preds[pi].cp * p + preds[pi].cf[0] * a + preds[pi].cf[1] * b;
                    int keep = c == NK_CMP_GE ? v >= 0 : c == NK_CMP_GT ? v > 0 : c == NK_CMP_EQ ? v == 0
                             : c == NK_CMP_NE ? v != 0 : c == NK_CMP_LE ? v <= 0 : v < 0;
                    want[i] = keep ? arr_get(&in, i) : f32(K.on_false);
                }
                char what[96];
                snprintf(what, sizeof what, "affine_select predicate %zu comparison %d", pi, c);
                CHECK_ARR(what, &out, want, 0, NULL, 0);
                free(want);
                nk_array_free(&out);
                nk_array_free(&in);
            }
}
