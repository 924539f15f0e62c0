/*
 * test_bench.c - the benchmark: iteration counts, the device latency against
 * the timing model's own total, the end-to-end latency's parts, and the
 * percentiles against a computation written here (sorted samples, linear
 * interpolation between closest ranks, as numpy's default).
 */
#include "test.h"
#include "nkint.h"
#include "kernels.h"
#include "timing/timing.h"

#include <stdlib.h>

/* ---- an independent percentile: insertion sort, then interpolation */

static void sort_copy(const double *x, int n, double *out)
{
    for (int i = 0; i < n; i++) {
        double v = x[i];
        int j = i;
        while (j > 0 && out[j - 1] > v) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = v;
    }
}

static double ref_percentile_us(const double *sorted_ns, int n, double p)
{
    double rank = p / 100.0 * (n - 1);
    int below = (int)rank;
    if (below == n - 1)
        return sorted_ns[n - 1] / 1000.0;
    double frac = rank - below;
    return (sorted_ns[below] * (1 - frac) + sorted_ns[below + 1] * frac) / 1000.0;
}

static const double PCTS[] = {0, 1, 10, 25, 50, 90, 99, 100};

/* ---- helpers */

typedef struct bcase {
    const nk_kernel_info *ki;
    nk_kernel *k;
    nk_array args[NK_KERNEL_MAX_ARGS];
} bcase;

static void bcase_open(bcase *c, const char *name)
{
    memset(c, 0, sizeof *c);
    c->ki = nk_builtin_kernel(name);
    c->k = nk_kernel_new(name, c->ki->fn);
    nk_kernel_example_args(c->ki, 7, c->args);
}

static void bcase_close(bcase *c)
{
    for (int i = 0; i < c->ki->nargs; i++)
        nk_array_free(&c->args[i]);
    nk_kernel_free(c->k);
}

typedef struct progress_log {
    int calls, last_done, last_total, monotonic;
} progress_log;

static void on_progress(void *user, int done, int total)
{
    progress_log *l = user;
    if (done != l->last_done + 1)
        l->monotonic = 0;
    l->calls++;
    l->last_done = done;
    l->last_total = total;
}

/* ---- tests */

TEST(bench_defaults_are_nkis)
{
    nk_bench_options o = nk_bench_defaults();
    CHECK_INT(o.warmup, 10);
    CHECK_INT(o.iters, 100);
    CHECK_INT(o.execute, 1);
    CHECK(o.progress == NULL);
}

TEST(bench_counts_iterations_and_lookups)
{
    bcase c;
    bcase_open(&c, "tensor_exp");
    progress_log log = {0, 0, 0, 1};
    nk_bench_options o = {3, 50, 1, on_progress, &log};
    nk_bench_result r;
    int rc = nk_bench(c.k, c.args, 1, NULL, &o, &r);
    CHECK_INT(rc, 0);
    CHECK_INT(r.warmup, 3);
    CHECK_INT(r.iters, 50);
    CHECK_INT(r.executed, 1);
    CHECK_INT(log.calls, 53);
    CHECK_INT(log.last_done, 53);
    CHECK_INT(log.last_total, 53);
    CHECK(log.monotonic);
    /* one trace; then one cache lookup per iteration */
    uint64_t compiles, hits;
    nk_kernel_cache_stats(c.k, &compiles, &hits);
    CHECK_INT(compiles, 1);
    CHECK_INT(hits, 53);
    CHECK(r.compile_ns > 0);
    CHECK(r.exec_ns > 0);
    CHECK_STR(r.target, "trn1");
    /* a second benchmark of the same kernel finds the program cached */
    nk_bench_result r2;
    nk_bench_options o2 = {0, 1, 0, NULL, NULL};
    CHECK_INT(nk_bench(c.k, c.args, 1, NULL, &o2, &r2), 0);
    CHECK(r2.compile_ns == 0);
    CHECK(r2.exec_ns == 0);
    CHECK_INT(r2.executed, 0);
    nk_kernel_cache_stats(c.k, &compiles, &hits);
    CHECK_INT(compiles, 1);
    CHECK_INT(hits, 53 + 2);
    nk_bench_result_free(&r2);
    nk_bench_result_free(&r);
    bcase_close(&c);
}

