/*
 * test_tutorials.c - the NKI tutorial kernels (kernels/matmul_hoisted.c and
 * the others the registry lists after rmsnorm) against double-precision
 * references, on small shapes with partial tiles where the tutorial masks,
 * and traced for timing only at the tutorial's own sizes.
 *
 * Every comparison is element by element, |got - ref| <= bound, with the
 * bound derived from the dtypes next to each test: u = 2^-24 for fp32,
 * u_bf16 = 2^-8. Outputs are decoded with the references' own decoder.
 *
 * The tutorial-size traces compile with data-less arrays (nothing runs),
 * check the instruction count the tiling implies and time the program on
 * trn1 and trn2. No timing number is asserted; with NK_TEST_VERBOSE set the
 * modelled device times are printed.
 */
#include "test.h"
#include "kernels.h"
#include "nkint.h"

#include <stdlib.h>

#define U32 0x1.0p-24
#define UBF16 0x1.0p-8

static int verbose(void) { return getenv("NK_TEST_VERBOSE") != NULL; }

/* The traces at the tutorials' own sizes (tens of thousands of instructions,
 * gigabytes of modelled data) take minutes under the sanitizers and test
 * no code the small shapes do not: they run in the plain build only. */
#if defined(__SANITIZE_ADDRESS__)
#define NK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NK_SANITIZED 1
#endif
#endif
#ifndef NK_SANITIZED
#define NK_SANITIZED 0
#endif
#define SKIP_UNDER_SANITIZERS()                                                        \
    do {                                                                               \
        if (NK_SANITIZED) {                                                            \
            printf("  %s: run in the plain build only (too slow under ASan)\n", __func__); \
            return;                                                                    \
        }                                                                              \
    } while (0)

/* ---- arrays */

static nk_array arr(nk_dtype dt, int ndim, const int64_t *shape, uint64_t seed, double lo, double hi)
{
    nk_array a;
    if (nk_array_alloc(&a, dt, ndim, shape))
        memset(&a, 0, sizeof a);
    else
        nk_fill_uniform(&a, seed, lo, hi);
    return a;
}

static nk_array arr2(nk_dtype dt, int64_t d0, int64_t d1, uint64_t seed, double lo, double hi)
{
    return arr(dt, 2, (int64_t[]){d0, d1}, seed, lo, hi);
}

/* A scalar kernel argument: a 0-d array over *v (which outlives the call). */
static nk_array scalar_i32(int32_t *v) { return (nk_array){NK_I32, 0, {0}, v}; }
static nk_array scalar_f32(float *v) { return (nk_array){NK_F32, 0, {0}, v}; }

static void free_arrays(nk_array *a, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].ndim > 0)
            nk_array_free(&a[i]);
}

/* ---- running and comparing */

typedef struct result {
    const char *name;
    nk_array out;
    double *got, *ref;
    size_t n;
    int ok;
} result;

/* Runs built-in kernel `name` on args; the reference ref gets refargs
 * (often args without the scalars). ref NULL: the caller fills r.ref. */
static result run_ref(const char *name, const nk_array *args, int nargs, nk_reference_fn ref, const nk_array *refargs,
                      int nref)
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
    if (ref)
        CHECK_INT(ref(refargs, nref, &r.ref, &r.n, 1), 0);
    r.ok = !nk_test_failed();
    return r;
}

static result run(const char *name, const nk_array *args, int nargs)
{
    const nk_kernel_info *info = nk_builtin_kernel(name);
    return run_ref(name, args, nargs, info ? info->reference : NULL, args, nargs);
}

static void done(result *r)
{
    free(r->got);
    free(r->ref);
    nk_array_free(&r->out);
}

/* |got - ref| <= bound[i] (or atol + rtol |ref| when bound is NULL)
 * everywhere; prints the largest error against its bound when verbose. */
static void check_bound(const result *r, const double *bound, double rtol, double atol, const char *what)
{
    if (!r->ok)
        return;
    size_t bad = 0;
    double worst = 0, maxerr = 0, at_bound = 0;
    for (size_t i = 0; i < r->n; i++) {
        double e = fabs(r->got[i] - r->ref[i]), b = bound ? bound[i] : atol + rtol * fabs(r->ref[i]);
        if (!(e <= b) && bad++ < 5)
            nk_test_fail(__FILE__, __LINE__, "%s %s element %zu: %.9g vs reference %.9g (error %.3g, bound %.3g)",
                         r->name, what, i, r->got[i], r->ref[i], e, b);
        if (e > maxerr)
            maxerr = e;
        if (b > 0 && e / b > worst) {
            worst = e / b;
            at_bound = b;
        }
    }
    if (bad > 5)
        nk_test_fail(__FILE__, __LINE__, "%s %s: %zu of %zu elements outside the bound", r->name, what, bad, r->n);
    if (verbose())
        printf("  %-24s %-28s max error %.3g; worst error/bound %.3f (bound there %.3g)\n", r->name, what, maxerr,
               worst, at_bound);
}

/* ---- tutorial-size traces */

/* Compiles kernel `name` for shapes only (args without data) on trn1 and
 * trn2, checks the number of instructions the kernel issued (want_instr;
 * 0: not checked; the spills and reloads the compile step adds when SBUF
 * is short are counted apart) and prints the modelled device time.
 * Returns 0, or the compile status (the message in err). */
static int trace_at_size(const char *name, const nk_array *args, int nargs, size_t want_instr, char *err,
                         size_t errlen)
{
    const nk_kernel_info *info = nk_builtin_kernel(name);
    CHECK(info != NULL);
    if (!info)
        return NK_ENOTFOUND;
    const char *targets[2] = {"trn1", "trn2"};
    double us[2] = {0, 0};
    size_t n = 0, spills[2] = {0, 0};
    for (int t = 0; t < 2; t++) {
        nk_kernel *k = nk_kernel_new(name, info->fn);
        nk_options o = {targets[t], 0, NULL};
        const nk_program *p = NULL;
        int rc = nk_kernel_compile(k, args, nargs, &o, &p);
        if (rc) {
            snprintf(err, errlen, "%s", nk_kernel_error(k));
            nk_kernel_free(k);
            return rc;
        }
        for (uint32_t i = 0; i < p->ninstr; i++)
            spills[t] += (p->instrs[i].flags & NK_IF_SPILL) != 0;
        n = nk_program_num_instructions(p) - spills[t];
        if (want_instr) /* 0: not checked */
            CHECK_INT(n, want_instr);
        nk_profile *pr = NULL;
        nk_metrics m;
        CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
        if (pr && !nk_profile_metrics(pr, &m)) {
            us[t] = m.total_time * 1e6;
            CHECK(m.total_time > 0);
        }
        nk_profile_free(pr);
        nk_kernel_free(k);
    }
    if (verbose()) {
        char shape[96] = "", spill[64] = "";
        size_t w = 0;
        for (int i = 0; i < nargs && w < sizeof shape; i++)
            for (int d = 0; d < args[i].ndim && w < sizeof shape; d++)
                w += (size_t)snprintf(shape + w, sizeof shape - w, "%s%lld", d ? "x" : i ? " " : "",
                                      (long long)args[i].shape[d]);
        if (spills[0] || spills[1])
            snprintf(spill, sizeof spill, " (+ spills/reloads: %zu on trn1, %zu on trn2)", spills[0], spills[1]);
        printf("  %-24s %s %s: %zu instructions%s; modelled device time trn1 %.1f us, trn2 %.1f us\n", name, shape,
               nk_dtype_name(args[0].dtype), n, spill, us[0], us[1]);
    }
    return 0;
}

