/*
 * analyze.c - the measurable facts of a profile that the rules and reports
 * build on: busy time and overlap per engine, the critical path, idle gaps
 * and their causes, roofline position, DMA descriptor sizes and time per
 * source line.
 *
 * Busy time is the union of a row's event intervals, so work that overlaps
 * itself (DMA queues, LoadStationary under MultiplyMoving) is not counted
 * twice. Peak rates come from the target table (src/arch), which cites them.
 */
#include "insights/insights.h"
#include "nkint.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define EPS_NS 1e-3 /* times closer than this are equal (the model's resolution is far coarser) */

typedef nk_ins_ival ival;
typedef nk_ins_ivlist ivlist;

static int cmp_ival(const void *a, const void *b)
{
    const ival *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s;
}

static inline int ival_less(const ival *x, const ival *y) { return x->s < y->s; }
NK__DEFINE_SORT(sort_ivals, ival, ival_less)

/* Sorted by start, stably (as qsort's merge sort did: intervals of equal
 * start keep their order, which decides the union only for an interval
 * that ends before it starts). Lists built from a timeline's events or
 * transfers come sorted already: one pass finds that. */
void nk__ins_iv_merge(nk_ins_ivlist *l)
{
    if (l->n < 2)
        return;
    uint32_t i0 = 1;
    while (i0 < l->n && !(l->v[i0].s < l->v[i0 - 1].s))
        i0++;
    if (i0 < l->n) {
        ival *tmp = nk__big_fixed((size_t)l->n * sizeof *tmp);
        if (tmp) {
            sort_ivals(l->v, l->n, tmp);
            free(tmp);
        } else
            qsort(l->v, l->n, sizeof *l->v, cmp_ival);
    }
    uint32_t k = 0;
    for (uint32_t i = 1; i < l->n; i++) {
        if (l->v[i].s <= l->v[k].e) {
            if (l->v[i].e > l->v[k].e)
                l->v[k].e = l->v[i].e;
        } else {
            l->v[++k] = l->v[i];
        }
    }
    l->n = k + 1;
}

double nk__ins_iv_len(const nk_ins_ivlist *l)
{
    double t = 0;
    for (uint32_t i = 0; i < l->n; i++)
        t += l->v[i].e - l->v[i].s;
    return t;
}

double nk__ins_iv_overlap(const nk_ins_ivlist *a, const nk_ins_ivlist *b)
{
    double t = 0;
    uint32_t i = 0, j = 0;
    while (i < a->n && j < b->n) {
        double s = fmax(a->v[i].s, b->v[j].s), e = fmin(a->v[i].e, b->v[j].e);
        if (e > s)
            t += e - s;
        if (a->v[i].e < b->v[j].e)
            i++;
        else
            j++;
    }
    return t;
}

void nk__ins_iv_intersect(const nk_ins_ivlist *a, const nk_ins_ivlist *b, nk_ins_ivlist *out)
{
    uint32_t i = 0, j = 0;
    out->n = 0;
    while (i < a->n && j < b->n) {
        double s = fmax(a->v[i].s, b->v[j].s), e = fmin(a->v[i].e, b->v[j].e);
        if (e > s)
            out->v[out->n++] = (nk_ins_ival){s, e};
        if (a->v[i].e < b->v[j].e)
            i++;
        else
            j++;
    }
}

#define iv_merge nk__ins_iv_merge
#define iv_len nk__ins_iv_len
#define iv_overlap nk__ins_iv_overlap

static int is_compute(int engine) { return engine <= NK_ENGINE_GPSIMD; }

/* ---- activity and overlap */

