/*
 * calib.c - the calibration micro-benchmarks: the table of points, their C
 * kernels, the model's closed forms and the side-by-side report.
 * The NKI Python text is in emit.c, the least-squares fit in fit.c.
 *
 * Sources as in docs/timing-model.md: [A2] [A3] architecture guides, [PG]
 * performance guide, [ISA-old] legacy per-instruction cost table, [ISA-sel]
 * the current nki.isa reference's engine-selection cost table, [DMAbw] the
 * DMA bandwidth guide. A figure "derived" combines documented rules and
 * documented clocks; none is a tutorial's end-to-end latency.
 */
#include "calib.h"

#include "nkint.h"
#include "timing/timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const nk_calib_family nk__calib_families[NK_CALIB_NFAMILIES] = {
    [NK_CALIB_ACT] = {"act", "Scalar engine: activation cost against N, static overhead, write access"},
    [NK_CALIB_DVE] = {"dve", "Vector engine: tensor_scalar cost against N, static overhead, write access"},
    [NK_CALIB_POOL] = {"pool", "GpSimd engine: iota cost against N (fixed part and clock)"},
    [NK_CALIB_PE] = {"pe", "Tensor engine: MultiplyMoving rate per dtype, LoadStationary overlap"},
    [NK_CALIB_DMA_LOAD] = {"dma_load", "DMA throughput against bytes per partition (one queue, 16 engines)"},
    [NK_CALIB_DMA_QUEUES] = {"dma_queues", "many DMAs in flight over four queues and every engine"},
    [NK_CALIB_DMA_CHAIN] = {"dma_chain", "DMA start latency: dependent 4-byte DMAs"},
    [NK_CALIB_HBM_COPY] = {"hbm_copy", "HBM saturation: HBM-to-HBM copies (bytes read and written)"},
    [NK_CALIB_SEM] = {"sem", "semaphore latency: a chain alternating Scalar and Vector"},
    [NK_CALIB_PORTS] = {"ports", "shared SBUF port: Vector and GpSimd side by side"},
    [NK_CALIB_DVE_TT] = {"dve_tt", "Vector engine: tensor_tensor cost against dtype and stride, 16-bit mode"},
};

#define NONE NAN
#define R3(a, b, c) {a, b, c}

/* The documented DMA peaks per core [DMAbw]: 272 GB/s (trn1), 368 (trn2). */
#define PEAK1 272.0
#define PEAK2 368.0

