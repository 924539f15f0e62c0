/*
 * arch.h - target tables: the hardware facts every stage reads.
 *
 * Each constant cites its source in arch.c (keys in docs/timing-model.md) or
 * says "assumed" and why. Tracing reads the capacities; the timing model reads
 * the rest. A modified target can be loaded from a text file (see
 * nk__arch_load_file) to ask "what if" questions of the timing model.
 */
#ifndef NK_ARCH_H
#define NK_ARCH_H

#include <stddef.h>
#include <stdint.h>

#define NK_ARCH_MAX_DMA_ENGINES 64
#define NK_ARCH_MAX_DMA_QUEUES 64
#define NK_MAX_CORES_ARCH 16 /* = NK_MAX_CORES (nkint.h) */

typedef struct nk_arch {
    char name[16];             /* "trn1", "trn2" */
    /* memories */
    int partitions;            /* SBUF/PSUM partitions */
    int64_t sbuf_partition_bytes;  /* physical bytes per SBUF partition */
    int64_t sbuf_reserved_bytes;   /* reserved by the compiler per partition */
    int64_t psum_partition_bytes;
    int64_t psum_bank_bytes;
    int psum_banks;
    int64_t tile_align;        /* SBUF allocation alignment in bytes (assumed) */
    int default_bufs;          /* buffers per tile in affine loops (assumed) */
    int64_t vector_fmax_sbuf;  /* free elements per Vector instruction from SBUF */
    int64_t vector_fmax_psum;  /* ... from PSUM */
    /* tile-size limits of instructions (nl.tile_size and nc_transpose) */
    int64_t gemm_stationary_fmax; /* free size of a matmul's stationary operand */
    int64_t gemm_moving_fmax;     /* free size of a matmul's moving operand */
    int64_t psum_fmax;            /* fp32 elements per PSUM bank per partition */
    int64_t pe_transpose_max;     /* Tensor-engine transpose: at most this x this */
    int64_t dve_transpose_max;    /* Vector-engine transpose: at most this x this */
    int64_t bn_stats_fmax;        /* free elements of one bn_stats input */

    /* clocks, GHz (cycles per ns) */
    double pe_ghz, dve_ghz, act_ghz, pool_ghz;

    /* Tensor engine: matmul = LoadStationary (LS) + MultiplyMoving (MM) */
    int pe_mm_init_cycles;     /* MM_INIT_LATENCY: II floor of an MM with a full stationary */
    double pe_fp32_factor;     /* cost multiplier of fp32 matmuls (quarter speed) */
    double pe_fp32_transpose_factor; /* ... of fp32 transposes on the PE */
    double pe_ls_speedup;      /* fast weight load: LS this much faster than an MM of equal free size */

    /* Vector / Scalar / GpSimd */
    int min_ii_cycles;         /* MIN_II of the legacy cost table */
    int static_overhead_cycles;/* per instruction; overlaps the previous one's streaming if independent */
    int sram_access_cycles;    /* starting an SBUF/PSUM access: the write must land before readers */
    int pool_fixed_cycles;     /* fixed part of iota / affine_select (150 + N) */
    int stride_penalty_bytes;  /* innermost stride above this many bytes ... */
    double stride_penalty_factor; /* ... multiplies the streaming time by this */
    double dve_fast16_factor;  /* Vector 16-bit performance mode (1 = none) */
    double dve_fast16_copy_factor; /* ... for contiguous SBUF copy / tensor_scalar */
    int sbuf_dve_pool_exclusive;   /* Vector and GpSimd cannot access SBUF at once */
    int psum_dve_act_exclusive;    /* Vector and Scalar cannot access PSUM at once */
    double sem_latency_ns;     /* cross-engine semaphore: producer done to consumer start */

    /* DMA and host */
    int spmd_cores;            /* physical NeuronCores an SPMD launch spreads over (the logical core) */
    int dma_engines;           /* per NeuronCore */
    int dma_queues;            /* per DMA engine */
    double dma_engine_gbps;    /* GB/s (bytes per ns) per engine with large buffers */
    double dma_latency_ns;     /* trigger (semaphore) to the DMA starting */
    double dma_trigger_ns;     /* the issuing engine (Sync) busy per DMA trigger instruction;
                                  part of dma_latency_ns, not added to it */
    int dma_trigger_in_order;  /* 1: the Sync engine triggers its DMAs in program order, each
                                  waiting for its DMA's dependencies (no trigger passes one
                                  whose inputs are late); 0: first come first served */
    double dma_eff_half_bytes; /* contiguous bytes per DMA buffer at 50% efficiency */
    double dma_transpose_efficiency; /* DMA transpose unit: share of the bandwidth (0: none) */
    double hbm_gbps;           /* HBM bandwidth available to one NeuronCore */
    double host_gbps;          /* host <-> device link */

    /* kernel launch, per NeuronCore */
    double launch_startup_ns;  /* start notification to the first instruction */
    double launch_teardown_ns; /* last completion to the stop notification */
} nk_arch;

/* The built-in target of that name ("" or NULL: trn1), or NULL. */
const nk_arch *nk__arch_get(const char *name);

/* Loads a target from a text file: a first setting `base = trn1` (or trn2),
 * then `key = value` lines; `#` starts a comment. Keys are the field names of
 * nk_arch (and `name`). Unknown keys, bad values and repeated keys fail with
 * "path:line: message" in err. On failure *arch is unchanged. */
int nk__arch_load_file(const char *path, nk_arch *arch, char *err, size_t errlen);
/* Same, from text already in memory; `where` names it in messages. */
int nk__arch_load_text(const char *text, const char *where, nk_arch *arch, char *err, size_t errlen);
/* The target in the file format above (every key, with its meaning); the
 * caller frees *text. */
int nk__arch_format(const nk_arch *arch, char **text);
/* The same with each value's source appended to its comment ("[A2]",
 * "assumed", "carried [A2]": docs/timing-model.md) where the table is a
 * built-in target's and the value is the built-in one. */
int nk__arch_format_sources(const nk_arch *arch, char **text);
/* The source of built-in target `target`'s value of `key`, or NULL. */
const char *nk__arch_source(const char *target, const char *key);
/* Checks a table as the loader does: a valid name, every field in its
 * key's range, and the relations between fields. NK_EINVAL with a message
 * naming the first bad field. */
int nk__arch_check(const nk_arch *arch, char *err, size_t errlen);

#endif