static int activity(const nk_profile *pr, nk_ins_analysis *a)
{
    const nk_timeline *tl = pr->tl;
    ivlist row[NK_INS_ROWS] = {{0}}, comp = {0};
    int rc = NK_ENOMEM;
    uint32_t cnt[NK_INS_ROWS] = {0}, ncomp = 0;
    for (uint32_t i = 0; i < tl->nevents; i++) {
        unsigned e = tl->events[i].engine;
        if (e < NK_INS_ROWS) {
            cnt[e]++;
            ncomp += is_compute((int)e);
        }
    }
    for (int r = 0; r < NK_INS_ROWS; r++)
        if (!(row[r].v = nk__big_fixed((cnt[r] ? cnt[r] : 1) * sizeof(ival))))
            goto out;
    if (!(comp.v = nk__big_fixed((ncomp ? ncomp : 1) * sizeof(ival))))
        goto out;
    for (uint32_t i = 0; i < tl->nevents; i++) {
        const nk_event *ev = &tl->events[i];
        if (ev->engine >= NK_INS_ROWS || ev->end <= ev->start)
            continue;
        ival v = {ev->start, ev->end};
        row[ev->engine].v[row[ev->engine].n++] = v;
        if (is_compute(ev->engine))
            comp.v[comp.n++] = v;
        if (ev->instr < pr->prog->ninstr)
            a->busy[ev->instr] += ev->end - ev->start;
        a->busy_sum_ns += ev->end - ev->start;
    }
    for (int r = 0; r < NK_INS_ROWS; r++) {
        iv_merge(&row[r]);
        a->active_ns[r] = iv_len(&row[r]);
    }
    iv_merge(&comp);
    a->compute_ns = iv_len(&comp);
    for (int r = 0; r < NK_INS_ROWS; r++)
        for (int s = r; s < NK_INS_ROWS; s++)
            a->overlap_ns[r][s] = a->overlap_ns[s][r] = r == s ? a->active_ns[r] : iv_overlap(&row[r], &row[s]);
    a->dma_compute_ns = iv_overlap(&row[NK_ENGINE_DMA], &comp);
    rc = 0;
out:
    for (int r = 0; r < NK_INS_ROWS; r++)
        free(row[r].v);
    free(comp.v);
    return rc;
}

/* ---- program-order structure: instruction counts, in-order predecessors */

static int structure(const nk_program *p, nk_ins_analysis *a)
{
    uint32_t last[NK_ENGINE_COUNT], maxq = 0;
    for (int e = 0; e < NK_ENGINE_COUNT; e++)
        last[e] = NONE;
    for (uint32_t i = 0; i < p->ninstr; i++)
        if (p->instrs[i].engine == NK_ENGINE_DMA && p->instrs[i].queue > maxq)
            maxq = p->instrs[i].queue;
    uint32_t *lastq = malloc(((size_t)maxq + 1) * sizeof *lastq);
    if (!lastq)
        return NK_ENOMEM;
    for (uint32_t q = 0; q <= maxq; q++)
        lastq[q] = NONE;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (in->engine >= NK_ENGINE_COUNT) {
            a->prev_same[i] = NONE;
            continue;
        }
        a->ninstr[in->engine]++;
        uint32_t *slot = in->engine == NK_ENGINE_DMA ? &lastq[in->queue] : &last[in->engine];
        if (in->engine == NK_ENGINE_DMA && *slot == NONE)
            a->dma_queues++;
        a->prev_same[i] = *slot;
        *slot = i;
    }
    free(lastq);
    return 0;
}

/* ---- DMA transfers: when data moves, and when DMA engines idle while a
 * DMA waits out its start latency (trigger to first byte [DMAbw]) */

static int transfers(const nk_program *p, const nk_timeline *tl, nk_ins_analysis *a)
{
    for (uint32_t i = 0; i < p->ninstr; i++)
        a->xfer_first[i] = -1;
    if (!tl->ndspans)
        return 0;
    ivlist x = {nk__big_fixed(tl->ndspans * sizeof(ival)), 0};
    ivlist lat = {nk__big_fixed((p->ninstr ? p->ninstr : 1) * sizeof(ival)), 0};
    ivlist gaps = {nk__big_fixed((tl->ndspans + 1) * sizeof(ival)), 0};
    int rc = NK_ENOMEM;
    if (!x.v || !lat.v || !gaps.v)
        goto out;
    for (uint32_t k = 0; k < tl->ndspans; k++) {
        const nk_dma_span *t = &tl->dspans[k];
        if (t->instr < p->ninstr && (a->xfer_first[t->instr] < 0 || t->start < a->xfer_first[t->instr]))
            a->xfer_first[t->instr] = t->start;
        if (t->end > t->start)
            x.v[x.n++] = (ival){t->start, t->end};
    }
    iv_merge(&x);
    a->dma_data_ns = iv_len(&x);
    for (uint32_t k = 1; k < x.n; k++)
        gaps.v[gaps.n++] = (ival){x.v[k - 1].e, x.v[k].s};
    for (uint32_t i = 0; i < p->ninstr; i++)
        if (a->xfer_first[i] > tl->instr_start[i])
            lat.v[lat.n++] = (ival){tl->instr_start[i], a->xfer_first[i]};
    iv_merge(&lat);
    a->lat_gaps = nk__big_fixed((gaps.n + lat.n + 1) * sizeof *a->lat_gaps);
    if (!a->lat_gaps)
        goto out;
    nk_ins_ivlist out = {a->lat_gaps, 0};
    nk__ins_iv_intersect(&gaps, &lat, &out);
    a->nlat_gaps = out.n;
    a->dma_latency_gap_ns = iv_len(&out);
    rc = 0;
out:
    free(x.v);
    free(lat.v);
    free(gaps.v);
    return rc;
}

