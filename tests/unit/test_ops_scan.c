/*
 * test_ops_scan.c - nisa.tensor_tensor_scan (the fused mamba tutorial's
 * recurrence), nisa.scalar_tensor_tensor, nisa.tensor_scalar_reduce and
 * nisa.activation_reduce: values, costs and every check the tracer makes.
 *
 * References model the Vector engine's fp32 arithmetic step by step in
 * double: every fp32 operation is the exact result rounded once to fp32
 * (ref_round), the scan's state stays fp32 between steps, and the result is
 * rounded to the destination's dtype. So values are compared exactly (0
 * ulps), except the add-reductions: those allow the fp32 summation bound
 * (n - 1) 2^-24 sum |v_i| (any order of fp32 additions stays within it)
 * plus one ulp of the output, and multiply-reductions n 2^-24 |product|
 * plus one ulp.
 */
#include "test_ops_util.h"

#include <math.h>
#include <stdlib.h>

#define U REF_U32

static int at;

static double f32(double x) { return ref_round(NK_F32, x); }

/* x op y with one fp32 rounding */
static double ref_alu(nk_alu op, double x, double y)
{
    switch (op) {
    case NK_ALU_ADD: return f32(x + y);
    case NK_ALU_SUBTRACT: return f32(x - y);
    case NK_ALU_MULTIPLY: return f32(x * y);
    case NK_ALU_DIVIDE: return f32(x / y);
    case NK_ALU_MAX: return x > y ? x : y;
    case NK_ALU_MIN: return x < y ? x : y;
    default: return NAN;
    }
}

static struct {
    nk_alu op0, op1;
    int r0, r1, init_col, psum0;
    float init;
    nk_dtype dt;
    int64_t split; /* scan: 0, or the column where a second scan continues the first */
} K;

/* ---- tensor_tensor_scan */

/* args: data0, data1 [P, F...], initial [P, 1] */
static void k_scan(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = nk_load(nc, args[0]), b = nk_load(nc, args[1]), c = nk_load(nc, args[2]);
    if (K.psum0) { /* data0 read from PSUM */
        nk_shape s = {a.ndim, {0}};
        for (int i = 0; i < a.ndim; i++)
            s.d[i] = a.shape[i];
        nk_tensor ps = nk_ndarray(nc, s, (nk_dtype)a.dtype, NK_PSUM);
        nk_isa_tensor_copy(nc, ps, a);
        a = ps;
    }
    nk_shape s = {a.ndim, {0}};
    for (int i = 0; i < a.ndim; i++)
        s.d[i] = a.shape[i];
    nk_tensor dst = nk_ndarray(nc, s, K.dt, NK_SBUF);
    nk_operand init = K.init_col ? nk_col(c) : nk_imm(K.init);
    if (!K.split) {
        nk_isa_tensor_tensor_scan(nc, dst, a, b, init, K.op0, K.op1, K.r0, K.r1);
    } else { /* the mamba v3 pattern: the second half starts from the first's last column */
        int64_t F = a.shape[1], h = K.split;
        nk_isa_tensor_tensor_scan(nc, nk_ix(nc, dst, NK_ALL, nk_r(0, h)), nk_ix(nc, a, NK_ALL, nk_r(0, h)),
                                  nk_ix(nc, b, NK_ALL, nk_r(0, h)), init, K.op0, K.op1, K.r0, K.r1);
        nk_isa_tensor_tensor_scan(nc, nk_ix(nc, dst, NK_ALL, nk_r(h, F)), nk_ix(nc, a, NK_ALL, nk_r(h, F)),
                                  nk_ix(nc, b, NK_ALL, nk_r(h, F)), nk_col(nk_ix(nc, dst, NK_ALL, nk_r(h - 1, h))),
                                  K.op0, K.op1, K.r0, K.r1);
    }
    ref_return_tile(nc, dst);
}