const nk_calib_point nk__calib_points[] = {
    /* Scalar engine [ISA-old][ISA-sel]: max(MIN_II, N) cycles; ~100 cycles static overhead [A2][PG] */
    {"act_dep/n=1", NK_CALIB_ACT, 1, 0, 1, 0, R3(4, 8, 16), NK_CALIB_NS, {189, NONE}, 0, 0.16,
     "back-to-back dependent 1-element ScalarE instructions ~189 ns apart (264 cycles, NC-v2)", "[PG]"},
    {"act_dep/n=256", NK_CALIB_ACT, 256, 0, 1, 0, R3(4, 8, 16), NK_CALIB_NS, {NONE, NONE}, 0, 0, "", ""},
    {"act_dep/n=1024", NK_CALIB_ACT, 1024, 0, 1, 0, R3(4, 8, 16), NK_CALIB_NS, {NONE, NONE}, 0, 0, "", ""},
    {"act_ind/n=1", NK_CALIB_ACT, 1, 0, 0, 0, R3(4, 8, 16), NK_CALIB_CYCLES, {100, 100}, 0, 0.1,
     "static instruction overhead ~100 cycles hides a 1-element instruction", "[A2][PG]"},
    {"act_ind/n=1024", NK_CALIB_ACT, 1024, 0, 0, 0, R3(4, 8, 16), NK_CALIB_CYCLES, {1024, 1024}, 0, 0.02,
     "activation costs max(MIN_II, N) = N cycles", "[ISA-old][ISA-sel]"},
    /* Vector engine [ISA-old] tensor_scalar: max(MIN_II, N) */
    {"dve_dep/n=1", NK_CALIB_DVE, 1, 0, 1, 0, R3(4, 8, 16), NK_CALIB_NS, {NONE, NONE}, 0, 0, "", ""},
    {"dve_dep/n=256", NK_CALIB_DVE, 256, 0, 1, 0, R3(4, 8, 16), NK_CALIB_NS, {NONE, NONE}, 0, 0, "", ""},
    {"dve_dep/n=1024", NK_CALIB_DVE, 1024, 0, 1, 0, R3(4, 8, 16), NK_CALIB_NS, {NONE, NONE}, 0, 0, "", ""},
    {"dve_ind/n=1", NK_CALIB_DVE, 1, 0, 0, 0, R3(4, 8, 16), NK_CALIB_CYCLES, {100, 100}, 0, 0.1,
     "static instruction overhead ~100 cycles", "[A2][PG]"},
    {"dve_ind/n=1024", NK_CALIB_DVE, 1024, 0, 0, 0, R3(4, 8, 16), NK_CALIB_CYCLES, {1024, 1024}, 0, 0.02,
     "tensor_scalar costs max(MIN_II, N) = N cycles", "[ISA-old]"},
    /* GpSimd [ISA-old] iota: 150 + N */
    {"pool_ind/n=512", NK_CALIB_POOL, 512, 0, 0, 0, R3(4, 8, 16), NK_CALIB_CYCLES, {662, 662}, 0, 0.02,
     "iota costs 150 + N cycles", "[ISA-old]"},
    {"pool_ind/n=2048", NK_CALIB_POOL, 2048, 0, 0, 0, R3(4, 8, 16), NK_CALIB_CYCLES, {2198, 2198}, 0, 0.02,
     "iota costs 150 + N cycles", "[ISA-old]"},
    /* Tensor engine */
    {"pe/m=128:n=512:bf16", NK_CALIB_PE, 512, 128, 0, 0, R3(4, 8, 16), NK_CALIB_CYCLES, {512, 512}, 0, 0.05,
     "a 128x128x512 bf16 matmul takes about 512 PE cycles (183 ns at 2.8 GHz)", "[A2]"},
    {"pe/m=128:n=512:fp32", NK_CALIB_PE, 512, 128, 0, 1, R3(4, 8, 16), NK_CALIB_CYCLES, {2048, 2048}, 0, 0.05,
     "fp32 matmuls run at quarter speed (about 4x)", "[A2][A3]"},
    {"pe/m=128:n=1:bf16", NK_CALIB_PE, 1, 128, 0, 0, R3(4, 8, 16), NK_CALIB_CYCLES, {64, 64}, 0, 0.05,
     "short moving: LS 128/4 = 32 cycles hidden, one MM every MM_INIT_LATENCY = 64 cycles", "[PG]"},
    {"pe/m=1:n=128:bf16", NK_CALIB_PE, 128, 1, 0, 0, R3(4, 8, 16), NK_CALIB_CYCLES, {128, 128}, 0, 0.05,
     "short stationary: one MM roughly every 128 cycles", "[PG]"},
    /* DMA throughput against bytes per partition [DMAbw] (GB/s per core) */
    {"dma_load/bpp=64", NK_CALIB_DMA_LOAD, 16, 0, 0, 0, R3(2, 4, 8), NK_CALIB_GBPS, {PEAK1 / 2, PEAK2 / 2}, -1, 0,
     "< 256 B per partition: severely overhead-bound, a small fraction of peak (read: under half)", "[DMAbw]"},
    {"dma_load/bpp=256", NK_CALIB_DMA_LOAD, 64, 0, 0, 0, R3(2, 4, 8), NK_CALIB_GBPS, {0.9 * PEAK1, 0.9 * PEAK2}, -1,
     0, "256 B - 2 KiB: improving but below peak (read: under 90%)", "[DMAbw]"},
    {"dma_load/bpp=1024", NK_CALIB_DMA_LOAD, 256, 0, 0, 0, R3(2, 4, 8), NK_CALIB_GBPS, {0.9 * PEAK1, 0.9 * PEAK2},
     -1, 0, "256 B - 2 KiB: improving but below peak (read: under 90%)", "[DMAbw]"},
    {"dma_load/bpp=2048", NK_CALIB_DMA_LOAD, 512, 0, 0, 0, R3(2, 4, 8), NK_CALIB_GBPS, {0.85 * PEAK1, 0.85 * PEAK2},
     +1, 0, ">= 2 KiB: approaches peak (read: at least 85%)", "[DMAbw]"},
    {"dma_load/bpp=4096", NK_CALIB_DMA_LOAD, 1024, 0, 0, 0, R3(2, 4, 8), NK_CALIB_GBPS, {0.9 * PEAK1, 0.9 * PEAK2},
     +1, 0, ">= 4 KiB: saturates the engines, 17 / 23 B/ns x 16 (read: at least 90%)", "[DMAbw]"},
    {"dma_load/bpp=8192", NK_CALIB_DMA_LOAD, 2048, 0, 0, 0, R3(2, 4, 8), NK_CALIB_GBPS, {0.9 * PEAK1, 0.9 * PEAK2},
     +1, 0, ">= 4 KiB: saturates the engines (read: at least 90%)", "[DMAbw]"},
    {"dma_queues/bpp=4096", NK_CALIB_DMA_QUEUES, 1024, 0, 0, 0, R3(4, 8, 12), NK_CALIB_GBPS,
     {0.9 * PEAK1, 0.9 * PEAK2}, +1, 0, "16 engines x 17 / 23 B/ns = 272 / 368 GB/s per core at >= 4 KiB", "[DMAbw]"},
    {"dma_chain/bytes=4", NK_CALIB_DMA_CHAIN, 1, 0, 1, 0, R3(2, 4, 8), NK_CALIB_NS, {1300, 1300}, 0, 0.05,
     "semaphore-to-start latency ~1300 ns per DMA", "[DMAbw]"},
    {"hbm_copy/bpp=4096", NK_CALIB_HBM_COPY, 1024, 0, 0, 0, R3(2, 4, 8), NK_CALIB_GBPS, {410, 375}, 0, 0.02,
     "HBM 820 GB/s per trn1 device of 2 cores [A2]; 3 TB/s per trn2 device of 8 cores [A3] (derived per core)",
     "[A2][A3]"},
    {"sem/n=1", NK_CALIB_SEM, 1, 0, 1, 0, R3(4, 8, 16), NK_CALIB_NS, {NONE, NONE}, 0, 0,
     "no published engine-to-engine semaphore latency", ""},
    {"ports/n=2048", NK_CALIB_PORTS, 2048, 0, 0, 0, R3(4, 6, 8), NK_CALIB_NS, {3398.6, 2133.3}, 0, 0.02,
     "v2: Vector and GpSimd cannot access SBUF at once, so N/1.12 + (150+N)/1.4 GHz [A2][ISA-old]; "
     "v3 lifts it: max(N/0.96, (150+N)/1.2 GHz) [A3] (derived)",
     "[A2][A3]"},
    /* Vector tensor_tensor [ISA-old]: N for bf16 add/multiply/subtract with both inputs in SBUF and
       contiguous, else 2N; on v3 the 16-bit mode doubles it for all-bf16 SBUF operands [A3] */
    {"dve_tt/n=1024:bf16", NK_CALIB_DVE_TT, 1024, 1, 0, 0, R3(4, 8, 16), NK_CALIB_CYCLES, {1024, 512}, 0, 0.02,
     "bf16 add, contiguous SBUF inputs: max(MIN_II, N) [ISA-old]; v3 16-bit mode 2x: N/2 [A3] (derived)",
     "[ISA-old][A3]"},
    {"dve_tt/n=1024:bf16:s2", NK_CALIB_DVE_TT, 1024, 2, 0, 0, R3(4, 8, 16), NK_CALIB_CYCLES, {2048, 1024}, 0,
     0.02,
     "bf16 add, inputs with a 2-element stride (under 16 B, no penalty [A2]): max(MIN_II, 2N) [ISA-old]; "
     "v3 16-bit mode 2x: N [A3] (derived)",
     "[ISA-old][A2][A3]"},
    {"dve_tt/n=1024:fp32", NK_CALIB_DVE_TT, 1024, 1, 0, 1, R3(4, 8, 16), NK_CALIB_CYCLES, {2048, 2048}, 0, 0.02,
     "fp32 add, SBUF inputs: max(MIN_II, 2N) [ISA-old][A2]; no 16-bit mode", "[ISA-old][A2]"},
};
const size_t nk__calib_npoints = sizeof nk__calib_points / sizeof nk__calib_points[0];

