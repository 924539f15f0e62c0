/*
 * nkint.h - nklab's internal data model: the compiled program.
 *
 * A program is what tracing produces and every later stage reads: buffers
 * (HBM tensors and on-chip tiles with their addresses), instructions with
 * their operands (access patterns), engine, DMA queue, source location and
 * dependencies. It holds no input values, so it can be cached, serialized and
 * timed without executing anything.
 */
#ifndef NKINT_H
#define NKINT_H

#include "nklab.h"
#include "arch/arch.h"
#include "core/nkassert.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NK_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Instruction opcodes. The engine is a separate field. */
typedef enum nk_op {
    NK_OP_LOAD = 0,      /* DMA HBM -> SBUF */
    NK_OP_STORE,         /* DMA SBUF -> HBM */
    NK_OP_MATMUL,        /* PE: LoadStationary + MultiplyMoving */
    NK_OP_TRANSPOSE,     /* PE (identity matmul) or Vector (32x32 blocks) */
    NK_OP_ACTIVATION,    /* ACT: f(in*scale+bias) [+ reduce] */
    NK_OP_TENSOR_TENSOR, /* DVE/POOL: a op b */
    NK_OP_TENSOR_SCALAR, /* DVE/ACT/POOL: (in op0 s0) op1 s1 */
    NK_OP_TENSOR_REDUCE, /* DVE: reduce along free axes */
    NK_OP_TENSOR_COPY,   /* DVE/ACT/POOL: copy with cast */
    NK_OP_MEMSET,        /* DVE/POOL: fill */
    NK_OP_IOTA,          /* POOL: affine index values */
    NK_OP_AFFINE_SELECT, /* POOL: select by affine predicate */
    NK_OP_BN_STATS,      /* DVE: count, mean, variance*count of even and odd elements */
    NK_OP_BN_AGGR,       /* DVE: mean and variance from bn_stats tuples */
    NK_OP_TENSOR_TENSOR_SCAN,   /* DVE: r[i] = (data0[i] op0 r[i-1]) op1 data1[i] */
    NK_OP_SCALAR_TENSOR_TENSOR, /* DVE: (data op0 operand0) op1 operand1 */
    NK_OP_TENSOR_SCALAR_REDUCE, /* DVE: data op0 operand0, and its reduction along the free axes */
    NK_OP_SELECT,        /* DVE: predicate ? on_true : on_false (nl.where) */
    NK_OP_DROPOUT,       /* DVE: zero elements with probability prob */
    NK_OP_DMA_COPY,      /* DMA SBUF -> SBUF or HBM -> HBM */
    NK_OP_LOAD_TRANSPOSE,/* DMA HBM [F, P] -> SBUF [P, F] */
    NK_OP_COUNT
} nk_op;

const char *nk__op_name(int op);

/* Instruction flags. */
enum {
    NK_IF_ACCUMULATE = 1u << 0, /* matmul: add into PSUM */
    NK_IF_REV0 = 1u << 1,       /* tensor_scalar op0: operand op in */
    NK_IF_REV1 = 1u << 2,
    NK_IF_OPND0_T = 1u << 3,    /* tensor_scalar operand0 / activation bias is src[1] */
    NK_IF_OPND1_T = 1u << 4,    /* tensor_scalar operand1 / activation scale is src[2] */
    NK_IF_REDUCE = 1u << 5,     /* activation: dst2 holds the add-reduction */
    NK_IF_KEEPDIMS = 1u << 6,
    NK_IF_SPILL = 1u << 7       /* load/store: spill or reload the compile step inserted */
};

/* An operand's layout: everything of an access pattern but where it starts.
 * A program's operands share a handful of them (every tile of a loop has
 * the same shape and strides), so the program holds each once, in p->lays,
 * and the operands name theirs by index. */
typedef struct nk_layout {
    uint8_t dtype;   /* nk_dtype */
    uint8_t ndim;
    uint8_t mem;     /* nk_buffer */
    uint8_t pdim;    /* tile arrays: block axes before the partition axis */
    int32_t shape[NK_MAXDIM];
    int64_t stride[NK_MAXDIM];
} nk_layout;

/* An operand as the program holds it: an nk_tensor with its layout
 * interned. lay is an index + 1 into p->lays, 0 the all-zero layout, so an
 * all-zero nk_opnd is the absent operand (as an all-zero nk_tensor is).
 * Read it with the nk__opnd_* accessors or nk__opnd_tensor; set it with
 * nk__opnd_set (which interns). */
typedef struct nk_opnd {
    uint32_t buf;        /* buffer id; 0 = no operand */
    uint32_t lay : 24;   /* a program has at most NK_MAX_LAYOUTS layouts */
    uint32_t part0 : 8;  /* first partition (tiles) */
    int64_t off;         /* element offset (within a partition for tiles) */
} nk_opnd;
#define NK_MAX_LAYOUTS ((1u << 24) - 1)

/* One instruction. The record holds dst, src[0] and src[1]; the third
 * source and the reduce output, which few instructions have, live in the
 * program's side table p->xop (read them with nk__src and nk__dst2), so
 * that a program of a million instructions does not carry 48 unused bytes
 * in each. */
