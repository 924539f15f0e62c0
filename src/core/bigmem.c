/*
 * bigmem.c - large arrays on transparent huge pages.
 *
 * A timing-only profile of a large program allocates and fills arrays of
 * megabytes phase after phase (the trace's records, the dependency lists,
 * the list scheduler's and the timing run's state, the events), and each
 * 4 KiB page of each array costs a page fault when it is first written.
 * Under shadow or paravirtual paging a fault is dear: on this project's
 * machines 11-13 us per 4 KiB page, against 0.2-0.3 us per 4 KiB of a 2 MiB
 * huge page (`bench_pagefault` measures both), and before these functions
 * an 8x matmul profile spent a third of its CPU time faulting.
 *
 * How: glibc gives a block of 1 MiB or more a mapping of its own when the
 * CLI's fixed mmap threshold (or glibc's own, 128 KiB to 32 MiB) says so.
 * A mapping of whole huge pages is placed by Linux (6.7 and later) on a
 * huge-page boundary, so asking for the right size makes every 2 MiB of
 * the block a candidate; madvise(MADV_HUGEPAGE) then asks for them.
 *   - A fixed block gets the advice on the whole huge pages its bytes fill:
 *     its tail stays on small pages, so no byte past its end is resident.
 *     (The mapping is split in two, which a realloc could not mremap: it
 *     would copy. Hence the two kinds.)
 *   - A resizable block gets the advice on its whole mapping, which realloc
 *     moves with mremap; it is padded to whole huge pages only where the
 *     pad is at most a sixteenth, since a huge page is resident whole once
 *     written and the block's last one then holds its pad too.
 * A block of the heap or an arena (not mapped on its own) gets no advice,
 * and where there are no transparent huge pages, or the advice is refused,
 * nothing changes but the speed.
 */
#include "nkint.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1; older kernels refuse it (EINVAL) */
#endif

/* Under AddressSanitizer the blocks are its allocator's, with no glibc
 * header to read (and the bytes before a block are its redzone). */
#if defined(__SANITIZE_ADDRESS__)
#define NK_BIG_HEADERS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NK_BIG_HEADERS 0
#endif
#endif
#if !defined(NK_BIG_HEADERS) && defined(__GLIBC__) && defined(MADV_HUGEPAGE)
#define NK_BIG_HEADERS 1
#endif
#ifndef NK_BIG_HEADERS
#define NK_BIG_HEADERS 0
#endif

#define HUGE ((size_t)2 << 20)
/* glibc maps a block of n bytes as ALIGN_UP(ALIGN_UP(n + 8, 16) + 8, page)
 * bytes with the block 16 bytes in: n = k huge pages less 24 maps exactly k. */
#define GLIBC_OVER ((size_t)24)

/* The size to ask for so that a mapped block's mapping is whole huge
 * pages; n itself for a small block. */
static size_t padded(size_t n)
{
    if (!NK_BIG_HEADERS || n < NK_BIG_MIN || n > SIZE_MAX - 2 * HUGE)
        return n;
    return ((n + GLIBC_OVER + HUGE - 1) & ~(HUGE - 1)) - GLIBC_OVER;
}

/* A resizable block is padded only where the pad is at most 1/RESIZABLE_PAD
 * of it: its last huge page, pad included, is resident once written, and a
 * resizable block's last bytes are written (it grows as it is filled). */
#define RESIZABLE_PAD 16
static size_t padded_resizable(size_t n)
{
    size_t m = padded(n);
    return m - n <= n / RESIZABLE_PAD ? m : n;
}

#if NK_BIG_HEADERS
/* The mapping glibc made for block p alone, from its chunk header: bit 1
 * of the size word is IS_MMAPPED, the word before is the block's offset in
 * the mapping. 0 for a block of the heap or of an arena. */
static int mapping_of(void *p, size_t n, uintptr_t *lo, uintptr_t *hi)
{
    /* the header: glibc's two words before the block (through an integer,
     * which the compiler does not take for an access before an object) */
    const size_t *w = (const size_t *)((uintptr_t)p - 2 * sizeof(size_t));
    size_t off = w[0], size = w[1];
    if (!(size & 2))
        return 0;
    *lo = (uintptr_t)p - 2 * sizeof(size_t) - off;
    *hi = *lo + off + (size & ~(size_t)7);
    return !(*lo & 4095) && *hi >= (uintptr_t)p + n; /* else not the header expected */
}
#endif

/* Huge pages for [p, p + n): the whole mapping (whole), or only the huge
 * pages that lie within the block's bytes. A fresh block's first page
 * already holds glibc's header (written before the advice could be given),
 * so the first huge page would fault 4 KiB at a time; it is made huge at
 * once (MADV_COLLAPSE, Linux 6.1: about 0.2 ms against 512 faults). */
static void advise(void *p, size_t n, int whole, int fresh)
{
#if NK_BIG_HEADERS
    uintptr_t lo, hi;
    if (!p || n < NK_BIG_MIN || !mapping_of(p, n, &lo, &hi))
        return;
    if (!whole) { /* from the mapping's start: its first bytes are the block's header */
        lo = (lo + HUGE - 1) & ~(uintptr_t)(HUGE - 1);
        hi = ((uintptr_t)p + n) & ~(uintptr_t)(HUGE - 1);
        if (hi <= lo)
            return;
    }
    /* advice: a refusal changes nothing but the speed */
    if (madvise((void *)lo, hi - lo, MADV_HUGEPAGE))
        return;
    uintptr_t head = ((uintptr_t)p - 1) & ~(uintptr_t)(HUGE - 1); /* the huge page of the header */
    if (fresh && head >= lo && head + HUGE <= hi)
        (void)madvise((void *)head, HUGE, MADV_COLLAPSE);
#else
    (void)p;
    (void)n;
    (void)whole;
    (void)fresh;
#endif
}

void *nk__big_fixed(size_t n)
{
    void *p = malloc(padded(n));
    advise(p, n, 0, 1);
    return p;
}

void *nk__big_fixed0(size_t k, size_t n)
{
    if (n && k > SIZE_MAX / n)
        return NULL;
    size_t b = k * n, m = padded(b);
    if (m == b)
        return calloc(k, n);
    /* not calloc: on a block of the heap it would zero the pad too */
    void *p = malloc(m);
    if (!p)
        return NULL;
#if NK_BIG_HEADERS
    uintptr_t lo, hi;
    if (mapping_of(p, b, &lo, &hi)) { /* a fresh mapping is zero already */
        advise(p, b, 0, 1);
        return p;
    }
#endif
    return memset(p, 0, b);
}

void *nk__big_realloc(void *old, size_t n)
{
    void *p = realloc(old, padded_resizable(n));
    advise(p, n, 1, !old);
    return p;
}

void *nk__big_calloc(size_t k, size_t n)
{
    if (n && k > SIZE_MAX / n)
        return NULL;
    size_t b = k * n;
    void *p = calloc(1, padded_resizable(b));
    advise(p, b, 1, 1);
    return p;
}

int nk__big_active(void)
{
#if NK_BIG_HEADERS
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char line[128] = "";
    if (!f)
        return 0;
    if (!fgets(line, sizeof line, f))
        line[0] = 0;
    fclose(f);
    return strstr(line, "[always]") || strstr(line, "[madvise]");
#else
    return 0;
#endif
}