static double dmax(double a, double b) { return a > b ? a : b; }

double nk__calib_bytes(const nk_calib_point *pt)
{
    switch (pt->family) {
    case NK_CALIB_DMA_LOAD:
    case NK_CALIB_DMA_QUEUES:
        return 128.0 * (double)pt->n * 4;
    case NK_CALIB_HBM_COPY:
        return 2 * 128.0 * (double)pt->n * 4; /* read and written */
    case NK_CALIB_DMA_CHAIN:
        return 4;
    default:
        return 0;
    }
}

/* ns of one descriptor of `parts` partitions of `bpp` contiguous bytes. */
static double desc_ns(const nk_arch *a, double parts, double bpp)
{
    return parts * (bpp + a->dma_eff_half_bytes) / a->dma_engine_gbps;
}

double nk__calib_expect_ns(const nk_arch *a, const nk_calib_point *pt)
{
    double n = (double)pt->n, m = (double)pt->m;
    double ovh = a->static_overhead_cycles, acc = a->sram_access_cycles, mii = a->min_ii_cycles;
    double ii = dmax(mii, n);
    double parts = ceil(128.0 / (a->dma_engines < 128 ? a->dma_engines : 128));
    switch (pt->family) {
    case NK_CALIB_ACT:
        return (pt->dep ? ovh + ii + acc : dmax(ovh, ii)) / a->act_ghz;
    case NK_CALIB_DVE:
        return (pt->dep ? ovh + ii + acc : dmax(ovh, ii)) / a->dve_ghz;
    case NK_CALIB_POOL:
        return (n + a->pool_fixed_cycles) / a->pool_ghz;
    case NK_CALIB_PE: {
        double f = pt->fp32 ? a->pe_fp32_factor : 1, init = a->pe_mm_init_cycles;
        double mm = dmax(m < init ? m : init, n) * f, ls = m / a->pe_ls_speedup * f;
        return dmax(mm, ls) / a->pe_ghz;
    }
    case NK_CALIB_DMA_LOAD:
    case NK_CALIB_DMA_QUEUES: {
        /* + the output's 4-byte column per repetition (the store grows with it) */
        double bpp = n * 4;
        return dmax(dmax(desc_ns(a, parts, bpp), 128 * bpp / a->hbm_gbps), a->dma_trigger_ns) +
               parts * 4 / a->dma_engine_gbps;
    }
    case NK_CALIB_DMA_CHAIN:
        return dmax(a->dma_latency_ns, a->dma_trigger_ns) + desc_ns(a, 1, 4);
    case NK_CALIB_HBM_COPY: {
        double bpp = n * 4;
        return dmax(dmax(desc_ns(a, parts, bpp), 2 * 128 * bpp / a->hbm_gbps), a->dma_trigger_ns);
    }
    case NK_CALIB_SEM:
        return 2 * a->sem_latency_ns + (ovh + ii + acc) / a->act_ghz + (ovh + ii + acc) / a->dve_ghz;
    case NK_CALIB_PORTS: {
        double v = ii / a->dve_ghz, g = (n + a->pool_fixed_cycles) / a->pool_ghz;
        return a->sbuf_dve_pool_exclusive ? v + g : dmax(dmax(ovh, ii) / a->dve_ghz, g);
    }
    case NK_CALIB_DVE_TT: {
        double work = pt->fp32 || m != 1 ? 2 * n : n;
        if (!pt->fp32)
            work /= a->dve_fast16_factor;
        if (m * (pt->fp32 ? 4 : 2) > a->stride_penalty_bytes && m != 1)
            work *= a->stride_penalty_factor;
        return dmax(ovh, dmax(mii, work)) / a->dve_ghz;
    }
    }
    return NAN;
}

