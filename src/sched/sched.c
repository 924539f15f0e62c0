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
#include "timing/timing.h"

#include <stdlib.h>
#include <string.h>

typedef nk__region region;

typedef struct entry {
    region r;
    uint32_t instr;
    uint32_t unit; /* (core, engine or NK_ENGINE_COUNT + DMA queue): accesses complete in order per unit */
    uint8_t write;
} entry;

typedef struct alist {
    entry *e;
    uint32_t n, cap;
} alist;

typedef struct sched {
    nk_program *p;
    alist *lists;   /* per key */
    uint8_t *hbm_written;
    uint32_t *deps;
    uint32_t ndeps, cap_deps;
    uint32_t *cur; /* deps of the current instruction */
    int ncur, capcur;
    int oom;
    int conservative; /* no same-unit shortcut: the graph holds for any order */
} sched;

static int covers(const region *a, const region *b)
{
    return a->p0 <= b->p0 && a->p1 >= b->p1 && a->b0 <= b->b0 && a->b1 >= b->b1;
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

static void find_deps(sched *s, const region *r, int write)
{
    if (!tracked(s, r))
        return;
    alist *l = &s->lists[r->key];
    for (uint32_t i = 0; i < l->n; i++)
        if ((write || l->e[i].write) && nk__regions_overlap(&l->e[i].r, r))
            add_dep(s, l->e[i].instr);
}

static int record(sched *s, const region *r, uint32_t instr, uint32_t unit, int write)
{
    if (!tracked(s, r))
        return 0;
    alist *l = &s->lists[r->key];
    uint32_t k = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        entry *e = &l->e[i];
        int drop = write ? covers(r, &e->r)
                         : (!s->conservative && !e->write && e->unit == unit && covers(r, &e->r)); /* same unit: in order */
        if (!drop)
            l->e[k++] = *e;
    }
    l->n = k;
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

/* DMA queues: one per (HBM tensor, direction) in order of first use, over the
 * target's queues per DMA engine (assumed: the compiler's queue choice is not
 * documented). */
static void assign_queues(nk_program *p)
{
    uint32_t nq = (uint32_t)p->arch->dma_queues;
    uint32_t *q = calloc((size_t)p->nbufs * 2, sizeof *q);
    uint32_t next = 0;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        nk_instr *in = &p->instrs[i];
        if (in->engine != NK_ENGINE_DMA)
            continue;
        int store = in->dst.mem == NK_SHARED_HBM; /* to HBM */
        uint32_t b = store ? in->dst.buf : in->src[0].buf;
        if (!q) {
            in->queue = (uint16_t)(store && nq > 1 ? 1 : 0);
            continue;
        }
        uint32_t *slot = &q[b * 2 + (uint32_t)store];
        if (!*slot)
            *slot = 1 + (next++ % nq);
        in->queue = (uint16_t)(*slot - 1);
    }
    free(q);
}

static int derive(nk_program *p, int conservative)
{
    sched s = {0};
    s.conservative = conservative;
    int rc = NK_ENOMEM;
    if (!p->arch || p->arch->dma_queues < 1)
        return NK_EINVAL;
    s.p = p;
    s.lists = calloc((size_t)p->nbufs + NK_REGION_KEY_HBM0, sizeof *s.lists);
    s.hbm_written = calloc(p->nbufs, 1);
    if (!s.lists || !s.hbm_written)
        goto out;
    assign_queues(p);
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (in->dst.mem == NK_SHARED_HBM)
            s.hbm_written[in->dst.buf] = 1;
    }
    for (uint32_t i = 0; i < p->ninstr; i++) {
        nk_instr *in = &p->instrs[i];
        region rd[5], wr[2];
        int nrd = 0, nwr = 0;
        for (int k = 0; k < in->nsrc; k++)
            if (in->src[k].buf)
                rd[nrd++] = nk__region_of(p, &in->src[k]);
        if (in->flags & NK_IF_ACCUMULATE)
            rd[nrd++] = nk__region_of(p, &in->dst);
        wr[nwr++] = nk__region_of(p, &in->dst);
        if (in->dst2.buf)
            wr[nwr++] = nk__region_of(p, &in->dst2);
        s.ncur = 0;
        for (int k = 0; k < nrd; k++)
            find_deps(&s, &rd[k], 0);
        for (int k = 0; k < nwr; k++)
            find_deps(&s, &wr[k], 1);
        if (s.oom)
            goto out;
        uint32_t unit = (in->engine == NK_ENGINE_DMA ? NK_ENGINE_COUNT + in->queue : in->engine) +
                        nk__instr_core(p, in) * (NK_ENGINE_COUNT + NK_ARCH_MAX_DMA_QUEUES);
        for (int k = 0; k < nrd; k++)
            if (record(&s, &rd[k], i, unit, 0))
                goto out;
        for (int k = 0; k < nwr; k++)
            if (record(&s, &wr[k], i, unit, 1))
                goto out;
        /* sorted, so listings and files are stable */
        if (s.ncur > 1)
            qsort(s.cur, (size_t)s.ncur, sizeof *s.cur, cmp_u32);
        if (s.ndeps + (uint32_t)s.ncur > s.cap_deps) {
            uint32_t cap = s.cap_deps ? s.cap_deps * 2 : 1024;
            while (cap < s.ndeps + (uint32_t)s.ncur)
                cap *= 2;
            uint32_t *d = realloc(s.deps, cap * sizeof *d);
            if (!d)
                goto out;
            s.deps = d;
            s.cap_deps = cap;
        }
        in->dep_off = s.ndeps;
        in->ndep = (uint32_t)s.ncur;
        if (s.ncur)
            memcpy(s.deps + s.ndeps, s.cur, (size_t)s.ncur * sizeof *s.deps);
        s.ndeps += (uint32_t)s.ncur;
    }
    free(p->deps);
    p->deps = s.deps;
    p->ndeps = s.ndeps;
    s.deps = NULL;
    rc = 0;
