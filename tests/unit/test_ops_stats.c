/*
 * test_ops_stats.c - nisa.bn_stats and nisa.bn_aggr: the six statistics of
 * the even and odd elements of each partition, their aggregation over
 * 512-element chunks (the layernorm tutorial's use, with a masked last
 * chunk), their cost, and every check the tracer makes.
 *
 * Reference: count, mean and sum of squared deviations in double, straight
 * from the data; bn_aggr against the mean and population variance (numpy's
 * np.var, ddof 0) of the whole row in double.
 * Tolerances (u = 2^-24), for n elements of one parity class or chunk:
 *   mean:  (n + 1) u mean|x| (an fp32 sum of n terms, one division);
 *   M2:    (n + 4) u sum d^2 + n (mean bound)^2 (rounded deviations and an
 *          fp32 sum; the mean's error adds n dm^2 to the sum of squares);
 *   bn_aggr mean: the chunks' mean bounds weighted by their counts, twice,
 *          plus 4k u |mean| for the k merges;
 *   bn_aggr variance: 2 (n + 8) u var plus, per chunk, its weight times
 *          2 |mean_j - mean| 2 dm_j + 4 dm_j^2 (first order in the chunk
 *          means' errors, with a factor 2 to spare). A sample variance
 *          (ddof 1) would be off by var / N, far outside this bound.
 * Every output is also allowed one ulp of its dtype (the final rounding).
 */
#include "test_ops_util.h"

#include <math.h>
#include <stdlib.h>

#define U REF_U32

static struct {
    int64_t chunk;   /* free elements per bn_stats */
    nk_dtype stats_dt;
    int aggr;
} K;

static int at;

/* x [P, F] -> stats [P, 6 * chunks] (chunks of K.chunk, the last masked)
 * and, with K.aggr, mean/var [P, 2] float32. */
static void k_bn(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]);
    int64_t F = x.shape[1], nb = (F + K.chunk - 1) / K.chunk;
    nk_tensor st = nk_ndarray(nc, NK_SHAPE(x.shape[0], 6 * nb), K.stats_dt, NK_SBUF);
    for (int64_t j = 0; j < nb; j++)
        nk_isa_bn_stats(nc, nk_ix(nc, st, NK_ALL, nk_r(6 * j, 6 * j + 6)),
                        nk_ix(nc, x, NK_ALL, nk_rmask(j * K.chunk, (j + 1) * K.chunk, F)));
    ref_return_tile(nc, st);
    if (K.aggr) {
        nk_tensor mv = nk_ndarray(nc, NK_SHAPE(x.shape[0], 2), NK_F32, NK_SBUF);
        nk_isa_bn_aggr(nc, mv, st);
        ref_return_tile(nc, mv);
    }
}

/* count, mean, M2 of v[0], v[step], ... (n elements in all), in double,
 * and the bounds of the fp32 mean and M2 */
static void moments(const double *v, int64_t n, int64_t step, double *out, double *bound)
{
    double cnt = 0, sum = 0, sabs = 0, m2 = 0;
    for (int64_t i = 0; i < n; i += step, cnt++) {
        sum += v[i];
        sabs += fabs(v[i]);
    }
    double mean = cnt ? sum / cnt : 0;
    for (int64_t i = 0; i < n; i += step)
        m2 += (v[i] - mean) * (v[i] - mean);
    double bm = cnt ? (cnt + 1) * U * sabs / cnt : 0;
    out[0] = cnt;
    out[1] = mean;
    out[2] = m2;
    bound[0] = 0;
    bound[1] = bm;
    bound[2] = (cnt + 4) * U * m2 + cnt * bm * bm;
}

/* Runs k_bn on x [P, F] of dtype in_dt and checks every statistic (and the
 * aggregate when K.aggr). */
