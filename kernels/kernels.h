/*
 * kernels.h - the example kernels shipped with nklab and their reference
 * implementations (used by the tests, the CLI and the benchmarks).
 *
 * Each kernel is written as NKI's tutorials write it: tiles of 128
 * partitions, affine loops, partial tiles clipped with masks, PSUM
 * accumulation. Each has a reference in double precision (reference.c) that
 * reads the stored input bits with its own decoder, so it shares no code with
 * the library's executor.
 */
#ifndef NK_KERNELS_H
#define NK_KERNELS_H

#include "nklab.h"

/* Exported, as nklab.h's declarations (installed as nklab_kernels.h). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define NK_KERNEL_MAX_ARGS 5 /* mamba: delta, u, A, B, C */
#define NK_KERNEL_MAX_OUTS 2

typedef struct nk_argspec {
    const char *name;
    nk_dtype dtype;
    int ndim;
    int64_t shape[NK_MAXDIM];
    double lo, hi; /* example values are uniform in [lo, hi); both 0 means [-1, 1) */
} nk_argspec;

/* Computes the kernel's outputs in double precision from its inputs as stored
 * (any dtype). out[i] has room for output i, C-contiguous, in the shape the
 * kernel gives it (out_numel[i] elements, checked). Returns 0 or a negative
 * nk_status: NK_ESHAPE when the inputs or the room do not fit the kernel. */
typedef int (*nk_reference_fn)(const nk_array *in, int nin, double *const *out, const size_t *out_numel,
                               int nouts);

typedef struct nk_kernel_info {
    const char *name;
    const char *summary;
    nk_kernel_fn fn;
    int nargs;
    nk_argspec args[NK_KERNEL_MAX_ARGS]; /* the example shapes, dtypes and value ranges */
    int nouts;
    nk_reference_fn reference;
    /* |out - ref| <= atol + rtol * |ref| on the example arguments; derived
     * bounds are in registry.c */
    double rtol, atol;
    /* the launch grid the example runs on (nk_options.grid; all zero: none) */
    int grid[NK_MAX_GRID];
} nk_kernel_info;

/* Where a built-in kernel function is defined: NK_KERNEL_DECL(fn) on the
 * line before the definition of fn defines fn_decl, its file and line (the
 * location its inputs are declared at in profiles). */
#define NK_KERNEL_DECL(fn) const nk_loc fn##_decl = {__FILE__, __LINE__ + 1, NULL}

/* The registry: nk_builtin_kernel_count entries. */
extern const nk_kernel_info nk_builtin_kernels[];
extern const int nk_builtin_kernel_count;
const nk_kernel_info *nk_builtin_kernel(const char *name);
/* The built-in kernel whose name is nearest to a misspelt one (edit
 * distance at most 2, or a third of its length), or NULL: "did you mean". */
const nk_kernel_info *nk_builtin_kernel_nearest(const char *name);

/* Where the kernel function is defined (NK_KERNEL_DECL), or NULL. */
const nk_loc *nk_builtin_kernel_decl(const nk_kernel_info *k);
/* nk_kernel_new for a built-in kernel, its parameters named as its argument
 * specs name them and declared where its function is defined
 * (nk_kernel_set_params). NULL when out of memory. */
nk_kernel *nk_builtin_kernel_new(const nk_kernel_info *k);

/* Allocates the kernel's example arguments (args[0..k->nargs-1]) and fills
 * them with reproducible values for seed, uniform in each spec's range and
 * rounded to its dtype. Free each with nk_array_free. */
int nk_kernel_example_args(const nk_kernel_info *k, uint64_t seed, nk_array *args);
/* Fills an allocated array the same way: uniform in [lo, hi), rounded to its dtype. */
void nk_fill_uniform(nk_array *a, uint64_t seed, double lo, double hi);
/* Decodes every element of a host array to double (its own decoder, not the
 * library's conversions). Returns NK_EDTYPE for an unknown dtype. */
int nk_ref_decode(const nk_array *a, double *out);

/* The text of a built-in kernel's source file, by the path its instructions
 * record (the compiler's __FILE__, e.g. "kernels/tensor_exp.c"), as embedded
 * at build time; NULL for any other path. An nk_source_lookup_fn. */
