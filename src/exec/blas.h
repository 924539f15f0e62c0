/*
 * blas.h - the executor's sgemm, from an OpenBLAS loaded on first use
 * (blas.c says why and from where).
 */
#ifndef NK_BLAS_H
#define NK_BLAS_H

#include "nkint.h"

#include <cblas.h>
#include <stddef.h>

typedef __typeof__(cblas_sgemm) nk__sgemm_fn;

/* OpenBLAS's cblas_sgemm, loaded on the first call (thread-safe); NULL
 * when it cannot be, with nk_last_error() saying why (the caller returns
 * NK_EIO). */
nk__sgemm_fn *nk__sgemm(void);

/* One attempt: dlopen(lib) with RTLD_NOW | RTLD_LOCAL | flags, then its
 * cblas_sgemm into *out. 0, or NK_EIO with the reason in why[n]. */
int nk__blas_open(const char *lib, int flags, nk__sgemm_fn **out, char *why, size_t n);

#endif
