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
 *   - A fixed block gets the advice on the whole huge pages its bytes fill
 *     and MADV_NOHUGEPAGE on the rest of its mapping: its tail stays on
 *     small pages, so no byte past its end is resident, whatever the
 *     system's default. (The mapping is split, which a realloc could not
 *     mremap: it would copy. Hence the two kinds.)
 *   - A resizable block gets the advice on its whole mapping, which realloc
 *     moves with mremap; it is padded to whole huge pages only where the
 *     pad is at most a sixteenth, since a huge page is resident whole once
 *     written and the block's last one then holds its pad too.
 * A block of the heap or an arena (not mapped on its own) gets no advice.
 * Nothing is advised where the system gives no transparent huge pages
 * (`never`, system-wide or for 2 MiB pages, or disabled for the process),
 * or where the allocator is not glibc's as compiled (a sanitizer's); with
 * another allocator preloaded, a block is advised only if the 16 bytes
 * before it, in its own page, read as glibc's header of a mapped block.
 * Advice only ever changes the speed and the resident memory, never the
 * contents: a zeroed block is calloc's. (Where glibc perturbs fresh blocks,
 * a debugging setting, it writes them before the advice: small pages, and
 * a fixed block's pad resident.)
 *
 * An array that grows by doubling as it is filled (the trace's records, a
 * dependency list) is a third kind. Grown by realloc, each doubling is an
 * mremap that may move the mapping, and a mapping of a length that is not
 * whole huge pages lands wherever the kernel finds room: its 2 MiB ranges
 * are then not aligned and the array stays on small pages; the first
 * growth past glibc's threshold copies the heap block besides. Past
 * NK_BIG_MIN such an array is given room for GROW_ROOM times its size at
 * once, whole huge pages: address space, nothing resident until written,
 * so it fills in place, huge page by huge page. nk__big_fit gives the room
 * back when the array is complete (realloc shrinks a mapping in place).
 *
 * A block sized to a bound and filled from its start (the DMA spans: at
 * most one a descriptor, in practice one a DMA) is a fourth: its first
 * NK_BIG_BOUNDED_SMALL bytes on small pages (advised so, whatever the
 * system's default), the rest on huge ones. A small program's spans stay
 * on small pages (a huge page at the frontier would be resident whole, at
 * its profile's peak); a large one's fill huge pages past the head, the
 * frontier's at most half as much again.
 */
#include "nkint.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1; older kernels refuse it (EINVAL) */
#endif

/* Under a sanitizer the blocks are its allocator's, with no glibc header
 * to read (and the bytes before a block may be its redzone). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NK_BIG_HEADERS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
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

#if NK_BIG_HEADERS
/* The bracketed choice of a sysfs setting: 1 always, 2 madvise, 3 inherit,
 * 0 never, -1 no such file. */
static int thp_setting(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[128] = "";
    if (!f)
        return -1;
    if (!fgets(line, sizeof line, f))
        line[0] = 0;
    fclose(f);
    return strstr(line, "[always]") ? 1 : strstr(line, "[madvise]") ? 2 : strstr(line, "[inherit]") ? 3 : 0;
}

/* Does this process get 2 MiB transparent huge pages on advice? Asked once. */
static int thp_on(void)
{
    static atomic_int on = -1;
    int v = atomic_load_explicit(&on, memory_order_relaxed);
    if (v >= 0)
        return v;
    int top = thp_setting("/sys/kernel/mm/transparent_hugepage/enabled");
    int pmd = thp_setting("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled");
    v = (pmd == 1 || pmd == 2 || ((pmd == 3 || pmd < 0) && (top == 1 || top == 2))) &&
        prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 0;
    atomic_store_explicit(&on, v, memory_order_relaxed);
    return v;
}

/* May a growing array take room it has not filled? Not where the system
 * counts every private mapping against a commit limit (strict overcommit,
 * vm.overcommit_memory 2): there the room would be taken from what the
 * process's other allocations may have. Asked once. */
static int room_ok(void)
{
    static atomic_int ok = -1;
    int v = atomic_load_explicit(&ok, memory_order_relaxed);
    if (v >= 0)
        return v;
    FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
    int mode = 0;
    if (f) {
        if (fscanf(f, "%d", &mode) != 1)
            mode = 0;
        fclose(f);
    }
    v = mode != 2;
    atomic_store_explicit(&ok, v, memory_order_relaxed);
    return v;
}
#endif

/* The size to ask for so that a mapped block's mapping is whole huge
 * pages; n itself for a small block, or where nothing is advised. */
static size_t padded(size_t n)
{
#if NK_BIG_HEADERS
    if (n < NK_BIG_MIN || n > SIZE_MAX - 2 * HUGE || !thp_on())
        return n;
    return ((n + GLIBC_OVER + HUGE - 1) & ~(HUGE - 1)) - GLIBC_OVER;
#else
    return n;
#endif
}

/* A fixed block is padded only where its bytes fill a huge page: the pad
 * of a smaller one would buy none (its advice covers whole huge pages of
 * its bytes), and where huge pages are the system's default the aligned
 * mapping could get one, pad and all. */
static size_t padded_fixed(size_t n)
{
    return n + 2 * sizeof(size_t) >= HUGE ? padded(n) : n;
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
 * the mapping. 0 for a block of the heap or of an arena, and for any block
 * not 16 bytes into a page as glibc's mapped blocks are (the header is
 * then read only where it would be, in the block's own page). */
static int mapping_of(void *p, size_t n, uintptr_t *lo, uintptr_t *hi)
{
    if (((uintptr_t)p & 4095) != 2 * sizeof(size_t))
        return 0;
    /* through an integer: the compiler does not take it for an access
     * before an object */
    const size_t *w = (const size_t *)((uintptr_t)p - 2 * sizeof(size_t));
    size_t off = w[0], size = w[1];
    if (!(size & 2) || off)
        return 0;
    *lo = (uintptr_t)p - 2 * sizeof(size_t);
    *hi = *lo + (size & ~(size_t)7);
    return *hi >= (uintptr_t)p + n; /* else not the header expected */
}
#endif

/* Huge pages for [p, p + n): the whole mapping (whole), or only the huge
 * pages that lie within the block's bytes, the rest of the mapping on small
 * pages. A fresh block's first page already holds glibc's header (written
 * before the advice could be given), so the first huge page would fault
 * 4 KiB at a time; it is made huge at once (MADV_COLLAPSE, Linux 6.1: about
 * 0.2 ms against 512 faults). */
static void advise(void *p, size_t n, int whole, int fresh)
{
#if NK_BIG_HEADERS
    uintptr_t lo, hi, end;
    if (!p || n < NK_BIG_MIN || !thp_on() || !mapping_of(p, n, &lo, &hi))
        return;
    if (!whole) { /* from the mapping's start: its first bytes are the block's header */
        end = hi;
        lo = (lo + HUGE - 1) & ~(uintptr_t)(HUGE - 1);
        hi = ((uintptr_t)p + n) & ~(uintptr_t)(HUGE - 1);
        if (hi <= lo)
            return;
        if (end > hi) /* the tail: small pages even where huge ones are the default */
            (void)madvise((void *)hi, end - hi, MADV_NOHUGEPAGE);
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
    void *p = malloc(padded_fixed(n));
    advise(p, n, 0, 1);
    return p;
}

void *nk__big_bounded(size_t n)
{
    void *p = malloc(n);
#if NK_BIG_HEADERS
    uintptr_t start, lo, hi;
    if (p && n > NK_BIG_BOUNDED_SMALL && thp_on() && mapping_of(p, n, &start, &hi)) {
        /* the head on small pages even where huge ones are the default;
         * past it, from a huge-page boundary to the mapping's end, huge
         * (advice on parts of the mapping: shrinking still works, moving
         * would copy, and a bounded block is only ever shrunk) */
        lo = ((uintptr_t)p + NK_BIG_BOUNDED_SMALL + HUGE - 1) & ~(uintptr_t)(HUGE - 1);
        if (hi > lo) {
            (void)madvise((void *)start, lo - start, MADV_NOHUGEPAGE);
            (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
        }
    }
#endif
    return p;
}

/* k * n zeroed bytes, fixed or resizable (whole). calloc: a fresh mapping
 * it leaves as the system's zero pages (unless glibc perturbs blocks), a
 * block of the heap it zeroes, pad included. */
static void *zeroed(size_t k, size_t n, int whole)
{
    if (n && k > SIZE_MAX / n)
        return NULL;
    size_t b = k * n;
    void *p = calloc(1, whole ? padded_resizable(b) : padded_fixed(b));
    advise(p, b, whole, 1);
    return p;
}

void *nk__big_fixed0(size_t k, size_t n) { return zeroed(k, n, 0); }

void *nk__big_realloc(void *old, size_t n)
{
    void *p = realloc(old, padded_resizable(n));
    advise(p, n, 1, !old);
    return p;
}

void *nk__big_calloc(size_t k, size_t n) { return zeroed(k, n, 1); }

/* The room a growing array of n bytes (n >= NK_BIG_MIN) is given: GROW_ROOM
 * times n, whole huge pages, and at least GROW_ROOM_MIN, above glibc's
 * highest dynamic mmap threshold (32 MiB), so that it is a mapping of its
 * own in any process, whatever blocks that process has freed. Each time
 * the array outgrows its room it is moved (mremap: no copy) into room
 * GROW_ROOM times larger again, so a doubling array moves once every four
 * doublings instead of at each. */
#define GROW_ROOM 16
#define GROW_ROOM_MIN ((size_t)64 << 20)

void *nk__big_grow(void *old, size_t n)
{
    size_t have = old ? malloc_usable_size(old) : 0; /* (a sanitizer's allocator answers too) */
    if (old && n <= have)
        return old;
#if NK_BIG_HEADERS
    if (n >= NK_BIG_MIN && n <= (SIZE_MAX - 2 * HUGE) / GROW_ROOM && thp_on() && room_ok()) {
        size_t room = padded(GROW_ROOM * n > GROW_ROOM_MIN ? GROW_ROOM * n : GROW_ROOM_MIN);
        uintptr_t lo, hi;
        if (old && mapping_of(old, have, &lo, &hi)) { /* a mapping: mremap moves it, no copy */
            void *p = realloc(old, room);
            if (p) {
                advise(p, room, 1, p != old); /* moved: a fresh mapping, its header's huge page written */
                return p;
            }
        } else { /* a block of the heap (or none): copied, once, into room advised first, so that
                    the copy fills huge pages rather than faulting 4 KiB at a time */
            void *p = malloc(room);
            if (p) {
                advise(p, room, 1, 1);
                if (old) {
                    memcpy(p, old, have);
                    free(old);
                }
                return p;
            }
        }
    }
#endif
    return nk__big_realloc(old, n);
}

void *nk__big_fit(void *p, size_t n)
{
    void *q = p && n ? realloc(p, n) : NULL;
    return q ? q : p;
}

int nk__big_active(void)
{
#if NK_BIG_HEADERS
    return thp_on();
#else
    return 0;
#endif
}

/* ---- arrays packed in one block */

int nk__pack_open(nk__pack *k, size_t size)
{
    memset(k, 0, sizeof *k);
    if (size < NK_BIG_MIN || !nk__big_active())
        return 0; /* each array a block of its own */
    if (size > SIZE_MAX - 64 || !(k->block = nk__big_fixed0(size + 48, 1))) /* (glibc's blocks are 16-aligned) */
        return NK_ENOMEM;
    k->base = (char *)(((uintptr_t)k->block + 63) & ~(uintptr_t)63);
    k->size = size;
    return 0;
}

void *nk__pack_take(nk__pack *k, size_t n, int zero)
{
    size_t m = nk__pack_size(n ? n : 1);
    if (!k->base || k->n == NK_PACK_MAX || m > k->size - k->used || m < n)
        return zero ? nk__big_fixed0(n ? n : 1, 1) : nk__big_fixed(n ? n : 1);
    void *p = k->base + k->used;
    k->at[k->n].off = k->used;
    k->at[k->n++].len = n;
    k->used += m;
    return p;
}

void nk__pack_free(nk__pack *k, void *p)
{
    char *c = p;
    if (!p)
        return;
    if (!k->base || c < k->base || c >= k->base + k->size) {
        free(p);
        return;
    }
    for (uint32_t i = 0; i < k->n; i++)
        if (k->base + k->at[i].off == c) {
            /* its whole pages go back now, as free() would give back a
             * block of its own; a page it shares with a neighbour stays
             * until the block goes */
            uintptr_t lo = ((uintptr_t)c + 4095) & ~(uintptr_t)4095;
            uintptr_t hi = ((uintptr_t)c + k->at[i].len) & ~(uintptr_t)4095;
            if (hi > lo)
                (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
            return;
        }
}

void nk__pack_close(nk__pack *k)
{
    free(k->block);
    memset(k, 0, sizeof *k);
}

