/*
 * arch.c - the built-in target tables.
 *
 * Sources (full titles in docs/timing-model.md):
 *   [A2]     Trainium/Inferentia2 architecture guide (NeuronCore-v2)
 *   [A3]     Trainium2 architecture guide (NeuronCore-v3)
 *   [PG]     NKI performance guide
 *   [DMA]    NKI DMA overview
 *   [DMAbw]  NKI DMA bandwidth guide
 *   [ISA-old] legacy nki.isa docstrings (per-instruction cost estimates)
 *   [ALLOC]  NKI direct allocation guide
 *   [PM]     NKI programming model, memory hierarchy
 *   [TS]     NKI tiling overview, tile-size constraints (nl.tile_size)
 *   [ISA]    nki.isa docstrings (nc_transpose tile sizes)
 *   [LNC]    Logical NeuronCore configuration; NKI's LNC overview (SPMD launches)
 *   [DGE]    NKI descriptor generation (DGE) reference
 *   [NRT]    Neuron runtime: device memory (DMA rings, instruction-fetch DMAs)
 *   [NEFF]   Neuron runtime: NEFF files (queue sets and the engine that triggers them)
 * A value marked "assumed" has no published figure; the comment says why it
 * was chosen. Loading a target from a file lives in arch_file.c.
 */
#include "arch.h"

#include <string.h>

