/*
 * test_ops_mm.c - the Tensor engine and index ops: transpose, matmul (with
 * and without transpose_x, accumulated across a K loop), nc_matmul,
 * nc_transpose on the Tensor and Vector engines, broadcast both ways, iota;
 * and determinism of whole runs.
 *
 * Matmul reference: the dot products in double. Tolerance: PSUM accumulates
 * in fp32, so |C - ref| <= (K + 1) * 2^-24 * sum_k |a_k b_k| (the classic
 * bound for K fp32 products and additions in any order). Transposes,
 * broadcasts and iota move values exactly.
 */
#include "test_ops_ref.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    int tx;
    int64_t ktile;
    nk_dtype dt;
    nk_shape shape;
    nk_affine aff;
    nk_engine eng;
} K;

/* ---- transpose */

static void k_transpose(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    ref_return_tile(nc, nk_transpose(nc, nk_load(nc, args[0])));
}

TEST(mm_transpose_moves_values_exactly)
{
    const nk_dtype dts[] = {NK_F32, NK_BF16, NK_F16, NK_FP8_E4M3, NK_FP8_E5M2};
    const int64_t shapes[][2] = {{128, 128}, {96, 40}, {1, 77}, {128, 1}, {33, 128}};
    uint64_t rng = 43;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            nk_array in, out;
            arr_new(&in, dts[d], 2, shapes[s]);
            arr_fill(&in, &rng, -100, 100);
            if (!run_kernel("transpose", k_transpose, &in, 1, &out, 1)) {
                int64_t P = shapes[s][0], F = shapes[s][1];
                CHECK_INT(out.shape[0], F);
                CHECK_INT(out.shape[1], P);
                CHECK_INT(out.dtype, dts[d]);
                double *want = malloc((size_t)(P * F) * sizeof *want);
                for (int64_t f = 0; f < F; f++)
                    for (int64_t p = 0; p < P; p++)
                        want[f * P + p] = arr_get(&in, (size_t)(p * F + f));
                CHECK_ARR("nk_transpose", &out, want, 0, NULL, 0);
                free(want);
                nk_array_free(&out);
            }
            nk_array_free(&in);
        }
}

/* ---- matmul */

/* ref[m][n] = sum_k A[m][k] B[k][n] with A given as a (M x K, or K x M when
 * a_is_km) and b as K x N; bound as in the file comment. */
static void ref_matmul(const nk_array *a, int a_is_km, const nk_array *b, int64_t M, int64_t Kd, int64_t N,
                       double *want, double *bound)
{
    double *av = arr_values(a), *bv = arr_values(b);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0, sa = 0;
            for (int64_t k = 0; k < Kd; k++) {
                double x = av[a_is_km ? k * M + m : m * Kd + k], y = bv[k * N + n];
                s += x * y;
                sa += fabs(x * y);
            }
            want[m * N + n] = s;
            bound[m * N + n] = (double)(Kd + 1) * REF_U32 * sa * 1.000001;
        }
    free(av);
    free(bv);
}

static void k_matmul(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    ref_return_tile(nc, nk_matmul(nc, nk_load(nc, args[0]), nk_load(nc, args[1]), K.tx));
}

typedef struct mm_case {
    nk_dtype a, b;
    int64_t M, Kd, N;
} mm_case;