double nk__calib_in_unit(const nk_arch *a, const nk_calib_point *pt, double ns)
{
    switch (pt->unit) {
    case NK_CALIB_GBPS:
        return nk__calib_bytes(pt) / ns;
    case NK_CALIB_CYCLES: {
        double ghz = pt->family == NK_CALIB_ACT ? a->act_ghz
                     : pt->family == NK_CALIB_DVE || pt->family == NK_CALIB_DVE_TT ? a->dve_ghz
                     : pt->family == NK_CALIB_POOL ? a->pool_ghz
                                                   : a->pe_ghz;
        return ns * ghz;
    }
    default:
        return ns;
    }
}

int nk__calib_within(const nk_calib_point *pt, int t, double v)
{
    double d = pt->doc[t];
    if (isnan(d))
        return -1;
    if (pt->bound > 0)
        return v >= d;
    if (pt->bound < 0)
        return v <= d;
    return fabs(v - d) <= pt->tol * fabs(d);
}

/* ---- the C kernels: one per family, for the point and repetitions in cur */

static const nk_calib_point *cur;
static int cur_reps;

static nk_tensor out_of(nk_ctx *nc, nk_tensor t)
{
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(t.shape[0], t.shape[1]), t.dtype, NK_SHARED_HBM);
    nk_store(nc, out, t);
    return out;
}