static const nk_arch targets[] = {
    {
        .name = "trn1",
        .partitions = 128,                    /* [A2] */
        .sbuf_partition_bytes = 192 * 1024,   /* [A2] 24 MiB = 128 x 192 KiB */
        .sbuf_reserved_bytes = 16 * 1024,     /* [ALLOC] user addresses < 176 KiB */
        .psum_partition_bytes = 16 * 1024,    /* [A2] 2 MiB = 128 x 16 KiB */
        .psum_bank_bytes = 2 * 1024,          /* [A2] 8 banks of 2 KiB */
        .psum_banks = 8,                      /* [A2] */
        .tile_align = 64,   /* assumed: the allocator's alignment is not documented */
        .default_bufs = 2,  /* assumed: double buffering, the guide's usual example */
        .vector_fmax_sbuf = 65536,            /* [A2] 64K elements from SBUF */
        .vector_fmax_psum = 4096,             /* [A2] 4K elements from PSUM */
        .gemm_stationary_fmax = 128,          /* [TS] nl.tile_size.gemm_stationary_fmax */
        .gemm_moving_fmax = 512,              /* [TS] nl.tile_size.gemm_moving_fmax */
        .psum_fmax = 512,                     /* [TS][A2] psum_fmax: a 2 KiB bank of fp32 */
        .pe_transpose_max = 128,              /* [ISA] nc_transpose: [128, 128] on the Tensor engine */
        .dve_transpose_max = 32,              /* [ISA][A2] [32, 32] on the Vector engine (reshape bank) */
        .bn_stats_fmax = 512,                 /* [ISA][A2] nl.tile_size.bn_stats_fmax */

        .pe_ghz = 2.8,                        /* [A2] engine table */
        .dve_ghz = 1.12,                      /* [A2] */
        .act_ghz = 1.4,                       /* [A2] */
        .pool_ghz = 1.4,                      /* [A2] */

        .pe_mm_init_cycles = 64,              /* [A2][PG] MM_INIT_LATENCY on NeuronCore-v2 */
        .pe_fp32_factor = 4.0,                /* [A2][ISA-old] fp32 about 4x; 23 vs 92 TFLOPS */
        .pe_fp32_transpose_factor = 4.0,      /* [A2] a PE transpose is a matmul with identity */
        .pe_ls_speedup = 4.0,                 /* [A2][PG] LoadStationary up to 4x faster than MM */

        .min_ii_cycles = 64,                  /* [ISA-old] MIN_II roughly 64 engine cycles */
        .static_overhead_cycles = 100,        /* [A2][PG] static instruction overhead ~100 cycles */
        .sram_access_cycles = 60,             /* [A2] tensor access start ~60 cycles */
        .pool_fixed_cycles = 150,             /* [ISA-old] iota / affine_select: 150 + N */
        .stride_penalty_bytes = 16,           /* [A2] innermost stride over 16 B ... */
        .stride_penalty_factor = 2.0,         /* [A2] ... gets half the bandwidth */
        .dve_fast16_factor = 1.0,             /* [A3] the 16-bit performance mode is new in v3 */
        .dve_fast16_copy_factor = 1.0,        /* [A3] idem */
        .sbuf_dve_pool_exclusive = 1,         /* [A2] Vector and GpSimd cannot share SBUF */
        .psum_dve_act_exclusive = 1,          /* [A2] Vector and Scalar cannot share PSUM */
        .sem_latency_ns = 50.0, /* assumed: no published figure for engine-to-engine
                                   semaphores; same order as one SRAM access start
                                   (60 cycles at 1.12-1.4 GHz [A2]) */

        .spmd_cores = 1,  /* [LNC] logical NeuronCores apply to Trn2 and later only: a launch on
                             NeuronCore-v2 runs on one core, its grid's instances one after another */
        .dma_engines = 16,                    /* [A2][DMA] */
        .dma_queues = 16,                     /* [DMA] 16 queues per engine */
        .dma_engine_gbps = 17.0,              /* [DMAbw] 17 B/ns per engine, 272 GB/s per core */
        .dma_latency_ns = 1300.0,             /* [DMAbw] semaphore to DMA start ~1300 ns */
        .dma_trigger_ns = 8.0, /* assumed as trn2 ([DMA]'s trn2 profile), no v2 figure */
        .dma_trigger_in_order = 0, /* assumed: the Sync engine is an in-order sequencer [A2], but
                                      the order the compiler gives its queue is not documented;
                                      0 takes it as ordered by readiness (loads issued ahead, as
                                      a prefetching compiler does); 1 models a queue in program
                                      order without prefetch */
        .dma_eff_half_bytes = 256.0, /* assumed: [DMAbw] calls < 256 B per partition severely
                                        overhead-bound and >= 4 KiB saturating; 256 B as the
                                        50% point gives 89% at 2 KiB and 94% at 4 KiB */
        .dma_transpose_efficiency = 0, /* assumed: the DMA transpose figures are for Trainium2
                                          [A3]; on trn1 a transposing load reads element by
                                          element, "much lower DMA bandwidth" [PG] */
        .hbm_gbps = 410.0,                    /* [A2] 820 GB/s per device of 2 cores (derived) */
        .host_gbps = 16.0,                    /* [PM] host link about 16 GB/s */
        .launch_startup_ns = 1300.0, /* assumed: the engines fetch their instructions by DMA [NRT], so
                                        the first instruction issues no earlier than one DMA
                                        trigger-to-start latency [DMAbw] after the start; the
                                        runtime's own set-up has no published figure */
        .launch_teardown_ns = 1300.0, /* assumed: after the final DMA completion semaphore [DMA] the
                                         stop notification is written to memory, taken as one more
                                         DMA latency [DMAbw]; no published figure */
    },
    {
        .name = "trn2",
        .partitions = 128,                    /* [A3] */
        .sbuf_partition_bytes = 224 * 1024,   /* [A3] 28 MiB = 128 x 224 KiB */
        .sbuf_reserved_bytes = 16 * 1024,     /* assumed: as on trn1 [ALLOC] */
        .psum_partition_bytes = 16 * 1024,    /* [A3] same as v2 */
        .psum_bank_bytes = 2 * 1024,          /* [A3] */
        .psum_banks = 8,                      /* [A3] */
        .tile_align = 64,   /* assumed, as trn1 */
        .default_bufs = 2,  /* assumed, as trn1 */
        .vector_fmax_sbuf = 65536,            /* assumed: as v2 [A2] */
        .vector_fmax_psum = 4096,             /* assumed: as v2 [A2] */
        .gemm_stationary_fmax = 128,          /* [TS] nl.tile_size (one table for both targets) */
        .gemm_moving_fmax = 512,              /* [TS] */
        .psum_fmax = 512,                     /* [TS][A3] banks of 2 KiB as on v2 */
        .pe_transpose_max = 128,              /* [ISA] */
        .dve_transpose_max = 32,              /* [ISA] */
        .bn_stats_fmax = 512,                 /* [ISA] nl.tile_size.bn_stats_fmax (one table for both) */

        .pe_ghz = 2.4,                        /* [A3] engine table */
        .dve_ghz = 0.96,                      /* [A3] */
        .act_ghz = 1.2,                       /* [A3] */
        .pool_ghz = 1.2,                      /* [A3] */

        .pe_mm_init_cycles = 64,              /* assumed: v2 figure [A2]; none published for v3 */
        .pe_fp32_factor = 4.0,                /* [A3] 20 fp32 vs 79 bf16 dense TFLOPS */
        .pe_fp32_transpose_factor = 2.0,      /* [A3] transpose mode: 2x faster fp32 transpose */
        .pe_ls_speedup = 4.0,                 /* assumed: v2 fast weight load [A2] */

        .min_ii_cycles = 64,                  /* assumed: v2 [ISA-old] */
        .static_overhead_cycles = 100,        /* assumed: v2 [A2][PG] */
        .sram_access_cycles = 60,             /* assumed: v2 [A2] */
        .pool_fixed_cycles = 150,             /* assumed: v2 [ISA-old] */
        .stride_penalty_bytes = 16,           /* assumed: v2 [A2] */
        .stride_penalty_factor = 2.0,         /* assumed: v2 [A2] */
        .dve_fast16_factor = 2.0,             /* [A3] Vector performance mode: 2x ... */
        .dve_fast16_copy_factor = 4.0,        /* [A3] ... 4x for contiguous SBUF copy/tensor_scalar */
        .sbuf_dve_pool_exclusive = 0,         /* [A3] lifted in v3 */
        .psum_dve_act_exclusive = 0,          /* [A3] lifted in v3 */
        .sem_latency_ns = 50.0,               /* assumed, as trn1 */

        .spmd_cores = 2,  /* [LNC] LNC=2, the Trn2 default: two physical NeuronCore-v3 per logical
                             core, sharing one HBM bank and address space */
        .dma_engines = 16,                    /* [A3][DMA] */
        .dma_queues = 16,                     /* [DMA] */
        .dma_engine_gbps = 23.0,              /* [DMAbw] 23 B/ns per engine, 368 GB/s per core */
        .dma_latency_ns = 1300.0,             /* [DMAbw] */
        .dma_trigger_ns = 8.0, /* [DMA] a trn2 profile's DMA trigger instruction (DMA_DIRECT2D) takes
                                  8 ns on its engine; assumed the same for the Sync engine's triggers
                                  of precomputed descriptors [NEFF]. Hardware DGE takes ~600 ns per
                                  DMA instruction [A3][DGE]: set 600 to model it */
        .dma_trigger_in_order = 0,            /* assumed, as trn1 */
        .dma_eff_half_bytes = 256.0,          /* assumed, as trn1 */
        .dma_transpose_efficiency = 0.9,      /* [A3] HBM-to-SBUF DMA transpose: up to 90% of a copy */
        .hbm_gbps = 375.0,                    /* [A3] 3 TB/s per device of 8 cores (derived) */
        .host_gbps = 16.0,                    /* [PM] assumed unchanged */
        .launch_startup_ns = 1300.0,          /* assumed, as trn1 */
        .launch_teardown_ns = 1300.0,         /* assumed, as trn1 */
    },
};