typedef struct nk_instr {
    uint8_t op;      /* nk_op */
    uint8_t engine;  /* nk_engine */
    uint8_t func;    /* nk_act for ACTIVATION */
    uint8_t alu0;    /* nk_alu */
    uint8_t alu1;
    uint8_t cmp;     /* nk_cmp for AFFINE_SELECT */
    int8_t axis;     /* TENSOR_REDUCE: free axis, -1 = all */
    uint8_t nsrc;    /* source operands used in src[] */
    uint16_t flags;
    uint16_t queue;  /* DMA queue id (DMA engine instructions) */
    uint16_t inst;   /* SPMD program instance (0 without a grid); p->inst_core says its core */
    uint16_t seg;    /* kernel of a sequence (nk_launch): index into p->seg_name; 0 without launches */
    uint32_t loc;    /* index into program locs */
    uint32_t loop;   /* innermost loop instance + 1; 0 = none */
    uint32_t iter;   /* iteration of that loop */
    uint32_t dep_off, ndep; /* into program deps: instructions this one waits for */
    uint16_t call;          /* the API call that produced it: p->calls[call - 1]; 0 = not recorded
                               (fits the padding before xsrc2) */
    uint32_t xsrc2;         /* the third source: p->xop[xsrc2 - 1]; 0 = none */
    uint32_t xdst2;         /* the second output (activation, tensor_scalar_reduce: the
                               reduction): p->xop[xdst2 - 1]; 0 = none */
    uint32_t xarg;          /* the scalars and the affine expression: p->xarg[xarg - 1]; 0 = all
                               zero (read them with nk__imm0, nk__imm1, nk__aff) */
    nk_opnd dst;
    nk_opnd src[2];         /* src[2] is nk__src(p, in, 2) */
} nk_instr;
/* Every pass over a program (scheduling, timing, encoding) reads the whole
 * record once per instruction: keep it from growing unnoticed (the size on
 * 64-bit targets). */
_Static_assert(sizeof(void *) != 8 || sizeof(nk_instr) == 104, "nk_instr is 104 bytes");
_Static_assert(sizeof(nk_opnd) == 16 || sizeof(void *) != 8, "nk_opnd is 16 bytes");

/* An instruction's scalar operands and affine expression, which DMAs,
 * matmuls and most copies do not have: outside the record, in p->xarg. */
typedef struct nk_xarg {
    double imm0, imm1; /* scalar operands, memset value, scale, on_false */
    nk_affine aff;     /* IOTA / AFFINE_SELECT expression */
} nk_xarg;

/* What an HBM buffer is to the kernel. */
enum { NK_ROLE_INPUT = 0, NK_ROLE_OUTPUT, NK_ROLE_SCRATCH, NK_ROLE_TILE,
       NK_ROLE_CONSTANT /* HBM data the program carries (nl.shared_constant): read-only */ };

typedef struct nk_bufinfo {
    uint8_t mem;    /* nk_buffer */
    uint8_t dtype;
    uint8_t ndim;
    uint8_t role;
    int32_t index;  /* input or output index; -1 otherwise */
    int64_t shape[NK_MAXDIM];
    int64_t addr;   /* tiles: byte address within a partition */
    int64_t bytes;  /* tiles: bytes per partition; HBM: total bytes */
    uint32_t loc;   /* where it was allocated */
    uint32_t loop;  /* loop instance + 1 it was allocated in; 0 = kernel scope */
    uint16_t slot, nslots; /* rotation slot of a multi-buffered tile */
    uint8_t written;       /* tracing: has any instruction written it */
    uint8_t spill;         /* 1: the HBM copy of a spilled tile; 2: a tile reloaded from one */
    uint16_t inst;         /* tiles: the SPMD program instance that owns it (its core's memory) */
} nk_bufinfo;

typedef struct nk_locinfo {
    uint32_t file; /* index into files */
    int32_t line;
} nk_locinfo;

typedef struct nk_loopinfo {
    uint32_t loc;
    uint32_t parent; /* loop instance + 1, 0 = none */
    int64_t trip;
    uint8_t kind;    /* nk_loop_kind */
    uint8_t bufs;
    uint16_t depth;
    uint8_t explicit_bufs; /* bufs given by the kernel (NK_AFFINE_RANGE_BUFS), not the default;
                              known when traced, 0 in a program read from a file */
} nk_loopinfo;

