/*
 * trace.h - the tracing context shared by the tracer's files.
 */
#ifndef NK_TRACE_H
#define NK_TRACE_H

#include "nkint.h"
#include "sched/alloc.h"

#define NK_MAX_LOOP_DEPTH 16
#define NK_MAX_LOOP_BUFS 32 /* buffers per tile of an affine loop */
#define NK__MEM_SCALAR 3    /* nk_tensor.mem of a scalar argument's handle */

typedef struct nk_frame {
    uint32_t loop;   /* loop instance + 1 */
    int64_t i, n;
    int kind, bufs;
    nk_iterstart *its; /* iteration starts, handed to the loop record at exit */
    uint32_t nits, cap_its;
} nk_frame;

/* A memset of zeros not yet touched by anything else (trace/assign.c). */
typedef struct nk_znode {
    uint32_t instr, next; /* next: 1 + pool index, 0 = end */
} nk_znode;

/* Tracing state of one buffer (not part of the program). */
typedef struct nk_bufstate {
    uint32_t iter;   /* iteration of its innermost loop when it was allocated */
    uint32_t born;   /* instructions recorded before it was allocated */
    uint32_t zero;   /* its pending zero memsets: 1 + index into zpool, 0 = none */
    uint32_t moved;  /* 1 + loc index where nk_assign moved its value into another tile; 0 otherwise */
} nk_bufstate;

#define NK_CALL_CACHE 16
#define NK_LAY_CACHE 32

struct nk_ctx {
    nk_program *p;
    const nk_arch *arch;
    int status;
    char err[512];
    uint32_t cap_instrs, cap_bufs, cap_locs, cap_files, cap_loops, cap_outs;
    /* (file pointer, line) -> loc index; open addressing */
    struct lockey { const char *file; int line; uint32_t idx; } *lochash;
    uint32_t lochash_cap, lochash_n;
    nk_frame frames[NK_MAX_LOOP_DEPTH];
    int depth, overflow;
    nk_bufstate *bs;        /* per buffer (cap_bufs entries) */
    nk_loopalloc *la;       /* per loop instance (cap_loops entries) */
    uint8_t *dead;          /* per instruction: folded away, removed at the end */
    uint32_t cap_dead, cap_bs, cap_la;
    uint32_t nacc;          /* instructions accounted for in bs */
    nk_znode *zpool;
    uint32_t nz, cap_z;
    double *scalars;        /* scalar arguments' values, by argument index */
    uint32_t cap_cdata;     /* entries of p->cdata */
    nk_tensor rng_seed;     /* the seed tile of the last nl.random_seed (buf 0: none) */
    double rng_draws;       /* random numbers drawn by dropouts since then */
    int nargs;
    /* SPMD: the instance being traced and its grid indices */
    uint32_t inst;
    int32_t pid[NK_MAX_GRID];
    int in_kernel;          /* the kernel function is running (arguments are made) */
    uint32_t *hbm0;         /* HBM tensors instance 0 created, in order */
    uint32_t nhbm0, cap_hbm0;
    uint32_t hbm_seq;       /* HBM tensors the current instance created so far */
    int ret_seq;            /* outputs the current instance returned so far */
    nk_loc last;            /* the last source location the tracer was given */
    int64_t max_instrs, max_bytes; /* nk_options' bounds (defaults filled in) */
    /* sequences (nk_launch): the segment instructions go to, the kernel
     * being launched and where its nk_return values go */
    uint32_t seg;           /* current segment */
    int seg_driver_pending; /* the caller's own code after a launch: opens a segment at its next instruction */
    int in_launch;
    nk_tensor *launch_outs;
    int launch_max, launch_n;
    uint32_t cap_segs;      /* entries of p->seg_name / seg_loc */
    uint32_t driver_loc;    /* the calling kernel's segment location */
    /* API calls instructions name (p->calls): those found lately, by pointer
     * (a kernel's loop body alternates between a few: direct-mapped) */
    struct callkey { const char *call; uint16_t idx; } call_cache[NK_CALL_CACHE];
    /* operands' layouts interned lately (a loop body's tiles have a few):
     * direct-mapped, checked field by field */
    struct laykey { nk_layout l; uint32_t lay; } lay_cache[NK_LAY_CACHE];
};

