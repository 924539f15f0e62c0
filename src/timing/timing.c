/*
 * timing.c - a discrete-event model of one NeuronCore running a compiled
 * program.
 *
 * Each compute engine runs its instructions in program order. An instruction
 * starts when its engine is free and its dependencies have completed (plus a
 * semaphore latency when the producer ran elsewhere). Vector/Scalar/GpSimd
 * instructions pass a fixed stage (static overhead) and a streaming stage, so
 * an independent instruction's overhead hides behind the previous one's
 * streaming; the Tensor engine runs LoadStationary and MultiplyMoving with
 * the next weights loading in the background. On targets that have them,
 * Vector/GpSimd SBUF and Vector/Scalar PSUM accesses take turns.
 *
 * A DMA instruction (load, store, dma_copy, load_transpose2d) is triggered
 * by an instruction on the Sync engine, which runs triggers one at a time in
 * the order their dependencies are met; its transfers may start the DMA
 * latency after the trigger starts. It splits into one descriptor per DMA
 * engine (partitions spread evenly), each put on the instruction's queue of
 * that engine. An engine moves one descriptor at a
 * time, in order within a queue, serving its queues round-robin; all
 * engines together share the HBM bandwidth, which a descriptor uses once
 * per HBM end (none within SBUF, twice HBM to HBM).
 *
 * Each core's instructions start after the kernel's start-up; its tear-down
 * follows its last completion, and the device time ends with the latest
 * tear-down.
 *
 * The simulation takes events in time order (ties by a fixed id order):
 * compute engines and DMA triggers from a heap, DMA engines from a
 * tournament tree of their next times; every decision is made in time
 * order, so shared resources are granted first come, first served. Memory:
 * arrays sized up front, nothing allocated per instruction. The same run
 * gives the whole timeline (nk__time_program) or the device time alone
 * (nk__time_total, also of a reordered view of the program: the
 * scheduler's candidates), bit for bit the same total.
 */
#include "timing/timing.h"
#include "timing/model.h"
#include "core/nkassert.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct hent {
    double t;
    uint32_t id; /* compute engine, DMA trigger (from trig0); DMA engines wait in their own tree */
} hent;

/* What the DMA engines need of a load/store's shape: its descriptors'
 * partitions (per, and per + 1 for the first `extra`), bytes per partition,
 * and each descriptor's transfer (bytes / rate, the rate one engine's bytes
 * per ns) and time on the shared HBM bandwidth (hbm_sides * bytes /
 * hbm_gbps), by size: [0] per partitions, [1] per + 1. A program's DMAs come
 * in a handful of shapes (the plan is a function of the two layouts and the
 * op), so the divisions are made once per shape, not at each descriptor. */
typedef struct dkind {
    double dur[2], hbm[2];
    uint64_t part_bytes;
    uint32_t per, extra;
    uint8_t neng;        /* descriptors: one per engine used */
    uint8_t hbm_sides;   /* times its bytes pass the shared HBM bandwidth (0: SBUF to SBUF) */
} dkind;

/* A load/store as the DMA engines see it: one descriptor per engine used,
 * engines e0, e0 + 1, ... (mod the engine count), partitions spread evenly
 * as its kind says. */
typedef struct dmainfo {
    uint32_t kind;       /* s->kinds[kind] */
    uint16_t queue;
    uint8_t e0, neng;
    uint8_t store;       /* to HBM */
    uint8_t left;        /* descriptors not started (neng <= NK_ARCH_MAX_DMA_ENGINES) */
} dmainfo;
_Static_assert(sizeof(dmainfo) == 12, "dmainfo is 12 bytes");
_Static_assert(NK_ARCH_MAX_DMA_ENGINES <= UINT8_MAX, "a DMA's descriptor count fits dmainfo.left");

typedef struct engine {
    uint32_t off, end, cur;          /* its instructions: stream[off..end) */
    double fixed_free, stream_free;  /* Vector/Scalar/GpSimd stages */
    double ls_free, mm_free, mm_start; /* Tensor engine */
    int queued;
} engine;

typedef struct dmaeng {
    double busy;
    uint64_t nonempty; /* queues with descriptors left (bit q) */
    uint32_t rr;       /* next queue to serve */
} dmaeng;

/* How a dependency edge j -> i passes j's completion on (decided once per
 * edge, before the run). */
enum {
    EDGE_WAIT = 0,  /* i waits for done[j]: i is a DMA (its trigger), or on j's engine and reads j's output */
    EDGE_NONE,      /* i on j's engine, in order, not reading j's output: nothing to wait for */
    EDGE_SEM,       /* another engine: done[j] plus the semaphore latency */
    EDGE_SEM_LS     /* the same, and i's LoadStationary waits for it too */
};

/* A counter filled sample by sample: grows as it goes, trimmed at the end. */
typedef struct cbuild {
    nk_counter *c;
    uint32_t cap;
    int oom;
} cbuild;

static int cb_init(cbuild *b, nk_counter *c, const char *name, const char *unit, uint32_t cap)
{
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->unit, sizeof c->unit, "%s", unit);
    b->c = c;
    b->cap = cap ? cap : 1;
    b->oom = 0;
    c->n = 0;
    c->t = nk__big_malloc(b->cap * sizeof *c->t);
    c->value = nk__big_malloc(b->cap * sizeof *c->value);
    if (!c->t || !c->value)
        return NK_ENOMEM;
    c->t[0] = c->value[0] = 0;
    c->n = 1;
    return 0;
}

/* The value from time t on: the last sample's when t is its time, else a new one. */
static inline void cb_put(cbuild *b, double t, double v)
{
    nk_counter *c = b->c;
    if (c->t[c->n - 1] == t) {
        c->value[c->n - 1] = v;
        return;
    }
    if (c->n == b->cap) {
        uint32_t cap = b->cap > UINT32_MAX / 2 ? UINT32_MAX : b->cap * 2;
        double *nt = cap > b->cap ? nk__big_realloc(c->t, cap * sizeof *nt) : NULL;
        if (nt)
            c->t = nt;
        double *nv = nt ? nk__big_realloc(c->value, cap * sizeof *nv) : NULL;
        if (!nv) {
            b->oom = 1;
            return;
        }
        c->value = nv;
        b->cap = cap;
    }
    c->t[c->n] = t;
    c->value[c->n++] = v;
}

static int cb_finish(cbuild *b)
{
    nk_counter *c = b->c;
    if (b->oom)
        return NK_ENOMEM;
    if (c->n < b->cap) { /* the counter keeps what it holds, not its guess */
        double *nt = realloc(c->t, c->n * sizeof *nt);
        if (nt)
            c->t = nt;
        double *nv = realloc(c->value, c->n * sizeof *nv);
        if (nv)
            c->value = nv;
    }
    return 0;
}

typedef nk__mpoint mpoint;

/* By time, then frees first (the smaller delta). Points with equal keys are
 * equal values, so the sums below do not depend on how ties fall. */
static inline int mpoint_less(const mpoint *a, const mpoint *b)
{
    return a->t < b->t || (a->t == b->t && a->delta < b->delta);
}
NK__DEFINE_SORT(sort_mpoints, mpoint, mpoint_less)

/* A change of the throughput: n equal ones (the descriptors of one DMA
 * start together on as many engines, at one rate, and end together). */
typedef struct tpoint {
    double t, delta;
    uint32_t n;
} tpoint;

/* By time, then frees first (the smaller delta), as mpoint_less. */
static inline int tpoint_less(const tpoint *a, const tpoint *b)
{
    return a->t < b->t || (a->t == b->t && a->delta < b->delta);
}

/* One step of the throughput's sweep: the changes pt, next_t the time of
 * the change after them (NAN for none). n equal changes are taken one by
 * one, as n points would be: each but the last has the next at its time. */
typedef struct tsweep {
    double v;
    long active; /* transfers in flight */
} tsweep;

static inline void tsweep_step(tsweep *w, cbuild *b, const tpoint *pt, int more, double next_t)
{
    for (uint32_t k = 0; k < pt->n; k++) {
        w->v += pt->delta;
        w->active += pt->delta > 0 ? 1 : -1;
        if (!w->active)
            w->v = 0; /* nothing in flight: exactly zero, whatever the rounding */
    }
    if (more && next_t == pt->t)
        return; /* the value after every change at this time */
    nk_counter *c = b->c;
    if (fabs(c->value[c->n - 1] - w->v) <= 1e-12 * w->v)
        return; /* the same rate, summed in another order */
    cb_put(b, pt->t, w->v);
}

/* The ends of the transfers in flight, earliest (then largest rate) first. */
typedef struct endheap {
    tpoint *h;
    uint32_t n, cap;
} endheap;

static int eh_push(endheap *e, tpoint x)
{
    if (e->n == e->cap) {
        uint32_t cap = e->cap ? e->cap * 2 : 64;
        tpoint *h = realloc(e->h, cap * sizeof *h);
        if (!h)
            return NK_ENOMEM;
        e->h = h;
        e->cap = cap;
    }
    uint32_t i = e->n++;
    while (i > 0 && tpoint_less(&x, &e->h[(i - 1) / 2])) {
        e->h[i] = e->h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    e->h[i] = x;
    return 0;
}

static tpoint eh_pop(endheap *e)
{
    tpoint top = e->h[0], x = e->h[--e->n];
    uint32_t i = 0, n = e->n;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && tpoint_less(&e->h[c + 1], &e->h[c]))
            c++;
        if (!tpoint_less(&e->h[c], &x))
            break;
        e->h[i] = e->h[c];
        i = c;
    }
    if (n)
        e->h[i] = x;
    return top;
}

/* DMA throughput as a step function that changes exactly where transfers
 * start and end: the sum of the rates (bytes / duration) of the transfers in
 * flight, so its integral is the bytes moved. At most 2 samples per transfer
 * plus the first; equal neighbouring values (to 1e-12, as one transfer
 * hands over to another of the same rate) are one sample.
 *
 * It is swept while the simulation runs, so that no descriptor has to be
 * kept: descriptors start in time order (the simulation's events are taken
 * in time order), the starts at one time wait in a small group by rate
 * until a later start (or the end) closes it, and the ends wait in a heap of
 * the transfers in flight (a DMA engine moves one descriptor at a time: a
 * few dozen). The changes are taken in order of time, frees first, then
 * starts by rate; a descriptor of no bytes or no duration changes nothing.
 * Descriptors that start at one time with one rate and one end (a DMA's, on
 * each of its engines) are one entry with their count, in the group and in
 * the heap, and are summed one by one as separate entries would be. */
typedef struct gstart {
    double t, rate, end;
    uint32_t n; /* descriptors with these three */
} gstart;

typedef struct tstream {
    cbuild b;
    endheap eh;
    gstart *g;          /* the starts at time g[0].t, by rate */
    uint32_t ng, gcap;
    tsweep w;
    int rc;
} tstream;

/* Takes every change up to the starts at time next (have_next 0: all of them). */
static void ts_drain(tstream *z, int have_next, double next)
{
    uint32_t gi = 0;
    while (!z->rc) {
        int have_s = gi < z->ng;
        tpoint cur;
        if (z->eh.n && (have_s ? tpoint_less(&z->eh.h[0], &(tpoint){z->g[gi].t, z->g[gi].rate, 1})
                               : !have_next || z->eh.h[0].t <= next))
            cur = eh_pop(&z->eh);
        else if (have_s) {
            cur = (tpoint){z->g[gi].t, z->g[gi].rate, z->g[gi].n};
            if ((z->rc = eh_push(&z->eh, (tpoint){z->g[gi].end, -z->g[gi].rate, z->g[gi].n})))
                break;
            gi++;
        } else
            break;
        /* the time of the change after this one */
        int more = 0;
        double next_t = 0;
        if (gi < z->ng) {
            more = 1;
            next_t = z->g[gi].t;
        } else if (have_next) {
            more = 1;
            next_t = next;
        }
        if (z->eh.n && (!more || z->eh.h[0].t < next_t)) {
            more = 1;
            next_t = z->eh.h[0].t;
        }
        tsweep_step(&z->w, &z->b, &cur, more, next_t);
    }
    z->ng = 0;
}

/* A descriptor moving bytes from start to end (starts come in time order). */
static void ts_add(tstream *z, double start, double end, uint64_t bytes)
{
    if (!(end > start) || !bytes || z->rc)
        return;
    NK_ASSERT(!z->ng || start >= z->g[0].t);
    if (z->ng && start != z->g[0].t)
        ts_drain(z, 1, start);
    gstart x = {start, (double)bytes / (end - start), end, 1};
    uint32_t j = z->ng;
    while (j > 0 && x.rate < z->g[j - 1].rate)
        j--;
    for (uint32_t q = j; q > 0 && z->g[q - 1].rate == x.rate; q--)
        if (z->g[q - 1].end == x.end) { /* one more of the same: a DMA's descriptors */
            z->g[q - 1].n++;
            return;
        }
    if (z->ng == z->gcap) {
        uint32_t cap = z->gcap ? 2 * z->gcap : 64;
        gstart *g = realloc(z->g, cap * sizeof *g);
        if (!g) {
            z->rc = NK_ENOMEM;
            return;
        }
        z->g = g;
        z->gcap = cap;
    }
    memmove(z->g + j + 1, z->g + j, (z->ng - j) * sizeof *z->g);
    z->g[j] = x;
    z->ng++;
}

static void ts_free(tstream *z)
{
    free(z->eh.h);
    free(z->g);
    z->eh.h = NULL;
    z->g = NULL;
}

