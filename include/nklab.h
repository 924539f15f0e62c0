/*
 * nklab.h - write NeuronCore kernels in C with NKI's vocabulary, run them on
 * any Linux machine, time them and profile them.
 *
 * The one public header. Three parts:
 *   1. values: status codes, dtypes, shapes, tensors and index ranges;
 *   2. the kernel API used inside a kernel function (NKI's nl.* and nisa.*);
 *   3. the runtime: kernels, compiled programs, host arrays, running.
 *
 * A kernel is a C function `void k(nk_ctx *nc, const nk_tensor *args, int nargs)`.
 * Calling it with tensor handles records a program (tracing); nothing is
 * computed while tracing. Every kernel-API call takes the tracing context
 * first and is a macro that adds the caller's file:line; the `_at` functions
 * behind the macros take the location explicitly (for other front-ends).
 *
 * Errors inside a kernel are recorded once, with the kernel's file:line, and
 * every later call becomes a no-op returning an invalid tensor, so a kernel
 * needs no error handling of its own. The library never prints or exits.
 */
#ifndef NKLAB_H
#define NKLAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is compiled with -fvisibility=hidden: what this header declares
 * is its API and is exported; every other function stays inside it. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define NK_VERSION "0.1.0"
#define NK_MAXDIM 4   /* dims of a tensor or tile (partition + 3 free) */
#define NK_PMAX 128   /* partitions (nl.tile_size.pmax) */
#define NK_PSUM_FMAX 512          /* fp32 elements per PSUM bank per partition */
#define NK_GEMM_STATIONARY_FMAX 128
#define NK_GEMM_MOVING_FMAX 512

/* ---------------------------------------------------------------- status */

typedef enum nk_status {
    NK_OK = 0,
    NK_EINVAL = -1,     /* invalid argument */
    NK_ENOMEM = -2,     /* out of host memory */
    NK_EIO = -3,        /* file could not be read or written */
    NK_EFORMAT = -4,    /* malformed or truncated file */
    NK_ESHAPE = -5,     /* shape mismatch */
    NK_EDTYPE = -6,     /* dtype mismatch or dtype not supported by the op */
    NK_EPARTITION = -7, /* partition dimension or start partition invalid */
    NK_ECAPACITY = -8,  /* SBUF/PSUM capacity or PSUM bank exceeded */
    NK_EBOUNDS = -9,    /* access outside a tensor */
    NK_EUNINIT = -10,   /* read of a tile never written */
    NK_EMEMORY = -11,   /* operand in a memory the op cannot use */
    NK_ENOTFOUND = -12, /* unknown kernel, target or name */
    NK_ELIMIT = -13,    /* an engine limit (matmul sizes, free size) exceeded */
    NK_ELOOP = -14,     /* loop misuse (break out of a traced loop) */
    NK_EVERSION = -15,  /* file written by an incompatible version */
    NK_ESTATE = -16     /* call not valid in the current state */
} nk_status;

/* A static message for a status code (never NULL). */
const char *nk_strerror(int status);
/* Why this thread's last file write failed: the path as the call named it
 * and the reason, with the system's text for errno ("out/p.nkp: No space
 * left on device", "out: is a directory"). Every writer of the library
 * (programs, profiles, viewer pages, exports) reports there when it returns
 * NK_EIO; so does a run (nk_program_run, nk_call, nk_bench) that could not
 * load OpenBLAS for a matmul or SLEEF for an exp, log, sin, cos or arctan
 * (loaded when the first of them runs). Like errno,
 * it is meaningful right after such a failure only. */
const char *nk_last_error(void);

/* ---------------------------------------------------------------- dtypes */

typedef enum nk_dtype {
    NK_F32 = 0,
    NK_BF16,
    NK_F16,
    NK_FP8_E4M3,   /* IEEE-style e4m3: bias 7, inf/NaN at exponent 15, max 240 */
    NK_FP8_E4M3FN, /* e4m3 "fn": no inf, NaN only S.1111.111, max 448 */
    NK_FP8_E5M2,   /* IEEE-style e5m2: max 57344 */
    NK_I8,
    NK_I16,
    NK_I32,
    NK_U8,
    NK_U16,
    NK_U32,
    NK_DTYPE_COUNT
} nk_dtype;

/* NKI's names for the dtypes. */
#define nk_float32 NK_F32
#define nk_bfloat16 NK_BF16
#define nk_float16 NK_F16
#define nk_float8_e4m3 NK_FP8_E4M3
#define nk_float8_e4m3fn NK_FP8_E4M3FN
#define nk_float8_e5m2 NK_FP8_E5M2
#define nk_int8 NK_I8
#define nk_int16 NK_I16
#define nk_int32 NK_I32
#define nk_uint8 NK_U8
#define nk_uint16 NK_U16
#define nk_uint32 NK_U32

const char *nk_dtype_name(nk_dtype dt);  /* "float32", "bfloat16", ... */
int nk_dtype_size(nk_dtype dt);          /* bytes per element, 0 if invalid */
int nk_dtype_is_float(nk_dtype dt);
/* Parses an NKI dtype name ("float32", "bf16" and "fp32" also accepted). */
int nk_dtype_parse(const char *name, nk_dtype *out);

/* Conversions with the hardware's rounding: round to nearest even, IEEE
 * overflow to inf (saturation to max finite for NK_FP8_E4M3FN's lack of
 * inf is NaN, as in ml_dtypes); integers round to nearest even and saturate,
 * NaN to 0. n elements, contiguous. */
void nk_convert_from_f32(nk_dtype dt, const float *src, void *dst, size_t n);
void nk_convert_to_f32(nk_dtype dt, const void *src, float *dst, size_t n);
float nk_round_f32(nk_dtype dt, float x); /* x rounded through dtype dt */

/* ---------------------------------------------------------------- shapes */

typedef struct nk_shape {
    int n;                    /* number of dims, 1..NK_MAXDIM */
    int64_t d[NK_MAXDIM];
} nk_shape;

#define NK__NARG(...) NK__NARG_(__VA_ARGS__, 4, 3, 2, 1, 0)
#define NK__NARG_(a, b, c, d, n, ...) n
/* NK_SHAPE(250, 512) */
#define NK_SHAPE(...) ((nk_shape){NK__NARG(__VA_ARGS__), {__VA_ARGS__}})
/* nl.par_dim: marks the partition axis of a tile array, whose block axes
 * come before it: NK_SHAPE(8, nk_par_dim(128), 512) is 8 tiles [128, 512]
 * (nl.ndarray((8, nl.par_dim(128), 512), ...)). Encoded as -n; only
 * nk_ndarray and nk_zeros/nk_full read it. */
#define nk_par_dim(n) (-(int64_t)(n))

/* Where tensors live. */
typedef enum nk_buffer {
    NK_SHARED_HBM = 0, /* device memory; kernel inputs and outputs */
    NK_SBUF = 1,       /* state buffer: 128 partitions */
    NK_PSUM = 2        /* partial-sum buffer: 128 partitions, 8 banks */
} nk_buffer;

/*
 * A tensor handle: a view (offset, shape, strides in elements) of an HBM
 * tensor or of an on-chip tile. For tiles axis 0 is the partition axis:
 * part0 is the first partition, stride[0] is 1. Handles are plain values;
 * buf == 0 marks an invalid handle (after an error).
 */
typedef struct nk_tensor {
    uint32_t buf;     /* buffer id within the traced program; 0 = invalid */
    uint8_t dtype;    /* nk_dtype */
    uint8_t ndim;
    uint8_t mem;      /* nk_buffer */
    uint8_t part0;    /* first partition (tiles) */
    uint8_t pdim;     /* tile arrays: block axes before the partition axis (0 for a tile) */
    int64_t off;      /* element offset (within a partition for tiles) */
    int32_t shape[NK_MAXDIM];
    int64_t stride[NK_MAXDIM];
} nk_tensor;