/* Grows *ptr (an array of *cap elements of elem bytes) to hold need,
 * zeroing the new elements; -1 when out of memory. */
int nk__grow(void **ptr, uint32_t *cap, uint32_t need, size_t elem);
/* The same without zeroing, for arrays whose users set each element as
 * they take it (the records and buffers: zeroing up to half again as many
 * as a large program ends with touched pages the trim gives back). */
int nk__grow_raw(void **ptr, uint32_t *cap, uint32_t need, size_t elem);
/* Records the first error (later ones are dropped); returns status. */
int nk__fail(nk_ctx *nc, nk_loc loc, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
uint32_t nk__loc(nk_ctx *nc, nk_loc loc);
/* The last source location recorded (an instruction, a tensor, a loop):
 * where a kernel that crashes got to. A plain read, safe in a signal
 * handler. */
nk_loc nk__last_loc(const nk_ctx *nc);
/* A new instruction at loc (zeroed except loc and loop); NULL on OOM. */
nk_instr *nk__emit(nk_ctx *nc, nk_loc loc, int op, int engine);
/* Sets the third source / second output of the instruction just emitted
 * (held in the program's side table, within the trace's memory bound);
 * nonzero after failing the trace at loc. */
int nk__emit_src2(nk_ctx *nc, nk_loc loc, nk_instr *in, nk_tensor t);
/* Sets in's scalar operand k (0: imm0, 1: imm1) or its affine expression,
 * in p->xarg (an entry only once one is not zero), counted against
 * nk_options.max_trace_bytes; fails at loc. */
int nk__emit_imm(nk_ctx *nc, nk_loc loc, nk_instr *in, int k, double v);
int nk__emit_aff(nk_ctx *nc, nk_loc loc, nk_instr *in, nk_affine a);
int nk__emit_dst2(nk_ctx *nc, nk_loc loc, nk_instr *in, nk_tensor t);
/* Sets *o, an operand of the instruction just emitted (dst, src[0],
 * src[1]), to t, its layout interned within the trace's memory bound;
 * nonzero after failing the trace at loc. */
int nk__emit_opnd(nk_ctx *nc, nk_loc loc, nk_opnd *o, nk_tensor t);
/* Inside a launched kernel of a sequence (nk_launch)? */
static inline int nk__in_launch(const nk_ctx *nc) { return nc->in_launch; }
/* A new on-chip tile; returns an invalid tensor on error. */
nk_tensor nk__tile(nk_ctx *nc, nk_loc loc, const char *opname, nk_buffer mem, const int64_t *shape,
                   int ndim, nk_dtype dt);
/* A tile array: block axes before the partition axis at pdim (shape in the
 * kernel's order). */
nk_tensor nk__tile_array(nk_ctx *nc, nk_loc loc, const char *opname, nk_buffer mem, const int64_t *shape,
                         int ndim, nk_dtype dt, int pdim);
int nk__parse_pdim(nk_ctx *nc, nk_loc loc, const char *op, nk_shape *shape, nk_buffer mem);
static inline nk_bufinfo *nk__buf(nk_ctx *nc, nk_tensor t) { return &nc->p->bufs[t.buf]; }
/* "file:line" of a buffer's allocation. */
void nk__buf_where(nk_ctx *nc, uint32_t buf, char *out, size_t n);
/* If a memset of zeros wrote exactly dst and nothing touched it since,
 * drops that memset and returns 1: the caller's matmul starts the
 * accumulation group instead of adding to zeros. Out of memory, it fails the
 * trace (nc->status; the caller returns) rather than keep the memset, which
 * would compile to a different program. */
int nk__take_zero(nk_ctx *nc, nk_loc loc, nk_tensor dst);
/* The product of n dims, or -1 when one is negative or it overflows int64. */
int64_t nk__dims_product(const int64_t *d, int n);

#endif