/* ---- the matmul ladder */

/* out = lhsT^T rhs with bf16 inputs, fp32 PSUM accumulation over K and a
 * bf16 result. With S = sum_k |a_km||b_kn| and gamma_K = K u / (1 - K u),
 * any fp32 summation order errs by at most gamma_K S, and the final rounding
 * to bf16 by u_bf16 |ref| (times 1 + u_bf16 on the rest): the bound for
 * matmul_hoisted and matmul_blocked_free. matmul_fully_optimized rounds
 * its running sum to bf16 after each of its J K blocks; every rounding but
 * the last errs by at most u_bf16 (1 + u_bf16)^J S, which adds
 * (J - 1) u_bf16 (1 + u_bf16)^J S. */
static double *matmul_bounds(const nk_array *ab, const double *ref, int kblocks)
{
    int64_t K = ab[0].shape[0], M = ab[0].shape[1], N = ab[1].shape[1];
    nk_array abs_ab[2];
    double *bound = malloc((size_t)(M * N) * sizeof *bound);
    double *a = malloc((size_t)(K * M) * sizeof *a), *b = malloc((size_t)(K * N) * sizeof *b);
    int ok = bound && a && b;
    if (ok) {
        nk_ref_decode(&ab[0], a);
        nk_ref_decode(&ab[1], b);
        for (int64_t i = 0; i < K * M; i++)
            a[i] = fabs(a[i]);
        for (int64_t i = 0; i < K * N; i++)
            b[i] = fabs(b[i]);
        /* S = |lhsT|^T |rhs| through the reference itself, on fp32 copies
         * (|x| of a bf16 value is exact in fp32) */
        abs_ab[0] = (nk_array){NK_F32, 2, {K, M}, NULL};
        abs_ab[1] = (nk_array){NK_F32, 2, {K, N}, NULL};
        float *fa = malloc((size_t)(K * M) * sizeof *fa), *fb = malloc((size_t)(K * N) * sizeof *fb);
        ok = fa && fb;
        if (ok) {
            for (int64_t i = 0; i < K * M; i++)
                fa[i] = (float)a[i];
            for (int64_t i = 0; i < K * N; i++)
                fb[i] = (float)b[i];
            abs_ab[0].data = fa;
            abs_ab[1].data = fb;
            size_t n = (size_t)(M * N);
            ok = !nk_ref_matmul(abs_ab, 2, &bound, &n, 1);
        }
        free(fa);
        free(fb);
    }
    double gamma = (double)K * U32 / (1 - (double)K * U32), grow = pow(1 + UBF16, kblocks);
    for (int64_t i = 0; ok && i < M * N; i++) {
        double S = bound[i];
        bound[i] = UBF16 * fabs(ref[i]) + grow * gamma * S + (kblocks - 1) * UBF16 * grow * S;
    }
    free(a);
    free(b);
    if (!ok) {
        free(bound);
        CHECK(ok);
        return NULL;
    }
    return bound;
}

static void check_matmul(const char *name, int64_t K, int64_t M, int64_t N, const int32_t *meta, int kblocks,
                         uint64_t seed)
{
    nk_array args[5] = {arr2(NK_BF16, K, M, seed, -1, 1), arr2(NK_BF16, K, N, seed + 1, -1, 1)};
    int32_t mv[3];
    int nargs = 2;
    if (meta) {
        for (int i = 0; i < 3; i++) {
            mv[i] = meta[i];
            args[2 + i] = scalar_i32(&mv[i]);
        }
        nargs = 5;
    }
    result r = run_ref(name, args, nargs, nk_ref_matmul, args, 2);
    if (r.ok) {
        CHECK_INT(r.out.dtype, NK_BF16);
        CHECK_INT(r.out.shape[0], M);
        CHECK_INT(r.out.shape[1], N);
        double *bound = matmul_bounds(args, r.ref, kblocks);
        char what[64];
        snprintf(what, sizeof what, "K=%lld M=%lld N=%lld", (long long)K, (long long)M, (long long)N);
        if (bound)
            check_bound(&r, bound, 0, 0, what);
        free(bound);
    }
    done(&r);
    free_arrays(args, 2);
}

TEST(tutorial_matmul_hoisted_matches_reference)
{
    static const int64_t kmn[][3] = {{128, 128, 512}, {384, 256, 1024}, {1024, 384, 1536}};
    for (size_t s = 0; s < sizeof kmn / sizeof kmn[0]; s++)
        check_matmul("matmul_hoisted", kmn[s][0], kmn[s][1], kmn[s][2], NULL, 1, 10 + s);
}

TEST(tutorial_matmul_blocked_free_matches_reference)
{
    static const int64_t kmn[][3] = {{128, 256, 1024}, {384, 512, 2048}, {640, 768, 1024}};
    for (size_t s = 0; s < sizeof kmn / sizeof kmn[0]; s++)
        check_matmul("matmul_blocked_free", kmn[s][0], kmn[s][1], kmn[s][2], NULL, 1, 20 + s);
}

TEST(tutorial_matmul_fully_optimized_matches_reference)
{
    /* small meta-parameters (blocks of 256 x 512 x 256) so that several M,
     * N and K blocks fit small shapes; K blocks accumulate in bf16 */
    static const int32_t meta[3] = {2, 1, 2};
    static const int64_t kmn[][3] = {{256, 256, 512}, {512, 512, 1024}, {768, 256, 1536}};
    for (size_t s = 0; s < sizeof kmn / sizeof kmn[0]; s++)
        check_matmul("matmul_fully_optimized", kmn[s][0], kmn[s][1], kmn[s][2], meta, (int)(kmn[s][0] / 256),
                     30 + s);
    /* blocks of one tile each: every level of the loop nest iterates */
    static const int32_t ones[3] = {1, 1, 1};
    check_matmul("matmul_fully_optimized", 384, 256, 1024, ones, 3, 40);
}