static void check_scan(nk_dtype in_dt, int ndim, const int64_t *shape, nk_alu op0, nk_alu op1, int r0, int r1,
                       int init_col, float init, nk_dtype dt, int64_t split, int psum0, uint64_t seed)
{
    K.op0 = op0, K.op1 = op1, K.r0 = r0, K.r1 = r1, K.init_col = init_col, K.init = init, K.dt = dt;
    K.split = split, K.psum0 = psum0;
    int64_t P = shape[0], F = 1, cs[2] = {shape[0], 1};
    for (int i = 1; i < ndim; i++)
        F *= shape[i];
    nk_array in[3], out;
    arr_new(&in[0], in_dt, ndim, shape);
    arr_new(&in[1], in_dt, ndim, shape);
    arr_new(&in[2], NK_F32, 2, cs);
    arr_fill(&in[0], &seed, 0.5, 1.0);
    arr_fill(&in[1], &seed, -1.0, 1.0);
    arr_fill(&in[2], &seed, -2.0, 2.0);
    double *a = arr_values(&in[0]), *b = arr_values(&in[1]), *c = arr_values(&in[2]);
    double *want = malloc((size_t)(P * F) * sizeof *want);
    for (int64_t p = 0; p < P; p++) {
        double st = init_col ? c[p] : f32(init);
        for (int64_t i = 0; i < F; i++) {
            double x = a[p * F + i], y = b[p * F + i];
            double t = r0 ? ref_alu(op0, st, x) : ref_alu(op0, x, st);
            st = r1 ? ref_alu(op1, y, t) : ref_alu(op1, t, y);
            want[p * F + i] = st;
            if (split && i == split - 1) /* the second scan starts from the stored column */
                st = ref_round(dt, st);
        }
    }
    if (run_kernel("scan", k_scan, in, 3, &out, 1) == 0) {
        CHECK_ARR("tensor_tensor_scan", &out, want, 0, NULL, 0);
        nk_array_free(&out);
    }
    free(want);
    free(a);
    free(b);
    free(c);
    arr_free_all(in, 3);
}

TEST(tensor_tensor_scan_linear_recurrence)
{
    int64_t s[2] = {128, 512};
    /* mamba: state = deltaA * state + deltaBu, from 0 */
    check_scan(NK_F32, 2, s, NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0, 0, 0.0f, NK_F32, 0, 0, 1);
    check_scan(NK_F32, 2, s, NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0, 0, 0.75f, NK_F32, 0, 0, 2);
    check_scan(NK_F32, 2, s, NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0, 1, 0.0f, NK_F32, 0, 0, 3); /* [P, 1] initial */
    check_scan(NK_BF16, 2, s, NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0, 0, 0.0f, NK_BF16, 0, 0, 4);
    check_scan(NK_F32, 2, s, NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0, 1, 0.0f, NK_BF16, 0, 0, 5); /* fp32 state, bf16 out */
    check_scan(NK_F32, 2, s, NK_ALU_MULTIPLY, NK_ALU_ADD, 1, 1, 0, 0.5f, NK_F32, 0, 1, 6); /* data0 in PSUM */
}

TEST(tensor_tensor_scan_operators_and_reverse_flags)
{
    int64_t s[2] = {64, 200};
    for (int r = 0; r < 4; r++)
        check_scan(NK_F32, 2, s, NK_ALU_SUBTRACT, NK_ALU_SUBTRACT, r & 1, r >> 1, 1, 0.0f, NK_F32, 0, 0, 10 + r);
    check_scan(NK_F32, 2, s, NK_ALU_MAX, NK_ALU_ADD, 0, 0, 0, -1.0f, NK_F32, 0, 0, 20); /* max-plus */
    check_scan(NK_F32, 2, s, NK_ALU_MULTIPLY, NK_ALU_MIN, 1, 0, 0, 1.0f, NK_F32, 0, 0, 21);
    check_scan(NK_BF16, 2, s, NK_ALU_DIVIDE, NK_ALU_ADD, 1, 1, 0, 1.0f, NK_F32, 0, 0, 22);
    int64_t s3[3] = {32, 4, 16}; /* several free axes: one row-major sequence per partition */
    check_scan(NK_F32, 3, s3, NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0, 1, 0.0f, NK_F32, 0, 0, 23);
}

TEST(tensor_tensor_scan_continues_from_a_column_of_its_result)
{
    int64_t s[2] = {128, 1024};
    /* two scans of 512, the second from the first's last column, equal one of 1024 */
    check_scan(NK_F32, 2, s, NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0, 0, 0.0f, NK_F32, 512, 0, 30);
    /* with a bf16 result the carried column is the rounded one */
    check_scan(NK_F32, 2, s, NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0, 0, 0.0f, NK_BF16, 300, 0, 31);
}

/* ---- scalar_tensor_tensor */