/* ---- critical path */

/* The predecessor that released instruction i last. A compute instruction
 * waits for its dependencies and its in-order predecessor on the engine,
 * possibly part way through (a matmul's LoadStationary may start before the
 * moving operand arrives): the latest of them to end before it ended. A DMA
 * is triggered by its dependencies; if its first transfer began later than
 * the trigger plus the start latency, its queue held it instead, and the
 * previous DMA on that queue released it. NONE when nothing held it back. */
static uint32_t releaser(const nk_program *p, const nk_timeline *tl, const nk_ins_analysis *a, uint32_t i)
{
    const nk_instr *in = &p->instrs[i];
    double start = tl->instr_start[i], best_end = -1;
    uint32_t ps = a->prev_same[i];
    int dma = in->engine == NK_ENGINE_DMA;
    if (ps != NONE && ps < i && dma && a->xfer_first[i] > start) {
        double pe = tl->instr_end[ps];
        if (pe > start + a->dma_latency_ns - EPS_NS && pe <= a->xfer_first[i] + EPS_NS)
            return ps;
    }
    double limit = (dma ? start : tl->instr_end[i]) + EPS_NS;
    uint32_t best = NONE;
    for (uint32_t k = 0; k < in->ndep; k++) {
        uint32_t d = p->deps[in->dep_off + k];
        double e = tl->instr_end[d];
        if (d < i && e <= limit && e > best_end) {
            best = d;
            best_end = e;
        }
    }
    if (ps != NONE && ps < i && tl->instr_end[ps] <= limit && tl->instr_end[ps] > best_end)
        best = ps;
    if (best == NONE && p->nseg > 1 && in->seg > 0) {
        /* a sequence: the kernel starts when the previous one has completed
         * and been launched; its last instruction to finish released it */
        uint32_t j = i;
        while (j > 0 && p->instrs[j - 1].seg == in->seg)
            j--;
        if (j > 0) {
            uint16_t prev = p->instrs[j - 1].seg;
            for (uint32_t k = j; k-- > 0 && p->instrs[k].seg == prev;)
                if (tl->instr_end[k] <= limit && tl->instr_end[k] > best_end) {
                    best = k;
                    best_end = tl->instr_end[k];
                }
        }
    }
    return best;
}

/* Launch (start-up, tear-down) time within [t0, t1]: the launches between
 * the kernels of a sequence are not waiting on the path. */
static double launch_within(const nk_timeline *tl, double t0, double t1)
{
    double t = 0;
    for (uint32_t k = 0; k < tl->nregions; k++) {
        double lo = fmax(t0, tl->regions[k].start), hi = fmin(t1, tl->regions[k].end);
        if (hi > lo && tl->regions[k].core == 0)
            t += hi - lo;
    }
    return t;
}

/* Walks back from the last instruction to finish. Each step covers the time
 * from its releaser's end (or its own start, if later) to its end, so the
 * steps and the waits between them add up to the total time without the
 * launch (from the end of the start-up to the last completion). */
