/*
 * cost.c - what one instruction costs: the documented formulas.
 *
 * Vector/Scalar/GpSimd instructions follow the legacy cost table [ISA-old]
 * (N = free elements per partition, MIN_II about 64 cycles) with a static
 * overhead [A2][PG], the strided-access penalty [A2] and, on NeuronCore-v3,
 * the Vector engine's 16-bit performance mode [A3]. Tensor engine
 * instructions are LoadStationary + MultiplyMoving with the initiation
 * interval max(min(MM_INIT_LATENCY, stationary free), moving free), fp32 at a
 * quarter speed and fast weight load [A2][PG][ISA-old]. The constants come
 * from the target table (src/arch); each op's table entry, engines and
 * performance-mode class from its op-table row (src/isa).
 */
#include "timing/model.h"
#include "isa/optable.h"

static int is16f(int dt) { return dt == NK_BF16 || dt == NK_F16; }
static double dmax(double a, double b) { return a > b ? a : b; }

/* Strided SBUF/PSUM access gets part of the bandwidth [A2]. */
/* (Layouts, read in place: the model prices every instruction of a
 * million-instruction program, the list scheduler several times over.) */
static int strided(const nk_arch *a, const nk_layout *t)
{
    int d = nk__lay_inner_dim(t);
    return d >= 0 && t->stride[d] * nk_dtype_size(t->dtype) > a->stride_penalty_bytes;
}

/* The on-chip operands of an instruction. */
static int operands(const nk_program *p, const nk_instr *in, const nk_layout **ts)
{
    int n = 0;
    ts[n++] = nk__lay(p, &in->dst);
    if (nk__dst2(p, in)->buf)
        ts[n++] = nk__lay(p, nk__dst2(p, in));
    for (int k = 0; k < in->nsrc && k < 3; k++)
        if (nk__src(p, in, k)->buf)
            ts[n++] = nk__lay(p, nk__src(p, in, k));
    return n;
}

/* Elements per partition (nk__free_size of a layout). */
static int64_t free_size(const nk_layout *l)
{
    int64_t n = 1;
    for (int i = 1; i < l->ndim; i++)
        n *= l->shape[i];
    return n;
}

/* A legacy table entry: cycles = max(floor, work) + extra. */
typedef struct tcost {
    double work, floor, extra;
} tcost;

/* The op's row of the legacy table, for this instruction. */
static tcost table_entry(const nk_arch *a, const nk_program *p, const nk_instr *in)
{
    const nk_opdef *d = nk__op_def(in->op);
    if (!d)
        return (tcost){0, 0, 0};
    const nk_opcost *oc = &d->cost;
    double mii = a->min_ii_cycles;
    double n = (double)nk__opnd_free_size(p, in->nsrc ? &in->src[0] : &in->dst);
    tcost t = {oc->work ? oc->work(p, in, n) : n, oc->min_ii_floor ? mii : 0, 0};
    if (oc->extra == NK_COST_EXTRA_MIN_II && (!oc->extra_if || (in->flags & oc->extra_if)))
        t.extra = mii;
    else if (oc->extra == NK_COST_EXTRA_POOL_FIXED)
        t.extra = a->pool_fixed_cycles;
    return t;
}

double nk__time_table_cycles(const nk_arch *a, const nk_program *p, const nk_instr *in)
{
    tcost t = table_entry(a, p, in);
    return dmax(t.floor, t.work) + t.extra;
}