struct nk_program {
    char kernel[64];
    char target[16];      /* arch->name */
    int bufs_default;
    int threads;          /* host threads its compile and timing may use: nk_options.threads
                             (0: the default, nk__threads); not saved in files */
    const nk_arch *arch;  /* the target table: &table, except in programs built by hand */
    nk_instr *instrs;
    uint32_t ninstr;
    nk_bufinfo *bufs; /* bufs[0] is unused: buffer ids start at 1 */
    uint32_t nbufs;
    nk_locinfo *locs;
    uint32_t nlocs;
    char **files;
    uint32_t nfiles;
    nk_loopinfo *loops;
    uint32_t nloops;
    uint32_t *deps;
    uint32_t ndeps;
    nk_opnd *xop;         /* the operands outside the records (nk_instr xsrc2, xdst2), in no
                             particular order: entries of removed instructions may stay */
    uint32_t nxop, cap_xop;
    nk_xarg *xarg;        /* the scalars outside the records (nk_instr xarg), the same way */
    uint32_t nxarg, cap_xarg;
    nk_layout *lays;      /* the operands' layouts, each once (nk_opnd lay - 1); never the
                             all-zero one */
    uint32_t nlays, cap_lays;
    uint32_t *lay_hash;   /* open addressing over lays (index + 1, 0 empty), lay_hcap a power
                             of two; NULL until nk__lay_intern needs it (copies and files
                             start without one) */
    uint32_t lay_hcap;
    int ninputs, noutputs;
    uint32_t *input_buf;  /* buffer id per input */
    uint32_t *output_buf; /* buffer id per output */
    uint32_t *hbm_list;   /* ids of every HBM buffer (inputs, outputs, scratch, constants) */
    uint8_t **cdata;      /* per buffer: a constant's bytes (bytes of its bufinfo), else NULL;
                             NULL when the program has no constant */
    uint32_t nhbm;
    int64_t sbuf_peak, psum_peak; /* bytes per partition at the high-water mark */
    uint8_t sched;        /* NK_SCHED_LIST or NK_SCHED_TRACE_ORDER: what the kernel asked for */
    uint8_t sched_policy; /* the order kept: 0 trace order, 1 earliest start, 2 critical path */
    double trace_order_ns;/* list schedules: the device time trace order would take (-1: not timed) */
    /* SPMD: the launch grid and where each instance runs. Instances are
     * traced one after another and their instructions stay contiguous in
     * program order (instance k before k + 1), whatever the schedule. */
    uint8_t grid_ndim;    /* 0: no grid */
    int32_t grid[NK_MAX_GRID];
    int32_t grid_nc[NK_MAX_GRID];
    uint32_t ninst;       /* program instances (>= 1) */
    uint8_t *inst_core;   /* per instance: its physical NeuronCore (NULL: all on core 0) */
    uint32_t ncores;      /* cores used: 1 + the largest inst_core */
    /* Kernels composed into one program (nk_launch): segment k is the
     * contiguous run of instructions of one kernel call (or of the calling
     * kernel's own code between calls), launched after segment k - 1 has
     * completed. nseg <= 1: a single kernel. */
    uint32_t nseg;
    char (*seg_name)[64]; /* per segment: the kernel's name */
    uint32_t *seg_loc;    /* per segment: the location of its nk_launch (the caller's first line for 0) */
    /* Names from the kernel's declaration: in_name[i] is input i's parameter
     * name (NULL: none given, shown as "in<i>"); calls[k] an API call
     * ("nl.broadcast_to") some instruction's `call` names. */
    char **in_name;       /* ninputs entries, or NULL */
    char **calls;
    uint32_t ncalls;
    int owned;            /* 1 when loaded from a file (nk_program_free frees it) */
    int view;             /* 1: a captured profile's view of another program: the
                             arrays are that program's, freeing it frees the struct */
    nk_arch table;        /* the program's own copy of its target table (a
                             built-in or a modified one), so it never depends
                             on memory its caller may free */
};

/* ---- operands: src[k] and dst2 wherever they are held */

/* An absent operand and the all-zero layout (lay 0). */
extern const nk_opnd nk__no_opnd;
extern const nk_layout nk__no_layout;
/* o's layout: fields of an operand without copying the 72 bytes of an
 * nk_tensor (dependency derivation, the cost model and the executor read
 * them in their inner loops). */
static inline const nk_layout *nk__lay(const nk_program *p, const nk_opnd *o)
{
    return o->lay ? &p->lays[o->lay - 1] : &nk__no_layout;
}
static inline int nk__opnd_mem(const nk_program *p, const nk_opnd *o) { return nk__lay(p, o)->mem; }
static inline int nk__opnd_dtype(const nk_program *p, const nk_opnd *o) { return nk__lay(p, o)->dtype; }
static inline int nk__opnd_ndim(const nk_program *p, const nk_opnd *o) { return nk__lay(p, o)->ndim; }
static inline const int32_t *nk__opnd_shape(const nk_program *p, const nk_opnd *o) { return nk__lay(p, o)->shape; }
static inline const int64_t *nk__opnd_stride(const nk_program *p, const nk_opnd *o) { return nk__lay(p, o)->stride; }
/* The operand as an access pattern. */
static inline nk_tensor nk__opnd_tensor(const nk_program *p, const nk_opnd *o)
{
    const nk_layout *l = nk__lay(p, o);
    nk_tensor t;
    t.buf = o->buf;
    t.dtype = l->dtype;
    t.ndim = l->ndim;
    t.mem = l->mem;
    t.part0 = o->part0;
    t.pdim = l->pdim;
    t.off = o->off;
    for (int d = 0; d < NK_MAXDIM; d++) {
        t.shape[d] = l->shape[d];
        t.stride[d] = l->stride[d];
    }
    return t;
}
/* *o: t as an operand whose layout is lay (t's, interned); field by field,
 * so the record's padding stays as it was (zero). */
static inline void nk__opnd_put(nk_opnd *o, const nk_tensor *t, uint32_t lay)
{
    o->buf = t->buf;
    o->lay = lay;
    o->off = t->off;
    o->part0 = t->part0;
}
/* t's layout, all of it (unused dimensions included, so two access patterns
 * intern alike exactly when their nk_tensor fields agree). */
