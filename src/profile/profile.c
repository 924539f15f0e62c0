/*
 * profile.c - capturing a profile, and its file (.nkp): one container
 * (header, checksum) holding the sections META (nklab version, creation
 * time), ARCH (the target table, as text), PROG (the program's own
 * sections), TIME (the timeline) and SRCS (the kernel's source texts).
 *
 * The reader is strict: it checks the header and checksum, then decodes each
 * section with every count bounded by the bytes left, validates the program
 * (nk__program_check) and the timeline against it (nk__timeline_check), so
 * the viewer, exporters and insights can index without checking.
 */
#include "profile/profile.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#define MAX_ARCH_TEXT (64u << 10)

/* ================================================================ capture */

static double now_unix(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A source file's text, or NULL when it cannot be read, is not a regular
 * file, is too large or holds NUL bytes (not text), or memory is short
 * (*oom set: the capture fails rather than lose the text). */
static char *read_source(const char *path, int *oom)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat st;
    char *s = NULL;
    if (!fstat(fileno(f), &st) && S_ISREG(st.st_mode) && st.st_size <= (off_t)NK_IO_MAX_TEXT) {
        size_t n = (size_t)st.st_size;
        s = malloc(n + 1);
        *oom = !s;
        if (s && (fread(s, 1, n, f) != n || memchr(s, 0, n))) {
            free(s);
            s = NULL;
        }
        if (s)
            s[n] = 0;
    }
    fclose(f);
    return s;
}

/* The process's source lookup (nk_profile_set_source_lookup). */
static nk_source_lookup_fn source_lookup;
static void *source_lookup_user;

void nk_profile_set_source_lookup(nk_source_lookup_fn fn, void *user)
{
    source_lookup = fn;
    source_lookup_user = fn ? user : NULL;
}

/* A source's text: the lookup's copy when it knows the path and the text is
 * one a profile can hold, else the file's. *oom is set when a copy fails. */
static char *find_source(const char *path, int *oom)
{
    const char *known = source_lookup ? source_lookup(path, source_lookup_user) : NULL;
    if (known && strlen(known) <= NK_IO_MAX_TEXT) {
        char *s = strdup(known);
        *oom = !s;
        return s;
    }
    return read_source(path, oom);
}

int nk__profile_read_sources(nk_profile *pr)
{
    const nk_program *p = pr->prog;
    pr->sources = calloc(p->nfiles ? p->nfiles : 1, sizeof *pr->sources);
    if (!pr->sources)
        return NK_ENOMEM;
    for (uint32_t i = 0; i < p->nfiles; i++) {
        int oom = 0;
        if (!(pr->sources[i].path = strdup(p->files[i])))
            return NK_ENOMEM;
        pr->sources[i].text = find_source(p->files[i], &oom);
        if (oom)
            return NK_ENOMEM;
    }
    return 0;
}

/* The profile of a capture before its timing: its program p itself (view)
 * or a copy of it. */
static int capture_begin(const nk_program *p, const nk_arch *arch, int view, nk_profile **out)
{
    *out = NULL;
    if (!p)
        return NK_EINVAL;
    if (!arch)
        arch = p->arch ? p->arch : nk__arch_get(p->target);
    if (!arch)
        return NK_ENOTFOUND;
    nk_profile *pr = calloc(1, sizeof *pr);
    if (!pr)
        return NK_ENOMEM;
    pr->arch = *arch;
    snprintf(pr->nklab_version, sizeof pr->nklab_version, "%s", NK_VERSION);
    pr->created_unix = now_unix();
    int rc = 0;
    if (!view)
        rc = nk__program_copy(p, &pr->prog);
    else if (!p->arch)
        rc = NK_EINVAL; /* as nk__program_copy */
    else if (!(pr->prog = malloc(sizeof *pr->prog)))
        rc = NK_ENOMEM;
    else { /* the arrays are p's; the struct and the target table the view's own */
        *pr->prog = *p;
        pr->prog->table = *p->arch;
        pr->prog->arch = &pr->prog->table;
        pr->prog->owned = 0;
        pr->prog->view = 1;
    }
    if (rc) {
        nk_profile_free(pr);
        return rc;
    }
    *out = pr;
    return 0;
}

/* The rest of a capture: the timeline and the sources. */
static int capture_finish(nk_profile *pr)
{
    /* a timeline the model has just computed is trusted as it is (the
     * reader checks those that come from files) */
    int rc = nk__time_program(pr->prog, &pr->arch, &pr->tl);
    if (!rc)
        rc = nk__profile_read_sources(pr);
    return rc;
}

static int capture(const nk_program *p, const nk_arch *arch, int view, nk_profile **out)
{
    int rc = capture_begin(p, arch, view, out);
    if (!rc && (rc = capture_finish(*out))) {
        nk_profile_free(*out);
        *out = NULL;
    }
    return rc;
}

int nk_profile_capture(const nk_program *p, const nk_arch *arch, nk_profile **out)
{
    return capture(p, arch, 0, out);
}

int nk__profile_capture_view(const nk_program *p, const nk_arch *arch, nk_profile **out)
{
    return capture(p, arch, 1, out);
}

/* A creation time every reader can print as a date: 1970-01-01 to
 * 9999-12-31 UTC (NaN fails too). */
static int profile_time_ok(double unix_seconds)
{
    return unix_seconds >= 0 && unix_seconds < 253402300800.0;
}

int nk_profile_set_created(nk_profile *pr, double unix_seconds)
{
    if (!pr || !profile_time_ok(unix_seconds))
        return NK_EINVAL;
    pr->created_unix = unix_seconds;
    return NK_OK;
}

void nk_profile_free(nk_profile *pr)
{
    if (!pr)
        return;
    if (pr->sources && pr->prog)
        for (uint32_t i = 0; i < pr->prog->nfiles; i++) {
            free(pr->sources[i].path);
            free(pr->sources[i].text);
        }
    free(pr->sources);
    nk__timeline_free(pr->tl);
    if (pr->prog && pr->prog->view && !pr->prog->owned)
        free(pr->prog); /* a capture's view: the arrays are the captured program's */
    else
        nk__program_destroy(pr->prog);
    free(pr);
}

const nk_program *nk_profile_program(const nk_profile *pr) { return pr ? pr->prog : NULL; }

/* ================================================================ encode */

/* Events, DMA transfers, spans and counter samples are the bulk of a large
 * profile (a million transfers): their fields are variable-length, each
 * time as the xor of its bits with a nearby time (fx), each instruction id
 * as the difference from the previous record's (sv). The records are
 * written through the raw pointer of a reserved stretch of the buffer, a
 * record at a time, with a branch-free LEB128 for values below 2^56: the
 * same bytes as the nk__wr_* primitives, several times faster. */

enum { REC_MAX = 96 }; /* bytes a record can take: 8 fields of at most 10 bytes, and slack for 8-byte stores */

static inline size_t uv_len(uint64_t v) { return v < 0x80 ? 1 : (size_t)(70 - __builtin_clzll(v)) / 7; }

static inline uint8_t *put_uv(uint8_t *b, uint64_t v)
{
    if (v < 0x80) {
        *b = (uint8_t)v;
        return b + 1;
    }
    if (v < (1ull << 56)) { /* the 7-bit groups spread over 8 bytes, continuation bits on all but the last */
        size_t n = uv_len(v);
        uint64_t x = (v & 0x7f) | (v << 1 & 0x7f00ull) | (v << 2 & 0x7f0000ull) | (v << 3 & 0x7f000000ull) |
                     (v << 4 & 0x7f00000000ull) | (v << 5 & 0x7f0000000000ull) | (v << 6 & 0x7f000000000000ull) |
                     (v << 7 & 0x7f00000000000000ull);
        x |= 0x8080808080808080ull & ((1ull << (8 * (n - 1))) - 1);
        nk__put_le(b, x, 8);
        return b + n;
    }
    for (; v >= 0x80; v >>= 7)
        *b++ = (uint8_t)(v | 0x80);
    *b++ = (uint8_t)v;
    return b;
}

static inline uint64_t zigzag(int64_t v)
{
    uint64_t u = (uint64_t)v;
    return (u << 1) ^ (0 - (u >> 63));
}
static inline uint64_t fxbits(double v, double prev) { return nk__f64_bits(v) ^ nk__f64_bits(prev); }
static inline uint8_t *put_sv(uint8_t *b, int64_t v) { return put_uv(b, zigzag(v)); }
static inline uint8_t *put_fx(uint8_t *b, double v, double prev) { return put_uv(b, fxbits(v, prev)); }