_Static_assert(NK_EV_DMA_ISSUE + 1 == NK_EV_DMA_TRIGGER, "nothing sorts between a DMA's issue bar and its trigger");

/* A DMA's two events, its trigger and its issue bar, as the run leaves them
 * (its trigger's start and its completion) for the events' merge to make:
 * 24 bytes a DMA, where the two events take 48. */
typedef struct dma_rec {
    double start, done;
    uint32_t instr;
    uint16_t queue;
} dma_rec;

typedef struct sim {
    nk__pack pk;        /* the per-instruction and per-DMA arrays (alloc_sim) */
    const nk_program *p;
    const nk_arch *a;
    nk_timeline *tl;    /* NULL: the device time only (nk__time_total) */
    uint32_t n;
    uint32_t ncores;
    /* the order timed: NULL arrays for the program as it is */
    const uint32_t *ord, *vdep_off, *vndep, *vdeps;
    const uint16_t *vqueue;
    uint8_t *core;      /* per instruction: its physical NeuronCore (NULL with one: core_of) */
    uint8_t *eng;       /* per instruction: its engine */
    uint16_t *unit;     /* per instruction: its launch unit (when there are several) */
    /* SPMD: instances on one core run one after another */
    uint32_t *inst_off; /* instructions of instance k: [inst_off[k], inst_off[k + 1]) */
    uint32_t *inst_left;/* per instance: instructions not committed yet */
    uint32_t *inst_next;/* per instance: the next instance on its core + 1 (0: none) */
    double *inst_end;   /* per instance: latest completion so far */
    uint8_t *inst_gated;/* per instance: waits for an earlier instance on its core */
    double *unit_t0;    /* per instance: when it may start (sequences: after the previous kernel's launch) */
    uint32_t *rem;      /* dependencies not yet resolved */
    uint32_t *succ_off, *succ;
    uint8_t *edge;      /* per successor edge: EDGE_* */
    uint32_t *stream;   /* the compute instructions' ids grouped by engine */
    double *ready;      /* compute: earliest start from dependencies; DMA: start of transfers */
    double *aux;        /* Tensor engine: LS readiness; DMA: trigger time */
    double *done;       /* output visible (DMA: last transfer end) */
    /* DMA instructions' descriptors: dma[dord[i]] (a compute instruction's
     * cost is computed when it commits, its one use: not stored) */
    dmainfo *dma;
    uint32_t *dord;
    dkind *kinds;       /* the DMAs' shapes */
    uint32_t nkinds;
    engine e[NK_MAX_CORES][NK_ENGINE_DMA];
    double lock_sbuf[NK_MAX_CORES], lock_psum[NK_MAX_CORES];
    double core_end[NK_MAX_CORES]; /* latest instruction end per core */
    uint32_t ncomp;     /* heap ids below this are compute engines (core * NK_ENGINE_DMA + engine) */
    uint32_t trig0;     /* heap id of instruction i's DMA trigger: trig0 + i */
    double sync_free[NK_MAX_CORES]; /* each core's Sync engine: free for the next trigger */
    /* dma_trigger_in_order: each core's next DMA to trigger, the DMA after
     * each one on its core (UINT32_MAX: none), and which wait, resolved, for
     * an earlier trigger (their readiness in aux) */
    uint32_t sync_head[NK_MAX_CORES];
    uint32_t *dma_after;
    uint8_t *parked;
    uint32_t ne, nq;
    /* DMA queues: each core's DMA instructions by queue, in order
     * (qlist[qoff[core * nq + q] ..]); each DMA engine serves a queue in
     * that order, skipping the instructions that use none of its
     * descriptors: qcur[g * nq + q] is engine g's next there (one entry per
     * instruction, not per descriptor). hinst[g * nq + q] is that
     * instruction (UINT32_MAX past the end) and hready[g * nq + q] when it
     * may start its descriptor, INFINITY until it is triggered (both set as
     * the cursor moves and hready when the head is triggered), so that an
     * engine looks over its queues without reading each head's record.
     * qen[k] is qlist[k]'s first engine and engine count (e0 | neng << 8),
     * so that the skipping reads one array in order, not each record */
    uint32_t *qlist, *qoff, *qcur, *hinst;
    uint16_t *qen;
    double *hready;
    dmaeng *d;          /* core * ne + DMA engine */
    uint8_t *gcore, *geng; /* per DMA engine g: its core and its engine on that core */
    /* DMA engines' next events: a tournament tree over dnext (the engine's
     * event time, INFINITY for none), ties to the lower engine, as the
     * engines' heap ids ncomp + g would order them */
    double *dnext;
    uint32_t *win, nleaf;
    double hbm_free[NK_MAX_CORES]; /* each core's share of the HBM bandwidth */
    /* a core whose DMA engines move as one (gang_start): only its engine 0
     * is in the tree, and its state stands for every engine's */
    uint8_t gang[NK_MAX_CORES];
    uint64_t gang_starts, gang_parts; /* gang_start's calls, and the gangs they parted */
    /* the timeline's events, written stream by stream: each stream's events
     * come in time order, so finish merges them rather than sorting. The
     * compute engines' are written as the run makes them; a DMA's trigger
     * and issue bar are made by the merge itself, from its trigger's start
     * (aux) and its completion (done), in the order tseq gives (through
     * drec, 24 bytes a DMA, once aux and done have gone): the run holds 4
     * bytes a DMA for them, not their 48, and they are written once, where
     * the merge puts them */
    uint32_t *ev_cur, *ev_off; /* per stream (ev_stream): next slot, first slot */
    uint32_t *tseq, ntseq;     /* the DMAs in the order they were triggered */
    dma_rec *drec;             /* after the run, each core's DMAs in their events' order (dma_records) */
    uint32_t doff[NK_MAX_CORES + 1];
    uint32_t *dspan_at;        /* per DMA (dord): its latest DMA span's slot + 1 (0: none yet) */
    unsigned flags;            /* NK_TL_* */
    tstream tput;              /* the DMA throughput counter, swept as descriptors start */
    hent *heap;
    uint32_t nheap, cap_heap;
    uint32_t committed;
    int rc;
} sim;

static double dmax(double a, double b) { return a > b ? a : b; }

static inline const nk_instr *instr_at(const sim *s, uint32_t i)
{
    return &s->p->instrs[s->ord ? s->ord[i] : i];
}

static inline dmainfo *dma_of(const sim *s, uint32_t i) { return &s->dma[s->dord[i]]; }

static inline uint32_t core_of(const sim *s, uint32_t i) { return s->core ? s->core[i] : 0; }

/* Instruction i's DMA queue (its record's, or the order view's); a DMA's
 * is in its dmainfo too. */
static inline uint16_t queue_at(const sim *s, uint32_t i) { return s->vqueue ? s->vqueue[i] : instr_at(s, i)->queue; }

static inline uint32_t ndep_of(const sim *s, uint32_t i)
{
    return s->vndep ? s->vndep[i] : instr_at(s, i)->ndep;
}

static inline const uint32_t *deps_of(const sim *s, uint32_t i)
{
    const uint32_t *d = s->vndep ? s->vdeps : s->p->deps; /* NULL when there are none */
    return d ? d + (s->vndep ? s->vdep_off[i] : instr_at(s, i)->dep_off) : NULL;
}

/* ---- heap of (time, id), earliest first; ties by id for determinism */

static inline int hless(hent a, hent b) { return a.t < b.t || (a.t == b.t && a.id < b.id); }

static void heap_push(sim *s, double t, uint32_t id)
{
    if (s->nheap == s->cap_heap) {
        uint32_t cap = s->cap_heap ? s->cap_heap * 2 : 256;
        hent *h = realloc(s->heap, cap * sizeof *h);
        if (!h) {
            s->rc = NK_ENOMEM;
            return;
        }
        s->heap = h;
        s->cap_heap = cap;
    }
    uint32_t i = s->nheap++;
    hent x = {t, id};
    while (i > 0 && hless(x, s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = x;
}

static hent heap_pop(sim *s)
{
    hent top = s->heap[0], x = s->heap[--s->nheap];
    uint32_t i = 0, n = s->nheap;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && hless(s->heap[c + 1], s->heap[c]))
            c++;
        if (!hless(s->heap[c], x))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n)
        s->heap[i] = x;
    return top;
}

/* ---- the DMA engines' tree */

/* Gangs. A core's DMA engines in the same state (the same place in each
 * queue, the same queue to serve next, the same end of their last
 * descriptor) do the same at their next events: each one's event at t does
 * what engine 0's did, in engine order, nothing else coming between them
 * (compute events at t come before the DMA engines', triggers after; a DMA
 * commits at its last descriptor's start and wakes nothing at t; a trigger
 * wakes each engine of its DMA alike). Such engines are a gang: engine 0
 * alone is in the tree, its state stands for all, and its event starts a
 * descriptor on each engine in turn (gang_start), the same work in the same
 * order as theirs, without each engine's pass over its queues and the tree.
 * The engines of a core start as a gang when every queue's first
 * instruction is on all of them, and part for good when their descriptors'
 * ends differ (a tile whose partitions do not spread evenly, or the shared
 * HBM bandwidth holding the later engines back) or a queue comes to an
 * instruction that is not on all of them: from there each engine goes on
 * alone, from its own end and its own place in that queue. (A parted core
 * is not gathered again.) The timeline is the same, bit for bit, either way
 * (nk__dma_gangs 0 times without gangs: for the tests), while each
 * descriptor ends after it starts. One that ends when it starts (a transfer
 * shorter than half the spacing of doubles at its time: past 2^34 ns, with
 * target files far faster than any chip) would have its engine take a
 * second ready descriptor at t before the next engine takes its first,
 * which a gang does not do; the descriptors' order, and HBM's grants, would
 * then differ. */
int nk__dma_gangs = 1;
_Atomic uint64_t nk__dma_gang_starts, nk__dma_gang_parts;

static inline uint32_t dbetter(const sim *s, uint32_t a, uint32_t b)
{
    return s->dnext[b] < s->dnext[a] || (s->dnext[b] == s->dnext[a] && b < a) ? b : a;
}

/* Engine g's next event at t, up the path from its leaf. A right child's
 * winner b is a higher engine than the left one's a, so a wins ties: the
 * one compare. The empty asm keeps it a branch: as a conditional move it
 * would make the next event wait for the times' loads (the run 1.4x
 * slower), where the branch, mostly predicted, lets the next event go on. */
static void dset(sim *s, uint32_t g, double t)
{
    s->dnext[g] = t;
    for (uint32_t k = (s->nleaf + g) >> 1; k; k >>= 1) {
        uint32_t a = s->win[2 * k], b = s->win[2 * k + 1];
        if (s->dnext[b] < s->dnext[a]) {
            __asm__("" : "+r"(b));
            a = b;
        }
        s->win[k] = a;
    }
}

/* ---- events */

/* Event streams: each core's compute engines' (core * NK_ENGINE_DMA +
 * engine). A DMA's two events (its trigger and its issue bar) are never
 * stored as a stream: the events' merge makes them from the order the DMAs
 * were triggered in (order_events). */
static inline uint32_t ev_stream(uint32_t core, uint32_t engine) { return core * NK_ENGINE_DMA + engine; }

/* A compute instruction's event. */
static inline void add_event_on(sim *s, uint32_t i, int engine, int kind, double start, double end)
{
    uint32_t at = s->ev_cur[ev_stream(core_of(s, i), (uint32_t)engine)]++;
    s->tl->events[at] = (nk_event){i, (uint8_t)engine, (uint8_t)kind, queue_at(s, i), start, end};
}

/* Instruction i's span on its engine ends at end: the latest end per core
 * (the launch's tear-down follows it). The span itself is its events'
 * (instr_spans, after the run). */
static inline void note_span(sim *s, uint32_t i, double end)
{
    uint32_t c = core_of(s, i);
    s->core_end[c] = dmax(s->core_end[c], end);
}

static void on_resolved(sim *s, uint32_t i);

/* SPMD: one more instruction of instance k has completed at t. When it was
 * the last, the next instance on the same core may start (the runtime
 * launches a core's instances one after another). */
static void instance_step(sim *s, uint32_t k, double t)
{
    s->inst_end[k] = dmax(s->inst_end[k], t);
    if (--s->inst_left[k])
        return;
    double t0 = s->inst_end[k];
    if (s->p->nseg > 1 && s->inst_off[k + 1] > s->inst_off[k]) /* a kernel of a sequence ends: its tear-down */
        t0 += s->a->launch_teardown_ns + s->a->launch_startup_ns; /* ... and the next one's start-up */
    for (uint32_t nx = s->inst_next[k]; nx; nx = s->inst_next[nx - 1]) {
        uint32_t b = s->inst_off[nx - 1], e = s->inst_off[nx];
        s->inst_end[nx - 1] = t0;
        s->unit_t0[nx - 1] = t0;
        for (uint32_t i = b; i < e; i++) {
            s->ready[i] = dmax(s->ready[i], t0);
            if (s->eng[i] == NK_ENGINE_TENSOR)
                s->aux[i] = dmax(s->aux[i], t0);
            if (--s->rem[i] == 0)
                on_resolved(s, i);
        }
        if (e > b)
            break; /* else an instance with no instruction: done at once, the next one follows */
    }
}