static inline nk_layout nk__layout_of(const nk_tensor *t)
{
    nk_layout l;
    memset(&l, 0, sizeof l);
    l.dtype = t->dtype;
    l.ndim = t->ndim;
    l.mem = t->mem;
    l.pdim = t->pdim;
    for (int d = 0; d < NK_MAXDIM; d++) {
        l.shape[d] = t->shape[d];
        l.stride[d] = t->stride[d];
    }
    return l;
}
/* The index + 1 of l in p->lays, appended when new (core/core.c); 0 for the
 * all-zero layout. UINT32_MAX when out of memory. */
uint32_t nk__lay_intern(nk_program *p, const nk_layout *l);
/* The same without adding: UINT32_MAX when l is not in the table. */
uint32_t nk__lay_lookup(const nk_program *p, const nk_layout *l);
/* Bytes p->lays and its hash table would take after interning one more
 * layout: the tracer counts them against its memory bound. */
uint64_t nk__lays_bytes_after_one_more(const nk_program *p);
/* Sets *o to t, interning t's layout in p: every writer of an operand goes
 * through it (or copies an nk_opnd of the same program). NK_ENOMEM when the
 * table cannot grow (*o unchanged). */
int nk__opnd_set(nk_program *p, nk_opnd *o, const nk_tensor *t);

/* Source k (0..2) of in; absent: nk__no_opnd. */
static inline const nk_opnd *nk__src(const nk_program *p, const nk_instr *in, int k)
{
    if (k < 2)
        return &in->src[k];
    return in->xsrc2 ? &p->xop[in->xsrc2 - 1] : &nk__no_opnd;
}
/* The second output; absent: nk__no_opnd. */
static inline const nk_opnd *nk__dst2(const nk_program *p, const nk_instr *in)
{
    return in->xdst2 ? &p->xop[in->xdst2 - 1] : &nk__no_opnd;
}
/* The same, to modify in place: NULL when absent (an absent operand has no
 * storage; give it one with nk__set_src2 / nk__set_dst2). */
static inline nk_opnd *nk__src_w(nk_program *p, nk_instr *in, int k)
{
    if (k < 2)
        return &in->src[k];
    return in->xsrc2 ? &p->xop[in->xsrc2 - 1] : NULL;
}
static inline nk_opnd *nk__dst2_w(nk_program *p, nk_instr *in)
{
    return in->xdst2 ? &p->xop[in->xdst2 - 1] : NULL;
}
/* The scalars and the affine expression of in (zero when it has none). */
extern const nk_xarg nk__no_xarg;
static inline const nk_xarg *nk__xarg(const nk_program *p, const nk_instr *in)
{
    return in->xarg ? &p->xarg[in->xarg - 1] : &nk__no_xarg;
}
static inline double nk__imm0(const nk_program *p, const nk_instr *in) { return nk__xarg(p, in)->imm0; }
static inline double nk__imm1(const nk_program *p, const nk_instr *in) { return nk__xarg(p, in)->imm1; }
static inline const nk_affine *nk__aff(const nk_program *p, const nk_instr *in) { return &nk__xarg(p, in)->aff; }
/* in's entry to write, appended (zero) when it has none; NULL when p->xarg
 * cannot grow. */
nk_xarg *nk__xarg_w(nk_program *p, nk_instr *in);
/* Stores *x as in's scalars: no entry when they are all zero bits and in
 * has none (core/core.c). NK_ENOMEM when p->xarg cannot grow. */
int nk__set_xarg(nk_program *p, nk_instr *in, const nk_xarg *x);
/* Are x's scalars and expression all zero bits (what no entry reads as)? */
int nk__xarg_is_zero(const nk_xarg *x);

/* Every operand in slot order (dst, dst2, src[0..2], as NK_OPND_* numbers
 * them); absent ones nk__no_opnd. */
static inline void nk__operands(const nk_program *p, const nk_instr *in, const nk_opnd *ts[5])
{
    ts[0] = &in->dst;
    ts[1] = nk__dst2(p, in);
    ts[2] = &in->src[0];
    ts[3] = &in->src[1];
    ts[4] = nk__src(p, in, 2);
}
/* Writable, NULL for the absent ones. */
static inline void nk__operands_w(nk_program *p, nk_instr *in, nk_opnd *ts[5])
{
    ts[0] = &in->dst;
    ts[1] = nk__dst2_w(p, in);
    ts[2] = &in->src[0];
    ts[3] = &in->src[1];
    ts[4] = nk__src_w(p, in, 2);
}
/* Sets in's third source / second output to *t (core/core.c), a new entry
 * of p->xop unless it has one; NK_ENOMEM when p->xop or p->lays cannot grow. */
int nk__set_src2(nk_program *p, nk_instr *in, const nk_tensor *t);
int nk__set_dst2(nk_program *p, nk_instr *in, const nk_tensor *t);
/* The same with an operand of p: stores *o at *x (in->xsrc2 or in->xdst2). */
int nk__set_xop(nk_program *p, uint32_t *x, const nk_opnd *o);

/* The physical NeuronCore an instruction runs on, and a tile's core. */
static inline uint32_t nk__inst_core(const nk_program *p, uint32_t inst)
{
    return p->inst_core && inst < p->ninst ? p->inst_core[inst] : 0;
}
static inline uint32_t nk__instr_core(const nk_program *p, const nk_instr *in) { return nk__inst_core(p, in->inst); }
/* Launch units: what runs one after another on a core. SPMD instances, or
 * the kernels of a sequence (all on core 0); a program has one or the other. */