/* Room for one more record, or NULL (oom, or the buffer is to be flushed:
 * see tflush). */
typedef struct tout {
    nk_wr *w;
    size_t flush_at;                     /* streaming: hand the bytes over beyond this (0: never) */
    int (*flush)(void *ctx, nk_wr *w);   /* consumes w's bytes (w->n = 0 after) */
    void *ctx;
    int rc;
} tout;

static inline uint8_t *trec(tout *o)
{
    nk_wr *w = o->w;
    if (o->flush_at && w->n >= o->flush_at && !o->rc)
        o->rc = o->flush(o->ctx, w);
    return o->rc ? NULL : nk__wr_room(w, REC_MAX);
}

static inline void tdone(tout *o, uint8_t *b) { o->w->n = (size_t)(b - o->w->p); }

static void put_events(tout *o, const nk_timeline *tl)
{
    nk__wr_u32(o->w, tl->nevents);
    int64_t instr = 0;
    double start = 0;
    for (uint32_t i = 0; i < tl->nevents; i++) {
        const nk_event *e = &tl->events[i];
        uint8_t *b = trec(o);
        if (!b)
            return;
        b = put_sv(b, (int64_t)e->instr - instr);
        *b++ = e->engine;
        *b++ = e->kind;
        b = put_uv(b, e->queue);
        b = put_fx(b, e->start, start);
        b = put_fx(b, e->end, e->start);
        tdone(o, b);
        instr = e->instr;
        start = e->start;
    }
}

/* Version 7: the DMA spans (before: every descriptor's transfer). */
static void put_dspans(tout *o, const nk_timeline *tl)
{
    nk__wr_u32(o->w, tl->ndspans);
    int64_t instr = 0;
    double start = 0;
    for (uint32_t i = 0; i < tl->ndspans; i++) {
        const nk_dma_span *x = &tl->dspans[i];
        uint8_t *b = trec(o);
        if (!b)
            return;
        b = put_sv(b, (int64_t)x->instr - instr);
        b = put_uv(b, x->queue);
        *b++ = x->to_hbm;
        b = put_uv(b, x->descriptors);
        b = put_uv(b, x->partitions);
        b = put_uv(b, x->bytes);
        b = put_uv(b, x->engines);
        b = put_fx(b, x->start, start);
        b = put_fx(b, x->end, x->start);
        tdone(o, b);
        instr = x->instr;
        start = x->start;
    }
}

static void put_timeline(tout *o, const nk_timeline *tl, uint32_t ninstr)
{
    nk_wr *w = o->w;
    nk__wr_str(w, tl->target);
    nk__wr_f64(w, tl->total_ns);
    nk__wr_f64(w, tl->host_in_ns);
    nk__wr_f64(w, tl->host_out_ns);
    nk__wr_u32(w, NK_ENGINE_COUNT);
    for (int e = 0; e < NK_ENGINE_COUNT; e++)
        nk__wr_f64(w, tl->active_ns[e]);
    put_events(o, tl);
    put_dspans(o, tl);
    nk__wr_u32(w, ninstr);
    double prev = 0;
    for (uint32_t i = 0; i < ninstr; i++) {
        uint8_t *b = trec(o);
        if (!b)
            return;
        b = put_fx(b, tl->instr_start[i], prev);
        b = put_fx(b, tl->instr_end[i], tl->instr_start[i]);
        tdone(o, b);
        prev = tl->instr_start[i];
    }
    nk__wr_u32(w, tl->ncounters);
    for (uint32_t i = 0; i < tl->ncounters; i++) {
        const nk_counter *c = &tl->counters[i];
        nk__wr_str(w, c->name);
        nk__wr_str(w, c->unit);
        nk__wr_u32(w, c->n);
        for (uint32_t k = 0; k < c->n; k++) {
            uint8_t *b = trec(o);
            if (!b)
                return;
            b = put_fx(b, c->t[k], k ? c->t[k - 1] : 0);
            b = put_fx(b, c->value[k], k ? c->value[k - 1] : 0);
            tdone(o, b);
        }
    }
    /* version 5: the launch regions */
    nk__wr_u32(w, tl->nregions);
    double rs = 0;
    for (uint32_t i = 0; i < tl->nregions; i++) {
        const nk_region *g = &tl->regions[i];
        nk__wr_u8(w, g->kind);
        nk__wr_u8(w, g->core);
        nk__wr_fx(w, g->start, rs);
        nk__wr_fx(w, g->end, g->start);
        rs = g->start;
    }
}

static size_t str_len(const char *s) { return 4 + (s ? strlen(s) : 0); }

/* The bytes put_timeline writes, counted without writing them, in two
 * parts of about the same work: the header, events and instruction times;
 * the spans, counters and regions. */
static uint64_t timeline_bytes_a(const nk_timeline *tl, uint32_t ninstr)
{
    uint64_t n = str_len(tl->target) + 3 * 8 + 4 + 8 * NK_ENGINE_COUNT + 4;
    int64_t instr = 0;
    double start = 0;
    for (uint32_t i = 0; i < tl->nevents; i++) {
        const nk_event *e = &tl->events[i];
        n += uv_len(zigzag((int64_t)e->instr - instr)) + 2 + uv_len(e->queue) + uv_len(fxbits(e->start, start)) +
             uv_len(fxbits(e->end, e->start));
        instr = e->instr;
        start = e->start;
    }
    n += 4 + 4; /* the spans' count (the spans are part b), the instructions' */
    double prev = 0;
    for (uint32_t i = 0; i < ninstr; i++) {
        n += uv_len(fxbits(tl->instr_start[i], prev)) + uv_len(fxbits(tl->instr_end[i], tl->instr_start[i]));
        prev = tl->instr_start[i];
    }
    return n;
}

static uint64_t timeline_bytes_b(const nk_timeline *tl)
{
    uint64_t n = 0;
    int64_t instr = 0;
    double start = 0;
    for (uint32_t i = 0; i < tl->ndspans; i++) {
        const nk_dma_span *x = &tl->dspans[i];
        n += uv_len(zigzag((int64_t)x->instr - instr)) + uv_len(x->queue) + 1 + uv_len(x->descriptors) +
             uv_len(x->partitions) + uv_len(x->bytes) + uv_len(x->engines) + uv_len(fxbits(x->start, start)) +
             uv_len(fxbits(x->end, x->start));
        instr = x->instr;
        start = x->start;
    }
    n += 4;
    for (uint32_t i = 0; i < tl->ncounters; i++) {
        const nk_counter *c = &tl->counters[i];
        n += str_len(c->name) + str_len(c->unit) + 4;
        for (uint32_t k = 0; k < c->n; k++)
            n += uv_len(fxbits(c->t[k], k ? c->t[k - 1] : 0)) + uv_len(fxbits(c->value[k], k ? c->value[k - 1] : 0));
    }
    n += 4;
    double rs = 0;
    for (uint32_t i = 0; i < tl->nregions; i++) {
        const nk_region *g = &tl->regions[i];
        n += 2 + uv_len(fxbits(g->start, rs)) + uv_len(fxbits(g->end, g->start));
        rs = g->start;
    }
    return n;
}

typedef struct count_job {
    const nk_timeline *tl;
    uint64_t n;
} count_job;

static void *count_work(void *arg)
{
    count_job *j = arg;
    j->n = timeline_bytes_b(j->tl);
    return NULL;
}

/* Timelines of this many spans and counter samples or more have their
 * second part counted on a thread of their own (assumed: below it the
 * thread's start, tens of microseconds, outweighs the count); a variable
 * for the tests, which take both ways. */
size_t nk__profile_count_split_min = 1u << 16;

static uint64_t timeline_bytes(const nk_timeline *tl, uint32_t ninstr, int threads)
{
    size_t work = tl->ndspans;
    for (uint32_t i = 0; i < tl->ncounters; i++)
        work += tl->counters[i].n;
    count_job j = {tl, 0};
    pthread_t th;
    int split = work >= nk__profile_count_split_min && nk__threads(threads) > 1 &&
                !pthread_create(&th, NULL, count_work, &j);
    uint64_t n = timeline_bytes_a(tl, ninstr);
    if (split)
        pthread_join(th, NULL);
    else
        j.n = timeline_bytes_b(tl);
    return n + j.n;
}

