/*
 * test_kernels.c - the example kernels against double-precision references.
 *
 * Outputs are decoded with the references' own decoder (not the library's
 * conversions) and compared element by element with a bound derived for each
 * kernel and dtype (see kernels/registry.c for the derivations):
 * u = 2^-24 for fp32 results, plus u_bf16 = 2^-8 when the result is bf16.
 * The references themselves are checked against hand-computed values.
 */
#include "test.h"
#include "kernels.h"

#include <stdlib.h>
#include <time.h>

#define U32 0x1.0p-24
#define UBF16 0x1.0p-8

/* ---- running and comparing */

typedef struct result {
    const char *name;
    nk_array out;
    double *got, *ref;
    size_t n;
    int ok;
} result;

static nk_array make(nk_dtype dt, int64_t d0, int64_t d1, uint64_t seed, double lo, double hi)
{
    nk_array a;
    int64_t shape[2] = {d0, d1};
    int nd = d1 > 0 ? 2 : 1;
    if (nk_array_alloc(&a, dt, nd, shape))
        memset(&a, 0, sizeof a);
    else
        nk_fill_uniform(&a, seed, lo, hi);
    return a;
}

/* Runs kernel `name` on args (one output) and computes its reference. */
static result run(const char *name, const nk_array *args, int nargs)
{
    result r;
    memset(&r, 0, sizeof r);
    r.name = name;
    const nk_kernel_info *info = nk_builtin_kernel(name);
    CHECK(info != NULL);
    if (!info)
        return r;
    nk_kernel *k = nk_kernel_new(info->name, info->fn);
    int nouts = 0;
    int rc = nk_call(k, args, nargs, NULL, &r.out, 1, &nouts);
    CHECK_INT(rc, 0);
    if (rc) {
        printf("  %s: %s\n", name, nk_kernel_error(k));
        nk_kernel_free(k);
        return r;
    }
    nk_kernel_free(k);
    CHECK_INT(nouts, 1);
    r.n = nk_array_numel(&r.out);
    r.got = malloc(r.n * sizeof *r.got);
    r.ref = malloc(r.n * sizeof *r.ref);
    if (!r.got || !r.ref)
        return r;
    CHECK_INT(nk_ref_decode(&r.out, r.got), 0);
    CHECK_INT(info->reference(args, nargs, &r.ref, &r.n, 1), 0);
    r.ok = !nk_test_failed();
    return r;
}

static void done(result *r, nk_array *args, int nargs)
{
    free(r->got);
    free(r->ref);
    nk_array_free(&r->out);
    for (int i = 0; i < nargs; i++)
        nk_array_free(&args[i]);
}

/* |got - ref| <= atol + rtol |ref| everywhere (the first failures reported). */
static void check_close(const result *r, double rtol, double atol)
{
    if (!r->ok)
        return;
    size_t bad = 0;
    for (size_t i = 0; i < r->n; i++)
        if (!(fabs(r->got[i] - r->ref[i]) <= atol + rtol * fabs(r->ref[i])) && bad++ < 5)
            nk_test_fail(__FILE__, __LINE__, "%s [%lld x %lld] element %zu: %.9g vs reference %.9g (rtol %g, atol %g)",
                         r->name, (long long)r->out.shape[0], (long long)r->out.shape[1], i, r->got[i], r->ref[i],
                         rtol, atol);
    if (bad > 5)
        nk_test_fail(__FILE__, __LINE__, "%s: %zu of %zu elements outside the bound", r->name, bad, r->n);
}

/* ---- the references against hand-computed values */