static inline uint32_t nk__nunits(const nk_program *p)
{
    return p->nseg > 1 ? p->nseg : p->ninst ? p->ninst : 1;
}
static inline uint32_t nk__unit_of(const nk_program *p, const nk_instr *in) { return p->nseg > 1 ? in->seg : in->inst; }
static inline uint32_t nk__unit_core(const nk_program *p, uint32_t u) { return p->nseg > 1 ? 0 : nk__inst_core(p, u); }

/* The innermost dimension of t that moves (size > 1; the partition axis of
 * a tile does not count), -1 if none: where "contiguous" and "strided" are
 * read by the cost table and the timing model. */
static inline int nk__inner_dim(const nk_tensor *t)
{
    int first = t->mem == NK_SHARED_HBM ? 0 : 1;
    for (int d = t->ndim - 1; d >= first; d--)
        if (t->shape[d] > 1)
            return d;
    return -1;
}
/* Stride 1 element along that dimension (or nothing moves). */
static inline int nk__inner_contiguous(const nk_tensor *t)
{
    int d = nk__inner_dim(t);
    return d < 0 || t->stride[d] == 1;
}
/* The same of a layout. */
static inline int nk__lay_inner_dim(const nk_layout *l)
{
    int first = l->mem == NK_SHARED_HBM ? 0 : 1;
    for (int d = l->ndim - 1; d >= first; d--)
        if (l->shape[d] > 1)
            return d;
    return -1;
}
static inline int nk__lay_inner_contiguous(const nk_layout *l)
{
    int d = nk__lay_inner_dim(l);
    return d < 0 || l->stride[d] == 1;
}

/* ---- tracer (src/trace) */

/* Traces fn with arguments of the given shapes and dtypes into a new program.
 * On failure returns a negative status and writes "file:line: message". */
int nk__trace(const char *name, nk_kernel_fn fn, const nk_array *args, int nargs,
             const nk_options *opts, nk_program **out, char *err, size_t errlen);
/* What a kernel's declaration says of its parameters (nk_kernel_set_params):
 * where it is declared (file NULL: nowhere known) and a name per argument
 * (entries may be NULL), used when the call passes exactly nnames arguments. */
typedef struct nk__kparams {
    nk_loc decl;
    char **names;
    int nnames;
} nk__kparams;
/* nk__trace with the kernel's parameters (kp may be NULL). */
int nk__trace_params(const char *name, nk_kernel_fn fn, const nk__kparams *kp, const nk_array *args, int nargs,
                     const nk_options *opts, nk_program **out, char *err, size_t errlen);

/* ---- scheduler (src/sched) */

/* Fills DMA queues and dependencies (RAW, WAR, WAW on memory overlap); with
 * NK_SCHED_LIST first reorders the instructions by the list scheduler
 * (sched/listsched.c). */
int nk__schedule(nk_program *p, int mode);
/* Asserts a compiled program's invariants (sched/check.c; nothing without
 * NK_DEBUG): dependencies on earlier instructions only and in range,
 * operand, input and output buffers in range, tiles inside the peaks. */
void nk__program_assert(const nk_program *p);
/* The device time on arch (NULL: its own target) p would have after
 * nk__schedule(copy of p, mode), p left as it is and no copy made: the
 * what-if of a rule that asks how fast another schedule would be. */
int nk__schedule_total(const nk_program *p, int mode, const nk_arch *arch, double *total_ns);

/* ---- timing model, internal (src/timing): the device time alone */

/* A program in another order without moving its records: position k holds
 * instruction order[k] of p->instrs, waits for the positions
 * deps[dep_off[k] .. dep_off[k] + ndep[k]) and uses DMA queue queue[k]. The
 * scheduler times its candidate orders through one. */
typedef struct nk__deps {
    uint32_t *dep_off, *ndep, *deps;
    uint32_t ndeps;
} nk__deps;
typedef struct nk__order_view {
    const uint32_t *order;
    const uint32_t *dep_off, *ndep, *deps;
    uint32_t ndeps;
    const uint16_t *queue;
    /* NULL (the arrays are only read), or the caller's (malloc'd) arrays
     * dep_off, ndep and deps point to: nk__time_total then frees them once
     * it has built its successor lists, and before it returns puts the same
     * dependencies back into *own, rebuilt from those lists (its arrays are
     * NULL only when that failed, and it returns NK_ENOMEM; deps is NULL
     * without dependencies, as derived): the graph is not held beside the
     * run. After the call the view's own dep_off, ndep and deps may point
     * to freed memory: only *own holds them. */
    nk__deps *own;
} nk__order_view;

/* The device time of p on arch (NULL: its own target), the total_ns of
 * nk__time_program's timeline bit for bit, or of the order v describes
 * (NULL: p as it is), without recording a timeline: about half the time of
 * nk__time_program and none of its memory, for a caller that needs only the
 * total (the scheduler's candidates, a what-if re-timing). */
int nk__time_total(const nk_program *p, const nk__order_view *v, const nk_arch *arch, double *total_ns);