/* Bytes the file will take, about (most fields are variable-length): to
 * size the buffer once. */
static size_t encoded_estimate(const nk_profile *pr)
{
    const nk_program *p = pr->prog;
    const nk_timeline *tl = pr->tl;
    size_t n = 64 * 1024 + (size_t)p->ninstr * 80 + (size_t)p->nbufs * 24 + (size_t)p->ndeps * 3 +
               (size_t)tl->nevents * 16 + (size_t)tl->ndspans * 24;
    for (uint32_t i = 0; i < tl->ncounters; i++)
        n += (size_t)tl->counters[i].n * 12;
    for (uint32_t i = 0; pr->sources && i < p->nfiles; i++)
        n += pr->sources[i].text ? strlen(pr->sources[i].text) + 8 : 1;
    return n;
}

static void put_meta(nk_wr *w, const nk_profile *pr)
{
    size_t s = nk__wr_begin(w, "META");
    nk__wr_str(w, pr->nklab_version);
    nk__wr_f64(w, pr->created_unix);
    nk__wr_end(w, s);
}

static void put_sources(nk_wr *w, const nk_profile *pr)
{
    size_t s = nk__wr_begin(w, "SRCS");
    nk__wr_u32(w, pr->prog->nfiles);
    for (uint32_t i = 0; i < pr->prog->nfiles; i++) {
        const char *text = pr->sources ? pr->sources[i].text : NULL;
        nk__wr_u8(w, text != NULL);
        if (text)
            nk__wr_str(w, text);
    }
    nk__wr_end(w, s);
}

int nk__profile_encode(const nk_profile *pr, nk_wr *w)
{
    if (!pr || !pr->prog || !pr->tl)
        return NK_EINVAL;
    char *arch_text = NULL;
    int rc = nk__arch_format(&pr->arch, &arch_text);
    if (rc)
        return rc;
    nk__wr_reserve(w, encoded_estimate(pr));
    nk__file_begin(w, NK_MAGIC_PROFILE);
    put_meta(w, pr);
    size_t s = nk__wr_begin(w, "ARCH");
    nk__wr_str(w, arch_text);
    nk__wr_end(w, s);
    free(arch_text);
    s = nk__wr_begin(w, "PROG");
    rc = nk__program_encode(pr->prog, w);
    nk__wr_end(w, s);
    s = nk__wr_begin(w, "TIME");
    tout o = {w, 0, NULL, NULL, 0};
    put_timeline(&o, pr->tl, pr->prog->ninstr);
    nk__wr_end(w, s);
    put_sources(w, pr);
    nk__file_finish(w);
    return rc ? rc : w->oom ? NK_ENOMEM : 0;
}

/* ---- writing a profile as a stream */

/* XXH64 (seed 0) over bytes given piece by piece: nk__checksum of their
 * concatenation. */
#define XP1 0x9e3779b185ebca87ull
#define XP2 0xc2b2ae3d27d4eb4full
#define XP3 0x165667b19e3779f9ull
#define XP4 0x85ebca77c2b2ae63ull
#define XP5 0x27d4eb2f165667c5ull

typedef struct xxh {
    uint64_t v[4], total;
    uint8_t mem[32];
    size_t nmem;
} xxh;

static inline uint64_t xrotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t xround(uint64_t acc, uint64_t in) { return xrotl(acc + in * XP2, 31) * XP1; }
static inline uint64_t xmerge(uint64_t h, uint64_t v) { return (h ^ xround(0, v)) * XP1 + XP4; }

static void xxh_init(xxh *x)
{
    memset(x, 0, sizeof *x);
    x->v[0] = XP1 + XP2;
    x->v[1] = XP2;
    x->v[2] = 0;
    x->v[3] = 0 - XP1;
}

static inline void xxh_stripe(xxh *x, const uint8_t *b)
{
    x->v[0] = xround(x->v[0], nk__get_le(b, 8));
    x->v[1] = xround(x->v[1], nk__get_le(b + 8, 8));
    x->v[2] = xround(x->v[2], nk__get_le(b + 16, 8));
    x->v[3] = xround(x->v[3], nk__get_le(b + 24, 8));
}

static void xxh_update(xxh *x, const uint8_t *b, size_t n)
{
    x->total += n;
    if (x->nmem + n < 32) {
        memcpy(x->mem + x->nmem, b, n);
        x->nmem += n;
        return;
    }
    if (x->nmem) {
        size_t k = 32 - x->nmem;
        memcpy(x->mem + x->nmem, b, k);
        xxh_stripe(x, x->mem);
        b += k;
        n -= k;
        x->nmem = 0;
    }
    for (; n >= 32; b += 32, n -= 32)
        xxh_stripe(x, b);
    memcpy(x->mem, b, n);
    x->nmem = n;
}

static uint64_t xxh_digest(const xxh *x)
{
    uint64_t h;
    if (x->total >= 32) {
        h = xrotl(x->v[0], 1) + xrotl(x->v[1], 7) + xrotl(x->v[2], 12) + xrotl(x->v[3], 18);
        for (int k = 0; k < 4; k++)
            h = xmerge(h, x->v[k]);
    } else
        h = XP5;
    h += x->total;
    const uint8_t *b = x->mem, *end = x->mem + x->nmem;
    for (; end - b >= 8; b += 8)
        h = xrotl(h ^ xround(0, nk__get_le(b, 8)), 27) * XP1 + XP4;
    if (end - b >= 4) {
        h = xrotl(h ^ nk__get_le(b, 4) * XP1, 23) * XP2 + XP3;
        b += 4;
    }
    for (; b < end; b++)
        h = xrotl(h ^ *b * XP5, 11) * XP1;
    h ^= h >> 33;
    h *= XP2;
    h ^= h >> 29;
    h *= XP3;
    return h ^ (h >> 32);
}

/* The content goes to the file as it is encoded, hashed on the way; the
 * header (content length and checksum) is written over its placeholder at
 * the end. */
typedef struct sout {
    nk__afile *f;
    xxh h;
    uint64_t len;
} sout;

static int sout_flush(void *ctx, nk_wr *w)
{
    sout *o = ctx;
    xxh_update(&o->h, w->p, w->n);
    o->len += w->n;
    int rc = w->n ? nk__afile_write(o->f, w->p, w->n) : 0;
    w->n = 0;
    return rc;
}

/* Profiles below this many bytes (about) are encoded in memory and written
 * at once; larger ones stream, a chunk at a time: what the writer holds
 * beside the model's timing run, the 1x matmul's peak (a MiB there was
 * 7 bytes per instruction; 256 KiB is a few hundred writes at 8x). */
#define STREAM_MIN_BYTES (4u << 20)
#define STREAM_CHUNK (256u << 10)

/* Records from .. to - 1 as enc writes them, into w and on to the file a
 * chunk at a time; expect: their bytes, counted before. 512 records (about
 * 45 KB) stay within the slack w was reserved with past a chunk, so that
 * it never grows. */
static int stream_records(const nk_program *p, nk_wr *w, sout *so, uint32_t from, uint32_t to,
                          void (*enc)(const nk_program *, nk_wr *, uint32_t, uint32_t), uint64_t expect)
{
    int rc = 0;
    uint64_t before = so->len + w->n;
    for (uint32_t i = from; i < to && !rc && !w->oom; i += 512) {
        enc(p, w, i, i + 512 < to ? i + 512 : to);
        if (w->n >= STREAM_CHUNK)
            rc = sout_flush(so, w);
    }
    if (!rc && !w->oom && so->len + w->n - before != expect)
        rc = NK_EINVAL; /* cannot happen: the count and the encoder disagree */
    return rc;
}

/* The PROG section with its buffers and instructions a chunk at a time (at
 * a million instructions they are 10 and 67 MB, which the file need not
 * hold in memory): the parts before and after them in memory, the buffers'
 * and the instructions' bytes counted first so that the lengths go in front.
 * The bytes of nk__program_encode. */