static inline int nk_valid(nk_tensor t) { return t.buf != 0; }

/* An index range for one axis: [start, stop) with step. */
typedef struct nk_range {
    int64_t start, stop, step;
    int64_t limit; /* kind NK_RANGE_MASKED: indices >= limit are masked off */
    int kind;
} nk_range;

enum { NK_RANGE_SLICE = 0, NK_RANGE_ALL = 1, NK_RANGE_INDEX = 2, NK_RANGE_MASKED = 3 };

static inline nk_range nk_r(int64_t start, int64_t stop)
{ nk_range r = {start, stop, 1, 0, NK_RANGE_SLICE}; return r; }
static inline nk_range nk_rs(int64_t start, int64_t stop, int64_t step)
{ nk_range r = {start, stop, step, 0, NK_RANGE_SLICE}; return r; }
/* A single index: the axis is dropped (NKI's integer index). */
static inline nk_range nk_i(int64_t i)
{ nk_range r = {i, i + 1, 1, 0, NK_RANGE_INDEX}; return r; }
/* [start, stop) with indices >= limit masked off: NKI's `mask=(i < limit)`
 * on a partial tile. The view covers [start, min(stop, limit)). */
static inline nk_range nk_rmask(int64_t start, int64_t stop, int64_t limit)
{ nk_range r = {start, stop, 1, limit, NK_RANGE_MASKED}; return r; }
#define NK_ALL ((nk_range){0, 0, 1, 0, NK_RANGE_ALL})

/* ---------------------------------------------------------------- kernels */

typedef struct nk_ctx nk_ctx; /* the tracing context */

typedef struct nk_loc {
    const char *file;
    int line;
    /* the API call the kernel wrote ("nk_matmul", "nl.matmul"; NULL: unknown):
     * error messages name it, with the instruction it lowered to. Like file,
     * a string that stays as it is while the kernel is traced (a literal):
     * the tracer knows it again by its address */
    const char *call;
} nk_loc;
#define NK_HERE ((nk_loc){__FILE__, __LINE__, NULL})
#define NK_CALL(name) ((nk_loc){__FILE__, __LINE__, (name)})

/* The kernel signature: args are the kernel's HBM inputs, in order. */
typedef void (*nk_kernel_fn)(nk_ctx *nc, const nk_tensor *args, int nargs);

/* Engines, named as NKI names them (nki.isa.engine). */
typedef enum nk_engine {
    NK_ENGINE_TENSOR = 0, /* PE: systolic array */
    NK_ENGINE_VECTOR,     /* DVE */
    NK_ENGINE_SCALAR,     /* ACT */
    NK_ENGINE_GPSIMD,     /* POOL */
    NK_ENGINE_SYNC,       /* SP: triggers DMAs */
    NK_ENGINE_DMA,        /* DMA queues (load/store) */
    NK_ENGINE_COUNT,
    NK_ENGINE_DEFAULT = 255 /* let the op choose */
} nk_engine;
const char *nk_engine_name(nk_engine e);

/* Activation functions (nki.language.* / nisa.activation op). */
typedef enum nk_act {
    NK_ACT_COPY = 0, NK_ACT_EXP, NK_ACT_LOG, NK_ACT_SQRT, NK_ACT_RSQRT,
    NK_ACT_TANH, NK_ACT_SIGMOID, NK_ACT_RELU, NK_ACT_GELU,
    NK_ACT_GELU_APPRX_TANH, NK_ACT_SILU, NK_ACT_SQUARE, NK_ACT_ABS,
    NK_ACT_RECIPROCAL, NK_ACT_SIGN, NK_ACT_SOFTPLUS, NK_ACT_ERF, NK_ACT_SIN,
    NK_ACT_COS, NK_ACT_ARCTAN, NK_ACT_MISH,
    NK_ACT_COUNT
} nk_act;
const char *nk_act_name(nk_act f);

/* ALU operators of tensor_tensor, tensor_scalar, tensor_reduce. */
typedef enum nk_alu {
    NK_ALU_BYPASS = 0, /* no operation (second op of tensor_scalar unused) */
    NK_ALU_ADD, NK_ALU_SUBTRACT, NK_ALU_MULTIPLY, NK_ALU_DIVIDE,
    NK_ALU_MAX, NK_ALU_MIN, NK_ALU_POW,
    NK_ALU_IS_EQUAL, NK_ALU_NOT_EQUAL, NK_ALU_IS_GE, NK_ALU_IS_GT,
    NK_ALU_IS_LE, NK_ALU_IS_LT,
    NK_ALU_BITWISE_AND, NK_ALU_BITWISE_OR, NK_ALU_BITWISE_XOR,
    NK_ALU_COUNT
} nk_alu;
const char *nk_alu_name(nk_alu op);

/* Second operand of tensor_scalar / scale and bias of activation: a scalar
 * or a per-partition column vector [P, 1]. */
typedef struct nk_operand {
    int is_tensor;
    float value;
    nk_tensor t;
} nk_operand;
static inline nk_operand nk_imm(float v) { nk_operand o = {0, v, {0}}; return o; }
static inline nk_operand nk_col(nk_tensor t) { nk_operand o = {1, 0.0f, t}; return o; }

/* An affine expression of a tile's indices: c + cp*p + sum cf[i]*f_i, where
 * p is the partition index and f_i the i-th free index. Used by iota and
 * affine_select. */
typedef struct nk_affine {
    int32_t c, cp;
    int32_t cf[NK_MAXDIM - 1];
} nk_affine;

typedef enum nk_cmp { NK_CMP_GE = 0, NK_CMP_GT, NK_CMP_EQ, NK_CMP_NE, NK_CMP_LE, NK_CMP_LT } nk_cmp;

/* ---- tensors, views and outputs */

/* nl.ndarray: a new tensor. In NK_SHARED_HBM it is a device tensor (return
 * it with nk_return to make it a kernel output); in SBUF/PSUM a tile with
 * partition axis 0. Contents undefined until written. */
nk_tensor nk_ndarray_at(nk_ctx *nc, nk_loc loc, nk_shape shape, nk_dtype dt, nk_buffer buf);
/* nl.zeros / nl.full: a new tile (SBUF or PSUM) filled with a value. */
nk_tensor nk_zeros_at(nk_ctx *nc, nk_loc loc, nk_shape shape, nk_dtype dt, nk_buffer buf);
nk_tensor nk_full_at(nk_ctx *nc, nk_loc loc, nk_shape shape, double value, nk_dtype dt, nk_buffer buf);
/* t[ranges...]: a view. Fewer ranges than dims leave the rest whole. On a
 * tile array, integer indices on the block axes pick a tile: nk_ix(nc, t,
 * nk_i(k)) is NKI's t[k]. */
nk_tensor nk_ix_at(nk_ctx *nc, nk_loc loc, nk_tensor t, int n, const nk_range *r);
/* An affine access pattern: NKI's indexing with nl.arange / nl.mgrid
 * expressions (x[i_p, i_f * 4 + j], x[i_f, i_p], ...). The view has ndim
 * axes of the given extents; along source axis d it reads index
 * idx[d].c + sum_k idx[d].a[k] * i_k, where i_k runs over view axis k. On a
 * tile, view axis 0 is the partition axis and must be the source partition
 * axis with coefficient 1 (partitions cannot be strided or permuted); HBM
 * tensors take any pattern. A mask (i_k < n) is a smaller extent. Every
 * index must stay inside the source. */
