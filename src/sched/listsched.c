/*
 * listsched.c - candidate orders for each engine's instruction queue.
 *
 * Engines run their queues in order, so the order the compiler emits decides
 * whether one iteration's Vector op waits behind another's that is still
 * waiting for its input. NKI documents that affine_range lets the compiler
 * reorder and pipeline iterations; this is that step: list scheduling over
 * the dependency graph. Each pass simulates the engines with estimated
 * durations (the timing model's cost formulas; the DMA engines as one unit
 * behind the DMA start latency) and issues, step by step, a ready
 * instruction chosen by its policy:
 *   1. earliest start, then the longest path to the end, then trace order;
 *   2. among the instructions that could start before the earliest one ends,
 *      the longest path to the end (critical path first).
 * The compile step (sched.c) times each candidate and trace order on the
 * target's timing model and keeps the fastest.
 *
 * What every candidate keeps:
 *   - every dependency (the graph it reads has no same-engine shortcuts, so
 *     any order keeps every memory conflict in trace order);
 *   - instructions inside a sequential_range keep their trace order on each
 *     engine (iterations of a sequential loop are not interleaved);
 *   - a bounded window: an instruction is not issued more than
 *     NK_SCHED_WINDOW instructions (in trace order) ahead of the oldest one
 *     not yet issued (assumed: the compiler's window is not documented).
 * Allocation pressure is respected by construction: addresses are fixed
 * before scheduling, so reusing a tile's bytes is a dependency like any
 * other.
 */
#include "nkint.h"
#include "timing/model.h"
#include "core/nkassert.h"
#include "sched/progress.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define NK_SCHED_WINDOW 512

/* Estimated time an instruction occupies its unit, ns. A DMA spreads its
 * partitions over the DMA engines, which every queue shares: the estimate
 * treats the engines as one unit busy for the transfer, with the start
 * latency before it (which overlaps other transfers). */
static double duration(const nk_arch *a, const nk_program *p, const nk_instr *in)
{
    if (in->engine == NK_ENGINE_DMA) {
        nk_dma_plan pl;
        if (nk__time_dma_plan(a, p, in, &pl) || !pl.engines || pl.efficiency <= 0)
            return 0;
        double bytes = (double)pl.partitions * (double)pl.part_bytes;
        return bytes / (pl.engines * a->dma_engine_gbps * pl.efficiency);
    }
    nk_cost c;
    if (nk__time_cost(a, p, in, &c))
        return 0;
    return c.fixed_ns + c.ls_ns + c.stream_ns + c.write_ns;
}

/* The unit an instruction occupies: its engine (the DMA engines as one). */
static uint32_t unit_of(const nk_instr *in) { return in->engine; }

/* The queue whose order trace order keeps: an engine's, or a DMA queue's. */
static uint32_t queue_of(const nk_instr *in, uint16_t queue, uint32_t nq)
{
    return in->engine == NK_ENGINE_DMA ? NK_ENGINE_COUNT + (queue < nq ? queue : nq - 1) : in->engine;
}

/* Is the instruction inside a sequential loop (at any depth)? */
static int in_sequential(const nk_program *p, const nk_instr *in)
{
    for (uint32_t l = in->loop; l && l <= p->nloops; l = p->loops[l - 1].parent)
        if (p->loops[l - 1].kind == NK_LOOP_SEQUENTIAL)
            return 1;
    return 0;
}

/* Scheduling policies: 0 trace order (the first ready instruction in trace
 * order), 1 earliest start, 2 critical path (the longest path to the end
 * among the instructions that could start before the earliest one ends). */
enum { NK_POLICIES = 3 };