static int stream_program(const nk_program *p, nk_wr *w, sout *so)
{
    nk_wr head = {0}, tail = {0};
    uint64_t ib = 0, bb = 0;
    int rc = nk__program_instrs_bytes(p, &ib);
    if (!rc)
        rc = nk__program_bufs_bytes(p, &bb);
    if (!rc)
        rc = nk__program_encode_tail(p, &tail);
    if (!rc)
        rc = nk__program_encode_head0(p, &head);
    if (!rc) {
        uint64_t bufs = 4 + bb, inst = 4 + ib;
        nk__wr_bytes(w, "PROG", 4);
        nk__wr_u64(w, head.n + 12 + bufs + 12 + inst + tail.n);
        nk__wr_bytes(w, head.p, head.n);
        nk__wr_bytes(w, "BUFS", 4);
        nk__wr_u64(w, bufs);
        nk__wr_u32(w, p->nbufs ? p->nbufs - 1 : 0);
        rc = stream_records(p, w, so, 1, p->nbufs, nk__program_encode_bufs, bb);
        nk__wr_bytes(w, "INST", 4);
        nk__wr_u64(w, inst);
        nk__wr_u32(w, p->ninstr);
        if (!rc)
            rc = stream_records(p, w, so, 0, p->ninstr, nk__program_encode_instrs, ib);
        nk__wr_bytes(w, tail.p, tail.n);
    }
    nk__wr_free(&head);
    nk__wr_free(&tail);
    return rc ? rc : w->oom ? NK_ENOMEM : 0;
}

/* A profile streaming to its file: the writer, its output and the header's
 * placeholder bytes. */
typedef struct pstream {
    nk_wr w;
    sout so;
    uint8_t header[NK_FILE_HEADER_BYTES];
} pstream;

/* The parts before the timeline: the header's placeholder, META, ARCH and
 * PROG, which depend on the program alone (and the creation time). 0 or an
 * error; ps->w is the pstream's to free either way. */
static int stream_head(const nk_profile *pr, nk__afile *f, pstream *ps)
{
    memset(ps, 0, sizeof *ps);
    ps->so.f = f;
    xxh_init(&ps->so.h);
    char *arch_text = NULL;
    int rc = nk__arch_format(&pr->arch, &arch_text);
    if (rc)
        return rc;
    nk_wr *w = &ps->w;
    nk__wr_reserve(w, STREAM_CHUNK + (64u << 10));
    /* the header's placeholder: the content starts after it, so the bytes
     * handed over are hashed as they go */
    nk__file_begin(w, NK_MAGIC_PROFILE);
    memcpy(ps->header, w->p, sizeof ps->header);
    rc = w->oom ? NK_ENOMEM : nk__afile_write(f, w->p, w->n);
    w->n = 0;
    if (!rc) {
        put_meta(w, pr);
        size_t s = nk__wr_begin(w, "ARCH");
        nk__wr_str(w, arch_text);
        nk__wr_end(w, s);
        rc = stream_program(pr->prog, w, &ps->so);
    }
    free(arch_text);
    return rc ? rc : w->oom ? NK_ENOMEM : 0;
}

/* A large timeline's chunks are hashed and written on a second thread while
 * the next is encoded (the 8x matmul's 62 MB: 28 ms of the 100 ms the
 * section took): two buffers, one being filled, the other handed over. The
 * chunks go in order, one at a time, so the bytes and their hash are those
 * of sout_flush. */
size_t nk__profile_pipe_min = (size_t)8 << 20;

typedef struct spipe {
    sout *so;
    nk_wr other; /* handed over (busy), or the empty one to fill next */
    int busy, closed, rc;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} spipe;

static void *spipe_work(void *arg)
{
    spipe *sp = arg;
    pthread_mutex_lock(&sp->mu);
    for (;;) {
        while (!sp->busy && !sp->closed)
            pthread_cond_wait(&sp->cv, &sp->mu);
        if (!sp->busy)
            break;
        nk_wr w = sp->other;
        pthread_mutex_unlock(&sp->mu);
        int rc = sout_flush(sp->so, &w);
        pthread_mutex_lock(&sp->mu);
        sp->other = w;
        sp->busy = 0;
        if (rc && !sp->rc)
            sp->rc = rc;
        pthread_cond_broadcast(&sp->cv);
    }
    pthread_mutex_unlock(&sp->mu);
    return NULL;
}

/* tout's flush: w's bytes go to the thread once it is done with the last
 * chunk, and w goes on in the buffer it gave back. */
static int spipe_flush(void *ctx, nk_wr *w)
{
    spipe *sp = ctx;
    if (w->oom) /* (the buffer is sized not to grow) it stops here, as it would at the end */
        return NK_ENOMEM;
    pthread_mutex_lock(&sp->mu);
    while (sp->busy)
        pthread_cond_wait(&sp->cv, &sp->mu);
    int rc = sp->rc;
    nk_wr empty = sp->other;
    if (!rc) {
        sp->other = *w;
        sp->busy = 1;
        *w = empty;
        pthread_cond_broadcast(&sp->cv);
    }
    pthread_mutex_unlock(&sp->mu);
    return rc;
}

/* The timeline's records through tout o, on the pipe when it is worth one
 * and a thread starts (else as they are: sout_flush on this thread). */
static int put_timeline_out(const nk_profile *pr, nk_wr *w, sout *so, uint64_t tb)
{
    tout o = {w, STREAM_CHUNK, sout_flush, so, 0};
    spipe sp = {so, {0}, 0, 0, 0};
    pthread_t th;
    int piped = tb >= nk__profile_pipe_min && nk__threads(pr->prog->threads) > 1;
    if (piped) {
        nk__wr_reserve(&sp.other, w->cap);
        piped = !sp.other.oom;
    }
    if (piped) {
        pthread_mutex_init(&sp.mu, NULL);
        pthread_cond_init(&sp.cv, NULL);
        piped = !pthread_create(&th, NULL, spipe_work, &sp);
        if (!piped) {
            pthread_mutex_destroy(&sp.mu);
            pthread_cond_destroy(&sp.cv);
        }
    }
    if (piped) {
        o.flush = spipe_flush;
        o.ctx = &sp;
    }
    put_timeline(&o, pr->tl, pr->prog->ninstr);
    int rc = o.rc;
    if (piped) { /* the last chunk handed over is written before the rest */
        pthread_mutex_lock(&sp.mu);
        sp.closed = 1;
        pthread_cond_broadcast(&sp.cv);
        pthread_mutex_unlock(&sp.mu);
        pthread_join(th, NULL);
        if (!rc)
            rc = sp.rc;
        pthread_mutex_destroy(&sp.mu);
        pthread_cond_destroy(&sp.cv);
    }
    nk__wr_free(&sp.other);
    return rc;
}

/* The rest, once the timeline is there: TIME and SRCS, then the header over
 * its placeholder. 1 written (commit next), < 0 an error. */
static int stream_tail(const nk_profile *pr, nk__afile *f, pstream *ps)
{
    nk_wr *w = &ps->w;
    sout *so = &ps->so;
    int rc = 0;
    /* the timeline's length first (its section header comes before it) */
    uint64_t tb = timeline_bytes(pr->tl, pr->prog->ninstr, pr->prog->threads);
    nk__wr_bytes(w, "TIME", 4);
    nk__wr_u64(w, tb);
    size_t before = so->len + w->n;
    rc = put_timeline_out(pr, w, so, tb);
    if (!rc && so->len + w->n - before != tb)
        rc = NK_EINVAL; /* cannot happen: the count and the encoder disagree */
    if (!rc && !w->oom) {
        put_sources(w, pr);
        rc = sout_flush(so, w);
    }
    if (!rc && w->oom)
        rc = NK_ENOMEM;
    if (rc)
        return rc;
    /* the header: bytes 16..31 are the content's length and checksum. Its
     * placeholder is in the file once the writer has passed it on (more
     * than its buffer has been written since), and is then written over
     * where it lies; else the bytes are encoded again in memory. */
    nk__put_le(ps->header + 16, so->len, 8);
    nk__put_le(ps->header + 24, xxh_digest(&so->h), 8);
    if (lseek(f->fd, 0, SEEK_CUR) < (off_t)sizeof ps->header)
        return 0;
    ssize_t k = pwrite(f->fd, ps->header, sizeof ps->header, 0);
    if (k != (ssize_t)sizeof ps->header)
        return nk__afile_fail(f, k < 0 ? errno : ENOSPC);
    return 1;
}