TEST(mm_matmul_with_and_without_transpose_x)
{
    const mm_case cases[] = {
        {NK_F32, NK_F32, 128, 128, 512}, {NK_BF16, NK_BF16, 128, 128, 512}, {NK_F16, NK_F16, 64, 96, 200},
        {NK_FP8_E4M3, NK_FP8_E4M3, 32, 128, 64}, {NK_FP8_E5M2, NK_FP8_E5M2, 16, 40, 8},
        {NK_FP8_E4M3, NK_FP8_E5M2, 128, 64, 128}, {NK_BF16, NK_BF16, 1, 1, 1}, {NK_F32, NK_F32, 7, 3, 500},
    };
    uint64_t rng = 47;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int tx = 0; tx < 2; tx++) {
            const mm_case *mc = &cases[c];
            int64_t sa[2] = {tx ? mc->Kd : mc->M, tx ? mc->M : mc->Kd}, sb[2] = {mc->Kd, mc->N};
            nk_array in[2], out;
            arr_new(&in[0], mc->a, 2, sa);
            arr_new(&in[1], mc->b, 2, sb);
            arr_fill(&in[0], &rng, -4, 4);
            arr_fill(&in[1], &rng, -4, 4);
            K.tx = tx;
            if (!run_kernel("matmul", k_matmul, in, 2, &out, 1)) {
                CHECK_INT(out.dtype, NK_F32);
                CHECK_INT(out.shape[0], mc->M);
                CHECK_INT(out.shape[1], mc->N);
                size_t n = (size_t)(mc->M * mc->N);
                double *want = malloc(n * sizeof *want), *bound = malloc(n * sizeof *bound);
                ref_matmul(&in[0], tx, &in[1], mc->M, mc->Kd, mc->N, want, bound);
                char what[128];
                snprintf(what, sizeof what, "nk_matmul %s x %s [%lld x %lld x %lld] transpose_x %d",
                         nk_dtype_name(mc->a), nk_dtype_name(mc->b), (long long)mc->M, (long long)mc->Kd,
                         (long long)mc->N, tx);
                CHECK_ARR(what, &out, want, 0, bound, 0);
                free(want);
                free(bound);
                nk_array_free(&out);
            }
            arr_free_all(in, 2);
        }
}

/* acc[M, N] += x_k @ y_k over K in tiles of K.ktile rows. */
static void k_matmul_acc(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = args[0], y = args[1];
    int64_t Kd = y.shape[0], M = K.tx ? x.shape[1] : x.shape[0], N = y.shape[1];
    nk_tensor acc = nk_zeros(nc, NK_SHAPE(M, N), NK_F32, NK_PSUM);
    NK_AFFINE_RANGE(nc, k, Kd / K.ktile) {
        nk_range kr = nk_r(k * K.ktile, (k + 1) * K.ktile);
        nk_tensor xs = K.tx ? nk_load(nc, nk_ix(nc, x, kr)) : nk_load(nc, nk_ix(nc, x, NK_ALL, kr));
        nk_tensor ys = nk_load(nc, nk_ix(nc, y, kr));
        nk_matmul_acc(nc, acc, xs, ys, K.tx);
    }
    ref_return_tile(nc, acc);
}

TEST(mm_matmul_acc_across_a_k_loop)
{
    uint64_t rng = 53;
    const nk_dtype dts[] = {NK_BF16, NK_F32, NK_FP8_E4M3};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (int tx = 0; tx < 2; tx++) {
            int64_t M = 96, Kd = 384, N = 256;
            int64_t sa[2] = {tx ? Kd : M, tx ? M : Kd}, sb[2] = {Kd, N};
            nk_array in[2], out;
            arr_new(&in[0], dts[d], 2, sa);
            arr_new(&in[1], dts[d], 2, sb);
            arr_fill(&in[0], &rng, -2, 2);
            arr_fill(&in[1], &rng, -2, 2);
            K.tx = tx;
            K.ktile = 128;
            if (!run_kernel("matmul_acc", k_matmul_acc, in, 2, &out, 1)) {
                size_t n = (size_t)(M * N);
                double *want = malloc(n * sizeof *want), *bound = malloc(n * sizeof *bound);
                ref_matmul(&in[0], tx, &in[1], M, Kd, N, want, bound);
                char what[96];
                snprintf(what, sizeof what, "nk_matmul_acc %s over 3 K tiles, transpose_x %d", nk_dtype_name(dts[d]),
                         tx);
                CHECK_ARR(what, &out, want, 0, bound, 0);
                free(want);
                free(bound);
                nk_array_free(&out);
            }
            arr_free_all(in, 2);
        }
}