static void check_bn(nk_dtype in_dt, int64_t P, int64_t F, int64_t chunk, nk_dtype stats_dt, int aggr,
                     double lo, double hi, uint64_t seed)
{
    K.chunk = chunk;
    K.stats_dt = stats_dt;
    K.aggr = aggr;
    int64_t shape[2] = {P, F}, nb = (F + chunk - 1) / chunk;
    nk_array in, out[2];
    arr_new(&in, in_dt, 2, shape);
    arr_fill(&in, &seed, lo, hi);
    double *x = arr_values(&in);
    size_t nst = (size_t)(P * 6 * nb);
    double *want = calloc(nst, sizeof *want), *tol = calloc(nst, sizeof *tol);
    double *wmv = calloc((size_t)(2 * P), sizeof *wmv), *tmv = calloc((size_t)(2 * P), sizeof *tmv);
    for (int64_t p = 0; p < P; p++) {
        const double *row = x + p * F;
        double sum = 0, ssq = 0;
        for (int64_t f = 0; f < F; f++)
            sum += row[f];
        double mean = sum / (double)F;
        for (int64_t f = 0; f < F; f++)
            ssq += (row[f] - mean) * (row[f] - mean);
        double var = ssq / (double)F, tm = 4.0 * (double)nb * U * fabs(mean), tv = 2.0 * ((double)chunk + 8) * U * var;
        for (int64_t j = 0; j < nb; j++) {
            int64_t f0 = j * chunk, n = F - f0 < chunk ? F - f0 : chunk;
            double *w = want + p * 6 * nb + 6 * j, *t = tol + p * 6 * nb + 6 * j;
            moments(row + f0, n, 2, w, t);
            moments(row + f0 + 1, n - 1, 2, w + 3, t + 3);
            /* the chunk as a whole, for the aggregate's bounds */
            double cs[3], cb[3];
            moments(row + f0, n, 1, cs, cb);
            double wgt = (double)n / (double)F, dm = 2 * cb[1];
            tm += wgt * dm;
            tv += wgt * (2 * fabs(cs[1] - mean) * 2 * dm + 4 * dm * dm);
        }
        wmv[2 * p] = mean;
        wmv[2 * p + 1] = var;
        tmv[2 * p] = tm;
        tmv[2 * p + 1] = tv;
    }
    if (run_kernel("bn", k_bn, &in, 1, out, aggr ? 2 : 1) == 0) {
        CHECK_INT(out[0].shape[1], 6 * nb);
        CHECK_ARR("bn_stats", &out[0], want, 1, tol, 0);
        if (aggr)
            CHECK_ARR("bn_aggr", &out[1], wmv, 1, tmv, 0);
        arr_free_all(out, aggr ? 2 : 1);
    }
    free(want);
    free(tol);
    free(wmv);
    free(tmv);
    free(x);
    nk_array_free(&in);
}

TEST(bn_stats_even_and_odd_elements)
{
    check_bn(NK_F32, 128, 512, 512, NK_F32, 0, -1, 1, 1);
    check_bn(NK_F32, 128, 7, 512, NK_F32, 0, -2, 3, 2);   /* 4 even, 3 odd */
    check_bn(NK_F32, 64, 2, 512, NK_F32, 0, -1, 1, 3);
    check_bn(NK_F32, 32, 1, 512, NK_F32, 0, -1, 1, 4);    /* no odd element: count 0, mean 0, M2 0 */
    check_bn(NK_BF16, 128, 300, 512, NK_F32, 0, 0, 4, 5); /* bf16 data, fp32 statistics */
    check_bn(NK_F32, 128, 100, 512, NK_BF16, 0, -1, 1, 6); /* statistics rounded to bf16 */
    check_bn(NK_FP8_E4M3, 16, 33, 512, NK_F16, 0, -8, 8, 7);
}

TEST(bn_aggr_mean_and_population_variance_over_chunks)
{
    check_bn(NK_F32, 128, 1024, 512, NK_F32, 1, -1, 1, 11);
    /* the layernorm tutorial's shape: a masked last chunk of 276 */
    check_bn(NK_F32, 128, 1300, 512, NK_F32, 1, 2, 4, 12); /* mean 3 much larger than the spread */
    check_bn(NK_BF16, 96, 2048, 512, NK_F32, 1, -3, 1, 13);
    check_bn(NK_F32, 128, 1000, 100, NK_F32, 1, -1, 1, 14); /* ten chunks */
    check_bn(NK_F32, 8, 5, 512, NK_F32, 1, -1, 1, 15);
}

/* A [P, 4, 7] tile: the free elements count in row-major order, so even
 * and odd alternate across the rows of 7. */
static void k_bn_3d(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]);
    nk_tensor st = nk_ndarray(nc, NK_SHAPE(x.shape[0], 6), NK_F32, NK_SBUF);
    nk_isa_bn_stats(nc, st, x);
    ref_return_tile(nc, st);
}

TEST(bn_stats_flattens_several_free_axes)
{
    int64_t shape[3] = {64, 4, 7};
    uint64_t seed = 21;
    nk_array in, out;
    arr_new(&in, NK_F32, 3, shape);
    arr_fill(&in, &seed, -1, 1);
    double *x = arr_values(&in), want[64 * 6], tol[64 * 6];
    for (int p = 0; p < 64; p++) {
        moments(x + p * 28, 28, 2, want + p * 6, tol + p * 6);
        moments(x + p * 28 + 1, 27, 2, want + p * 6 + 3, tol + p * 6 + 3);
    }
    if (run_kernel("bn3", k_bn_3d, &in, 1, &out, 1) == 0) {
        CHECK_ARR("bn_stats 3-d", &out, want, 1, tol, 0);
        nk_array_free(&out);
    }
    free(x);
    nk_array_free(&in);
}

/* ---- cost: max(MIN_II, N) and max(MIN_II, 13 N / 3) Vector cycles [ISA-old]
 * after the 100-cycle static overhead [A2][PG]; Vector at 1.12 GHz on trn1,
 * 0.96 GHz on trn2 [A2][A3] (no performance mode applies) */