static void k_stt(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = nk_load(nc, args[0]), b = nk_load(nc, args[1]), c = nk_load(nc, args[2]);
    nk_tensor dst = nk_ndarray(nc, NK_SHAPE(a.shape[0], a.shape[1]), K.dt, NK_SBUF);
    nk_isa_scalar_tensor_tensor(nc, dst, a, K.op0, K.init_col ? nk_col(c) : nk_imm(K.init), K.op1, b, K.r0, K.r1);
    ref_return_tile(nc, dst);
}

static void check_stt(nk_dtype in_dt, nk_alu op0, nk_alu op1, int r0, int r1, int col, float o0, nk_dtype dt,
                      uint64_t seed)
{
    K.op0 = op0, K.op1 = op1, K.r0 = r0, K.r1 = r1, K.init_col = col, K.init = o0, K.dt = dt;
    int64_t s[2] = {128, 96}, cs[2] = {128, 1};
    nk_array in[3], out;
    arr_new(&in[0], in_dt, 2, s);
    arr_new(&in[1], in_dt, 2, s);
    arr_new(&in[2], NK_F32, 2, cs);
    arr_fill(&in[0], &seed, -3, 3);
    arr_fill(&in[1], &seed, 0.25, 2);
    arr_fill(&in[2], &seed, -1, 1);
    double *a = arr_values(&in[0]), *b = arr_values(&in[1]), *c = arr_values(&in[2]), want[128 * 96];
    for (int p = 0; p < 128; p++)
        for (int i = 0; i < 96; i++) {
            double x = a[p * 96 + i], y = b[p * 96 + i], s0 = col ? c[p] : f32(o0);
            double t = r0 ? ref_alu(op0, s0, x) : ref_alu(op0, x, s0);
            want[p * 96 + i] = r1 ? ref_alu(op1, y, t) : ref_alu(op1, t, y);
        }
    if (run_kernel("stt", k_stt, in, 3, &out, 1) == 0) {
        CHECK_ARR("scalar_tensor_tensor", &out, want, 0, NULL, 0);
        nk_array_free(&out);
    }
    free(a);
    free(b);
    free(c);
    arr_free_all(in, 3);
}

TEST(scalar_tensor_tensor_values)
{
    for (int r = 0; r < 4; r++) {
        check_stt(NK_F32, NK_ALU_SUBTRACT, NK_ALU_MULTIPLY, r & 1, r >> 1, 1, 0, NK_F32, 40 + r);
        check_stt(NK_F32, NK_ALU_SUBTRACT, NK_ALU_DIVIDE, r & 1, r >> 1, 0, 0.5f, NK_F32, 50 + r);
    }
    check_stt(NK_BF16, NK_ALU_SUBTRACT, NK_ALU_MULTIPLY, 0, 0, 1, 0, NK_BF16, 60);
    check_stt(NK_BF16, NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0, 0, 1.5f, NK_F32, 61);
    check_stt(NK_F32, NK_ALU_MAX, NK_ALU_MIN, 0, 1, 1, 0, NK_F16, 62);
}

/* ---- tensor_scalar_reduce */

static void k_tsr(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = nk_load(nc, args[0]), c = nk_load(nc, args[1]);
    int64_t P = a.shape[0];
    nk_tensor dst = nk_ndarray(nc, NK_SHAPE(P, a.shape[1]), K.dt, NK_SBUF);
    nk_tensor r = nk_ndarray(nc, NK_SHAPE(P, 1), NK_F32, NK_SBUF);
    nk_isa_tensor_scalar_reduce(nc, dst, a, K.op0, K.init_col ? nk_col(c) : nk_imm(K.init), K.op1, r);
    ref_return_tile(nc, dst);
    ref_return_tile(nc, r);
}