static int critical_path(const nk_profile *pr, nk_ins_analysis *a)
{
    const nk_program *p = pr->prog;
    const nk_timeline *tl = pr->tl;
    if (!p->ninstr)
        return 0;
    uint32_t last = 0;
    for (uint32_t i = 1; i < p->ninstr; i++)
        if (tl->instr_end[i] >= tl->instr_end[last])
            last = i;
    /* the chain from the last instruction back, each releaser found once */
    uint32_t n = 0, cap = 1024, *chain = malloc(cap * sizeof *chain);
    for (uint32_t c = last; chain && c != NONE; c = releaser(p, tl, a, c)) {
        if (n == cap) {
            uint32_t *g = cap <= UINT32_MAX / 2 ? nk__big_grow(chain, 2 * (size_t)cap * sizeof *g) : NULL;
            if (!g) {
                free(chain);
                chain = NULL;
                break;
            }
            chain = g;
            cap *= 2;
        }
        chain[n++] = c;
    }
    a->path = chain ? nk__big_fixed((n ? n : 1) * sizeof *a->path) : NULL;
    if (!a->path) {
        free(chain);
        return NK_ENOMEM;
    }
    a->npath = n;
    uint32_t k = n;
    double t0 = INFINITY; /* the path starts when the kernel's (first) start-up ends */
    for (uint32_t g = 0; g < tl->nregions; g++)
        if (tl->regions[g].kind == NK_REGION_STARTUP)
            t0 = fmin(t0, tl->regions[g].end);
    if (t0 == INFINITY)
        t0 = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t c = chain[j], r = j + 1 < n ? chain[j + 1] : NONE;
        const nk_instr *in = &p->instrs[c];
        double s = tl->instr_start[c], e = tl->instr_end[c];
        double rend = r == NONE ? t0 : tl->instr_end[r];
        double seg = fmax(s, rend), wait = fmax(0, s - rend);
        if (p->nseg > 1 && wait > 0)
            wait = fmax(0, wait - launch_within(tl, rend, s));
        a->path[--k] = (nk_ins_step){c, in->engine, in->queue, seg, e, wait};
        a->path_ns[c] = e - seg;
        if (in->engine == NK_ENGINE_DMA && a->xfer_first[c] > seg)
            a->path_dma_latency_ns += fmin(a->xfer_first[c], e) - seg;
        if (in->engine < NK_INS_ROWS)
            a->path_busy_ns[in->engine] += e - seg;
        a->path_wait_ns += wait;
    }
    free(chain);
    return 0;
}

/* ---- idle gaps of the compute engines */

static double latest_dep(const nk_program *p, const nk_timeline *tl, uint32_t i, int *engine)
{
    const nk_instr *in = &p->instrs[i];
    double best = -1;
    for (uint32_t k = 0; k < in->ndep; k++) {
        uint32_t d = p->deps[in->dep_off + k];
        if (tl->instr_end[d] > best) {
            best = tl->instr_end[d];
            *engine = p->instrs[d].engine;
        }
    }
    return best;
}

/* Was some later instruction of the same engine ready at time t (all its
 * dependencies done: the latest of them, dep_end)? Looks at the next few
 * only: an in-order engine cannot see further either. */
static int later_ready(const double *dep_end, const uint32_t *list, uint32_t pos, uint32_t n, double t)
{
    enum { LOOKAHEAD = 8 };
    for (uint32_t j = pos + 1; j < n && j <= pos + LOOKAHEAD; j++)
        if (dep_end[list[j]] <= t + EPS_NS)
            return 1;
    return 0;
}

/* dep_end[i], dep_eng[i]: latest_dep of every instruction, in one pass over
 * the records (the gaps would otherwise read them out of order). */
static void engine_gaps(const nk_timeline *tl, nk_ins_analysis *a, int e, const uint32_t *list, uint32_t n,
                        const double *dep_end, const uint8_t *dep_eng)
{
    double prev_end = 0;
    for (uint32_t pos = 0; pos < n; pos++) {
        uint32_t i = list[pos];
        double s = tl->instr_start[i], gap = s - prev_end;
        if (gap > EPS_NS) {
            int de = dep_eng[i];
            double d = dep_end[i];
            if (d < 0) {
                a->idle_ns[e][NK_CAUSE_START] += gap;
            } else if (later_ready(dep_end, list, pos, n, prev_end)) {
                a->idle_ns[e][NK_CAUSE_INORDER] += gap;
            } else {
                double waited = fmin(fmax(fmin(d, s) - prev_end, 0), gap);
                a->idle_ns[e][de == NK_ENGINE_DMA ? NK_CAUSE_DMA : NK_CAUSE_ENGINE] += waited;
                if (de < NK_INS_ROWS)
                    a->wait_on[e][de] += waited;
                a->idle_ns[e][NK_CAUSE_SEMAPHORE] += gap - waited;
            }
        }
        if (tl->instr_end[i] > prev_end)
            prev_end = tl->instr_end[i];
    }
}