typedef struct nk_aidx {
    int64_t c;
    int64_t a[NK_MAXDIM];
} nk_aidx;
nk_tensor nk_ap_at(nk_ctx *nc, nk_loc loc, nk_tensor t, int ndim, const int64_t *extent, const nk_aidx *idx);
/* Same elements, new shape (contiguous tensors only; axis 0 kept for tiles). */
nk_tensor nk_reshape_at(nk_ctx *nc, nk_loc loc, nk_tensor t, nk_shape shape);
/* nl.shared_constant: a new HBM tensor holding a copy of value's elements
 * (shape and dtype value's), carried by the program and in place before it
 * runs, as a compiled constant is loaded with the model (not timed). It is
 * read-only. value is copied: it need only live until the call returns. */
struct nk_array;
nk_tensor nk_shared_constant_at(nk_ctx *nc, nk_loc loc, const struct nk_array *value);
/* Marks an HBM tensor as the kernel's next output. */
void nk_return_at(nk_ctx *nc, nk_loc loc, nk_tensor t);
/* The value of a scalar kernel argument: a 0-d array in the call (its value
 * is part of the program's signature, like NKI's Python scalars: another
 * value traces another program). NaN and an error for a tensor argument. */
double nk_scalar_at(nk_ctx *nc, nk_loc loc, nk_tensor arg);

/* ---- SPMD (a launch grid, nk_options.grid): each program instance is traced
 * on its own and asks where it is. Without a grid there is one instance. */
/* nl.program_id(axis): this instance's index along grid axis `axis` (0
 * without a grid). An axis the grid does not have is an error. */
int nk_program_id_at(nk_ctx *nc, nk_loc loc, int axis);
/* nl.num_programs(axis): instances along `axis` (1 without a grid); axis -1:
 * instances of the whole grid. */
int nk_num_programs_at(nk_ctx *nc, nk_loc loc, int axis);
/* nl.program_ndim(): the grid's axes, 0 without a grid. */
int nk_program_ndim(nk_ctx *nc);

/* ---- kernels composed into one device program (nklab's own; NKI has no
 * equivalent): a kernel that launches others is a sequence. nk_launch
 * traces fn(args) as the next kernel of the sequence: its instructions are
 * a segment named `name`, which starts when the previous segment has
 * completed (a kernel boundary); what it returns with nk_return comes back in
 * outs (at most max_outs). A launched kernel may return on-chip tiles, and
 * take them as arguments: the next kernel reads them where they are, with no
 * store to HBM and load back (an nk_load of an on-chip tile in a launched
 * kernel is the tile itself). The liveness allocation spans the sequence, so
 * a handed-off tile keeps its bytes across the boundary. Returns the number
 * of outputs, -1 on error. Not inside loops, not nested, not on a launch
 * grid. */
int nk_launch_at(nk_ctx *nc, nk_loc loc, const char *name, nk_kernel_fn fn, const nk_tensor *args, int nargs,
                 nk_tensor *outs, int max_outs);

/* ---- language-level ops (nl.*): each returns a new SBUF tile unless said */

nk_tensor nk_load_at(nk_ctx *nc, nk_loc loc, nk_tensor src);          /* HBM -> SBUF */
void nk_store_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor value); /* SBUF -> HBM */
nk_tensor nk_copy_at(nk_ctx *nc, nk_loc loc, nk_tensor x, nk_dtype dt);  /* dt cast */
/* A unary activation on the Scalar engine, result in x's dtype. */
nk_tensor nk_unary_at(nk_ctx *nc, nk_loc loc, nk_act f, nk_tensor x);
/* Elementwise binary op with NKI broadcasting: equal shapes, or one side a
 * per-partition column [P, 1] (free-axis broadcast). */
nk_tensor nk_binary_at(nk_ctx *nc, nk_loc loc, nk_alu op, nk_tensor a, nk_tensor b);
/* a op s (or s op a when reverse). */
nk_tensor nk_binary_scalar_at(nk_ctx *nc, nk_loc loc, nk_alu op, nk_tensor a, float s, int reverse);
/* Reduction along free axis `axis` (1..ndim-1; -1 = all free axes). */
nk_tensor nk_reduce_at(nk_ctx *nc, nk_loc loc, nk_alu op, nk_tensor x, int axis, int keepdims);
nk_tensor nk_mean_at(nk_ctx *nc, nk_loc loc, nk_tensor x, int axis, int keepdims);
/* [P, F] -> [F, P] through the Tensor engine (PSUM) and back to SBUF. */
nk_tensor nk_transpose_at(nk_ctx *nc, nk_loc loc, nk_tensor x);
/* x @ y into a new fp32 PSUM tile. x is [M, K], or [K, M] with transpose_x. */
nk_tensor nk_matmul_at(nk_ctx *nc, nk_loc loc, nk_tensor x, nk_tensor y, int transpose_x);
/* acc += x @ y (acc a PSUM tile): accumulation across a K loop. */
void nk_matmul_acc_at(nk_ctx *nc, nk_loc loc, nk_tensor acc, nk_tensor x, nk_tensor y, int transpose_x);
/* [1, F] -> [P, F] (Tensor engine) or [P, 1] -> [P, F] (Vector engine). */
nk_tensor nk_broadcast_at(nk_ctx *nc, nk_loc loc, nk_tensor x, nk_shape shape);
/* A new tile of the given shape holding expr (nl.arange-style index math). */
nk_tensor nk_iota_at(nk_ctx *nc, nk_loc loc, nk_shape shape, nk_affine expr, nk_dtype dt);

/* ---- writes into existing tiles */

/* dst = value (NKI's `t[...] = expr`): when value is the fresh result of the
 * op just traced, that op writes dst directly (and value's handle may no
 * longer be used); otherwise a copy (a store when dst is in HBM, a load when
 * value is). */
void nk_assign_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor value);
/* dst += value (NKI's `res_psum += nl.matmul(...)`): a fresh matmul result
 * accumulates straight into dst (a PSUM tile); otherwise a Vector add. */
void nk_assign_add_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor value);
/* dst = value as a copy, never moving value's result into dst (value's
 * handle stays valid): what a front-end calls when the value is still named
 * elsewhere, where nk_assign would retarget its producer. */
void nk_assign_copy_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor value);
/* nisa.dma_copy(dst=, src=): a DMA between HBM and SBUF (either direction,
 * same shapes), within SBUF or within HBM (the same number of elements, in
 * row-major order); one dtype. */
void nk_dma_copy_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor src);
/* nl.loop_reduce: acc = x op acc (a tensor_tensor into acc), the reduction
 * of x over the iterations of the loop it is called in; acc starts as the
 * kernel initialised it (nk_zeros, or nk_full with op's identity). */
void nk_loop_reduce_at(nk_ctx *nc, nk_loc loc, nk_tensor acc, nk_tensor x, nk_alu op);
/* nl.load_transpose2d: HBM [F, P] (P <= 128) into a new SBUF tile [P, F]. */
nk_tensor nk_load_transpose2d_at(nk_ctx *nc, nk_loc loc, nk_tensor src);

/* ---- ISA-level ops (nisa.*): explicit destination tiles */

/* dst[M, N] (PSUM, fp32) (+)= stationary[K, M]^T @ moving[K, N]. */
void nk_isa_nc_matmul_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor stationary,
                         nk_tensor moving, int accumulate);
/* dst[F, P] = src[P, F]^T. Tensor engine (dst in PSUM) or Vector (<= 32x32). */
void nk_isa_nc_transpose_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor src, nk_engine eng);
/* dst = f(src * scale + bias); optional add-reduction of the result along the
 * free axes into reduce_dst [P, 1] (pass an invalid tensor for none). */