/* Streams pr to the open file f: 1 written (commit next), 0 when f cannot
 * take a stream (written in place: nothing written, encode in memory
 * instead), < 0 an error. */
static int stream_profile(const nk_profile *pr, nk__afile *f)
{
    if (f->through || f->fd < 0)
        return 0;
    pstream ps;
    int rc = stream_head(pr, f, &ps);
    if (!rc)
        rc = stream_tail(pr, f, &ps);
    nk__wr_free(&ps.w);
    return rc;
}

/* A target written in place (a FIFO, a character device) takes the file as
 * one piece, encoded in memory (its header cannot be written over at the
 * end), through the file as it was opened: opened again, a FIFO's reader
 * would see the end of the first writer and the second would wait for a
 * reader. */
static int write_whole(const nk_profile *pr, nk__afile *f)
{
    nk_wr w = {0};
    int rc = nk__profile_encode(pr, &w);
    if (!rc)
        rc = nk__afile_write(f, w.p, w.n);
    nk__wr_free(&w);
    if (rc) {
        nk__afile_abort(f);
        return rc;
    }
    return nk__afile_commit(f);
}

int nk_profile_write(const nk_profile *pr, const char *path)
{
    if (!path)
        return NK_EINVAL;
    if (!pr || !pr->prog || !pr->tl)
        return NK_EINVAL;
    if (encoded_estimate(pr) >= STREAM_MIN_BYTES) {
        nk__afile f;
        int rc = nk__afile_open(&f, path);
        if (rc)
            return rc;
        if (f.through || f.fd < 0)
            return write_whole(pr, &f);
        rc = stream_profile(pr, &f);
        if (rc == 1)
            return nk__afile_commit(&f);
        nk__afile_abort(&f);
        if (rc < 0)
            return rc;
        /* the placeholder could not be written over: in memory, as below */
    }
    nk_wr w = {0};
    int rc = nk__profile_encode(pr, &w);
    if (!rc)
        rc = nk__file_write_atomic(path, w.p, w.n);
    nk__wr_free(&w);
    return rc;
}

/* The file's parts before the timeline, on a thread of their own. */
typedef struct head_job {
    const nk_profile *pr;
    nk__afile *f;
    pstream *ps;
    int rc;
} head_job;

static void *head_work(void *arg)
{
    head_job *j = arg;
    j->rc = stream_head(j->pr, j->f, j->ps);
    return NULL;
}

int nk__profile_capture_write(const nk_program *p, const char *path, const double *created, nk_profile **out,
                              int *write_rc)
{
    *write_rc = 0;
    if (!path)
        return NK_EINVAL;
    nk_profile *pr;
    int rc = capture_begin(p, NULL, 1, &pr);
    if (rc) {
        *out = NULL;
        return rc;
    }
    if (created)
        nk_profile_set_created(pr, *created); /* one it refuses leaves the clock's */
    /* what is worth streaming, with a second thread to write it on: the
     * program's part of the file goes out while the model times it (both
     * only read the program); else capture, then write */
    nk__afile f;
    int opened = (size_t)p->ninstr * 80 >= STREAM_MIN_BYTES && nk__threads(p->threads) > 1 &&
                 !nk__afile_open(&f, path);
    pthread_t th;
    pstream ps;
    head_job hj = {pr, &f, &ps, 0};
    int through = opened && (f.through || f.fd < 0);
    int started = opened && !through && !pthread_create(&th, NULL, head_work, &hj);
    if (opened && !through && !started) /* no thread: as below */
        nk__afile_abort(&f);
    rc = capture_finish(pr);
    if (through) {
        if (rc)
            nk__afile_abort(&f);
        else
            *write_rc = write_whole(pr, &f);
    } else if (started) {
        pthread_join(th, NULL);
        int w = rc ? 0 : hj.rc ? hj.rc : stream_tail(pr, &f, &ps);
        nk__wr_free(&ps.w);
        if (w == 1)
            *write_rc = nk__afile_commit(&f);
        else
            nk__afile_abort(&f);
        if (w < 0)
            *write_rc = w;
        else if (!w && !rc)
            *write_rc = nk_profile_write(pr, path); /* written in place after all */
    } else if (!rc) {
        *write_rc = nk_profile_write(pr, path); /* (an open that failed fails there again, with its message) */
    }
    if (rc) {
        nk_profile_free(pr);
        pr = NULL;
    }
    *out = pr;
    return rc;
}

/* ================================================================ decode */

static int get_meta(nk_rd *r, nk_profile *pr)
{
    nk_rd s;
    if (nk__rd_section(r, "META", &s))
        return r->rc;
    nk__rd_str_into(&s, pr->nklab_version, sizeof pr->nklab_version, "nklab version");
    pr->created_unix = nk__rd_f64(&s);
    if (!s.rc && !profile_time_ok(pr->created_unix))
        nk__rd_fail(&s, NK_EFORMAT, "creation time is not between 1970 and 9999");
    return r->rc = nk__rd_end(&s);
}

static int get_arch(nk_rd *r, nk_profile *pr)
{
    nk_rd s;
    if (nk__rd_section(r, "ARCH", &s))
        return r->rc;
    char *text = nk__rd_str(&s, MAX_ARCH_TEXT, "target table");
    if (text) {
        char msg[256];
        int rc = nk__arch_load_text(text, "target table", &pr->arch, msg, sizeof msg);
        if (rc)
            nk__rd_fail(&s, NK_EFORMAT, "%s", msg);
        free(text);
    }
    return r->rc = nk__rd_end(&s);
}

static int get_prog(nk_rd *r, nk_profile *pr)
{
    nk_rd s;
    if (nk__rd_section(r, "PROG", &s))
        return r->rc;
    if (!nk__program_decode(&s, &pr->prog))
        nk__rd_end(&s);
    return r->rc = s.rc;
}

/* Minimum encoded sizes (one byte per variable-length field; version 1's
 * fixed widths second), for the counts-versus-bytes checks: an event, a DMA
 * transfer, an instruction's span, a counter sample. */
enum {
    MIN_EVENT = 6, MIN_EVENT_V1 = 24, MIN_XFER = 8, MIN_XFER_V1 = 36, MIN_DSPAN = 9,
    MIN_SPAN = 2, MIN_SPAN_V1 = 16, MIN_SAMPLE = 2, MIN_SAMPLE_V1 = 16
};

/* The instruction of the next record: version 1 stores it, later versions
 * its difference from the previous record's. */
static uint32_t get_instr_id(nk_rd *s, int64_t *prev, const char *what, uint32_t i)
{
    int64_t v = nk__rd_v1(s) ? (int64_t)nk__rd_u32(s) : *prev + nk__rd_sv(s);
    if (v < 0 || v > UINT32_MAX)
        nk__rd_fail(s, NK_EFORMAT, "%s %u: instruction %lld out of range", what, i, (long long)v);
    *prev = v;
    return (uint32_t)v;
}


/* The fast way through the bulk of a timeline: a record decoded from a raw
 * pointer when at least FAST_AT bytes are left, every value canonical
 * LEB128 (as nk__rd_uv checks) and in range; anything else (an error, a
 * record near the end, format version 1) goes the checked way from the
 * record's start, which then reports it. */
enum { FAST_AT = 96 };

/* A canonical LEB128 value at b, ten readable bytes: its length, or 0
 * (malformed: overlong, a superfluous zero byte, above 2^64 - 1). */
static inline int fast_uv(const uint8_t *b, uint64_t *v)
{
    if (b[0] < 0x80) {
        *v = b[0];
        return 1;
    }
    uint64_t x = nk__get_le(b, 8), stop = ~x & 0x8080808080808080ull;
    if (stop) { /* ends within 8 bytes */
        int n = (__builtin_ctzll(stop) >> 3) + 1;
        if (b[n - 1] == 0)
            return 0;
        x &= n == 8 ? ~0ull : (1ull << (8 * n)) - 1;
        *v = (x & 0x7f) | (x >> 1 & 0x3f80ull) | (x >> 2 & 0x1fc000ull) | (x >> 3 & 0xfe00000ull) |
             (x >> 4 & 0x7f0000000ull) | (x >> 5 & 0x3f800000000ull) | (x >> 6 & 0x1fc0000000000ull) |
             (x >> 7 & 0xfe000000000000ull);
        return n;
    }
    uint64_t r = 0;
    for (int k = 0; k < 10; k++) {
        uint8_t c = b[k];
        if (k == 9 && c > 1)
            return 0;
        r |= (uint64_t)(c & 0x7f) << (7 * k);
        if (c < 0x80) {
            if (!c)
                return 0;
            *v = r;
            return k + 1;
        }
    }
    return 0;
}