TEST(tutorial_matmul_ladder_refuses_sizes_off_the_tiling)
{
    /* the tutorial asserts divisibility; here the last slice runs past the
     * tensor and tracing stops at the load that reads it */
    static const char *names[3] = {"matmul_hoisted", "matmul_blocked_free", "matmul_fully_optimized"};
    for (int i = 0; i < 3; i++) {
        nk_array ab[2] = {{NK_BF16, 2, {256, 200}, NULL}, {NK_BF16, 2, {256, 2048}, NULL}};
        nk_kernel *k = nk_kernel_new(names[i], nk_builtin_kernel(names[i])->fn);
        const nk_program *p = NULL;
        CHECK_INT(nk_kernel_compile(k, ab, 2, NULL, &p), NK_EBOUNDS);
        CHECK_CONTAINS(nk_kernel_error(k), "out of bounds");
        nk_kernel_free(k);
    }
}

/* lhsT [K=8192, M=4096], rhs [8192, 8192]: the tutorial's benchmark */
TEST(tutorial_matmul_ladder_traces_at_4096x8192x8192)
{
    SKIP_UNDER_SANITIZERS();
    nk_array ab[2] = {{NK_BF16, 2, {8192, 4096}, NULL}, {NK_BF16, 2, {8192, 8192}, NULL}};
    const int64_t MT = 4096 / 128, NT = 8192 / 512, KT = 8192 / 128;
    char err[512] = "";
    /* 32 x 16 output tiles, each 64 x (2 loads + matmul), copy, store (the
     * zeros fold into the first matmul) */
    CHECK_INT(trace_at_size("matmul_tiled", ab, 2, (size_t)(MT * NT * (KT * 3 + 2)), err, sizeof err), 0);
    /* per 128-column strip: 64 lhsT loads; per 512-column strip: 64 rhs
     * loads, 64 matmuls, copy, store */
    CHECK_INT(trace_at_size("matmul_hoisted", ab, 2, (size_t)(MT * (KT + NT * (2 * KT + 2))), err, sizeof err), 0);
    /* per 256-column block: 2 x 64 lhsT loads; per 1024-column block:
     * 2 x 64 rhs loads and 2 x 2 output tiles of 64 matmuls, copy, store */
    CHECK_INT(trace_at_size("matmul_blocked_free", ab, 2,
                            (size_t)(MT / 2 * (2 * KT + NT / 2 * (2 * KT + 4 * (KT + 2)))), err, sizeof err),
              0);
    /* per 1024-column block: 2 x 16 x 2 result tiles zeroed; per K block
     * of 1024: 8 rhs loads and, per 2048-row block, 8 lhsT loads and 16 x 2
     * output tiles of 8 matmuls and one add; then 2 x 16 strips of 2 copies
     * and a store */
    const int64_t NB = 8192 / 1024, KB = 8192 / 1024, MB = 4096 / 2048;
    CHECK_INT(trace_at_size("matmul_fully_optimized", ab, 2,
                            (size_t)(NB * (MB * 16 * 2 + KB * (8 + MB * (8 + 32 * 9)) + MB * 16 * 3)), err,
                            sizeof err),
              0);
    if (err[0])
        printf("  %s\n", err);
}

/* ---- layernorm */

/* The per-element bound of the tutorial's one-pass layernorm in fp32, from
 * the row's statistics (in double): with A the mean of |x|, Q of x^2, m
 * the mean and V = Q - m^2,
 *   mean:      dm <= (D + 4) u A    (D - 1 additions, 1/D and its product)
 *   E[x^2]:    dq <= (D + 4) u Q    (and the squares' rounding)
 *   variance:  dv <= dq + (2|m| + dm) dm + 2u (Q + m^2) + u (V + eps)
 *   rsqrt:     relative rho <= dv / (2 (V + eps)) (1 + dv / (V + eps)) + 2u
 *   n = (x - m) r:  dn <= (dm + u |x - m|) r (1 + rho) + |n| (rho + u)
 *   y = n g + b:    dy <= dn |g| + 2u |n g| + u |b|
 * with a 1% margin for the second-order terms. layernorm_bn (bn != 0)
 * takes two-pass statistics of the even and odd elements of 512-column
 * chunks (c = min(D, 512) / 2 rounded up elements each) merged pairwise
 * over 2 ceil(D / 512) classes: the mean errs by (c + 2 + 12 nb) u A, each
 * class's sum of squared deviations by (c + 4) u of itself, every merge by
 * 10u of the total and by twice the largest deviation R = max |x - m| times
 * the means' errors:
 *   dv <= (c + 4 + 20 nb) u V + 4 R dm + dm^2 + u (V + eps). */
static double *layernorm_bounds(const nk_array *in, float eps, double *ref, int bn)
{
    int64_t R = in[0].shape[0], D = in[0].shape[1];
    double *x = malloc((size_t)(R * D) * sizeof *x), *g = malloc((size_t)D * sizeof *g);
    double *b = malloc((size_t)D * sizeof *b), *bound = malloc((size_t)(R * D) * sizeof *bound);
    if (!x || !g || !b || !bound) {
        free(x), free(g), free(b), free(bound);
        return NULL;
    }
    nk_ref_decode(&in[0], x);
    nk_ref_decode(&in[1], g);
    nk_ref_decode(&in[2], b);
    for (int64_t i = 0; i < R; i++) {
        const double *row = x + i * D;
        double m = 0, A = 0, Q = 0, V = 0;
        for (int64_t j = 0; j < D; j++) {
            m += row[j];
            A += fabs(row[j]);
            Q += row[j] * row[j];
        }
        m /= (double)D, A /= (double)D, Q /= (double)D;
        for (int64_t j = 0; j < D; j++)
            V += (row[j] - m) * (row[j] - m);
        V /= (double)D;
        double dm = (double)(D + 4) * U32 * A, dq = (double)(D + 4) * U32 * Q;
        double ve = V + (double)eps;
        double dv = dq + (2 * fabs(m) + dm) * dm + 2 * U32 * (Q + m * m) + U32 * ve;
        if (bn) {
            double nb = (double)((D + 511) / 512), c = (double)(((D < 512 ? D : 512) + 1) / 2), R = 0;
            for (int64_t j = 0; j < D; j++)
                R = fabs(row[j] - m) > R ? fabs(row[j] - m) : R;
            dm = (c + 2 + 12 * nb) * U32 * A;
            dv = (c + 4 + 20 * nb) * U32 * V + 4 * R * dm + dm * dm + U32 * ve;
        }
        double rho = dv / (2 * ve) * (1 + dv / ve) + 2 * U32, r = 1 / sqrt(ve);
        for (int64_t j = 0; j < D; j++) {
            double n = (row[j] - m) * r;
            double dn = (dm + U32 * fabs(row[j] - m)) * r * (1 + rho) + fabs(n) * (rho + U32);
            bound[i * D + j] = 1.01 * (dn * fabs(g[j]) + 2 * U32 * fabs(n * g[j]) + U32 * fabs(b[j]));
            if (ref) /* the reference for this eps */
                ref[i * D + j] = n * g[j] + b[j];
        }
    }
    free(x), free(g), free(b);
    return bound;
}