static nk_tensor vmul(nk_ctx *nc, nk_tensor x)
{
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(x.shape[0], x.shape[1]), x.dtype, NK_SBUF);
    nk_isa_tensor_scalar(nc, d, x, NK_ALU_MULTIPLY, nk_imm(1), 0, NK_ALU_BYPASS, nk_imm(0), 0);
    return d;
}

static nk_tensor iota_tile(nk_ctx *nc, int64_t n)
{
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(128, n), NK_F32, NK_SBUF);
    nk_isa_iota(nc, d, ((nk_affine){0, (int32_t)n, {1, 0, 0}}));
    return d;
}

static nk_tensor to_bf16(nk_ctx *nc, nk_tensor t, int fp32) { return fp32 ? t : nk_copy(nc, t, NK_BF16); }

static void k_calib(nk_ctx *nc, const nk_tensor *a, int nargs)
{
    (void)nargs;
    const nk_calib_point *pt = cur;
    int64_t n = pt->n, R = cur_reps;
    nk_tensor out;
    switch (pt->family) {
    case NK_CALIB_ACT:
    case NK_CALIB_DVE:
    case NK_CALIB_SEM: {
        nk_tensor x = nk_load(nc, a[0]), y = x;
        for (int64_t r = 0; r < R; r++) {
            nk_tensor src = pt->dep ? y : x;
            if (pt->family == NK_CALIB_ACT)
                y = nk_exp(nc, src);
            else if (pt->family == NK_CALIB_DVE)
                y = vmul(nc, src);
            else
                y = vmul(nc, nk_exp(nc, y));
        }
        out = out_of(nc, y);
        break;
    }
    case NK_CALIB_POOL: {
        nk_tensor y = iota_tile(nc, n);
        for (int64_t r = 1; r < R; r++)
            y = iota_tile(nc, n);
        out = out_of(nc, y);
        break;
    }
    case NK_CALIB_PORTS: {
        /* every result in its own columns: no write reuses another's memory */
        nk_tensor x = nk_load(nc, a[0]);
        nk_tensor v = nk_ndarray(nc, NK_SHAPE(128, R * n), NK_F32, NK_SBUF);
        nk_tensor g = nk_ndarray(nc, NK_SHAPE(128, R * n), NK_F32, NK_SBUF);
        for (int64_t r = 0; r < R; r++) {
            nk_isa_tensor_scalar(nc, nk_ix(nc, v, NK_ALL, nk_r(r * n, r * n + n)), x, NK_ALU_MULTIPLY, nk_imm(1), 0,
                                 NK_ALU_BYPASS, nk_imm(0), 0);
            nk_isa_iota(nc, nk_ix(nc, g, NK_ALL, nk_r(r * n, r * n + n)), ((nk_affine){0, (int32_t)n, {1, 0, 0}}));
        }
        out = out_of(nc, nk_ix(nc, v, NK_ALL, nk_r((R - 1) * n, R * n)));
        break;
    }
    case NK_CALIB_DVE_TT: {
        /* independent adds of x with itself, every result in its own tile */
        int64_t m = pt->m;
        nk_tensor x = to_bf16(nc, nk_load(nc, a[0]), pt->fp32), y = x;
        nk_tensor xv = nk_ix(nc, x, NK_ALL, nk_rs(0, n * m, m));
        for (int64_t r = 0; r < R; r++) {
            y = nk_ndarray(nc, NK_SHAPE(128, n), x.dtype, NK_SBUF);
            nk_isa_tensor_tensor(nc, y, xv, xv, NK_ALU_ADD);
        }
        out = out_of(nc, y);
        break;
    }
    case NK_CALIB_PE: {
        nk_tensor st = to_bf16(nc, nk_load(nc, a[0]), pt->fp32), mv = to_bf16(nc, nk_load(nc, a[1]), pt->fp32);
        nk_tensor ps = nk_ndarray(nc, NK_SHAPE(pt->m, n), NK_F32, NK_PSUM);
        for (int64_t r = 0; r < R; r++)
            nk_isa_nc_matmul(nc, ps, st, mv, r > 0);
        out = out_of(nc, nk_copy(nc, ps, NK_F32));
        break;
    }
    case NK_CALIB_DMA_LOAD:
    case NK_CALIB_DMA_QUEUES: {
        int q = pt->family == NK_CALIB_DMA_QUEUES ? 4 : 1;
        nk_tensor buf = nk_ndarray(nc, NK_SHAPE(128, R * n), NK_F32, NK_SBUF);
        for (int64_t r = 0; r < R; r++) {
            int64_t row = (r / q) * 128;
            nk_dma_copy(nc, nk_ix(nc, buf, NK_ALL, nk_r(r * n, r * n + n)),
                        nk_ix(nc, a[r % q], nk_r(row, row + 128), NK_ALL));
        }
        /* one element of every load, by one strided copy: the output waits for
           every load whatever order the compile step gives them */
        nk_tensor col = nk_ndarray(nc, NK_SHAPE(128, R), NK_F32, NK_SBUF);
        nk_isa_tensor_copy_at(nc, NK_CALL("nk_isa_tensor_copy"), col, nk_ix(nc, buf, NK_ALL, nk_rs(0, R * n, n)),
                              NK_ENGINE_DEFAULT);
        out = out_of(nc, col);
        break;
    }
    case NK_CALIB_DMA_CHAIN: {
        nk_tensor t = nk_load(nc, a[0]);
        for (int64_t r = 0; r < R; r++) {
            nk_tensor u = nk_ndarray(nc, NK_SHAPE(1, 1), NK_F32, NK_SBUF);
            nk_dma_copy(nc, u, t);
            t = u;
        }
        out = out_of(nc, t);
        break;
    }
    case NK_CALIB_HBM_COPY: {
        out = nk_ndarray(nc, NK_SHAPE(R * 128, n), NK_F32, NK_SHARED_HBM);
        for (int64_t r = 0; r < R; r++)
            nk_dma_copy(nc, nk_ix(nc, out, nk_r(r * 128, r * 128 + 128), NK_ALL),
                        nk_ix(nc, a[0], nk_r(r * 128, r * 128 + 128), NK_ALL));
        break;
    }
    default:
        return;
    }
    nk_return(nc, out);
}

