/*
 * sched.c - dependencies and DMA queues of a traced program.
 *
 * Dependencies come from memory-range overlap, as the compiler derives its
 * semaphores: read-after-write, write-after-read and write-after-write on HBM
 * tensors and on SBUF/PSUM (partition range x byte range). Each memory keeps a
 * list of the accesses that still matter; a write removes the accesses it
 * covers (anything later that overlaps them also overlaps the write, which
 * already waits for them), so lists stay as short as the set of live regions.
 * HBM tensors that nothing writes (kernel inputs, usually) are not tracked.
 */
#include "nkint.h"
#include "sched/progress.h"
#include "timing/timing.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef nk__region region;

typedef struct entry {
    region r;
    uint32_t instr;
    uint32_t unit; /* (core, compute engine): accesses complete in order per unit; NO_UNIT for a DMA */
    uint8_t write;
} entry;

/* A DMA's unit: none. A queue's DMAs do not complete in order: each spreads
 * its descriptors over the engines from its own first one, and an engine
 * serves a queue's next DMA that has a descriptor on it, so a later DMA on
 * other engines (a small one, or one starting where the last left off) can
 * end first. A DMA's read is therefore never dropped for a later one's. */
#define NO_UNIT UINT32_MAX

typedef struct alist {
    entry *e;
    uint32_t n, cap;
} alist;

/* Dependencies of the program in some order: position k waits for
 * positions deps[dep_off[k] .. + ndep[k]) and uses DMA queue queue[k]. */
typedef struct graph {
    uint32_t *dep_off, *ndep, *deps;
    uint32_t ndeps;
    uint16_t *queue;
} graph;

static void graph_free(graph *g)
{
    free(g->dep_off);
    free(g->ndep);
    free(g->deps);
    free(g->queue);
    memset(g, 0, sizeof *g);
}

/* Accesses are searched by address: the accesses of a key fall into
 * buckets, each access in every bucket it touches, or, spanning more than
 * nk__sched_bucket_span of them (16), in the key's list itself (then
 * searched with every access). An access meets only those that share a
 * bucket with it, or are wide; a write finds every access it covers in its
 * own buckets (or among the wide ones). On chip (SBUF, PSUM) a bucket is
 * 2^nk__sched_bucket_shift of a partition's bytes (1 KiB); in an HBM
 * tensor, 2^nk__sched_hbm_row_shift of its rows (16; more for a tensor of
 * more than HBM_BUCKETS_MAX such buckets): a strided tile of a
 * large tensor spans much of its bytes but few of its rows, and a matmul's
 * output, thousands of tiles side by side, is no longer one list that each
 * store searches whole. */
uint32_t nk__sched_bucket_shift = 10, nk__sched_bucket_span = 16, nk__sched_hbm_row_shift = 4;

typedef struct bkey {
    alist wide;     /* the key's accesses that span more than nk__sched_bucket_span buckets */
    alist *b;       /* buckets 0 .. nb - 1 */
    uint32_t nb;
    uint32_t shift; /* HBM: 2^shift rows a bucket (HBM_BUCKETS_MAX at most over the tensor) */
} bkey;

/* An HBM tensor's rows go into at most this many buckets (a tall tensor's
 * into buckets of more rows than nk__sched_hbm_row_shift says): the bucket
 * array grows with the highest row touched, whatever the accesses. */
#define HBM_BUCKETS_MAX 4096

typedef struct sched {
    const nk_program *p;
    bkey bk[NK_REGION_KEY_HBM0]; /* on-chip keys */
    bkey *hbk;      /* HBM tensor p->hbm_list[i]: its key hbk[i] */
    alist stray;    /* the accesses of an HBM key not in p->hbm_list (not expected) */
    uint8_t *hbm_written;
    uint32_t *deps;
    uint32_t ndeps, cap_deps;
    uint32_t *cur; /* deps of the current instruction */
    int ncur, capcur;
    int oom;
    int conservative; /* no same-unit shortcut: the graph holds for any order */
    const struct btile *bt; /* per buffer: what an on-chip region needs of it */
} sched;

/* What a tile's region needs of its buffer, 16 bytes of the 72 of its
 * record: the records are read once per buffer, not once per access (a
 * large program's tiles are tens of megabytes of records: the 8x matmul's
 * conservative graph took 93 ms with the table, 111 ms without). Only for
 * programs of nk__sched_table_min buffers or more: a smaller table is on
 * small pages, whose first writes (a fault per 4 KiB, 11 us on this
 * project's machines) cost more than the cache misses it saves, 3-4 ms a
 * derivation at 95,668 buffers. A variable for the tests, which take both
 * ways. */
typedef struct btile {
    int64_t addr;
    uint32_t key; /* nk__onchip_key(0, core) */
} btile;
uint32_t nk__sched_table_min = (2u << 20) / sizeof(btile); /* a huge page of table */