static void k_bn_cost(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]);
    int64_t F = x.shape[1], nb = F / K.chunk;
    nk_tensor st = nk_ndarray(nc, NK_SHAPE(x.shape[0], 6 * nb), NK_F32, NK_SBUF);
    for (int64_t j = 0; j < nb; j++)
        nk_isa_bn_stats(nc, nk_ix(nc, st, NK_ALL, nk_r(6 * j, 6 * j + 6)),
                        nk_ix(nc, x, NK_ALL, nk_r(j * K.chunk, (j + 1) * K.chunk)));
    nk_tensor mv = nk_ndarray(nc, NK_SHAPE(x.shape[0], 2), NK_F32, NK_SBUF);
    nk_isa_bn_aggr(nc, mv, st);
    ref_return_tile(nc, mv);
}

static void check_bn_cost(int64_t chunk, int64_t nb, const char *target, double ghz)
{
    K.chunk = chunk;
    int64_t shape[2] = {128, chunk * nb};
    nk_array in = arr_shape(NK_F32, 2, shape);
    timed t;
    if (timed_run(&t, k_bn_cost, &in, 1, target) == 0) {
        double n = (double)chunk, stats = fmax(64, n), aggr = fmax(64, 13 * (6.0 * (double)nb / 3));
        CHECK_NEAR(timed_bar_ns(&t, NK_OP_BN_STATS, 0), (100 + stats) / ghz, 1e-12, 0);
        CHECK_NEAR(timed_bar_ns(&t, NK_OP_BN_AGGR, 0), (100 + aggr) / ghz, 1e-12, 0);
    }
    timed_free(&t);
}

TEST(bn_stats_and_bn_aggr_cost)
{
    check_bn_cost(512, 1, "trn1", 1.12);  /* 512; aggr of 2 tuples: 26 -> MIN_II */
    check_bn_cost(32, 1, "trn1", 1.12);   /* below MIN_II */
    check_bn_cost(512, 10, "trn1", 1.12); /* aggr of 20 tuples: 260 */
    check_bn_cost(512, 10, "trn2", 0.96);
}

/* ---- the tracer's checks */

static void k_err_stats_fmax(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]); /* [128, 513] */
    nk_tensor st = nk_ndarray(nc, NK_SHAPE(128, 6), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_bn_stats(nc, st, x);
}

static void k_err_stats_dst(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]); /* [128, 64] */
    nk_tensor st = nk_ndarray(nc, NK_SHAPE(128, 5), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_bn_stats(nc, st, x);
}

static void k_err_stats_dst_partitions(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    nk_tensor st = nk_ndarray(nc, NK_SHAPE(64, 6), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_bn_stats(nc, st, x);
}

static void k_err_stats_hbm(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor st = nk_ndarray(nc, NK_SHAPE(128, 6), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_bn_stats(nc, st, a[0]);
}

static void k_err_stats_unwritten(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n, (void)a;
    nk_tensor x = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    nk_tensor st = nk_ndarray(nc, NK_SHAPE(128, 6), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_bn_stats(nc, st, x);
}

static void k_err_aggr_tuples(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]); /* [128, 64] */
    nk_tensor mv = nk_ndarray(nc, NK_SHAPE(128, 2), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_bn_aggr(nc, mv, nk_ix(nc, x, NK_ALL, nk_r(0, 8)));
}

static void k_err_aggr_dst(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    nk_tensor mv = nk_ndarray(nc, NK_SHAPE(128, 3), NK_F32, NK_SBUF);
    at = __LINE__; nk_isa_bn_aggr(nc, mv, nk_ix(nc, x, NK_ALL, nk_r(0, 12)));
}

TEST(bn_stats_and_bn_aggr_errors)
{
    int64_t s513[2] = {128, 513}, s64[2] = {128, 64};
    nk_array big = arr_shape(NK_F32, 2, s513), x = arr_shape(NK_F32, 2, s64);
    EXPECT_TRACE_ERROR(k_err_stats_fmax, &big, 1, NK_ELIMIT, &at, "bn_stats: data [128, 513]",
                       "513 elements per partition, more than 512 (nl.tile_size.bn_stats_fmax)", "bn_aggr");
    EXPECT_TRACE_ERROR(k_err_stats_dst, &x, 1, NK_ESHAPE, &at, "bn_stats: dst [128, 5] must be [128, 6]",
                       "data [128, 64]");
    EXPECT_TRACE_ERROR(k_err_stats_dst_partitions, &x, 1, NK_ESHAPE, &at, "bn_stats: dst [64, 6] must be [128, 6]");
    EXPECT_TRACE_ERROR(k_err_stats_hbm, &x, 1, NK_EMEMORY, &at, "bn_stats: data is an HBM tensor");
    EXPECT_TRACE_ERROR(k_err_stats_unwritten, &x, 1, NK_EUNINIT, &at, "bn_stats: data is an SBUF tile [128, 64]",
                       "never written");
    EXPECT_TRACE_ERROR(k_err_aggr_tuples, &x, 1, NK_ESHAPE, &at,
                       "bn_aggr: data [128, 8] has 8 elements per partition, not a positive multiple of 3");
    EXPECT_TRACE_ERROR(k_err_aggr_dst, &x, 1, NK_ESHAPE, &at, "bn_aggr: dst [128, 3] must be [128, 2]",
                       "mean and variance");
}