/* Vector engine 16-bit performance mode on NeuronCore-v3 [A3]. */
static double dve_speedup(const nk_arch *a, const nk_program *p, const nk_instr *in)
{
    const nk_layout *s = nk__lay(p, &in->src[0]), *d = nk__lay(p, &in->dst);
    if (in->engine != NK_ENGINE_VECTOR)
        return 1;
    switch (nk__op_def(in->op)->cost.fast16) {
    case NK_FAST16_ONE_INPUT: {
        if (!is16f(s->dtype) || !is16f(d->dtype))
            return 1;
        int contig = nk__lay_inner_contiguous(s) && nk__lay_inner_contiguous(d);
        int npsum = (s->mem == NK_PSUM) + (d->mem == NK_PSUM);
        if (npsum == 0)
            return contig ? a->dve_fast16_copy_factor : a->dve_fast16_factor;
        return npsum == 1 && contig ? a->dve_fast16_factor : 1;
    }
    case NK_FAST16_TWO_INPUT: {
        const nk_layout *t = nk__lay(p, &in->src[1]);
        if (s->mem == NK_SBUF && t->mem == NK_SBUF && is16f(s->dtype) && is16f(t->dtype) && is16f(d->dtype))
            return a->dve_fast16_factor;
        return 1;
    }
    default: return 1;
    }
}

/* May the instruction's op run on its engine? */
static int engine_ok(const nk_instr *in)
{
    const nk_opdef *d = nk__op_def(in->op);
    return d && in->engine < NK_ENGINE_COUNT && (d->engines & NK_ENG(in->engine));
}

static double clock_ghz(const nk_arch *a, int engine)
{
    switch (engine) {
    case NK_ENGINE_TENSOR: return a->pe_ghz;
    case NK_ENGINE_VECTOR: return a->dve_ghz;
    case NK_ENGINE_SCALAR: return a->act_ghz;
    default: return a->pool_ghz;
    }
}

/* LoadStationary + MultiplyMoving of a matmul or a PE transpose (a matmul
 * with the identity as moving operand: stationary [P, F], moving N = P). */
static void pe_cost(const nk_arch *a, const nk_program *p, const nk_instr *in, nk_cost *c)
{
    const nk_layout *st = nk__lay(p, &in->src[0]), *mv = nk__lay(p, &in->src[1]);
    double m = (double)free_size(st), n, f;
    int moving = nk__op_def(in->op)->cost.pe == NK_PE_MOVING;
    if (moving) {
        n = (double)free_size(mv);
        f = st->dtype == NK_F32 ? a->pe_fp32_factor : 1;
    } else {
        n = st->shape[0];
        f = st->dtype == NK_F32 ? a->pe_fp32_transpose_factor : 1;
    }
    double init = a->pe_mm_init_cycles;
    double mm = dmax(m < init ? m : init, n) * f;
    double ls = m / a->pe_ls_speedup * f;
    if (moving && strided(a, mv))
        mm *= a->stride_penalty_factor;
    if (strided(a, st))
        ls *= a->stride_penalty_factor;
    c->ls_ns = ls / a->pe_ghz;
    c->stream_ns = mm / a->pe_ghz;
    c->fixed_ns = 0; /* pipelined: LS/MM pairs stream back to back [A2] */
    c->write_ns = a->sram_access_cycles / a->pe_ghz;
}

int nk__time_cost(const nk_arch *a, const nk_program *p, const nk_instr *in, nk_cost *c)
{
    if (in->engine >= NK_ENGINE_DMA || !engine_ok(in))
        return NK_EINVAL;
    const nk_layout *ts[5];
    int nt = operands(p, in, ts), str = 0;
    c->sbuf = c->psum = 0;
    for (int k = 0; k < nt; k++) {
        c->sbuf |= ts[k]->mem == NK_SBUF;
        c->psum |= ts[k]->mem == NK_PSUM;
        str |= strided(a, ts[k]);
    }
    if (in->engine == NK_ENGINE_TENSOR) {
        if (nk__op_def(in->op)->cost.pe == NK_PE_NONE)
            return NK_EINVAL;
        pe_cost(a, p, in, c);
        return 0;
    }
    double ghz = clock_ghz(a, in->engine);
    tcost t = table_entry(a, p, in);
    double work = t.work * (str ? a->stride_penalty_factor : 1) / dve_speedup(a, p, in);
    c->ls_ns = 0;
    c->stream_ns = (dmax(t.floor, work) + t.extra) / ghz;
    /* iota / affine_select: the documented 150 + N already holds the fixed part */
    c->fixed_ns = nk__op_def(in->op)->cost.no_overhead ? 0 : a->static_overhead_cycles / ghz;
    c->write_ns = a->sram_access_cycles / ghz;
    return 0;
}