/* NCL is the timeline's total for the same program, every percentile. */
static void check_device_latency(const char *kernel, const char *target)
{
    bcase c;
    bcase_open(&c, kernel);
    nk_options opts = {target, 0};
    nk_bench_options o = {1, 20, 0, NULL, NULL};
    nk_bench_result r;
    CHECK_INT(nk_bench(c.k, c.args, c.ki->nargs, &opts, &o, &r), 0);
    const nk_program *p;
    CHECK_INT(nk_kernel_compile(c.k, c.args, c.ki->nargs, &opts, &p), 0);
    nk_timeline *tl = NULL;
    CHECK_INT(nk__time_program(p, NULL, &tl), 0);
    if (tl) {
        CHECK(tl->total_ns > 0);
        CHECK(r.device_ns == tl->total_ns);
        CHECK(r.host_in_ns == tl->host_in_ns);
        CHECK(r.host_out_ns == tl->host_out_ns);
        for (size_t i = 0; i < NK_ARRAY_LEN(PCTS); i++)
            CHECK(nk_bench_latency_percentile(&r, NK_LATENCY_NC, PCTS[i]) == tl->total_ns / 1000.0);
        CHECK(nk_bench_latency_mean(&r, NK_LATENCY_NC) == tl->total_ns / 1000.0);
    }
    CHECK_STR(r.target, target);
    CHECK_INT((long long)r.ninstr, (long long)nk_program_num_instructions(p));
    nk__timeline_free(tl);
    nk_bench_result_free(&r);
    bcase_close(&c);
}

TEST(bench_device_latency_is_the_timelines_total)
{
    check_device_latency("tensor_exp", "trn1");
    check_device_latency("tensor_exp", "trn2");
    check_device_latency("matmul_tiled", "trn1");
}

TEST(bench_e2e_is_dispatch_plus_io_plus_device)
{
    bcase c;
    bcase_open(&c, "softmax");
    nk_bench_options o = {2, 40, 1, NULL, NULL};
    nk_bench_result r;
    CHECK_INT(nk_bench(c.k, c.args, 1, NULL, &o, &r), 0);
    /* host link copies: 250 x 1024 float32 in and out */
    CHECK(r.host_in_ns > 0);
    CHECK(r.host_out_ns > 0);
    double fixed = r.device_ns + r.host_in_ns + r.host_out_ns, sum = 0;
    for (int i = 0; i < r.iters; i++) {
        CHECK(r.dispatch_ns[i] > 0);
        CHECK(r.e2e_ns[i] >= fixed);
        CHECK_NEAR(r.e2e_ns[i] - fixed, r.dispatch_ns[i], 1e-9, 1e-6);
        sum += r.dispatch_ns[i];
    }
    /* the timed loop's wall clock holds every dispatch and execution */
    CHECK(r.wall_s * 1e9 >= sum + r.exec_ns * r.iters);
    CHECK(r.user_s >= 0 && r.sys_s >= 0);
    CHECK(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 0) >= fixed / 1000.0);
    nk_bench_result_free(&r);
    bcase_close(&c);
}

TEST(bench_percentiles_match_an_independent_computation)
{
    bcase c;
    bcase_open(&c, "tensor_add");
    nk_bench_options o = {0, 37, 0, NULL, NULL};
    nk_bench_result r;
    CHECK_INT(nk_bench(c.k, c.args, 2, NULL, &o, &r), 0);
    double sorted[37], mean = 0;
    sort_copy(r.e2e_ns, 37, sorted);
    for (int i = 0; i < 37; i++) {
        CHECK(r.e2e_sorted_ns[i] == sorted[i]);
        mean += r.e2e_ns[i] / 37;
    }
    for (size_t i = 0; i < NK_ARRAY_LEN(PCTS); i++)
        CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, PCTS[i]), ref_percentile_us(sorted, 37, PCTS[i]),
                   1e-12, 0);
    for (double p = 0; p <= 100; p += 0.5)
        CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, p), ref_percentile_us(sorted, 37, p), 1e-12, 0);
    CHECK(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 0) == sorted[0] / 1000.0);
    CHECK(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 100) == sorted[36] / 1000.0);
    CHECK_NEAR(nk_bench_latency_mean(&r, NK_LATENCY_E2E), mean / 1000.0, 1e-12, 0);
    nk_bench_result_free(&r);
    bcase_close(&c);
}