#define FAST_UV(var)                     \
    do {                                 \
        int fl_ = fast_uv(b, &(var));    \
        if (!fl_)                        \
            goto slow;                   \
        b += fl_;                        \
    } while (0)

static inline double fast_fx(uint64_t v, double prev) { return nk__bits_f64(v ^ nk__f64_bits(prev)); }
static inline int64_t unzig(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

static void get_events(nk_rd *s, nk_timeline *tl)
{
    tl->nevents = nk__rd_count(s, nk__rd_vmin(s, MIN_EVENT_V1, MIN_EVENT), "events");
    if (s->rc || !(tl->events = nk__big_fixed0(tl->nevents ? tl->nevents : 1, sizeof *tl->events))) {
        tl->nevents = 0;
        nk__rd_fail(s, NK_ENOMEM, "out of memory");
        return;
    }
    int64_t instr = 0;
    double start = 0;
    for (uint32_t i = 0; i < tl->nevents && !s->rc; i++) {
        nk_event *e = &tl->events[i];
        nk__rd_release(s);
        if (!nk__rd_v1(s) && s->n - s->pos >= FAST_AT) {
            const uint8_t *b = s->p + s->pos;
            uint64_t d, q, st, en;
            FAST_UV(d);
            int64_t id = instr + unzig(d);
            uint8_t eng = b[0], kind = b[1];
            b += 2;
            FAST_UV(q);
            FAST_UV(st);
            FAST_UV(en);
            if (id < 0 || id > UINT32_MAX || q > UINT16_MAX)
                goto slow;
            e->instr = (uint32_t)id;
            e->engine = eng;
            e->kind = kind;
            e->queue = (uint16_t)q;
            e->start = start = fast_fx(st, start);
            e->end = fast_fx(en, e->start);
            instr = id;
            s->pos = (size_t)(b - s->p);
            continue;
        }
    slow:
        e->instr = get_instr_id(s, &instr, "event", i);
        e->engine = nk__rd_u8(s);
        e->kind = nk__rd_u8(s);
        e->queue = nk__rd_vu16(s);
        e->start = start = nk__rd_vfx(s, start);
        e->end = nk__rd_vfx(s, e->start);
    }
}

/* Versions before 7: every descriptor's transfer (made into DMA spans once checked). */
static void get_xfers(nk_rd *s, nk_timeline *tl)
{
    tl->nxfers = nk__rd_count(s, nk__rd_vmin(s, MIN_XFER_V1, MIN_XFER), "DMA transfers");
    if (s->rc || !(tl->xfers = nk__big_fixed0(tl->nxfers ? tl->nxfers : 1, sizeof *tl->xfers))) {
        tl->nxfers = 0;
        nk__rd_fail(s, NK_ENOMEM, "out of memory");
        return;
    }
    int64_t instr = 0;
    double start = 0;
    for (uint32_t i = 0; i < tl->nxfers && !s->rc; i++) {
        nk_dma_xfer *x = &tl->xfers[i];
        nk__rd_release(s);
        if (!nk__rd_v1(s) && s->n - s->pos >= FAST_AT) {
            const uint8_t *b = s->p + s->pos;
            uint64_t d, q, parts, bytes, st, en;
            FAST_UV(d);
            int64_t id = instr + unzig(d);
            FAST_UV(q);
            uint8_t eng = b[0], to_hbm = b[1];
            b += 2;
            FAST_UV(parts);
            FAST_UV(bytes);
            FAST_UV(st);
            FAST_UV(en);
            if (id < 0 || id > UINT32_MAX || q > UINT16_MAX || parts > UINT32_MAX)
                goto slow;
            x->instr = (uint32_t)id;
            x->queue = (uint16_t)q;
            x->dma_engine = eng;
            x->to_hbm = to_hbm;
            x->partitions = (uint32_t)parts;
            x->bytes = bytes;
            x->start = start = fast_fx(st, start);
            x->end = fast_fx(en, x->start);
            instr = id;
            s->pos = (size_t)(b - s->p);
            continue;
        }
    slow:
        x->instr = get_instr_id(s, &instr, "DMA transfer", i);
        x->queue = nk__rd_vu16(s);
        x->dma_engine = nk__rd_u8(s);
        x->to_hbm = nk__rd_u8(s);
        x->partitions = nk__rd_vu32(s);
        x->bytes = nk__rd_vu64(s);
        x->start = start = nk__rd_vfx(s, start);
        x->end = nk__rd_vfx(s, x->start);
    }
}

/* Version 7: the DMA spans. */
static void get_dspans(nk_rd *s, nk_timeline *tl)
{
    tl->ndspans = nk__rd_count(s, MIN_DSPAN, "DMA spans");
    if (s->rc || !(tl->dspans = nk__big_fixed0(tl->ndspans ? tl->ndspans : 1, sizeof *tl->dspans))) {
        tl->ndspans = 0;
        nk__rd_fail(s, NK_ENOMEM, "out of memory");
        return;
    }
    int64_t instr = 0;
    double start = 0;
    for (uint32_t i = 0; i < tl->ndspans && !s->rc; i++) {
        nk_dma_span *x = &tl->dspans[i];
        nk__rd_release(s);
        if (s->n - s->pos >= FAST_AT) {
            const uint8_t *b = s->p + s->pos;
            uint64_t d, q, nd, parts, bytes, eng, st, en;
            FAST_UV(d);
            int64_t id = instr + unzig(d);
            FAST_UV(q);
            uint8_t to_hbm = *b++;
            FAST_UV(nd);
            FAST_UV(parts);
            FAST_UV(bytes);
            FAST_UV(eng);
            FAST_UV(st);
            FAST_UV(en);
            if (id < 0 || id > UINT32_MAX || q > UINT16_MAX || nd > UINT32_MAX || parts > UINT32_MAX)
                goto slow;
            *x = (nk_dma_span){(uint32_t)id, (uint16_t)q, to_hbm, 0, (uint32_t)nd, (uint32_t)parts, bytes, eng,
                               0, 0};
            x->start = start = fast_fx(st, start);
            x->end = fast_fx(en, x->start);
            instr = id;
            s->pos = (size_t)(b - s->p);
            continue;
        }
    slow:
        x->instr = get_instr_id(s, &instr, "DMA span", i);
        x->queue = nk__rd_vu16(s);
        x->to_hbm = nk__rd_u8(s);
        x->descriptors = nk__rd_vu32(s);
        x->partitions = nk__rd_vu32(s);
        x->bytes = nk__rd_vu64(s);
        x->engines = nk__rd_vu64(s);
        x->start = start = nk__rd_vfx(s, start);
        x->end = nk__rd_vfx(s, x->start);
    }
}

static void get_spans(nk_rd *s, nk_timeline *tl, uint32_t ninstr)
{
    uint32_t n = nk__rd_count(s, nk__rd_vmin(s, MIN_SPAN_V1, MIN_SPAN), "instruction spans");
    if (!s->rc && n != ninstr)
        nk__rd_fail(s, NK_EFORMAT, "%u instruction spans for %u instructions", n, ninstr);
    if (s->rc)
        return;
    tl->instr_start = nk__big_fixed0(n ? n : 1, sizeof(double));
    tl->instr_end = nk__big_fixed0(n ? n : 1, sizeof(double));
    if (!tl->instr_start || !tl->instr_end) {
        nk__rd_fail(s, NK_ENOMEM, "out of memory");
        return;
    }
    double prev = 0;
    for (uint32_t i = 0; i < n && !s->rc; i++) {
        nk__rd_release(s);
        if (!nk__rd_v1(s) && s->n - s->pos >= FAST_AT) {
            const uint8_t *b = s->p + s->pos;
            uint64_t st, en;
            FAST_UV(st);
            FAST_UV(en);
            tl->instr_start[i] = prev = fast_fx(st, prev);
            tl->instr_end[i] = fast_fx(en, prev);
            s->pos = (size_t)(b - s->p);
            continue;
        }
    slow:
        tl->instr_start[i] = prev = nk__rd_vfx(s, prev);
        tl->instr_end[i] = nk__rd_vfx(s, prev);
    }
}

static void get_counters(nk_rd *s, nk_timeline *tl)
{
    uint32_t n = nk__rd_count(s, 12, "counters");
    if (s->rc)
        return;
    if (!(tl->counters = calloc(n ? n : 1, sizeof *tl->counters))) {
        nk__rd_fail(s, NK_ENOMEM, "out of memory");
        return;
    }
    for (uint32_t i = 0; i < n && !s->rc; i++) {
        nk_counter *c = &tl->counters[i];
        tl->ncounters = i + 1; /* so nk__timeline_free releases what is read */
        nk__rd_str_into(s, c->name, sizeof c->name, "counter name");
        nk__rd_str_into(s, c->unit, sizeof c->unit, "counter unit");
        c->n = nk__rd_count(s, nk__rd_vmin(s, MIN_SAMPLE_V1, MIN_SAMPLE), "counter samples");
        if (s->rc)
            break;
        c->t = nk__big_fixed((c->n ? c->n : 1) * sizeof(double));
        c->value = nk__big_fixed((c->n ? c->n : 1) * sizeof(double));
        if (!c->t || !c->value) {
            nk__rd_fail(s, NK_ENOMEM, "out of memory");
            break;
        }
        for (uint32_t k = 0; k < c->n; k++) {
            c->t[k] = nk__rd_vfx(s, k ? c->t[k - 1] : 0);
            c->value[k] = nk__rd_vfx(s, k ? c->value[k - 1] : 0);
        }
    }
}

/* Version 5: the launch regions (none before). */
static void get_regions(nk_rd *s, nk_timeline *tl)
{
    if (s->version < 5)
        return;
    uint32_t n = nk__rd_count(s, 4, "launch regions");
    if (s->rc)
        return;
    if (!(tl->regions = calloc(n ? n : 1, sizeof *tl->regions))) {
        nk__rd_fail(s, NK_ENOMEM, "out of memory");
        return;
    }
    tl->nregions = n;
    double start = 0;
    for (uint32_t i = 0; i < n && !s->rc; i++) {
        nk_region *g = &tl->regions[i];
        g->kind = nk__rd_u8(s);
        g->core = nk__rd_u8(s);
        g->start = start = nk__rd_vfx(s, start);
        g->end = nk__rd_vfx(s, g->start);
    }
}

static int get_time(nk_rd *r, nk_profile *pr)
{
    nk_rd s;
    if (nk__rd_section(r, "TIME", &s))
        return r->rc;
    nk_timeline *tl = pr->tl = calloc(1, sizeof *tl);
    if (!tl)
        return r->rc = nk__rd_fail(&s, NK_ENOMEM, "out of memory");
    nk__rd_str_into(&s, tl->target, sizeof tl->target, "target name");
    tl->total_ns = nk__rd_f64(&s);
    tl->host_in_ns = nk__rd_f64(&s);
    tl->host_out_ns = nk__rd_f64(&s);
    uint32_t ne = nk__rd_u32(&s);
    if (!s.rc && ne != NK_ENGINE_COUNT)
        nk__rd_fail(&s, NK_EFORMAT, "%u engine rows, expected %d", ne, NK_ENGINE_COUNT);
    for (int e = 0; e < NK_ENGINE_COUNT; e++)
        tl->active_ns[e] = nk__rd_f64(&s);
    if (!s.rc)
        get_events(&s, tl);
    if (!s.rc && s.version < 7)
        get_xfers(&s, tl);
    else if (!s.rc)
        get_dspans(&s, tl);
    if (!s.rc)
        get_spans(&s, tl, pr->prog->ninstr);
    if (!s.rc)
        get_counters(&s, tl);
    if (!s.rc)
        get_regions(&s, tl);
    if (nk__rd_end(&s))
        return r->rc = s.rc;
    char msg[256];
    int rc = nk__timeline_check(tl, pr->prog, &pr->arch, msg, sizeof msg);
    if (rc)
        nk__rd_fail(&s, rc, "%s", msg);
    if (!s.rc && tl->xfers) { /* an earlier version's transfers, checked: its DMA spans */
        if ((rc = nk__dma_spans_of(tl->xfers, tl->nxfers, pr->prog->ninstr, &tl->dspans, &tl->ndspans)))
            nk__rd_fail(&s, rc, "DMA transfers: %s", nk_strerror(rc));
        free(tl->xfers);
        tl->xfers = NULL;
        tl->nxfers = 0;
    }
    return r->rc = s.rc;
}

static int get_sources(nk_rd *r, nk_profile *pr)
{
    nk_rd s;
    if (nk__rd_section(r, "SRCS", &s))
        return r->rc;
    const nk_program *p = pr->prog;
    uint32_t n = nk__rd_count(&s, 1, "sources");
    if (!s.rc && n != p->nfiles)
        nk__rd_fail(&s, NK_EFORMAT, "%u sources for %u files", n, p->nfiles);
    if (!s.rc && !(pr->sources = calloc(n ? n : 1, sizeof *pr->sources)))
        nk__rd_fail(&s, NK_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < n && !s.rc; i++) {
        if (!(pr->sources[i].path = strdup(p->files[i]))) {
            nk__rd_fail(&s, NK_ENOMEM, "out of memory");
            break;
        }
        uint8_t present = nk__rd_u8(&s);
        if (!s.rc && present > 1)
            nk__rd_fail(&s, NK_EFORMAT, "source %u: presence flag %u", i, present);
        if (present == 1)
            pr->sources[i].text = nk__rd_str(&s, NK_IO_MAX_TEXT, "source text");
    }
    return r->rc = nk__rd_end(&s);
}

int nk__profile_decode_content(nk_rd *r, nk_profile **out)
{
    *out = NULL;
    nk_profile *pr = calloc(1, sizeof *pr);
    if (!pr)
        return nk__rd_fail(r, NK_ENOMEM, "out of memory");
    if (get_meta(r, pr) || get_arch(r, pr) || get_prog(r, pr) || get_time(r, pr) || get_sources(r, pr) ||
        nk__rd_end(r)) {
        nk_profile_free(pr);
        return r->rc;
    }
    *out = pr;
    return 0;
}

int nk__profile_decode(const uint8_t *data, size_t n, nk_profile **out, char *err, size_t errlen)
{
    nk_rd r;
    *out = NULL;
    int rc = nk__file_open(data, n, NK_MAGIC_PROFILE, "profile", &r, err, errlen);
    return rc ? rc : nk__profile_decode_content(&r, out);
}

int nk_profile_read(const char *path, nk_profile **out, char *err, size_t errlen)
{
    uint8_t *data = NULL;
    size_t n = 0;
    *out = NULL;
    if (!path)
        return NK_EINVAL;
    int rc = nk__file_read_all(path, &data, &n, err, errlen);
    nk_rd r;
    nk_rd_owned own;
    if (!rc)
        rc = nk__file_open(data, n, NK_MAGIC_PROFILE, "profile", &r, err, errlen);
    if (!rc) { /* read once, front to back: the pages behind go back as it decodes */
        nk__rd_own(&r, &own, data, n);
        rc = nk__profile_decode_content(&r, out);
    }
    free(data);
    return rc;
}

/* ================================================================ check */

static int tbad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int tbad(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return NK_EFORMAT;
}

/* The longest kernel a profile may describe: 10^15 ns (11.6 days). Every
 * time in a timeline lies inside the kernel, so bounding its length keeps
 * the consumers' integer picoseconds (the exports, the viewer) far inside
 * int64 and their differences from overflowing. */
#define MAX_KERNEL_NS 1e15

/* A time inside the kernel: finite, from 0 to the end (with rounding slack). */
static int in_kernel(double t, double total)
{
    return isfinite(t) && t >= 0 && t <= total + total * 1e-12 + 1e-9;
}

static int check_events(const nk_timeline *tl, const nk_program *p, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < tl->nevents; i++) {
        const nk_event *e = &tl->events[i];
        if (e->instr >= p->ninstr || e->engine >= NK_ENGINE_COUNT || e->kind >= NK_EV_KIND_COUNT ||
            e->queue >= NK_ARCH_MAX_DMA_QUEUES)
            return tbad(err, errlen, "event %u: instruction %u, engine %u, kind %u or queue %u out of range", i,
                        e->instr, e->engine, e->kind, e->queue);
        if (!in_kernel(e->start, tl->total_ns) || !in_kernel(e->end, tl->total_ns) || e->end < e->start)
            return tbad(err, errlen, "event %u: times %g..%g outside 0..%g ns", i, e->start, e->end, tl->total_ns);
        if (i && e->start < tl->events[i - 1].start)
            return tbad(err, errlen, "event %u: not sorted by start", i);
    }
    return 0;
}