/* Instruction j has its completion time: pass it on to its successors. */
static void propagate(sim *s, uint32_t j)
{
    double dj = s->done[j], sem = dj + s->a->sem_latency_ns;
    s->committed++;
    for (uint32_t k = s->succ_off[j]; k < s->succ_off[j + 1]; k++) {
        uint32_t i = s->succ[k];
        switch (s->edge[k]) {
        case EDGE_WAIT:
            s->ready[i] = dmax(s->ready[i], dj);
            break;
        case EDGE_SEM_LS:
            s->aux[i] = dmax(s->aux[i], sem);
            /* fall through */
        case EDGE_SEM:
            s->ready[i] = dmax(s->ready[i], sem);
            break;
        default:
            break;
        }
        if (--s->rem[i] == 0)
            on_resolved(s, i);
    }
    if (s->inst_left)
        instance_step(s, s->unit[j], dj);
}

/* ---- compute engines */

static void push_engine(sim *s, uint32_t c, int e)
{
    engine *E = &s->e[c][e];
    if (E->queued || E->cur >= E->end || s->rem[s->stream[E->cur]])
        return;
    uint32_t h = s->stream[E->cur];
    double t = e == NK_ENGINE_TENSOR ? dmax(dmax(s->aux[h], E->ls_free), E->mm_start)
                                     : dmax(s->ready[h], E->fixed_free);
    E->queued = 1;
    heap_push(s, t, c * NK_ENGINE_DMA + (uint32_t)e);
}

static void commit_tensor(sim *s, engine *E, uint32_t h, const nk_cost *c)
{
    double ls = dmax(dmax(s->aux[h], E->ls_free), E->mm_start); /* one weight buffer in the background */
    double ls_end = ls + c->ls_ns;
    double mm = dmax(dmax(ls_end, E->mm_free), s->ready[h]);
    double mm_end = mm + c->stream_ns;
    E->ls_free = ls_end;
    E->mm_free = mm_end;
    E->mm_start = mm;
    s->done[h] = mm_end + c->write_ns;
    if (s->tl) {
        add_event_on(s, h, NK_ENGINE_TENSOR, NK_EV_LOAD_STATIONARY, ls, ls_end);
        add_event_on(s, h, NK_ENGINE_TENSOR, NK_EV_MULTIPLY_MOVING, mm, mm_end);
    }
    note_span(s, h, mm_end);
}

static void commit_stream(sim *s, uint32_t core, int e, engine *E, uint32_t h, const nk_cost *c)
{
    const nk_arch *a = s->a;
    double f = dmax(s->ready[h], E->fixed_free);
    double st = dmax(f + c->fixed_ns, E->stream_free);
    int lock_s = a->sbuf_dve_pool_exclusive && c->sbuf && (e == NK_ENGINE_VECTOR || e == NK_ENGINE_GPSIMD);
    int lock_p = a->psum_dve_act_exclusive && c->psum && (e == NK_ENGINE_VECTOR || e == NK_ENGINE_SCALAR);
    if (lock_s)
        st = dmax(st, s->lock_sbuf[core]);
    if (lock_p)
        st = dmax(st, s->lock_psum[core]);
    double end = st + c->stream_ns;
    /* the bar: the fixed stage right before streaming, after the previous bar */
    double bar = dmax(dmax(st - c->fixed_ns, f), E->stream_free);
    E->fixed_free = st;
    E->stream_free = end;
    if (lock_s)
        s->lock_sbuf[core] = end;
    if (lock_p)
        s->lock_psum[core] = end;
    s->done[h] = end + c->write_ns;
    if (s->tl)
        add_event_on(s, h, e, NK_EV_INSTR, bar, end);
    note_span(s, h, end);
}

static void commit_compute(sim *s, uint32_t id)
{
    uint32_t c = id / NK_ENGINE_DMA;
    int e = (int)(id % NK_ENGINE_DMA);
    engine *E = &s->e[c][e];
    E->queued = 0;
    uint32_t h = s->stream[E->cur++];
    nk_cost cost;
    int rc = nk__time_cost(s->a, s->p, instr_at(s, h), &cost);
    if (rc) { /* an instruction the model does not know: the run stops with it */
        s->rc = rc;
        return;
    }
    if (e == NK_ENGINE_TENSOR)
        commit_tensor(s, E, h, &cost);
    else
        commit_stream(s, c, e, E, h, &cost);
    propagate(s, h);
    push_engine(s, c, e);
}

/* ---- DMA */

static inline void wake(sim *s, uint32_t g, double t)
{
    t = dmax(t, s->d[g].busy);
    if (t < s->dnext[g])
        dset(s, g, t);
}

static void commit_dma(sim *s, uint32_t i)
{
    note_span(s, i, s->done[i]);
    propagate(s, i);
}

/* DMA instruction i is triggered at t: its transfers may start the DMA
 * latency after the trigger starts (semaphore to start [DMAbw], which
 * includes the trigger instruction itself: not added to it). */
static void dma_triggered(sim *s, uint32_t i, double t)
{
    s->aux[i] = t;
    s->ready[i] = t + dmax(s->a->dma_latency_ns, s->a->dma_trigger_ns);
    const dmainfo *m = dma_of(s, i);
    if (m->left == 0) {
        s->done[i] = s->ready[i];
        commit_dma(s, i);
        return;
    }
    uint32_t c = core_of(s, i), g0 = c * s->ne, q = m->queue % s->nq;
    uint32_t neng = s->gang[c] ? 1 : m->neng, e0 = s->gang[c] ? 0 : m->e0; /* a gang: its engine 0 */
    for (uint32_t k = 0, e = e0; k < neng; k++, e = e + 1 == s->ne ? 0 : e + 1) {
        uint32_t slot = (g0 + e) * s->nq + q;
        if (s->hinst[slot] == i) /* the head there */
            s->hready[slot] = s->ready[i];
        wake(s, g0 + e, s->ready[i]);
    }
}

static void trigger_now(sim *s, uint32_t i, double t)
{
    uint32_t c = core_of(s, i);
    double ts = dmax(t, s->sync_free[c]), te = ts + s->a->dma_trigger_ns;
    s->sync_free[c] = te;
    if (s->tl) /* its events once the run is over (order_events): ts is kept in aux */
        s->tseq[s->ntseq++] = i;
    dma_triggered(s, i, ts);
}

/* The trigger of DMA instruction i, popped at its readiness t: it runs on
 * its core's Sync engine when that is free, triggers first come first
 * served (the order the compile step would give the Sync queue, assumed).
 * With dma_trigger_in_order the Sync engine runs them in program order: a
 * trigger whose DMA is not ready holds back every later one. */
static void trigger_dma(sim *s, uint32_t i, double t)
{
    if (!s->a->dma_trigger_in_order) {
        trigger_now(s, i, t);
        return;
    }
    uint32_t c = core_of(s, i);
    if (s->sync_head[c] != i) { /* an earlier DMA of this core is not triggered yet */
        s->aux[i] = t;
        s->parked[i] = 1;
        return;
    }
    for (;;) {
        trigger_now(s, i, t);
        i = s->sync_head[c] = s->dma_after[i];
        if (i == UINT32_MAX || !s->parked[i])
            return;
        s->parked[i] = 0;
        t = s->aux[i];
    }
}

/* Descriptor transfer x into its instruction's DMA span: the one open while
 * its transfers overlap or touch (they come in order of start), else a new
 * one, in the slot its start gives it among all spans v[0..*n). *at: the
 * slot + 1 of that instruction's latest span (0: none yet). */
static inline void span_add(nk_dma_span *v, uint32_t *n, uint32_t *at, const nk_dma_xfer *x)
{
    nk_dma_span *sp = *at ? &v[*at - 1] : NULL;
    if (!sp || x->start > sp->end) {
        sp = &v[(*n)++];
        *sp = (nk_dma_span){x->instr, x->queue, x->to_hbm, 0, 0, 0, 0, 0, x->start, x->end};
        *at = *n;
    }
    sp->descriptors++;
    sp->partitions += x->partitions;
    sp->bytes += x->bytes;
    sp->engines |= 1ull << x->dma_engine;
    sp->end = dmax(sp->end, x->end);
}

/* Starts the descriptor of DMA instruction i on DMA engine g (core * ne +
 * the core's engine e) at time t. */
static void start_desc(sim *s, uint32_t g, uint32_t i, double t)
{
    dmainfo *m = dma_of(s, i);
    const dkind *kd = &s->kinds[m->kind];
    uint32_t c = s->gcore[g], e = s->geng[g];
    uint32_t k = e >= m->e0 ? e - m->e0 : e + s->ne - m->e0, big = k < kd->extra;
    double end = t + kd->dur[big];
    if (kd->hbm_sides) { /* SBUF to SBUF leaves HBM alone */
        s->hbm_free[c] = dmax(s->hbm_free[c], t) + kd->hbm[big];
        end = dmax(end, s->hbm_free[c]);
    }
    if (s->tl) {
        nk_timeline *tl = s->tl;
        uint32_t parts = kd->per + big;
        uint64_t bytes = (uint64_t)parts * kd->part_bytes;
        nk_dma_xfer x = {i, m->queue, (uint8_t)e, m->store, parts, bytes, t, end};
        if (tl->xfers)
            tl->xfers[tl->nxfers++] = x;
        ts_add(&s->tput, t, end, bytes);
        span_add(tl->dspans, &tl->ndspans, &s->dspan_at[s->dord[i]], &x);
    }
    s->d[g].busy = end;
    s->done[i] = dmax(s->done[i], end);
    if (--m->left == 0)
        commit_dma(s, i);
}

/* The first instruction at or after qlist[k] of queue slot cq (core * nq +
 * queue) with a descriptor on the core's DMA engine e, or the slot's end. */
static inline uint32_t next_user(const sim *s, uint32_t e, uint32_t cq, uint32_t k)
{
    for (uint32_t end = s->qoff[cq + 1]; k < end; k++) {
        uint32_t v = s->qen[k], e0 = v & 0xff;
        if ((e >= e0 ? e - e0 : e + s->ne - e0) < v >> 8)
            break;
    }
    return k;
}

/* When queue head i may start a descriptor: its readiness once triggered
 * (resolved DMAs wait for their trigger with INFINITY), else INFINITY. */
static inline double head_ready(const sim *s, uint32_t i) { return s->rem[i] ? INFINITY : s->ready[i]; }

/* The gang led by engine g (its core's engine 0) starts DMA i, the head of
 * queue q at position at of qlist, at t: a descriptor on each engine in
 * turn, as each engine's event at t would. The engines stay one while
 * their descriptors end together and the queue's next instruction is on
 * every engine (so that each engine's cursor comes to it); else each goes
 * on alone from here, its state the leader's but for its own descriptor's
 * end and its own place in queue q (found, as each engine's event found
 * it, before the descriptors start; within one time a head's readiness
 * cannot change, so after would do too). The leader's place is found
 * already. */
static void gang_start(sim *s, uint32_t g, uint32_t i, double t, uint32_t q, uint32_t at)
{
    uint32_t c = s->gcore[g], cq = c * s->nq + q, end = s->qoff[cq + 1], ne = s->ne;
    uint32_t cur[NK_ARCH_MAX_DMA_ENGINES];
    double rdy[NK_ARCH_MAX_DMA_ENGINES];
    int alike = at + 1 == end || (uint32_t)(s->qen[at + 1] >> 8) == ne;
    for (uint32_t e = 1; !alike && e < ne; e++)
        if ((cur[e] = next_user(s, e, cq, at + 1)) < end)
            rdy[e] = head_ready(s, s->qlist[cur[e]]);
    s->gang_starts++;
    for (uint32_t e = 0; e < ne; e++)
        start_desc(s, g + e, i, t);
    uint32_t e = 1;
    while (e < ne && s->d[g + e].busy == s->d[g].busy)
        e++;
    if (e == ne && alike)
        return;
    s->gang[c] = 0;
    s->gang_parts++;
    for (e = 1; e < ne; e++) {
        dmaeng *D = &s->d[g + e];
        uint32_t slot = (g + e) * s->nq + q;
        D->nonempty = s->d[g].nonempty;
        D->rr = s->d[g].rr;
        memcpy(&s->qcur[(g + e) * s->nq], &s->qcur[g * s->nq], s->nq * sizeof *s->qcur);
        memcpy(&s->hinst[(g + e) * s->nq], &s->hinst[g * s->nq], s->nq * sizeof *s->hinst);
        memcpy(&s->hready[(g + e) * s->nq], &s->hready[g * s->nq], s->nq * sizeof *s->hready);
        if (!alike) {
            s->qcur[slot] = cur[e];
            s->hinst[slot] = cur[e] == end ? UINT32_MAX : s->qlist[cur[e]];
            if (cur[e] == end)
                D->nonempty &= ~(1ull << q);
            else {
                D->nonempty |= 1ull << q;
                s->hready[slot] = rdy[e];
            }
        }
        dset(s, g + e, D->busy);
    }
}

/* Engine g may start a descriptor at t: serve its queues round-robin from
 * rr, in order within each queue. The head of a queue starts when it is
 * resolved and ready; else the soonest readiness is when to look again. */