/* Threads the library's independent pieces of work may use (timing the
 * scheduler's candidates, a timeline's counters and event order): requested
 * (a program's `threads`, from nk_options.threads) when positive, else the
 * processors online; at most 4 (1: all on the calling thread). The results
 * never depend on it. The library reads no environment variable: the CLI and
 * the Python front-end pass NK_THREADS in nk_options.threads. */
int nk__threads(int requested);
/* The dependency search's buckets (src/sched/sched.c): of on-chip
 * addresses, 2^shift bytes of a partition each; of an HBM tensor,
 * 2^hbm_row_shift of its rows each (at least: a tall tensor's are larger,
 * 4096 buckets at most); accesses over more than span of them
 * are searched with every access. Tests change them to check that the
 * buckets find what one list per memory does. */
extern uint32_t nk__sched_bucket_shift, nk__sched_bucket_span, nk__sched_hbm_row_shift;
/* Programs of more instructions than this keep the first list policy's
 * order without timing the candidates (src/sched/sched.c); tests lower it
 * to take that path with small programs. */
extern uint32_t nk__sched_timed_max;
/* Programs of this many instructions or more, timing their candidates on
 * two threads, have the first list policy's graph derived as the list pass
 * writes its order (sched.c); tests lower it to take that path with small
 * programs, UINT32_MAX never takes it. */
extern uint32_t nk__sched_follow_min;
/* Programs of this many buffers or more have their tiles' addresses and
 * cores read from a table of their own while dependencies are derived
 * (sched.c); tests set it to 0 and UINT32_MAX to take both ways. */
extern uint32_t nk__sched_table_min;

/* ---- profiles, internal (src/profile) */

/* nk_profile_capture without the copy of p: the profile's program is a view
 * of p's arrays, so p must outlive the profile (nk_profile_free leaves p
 * alone). For a caller that captures, writes and frees while it holds p
 * (`nklab profile`): a large program is not held twice. */
int nk__profile_capture_view(const nk_program *p, const nk_arch *arch, nk_profile **out);

/* ---- executor (src/exec) */

/* Runs the program; hbm[b] is the host memory of HBM buffer b (NULL for tiles). */
int nk__execute(const nk_program *p, void *const *hbm);

/* ---- runtime (src/rt) */

/* Binds a run's arguments: checks them against the program (count, dtype,
 * shape) and fills hbm[b] (p->nbufs entries) for every HBM buffer b: inputs
 * and outputs point at the caller's arrays, scratch tensors are allocated
 * zeroed. nk_program_run is bind, nk__execute, unbind. */
int nk__program_bind(const nk_program *p, const nk_array *args, int nargs, nk_array *outs, int nouts,
                     void **hbm);
/* Frees the scratch tensors of a successful bind. */
void nk__program_unbind(const nk_program *p, void **hbm);

/* ---- shared helpers (src/core) */

/* Large arrays (src/core/bigmem.c): blocks of NK_BIG_MIN bytes or more on
 * transparent huge pages, where the first write of every 4 KiB page would
 * otherwise take a page fault. Allocated by the C library, freed by free();
 * a smaller block is allocated as by the C library alone.
 *   nk__big_fixed, nk__big_fixed0 (zeroed): a block that is never resized.
 *     Huge pages for each 2 MiB its bytes fill, small ones for the rest:
 *     the same memory resident as malloc's.
 *   nk__big_malloc, nk__big_calloc, nk__big_realloc: a block that may be
 *     resized (realloc moves it without copying). Up to one huge page past
 *     its last byte written may be resident.
 *   nk__big_grow: an array grown by doubling as it is filled. A block of at
 *     least n bytes, old itself while n fits what it has room for: from
 *     NK_BIG_MIN on, room for many times n (address space; only what is
 *     written is resident, up to a huge page past the last byte), so that
 *     it grows in place. nk__big_fit(p, n) gives the room past n back
 *     (p itself if the C library cannot); call it when the array is
 *     complete, or up to a huge page past its end stays resident. */
#define NK_BIG_MIN ((size_t)1 << 20)
/*   nk__big_bounded: a block sized to a bound and filled from its start,
 *     of which a program may use a small part (a span per DMA descriptor,
 *     the spans of whole DMAs written). Its first NK_BIG_BOUNDED_SMALL
 *     bytes are on small pages, the rest on huge pages (where it is a
 *     mapping of its own, as the others): resident, only what is written
 *     and, past that head, up to a huge page beyond it (at most half as
 *     much again). Shrink it with realloc or nk__big_fit. */
#define NK_BIG_BOUNDED_SMALL ((size_t)4 << 20)
void *nk__big_bounded(size_t n);
void *nk__big_fixed(size_t n);
void *nk__big_fixed0(size_t k, size_t n);
void *nk__big_realloc(void *p, size_t n);
static inline void *nk__big_malloc(size_t n) { return nk__big_realloc(NULL, n); }
void *nk__big_calloc(size_t k, size_t n);
void *nk__big_grow(void *old, size_t n);
void *nk__big_fit(void *p, size_t n);

