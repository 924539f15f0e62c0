/*
 * alloc.c - SBUF/PSUM addresses by liveness (see alloc.h).
 *
 * A linear scan over the tiles in the order of their first use: tiles whose
 * interval has ended leave the active set, and the new tile takes the lowest
 * address where it overlaps no active tile (first fit). Every tile spans all
 * partitions of its memory at its byte range. The active set is kept sorted
 * by address; it holds the tiles live at one moment, which stays small.
 */
#include "sched/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
    uint32_t id;
    uint32_t s, e; /* instruction interval [s, e] */
} span;

typedef struct ascan {
    nk_program *p;
    const nk_alloc_info *ai;
    uint32_t *first, *last; /* per buffer: first and last instruction touching it */
    uint32_t *end;          /* per buffer: last, extended over its loop's buffers */
    span *order;            /* on-chip buffers with an interval, by s */
    uint32_t n;
    uint32_t *active;       /* buffer ids, ascending addr */
} ascan;

static void touch(ascan *a, const nk_tensor *t, uint32_t i)
{
    if (!t->buf || t->buf >= a->p->nbufs || t->mem == NK_SHARED_HBM)
        return;
    if (a->first[t->buf] == UINT32_MAX)
        a->first[t->buf] = i;
    a->last[t->buf] = i;
}

/* The instruction index where iteration j of loop instance l begins: the
 * start of the first recorded iteration >= j, or the loop's end. */