/* The kernel's arguments for pt at R repetitions (shapes only: timing never
 * reads values). */
static int calib_args(const nk_calib_point *pt, int R, nk_array *args)
{
    int64_t n = pt->n;
    nk_array x = {NK_F32, 2, {128, n}, NULL};
    switch (pt->family) {
    case NK_CALIB_PE:
        args[0] = (nk_array){NK_F32, 2, {128, pt->m}, NULL};
        args[1] = (nk_array){NK_F32, 2, {128, n}, NULL};
        return 2;
    case NK_CALIB_DMA_LOAD:
        args[0] = (nk_array){NK_F32, 2, {R * 128, n}, NULL};
        return 1;
    case NK_CALIB_DMA_QUEUES:
        for (int q = 0; q < 4; q++)
            args[q] = (nk_array){NK_F32, 2, {(R + 3) / 4 * 128, n}, NULL};
        return 4;
    case NK_CALIB_HBM_COPY:
        args[0] = (nk_array){NK_F32, 2, {R * 128, n}, NULL};
        return 1;
    case NK_CALIB_DMA_CHAIN:
        args[0] = (nk_array){NK_F32, 2, {1, 1}, NULL};
        return 1;
    case NK_CALIB_DVE_TT:
        args[0] = (nk_array){NK_F32, 2, {128, n * pt->m}, NULL};
        return 1;
    default:
        args[0] = x;
        return 1;
    }
}