void nk_isa_activation_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_act f, nk_tensor src,
                          nk_operand bias, nk_operand scale, nk_tensor reduce_dst);
void nk_isa_tensor_tensor_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor a, nk_tensor b,
                             nk_alu op, nk_engine eng);
/* dst = (src op0 operand0) op1 operand1; reverse swaps an op's operands. */
void nk_isa_tensor_scalar_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor src,
                             nk_alu op0, nk_operand operand0, int reverse0,
                             nk_alu op1, nk_operand operand1, int reverse1, nk_engine eng);
void nk_isa_tensor_reduce_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor src,
                             nk_alu op, int axis, int keepdims);
void nk_isa_tensor_copy_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor src, nk_engine eng);
void nk_isa_memset_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, double value, nk_engine eng);
void nk_isa_iota_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_affine expr);
/* dst = (pred(p, f) cmp 0) ? on_true : on_false_value. */
void nk_isa_affine_select_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_affine pred, nk_cmp cmp,
                             nk_tensor on_true, float on_false_value);
/* nisa.bn_stats: per partition of data (at most 512 free elements,
 * nl.tile_size.bn_stats_fmax), dst[P, 6] = count, mean and variance*count of
 * the elements at even free positions, then the same of the odd ones. */
void nk_isa_bn_stats_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data);
/* nisa.bn_aggr: dst[P, 2] = mean and (population) variance of the data that
 * bn_stats tuples describe; data holds k tuples of 3 per partition. */
void nk_isa_bn_aggr_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data);
/* nisa.activation_reduce: activation, plus the sum of each partition's
 * results into reduce_res [P, 1]; reduce_op must be NK_ALU_ADD. */
void nk_isa_activation_reduce_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_act f, nk_tensor src, nk_alu reduce_op,
                                 nk_tensor reduce_res, nk_operand bias, nk_operand scale);
/* nisa.tensor_tensor_scan: per partition, along the free elements (row-major),
 * dst[i] = (data0[i] op0 dst[i-1]) op1 data1[i] with dst[-1] = initial, a
 * scalar nk_imm(v) or a [P, 1] tile nk_col(t); reverse0 gives
 * (dst[i-1] op0 data0[i]), reverse1 (data1[i] op1 ...). */
void nk_isa_tensor_tensor_scan_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data0, nk_tensor data1,
                                  nk_operand initial, nk_alu op0, nk_alu op1, int reverse0, int reverse1);
/* nisa.scalar_tensor_tensor: dst = (data op0 operand0) op1 operand1, operand0
 * a scalar or [P, 1] column, operand1 a tile shaped like data; reverse0 /
 * reverse1 swap an operator's operands. */
void nk_isa_scalar_tensor_tensor_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data, nk_alu op0,
                                    nk_operand operand0, nk_alu op1, nk_tensor operand1, int reverse0, int reverse1);
/* nisa.tensor_scalar_reduce: dst = data op0 operand0, and reduce_res [P, 1] =
 * reduce_op (add, multiply, maximum, minimum) of each partition's results. */
void nk_isa_tensor_scalar_reduce_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data, nk_alu op0,
                                    nk_operand operand0, nk_alu reduce_op, nk_tensor reduce_res);
/* nisa.dropout: dst = data with each element zeroed with probability prob
 * (a scalar, or one per partition as a [P, 1] tile); kept elements are not
 * rescaled. The random numbers come from the seed of the last
 * nk_random_seed (docs/kernel-api.md: not the hardware's bits). */
void nk_isa_dropout_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor data, nk_operand prob);
/* nl.random_seed: later dropouts draw from the sequence of this seed, a
 * [1, 1] tile holding a 32-bit value (read by each dropout). */
void nk_random_seed_at(nk_ctx *nc, nk_loc loc, nk_tensor seed);
/* nl.dropout: a new tile, x with each element zeroed with probability rate. */
nk_tensor nk_dropout_at(nk_ctx *nc, nk_loc loc, nk_tensor x, nk_operand rate);
/* nl.where: a new tile, cond != 0 ? x : y elementwise (cond, x, y alike in
 * partitions and free size; the dtype x's and y's promoted); _s: y a value
 * (the dtype x's). */
nk_tensor nk_where_at(nk_ctx *nc, nk_loc loc, nk_tensor cond, nk_tensor x, nk_tensor y);
nk_tensor nk_where_s_at(nk_ctx *nc, nk_loc loc, nk_tensor cond, nk_tensor x, float y);
/* nl.all: a new uint8 tile, 1 where every element along free axis `axis`
 * (-1: all free axes) is nonzero, else 0; the axis is removed. */
nk_tensor nk_all_at(nk_ctx *nc, nk_loc loc, nk_tensor x, int axis);

/* ---- loops: the body is traced once per iteration */

typedef enum nk_loop_kind { NK_LOOP_AFFINE = 0, NK_LOOP_SEQUENTIAL = 1 } nk_loop_kind;
int64_t nk__loop_begin(nk_ctx *nc, nk_loc loc, int64_t n, nk_loop_kind kind, int bufs);
int nk__loop_cond(nk_ctx *nc, int64_t i);
int64_t nk__loop_next(nk_ctx *nc, int64_t i);

/* NK_AFFINE_RANGE(nc, i, n) { ... }: iterations independent; tiles allocated
 * in the body rotate through the target's default number of buffers so
 * iterations can overlap. Do not break or return out of the body. */
#define NK_AFFINE_RANGE(nc, var, n) NK_AFFINE_RANGE_BUFS(nc, var, n, 0)
/* As NK_AFFINE_RANGE with an explicit number of buffers per tile (1 = none). */
#define NK_AFFINE_RANGE_BUFS(nc, var, n, bufs)                                              \
    for (int64_t var = nk__loop_begin((nc), NK_HERE, (n), NK_LOOP_AFFINE, (bufs));          \
         nk__loop_cond((nc), var); var = nk__loop_next((nc), var))
/* Loop-carried dependencies respected; tiles in the body are not rotated. */
#define NK_SEQUENTIAL_RANGE(nc, var, n)                                                     \
    for (int64_t var = nk__loop_begin((nc), NK_HERE, (n), NK_LOOP_SEQUENTIAL, 1);           \
         nk__loop_cond((nc), var); var = nk__loop_next((nc), var))

/* ---- the macros kernels use: same names as NKI, file:line added */

#define NK__NRANGE(...) ((int)(sizeof((nk_range[]){__VA_ARGS__}) / sizeof(nk_range)))
#define nk_ix(nc, t, ...) nk_ix_at((nc), NK_CALL("nk_ix"), (t), NK__NRANGE(__VA_ARGS__), (nk_range[]){__VA_ARGS__})
#define nk_ndarray(nc, shape, dt, buf) nk_ndarray_at((nc), NK_CALL("nk_ndarray"), (shape), (dt), (buf))
#define nk_zeros(nc, shape, dt, buf) nk_zeros_at((nc), NK_CALL("nk_zeros"), (shape), (dt), (buf))
#define nk_full(nc, shape, v, dt, buf) nk_full_at((nc), NK_CALL("nk_full"), (shape), (v), (dt), (buf))
#define nk_reshape(nc, t, shape) nk_reshape_at((nc), NK_CALL("nk_reshape"), (t), (shape))
#define nk_ap(nc, t, ndim, extent, idx) nk_ap_at((nc), NK_CALL("nk_ap"), (t), (ndim), (extent), (idx))
#define nk_return(nc, t) nk_return_at((nc), NK_CALL("nk_return"), (t))
#define nk_scalar(nc, arg) nk_scalar_at((nc), NK_CALL("nk_scalar"), (arg))
#define nk_program_id(nc, axis) nk_program_id_at((nc), NK_CALL("nk_program_id"), (axis))
#define nk_num_programs(nc, axis) nk_num_programs_at((nc), NK_CALL("nk_num_programs"), (axis))
#define nk_launch(nc, name, fn, args, nargs, outs, max_outs) \
    nk_launch_at((nc), NK_CALL("nk_launch"), (name), (fn), (args), (nargs), (outs), (max_outs))