/* nc_matmul: dst = S1^T M1, then dst += S2^T M2; a second tile restarts. */
static void k_nc_matmul(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor s1 = nk_load(nc, args[0]), m1 = nk_load(nc, args[1]);
    nk_tensor s2 = nk_load(nc, args[2]), m2 = nk_load(nc, args[3]);
    int64_t M = s1.shape[1], N = m1.shape[1];
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(M, N), NK_F32, NK_PSUM);
    nk_isa_nc_matmul(nc, d, s1, m1, 0);
    nk_isa_nc_matmul(nc, d, s2, m2, 1);
    ref_return_tile(nc, d);
    nk_tensor e = nk_ndarray(nc, NK_SHAPE(M, N), NK_F32, NK_PSUM);
    nk_isa_nc_matmul(nc, e, s1, m1, 0);
    nk_isa_nc_matmul(nc, e, s2, m2, 0); /* accumulate=0 overwrites */
    ref_return_tile(nc, e);
}

TEST(mm_nc_matmul_accumulate_flag)
{
    uint64_t rng = 59;
    int64_t Kd = 100, M = 120, N = 300;
    int64_t ss[2] = {Kd, M}, ms[2] = {Kd, N};
    nk_array in[4], out[2];
    for (int i = 0; i < 4; i++) {
        arr_new(&in[i], NK_BF16, 2, i % 2 ? ms : ss);
        arr_fill(&in[i], &rng, -3, 3);
    }
    if (!run_kernel("nc_matmul", k_nc_matmul, in, 4, out, 2)) {
        size_t n = (size_t)(M * N);
        double *w1 = malloc(n * sizeof *w1), *b1 = malloc(n * sizeof *b1);
        double *w2 = malloc(n * sizeof *w2), *b2 = malloc(n * sizeof *b2);
        ref_matmul(&in[0], 1, &in[1], M, Kd, N, w1, b1);
        ref_matmul(&in[2], 1, &in[3], M, Kd, N, w2, b2);
        CHECK_ARR("nc_matmul accumulate=0", &out[1], w2, 0, b2, 0);
        for (size_t i = 0; i < n; i++) {
            w1[i] += w2[i];
            b1[i] += b2[i] + REF_U32 * fabs(w1[i]); /* the PSUM add */
        }
        CHECK_ARR("nc_matmul accumulate=1", &out[0], w1, 0, b1, 0);
        free(w1);
        free(b1);
        free(w2);
        free(b2);
        arr_free_all(out, 2);
    }
    arr_free_all(in, 4);
}

/* ---- nc_transpose on both engines */

static void k_nc_transpose(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]);
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(x.shape[1], x.shape[0]), K.dt,
                             K.eng == NK_ENGINE_TENSOR ? NK_PSUM : NK_SBUF);
    nk_isa_nc_transpose(nc, d, x, K.eng);
    ref_return_tile(nc, d);
}

