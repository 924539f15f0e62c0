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
    uint32_t *iter;         /* per buffer: iteration of its loop at allocation (grows with spills) */
    uint32_t fail_id, fail_s, fail_nact; /* the tile that did not fit, at instruction fail_s */
    uint32_t *first, *last; /* per buffer: first and last instruction touching it */
    uint32_t *end;          /* per buffer: last, extended over its loop's buffers */
    span *order;            /* on-chip buffers with an interval, by s */
    span *tmp;              /* the sort's room */
    uint32_t n;
    uint32_t *active;       /* buffer ids, ascending addr */
    size_t cap;             /* buffers the per-buffer arrays above have room for */
} ascan;

static void touch(ascan *a, const nk_opnd *t, uint32_t i)
{
    if (!t->buf || t->buf >= a->p->nbufs || nk__opnd_mem(a->p, t) == NK_SHARED_HBM)
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

/* By first instruction, then buffer (a total order). Buffers are made
 * where they are first used, so the spans come nearly sorted: a merge sort
 * that passes over sorted runs (qsort's was 3% of the 8x matmul's compile). */
static inline int span_less(const span *a, const span *b) { return a->s < b->s || (a->s == b->s && a->id < b->id); }
NK__DEFINE_SORT(sort_spans, span, span_less)

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
                uint32_t it = a->iter[b];
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
    sort_spans(a->order, a->n, a->tmp);
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
                     (long long)cap, bufs_max > 1 ? " with the buffers of the loops involved lowered to 1" : "");
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
            a->fail_id = sp->id;
            a->fail_s = sp->s;
            a->fail_nact = nact;
            return 1;
        }
        bi->addr = addr;
        /* first fit: apart from the tiles live beside it in address order */
        NK_ASSERT(at == 0 || p->bufs[a->active[at - 1]].addr + p->bufs[a->active[at - 1]].bytes <= addr);
        NK_ASSERT(at == nact || addr + bi->bytes <= p->bufs[a->active[at]].addr);
        memmove(a->active + at + 1, a->active + at, (size_t)(nact - at) * sizeof *a->active);
        a->active[at] = sp->id;
        nact++;
        if (addr + bi->bytes > *peak)
            *peak = addr + bi->bytes;
    }
    return 0;
}

/* First and last use of every on-chip buffer. */
static void uses(ascan *a)
{
    nk_program *p = a->p;
    memset(a->first, 0xff, (size_t)p->nbufs * sizeof *a->first);
    memset(a->last, 0, (size_t)p->nbufs * sizeof *a->last);
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        touch(a, &in->dst, i);
        touch(a, nk__dst2(p, in), i);
        for (int k = 0; k < 3; k++)
            touch(a, nk__src(p, in, k), i);
    }
}

static int uses_buf(const nk_program *p, const nk_instr *in, uint32_t b)
{
    return in->dst.buf == b || nk__dst2(p, in)->buf == b || in->src[0].buf == b || in->src[1].buf == b ||
           nk__src(p, in, 2)->buf == b;
}

/* Array *arr of old elements of size bytes, moved into a fixed block of
 * cap (the scan's arrays are written whole: fixed blocks are on huge pages
 * where resizable ones of a few megabytes, not whole huge pages, would be
 * mostly on small pages). */
static int regrow(void **arr, size_t old, size_t cap, size_t size)
{
    void *q = nk__big_fixed(cap * size);
    if (!q)
        return NK_ENOMEM;
    memcpy(q, *arr, old * size);
    free(*arr);
    *arr = q;
    return 0;
}

/* Room for more buffers in the program and in the scan's arrays (which
 * grow by half again when full: a spill adds two buffers at a time). */
static int grow_bufs(ascan *a, uint32_t more)
{
    nk_program *p = a->p;
    size_t n = (size_t)p->nbufs + more;
    nk_bufinfo *b = realloc(p->bufs, n * sizeof *b);
    if (!b)
        return NK_ENOMEM;
    p->bufs = b;
    if (n <= a->cap)
        return 0;
    size_t cap = a->cap + a->cap / 2 > n ? a->cap + a->cap / 2 : n;
    void **arrs[5] = {(void **)&a->first, (void **)&a->last, (void **)&a->end, (void **)&a->active,
                      (void **)&a->iter};
    for (int k = 0; k < 5; k++)
        if (regrow(arrs[k], p->nbufs, cap, sizeof(uint32_t)))
            return NK_ENOMEM;
    if (regrow((void **)&a->order, p->nbufs, cap, sizeof(span)) || regrow((void **)&a->tmp, 0, cap, sizeof(span)))
        return NK_ENOMEM;
    a->cap = cap;
    return 0;
}