#define nk_shared_constant(nc, value) nk_shared_constant_at((nc), NK_CALL("nk_shared_constant"), (value))
#define nk_load(nc, src) nk_load_at((nc), NK_CALL("nk_load"), (src))
#define nk_assign(nc, dst, v) nk_assign_at((nc), NK_CALL("nk_assign"), (dst), (v))
#define nk_assign_add(nc, dst, v) nk_assign_add_at((nc), NK_CALL("nk_assign_add"), (dst), (v))
#define nk_loop_reduce(nc, acc, x, op) nk_loop_reduce_at((nc), NK_CALL("nk_loop_reduce"), (acc), (x), (op))
#define nk_assign_copy(nc, dst, v) nk_assign_copy_at((nc), NK_CALL("nk_assign_copy"), (dst), (v))
#define nk_dma_copy(nc, dst, src) nk_dma_copy_at((nc), NK_CALL("nk_dma_copy"), (dst), (src))
#define nk_load_transpose2d(nc, src) nk_load_transpose2d_at((nc), NK_CALL("nk_load_transpose2d"), (src))
#define nk_store(nc, dst, v) nk_store_at((nc), NK_CALL("nk_store"), (dst), (v))
#define nk_copy(nc, x, dt) nk_copy_at((nc), NK_CALL("nk_copy"), (x), (dt))
#define nk_exp(nc, x) nk_unary_at((nc), NK_CALL("nk_exp"), NK_ACT_EXP, (x))
#define nk_log(nc, x) nk_unary_at((nc), NK_CALL("nk_log"), NK_ACT_LOG, (x))
#define nk_sqrt(nc, x) nk_unary_at((nc), NK_CALL("nk_sqrt"), NK_ACT_SQRT, (x))
#define nk_rsqrt(nc, x) nk_unary_at((nc), NK_CALL("nk_rsqrt"), NK_ACT_RSQRT, (x))
#define nk_tanh(nc, x) nk_unary_at((nc), NK_CALL("nk_tanh"), NK_ACT_TANH, (x))
#define nk_sigmoid(nc, x) nk_unary_at((nc), NK_CALL("nk_sigmoid"), NK_ACT_SIGMOID, (x))
#define nk_relu(nc, x) nk_unary_at((nc), NK_CALL("nk_relu"), NK_ACT_RELU, (x))
#define nk_gelu(nc, x) nk_unary_at((nc), NK_CALL("nk_gelu"), NK_ACT_GELU, (x))
#define nk_silu(nc, x) nk_unary_at((nc), NK_CALL("nk_silu"), NK_ACT_SILU, (x))
#define nk_square(nc, x) nk_unary_at((nc), NK_CALL("nk_square"), NK_ACT_SQUARE, (x))
#define nk_abs(nc, x) nk_unary_at((nc), NK_CALL("nk_abs"), NK_ACT_ABS, (x))
#define nk_reciprocal(nc, x) nk_unary_at((nc), NK_CALL("nk_reciprocal"), NK_ACT_RECIPROCAL, (x))
#define nk_add(nc, a, b) nk_binary_at((nc), NK_CALL("nk_add"), NK_ALU_ADD, (a), (b))
#define nk_subtract(nc, a, b) nk_binary_at((nc), NK_CALL("nk_subtract"), NK_ALU_SUBTRACT, (a), (b))
#define nk_multiply(nc, a, b) nk_binary_at((nc), NK_CALL("nk_multiply"), NK_ALU_MULTIPLY, (a), (b))
#define nk_divide(nc, a, b) nk_binary_at((nc), NK_CALL("nk_divide"), NK_ALU_DIVIDE, (a), (b))
#define nk_maximum(nc, a, b) nk_binary_at((nc), NK_CALL("nk_maximum"), NK_ALU_MAX, (a), (b))
#define nk_minimum(nc, a, b) nk_binary_at((nc), NK_CALL("nk_minimum"), NK_ALU_MIN, (a), (b))
#define nk_add_s(nc, a, s) nk_binary_scalar_at((nc), NK_CALL("nk_add_s"), NK_ALU_ADD, (a), (s), 0)
#define nk_subtract_s(nc, a, s) nk_binary_scalar_at((nc), NK_CALL("nk_subtract_s"), NK_ALU_SUBTRACT, (a), (s), 0)
#define nk_multiply_s(nc, a, s) nk_binary_scalar_at((nc), NK_CALL("nk_multiply_s"), NK_ALU_MULTIPLY, (a), (s), 0)
#define nk_divide_s(nc, a, s) nk_binary_scalar_at((nc), NK_CALL("nk_divide_s"), NK_ALU_DIVIDE, (a), (s), 0)
#define nk_maximum_s(nc, a, s) nk_binary_scalar_at((nc), NK_CALL("nk_maximum_s"), NK_ALU_MAX, (a), (s), 0)
#define nk_minimum_s(nc, a, s) nk_binary_scalar_at((nc), NK_CALL("nk_minimum_s"), NK_ALU_MIN, (a), (s), 0)
#define nk_sum(nc, x, axis, keep) nk_reduce_at((nc), NK_CALL("nk_sum"), NK_ALU_ADD, (x), (axis), (keep))
#define nk_max(nc, x, axis, keep) nk_reduce_at((nc), NK_CALL("nk_max"), NK_ALU_MAX, (x), (axis), (keep))
#define nk_min(nc, x, axis, keep) nk_reduce_at((nc), NK_CALL("nk_min"), NK_ALU_MIN, (x), (axis), (keep))
#define nk_mean(nc, x, axis, keep) nk_mean_at((nc), NK_CALL("nk_mean"), (x), (axis), (keep))
#define nk_transpose(nc, x) nk_transpose_at((nc), NK_CALL("nk_transpose"), (x))
#define nk_matmul(nc, x, y, tx) nk_matmul_at((nc), NK_CALL("nk_matmul"), (x), (y), (tx))
#define nk_matmul_acc(nc, acc, x, y, tx) nk_matmul_acc_at((nc), NK_CALL("nk_matmul_acc"), (acc), (x), (y), (tx))
#define nk_broadcast(nc, x, shape) nk_broadcast_at((nc), NK_CALL("nk_broadcast"), (x), (shape))
#define nk_iota(nc, shape, expr, dt) nk_iota_at((nc), NK_CALL("nk_iota"), (shape), (expr), (dt))
#define nk_isa_nc_matmul(nc, dst, st, mv, acc) nk_isa_nc_matmul_at((nc), NK_CALL("nk_isa_nc_matmul"), (dst), (st), (mv), (acc))
#define nk_isa_nc_transpose(nc, dst, src, eng) nk_isa_nc_transpose_at((nc), NK_CALL("nk_isa_nc_transpose"), (dst), (src), (eng))
#define nk_isa_activation(nc, dst, f, src, bias, scale, rdst) \
    nk_isa_activation_at((nc), NK_CALL("nk_isa_activation"), (dst), (f), (src), (bias), (scale), (rdst))