/* nk__region_of, with a tile's buffer read from s->bt. */
static inline region region_of(const sched *s, const nk_opnd *o)
{
    const nk_layout *t = nk__lay(s->p, o);
    if (t->mem == NK_SHARED_HBM || !s->bt)
        return nk__region_of(s->p, o);
    int64_t lo = o->off, hi = o->off, es = nk_dtype_size(t->dtype);
    for (int i = 1; i < t->ndim; i++) /* as nk__region_at */
        if (t->shape[i] > 0)
            hi += (int64_t)(t->shape[i] - 1) * t->stride[i];
    const btile *b = &s->bt[o->buf];
    region r;
    r.key = b->key + (t->mem == NK_PSUM);
    r.p0 = o->part0;
    r.p1 = o->part0 + t->shape[0];
    r.b0 = b->addr + lo * es;
    r.b1 = b->addr + (hi + 1) * es;
    return r;
}
static int covers(const region *a, const region *b)
{
    /* (the key too: the stray list holds several) */
    return a->key == b->key && a->p0 <= b->p0 && a->p1 >= b->p1 && a->b0 <= b->b0 && a->b1 >= b->b1;
}

static void add_dep(sched *s, uint32_t j)
{
    for (int i = 0; i < s->ncur; i++)
        if (s->cur[i] == j)
            return;
    if (s->ncur == s->capcur) {
        int cap = s->capcur ? s->capcur * 2 : 64;
        uint32_t *c = realloc(s->cur, (size_t)cap * sizeof *c);
        if (!c) {
            s->oom = 1;
            return;
        }
        s->cur = c;
        s->capcur = cap;
    }
    s->cur[s->ncur++] = j;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int tracked(const sched *s, const region *r) { return r->key < NK_REGION_KEY_HBM0 || s->hbm_written[r->key - NK_REGION_KEY_HBM0]; }

static void find_in(sched *s, const alist *l, const region *r, int write)
{
    for (uint32_t i = 0; i < l->n; i++)
        if ((write || l->e[i].write) && nk__regions_overlap(&l->e[i].r, r))
            add_dep(s, l->e[i].instr);
}

/* The buckets of HBM tensor r's key: NULL when it has none (then its
 * accesses are in the stray list, which every such key shares). */
static bkey *hbm_keys_of(sched *s, const region *r)
{
    uint32_t b = r->key - NK_REGION_KEY_HBM0, lo = 0, hi = s->p->nhbm; /* hbm_list is ascending */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->p->hbm_list[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return s->hbk && lo < s->p->nhbm && s->p->hbm_list[lo] == b ? &s->hbk[lo] : NULL;
}

/* Buckets [*k0, *k1] of 2^shift addresses each for addresses [a0, a1)
 * (a1 > a0); 1 when that is wide (and then in the key's list). */
static inline int buckets_in(int64_t a0, int64_t a1, uint32_t shift, uint32_t *k0, uint32_t *k1)
{
    if (a1 <= 0)
        return 1; /* below address 0 (not expected): wide, in no bucket */
    int64_t k0w = (a0 < 0 ? 0 : a0) >> shift, k1w = (a1 - 1) >> shift;
    const int64_t most = UINT32_MAX / 2; /* far past any partition or row (not expected): wide */
    *k0 = (uint32_t)(k0w < most ? k0w : most);
    *k1 = (uint32_t)(k1w < most ? k1w : most);
    return a0 < 0 || k1w >= most || *k1 - *k0 >= nk__sched_bucket_span;
}

/* The buckets region r touches, [*k0, *k1] (none for an empty one), and
 * the key's buckets into *bk (NULL: none); 1 when r is wide (and then in
 * the key's list). On chip they are of bytes; in HBM, of rows (the
 * partition range nk__region_of gives HBM), an empty row range [p0, p1 <=
 * p0) in row p0's bucket: whatever nk__regions_overlap says it meets holds
 * row p0. */
static inline int buckets_of(sched *s, const region *r, bkey **bk, uint32_t *k0, uint32_t *k1)
{
    *k0 = 1;
    *k1 = 0;
    if (r->key < NK_REGION_KEY_HBM0) {
        *bk = &s->bk[r->key];
        if (r->b1 <= r->b0)
            return 0; /* nothing in it to meet */
        return buckets_in(r->b0, r->b1, nk__sched_bucket_shift, k0, k1);
    }
    *bk = hbm_keys_of(s, r);
    return buckets_in(r->p0, r->p1 > r->p0 ? r->p1 : (int64_t)r->p0 + 1, *bk ? (*bk)->shift : 0, k0, k1);
}

static void find_deps(sched *s, const region *r, int write)
{
    if (!tracked(s, r))
        return;
    bkey *bk;
    uint32_t k0, k1;
    buckets_of(s, r, &bk, &k0, &k1);
    const alist *w = bk ? &bk->wide : &s->stray;
    if (w->n) /* (usually empty) */
        find_in(s, w, r, write);
    if (!bk)
        return;
    for (uint32_t k = k0; k <= k1 && k < bk->nb; k++)
        if (bk->b[k].n)
            find_in(s, &bk->b[k], r, write);
}

/* Drops from l the accesses r makes redundant (the others keep their
 * order; nothing moves before the first of them), and appends r unless
 * add is 0: a write drops what it covers, a read the reads it covers of
 * its own unit (which complete before it; a later write waits for r). A
 * read drops nothing from a conservative graph's lists, or a DMA's read:
 * they are not searched for it. */
static int record_in(sched *s, alist *l, const region *r, uint32_t instr, uint32_t unit, int write, int add)
{
    if (write || (!s->conservative && unit != NO_UNIT)) {
#define DROP(e) (write ? covers(r, &(e)->r) : (!(e)->write && (e)->unit == unit && covers(r, &(e)->r)))
        uint32_t i = 0;
        while (i < l->n && !DROP(&l->e[i]))
            i++;
        uint32_t k = i;
        for (i = i < l->n ? i + 1 : i; i < l->n; i++)
            if (!DROP(&l->e[i]))
                l->e[k++] = l->e[i];
#undef DROP
        l->n = k;
    }
    if (!add)
        return 0;
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 16;
        entry *e = realloc(l->e, cap * sizeof *e);
        if (!e)
            return NK_ENOMEM;
        l->e = e;
        l->cap = cap;
    }
    l->e[l->n++] = (entry){*r, instr, unit, (uint8_t)write};
    return 0;
}

static int record(sched *s, const region *r, uint32_t instr, uint32_t unit, int write)
{
    if (!tracked(s, r))
        return 0;
    /* what r covers lies in its own buckets, or is wide */
    bkey *bk;
    uint32_t k0, k1;
    int wide = buckets_of(s, r, &bk, &k0, &k1);
    if (!bk)
        return record_in(s, &s->stray, r, instr, unit, write, 1);
    if (!wide && k0 <= k1 && k1 >= bk->nb) {
        uint32_t nb = bk->nb ? bk->nb : 64;
        while (nb <= k1)
            nb *= 2;
        alist *b = realloc(bk->b, (size_t)nb * sizeof *b);
        if (!b)
            return NK_ENOMEM;
        memset(b + bk->nb, 0, (size_t)(nb - bk->nb) * sizeof *b);
        bk->b = b;
        bk->nb = nb;
    }
    int rc = wide || bk->wide.n ? record_in(s, &bk->wide, r, instr, unit, write, wide) : 0;
    for (uint32_t k = k0; !rc && k <= k1 && k < bk->nb; k++)
        rc = record_in(s, &bk->b[k], r, instr, unit, write, !wide);
    return rc;
}

/* DMA queues: one per (HBM tensor, direction) in order of first use, over the
 * target's queues per DMA engine (assumed: the compiler's queue choice is not
 * documented). A DMA's queue depends on the DMAs before it only, so an
 * order still being written has each position's decided as it is walked. */
typedef struct queues {
    uint8_t *slot; /* per (buffer, to HBM): its queue + 1 (at most NK_ARCH_MAX_DMA_QUEUES), 0 while unused */
    uint32_t next, nq;
} queues;
_Static_assert(NK_ARCH_MAX_DMA_QUEUES < 256, "a queue + 1 fits a byte");

static uint16_t queue_for(const nk_program *p, queues *qs, const nk_instr *in)
{
    if (in->engine != NK_ENGINE_DMA)
        return in->queue;
    int store = nk__opnd_mem(p, &in->dst) == NK_SHARED_HBM; /* to HBM */
    uint32_t b = store ? in->dst.buf : in->src[0].buf;
    uint8_t *slot = &qs->slot[b * 2 + (uint32_t)store];
    if (!*slot)
        *slot = (uint8_t)(1 + (qs->next++ % qs->nq));
    return (uint16_t)(*slot - 1);
}

/* An order being written by another thread (the list scheduler's, as
 * derive reads it): its positions are published as they are made
 * (progress.h). */
typedef nk__progress progress;

/* The dependencies of p in the order given (NULL: as it is) into g (its
 * arrays allocated here). With pg, the order is still being written: each
 * position is read once it is there (NK_EINVAL if it never is). */
static int derive_as_made(const nk_program *p, const uint32_t *order, int conservative, graph *g, progress *pg)
{
    sched s = {0};
    s.conservative = conservative;
    int rc = NK_ENOMEM;
    uint32_t n = p->ninstr, have = 0;
    memset(g, 0, sizeof *g);
    if (!p->arch || p->arch->dma_queues < 1)
        return NK_EINVAL;
    s.p = p;
    queues qs = {calloc((size_t)p->nbufs * 2, sizeof *qs.slot), 0, (uint32_t)p->arch->dma_queues};
    s.hbm_written = calloc(p->nbufs, 1);
    s.hbk = p->nhbm ? calloc(p->nhbm, sizeof *s.hbk) : NULL;
    g->dep_off = nk__big_fixed((n ? n : 1) * sizeof *g->dep_off);
    g->ndep = nk__big_fixed((n ? n : 1) * sizeof *g->ndep);
    g->queue = nk__big_fixed((n ? n : 1) * sizeof *g->queue);
    int table = p->nbufs >= nk__sched_table_min;
    btile *bt = table ? nk__big_fixed((p->nbufs ? p->nbufs : 1) * sizeof *bt) : NULL;
    s.bt = bt;
    if (!qs.slot || !s.hbm_written || (p->nhbm && !s.hbk) || !g->dep_off || !g->ndep || !g->queue || (table && !bt))
        goto out;
    for (uint32_t b = 0; table && b < p->nbufs; b++)
        bt[b] = (btile){p->bufs[b].addr, nk__onchip_key(0, nk__inst_core(p, p->bufs[b].inst))};
    for (uint32_t i = 0; i < n; i++) {
        const nk_instr *in = &p->instrs[i];
        if (nk__opnd_mem(p, &in->dst) == NK_SHARED_HBM)
            s.hbm_written[in->dst.buf] = 1;
    }
    for (uint32_t h = 0; s.hbk && h < p->nhbm; h++) {
        /* rows as nk__region_of counts them (axis 0 of a tensor of two axes or more) */
        const nk_bufinfo *b = &p->bufs[p->hbm_list[h]];
        int64_t rows = b->ndim >= 2 && b->shape[0] > 0 && b->shape[0] <= INT32_MAX ? b->shape[0] : 1;
        uint32_t shift = nk__sched_hbm_row_shift < 40 ? nk__sched_hbm_row_shift : 40;
        while (((rows - 1) >> shift) >= HBM_BUCKETS_MAX)
            shift++;
        s.hbk[h].shift = shift;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (pg && i >= have && nk__progress_wait(pg, i, &have)) {
            rc = NK_EINVAL;
            goto out;
        }
        const nk_instr *in = &p->instrs[order ? order[i] : i];
        g->queue[i] = queue_for(p, &qs, in); /* (decided by the positions before i alone) */
        region rd[5], wr[2];
        int nrd = 0, nwr = 0;
        for (int k = 0; k < in->nsrc; k++) {
            const nk_opnd *t = nk__src(p, in, k);
            if (t->buf)
                rd[nrd++] = region_of(&s, t);
        }
        wr[nwr++] = region_of(&s, &in->dst);
        if (in->flags & NK_IF_ACCUMULATE)
            rd[nrd++] = wr[0];
        const nk_opnd *d2 = nk__dst2(p, in);
        if (d2->buf)
            wr[nwr++] = region_of(&s, d2);
        s.ncur = 0;
        for (int k = 0; k < nrd; k++)
            find_deps(&s, &rd[k], 0);
        for (int k = 0; k < nwr; k++)
            find_deps(&s, &wr[k], 1);
        if (s.oom)
            goto out;
        uint32_t unit = in->engine == NK_ENGINE_DMA ? NO_UNIT : in->engine + nk__instr_core(p, in) * NK_ENGINE_COUNT;
        for (int k = 0; k < nrd; k++)
            if (record(&s, &rd[k], i, unit, 0))
                goto out;
        for (int k = 0; k < nwr; k++)
            if (record(&s, &wr[k], i, unit, 1))
                goto out;
        /* sorted, so listings and files are stable (a handful: insertion) */
        if (s.ncur > 32)
            qsort(s.cur, (size_t)s.ncur, sizeof *s.cur, cmp_u32);
        else
            for (int a = 1; a < s.ncur; a++) {
                uint32_t x = s.cur[a];
                int b = a;
                for (; b > 0 && s.cur[b - 1] > x; b--)
                    s.cur[b] = s.cur[b - 1];
                s.cur[b] = x;
            }
        if (s.ndeps + (uint32_t)s.ncur > s.cap_deps) {
            uint32_t cap = s.cap_deps ? s.cap_deps * 2 : 1024;
            while (cap < s.ndeps + (uint32_t)s.ncur)
                cap *= 2;
            uint32_t *d = nk__big_grow(s.deps, cap * sizeof *d);
            if (!d)
                goto out;
            s.deps = d;
            s.cap_deps = cap;
        }
        g->dep_off[i] = s.ndeps;
        g->ndep[i] = (uint32_t)s.ncur;
        if (s.ncur)
            memcpy(s.deps + s.ndeps, s.cur, (size_t)s.ncur * sizeof *s.deps);
        s.ndeps += (uint32_t)s.ncur;
    }
    g->deps = nk__big_fit(s.deps, (size_t)s.ndeps * sizeof *s.deps);
    g->ndeps = s.ndeps;
    s.deps = NULL;
    rc = 0;
out:
    if (rc)
        graph_free(g);
    free(s.stray.e);
    for (uint32_t k = 0; k < NK_REGION_KEY_HBM0 + (s.hbk ? p->nhbm : 0); k++) {
        bkey *bk = k < NK_REGION_KEY_HBM0 ? &s.bk[k] : &s.hbk[k - NK_REGION_KEY_HBM0];
        free(bk->wide.e);
        for (uint32_t b = 0; b < bk->nb; b++)
            free(bk->b[b].e);
        free(bk->b);
    }
    free(s.hbk);
    free(s.hbm_written);
    free((void *)s.bt);
    free(s.deps);
    free(s.cur);
    free(qs.slot);
    return rc;
}

static int derive(const nk_program *p, const uint32_t *order, int conservative, graph *g)
{
    return derive_as_made(p, order, conservative, g, NULL);
}

/* The graph g of p's order becomes p's dependencies and queues. */
static void install(nk_program *p, graph *g)
{
    for (uint32_t i = 0; i < p->ninstr; i++) {
        nk_instr *in = &p->instrs[i];
        in->dep_off = g->dep_off[i];
        in->ndep = g->ndep[i];
        in->queue = g->queue[i];
    }
    free(p->deps);
    p->deps = g->deps;
    p->ndeps = g->ndeps;
    g->deps = NULL;
    graph_free(g);
}

/* listsched.c: the orders of the first npol (1 .. NK_LIST_POLICIES) list
 * policies of p over its conservative graph (dependencies and queues in
 * trace order) into orders (npol x ninstr). It takes the graph's arrays:
 * once it has read them, before its passes, it frees them and sets the
 * pointers to NULL (on an error before that they are left to the caller).
 * dur: the instructions' estimated durations (nk__list_durations; taken and
 * freed), or NULL to work them out. made: NULL, or where the first policy's
 * positions written so far are published as its pass goes. */
int nk__list_durations(const nk_program *p, double **dur);
int nk__list_orders(const nk_program *p, uint32_t **dep_off, uint32_t **ndep, uint32_t **deps, uint16_t **queue,
                    double *dur, uint32_t *orders, int npol, nk__progress *made);
#define NK_LIST_POLICIES 2

/* Programs up to this size choose their schedule by timing each candidate on
 * the model; larger ones keep the first list policy without timing (the
 * cost of choosing would dominate the compile). A variable for the tests,
 * which take that path with small programs. */
uint32_t nk__sched_timed_max = 200000;

/* Does the order keep every engine's sequence (the DMA instructions as one
 * sequence, which also fixes their queues) of the reference order ref (NULL:
 * trace order)? Then it times exactly as ref does. */
static int same_sequences(const nk_program *p, const uint32_t *order, const uint32_t *ref)
{
    uint32_t pos[NK_ENGINE_COUNT] = {0}, n = p->ninstr;
    /* each engine's sequence in ref, one after another (an engine's room
     * counted first: n entries in all, each written once) */
    for (uint32_t i = 0; i < n; i++)
        pos[p->instrs[i].engine < NK_ENGINE_COUNT ? p->instrs[i].engine : NK_ENGINE_COUNT - 1]++;
    for (uint32_t e = 0, at = 0; e < NK_ENGINE_COUNT; e++) {
        uint32_t c = pos[e];
        pos[e] = at;
        at += c;
    }
    uint32_t *next = malloc((n ? n : 1) * sizeof *next), fill[NK_ENGINE_COUNT];
    if (!next)
        return 0;
    memcpy(fill, pos, sizeof fill);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = ref ? ref[k] : k;
        uint32_t e = p->instrs[i].engine < NK_ENGINE_COUNT ? p->instrs[i].engine : NK_ENGINE_COUNT - 1;
        next[fill[e]++] = i;
    }
    int same = 1;
    for (uint32_t k = 0; k < n && same; k++) {
        uint32_t i = order[k];
        uint32_t e = p->instrs[i].engine < NK_ENGINE_COUNT ? p->instrs[i].engine : NK_ENGINE_COUNT - 1;
        same = next[pos[e]++] == i;
    }
    free(next);
    return same;
}