static void check_tsr(nk_alu op0, nk_alu rop, int col, float o0, nk_dtype dt, double lo, double hi, uint64_t seed)
{
    K.op0 = op0, K.op1 = rop, K.init_col = col, K.init = o0, K.dt = dt;
    enum { P = 128, F = 64 };
    int64_t s[2] = {P, F}, cs[2] = {P, 1};
    nk_array in[2], out[2];
    arr_new(&in[0], NK_F32, 2, s);
    arr_new(&in[1], NK_F32, 2, cs);
    arr_fill(&in[0], &seed, lo, hi);
    arr_fill(&in[1], &seed, 0.9, 1.1);
    double *a = arr_values(&in[0]), *c = arr_values(&in[1]), want[P * F], red[P], tol[P];
    for (int p = 0; p < P; p++) {
        double acc = rop == NK_ALU_MAX ? -INFINITY : rop == NK_ALU_MIN ? INFINITY : rop == NK_ALU_MULTIPLY ? 1 : 0;
        double sabs = 0;
        for (int i = 0; i < F; i++) {
            double v = ref_alu(op0, a[p * F + i], col ? c[p] : f32(o0));
            want[p * F + i] = v;
            sabs += fabs(v);
            acc = rop == NK_ALU_ADD ? acc + v : rop == NK_ALU_MULTIPLY ? acc * v : ref_alu(rop, acc, v);
        }
        red[p] = acc;
        tol[p] = rop == NK_ALU_ADD ? (F - 1) * U * sabs : rop == NK_ALU_MULTIPLY ? F * U * fabs(acc) : 0;
    }
    if (run_kernel("tsr", k_tsr, in, 2, out, 2) == 0) {
        CHECK_ARR("tensor_scalar_reduce dst", &out[0], want, 0, NULL, 0);
        CHECK_ARR("tensor_scalar_reduce reduce_res", &out[1], red, 1, tol, 0);
        arr_free_all(out, 2);
    }
    free(a);
    free(c);
    arr_free_all(in, 2);
}

TEST(tensor_scalar_reduce_values)
{
    check_tsr(NK_ALU_MULTIPLY, NK_ALU_ADD, 1, 0, NK_F32, -1, 1, 70);
    check_tsr(NK_ALU_SUBTRACT, NK_ALU_MAX, 0, 0.25f, NK_F32, -1, 1, 71);
    check_tsr(NK_ALU_ADD, NK_ALU_MIN, 1, 0, NK_BF16, -1, 1, 72); /* reduced before the cast to bf16 */
    check_tsr(NK_ALU_MULTIPLY, NK_ALU_MULTIPLY, 1, 0, NK_F32, 0.9, 1.1, 73);
    check_tsr(NK_ALU_DIVIDE, NK_ALU_ADD, 0, 3.0f, NK_F32, 0, 1, 74);
}

/* ---- activation_reduce */

static nk_act g_act;

static void k_act_reduce(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = nk_load(nc, args[0]), c = nk_load(nc, args[1]);
    int64_t P = a.shape[0];
    nk_tensor dst = nk_ndarray(nc, NK_SHAPE(P, a.shape[1]), NK_F32, NK_SBUF);
    nk_tensor r = nk_ndarray(nc, NK_SHAPE(P, 1), NK_F32, NK_SBUF);
    nk_isa_activation_reduce(nc, dst, g_act, a, NK_ALU_ADD, r, nk_col(c), nk_imm(0.5f));
    ref_return_tile(nc, dst);
    ref_return_tile(nc, r);
}

TEST(activation_reduce_sums_the_activated_values)
{
    enum { P = 128, F = 300 };
    const nk_act fs[] = {NK_ACT_COPY, NK_ACT_SQUARE, NK_ACT_RELU};
    for (size_t k = 0; k < sizeof fs / sizeof fs[0]; k++) {
        g_act = fs[k];
        int64_t s[2] = {P, F}, cs[2] = {P, 1};
        uint64_t seed = 80 + k;
        nk_array in[2], out[2];
        arr_new(&in[0], NK_BF16, 2, s);
        arr_new(&in[1], NK_F32, 2, cs);
        arr_fill(&in[0], &seed, -2, 2);
        arr_fill(&in[1], &seed, -1, 1);
        double *a = arr_values(&in[0]), *c = arr_values(&in[1]);
        double *want = malloc(P * F * sizeof *want), red[P], tol[P];
        for (int p = 0; p < P; p++) {
            double sum = 0, sabs = 0;
            for (int i = 0; i < F; i++) {
                double t = f32(f32(a[p * F + i] * 0.5) + c[p]); /* data * scale + bias */
                double v = g_act == NK_ACT_SQUARE ? f32(t * t) : g_act == NK_ACT_RELU ? (t > 0 ? t : 0) : t;
                want[p * F + i] = v;
                sum += v;
                sabs += fabs(v);
            }
            red[p] = sum;
            tol[p] = (F - 1) * U * sabs;
        }
        if (run_kernel("act_reduce", k_act_reduce, in, 2, out, 2) == 0) {
            CHECK_ARR("activation_reduce dst", &out[0], want, 0, NULL, 0);
            CHECK_ARR("activation_reduce reduce_res", &out[1], red, 1, tol, 0);
            arr_free_all(out, 2);
        }
        free(want);
        free(a);
        free(c);
        arr_free_all(in, 2);
    }
}