#define nk_isa_tensor_tensor(nc, dst, a, b, op) nk_isa_tensor_tensor_at((nc), NK_CALL("nk_isa_tensor_tensor"), (dst), (a), (b), (op), NK_ENGINE_DEFAULT)
#define nk_isa_tensor_scalar(nc, dst, src, op0, o0, r0, op1, o1, r1) \
    nk_isa_tensor_scalar_at((nc), NK_CALL("nk_isa_tensor_scalar"), (dst), (src), (op0), (o0), (r0), (op1), (o1), (r1), NK_ENGINE_DEFAULT)
#define nk_isa_tensor_reduce(nc, dst, src, op, axis, keep) \
    nk_isa_tensor_reduce_at((nc), NK_CALL("nk_isa_tensor_reduce"), (dst), (src), (op), (axis), (keep))
#define nk_isa_tensor_copy(nc, dst, src) nk_isa_tensor_copy_at((nc), NK_CALL("nk_isa_tensor_copy"), (dst), (src), NK_ENGINE_DEFAULT)
#define nk_isa_memset(nc, dst, v) nk_isa_memset_at((nc), NK_CALL("nk_isa_memset"), (dst), (v), NK_ENGINE_DEFAULT)
#define nk_isa_iota(nc, dst, expr) nk_isa_iota_at((nc), NK_CALL("nk_isa_iota"), (dst), (expr))
#define nk_isa_affine_select(nc, dst, pred, cmp, t, f) \
    nk_isa_affine_select_at((nc), NK_CALL("nk_isa_affine_select"), (dst), (pred), (cmp), (t), (f))
#define nk_isa_bn_stats(nc, dst, data) nk_isa_bn_stats_at((nc), NK_CALL("nk_isa_bn_stats"), (dst), (data))
#define nk_isa_bn_aggr(nc, dst, data) nk_isa_bn_aggr_at((nc), NK_CALL("nk_isa_bn_aggr"), (dst), (data))
#define nk_isa_activation_reduce(nc, dst, f, src, rop, rres, bias, scale) \
    nk_isa_activation_reduce_at((nc), NK_CALL("nk_isa_activation_reduce"), (dst), (f), (src), (rop), (rres), (bias), (scale))
#define nk_isa_tensor_tensor_scan(nc, dst, d0, d1, init, op0, op1, r0, r1) \
    nk_isa_tensor_tensor_scan_at((nc), NK_CALL("nk_isa_tensor_tensor_scan"), (dst), (d0), (d1), (init), (op0), (op1), (r0), (r1))
#define nk_isa_scalar_tensor_tensor(nc, dst, data, op0, o0, op1, o1, r0, r1) \
    nk_isa_scalar_tensor_tensor_at((nc), NK_CALL("nk_isa_scalar_tensor_tensor"), (dst), (data), (op0), (o0), (op1), (o1), (r0), (r1))
#define nk_isa_tensor_scalar_reduce(nc, dst, data, op0, o0, rop, rres) \
    nk_isa_tensor_scalar_reduce_at((nc), NK_CALL("nk_isa_tensor_scalar_reduce"), (dst), (data), (op0), (o0), (rop), (rres))
#define nk_isa_dropout(nc, dst, data, prob) nk_isa_dropout_at((nc), NK_CALL("nk_isa_dropout"), (dst), (data), (prob))
#define nk_random_seed(nc, seed) nk_random_seed_at((nc), NK_CALL("nk_random_seed"), (seed))
#define nk_dropout(nc, x, rate) nk_dropout_at((nc), NK_CALL("nk_dropout"), (x), (rate))
#define nk_where(nc, cond, x, y) nk_where_at((nc), NK_CALL("nk_where"), (cond), (x), (y))
#define nk_where_s(nc, cond, x, y) nk_where_s_at((nc), NK_CALL("nk_where_s"), (cond), (x), (y))
#define nk_all(nc, x, axis) nk_all_at((nc), NK_CALL("nk_all"), (x), (axis))
/* No tensor: for optional tensor parameters. */
#define NK_NONE ((nk_tensor){0})

/* ---------------------------------------------------------------- runtime */

/* A host array: C-contiguous data of the given dtype. ndim 0 is a scalar
 * argument: data points to one element (at most 4 bytes wide). */
typedef struct nk_array {
    nk_dtype dtype;
    int ndim;
    int64_t shape[NK_MAXDIM];
    void *data;
} nk_array;

size_t nk_array_numel(const nk_array *a);
size_t nk_array_nbytes(const nk_array *a);
/* Allocates a zeroed array; free with nk_array_free. */
int nk_array_alloc(nk_array *a, nk_dtype dt, int ndim, const int64_t *shape);
void nk_array_free(nk_array *a);

/*
 * Targets: the table of hardware constants that tracing checks against (SBUF
 * and PSUM sizes, partitions, default buffers, ...) and the timing model runs
 * on (clocks, DMA engines and bandwidths, HBM, ...); docs/timing-model.md
 * cites a source for each. The built-in targets are "trn1" and "trn2". A
 * target file changes some of one to ask what-if questions:
 *
 *     # trn1 with twice the DMA and HBM bandwidth
 *     base = trn1
 *     name = trn1-2xbw
 *     dma_engine_gbps = 34
 *     hbm_gbps = 820
 *
 * `base` comes first; every other line sets one key; `#` starts a comment.
 * nk_target_format (`nklab target show trn1`) writes every key with its
 * meaning: a starting file. Tables are plain values, never shared state.
 */
typedef struct nk_arch nk_target;

/* Loads a target file into a new table (free it with nk_target_free).
 * NK_EIO when the file cannot be read; NK_EFORMAT, NK_EINVAL or NK_ENOTFOUND
 * for its contents. err gets "PATH:LINE: message" (or "PATH: message"). */
int nk_target_load(const char *path, nk_target **out, char *err, size_t errlen);
/* The same from text in memory; `where` names it in messages. */
int nk_target_parse(const char *text, const char *where, nk_target **out, char *err, size_t errlen);
/* A built-in table ("trn1", "trn2"; NULL or "" is trn1), or NULL. It belongs
 * to the library: never free it. */
const nk_target *nk_target_builtin(const char *name);
/* Frees a table from nk_target_load or nk_target_parse (NULL and built-in
 * tables are ignored). */
void nk_target_free(nk_target *t);
/* The name programs and profiles show ("trn1", or the file's `name`). */
const char *nk_target_name(const nk_target *t);
/* The table as a target file: `base`, then every key with its value and
 * meaning. The caller frees *text. */
int nk_target_format(const nk_target *t, char **text);

/* Tracing and compiling options; part of the program-cache key. */
#define NK_MAX_GRID 3            /* axes of an SPMD launch grid */
#define NK_MAX_INSTANCES 65535   /* program instances of one launch */

