/*
 * test_bigmem.c - large arrays on transparent huge pages (core/bigmem.c):
 * the contents are the C library's blocks' (zeroed, kept across a resize);
 * where huge pages are to be had, a fixed block's whole huge pages are huge
 * and nothing past its last byte is resident, and a resizable block keeps
 * one mapping that realloc moves without copying (no page faults).
 *
 * The blocks are over 32 MiB, glibc's highest dynamic mmap threshold, so
 * each has a mapping of its own whatever the tests before have freed.
 */
#include "test.h"

#include "nkint.h"
#include "oomhook.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define MIB ((size_t)1 << 20)

static long minflt(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/* Resident and huge-page kilobytes of the mappings that overlap [p, p + n),
 * and how many mappings those are (/proc/self/smaps). */
typedef struct resid {
    long size_kb, rss_kb, huge_kb;
    int nmaps;
} resid;

static resid resident(const void *p, size_t n)
{
    resid r = {0, 0, 0, 0};
    FILE *f = fopen("/proc/self/smaps", "r");
    CHECK(f != NULL);
    if (!f)
        return r;
    char line[512];
    int in = 0;
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        long kb;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = a < hi && lo < b;
            r.nmaps += in;
        } else if (in && sscanf(line, "Size: %ld kB", &kb) == 1)
            r.size_kb += kb;
        else if (in && sscanf(line, "Rss: %ld kB", &kb) == 1)
            r.rss_kb += kb;
        else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            r.huge_kb += kb;
    }
    fclose(f);
    return r;
}

/* Does the kernel give this process a huge page on advice right now? (A
 * control outside the allocator: under memory pressure, fragmentation or a
 * cgroup's limit it may fall back to small pages, which is no fault of the
 * code under test.) */
static int kernel_gives_huge_pages(void)
{
    const char *e = getenv("MALLOC_PERTURB_"), *tun = getenv("GLIBC_TUNABLES");
    if ((e && atoi(e)) || (tun && strstr(tun, "perturb")))
        return 0; /* glibc writes every block before the advice: small pages */
    size_t len = 3 * 2 * MIB;
    char *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return 0;
    char *h = (char *)(((uintptr_t)map + 2 * MIB - 1) & ~(uintptr_t)(2 * MIB - 1));
    int got = 0;
    if (!madvise(h, 2 * MIB, MADV_HUGEPAGE)) {
        h[0] = 1;
        got = resident(h, 2 * MIB).huge_kb >= 2048;
    }
    munmap(map, len);
    return got;
}

TEST(bigmem_small_blocks_and_overflow)
{
    unsigned char *a = nk__big_fixed(1000), *z = nk__big_fixed0(250, 4);
    uint32_t *c = nk__big_calloc(300, sizeof *c);
    CHECK(a && z && c);
    if (a && z && c) {
        memset(a, 0x5a, 1000);
        CHECK_INT(a[999], 0x5a);
        int zero = 1;
        for (int i = 0; i < 1000; i++)
            zero &= z[i] == 0;
        for (int i = 0; i < 300; i++)
            zero &= c[i] == 0;
        CHECK(zero);
        c = nk__big_realloc(c, 600 * sizeof *c);
        CHECK(c != NULL);
    }
    free(a);
    free(z);
    free(c);
    /* k * n wraps to 4: the guards, not calloc's own, must refuse it */
    CHECK(nk__big_fixed0(SIZE_MAX / 4 + 2, 4) == NULL);
    CHECK(nk__big_calloc(SIZE_MAX / 4 + 2, 4) == NULL);
}

/* What the C library is asked for: a fixed block that fills no huge page
 * is not padded (the pad would buy no huge page, and where huge pages are
 * the default the aligned mapping could get one, pad and all); one that
 * does is padded to whole huge pages, less glibc's 24 bytes; a resizable
 * one only where the pad is at most a sixteenth of it. */