const char *nk_builtin_kernel_source(const char *path, void *user);
/* Makes profile capture find the built-in kernels' sources wherever it runs
 * (nk_profile_set_source_lookup with nk_builtin_kernel_source). */
void nk_builtin_kernel_sources_register(void);

/* the kernels */
extern const nk_loc nk_kernel_attention_fwd_decl;
extern const nk_loc nk_kernel_avgpool2d_decl;
extern const nk_loc nk_kernel_layernorm_decl;
extern const nk_loc nk_kernel_layernorm_bn_decl;
extern const nk_loc nk_kernel_mamba_v1_decl;
extern const nk_loc nk_kernel_mamba_v2_decl;
extern const nk_loc nk_kernel_mamba_v3_decl;
extern const nk_loc nk_kernel_matmul_basic_decl;
extern const nk_loc nk_kernel_matmul_blocked_free_decl;
extern const nk_loc nk_kernel_matmul_fully_optimized_decl;
extern const nk_loc nk_kernel_matmul_hoisted_decl;
extern const nk_loc nk_kernel_matmul_tiled_decl;
extern const nk_loc nk_kernel_rmsnorm_decl;
extern const nk_loc nk_kernel_sd_attention_decl;
extern const nk_loc nk_kernel_seq_scale_matmul_hbm_decl;
extern const nk_loc nk_kernel_seq_scale_matmul_onchip_decl;
extern const nk_loc nk_kernel_softmax_decl;
extern const nk_loc nk_kernel_spmd_tensor_add_decl;
extern const nk_loc nk_kernel_spmd_matmul_decl;
extern const nk_loc nk_kernel_tensor_add_decl;
extern const nk_loc nk_kernel_tensor_exp_decl;
extern const nk_loc nk_kernel_transpose2d_decl;
void nk_kernel_tensor_exp(nk_ctx *nc, const nk_tensor *args, int nargs);
void nk_kernel_tensor_add(nk_ctx *nc, const nk_tensor *args, int nargs);
void nk_kernel_matmul_basic(nk_ctx *nc, const nk_tensor *args, int nargs);
void nk_kernel_matmul_tiled(nk_ctx *nc, const nk_tensor *args, int nargs);
void nk_kernel_softmax(nk_ctx *nc, const nk_tensor *args, int nargs);
void nk_kernel_rmsnorm(nk_ctx *nc, const nk_tensor *args, int nargs);
/* NKI's matmul optimisation ladder (after matmul_tiled): the same result as
 * nk_ref_matmul, lhsT[K, M] and rhs[K, N] */
void nk_kernel_matmul_hoisted(nk_ctx *nc, const nk_tensor *args, int nargs);
void nk_kernel_matmul_blocked_free(nk_ctx *nc, const nk_tensor *args, int nargs);
/* optional scalar arguments 2..4: TILES_IN_BLOCK_M, _N, _K (16, 2, 8) */
void nk_kernel_matmul_fully_optimized(nk_ctx *nc, const nk_tensor *args, int nargs);
/* x, [epsilon (0-d),] gamma, beta: nk_ref_layernorm */
void nk_kernel_layernorm(nk_ctx *nc, const nk_tensor *args, int nargs);
/* the same arguments; statistics from bn_stats / bn_aggr */
void nk_kernel_layernorm_bn(nk_ctx *nc, const nk_tensor *args, int nargs);
/* q, k, v [S, d], optional scalars use_causal_mask (0), mixed_precision (1):
 * nk_ref_sd_attention */
void nk_kernel_sd_attention(nk_ctx *nc, const nk_tensor *args, int nargs);
/* q, k, v [d, S]: nk_ref_attention_fwd */
void nk_kernel_attention_fwd(nk_ctx *nc, const nk_tensor *args, int nargs);
/* delta, u, A, B, C: nk_ref_mamba (three steps of the tutorial) */
void nk_kernel_mamba_v1(nk_ctx *nc, const nk_tensor *args, int nargs);
void nk_kernel_mamba_v2(nk_ctx *nc, const nk_tensor *args, int nargs);
void nk_kernel_mamba_v3(nk_ctx *nc, const nk_tensor *args, int nargs);
/* x[C, H, W], optional scalar pool_size: nk_ref_avgpool2d */
void nk_kernel_avgpool2d(nk_ctx *nc, const nk_tensor *args, int nargs);
/* x[P, F1 * F2], optional scalars F1, F2: nk_ref_transpose2d */
void nk_kernel_transpose2d(nk_ctx *nc, const nk_tensor *args, int nargs);
/* SPMD (a launch grid splits the output tiles): a, b -> a + b, as
 * nk_ref_tensor_add; lhsT, rhs -> lhsT^T rhs, as nk_ref_matmul */