/* Known samples: 1..5 us, so the interpolated values are worked by hand. */
TEST(bench_percentile_worked_values)
{
    double s[5] = {1000, 2000, 3000, 4000, 5000};
    nk_bench_result r = {0};
    r.iters = 5;
    r.e2e_ns = s;
    r.e2e_sorted_ns = s;
    r.device_ns = 750;
    CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 0), 1.0, 1e-12, 0);
    CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 10), 1.4, 1e-12, 0);  /* h = 0.4 */
    CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 25), 2.0, 1e-12, 0);  /* h = 1 */
    CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 50), 3.0, 1e-12, 0);
    CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 90), 4.6, 1e-12, 0);  /* h = 3.6 */
    CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 99), 4.96, 1e-12, 0); /* h = 3.96 */
    CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 100), 5.0, 1e-12, 0);
    CHECK_NEAR(nk_bench_latency_mean(&r, NK_LATENCY_E2E), 3.0, 1e-12, 0);
    CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_NC, 37), 0.75, 1e-12, 0);
    CHECK(isnan(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, -0.5)));
    CHECK(isnan(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 100.5)));
    CHECK(isnan(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, NAN)));
    CHECK(isnan(nk_bench_latency_percentile(&r, (nk_latency)7, 50)));
    r.iters = 1; /* one sample: every percentile is that sample */
    CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 0), 1.0, 1e-12, 0);
    CHECK_NEAR(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 99), 1.0, 1e-12, 0);
    r.iters = 0;
    CHECK(isnan(nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 50)));
    CHECK(isnan(nk_bench_latency_mean(&r, NK_LATENCY_NC)));
    CHECK(isnan(nk_bench_latency_percentile(NULL, NK_LATENCY_NC, 50)));
}

TEST(bench_rejects_bad_options)
{
    bcase c;
    bcase_open(&c, "tensor_exp");
    nk_bench_result r;
    nk_bench_options o = nk_bench_defaults();
    o.iters = 0;
    CHECK_INT(nk_bench(c.k, c.args, 1, NULL, &o, &r), NK_EINVAL);
    CHECK(r.e2e_ns == NULL);
    o = nk_bench_defaults();
    o.warmup = -1;
    CHECK_INT(nk_bench(c.k, c.args, 1, NULL, &o, &r), NK_EINVAL);
    CHECK_INT(nk_bench(NULL, c.args, 1, NULL, NULL, &r), NK_EINVAL);
    CHECK_INT(nk_bench(c.k, c.args, 1, NULL, NULL, NULL), NK_EINVAL);
    /* nothing was compiled for bad options */
    uint64_t compiles;
    nk_kernel_cache_stats(c.k, &compiles, NULL);
    CHECK_INT(compiles, 0);
    bcase_close(&c);
}

TEST(bench_reports_kernel_errors_with_their_line)
{
    const nk_kernel_info *ki = nk_builtin_kernel("tensor_exp");
    nk_kernel *k = nk_kernel_new("tensor_exp", ki->fn);
    nk_array x;
    int64_t shape[2] = {4, 50000}; /* 200000 bytes per partition: over SBUF */
    nk_array_alloc(&x, NK_F32, 2, shape);
    nk_bench_result r;
    nk_bench_options o = {0, 2, 0, NULL, NULL};
    int rc = nk_bench(k, &x, 1, NULL, &o, &r);
    CHECK_INT(rc, NK_ECAPACITY);
    CHECK_CONTAINS(nk_kernel_error(k), "kernels/tensor_exp.c:");
    CHECK_CONTAINS(nk_kernel_error(k), "SBUF capacity exceeded");
    CHECK(r.e2e_ns == NULL && r.iters == 0);
    nk_bench_result_free(&r); /* harmless on a cleared result */
    nk_array_free(&x);
    nk_kernel_free(k);
}
