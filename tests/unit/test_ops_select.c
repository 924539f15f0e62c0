/*
 * test_ops_select.c - nl.where (a Vector select), nl.all, nl.random_seed
 * with nisa.dropout / nl.dropout: values, costs and every check the tracer
 * makes.
 *
 * References: the selection and the AND in double, compared exactly (they
 * move values: the only rounding is to the output dtype, which the
 * reference applies too). Dropout against the generator that
 * docs/kernel-api.md documents, written out here from that text (SplitMix64's
 * finalizer over a counter; drop when the top 24 bits as a fraction are below
 * prob), compared exactly, plus what any dropout must satisfy whatever its
 * generator: prob 0 keeps everything, 1 drops everything, kept values are
 * unchanged and unscaled, the dropped fraction of 65536 elements is within
 * 5 standard deviations of prob, the same seed repeats its draws and
 * successive dropouts do not.
 */
#include "test_ops_util.h"

#include <math.h>
#include <stdlib.h>

static int at;

static struct {
    int y_tile, psum_cond;
    float yv;
    int axis;
    float prob;
    int prob_tile, seeded, twice, reseed;
} K;

/* ---- nl.where */

static void k_where(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor c = nk_load(nc, args[0]), x = nk_load(nc, args[1]), y = nk_load(nc, args[2]);
    if (K.psum_cond) {
        nk_tensor ps = nk_ndarray(nc, NK_SHAPE(c.shape[0], c.shape[1]), NK_F32, NK_PSUM);
        nk_isa_tensor_copy(nc, ps, c);
        c = ps;
    }
    ref_return_tile(nc, K.y_tile ? nk_where(nc, c, x, y) : nk_where_s(nc, c, x, K.yv));
}

static void check_where(nk_dtype cdt, nk_dtype xdt, nk_dtype ydt, nk_dtype want_dt, int y_tile, float yv,
                        uint64_t seed)
{
    K.y_tile = y_tile, K.yv = yv, K.psum_cond = 0;
    enum { P = 128, F = 80 };
    int64_t s[2] = {P, F};
    nk_array in[3], out;
    arr_new(&in[0], cdt, 2, s);
    arr_new(&in[1], xdt, 2, s);
    arr_new(&in[2], ydt, 2, s);
    double big = ref_is_float(xdt) ? 100 : ref_max(xdt) < 1e6 ? ref_max(xdt) : 1e9;
    arr_fill(&in[1], &seed, ref_is_float(xdt) ? -big : ref_min_int(xdt), big);
    arr_fill(&in[2], &seed, ref_is_float(ydt) ? -100 : ref_min_int(ydt), ref_is_float(ydt) ? 100 : ref_max(ydt));
    for (size_t i = 0; i < P * F; i++) /* 1.0 / 0.0, and a few other nonzero values */
        arr_set(&in[0], i, ref_rand64(&seed) % 2 ? (i % 7 ? 1.0 : 3.0) : 0.0);
    if (ref_is_float(cdt))
        arr_set(&in[0], 5, NAN); /* NaN is not zero: true */
    double *c = arr_values(&in[0]), *x = arr_values(&in[1]), *y = arr_values(&in[2]), want[P * F];
    for (int i = 0; i < P * F; i++)
        want[i] = c[i] != 0 ? x[i] : y_tile ? y[i] : ref_round(want_dt, yv);
    if (run_kernel("where", k_where, in, 3, &out, 1) == 0) {
        CHECK_INT(out.dtype, want_dt);
        CHECK_ARR("where", &out, want, 0, NULL, 0);
        nk_array_free(&out);
    }
    free(c);
    free(x);
    free(y);
    arr_free_all(in, 3);
}

TEST(where_picks_elementwise)
{
    check_where(NK_F32, NK_F32, NK_F32, NK_F32, 1, 0, 1);
    check_where(NK_BF16, NK_BF16, NK_F32, NK_F32, 1, 0, 2); /* promoted: through fp32 */
    check_where(NK_U8, NK_I32, NK_I32, NK_I32, 1, 0, 3);    /* bit for bit: int32 beyond 2^24 */
    check_where(NK_F32, NK_I16, NK_I32, NK_I32, 1, 0, 4);   /* integers as integers */
    check_where(NK_F32, NK_BF16, NK_BF16, NK_BF16, 0, -1.0e9f, 5); /* y a value, in x's dtype */
    check_where(NK_F32, NK_I8, NK_I8, NK_I8, 0, -300.0f, 6);        /* ... saturated */
    check_where(NK_F32, NK_FP8_E4M3, NK_F16, NK_F16, 1, 0, 7);
}

/* ---- nl.all */