static void dma_event(sim *s, uint32_t g, double t)
{
    dmaeng *D = &s->d[g];
    /* no event until woken again; the tree learns g's next time at the end
     * (the loop reads it only between events; a wake of g meanwhile updates it) */
    s->dnext[g] = INFINITY;
    double soonest = INFINITY;
    uint64_t from_rr = D->nonempty & (~0ull << D->rr);
    uint64_t pass[2] = {from_rr, D->nonempty & ~from_rr};
    uint32_t base = g * s->nq;
    for (int k = 0; k < 2; k++)
        for (uint64_t m = pass[k]; m; m &= m - 1) {
            uint32_t q = (uint32_t)__builtin_ctzll(m), slot = base + q;
            double r = s->hready[slot];
            uint32_t i = s->hinst[slot];
            NK_ASSERT(i == s->qlist[s->qcur[slot]] && r == head_ready(s, i));
            if (r > t) { /* (INFINITY, not triggered yet: no sooner) */
                soonest = r < soonest ? r : soonest;
                continue;
            }
            uint32_t cq = s->gcore[g] * s->nq + q, at = s->qcur[slot];
            if ((s->qcur[slot] = next_user(s, s->geng[g], cq, at + 1)) == s->qoff[cq + 1]) {
                D->nonempty &= ~(1ull << q);
                s->hinst[slot] = UINT32_MAX;
            } else {
                s->hinst[slot] = s->qlist[s->qcur[slot]];
                s->hready[slot] = head_ready(s, s->hinst[slot]);
            }
            D->rr = q + 1 == s->nq ? 0 : q + 1;
            if (s->gang[s->gcore[g]])
                gang_start(s, g, i, t, q, at);
            else
                start_desc(s, g, i, t);
            if (D->busy < s->dnext[g]) /* wake(g, busy) */
                s->dnext[g] = D->busy;
            dset(s, g, s->dnext[g]);
            return;
        }
    if (soonest < INFINITY) { /* wake(g, soonest) */
        soonest = dmax(soonest, D->busy);
        if (soonest < s->dnext[g])
            s->dnext[g] = soonest;
    }
    dset(s, g, s->dnext[g]);
}

static void on_resolved(sim *s, uint32_t i)
{
    int e = s->eng[i];
    if (e == NK_ENGINE_DMA) {
        heap_push(s, s->ready[i], s->trig0 + i);
        s->ready[i] = INFINITY; /* no transfer before the trigger */
    } else
        push_engine(s, core_of(s, i), e);
}

/* ---- setup */

static int check_program(const nk_program *p)
{
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (in->engine >= NK_ENGINE_COUNT || (uint64_t)in->dep_off + in->ndep > p->ndeps)
            return NK_EINVAL;
        /* instances in order, each on a core the model has */
        if (in->inst >= (p->ninst ? p->ninst : 1) || (i && nk__unit_of(p, in) < nk__unit_of(p, &p->instrs[i - 1])) ||
            nk__unit_of(p, in) >= nk__nunits(p) ||
            nk__instr_core(p, in) >= NK_MAX_CORES)
            return NK_EINVAL;
        for (uint32_t k = 0; k < in->ndep; k++)
            if (p->deps[in->dep_off + k] >= i) /* dependencies point backwards */
                return NK_EINVAL;
        if (in->xsrc2 > p->nxop || in->xdst2 > p->nxop || in->xarg > p->nxarg)
            return NK_EINVAL;
        const nk_opnd *ts[5];
        nk__operands(p, in, ts);
        for (int k = 0; k < 5; k++) {
            if (ts[k]->lay > p->nlays || (p->nlays && !p->lays))
                return NK_EINVAL;
            const nk_layout *l = nk__lay(p, ts[k]);
            if (ts[k]->buf >= p->nbufs || (ts[k]->buf && l->mem != NK_SHARED_HBM && l->ndim < 1))
                return NK_EINVAL;
        }
    }
    return 0;
}

/* An order view from the scheduler: the program was checked when traced or
 * read; the view's own arrays must still make sense. */
static int check_view(const nk_program *p, const nk__order_view *v)
{
    for (uint32_t i = 0; i < p->ninstr; i++) {
        if (v->order[i] >= p->ninstr || (uint64_t)v->dep_off[i] + v->ndep[i] > v->ndeps)
            return NK_EINVAL;
        const nk_instr *in = &p->instrs[v->order[i]];
        if (i && nk__unit_of(p, in) < nk__unit_of(p, &p->instrs[v->order[i - 1]]))
            return NK_EINVAL;
        for (uint32_t k = 0; k < v->ndep[i]; k++)
            if (v->deps[v->dep_off[i] + k] >= i)
                return NK_EINVAL;
    }
    return 0;
}

/* nk__writes_into(p, w, t) with t's region r already known. */
static int writes_region(const nk_program *p, const nk_instr *w, const nk__region *r)
{
    nk__region d = nk__region_of(p, &w->dst);
    if (nk__regions_overlap(&d, r))
        return 1;
    const nk_opnd *d2 = nk__dst2(p, w);
    if (!d2->buf)
        return 0;
    d = nk__region_of(p, d2);
    return nk__regions_overlap(&d, r);
}

/* The regions of instruction i's operands that edges into it compare
 * (computed once per instruction, for all its edges). */
typedef struct iregions {
    uint32_t i;
    int have;
    int nsrc;
    nk__region src[3];   /* of src[k] with a buffer, k < nsrc */
    uint8_t used[3];
    nk__region st;       /* src[0]: what a Tensor-engine instruction's LoadStationary reads */
} iregions;

static void ensure_regions(const sim *s, iregions *r, uint32_t i)
{
    if (r->have && r->i == i)
        return;
    const nk_instr *in = instr_at(s, i);
    r->i = i;
    r->have = 1;
    r->nsrc = in->nsrc < 3 ? in->nsrc : 3;
    for (int k = 0; k < r->nsrc; k++) {
        const nk_opnd *t = nk__src(s->p, in, k);
        if ((r->used[k] = t->buf != 0))
            r->src[k] = nk__region_of(s->p, t);
    }
    r->st = nk__region_of(s->p, &in->src[0]);
}

/* How the edge j -> i passes j's completion on (propagate). */
static uint8_t edge_kind(const sim *s, iregions *r, uint32_t i, uint32_t j)
{
    const nk_program *p = s->p;
    int ei = s->eng[i], ej = s->eng[j];
    if (ei == NK_ENGINE_DMA)
        return EDGE_WAIT; /* the trigger; latency added on resolve */
    if (ei == ej) {
        /* in order on one engine: only a read of the output waits for its write
           (nk__reads_output); the Tensor engine's PSUM writes are ordered by its pipeline */
        if (ei == NK_ENGINE_TENSOR)
            return EDGE_NONE;
        ensure_regions(s, r, i);
        const nk_instr *pj = instr_at(s, j);
        for (int k = 0; k < r->nsrc; k++)
            if (r->used[k] && writes_region(p, pj, &r->src[k]))
                return EDGE_WAIT;
        return EDGE_NONE;
    }
    if (ei != NK_ENGINE_TENSOR) /* nk__feeds_stationary */
        return EDGE_SEM;
    ensure_regions(s, r, i);
    return writes_region(p, instr_at(s, j), &r->st) ? EDGE_SEM_LS : EDGE_SEM;
}

static int build_graph(sim *s)
{
    const nk_program *p = s->p;
    size_t ndeps = 0;
    for (uint32_t i = 0; i < s->n; i++)
        ndeps += ndep_of(s, i);
    s->succ = nk__big_fixed((ndeps + 1) * sizeof *s->succ);
    s->edge = nk__big_fixed(ndeps + 1);
    if (!s->succ || !s->edge)
        return NK_ENOMEM;
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t nd = ndep_of(s, i);
        const uint32_t *dp = deps_of(s, i);
        s->rem[i] = nd;
        for (uint32_t k = 0; k < nd; k++)
            s->succ_off[dp[k] + 1]++;
    }
    for (uint32_t i = 0; i < s->n; i++)
        s->succ_off[i + 1] += s->succ_off[i];
    /* a cursor per instruction, in ready's room (run sets ready first) */
    _Static_assert(sizeof *s->ready >= sizeof(uint32_t), "ready has a cursor's room");
    uint32_t *fill = (uint32_t *)(void *)s->ready;
    memcpy(fill, s->succ_off, s->n * sizeof *fill);
    iregions reg = {0};
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t nd = ndep_of(s, i);
        const uint32_t *dp = deps_of(s, i);
        for (uint32_t k = 0; k < nd; k++) {
            uint32_t at = fill[dp[k]]++;
            s->succ[at] = i;
            s->edge[at] = edge_kind(s, &reg, i, dp[k]);
        }
    }
    uint32_t cnt[NK_MAX_CORES][NK_ENGINE_COUNT] = {{0}}, off = 0;
    for (uint32_t i = 0; i < s->n; i++)
        cnt[core_of(s, i)][s->eng[i]]++;
    for (uint32_t c = 0; c < s->ncores; c++)
        for (int e = 0; e < NK_ENGINE_DMA; e++) {
            s->e[c][e].off = s->e[c][e].cur = s->e[c][e].end = off;
            off += cnt[c][e];
        }
    for (uint32_t i = 0; i < s->n; i++) {
        int e = s->eng[i];
        if (e != NK_ENGINE_DMA)
            s->stream[s->e[core_of(s, i)][e].end++] = i;
    }
    /* launch units (SPMD instances, or the kernels of a sequence): each
     * waits for the one before it on its core */
    uint32_t nu = nk__nunits(p);
    if (nu > 1) {
        uint32_t last[NK_MAX_CORES] = {0};
        for (uint32_t i = 0; i < s->n; i++)
            s->inst_off[s->unit[i] + 1]++;
        for (uint32_t k = 0; k < nu; k++) {
            s->inst_left[k] = s->inst_off[k + 1];
            s->inst_off[k + 1] += s->inst_off[k];
            uint32_t c = nk__unit_core(p, k);
            if (last[c]) {
                s->inst_next[last[c] - 1] = k + 1;
                s->inst_gated[k] = 1;
            }
            last[c] = k + 1;
        }
        for (uint32_t k = 0; k < nu; k++) {
            uint32_t nx = s->inst_next[k];
            for (uint32_t i = nx ? s->inst_off[nx - 1] : 0; nx && i < s->inst_off[nx]; i++)
                s->rem[i]++;
        }
    }
    return 0;
}

/* The DMAs' shapes, found again by what the plan is made of: the
 * destination's and source's layouts and whether the load transposes
 * (open addressing; slot 0 free, else kind + 1). */
typedef struct kindtab {
    uint64_t *key;      /* per kind */
    uint32_t *slot, cap;
    uint32_t cap_kinds;
} kindtab;

static uint64_t kind_key(const nk_instr *in)
{
    return (uint64_t)in->dst.lay << 25 | (uint64_t)in->src[0].lay << 1 | (in->op == NK_OP_LOAD_TRANSPOSE);
}

static uint32_t kind_hash(uint64_t k)
{
    k *= 0x9E3779B97F4A7C15ull;
    return (uint32_t)(k >> 32);
}

/* The kind of DMA instruction in, made the first time its shape is seen.
 * NK_EINVAL: the model cannot plan it; NK_ENOMEM: the table cannot grow. */
static int kind_of(sim *s, kindtab *kt, const nk_instr *in, uint32_t *kind)
{
    if (in->nsrc < 1)
        return NK_EINVAL;
    uint64_t key = kind_key(in);
    uint32_t h = 0;
    if (kt->cap) {
        for (h = kind_hash(key) & (kt->cap - 1); kt->slot[h]; h = (h + 1) & (kt->cap - 1))
            if (kt->key[kt->slot[h] - 1] == key) {
                *kind = kt->slot[h] - 1;
                return 0;
            }
    }
    nk_dma_plan pl;
    if (nk__time_dma_plan(s->a, s->p, in, &pl))
        return NK_EINVAL;
    if (s->nkinds == kt->cap_kinds) {
        uint32_t cap = kt->cap_kinds ? 2 * kt->cap_kinds : 16;
        dkind *k = realloc(s->kinds, cap * sizeof *k);
        if (!k)
            return NK_ENOMEM;
        s->kinds = k;
        uint64_t *kk = realloc(kt->key, cap * sizeof *kk);
        if (!kk)
            return NK_ENOMEM;
        kt->key = kk;
        kt->cap_kinds = cap;
    }
    if (2 * (s->nkinds + 1) > kt->cap) { /* at most half full */
        uint32_t cap = kt->cap ? 2 * kt->cap : 64, *sl = calloc(cap, sizeof *sl);
        if (!sl)
            return NK_ENOMEM;
        for (uint32_t k = 0; k < s->nkinds; k++) {
            uint32_t j = kind_hash(kt->key[k]) & (cap - 1);
            while (sl[j])
                j = (j + 1) & (cap - 1);
            sl[j] = k + 1;
        }
        free(kt->slot);
        kt->slot = sl;
        kt->cap = cap;
        for (h = kind_hash(key) & (cap - 1); kt->slot[h]; h = (h + 1) & (cap - 1))
            ;
    }
    *kind = s->nkinds++;
    kt->key[*kind] = key;
    kt->slot[h] = *kind + 1;
    uint32_t per = pl.engines ? pl.partitions / pl.engines : 0, extra = pl.partitions - per * pl.engines;
    double rate = s->a->dma_engine_gbps * pl.efficiency; /* bytes per ns of one engine */
    dkind *kd = &s->kinds[*kind];
    *kd = (dkind){{0, 0}, {0, 0}, pl.part_bytes, per, extra, (uint8_t)pl.engines, pl.hbm_sides};
    for (int k = 0; k < 2; k++) { /* the expressions a descriptor's start had */
        uint64_t bytes = (uint64_t)(per + (uint32_t)k) * pl.part_bytes;
        kd->dur[k] = (double)bytes / rate;
        kd->hbm[k] = (double)pl.hbm_sides * (double)bytes / s->a->hbm_gbps;
    }
    return 0;
}