/* SPMD: keeps each program instance's (sequences: each kernel's) instructions together, in the order's
 * sequence within each (a stable counting sort by instance). Dependencies
 * run from earlier instances to later ones only, so the result still
 * respects them; instances on different cores still overlap in time, since
 * the timing model runs each core's engines on their own. */
static int group_by_instance(const nk_program *p, uint32_t *order)
{
    uint32_t nu = nk__nunits(p);
    if (nu < 2)
        return 0;
    uint32_t n = p->ninstr, *cnt = calloc((size_t)nu + 1, sizeof *cnt), *tmp = malloc((size_t)n * sizeof *tmp);
    if (!cnt || !tmp) {
        free(cnt);
        free(tmp);
        return NK_ENOMEM;
    }
    for (uint32_t k = 0; k < n; k++)
        cnt[nk__unit_of(p, &p->instrs[order[k]]) + 1]++;
    for (uint32_t g = 0; g < nu; g++)
        cnt[g + 1] += cnt[g];
    for (uint32_t k = 0; k < n; k++)
        tmp[cnt[nk__unit_of(p, &p->instrs[order[k]])]++] = order[k];
    memcpy(order, tmp, (size_t)n * sizeof *order);
    free(cnt);
    free(tmp);
    return 0;
}

/* Puts the records in the order given (position k gets instruction
 * order[k]), in place: each cycle of the permutation is followed once, so
 * every record moves once and no second copy of the program is made.
 * order is consumed (left as the identity). */
