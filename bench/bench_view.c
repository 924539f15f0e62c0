/*
 * bench_view.c - what a profile of a million instructions costs to look at:
 * `nklab view` (the HTML viewer, insights included) and `nklab export
 * --format perfetto` (streamed to its file) of the timing-only profile of
 * the bf16 matmul lhsT[8192, 40960] x rhs[8192, 8192] (993,280
 * instructions, 10.5 million DMA transfers), written once by `nklab profile
 * --no-exec`.
 *
 * usage: bench_view [M]   (default 40960: lhsT[8192, M])
 *
 * Each command is a process of its own, as a user runs it: wall time and
 * peak resident memory (wait4), the best of RUNS runs, the commands
 * interleaved. The reference, in the same run, is reading the profile
 * (nk_profile_read: the file, its checks, the decoded program and timeline,
 * in a process of its own too), which every command that reads a profile
 * pays first. Printed: each command's time and memory, as
 * ratios to the reference and against the goals (a viewer page in <= 2 s
 * and <= 500 MB for 1 M instructions). No pass/fail exits on the figures.
 */
#define _GNU_SOURCE
#include "profile/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNS 3
#define GOAL_S 2.0
#define GOAL_MB 500.0

#include "spawn.h"

/* The reference: read the profile at path, in the child. */
static int read_profile(void *path)
{
    nk_profile *pr = NULL;
    char err[256];
    return nk_profile_read(path, &pr, err, sizeof err) ? 1 : 0;
}

static const char *const fixed_time[] = {"NK_PROFILE_FIXED_TIME=0", NULL};

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) ? -1 : (long)st.st_size;
}

int main(int argc, char **argv)
{
    long M = argc > 1 ? strtol(argv[1], NULL, 10) : 40960;
    if (M < 128 || M > (1L << 20)) {
        fprintf(stderr, "usage: bench_view [M]\n");
        return 2;
    }
    char self[PATH_MAX], nklab[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = 0;
    snprintf(nklab, sizeof nklab, "%s/../nklab", dirname(self));
    if (access(nklab, X_OK)) {
        fprintf(stderr, "bench_view: %s: %s\n", nklab, strerror(errno));
        return 1;
    }
    char prof[64], page[64], trace[64], lhs[64];
    long pid = (long)getpid();
    snprintf(prof, sizeof prof, "/tmp/bench_view.%ld.nkp", pid);
    snprintf(page, sizeof page, "/tmp/bench_view.%ld.html", pid);
    snprintf(trace, sizeof trace, "/tmp/bench_view.%ld.json", pid);
    snprintf(lhs, sizeof lhs, "lhsT=8192x%ld:bfloat16", M);
    char *make[] = {nklab, "profile", "matmul_tiled", "--no-exec", "--random", lhs, "--random", "rhs=8192x8192:bfloat16",
                    "-o", prof, NULL};
    run r;
    if (spawn(make, fixed_time, NULL, NULL, NULL, &r)) {
        fprintf(stderr, "bench_view: nklab profile failed\n");
        return 1;
    }
    double ninstr = 3.0 * (M / 128) * (8192 / 512) * (8192 / 128) + 2.0 * (M / 128) * (8192 / 512);
    char *view[] = {nklab, "view", prof, "-o", page, NULL};
    char *perfetto[] = {nklab, "export", prof, "--format", "perfetto", "-o", trace, NULL};
    char *const *cmd[3] = {NULL, view, perfetto};
    const char *name[3] = {"reference: read the profile", "view (HTML page + insights)", "export --format perfetto"};
    run best[3];
    for (int c = 0; c < 3; c++)
        best[c] = (run){1e30, 0, 0, 0};
    int rc = 0;
    for (int k = 0; k < RUNS && !rc; k++)
        for (int c = 0; c < 3 && !rc; c++) {
            if (spawn(cmd[c], fixed_time, NULL, read_profile, prof, &r)) {
                fprintf(stderr, "bench_view: %s failed\n", name[c]);
                rc = 1;
                break;
            }
            if (r.wall < best[c].wall)
                best[c].wall = r.wall;
            if (!best[c].maxrss_kb || r.maxrss_kb < best[c].maxrss_kb)
                best[c].maxrss_kb = r.maxrss_kb;
        }
    long psize = file_size(prof), hsize = file_size(page), tsize = file_size(trace);
    unlink(prof);
    unlink(page);
    unlink(trace);
    if (rc)
        return rc;
    printf("a profile of %.0f instructions (matmul_tiled lhsT[8192, %ld] x rhs[8192, 8192] bf16, %.0f MB); best of %d\n"
           "runs, commands interleaved, each a process of its own; the page %.0f MB, the Perfetto trace %.0f MB\n\n",
           ninstr, M, psize / 1e6, RUNS, hsize / 1e6, tsize / 1e6);
    printf("%-38s %8s %8s %9s %8s %8s %9s\n", "command", "wall s", "vs ref", "of goal", "peak MB", "vs ref",
           "of goal");
    printf("%-38s %8s %8s %9s %8s %8s %9s\n", "", "", "", "(<= 1)", "", "", "(<= 1)");
    for (int c = 0; c < 3; c++) {
        double mb = best[c].maxrss_kb / 1024.0;
        printf("%-38s %8.3f %7.2fx %8.2fx %8.0f %7.2fx %8.2fx\n", name[c], best[c].wall, best[c].wall / best[0].wall,
               best[c].wall / GOAL_S * (1e6 / ninstr), mb, mb / (best[0].maxrss_kb / 1024.0),
               mb / GOAL_MB * (1e6 / ninstr));
    }
    printf("\n(\"of goal\": per million instructions, against 2 s and 500 MB)\n");
    return 0;
}