TEST(mm_nc_transpose_tensor_and_vector_engines)
{
    const struct { nk_engine eng; nk_dtype src, dst; int64_t P, F; double range; } cases[] = {
        {NK_ENGINE_TENSOR, NK_BF16, NK_F32, 128, 64, 100},   {NK_ENGINE_TENSOR, NK_BF16, NK_BF16, 64, 128, 100},
        {NK_ENGINE_TENSOR, NK_F32, NK_F32, 100, 3, 1e30},    {NK_ENGINE_TENSOR, NK_FP8_E4M3, NK_F32, 32, 32, 200},
        {NK_ENGINE_VECTOR, NK_F32, NK_F32, 32, 32, 1e30},    {NK_ENGINE_VECTOR, NK_I32, NK_I32, 32, 17, 2e9},
        {NK_ENGINE_VECTOR, NK_BF16, NK_F32, 20, 32, 100},    {NK_ENGINE_VECTOR, NK_U8, NK_U8, 5, 7, 255},
        {NK_ENGINE_VECTOR, NK_I32, NK_F32, 32, 32, 2e9},
    };
    uint64_t rng = 61;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t shape[2] = {cases[c].P, cases[c].F};
        nk_array in, out;
        arr_new(&in, cases[c].src, 2, shape);
        arr_fill(&in, &rng, ref_min_int(cases[c].src) < 0 || ref_is_float(cases[c].src) ? -cases[c].range : 0,
                 cases[c].range);
        K.eng = cases[c].eng;
        K.dt = cases[c].dst;
        if (!run_kernel("nc_transpose", k_nc_transpose, &in, 1, &out, 1)) {
            int64_t P = cases[c].P, F = cases[c].F;
            double *want = malloc((size_t)(P * F) * sizeof *want);
            /* same dtype on the Vector engine: exact bits (int32 beyond 2^24 too);
             * otherwise the value through fp32 */
            int exact = cases[c].src == cases[c].dst && cases[c].eng == NK_ENGINE_VECTOR;
            for (int64_t f = 0; f < F; f++)
                for (int64_t p = 0; p < P; p++) {
                    double v = arr_get(&in, (size_t)(p * F + f));
                    want[f * P + p] = exact ? v : ref_round(NK_F32, v);
                }
            char what[96];
            snprintf(what, sizeof what, "nc_transpose on %s %s -> %s", nk_engine_name(cases[c].eng),
                     nk_dtype_name(cases[c].src), nk_dtype_name(cases[c].dst));
            CHECK_ARR(what, &out, want, 0, NULL, 0);
            free(want);
            nk_array_free(&out);
        }
        nk_array_free(&in);
    }
}

/* ---- broadcast */

static void k_broadcast(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    ref_return_tile(nc, nk_broadcast(nc, nk_load(nc, args[0]), K.shape));
}

TEST(mm_broadcast_across_partitions_and_free_axes)
{
    const nk_dtype dts[] = {NK_F32, NK_BF16, NK_F16, NK_FP8_E4M3, NK_I32, NK_U8};
    uint64_t rng = 67;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        /* [1, F] -> [P, F] on the Tensor engine */
        int64_t s1[2] = {1, 200};
        nk_array in, out;
        arr_new(&in, dts[d], 2, s1);
        arr_fill(&in, &rng, ref_min_int(dts[d]) < 0 || ref_is_float(dts[d]) ? -100 : 0, 100);
        K.shape = NK_SHAPE(128, 200);
        if (!run_kernel("broadcast_p", k_broadcast, &in, 1, &out, 1)) {
            CHECK_INT(out.dtype, dts[d]);
            double *want = malloc(128 * 200 * sizeof *want);
            for (int i = 0; i < 128 * 200; i++)
                want[i] = arr_get(&in, (size_t)(i % 200));
            CHECK_ARR("broadcast [1, F] -> [P, F]", &out, want, 0, NULL, 0);
            free(want);
            nk_array_free(&out);
        }
        nk_array_free(&in);
        /* [P, 1] -> [P, 3, 4] on the Vector engine */
        int64_t s2[2] = {90, 1};
        arr_new(&in, dts[d], 2, s2);
        arr_fill(&in, &rng, ref_min_int(dts[d]) < 0 || ref_is_float(dts[d]) ? -100 : 0, 100);
        K.shape = NK_SHAPE(90, 3, 4);
        if (!run_kernel("broadcast_f", k_broadcast, &in, 1, &out, 1)) {
            CHECK_INT(out.ndim, 3);
            double want[90 * 12];
            for (int i = 0; i < 90 * 12; i++)
                want[i] = arr_get(&in, (size_t)(i / 12));
            CHECK_ARR("broadcast [P, 1] -> [P, 3, 4]", &out, want, 0, NULL, 0);
            nk_array_free(&out);
        }
        nk_array_free(&in);
    }
}