typedef struct nk_options {
    const char *target;  /* "trn1" (default) or "trn2" */
    int default_bufs;    /* buffers per tile in affine loops; 0 = target default */
    /* A target table (nk_target_load) to compile for instead of `target`.
     * Each program compiled with it keeps its own copy, and the program
     * cache tells tables apart by their contents (two tables with the same
     * name and different values never share a program), so the table need
     * only live until nk_kernel_compile (or nk_call, nk_bench) returns. */
    const nk_target *arch;
    /* The order of each engine's instructions: NK_SCHED_LIST (0, the
     * default) lets the compile step's list scheduler reorder independent
     * instructions, as neuronx-cc does with affine_range iterations;
     * NK_SCHED_TRACE_ORDER keeps the order the kernel issued them in. */
    int schedule;
    /* SPMD: the launch grid, NKI's kernel[g0, g1, g2]. grid[k] > 0 is the
     * number of program instances along axis k; the grid has as many axes
     * as leading positive entries (all zero: no grid, one instance). Each
     * instance is traced on its own (nk_program_id tells it where it is)
     * and the instances share the kernel's HBM tensors. */
    int grid[NK_MAX_GRID];
    /* nl.spmd_dim(.., nl.nc(n)) on axis k: grid_nc[k] = n spreads axis k
     * over n physical NeuronCores with the core as its major factor
     * (spmd_dim(nl.nc(n), m): instances i*m .. i*m + m-1 on core i);
     * -n makes the core the minor factor (spmd_dim(m, nl.nc(n)): instance
     * i on core i % n). 0: no annotation (instance k of the grid, in
     * row-major order, runs on core k % the target's spmd_cores). */
    int grid_nc[NK_MAX_GRID];
    /* Bounds on a trace, so that a runaway kernel (a loop of 5e9
     * iterations) fails at the line where it crosses one instead of
     * exhausting the host's memory: the instructions it may record (at most
     * 2^32 - 2), and the bytes of the tracer's records (instructions,
     * tensors and tiles, loops, source locations; about 0.5 KiB to 1 KiB
     * per instruction). 0: NK_DEFAULT_MAX_INSTRUCTIONS and
     * NK_DEFAULT_MAX_TRACE_BYTES. Not part of the program-cache key: a
     * program once traced is reused whatever the bounds. */
    int64_t max_instructions;
    int64_t max_trace_bytes;
    /* Host threads the compile step (timing the scheduler's candidate
     * orders) and the timing of the programs it compiles may use: 0 (the
     * default) is the processors online, at most 4; 1 keeps everything on
     * the calling thread. Results never depend on it. The library reads no
     * environment variable: `nklab` and the Python front-end set it from
     * NK_THREADS. Not part of the program-cache key (a cached program keeps
     * the value it was compiled with). */
    int threads;
} nk_options;

#define NK_DEFAULT_MAX_INSTRUCTIONS 4000000ll   /* a whole run takes about 1 KiB and 2 us per instruction */
#define NK_DEFAULT_MAX_TRACE_BYTES (8ll << 30) /* 8 GiB */

enum { NK_SCHED_LIST = 0, NK_SCHED_TRACE_ORDER = 1 };

typedef struct nk_program nk_program; /* compiled: immutable, value-independent */
typedef struct nk_kernel nk_kernel;   /* a kernel function and its program cache */

nk_kernel *nk_kernel_new(const char *name, nk_kernel_fn fn);
void nk_kernel_free(nk_kernel *k);
const char *nk_kernel_name(const nk_kernel *k);
/* The kernel's parameters as its source declares them: decl is where the
 * kernel function is defined (file and line, as its instructions' __FILE__
 * names the file; file NULL: not known) and names[i] the name of argument i
 * (NULL entries: unnamed). Programs traced afterwards name input tensors by
 * them in operands, messages, profiles and exports ("a_tensor" instead of
 * "in0") and place them at decl instead of the pseudo-location "KERNEL:0";
 * names are used when a call passes exactly nnames arguments. A name is at
 * most 63 printable ASCII characters without blanks, quotes, backslashes or
 * commas (NK_EINVAL otherwise). Programs already compiled keep their names. */
int nk_kernel_set_params(nk_kernel *k, nk_loc decl, const char *const *names, int nnames);

/* The program for these argument shapes and dtypes: traced and compiled on
 * the first call, then found in the kernel's cache. On a kernel error returns
 * a negative status and nk_kernel_error() holds "file:line: message". The
 * program belongs to the kernel. opts may be NULL. Only the arguments'
 * dtypes and shapes are read: their data may be NULL (timing-only use; the
 * program then runs only on arrays with data). */
int nk_kernel_compile(nk_kernel *k, const nk_array *args, int nargs, const nk_options *opts,
                      const nk_program **out);
const char *nk_kernel_error(const nk_kernel *k);
/* Statistics of the cache: traces done and lookups served. */
void nk_kernel_cache_stats(const nk_kernel *k, uint64_t *compiles, uint64_t *hits);

/* Runs a compiled program: inputs in argument order; outputs preallocated
 * with the program's output shapes and dtypes (see nk_program_output). */
int nk_program_run(const nk_program *p, const nk_array *args, int nargs, nk_array *outs, int nouts);
/* Compile (cached) and run, allocating the outputs (caller frees them). */
int nk_call(nk_kernel *k, const nk_array *args, int nargs, const nk_options *opts,
            nk_array *outs, int max_outs, int *nouts);

int nk_program_num_inputs(const nk_program *p);
int nk_program_num_outputs(const nk_program *p);
/* Fills dtype, ndim and shape of output i (data untouched). */
int nk_program_output(const nk_program *p, int i, nk_array *desc);
int nk_program_input(const nk_program *p, int i, nk_array *desc);
size_t nk_program_num_instructions(const nk_program *p);
const char *nk_program_target(const nk_program *p);
/* The target table the program was compiled for (its own copy; it lives as
 * long as the program). */
const nk_target *nk_program_target_table(const nk_program *p);
/* Serialized form (versioned, checked on load). */
int nk_program_save(const nk_program *p, const char *path);
int nk_program_load(const char *path, nk_program **out, char *err, size_t errlen);
void nk_program_free(nk_program *p); /* only for programs from nk_program_load */
/* Writes a human-readable listing of the program (one instruction a line). */
int nk_program_dump(const nk_program *p, char **text);

/* ---------------------------------------------------------------- profiles */

/* A profile: a compiled program, its modelled timeline (every instruction on
 * every engine and DMA queue) and the kernel's source text, in one
 * self-contained versioned file (.nkp). Capturing one times the program on
 * the model; nothing is executed. */
typedef struct nk_profile nk_profile;
struct nk_arch;

/* Times p on arch (NULL: the program's own target) and records the source
 * files it names. Free with nk_profile_free. */
int nk_profile_capture(const nk_program *p, const struct nk_arch *arch, nk_profile **out);
/* A profile records when it was captured (the clock's time, in seconds since
 * the epoch); this sets another time, for files that are the same bytes from
 * one capture to the next (`nklab` does it for NK_PROFILE_FIXED_TIME).
 * NK_EINVAL for a time outside 1970-01-01 .. 9999-12-31 UTC (or NaN). */
int nk_profile_set_created(nk_profile *pr, double unix_seconds);
/* Writes atomically: a temporary file in the same directory, fsync, rename. */
int nk_profile_write(const nk_profile *pr, const char *path);
/* Reads and checks a profile; a corrupt, truncated, foreign or newer file
 * fails with a message in err. */
int nk_profile_read(const char *path, nk_profile **out, char *err, size_t errlen);
void nk_profile_free(nk_profile *pr);
const nk_program *nk_profile_program(const nk_profile *pr);

/* Where capture finds a kernel's source text besides the file system: a
 * lookup returns the text of the source file a program recorded as path (the
 * kernel's __FILE__), which must outlive every capture, or NULL when it does
 * not know the file. Capture asks it first (it holds the text that was
 * compiled; a relative __FILE__ names a file only from the build's
 * directory), then reads path. One lookup per process, set before capturing
 * (not while another thread captures); fn NULL removes it. The kernels
 * library's nk_builtin_kernel_source knows the built-in kernels. */
typedef const char *(*nk_source_lookup_fn)(const char *path, void *user);
void nk_profile_set_source_lookup(nk_source_lookup_fn fn, void *user);

/* Summary metrics of a profile, named as in the Neuron profiler. Times in
 * seconds, percentages 0..100 of total_time, sizes in bytes. */