TEST(bigmem_sizes_asked)
{
    struct { int fixed; size_t n, padded; } c[] = {
        {1, 2 * MIB - 4096, 2 * MIB - 4096},   /* fills no huge page */
        {1, 2 * MIB, 4 * MIB - 24},            /* fills one */
        {1, 33 * MIB, 34 * MIB - 24},
        {0, 3 * MIB, 3 * MIB},                 /* a pad of a third */
        {0, 33 * MIB, 34 * MIB - 24},          /* a pad of under a sixteenth */
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        void *p = c[k].fixed ? nk__big_fixed(c[k].n) : nk__big_malloc(c[k].n);
        size_t asked = nk_oom_last_size();
        CHECK(p != NULL);
        CHECK_INT(asked, nk__big_active() ? c[k].padded : c[k].n);
        free(p);
    }
}

/* A zeroed block that glibc puts in its heap (its mmap threshold raised by
 * a freed mapping, as glibc does) is zeroed all the same, dirty heap
 * memory or not. */
TEST(bigmem_fixed0_from_the_heap)
{
    for (int round = 0; round < 2; round++) {
        /* through volatile pointers: the compiler may not drop a block
         * that is written and freed unread */
        unsigned char *volatile big = malloc(30 * MIB); /* freed: the threshold rises to 30 MiB */
        CHECK(big != NULL);
        if (big)
            memset(big, 0xee, 30 * MIB);
        free(big);
        unsigned char *volatile dirty = malloc(3 * MIB); /* heap memory written, then freed */
        if (dirty)
            memset(dirty, 0xee, 3 * MIB);
        free(dirty);
        size_t n = 3 * MIB + 12345;
        unsigned char *p = nk__big_fixed0(n, 1);
        CHECK(p != NULL);
        if (!p)
            return;
        size_t nonzero = 0;
        for (size_t i = 0; i < n; i++)
            nonzero += p[i] != 0;
        CHECK_INT(nonzero, 0);
        free(p);
    }
}

/* A fixed block of 16 huge pages and a bit: zeroed when asked, every whole
 * huge page huge (the first too, though glibc's header was written first),
 * the part past the last whole one on small pages, nothing past its end. */
TEST(bigmem_fixed_block)
{
    size_t n = 32 * MIB + MIB - 100;
    unsigned char *p = nk__big_fixed0(n, 1);
    CHECK(p != NULL);
    if (!p)
        return;
    int zero = 1;
    for (size_t i = 0; i < n; i += 4093)
        zero &= p[i] == 0;
    CHECK(zero);
    long f0 = minflt();
    memset(p, 0xa5, n);
    long faults = minflt() - f0;
    CHECK_INT(p[0], 0xa5);
    CHECK_INT(p[n - 1], 0xa5);
    resid r = resident(p, n);
    if (nk__big_active() && kernel_gives_huge_pages()) /* (a sanitizer's blocks share their mappings) */
        CHECK(r.rss_kb <= (long)((n + 16 + 4095) / 4096 * 4)); /* nothing past the block, whatever the default */
    if (nk__big_active() && kernel_gives_huge_pages()) {
        CHECK(r.huge_kb >= 32 * 1024); /* 16 huge pages */
        CHECK(faults < 300 + 64);      /* 16 huge faults and the 1 MiB tail's 256: 8,448 on small pages */
    }
    free(p);
}

/* Block p of n0 bytes, filled with a pattern, resized to n1 by resize:
 * the new block with the pattern kept (checked), or NULL (p freed); the
 * page faults the resize took into *faults. */
static void *resized(void *p, size_t n0, size_t n1, void *(*resize)(void *, size_t), long *faults)
{
    uint32_t *a = p;
    for (size_t i = 0; i < n0 / 4; i++)
        a[i] = (uint32_t)(i * 2654435761u);
    long f0 = minflt();
    uint32_t *q = resize(p, n1);
    *faults = minflt() - f0;
    CHECK(q != NULL);
    if (!q) {
        free(p);
        return NULL;
    }
    int same = 1;
    for (size_t i = 0; i < n0 / 4; i++)
        same &= q[i] == (uint32_t)(i * 2654435761u);
    CHECK(same);
    return q;
}

/* A resizable block grown from 34 to 68 MiB: its contents kept, one
 * mapping, huge pages, and realloc moved it rather than copying it (a copy
 * faults every page of the new block). */