const nk_arch *nk__arch_get(const char *name)
{
    if (!name || !*name)
        name = "trn1";
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
        if (!strcmp(targets[i].name, name))
            return &targets[i];
    return 0;
}

/* Where each built-in value comes from, per target (trn1, trn2): the keys of
 * docs/timing-model.md's sources; "carried" is trn1's value kept for trn2
 * where the trn2 guide [A3] does not revise it (the reasons are in the
 * constants table of docs/timing-model.md). */
static const struct {
    const char *key, *src[2];
} sources[] = {
    {"partitions", {"[A2]", "[A3]"}},
    {"sbuf_partition_bytes", {"[A2]", "[A3]"}},
    {"sbuf_reserved_bytes", {"[ALLOC]", "carried [ALLOC]"}},
    {"psum_partition_bytes", {"[A2]", "[A3]"}},
    {"psum_bank_bytes", {"[A2]", "[A3]"}},
    {"psum_banks", {"[A2]", "[A3]"}},
    {"tile_align", {"assumed", "assumed"}},
    {"default_bufs", {"assumed", "assumed"}},
    {"vector_fmax_sbuf", {"[A2]", "carried [A2]"}},
    {"vector_fmax_psum", {"[A2]", "carried [A2]"}},
    {"gemm_stationary_fmax", {"[TS]", "[TS]"}},
    {"gemm_moving_fmax", {"[TS]", "[TS]"}},
    {"psum_fmax", {"[TS][A2]", "[TS][A3]"}},
    {"pe_transpose_max", {"[ISA]", "[ISA]"}},
    {"dve_transpose_max", {"[ISA][A2]", "[ISA]"}},
    {"bn_stats_fmax", {"[ISA][TS]", "[ISA][TS]"}},
    {"pe_ghz", {"[A2]", "[A3]"}},
    {"dve_ghz", {"[A2]", "[A3]"}},
    {"act_ghz", {"[A2]", "[A3]"}},
    {"pool_ghz", {"[A2]", "[A3]"}},
    {"pe_mm_init_cycles", {"[A2][PG]", "carried [A2]"}},
    {"pe_fp32_factor", {"[A2]", "[A3]"}},
    {"pe_fp32_transpose_factor", {"[A2]", "[A3]"}},
    {"pe_ls_speedup", {"[A2][PG]", "carried [A2]"}},
    {"min_ii_cycles", {"[ISA-old][ISA-sel]", "carried [ISA-sel]"}},
    {"static_overhead_cycles", {"[A2][PG]", "carried [A2]"}},
    {"sram_access_cycles", {"[A2]", "carried [A2]"}},
    {"pool_fixed_cycles", {"[ISA-old]", "carried [ISA-old]"}},
    {"stride_penalty_bytes", {"[A2]", "carried [A2]"}},
    {"stride_penalty_factor", {"[A2]", "carried [A2]"}},
    {"dve_fast16_factor", {"[A3] (v3 only)", "[A3]"}},
    {"dve_fast16_copy_factor", {"[A3] (v3 only)", "[A3]"}},
    {"sbuf_dve_pool_exclusive", {"[A2]", "[A3]"}},
    {"psum_dve_act_exclusive", {"[A2]", "[A3]"}},
    {"sem_latency_ns", {"assumed", "assumed"}},
    {"spmd_cores", {"[LNC]", "[LNC]"}},
    {"dma_engines", {"[A2][DMA]", "[A3][DMA]"}},
    {"dma_queues", {"[DMA]", "[DMA]"}},
    {"dma_engine_gbps", {"[DMAbw]", "[DMAbw]"}},
    {"dma_latency_ns", {"[DMAbw]", "[DMAbw]"}},
    {"dma_trigger_ns", {"as trn2 [DMA]", "[DMA]"}},
    {"dma_trigger_in_order", {"assumed", "assumed"}},
    {"dma_eff_half_bytes", {"assumed [DMAbw]", "assumed [DMAbw]"}},
    {"dma_transpose_efficiency", {"assumed", "[A3]"}},
    {"hbm_gbps", {"[A2] derived", "[A3] derived"}},
    {"host_gbps", {"[PM]", "carried [PM]"}},
    {"launch_startup_ns", {"assumed", "assumed"}},
    {"launch_teardown_ns", {"assumed", "assumed"}},
};

const char *nk__arch_source(const char *target, const char *key)
{
    int t = target && !strcmp(target, "trn2") ? 1 : target && !strcmp(target, "trn1") ? 0 : -1;
    if (t < 0 || !key)
        return NULL;
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++)
        if (!strcmp(sources[i].key, key))
            return sources[i].src[t];
    return NULL;
}