static void k_all(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    ref_return_tile(nc, nk_all(nc, nk_load(nc, args[0]), K.axis));
}

TEST(all_is_a_logical_and_along_free_axes)
{
    int64_t s[3] = {64, 5, 6};
    for (int axis = -1; axis <= 2; axis++) {
        if (axis == 0)
            continue;
        K.axis = axis;
        uint64_t seed = 30 + (uint64_t)axis;
        nk_array in, out;
        arr_new(&in, NK_F32, 3, s);
        arr_fill(&in, &seed, 0.5, 2);
        for (size_t i = 0; i < nk_array_numel(&in); i++)
            if (ref_rand64(&seed) % 40 == 0)
                arr_set(&in, i, i % 2 ? 0.0 : -0.0); /* both zeros are false */
        arr_set(&in, 3, NAN);                      /* NaN is true */
        double *x = arr_values(&in), want[64 * 6];
        int n = 0;
        for (int p = 0; p < 64; p++) {
            if (axis == -1) {
                int all = 1;
                for (int k = 0; k < 30; k++)
                    all &= x[p * 30 + k] != 0;
                want[n++] = all;
            } else if (axis == 1) {
                for (int b = 0; b < 6; b++) {
                    int all = 1;
                    for (int a = 0; a < 5; a++)
                        all &= x[p * 30 + a * 6 + b] != 0;
                    want[n++] = all;
                }
            } else {
                for (int a = 0; a < 5; a++) {
                    int all = 1;
                    for (int b = 0; b < 6; b++)
                        all &= x[p * 30 + a * 6 + b] != 0;
                    want[n++] = all;
                }
            }
        }
        if (run_kernel("all", k_all, &in, 1, &out, 1) == 0) {
            CHECK_INT(out.dtype, NK_U8);
            CHECK_INT(out.ndim, axis == -1 ? 1 : 2);
            CHECK_INT((int)nk_array_numel(&out), n);
            CHECK_ARR("all", &out, want, 0, NULL, 0);
            nk_array_free(&out);
        }
        free(x);
        nk_array_free(&in);
    }
}

/* ---- dropout: the generator as documented */

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double draw(uint32_t seed, uint64_t k)
{
    const uint64_t g = 0x9E3779B97F4A7C15ull;
    return (double)(mix(mix((uint64_t)seed ^ g) + (k + 1) * g) >> 40) / 16777216.0;
}

/* args: x [P, F], seed [1, 1] uint32, prob [P, 1] float32; outputs one or
 * two dropouts of x (K.twice), the second after reseeding with K.reseed */
static void k_dropout(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]), s = nk_load(nc, args[1]), p = nk_load(nc, args[2]);
    if (K.seeded)
        nk_random_seed(nc, s);
    nk_operand prob = K.prob_tile ? nk_col(p) : nk_imm(K.prob);
    ref_return_tile(nc, nk_dropout(nc, x, prob));
    if (K.twice) {
        if (K.reseed)
            nk_random_seed(nc, s);
        nk_tensor d = nk_ndarray(nc, NK_SHAPE(x.shape[0], x.shape[1]), (nk_dtype)x.dtype, NK_SBUF);
        nk_isa_dropout(nc, d, x, prob);
        ref_return_tile(nc, d);
    }
}

/* Runs k_dropout; checks every element against the documented generator
 * and returns the dropped fraction of the first output (-1 on failure). */
static double check_dropout(nk_dtype dt, int64_t P, int64_t F, uint32_t seed, float prob, int prob_tile, int seeded,
                            int twice, int reseed, nk_array *keep_out)
{
    K.prob = prob, K.prob_tile = prob_tile, K.seeded = seeded, K.twice = twice, K.reseed = reseed;
    int64_t s[2] = {P, F}, s1[2] = {1, 1}, sp[2] = {P, 1};
    uint64_t rng = seed * 7 + 1;
    nk_array in[3], out[2];
    arr_new(&in[0], dt, 2, s);
    arr_new(&in[1], NK_U32, 2, s1);
    arr_new(&in[2], NK_F32, 2, sp);
    arr_fill(&in[0], &rng, ref_is_float(dt) ? 0.5 : 1, ref_is_float(dt) ? 4 : 1e9); /* never zero */
    ((uint32_t *)in[1].data)[0] = seed;
    for (int64_t p = 0; p < P; p++)
        arr_set(&in[2], (size_t)p, (double)p / (double)(P - 1)); /* 0 .. 1 down the partitions */
    double *x = arr_values(&in[0]), *want = malloc((size_t)(P * F) * sizeof *want), frac = -1;
    int nout = twice ? 2 : 1;
    if (run_kernel("dropout", k_dropout, in, 3, out, nout) == 0) {
        uint32_t sd = seeded ? seed : 0;
        for (int o = 0; o < nout; o++) {
            uint64_t base = o == 1 && !reseed ? (uint64_t)(P * F) : 0;
            int64_t dropped = 0;
            for (int64_t i = 0; i < P * F; i++) {
                double pp = prob_tile ? ref_round(NK_F32, (double)(i / F) / (double)(P - 1)) : prob;
                int drop = draw(sd, base + (uint64_t)i) < pp;
                want[i] = drop ? 0 : x[i];
                dropped += drop;
            }
            CHECK_ARR("dropout", &out[o], want, 0, NULL, 0);
            if (o == 0)
                frac = (double)dropped / (double)(P * F);
        }
        if (keep_out) {
            *keep_out = out[nout - 1];
            arr_free_all(out, nout - 1);
        } else {
            arr_free_all(out, nout);
        }
    }
    free(x);
    free(want);
    arr_free_all(in, 3);
    return frac;
}