TEST(bigmem_resizable_block)
{
    size_t n = 34 * MIB;
    void *p = nk__big_malloc(n);
    CHECK(p != NULL);
    if (!p)
        return;
    long faults;
    char *q = resized(p, n, 2 * n, nk__big_realloc, &faults);
    if (!q)
        return;
    memset(q + n, 1, n);
    resid r = resident(q, 2 * n);
    if (nk__big_active() && kernel_gives_huge_pages()) {
        CHECK_INT(r.nmaps, 1);
        CHECK(faults < 64);
        CHECK(r.huge_kb >= 64 * 1024);
    }
    free(q);
}

/* An array grown by doubling from 64 bytes to 64 MiB, as the tracer grows
 * its records: its contents kept at every step; a size it has room for
 * returns the block itself; at NK_BIG_MIN it is given room for 64 MiB
 * (sixteen times its size, and at least 64 MiB: a mapping of its own
 * whatever the tests before freed), so it never moves again and fills on
 * huge pages (on small ones the 64 MiB take 16,384 faults). nk__big_fit then
 * gives the room back: the mapping ends within a page of the array. */
TEST(bigmem_growing_array)
{
    uint32_t *p = NULL;
    size_t cap = 0, n = 16 * MIB, moves = 0, asked_room = 0;
    long f0 = minflt();
    for (size_t c = 16; c <= n; c *= 2) {
        uint32_t *q = nk__big_grow(p, c * sizeof *q);
        if (c * sizeof *q == NK_BIG_MIN)
            asked_room = nk_oom_last_size();
        CHECK(q != NULL);
        if (!q) {
            free(p);
            return;
        }
        moves += q != p && c * sizeof *q > NK_BIG_MIN;
        p = q;
        CHECK(nk__big_grow(p, c * sizeof *p) == p); /* it fits: the block itself */
        for (size_t i = cap; i < c; i++)
            p[i] = (uint32_t)(i * 2654435761u);
        cap = c;
    }
    long faults = minflt() - f0;
    int same = 1;
    for (size_t i = 0; i < n; i++)
        same &= p[i] == (uint32_t)(i * 2654435761u);
    CHECK(same);
    if (nk__big_active()) {
        /* at NK_BIG_MIN, room for 64 MiB: whole huge pages less glibc's 24 bytes */
        CHECK_INT(asked_room, 66 * MIB - 24);
        CHECK_INT(moves, 0); /* it never moves again */
    }
    if (nk__big_active() && kernel_gives_huge_pages())
        CHECK(faults < 1024);
    uint32_t *f = nk__big_fit(p, n * sizeof *p - 100);
    CHECK(f != NULL);
    if (f) {
        CHECK_INT(f[n - 100 / sizeof *f - 1], (uint32_t)((n - 100 / sizeof *f - 1) * 2654435761u));
        resid r = resident(f, n * sizeof *f - 100);
        if (nk__big_active()) {
            CHECK_INT(r.nmaps, 1);
            CHECK(r.size_kb <= (long)(n * sizeof *f / 1024 + 4)); /* the room given back */
        }
        p = f;
    }
    free(p);
    CHECK(nk__big_fit(NULL, 0) == NULL);
}

/* An array of the heap (96 KiB: under glibc's lowest mmap threshold) grown
 * past NK_BIG_MIN: copied once into room already advised, so the copy fills
 * a huge page instead of faulting 4 KiB at a time (24 faults, then a
 * collapse, when realloc copied it first); its contents kept. */
TEST(bigmem_growing_array_leaves_the_heap)
{
    size_t n0 = 96 << 10;
    void *p = malloc(n0);
    CHECK(p != NULL);
    if (!p)
        return;
    long faults;
    void *q = resized(p, n0, NK_BIG_MIN, nk__big_grow, &faults);
    if (!q)
        return;
    if (nk__big_active() && kernel_gives_huge_pages()) {
        CHECK(faults < 8);
        CHECK(resident(q, 1).huge_kb >= 2048);
    }
    free(q);
}

/* A block sized to a bound of 256 MiB, of which 20 MiB are written from its
 * start, as the DMA spans are: the head (NK_BIG_BOUNDED_SMALL) on small
 * pages, the rest huge; resident, what is written and at most the huge page
 * at the frontier past it, nothing of the bound beyond; realloc then
 * shrinks it with its contents. */