/* ---- iota */

static void k_iota(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)args;
    (void)nargs;
    ref_return_tile(nc, nk_iota(nc, K.shape, K.aff, K.dt));
}

static void k_isa_iota(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)args;
    (void)nargs;
    nk_tensor t = nk_ndarray(nc, K.shape, K.dt, NK_SBUF);
    nk_isa_iota(nc, t, K.aff);
    ref_return_tile(nc, t);
}

TEST(mm_iota_values_every_dtype)
{
    const nk_affine exprs[] = {
        {0, 0, {1, 0, 0}}, {-5, 3, {1, -2, 7}}, {20000001, 1, {3, 0, 0}}, {0, -1000, {0, 0, 0}},
    };
    const nk_shape shapes[] = {NK_SHAPE(128, 10), NK_SHAPE(16, 4, 5, 6), NK_SHAPE(64, 3, 33)};
    for (int d = 0; d < NK_DTYPE_COUNT; d++)
        for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int isa = 0; isa < 2; isa++) {
                    K.dt = (nk_dtype)d;
                    K.aff = exprs[e];
                    K.shape = shapes[s];
                    nk_array out;
                    if (run_kernel("iota", isa ? k_isa_iota : k_iota, NULL, 0, &out, 1))
                        continue;
                    size_t n = nk_array_numel(&out);
                    double *want = malloc(n * sizeof *want);
                    int64_t f[3] = {1, 1, 1};
                    for (int i = 1; i < shapes[s].n; i++)
                        f[i - 1] = shapes[s].d[i];
                    for (size_t i = 0; i < n; i++) {
                        int64_t r = (int64_t)i, c2 = r % f[2], c1 = (r / f[2]) % f[1], c0 = (r / f[2] / f[1]) % f[0];
                        int64_t p = r / (f[0] * f[1] * f[2]);
                        int64_t v = exprs[e].c + (int64_t)exprs[e].cp * p + (int64_t)exprs[e].cf[0] * c0 +
                                    (int64_t)exprs[e].cf[1] * c1 + (int64_t)exprs[e].cf[2] * c2;
                        /* integers exactly (saturating), floats through fp32 */
                        want[i] = ref_is_float(K.dt) ? ref_round(NK_F32, (double)v) : (double)v;
                    }
                    char what[96];
                    snprintf(what, sizeof what, "%s expr %zu shape %zu", isa ? "nk_isa_iota" : "nk_iota", e, s);
                    CHECK_ARR(what, &out, want, 0, NULL, 0);
                    free(want);
                    nk_array_free(&out);
                }
}

/* ---- determinism */

static void k_mixed(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = nk_load(nc, args[0]), b = nk_load(nc, args[1]);
    nk_tensor c = nk_matmul(nc, a, b, 1);                 /* [128, 512] fp32 PSUM */
    nk_tensor e = nk_exp(nc, nk_copy(nc, c, NK_F32));
    ref_return_tile(nc, nk_sum(nc, e, 1, 0));
    ref_return_tile(nc, c);
    ref_return_tile(nc, nk_gelu(nc, nk_copy(nc, c, NK_BF16)));
}

