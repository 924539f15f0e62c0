/*
 * bench_timing_only.c - where the time of a timing-only profile goes
 * (`nklab profile KERNEL --random ... --no-exec -o P.nkp`): compile (trace,
 * then schedule), time the program on the model, capture the profile (the
 * timing and the sources; `nklab profile` captures without copying the
 * program), encode the file, write it (streamed), and read it back. The
 * device time alone (nk__time_total, what the scheduler times its
 * candidates with) is shown against the whole timing.
 *
 * usage: bench_timing_only [M K N]   (default 4096 8192 8192: matmul_tiled of
 * bf16 lhsT[K, M] and rhs[K, N], the inputs given by shape only, no data)
 *
 * Each stage is the best of 3 runs (the machine may be shared). Ratios are
 * to the whole pipeline of one run; there are no pass/fail thresholds.
 */
#include "kernels.h"
#include "nkint.h"
#include "profile/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define RUNS 3

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { S_TRACE, S_SCHED, S_TIME, S_TOTAL, S_CAPTURE, S_ENCODE, S_WRITE, S_READ, S_COUNT };

static const char *stage_name[S_COUNT] = {
    "trace + schedule (nk_kernel_compile)",
    "  of which schedule (nk__schedule again)",
    "time (nk__time_program)",
    "  device time alone (nk__time_total)",
    "capture (time + sources, no copy)",
    "encode in memory (nk__profile_encode)",
    "write (nk_profile_write: streamed, fsync)",
    "read back (nk_profile_read, checked)",
};

typedef struct sizes {
    size_t file_bytes;
    uint32_t ninstr, nevents, ndspans;
    double device_us;
} sizes;

/* One pass through every stage; t[] gets seconds per stage. */
static int one_run(const nk_array *args, const char *path, double *t, sizes *sz)
{
    const nk_kernel_info *ki = nk_builtin_kernel("matmul_tiled");
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    const nk_program *p = NULL;
    nk_program *again = NULL;
    nk_timeline *tl = NULL;
    nk_profile *pr = NULL, *back = NULL;
    nk_wr w = {0};
    char err[512];
    int rc = NK_ENOMEM;
    if (!k)
        goto out;
    double t0 = now();
    if ((rc = nk_kernel_compile(k, args, 2, NULL, &p))) {
        fprintf(stderr, "bench_timing_only: %s\n", nk_kernel_error(k));
        goto out;
    }
    double t1 = now();
    /* schedule alone: on a copy, so the measured program stays as compiled */
    if ((rc = nk__program_copy(p, &again)))
        goto out;
    double t2 = now();
    if ((rc = nk__schedule(again, p->sched)))
        goto out;
    double t3 = now();
    if ((rc = nk__time_program(p, NULL, &tl)))
        goto out;
    double t4 = now(), total;
    if ((rc = nk__time_total(p, NULL, NULL, &total)))
        goto out;
    double t5 = now();
    if ((rc = nk__profile_capture_view(p, NULL, &pr)))
        goto out;
    double t6 = now();
    if ((rc = nk__profile_encode(pr, &w)))
        goto out;
    double t7 = now();
    if ((rc = nk_profile_write(pr, path)))
        goto out;
    double t8 = now();
    if ((rc = nk_profile_read(path, &back, err, sizeof err))) {
        fprintf(stderr, "bench_timing_only: reading %s: %s\n", path, err);
        goto out;
    }
    double t9 = now();
    double d[S_COUNT] = {t1 - t0, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7, t9 - t8};
    memcpy(t, d, sizeof d);
    *sz = (sizes){w.n, p->ninstr, pr->tl->nevents, pr->tl->ndspans, pr->tl->total_ns * 1e-3};
out:
    nk_profile_free(back);
    nk__wr_free(&w);
    nk_profile_free(pr);
    nk__program_destroy(again);
    nk__timeline_free(tl);
    nk_kernel_free(k);
    return rc;
}

static long parse_dim(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *end || v < 1 || v > (1L << 20) ? -1 : v;
}

int main(int argc, char **argv)
{
    long M = 4096, K = 8192, N = 8192;
    if (argc == 4) {
        M = parse_dim(argv[1]);
        K = parse_dim(argv[2]);
        N = parse_dim(argv[3]);
    }
    if ((argc != 1 && argc != 4) || M < 0 || K < 0 || N < 0) {
        fprintf(stderr, "usage: bench_timing_only [M K N]\n");
        return 2;
    }
    /* shapes and dtypes only: a timing-only compile reads no values */
    nk_array args[2] = {{NK_BF16, 2, {K, M}, NULL}, {NK_BF16, 2, {K, N}, NULL}};
    char path[64];
    snprintf(path, sizeof path, "/tmp/bench_timing_only.%ld.nkp", (long)getpid());
    double best[S_COUNT], t[S_COUNT];
    sizes sz = {0};
    for (int s = 0; s < S_COUNT; s++)
        best[s] = 1e30;
    for (int r = 0; r < RUNS; r++) {
        if (one_run(args, path, t, &sz)) {
            unlink(path);
            return 1;
        }
        for (int s = 0; s < S_COUNT; s++)
            best[s] = t[s] < best[s] ? t[s] : best[s];
    }
    unlink(path);
    /* what `nklab profile --no-exec` does: compile, capture, write (encoding as it goes) */
    double pipeline = best[S_TRACE] + best[S_CAPTURE] + best[S_WRITE];
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("timing-only profile of matmul_tiled: lhsT[%ld, %ld] rhs[%ld, %ld] bfloat16 on trn1\n", K, M, K, N);
    printf("%u instructions, %u events, %u DMA spans, device time %.1f us, file %.1f MB\n", sz.ninstr,
           sz.nevents, sz.ndspans, sz.device_us, (double)sz.file_bytes / 1e6);
    printf("best of %d runs; share = stage / pipeline (compile + capture + write = %.3f s, %.2f M instructions/s)\n\n",
           RUNS, pipeline, sz.ninstr / pipeline * 1e-6);
    printf("%-42s %10s %8s\n", "stage", "seconds", "share");
    for (int s = 0; s < S_COUNT; s++)
        printf("%-42s %10.4f %7.1f%%\n", stage_name[s], best[s], 100.0 * best[s] / pipeline);
    printf("\npeak resident memory %.0f MB\n", (double)ru.ru_maxrss / 1024.0);
    return 0;
}