static void check_layernorm(const char *name, int64_t R, int64_t D, double lo, double hi, float eps, int pass_eps,
                            uint64_t seed)
{
    int bn = !strcmp(name, "layernorm_bn");
    nk_array in[3] = {arr2(NK_F32, R, D, seed, lo, hi), arr(NK_F32, 1, (int64_t[]){D}, seed + 1, 0, 1),
                      arr(NK_F32, 1, (int64_t[]){D}, seed + 2, 0, 1)};
    float ev = eps;
    nk_array args[4] = {in[0], scalar_f32(&ev), in[1], in[2]};
    result r = pass_eps ? run_ref(name, args, 4, nk_ref_layernorm, in, 3) : run(name, in, 3);
    if (r.ok) {
        /* another epsilon than the reference's: the bound function's own values */
        double *bound = layernorm_bounds(in, eps, eps == (float)NK_LAYERNORM_EPS ? NULL : r.ref, bn);
        char what[64];
        snprintf(what, sizeof what, "[%lld, %lld] x in [%g, %g) eps %g", (long long)R, (long long)D, lo, hi, eps);
        CHECK(bound != NULL);
        if (bound)
            check_bound(&r, bound, 0, 0, what);
        free(bound);
    }
    done(&r);
    free_arrays(in, 3);
}

TEST(tutorial_layernorm_matches_reference)
{
    static const char *names[2] = {"layernorm", "layernorm_bn"};
    /* the tutorial's inputs, uniform in [0, 1); partial last row tiles, and
     * for layernorm_bn partial (masked) last 512-column chunks */
    static const int64_t shapes[][2] = {{250, 512}, {128, 64}, {1, 300}, {300, 100}, {129, 512}, {130, 1100},
                                        {300, 1000}};
    for (int k = 0; k < 2; k++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            check_layernorm(names[k], shapes[s][0], shapes[s][1], 0, 1, (float)NK_LAYERNORM_EPS, 1, 50 + s);
        /* without the epsilon argument; inputs centred at 0 */
        check_layernorm(names[k], 200, 256, -1, 1, (float)NK_LAYERNORM_EPS, 0, 60);
        /* a large mean against the spread: E[x^2] - E[x]^2 cancels, the bound
         * grows with (Q + 2 m^2) / V; bn_stats does not cancel */
        check_layernorm(names[k], 130, 512, 10, 11, (float)NK_LAYERNORM_EPS, 1, 61);
    }
}

TEST(tutorial_layernorm_reads_its_epsilon_argument)
{
    /* eps = 0.5 dominates the variance of [0, 1) rows (1/12) */
    check_layernorm("layernorm", 140, 200, 0, 1, 0.5f, 1, 70);
    check_layernorm("layernorm_bn", 140, 200, 0, 1, 0.5f, 1, 71);
}

/* Instructions of nk_broadcast of a [1, F] row: a memset of ones, then a
 * matmul and a copy per 512 columns. */
static size_t row_broadcast(int64_t F) { return (size_t)(1 + 2 * ((F + 511) / 512)); }

TEST(tutorial_layernorm_at_tutorial_sizes)
{
    SKIP_UNDER_SANITIZERS();
    /* The drivers' 4096 x 8192 and the latency figure's 300 x 1000: 2 loads
     * and 2 broadcasts for gamma and beta. Per 128-row tile, layernorm: a
     * load, 2 x (sum, scale) for the means, square, multiply, subtract,
     * add, rsqrt, subtract, multiply, multiply, add, a store (15);
     * layernorm_bn: a load, a bn_stats per 512-column chunk, bn_aggr, add,
     * rsqrt, the two-op tensor_scalar, multiply, add, store (8 + chunks). */
    static const char *names[2] = {"layernorm", "layernorm_bn"};
    static const int64_t shapes[][2] = {{4096, 8192}, {300, 1000}, {4096, 512}};
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < 3; s++) {
            int64_t R = shapes[s][0], D = shapes[s][1], tiles = (R + 127) / 128, chunks = (D + 511) / 512;
            float eps = 1e-5f;
            nk_array args[4] = {{NK_F32, 2, {R, D}, NULL}, scalar_f32(&eps), {NK_F32, 1, {D}, NULL},
                                {NK_F32, 1, {D}, NULL}};
            size_t want = 2 + 2 * row_broadcast(D) + (size_t)tiles * (k ? (size_t)(8 + chunks) : 15);
            char err[512] = "";
            CHECK_INT(trace_at_size(names[k], args, 4, want, err, sizeof err), 0);
            if (err[0])
                printf("  %s\n", err);
        }
}

/* ---- fused self-attention (Stable Diffusion) */

/* Attention in double for q, k, v [S, d] with the tutorial's scale, the
 * causal mask optional: the output (when out is not NULL) and, per element,
 * the error bound of the kernel on fp32 inputs with Tensor-engine operands
 * rounded to u_pe (u_bf16 for mixed precision, 0 for fp32):
 *   a score s_ij errs by e_ij <= (2 u_pe + u_pe^2 + gamma_d (1 + u_pe)^2)
 *   * scale * sum_e |q_ie k_je|; exp(s - max) adds u |s - max| + 2u.
 *   Softmax is shift-invariant, so with delta_i the largest of these over
 *   the row every normalised weight is off by a factor within
 *   exp(+-2 delta_i); the bf16 copies of the weights and of v add u_pe
 *   each, the fp32 sums of the weights and of w v gamma_S each, the
 *   reciprocal and the final multiply u each. The output, a weighted mean
 *   of v, then errs by at most (exp(2 delta_i + 2 u_pe + 2 gamma_S + 4u)
 *   - 1) sum_j w_j |v_je| / sum_j w_j. */
