/*
 * test_ops_ref.h - an independent model of nklab's dtypes for the numerics
 * tests, and helpers to run small kernels and compare their outputs.
 *
 * The model never calls the library's conversions: float formats are decoded
 * by formula from their sign, exponent and mantissa fields and rounded in
 * double arithmetic (scale by a power of two, nearbyint, scale back), so a
 * bug in the library's bit manipulation cannot hide in the reference.
 */
#ifndef NK_TEST_OPS_REF_H
#define NK_TEST_OPS_REF_H

#include "nklab.h"
#include "test.h"

#include <stddef.h>
#include <stdint.h>

/* ---- the dtype model */

int ref_is_float(nk_dtype dt);
/* Largest finite value of a float dtype; the range's bound for an integer one. */
double ref_max(nk_dtype dt);
double ref_min_int(nk_dtype dt); /* integer dtypes: lowest value */
/* Value of the bit pattern `code` (the low nk_dtype_size bytes). */
double ref_decode_code(nk_dtype dt, uint32_t code);
/* Value of element i of a host buffer of dtype dt. */
double ref_decode(nk_dtype dt, const void *base, size_t i);
/* v rounded to dt: nearest, ties to even; IEEE formats overflow to inf,
 * float8_e4m3fn to NaN; integers saturate and take NaN to 0. Keeps the sign
 * of zero. */
double ref_round(nk_dtype dt, double v);
/* Bit pattern of v, which must be exactly representable in dt (or NaN). */
uint32_t ref_encode_code(nk_dtype dt, double v);
void ref_encode(nk_dtype dt, double v, void *base, size_t i);
/* Spacing of dt's values at |v| (1 for integers). */
double ref_ulp(nk_dtype dt, double v);
/* Same value: equal, or both NaN. Zeros of either sign match unless
 * signed_zero. */
int ref_same(double a, double b, int signed_zero);

/* ---- random numbers (splitmix64: reproducible on every platform) */

uint64_t ref_rand64(uint64_t *state);
double ref_uniform(uint64_t *state, double lo, double hi);

/* ---- host arrays */

/* Allocates a zeroed array (shape of ndim dims). */
void arr_new(nk_array *a, nk_dtype dt, int ndim, const int64_t *shape);
/* Uniform values in [lo, hi] rounded to the array's dtype. */
void arr_fill(nk_array *a, uint64_t *rng, double lo, double hi);
double arr_get(const nk_array *a, size_t i);
/* Every element as a double (malloc'd; caller frees). */
double *arr_values(const nk_array *a);
void arr_set(nk_array *a, size_t i, double v); /* rounded to the dtype */

/* ---- running kernels */

/* Traces fn on a fresh kernel (no cached program from an earlier case),
 * runs it and fills outs (caller frees). Fails the test and returns nonzero
 * when the kernel reports an error or the output count is not nouts. */
int run_kernel_at(const char *file, int line, const char *name, nk_kernel_fn fn, const nk_array *args,
                  int nargs, nk_array *outs, int nouts);
#define run_kernel(name, fn, args, nargs, outs, nouts) \
    run_kernel_at(__FILE__, __LINE__, (name), (fn), (args), (nargs), (outs), (nouts))
void arr_free_all(nk_array *a, int n);

/* Inside a kernel: a new HBM output holding tile t (PSUM tiles are copied to
 * SBUF first). */
void ref_return_tile(nk_ctx *nc, nk_tensor t);

/* ---- comparing */

/*
 * Compares every element of out with expect[i] rounded to out's dtype:
 * allowed |out - ref| <= ulps * ulp(dtype, ref) + atol (+ atol_each[i] when
 * atol_each is not NULL). NaN matches NaN, infinities must match exactly.
 * Reports the worst element once; returns the number of mismatches.
 */
int check_arr_at(const char *file, int line, const char *what, const nk_array *out, const double *expect,
                 double ulps, const double *atol_each, double atol);
#define CHECK_ARR(what, out, expect, ulps, atol_each, atol) \
    check_arr_at(__FILE__, __LINE__, (what), (out), (expect), (ulps), (atol_each), (atol))

/* fp32 unit roundoff 2^-24: the bound of one fp32 rounding, relative. */
#define REF_U32 (1.0 / 16777216.0)

#endif
