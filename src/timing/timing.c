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
 * The simulation pops the earliest ready engine from a heap; every decision
 * is made in time order, so shared resources are granted first come, first
 * served. Memory: arrays sized up front, nothing allocated per instruction.
 */
#include "timing/timing.h"
#include "timing/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hent {
    double t;
    uint32_t id; /* compute engine, DMA engine (from ncomp), DMA trigger (from trig0) */
} hent;

/* A load/store as the DMA engines see it: one descriptor per engine used,
 * engines e0, e0 + 1, ... (mod the engine count), partitions spread evenly. */
typedef struct dmainfo {
    double rate;         /* bytes per ns of one engine at this efficiency */
    uint64_t part_bytes; /* bytes per partition */
    uint32_t parts;      /* partitions */
    uint32_t per, extra; /* parts / neng, parts % neng: the first `extra` descriptors take one more */
    uint16_t queue;
    uint8_t e0, neng, store;
    uint8_t hbm_sides;   /* times its bytes pass the shared HBM bandwidth */
} dmainfo;

typedef struct engine {
    uint32_t off, end, cur;          /* its instructions: stream[off..end) */
    double fixed_free, stream_free;  /* Vector/Scalar/GpSimd stages */
    double ls_free, mm_free, mm_start; /* Tensor engine */
    int queued;
} engine;

typedef struct dmaeng {
    double busy, next_ev;
    uint64_t nonempty; /* queues with descriptors left (bit q) */
    uint32_t rr;       /* next queue to serve */
} dmaeng;

typedef struct sim {
    const nk_program *p;
    const nk_arch *a;
    nk_timeline *tl;
    uint32_t n;
    uint32_t ncores;
    uint8_t *core;      /* per instruction: its physical NeuronCore */
    /* SPMD: instances on one core run one after another */
    uint32_t *inst_off; /* instructions of instance k: [inst_off[k], inst_off[k + 1]) */
    uint32_t *inst_left;/* per instance: instructions not committed yet */
    uint32_t *inst_next;/* per instance: the next instance on its core + 1 (0: none) */
    double *inst_end;   /* per instance: latest completion so far */
    uint8_t *inst_gated;/* per instance: waits for an earlier instance on its core */
    double *unit_t0;    /* per instance: when it may start (sequences: after the previous kernel's launch) */
    uint32_t *rem;      /* dependencies not yet resolved */
    uint32_t *succ_off, *succ;
    uint32_t *stream;   /* instruction ids grouped by engine */
    double *ready;      /* compute: earliest start from dependencies; DMA: start of transfers */
    double *aux;        /* Tensor engine: LS readiness; DMA: trigger time */
    double *done;       /* output visible (DMA: last transfer end) */
    nk_cost *cost;
    engine e[NK_MAX_CORES][NK_ENGINE_DMA];
    double lock_sbuf[NK_MAX_CORES], lock_psum[NK_MAX_CORES];
    uint32_t ncomp;     /* heap ids below this are compute engines (core * NK_ENGINE_DMA + engine) */
    uint32_t trig0;     /* heap id of instruction i's DMA trigger: trig0 + i */
    double sync_free[NK_MAX_CORES]; /* each core's Sync engine: free for the next trigger */
    uint32_t ne, nq;
    dmainfo *dma;       /* per instruction (DMA ones) */
    uint32_t *fifo, *fifo_off, *fifo_cur; /* instruction ids by (core's DMA engine, queue) */
    uint32_t *left;     /* DMA: descriptors not started */
    dmaeng *d;          /* core * ne + DMA engine */
    double hbm_free[NK_MAX_CORES]; /* each core's share of the HBM bandwidth */
    hent *heap;
    uint32_t nheap, cap_heap;
    uint32_t committed;
    int rc;
} sim;

static double dmax(double a, double b) { return a > b ? a : b; }

/* ---- heap of (time, id), earliest first; ties by id for determinism */

static int hless(hent a, hent b) { return a.t < b.t || (a.t == b.t && a.id < b.id); }

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

/* ---- events */

static void add_event_on(sim *s, uint32_t i, int engine, int kind, double start, double end)
{
    const nk_instr *in = &s->p->instrs[i];
    nk_timeline *tl = s->tl;
    tl->events[tl->nevents++] = (nk_event){i, (uint8_t)engine, (uint8_t)kind, in->queue, start, end};
}