out:
    if (s.lists)
        for (uint32_t k = 0; k < p->nbufs + NK_REGION_KEY_HBM0; k++)
            free(s.lists[k].e);
    free(s.lists);
    free(s.hbm_written);
    free(s.deps);
    free(s.cur);
    return rc;
}

int nk__list_orders(const nk_program *p, uint32_t *orders); /* listsched.c: NK_LIST_POLICIES orders */
#define NK_LIST_POLICIES 2

/* Programs up to this size choose their schedule by timing each candidate on
 * the model; larger ones keep the first list policy without timing (the
 * cost of choosing would dominate the compile). */
#define NK_SCHED_TIMED_MAX 200000

static double device_ns(const nk_program *p)
{
    nk_timeline *tl = NULL;
    double t = nk_time_program(p, NULL, &tl) ? -1 : tl->total_ns;
    nk_timeline_free(tl);
    return t;
}

/* Does the order keep every engine's sequence (the DMA instructions as one
 * sequence, which also fixes their queues) of the reference order ref (NULL:
 * trace order)? Then it times exactly as ref does. */
static int same_sequences(const nk_program *p, const nk_instr *orig, const uint32_t *order, const uint32_t *ref)
{
    uint32_t pos[NK_ENGINE_COUNT] = {0}, n = p->ninstr;
    uint32_t *next = malloc((size_t)NK_ENGINE_COUNT * n * sizeof *next);
    if (!next)
        return 0;
    uint32_t cnt[NK_ENGINE_COUNT] = {0};
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = ref ? ref[k] : k;
        uint32_t e = orig[i].engine < NK_ENGINE_COUNT ? orig[i].engine : NK_ENGINE_COUNT - 1;
        next[(size_t)e * n + cnt[e]++] = i;
    }
    int same = 1;
    for (uint32_t k = 0; k < n && same; k++) {
        uint32_t i = order[k];
        uint32_t e = orig[i].engine < NK_ENGINE_COUNT ? orig[i].engine : NK_ENGINE_COUNT - 1;
        same = next[(size_t)e * n + pos[e]++] == i;
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

static void apply_order(nk_program *p, const nk_instr *orig, const uint32_t *order)
{
    for (uint32_t k = 0; k < p->ninstr; k++)
        p->instrs[k] = orig[order ? order[k] : k];
}

int nk_schedule(nk_program *p, int mode)
{
    if (mode != NK_SCHED_LIST && mode != NK_SCHED_TRACE_ORDER)
        return NK_EINVAL;
    p->sched = (uint8_t)mode;
    p->sched_policy = 0;
    p->trace_order_ns = -1;
    if (mode == NK_SCHED_TRACE_ORDER || p->ninstr < 2)
        return derive(p, 0);
    uint32_t n = p->ninstr;
    nk_instr *orig = malloc((size_t)n * sizeof *orig);
    uint32_t *orders = malloc((size_t)NK_LIST_POLICIES * n * sizeof *orders);
    int rc = NK_ENOMEM;
    if (!orig || !orders)
        goto out;
    if ((rc = derive(p, 1)) || (rc = nk__list_orders(p, orders)))
        goto out;
    for (int k = 0; k < NK_LIST_POLICIES; k++)
        if ((rc = group_by_instance(p, orders + (size_t)k * n)))
            goto out;
    memcpy(orig, p->instrs, (size_t)n * sizeof *orig);
    int best = 1;
    if (n <= NK_SCHED_TIMED_MAX) {
        if ((rc = derive(p, 0)))
            goto out;
        double best_ns = p->trace_order_ns = device_ns(p);
        best = 0;
        for (int k = 0; k < NK_LIST_POLICIES; k++) {
            /* an order that keeps every engine's sequence of trace order, or
             * of the previous candidate, times the same: skip it */
            if (same_sequences(p, orig, orders + (size_t)k * n, NULL) ||
                (k && same_sequences(p, orig, orders + (size_t)k * n, orders + (size_t)(k - 1) * n)))
                continue;
            apply_order(p, orig, orders + (size_t)k * n);
            if ((rc = derive(p, 0)))
                goto out;
            double t = device_ns(p);
            if (t >= 0 && (best_ns < 0 || t < best_ns * (1 - 1e-9))) {
                best_ns = t;
                best = k + 1;
            }
        }
    }
    apply_order(p, orig, best ? orders + (size_t)(best - 1) * n : NULL);
    p->sched_policy = (uint8_t)best;
    rc = derive(p, 0);
out:
    free(orig);
    free(orders);
    return rc;
}