static int idle_causes(const nk_program *p, const nk_timeline *tl, nk_ins_analysis *a)
{
    /* each compute engine's instructions in program order, from one pass */
    size_t n = p->ninstr ? p->ninstr : 1;
    uint32_t *list = nk__big_fixed(n * sizeof *list);
    double *dep_end = nk__big_fixed(n * sizeof *dep_end);
    uint8_t *dep_eng = nk__big_fixed(n);
    if (!list || !dep_end || !dep_eng) {
        free(list);
        free(dep_end);
        free(dep_eng);
        return NK_ENOMEM;
    }
    for (uint32_t i = 0; i < p->ninstr; i++) {
        int de = 0;
        dep_end[i] = latest_dep(p, tl, i, &de); /* -1: none */
        dep_eng[i] = (uint8_t)de;
    }
    uint32_t off[NK_ENGINE_SYNC + 2] = {0}, cur[NK_ENGINE_SYNC + 1];
    for (uint32_t i = 0; i < p->ninstr; i++)
        if (p->instrs[i].engine <= NK_ENGINE_SYNC)
            off[p->instrs[i].engine + 1]++;
    for (int e = 0; e <= NK_ENGINE_SYNC; e++)
        cur[e] = off[e + 1] += off[e];
    for (int e = NK_ENGINE_SYNC; e >= 0; e--)
        cur[e] = off[e];
    for (uint32_t i = 0; i < p->ninstr; i++)
        if (p->instrs[i].engine <= NK_ENGINE_SYNC)
            list[cur[p->instrs[i].engine]++] = i;
    for (int e = 0; e <= NK_ENGINE_SYNC; e++)
        engine_gaps(tl, a, e, list + off[e], off[e + 1] - off[e], dep_end, dep_eng);
    free(list);
    free(dep_end);
    free(dep_eng);
    return 0;
}

/* ---- roofline and DMA */

int64_t nk__ins_desc_bytes(const nk_program *p, const nk_instr *in, int64_t *ndesc)
{
    const nk_layout *tile = nk__lay(p, in->op == NK_OP_LOAD ? &in->dst : &in->src[0]);
    const nk_layout *hbm = nk__lay(p, in->op == NK_OP_LOAD ? &in->src[0] : &in->dst);
    int64_t es = nk_dtype_size(tile->dtype), per_part = nk__opnd_free_size(p, in->op == NK_OP_LOAD ? &in->dst : &in->src[0]) * es;
    /* contiguous elements of each side along its free axes (axis 0 of both
     * maps to partitions) */
    int64_t run = per_part;
    const nk_layout *side[2] = {tile, hbm};
    for (int k = 0; k < 2; k++) {
        const nk_layout *t = side[k];
        int64_t elems = 1;
        for (int d = t->ndim - 1; d >= 1; d--) {
            if (t->shape[d] == 1)
                continue;
            if (t->stride[d] != elems)
                break;
            elems *= t->shape[d];
        }
        if (elems * es < run)
            run = elems * es;
    }
    if (run < es)
        run = es;
    int64_t parts = tile->ndim ? tile->shape[0] : 1;
    *ndesc = parts * ((per_part + run - 1) / run);
    return run;
}