int nk__calib_time(const nk_arch *a, const nk_calib_point *pt, int reps, double *ns)
{
    nk_array args[4];
    int nargs = calib_args(pt, reps, args);
    nk_kernel *k = nk_kernel_new(pt->id, k_calib);
    if (!k)
        return NK_ENOMEM;
    cur = pt;
    cur_reps = reps;
    /* in the order the kernel issues them: each benchmark is written to isolate one mechanism */
    nk_options o = {a->name, 0, (const nk_target *)a, NK_SCHED_TRACE_ORDER};
    const nk_program *p = NULL;
    nk_timeline *tl = NULL;
    int rc = nk_kernel_compile(k, args, nargs, &o, &p);
    if (!rc)
        rc = nk__time_program(p, a, &tl);
    if (!rc)
        *ns = tl->total_ns;
    nk__timeline_free(tl);
    nk_kernel_free(k);
    cur = NULL;
    return rc;
}

/* Least-squares slope of y over x. */
static double slope(const double *x, const double *y, int n)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
    }
    double d = n * sxx - sx * sx;
    return d != 0 ? (n * sxy - sx * sy) / d : NAN;
}

int nk__calib_simulate(const nk_arch *a, const nk_calib_point *pt, double *per_rep)
{
    double x[NK_CALIB_MAXREPS], y[NK_CALIB_MAXREPS];
    for (int i = 0; i < NK_CALIB_MAXREPS; i++) {
        int rc = nk__calib_time(a, pt, pt->reps[i], &y[i]);
        if (rc)
            return rc;
        x[i] = pt->reps[i];
    }
    *per_rep = slope(x, y, NK_CALIB_MAXREPS);
    return 0;
}

double nk__calib_slope(const double *x, const double *y, int n) { return slope(x, y, n); }

/* ---- the side-by-side report */

static const char *unit_name(int u) { return u == NK_CALIB_GBPS ? "GB/s" : u == NK_CALIB_CYCLES ? "cycles" : "ns"; }

static void fmt_doc(char *b, size_t n, const nk_calib_point *pt, int t)
{
    double d = pt->doc[t];
    if (isnan(d))
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%s%.1f", pt->bound > 0 ? ">= " : pt->bound < 0 ? "<= " : "", d);
}

int nk__calib_report(char **text, int *misses)
{
    size_t cap = 256 + nk__calib_npoints * 2 * 200, len = 0;
    char *s = malloc(cap);
    if (!s)
        return NK_ENOMEM;
    *misses = 0;
    len += (size_t)snprintf(s + len, cap - len, "%-22s %-6s %6s %12s %12s %8s %6s  %s\n", "benchmark", "target",
                            "unit", "documented", "model", "gap", "within", "source");
    for (size_t i = 0; i < nk__calib_npoints; i++) {
        const nk_calib_point *pt = &nk__calib_points[i];
        for (int t = 0; t < 2; t++) {
            const nk_arch *a = nk__arch_get(t ? "trn2" : "trn1");
            double per;
            int rc = nk__calib_simulate(a, pt, &per);
            if (rc) {
                free(s);
                return rc;
            }
            double v = nk__calib_in_unit(a, pt, per);
            char doc[32], gap[16] = "-";
            fmt_doc(doc, sizeof doc, pt, t);
            int w = nk__calib_within(pt, t, v);
            if (w >= 0 && pt->bound == 0)
                snprintf(gap, sizeof gap, "%+.1f%%", 100 * (v - pt->doc[t]) / pt->doc[t]);
            if (w == 0)
                (*misses)++;
            char tol[32] = "";
            if (w >= 0 && pt->bound == 0)
                snprintf(tol, sizeof tol, " +-%g%%", 100 * pt->tol);
            len += (size_t)snprintf(s + len, cap - len, "%-22s %-6s %6s %12s %12.1f %8s %6s  %s%s\n", pt->id,
                                    a->name, unit_name(pt->unit), doc, v, gap,
                                    w < 0 ? "-" : w ? "yes" : "NO", pt->source, tol);
        }
    }
    *text = s;
    return 0;
}
