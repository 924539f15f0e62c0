/*
 * model.h - the timing model's cost formulas, shared by the simulation
 * (timing.c) and the formulas (cost.c). Internal to src/timing.
 */
#ifndef NK_TIMING_MODEL_H
#define NK_TIMING_MODEL_H

#include "nkint.h"

/* What one compute instruction costs on its engine, in ns.
 *
 * Vector/Scalar/GpSimd: a fixed stage (static overhead: issue and read
 * access start) that overlaps the previous instruction's streaming when the
 * two are independent, then the streaming stage (the initiation interval of
 * the legacy cost table), then the write access before readers see the output.
 * Tensor engine: LoadStationary, then MultiplyMoving, then the write. */
typedef struct nk_cost {
    double fixed_ns;  /* static overhead before streaming */
    double stream_ns; /* engine busy streaming (MM for the Tensor engine) */
    double write_ns;  /* from the end of streaming until readers see the output */
    double ls_ns;     /* Tensor engine: LoadStationary */
    uint8_t sbuf, psum; /* the instruction accesses SBUF / PSUM (port conflicts) */
} nk_cost;

/* Cost of compute instruction in on target a; NK_EINVAL for an instruction
 * the model does not know (a DMA, or an op on an engine that cannot run it). */
int nk__time_cost(const nk_arch *a, const nk_program *p, const nk_instr *in, nk_cost *c);

/* Legacy cost-table cycles of a Vector/Scalar/GpSimd instruction (the
 * streaming stage, before the stride penalty and performance modes). */
double nk__time_table_cycles(const nk_arch *a, const nk_program *p, const nk_instr *in);

/* How a DMA instruction splits into descriptors. */
typedef struct nk_dma_plan {
    uint32_t partitions;    /* SBUF partitions moved (rows of an HBM-to-HBM copy) */
    uint32_t engines;       /* descriptors: one per engine used */
    uint64_t part_bytes;    /* bytes per partition */
    uint64_t chunk_bytes;   /* contiguous bytes per DMA buffer */
    double efficiency;      /* of the engines' bandwidth, from chunk_bytes */
    uint8_t hbm_sides;      /* ends in HBM (0 SBUF to SBUF, 1 load/store, 2 HBM to HBM):
                               the bytes pass the shared HBM bandwidth that many times */
} nk_dma_plan;

int nk__time_dma_plan(const nk_arch *a, const nk_program *p, const nk_instr *in, nk_dma_plan *plan);
#endif
