/*
 * pynk.h - the Python front-end: a CPython extension that drives nklab's
 * tracer from NKI Python kernels.
 *
 * A kernel function is called once per signature with Tensor objects that
 * wrap the tracer's nk_tensor handles; every nl.* / nisa.* call in it goes to
 * the matching nk_*_at function with the calling Python frame's file:line.
 * Nothing here decides what a kernel may do: the tracer checks and records;
 * this layer only turns Python values (index expressions, slices, masks,
 * dtypes, scalars) into the C API's arguments.
 */
#ifndef PYNK_H
#define PYNK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "nklab.h"

/* ---- module state (module.c) */

extern PyObject *pynk_KernelError;   /* nklab.KernelError */
extern PyObject *pynk_module;        /* the _nklab module */

/* The trace in progress (NULL outside a kernel's trace). Traces nest only
 * for eager value probes (kernel.c). */
typedef struct pynk_trace {
    nk_ctx *nc;
    uint64_t gen;               /* Tensor objects of other traces are refused */
    struct pynk_trace *outer;
    int eager;                  /* print(tile) shows values (probes) */
    int probe;                  /* >= 0: this trace is a probe capturing value request #probe */
    int nrequests;              /* value requests (print, device_print) so far */
    int probe_out;              /* output index of the captured value, -1 until captured */
    struct pynk_kcall *call;    /* the call being traced (arguments for probes) */
    int return_line;            /* line of the kernel's return statement */
    PyObject *code;             /* the kernel's code object (borrowed) */
    int sequence;               /* the kernel traced is an nklab.sequence: kernels it calls are launched */
} pynk_trace;

extern pynk_trace *pynk_cur;

/* The caller's location: the innermost frame outside nklab's own Python
 * files. The file string lives as long as the frame's code object. */
nk_loc pynk_loc(void);
/* Requires a trace in progress; sets a RuntimeError naming `what` otherwise. */
nk_ctx *pynk_nc(const char *what);
/* After a kernel-API call: if the tracer recorded an error, raises
 * KernelError with its "file:line: message" and returns -1. */
int pynk_check(void);
/* NotImplementedError naming an NKI API and the calling line. */
PyObject *pynk_not_implemented(const char *api, const char *why);

/* ---- dtypes and buffers (module.c) */

typedef struct {
    PyObject_HEAD
    int code;           /* nk_dtype, or -1 for a dtype nklab has no storage for */
    const char *name;   /* NKI's name */
} pynk_dtype_obj;
extern PyTypeObject pynk_DtypeType;
PyObject *pynk_dtype_object(nk_dtype dt); /* borrowed singleton */
/* Accepts nklab dtypes, numpy dtypes and scalar types, names ("bfloat16")
 * and torch dtypes. Returns 0 or -1 with TypeError. */
int pynk_parse_dtype(PyObject *o, nk_dtype *out);

typedef struct {
    PyObject_HEAD
    int code; /* nk_buffer */
    const char *name;
} pynk_buffer_obj;
extern PyTypeObject pynk_BufferType;
int pynk_parse_buffer(PyObject *o, nk_buffer *out);

/* nl.par_dim(n) in a shape */
typedef struct {
    PyObject_HEAD
    int64_t n;
} pynk_pardim_obj;
extern PyTypeObject pynk_ParDimType;
/* A shape (tuple/list of ints, par_dim markers allowed when pardim). */
int pynk_parse_shape(PyObject *o, nk_shape *s, int pardim);

/* ---- tensors and index expressions (tensor.c) */

enum { PYNK_VIEW_PLAIN = 0, PYNK_VIEW_RANGES = 1, PYNK_VIEW_AP = 2 };

typedef struct {
    PyObject_HEAD
    nk_tensor t;          /* the tensor (kind PLAIN) or the base of the view */
    uint64_t gen;
    int kind;             /* how t is viewed: PLAIN, RANGES (slices, ints) or AP (index expressions) */
    int nr;               /* RANGES */
    nk_range r[NK_MAXDIM];
    int ndim;             /* AP: the view's axes */
    int64_t ext[NK_MAXDIM];
    nk_aidx idx[NK_MAXDIM];
    int vndim;            /* the view's shape */
    int64_t vshape[NK_MAXDIM];
    int inplace;          /* result of an in-place += (its item assignment is a no-op) */
    /* A tile an op made under a mask covers part of the op's index space:
     * along view axis k, indices org[k] .. org[k] + vshape[k] - 1 (a mask
     * from below makes org nonzero). Later masks and item assignment are
     * taken in that index space. masked: bit k, the mask cut axis k. */
    int64_t org[NK_MAXDIM];
    int masked;
} pynk_tensor_obj;
extern PyTypeObject pynk_TensorType;
#define pynk_tensor_check(o) PyObject_TypeCheck((o), &pynk_TensorType)
PyObject *pynk_tensor_new(nk_tensor t);