static void add_event(sim *s, uint32_t i, int kind, double start, double end)
{
    add_event_on(s, i, s->p->instrs[i].engine, kind, start, end);
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
            if (s->p->instrs[i].engine == NK_ENGINE_TENSOR)
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
    const nk_program *p = s->p;
    const nk_instr *pj = &p->instrs[j];
    s->committed++;
    for (uint32_t k = s->succ_off[j]; k < s->succ_off[j + 1]; k++) {
        uint32_t i = s->succ[k];
        const nk_instr *pi = &p->instrs[i];
        if (pi->engine == NK_ENGINE_DMA) {
            s->ready[i] = dmax(s->ready[i], s->done[j]); /* the trigger; latency added on resolve */
        } else if (pi->engine == pj->engine) {
            /* in order on one engine: only a read of the output waits for its write;
               the Tensor engine's PSUM writes are ordered by its pipeline */
            if (pi->engine != NK_ENGINE_TENSOR && nk__reads_output(p, pi, pj))
                s->ready[i] = dmax(s->ready[i], s->done[j]);
        } else {
            double t = s->done[j] + s->a->sem_latency_ns;
            s->ready[i] = dmax(s->ready[i], t);
            if (nk__feeds_stationary(p, pi, pj))
                s->aux[i] = dmax(s->aux[i], t);
        }
        if (--s->rem[i] == 0)
            on_resolved(s, i);
    }
    if (s->inst_left)
        instance_step(s, nk__unit_of(p, pj), s->done[j]);
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

static void commit_tensor(sim *s, engine *E, uint32_t h)
{
    const nk_cost *c = &s->cost[h];
    double ls = dmax(dmax(s->aux[h], E->ls_free), E->mm_start); /* one weight buffer in the background */
    double ls_end = ls + c->ls_ns;
    double mm = dmax(dmax(ls_end, E->mm_free), s->ready[h]);
    double mm_end = mm + c->stream_ns;
    E->ls_free = ls_end;
    E->mm_free = mm_end;
    E->mm_start = mm;
    s->done[h] = mm_end + c->write_ns;
    add_event(s, h, NK_EV_LOAD_STATIONARY, ls, ls_end);
    add_event(s, h, NK_EV_MULTIPLY_MOVING, mm, mm_end);
    s->tl->instr_start[h] = ls;
    s->tl->instr_end[h] = mm_end;
}

static void commit_stream(sim *s, uint32_t core, int e, engine *E, uint32_t h)
{
    const nk_cost *c = &s->cost[h];
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
    add_event(s, h, NK_EV_INSTR, bar, end);
    s->tl->instr_start[h] = bar;
    s->tl->instr_end[h] = end;
}

static void commit_compute(sim *s, uint32_t id)
{
    uint32_t c = id / NK_ENGINE_DMA;
    int e = (int)(id % NK_ENGINE_DMA);
    engine *E = &s->e[c][e];
    E->queued = 0;
    uint32_t h = s->stream[E->cur++];
    if (e == NK_ENGINE_TENSOR)
        commit_tensor(s, E, h);
    else
        commit_stream(s, c, e, E, h);
    propagate(s, h);
    push_engine(s, c, e);
}

/* ---- DMA */

static void wake(sim *s, uint32_t e, double t)
{
    dmaeng *D = &s->d[e];
    t = dmax(t, D->busy);
    if (t < D->next_ev) {
        D->next_ev = t;
        heap_push(s, t, s->ncomp + e);
    }
}

static void commit_dma(sim *s, uint32_t i)
{
    double trig = s->aux[i];
    add_event(s, i, NK_EV_DMA_ISSUE, trig, s->done[i]);
    s->tl->instr_start[i] = trig;
    s->tl->instr_end[i] = s->done[i];
    propagate(s, i);
}

/* DMA instruction i is triggered at t: its transfers may start the DMA
 * latency later (semaphore to start [DMAbw], which includes the trigger
 * instruction itself: not added to it). */
static void dma_triggered(sim *s, uint32_t i, double t)
{
    s->aux[i] = t;
    s->ready[i] = t + dmax(s->a->dma_latency_ns, s->a->dma_trigger_ns);
    if (s->left[i] == 0) {
        s->done[i] = s->ready[i];
        commit_dma(s, i);
        return;
    }
    uint32_t g0 = s->core[i] * s->ne;
    for (uint32_t k = 0, e = s->dma[i].e0; k < s->dma[i].neng; k++, e = e + 1 == s->ne ? 0 : e + 1)
        wake(s, g0 + e, s->ready[i]);
}

/* The trigger of DMA instruction i, popped at its readiness t: it runs on
 * its core's Sync engine when that is free, triggers first come first
 * served (the order the compile step would give the Sync queue, assumed). */
static void trigger_dma(sim *s, uint32_t i, double t)
{
    uint32_t c = s->core[i];
    double ts = dmax(t, s->sync_free[c]), te = ts + s->a->dma_trigger_ns;
    s->sync_free[c] = te;
    add_event_on(s, i, NK_ENGINE_SYNC, NK_EV_DMA_TRIGGER, ts, te);
    dma_triggered(s, i, ts);
}

/* Starts the descriptor of DMA instruction i on DMA engine g (core * ne +
 * the core's engine e) at time t. */
static void start_desc(sim *s, uint32_t g, uint32_t i, double t)
{
    const dmainfo *m = &s->dma[i];
    uint32_t c = g / s->ne, e = g % s->ne;
    uint32_t k = e >= m->e0 ? e - m->e0 : e + s->ne - m->e0, parts = m->per + (k < m->extra);
    uint64_t bytes = (uint64_t)parts * m->part_bytes;
    double end = t + (double)bytes / m->rate;
    if (m->hbm_sides) { /* SBUF to SBUF leaves HBM alone */
        s->hbm_free[c] = dmax(s->hbm_free[c], t) + (double)m->hbm_sides * (double)bytes / s->a->hbm_gbps;
        end = dmax(end, s->hbm_free[c]);
    }
    nk_timeline *tl = s->tl;
    tl->xfers[tl->nxfers++] = (nk_dma_xfer){i, m->queue, (uint8_t)e, m->store, parts, bytes, t, end};
    s->d[g].busy = end;
    s->done[i] = dmax(s->done[i], end);
    if (--s->left[i] == 0)
        commit_dma(s, i);
}

/* The head of queue q on engine e, if it may start at t: 1 started, 0 not
 * ready (*soonest lowered to when it will be), -1 not resolved yet. */
static int try_queue(sim *s, uint32_t e, uint32_t q, double t, double *soonest)
{
    dmaeng *D = &s->d[e];
    uint32_t slot = e * s->nq + q;
    uint32_t i = s->fifo[s->fifo_cur[slot]];
    if (s->rem[i])
        return -1;
    if (s->ready[i] > t) {
        *soonest = s->ready[i] < *soonest ? s->ready[i] : *soonest;
        return 0;
    }
    if (++s->fifo_cur[slot] == s->fifo_off[slot + 1])
        D->nonempty &= ~(1ull << q);
    D->rr = q + 1 == s->nq ? 0 : q + 1;
    start_desc(s, e, i, t);
    return 1;
}

/* Engine e may start a descriptor at t: serve its queues round-robin from
 * rr, in order within each queue. */
static void dma_event(sim *s, uint32_t e, double t)
{
    dmaeng *D = &s->d[e];
    if (t != D->next_ev)
        return; /* superseded by an earlier wake */
    D->next_ev = INFINITY;
    double soonest = INFINITY;
    uint64_t from_rr = D->nonempty & (~0ull << D->rr);
    uint64_t pass[2] = {from_rr, D->nonempty & ~from_rr};
    for (int k = 0; k < 2; k++)
        for (uint64_t m = pass[k]; m; m &= m - 1) {
            if (try_queue(s, e, (uint32_t)__builtin_ctzll(m), t, &soonest) == 1) {
                wake(s, e, D->busy);
                return;
            }
        }
    if (soonest < INFINITY)
        wake(s, e, soonest);
}

static void on_resolved(sim *s, uint32_t i)
{
    int e = s->p->instrs[i].engine;
    if (e == NK_ENGINE_DMA) {
        heap_push(s, s->ready[i], s->trig0 + i);
        s->ready[i] = INFINITY; /* no transfer before the trigger */
    } else
        push_engine(s, s->core[i], e);
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
        const nk_tensor *ts[5] = {&in->dst, &in->dst2, &in->src[0], &in->src[1], &in->src[2]};
        for (int k = 0; k < 5; k++)
            if (ts[k]->buf >= p->nbufs || (ts[k]->buf && ts[k]->mem != NK_SHARED_HBM && ts[k]->ndim < 1))
                return NK_EINVAL;
    }
    return 0;
}