TEST(reference_decoder_reads_every_format)
{
    uint16_t bf[3] = {0x3f80, 0xc040, 0x0080}; /* 1, -3, 2^-126 */
    uint16_t hf[3] = {0x3c00, 0x0001, 0xfc00}; /* 1, 2^-24, -inf */
    uint8_t e4[3] = {0x77, 0x7f, 0x08};        /* e4m3: 240, NaN, 2^-6 */
    uint8_t fn[3] = {0x7e, 0x7f, 0x01};        /* e4m3fn: 448, NaN, 2^-9 */
    uint8_t e5[3] = {0x7b, 0x7c, 0x01};        /* e5m2: 57344, inf, 2^-16 */
    int8_t i8[3] = {-128, 0, 127};
    nk_array a = {NK_BF16, 1, {3}, bf};
    double d[3];
    CHECK_INT(nk_ref_decode(&a, d), 0);
    CHECK(d[0] == 1.0 && d[1] == -3.0 && d[2] == ldexp(1, -126));
    a = (nk_array){NK_F16, 1, {3}, hf};
    nk_ref_decode(&a, d);
    CHECK(d[0] == 1.0 && d[1] == ldexp(1, -24) && isinf(d[2]) && d[2] < 0);
    a = (nk_array){NK_FP8_E4M3, 1, {3}, e4};
    nk_ref_decode(&a, d);
    CHECK(d[0] == 240.0 && isnan(d[1]) && d[2] == ldexp(1, -6));
    a = (nk_array){NK_FP8_E4M3FN, 1, {3}, fn};
    nk_ref_decode(&a, d);
    CHECK(d[0] == 448.0 && isnan(d[1]) && d[2] == ldexp(1, -9));
    a = (nk_array){NK_FP8_E5M2, 1, {3}, e5};
    nk_ref_decode(&a, d);
    CHECK(d[0] == 57344.0 && isinf(d[1]) && d[2] == ldexp(1, -16));
    a = (nk_array){NK_I8, 1, {3}, i8};
    nk_ref_decode(&a, d);
    CHECK(d[0] == -128.0 && d[1] == 0.0 && d[2] == 127.0);
}

TEST(reference_matmul_softmax_rmsnorm_hand_values)
{
    float lt[4] = {1, 2, 3, 4}; /* lhsT [K=2, M=2] */
    float rh[2] = {5, 6};       /* rhs [K=2, N=1] */
    nk_array in[2] = {{NK_F32, 2, {2, 2}, lt}, {NK_F32, 2, {2, 1}, rh}};
    double c[2], *pc = c;
    size_t n = 2;
    CHECK_INT(nk_ref_matmul(in, 2, &pc, &n, 1), 0);
    CHECK(c[0] == 23.0 && c[1] == 34.0); /* 1*5 + 3*6, 2*5 + 4*6 */
    n = 3;
    CHECK_INT(nk_ref_matmul(in, 2, &pc, &n, 1), NK_ESHAPE);

    float x[4] = {0, 0, 0, 0};
    nk_array sx = {NK_F32, 2, {1, 4}, x};
    double s[4], *ps = s;
    n = 4;
    CHECK_INT(nk_ref_softmax(&sx, 1, &ps, &n, 1), 0);
    for (int i = 0; i < 4; i++)
        CHECK(s[i] == 0.25);

    float xr[2] = {3, 4}, g[2] = {1, 2};
    nk_array rin[2] = {{NK_F32, 2, {1, 2}, xr}, {NK_F32, 1, {2}, g}};
    n = 2;
    CHECK_INT(nk_ref_rmsnorm(rin, 2, &ps, &n, 1), 0);
    double rms = sqrt(12.5 + 1e-6); /* mean of 9 and 16, plus eps */
    CHECK_NEAR(s[0], 3.0 / rms, 1e-15, 0);
    CHECK_NEAR(s[1], 8.0 / rms, 1e-15, 0);
}