/* Arrays of one phase packed in one block (taken in turn, zeroed, each at a
 * multiple of 64 bytes), so that together they fill huge pages that each
 * of them alone, under a megabyte, would not: a block of the heap is on
 * small pages, and memory the heap gives back between two phases faults
 * again in the next. nk__pack_open(k, size) reserves size bytes, the sum
 * of nk__pack_size of the arrays (only what is written is resident; a
 * bound will do; 0: no pack). nk__pack_take gives the next array (zeroed:
 * the block is fresh), or a block of its own (nk__big_fixed, or
 * nk__big_fixed0 if zero is set) once the pack is full, where there is no
 * pack, or where huge pages are not to be had (a sanitizer's allocator then
 * checks every array's bounds);
 * nk__pack_free(k, p) frees p: a packed array's whole pages go back to the
 * system at once, as its own block's would. nk__pack_close frees the block
 * (every array taken from it is gone). NK_ENOMEM from open: nothing held. */
#define NK_PACK_MAX 32
typedef struct nk__pack {
    char *block, *base; /* the block, and its first 64-byte boundary */
    size_t size, used;
    uint32_t n;
    struct { size_t off, len; } at[NK_PACK_MAX];
} nk__pack;
static inline size_t nk__pack_size(size_t n) { return ((n ? n : 1) + 63) & ~(size_t)63; }
int nk__pack_open(nk__pack *k, size_t size);
void *nk__pack_take(nk__pack *k, size_t n, int zero);
void nk__pack_free(nk__pack *k, void *p);
void nk__pack_close(nk__pack *k);
/* Do the functions above ask for huge pages here? (glibc's allocator, not
 * a sanitizer's, and 2 MiB transparent huge pages enabled, always or on
 * advice, and not disabled for the process) */
int nk__big_active(void);

void nk__program_destroy(nk_program *p);
/* Element count of a view and helpers on access patterns. */
int64_t nk__numel(const nk_tensor *t);
int64_t nk__free_size(const nk_tensor *t); /* elements per partition (tiles) */
/* The same of an operand, read in place. */
static inline int64_t nk__opnd_free_size(const nk_program *p, const nk_opnd *o)
{
    const nk_layout *l = nk__lay(p, o);
    int64_t n = 1;
    for (int i = 1; i < l->ndim; i++)
        n *= l->shape[i];
    return n;
}
static inline int64_t nk__opnd_numel(const nk_program *p, const nk_opnd *o)
{
    const nk_layout *l = nk__lay(p, o);
    int64_t n = 1;
    for (int i = 0; i < l->ndim; i++)
        n *= l->shape[i];
    return n;
}
/* Smallest and largest element offsets touched by a view (excluding part0
 * for tiles), inclusive. */
void nk__extent(const nk_tensor *t, int64_t *lo, int64_t *hi);
/* The memory a view occupies, as a partition range x byte range in one
 * memory: SBUF and PSUM by address, HBM tensors by buffer (offsets within it;
 * one partition). Dependencies (src/sched) and operand matching (src/timing)
 * compare accesses by these. */
/* Region keys: SBUF and PSUM of each core, then one per HBM buffer. */
#define NK_MAX_CORES 16
#define NK_REGION_KEY_HBM0 (2 * NK_MAX_CORES)
static inline uint32_t nk__onchip_key(int mem_is_psum, uint32_t core) { return 2 * core + (mem_is_psum ? 1u : 0u); }
typedef struct nk__region {
    uint32_t key;   /* nk__onchip_key(psum?, core) for tiles, NK_REGION_KEY_HBM0 + buffer id for HBM */
    int32_t p0, p1; /* partitions [p0, p1) */
    int64_t b0, b1; /* bytes [b0, b1) */
} nk__region;
/* The region of an HBM access pattern (the elements [lo, hi] of buffer
 * buf, es bytes each, with layout t): its rows x the bytes within a row. */
nk__region nk__region_hbm(const nk_program *p, uint32_t buf, int64_t lo, int64_t hi, int64_t es, const nk_layout *t);
/* The region of the access pattern (buf, off, part0) with layout t. Inline
 * (the dependency search and the timing model's edges take one for every
 * operand they compare); HBM's, rarer and longer, out of line. */
static inline nk__region nk__region_at(const nk_program *p, uint32_t buf, int64_t off, int part0,
                                       const nk_layout *t)
{
    int64_t lo = off, hi = off, es = nk_dtype_size(t->dtype);
    int hbm = t->mem == NK_SHARED_HBM;
    for (int i = hbm ? 0 : 1; i < t->ndim; i++) /* as nk__extent */
        if (t->shape[i] > 0)
            hi += (int64_t)(t->shape[i] - 1) * t->stride[i];
    if (hbm)
        return nk__region_hbm(p, buf, lo, hi, es, t);
    int64_t base = p->bufs[buf].addr;
    nk__region r;
    r.key = nk__onchip_key(t->mem == NK_PSUM, nk__inst_core(p, p->bufs[buf].inst));
    r.p0 = part0;
    r.p1 = part0 + t->shape[0];
    r.b0 = base + lo * es;
    r.b1 = base + (hi + 1) * es;
    return r;
}
static inline nk__region nk__region_of(const nk_program *p, const nk_opnd *o)
{
    return nk__region_at(p, o->buf, o->off, o->part0, nk__lay(p, o));
}
nk__region nk__region_of_tensor(const nk_program *p, const nk_tensor *t);
/* Do two regions share a byte of the same memory? (inline: dependency
 * search calls it for every live access) */