TEST(dropout_follows_its_documented_generator)
{
    double f = check_dropout(NK_F32, 128, 512, 12345, 0.3f, 0, 1, 0, 0, NULL);
    double sd = sqrt(0.3 * 0.7 / 65536.0);
    CHECK_NEAR(f, 0.3, 0, 5 * sd);
    CHECK_NEAR(check_dropout(NK_BF16, 128, 512, 7, 0.0f, 0, 1, 0, 0, NULL), 0.0, 0, 0); /* keeps everything */
    CHECK_NEAR(check_dropout(NK_BF16, 128, 512, 7, 1.0f, 0, 1, 0, 0, NULL), 1.0, 0, 0); /* drops everything */
    check_dropout(NK_F32, 128, 100, 99, 0.0f, 1, 1, 0, 0, NULL);      /* prob per partition */
    check_dropout(NK_I32, 64, 33, 5, 0.5f, 1, 1, 0, 0, NULL);         /* integers kept bit for bit */
    check_dropout(NK_F16, 32, 16, 0, 0.25f, 0, 0, 0, 0, NULL);        /* never seeded: seed 0 */
}

TEST(dropout_draws_advance_and_a_seed_repeats_them)
{
    nk_array a = {0}, b = {0};
    /* two dropouts after one seed draw different numbers... */
    check_dropout(NK_F32, 128, 64, 77, 0.5f, 0, 1, 1, 0, &a);
    /* ...and reseeding between them repeats the first */
    check_dropout(NK_F32, 128, 64, 77, 0.5f, 0, 1, 1, 1, &b);
    if (a.data && b.data) {
        size_t same = 0, n = nk_array_numel(&a);
        for (size_t i = 0; i < n; i++)
            same += arr_get(&a, i) == arr_get(&b, i);
        CHECK(same < n); /* the second outputs differ */
    }
    nk_array_free(&a);
    nk_array_free(&b);
    /* another seed, other draws */
    double f1 = check_dropout(NK_F32, 128, 512, 1, 0.5f, 0, 1, 0, 0, NULL);
    double f2 = check_dropout(NK_F32, 128, 512, 2, 0.5f, 0, 1, 0, 0, NULL);
    CHECK(f1 != f2);
}

/* ---- costs [ISA-old] after the 100-cycle static overhead [A2][PG], Vector
 * at 1.12 GHz on trn1 [A2]: dropout max(MIN_II, N); select priced as
 * tensor_copy_predicated, max(MIN_II, N) with the predicate and on_true in
 * different memories, else max(MIN_II, 2N) (assumed for nl.where) */

static struct {
    int which, psum_cond;
} C;

static void k_cost(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]);
    if (C.which == 0) {
        nk_tensor c = x;
        if (C.psum_cond) {
            c = nk_ndarray(nc, NK_SHAPE(x.shape[0], x.shape[1]), NK_F32, NK_PSUM);
            nk_isa_tensor_copy(nc, c, x);
        }
        ref_return_tile(nc, nk_where_s(nc, c, x, 0.0f));
    } else {
        ref_return_tile(nc, nk_dropout(nc, x, nk_imm(0.5f)));
    }
}

static double cost_of(int which, int psum_cond, int op, int64_t F)
{
    C.which = which, C.psum_cond = psum_cond;
    int64_t s[2] = {128, F};
    nk_array in = arr_shape(NK_F32, 2, s);
    timed t;
    double ns = -1;
    if (timed_run(&t, k_cost, &in, 1, "trn1") == 0)
        ns = timed_bar_ns(&t, op, 0);
    timed_free(&t);
    return ns;
}