/* One pass over the records: each DMA instruction's kind and descriptors
 * (the engines rotate per core in program order), then each core's DMA
 * queues in program order (one descriptor per engine and instruction, so
 * the instruction says which descriptor it is). */
static int plan_all(sim *s)
{
    size_t nslot = (size_t)s->ncores * s->ne * s->nq, ncq = (size_t)s->ncores * s->nq;
    uint64_t total = 0;
    uint32_t rots[NK_MAX_CORES] = {0}, ndma = 0;
    s->qoff = calloc(ncq + 1, sizeof *s->qoff);
    s->qcur = calloc(nslot, sizeof *s->qcur);
    s->hinst = malloc((nslot ? nslot : 1) * sizeof *s->hinst);
    s->hready = malloc((nslot ? nslot : 1) * sizeof *s->hready);
    if (!s->qoff || !s->qcur || !s->hinst || !s->hready)
        return NK_ENOMEM;
    for (size_t k = 0; k < nslot; k++) /* nothing is triggered before the run */
        s->hready[k] = INFINITY;
    kindtab kt = {0};
    for (uint32_t i = 0; i < s->n; i++) {
        const nk_instr *in = instr_at(s, i);
        if (s->eng[i] != NK_ENGINE_DMA)
            continue;
        uint32_t kind;
        int rc = kind_of(s, &kt, in, &kind);
        if (rc) {
            free(kt.slot);
            free(kt.key);
            return rc;
        }
        uint8_t neng = s->kinds[kind].neng;
        uint16_t qi = queue_at(s, i), q = (uint16_t)(qi % s->nq);
        uint32_t *rp = &rots[core_of(s, i)], rot = *rp;
        s->dord[i] = ndma;
        s->dma[ndma] = (dmainfo){kind, qi, (uint8_t)rot, neng, nk__opnd_mem(s->p, &in->dst) == NK_SHARED_HBM,
                                 neng};
        s->qoff[core_of(s, i) * s->nq + q + 1]++;
        ndma++;
        *rp = (rot + neng) % s->ne;
        total += neng;
    }
    free(kt.slot);
    free(kt.key);
    if (total > UINT32_MAX)
        return NK_ELIMIT;
    /* at most a span per descriptor: the pages past the spans made are never
     * touched. Their first megabytes stay on small pages, since a huge page
     * at the frontier is resident whole, at the moment the run's memory
     * peaks (at 1x the spans are 3.2 MB); past those, huge pages: the 8x
     * profile's 25 MB of spans took 6,200 page faults on small ones. */
    if (s->tl && !(s->tl->dspans = nk__big_bounded((total ? total : 1) * sizeof *s->tl->dspans)))
        return NK_ENOMEM;
    if (s->tl && (s->flags & NK_TL_DESCRIPTORS) && !(s->tl->xfers = malloc((total ? total : 1) * sizeof *s->tl->xfers)))
        return NK_ENOMEM;
    if (s->tl && cb_init(&s->tput.b, &s->tl->counters[0], "dma_throughput", "GB/s", (uint32_t)(total / 8 + 16)))
        return NK_ENOMEM;
    for (size_t k = 0; k < ncq; k++)
        s->qoff[k + 1] += s->qoff[k];
    uint32_t *fill = malloc((ncq ? ncq : 1) * sizeof *fill);
    if (!fill)
        return NK_ENOMEM;
    memcpy(fill, s->qoff, ncq * sizeof *fill);
    for (uint32_t i = 0; i < s->n; i++)
        if (s->eng[i] == NK_ENGINE_DMA) {
            const dmainfo *m = dma_of(s, i);
            uint32_t k = fill[core_of(s, i) * s->nq + m->queue % s->nq]++;
            s->qlist[k] = i;
            s->qen[k] = (uint16_t)(m->e0 | m->neng << 8);
        }
    free(fill);
    for (uint32_t g = 0; g < s->ncores * s->ne; g++)
        for (uint32_t q = 0; q < s->nq; q++) {
            uint32_t cq = s->gcore[g] * s->nq + q;
            uint32_t slot = g * s->nq + q;
            s->qcur[slot] = next_user(s, s->geng[g], cq, s->qoff[cq]);
            s->hinst[slot] = UINT32_MAX;
            if (s->qcur[slot] < s->qoff[cq + 1]) {
                s->d[g].nonempty |= 1ull << q;
                s->hinst[slot] = s->qlist[s->qcur[slot]];
            }
        }
    /* a core's engines start as a gang when they start alike: each queue's
     * first instruction the same for all */
    for (uint32_t c = 0; c < s->ncores; c++) {
        uint32_t g0 = c * s->ne, *q0 = &s->qcur[g0 * s->nq];
        s->gang[c] = nk__dma_gangs && s->ne > 1;
        for (uint32_t e = 1; s->gang[c] && e < s->ne; e++)
            s->gang[c] = !memcmp(q0, &s->qcur[(g0 + e) * s->nq], s->nq * sizeof *q0);
    }
    return 0;
}

/* Pops events in time order, ties by id: compute engines (core * 5 +
 * engine), then DMA engines (ncomp + core * ne + engine), then DMA triggers
 * (trig0 + instruction). */
static int run(sim *s)
{
    for (uint32_t i = 0; i < s->n; i++) /* nothing before the kernel's start-up */
        s->ready[i] = s->aux[i] = s->a->launch_startup_ns;
    for (uint32_t i = 0; i < s->n && !s->rc; i++)
        if (s->rem[i] == 0)
            on_resolved(s, i);
    /* SPMD: a core whose first instance has no instruction starts its next one at once */
    for (uint32_t k = 0; s->inst_left && k < nk__nunits(s->p) && !s->rc; k++)
        if (!s->inst_gated[k] && s->inst_off[k] == s->inst_off[k + 1]) {
            s->inst_left[k] = 1;
            instance_step(s, k, 0);
        }
    while (!s->rc) {
        uint32_t g = s->win[1];
        double dt = s->dnext[g];
        if (s->nheap && (dt == INFINITY || hless(s->heap[0], (hent){dt, s->ncomp + g}))) {
            hent h = heap_pop(s);
            if (h.id < s->ncomp)
                commit_compute(s, h.id);
            else
                trigger_dma(s, h.id - s->trig0, h.t);
        } else if (dt < INFINITY)
            dma_event(s, g, dt);
        else
            break;
    }
    if (s->rc)
        return s->rc;
    return s->committed == s->n ? 0 : NK_EINVAL;
}

/* ---- results: order, totals, active time, counters */

/* Events by start, then instruction, then kind (every event has its own
 * (instruction, kind), so the order is total). */
static inline int event_less(const nk_event *a, const nk_event *b)
{
    if (a->start != b->start)
        return a->start < b->start;
    if (a->instr != b->instr)
        return a->instr < b->instr;
    return a->kind < b->kind;
}
NK__DEFINE_SORT(sort_events, nk_event, event_less)

size_t nk__merge_give_min = (size_t)4 << 20, nk__merge_give_step = (size_t)256 << 10;
_Atomic size_t nk__merge_given;

/* The pages wholly before next (an element the merge has yet to read), from
 * *rel on, go back to the system (they read as zeros afterwards; the merge
 * has copied what they held). */
static void give_read(const void *next, uintptr_t pg, uintptr_t *rel)
{
    uintptr_t hi = (uintptr_t)next / pg * pg;
    if (hi > *rel && !madvise((void *)*rel, hi - *rel, MADV_DONTNEED)) {
        nk__merge_given += hi - *rel;
        *rel = hi;
    }
}

static inline int dma_rec_less(const dma_rec *a, const dma_rec *b)
{
    return a->start < b->start || (a->start == b->start && a->instr < b->instr);
}
NK__DEFINE_SORT(sort_dma_recs, dma_rec, dma_rec_less)

/* The DMAs' records, made once the run is over from aux, done and tseq
 * (which go): core c's at drec[doff[c] .. doff[c + 1]), in the order its
 * events take (their trigger's start, then instruction), which is the
 * order the run triggers them in; a core's that are not (the model does not
 * make them so) are sorted. */
static int dma_records(sim *s)
{
    uint32_t nc = s->ncores, nd = s->ntseq, at[NK_MAX_CORES + 1] = {0};
    s->drec = nk__big_fixed((nd ? nd : 1) * sizeof *s->drec);
    if (!s->drec)
        return NK_ENOMEM;
    if (nc > 1) {
        for (uint32_t k = 0; k < nd; k++)
            at[nk__instr_core(s->p, instr_at(s, s->tseq[k])) + 1]++;
        for (uint32_t c = 0; c < nc; c++)
            at[c + 1] += at[c];
    } else
        at[1] = nd;
    memcpy(s->doff, at, sizeof at);
    for (uint32_t k = 0; k < nd; k++) {
        uint32_t i = s->tseq[k], c = nc > 1 ? nk__instr_core(s->p, instr_at(s, i)) : 0;
        s->drec[at[c]++] = (dma_rec){s->aux[i], s->done[i], i, queue_at(s, i)};
    }
    void **ps[] = {(void **)&s->aux, (void **)&s->done, (void **)&s->tseq};
    for (size_t k = 0; k < sizeof ps / sizeof *ps; k++) {
        nk__pack_free(&s->pk, *ps[k]);
        *ps[k] = NULL;
    }
    for (uint32_t c = 0; c < nc; c++) {
        dma_rec *a = s->drec + s->doff[c];
        uint32_t m = s->doff[c + 1] - s->doff[c], k = 1;
        while (k < m && dma_rec_less(&a[k - 1], &a[k]))
            k++;
        if (k >= m)
            continue;
        dma_rec *tmp = malloc((size_t)m * sizeof *tmp);
        if (!tmp)
            return NK_ENOMEM;
        sort_dma_recs(a, m, tmp);
        free(tmp);
    }
    return 0;
}

/* The events in order: each compute stream's run is in time order as the
 * model makes them (checked; one that is not is sorted first), and so is
 * each core's run of DMA records; all of them are merged into a new array.
 * A DMA record puts both the DMA's events, its issue bar and then its
 * trigger (the kinds' order): they start together and belong to one
 * instruction, so nothing else comes between them. For a large timeline
 * the runs' pages go back as the merge reads past them (every
 * nk__merge_give_step bytes of a run), so the merged copy does not double
 * the events' memory. The DMA records go afterwards. */
static int order_events(sim *s)
{
    nk_timeline *tl = s->tl;
    uint32_t nc = s->ncores * NK_ENGINE_DMA, nst = nc + s->ncores, n = tl->nevents;
    nk_event *out = nk__big_fixed((n ? n : 1) * sizeof *out);
    /* per run: where the merge is (for the DMA records' of core c, run nc +
     * c, its index in drec), its next event (what the heap compares), and
     * where it last gave pages back */
    uint32_t *head = malloc(nst * sizeof *head), *hp = malloc(nst * sizeof *hp), *gave = malloc(nst * sizeof *gave);
    uintptr_t *rel = malloc(nst * sizeof *rel), pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    nk_event *hev = malloc(nst * sizeof *hev);
    int rc = NK_ENOMEM;
    if (!out || !head || !hp || !gave || !rel || !hev)
        goto out;
    NK_ASSERT(n - s->ev_off[nc] == 2 * s->ntseq); /* every DMA was triggered: two events each */
    int give = (size_t)n * sizeof *out >= nk__merge_give_min && pg > 0 && !(pg & (pg - 1));
    uint32_t step = (uint32_t)(nk__merge_give_step / sizeof *out) + 1, dstep = (uint32_t)(nk__merge_give_step / sizeof *s->drec) + 1;
    for (uint32_t k = 0; k < nst; k++) {
        head[k] = gave[k] = k < nc ? s->ev_off[k] : s->doff[k - nc];
        const void *first = k < nc ? (const void *)&tl->events[head[k]] : (const void *)&s->drec[head[k]];
        rel[k] = ((uintptr_t)first + pg - 1) / pg * pg; /* pages wholly in run k */
    }
    for (uint32_t k = 0; k < nc; k++) {
        nk_event *a = tl->events + s->ev_off[k];
        uint32_t m = s->ev_off[k + 1] - s->ev_off[k];
        for (uint32_t j = 1; j < m; j++)
            if (event_less(&a[j], &a[j - 1])) {
                sort_events(a, m, out);
                break;
            }
    }
    /* a heap of the runs by their next event */
    uint32_t nh = 0;
#define EV_HLESS(a, b) event_less(&hev[a], &hev[b])
#define DMA_ISSUE(r) ((nk_event){(r)->instr, NK_ENGINE_DMA, NK_EV_DMA_ISSUE, (r)->queue, (r)->start, (r)->done})
    for (uint32_t k = 0; k < nst; k++) {
        if (head[k] == (k < nc ? s->ev_off[k + 1] : s->doff[k - nc + 1]))
            continue;
        hev[k] = k < nc ? tl->events[head[k]] : DMA_ISSUE(&s->drec[head[k]]);
        uint32_t i = nh++;
        for (; i > 0 && EV_HLESS(k, hp[(i - 1) / 2]); i = (i - 1) / 2)
            hp[i] = hp[(i - 1) / 2];
        hp[i] = k;
    }
    for (uint32_t o = 0; o < n;) {
        uint32_t k = hp[0], next = ++head[k];
        int more;
        out[o++] = hev[k];
        if (k < nc) {
            if (give && next - gave[k] >= step) {
                give_read(&tl->events[next], pg, &rel[k]);
                gave[k] = next;
            }
            if ((more = next < s->ev_off[k + 1]))
                hev[k] = tl->events[next];
        } else { /* the DMA's trigger, after its issue bar */
            const nk_event *e = &hev[k];
            out[o++] = (nk_event){e->instr, NK_ENGINE_SYNC, NK_EV_DMA_TRIGGER, e->queue, e->start,
                                  e->start + s->a->dma_trigger_ns};
            if (give && next - gave[k] >= dstep) {
                give_read(&s->drec[next], pg, &rel[k]);
                gave[k] = next;
            }
            if ((more = next < s->doff[k - nc + 1]))
                hev[k] = DMA_ISSUE(&s->drec[next]);
        }
        /* readers rely on the order (a DMA's two events: both checked) */
        NK_ASSERT(o < 2 || !event_less(&out[o - 1], &out[o - 2]));
        NK_ASSERT(k < nc || o < 3 || !event_less(&out[o - 2], &out[o - 3]));
        uint32_t top = more ? k : hp[--nh];
        if (!nh)
            break;
        /* sift the new top down */
        uint32_t i = 0;
        for (;;) {
            uint32_t c = 2 * i + 1;
            if (c >= nh)
                break;
            if (c + 1 < nh && EV_HLESS(hp[c + 1], hp[c]))
                c++;
            if (!EV_HLESS(hp[c], top))
                break;
            hp[i] = hp[c];
            i = c;
        }
        hp[i] = top;
    }
#undef EV_HLESS
#undef DMA_ISSUE
    free(tl->events);
    tl->events = out;
    out = NULL;
    free(s->drec);
    s->drec = NULL;
    rc = 0;
out:
    free(out);
    free(head);
    free(hp);
    free(gave);
    free(rel);
    free(hev);
    return rc;
}

