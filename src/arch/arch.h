/*
 * arch.h - target tables: the hardware facts every stage reads.
 *
 * Each constant cites its source in arch.c (keys in docs/timing-model.md) or
 * says "assumed" and why. Tracing reads the capacities; the timing model reads
 * the rest.
 */
#ifndef NK_ARCH_H
#define NK_ARCH_H

#include <stdint.h>

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
} nk_arch;

/* The built-in target of that name, or NULL. */
const nk_arch *nk_arch_get(const char *name);

#endif
