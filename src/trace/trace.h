/*
 * trace.h - the tracing context shared by the tracer's files.
 */
#ifndef NK_TRACE_H
#define NK_TRACE_H

#include "nkint.h"

#define NK_MAX_LOOP_DEPTH 16

typedef struct nk_site {
    int64_t base;       /* address of slot 0 */
    int64_t slot_bytes; /* bytes per partition per slot */
    int nslots;
    int mem;
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

#endif
