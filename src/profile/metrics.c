/*
 * metrics.c - the summary metrics of a profile, named as in the Neuron
 * profiler's summary page.
 *
 * Activity comes from the timeline: an engine's active time is the union of
 * its event intervals; DMA activity is the union of its descriptor transfers
 * (of its queue events when the model recorded no transfers); DMA queue busy
 * time, a separate figure, is the union of the queue events (a load/store
 * from its trigger to its completion, start latency included). Every surface
 * (summary, insights, diff, timeline, viewer, exports) reads these figures
 * from here. Traffic and
 * FLOPs come from the program's operands, so they do not depend on the
 * timing model. Peak rates are derived from the target table the timeline
 * was computed on:
 *   - Tensor engine: a partitions x partitions array doing one multiply-add
 *     per cell per cycle at pe_ghz [A2]: 2 * 128 * 128 * 2.8 GHz = 91.8
 *     TFLOPS on trn1 (published: 92 bf16) and 78.6 on trn2 (published: 79);
 *     fp32 is pe_fp32_factor times slower (23 and 20 published). fp8 runs at
 *     the bf16 rate, as in the timing model (trn2's 158 fp8 TFLOPS [A3] are
 *     not modelled).
 *   - HBM: hbm_gbps of the target (bytes per ns).
 */
