/*
 * calib.h - the calibration micro-benchmarks: for every mechanism of the
 * timing model the smallest kernel that isolates it, the documented figure
 * it must reproduce (with its source and tolerance), the model's closed-form
 * expectation, the kernel as NKI Python for a Trainium machine, and a
 * least-squares fit of the target constants from measured latencies.
 *
 * Every benchmark point is a kernel that repeats one mechanism `reps` times;
 * its figure is the slope of the kernel's latency over reps (ns per
 * repetition), so the launch, the input load and the output store cancel.
 */
#ifndef NK_CALIB_H
#define NK_CALIB_H

#include "arch/arch.h"

#include <stddef.h>

enum {
    NK_CALIB_ACT,      /* Scalar activation chain on [128, n] */
    NK_CALIB_DVE,      /* Vector tensor_scalar chain on [128, n] */
    NK_CALIB_POOL,     /* GpSimd iota on [128, n] */
    NK_CALIB_PE,       /* matmuls [128, m] x [128, n] accumulating into one PSUM tile */
    NK_CALIB_DMA_LOAD, /* [128, n] float32 loads, one queue */
    NK_CALIB_DMA_QUEUES, /* [128, n] float32 loads over four HBM tensors (queues) */
    NK_CALIB_DMA_CHAIN,  /* dependent [1, 1] SBUF-to-SBUF DMAs */
    NK_CALIB_HBM_COPY,   /* [128, n] float32 HBM-to-HBM copies */
    NK_CALIB_SEM,        /* Scalar -> Vector -> Scalar ... on [128, 1] */
    NK_CALIB_PORTS,      /* independent Vector and GpSimd instructions on SBUF */
    NK_CALIB_DVE_TT,     /* independent Vector tensor_tensor adds on [128, n] views with step m */
    NK_CALIB_NFAMILIES
};

/* Units of a documented figure and of the model's figure beside it. */
enum { NK_CALIB_NS = 0, NK_CALIB_GBPS, NK_CALIB_CYCLES };

#define NK_CALIB_MAXREPS 3

typedef struct nk_calib_point {
    const char *id;      /* "act_dep/n=1": benchmark/point, the results' key */
    int family;
    int64_t n, m;        /* free size; matmul stationary size m (dve_tt: the inputs' step) */
    int dep;             /* chains: each repetition reads the previous one's result */
    int fp32;            /* matmul / tensor_tensor inputs in fp32 (else bf16) */
    int reps[NK_CALIB_MAXREPS];
    /* The documented figure: per target (trn1, trn2; NAN: none documented). */
    int unit;
    double doc[2];
    int bound;           /* 0: |model - doc| <= tol * doc; +1: model >= doc; -1: model <= doc */
    double tol;
    const char *doc_text; /* what the source says */
    const char *source;
} nk_calib_point;

typedef struct nk_calib_family {
    const char *name;      /* file name of its NKI Python kernel: NAME.py */
    const char *mechanism;
} nk_calib_family;

extern const nk_calib_point nk__calib_points[];
extern const size_t nk__calib_npoints;
extern const nk_calib_family nk__calib_families[NK_CALIB_NFAMILIES];

/* The model's closed form: ns per repetition of point pt on target a. */
double nk__calib_expect_ns(const nk_arch *a, const nk_calib_point *pt);
/* Bytes per repetition (DMA points), else 0. */
double nk__calib_bytes(const nk_calib_point *pt);
/* Ns per repetition in the point's unit (GB/s: bytes over it; cycles of
 * the engine clock of a). */
double nk__calib_in_unit(const nk_arch *a, const nk_calib_point *pt, double ns);
/* Is value within the documented figure's tolerance on target index t (0
 * trn1, 1 trn2)? -1 when nothing is documented there. */
int nk__calib_within(const nk_calib_point *pt, int t, double value);

/* Times point pt with `reps` repetitions on target a through the tracer,
 * the compile step and the timing model (the C kernel): the device time in
 * ns, or a negative status. */
int nk__calib_time(const nk_arch *a, const nk_calib_point *pt, int reps, double *ns);
/* The simulated ns per repetition: least-squares slope over pt->reps. */
int nk__calib_simulate(const nk_arch *a, const nk_calib_point *pt, double *per_rep);

/* Least-squares slope of y over x (n points). */
double nk__calib_slope(const double *x, const double *y, int n);

/* The side-by-side table (documented vs model, per target) as text; the
 * number of figures outside their tolerance in *misses. Caller frees. */
int nk__calib_report(char **text, int *misses);

/* The NKI Python kernel file of family f (caller frees). */
int nk__calib_python(int f, char **text);

/* ---- fit */

/* One measured latency: benchmark point id, repetitions, latency in us. */
typedef struct nk_calib_sample {
    char id[64];
    int reps;
    double us;
} nk_calib_sample;

/* Reads results: CSV lines `point,reps,p50_us` after the header line
 * `point,reps,p50_us` (the emitted kernels write it); `#` starts a
 * comment. *out is allocated (free it). Errors name "path:line". */
int nk__calib_read_results(const char *text, const char *where, nk_calib_sample **out, size_t *n, char *err,
                          size_t errlen);

typedef struct nk_calib_fitted {
    const char *key;     /* target-file key */
    double start, value; /* the base table's value, the fitted one (rounded for integer keys) */
    double stderr_;      /* standard error of the estimate (same unit) */
    double rms_resid;    /* rms relative residual of the points it informs */
    int npoints;         /* points that inform it */
} nk_calib_fitted;

#define NK_CALIB_MAXPARAMS 16

typedef struct nk_calib_fit {
    nk_arch arch;        /* the base table with the fitted constants */
    nk_calib_fitted par[NK_CALIB_MAXPARAMS];
    int npar;
    int npoints;         /* points measured */
    double rms_resid;    /* rms relative residual over every point */
    double max_resid;
    char worst[64];
} nk_calib_fit;

/* Least-squares fit of the constants the measured points depend on,
 * starting from base; points not in the suite are an error. */
int nk__calib_fit_samples(const nk_arch *base, const nk_calib_sample *s, size_t n, nk_calib_fit *fit, char *err,
                         size_t errlen);
/* The fit as a target file (base, name, the fitted keys with their residuals). */
int nk__calib_format_fit(const nk_calib_fit *fit, const char *name, char **text);

#endif