/* ---- costs [ISA-old], after the 100-cycle static overhead [A2][PG]:
 *   tensor_tensor_scan   max(MIN_II, 2N)
 *   scalar_tensor_tensor N for bf16 data and operand1, subtract then
 *                        multiply and N even; else 2N (no MIN_II floor)
 *   tensor_scalar_reduce max(MIN_II, N) + MIN_II
 *   activation_reduce    max(MIN_II, N) + MIN_II Scalar cycles
 * Vector 1.12 / Scalar 1.4 GHz on trn1, 0.96 / 1.2 on trn2 [A2][A3]. */

static struct {
    nk_dtype dt;
    nk_alu op0, op1;
    int which;
} C;

/* one instruction after the loads, so its bar is its whole cost */
static void k_cost(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = nk_load(nc, args[0]), b = nk_load(nc, args[1]);
    int64_t P = a.shape[0], F = a.shape[1];
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(P, F), C.dt, NK_SBUF), r = nk_ndarray(nc, NK_SHAPE(P, 1), NK_F32, NK_SBUF);
    switch (C.which) {
    case 0: nk_isa_tensor_tensor_scan(nc, d, a, b, nk_imm(0), NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0); break;
    case 1: nk_isa_scalar_tensor_tensor(nc, d, a, C.op0, nk_imm(1), C.op1, b, 0, 0); break;
    case 2: nk_isa_tensor_scalar_reduce(nc, d, a, NK_ALU_MULTIPLY, nk_imm(2), NK_ALU_ADD, r); break;
    default: nk_isa_activation_reduce(nc, d, NK_ACT_EXP, a, NK_ALU_ADD, r, nk_imm(0), nk_imm(1)); break;
    }
    ref_return_tile(nc, d);
}

static double cost_of(int which, int op, int64_t F, const char *target)
{
    C.which = which;
    int64_t s[2] = {128, F};
    nk_array in[2] = {arr_shape(C.dt, 2, s), arr_shape(C.dt, 2, s)};
    timed t;
    double ns = -1;
    if (timed_run(&t, k_cost, in, 2, target) == 0)
        ns = timed_bar_ns(&t, op, 0);
    timed_free(&t);
    return ns;
}

static void check_cost(nk_dtype dt, int64_t F, nk_alu op0, nk_alu op1, const char *target)
{
    C.dt = dt, C.op0 = op0, C.op1 = op1;
    int trn2 = !strcmp(target, "trn2");
    double dve = trn2 ? 0.96 : 1.12, act = trn2 ? 1.2 : 1.4, n = (double)F;
    int fast = dt == NK_BF16 && op0 == NK_ALU_SUBTRACT && op1 == NK_ALU_MULTIPLY && F % 2 == 0;
    CHECK_NEAR(cost_of(0, NK_OP_TENSOR_TENSOR_SCAN, F, target), (100 + fmax(64, 2 * n)) / dve, 1e-12, 0);
    CHECK_NEAR(cost_of(1, NK_OP_SCALAR_TENSOR_TENSOR, F, target), (100 + (fast ? n : 2 * n)) / dve, 1e-12, 0);
    CHECK_NEAR(cost_of(2, NK_OP_TENSOR_SCALAR_REDUCE, F, target), (100 + fmax(64, n) + 64) / dve, 1e-12, 0);
    CHECK_NEAR(cost_of(3, NK_OP_ACTIVATION, F, target), (100 + fmax(64, n) + 64) / act, 1e-12, 0);
}

TEST(scan_and_fused_alu_op_costs)
{
    check_cost(NK_F32, 512, NK_ALU_SUBTRACT, NK_ALU_MULTIPLY, "trn1");
    check_cost(NK_BF16, 512, NK_ALU_SUBTRACT, NK_ALU_MULTIPLY, "trn1"); /* stt: N */
    check_cost(NK_BF16, 511, NK_ALU_SUBTRACT, NK_ALU_MULTIPLY, "trn1"); /* odd N: 2N */
    check_cost(NK_BF16, 512, NK_ALU_ADD, NK_ALU_MULTIPLY, "trn1");      /* other operators: 2N */
    check_cost(NK_F32, 16, NK_ALU_SUBTRACT, NK_ALU_MULTIPLY, "trn1");   /* MIN_II floors; stt has none */
    check_cost(NK_BF16, 1024, NK_ALU_SUBTRACT, NK_ALU_MULTIPLY, "trn2");
}