/* A whole-buffer view: tiles partition axis first, HBM row-major. */
static nk_tensor whole(const nk_program *p, uint32_t id)
{
    const nk_bufinfo *b = &p->bufs[id];
    nk_tensor t;
    memset(&t, 0, sizeof t);
    t.buf = id;
    t.dtype = b->dtype;
    t.mem = b->mem;
    t.ndim = b->ndim;
    int64_t s = 1;
    for (int i = b->ndim - 1; i >= 0; i--) {
        t.shape[i] = (int32_t)b->shape[i];
        int part = b->mem != NK_SHARED_HBM && i == 0;
        t.stride[i] = part ? 1 : s;
        if (!part)
            s *= b->shape[i];
    }
    return t;
}

/* Inserts in at index q; iteration starts and loop ends at q move with the
 * instructions after it unless `before` attaches it to the instruction at q. */
static int insert_instr(ascan *a, uint32_t q, const nk_instr *in, int before)
{
    nk_program *p = a->p;
    nk_instr *v = realloc(p->instrs, ((size_t)p->ninstr + 1) * sizeof *v);
    if (!v)
        return NK_ENOMEM;
    p->instrs = v;
    memmove(v + q + 1, v + q, (size_t)(p->ninstr - q) * sizeof *v);
    v[q] = *in;
    p->ninstr++;
    for (uint32_t l = 0; l < p->nloops; l++) {
        nk_loopalloc *la = &a->ai->loops[l];
        for (uint32_t k = 0; k < la->nits; k++)
            if (la->its[k].start > q || (!before && la->its[k].start == q))
                la->its[k].start++;
        if (la->end > q || (!before && la->end == q))
            la->end++;
    }
    return 0;
}

/* Spills one SBUF tile live at the failure to HBM: the one whose next use
 * is farthest (Belady's choice), stored after its last use before the
 * failing instruction and reloaded into a new tile before its next use. 0
 * when one was spilled, 1 when no tile can be. */
static int spill_one(ascan *a)
{
    nk_program *p = a->p;
    uint32_t s = a->fail_s, victim = 0, vnext = 0, vprev = 0;
    for (uint32_t k = 0; k < a->fail_nact; k++) {
        uint32_t id = a->active[k];
        const nk_bufinfo *b = &p->bufs[id];
        if (b->mem != NK_SBUF || id == a->fail_id || uses_buf(p, &p->instrs[s], id) || a->first[id] >= s)
            continue;
        uint32_t prev = UINT32_MAX, next = UINT32_MAX;
        for (uint32_t i = s; i-- > a->first[id];)
            if (uses_buf(p, &p->instrs[i], id)) {
                prev = i;
                break;
            }
        for (uint32_t i = s + 1; i <= a->last[id] && i < p->ninstr; i++)
            if (uses_buf(p, &p->instrs[i], id)) {
                next = i;
                break;
            }
        if (prev == UINT32_MAX || next == UINT32_MAX)
            continue;
        if (!victim || next > vnext || (next == vnext && b->bytes > p->bufs[victim].bytes)) {
            victim = id;
            vnext = next;
            vprev = prev;
        }
    }
    if (!victim || grow_bufs(a, 2))
        return 1;
    /* the HBM copy and the reloaded tile */
    uint32_t h = p->nbufs++, v2 = p->nbufs++;
    nk_bufinfo *vb = &p->bufs[victim];
    p->bufs[v2] = *vb;
    p->bufs[v2].addr = 0;
    nk_bufinfo *hb = &p->bufs[h];
    memset(hb, 0, sizeof *hb);
    hb->mem = NK_SHARED_HBM;
    hb->dtype = vb->dtype;
    hb->ndim = vb->ndim;
    memcpy(hb->shape, vb->shape, sizeof hb->shape);
    hb->role = NK_ROLE_SCRATCH;
    hb->index = -1;
    int64_t numel = 1;
    for (int d = 0; d < vb->ndim; d++)
        numel *= vb->shape[d];
    hb->bytes = numel * nk_dtype_size((nk_dtype)vb->dtype);
    hb->loc = vb->loc;
    hb->nslots = 1;
    hb->spill = 1;
    p->bufs[v2].spill = 2;
    a->iter[h] = 0;
    a->iter[v2] = a->iter[victim];
    nk_instr st, ld;
    const nk_instr *after = &p->instrs[vprev], *before = &p->instrs[vnext];
    memset(&st, 0, sizeof st);
    st.op = NK_OP_STORE;
    st.engine = NK_ENGINE_DMA;
    st.flags = NK_IF_SPILL;
    st.loc = after->loc;
    st.loop = after->loop;
    st.iter = after->iter;
    st.inst = after->inst; /* SPMD: the victim's instance; sequences: its kernel */
    st.seg = after->seg;
    /* the spill's operands go through the program's layout table */
    nk_tensor wh = whole(p, h), wv = whole(p, victim), w2 = whole(p, v2);
    if (nk__opnd_set(p, &st.dst, &wh) || nk__opnd_set(p, &st.src[0], &wv))
        return 1;
    st.nsrc = 1;
    ld = st;
    ld.op = NK_OP_LOAD;
    ld.loc = before->loc;
    ld.loop = before->loop;
    ld.iter = before->iter;
    ld.inst = before->inst;
    ld.seg = before->seg;
    if (nk__opnd_set(p, &ld.dst, &w2) || nk__opnd_set(p, &ld.src[0], &wh))
        return 1;
    if (insert_instr(a, vprev + 1, &st, 0) || insert_instr(a, vnext + 1, &ld, 1))
        return 1;
    /* later uses read the reloaded tile */
    for (uint32_t i = vnext + 2; i < p->ninstr; i++) {
        nk_instr *in = &p->instrs[i];
        nk_opnd *ts[5];
        nk__operands_w(p, in, ts);
        for (int k = 0; k < 5; k++)
            if (ts[k] && ts[k]->buf == victim)
                ts[k]->buf = v2;
    }
    return 0;
}