TEST(mm_runs_are_bit_identical)
{
    uint64_t rng = 71;
    int64_t sa[2] = {128, 128}, sb[2] = {128, 512};
    nk_array in[2], out1[3], out2[3];
    arr_new(&in[0], NK_BF16, 2, sa);
    arr_new(&in[1], NK_BF16, 2, sb);
    arr_fill(&in[0], &rng, -0.1, 0.1);
    arr_fill(&in[1], &rng, -0.1, 0.1);
    nk_kernel *k = nk_kernel_new("mixed", k_mixed);
    int n1 = 0, n2 = 0;
    int rc1 = nk_call(k, in, 2, NULL, out1, 3, &n1);
    /* something else in between, to disturb any scratch state */
    nk_array tmp[1];
    int64_t st[2] = {128, 128};
    nk_array t;
    arr_new(&t, NK_F32, 2, st);
    arr_fill(&t, &rng, -1, 1);
    int rct = run_kernel("transpose", k_transpose, &t, 1, tmp, 1);
    int rc2 = nk_call(k, in, 2, NULL, out2, 3, &n2);
    CHECK_INT(rc1, 0);
    CHECK_INT(rc2, 0);
    CHECK_INT(n1, 3);
    CHECK_INT(n2, 3);
    if (!rc1 && !rc2 && n1 == 3 && n2 == 3)
        for (int i = 0; i < 3; i++) {
            CHECK_INT(nk_array_nbytes(&out1[i]), nk_array_nbytes(&out2[i]));
            CHECK(memcmp(out1[i].data, out2[i].data, nk_array_nbytes(&out1[i])) == 0);
        }
    if (!rct)
        nk_array_free(&tmp[0]);
    if (!rc1)
        arr_free_all(out1, n1);
    if (!rc2)
        arr_free_all(out2, n2);
    nk_array_free(&t);
    arr_free_all(in, 2);
    nk_kernel_free(k);
}

/* The same compiled program run on two threads at once gives, on every run,
 * the bytes of a single-threaded run: executor scratch is per thread and the
 * fp8 decode tables initialise once. */
typedef struct run_job {
    const nk_program *p;
    const nk_array *in;
    const nk_array *ref;
    int rc, mismatches;
} run_job;

static void *run_many(void *arg)
{
    run_job *j = arg;
    for (int r = 0; r < 6; r++) {
        nk_array out[3], desc;
        for (int i = 0; i < 3; i++) {
            nk_program_output(j->p, i, &desc);
            arr_new(&out[i], desc.dtype, desc.ndim, desc.shape);
        }
        int rc = nk_program_run(j->p, j->in, 2, out, 3);
        if (rc)
            j->rc = rc;
        for (int i = 0; i < 3 && !rc; i++)
            j->mismatches += memcmp(out[i].data, j->ref[i].data, nk_array_nbytes(&out[i])) != 0;
        arr_free_all(out, 3);
    }
    return NULL;
}

TEST(mm_concurrent_runs_match_a_single_run)
{
    uint64_t rng = 73;
    int64_t sa[2] = {128, 128}, sb[2] = {128, 512};
    nk_array in[2], ref[3];
    arr_new(&in[0], NK_FP8_E4M3, 2, sa);
    arr_new(&in[1], NK_FP8_E4M3, 2, sb);
    arr_fill(&in[0], &rng, -0.5, 0.5);
    arr_fill(&in[1], &rng, -0.5, 0.5);
    nk_kernel *k = nk_kernel_new("mixed", k_mixed);
    const nk_program *p = NULL;
    int nref = 0;
    CHECK_INT(nk_kernel_compile(k, in, 2, NULL, &p), 0);
    CHECK_INT(nk_call(k, in, 2, NULL, ref, 3, &nref), 0);
    if (p && nref == 3) {
        run_job jobs[2] = {{p, in, ref, 0, 0}, {p, in, ref, 0, 0}};
        pthread_t th[2];
        int started[2];
        for (int t = 0; t < 2; t++)
            started[t] = pthread_create(&th[t], NULL, run_many, &jobs[t]) == 0;
        for (int t = 0; t < 2; t++) {
            CHECK(started[t]);
            if (started[t])
                pthread_join(th[t], NULL);
            CHECK_INT(jobs[t].rc, 0);
            CHECK_INT(jobs[t].mismatches, 0);
        }
    }
    arr_free_all(ref, nref);
    arr_free_all(in, 2);
    nk_kernel_free(k);
}
