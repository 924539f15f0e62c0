/*
 * trace.h - the tracing context shared by the tracer's files.
 */
#ifndef NK_TRACE_H
#define NK_TRACE_H

#include "nkint.h"

#define NK_MAX_LOOP_DEPTH 16
#define NK_MAX_LOOP_BUFS 32 /* buffers per tile of an affine loop */

typedef struct nk_site {
    int64_t base;       /* address of slot 0 */
    int64_t slot_bytes; /* bytes per partition per slot */
    int nslots;
    int mem;
    uint32_t owner[NK_MAX_LOOP_BUFS]; /* the tile now in each slot (buffer id) */
} nk_site;

typedef struct nk_frame {
    uint32_t loop;   /* loop instance + 1 */
    int64_t i, n;
    int kind, bufs;
    int64_t mark[3]; /* allocator tops at loop entry */
    nk_site *sites;  /* allocation sites of the body, in order */
    int nsites, cursor;
    uint32_t cap_sites;
} nk_frame;

struct nk_ctx {
    nk_program *p;
    const nk_arch *arch;
    int status;
    char err[512];
    uint32_t cap_instrs, cap_bufs, cap_locs, cap_files, cap_loops, cap_outs;
    /* (file pointer, line) -> loc index; open addressing */
    struct lockey { const char *file; int line; uint32_t idx; } *lochash;
    uint32_t lochash_cap, lochash_n;
    int64_t top[3], cap[3]; /* allocator per memory (index nk_buffer) */
    nk_frame frames[NK_MAX_LOOP_DEPTH];
    int depth, overflow;
    /* per buffer: a later iteration's tile took its slot, so its memory no
     * longer holds its values (cap_stale entries) */
    uint8_t *stale;
    uint32_t cap_stale;
};

/* Records the first error (later ones are dropped); returns status. */
int nk__fail(nk_ctx *nc, nk_loc loc, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
uint32_t nk__loc(nk_ctx *nc, nk_loc loc);
/* A new instruction at loc (zeroed except loc and loop); NULL on OOM. */
nk_instr *nk__emit(nk_ctx *nc, nk_loc loc, int op, int engine);
/* A new on-chip tile; returns an invalid tensor on error. */
nk_tensor nk__tile(nk_ctx *nc, nk_loc loc, const char *opname, nk_buffer mem, const int64_t *shape,
                   int ndim, nk_dtype dt);
static inline nk_bufinfo *nk__buf(nk_ctx *nc, nk_tensor t) { return &nc->p->bufs[t.buf]; }
/* "file:line" of a buffer's allocation. */
void nk__buf_where(nk_ctx *nc, uint32_t buf, char *out, size_t n);
/* The product of n dims, or -1 when one is negative or it overflows int64. */
int64_t nk__dims_product(const int64_t *d, int n);

#endif