/* Transfers on the DMA engines of target a, of instructions that run there. */
static int check_xfers(const nk_timeline *tl, const nk_program *p, const nk_arch *a, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < tl->nxfers; i++) {
        const nk_dma_xfer *x = &tl->xfers[i];
        if (x->instr >= p->ninstr)
            return tbad(err, errlen, "DMA transfer %u: instruction %u out of range", i, x->instr);
        const nk_instr *in = &p->instrs[x->instr];
        if (in->engine != NK_ENGINE_DMA || x->to_hbm != (nk__opnd_mem(p, &in->dst) == NK_SHARED_HBM))
            return tbad(err, errlen, "DMA transfer %u: instruction %u is a %s, direction %u", i, x->instr,
                        nk__op_name(in->op), x->to_hbm);
        if (x->queue >= NK_ARCH_MAX_DMA_QUEUES || x->dma_engine >= a->dma_engines || x->partitions < 1 ||
            x->partitions > (uint32_t)p->arch->partitions ||
            x->bytes > (uint64_t)NK_IO_MAX_HBM_BYTES)
            return tbad(err, errlen, "DMA transfer %u: queue %u, engine %u, partitions %u or bytes %llu out of range",
                        i, x->queue, x->dma_engine, x->partitions, (unsigned long long)x->bytes);
        if (!in_kernel(x->start, tl->total_ns) || !in_kernel(x->end, tl->total_ns) || x->end < x->start)
            return tbad(err, errlen, "DMA transfer %u: times %g..%g outside 0..%g ns", i, x->start, x->end,
                        tl->total_ns);
        if (i && x->start < tl->xfers[i - 1].start)
            return tbad(err, errlen, "DMA transfer %u: not sorted by start", i);
    }
    return 0;
}

