/*
 * bench_exec_matmul.c - the functional simulator's matmul against BLAS: a
 * whole run of a tiled matmul kernel (loads, the Tensor engine's 128 x 128 x
 * 512 matmuls accumulating in PSUM in the kernel's own order, the PSUM copy
 * out, stores) against one single-threaded cblas_sgemm of the same M, N, K
 * on fp32 operands already in memory, timed in the same process.
 *
 * usage: bench_exec_matmul
 *
 * Each figure is the best of 7 batches, the kernel and sgemm batches
 * interleaved (the machine may be shared); the ratio is of the two bests.
 * The goal printed is the project's (a run at most 1.3x the sgemm); there
 * are no pass/fail exits on it.
 */
#include "kernels.h"
#include "nkint.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void openblas_set_num_threads(int num_threads);

#define BATCHES 7
#define BATCH_SECONDS 0.06
#define GOAL 1.3

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct job {
    const nk_program *p;
    nk_array *args, *outs;
    int nargs;
    int M, N, K;
    float *a, *b, *c;
    int bad;
} job;

static void run_kernel(job *j)
{
    if (nk_program_run(j->p, j->args, j->nargs, j->outs, j->p->noutputs))
        j->bad = 1;
}

static void run_sgemm(job *j)
{
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, j->M, j->N, j->K, 1.0f, j->a, j->M, j->b, j->N, 0.0f, j->c,
                j->N);
}

/* Seconds per call of f: the number of calls per batch is calibrated once. */
static long calls_for(void (*f)(job *), job *j)
{
    long n = 1;
    for (;;) {
        double t0 = now();
        for (long i = 0; i < n; i++)
            f(j);
        if (now() - t0 > BATCH_SECONDS / 2 || n > (1L << 20))
            return n;
        n *= 2;
    }
}

static double batch(void (*f)(job *), job *j, long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++)
        f(j);
    return (now() - t0) / (double)n;
}

/* One kernel with its example shapes, arguments in dtype dt. */
static int bench_case(const char *name, nk_dtype dt)
{
    const nk_kernel_info *ki = nk_builtin_kernel(name);
    nk_kernel_info k2 = *ki;
    nk_array args[NK_KERNEL_MAX_ARGS] = {{0}}, outs[2] = {{0}};
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    job j = {0};
    int rc = -1;
    for (int a = 0; a < k2.nargs; a++)
        k2.args[a].dtype = dt;
    if (!k || nk_kernel_example_args(&k2, 1, args))
        goto out;
    if (nk_kernel_compile(k, args, k2.nargs, NULL, &j.p) || j.p->noutputs != 1) {
        printf("%s: compile failed: %s\n", name, nk_kernel_error(k));
        goto out;
    }
    nk_array d;
    nk_program_output(j.p, 0, &d);
    if (nk_array_alloc(&outs[0], d.dtype, d.ndim, d.shape))
        goto out;
    j.args = args;
    j.outs = outs;
    j.nargs = k2.nargs;
    j.K = (int)args[0].shape[0];
    j.M = (int)args[0].shape[1];
    j.N = (int)args[1].shape[1];
    j.a = malloc(sizeof(float) * (size_t)j.K * (size_t)j.M);
    j.b = malloc(sizeof(float) * (size_t)j.K * (size_t)j.N);
    j.c = malloc(sizeof(float) * (size_t)j.M * (size_t)j.N);
    if (!j.a || !j.b || !j.c)
        goto out;
    for (size_t i = 0; i < (size_t)j.K * (size_t)j.M; i++)
        j.a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < (size_t)j.K * (size_t)j.N; i++)
        j.b[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    run_kernel(&j); /* warm: the thread's memories, BLAS's buffers */
    run_sgemm(&j);
    long nk = calls_for(run_kernel, &j), nb = calls_for(run_sgemm, &j);
    double tk = 1e30, tb = 1e30;
    for (int b = 0; b < BATCHES; b++) {
        double x = batch(run_kernel, &j, nk), y = batch(run_sgemm, &j, nb);
        tk = x < tk ? x : tk;
        tb = y < tb ? y : tb;
    }
    if (j.bad) {
        printf("%s: a run failed\n", name);
        goto out;
    }
    double flops = 2.0 * j.M * j.N * j.K;
    char shape[64];
    snprintf(shape, sizeof shape, "%dx%dx%d", j.M, j.N, j.K);
    printf("%-22s %-9s %-15s %7zu %10.3f %10.3f %8.1f %8.2fx  %s\n", name, nk_dtype_name(dt), shape,
           nk_program_num_instructions(j.p), tk * 1e3, tb * 1e3, flops / tk * 1e-9, tk / tb,
           tk / tb <= GOAL ? "met" : "NOT met");
    rc = 0;
out:
    free(j.a);
    free(j.b);
    free(j.c);
    nk_array_free(&outs[0]);
    for (int a = 0; a < k2.nargs; a++)
        nk_array_free(&args[a]);
    nk_kernel_free(k);
    return rc;
}

int main(void)
{
    openblas_set_num_threads(1);
    printf("functional matmul: a whole run of the kernel (the Tensor engine's tile order kept) against one\n"
           "single-threaded cblas_sgemm of the same MxNxK on fp32 operands; best of %d interleaved batches.\n"
           "goal: run/sgemm <= %.1fx\n\n",
           BATCHES, GOAL);
    printf("%-22s %-9s %-15s %7s %10s %10s %8s %9s\n", "kernel", "operands", "MxNxK", "instrs", "run ms", "sgemm ms",
           "GFLOP/s", "run/sgemm");
    int failed = 0;
    failed |= bench_case("matmul_tiled", NK_BF16);
    failed |= bench_case("matmul_tiled", NK_F32);
    failed |= bench_case("matmul_hoisted", NK_BF16);
    failed |= bench_case("matmul_blocked_free", NK_BF16);
    return failed ? 1 : 0;
}
