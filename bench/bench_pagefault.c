/*
 * bench_pagefault.c - what the first write of fresh memory costs here, on
 * small pages and on transparent huge pages, and what the large arrays of
 * src/core/bigmem.c get.
 *
 * usage: bench_pagefault [MiB]   (default 256)
 *
 * Each way maps (or allocates) MiB of fresh memory, writes a byte per 4 KiB
 * and frees it, the best of 5 rounds; the figure is microseconds per 4 KiB
 * and the ratio to small pages measured in the same run:
 *   small pages      mmap, no advice (what malloc's blocks get)
 *   populated        the same, MADV_POPULATE_WRITE first (one system call
 *                    faults the whole range in)
 *   huge pages       a 2 MiB-aligned mapping advised MADV_HUGEPAGE
 *   nk__big_fixed    a block of this project's allocator for large arrays
 *   realloc doubling an array grown from 64 bytes by doubling, each part
 *                    written as it is added: what nk__big_realloc gives
 *   nk__big_grow     the same array grown with nk__big_grow (room to grow
 *                    in place), then nk__big_fit
 * and the minor page faults each took. Under a hypervisor that shadows
 * page tables, small pages cost tens of times what huge pages do, which is
 * why the timing-only profile's large arrays are on huge pages.
 *
 * Before the rounds, huge pages over four times MiB are written once: the
 * system's free memory, which a guest whose free pages go back to its host
 * (a balloon's free page reporting) must have backed again, whatever the
 * page size. The rounds after it get back pages freed a moment before. The
 * two figures bound what a large run's first use of memory costs. No
 * pass/fail thresholds.
 */
#define _GNU_SOURCE
#include "nkint.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "spawn.h" /* now() */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define ROUNDS 5
#define HUGE ((size_t)2 << 20)

static long minflt(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

enum { SMALL, POPULATED, HUGEPAGES, BIGFIXED, DOUBLING, GROW, NWAYS };
static const char *names[NWAYS] = {"small pages", "populated", "huge pages", "nk__big_fixed", "realloc doubling",
                                   "nk__big_grow"};

/* An array of n bytes grown from 64 by doubling, each new part written (a
 * byte per 4 KiB) as it is added: NULL when out of memory. */
static char *grown(int w, size_t n)
{
    char *p = NULL;
    size_t have = 0;
    for (size_t c = 64;; c *= 2) {
        if (c > n)
            c = n;
        char *q = w == GROW ? nk__big_grow(p, c) : nk__big_realloc(p, c);
        if (!q) {
            free(p);
            return NULL;
        }
        p = q;
        for (size_t i = (have + 4095) & ~(size_t)4095; i < c; i += 4096)
            p[i] = 1;
        have = c;
        if (c == n)
            break;
    }
    return w == GROW ? nk__big_fit(p, n) : p;
}

/* One round of way w over n bytes: seconds, and the faults in *faults. */
static double round_of(int w, size_t n, long *faults)
{
    long f0 = minflt();
    double t0 = now();
    char *p = NULL, *map = NULL;
    size_t len = n + HUGE;
    if (w == BIGFIXED || w == DOUBLING || w == GROW) {
        p = w == BIGFIXED ? nk__big_fixed(n) : grown(w, n);
        if (!p)
            return -1;
    } else {
        map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED)
            return -1;
        p = (char *)(((uintptr_t)map + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
        if (w == POPULATED)
            (void)madvise(p, n, MADV_POPULATE_WRITE);
        if (w == HUGEPAGES)
            (void)madvise(p, n, MADV_HUGEPAGE);
    }
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
    double t = now() - t0;
    *faults = minflt() - f0;
    if (w == BIGFIXED || w == DOUBLING || w == GROW)
        free(p);
    else
        munmap(map, len);
    return t;
}

int main(int argc, char **argv)
{
    long mib = argc > 1 ? atol(argv[1]) : 256;
    if (mib < 4 || mib > 65536) {
        fprintf(stderr, "usage: bench_pagefault [MiB]   (4..65536)\n");
        return 2;
    }
    size_t n = (size_t)mib << 20;
    /* blocks of a megabyte or more mapped on their own, as the CLI has them (src/cli/main.c) */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    long cold_f;
    double cold = round_of(HUGEPAGES, 4 * n, &cold_f); /* memory this process never had */
    if (cold < 0) {
        fprintf(stderr, "bench_pagefault: out of memory\n");
        return 1;
    }
    double best[NWAYS];
    long flt[NWAYS];
    for (int w = 0; w < NWAYS; w++)
        best[w] = 1e30, flt[w] = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (int w = 0; w < NWAYS; w++) { /* interleaved: the machine may be shared */
            long f;
            double t = round_of(w, n, &f);
            if (t < 0) {
                fprintf(stderr, "bench_pagefault: %s: out of memory\n", names[w]);
                return 1;
            }
            if (t < best[w])
                best[w] = t, flt[w] = f;
        }
    double pages = (double)(n / 4096);
    printf("first write of %ld MiB of fresh memory, a byte per 4 KiB; best of %d rounds; huge pages %s here\n\n",
           mib, ROUNDS, nk__big_active() ? "on advice" : "not to be had");
    printf("%-17s %12s %12s %14s\n", "way", "us / 4 KiB", "vs small", "page faults");
    for (int w = 0; w < NWAYS; w++)
        printf("%-17s %12.3f %11.3fx %14ld\n", names[w], best[w] * 1e6 / pages, best[w] / best[SMALL], flt[w]);
    printf("\nnk__big_grow vs realloc doubling: %.3fx the time, %ld against %ld page faults\n",
           best[GROW] / best[DOUBLING], flt[GROW], flt[DOUBLING]);
    printf("\nhuge pages, first use of %ld MiB of the system's free memory: %.3f us / 4 KiB (%.1fx the rounds')\n",
           4 * mib, cold * 1e6 / (4 * pages), cold / 4 / best[HUGEPAGES]);
    return 0;
}