TEST(where_and_dropout_costs)
{
    for (int64_t F = 16; F <= 1024; F *= 8) {
        double n = (double)F;
        CHECK_NEAR(cost_of(0, 0, NK_OP_SELECT, F), (100 + fmax(64, 2 * n)) / 1.12, 1e-12, 0);
        CHECK_NEAR(cost_of(0, 1, NK_OP_SELECT, F), (100 + fmax(64, n)) / 1.12, 1e-12, 0);
        CHECK_NEAR(cost_of(1, 0, NK_OP_DROPOUT, F), (100 + fmax(64, n)) / 1.12, 1e-12, 0);
    }
}

/* ---- the tracer's checks */

static void k_err_where_cond(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_where(nc, nk_ix(nc, x, NK_ALL, nk_r(0, 32)), x, x);
}

static void k_err_where_y(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_where(nc, x, x, nk_ix(nc, x, nk_r(0, 64), NK_ALL));
}

static void k_err_where_hbm(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_where_s(nc, x, a[0], 0.0f);
}

static void k_err_where_unwritten(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), c = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    at = __LINE__; nk_where_s(nc, c, x, 0.0f);
}

static void k_err_all_axis(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_all(nc, x, 0);
}

static void k_err_seed_shape(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor s = nk_iota(nc, NK_SHAPE(128, 1), ((nk_affine){0}), NK_U32);
    (void)a;
    at = __LINE__; nk_random_seed(nc, s);
}

static void k_err_seed_dtype(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor s = nk_zeros(nc, NK_SHAPE(1, 1), NK_BF16, NK_SBUF);
    (void)a;
    at = __LINE__; nk_random_seed(nc, s);
}

static void k_err_dropout_prob(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_dropout(nc, x, nk_imm(1.5f));
}

static void k_err_dropout_dtype(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_BF16, NK_SBUF);
    at = __LINE__; nk_isa_dropout(nc, d, x, nk_imm(0.5f));
}

static void k_err_dropout_int_prob(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), p = nk_zeros(nc, NK_SHAPE(128, 1), NK_BF16, NK_SBUF);
    at = __LINE__; nk_dropout(nc, x, nk_col(p));
}

static void k_err_dropout_prob_shape(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_dropout(nc, x, nk_col(nk_ix(nc, x, nk_r(0, 64), nk_r(0, 1))));
}

TEST(where_all_and_dropout_errors)
{
    int64_t s[2] = {128, 64};
    nk_array x = arr_shape(NK_F32, 2, s), xi = arr_shape(NK_I32, 2, s);
    EXPECT_TRACE_ERROR(k_err_where_cond, &x, 1, NK_ESHAPE, &at, "nk_where: condition [128, 32] and x [128, 64] differ");
    EXPECT_TRACE_ERROR(k_err_where_y, &x, 1, NK_ESHAPE, &at, "nk_where: y [64, 64] and x [128, 64] differ");
    EXPECT_TRACE_ERROR(k_err_where_hbm, &x, 1, NK_EMEMORY, &at, "nk_where_s: x is an HBM tensor");
    EXPECT_TRACE_ERROR(k_err_where_unwritten, &x, 1, NK_EUNINIT, &at, "nk_where_s: condition is an SBUF tile",
                       "never written");
    EXPECT_TRACE_ERROR(k_err_all_axis, &x, 1, NK_EINVAL, &at, "nk_all: axis 0 is not a free axis of a 2-dim tile");
    EXPECT_TRACE_ERROR(k_err_seed_shape, &x, 1, NK_ESHAPE, &at,
                       "nk_random_seed: seed must be a [1, 1] tile holding one 32-bit value, got [128, 1]");
    EXPECT_TRACE_ERROR(k_err_seed_dtype, &x, 1, NK_EDTYPE, &at,
                       "nk_random_seed: seed must hold a 32-bit value (int32, uint32 or float32), got bfloat16");
    EXPECT_TRACE_ERROR(k_err_dropout_prob, &x, 1, NK_EINVAL, &at, "nk_dropout: prob 1.5 is outside [0, 1]");
    EXPECT_TRACE_ERROR(k_err_dropout_dtype, &x, 1, NK_EDTYPE, &at,
                       "dropout: dst is bfloat16 but data is float32; the output dtype must be the input's");
    EXPECT_TRACE_ERROR(k_err_dropout_int_prob, &xi, 1, NK_EDTYPE, &at,
                       "nk_dropout: int32 data needs a float32 prob, got bfloat16");
    EXPECT_TRACE_ERROR(k_err_dropout_prob_shape, &x, 1, NK_ESHAPE, &at,
                       "nk_dropout: prob must be a per-partition column [128, 1], got [64, 1]");
}