static void apply_order(nk_program *p, uint32_t *order)
{
    for (uint32_t k = 0; k < p->ninstr; k++) {
        if (order[k] == k)
            continue;
        nk_instr tmp = p->instrs[k];
        uint32_t j = k;
        for (;;) {
            uint32_t from = order[j];
            order[j] = j;
            if (from == k) {
                p->instrs[j] = tmp;
                break;
            }
            p->instrs[j] = p->instrs[from];
            j = from;
        }
    }
}

/* ---- timing the candidates: each one's graph and device time is a task
 * of its own; tasks run on as many threads as there are processors (at
 * most NK_SCHED_THREADS), trace order's from the start (while the list
 * orders are made), the others' once they are made. The choice among them
 * is made afterwards in the order the serial code made it, so the result
 * does not depend on how many threads ran. The price of the overlap is
 * memory: on two threads or more, trace order's simulation is held beside
 * the conservative graph and the list scheduler's arrays, and two
 * candidates' simulations beside each other. Each candidate's graph is
 * handed to its simulation while that runs (nk__order_view.own), which
 * keeps these below the profile's own timing run at 1x (docs/speed.md).
 * On exactly two threads a large program's work is shared otherwise (see
 * lead_work): the same tasks, trace order's timing moved after the first
 * policy's graph, which follows the list pass. */