static double *attention_bounds_of(const double *q, const double *k, const double *v, int64_t S, int64_t d,
                                   double scale, int causal, double u_pe, double *out)
{
    size_t n = (size_t)(S * d);
    double *s = malloc((size_t)S * sizeof *s), *sa = malloc((size_t)S * sizeof *sa);
    double *bound = malloc(n * sizeof *bound);
    if (!s || !sa || !bound) {
        free(s), free(sa), free(bound);
        return NULL;
    }
    double gd = (double)d * U32 / (1 - (double)d * U32), gs = (double)S * U32 / (1 - (double)S * U32);
    for (int64_t i = 0; i < S; i++) {
        int64_t nk = causal ? i + 1 : S; /* keys this query sees */
        double mx = -INFINITY, mn = INFINITY, emax = 0, sum = 0;
        for (int64_t j = 0; j < nk; j++) {
            double dot = 0, adot = 0;
            for (int64_t e = 0; e < d; e++) {
                dot += q[i * d + e] * k[j * d + e];
                adot += fabs(q[i * d + e] * k[j * d + e]);
            }
            s[j] = scale * dot;
            sa[j] = (2 * u_pe + u_pe * u_pe + gd * (1 + u_pe) * (1 + u_pe)) * scale * adot;
            mx = s[j] > mx ? s[j] : mx;
            mn = s[j] < mn ? s[j] : mn;
            emax = sa[j] > emax ? sa[j] : emax;
        }
        double delta = emax + U32 * (mx - mn) + 2 * U32;
        for (int64_t j = 0; j < nk; j++)
            sum += (s[j] = exp(s[j] - mx));
        double f = expm1(2 * delta + 2 * u_pe + 2 * gs + 4 * U32) * 1.01;
        for (int64_t e = 0; e < d; e++) {
            double acc = 0, aacc = 0;
            for (int64_t j = 0; j < nk; j++) {
                acc += s[j] * v[j * d + e];
                aacc += s[j] * fabs(v[j * d + e]);
            }
            if (out)
                out[i * d + e] = acc / sum;
            bound[i * d + e] = f * aacc / sum;
        }
    }
    free(s), free(sa);
    return bound;
}

/* A decoded array, transposed from [rows, cols] when transpose is set. */
static double *decoded(const nk_array *a, int transpose)
{
    int64_t r = a->shape[0], c = a->shape[1];
    double *x = malloc((size_t)(r * c) * sizeof *x), *t = transpose ? malloc((size_t)(r * c) * sizeof *t) : NULL;
    if (!x || (transpose && !t)) {
        free(x), free(t);
        return NULL;
    }
    nk_ref_decode(a, x);
    if (!transpose)
        return x;
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            t[j * r + i] = x[i * c + j];
    free(x);
    return t;
}

/* q, k, v as the kernel takes them: [S, d] (sd_attention) or [d, S]
 * (attention_fwd, transposed = 1). */
static double *attention_bounds(const nk_array *qkv, int transposed, double scale, int causal, double u_pe,
                                double *out)
{
    int64_t S = qkv[0].shape[transposed], d = qkv[0].shape[!transposed];
    double *q = decoded(&qkv[0], transposed), *k = decoded(&qkv[1], transposed), *v = decoded(&qkv[2], transposed);
    double *b = q && k && v ? attention_bounds_of(q, k, v, S, d, scale, causal, u_pe, out) : NULL;
    free(q), free(k), free(v);
    return b;
}

static void check_attention(int64_t S, int64_t d, double lo, double hi, int causal, int mixed, uint64_t seed)
{
    nk_array qkv[3] = {arr2(NK_F32, S, d, seed, lo, hi), arr2(NK_F32, S, d, seed + 1, lo, hi),
                       arr2(NK_F32, S, d, seed + 2, lo, hi)};
    int32_t fl[2] = {causal, mixed};
    nk_array args[5] = {qkv[0], qkv[1], qkv[2], scalar_i32(&fl[0]), scalar_i32(&fl[1])};
    result r = run_ref("sd_attention", args, 5, nk_ref_sd_attention, qkv, 3);
    if (r.ok) {
        /* the causal reference is the bound function's own */
        double *bound =
            attention_bounds(qkv, 0, NK_SD_ATTENTION_SCALE, causal, mixed ? UBF16 : 0, causal ? r.ref : NULL);
        char what[80];
        snprintf(what, sizeof what, "S=%lld d=%lld in [%g, %g)%s%s", (long long)S, (long long)d, lo, hi,
                 causal ? " causal" : "", mixed ? " bf16 PE" : " fp32 PE");
        CHECK(bound != NULL);
        if (bound)
            check_bound(&r, bound, 0, 0, what);
        free(bound);
    }
    done(&r);
    free_arrays(qkv, 3);
}

TEST(tutorial_sd_attention_matches_reference)
{
    /* the tutorial's values, uniform in [0, 1), and centred ones */
    check_attention(128, 64, 0, 1, 0, 1, 100);
    check_attention(384, 64, 0, 1, 0, 1, 101);
    check_attention(256, 128, -1, 1, 0, 1, 102);
    check_attention(256, 32, -2, 2, 0, 1, 103);
    /* mixed_precision = 0: fp32 matmuls, a much tighter bound */
    check_attention(256, 64, -1, 1, 0, 0, 104);
}

TEST(tutorial_sd_attention_causal_mask)
{
    check_attention(256, 64, 0, 1, 1, 1, 110);
    check_attention(384, 32, -1, 1, 1, 0, 111);
}

TEST(tutorial_sd_attention_bound_function_matches_the_reference)
{
    /* the test's own attention (used for the causal case) against
     * nk_ref_sd_attention without the mask */
    nk_array qkv[3] = {arr2(NK_F32, 130, 16, 120, -1, 1), arr2(NK_F32, 130, 16, 121, -1, 1),
                       arr2(NK_F32, 130, 16, 122, -1, 1)};
    double *mine = malloc(130 * 16 * sizeof *mine), *ref = malloc(130 * 16 * sizeof *ref);
    size_t n = 130 * 16;
    double *b = attention_bounds(qkv, 0, NK_SD_ATTENTION_SCALE, 0, 0, mine);
    CHECK(b && mine && ref && !nk_ref_sd_attention(qkv, 3, &ref, &n, 1));
    for (size_t i = 0; b && mine && ref && i < n; i++)
        CHECK_NEAR(mine[i], ref[i], 1e-12, 1e-14);
    free(b), free(mine), free(ref);
    free_arrays(qkv, 3);
}

TEST(tutorial_sd_attention_at_tutorial_size)
{
    SKIP_UNDER_SANITIZERS();
    /* seqlen 4096, d_head 64, fp32 (the tutorial's driver); nt = 32 tiles.
     * Set-up per tile: v load + cast; q transposing load + scale (and
     * cast); k transposing load + cast. Per query tile: per key tile a
     * matmul, a copy and a max (3 nt); max, negate, exp, sum, cast,
     * reciprocal, broadcast
     * (7); per key tile a transpose and its copy (2 nt) and a matmul (nt);
     * copy, transpose and copy of the divisor, multiply, store (5). */
    const int64_t nt = 4096 / 128;
    nk_array qkv[3] = {{NK_F32, 2, {4096, 64}, NULL}, {NK_F32, 2, {4096, 64}, NULL}, {NK_F32, 2, {4096, 64}, NULL}};
    char err[512] = "";
    CHECK_INT(trace_at_size("sd_attention", qkv, 3, (size_t)(6 * nt + nt * (6 * nt + 12)), err, sizeof err), 0);
    if (err[0])
        printf("  %s\n", err);
}

