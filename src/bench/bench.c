/*
 * bench.c - benchmarking a kernel: compile once, warm up, time iterations.
 *
 * Each iteration is what a caller pays to run a cached kernel: the program
 * lookup by signature, binding the arguments (which allocates the program's
 * scratch tensors), executing, unbinding. The lookup, binding and unbinding
 * are measured with the monotonic clock (the host dispatch); execution is
 * measured apart and kept out of the latencies, because on the device it is
 * the modelled device time that counts, computed once per program.
 */
#include "nkint.h"
#include "timing/timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define NK_BENCH_MAX_OUTS 16

nk_bench_options nk_bench_defaults(void)
{
    nk_bench_options o = {10, 100, 1, NULL, NULL};
    return o;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6; }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void nk_bench_result_free(nk_bench_result *res)
{
    if (!res)
        return;
    free(res->dispatch_ns);
    free(res->e2e_ns);
    free(res->e2e_sorted_ns);
    res->dispatch_ns = res->e2e_ns = res->e2e_sorted_ns = NULL;
    res->iters = 0;
}

/* The state of one benchmark: the program, its outputs and binding table. */
typedef struct bench_run {
    nk_kernel *k;
    const nk_array *args;
    int nargs;
    const nk_options *opts;
    const nk_program *p;
    nk_array outs[NK_BENCH_MAX_OUTS];
    int nouts;
    void **hbm;
} bench_run;

static void run_free(bench_run *r)
{
    for (int i = 0; i < r->nouts; i++)
        nk_array_free(&r->outs[i]);
    free(r->hbm);
}

/* Allocates the outputs (the kernel writes them every iteration) and the
 * binding table, once. */
static int run_setup(bench_run *r)
{
    r->nouts = nk_program_num_outputs(r->p);
    if (r->nouts > NK_BENCH_MAX_OUTS)
        return NK_ELIMIT;
    for (int i = 0; i < r->nouts; i++) {
        nk_array d;
        nk_program_output(r->p, i, &d);
        int rc = nk_array_alloc(&r->outs[i], d.dtype, d.ndim, d.shape);
        if (rc) {
            r->nouts = i;
            return rc;
        }
    }
    r->hbm = calloc(r->p->nbufs ? r->p->nbufs : 1, sizeof *r->hbm);
    return r->hbm ? 0 : NK_ENOMEM;
}

/* One iteration: returns its dispatch time in *dispatch and adds the
 * execution time to *exec. */
static int run_once(bench_run *r, int execute, double *dispatch, double *exec)
{
    double t0 = now_ns();
    const nk_program *p;
    int rc = nk_kernel_compile(r->k, r->args, r->nargs, r->opts, &p);
    if (rc)
        return rc;
    if (p != r->p)
        return NK_ESTATE; /* the cache must serve the program it compiled */
    rc = nk__program_bind(p, r->args, r->nargs, r->outs, r->nouts, r->hbm);
    if (rc)
        return rc;
    double t1 = now_ns();
    if (execute)
        rc = nk__execute(p, r->hbm);
    double t2 = now_ns();
    nk__program_unbind(p, r->hbm);
    double t3 = now_ns();
    *dispatch = (t1 - t0) + (t3 - t2);
    *exec += t2 - t1;
    return rc;
}

static int check_options(const nk_bench_options *bo)
{
    if (bo->warmup < 0 || bo->iters < 1)
        return NK_EINVAL;
    return 0;
}

/* Compiles (measuring a first compile) and times the program once. */
static int compile_and_time(bench_run *r, nk_bench_result *res)
{
    uint64_t before;
    nk_kernel_cache_stats(r->k, &before, NULL);
    double t0 = now_ns();
    int rc = nk_kernel_compile(r->k, r->args, r->nargs, r->opts, &r->p);
    if (rc)
        return rc;
    uint64_t after;
    nk_kernel_cache_stats(r->k, &after, NULL);
    res->compile_ns = after > before ? now_ns() - t0 : 0;
    nk_timeline *tl;
    if ((rc = nk__time_program(r->p, NULL, &tl)))
        return rc;
    res->device_ns = tl->total_ns;
    res->host_in_ns = tl->host_in_ns;
    res->host_out_ns = tl->host_out_ns;
    nk__timeline_free(tl);
    snprintf(res->target, sizeof res->target, "%s", r->p->target);
    res->ninstr = r->p->ninstr;
    return 0;
}