/* ---- the tracer's checks */

static void k_err_scan_bitwise(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_tensor_scan(nc, d, x, x, nk_imm(0), NK_ALU_BITWISE_AND, NK_ALU_ADD, 0, 0);
}

static void k_err_scan_bypass(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_tensor_scan(nc, d, x, x, nk_imm(0), NK_ALU_MULTIPLY, NK_ALU_BYPASS, 0, 0);
}

static nk_tensor psum_copy(nk_ctx *nc, nk_tensor x)
{
    nk_tensor ps = nk_ndarray(nc, NK_SHAPE(x.shape[0], x.shape[1]), NK_F32, NK_PSUM);
    nk_isa_tensor_copy(nc, ps, x);
    return ps;
}

static void k_err_scan_psum(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    nk_tensor p0 = psum_copy(nc, x), p1 = psum_copy(nc, x);
    at = __LINE__; nk_isa_tensor_tensor_scan(nc, d, p0, p1, nk_imm(0), NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0);
}

static void k_err_scan_shapes(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    nk_tensor h = nk_ix(nc, x, NK_ALL, nk_r(0, 32));
    at = __LINE__; nk_isa_tensor_tensor_scan(nc, d, x, h, nk_imm(0), NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0);
}

static void k_err_scan_dst(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 63), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_tensor_scan(nc, d, x, x, nk_imm(0), NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0);
}

static void k_err_scan_initial(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    nk_tensor two = nk_ix(nc, x, NK_ALL, nk_r(0, 2));
    at = __LINE__; nk_isa_tensor_tensor_scan(nc, d, x, x, nk_col(two), NK_ALU_MULTIPLY, NK_ALU_ADD, 0, 0);
}

static void k_err_stt_operand1(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    nk_tensor h = nk_ix(nc, x, nk_r(0, 64), NK_ALL);
    at = __LINE__; nk_isa_scalar_tensor_tensor(nc, d, x, NK_ALU_SUBTRACT, nk_imm(0), NK_ALU_MULTIPLY, h, 0, 0);
}

static void k_err_stt_psum(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    nk_tensor p0 = psum_copy(nc, x), p1 = psum_copy(nc, x);
    at = __LINE__; nk_isa_scalar_tensor_tensor(nc, d, p0, NK_ALU_SUBTRACT, nk_imm(0), NK_ALU_MULTIPLY, p1, 0, 0);
}

static void k_err_stt_bitwise(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_I32, NK_SBUF);
    at = __LINE__; nk_isa_scalar_tensor_tensor(nc, d, x, NK_ALU_ADD, nk_imm(0), NK_ALU_BITWISE_XOR, x, 0, 0);
}

static void k_err_stt_operand0(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_scalar_tensor_tensor(nc, d, x, NK_ALU_SUBTRACT, nk_col(x), NK_ALU_MULTIPLY, x, 0, 0);
}