#define NK_SCHED_THREADS 4

typedef struct cand {
    const uint32_t *order; /* NULL: trace order */
    graph g;
    double ns;
    int rc;
} cand;

/* Candidate c timed on the model over its graph, derived already. */
static void time_derived(const nk_program *p, cand *c)
{
    /* the graph goes while the run has its successor lists, and comes back */
    nk__deps own = {c->g.dep_off, c->g.ndep, c->g.deps, c->g.ndeps};
    nk__order_view v = {c->order, c->g.dep_off, c->g.ndep, c->g.deps, c->g.ndeps, c->g.queue, &own};
    uint32_t *ident = NULL;
    if (!v.order) { /* the view needs an order: trace order's is the identity */
        ident = nk__big_fixed((p->ninstr ? p->ninstr : 1) * sizeof *ident);
        if (!ident) {
            c->rc = NK_ENOMEM;
            return;
        }
        for (uint32_t i = 0; i < p->ninstr; i++)
            ident[i] = i;
        v.order = ident;
    }
    int rc = nk__time_total(p, &v, NULL, &c->ns);
    c->g.dep_off = own.dep_off;
    c->g.ndep = own.ndep;
    c->g.deps = own.deps;
    c->g.ndeps = own.ndeps;
    if (rc == NK_ENOMEM)
        c->rc = rc; /* the choice would depend on the memory left */
    else if (rc)
        c->ns = -1; /* an order the model cannot time is not chosen */
    free(ident);
}