/* Warm-up and timed iterations; fills the samples and the CPU usage. */
static int iterate(bench_run *r, const nk_bench_options *bo, nk_bench_result *res)
{
    int total = bo->warmup + bo->iters, rc = 0;
    double exec = 0, d;
    for (int i = 0; i < bo->warmup && !rc; i++) {
        rc = run_once(r, bo->execute, &d, &exec);
        if (!rc && bo->progress)
            bo->progress(bo->user, i + 1, total);
    }
    if (rc)
        return rc;
    exec = 0;
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    double w0 = now_ns();
    for (int i = 0; i < bo->iters && !rc; i++) {
        rc = run_once(r, bo->execute, &res->dispatch_ns[i], &exec);
        if (!rc && bo->progress)
            bo->progress(bo->user, bo->warmup + i + 1, total);
    }
    res->wall_s = (now_ns() - w0) * 1e-9;
    getrusage(RUSAGE_SELF, &ru1);
    res->user_s = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
    res->sys_s = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
    res->exec_ns = bo->execute ? exec / bo->iters : 0;
    return rc;
}

int nk_bench(nk_kernel *k, const nk_array *args, int nargs, const nk_options *opts, const nk_bench_options *bo,
             nk_bench_result *res)
{
    nk_bench_options def = nk_bench_defaults();
    if (!bo)
        bo = &def;
    if (!k || !res || (nargs && !args))
        return NK_EINVAL;
    memset(res, 0, sizeof *res);
    int rc = check_options(bo);
    if (rc)
        return rc;
    bench_run r = {.k = k, .args = args, .nargs = nargs, .opts = opts};
    res->dispatch_ns = calloc((size_t)bo->iters, sizeof(double));
    res->e2e_ns = calloc((size_t)bo->iters, sizeof(double));
    res->e2e_sorted_ns = calloc((size_t)bo->iters, sizeof(double));
    if (!res->dispatch_ns || !res->e2e_ns || !res->e2e_sorted_ns) {
        rc = NK_ENOMEM;
        goto out;
    }
    if ((rc = compile_and_time(&r, res)) || (rc = run_setup(&r)) || (rc = iterate(&r, bo, res)))
        goto out;
    double fixed = res->host_in_ns + res->device_ns + res->host_out_ns;
    for (int i = 0; i < bo->iters; i++)
        res->e2e_ns[i] = res->dispatch_ns[i] + fixed;
    memcpy(res->e2e_sorted_ns, res->e2e_ns, (size_t)bo->iters * sizeof(double));
    qsort(res->e2e_sorted_ns, (size_t)bo->iters, sizeof(double), cmp_double);
    res->warmup = bo->warmup;
    res->iters = bo->iters;
    res->executed = bo->execute != 0;
out:
    run_free(&r);
    if (rc) {
        nk_bench_result_free(res);
        memset(res, 0, sizeof *res);
    }
    return rc;
}

double nk_bench_latency_percentile(const nk_bench_result *res, nk_latency which, double p)
{
    if (!res || res->iters < 1 || !(p >= 0 && p <= 100))
        return NAN;
    if (which == NK_LATENCY_NC)
        return res->device_ns / 1000.0;
    if (which != NK_LATENCY_E2E)
        return NAN;
    const double *x = res->e2e_sorted_ns;
    double h = (double)(res->iters - 1) * p / 100.0;
    int lo = (int)floor(h);
    if (lo >= res->iters - 1)
        return x[res->iters - 1] / 1000.0;
    return (x[lo] + (h - lo) * (x[lo + 1] - x[lo])) / 1000.0;
}

double nk_bench_latency_mean(const nk_bench_result *res, nk_latency which)
{
    if (!res || res->iters < 1)
        return NAN;
    if (which == NK_LATENCY_NC)
        return res->device_ns / 1000.0;
    if (which != NK_LATENCY_E2E)
        return NAN;
    double s = 0;
    for (int i = 0; i < res->iters; i++)
        s += res->e2e_ns[i];
    return s / res->iters / 1000.0;
}