/* Can every instruction have its SBUF tiles resident at once? Spilling
 * cannot help one that cannot: 1 with err naming the first such, 0 if all
 * can. */
static int infeasible(ascan *a, int64_t cap, char *err, size_t errlen)
{
    nk_program *p = a->p;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        const nk_opnd *ts[5];
        nk__operands(p, in, ts);
        uint32_t ids[5];
        int n = 0;
        int64_t need = 0;
        for (int k = 0; k < 5; k++) {
            uint32_t b = ts[k]->buf;
            if (!b || b >= p->nbufs || p->bufs[b].mem != NK_SBUF)
                continue;
            int dup = 0;
            for (int j = 0; j < n; j++)
                dup |= ids[j] == b;
            if (!dup) {
                ids[n++] = b;
                need += p->bufs[b].bytes;
            }
        }
        if (need <= cap)
            continue;
        const nk_locinfo *l = &p->locs[in->loc];
        int w = snprintf(err, errlen, "%s:%d: SBUF capacity exceeded: this %s needs its tiles resident at once, "
                         "%lld bytes per partition, and %lld are available; its tiles:", p->files[l->file],
                         l->line, nk__op_name(in->op), (long long)need, (long long)cap);
        for (int j = 0; j < n && w > 0 && (size_t)w < errlen; j++) {
            const nk_bufinfo *b = &p->bufs[ids[j]];
            const nk_locinfo *bl = &p->locs[b->loc];
            int32_t s32[NK_MAXDIM];
            for (int d = 0; d < b->ndim; d++)
                s32[d] = (int32_t)b->shape[d];
            char shape[64];
            nk__format_shape(shape, sizeof shape, s32, b->ndim);
            w += snprintf(err + w, errlen - (size_t)w, "%s %s %s at %s:%d (%lld bytes)", j ? ";" : "", shape,
                          nk_dtype_name((nk_dtype)b->dtype), p->files[bl->file], bl->line, (long long)b->bytes);
        }
        return 1;
    }
    return 0;
}

/* Lowers by one the buffer count of the affine loop (every instance of the
 * loop at that source line, so the choice is the kernel's, program-wide)
 * whose multi-buffered tiles hold the most bytes among those live at the
 * overflow; loops whose count the kernel chose keep it. 1 when lowered, 0
 * when no live tile's loop has a buffer to give. */