typedef struct g {
    const nk_program *p;
    uint32_t n, nunits;
    const double *dur, *bl;
    double *ready, *ufree;
    uint32_t *npred;
    const uint32_t *soff, *succ;
    uint32_t *cand, *order;
    uint8_t *done;
    int policy;
    const uint32_t *useq, *uoff; /* each unit's instructions in trace order */
    uint32_t *upos;
    uint32_t nq, nseq; /* DMA queues; order keys (engines + queues) */
    const uint8_t *eng;  /* per instruction: its engine */
    const uint32_t *qk;  /* per instruction: queue_of */
    nk__progress *made; /* NULL, or: where the positions of order written so far are published */
} g;

static uint32_t unit_idx(const g *s, uint32_t i)
{
    uint32_t u = s->eng[i];
    return u < s->nunits ? u : s->nunits - 1;
}

static double start_at(const g *s, uint32_t i)
{
    double u = s->ufree[unit_idx(s, i)];
    double r = s->ready[i] + (s->eng[i] == NK_ENGINE_DMA ? s->p->arch->dma_latency_ns : 0);
    return r > u ? r : u;
}

/* One list-scheduling pass: order[] and the estimated makespan. */
static int simulate(g *s, double *span)
{
    uint32_t n = s->n, ncand = 0, head = 0, next = 0, nord = 0;
    double sem = s->p->arch->sem_latency_ns;
    memset(s->ready, 0, n * sizeof *s->ready);
    memset(s->ufree, 0, s->nunits * sizeof *s->ufree);
    memset(s->done, 0, n);
    memset(s->upos, 0, s->nseq * sizeof *s->upos);
    *span = 0;
    while (nord < n) {
        while (next < n && next < head + NK_SCHED_WINDOW) {
            NK_ASSERT(ncand < (n < NK_SCHED_WINDOW ? n : NK_SCHED_WINDOW)); /* the candidates are in [head, next) */
            if (!s->npred[next])
                s->cand[ncand++] = next;
            next++;
        }
        if (!ncand) /* cannot happen for an acyclic graph */
            return NK_EINVAL;
        uint32_t best = 0;
        if (s->policy == 0) { /* each unit in trace order: the unit's next one, earliest start */
            int have = 0;
            double bstart = 0;
            for (uint32_t c = 0; c < ncand; c++) {
                uint32_t i = s->cand[c], u = s->qk[i];
                if (s->useq[s->uoff[u] + s->upos[u]] != i)
                    continue;
                double st = start_at(s, i);
                if (!have || st < bstart || (st == bstart && i < s->cand[best])) {
                    best = c;
                    bstart = st;
                    have = 1;
                }
            }
            if (!have)
                return NK_EINVAL;
        } else {
            double est = 0, eend = 0;
            for (uint32_t c = 0; c < ncand; c++) {
                double st = start_at(s, s->cand[c]);
                if (c == 0 || st < est) {
                    est = st;
                    eend = st + s->dur[s->cand[c]];
                }
            }
            double bstart = 0;
            int have = 0;
            for (uint32_t c = 0; c < ncand; c++) {
                uint32_t i = s->cand[c], b = s->cand[best];
                double st = start_at(s, i);
                if (s->policy == 1) {
                    if (!have || st < bstart || (st == bstart && (s->bl[i] > s->bl[b] || (s->bl[i] == s->bl[b] && i < b)))) {
                        best = c;
                        bstart = st;
                        have = 1;
                    }
                    continue;
                }
                if (st > est && st >= eend)
                    continue;
                if (!have || s->bl[i] > s->bl[b] || (s->bl[i] == s->bl[b] && (st < bstart || (st == bstart && i < b)))) {
                    best = c;
                    bstart = st;
                    have = 1;
                }
            }
        }
        uint32_t i = s->cand[best];
        s->cand[best] = s->cand[--ncand];
        s->upos[s->qk[i]]++;
        double fin = start_at(s, i) + s->dur[i];
        s->ufree[unit_idx(s, i)] = fin;
        if (fin > *span)
            *span = fin;
        s->done[i] = 1;
        s->order[nord++] = i;
        if (s->made && (nord % 256 == 0 || nord == n))
            nk__progress_publish(s->made, nord);
        while (head < n && s->done[head])
            head++;
        for (uint32_t k = s->soff[i]; k < s->soff[i + 1]; k++) {
            uint32_t j = s->succ[k];
            double r = fin + (unit_idx(s, j) == unit_idx(s, i) ? 0 : sem);
            if (r > s->ready[j])
                s->ready[j] = r;
            if (--s->npred[j] == 0 && j < next) {
                NK_ASSERT(ncand < (n < NK_SCHED_WINDOW ? n : NK_SCHED_WINDOW));
                s->cand[ncand++] = j;
            }
        }
    }
    return 0;
}