TEST(bigmem_bounded_block)
{
    size_t n = 256 * MIB, used = 20 * MIB + 12345;
    unsigned char *p = nk__big_bounded(n);
    CHECK(p != NULL);
    if (!p)
        return;
    long f0 = minflt();
    for (size_t i = 0; i < used; i++)
        p[i] = (unsigned char)(i * 7);
    long faults = minflt() - f0;
    resid head = resident(p, 1), r = resident(p, n);
    if (nk__big_active() && kernel_gives_huge_pages()) {
        /* head: 1,024 small faults; the other 16 MiB: 8 huge ones (4,096 small) */
        CHECK(faults < 1024 + 64 + 600);
        CHECK(faults > 1000);                                   /* the head is small pages */
        CHECK_INT(head.huge_kb, 0);
        CHECK(r.huge_kb >= 14 * 1024);                          /* past the head: huge */
        CHECK(r.rss_kb <= (long)((used >> 10) + 2048 + 8));     /* the frontier's huge page at most */
    }
    unsigned char *q = realloc(p, used);
    CHECK(q != NULL);
    if (q) {
        int same = 1;
        for (size_t i = 0; i < used; i += 4091)
            same &= q[i] == (unsigned char)(i * 7);
        CHECK(same && q[used - 1] == (unsigned char)((used - 1) * 7));
        p = q;
    }
    free(p);
}

/* Arrays packed in one block: each zeroed and 64-byte aligned, in the order
 * taken; freeing one gives its whole pages back at once (where the pack is
 * a block of its own), its neighbours' bytes kept; a pack that is full, or
 * none (size 0), gives blocks of their own, zeroed when asked; close frees
 * the block. */
TEST(bigmem_pack)
{
    nk__pack k;
    size_t n = 3 * MIB + 100, total = 3 * nk__pack_size(n);
    CHECK_INT(nk__pack_open(&k, total), 0);
    unsigned char *a = nk__pack_take(&k, n, 0), *b = nk__pack_take(&k, n, 1), *c = nk__pack_take(&k, n, 0);
    unsigned char *d = nk__pack_take(&k, 10, 1); /* full: a block of its own */
    CHECK(a && b && c && d);
    if (!a || !b || !c || !d)
        return;
    int zero = 1, packed = nk__big_active(); /* (a block of its own is zeroed only when asked) */
    for (size_t i = 0; i < n; i += 1000)
        zero &= b[i] == 0 && (!packed || (a[i] == 0 && c[i] == 0));
    for (int i = 0; i < 10; i++)
        zero &= d[i] == 0;
    CHECK(zero);
    CHECK(((uintptr_t)a & 63) == 0 && ((uintptr_t)b & 63) == 0 && ((uintptr_t)c & 63) == 0);
    if (packed) { /* in order, a pack size apart */
        CHECK(b == a + nk__pack_size(n));
        CHECK(c == b + nk__pack_size(n));
        CHECK(d < a || d >= a + total);
    }
    memset(a, 1, n);
    memset(b, 2, n);
    memset(c, 3, n);
    long before = resident(a, total).rss_kb;
    nk__pack_free(&k, b);
    long after = resident(a, total).rss_kb;
    CHECK_INT(a[n - 1], 1); /* the neighbours keep their bytes */
    CHECK_INT(c[0], 3);
    if (nk__big_active())
        CHECK(after <= before - (long)(n / 1024) + 8); /* b's pages gone, all but its two edge pages */
    nk__pack_free(&k, a);
    nk__pack_free(&k, c);
    nk__pack_free(&k, d);
    nk__pack_close(&k);
    CHECK(k.base == NULL);
    /* no pack: blocks of their own */
    CHECK_INT(nk__pack_open(&k, 0), 0);
    uint32_t *z = nk__pack_take(&k, 1000 * sizeof *z, 1);
    CHECK(z != NULL);
    if (z) {
        CHECK_INT(z[999], 0);
        nk__pack_free(&k, z);
    }
    nk__pack_close(&k);
}