TEST(tutorial_sd_attention_refuses_a_partial_tile)
{
    /* the tutorial asserts seqlen % 128 == 0 */
    nk_array qkv[3] = {{NK_F32, 2, {200, 64}, NULL}, {NK_F32, 2, {200, 64}, NULL}, {NK_F32, 2, {200, 64}, NULL}};
    nk_kernel *k = nk_kernel_new("sd_attention", nk_kernel_sd_attention);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, qkv, 3, NULL, &p), NK_EBOUNDS);
    nk_kernel_free(k);
}

/* ---- average pool 2d */

/* The window means of x[C, H, W] in double, pool size p. */
static double *avgpool_ref(const nk_array *x, int64_t p)
{
    int64_t C = x->shape[0], H = x->shape[1], W = x->shape[2], Ho = H / p, Wo = W / p;
    double *v = malloc(nk_array_numel(x) * sizeof *v), *y = malloc((size_t)(C * Ho * Wo + 1) * sizeof *y);
    if (v && y) {
        nk_ref_decode(x, v);
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < Ho; i++)
                for (int64_t j = 0; j < Wo; j++) {
                    double s = 0;
                    for (int64_t a = 0; a < p; a++)
                        for (int64_t b = 0; b < p; b++)
                            s += v[(c * H + i * p + a) * W + j * p + b];
                    y[(c * Ho + i) * Wo + j] = s / (double)(p * p);
                }
    }
    free(v);
    return y;
}

TEST(tutorial_avgpool2d_tutorial_example_is_exact)
{
    /* C = 2, H = W = 6, pool 2 over arange(72) in fp16, as the tutorial runs
     * it: integer sums are exact in fp32, the quarter of each is a multiple
     * of 1/4 below 72, exact in fp16 */
    nk_array x;
    CHECK_INT(nk_array_alloc(&x, NK_F16, 3, (int64_t[]){2, 6, 6}), 0);
    for (int i = 0; i < 72; i++) {
        float f = (float)i;
        nk_convert_from_f32(NK_F16, &f, (uint16_t *)x.data + i, 1);
    }
    result r = run("avgpool2d", &x, 1);
    if (r.ok) {
        CHECK_INT(r.out.ndim, 3);
        CHECK_INT(r.out.shape[1], 3);
        CHECK_INT(r.out.shape[2], 3);
        CHECK(r.got[0] == 3.5 && r.got[8] == 31.5 && r.got[17] == 67.5); /* (0+1+6+7)/4, ... */
        check_bound(&r, NULL, 0, 0, "tutorial [2, 6, 6] fp16");
    }
    done(&r);
    nk_array_free(&x);
}

/* p^2 - 1 fp32 additions err by (p^2 - 1)u times the window's largest |x|
 * (< hi) after the division; the division rounds once (u, or u_bf16 for a
 * bf16 result). */
static void check_avgpool(nk_dtype dt, int64_t C, int64_t H, int64_t W, int32_t pool, int pass_pool, uint64_t seed)
{
    nk_array x = arr(dt, 3, (int64_t[]){C, H, W}, seed, -1, 1);
    int32_t pv = pool;
    nk_array args[2] = {x, scalar_i32(&pv)};
    /* nk_ref_avgpool2d is fixed at pool 2; other pools use the test's own */
    int fixed = pool == NK_AVGPOOL2D_POOL;
    result r = run_ref("avgpool2d", args, pass_pool ? 2 : 1, fixed ? nk_ref_avgpool2d : NULL, &x, 1);
    if (r.ok) {
        double *ref = fixed ? NULL : avgpool_ref(&x, pool);
        if (ref)
            memcpy(r.ref, ref, r.n * sizeof *ref);
        CHECK(fixed || ref);
        free(ref);
        char what[64];
        snprintf(what, sizeof what, "[%lld, %lld, %lld] pool %d %s", (long long)C, (long long)H, (long long)W, pool,
                 nk_dtype_name(dt));
        CHECK_INT(r.out.shape[1], H / pool);
        CHECK_INT(r.out.shape[2], W / pool);
        check_bound(&r, NULL, dt == NK_BF16 ? UBF16 : U32, (double)(pool * pool - 1) * U32, what);
    }
    done(&r);
    nk_array_free(&x);
}

TEST(tutorial_avgpool2d_matches_reference)
{
    check_avgpool(NK_F32, 128, 8, 8, 2, 0, 130);
    check_avgpool(NK_F32, 3, 7, 9, 2, 1, 131); /* a row and a column past the last window */
    check_avgpool(NK_F32, 64, 14, 15, 2, 1, 132);
    check_avgpool(NK_BF16, 100, 10, 12, 2, 1, 133);
    /* other pool sizes through the scalar argument */
    check_avgpool(NK_F32, 32, 9, 11, 3, 1, 134);
    check_avgpool(NK_F32, 16, 8, 8, 4, 1, 135);
}

TEST(tutorial_avgpool2d_at_tutorial_size)
{
    /* load, two window reductions, the division, store */
    nk_array x = {NK_F16, 3, {2, 6, 6}, NULL};
    char err[512] = "";
    CHECK_INT(trace_at_size("avgpool2d", &x, 1, 5, err, sizeof err), 0);
    if (err[0])
        printf("  %s\n", err);
}

/* ---- transpose2d */

TEST(tutorial_transpose2d_tutorial_example)
{
    /* P = 5, shape2D = (3, 4) over arange(60) in int8: exact */
    nk_array x;
    CHECK_INT(nk_array_alloc(&x, NK_I8, 2, (int64_t[]){5, 12}), 0);
    for (int i = 0; i < 60; i++)
        ((int8_t *)x.data)[i] = (int8_t)i;
    int32_t f1 = 3, f2 = 4;
    nk_array args[3] = {x, scalar_i32(&f1), scalar_i32(&f2)};
    result r = run_ref("transpose2d", args, 3, nk_ref_transpose2d, &x, 1);
    if (r.ok) {
        CHECK_INT(r.out.dtype, NK_I8);
        /* row 0: [a0 b0 c0 a1 b1 c1 ...] with a = 0..3, b = 4..7, c = 8..11 */
        static const double row0[12] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
        for (int j = 0; j < 12; j++)
            CHECK(r.got[j] == row0[j]);
        check_bound(&r, NULL, 0, 0, "tutorial [5, 3 x 4] int8");
    }
    done(&r);
    nk_array_free(&x);
}