typedef struct nk_metrics {
    double total_time;                /* device time: start notification to the last tear-down */
    double launch_time;               /* of which kernel start-up and tear-down */
    double total_time_without_launch; /* total_time - launch_time: first instruction to last completion */
    double event_count;               /* bars on the timeline */
    double total_active_time_percent; /* some engine or DMA busy */
    double tensor_engine_instruction_count, tensor_engine_active_time, tensor_engine_active_time_percent;
    double vector_engine_instruction_count, vector_engine_active_time, vector_engine_active_time_percent;
    double scalar_engine_instruction_count, scalar_engine_active_time, scalar_engine_active_time_percent;
    double gpsimd_engine_instruction_count, gpsimd_engine_active_time, gpsimd_engine_active_time_percent;
    double sync_engine_instruction_count, sync_engine_active_time, sync_engine_active_time_percent;
    double dma_instruction_count;     /* loads/stores (instructions with a DMA-queue event) */
    double dma_active_time;           /* some DMA transfer in flight: union of the transfers */
    double dma_active_time_percent;
    double dma_transfer_count, dma_transfer_total_bytes, dma_transfer_average_bytes;
    double dma_queue_count;
    double dma_queue_busy_time;       /* some DMA queue holds a load/store, trigger to completion */
    double dma_queue_busy_time_percent;
    double hbm_read_bytes, hbm_write_bytes, sbuf_read_bytes, sbuf_write_bytes;
    double psum_read_bytes, psum_write_bytes;
    double hardware_flops;            /* 2*K*M*N per matmul, and PE transposes */
    double hfu_estimated_percent;     /* hardware FLOPs against the target's peak */
    double mfu_estimated_percent;     /* matmul FLOPs against the target's peak */
    double mbu_estimated_percent;     /* HBM bytes per second against HBM bandwidth */
    double mm_arithmetic_intensity;   /* matmul FLOPs per HBM byte */
    double peak_flops_bandwidth_ratio;/* peak FLOP/s over HBM bytes/s: the ridge point */
    double matmul_instruction_count;
    double spill_store_bytes;         /* SBUF -> HBM by spills the compile step inserted */
    double spill_reload_bytes;        /* HBM -> SBUF by their reloads */
} nk_metrics;

int nk_profile_metrics(const nk_profile *pr, nk_metrics *m);
/* A metric by its name; NK_ENOTFOUND for an unknown name. */
int nk_metrics_get(const nk_metrics *m, const char *name, double *value);
/* The metric names in summary order, and their units ("s", "%", "bytes"...). */
int nk_metrics_count(void);
const char *nk_metrics_name(int i);
const char *nk_metrics_unit(int i);
/* `nklab summary`: aligned text with units followed by the top 3 findings of
 * the insights (nk_profile_insights; none when no rule fires), or one JSON
 * object holding exactly the metrics. label names the profile in the text
 * (may be NULL). */
int nk_profile_summary(const nk_profile *pr, const char *label, int json, char **text);

/* ---- insights (docs/insights.md) */

/* `nklab insights`: what limits the kernel, in words. The text report has the
 * engines used and their overlap, the critical path, idle time by cause,
 * roofline, DMA transfer sizes and time per source line, then every finding
 * ranked by the time at stake, with evidence, source lines and a suggestion;
 * json = 1 gives the findings as a JSON array of objects instead. The caller
 * frees *text. */
int nk_profile_insights(const nk_profile *pr, int json, char **text);
/* `nklab diff`: profiles a and b side by side (deltas are b - a); names label
 * them (may be NULL). The caller frees *text. */
int nk_profile_diff(const nk_profile *a, const char *name_a, const nk_profile *b, const char *name_b,
                    char **text);

/* ---------------------------------------------------------------- bench */

/*
 * Benchmarking a kernel as `nki.benchmark` does: compile once, warm-up
 * iterations, timed iterations, latency percentiles.
 *
 * Two latencies per iteration, in nanoseconds:
 *   NC (device): the modelled device time of the compiled program (the
 *     timeline's total_ns). Timing never depends on values, so it is computed
 *     once per program and is the same in every iteration.
 *   E2E (end to end): the measured host dispatch of that iteration (cached
 *     program lookup, argument binding and unbinding) + the modelled copies of
 *     the inputs to the device and of the outputs back (host_in_ns,
 *     host_out_ns) + the device time. Its spread is the dispatch's.
 * Executing the program on the host (the functional simulation) is not part
 * of either latency: it stands in for the device, whose time is modelled.
 */
typedef enum nk_latency { NK_LATENCY_E2E = 0, NK_LATENCY_NC = 1 } nk_latency;

typedef struct nk_bench_options {
    int warmup;  /* untimed iterations before the timed ones, >= 0 */
    int iters;   /* timed iterations, >= 1 */
    int execute; /* 1: compute the values every iteration; 0: dispatch and timing only */
    /* When set, called after every iteration with done = 1 .. warmup + iters. */
    void (*progress)(void *user, int done, int total);
    void *user;
} nk_bench_options;

/* warmup 10, iters 100, execute 1, no progress callback. */
nk_bench_options nk_bench_defaults(void);

typedef struct nk_bench_result {
    int warmup, iters, executed;
    char target[16];
    double compile_ns;     /* measured trace + schedule of the first call; 0 when already cached */
    double device_ns;      /* NC latency: modelled device time */
    double host_in_ns;     /* modelled host -> device copy of the inputs */
    double host_out_ns;    /* modelled device -> host copy of the outputs */
    double *dispatch_ns;   /* iters entries, in iteration order: measured host dispatch */
    double *e2e_ns;        /* iters entries, in iteration order: E2E latency */
    double *e2e_sorted_ns; /* the same, ascending */
    double exec_ns;        /* measured host execution, mean per timed iteration (0 if not executed) */
    double wall_s;         /* wall-clock seconds of the timed loop */
    double user_s, sys_s;  /* CPU seconds of this process during the timed loop (getrusage) */
    size_t ninstr;         /* instructions of the program */
} nk_bench_result;

/* Benchmarks kernel k on args (compiled for opts, which may be NULL; bo NULL
 * means nk_bench_defaults()). On a kernel error returns its status and
 * nk_kernel_error(k) holds "file:line: message"; NK_EINVAL for bad options.
 * On success fill *res; free it with nk_bench_result_free. */
int nk_bench(nk_kernel *k, const nk_array *args, int nargs, const nk_options *opts, const nk_bench_options *bo,
             nk_bench_result *res);
void nk_bench_result_free(nk_bench_result *res);

/* The p-th percentile (0 <= p <= 100) of a latency, in microseconds, by
 * linear interpolation between the closest ranks: with the n samples sorted
 * ascending x[0..n-1], h = (n - 1) p / 100, the value is
 * x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]) (numpy's default).
 * p 0 is the minimum, 100 the maximum. NaN for p outside [0, 100], an unknown
 * latency or an empty result. */
double nk_bench_latency_percentile(const nk_bench_result *res, nk_latency which, double p);
/* Mean of a latency in microseconds (NaN for an empty result). */
double nk_bench_latency_mean(const nk_bench_result *res, nk_latency which);
/* The latency table of the Neuron tools, as `nklab bench` prints it: a title
 * line naming the kernel, the column header and the row (B NC NC-USED
 * WEIGHTS MODE INF/S IRES/S L(1) L(50) L(99) NCL(1) NCL(50) NCL(99) %USER),
 * then how L(50) splits and what compiling and simulating took. weights is
 * the bytes of the kernel's inputs. The caller frees *text. */
int nk_bench_format_table(const char *name, const nk_bench_result *res, double weights, char **text);
/* %USER of the table: user CPU time over the timed loop's wall time, in
 * percent; negative when the loop was too short (50 ms) to tell. */
double nk_bench_user_percent(const nk_bench_result *res);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* NKLAB_H */