/* An affine index expression c + sum_k a[k] * i_k over the axes of an index
 * grid of ndim axes with extents ext (1 on broadcast axes). */
typedef struct {
    PyObject_HEAD
    int ndim;
    int64_t ext[NK_MAXDIM];
    int64_t a[NK_MAXDIM];
    int64_t c;
} pynk_index_obj;
extern PyTypeObject pynk_IndexType;
#define pynk_index_check(o) PyObject_TypeCheck((o), &pynk_IndexType)
PyObject *pynk_index_new(int ndim, const int64_t *ext, const int64_t *a, int64_t c);

/* A comparison of an index expression with 0: expr cmp 0 (nk_cmp); a
 * conjunction of them with &. As a mask (< and <=) it bounds view axes. */
#define PYNK_MAXPRED 8
typedef struct {
    PyObject_HEAD
    int n;
    pynk_index_obj *e[PYNK_MAXPRED]; /* owned */
    int cmp[PYNK_MAXPRED];
} pynk_pred_obj;
extern PyTypeObject pynk_PredType;

/* A mask as bounds of the index space, per axis right-aligned to NK_MAXDIM
 * ("slots"; each operand's axes are aligned to them from the right): slot s
 * keeps indices lo[s] <= i < limit[s] (limit -1: no bound from above). The
 * view of each operand is cut to that range (a smaller extent; a bound from
 * below starts the view later). pynk_tensor_get also records, per slot,
 * where the operands' ranges start in the index space (first, -1 until an
 * operand has the axis) and whether the mask cut them (cut): the op's result
 * covers the same part of the index space (pynk_result). */
typedef struct {
    int64_t limit[NK_MAXDIM];
    int64_t lo[NK_MAXDIM];
    int any;
    int64_t first[NK_MAXDIM];
    int cut[NK_MAXDIM];
    int pslot; /* the slot of the first operand's axis 0, -1 before one */
} pynk_mask;
int pynk_parse_mask(PyObject *o, pynk_mask *m);
void pynk_mask_none(pynk_mask *m); /* no bounds (the result tracking only) */

/* The nk_tensor of a Tensor object (its view applied, the mask bounding
 * its axes). -1 with an exception set when o is not a tensor of this trace
 * or the tracer refused the view. */
int pynk_tensor_get(PyObject *o, pynk_mask *m, nk_tensor *out, const char *what);
/* The Tensor object of an op's result t, covering the part of the index
 * space the operands read under m (NULL: all of it): how says which result
 * axes follow the operands' axes. PYNK_RES_OTHER refuses (NotImplementedError
 * naming op) operands that start past index 0. */
enum { PYNK_RES_ELEMENTWISE, PYNK_RES_PARTITION, PYNK_RES_OTHER };
PyObject *pynk_result(nk_tensor t, const pynk_mask *m, int how, const char *op);
/* A new tile of shape s written under m covers the part the mask keeps:
 * s is cut to it, org (s->n entries) receives where each axis starts, and
 * m records it for pynk_result. */
int pynk_mask_shape(pynk_mask *m, nk_shape *s, int64_t *org);
/* -1 with NotImplementedError when m's operands start past index 0 (ops
 * whose result axes do not follow their operands'). */
int pynk_mask_from_zero(const pynk_mask *m, const char *op);
/* The view's shape as a tuple. */
PyObject *pynk_shape_tuple(const int64_t *shape, int n);
int pynk_tensor_shape(PyObject *o, int64_t *shape, int *ndim);

/* ---- ops (ops.c) */

extern PyMethodDef pynk_lang_methods[]; /* nl.* */
extern PyMethodDef pynk_isa_methods[];  /* nisa.* */
extern PyTypeObject pynk_RangeType;     /* affine_range / sequential_range */
/* The nk_act / nk_alu code of an op given as a function (nl.exp, np.add ...). */
int pynk_parse_act(PyObject *o, nk_act *out);
int pynk_parse_alu(PyObject *o, nk_alu *out);
int pynk_ops_init(PyObject *lang, PyObject *isa);
/* print(tile) under eager tracing: the values at this point (kernel.c). */
PyObject *pynk_tensor_values(PyObject *tensor);

/* ---- kernels (kernel.c) */

extern PyTypeObject pynk_KernelType;
extern PyTypeObject pynk_PlaceholderType;
extern PyMethodDef pynk_kernel_methods[];
int pynk_kernel_init(PyObject *m);
/* The command line's kernel (cli.c): k a Kernel object, or NULL to drop it;
 * the trampoline traces it for nk_kernel_new. */
int pynk_cli_set_kernel(PyObject *k);
void pynk_cli_trampoline(nk_ctx *nc, const nk_tensor *targs, int nargs);
/* Its parameter names and def line on k (nk_cli_py_params). */
void pynk_cli_params(nk_kernel *k, int nargs);

/* ---- command line (cli.c) */

extern PyMethodDef pynk_cli_methods[];

#endif