#include "profile/profile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define M(field, kind, unit) {#field, offsetof(nk_metrics, field), kind, unit}
#define ENGINE_METRICS(e)                                                       \
    M(e##_engine_instruction_count, NK_MK_COUNT, "count"),                      \
    M(e##_engine_active_time, NK_MK_TIME, "s"),                                 \
    M(e##_engine_active_time_percent, NK_MK_PERCENT, "%")

static const struct {
    const char *name;
    size_t off;
    int kind;
    const char *unit;
} table[] = {
    M(total_time, NK_MK_TIME, "s"),
    M(launch_time, NK_MK_TIME, "s"),
    M(total_time_without_launch, NK_MK_TIME, "s"),
    M(event_count, NK_MK_COUNT, "count"),
    M(total_active_time_percent, NK_MK_PERCENT, "%"),
    ENGINE_METRICS(tensor),
    ENGINE_METRICS(vector),
    ENGINE_METRICS(scalar),
    ENGINE_METRICS(gpsimd),
    ENGINE_METRICS(sync),
    M(dma_instruction_count, NK_MK_COUNT, "count"),
    M(dma_active_time, NK_MK_TIME, "s"),
    M(dma_active_time_percent, NK_MK_PERCENT, "%"),
    M(dma_transfer_count, NK_MK_COUNT, "count"),
    M(dma_transfer_total_bytes, NK_MK_BYTES, "bytes"),
    M(dma_transfer_average_bytes, NK_MK_BYTES, "bytes"),
    M(dma_queue_count, NK_MK_COUNT, "count"),
    M(dma_queue_busy_time, NK_MK_TIME, "s"),
    M(dma_queue_busy_time_percent, NK_MK_PERCENT, "%"),
    M(hbm_read_bytes, NK_MK_BYTES, "bytes"),
    M(hbm_write_bytes, NK_MK_BYTES, "bytes"),
    M(sbuf_read_bytes, NK_MK_BYTES, "bytes"),
    M(sbuf_write_bytes, NK_MK_BYTES, "bytes"),
    M(psum_read_bytes, NK_MK_BYTES, "bytes"),
    M(psum_write_bytes, NK_MK_BYTES, "bytes"),
    M(hardware_flops, NK_MK_FLOPS, "FLOP"),
    M(hfu_estimated_percent, NK_MK_PERCENT, "%"),
    M(mfu_estimated_percent, NK_MK_PERCENT, "%"),
    M(mbu_estimated_percent, NK_MK_PERCENT, "%"),
    M(mm_arithmetic_intensity, NK_MK_RATIO, "FLOP/byte"),
    M(peak_flops_bandwidth_ratio, NK_MK_RATIO, "FLOP/byte"),
    M(matmul_instruction_count, NK_MK_COUNT, "count"),
    M(spill_store_bytes, NK_MK_BYTES, "bytes"),
    M(spill_reload_bytes, NK_MK_BYTES, "bytes"),
};

int nk_metrics_count(void) { return (int)NK_ARRAY_LEN(table); }
const char *nk_metrics_name(int i) { return i >= 0 && i < nk_metrics_count() ? table[i].name : NULL; }
const char *nk_metrics_unit(int i) { return i >= 0 && i < nk_metrics_count() ? table[i].unit : NULL; }
int nk__metric_kind(int i) { return i >= 0 && i < nk_metrics_count() ? table[i].kind : -1; }

int nk_metrics_get(const nk_metrics *m, const char *name, double *value)
{
    for (int i = 0; name && i < nk_metrics_count(); i++)
        if (!strcmp(table[i].name, name)) {
            memcpy(value, (const char *)m + table[i].off, sizeof *value);
            return 0;
        }
    return NK_ENOTFOUND;
}

/* ---- activity */

/* Union of intervals arriving in order of start. */
typedef struct span {
    double s, e, total;
    int open;
} span;

static void span_add(span *u, double s, double e)
{
    if (u->open && s <= u->e) {
        if (e > u->e)
            u->e = e;
        return;
    }
    if (u->open)
        u->total += u->e - u->s;
    u->s = s;
    u->e = e;
    u->open = 1;
}

static double span_total(span *u) { return u->total + (u->open ? u->e - u->s : 0); }

typedef struct activity {
    double active_ns[NK_ENGINE_COUNT]; /* NK_ENGINE_DMA: transfers */
    double queue_busy_ns;              /* union of the DMA-queue events */
    double any_ns;                     /* some engine or DMA busy */
    uint64_t queues;                   /* bit per DMA queue used */
} activity;

static void measure_activity(const nk_timeline *tl, activity *a)
{
    span row[NK_ENGINE_COUNT], dma_ev = {0}, any = {0};
    memset(row, 0, sizeof row);
    uint32_t i = 0, k = 0;
    /* events and DMA spans are each sorted by start: merge them */
    while (i < tl->nevents || k < tl->ndspans) {
        int take_event = k >= tl->ndspans || (i < tl->nevents && tl->events[i].start <= tl->dspans[k].start);
        if (take_event) {
            const nk_event *e = &tl->events[i++];
            if (e->engine == NK_ENGINE_DMA) {
                span_add(&dma_ev, e->start, e->end);
                a->queues |= 1ull << (e->queue & 63);
            } else {
                span_add(&row[e->engine], e->start, e->end);
            }
            span_add(&any, e->start, e->end);
        } else {
            const nk_dma_span *x = &tl->dspans[k++];
            span_add(&row[NK_ENGINE_DMA], x->start, x->end);
            span_add(&any, x->start, x->end);
            a->queues |= 1ull << (x->queue & 63);
        }
    }
    for (int e = 0; e < NK_ENGINE_COUNT; e++)
        a->active_ns[e] = span_total(&row[e]);
    a->queue_busy_ns = span_total(&dma_ev);
    if (!tl->ndspans)
        a->active_ns[NK_ENGINE_DMA] = a->queue_busy_ns;
    a->any_ns = span_total(&any);
}

/* ---- traffic and FLOPs from the program */

typedef struct work {
    double read[3], written[3]; /* bytes per nk_buffer */
    double hw_flops, mm_flops;  /* FLOPs: all PE work, matmuls only */
    double hw_peak_ns, mm_peak_ns; /* the same at peak rate, ns */
    uint64_t matmuls;
} work;

static double bytes_of(const nk_program *p, const nk_opnd *t)
{
    return (double)nk__opnd_numel(p, t) * nk_dtype_size((nk_dtype)nk__opnd_dtype(p, t));
}

static void count_traffic(const nk_program *p, const nk_instr *in, work *w)
{
    for (int k = 0; k < in->nsrc && k < 3; k++) {
        const nk_opnd *s = nk__src(p, in, k);
        if (s->buf)
            w->read[nk__opnd_mem(p, s) % 3] += bytes_of(p, s);
    }
    int dm = nk__opnd_mem(p, &in->dst) % 3;
    if (in->flags & NK_IF_ACCUMULATE)
        w->read[dm] += bytes_of(p, &in->dst);
    w->written[dm] += bytes_of(p, &in->dst);
    const nk_opnd *d2 = nk__dst2(p, in);
    if (d2->buf)
        w->written[nk__opnd_mem(p, d2) % 3] += bytes_of(p, d2);
}

static void count_work(const nk_program *p, const nk_arch *a, work *w)
{
    double peak = 2.0 * a->partitions * a->partitions * a->pe_ghz; /* FLOP per ns, bf16 rate */
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        count_traffic(p, in, w);
        if (in->engine != NK_ENGINE_TENSOR)
            continue;
        const nk_layout *s0 = nk__lay(p, &in->src[0]);
        double K = s0->shape[0], M = (double)nk__opnd_free_size(p, &in->src[0]), f, factor;
        if (in->op == NK_OP_MATMUL) {
            f = 2.0 * K * M * (double)nk__opnd_free_size(p, &in->src[1]);
            factor = s0->dtype == NK_F32 ? a->pe_fp32_factor : 1.0;
            w->mm_flops += f;
            w->mm_peak_ns += f * factor / peak;
            w->matmuls++;
        } else { /* a PE transpose: src^T times a K x K identity */
            f = 2.0 * K * M * K;
            factor = s0->dtype == NK_F32 ? a->pe_fp32_transpose_factor : 1.0;
        }
        w->hw_flops += f;
        w->hw_peak_ns += f * factor / peak;
    }
}

static double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

int nk_profile_metrics(const nk_profile *pr, nk_metrics *m)
{
    memset(m, 0, sizeof *m);
    if (!pr || !pr->prog || !pr->tl)
        return NK_EINVAL;
    const nk_timeline *tl = pr->tl;
    const nk_arch *a = &pr->arch;
    double T = tl->total_ns;
    activity act = {{0}, 0, 0, 0};
    measure_activity(tl, &act);
    /* instructions per engine row: distinct instructions with an event there */
    uint8_t *rows = calloc(pr->prog->ninstr ? pr->prog->ninstr : 1, 1);
    if (!rows)
        return NK_ENOMEM;
    double count[NK_ENGINE_COUNT] = {0};
    for (uint32_t i = 0; i < tl->nevents; i++) {
        const nk_event *e = &tl->events[i];
        uint8_t bit = (uint8_t)(1u << e->engine);
        if (!(rows[e->instr] & bit)) {
            rows[e->instr] |= bit;
            count[e->engine]++;
        }
    }
    free(rows);
    double *eng[5][3] = {
        {&m->tensor_engine_instruction_count, &m->tensor_engine_active_time, &m->tensor_engine_active_time_percent},
        {&m->vector_engine_instruction_count, &m->vector_engine_active_time, &m->vector_engine_active_time_percent},
        {&m->scalar_engine_instruction_count, &m->scalar_engine_active_time, &m->scalar_engine_active_time_percent},
        {&m->gpsimd_engine_instruction_count, &m->gpsimd_engine_active_time, &m->gpsimd_engine_active_time_percent},
        {&m->sync_engine_instruction_count, &m->sync_engine_active_time, &m->sync_engine_active_time_percent},
    };
    for (int e = 0; e < 5; e++) {
        *eng[e][0] = count[e];
        *eng[e][1] = act.active_ns[e] * 1e-9;
        *eng[e][2] = pct(act.active_ns[e], T);
    }
    m->total_time = T * 1e-9;
    double launch = nk__timeline_launch_ns(tl);
    m->launch_time = launch * 1e-9;
    m->total_time_without_launch = (T > launch ? T - launch : 0) * 1e-9;
    m->event_count = tl->nevents;
    m->total_active_time_percent = pct(act.any_ns, T);
    m->dma_instruction_count = count[NK_ENGINE_DMA];
    m->dma_active_time = act.active_ns[NK_ENGINE_DMA] * 1e-9;
    m->dma_active_time_percent = pct(act.active_ns[NK_ENGINE_DMA], T);
    m->dma_queue_busy_time = act.queue_busy_ns * 1e-9;
    m->dma_queue_busy_time_percent = pct(act.queue_busy_ns, T);
    uint64_t ndesc = 0, bytes = 0;
    for (uint32_t k = 0; k < tl->ndspans; k++) {
        ndesc += tl->dspans[k].descriptors;
        bytes += tl->dspans[k].bytes;
    }
    m->dma_transfer_count = ndesc;
    m->dma_transfer_total_bytes = (double)bytes;
    m->dma_transfer_average_bytes = ndesc ? m->dma_transfer_total_bytes / (double)ndesc : 0;
    m->dma_queue_count = __builtin_popcountll(act.queues);

    work w;
    memset(&w, 0, sizeof w);
    count_work(pr->prog, a, &w);
    m->hbm_read_bytes = w.read[NK_SHARED_HBM];
    m->hbm_write_bytes = w.written[NK_SHARED_HBM];
    m->sbuf_read_bytes = w.read[NK_SBUF];
    m->sbuf_write_bytes = w.written[NK_SBUF];
    m->psum_read_bytes = w.read[NK_PSUM];
    m->psum_write_bytes = w.written[NK_PSUM];
    m->hardware_flops = w.hw_flops;
    m->matmul_instruction_count = (double)w.matmuls;
    /* the compile step's spills: stores to and loads from HBM it inserted */
    for (uint32_t i = 0; i < pr->prog->ninstr; i++) {
        const nk_instr *in = &pr->prog->instrs[i];
        if (!(in->flags & NK_IF_SPILL))
            continue;
        const nk_opnd *t = in->op == NK_OP_STORE ? &in->dst : &in->src[0];
        double bytes = bytes_of(pr->prog, t);
        if (in->op == NK_OP_STORE)
            m->spill_store_bytes += bytes;
        else
            m->spill_reload_bytes += bytes;
    }
    m->hfu_estimated_percent = pct(w.hw_peak_ns, T);
    m->mfu_estimated_percent = pct(w.mm_peak_ns, T);
    double hbm = m->hbm_read_bytes + m->hbm_write_bytes;
    m->mbu_estimated_percent = a->hbm_gbps > 0 ? pct(hbm / a->hbm_gbps, T) : 0;
    m->mm_arithmetic_intensity = hbm > 0 ? w.mm_flops / hbm : 0;
    /* the peak of the kernel's own matmul mix (bf16 rate when it has none) */
    double peak = w.mm_flops > 0 ? w.mm_flops / w.mm_peak_ns : 2.0 * a->partitions * a->partitions * a->pe_ghz;
    m->peak_flops_bandwidth_ratio = a->hbm_gbps > 0 ? peak / a->hbm_gbps : 0;
    return 0;
}