static void active_times(nk_timeline *tl)
{
    double s0[NK_ENGINE_COUNT], e0[NK_ENGINE_COUNT];
    for (int e = 0; e < NK_ENGINE_COUNT; e++) {
        s0[e] = e0[e] = -1;
        tl->active_ns[e] = 0;
    }
    for (uint32_t k = 0; k < tl->nevents; k++) {
        const nk_event *ev = &tl->events[k];
        int e = ev->engine;
        if (e == NK_ENGINE_DMA)
            continue;
        if (ev->start > e0[e]) {
            tl->active_ns[e] += e0[e] - s0[e];
            s0[e] = ev->start;
        }
        e0[e] = dmax(e0[e], ev->end);
    }
    for (uint32_t k = 0; k < tl->ndspans; k++) {
        const nk_dma_span *x = &tl->dspans[k];
        int e = NK_ENGINE_DMA;
        if (x->start > e0[e]) {
            tl->active_ns[e] += e0[e] - s0[e];
            s0[e] = x->start;
        }
        e0[e] = dmax(e0[e], x->end);
    }
    for (int e = 0; e < NK_ENGINE_COUNT; e++)
        tl->active_ns[e] += e0[e] - s0[e];
}

/* A tile of a group: its buffer and its bytes (per partition times
 * partitions), so that the merge reads the groups' tiles in order and not
 * each one's record. */
typedef struct tref {
    uint32_t b, bytes;
} tref;

/* The runs of nk__tile_points' groups: run k < ng holds group k's starts,
 * run ng + k its ends, run k at positions r[k] .. r[k + 1) of 2 h (the
 * starts in [0, h), the ends in [h, 2 h)). A run's point at position i is
 * made from its tile, ids[i] (a start) or ids[i - h] (an end), or, for a
 * run that had to be sorted (mat[k]), read from pt[i]. */
typedef struct truns {
    const double *first, *last;
    const tref *ids;
    const mpoint *pt;
    const uint8_t *mat;
    size_t h, ng;
} truns;

static inline mpoint run_point(const truns *u, size_t k, size_t i)
{
    if (u->mat[k])
        return u->pt[i];
    int end = k >= u->ng;
    tref x = u->ids[end ? i - u->h : i];
    return end ? (mpoint){u->last[x.b], -(double)x.bytes} : (mpoint){u->first[x.b], (double)x.bytes};
}

/* The 2 ng runs, each sorted, merged as they are taken, into emit: a
 * tournament tree over the runs' heads (win[1] the overall winner, leaves
 * nl .. 2 nl - 1 the runs; one past its end, or past the runs, holds an
 * infinite head). Nothing is written but the heads: written to an array in
 * passes, the merge's pages raised the 1x profile's peak. Ties go to either
 * run: equal points are equal values. r: the runs' bounds (2 ng + 1); at:
 * room for 2 ng (the runs' cursors), hd for nl (their heads), win for 2 nl. */
static void merge_emit(const truns *u, const size_t *r, size_t *at, mpoint *hd, uint32_t *win, size_t nl,
                       void (*emit)(void *, const mpoint *), void *ctx)
{
    size_t nr = 2 * u->ng;
    const mpoint none = {INFINITY, INFINITY};
#define HEAD_LESS(x, y) (!mpoint_less(&hd[y], &hd[x]))
    for (size_t k = 0; k < nl; k++) {
        if (k < nr)
            at[k] = r[k];
        hd[k] = k < nr && r[k] < r[k + 1] ? run_point(u, k, r[k]) : none;
        win[nl + k] = (uint32_t)k;
    }
    for (size_t k = nl; k-- > 1;) {
        uint32_t x = win[2 * k], y = win[2 * k + 1];
        win[k] = HEAD_LESS(x, y) ? x : y;
    }
    for (;;) {
        uint32_t w = win[1];
        if (w >= nr || at[w] == r[w + 1]) /* (a point at an infinite time still comes before none) */
            break;
        emit(ctx, &hd[w]);
        size_t i = ++at[w];
        hd[w] = i < r[w + 1] ? run_point(u, w, i) : none;
        for (size_t k = (nl + w) >> 1; k; k >>= 1) {
            uint32_t x = win[2 * k], y = win[2 * k + 1];
            win[k] = HEAD_LESS(x, y) ? x : y;
        }
    }
#undef HEAD_LESS
}

/* Tile addresses and their groups' ids, in order of first appearance (open
 * addressing, grown as groups come: the table is as large as the program
 * has addresses, not as it might). cnt[g + 1]: the tiles of group g (room
 * for cap / 2 + 1, as many groups as the table takes). */
typedef struct addr_groups {
    int64_t *key;
    uint32_t *gid, *cnt;
    size_t cap, ng;
} addr_groups;

static size_t addr_slot(const addr_groups *t, int64_t a)
{
    size_t k = (size_t)(((uint64_t)a * 0x9E3779B97F4A7C15ull) >> 32) & (t->cap - 1);
    while (t->gid[k] != UINT32_MAX && t->key[k] != a)
        k = (k + 1) & (t->cap - 1);
    return k;
}

/* A table of cap slots (a power of two), empty: 0, or NK_ENOMEM. */
static int addr_init(addr_groups *t, size_t cap)
{
    *t = (addr_groups){malloc(cap * sizeof *t->key), malloc(cap * sizeof *t->gid), calloc(cap / 2 + 1, sizeof *t->cnt),
                       cap, 0};
    if (!t->key || !t->gid || !t->cnt) {
        free(t->key);
        free(t->gid);
        free(t->cnt);
        *t = (addr_groups){0};
        return NK_ENOMEM;
    }
    for (size_t k = 0; k < cap; k++)
        t->gid[k] = UINT32_MAX;
    return 0;
}

/* Room for one more group (the table at most half full): 0, or NK_ENOMEM. */
static int addr_grow(addr_groups *t)
{
    if (2 * (t->ng + 1) <= t->cap)
        return 0;
    addr_groups n;
    if (addr_init(&n, 2 * t->cap))
        return NK_ENOMEM;
    memcpy(n.cnt, t->cnt, (t->cap / 2 + 1) * sizeof *n.cnt);
    for (size_t k = 0; k < t->cap; k++)
        if (t->gid[k] != UINT32_MAX) {
            size_t j = addr_slot(&n, t->key[k]);
            n.key[j] = t->key[k];
            n.gid[j] = t->gid[k];
        }
    n.ng = t->ng;
    free(t->key);
    free(t->gid);
    free(t->cnt);
    *t = n;
    return 0;
}

size_t nk__tile_count(const nk_program *p, int mem, const double *first)
{
    size_t h = 0;
    for (uint32_t b = 1; b < p->nbufs; b++)
        h += p->bufs[b].mem == mem && first[b] != INFINITY;
    return 2 * h;
}

/* nk__tile_points (timing.h). In buffer order, the tiles that follow one
 * another at one address are in time order too (the later one waits for
 * the earlier one's last use), so, grouped by address (stably), the starts
 * and the ends are a few sorted runs each, merged as they are taken
 * (merge_emit). Sorted as they come, in buffer order, where the groups
 * interleave, the 8x matmul's 1.06 million points took 33 ms; grouped, 22
 * ms. A run is its group's buffers, each point made from its buffer as the
 * merge comes to it: 4 bytes a tile, where the points took 32 (at 8x, 17
 * MB of fresh pages at the profile's peak). A group out of order has its
 * points sorted into pt first, and the points of a program of many
 * addresses (more than one a 64 tiles) are sorted as they come: the order
 * is the same either way, since equal points are equal values. */
int nk__tile_points(const nk_program *p, int mem, const double *first, const double *last, size_t np, mpoint *pt,
                    mpoint *tmp, void (*emit)(void *, const mpoint *), void *ctx)
{
    size_t h = np / 2;
    /* more groups than this and the points are sorted as they come */
    size_t most = h / 64 + 1, *run = NULL;
    addr_groups t;
    int grouped = !addr_init(&t, 16);
    for (uint32_t b = 1; grouped && b < p->nbufs; b++) {
        const nk_bufinfo *bi = &p->bufs[b];
        if (bi->mem != mem || first[b] == INFINITY)
            continue;
        if (bi->bytes < 0 || bi->shape[0] < 0 || (uint64_t)bi->bytes * (uint64_t)bi->shape[0] > UINT32_MAX) {
            grouped = 0; /* (no tile on chip is that large: tref's bytes) */
            break;
        }
        size_t k = addr_slot(&t, bi->addr);
        if (t.gid[k] == UINT32_MAX) {
            if (t.ng == most || addr_grow(&t)) {
                grouped = 0;
                break;
            }
            k = addr_slot(&t, bi->addr);
            t.key[k] = bi->addr;
            t.gid[k] = (uint32_t)t.ng++;
        }
        t.cnt[t.gid[k] + 1]++;
    }
    size_t ng = t.ng, nl = 1, *at = NULL; /* (0 only with no tiles: no points) */
    uint32_t *win = NULL;
    tref *ids = NULL;
    mpoint *hd = NULL;
    uint8_t *mat = NULL;
    while (nl < 2 * ng)
        nl *= 2;
    if (grouped && ng) {
        run = malloc((2 * ng + 1) * sizeof *run);
        at = malloc((2 * ng + 1) * sizeof *at);
        win = malloc(2 * nl * sizeof *win);
        hd = malloc(nl * sizeof *hd);
        mat = calloc(2 * ng, 1);
        ids = malloc((h ? h : 1) * sizeof *ids);
        grouped = run && at && win && hd && mat && ids;
    }
    int rc = 0;
    if (grouped && ng) {
        uint32_t *cnt = t.cnt;
        for (size_t g = 0; g < ng; g++) /* starts in [0, h), ends in [h, 2h), group by group */
            cnt[g + 1] += cnt[g];
        for (size_t g = 0; g <= ng; g++) {
            run[g] = cnt[g];
            run[ng + g] = h + cnt[g];
        }
        for (uint32_t b = 1; b < p->nbufs; b++) {
            const nk_bufinfo *bi = &p->bufs[b];
            if (bi->mem == mem && first[b] != INFINITY)
                ids[cnt[t.gid[addr_slot(&t, bi->addr)]]++] = (tref){b, (uint32_t)(bi->bytes * bi->shape[0])};
        }
        truns u = {first, last, ids, pt, mat, h, ng};
        for (size_t k = 0; !rc && k < 2 * ng; k++) {
            size_t i = run[k] + 1; /* (a group has a tile: no run is empty) */
            for (mpoint prev = run_point(&u, k, run[k]); i < run[k + 1]; i++) {
                mpoint x = run_point(&u, k, i);
                if (mpoint_less(&x, &prev))
                    break;
                prev = x;
            }
            if (i < run[k + 1] && !tmp)
                rc = NK_ENOMEM;
            else if (i < run[k + 1]) { /* its points, sorted, in pt */
                for (i = run[k]; i < run[k + 1]; i++)
                    pt[i] = run_point(&u, k, i);
                sort_mpoints(pt + run[k], run[k + 1] - run[k], tmp);
                mat[k] = 1;
            }
        }
        if (!rc)
            merge_emit(&u, run, at, hd, win, nl, emit, ctx);
    } else if (!grouped) {
        size_t n = 0;
        for (uint32_t b = 1; b < p->nbufs; b++) {
            const nk_bufinfo *bi = &p->bufs[b];
            if (bi->mem != mem || first[b] == INFINITY)
                continue;
            double bytes = (double)bi->bytes * (double)bi->shape[0];
            pt[n++] = (mpoint){first[b], bytes};
            pt[n++] = (mpoint){last[b], -bytes};
        }
        if (tmp)
            sort_mpoints(pt, n, tmp);
        else
            rc = NK_ENOMEM;
        for (size_t k = 0; !rc && k < n; k++)
            emit(ctx, &pt[k]);
    }
    free(t.key);
    free(t.gid);
    free(t.cnt);
    free(run);
    free(at);
    free(win);
    free(hd);
    free(mat);
    free(ids);
    return rc;
}