static void roofline_dma(const nk_program *p, const nk_arch *arch, nk_ins_analysis *a)
{
    uint64_t desc_bytes_sum = 0;
    /* the PE is a partitions x partitions array doing a multiply-add per cell per cycle [A2];
     * fp32 operands run at 1/pe_fp32_factor of that rate */
    double bf16_peak = arch ? 2.0 * arch->partitions * arch->partitions * arch->pe_ghz : 0;
    double peak_ns = 0; /* the matmuls' time at their own peak rate */
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (in->op == NK_OP_MATMUL) {
            double K = nk__opnd_shape(p, &in->src[0])[0], M = (double)nk__opnd_free_size(p, &in->src[0]);
            double N = (double)nk__opnd_free_size(p, &in->src[1]);
            double f = 2.0 * K * M * N;
            a->flops += f;
            a->nmatmul++;
            if (bf16_peak > 0)
                peak_ns += f / bf16_peak * (nk__opnd_dtype(p, &in->src[0]) == NK_F32 && arch->pe_fp32_factor > 0
                                                ? arch->pe_fp32_factor : 1.0);
        } else if (in->op == NK_OP_LOAD || in->op == NK_OP_STORE) {
            const nk_opnd *hbm = in->op == NK_OP_LOAD ? &in->src[0] : &in->dst;
            a->dma_bytes += (double)nk__opnd_numel(p, hbm) * nk_dtype_size(nk__opnd_dtype(p, hbm));
            int64_t nd = 0, b = nk__ins_desc_bytes(p, in, &nd);
            int cls = b < 256 ? NK_DMA_TINY : b < 2048 ? NK_DMA_SMALL : b < 4096 ? NK_DMA_FAIR : NK_DMA_LARGE;
            a->desc_class[cls] += (uint64_t)nd;
            a->descriptors += (uint64_t)nd;
            desc_bytes_sum += (uint64_t)(b * nd);
            a->dma_instrs++;
        }
    }
    a->hbm_bytes = a->dma_bytes;
    a->intensity = a->hbm_bytes > 0 ? a->flops / a->hbm_bytes : 0;
    /* the peak of the kernel's own matmul mix (the bf16 rate when it has none), as the
     * metrics' peak_flops_bandwidth_ratio */
    a->peak_flops = a->flops > 0 && peak_ns > 0 ? a->flops / peak_ns : bf16_peak;
    a->ridge = arch && arch->hbm_gbps > 0 ? a->peak_flops / arch->hbm_gbps : 0;
    a->achieved_flops = a->total_ns > 0 ? a->flops / a->total_ns : 0;
    a->desc_bytes_avg = a->descriptors ? (double)desc_bytes_sum / (double)a->descriptors : 0;
    if (arch) {
        double engines = arch->dma_engines * arch->dma_engine_gbps;
        a->dma_peak_bps = arch->hbm_gbps > 0 && arch->hbm_gbps < engines ? arch->hbm_gbps : engines;
    }
    a->dma_bw_frac = a->dma_peak_bps > 0 && a->total_ns > 0 ? a->dma_bytes / a->total_ns / a->dma_peak_bps : 0;
}

/* ---- time per source line */

typedef struct linekey {
    uint32_t file;
    int32_t line;
    uint32_t instr;
} linekey;

static int cmp_linekey(const void *x, const void *y)
{
    const linekey *a = x, *b = y;
    if (a->file != b->file)
        return a->file < b->file ? -1 : 1;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return a->instr < b->instr ? -1 : a->instr > b->instr;
}

static inline int line_busy_less(const nk_ins_line *a, const nk_ins_line *b)
{
    if (a->busy_ns != b->busy_ns)
        return a->busy_ns > b->busy_ns;
    if (a->file != b->file)
        return a->file < b->file;
    return a->line < b->line;
}
NK__DEFINE_SORT(sort_lines, nk_ins_line, line_busy_less)

/* Instructions grouped by source line, in (file, line) order, each line's
 * instructions in program order (the sums add up in that order), then the
 * lines by busy time. The program's locations are few: they are sorted,
 * each instruction goes to its location's line. */