static void check_transpose2d(nk_dtype dt, int64_t P, int64_t F1, int64_t F2, int pass_shape, uint64_t seed)
{
    nk_array x = arr2(dt, P, F1 * F2, seed, -100, 100);
    int32_t a = (int32_t)F1, b = (int32_t)F2;
    nk_array args[3] = {x, scalar_i32(&a), scalar_i32(&b)};
    /* the reference reads F1 and F2 from a 3-D view of the same data */
    nk_array x3 = {dt, 3, {P, F1, F2}, x.data};
    result r = run_ref("transpose2d", args, pass_shape ? 3 : 1, nk_ref_transpose2d, &x3, 1);
    char what[64];
    snprintf(what, sizeof what, "[%lld, %lld x %lld] %s", (long long)P, (long long)F1, (long long)F2,
             nk_dtype_name(dt));
    check_bound(&r, NULL, 0, 0, what);
    done(&r);
    nk_array_free(&x);
}

TEST(tutorial_transpose2d_matches_reference)
{
    check_transpose2d(NK_F32, 128, 6, 7, 1, 140);
    check_transpose2d(NK_BF16, 100, 4, 16, 1, 141);
    check_transpose2d(NK_I8, 7, 3, 5, 0, 142); /* shape2D omitted: F1 = 3 */
    check_transpose2d(NK_F32, 64, 1, 9, 1, 143);
    check_transpose2d(NK_I32, 33, 12, 2, 1, 144);
}

TEST(tutorial_transpose2d_at_tutorial_size)
{
    /* load, one strided copy, store */
    int32_t f1 = 3, f2 = 4;
    nk_array args[3] = {{NK_I8, 2, {5, 12}, NULL}, scalar_i32(&f1), scalar_i32(&f2)};
    char err[512] = "";
    CHECK_INT(trace_at_size("transpose2d", args, 3, 3, err, sizeof err), 0);
    if (err[0])
        printf("  %s\n", err);
}

/* ---- attention forward (the performance tutorial's fused softmax) */

static void check_attention_fwd(int64_t d, int64_t S, double lo, double hi, uint64_t seed)
{
    nk_array qkv[3] = {arr2(NK_F32, d, S, seed, lo, hi), arr2(NK_F32, d, S, seed + 1, lo, hi),
                       arr2(NK_F32, d, S, seed + 2, lo, hi)};
    result r = run("attention_fwd", qkv, 3);
    if (r.ok) {
        /* fp32 all the way: u_pe = 0, scale 1 */
        double *bound = attention_bounds(qkv, 1, 1.0, 0, 0, NULL);
        char what[64];
        snprintf(what, sizeof what, "d=%lld S=%lld in [%g, %g)", (long long)d, (long long)S, lo, hi);
        CHECK(bound != NULL);
        if (bound)
            check_bound(&r, bound, 0, 0, what);
        free(bound);
    }
    done(&r);
    free_arrays(qkv, 3);
}

TEST(tutorial_attention_fwd_matches_reference)
{
    /* the tutorial's values, uniform in [-1, 1), d = 128 */
    check_attention_fwd(128, 512, -1, 1, 150);
    check_attention_fwd(128, 1024, -1, 1, 151);
    check_attention_fwd(64, 512, -2, 2, 152);
}

TEST(tutorial_attention_fwd_at_tutorial_size)
{
    SKIP_UNDER_SANITIZERS();
    /* d 128, seqlen 4096, bf16 (the tutorial benchmarks in bf16): 3 loads;
     * 32 v transposes and copies; per 128-query tile 8 score matmuls, 8
     * maxima, the row maximum and its negation, 8 exp activations with
     * their sums, the sum, the reciprocal, 32 transposes and copies, 32
     * matmuls, the scaling copy out of PSUM and the store */
    const int64_t nq = 4096 / 128, nkv = 4096 / 512;
    /* and in fp32, as its accuracy test runs */
    for (int f = 0; f < 2; f++) {
        nk_dtype dt = f ? NK_F32 : NK_BF16;
        nk_array qkv[3] = {{dt, 2, {128, 4096}, NULL}, {dt, 2, {128, 4096}, NULL}, {dt, 2, {128, 4096}, NULL}};
        char err[512] = "";
        CHECK_INT(trace_at_size("attention_fwd", qkv, 3,
                                (size_t)(3 + 2 * nq + nq * (nkv + nkv + 2 + nkv + 2 + 2 * nq + nq + 2)), err,
                                sizeof err),
                  0);
        if (err[0])
            printf("  %s\n", err);
    }
}

/* ---- fused mamba */

/* The selective scan in double (nk_ref_mamba's definition) with, per
 * output element, the kernel's error bound in fp32. Per state s and step t,
 * with a = exp(delta A) and b = delta u B:
 *   a rounds the product delta A and the exp: ea <= u (1 + |delta A|);
 *   b rounds twice: 2u |b|;
 *   h[t] = a h[t-1] + b rounds the product and the sum, and carries the
 *   error of h[t-1] with the factor a:
 *     E[t] <= a E[t-1] (1 + ea + 2u) + (ea + u) |a h[t-1]| + 2u |b| + u |h[t]|;
 *   y[t] = sum_s C h: each product rounds (u |C h|) and carries |C| E, the
 *   S-term sum in fp32 adds S u sum_s |C h|.
 * With a 1% margin for the second-order terms. */
static double *mamba_bounds(const nk_array *in, double *out)
{
    int64_t nb = in[0].shape[0], nch = in[0].shape[1], L = in[0].shape[2], S = in[2].shape[1];
    double *x[5];
    int ok = 1;
    for (int i = 0; i < 5; i++) {
        x[i] = malloc(nk_array_numel(&in[i]) * sizeof *x[i]);
        ok &= x[i] != NULL;
        if (x[i])
            nk_ref_decode(&in[i], x[i]);
    }
    size_t n = (size_t)(nb * nch * L);
    double *bound = calloc(n, sizeof *bound), *ch = calloc(n, sizeof *ch);
    ok &= bound && ch;
    for (int64_t b = 0; ok && b < nb; b++)
        for (int64_t c = 0; c < nch; c++) {
            const double *dl = x[0] + (b * nch + c) * L, *uu = x[1] + (b * nch + c) * L;
            double *bo = bound + (b * nch + c) * L, *yo = out ? out + (b * nch + c) * L : NULL, *ao = ch + (b * nch + c) * L;
            if (yo)
                memset(yo, 0, (size_t)L * sizeof *yo);
            for (int64_t s = 0; s < S; s++) {
                const double *Bs = x[3] + (b * S + s) * L, *Cs = x[4] + (b * S + s) * L;
                double A = x[2][c * S + s], h = 0, E = 0;
                for (int64_t t = 0; t < L; t++) {
                    double a = exp(dl[t] * A), bb = dl[t] * uu[t] * Bs[t], ea = U32 * (1 + fabs(dl[t] * A));
                    double hn = a * h + bb;
                    E = a * E * (1 + ea + 2 * U32) + (ea + U32) * fabs(a * h) + 2 * U32 * fabs(bb) + U32 * fabs(hn);
                    h = hn;
                    if (yo)
                        yo[t] += Cs[t] * h;
                    bo[t] += fabs(Cs[t]) * E + U32 * fabs(Cs[t] * h);
                    ao[t] += fabs(Cs[t] * h);
                }
            }
            for (int64_t t = 0; t < L; t++)
                bo[t] = 1.01 * (bo[t] + (double)S * U32 * ao[t]);
        }
    for (int i = 0; i < 5; i++)
        free(x[i]);
    free(ch);
    if (!ok) {
        free(bound);
        return NULL;
    }
    return bound;
}