static void time_candidate(const nk_program *p, cand *c)
{
    c->rc = derive(p, c->order, 0, &c->g);
    if (!c->rc)
        time_derived(p, c);
}

/* Two threads time the candidates of a program of one instance this way:
 * the helper derives trace order's graph, then the first list policy's as
 * the list pass writes that order, then times trace order; this thread
 * makes the list orders and times the first policy's once its graph is
 * there. With the pool, this thread derived that graph after the list
 * pass, at the end of the schedule's chain (the conservative graph, the
 * list, that graph and its timing), while the helper, done with trace
 * order, waited. A first policy whose order times as trace order does (no
 * candidate) has its graph made for nothing. Programs of this many
 * instructions or more (assumed: below it the threads' hand-over, tens of
 * microseconds, outweighs what it saves); a variable for the tests, which
 * take both ways. */
uint32_t nk__sched_follow_min = 4096;

typedef struct lead_job {
    const nk_program *p;
    cand *c0;           /* trace order */
    const uint32_t *o1; /* the first policy's order, being written */
    progress pg;
    graph g1;
    int rc1, have1;     /* g1 made (rc1 its status) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} lead_job;

static void *lead_work(void *arg)
{
    lead_job *j = arg;
    j->c0->rc = derive(j->p, NULL, 0, &j->c0->g);
    int rc1 = derive_as_made(j->p, j->o1, 0, &j->g1, &j->pg);
    pthread_mutex_lock(&j->mu);
    j->rc1 = rc1;
    j->have1 = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (!j->c0->rc)
        time_derived(j->p, j->c0);
    return NULL;
}

/* Candidates are given to the pool as they are known (trace order's at
 * once, the list policies' once they are made) and taken by whichever
 * thread is free. */
typedef struct pool {
    const nk_program *p;
    cand *c;
    int n, next;   /* candidates c[0 .. n) given so far; the next one to take */
    int closed;    /* no more will be given */
    int nt;        /* threads allowed, the calling one included */
    int started;   /* helper threads started (joined in pool_close) */
    pthread_t th[NK_SCHED_THREADS];
    pthread_mutex_t mu;
    pthread_cond_t cv;
} pool;

static void *pool_worker(void *arg)
{
    pool *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (w->next == w->n && !w->closed)
            pthread_cond_wait(&w->cv, &w->mu);
        int k = w->next < w->n ? w->next++ : -1;
        pthread_mutex_unlock(&w->mu);
        if (k < 0)
            return NULL;
        time_candidate(w->p, &w->c[k]);
    }
}