static inline int nk__regions_overlap(const nk__region *a, const nk__region *b)
{
    return a->key == b->key && a->p0 < b->p1 && b->p0 < a->p1 && a->b0 < b->b1 && b->b0 < a->b1;
}
/* Operand matching, by memory region: does instruction w write memory that
 * t covers, does r read anything w writes? The timing model decides with
 * them which operand a dependency feeds (a matmul's LoadStationary waits
 * only for writes into src[0], its stationary operand); the exports draw
 * dependency arrows to the part that consumes them. */
int nk__writes_into(const nk_program *p, const nk_instr *w, const nk_opnd *t);
int nk__reads_output(const nk_program *p, const nk_instr *r, const nk_instr *w);
/* Does r's LoadStationary (rather than its MultiplyMoving) wait for w? Only
 * for a Tensor-engine r, w on another engine, w writing r's src[0]. */
static inline int nk__feeds_stationary(const nk_program *p, const nk_instr *r, const nk_instr *w)
{
    return r->engine == NK_ENGINE_TENSOR && w->engine != r->engine && nk__writes_into(p, w, &r->src[0]);
}
/* NK__DEFINE_SORT(name, type, less): static void name(type *a, size_t n,
 * type *tmp) sorts a[0..n) by less(const type *x, const type *y), stable,
 * with tmp room for n elements: a bottom-up merge sort over insertion-sorted
 * runs of 16 that skips merges of runs already in order, so nearly sorted
 * input (a timeline's events, in the order they were committed) costs about
 * one pass. The comparison is inlined, which qsort's callback is not. */
#define NK__DEFINE_SORT(name, type, less)                                                              \
    static void name(type *a, size_t n, type *tmp)                                                     \
    {                                                                                                  \
        const size_t run = 16;                                                                         \
        for (size_t b = 0; b < n; b += run) {                                                          \
            size_t e = b + run < n ? b + run : n;                                                      \
            for (size_t i = b + 1; i < e; i++) {                                                       \
                if (!less(&a[i], &a[i - 1]))                                                           \
                    continue;                                                                          \
                type x = a[i];                                                                         \
                size_t j = i;                                                                          \
                for (; j > b && less(&x, &a[j - 1]); j--)                                              \
                    a[j] = a[j - 1];                                                                   \
                a[j] = x;                                                                              \
            }                                                                                          \
        }                                                                                              \
        type *src = a, *dst = tmp;                                                                     \
        for (size_t w = run; w < n; w *= 2) {                                                          \
            for (size_t b = 0; b < n; b += 2 * w) {                                                    \
                size_t m = b + w < n ? b + w : n, e = b + 2 * w < n ? b + 2 * w : n;                   \
                if (m >= e || !less(&src[m], &src[m - 1])) {                                           \
                    memcpy(dst + b, src + b, (e - b) * sizeof *src);                                   \
                    continue;                                                                          \
                }                                                                                      \
                size_t i = b, j = m, k = b;                                                            \
                while (i < m && j < e)                                                                 \
                    dst[k++] = less(&src[j], &src[i]) ? src[j++] : src[i++];                           \
                while (i < m)                                                                          \
                    dst[k++] = src[i++];                                                               \
                while (j < e)                                                                          \
                    dst[k++] = src[j++];                                                               \
            }                                                                                          \
            type *t = src;                                                                             \
            src = dst;                                                                                 \
            dst = t;                                                                                   \
        }                                                                                              \
        if (src != a)                                                                                  \
            memcpy(a, src, n * sizeof *a);                                                             \
    }

/* snprintf into a growing buffer. */
typedef struct nk_sbuf_text {
    char *s;
    size_t len, cap;
    int oom;
} nk_text;
void nk__text_printf(nk_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void nk__text_free(nk_text *t);
/* "[128, 512]" */
void nk__format_shape(char *buf, size_t n, const int32_t *shape, int ndim);
void nk__format_ap(char *buf, size_t n, const nk_program *p, const nk_opnd *o);
/* What messages and operand text call HBM buffer b: an input's parameter
 * name when the kernel declared one, else "in0", "out1", "const3", "tmp". */
const char *nk__buf_label(const nk_program *p, uint32_t b, char *buf, size_t n);
/* The API call that produced an instruction ("nl.broadcast_to"), or NULL. */
const char *nk__instr_call(const nk_program *p, const nk_instr *in);
/* May a parameter name or an API call hold c? Printable ASCII without
 * blanks, quotes, backslashes or commas: names go into messages, JSON, CSV
 * and the viewer as they are (the program file's reader checks the same). */
static inline int nk__name_char_ok(char c) { return c >= 0x21 && c <= 0x7e && c != '"' && c != '\\' && c != ','; }
/* Is `call` the instruction `op` itself (nisa.nc_matmul, nk_isa_nc_matmul,
 * nl.load for load) rather than a construct lowered to it? */
int nk__call_is_op(const char *call, const char *op);
/* The construct an instruction was lowered from, when the kernel wrote
 * another call than the instruction: "nl.broadcast_to" (NULL otherwise). */
const char *nk__instr_lowered_from(const nk_program *p, const nk_instr *in);
/* "nc_matmul (lowered from nl.broadcast_to at layernorm.py:31)", or just
 * the op's name when the kernel wrote the instruction itself. */
void nk__format_instr_origin(char *buf, size_t n, const nk_program *p, const nk_instr *in);

#endif