static void mamba_inputs(nk_array *in, int64_t nb, int64_t nch, int64_t L, int64_t S, uint64_t seed, int ones)
{
    in[0] = arr(NK_F32, 3, (int64_t[]){nb, nch, L}, seed, 0, 1);      /* delta */
    in[1] = arr(NK_F32, 3, (int64_t[]){nb, nch, L}, seed + 1, -1, 1); /* u */
    in[2] = arr(NK_F32, 2, (int64_t[]){nch, S}, seed + 2, -2, 0);     /* A < 0: a decaying state */
    in[3] = arr(NK_F32, 3, (int64_t[]){nb, S, L}, seed + 3, -1, 1);   /* B */
    in[4] = arr(NK_F32, 3, (int64_t[]){nb, S, L}, seed + 4, -1, 1);   /* C */
    if (ones) /* the tutorial's data: delta, u, B, C all 1, A = -1 */
        for (int i = 0; i < 5; i++)
            nk_fill_uniform(&in[i], 0, i == 2 ? -1 : 1, i == 2 ? -1 : 1);
}

static void check_mamba(const char *name, int64_t nb, int64_t nch, int64_t L, int64_t S, uint64_t seed, int ones)
{
    nk_array in[5];
    mamba_inputs(in, nb, nch, L, S, seed, ones);
    result r = run(name, in, 5);
    if (r.ok) {
        double *bound = mamba_bounds(in, NULL);
        char what[80];
        snprintf(what, sizeof what, "b=%lld c=%lld L=%lld S=%lld%s", (long long)nb, (long long)nch, (long long)L,
                 (long long)S, ones ? " (ones)" : "");
        CHECK(bound != NULL);
        if (bound)
            check_bound(&r, bound, 0, 0, what);
        free(bound);
    }
    done(&r);
    free_arrays(in, 5);
}

TEST(tutorial_mamba_matches_reference)
{
    static const char *names[3] = {"mamba_v1", "mamba_v2", "mamba_v3"};
    for (int k = 0; k < 3; k++) {
        check_mamba(names[k], 1, 128, 512, 4, 160, 0);
        check_mamba(names[k], 2, 256, 512, 3, 161, 0);
        check_mamba(names[k], 1, 256, 512, 16, 162, 1); /* the tutorial's toy size and data */
        check_mamba(names[k], 1, 128, 1536, 2, 164, 0); /* v3: three chunks, the scan carried */
        if (k < 2) /* v3 cuts the sequence in 512s */
            check_mamba(names[k], 1, 128, 300, 2, 163, 0);
        /* long rows: v2's per-state [128, 8192] intermediates do not all
         * fit, and the compile step spills */
        check_mamba(names[k], 1, 256, 8192, 2, 165, 0);
    }
}

TEST(tutorial_mamba_bound_function_matches_the_reference)
{
    nk_array in[5];
    mamba_inputs(in, 2, 3, 50, 4, 170, 0);
    size_t n = 2 * 3 * 50;
    double *mine = malloc(n * sizeof *mine), *ref = malloc(n * sizeof *ref);
    double *b = mamba_bounds(in, mine);
    CHECK(b && mine && ref && !nk_ref_mamba(in, 5, &ref, &n, 1));
    for (size_t i = 0; b && mine && ref && i < n; i++)
        CHECK_NEAR(mine[i], ref[i], 1e-12, 1e-14);
    free(b), free(mine), free(ref);
    free_arrays(in, 5);
}

TEST(tutorial_mamba_at_tutorial_sizes)
{
    SKIP_UNDER_SANITIZERS();
    /* batch 1, state 16: the toy size (256 channels, 512 steps), the kernel
     * script's default (2048 steps) and the scaling study's 4096 channels at
     * 512 and 8192 steps. Per channel tile and state: v1 loads delta, A, u,
     * B, C (5), the activation, 3 multiplies, the scan, the add (11) and 2
     * row broadcasts of seq_len, plus a memset and a store per tile; v2 the
     * same less the delta and u loads (9 and 2 broadcasts), with a memset,
     * 2 loads and a store per tile; v3 per state an A load and the carry's
     * memset, and per 512-step chunk B and C loads, the activation, 3
     * multiplies, the scan, the carry's copy, the add (9) and 2 broadcasts
     * of 512.
     *
     * At 4096 x 8192 the SBUF is short for v1 (its 32 accumulator blocks
     * of [128, 8192] fp32 all live across the state loop) and v2 (delta, u
     * and the accumulator of 32 KiB each, and the per-state intermediates
     * of as much), and the compile step spills, as the tutorial reports for
     * v2 at 8192 steps; the spills are counted apart. */
    static const int64_t sizes[][3] = {{256, 512, 16}, {256, 2048, 16}, {4096, 512, 16}, {4096, 8192, 16}};
    static const char *names[3] = {"mamba_v1", "mamba_v2", "mamba_v3"};
    for (int z = 0; z < 4; z++) {
        int64_t C = sizes[z][0], L = sizes[z][1], S = sizes[z][2], nct = C / 128, nch = L / 512;
        nk_array in[5] = {{NK_F32, 3, {1, C, L}, NULL}, {NK_F32, 3, {1, C, L}, NULL}, {NK_F32, 2, {C, S}, NULL},
                          {NK_F32, 3, {1, S, L}, NULL}, {NK_F32, 3, {1, S, L}, NULL}};
        size_t bl = row_broadcast(L), bc = row_broadcast(512);
        size_t want[3] = {(size_t)nct * (2 + (size_t)S * (11 + 2 * bl)), (size_t)nct * (4 + (size_t)S * (9 + 2 * bl)),
                          (size_t)nct * (4 + (size_t)S * (2 + (size_t)nch * (9 + 2 * bc)))};
        for (int k = 0; k < 3; k++) {
            char err[512] = "";
            int rc = trace_at_size(names[k], in, 5, want[k], err, sizeof err);
            CHECK_INT(rc, 0);
            if (rc)
                printf("  %s\n", err);
        }
    }
}