void nk_kernel_spmd_tensor_add(nk_ctx *nc, const nk_tensor *args, int nargs);
void nk_kernel_spmd_matmul(nk_ctx *nc, const nk_tensor *args, int nargs);
/* sequences (nk_launch): lhsT, rhs -> (2 lhsT)^T rhs through a producer
 * kernel and matmul_basic, the intermediate through HBM or handed on chip;
 * nk_ref_scale_matmul */
void nk_kernel_seq_scale_matmul_hbm(nk_ctx *nc, const nk_tensor *args, int nargs);
void nk_kernel_seq_scale_matmul_onchip(nk_ctx *nc, const nk_tensor *args, int nargs);
int nk_ref_scale_matmul(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);

/* their references (reference.c) */
int nk_ref_tensor_exp(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);
int nk_ref_tensor_add(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);
/* out[M, N] = lhsT[K, M]^T @ rhs[K, N] (matmul_basic and matmul_tiled) */
int nk_ref_matmul(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);
int nk_ref_softmax(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);
int nk_ref_rmsnorm(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);

#define NK_RMSNORM_EPS 1e-6

/* References for NKI tutorial kernels nklab does not ship yet; the same
 * signature, double precision, the inputs' own decoding. */

/* layernorm: x[R, D], gamma[D], beta[D] -> y[R, D] =
 * (x - mean) / sqrt(var + eps) * gamma + beta over each row, var the
 * population variance; eps = NK_LAYERNORM_EPS, the value NKI's LayerNorm
 * tutorial passes as its epsilon argument. */
int nk_ref_layernorm(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);
#define NK_LAYERNORM_EPS 1e-5

/* fused mamba (selective scan), inputs in the tutorial kernel's order:
 * delta[B, C, L], u[B, C, L], A[C, S], Bm[B, S, L], Cm[B, S, L] -> y[B, C, L]
 * (batch, channels, state size, sequence length), with, for every b, c, s,
 *   h[t] = exp(delta[b,c,t] A[c,s]) h[t-1] + delta[b,c,t] Bm[b,s,t] u[b,c,t],
 *   h[-1] = 0, and y[b,c,t] = sum over s of Cm[b,s,t] h[t].
 * Five inputs (NK_KERNEL_MAX_ARGS). */
int nk_ref_mamba(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);

/* attention forward in the layout of NKI's attention performance tutorial
 * (attn_fwd_v1..v11): q[d, Sq], k[d, Skv], v[d, Skv] (head dimension first)
 * -> out[Sq, d] = softmax(q^T k) v^T, row-wise softmax, no scaling. */
int nk_ref_attention_fwd(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);

/* fused self-attention of NKI's Stable Diffusion tutorial: q[Sq, d],
 * k[Skv, d], v[Skv, d] -> out[Sq, d] = softmax(scale q k^T) v, scale =
 * NK_SD_ATTENTION_SCALE (the tutorial's fixed 0.125 = 1/sqrt(64)), no mask. */
int nk_ref_sd_attention(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);
#define NK_SD_ATTENTION_SCALE 0.125

/* average pool 2d: x[C, H, W] -> y[C, H/p, W/p], the mean of each p x p
 * window, stride p, p = NK_AVGPOOL2D_POOL (the tutorial's pool size); rows and
 * columns past the last whole window are dropped. */
int nk_ref_avgpool2d(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);
#define NK_AVGPOOL2D_POOL 2

/* transpose2d: each partition row holds a row-major F1 x F2 matrix; the output
 * row holds its F2 x F1 transpose: y[p, j*F1 + i] = x[p, i*F2 + j]. The input
 * is x[P, F1, F2], or x[P, F] read as F1 = NK_TRANSPOSE2D_F1 (the tutorial's
 * shape2D = (3, 4)) rows of F / F1; the output has P * F1 * F2 elements. */
int nk_ref_transpose2d(const nk_array *in, int nin, double *const *out, const size_t *n, int nouts);
#define NK_TRANSPOSE2D_F1 3

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