int nk__list_durations(const nk_program *p, double **out)
{
    uint32_t n = p->ninstr;
    double *dur = nk__big_fixed((n ? n : 1) * sizeof *dur);
    *out = dur;
    if (!dur)
        return NK_ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        dur[i] = duration(p->arch, p, &p->instrs[i]);
    return 0;
}

int nk__list_orders(const nk_program *p, uint32_t **dep_off_, uint32_t **ndep_, uint32_t **deps_, uint16_t **queue_,
                    double *dur, uint32_t *orders, int npol, nk__progress *made)
{
    uint32_t n = p->ninstr;
    const uint32_t *dep_off = *dep_off_, *ndep = *ndep_, *deps = *deps_;
    const uint16_t *queue = *queue_;
    int rc = NK_ENOMEM, have_dur = dur != NULL;
    uint32_t nunits = NK_ENGINE_COUNT + 1, ncap = n < NK_SCHED_WINDOW ? n : NK_SCHED_WINDOW;
    if (!dur)
        dur = nk__big_fixed((n ? n : 1) * sizeof *dur);
    /* the per-instruction arrays, each written whole, in one block: apart,
     * each (a few megabytes at most, not whole huge pages) would leave a
     * part on small pages, and under a megabyte all of it */
    nk__pack pk;
    size_t b8 = nk__pack_size((size_t)n * 8), b4 = nk__pack_size((size_t)n * 4), b1 = nk__pack_size(n);
    if (nk__pack_open(&pk, 2 * b8 + 4 * b4 + nk__pack_size(((size_t)n + 1) * 4) + 2 * b1)) {
        free(dur); /* taken, as on every path */
        return NK_ENOMEM;
    }
    double *bl = nk__pack_take(&pk, (size_t)n * sizeof *bl, 1), *ready = nk__pack_take(&pk, (size_t)n * sizeof *ready, 1);
    double *ufree = calloc(nunits, sizeof *ufree);
    uint32_t *npred = nk__pack_take(&pk, (size_t)n * sizeof *npred, 1);
    uint32_t *soff = nk__pack_take(&pk, ((size_t)n + 1) * sizeof *soff, 1);
    uint32_t *chain = nk__pack_take(&pk, (size_t)n * sizeof *chain, 0), *lastseq = malloc(nunits * sizeof *lastseq);
    /* the candidates are instructions in [head, next), at most the window */
    uint32_t *succ = NULL, *cand = malloc((ncap ? ncap : 1) * sizeof *cand);
    uint8_t *done = nk__pack_take(&pk, n, 1), *eng = nk__pack_take(&pk, n, 0);
    uint32_t *useq = NULL, *qk = nk__pack_take(&pk, (size_t)n * sizeof *qk, 0);
    uint32_t *uoff = NULL, *upos = NULL;
    if (!dur || !bl || !ready || !ufree || !npred || !soff || !chain || !lastseq || !cand || !done || !eng || !qk)
        goto out;
    uint32_t nq = (uint32_t)p->arch->dma_queues, nseq = NK_ENGINE_COUNT + nq;
    /* one pass over the records: engines, queues, durations, and the
     * sequential-loop chains (each such instruction follows the previous
     * one on its unit) */
    memset(lastseq, 0xff, nunits * sizeof *lastseq);
    for (uint32_t i = 0; i < n; i++) {
        const nk_instr *in = &p->instrs[i];
        uint32_t u = unit_of(in) < nunits ? unit_of(in) : nunits - 1;
        eng[i] = in->engine;
        qk[i] = queue_of(in, queue[i], nq);
        chain[i] = UINT32_MAX;
        if (in_sequential(p, in)) {
            chain[i] = lastseq[u];
            lastseq[u] = i;
        }
        if (!have_dur)
            dur[i] = duration(p->arch, p, in);
    }
    /* successor lists (CSR), counting chain edges as dependencies */
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < ndep[i]; k++)
            soff[deps[dep_off[i] + k] + 1]++;
        if (chain[i] != UINT32_MAX)
            soff[chain[i] + 1]++;
    }
    for (uint32_t i = 0; i < n; i++)
        soff[i + 1] += soff[i];
    uoff = calloc((size_t)nseq + 1, sizeof *uoff);
    upos = calloc(nseq, sizeof *upos);
    useq = nk__pack_take(&pk, (size_t)n * sizeof *useq, 0);
    if (!useq || !uoff || !upos)
        goto out;
    for (uint32_t i = 0; i < n; i++)
        uoff[qk[i] + 1]++;
    for (uint32_t u = 0; u < nseq; u++)
        uoff[u + 1] += uoff[u];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t u = qk[i];
        useq[uoff[u] + upos[u]++] = i;
    }
    succ = nk__big_fixed(((size_t)soff[n] + 1) * sizeof *succ);
    if (!succ)
        goto out;
    /* npred counts each instruction's successors filled so far, then is
     * reset per pass to its predecessors */
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < ndep[i]; k++) {
            uint32_t j = deps[dep_off[i] + k];
            succ[soff[j] + npred[j]++] = i;
        }
        if (chain[i] != UINT32_MAX)
            succ[soff[chain[i]] + npred[chain[i]]++] = i;
    }
    /* the graph is read: its arrays (the caller's) and the chains go */
    nk__pack_free(&pk, chain);
    chain = NULL;
    free(*dep_off_);
    free(*ndep_);
    free(*deps_);
    free(*queue_);
    *dep_off_ = *ndep_ = *deps_ = NULL;
    *queue_ = NULL;
    /* priority: the longest estimated path from an instruction to the end */
    for (uint32_t i = n; i-- > 0;) {
        double m = 0;
        for (uint32_t k = soff[i]; k < soff[i + 1]; k++)
            if (bl[succ[k]] > m)
                m = bl[succ[k]];
        bl[i] = dur[i] + m + (eng[i] == NK_ENGINE_DMA ? p->arch->dma_latency_ns : 0);
    }
    /* each list policy's order, written into orders; the caller times them
     * against trace order */
    for (int pol = 1; pol < NK_POLICIES && pol <= npol; pol++) {
        uint32_t *order = orders + (size_t)(pol - 1) * n;
        g g = {p, n, nunits, dur, bl, ready, ufree, npred, soff, succ, cand, order, done, pol, useq, uoff, upos,
               nq, nseq, eng, qk, pol == 1 ? made : NULL};
        memset(npred, 0, n * sizeof *npred);
        for (uint32_t k = 0; k < soff[n]; k++)
            npred[succ[k]]++;
        double span;
        rc = simulate(&g, &span);
        if (rc)
            goto out;
    }
    rc = 0;
out:
    free(dur);
    nk__pack_free(&pk, bl);
    nk__pack_free(&pk, ready);
    free(ufree);
    nk__pack_free(&pk, npred);
    nk__pack_free(&pk, soff);
    nk__pack_free(&pk, chain);
    free(lastseq);
    free(succ);
    free(cand);
    nk__pack_free(&pk, done);
    nk__pack_free(&pk, eng);
    nk__pack_free(&pk, useq);
    nk__pack_free(&pk, qk);
    free(uoff);
    free(upos);
    nk__pack_close(&pk);
    return rc;
}