TEST(example_args_reproducible_and_in_range)
{
    const nk_kernel_info *k = nk_builtin_kernel("softmax");
    CHECK(k != NULL);
    if (!k)
        return;
    nk_array a[1], b[1];
    CHECK_INT(nk_kernel_example_args(k, 7, a), 0);
    CHECK_INT(nk_kernel_example_args(k, 7, b), 0);
    CHECK_INT(a[0].shape[0], 250);
    CHECK_INT(a[0].shape[1], 1024);
    CHECK(!memcmp(a[0].data, b[0].data, nk_array_nbytes(&a[0])));
    const float *v = a[0].data;
    double lo = 1e9, hi = -1e9;
    for (size_t i = 0; i < nk_array_numel(&a[0]); i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    CHECK(lo >= -4.0 && lo < -3.9 && hi < 4.0 && hi > 3.9); /* softmax's range is [-4, 4) */
    nk_array_free(&a[0]);
    nk_array_free(&b[0]);
}

/* ---- every registered kernel on its example arguments, registry tolerance */

TEST(registry_kernels_match_reference_on_examples)
{
    CHECK(nk_builtin_kernel_count >= 6);
    for (int i = 0; i < nk_builtin_kernel_count; i++) {
        const nk_kernel_info *k = &nk_builtin_kernels[i];
        nk_array args[NK_KERNEL_MAX_ARGS];
        CHECK(k->reference != NULL);
        if (!k->reference || nk_kernel_example_args(k, 1, args))
            continue;
        result r = run(k->name, args, k->nargs);
        check_close(&r, k->rtol, k->atol);
        done(&r, args, k->nargs);
    }
}

TEST(registry_kernels_trace_for_trn2)
{
    nk_options o = {"trn2", 0};
    for (int i = 0; i < nk_builtin_kernel_count; i++) {
        const nk_kernel_info *k = &nk_builtin_kernels[i];
        nk_array args[NK_KERNEL_MAX_ARGS];
        for (int j = 0; j < k->nargs; j++) /* shapes only: tracing reads no data */
            args[j] = (nk_array){k->args[j].dtype, k->args[j].ndim,
                                 {k->args[j].shape[0], k->args[j].shape[1], k->args[j].shape[2], k->args[j].shape[3]},
                                 NULL};
        nk_kernel *kk = nk_kernel_new(k->name, k->fn);
        const nk_program *p = NULL;
        int rc = nk_kernel_compile(kk, args, k->nargs, &o, &p);
        CHECK_INT(rc, 0);
        if (rc)
            printf("  %s: %s\n", k->name, nk_kernel_error(kk));
        else
            CHECK_STR(nk_program_target(p), "trn2");
        nk_kernel_free(kk);
    }
}

/* ---- tensor_exp */

TEST(tensor_exp_250x512_f32_matches_exp)
{
    nk_array x = make(NK_F32, 250, 512, 11, -10, 10);
    result r = run("tensor_exp", &x, 1);
    if (r.ok) { /* exp straight from libm, not the reference */
        const float *xv = x.data;
        for (size_t i = 0; i < r.n; i++)
            CHECK_NEAR(r.got[i], exp((double)xv[i]), 2 * U32, 0);
    }
    done(&r, &x, 1);
}

TEST(tensor_exp_other_shapes_and_bf16)
{
    static const int64_t shapes[][2] = {{1, 1}, {128, 64}, {129, 3}, {384, 100}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        nk_array x = make(NK_F32, shapes[s][0], shapes[s][1], 20 + s, -5, 5);
        result r = run("tensor_exp", &x, 1);
        check_close(&r, 4 * U32, 0);
        done(&r, &x, 1);
    }
    nk_array xb = make(NK_BF16, 200, 300, 3, -5, 5);
    result r = run("tensor_exp", &xb, 1);
    CHECK_INT(r.out.dtype, NK_BF16);
    check_close(&r, UBF16 + 4 * U32, 0);
    done(&r, &xb, 1);
}

/* ---- tensor_add */

TEST(tensor_add_f32_is_the_rounded_exact_sum)
{
    static const int64_t shapes[][2] = {{250, 1000}, {128, 512}, {1, 1}, {129, 513}, {300, 2048}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        nk_array ab[2] = {make(NK_F32, shapes[s][0], shapes[s][1], 5 + s, -100, 100),
                          make(NK_F32, shapes[s][0], shapes[s][1], 50 + s, -1, 1)};
        result r = run("tensor_add", ab, 2);
        if (r.ok) { /* a double sum of two floats is exact; one rounding to fp32 */
            const float *a = ab[0].data, *b = ab[1].data;
            int bad = 0;
            for (size_t i = 0; i < r.n; i++)
                bad += r.got[i] != (double)(float)((double)a[i] + (double)b[i]);
            CHECK_INT(bad, 0);
        }
        done(&r, ab, 2);
    }
}

TEST(tensor_add_bf16_and_mixed_dtypes)
{
    nk_array ab[2] = {make(NK_BF16, 200, 700, 1, -8, 8), make(NK_BF16, 200, 700, 2, -8, 8)};
    result r = run("tensor_add", ab, 2);
    CHECK_INT(r.out.dtype, NK_BF16);
    check_close(&r, UBF16, 0);
    done(&r, ab, 2);
    /* bf16 + fp32: summed in fp32, stored in a's dtype */
    nk_array mx[2] = {make(NK_BF16, 130, 600, 3, -8, 8), make(NK_F32, 130, 600, 4, -1, 1)};
    r = run("tensor_add", mx, 2);
    CHECK_INT(r.out.dtype, NK_BF16);
    check_close(&r, UBF16 + 2 * U32, 0);
    done(&r, mx, 2);
}

/* ---- matmuls: per-element bound from sum_k |a_km| |b_kn| */

/* |got - ref| <= u_out |ref| + (1 + u_out) gamma_K sum_k |a||b|, gamma_K =
 * K u / (1 - K u): rigorous for any fp32 summation order. */
static void check_matmul(const result *r, const nk_array *ab, double u_out)
{
    if (!r->ok)
        return;
    int64_t K = ab[0].shape[0], M = ab[0].shape[1], N = ab[1].shape[1];
    double *a = malloc((size_t)(K * M) * sizeof *a), *b = malloc((size_t)(K * N) * sizeof *b);
    double *s = calloc((size_t)(M * N), sizeof *s);
    if (!a || !b || !s)
        goto out;
    nk_ref_decode(&ab[0], a);
    nk_ref_decode(&ab[1], b);
    for (int64_t k = 0; k < K; k++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++)
                s[m * N + n] += fabs(a[k * M + m] * b[k * N + n]);
    double gamma = (double)K * U32 / (1 - (double)K * U32);
    int bad = 0;
    for (int64_t i = 0; i < M * N && bad < 5; i++) {
        double bound = u_out * fabs(r->ref[i]) + (1 + u_out) * gamma * s[i];
        if (!(fabs(r->got[i] - r->ref[i]) <= bound)) {
            bad++;
            CHECK_NEAR(r->got[i], r->ref[i], 0, bound);
        }
    }
out:
    free(a);
    free(b);
    free(s);
}

TEST(matmul_basic_128x128x512_bf16)
{
    nk_array ab[2] = {make(NK_BF16, 128, 128, 1, -1, 1), make(NK_BF16, 128, 512, 2, -1, 1)};
    result r = run("matmul_basic", ab, 2);
    CHECK_INT(r.out.dtype, NK_BF16);
    CHECK_INT(r.out.shape[0], 128);
    CHECK_INT(r.out.shape[1], 512);
    check_matmul(&r, ab, UBF16);
    done(&r, ab, 2);
}

TEST(matmul_basic_small_and_f32)
{
    nk_array ab[2] = {make(NK_BF16, 64, 32, 3, -2, 2), make(NK_BF16, 64, 100, 4, -2, 2)};
    result r = run("matmul_basic", ab, 2);
    check_matmul(&r, ab, UBF16);
    done(&r, ab, 2);
    nk_array cd[2] = {make(NK_F32, 128, 128, 5, -1, 1), make(NK_F32, 128, 512, 6, -1, 1)};
    r = run("matmul_basic", cd, 2);
    CHECK_INT(r.out.dtype, NK_F32);
    check_matmul(&r, cd, U32);
    done(&r, cd, 2);
}

TEST(matmul_tiled_matches_reference_bf16)
{
    /* K, M, N: the example, one tile of each, and partial edge tiles */
    static const int64_t kmn[][3] = {{1024, 256, 1024}, {128, 128, 512}, {384, 256, 1536}, {200, 130, 700}};
    for (size_t s = 0; s < sizeof kmn / sizeof kmn[0]; s++) {
        nk_array ab[2] = {make(NK_BF16, kmn[s][0], kmn[s][1], 10 + s, -1, 1),
                          make(NK_BF16, kmn[s][0], kmn[s][2], 20 + s, -1, 1)};
        result r = run("matmul_tiled", ab, 2);
        CHECK_INT(r.out.dtype, NK_BF16);
        CHECK_INT(r.out.shape[0], kmn[s][1]);
        CHECK_INT(r.out.shape[1], kmn[s][2]);
        check_matmul(&r, ab, UBF16);
        done(&r, ab, 2);
    }
}

TEST(matmul_tiled_f32_inputs)
{
    nk_array ab[2] = {make(NK_F32, 256, 128, 7, -1, 1), make(NK_F32, 256, 512, 8, -1, 1)};
    result r = run("matmul_tiled", ab, 2);
    CHECK_INT(r.out.dtype, NK_F32);
    check_matmul(&r, ab, U32);
    done(&r, ab, 2);
}

/* Traces (and schedules) a kernel for argument shapes only; returns seconds. */
static double compile_only(const char *name, const nk_array *args, int nargs, size_t *ninstr)
{
    const nk_kernel_info *info = nk_builtin_kernel(name);
    nk_kernel *k = nk_kernel_new(name, info->fn);
    const nk_program *p = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = nk_kernel_compile(k, args, nargs, NULL, &p);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_INT(rc, 0);
    if (rc)
        printf("  %s\n", nk_kernel_error(k));
    *ninstr = p ? nk_program_num_instructions(p) : 0;
    nk_kernel_free(k);
    return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}

TEST(matmul_tiled_instruction_count)
{
    /* per output tile: K/128 x (two loads + one matmul), one copy, one store */
    nk_array ab[2] = {{NK_BF16, 2, {1024, 256}, NULL}, {NK_BF16, 2, {1024, 1024}, NULL}};
    size_t n = 0;
    compile_only("matmul_tiled", ab, 2, &n);
    CHECK_INT(n, (256 / 128) * (1024 / 512) * (1024 / 128 * 3 + 2));
}

TEST(matmul_tiled_traces_4096x8192x8192)
{
    /* lhsT [K=8192, M=4096], rhs [8192, 8192]: 32 x 16 output tiles, 64 K steps */
    nk_array ab[2] = {{NK_BF16, 2, {8192, 4096}, NULL}, {NK_BF16, 2, {8192, 8192}, NULL}};
    size_t n = 0;
    double sec = compile_only("matmul_tiled", ab, 2, &n);
    CHECK_INT(n, 32 * 16 * (64 * 3 + 2));
    CHECK(sec < 30.0); /* a loose ceiling that still catches quadratic tracing */
    if (getenv("NK_TEST_VERBOSE"))
        printf("  matmul_tiled [4096,8192]x[8192,8192]: %zu instructions traced in %.3f s\n", n, sec);
}

/* ---- softmax */

TEST(softmax_f32_shapes)
{
    static const int64_t shapes[][2] = {{250, 1024}, {128, 1}, {1, 7}, {300, 3000}, {129, 512}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t D = shapes[s][1];
        nk_array x = make(NK_F32, shapes[s][0], D, 30 + s, -4, 4);
        result r = run("softmax", &x, 1);
        check_close(&r, (double)(D + 16) * U32, 0);
        if (r.ok && D == 1) /* a single column: exactly 1 */
            for (size_t i = 0; i < r.n; i++)
                CHECK(r.got[i] == 1.0);
        done(&r, &x, 1);
    }
}

TEST(softmax_subtracts_the_max)
{
    /* exp(90) overflows fp32; with the max subtracted every row is finite */
    nk_array x = make(NK_F32, 64, 200, 9, 80, 100);
    result r = run("softmax", &x, 1);
    if (r.ok) {
        for (int64_t row = 0; row < 64; row++) {
            double sum = 0;
            for (int64_t j = 0; j < 200; j++) {
                CHECK(isfinite(r.got[row * 200 + j]));
                sum += r.got[row * 200 + j];
            }
            CHECK_NEAR(sum, 1.0, 0, (200 + 36) * U32); /* each element within (D + 36)u */
        }
    }
    /* |x - max| < 20 adds 20u to the bound */
    check_close(&r, (200 + 36) * U32, 0);
    done(&r, &x, 1);
}

TEST(softmax_bf16)
{
    nk_array x = make(NK_BF16, 130, 257, 12, -4, 4);
    result r = run("softmax", &x, 1);
    CHECK_INT(r.out.dtype, NK_BF16);
    check_close(&r, UBF16 + (257 + 16) * U32, 0);
    done(&r, &x, 1);
}

/* ---- rmsnorm */

TEST(rmsnorm_f32_shapes)
{
    static const int64_t shapes[][2] = {{250, 1024}, {128, 512}, {1, 3000}, {300, 700}, {5, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t R = shapes[s][0], D = shapes[s][1];
        nk_array in[2] = {make(NK_F32, R, D, 40 + s, -3, 3), make(NK_F32, D, 0, 60 + s, 0.5, 2)};
        result r = run("rmsnorm", in, 2);
        check_close(&r, (double)(D + 16) * U32, 0);
        done(&r, in, 2);
    }
}

TEST(rmsnorm_unit_gamma_gives_unit_rms)
{
    /* gamma = 1: every output row has mean square 1 (less the eps share) */
    nk_array in[2] = {make(NK_F32, 200, 600, 70, -2, 2), make(NK_F32, 600, 0, 0, 1, 1)};
    result r = run("rmsnorm", in, 2);
    if (r.ok) {
        const float *x = in[0].data;
        for (int64_t row = 0; row < 200; row++) {
            double ss = 0, xs = 0;
            for (int64_t j = 0; j < 600; j++) {
                ss += r.got[row * 600 + j] * r.got[row * 600 + j];
                xs += (double)x[row * 600 + j] * x[row * 600 + j];
            }
            double ms = xs / 600; /* y^2 mean is ms / (ms + eps) */
            CHECK_NEAR(ss / 600, ms / (ms + 1e-6), 2 * 616 * U32, 0);
        }
    }
    done(&r, in, 2);
}

TEST(rmsnorm_bf16)
{
    nk_array in[2] = {make(NK_BF16, 140, 1100, 80, -3, 3), make(NK_BF16, 1100, 0, 81, -2, 2)};
    result r = run("rmsnorm", in, 2);
    CHECK_INT(r.out.dtype, NK_BF16);
    check_close(&r, UBF16 + (1100 + 16) * U32, 0);
    done(&r, in, 2);
}

TEST(rmsnorm_gamma_broadcast_is_outside_the_row_loop)
{
    /* one gamma load and ceil(D/512) broadcast matmuls, whatever the rows */
    nk_array a[2] = {{NK_F32, 2, {1280, 1100}, NULL}, {NK_F32, 1, {1100}, NULL}};
    const nk_kernel_info *info = nk_builtin_kernel("rmsnorm");
    nk_kernel *k = nk_kernel_new("rmsnorm", info->fn);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, a, 2, NULL, &p), 0);
    if (p) {
        /* 1 gamma load + 1 ones memset + 3 x (matmul, copy); per 10 row tiles:
         * load, activation, tensor_scalar, rsqrt, tensor_scalar, tensor_tensor, store */
        CHECK_INT(nk_program_num_instructions(p), 2 + 3 * 2 + 10 * 7);
    }
    nk_kernel_free(k);
}
