/*
 * test_ops_util.h - helpers for the tests of single ops: the error a kernel
 * reports while tracing, and the modelled time of one instruction.
 */
#ifndef NK_TEST_OPS_UTIL_H
#define NK_TEST_OPS_UTIL_H

#include "test_ops_ref.h"
#include "nkint.h"
#include "timing/timing.h"

/* Traces fn on args (shapes and dtypes only) and checks that it fails with
 * status, that the message starts with "kfile:*at: " (at is read after
 * tracing: the kernel sets it on the line of the offending call) and that it
 * contains each of the NULL-terminated needles. */
void expect_trace_error_at(const char *file, int line, nk_kernel_fn fn, const nk_array *args, int nargs,
                           int status, const char *kfile, const int *at, const char *const *needles);
#define EXPECT_TRACE_ERROR(fn, args, nargs, status, at_ptr, ...)                                   \
    expect_trace_error_at(__FILE__, __LINE__, (fn), (args), (nargs), (status), __FILE__, (at_ptr),  \
                          (const char *const[]){__VA_ARGS__, NULL})

/* A kernel compiled for a target and timed on it. */
typedef struct timed {
    nk_kernel *k;
    const nk_program *p;
    nk_timeline *tl;
} timed;

/* Compiles fn for args on target ("trn1", "trn2") and times it; 0 on
 * success, else fails the test. Free with timed_free. */
int timed_run_at(const char *file, int line, timed *t, nk_kernel_fn fn, const nk_array *args, int nargs,
                 const char *target);
#define timed_run(t, fn, args, nargs, target) timed_run_at(__FILE__, __LINE__, (t), (fn), (args), (nargs), (target))
void timed_free(timed *t);
/* Index of the nth (0-based) instruction with opcode op, or -1. */
int timed_nth(const timed *t, int op, int nth);
/* Length of that instruction's bar (its NK_EV_INSTR or NK_EV_DMA_ISSUE
 * event), ns; -1 if there is none. */
double timed_bar_ns(const timed *t, int op, int nth);

/* A host array with no data (for tracing and timing only). */
static inline nk_array arr_shape(nk_dtype dt, int ndim, const int64_t *shape)
{
    nk_array a = {dt, ndim, {0}, NULL};
    for (int i = 0; i < ndim; i++)
        a.shape[i] = shape[i];
    return a;
}

#endif