/* Contiguous bytes along the free dims (dims 1..) of a view. */
static uint64_t contig_bytes(const nk_layout *t)
{
    int64_t run = 1;
    for (int d = t->ndim - 1; d >= 1; d--) {
        if (t->shape[d] == 1)
            continue;
        if (t->stride[d] != run)
            break;
        run *= t->shape[d];
    }
    return (uint64_t)run * (uint64_t)nk_dtype_size(t->dtype);
}

/* The rows a DMA spreads over its engines are the partitions of its SBUF
 * side (a load writes the tile, a store reads it; an SBUF-to-SBUF copy moves
 * dst's partitions, as a load does [DMA]) and, HBM to HBM, the first axis
 * of dst (a 1-D tensor is one row; assumed: the docs show HBM-to-HBM copies
 * but not how they split). nl.load_transpose2d reads the HBM side one
 * element at a time, unless the target has a DMA transpose unit
 * (dma_transpose_efficiency) [A3]. */
int nk__time_dma_plan(const nk_arch *a, const nk_program *p, const nk_instr *in, nk_dma_plan *plan)
{
    const nk_layout *d = nk__lay(p, &in->dst), *s = nk__lay(p, &in->src[0]);
    if (in->engine != NK_ENGINE_DMA || in->nsrc < 1)
        return NK_EINVAL;
    const nk_layout *rows = d->mem == NK_SHARED_HBM && s->mem != NK_SHARED_HBM ? s : d;
    const nk_layout *other = rows == d ? s : d;
    if (rows->mem == NK_PSUM || other->mem == NK_PSUM || rows->ndim < 1 || other->ndim < 1)
        return NK_EINVAL;
    uint64_t es = (uint64_t)nk_dtype_size(rows->dtype);
    int flat = rows->mem == NK_SHARED_HBM && rows->ndim == 1;
    plan->hbm_sides = (uint8_t)((d->mem == NK_SHARED_HBM) + (s->mem == NK_SHARED_HBM));
    plan->partitions = flat ? (rows->shape[0] > 0) : rows->shape[0] > 0 ? (uint32_t)rows->shape[0] : 0;
    plan->part_bytes = (uint64_t)(flat ? rows->shape[0] : free_size(rows)) * es;
    uint64_t ct = flat ? (rows->stride[0] == 1 ? plan->part_bytes : es) : contig_bytes(rows);
    uint64_t co = other->ndim == 1 ? (other->stride[0] == 1 ? plan->part_bytes : es) : contig_bytes(other);
    plan->chunk_bytes = ct < co ? ct : co;
    if (plan->chunk_bytes > plan->part_bytes)
        plan->chunk_bytes = plan->part_bytes;
    plan->engines = plan->partitions < (uint32_t)a->dma_engines ? plan->partitions : (uint32_t)a->dma_engines;
    if (plan->part_bytes == 0)
        plan->engines = 0;
    double b = (double)plan->chunk_bytes;
    plan->efficiency = b > 0 ? b / (b + a->dma_eff_half_bytes) : 0;
    if (in->op == NK_OP_LOAD_TRANSPOSE) {
        if (a->dma_transpose_efficiency > 0) {
            plan->chunk_bytes = plan->part_bytes;
            plan->efficiency = plan->part_bytes ? a->dma_transpose_efficiency : 0;
        } else {
            plan->chunk_bytes = es < plan->part_bytes ? es : plan->part_bytes;
            b = (double)plan->chunk_bytes;
            plan->efficiency = b > 0 ? b / (b + a->dma_eff_half_bytes) : 0;
        }
    }
    return 0;
}