/* A tile counter's running sum, its samples as the points come. */
typedef struct tile_sum {
    cbuild cb;
    double v;
} tile_sum;

static void tile_put(void *ctx, const mpoint *x)
{
    tile_sum *ts = ctx;
    ts->v += x->delta;
    cb_put(&ts->cb, x->t, ts->v);
}

/* Bytes of tiles alive over time, from first write to last use: the
 * counters of SBUF (c[0]) and PSUM (c[1]), from one pass over the program. */
static int tile_bytes(const nk_program *p, const nk_timeline *tl, nk_counter *c)
{
    static const int mems[2] = {NK_SBUF, NK_PSUM};
    static const char *names[2] = {"sbuf_bytes", "psum_bytes"};
    size_t nb = p->nbufs ? p->nbufs : 1;
    double *first = nk__big_fixed(nb * sizeof *first), *last = nk__big_fixed(nb * sizeof *last);
    mpoint *pt = nk__big_fixed(((size_t)p->nbufs * 2 + 1) * sizeof *pt);
    /* (untouched unless a group of tiles is out of order or the program has
     * too many addresses to group) */
    mpoint *tmp = malloc(((size_t)p->nbufs * 2 + 1) * sizeof *tmp);
    int rc = NK_ENOMEM;
    if (!first || !last || !pt || !tmp)
        goto out;
    for (size_t b = 0; b < nb; b++) {
        first[b] = INFINITY;
        last[b] = -INFINITY;
    }
    /* per buffer, through the operands in its own memory (the only ones
     * its counter reads) */
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        double t0 = tl->instr_start[i], t1 = tl->instr_end[i];
        const nk_opnd *w[2] = {&in->dst, nk__dst2(p, in)};
        for (int k = 0; k < 2; k++) {
            int mem = nk__opnd_mem(p, w[k]);
            if (w[k]->buf && (mem == NK_SBUF || mem == NK_PSUM) && mem == p->bufs[w[k]->buf].mem) {
                first[w[k]->buf] = fmin(first[w[k]->buf], t0);
                last[w[k]->buf] = dmax(last[w[k]->buf], t1);
            }
        }
        for (int k = 0; k < in->nsrc && k < 3; k++) {
            const nk_opnd *t = nk__src(p, in, k);
            int mem = nk__opnd_mem(p, t);
            if (t->buf && (mem == NK_SBUF || mem == NK_PSUM) && mem == p->bufs[t->buf].mem)
                last[t->buf] = dmax(last[t->buf], t1);
        }
    }
    for (int m = 0; m < 2; m++) {
        size_t np = nk__tile_count(p, mems[m], first);
        tile_sum ts = {{0}, 0};
        if ((rc = cb_init(&ts.cb, &c[m], names[m], "bytes", (uint32_t)np + 1)) ||
            (rc = nk__tile_points(p, mems[m], first, last, np, pt, tmp, tile_put, &ts)) || (rc = cb_finish(&ts.cb)))
            goto out;

    }
    rc = 0;
out:
    free(first);
    free(last);
    free(pt);
    free(tmp);
    return rc;
}

static double host_ns(const nk_program *p, const uint32_t *ids, int n, double gbps)
{
    double bytes = 0;
    for (int i = 0; i < n; i++)
        bytes += (double)p->bufs[ids[i]].bytes;
    return bytes / gbps;
}

static int cmp_region(const void *x, const void *y)
{
    const nk_region *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->kind != b->kind)
        return (int)a->kind - (int)b->kind;
    return (int)a->core - (int)b->core;
}

/* Per core: the start-up before its first instruction and the tear-down
 * after its last completion; the device time ends with the last tear-down.
 * Without a timeline (tl NULL) the device time alone, into *total. */
static int launch_regions(sim *s, nk_timeline *tl, double *total)
{
    double last[NK_MAX_CORES];
    for (uint32_t c = 0; c < s->ncores; c++)
        last[c] = dmax(s->a->launch_startup_ns, s->core_end[c]);
    *total = 0;
    uint32_t nu = nk__nunits(s->p), nr = 2 * s->ncores;
    int seq = s->p->nseg > 1 && s->unit_t0; /* a sequence: every kernel is launched, one after another */
    if (seq) {
        uint32_t nonempty = 0;
        for (uint32_t u = 0; u < nu; u++)
            nonempty += s->inst_off[u + 1] > s->inst_off[u];
        nr = 2 * (nonempty ? nonempty : 1);
    }
    if (tl && !(tl->regions = malloc(nr * sizeof *tl->regions)))
        return NK_ENOMEM;
    nk_region r[2];
    if (seq) {
        int first = 1;
        for (uint32_t u = 0; u < nu; u++) {
            if (s->inst_off[u + 1] == s->inst_off[u])
                continue;
            double t0 = first ? s->a->launch_startup_ns : s->unit_t0[u], end = s->inst_end[u];
            first = 0;
            r[0] = (nk_region){NK_REGION_STARTUP, 0, t0 - s->a->launch_startup_ns, t0};
            r[1] = (nk_region){NK_REGION_TEARDOWN, 0, end, end + s->a->launch_teardown_ns};
            if (tl) {
                tl->regions[tl->nregions++] = r[0];
                tl->regions[tl->nregions++] = r[1];
            }
            *total = dmax(*total, end + s->a->launch_teardown_ns);
        }
    } else {
        for (uint32_t c = 0; c < s->ncores; c++) {
            double end = last[c] + s->a->launch_teardown_ns;
            r[0] = (nk_region){NK_REGION_STARTUP, (uint8_t)c, 0, s->a->launch_startup_ns};
            r[1] = (nk_region){NK_REGION_TEARDOWN, (uint8_t)c, last[c], end};
            if (tl) {
                tl->regions[tl->nregions++] = r[0];
                tl->regions[tl->nregions++] = r[1];
            }
            *total = dmax(*total, end);
        }
    }
    if (tl)
        qsort(tl->regions, tl->nregions, sizeof *tl->regions, cmp_region);
    return 0;
}

double nk__timeline_launch_ns(const nk_timeline *tl)
{
    const nk_region *down = NULL;
    for (uint32_t k = 0; tl && k < tl->nregions; k++)
        if (tl->regions[k].kind == NK_REGION_TEARDOWN && (!down || tl->regions[k].end > down->end))
            down = &tl->regions[k];
    if (!down)
        return 0;
    double t = 0; /* every region of that core: one start-up and tear-down, or one per kernel of a sequence */
    for (uint32_t k = 0; k < tl->nregions; k++)
        if (tl->regions[k].core == down->core)
            t += tl->regions[k].end - tl->regions[k].start;
    return t;
}

int nk__threads(int requested)
{
    long n = requested > 0 ? requested : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 4 ? 4 : (int)n;
}

/* The tile counters (on a thread of their own while the events are merged:
 * they need the instructions' spans only). */
typedef struct counters_job {
    const nk_program *p;
    nk_timeline *tl;
    int rc;
} counters_job;

static void *counters_work(void *arg)
{
    counters_job *j = arg;
    j->rc = tile_bytes(j->p, j->tl, &j->tl->counters[1]);
    return NULL;
}

/* Each instruction's earliest event start and latest event end, made once
 * the run is over (while it runs, the per-instruction state takes the
 * memory): the Tensor engine's weight load starts before its multiply, which
 * ends last; a DMA's trigger starts with its issue bar, which ends last. */
static int instr_spans(sim *s)
{
    nk_timeline *tl = s->tl;
    uint32_t n = s->n, n0 = s->ev_off[s->ncores * NK_ENGINE_DMA];
    tl->instr_start = nk__big_fixed((n ? n : 1) * sizeof(double));
    tl->instr_end = nk__big_fixed((n ? n : 1) * sizeof(double));
    if (!tl->instr_start || !tl->instr_end)
        return NK_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        tl->instr_start[i] = INFINITY;
        tl->instr_end[i] = -INFINITY;
    }
    for (uint32_t k = 0; k < n0; k++) { /* the compute engines' events */
        const nk_event *e = &tl->events[k];
        tl->instr_start[e->instr] = fmin(tl->instr_start[e->instr], e->start);
        tl->instr_end[e->instr] = dmax(tl->instr_end[e->instr], e->end);
    }
    for (uint32_t k = 0; k < s->ntseq; k++) { /* a DMA's two events, as order_events makes them */
        uint32_t i = s->tseq[k];
        tl->instr_start[i] = s->aux[i];
        tl->instr_end[i] = dmax(s->aux[i] + s->a->dma_trigger_ns, s->done[i]);
    }
    for (uint32_t i = 0; i < n; i++)
        if (tl->instr_start[i] == INFINITY) /* no event (the run stopped first) */
            tl->instr_start[i] = tl->instr_end[i] = 0;
    return 0;
}

static int finish(sim *s)
{
    nk_timeline *tl = s->tl;
    const nk_program *p = s->p;
    int rc = instr_spans(s);
    if (rc)
        return rc;
    /* the tile counters read the spans alone: they are made beside the rest */
    counters_job cj = {p, tl, 0};
    pthread_t th;
    int threaded = nk__threads(p->threads) > 1 && !pthread_create(&th, NULL, counters_work, &cj);
    if (!(rc = dma_records(s))) {
        ts_drain(&s->tput, 0, 0);
        rc = s->tput.rc ? s->tput.rc : s->tput.b.oom ? NK_ENOMEM : cb_finish(&s->tput.b);
        ts_free(&s->tput);
    }
    if (!rc && tl->ndspans) { /* the spans keep what they hold, not the bound */
        nk_dma_span *v = realloc(tl->dspans, tl->ndspans * sizeof *v);
        if (v)
            tl->dspans = v;
    }
    if (!rc)
        rc = order_events(s);
    if (!rc)
        rc = launch_regions(s, tl, &tl->total_ns);
    if (!rc) {
        tl->host_in_ns = host_ns(p, p->input_buf, p->ninputs, s->a->host_gbps);
        tl->host_out_ns = host_ns(p, p->output_buf, p->noutputs, s->a->host_gbps);
        active_times(tl);
    }
    if (threaded)
        pthread_join(th, NULL);
    else if (!rc)
        counters_work(&cj);
    return rc ? rc : cj.rc;
}

/* The arrays of an entry per instruction or per DMA of a run that records a
 * timeline, packed in one block (nk__pack): each on its own is a block of
 * the heap under a megabyte (at a hundred thousand instructions) or a
 * mapping whose part past its last whole huge page is small pages, and
 * faulted 4 KiB at a time; together they fill huge pages. The block is
 * their exact size, so that its part short of a huge page stays on small
 * pages, and the arrays written as the run goes come last, in that part.
 * Each is freed where it was before, its pages given back there. (The
 * engines, cores and units of the instructions, a byte or two each, come
 * first, on their own: the pass that fills them counts the DMAs the
 * block's size needs.) The
 * schedule's candidates (the device time alone) keep blocks of their own:
 * two of them run side by side, and packed, resident a huge page at a time
 * as they are set up, they raised the 1x profile's peak, that moment, by
 * 2-3 MB. */
static int take_arrays(sim *s, size_t n, size_t ndma)
{
    size_t nd = ndma ? ndma : 1, nc = n - ndma ? n - ndma : 1;
    int trig = s->a->dma_trigger_in_order, tl = s->tl != NULL;
    struct { void **p; size_t bytes; int on, zero; } a[] = {
        /* written whole as the run is set up */
        {(void **)&s->rem, n * sizeof *s->rem, 1, 0},
        {(void **)&s->succ_off, (n + 1) * sizeof *s->succ_off, 1, 1},
        {(void **)&s->ready, n * sizeof *s->ready, 1, 0},
        {(void **)&s->stream, nc * sizeof *s->stream, 1, 0},
        {(void **)&s->dma, nd * sizeof *s->dma, 1, 0},
        {(void **)&s->dord, n * sizeof *s->dord, 1, 0},
        {(void **)&s->qlist, nd * sizeof *s->qlist, 1, 0},
        {(void **)&s->qen, nd * sizeof *s->qen, 1, 0},
        {(void **)&s->dma_after, n * sizeof *s->dma_after, trig, 0},
        /* written as the run goes: last, where the block's small pages are */
        {(void **)&s->aux, n * sizeof *s->aux, 1, 0},
        {(void **)&s->done, n * sizeof *s->done, 1, 1},
        {(void **)&s->parked, n, trig, 1},
        {(void **)&s->tseq, nd * sizeof *s->tseq, tl, 0},
        {(void **)&s->dspan_at, nd * sizeof *s->dspan_at, tl, 1},
    };
    _Static_assert(sizeof a / sizeof *a <= NK_PACK_MAX, "the pack holds them all");
    size_t total = 0;
    for (size_t k = 0; k < sizeof a / sizeof *a; k++)
        total += a[k].on ? nk__pack_size(a[k].bytes) : 0;
    if (nk__pack_open(&s->pk, s->tl ? total : 0))
        return NK_ENOMEM;
    for (size_t k = 0; k < sizeof a / sizeof *a; k++)
        if (a[k].on && !(*a[k].p = nk__pack_take(&s->pk, a[k].bytes, a[k].zero)))
            return NK_ENOMEM;
    return 0;
}