static uint32_t iter_start(const nk_loopalloc *l, uint64_t j)
{
    uint32_t lo = 0, hi = l->nits;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (l->its[mid].iter < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < l->nits ? l->its[lo].start : l->end;
}

static int cmp_span(const void *x, const void *y)
{
    const span *a = x, *b = y;
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* The interval of every touched tile, extended over its loop's buffers. */
static void intervals(ascan *a)
{
    nk_program *p = a->p;
    a->n = 0;
    for (uint32_t b = 1; b < p->nbufs; b++) {
        nk_bufinfo *bi = &p->bufs[b];
        if (bi->mem == NK_SHARED_HBM)
            continue;
        bi->slot = 0;
        bi->nslots = 1;
        bi->addr = 0;
        if (a->first[b] == UINT32_MAX || bi->bytes == 0)
            continue;
        span sp = {b, a->first[b], a->last[b]};
        if (bi->loop && bi->loop <= p->nloops) {
            const nk_loopinfo *li = &p->loops[bi->loop - 1];
            if (li->kind == NK_LOOP_AFFINE && li->bufs > 1) {
                uint32_t it = a->ai->buf_iter[b];
                uint32_t next = iter_start(&a->ai->loops[bi->loop - 1], (uint64_t)it + li->bufs);
                if (next > 0 && next - 1 > sp.e)
                    sp.e = next - 1;
                bi->slot = (uint16_t)(it % li->bufs);
                bi->nslots = li->bufs;
            }
        }
        a->end[b] = sp.e;
        a->order[a->n++] = sp;
    }
    qsort(a->order, a->n, sizeof *a->order, cmp_span);
}

/* Tiles live at the failure, grouped by allocation site, largest first. */
typedef struct site {
    uint32_t loc, count, id;
    int64_t bytes;
} site;

static int cmp_site(const void *x, const void *y)
{
    const site *a = x, *b = y;
    return (a->bytes < b->bytes) - (a->bytes > b->bytes);
}

static void describe_failure(ascan *a, int mem, uint32_t nact, const span *sp, int64_t cap, int bufs_max,
                             char *err, size_t errlen)
{
    nk_program *p = a->p;
    const nk_bufinfo *nb = &p->bufs[sp->id];
    int64_t live = nb->bytes;
    site *sites = calloc((size_t)nact + 1, sizeof *sites);
    uint32_t ns = 0;
    for (uint32_t k = 0; k <= nact; k++) {
        uint32_t id = k < nact ? a->active[k] : sp->id;
        const nk_bufinfo *b = &p->bufs[id];
        if (k < nact)
            live += b->bytes;
        if (!sites)
            continue;
        uint32_t j = 0;
        while (j < ns && sites[j].loc != b->loc)
            j++;
        if (j == ns)
            sites[ns++] = (site){b->loc, 0, id, 0};
        sites[j].count++;
        sites[j].bytes += b->bytes;
    }
    const nk_locinfo *pl = &p->locs[p->instrs[sp->s].loc];
    int n = snprintf(err, errlen,
                     "%s:%d: %s capacity exceeded: %lld bytes per partition would be live here, %lld are available%s; "
                     "the largest live tiles:",
                     p->files[pl->file], pl->line, mem == NK_SBUF ? "SBUF" : "PSUM", (long long)live,
                     (long long)cap, bufs_max > 1 ? " even with 1 buffer per tile in affine loops" : "");
    if (sites) {
        qsort(sites, ns, sizeof *sites, cmp_site);
        for (uint32_t j = 0; j < ns && j < 3 && n > 0 && (size_t)n < errlen; j++) {
            const nk_bufinfo *b = &p->bufs[sites[j].id];
            const nk_locinfo *l = &p->locs[sites[j].loc];
            int32_t s32[NK_MAXDIM];
            for (int d = 0; d < b->ndim; d++)
                s32[d] = (int32_t)b->shape[d];
            char shape[64];
            nk__format_shape(shape, sizeof shape, s32, b->ndim);
            n += snprintf(err + n, errlen - (size_t)n, "%s %u x %s %s at %s:%d (%lld bytes)", j ? ";" : "",
                          sites[j].count, shape, nk_dtype_name((nk_dtype)b->dtype), p->files[l->file], l->line,
                          (long long)sites[j].bytes);
        }
    }
    free(sites);
}

/* One scan of memory mem; 1 when a tile did not fit (err filled). */
static int scan_mem(ascan *a, int mem, int64_t cap, int bufs_max, int64_t *peak, char *err, size_t errlen)
{
    nk_program *p = a->p;
    uint32_t nact = 0;
    *peak = 0;
    for (uint32_t k = 0; k < a->n; k++) {
        const span *sp = &a->order[k];
        nk_bufinfo *bi = &p->bufs[sp->id];
        if (bi->mem != mem)
            continue;
        uint32_t w = 0;
        for (uint32_t j = 0; j < nact; j++) /* expire, keeping address order */
            if (a->end[a->active[j]] >= sp->s)
                a->active[w++] = a->active[j];
        nact = w;
        int64_t addr = 0;
        uint32_t at = 0;
        for (; at < nact; at++) {
            const nk_bufinfo *o = &p->bufs[a->active[at]];
            if (addr + bi->bytes <= o->addr)
                break;
            if (o->addr + o->bytes > addr)
                addr = o->addr + o->bytes;
        }
        if (addr + bi->bytes > cap) {
            describe_failure(a, mem, nact, sp, cap, bufs_max, err, errlen);
            return 1;
        }
        bi->addr = addr;
        memmove(a->active + at + 1, a->active + at, (size_t)(nact - at) * sizeof *a->active);
        a->active[at] = sp->id;
        nact++;
        if (addr + bi->bytes > *peak)
            *peak = addr + bi->bytes;
    }
    return 0;
}

int nk__allocate(nk_program *p, const nk_alloc_info *ai, char *err, size_t errlen)
{
    int rc = NK_ENOMEM;
    ascan a = {p, ai, NULL, NULL, NULL, NULL, 0, NULL};
    size_t nb = p->nbufs ? p->nbufs : 1;
    a.first = malloc(nb * sizeof *a.first);
    a.last = calloc(nb, sizeof *a.last);
    a.end = malloc(nb * sizeof *a.end);
    a.order = malloc(nb * sizeof *a.order);
    a.active = malloc(nb * sizeof *a.active);
    uint8_t *orig = malloc((p->nloops ? p->nloops : 1) * sizeof *orig);
    if (!a.first || !a.last || !a.end || !a.order || !a.active || !orig)
        goto out;
    memset(a.first, 0xff, nb * sizeof *a.first);
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        touch(&a, &in->dst, i);
        touch(&a, &in->dst2, i);
        for (int k = 0; k < 3; k++)
            touch(&a, &in->src[k], i);
    }
    int bufs_max = 1;
    for (uint32_t l = 0; l < p->nloops; l++) {
        orig[l] = p->loops[l].bufs;
        if (p->loops[l].kind == NK_LOOP_AFFINE && !ai->loops[l].explicit_bufs && orig[l] > bufs_max)
            bufs_max = orig[l];
    }
    int64_t cap[3] = {0, p->arch->sbuf_partition_bytes - p->arch->sbuf_reserved_bytes,
                      p->arch->psum_partition_bytes};
    for (int bufs = bufs_max; bufs >= 1; bufs--) {
        for (uint32_t l = 0; l < p->nloops; l++)
            if (p->loops[l].kind == NK_LOOP_AFFINE && !ai->loops[l].explicit_bufs)
                p->loops[l].bufs = (uint8_t)(orig[l] < bufs ? orig[l] : bufs);
        intervals(&a);
        int64_t peak_s = 0, peak_p = 0;
        int fail = scan_mem(&a, NK_SBUF, cap[NK_SBUF], bufs_max, &peak_s, err, errlen) ||
                   scan_mem(&a, NK_PSUM, cap[NK_PSUM], bufs_max, &peak_p, err, errlen);
        if (!fail) {
            p->sbuf_peak = peak_s;
            p->psum_peak = peak_p;
            rc = 0;
            goto out;
        }
    }
    rc = NK_ECAPACITY;
out:
    free(a.first);
    free(a.last);
    free(a.end);
    free(a.order);
    free(a.active);
    free(orig);
    return rc;
}