static void pool_open(pool *w, const nk_program *p, cand *c)
{
    memset(w, 0, sizeof *w);
    w->p = p;
    w->c = c;
    w->nt = nk__threads(p->threads);
    if (w->nt > NK_SCHED_THREADS)
        w->nt = NK_SCHED_THREADS;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

/* Candidates c[0 .. n) are ready to be taken, by helpers started as they
 * are needed: the first while the calling thread goes on making the
 * others, then one per candidate beyond the one the calling thread takes
 * in pool_close (never more than the threads allowed). */
static void pool_give(pool *w, int n)
{
    pthread_mutex_lock(&w->mu);
    w->n = n;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    int want = n > 1 ? n - 1 : n;
    while (w->started < want && w->started < w->nt - 1 && !pthread_create(&w->th[w->started], NULL, pool_worker, w))
        w->started++;
}

/* No more candidates: the calling thread times what is left with the
 * helpers, and every candidate given is timed when this returns (with
 * abandon, those not started yet are left untimed). */
static void pool_close(pool *w, int abandon)
{
    pthread_mutex_lock(&w->mu);
    w->closed = 1;
    if (abandon)
        w->next = w->n;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pool_worker(w);
    for (int t = 0; t < w->started; t++)
        pthread_join(w->th[t], NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

/* The tracer grows its records by doubling (and zeroes what it grows):
 * once the program is complete, the arrays keep what they hold, not up to
 * half again as much. */
/* The tracer's arrays to their sizes: their growth slack, and the room an
 * array given by nk__big_grow has past its end (address space, and up to a
 * huge page resident past its last byte). */
static void trim(nk_program *p)
{
    nk_instr *in = p->ninstr ? realloc(p->instrs, (size_t)p->ninstr * sizeof *in) : NULL;
    if (in)
        p->instrs = in;
    nk_bufinfo *b = p->nbufs ? realloc(p->bufs, (size_t)p->nbufs * sizeof *b) : NULL;
    if (b)
        p->bufs = b;
    if (p->cdata) /* (the tracer grows it to cover every buffer) */
        p->cdata = nk__big_fit(p->cdata, (size_t)p->nbufs * sizeof *p->cdata);
    p->locs = nk__big_fit(p->locs, (size_t)p->nlocs * sizeof *p->locs);
    p->loops = nk__big_fit(p->loops, (size_t)p->nloops * sizeof *p->loops);
    nk_opnd *x = p->nxop ? realloc(p->xop, (size_t)p->nxop * sizeof *x) : NULL;
    if (x) {
        p->xop = x;
        p->cap_xop = p->nxop;
    }
    nk_xarg *xa = p->nxarg ? realloc(p->xarg, (size_t)p->nxarg * sizeof *xa) : NULL;
    if (xa) {
        p->xarg = xa;
        p->cap_xarg = p->nxarg;
    }
    nk_layout *l = p->nlays ? realloc(p->lays, (size_t)p->nlays * sizeof *l) : NULL;
    if (l) {
        p->lays = l;
        p->cap_lays = p->nlays;
    }
}

/* The schedule nk__schedule would give p in list mode, p left as it is:
 * the orders, which of them is chosen (best: 0 trace order, k policy k) and
 * the chosen order's graph (gb, pointing into the choice). */
typedef struct choice {
    uint32_t *orders;
    cand c[1 + NK_LIST_POLICIES];
    int nc, best;
    graph g0;
    graph *gb;
} choice;

static void choice_free(choice *ch)
{
    graph_free(&ch->g0);
    for (int k = 0; k < ch->nc; k++)
        graph_free(&ch->c[k].g);
    free(ch->orders);
}

/* A program too large to time its candidates has one list order, and on
 * two threads or more the list's durations are estimated while the
 * conservative graph is derived. The chosen order's graph is derived once
 * the list pass is over: derived on a second thread as the list pass wrote
 * the order, it waited for the list's set-up (the successor lists and
 * priorities, 30-70 ms of the 8x matmul's compile) before its first
 * position, then shared the core with the pass, and ended later than it
 * does after it (0.95x the profile's wall time without). The results are
 * those of one thread; a thread that cannot start leaves its work to this
 * one. */
typedef struct dur_job {
    const nk_program *p;
    double *dur;
    int rc;
} dur_job;

static void *dur_work(void *arg)
{
    dur_job *j = arg;
    j->rc = nk__list_durations(j->p, &j->dur);
    return NULL;
}

/* The list policies' orders that are candidates, after ch's: each unless it
 * keeps every engine's sequence of trace order or of the previous policy's
 * (then it times the same); slot[k], policy k + 1's candidate (-1: none). */
static void list_candidates(const nk_program *p, const uint32_t *orders, choice *ch, int *slot)
{
    for (int k = 0; k < NK_LIST_POLICIES; k++) {
        const uint32_t *o = orders + (size_t)k * p->ninstr;
        slot[k] = -1;
        if (same_sequences(p, o, NULL) || (k && same_sequences(p, o, orders + (size_t)(k - 1) * p->ninstr)))
            continue;
        slot[k] = ch->nc;
        ch->c[ch->nc++] = (cand){o, {0}, -1, 0};
    }
}

/* The candidates timed on two threads as lead_work says: *started 0 when
 * its thread does not start (nothing done: the pool's way then), else 1
 * and the first error (the candidates' own in their rc). */
static int choose_led(const nk_program *p, choice *ch, int *slot, int npol, int *started)
{
    cand *c = ch->c;
    lead_job lj = {p, &c[0], ch->orders, NK_PROGRESS_INIT, {0}, 0, 0};
    pthread_t th;
    pthread_mutex_init(&lj.mu, NULL);
    pthread_cond_init(&lj.cv, NULL);
    c[ch->nc++] = (cand){NULL, {0}, -1, 0};
    *started = !pthread_create(&th, NULL, lead_work, &lj);
    if (!*started) {
        ch->nc = 0;
        pthread_mutex_destroy(&lj.mu);
        pthread_cond_destroy(&lj.cv);
        return 0;
    }
    int rc = derive(p, NULL, 1, &ch->g0);
    if (!rc)
        rc = nk__list_orders(p, &ch->g0.dep_off, &ch->g0.ndep, &ch->g0.deps, &ch->g0.queue, NULL, ch->orders, npol,
                             &lj.pg);
    if (rc)
        nk__progress_abandon(&lj.pg);
    else {
        graph_free(&ch->g0);
        list_candidates(p, ch->orders, ch, slot);
        pthread_mutex_lock(&lj.mu);
        while (!lj.have1)
            pthread_cond_wait(&lj.cv, &lj.mu);
        pthread_mutex_unlock(&lj.mu);
        if (slot[0] >= 0) { /* the first policy's graph, made as its order was */
            cand *c1 = &c[slot[0]];
            c1->g = lj.g1;
            memset(&lj.g1, 0, sizeof lj.g1);
            if (!(c1->rc = lj.rc1))
                time_derived(p, c1);
        }
        for (int k = 1; k < NK_LIST_POLICIES; k++)
            if (slot[k] >= 0)
                time_candidate(p, &c[slot[k]]);
    }
    pthread_join(th, NULL);
    graph_free(&lj.g1);
    pthread_mutex_destroy(&lj.mu);
    pthread_cond_destroy(&lj.cv);
    return rc;
}

static int choose(const nk_program *p, choice *ch)
{
    uint32_t n = p->ninstr;
    int rc, slot[1 + NK_LIST_POLICIES];
    memset(ch, 0, sizeof *ch);
    ch->best = 1;
    /* a program too large to time its candidates keeps the first policy's
     * order: the others are not made */
    int timed = n <= nk__sched_timed_max, npol = timed ? NK_LIST_POLICIES : 1;
    ch->orders = nk__big_fixed((size_t)npol * n * sizeof *ch->orders);
    if (!ch->orders)
        return NK_ENOMEM;
    uint32_t *orders = ch->orders;
    cand *c = ch->c;
    pool w;
    int piped = !timed && nk__threads(p->threads) > 1 && nk__nunits(p) < 2; /* (no group_by_instance) */
    pthread_t dth;
    dur_job dj = {p, NULL, 0};
    int dstarted = piped && !pthread_create(&dth, NULL, dur_work, &dj);
    int led = 0;
    if (timed && n >= nk__sched_follow_min && nk__threads(p->threads) == 2 && nk__nunits(p) < 2) {
        rc = choose_led(p, ch, slot, npol, &led);
        if (led) {
            if (rc)
                return rc;
            goto timed_out;
        }
    }
    if (timed) { /* trace order needs no list order: it is timed while they are made */
        pool_open(&w, p, c);
        c[ch->nc++] = (cand){NULL, {0}, -1, 0};
        pool_give(&w, ch->nc);
    }
    rc = derive(p, NULL, 1, &ch->g0);
    if (dstarted) {
        pthread_join(dth, NULL);
        if (dj.rc) { /* short of memory there: the list pass works them out (or fails) */
            free(dj.dur);
            dj.dur = NULL;
        }
    }
    if (rc) {
        free(dj.dur);
        goto made;
    }
    rc = nk__list_orders(p, &ch->g0.dep_off, &ch->g0.ndep, &ch->g0.deps, &ch->g0.queue, dj.dur, orders, npol, NULL);
    if (rc)
        goto made;
    graph_free(&ch->g0);
    for (int k = 0; k < npol; k++)
        if ((rc = group_by_instance(p, orders + (size_t)k * n)))
            goto made;
    if (timed) {
        list_candidates(p, orders, ch, slot);
        pool_give(&w, ch->nc);
    }
made:
    if (timed)
        pool_close(&w, rc != 0); /* on an error too: no thread outlives the choice */
    if (rc)
        return rc;
timed_out:
    if (timed) {
        for (int k = 0; k < ch->nc; k++)
            if ((rc = c[k].rc))
                return rc;
        double best_ns = c[0].ns;
        ch->best = 0;
        for (int k = 0; k < NK_LIST_POLICIES; k++) {
            if (slot[k] < 0)
                continue;
            double t = c[slot[k]].ns;
            if (t >= 0 && (best_ns < 0 || t < best_ns * (1 - 1e-9))) {
                best_ns = t;
                ch->best = k + 1;
            }
        }
    }
    /* the chosen order's graph: timed already, or derived now */
    if (ch->best == 0)
        ch->gb = &c[0].g;
    else if (timed)
        ch->gb = &c[slot[ch->best - 1]].g;
    else {
        if ((rc = derive(p, orders + (size_t)(ch->best - 1) * n, 0, &ch->g0)))
            return rc;
        ch->gb = &ch->g0;
    }
    return 0;
}

int nk__schedule(nk_program *p, int mode)
{
    if (mode != NK_SCHED_LIST && mode != NK_SCHED_TRACE_ORDER)
        return NK_EINVAL;
    trim(p);
    p->sched = (uint8_t)mode;
    p->sched_policy = 0;
    p->trace_order_ns = -1;
    graph g0 = {0};
    int rc;
    if (mode == NK_SCHED_TRACE_ORDER || p->ninstr < 2) {
        if (!(rc = derive(p, NULL, 0, &g0)))
            install(p, &g0);
        return rc;
    }
    choice ch;
    if (!(rc = choose(p, &ch))) {
        if (ch.nc)
            p->trace_order_ns = ch.c[0].ns;
        if (ch.best)
            apply_order(p, ch.orders + (size_t)(ch.best - 1) * p->ninstr);
        install(p, ch.gb);
        p->sched_policy = (uint8_t)ch.best;
    }
    choice_free(&ch);
    return rc;
}

int nk__schedule_total(const nk_program *p, int mode, const nk_arch *arch, double *total_ns)
{
    *total_ns = -1;
    if (mode != NK_SCHED_LIST && mode != NK_SCHED_TRACE_ORDER)
        return NK_EINVAL;
    uint32_t n = p->ninstr, *ident = nk__big_fixed((n ? n : 1) * sizeof *ident);
    if (!ident)
        return NK_ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        ident[i] = i;
    choice ch;
    int rc;
    if (mode == NK_SCHED_TRACE_ORDER || n < 2) {
        memset(&ch, 0, sizeof ch);
        ch.gb = &ch.g0;
        rc = derive(p, NULL, 0, &ch.g0);
    } else {
        rc = choose(p, &ch);
    }
    if (!rc) {
        nk__order_view v = {ch.best ? ch.orders + (size_t)(ch.best - 1) * n : ident, ch.gb->dep_off, ch.gb->ndep,
                            ch.gb->deps, ch.gb->ndeps, ch.gb->queue};
        rc = nk__time_total(p, &v, arch, total_ns);
    }
    choice_free(&ch);
    free(ident);
    return rc;
}
