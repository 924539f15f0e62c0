/*
 * bench_scaling.c - the tool's own speed at millions of instructions: a
 * timing-only profile (`nklab profile matmul_tiled --no-exec`, compile,
 * timing, the profile file) of the bf16 matmul lhsT[8192, 4096] x
 * rhs[8192, 8192] (99,328 instructions) grown 1x, 2x, 4x and 8x along M, so
 * that every count (instructions, DMA descriptors, events) grows by the
 * same factor.
 *
 * usage: bench_scaling [MAX_FACTOR]   (default 8: sizes 1, 2, 4, 8)
 *
 * Each size is the whole `nklab profile` command in a process of its own,
 * as a user runs it: wall time and peak resident memory (the kernel's
 * accounting of the finished child, wait4), the best of RUNS runs, the
 * sizes interleaved (the machine may be shared). Printed per size: time and
 * bytes per instruction, both as ratios to the 1x size measured in the same
 * run (a flat column is linear scaling) and against the goals (>= 2 M
 * instructions per second end to end, <= 400 bytes of peak memory per
 * instruction), and the minor page faults per thousand instructions (first
 * writes of fresh memory, dear under a hypervisor: bench_pagefault). Then
 * the multi-core check: the 1x profile written with the
 * default threads and with NK_THREADS=1 must be the same bytes; the time
 * ratio of the two shows what the threads bring. There are no pass/fail
 * exits on the figures.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNS 3
#define GOAL_IPS 2e6       /* instructions per second, end to end */
#define GOAL_BYTES 400.0   /* peak resident bytes per instruction */
#define BASE_INSTRS 99328u /* the 1x program */

#include "spawn.h"

static char nklab[PATH_MAX];

/* `nklab profile matmul_tiled --no-exec` of the size grown f times, to path. */
static int profile(int f, const char *path, const char *const *env, run *r)
{
    char lhs[64], rhs[64];
    snprintf(lhs, sizeof lhs, "lhsT=8192x%d:bfloat16", 4096 * f);
    snprintf(rhs, sizeof rhs, "rhs=8192x8192:bfloat16");
    char *argv[] = {nklab, "profile", "matmul_tiled", "--no-exec", "--random", lhs, "--random", rhs, "-o", (char *)path,
                    NULL};
    return spawn(argv, env, NULL, NULL, NULL, r);
}

static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    static char ba[1 << 16], bb[1 << 16];
    while (same) {
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        same = na == nb && !memcmp(ba, bb, na);
        if (!na || na < sizeof ba)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

int main(int argc, char **argv)
{
    int maxf = argc > 1 ? atoi(argv[1]) : 8;
    if (maxf < 1 || maxf > 64) {
        fprintf(stderr, "usage: bench_scaling [MAX_FACTOR]\n");
        return 2;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = 0;
    snprintf(nklab, sizeof nklab, "%s/../nklab", dirname(self));
    if (access(nklab, X_OK)) {
        fprintf(stderr, "bench_scaling: %s: %s\n", nklab, strerror(errno));
        return 1;
    }
    const char *fixed[] = {"NK_PROFILE_FIXED_TIME=0", NULL};
    const char *serial[] = {"NK_PROFILE_FIXED_TIME=0", "NK_THREADS=1", NULL};
    int nf = 0, fs[8];
    for (int f = 1; f <= maxf && nf < 8; f *= 2)
        fs[nf++] = f;
    run best[8], bser = {1e30, 0, 0, 0};
    for (int k = 0; k < nf; k++)
        best[k] = (run){1e30, 0, 0, 0};
    char path[64], spath[64];
    snprintf(path, sizeof path, "/tmp/bench_scaling.%ld.nkp", (long)getpid());
    snprintf(spath, sizeof spath, "/tmp/bench_scaling.%ld.serial.nkp", (long)getpid());
    int identical = 1;
    for (int r = 0; r < RUNS; r++) {
        for (int k = 0; k < nf; k++) {
            run x;
            if (profile(fs[k], path, fixed, &x)) {
                fprintf(stderr, "bench_scaling: nklab profile (%dx) failed\n", fs[k]);
                unlink(path);
                return 1;
            }
            if (x.wall < best[k].wall)
                best[k].wall = x.wall, best[k].cpu = x.cpu;
            if (!best[k].minflt || x.minflt < best[k].minflt)
                best[k].minflt = x.minflt;
            if (!best[k].maxrss_kb || x.maxrss_kb < best[k].maxrss_kb)
                best[k].maxrss_kb = x.maxrss_kb;
            if (k == 0) { /* the same program timed on one thread: the same file */
                run y;
                char keep[96];
                snprintf(keep, sizeof keep, "%s.1x", path);
                rename(path, keep);
                if (profile(1, spath, serial, &y)) {
                    fprintf(stderr, "bench_scaling: nklab profile (1x, NK_THREADS=1) failed\n");
                    return 1;
                }
                identical &= same_file(keep, spath);
                unlink(keep);
                unlink(spath);
                if (y.wall < bser.wall)
                    bser = y;
            }
        }
    }
    unlink(path);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("timing-only profile (nklab profile matmul_tiled --no-exec), lhsT[8192, 4096 f] x rhs[8192, 8192] bf16,\n"
           "f = 1..%d; best of %d runs per size, sizes interleaved, each a process of its own; %ld processors\n\n",
           fs[nf - 1], RUNS, ncpu);
    printf("%4s %9s %8s %8s %9s %8s %8s %9s %8s %9s %9s %9s\n", "f", "instrs", "wall s", "cpu s", "M instr/s",
           "of goal", "peak MB", "B/instr", "of goal", "us/instr", "B/instr", "faults");
    printf("%4s %9s %8s %8s %9s %8s %8s %9s %8s %9s %9s %9s\n", "", "", "", "", "", "(>= 1)", "", "", "(<= 1)",
           "vs 1x", "vs 1x", "/1k instr");
    double t1 = best[0].wall / BASE_INSTRS, b1 = (double)best[0].maxrss_kb * 1024 / BASE_INSTRS;
    for (int k = 0; k < nf; k++) {
        double ni = (double)BASE_INSTRS * fs[k], ips = ni / best[k].wall;
        double bpi = (double)best[k].maxrss_kb * 1024 / ni;
        printf("%3dx %9.0f %8.3f %8.3f %9.3f %7.2fx %8.1f %9.0f %7.2fx %9.2f %9.2f %9.1f\n", fs[k], ni,
               best[k].wall, best[k].cpu, ips * 1e-6, ips / GOAL_IPS, (double)best[k].maxrss_kb / 1024, bpi,
               bpi / GOAL_BYTES, best[k].wall / ni / t1, bpi / b1, (double)best[k].minflt * 1000 / ni);
    }
    printf("\nmulti-core: 1x on the default threads vs NK_THREADS=1: %.3f s vs %.3f s wall (%.2fx), "
           "profiles %s\n",
           best[0].wall, bser.wall, bser.wall / best[0].wall, identical ? "identical" : "DIFFERENT");
    return identical ? 0 : 1;
}