static int alloc_sim(sim *s)
{
    size_t n = s->n ? s->n : 1;
    nk_timeline *tl = s->tl;
    const nk_program *p = s->p;
    uint32_t nev = 0, ndma = 0, nu = nk__nunits(p);
    s->core = s->ncores > 1 ? nk__big_fixed(n) : NULL;
    s->eng = nk__big_fixed(n);
    s->unit = nu > 1 ? nk__big_fixed(n * sizeof *s->unit) : NULL;
    s->d = calloc((size_t)s->ncores * s->ne, sizeof *s->d);
    uint32_t G = s->ncores * s->ne;
    for (s->nleaf = 1; s->nleaf < G; s->nleaf *= 2)
        ;
    s->dnext = malloc(s->nleaf * sizeof *s->dnext);
    s->win = malloc(2 * s->nleaf * sizeof *s->win);
    s->gcore = malloc(G);
    s->geng = malloc(G);
    if ((s->ncores > 1 && !s->core) || !s->eng || (nu > 1 && !s->unit) || !s->d || !s->dnext || !s->win ||
        !s->gcore || !s->geng)
        return NK_ENOMEM;
    for (uint32_t g = 0; g < G; g++) {
        s->gcore[g] = (uint8_t)(g / s->ne);
        s->geng[g] = (uint8_t)(g % s->ne);
    }
    for (uint32_t g = 0; g < s->nleaf; g++) {
        s->dnext[g] = INFINITY;
        s->win[s->nleaf + g] = g;
    }
    for (uint32_t k = s->nleaf; k-- > 1;)
        s->win[k] = dbetter(s, s->win[2 * k], s->win[2 * k + 1]);
    for (uint32_t i = 0; i < s->n; i++) {
        const nk_instr *in = instr_at(s, i);
        if (s->core)
            s->core[i] = (uint8_t)nk__instr_core(p, in);
        s->eng[i] = in->engine;
        if (s->unit)
            s->unit[i] = (uint16_t)nk__unit_of(p, in);
        nev += in->engine == NK_ENGINE_TENSOR || in->engine == NK_ENGINE_DMA ? 2 : 1;
        ndma += in->engine == NK_ENGINE_DMA;
    }
    if (take_arrays(s, n, ndma))
        return NK_ENOMEM;
    if (s->a->dma_trigger_in_order) {
        uint32_t last[NK_MAX_CORES];
        for (uint32_t c = 0; c < NK_MAX_CORES; c++)
            s->sync_head[c] = last[c] = UINT32_MAX;
        for (uint32_t i = 0; i < s->n; i++) {
            if (s->eng[i] != NK_ENGINE_DMA)
                continue;
            uint32_t c = core_of(s, i);
            s->dma_after[i] = UINT32_MAX;
            if (last[c] == UINT32_MAX)
                s->sync_head[c] = i;
            else
                s->dma_after[last[c]] = i;
            last[c] = i;
        }
    }
    if (nu > 1) {
        s->inst_off = calloc(nu + 1, sizeof *s->inst_off);
        s->inst_left = calloc(nu, sizeof *s->inst_left);
        s->inst_next = calloc(nu, sizeof *s->inst_next);
        s->inst_end = calloc(nu, sizeof *s->inst_end);
        s->inst_gated = calloc(nu, 1);
        s->unit_t0 = calloc(nu, sizeof *s->unit_t0);
        if (!s->inst_off || !s->inst_left || !s->inst_next || !s->inst_end || !s->inst_gated || !s->unit_t0)
            return NK_ENOMEM;
    }
    if (tl) {
        uint32_t nst = s->ncores * NK_ENGINE_DMA;
        s->ev_cur = calloc(nst, sizeof *s->ev_cur);
        s->ev_off = calloc(nst + 1, sizeof *s->ev_off);
        tl->counters = calloc(3, sizeof *tl->counters);
        if (!s->ev_cur || !s->ev_off || !tl->counters)
            return NK_ENOMEM;
        tl->ncounters = 3;
        for (uint32_t i = 0; i < s->n; i++)
            if (s->eng[i] != NK_ENGINE_DMA)
                s->ev_off[ev_stream(core_of(s, i), s->eng[i]) + 1] += s->eng[i] == NK_ENGINE_TENSOR ? 2 : 1;
        for (uint32_t k = 0; k < nst; k++)
            s->ev_off[k + 1] += s->ev_off[k];
        memcpy(s->ev_cur, s->ev_off, nst * sizeof *s->ev_cur);
        tl->nevents = nev; /* the array holds the compute engines' (order_events makes the DMAs') */
        uint32_t n0 = s->ev_off[nst];
        tl->events = nk__big_malloc((n0 ? n0 : 1) * sizeof *tl->events);
        if (!tl->events)
            return NK_ENOMEM;
    }
    return 0;
}

/* The order view's dependencies into o, rebuilt from the successor lists
 * (each position's in increasing order, as derived), once the run is
 * over: what the run alone needed is freed first. */
static int give_back(sim *s, nk__deps *o)
{
    void **ps[] = {(void **)&s->ready, (void **)&s->dma, (void **)&s->dord, (void **)&s->edge,
                   (void **)&s->stream, (void **)&s->rem, (void **)&s->qlist, (void **)&s->qen, (void **)&s->aux, (void **)&s->done};
    for (size_t k = 0; k < sizeof ps / sizeof *ps - (s->tl ? 2 : 0); k++) { /* (a timeline's DMA events read aux, done) */
        nk__pack_free(&s->pk, *ps[k]);
        *ps[k] = NULL;
    }
    uint32_t n = s->n, ne = s->succ_off[n];
    o->ndep = nk__big_fixed0(n ? n : 1, sizeof *o->ndep);
    o->dep_off = nk__big_fixed((n ? n : 1) * sizeof *o->dep_off);
    o->deps = ne ? nk__big_fixed(ne * sizeof *o->deps) : NULL; /* none: NULL, as derived */
    if (!o->ndep || !o->dep_off || (ne && !o->deps)) {
        free(o->ndep);
        free(o->dep_off);
        free(o->deps);
        o->ndep = o->dep_off = o->deps = NULL;
        return NK_ENOMEM;
    }
    for (uint32_t k = 0; k < ne; k++)
        o->ndep[s->succ[k]]++;
    for (uint32_t i = 0, off = 0; i < n; i++) {
        o->dep_off[i] = off;
        off += o->ndep[i];
        o->ndep[i] = 0;
    }
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t k = s->succ_off[j]; k < s->succ_off[j + 1]; k++) {
            uint32_t i = s->succ[k];
            o->deps[o->dep_off[i] + o->ndep[i]++] = j;
        }
    o->ndeps = ne;
    return 0;
}

/* What only the run needs: freed before the results are put together
 * (but aux, done and tseq, which make the DMAs' events, with a timeline). */
static void free_run(sim *s)
{
    void **ps[] = {(void **)&s->core, (void **)&s->eng, (void **)&s->unit, (void **)&s->rem,
                   (void **)&s->succ_off, (void **)&s->succ, (void **)&s->edge, (void **)&s->stream,
                   (void **)&s->ready, (void **)&s->dma, (void **)&s->dord, (void **)&s->kinds,
                   (void **)&s->qlist, (void **)&s->qen, (void **)&s->qoff, (void **)&s->qcur, (void **)&s->hinst, (void **)&s->hready, (void **)&s->heap,
                   (void **)&s->d, (void **)&s->dnext, (void **)&s->win, (void **)&s->gcore, (void **)&s->geng,
                   (void **)&s->dspan_at, (void **)&s->dma_after, (void **)&s->parked,
                   (void **)&s->aux, (void **)&s->done, (void **)&s->tseq};
    for (size_t k = 0; k < sizeof ps / sizeof *ps - (s->tl ? 3 : 0); k++) {
        nk__pack_free(&s->pk, *ps[k]);
        *ps[k] = NULL;
    }
}

static void free_sim(sim *s)
{
    free_run(s);
    nk__pack_free(&s->pk, s->aux);
    nk__pack_free(&s->pk, s->done);
    nk__pack_free(&s->pk, s->tseq);
    s->aux = s->done = NULL;
    s->tseq = NULL;
    free(s->drec);
    ts_free(&s->tput);
    free(s->ev_cur);
    free(s->ev_off);
    free(s->inst_off);
    free(s->inst_left);
    free(s->inst_next);
    free(s->inst_end);
    free(s->inst_gated);
    free(s->unit_t0);
    nk__pack_close(&s->pk);
}

/* The simulation of p (in the order v gives, when not NULL) on arch: into a
 * new timeline at *out, or only the device time into *total (out NULL). */
static int simulate(const nk_program *p, const nk__order_view *v, const nk_arch *arch, unsigned flags,
                    nk_timeline **out, double *total)
{
    if (!p)
        return NK_EINVAL;
    if (!arch)
        arch = p->arch ? p->arch : nk__arch_get(p->target);
    if (!arch)
        return NK_ENOTFOUND;
    if (arch->dma_engines < 1 || arch->dma_engines > NK_ARCH_MAX_DMA_ENGINES || arch->dma_queues < 1 ||
        arch->dma_queues > NK_ARCH_MAX_DMA_QUEUES)
        return NK_EINVAL;
    int rc = v ? check_view(p, v) : check_program(p);
    if (rc)
        return rc;
    sim s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.a = arch;
    s.n = p->ninstr;
    s.flags = flags;
    if (v) {
        s.ord = v->order;
        s.vdep_off = v->dep_off;
        s.vndep = v->ndep;
        s.vdeps = v->deps;
        s.vqueue = v->queue;
    }
    s.ne = (uint32_t)arch->dma_engines;
    s.nq = (uint32_t)arch->dma_queues;
    s.ncores = p->ncores ? p->ncores : 1;
    if (s.ncores > NK_MAX_CORES)
        return NK_EINVAL;
    s.ncomp = s.ncores * NK_ENGINE_DMA;
    s.trig0 = s.ncomp + s.ncores * s.ne;
    if ((uint64_t)s.trig0 + s.n > UINT32_MAX)
        return NK_ELIMIT;
    if (out) {
        s.tl = calloc(1, sizeof *s.tl);
        if (!s.tl)
            return NK_ENOMEM;
        snprintf(s.tl->target, sizeof s.tl->target, "%s", arch->name);
    }
    rc = alloc_sim(&s);
    if (!rc)
        rc = plan_all(&s);
    if (!rc)
        rc = build_graph(&s);
    int took = !rc && v && v->own; /* the view's dependencies are read: they go until the run is over */
    if (took) {
        free(v->own->dep_off);
        free(v->own->ndep);
        free(v->own->deps);
        v->own->dep_off = v->own->ndep = v->own->deps = NULL;
        s.vdep_off = s.vndep = s.vdeps = NULL;
    }
    if (!rc)
        rc = run(&s);
    if (took) {
        int b = give_back(&s, v->own);
        if (b)
            rc = b;
    }
    free_run(&s);
    nk__dma_gang_starts += s.gang_starts;
    nk__dma_gang_parts += s.gang_parts;
    if (!rc)
        rc = s.tl ? finish(&s) : launch_regions(&s, NULL, total);
    free_sim(&s);
    if (rc) {
        nk__timeline_free(s.tl);
        return rc;
    }
    if (out)
        *out = s.tl;
    return 0;
}

int nk__time_program(const nk_program *p, const nk_arch *arch, nk_timeline **out)
{
    if (!out)
        return NK_EINVAL;
    *out = NULL;
    return simulate(p, NULL, arch, 0, out, NULL);
}

int nk__time_program_detail(const nk_program *p, const nk_arch *arch, unsigned flags, nk_timeline **out)
{
    if (!out)
        return NK_EINVAL;
    *out = NULL;
    return simulate(p, NULL, arch, flags, out, NULL);
}

int nk__time_total(const nk_program *p, const nk__order_view *v, const nk_arch *arch, double *total_ns)
{
    *total_ns = -1;
    return simulate(p, v, arch, 0, NULL, total_ns);
}

void nk__timeline_free(nk_timeline *tl)
{
    if (!tl)
        return;
    for (uint32_t i = 0; i < tl->ncounters; i++) {
        free(tl->counters[i].t);
        free(tl->counters[i].value);
    }
    free(tl->counters);
    free(tl->events);
    free(tl->dspans);
    free(tl->xfers);
    free(tl->instr_start);
    free(tl->instr_end);
    free(tl->regions);
    free(tl);
}

int nk__dma_spans_of(const nk_dma_xfer *x, uint32_t n, uint32_t ninstr, nk_dma_span **out, uint32_t *nout)
{
    *out = NULL;
    *nout = 0;
    nk_dma_span *v = malloc((n ? n : 1) * sizeof *v);
    uint32_t *at = calloc(ninstr ? ninstr : 1, sizeof *at), nv = 0;
    if (!v || !at) {
        free(v);
        free(at);
        return NK_ENOMEM;
    }
    for (uint32_t k = 0; k < n; k++) {
        if (x[k].instr >= ninstr || x[k].dma_engine >= 64 || (k && x[k].start < x[k - 1].start)) {
            free(v);
            free(at);
            return NK_EINVAL;
        }
        span_add(v, &nv, &at[x[k].instr], &x[k]);
    }
    free(at);
    *out = v;
    *nout = nv;
    return 0;
}