/* DMA spans of instructions that run on the DMA engines of target a. */
static int check_dspans(const nk_timeline *tl, const nk_program *p, const nk_arch *a, char *err, size_t errlen)
{
    uint64_t engines = a->dma_engines >= 64 ? ~0ull : (1ull << a->dma_engines) - 1;
    for (uint32_t i = 0; i < tl->ndspans; i++) {
        const nk_dma_span *x = &tl->dspans[i];
        if (x->instr >= p->ninstr)
            return tbad(err, errlen, "DMA span %u: instruction %u out of range", i, x->instr);
        const nk_instr *in = &p->instrs[x->instr];
        if (in->engine != NK_ENGINE_DMA || x->to_hbm != (nk__opnd_mem(p, &in->dst) == NK_SHARED_HBM))
            return tbad(err, errlen, "DMA span %u: instruction %u is a %s, direction %u", i, x->instr,
                        nk__op_name(in->op), x->to_hbm);
        if (x->queue >= NK_ARCH_MAX_DMA_QUEUES || x->descriptors < 1 || !x->engines || (x->engines & ~engines) ||
            (uint32_t)__builtin_popcountll(x->engines) > x->descriptors || x->partitions < x->descriptors ||
            x->partitions / x->descriptors > (uint32_t)p->arch->partitions ||
            x->bytes > (uint64_t)NK_IO_MAX_HBM_BYTES)
            return tbad(err, errlen,
                        "DMA span %u: queue %u, %u descriptors on engines 0x%llx, partitions %u or bytes %llu "
                        "out of range",
                        i, x->queue, x->descriptors, (unsigned long long)x->engines, x->partitions,
                        (unsigned long long)x->bytes);
        if (!in_kernel(x->start, tl->total_ns) || !in_kernel(x->end, tl->total_ns) || x->end < x->start)
            return tbad(err, errlen, "DMA span %u: times %g..%g outside 0..%g ns", i, x->start, x->end,
                        tl->total_ns);
        if (i && x->start < tl->dspans[i - 1].start)
            return tbad(err, errlen, "DMA span %u: not sorted by start", i);
    }
    return 0;
}

/* Launch regions of the program's cores, by start, inside the kernel. */
static int check_regions(const nk_timeline *tl, const nk_program *p, char *err, size_t errlen)
{
    uint32_t ncores = p->ncores ? p->ncores : 1;
    for (uint32_t i = 0; i < tl->nregions; i++) {
        const nk_region *g = &tl->regions[i];
        if (g->kind >= NK_REGION_KIND_COUNT || g->core >= ncores)
            return tbad(err, errlen, "launch region %u: kind %u or core %u out of range", i, g->kind, g->core);
        if (!in_kernel(g->start, tl->total_ns) || !in_kernel(g->end, tl->total_ns) || g->end < g->start)
            return tbad(err, errlen, "launch region %u: times %g..%g outside 0..%g ns", i, g->start, g->end,
                        tl->total_ns);
        if (i && g->start < tl->regions[i - 1].start)
            return tbad(err, errlen, "launch region %u: not sorted by start", i);
    }
    return 0;
}

static int check_counters(const nk_timeline *tl, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < tl->ncounters; i++) {
        const nk_counter *c = &tl->counters[i];
        if (!c->name[0] || !memchr(c->name, 0, sizeof c->name) || !memchr(c->unit, 0, sizeof c->unit))
            return tbad(err, errlen, "counter %u: empty or unterminated name or unit", i);
        for (uint32_t k = 0; k < c->n; k++)
            if (!in_kernel(c->t[k], tl->total_ns) || !isfinite(c->value[k]) || (k && c->t[k] < c->t[k - 1]))
                return tbad(err, errlen, "counter %s: sample %u at %g ns outside 0..%g ns, not finite or out of "
                            "time order", c->name, k, c->t[k], tl->total_ns);
    }
    return 0;
}

int nk__timeline_check(const nk_timeline *tl, const nk_program *p, const nk_arch *a, char *err, size_t errlen)
{
    if (!tl || !p || !a)
        return tbad(err, errlen, "no timeline, program or target");
    double T = tl->total_ns;
    if (!isfinite(T) || T < 0 || !isfinite(tl->host_in_ns) || tl->host_in_ns < 0 || !isfinite(tl->host_out_ns) ||
        tl->host_out_ns < 0)
        return tbad(err, errlen, "total %g ns or host copies %g/%g ns not finite and non-negative", T, tl->host_in_ns,
                    tl->host_out_ns);
    if (T > MAX_KERNEL_NS || tl->host_in_ns > MAX_KERNEL_NS || tl->host_out_ns > MAX_KERNEL_NS)
        return tbad(err, errlen, "total %g ns or host copies %g/%g ns longer than %g ns", T, tl->host_in_ns,
                    tl->host_out_ns, MAX_KERNEL_NS);
    if (!memchr(tl->target, 0, sizeof tl->target))
        return tbad(err, errlen, "target name not terminated");
    for (int e = 0; e < NK_ENGINE_COUNT; e++)
        if (!in_kernel(tl->active_ns[e], T))
            return tbad(err, errlen, "active time %g ns of engine %s outside 0..%g ns", tl->active_ns[e],
                        nk_engine_name((nk_engine)e), T);
    int rc = check_events(tl, p, err, errlen);
    if (!rc)
        rc = check_xfers(tl, p, a, err, errlen);
    if (!rc)
        rc = check_dspans(tl, p, a, err, errlen);
    for (uint32_t i = 0; !rc && i < p->ninstr; i++)
        if (!in_kernel(tl->instr_start[i], T) || !in_kernel(tl->instr_end[i], T) ||
            tl->instr_end[i] < tl->instr_start[i])
            rc = tbad(err, errlen, "instruction %u: span %g..%g outside 0..%g ns", i, tl->instr_start[i],
                      tl->instr_end[i], T);
    if (!rc)
        rc = check_counters(tl, err, errlen);
    if (!rc)
        rc = check_regions(tl, p, err, errlen);
    return rc;
}
