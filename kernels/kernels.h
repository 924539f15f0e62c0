/*
 * kernels.h - the example kernels shipped with nklab and their reference
 * implementations (used by the tests, the CLI and the benchmarks).
 */
#ifndef NK_KERNELS_H
#define NK_KERNELS_H

#include "nklab.h"

#define NK_KERNEL_MAX_ARGS 4

typedef struct nk_argspec {
    const char *name;
    nk_dtype dtype;
    int ndim;
    int64_t shape[NK_MAXDIM];
} nk_argspec;

/* Computes the expected outputs in double precision from the inputs (any
 * dtype, converted to fp32 first); outs are float64 arrays it allocates. */
typedef int (*nk_reference_fn)(const nk_array *in, int nin, nk_array *outs, int nouts);

typedef struct nk_kernel_info {
    const char *name;
    const char *summary;
    nk_kernel_fn fn;
    int nargs;
    nk_argspec args[NK_KERNEL_MAX_ARGS]; /* the example shapes */
    int nouts;
    nk_reference_fn reference;
    double rtol, atol; /* tolerance of the example dtypes against the reference */
} nk_kernel_info;

/* The registry, NULL-terminated by count. */
extern const nk_kernel_info nk_builtin_kernels[];
extern const int nk_builtin_kernel_count;
const nk_kernel_info *nk_builtin_kernel(const char *name);

/* the kernels */
void nk_kernel_tensor_exp(nk_ctx *nc, const nk_tensor *args, int nargs);

#endif