static int lower_buffers(ascan *a)
{
    nk_program *p = a->p;
    uint32_t best_loc = UINT32_MAX;
    int64_t best = 0;
    for (uint32_t k = 0; k <= a->fail_nact; k++) {
        uint32_t id = k < a->fail_nact ? a->active[k] : a->fail_id;
        const nk_bufinfo *b = &p->bufs[id];
        if (!b->loop || b->loop > p->nloops)
            continue;
        const nk_loopinfo *li = &p->loops[b->loop - 1];
        if (li->kind != NK_LOOP_AFFINE || li->bufs < 2 || a->ai->loops[b->loop - 1].explicit_bufs)
            continue;
        /* bytes live at the overflow that this loop's buffering holds */
        int64_t held = 0;
        for (uint32_t j = 0; j <= a->fail_nact; j++) {
            uint32_t o = j < a->fail_nact ? a->active[j] : a->fail_id;
            const nk_bufinfo *ob = &p->bufs[o];
            if (ob->loop && ob->loop <= p->nloops && p->loops[ob->loop - 1].loc == li->loc)
                held += ob->bytes;
        }
        if (held > best) {
            best = held;
            best_loc = li->loc;
        }
    }
    if (best_loc == UINT32_MAX)
        return 0;
    for (uint32_t l = 0; l < p->nloops; l++)
        if (p->loops[l].loc == best_loc && p->loops[l].kind == NK_LOOP_AFFINE && p->loops[l].bufs > 1 &&
            !a->ai->loops[l].explicit_bufs)
            p->loops[l].bufs--;
    return 1;
}

int nk__allocate(nk_program *p, const nk_alloc_info *ai, char *err, size_t errlen)
{
    int rc = NK_ENOMEM;
    ascan a = {.p = p, .ai = ai};
    size_t nb = p->nbufs ? p->nbufs : 1;
    a.cap = nb;
    a.first = nk__big_fixed(nb * sizeof *a.first);
    a.last = nk__big_fixed(nb * sizeof *a.last); /* (both set by uses) */
    a.end = nk__big_fixed(nb * sizeof *a.end);
    a.order = nk__big_fixed(nb * sizeof *a.order);
    a.tmp = nk__big_fixed(nb * sizeof *a.tmp);
    a.active = nk__big_fixed(nb * sizeof *a.active);
    a.iter = nk__big_fixed(nb * sizeof *a.iter);
    uint8_t *orig = malloc((p->nloops ? p->nloops : 1) * sizeof *orig);
    if (!a.first || !a.last || !a.end || !a.order || !a.tmp || !a.active || !a.iter || !orig)
        goto out;
    memcpy(a.iter, ai->buf_iter, (size_t)p->nbufs * sizeof *a.iter);
    uint32_t n0 = p->ninstr;
    uses(&a);
    int bufs_max = 1;
    for (uint32_t l = 0; l < p->nloops; l++) {
        orig[l] = p->loops[l].bufs;
        if (p->loops[l].kind == NK_LOOP_AFFINE && !ai->loops[l].explicit_bufs && orig[l] > bufs_max)
            bufs_max = orig[l];
    }
    int64_t cap[3] = {0, p->arch->sbuf_partition_bytes - p->arch->sbuf_reserved_bytes,
                      p->arch->psum_partition_bytes};
    for (int spills = 0, tries = 0;; tries++) {
        intervals(&a);
        int64_t peak_s = 0, peak_p = 0;
        int fail = scan_mem(&a, NK_SBUF, cap[NK_SBUF], bufs_max, &peak_s, err, errlen);
        int sbuf_fail = fail;
        if (!fail)
            fail = scan_mem(&a, NK_PSUM, cap[NK_PSUM], bufs_max, &peak_p, err, errlen);
        if (!fail) {
            p->sbuf_peak = peak_s;
            p->psum_peak = peak_p;
            rc = 0;
            goto out;
        }
        /* first, fewer buffers for the loop whose tiles hold the most of what
         * is live where the program overflowed */
        if (tries < 4096 && lower_buffers(&a))
            continue;
        /* then, with SBUF still short: spill, as neuronx-cc does (each spill
         * adds two instructions; the bound keeps a pathological program's
         * compile finite) */
        if (!sbuf_fail || (uint64_t)spills > 2 * (uint64_t)n0 + 64)
            break;
        if (!spills && infeasible(&a, cap[NK_SBUF], err, errlen))
            break;
        if (spill_one(&a))
            break;
        spills++;
        uses(&a);
    }
    rc = NK_ECAPACITY;
out:
    free(a.first);
    free(a.last);
    free(a.end);
    free(a.order);
    free(a.tmp);
    free(a.active);
    free(a.iter);
    free(orig);
    return rc;
}