static int build_graph(sim *s)
{
    const nk_program *p = s->p;
    s->succ = malloc(((size_t)p->ndeps + 1) * sizeof *s->succ);
    if (!s->succ)
        return NK_ENOMEM;
    for (uint32_t i = 0; i < s->n; i++) {
        const nk_instr *in = &p->instrs[i];
        s->rem[i] = in->ndep;
        for (uint32_t k = 0; k < in->ndep; k++)
            s->succ_off[p->deps[in->dep_off + k] + 1]++;
    }
    for (uint32_t i = 0; i < s->n; i++)
        s->succ_off[i + 1] += s->succ_off[i];
    uint32_t *fill = s->left; /* borrowed as a cursor; reset by plan_dma */
    memcpy(fill, s->succ_off, s->n * sizeof *fill);
    for (uint32_t i = 0; i < s->n; i++) {
        const nk_instr *in = &p->instrs[i];
        for (uint32_t k = 0; k < in->ndep; k++)
            s->succ[fill[p->deps[in->dep_off + k]]++] = i;
    }
    uint32_t cnt[NK_MAX_CORES][NK_ENGINE_COUNT] = {{0}}, off = 0;
    for (uint32_t i = 0; i < s->n; i++)
        cnt[s->core[i]][p->instrs[i].engine]++;
    for (uint32_t c = 0; c < s->ncores; c++)
        for (int e = 0; e < NK_ENGINE_DMA; e++) {
            s->e[c][e].off = s->e[c][e].cur = s->e[c][e].end = off;
            off += cnt[c][e];
        }
    for (uint32_t i = 0; i < s->n; i++) {
        int e = p->instrs[i].engine;
        if (e != NK_ENGINE_DMA)
            s->stream[s->e[s->core[i]][e].end++] = i;
    }
    /* launch units (SPMD instances, or the kernels of a sequence): each
     * waits for the one before it on its core */
    uint32_t nu = nk__nunits(p);
    if (nu > 1) {
        uint32_t last[NK_MAX_CORES] = {0};
        for (uint32_t i = 0; i < s->n; i++)
            s->inst_off[nk__unit_of(p, &p->instrs[i]) + 1]++;
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

static int cost_all(sim *s)
{
    for (uint32_t i = 0; i < s->n; i++) {
        const nk_instr *in = &s->p->instrs[i];
        if (in->engine == NK_ENGINE_DMA)
            continue;
        int rc = nk__time_cost(s->a, in, &s->cost[i]);
        if (rc)
            return rc;
    }
    return 0;
}

/* Every load/store: its descriptors, and per-(engine, queue) FIFOs of
 * instruction ids in program order (one descriptor per engine and
 * instruction, so the id says which descriptor it is). */
static int plan_dma(sim *s)
{
    const nk_program *p = s->p;
    size_t nslot = (size_t)s->ncores * s->ne * s->nq;
    uint64_t total = 0;
    uint32_t rots[NK_MAX_CORES] = {0};
    s->fifo_off = calloc(nslot + 1, sizeof *s->fifo_off);
    s->fifo_cur = calloc(nslot, sizeof *s->fifo_cur);
    if (!s->fifo_off || !s->fifo_cur)
        return NK_ENOMEM;
    for (uint32_t i = 0; i < s->n; i++) {
        const nk_instr *in = &p->instrs[i];
        s->left[i] = 0;
        if (in->engine != NK_ENGINE_DMA)
            continue;
        nk_dma_plan pl;
        if (nk__time_dma_plan(s->a, in, &pl))
            return NK_EINVAL;
        uint16_t q = (uint16_t)(in->queue % s->nq);
        uint32_t *rp = &rots[s->core[i]], rot = *rp, g0 = s->core[i] * s->ne;
        uint32_t per = pl.engines ? pl.partitions / pl.engines : 0, extra = pl.partitions - per * pl.engines;
        s->dma[i] = (dmainfo){s->a->dma_engine_gbps * pl.efficiency, pl.part_bytes, pl.partitions, per, extra,
                              in->queue, (uint8_t)rot, (uint8_t)pl.engines, in->dst.mem == NK_SHARED_HBM,
                              pl.hbm_sides};
        s->left[i] = pl.engines;
        for (uint32_t k = 0, e = rot; k < pl.engines; k++, e = e + 1 == s->ne ? 0 : e + 1)
            s->fifo_off[(g0 + e) * s->nq + q + 1]++;
        *rp = (rot + pl.engines) % s->ne;
        total += pl.engines;
    }
    if (total > UINT32_MAX)
        return NK_ELIMIT;
    s->fifo = malloc((total ? total : 1) * sizeof *s->fifo);
    s->tl->xfers = malloc((total ? total : 1) * sizeof *s->tl->xfers);
    if (!s->fifo || !s->tl->xfers)
        return NK_ENOMEM;
    for (size_t k = 0; k < nslot; k++)
        s->fifo_off[k + 1] += s->fifo_off[k];
    memcpy(s->fifo_cur, s->fifo_off, nslot * sizeof *s->fifo_cur);
    for (uint32_t i = 0; i < s->n; i++) {
        if (p->instrs[i].engine != NK_ENGINE_DMA)
            continue;
        const dmainfo *m = &s->dma[i];
        uint32_t q = m->queue % s->nq, g0 = s->core[i] * s->ne;
        for (uint32_t k = 0, e = m->e0; k < m->neng; k++, e = e + 1 == s->ne ? 0 : e + 1)
            s->fifo[s->fifo_cur[(g0 + e) * s->nq + q]++] = i;
    }
    memcpy(s->fifo_cur, s->fifo_off, nslot * sizeof *s->fifo_cur);
    for (uint32_t g = 0; g < s->ncores * s->ne; g++)
        for (uint32_t q = 0; q < s->nq; q++)
            if (s->fifo_off[g * s->nq + q + 1] > s->fifo_off[g * s->nq + q])
                s->d[g].nonempty |= 1ull << q;
    return 0;
}

static int run(sim *s)
{
    for (uint32_t g = 0; g < s->ncores * s->ne; g++)
        s->d[g].next_ev = INFINITY;
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
    while (s->nheap && !s->rc) {
        hent h = heap_pop(s);
        if (h.id < s->ncomp)
            commit_compute(s, h.id);
        else if (h.id < s->trig0)
            dma_event(s, h.id - s->ncomp, h.t);
        else
            trigger_dma(s, h.id - s->trig0, h.t);
    }
    if (s->rc)
        return s->rc;
    return s->committed == s->n ? 0 : NK_EINVAL;
}

/* ---- results: order, totals, active time, counters */

static int cmp_event(const void *x, const void *y)
{
    const nk_event *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->instr != b->instr)
        return a->instr < b->instr ? -1 : 1;
    return (int)a->kind - (int)b->kind;
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
    for (uint32_t k = 0; k < tl->nxfers; k++) {
        const nk_dma_xfer *x = &tl->xfers[k];
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

static int new_counter(nk_counter *c, const char *name, const char *unit, uint32_t n)
{
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->unit, sizeof c->unit, "%s", unit);
    c->n = 0;
    c->t = malloc((n ? n : 1) * sizeof *c->t);
    c->value = malloc((n ? n : 1) * sizeof *c->value);
    return c->t && c->value ? 0 : NK_ENOMEM;
}

typedef struct mpoint {
    double t, delta;
} mpoint;

static int cmp_mpoint(const void *x, const void *y)
{
    const mpoint *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return (a->delta > b->delta) - (a->delta < b->delta); /* frees first */
}

/* DMA throughput as a step function that changes exactly where transfers
 * start and end: the sum of the rates (bytes / duration) of the transfers in
 * flight, so its integral is the bytes moved. At most 2 samples per transfer
 * plus the first; equal neighbouring values (to 1e-12, as one transfer
 * hands over to another of the same rate) are one sample. */
static int dma_throughput(nk_timeline *tl, nk_counter *c)
{
    size_t np = 0;
    mpoint *pt = malloc(((size_t)tl->nxfers * 2 + 1) * sizeof *pt);
    if (!pt || new_counter(c, "dma_throughput", "GB/s", tl->nxfers * 2 + 1)) {
        free(pt);
        return NK_ENOMEM;
    }
    for (uint32_t k = 0; k < tl->nxfers; k++) {
        const nk_dma_xfer *x = &tl->xfers[k];
        if (!(x->end > x->start))
            continue;
        double rate = (double)x->bytes / (x->end - x->start); /* bytes per ns = GB/s */
        pt[np++] = (mpoint){x->start, rate};
        pt[np++] = (mpoint){x->end, -rate};
    }
    qsort(pt, np, sizeof *pt, cmp_mpoint);
    c->t[0] = c->value[0] = 0;
    c->n = 1;
    double v = 0;
    long active = 0; /* transfers in flight */
    for (size_t k = 0; k < np; k++) {
        v += pt[k].delta;
        active += pt[k].delta > 0 ? 1 : -1;
        if (!active)
            v = 0; /* nothing in flight: exactly zero, whatever the rounding */
        if (k + 1 < np && pt[k + 1].t == pt[k].t)
            continue; /* the value after every change at this time */
        if (fabs(c->value[c->n - 1] - v) <= 1e-12 * v)
            continue; /* the same rate, summed in another order */
        if (c->t[c->n - 1] == pt[k].t)
            c->value[c->n - 1] = v;
        else {
            c->t[c->n] = pt[k].t;
            c->value[c->n++] = v;
        }
    }
    free(pt);
    return 0;
}

/* Bytes of tiles in `mem` alive over time: from first write to last use. */
static int tile_bytes(const nk_program *p, const nk_timeline *tl, int mem, const char *name, nk_counter *c)
{
    double *first = malloc(p->nbufs * sizeof *first), *last = malloc(p->nbufs * sizeof *last);
    mpoint *pt = malloc(((size_t)p->nbufs * 2 + 1) * sizeof *pt);
    int rc = NK_ENOMEM;
    if (!first || !last || !pt)
        goto out;
    for (uint32_t b = 0; b < p->nbufs; b++) {
        first[b] = INFINITY;
        last[b] = -INFINITY;
    }
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        const nk_tensor *w[2] = {&in->dst, &in->dst2};
        for (int k = 0; k < 2; k++)
            if (w[k]->buf && w[k]->mem == mem) {
                first[w[k]->buf] = fmin(first[w[k]->buf], tl->instr_start[i]);
                last[w[k]->buf] = dmax(last[w[k]->buf], tl->instr_end[i]);
            }
        for (int k = 0; k < in->nsrc && k < 3; k++)
            if (in->src[k].buf && in->src[k].mem == mem)
                last[in->src[k].buf] = dmax(last[in->src[k].buf], tl->instr_end[i]);
    }
    size_t np = 0;
    for (uint32_t b = 1; b < p->nbufs; b++) {
        const nk_bufinfo *bi = &p->bufs[b];
        if (bi->mem != mem || first[b] == INFINITY)
            continue;
        double bytes = (double)bi->bytes * (double)bi->shape[0];
        pt[np++] = (mpoint){first[b], bytes};
        pt[np++] = (mpoint){last[b], -bytes};
    }
    qsort(pt, np, sizeof *pt, cmp_mpoint);
    if ((rc = new_counter(c, name, "bytes", (uint32_t)np + 1)))
        goto out;
    double v = 0;
    c->t[0] = 0;
    c->value[0] = 0;
    c->n = 1;
    for (size_t k = 0; k < np; k++) {
        v += pt[k].delta;
        if (c->t[c->n - 1] == pt[k].t)
            c->value[c->n - 1] = v;
        else {
            c->t[c->n] = pt[k].t;
            c->value[c->n++] = v;
        }
    }
    rc = 0;
out:
    free(first);
    free(last);
    free(pt);
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
 * after its last completion; the device time ends with the last tear-down. */
static int launch_regions(sim *s)
{
    nk_timeline *tl = s->tl;
    double last[NK_MAX_CORES];
    for (uint32_t c = 0; c < s->ncores; c++)
        last[c] = s->a->launch_startup_ns;
    for (uint32_t i = 0; i < s->n; i++)
        last[s->core[i]] = dmax(last[s->core[i]], tl->instr_end[i]);
    tl->regions = malloc(2 * s->ncores * sizeof *tl->regions);
    if (!tl->regions)
        return NK_ENOMEM;
    if (s->p->nseg > 1 && s->unit_t0) { /* a sequence: every kernel is launched, one after another */
        uint32_t nu = nk__nunits(s->p), nonempty = 0;
        for (uint32_t u = 0; u < nu; u++)
            nonempty += s->inst_off[u + 1] > s->inst_off[u];
        nk_region *r = realloc(tl->regions, 2 * (size_t)(nonempty ? nonempty : 1) * sizeof *r);
        if (!r)
            return NK_ENOMEM;
        tl->regions = r;
        int first = 1;
        for (uint32_t u = 0; u < nu; u++) {
            if (s->inst_off[u + 1] == s->inst_off[u])
                continue;
            double t0 = first ? s->a->launch_startup_ns : s->unit_t0[u], end = s->inst_end[u];
            first = 0;
            tl->regions[tl->nregions++] = (nk_region){NK_REGION_STARTUP, 0, t0 - s->a->launch_startup_ns, t0};
            tl->regions[tl->nregions++] = (nk_region){NK_REGION_TEARDOWN, 0, end, end + s->a->launch_teardown_ns};
            tl->total_ns = dmax(tl->total_ns, end + s->a->launch_teardown_ns);
        }
    } else {
        for (uint32_t c = 0; c < s->ncores; c++) {
            double end = last[c] + s->a->launch_teardown_ns;
            tl->regions[tl->nregions++] = (nk_region){NK_REGION_STARTUP, (uint8_t)c, 0, s->a->launch_startup_ns};
            tl->regions[tl->nregions++] = (nk_region){NK_REGION_TEARDOWN, (uint8_t)c, last[c], end};
            tl->total_ns = dmax(tl->total_ns, end);
        }
    }
    qsort(tl->regions, tl->nregions, sizeof *tl->regions, cmp_region);
    return 0;
}

double nk_timeline_launch_ns(const nk_timeline *tl)
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

static int finish(sim *s)
{
    nk_timeline *tl = s->tl;
    const nk_program *p = s->p;
    qsort(tl->events, tl->nevents, sizeof *tl->events, cmp_event);
    int rc = launch_regions(s);
    if (rc)
        return rc;
    tl->host_in_ns = host_ns(p, p->input_buf, p->ninputs, s->a->host_gbps);
    tl->host_out_ns = host_ns(p, p->output_buf, p->noutputs, s->a->host_gbps);
    active_times(tl);
    tl->counters = calloc(3, sizeof *tl->counters);
    if (!tl->counters)
        return NK_ENOMEM;
    tl->ncounters = 3;
    rc = dma_throughput(tl, &tl->counters[0]);
    if (!rc)
        rc = tile_bytes(p, tl, NK_SBUF, "sbuf_bytes", &tl->counters[1]);
    if (!rc)
        rc = tile_bytes(p, tl, NK_PSUM, "psum_bytes", &tl->counters[2]);
    return rc;
}

static int alloc_sim(sim *s)
{
    size_t n = s->n ? s->n : 1;
    nk_timeline *tl = s->tl;
    uint32_t nev = 0;
    for (uint32_t i = 0; i < s->n; i++)
        nev += s->p->instrs[i].engine == NK_ENGINE_TENSOR || s->p->instrs[i].engine == NK_ENGINE_DMA ? 2 : 1;
    s->rem = malloc(n * sizeof *s->rem);
    s->succ_off = calloc(n + 1, sizeof *s->succ_off);
    s->stream = malloc(n * sizeof *s->stream);
    s->ready = calloc(n, sizeof *s->ready);
    s->aux = calloc(n, sizeof *s->aux);
    s->done = calloc(n, sizeof *s->done);
    s->cost = malloc(n * sizeof *s->cost);
    s->left = malloc(n * sizeof *s->left);
    s->dma = calloc(n, sizeof *s->dma);
    s->core = malloc(n);
    s->d = calloc((size_t)s->ncores * s->ne, sizeof *s->d);
    if (!s->core || !s->d)
        return NK_ENOMEM;
    for (uint32_t i = 0; i < s->n; i++)
        s->core[i] = (uint8_t)nk__instr_core(s->p, &s->p->instrs[i]);
    if (nk__nunits(s->p) > 1) {
        size_t ni = nk__nunits(s->p);
        s->inst_off = calloc(ni + 1, sizeof *s->inst_off);
        s->inst_left = calloc(ni, sizeof *s->inst_left);
        s->inst_next = calloc(ni, sizeof *s->inst_next);
        s->inst_end = calloc(ni, sizeof *s->inst_end);
        s->inst_gated = calloc(ni, 1);
        s->unit_t0 = calloc(ni, sizeof *s->unit_t0);
        if (!s->inst_off || !s->inst_left || !s->inst_next || !s->inst_end || !s->inst_gated || !s->unit_t0)
            return NK_ENOMEM;
    }
    tl->events = malloc((nev ? nev : 1) * sizeof *tl->events);
    tl->instr_start = calloc(n, sizeof(double));
    tl->instr_end = calloc(n, sizeof(double));
    if (!s->rem || !s->succ_off || !s->stream || !s->ready || !s->aux || !s->done || !s->cost || !s->left ||
        !s->dma || !tl->events || !tl->instr_start || !tl->instr_end)
        return NK_ENOMEM;
    return 0;
}

static void free_sim(sim *s)
{
    free(s->rem);
    free(s->succ_off);
    free(s->succ);
    free(s->stream);
    free(s->ready);
    free(s->aux);
    free(s->done);
    free(s->cost);
    free(s->left);
    free(s->dma);
    free(s->fifo);
    free(s->fifo_off);
    free(s->fifo_cur);
    free(s->heap);
    free(s->core);
    free(s->d);
    free(s->inst_off);
    free(s->inst_left);
    free(s->inst_next);
    free(s->inst_end);
    free(s->inst_gated);
    free(s->unit_t0);
}

int nk_time_program(const nk_program *p, const nk_arch *arch, nk_timeline **out)
{
    if (!out)
        return NK_EINVAL;
    *out = NULL;
    if (!p)
        return NK_EINVAL;
    if (!arch)
        arch = p->arch ? p->arch : nk_arch_get(p->target);
    if (!arch)
        return NK_ENOTFOUND;
    if (arch->dma_engines < 1 || arch->dma_engines > NK_ARCH_MAX_DMA_ENGINES || arch->dma_queues < 1 ||
        arch->dma_queues > NK_ARCH_MAX_DMA_QUEUES)
        return NK_EINVAL;
    int rc = check_program(p);
    if (rc)
        return rc;
    sim s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.a = arch;
    s.n = p->ninstr;
    s.ne = (uint32_t)arch->dma_engines;
    s.nq = (uint32_t)arch->dma_queues;
    s.ncores = p->ncores ? p->ncores : 1;
    if (s.ncores > NK_MAX_CORES)
        return NK_EINVAL;
    s.ncomp = s.ncores * NK_ENGINE_DMA;
    s.trig0 = s.ncomp + s.ncores * s.ne;
    if ((uint64_t)s.trig0 + s.n > UINT32_MAX)
        return NK_ELIMIT;
    s.tl = calloc(1, sizeof *s.tl);
    if (!s.tl)
        return NK_ENOMEM;
    snprintf(s.tl->target, sizeof s.tl->target, "%s", arch->name);
    rc = alloc_sim(&s);
    if (!rc)
        rc = build_graph(&s);
    if (!rc)
        rc = cost_all(&s);
    if (!rc)
        rc = plan_dma(&s);
    if (!rc)
        rc = run(&s);
    if (!rc)
        rc = finish(&s);
    free_sim(&s);
    if (rc) {
        nk_timeline_free(s.tl);
        return rc;
    }
    *out = s.tl;
    return 0;
}

void nk_timeline_free(nk_timeline *tl)
{
    if (!tl)
        return;
    for (uint32_t i = 0; i < tl->ncounters; i++) {
        free(tl->counters[i].t);
        free(tl->counters[i].value);
    }
    free(tl->counters);
    free(tl->events);
    free(tl->xfers);
    free(tl->instr_start);
    free(tl->instr_end);
    free(tl->regions);
    free(tl);
}