static int per_line(const nk_program *p, nk_ins_analysis *a)
{
    if (!p->ninstr || !p->nlocs)
        return 0;
    linekey *key = malloc(p->nlocs * sizeof *key);
    uint32_t *group = malloc(p->nlocs * sizeof *group);
    a->lines = calloc(p->nlocs, sizeof *a->lines);
    nk_ins_line *tmp = malloc(p->nlocs * sizeof *tmp);
    if (!key || !group || !a->lines || !tmp) {
        free(key);
        free(group);
        free(tmp);
        return NK_ENOMEM;
    }
    for (uint32_t l = 0; l < p->nlocs; l++)
        key[l] = (linekey){p->locs[l].file, p->locs[l].line, l};
    qsort(key, p->nlocs, sizeof *key, cmp_linekey);
    uint32_t n = 0;
    for (uint32_t k = 0; k < p->nlocs; k++) {
        if (!n || a->lines[n - 1].file != key[k].file || a->lines[n - 1].line != key[k].line)
            a->lines[n++] = (nk_ins_line){key[k].file, key[k].line, 0, 0, 0, 0};
        group[key[k].instr] = n - 1;
    }
    free(key);
    uint32_t *used = calloc(n ? n : 1, sizeof *used);
    if (!used) {
        free(group);
        free(tmp);
        return NK_ENOMEM;
    }
    for (uint32_t i = 0; i < p->ninstr; i++) {
        nk_ins_line *L = &a->lines[group[p->instrs[i].loc < p->nlocs ? p->instrs[i].loc : 0]];
        used[L - a->lines] = 1;
        L->ninstr++;
        L->engines |= 1u << (p->instrs[i].engine % 32);
        L->busy_ns += a->busy[i];
        L->path_ns += a->path_ns[i];
    }
    /* only the lines some instruction is on */
    uint32_t m = 0;
    for (uint32_t k = 0; k < n; k++)
        if (used[k])
            a->lines[m++] = a->lines[k];
    free(used);
    free(group);
    sort_lines(a->lines, m, tmp);
    free(tmp);
    a->nlines = m;
    return 0;
}

int nk__ins_analyze(const nk_profile *pr, nk_ins_analysis *a)
{
    memset(a, 0, sizeof *a);
    if (!pr || !pr->prog || !pr->tl)
        return NK_EINVAL;
    const nk_program *p = pr->prog;
    const nk_timeline *tl = pr->tl;
    if (p->ninstr && (!tl->instr_start || !tl->instr_end))
        return NK_EINVAL;
    const nk_arch *arch = nk__ins_arch(pr);
    if (!arch)
        return NK_ENOTFOUND;
    size_t n = p->ninstr ? p->ninstr : 1;
    a->total_ns = tl->total_ns - nk__timeline_launch_ns(tl); /* the kernel's own time, as the rules judge it */
    a->dma_latency_ns = arch->dma_latency_ns;
    a->busy = nk__big_fixed0(n, sizeof *a->busy);
    a->prev_same = nk__big_fixed0(n, sizeof *a->prev_same);
    a->path_ns = calloc(n, sizeof *a->path_ns); /* written on the critical path only */
    a->xfer_first = nk__big_fixed0(n, sizeof *a->xfer_first);
    int rc = NK_ENOMEM;
    if (!a->busy || !a->prev_same || !a->path_ns || !a->xfer_first)
        goto fail;
    if ((rc = activity(pr, a)) || (rc = structure(p, a)) || (rc = transfers(p, tl, a)) ||
        (rc = critical_path(pr, a)) ||
        (rc = idle_causes(p, tl, a)))
        goto fail;
    roofline_dma(p, arch, a);
    if ((rc = per_line(p, a)))
        goto fail;
    return 0;
fail:
    nk__ins_analysis_free(a);
    return rc;
}

const nk_arch *nk__ins_arch(const nk_profile *pr)
{
    if (pr->arch.name[0])
        return &pr->arch;
    return pr->prog->arch ? pr->prog->arch : nk__arch_get(pr->prog->target);
}

void nk__ins_analysis_free(nk_ins_analysis *a)
{
    free(a->path);
    free(a->lines);
    free(a->busy);
    free(a->prev_same);
    free(a->path_ns);
    free(a->xfer_first);
    free(a->lat_gaps);
    memset(a, 0, sizeof *a);
}

const char *nk__ins_cause_name(int cause)
{
    static const char *names[NK_CAUSE_COUNT] = {"waiting on DMA", "waiting on another engine",
                                                "semaphore latency", "in-order stall", "start-up"};
    return (unsigned)cause < NK_CAUSE_COUNT ? names[cause] : "?";
}
