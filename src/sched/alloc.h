/*
 * alloc.h - SBUF/PSUM allocation of a traced program by liveness.
 *
 * The tracer records tiles without addresses; this pass gives each one an
 * address once the whole program is known, as neuronx-cc does: a tile holds
 * its bytes from its first use to its last, and space is reused after that.
 * A tile allocated in an affine loop with B buffers also holds its bytes
 * until iteration i + B of that loop begins, so B consecutive iterations
 * touch different addresses and can overlap. Buffer counts are chosen
 * program-wide: the target's default for every affine loop that did not ask
 * for a count of its own, then, while the program does not fit, one fewer
 * for the loop (every instance of it) whose tiles hold the most bytes where
 * it overflows. When one buffer per tile still does not fit in SBUF, tiles are
 * spilled to HBM and reloaded before their next use (a store and a load
 * marked NK_IF_SPILL), the tile whose next use is farthest first.
 */
#ifndef NK_SCHED_ALLOC_H
#define NK_SCHED_ALLOC_H

#include "nkint.h"

/* The instruction index at which iteration `iter` of a loop began. Kept
 * sparse: an iteration that emitted nothing begins where the next one does,
 * so the tracer replaces its entry with the next iteration's. */
typedef struct nk_iterstart {
    uint32_t iter, start;
} nk_iterstart;

/* What the tracer knows of one loop instance. */
typedef struct nk_loopalloc {
    nk_iterstart *its; /* ascending iter */
    uint32_t nits;
    uint32_t end;      /* instructions recorded when the loop ended */
    uint8_t explicit_bufs; /* the kernel chose the buffer count */
} nk_loopalloc;

typedef struct nk_alloc_info {
    nk_loopalloc *loops;      /* p->nloops entries, by loop instance - 1 (spills move their starts) */
    const uint32_t *buf_iter; /* p->nbufs entries: iteration of the buffer's loop at allocation */
} nk_alloc_info;

/* Assigns every on-chip buffer's addr (and slot, nslots), sets the loops'
 * final buffer counts and p->sbuf_peak / psum_peak, inserting spills where
 * SBUF runs short (new instructions and buffers). NK_ECAPACITY with
 * "file:line: message" in err when the program cannot fit even so (PSUM,
 * or tiles that one instruction needs at once): the message names the line
 * at the peak and the largest tiles live there. */
int nk__allocate(nk_program *p, const nk_alloc_info *ai, char *err, size_t errlen);

#endif