static void k_err_tsr_reduce_op(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    nk_tensor r = nk_ndarray(nc, NK_SHAPE(128, 1), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_scalar_reduce(nc, d, x, NK_ALU_MULTIPLY, nk_imm(2), NK_ALU_SUBTRACT, r);
}

static void k_err_tsr_no_res(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_scalar_reduce(nc, d, x, NK_ALU_MULTIPLY, nk_imm(2), NK_ALU_ADD, NK_NONE);
}

static void k_err_tsr_res_shape(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    nk_tensor r = nk_ndarray(nc, NK_SHAPE(128, 2), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_scalar_reduce(nc, d, x, NK_ALU_MULTIPLY, nk_imm(2), NK_ALU_ADD, r);
}

static void k_err_tsr_op0(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    nk_tensor r = nk_ndarray(nc, NK_SHAPE(128, 1), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_scalar_reduce(nc, d, x, NK_ALU_BYPASS, nk_imm(2), NK_ALU_ADD, r);
}

static void k_err_act_reduce_op(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    nk_tensor r = nk_ndarray(nc, NK_SHAPE(128, 1), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_activation_reduce(nc, d, NK_ACT_EXP, x, NK_ALU_MAX, r, nk_imm(0), nk_imm(1));
}

static void k_err_act_reduce_res(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_activation_reduce(nc, d, NK_ACT_EXP, x, NK_ALU_ADD, NK_NONE, nk_imm(0), nk_imm(1));
}

static void k_err_act_reduce_shape(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    nk_tensor r = nk_ndarray(nc, NK_SHAPE(64, 1), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_activation_reduce(nc, d, NK_ACT_EXP, x, NK_ALU_ADD, r, nk_imm(0), nk_imm(1));
}

TEST(scan_and_fused_alu_op_errors)
{
    int64_t s[2] = {128, 64};
    nk_array x = arr_shape(NK_F32, 2, s), xi = arr_shape(NK_I32, 2, s);
    EXPECT_TRACE_ERROR(k_err_scan_bitwise, &x, 1, NK_EINVAL, &at,
                       "tensor_tensor_scan: op0 bitwise_and is not an arithmetic operator");
    EXPECT_TRACE_ERROR(k_err_scan_bypass, &x, 1, NK_EINVAL, &at, "tensor_tensor_scan: op1 bypass");
    EXPECT_TRACE_ERROR(k_err_scan_psum, &x, 1, NK_EMEMORY, &at,
                       "tensor_tensor_scan: data0 and data1 are both in PSUM");
    EXPECT_TRACE_ERROR(k_err_scan_shapes, &x, 1, NK_ESHAPE, &at,
                       "tensor_tensor_scan: data0 [128, 64] and data1 [128, 32] differ");
    EXPECT_TRACE_ERROR(k_err_scan_dst, &x, 1, NK_ESHAPE, &at, "tensor_tensor_scan: dst [128, 63] and data0 [128, 64]");
    EXPECT_TRACE_ERROR(k_err_scan_initial, &x, 1, NK_ESHAPE, &at,
                       "tensor_tensor_scan: initial must be a per-partition column [128, 1], got [128, 2]");
    EXPECT_TRACE_ERROR(k_err_stt_operand1, &x, 1, NK_ESHAPE, &at,
                       "scalar_tensor_tensor: operand1 [64, 64] and data [128, 64] differ");
    EXPECT_TRACE_ERROR(k_err_stt_psum, &x, 1, NK_EMEMORY, &at,
                       "scalar_tensor_tensor: data and operand1 are both in PSUM");
    EXPECT_TRACE_ERROR(k_err_stt_bitwise, &xi, 1, NK_EINVAL, &at,
                       "scalar_tensor_tensor: op1 bitwise_xor is not an arithmetic operator");
    EXPECT_TRACE_ERROR(k_err_stt_operand0, &x, 1, NK_ESHAPE, &at,
                       "scalar_tensor_tensor: operand0 must be a per-partition column [128, 1], got [128, 64]");
    EXPECT_TRACE_ERROR(k_err_tsr_reduce_op, &x, 1, NK_EINVAL, &at,
                       "tensor_scalar_reduce: reduce_op subtract is not supported (add, multiply, maximum or minimum)");
    EXPECT_TRACE_ERROR(k_err_tsr_no_res, &x, 1, NK_EINVAL, &at,
                       "tensor_scalar_reduce: reduce_res is missing; it takes a [128, 1] tile");
    EXPECT_TRACE_ERROR(k_err_tsr_res_shape, &x, 1, NK_ESHAPE, &at,
                       "tensor_scalar_reduce: reduce_res must be [128, 1], got [128, 2]");
    EXPECT_TRACE_ERROR(k_err_tsr_op0, &x, 1, NK_EINVAL, &at, "tensor_scalar_reduce: op0 bypass");
    EXPECT_TRACE_ERROR(k_err_act_reduce_op, &x, 1, NK_EINVAL, &at,
                       "activation_reduce: reduce_op maximum is not supported", "nl.add");
    EXPECT_TRACE_ERROR(k_err_act_reduce_res, &x, 1, NK_EINVAL, &at,
                       "activation_reduce: reduce_res is missing; it takes a [128, 1] tile");
    EXPECT_TRACE_ERROR(k_err_act_reduce_shape, &x, 1, NK_ESHAPE, &at,
                       "activation_reduce: reduce_res must be [128, 1], got [64, 1]");
}
