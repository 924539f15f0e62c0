/*
 * kernel.c - Kernel objects (@nki.jit, nki.benchmark, nki.profile,
 * nki.baremetal, nki.simulate_kernel): trace once per signature, replay.
 *
 * A call encodes its signature (target, then per argument: an array's dtype
 * and shape, a scalar's value, another object's type and repr) into bytes,
 * finds the compiled program in the kernel's table, binds the arrays and
 * runs it: no Python-level work beyond reading the arguments and making the
 * output arrays. A new signature traces: the kernel function is called with
 * Tensor objects standing for its arrays, the tracer records the program,
 * the compile step schedules it, and the table keeps it.
 *
 * Under eager tracing (nki.simulate_kernel, `nklab python --eager`), every
 * call traces, and print(tile) shows the tile's values at that line: the
 * kernel is traced a second time as a probe that stores that tile into an
 * extra output right where it was printed; the probe program runs on the
 * call's inputs and the values it stored are the tile's values there.
 */
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL pynk_ARRAY_API
#include "pynk.h"

#include <numpy/arrayobject.h>
#include <frameobject.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nkint.h"
#include "env.h"
#include "core/atomicfile.h"
#include "trace/trace.h"
#include "timing/timing.h"

#define MAXARGS 32
#define KEYMAX 4096

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------- placeholders */

/* nt.tensor[[250, 512], nl.float32]: a shape and a dtype without values. */
typedef struct {
    PyObject_HEAD
    int ndim;
    int64_t shape[NK_MAXDIM];
    nk_dtype dtype;
} placeholder_obj;

static PyObject *ph_repr(PyObject *self)
{
    placeholder_obj *p = (placeholder_obj *)self;
    char s[128];
    int k = snprintf(s, sizeof s, "nt.tensor[[");
    for (int i = 0; i < p->ndim; i++)
        k += snprintf(s + k, sizeof s - (size_t)k, "%s%lld", i ? ", " : "", (long long)p->shape[i]);
    snprintf(s + k, sizeof s - (size_t)k, "], nl.%s]", nk_dtype_name(p->dtype));
    return PyUnicode_FromString(s);
}

static PyObject *ph_shape(PyObject *self, void *u)
{
    (void)u;
    placeholder_obj *p = (placeholder_obj *)self;
    return pynk_shape_tuple(p->shape, p->ndim);
}

static PyObject *ph_dtype(PyObject *self, void *u)
{
    (void)u;
    PyObject *d = pynk_dtype_object(((placeholder_obj *)self)->dtype);
    Py_INCREF(d);
    return d;
}

static PyGetSetDef ph_getset[] = {
    {"shape", ph_shape, NULL, NULL, NULL},
    {"dtype", ph_dtype, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pynk_PlaceholderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.TensorPlaceholder",
    .tp_basicsize = sizeof(placeholder_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "nt.tensor[shape, dtype]: an argument of this shape and dtype without values (timing only)",
    .tp_repr = ph_repr,
    .tp_getset = ph_getset,
};

static PyObject *placeholder_new(int ndim, const int64_t *shape, nk_dtype dt)
{
    placeholder_obj *p = PyObject_New(placeholder_obj, &pynk_PlaceholderType);
    if (!p)
        return NULL;
    p->ndim = ndim;
    memset(p->shape, 0, sizeof p->shape);
    memcpy(p->shape, shape, (size_t)ndim * sizeof *shape);
    p->dtype = dt;
    return (PyObject *)p;
}

/* nt.tensor itself: subscripted with [shape, dtype]. */
static PyObject *nt_getitem(PyObject *self, PyObject *key)
{
    (void)self;
    if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2) {
        PyErr_SetString(PyExc_TypeError, "nt.tensor[shape, dtype]");
        return NULL;
    }
    nk_shape s;
    nk_dtype dt;
    if (pynk_parse_shape(PyTuple_GET_ITEM(key, 0), &s, 0) || pynk_parse_dtype(PyTuple_GET_ITEM(key, 1), &dt))
        return NULL;
    return placeholder_new(s.n, s.d, dt);
}

static PyMappingMethods nt_mapping = {.mp_subscript = nt_getitem};
static PyTypeObject NtTensorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.typing.tensor",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "nt.tensor[shape, dtype]: a placeholder argument",
    .tp_as_mapping = &nt_mapping,
};

/* nklab.cast(array, nl.bfloat16): a float32 array passed for an argument of
 * another dtype, rounded as the hardware does. */
typedef struct {
    PyObject_HEAD
    PyObject *array;
    nk_dtype dtype;
} cast_obj;

static void cast_dealloc(PyObject *self)
{
    Py_XDECREF(((cast_obj *)self)->array);
    PyObject_Free(self);
}

static PyTypeObject CastType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.CastArray",
    .tp_basicsize = sizeof(cast_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = cast_dealloc,
};

static PyObject *py_cast(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *a, *d;
    nk_dtype dt;
    if (!PyArg_ParseTuple(args, "OO:cast", &a, &d) || pynk_parse_dtype(d, &dt))
        return NULL;
    cast_obj *c = PyObject_New(cast_obj, &CastType);
    if (!c)
        return NULL;
    Py_INCREF(a);
    c->array = a;
    c->dtype = dt;
    return (PyObject *)c;
}

/* ---------------------------------------------------------------- dtypes and arrays */

static int low_precision_raw; /* bf16/fp8 outputs as their bits (uint16/uint8) */

static int npy_of(nk_dtype dt)
{
    switch (dt) {
    case NK_F32: return NPY_FLOAT32;
    case NK_F16: return NPY_FLOAT16;
    case NK_I8: return NPY_INT8;
    case NK_I16: return NPY_INT16;
    case NK_I32: return NPY_INT32;
    case NK_U8: return NPY_UINT8;
    case NK_U16: return NPY_UINT16;
    case NK_U32: return NPY_UINT32;
    case NK_BF16: return NPY_UINT16;
    default: return NPY_UINT8; /* fp8 */
    }
}

/* numpy type -> nklab dtype; float64 and 64-bit ints narrow (as `nklab run
 * --in` does), bool is uint8. -1 for others. */
static int nk_of_npy(int t, int *narrow)
{
    *narrow = NPY_NOTYPE;
    switch (t) {
    case NPY_FLOAT32: return NK_F32;
    case NPY_FLOAT16: return NK_F16;
    case NPY_INT8: return NK_I8;
    case NPY_INT16: return NK_I16;
    case NPY_INT32: return NK_I32;
    case NPY_UINT8: return NK_U8;
    case NPY_UINT16: return NK_U16;
    case NPY_UINT32: return NK_U32;
    case NPY_BOOL: *narrow = NPY_UINT8; return NK_U8;
    case NPY_FLOAT64: *narrow = NPY_FLOAT32; return NK_F32;
    case NPY_INT64: *narrow = NPY_INT32; return NK_I32;
    case NPY_UINT64: *narrow = NPY_UINT32; return NK_U32;
    default: return -1;
    }
}

static PyObject *torch_mod, *torch_tensor_type, *torch_from_numpy, *torch_bf16, *torch_i16, *stringio;

static int is_torch(PyObject *o)
{
    if (strcmp(Py_TYPE(o)->tp_name, "Tensor") && (!torch_tensor_type || !PyObject_TypeCheck(o, (PyTypeObject *)torch_tensor_type)))
        return 0;
    if (!torch_mod) {
        PyObject *mods = PySys_GetObject("modules");
        PyObject *t = mods ? PyDict_GetItemString(mods, "torch") : NULL;
        if (!t)
            return 0;
        Py_INCREF(t);
        torch_mod = t;
        torch_tensor_type = PyObject_GetAttrString(t, "Tensor");
        torch_from_numpy = PyObject_GetAttrString(t, "from_numpy");
        torch_bf16 = PyObject_GetAttrString(t, "bfloat16");
        torch_i16 = PyObject_GetAttrString(t, "int16");
        if (!torch_tensor_type || !torch_from_numpy || !torch_bf16 || !torch_i16) {
            PyErr_Clear();
            return 0;
        }
    }
    return PyObject_TypeCheck(o, (PyTypeObject *)torch_tensor_type);
}

/* A torch CPU tensor as a numpy array sharing its memory (bf16 as its bits). */
static PyObject *torch_to_numpy(PyObject *t, int *bf16)
{
    PyObject *dt = PyObject_GetAttrString(t, "dtype");
    if (!dt)
        return NULL;
    *bf16 = dt == torch_bf16;
    Py_DECREF(dt);
    PyObject *d = PyObject_CallMethod(t, "detach", NULL);
    if (!d)
        return NULL;
    PyObject *v = *bf16 ? PyObject_CallMethod(d, "view", "O", torch_i16) : (Py_INCREF(d), d);
    Py_DECREF(d);
    if (!v)
        return NULL;
    PyObject *a = PyObject_CallMethod(v, "numpy", NULL);
    Py_DECREF(v);
    return a;
}

/* ---------------------------------------------------------------- a call */

enum { ARG_ARRAY = 1, ARG_SCALAR, ARG_OTHER };

typedef struct pynk_kcall {
    int nargs;                 /* Python arguments: positional then keyword */
    int npos;
    PyObject *pos;             /* positional tuple (borrowed) */
    PyObject *kw;              /* keywords (borrowed, may be NULL) */
    PyObject *objs[MAXARGS];   /* each argument (borrowed) */
    int kind[MAXARGS];
    int slot[MAXARGS];         /* its nk array index, -1 for others */
    nk_array arr[MAXARGS];     /* the tracer's arguments: arrays and 0-d scalars */
    int narr;
    PyObject *keep[MAXARGS];   /* converted arrays to release */
    int nkeep;
    union { int32_t i; float f; } sval[MAXARGS];
    int placeholders, torch;
    char target[16];
    const nk_target *table;    /* NKLAB_TARGET_FILE's table, or NULL */
    int grid[NK_MAX_GRID], grid_nc[NK_MAX_GRID]; /* kernel[grid]: the launch grid (zeros: none) */
} pynk_kcall;

static void kcall_release(pynk_kcall *c)
{
    for (int i = 0; i < c->nkeep; i++)
        Py_DECREF(c->keep[i]);
    c->nkeep = 0;
}

static int keep(pynk_kcall *c, PyObject *o)
{
    if (c->nkeep >= MAXARGS) {
        Py_DECREF(o);
        PyErr_SetString(PyExc_ValueError, "too many arguments");
        return -1;
    }
    c->keep[c->nkeep++] = o;
    return 0;
}

/* Bytes of the signature. */
typedef struct {
    uint8_t *b;
    size_t n, cap;
    uint8_t stack[512];
} keybuf;

static int kput(keybuf *k, const void *p, size_t n)
{
    if (k->n + n > k->cap) {
        size_t cap = k->cap * 2 > k->n + n ? k->cap * 2 : k->n + n + 256;
        uint8_t *q = k->b == k->stack ? malloc(cap) : realloc(k->b, cap);
        if (!q) {
            PyErr_NoMemory();
            return -1;
        }
        if (k->b == k->stack)
            memcpy(q, k->stack, k->n);
        k->b = q;
        k->cap = cap;
    }
    memcpy(k->b + k->n, p, n);
    k->n += n;
    return 0;
}

static void kfree(keybuf *k)
{
    if (k->b != k->stack)
        free(k->b);
}

/* An array argument (numpy, torch or a cast) into c->arr[c->narr]. */
static int add_array(pynk_kcall *c, PyObject *o, int i, keybuf *k, int want_dtype)
{
    PyObject *a = o;
    int bf16 = 0;
    if (PyObject_TypeCheck(o, &CastType)) {
        want_dtype = ((cast_obj *)o)->dtype;
        a = ((cast_obj *)o)->array;
    }
    if (is_torch(a)) {
        a = torch_to_numpy(a, &bf16);
        if (!a || keep(c, a))
            return -1;
        c->torch = 1;
    }
    if (!PyArray_Check(a)) {
        PyErr_Format(PyExc_TypeError, "argument %d: not an array", i);
        return -1;
    }
    PyArrayObject *arr = (PyArrayObject *)a;
    int narrow, dt = bf16 ? NK_BF16 : nk_of_npy(PyArray_TYPE(arr), &narrow);
    if (bf16)
        narrow = NPY_NOTYPE;
    if (dt < 0) {
        PyErr_Format(PyExc_TypeError, "argument %d: arrays of %s have no NeuronCore dtype", i,
                     PyArray_DESCR(arr)->typeobj->tp_name);
        return -1;
    }
    int nd = PyArray_NDIM(arr);
    if (nd < 1 || nd > NK_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "argument %d: a kernel's tensors have 1 to %d dims, got %d", i, NK_MAXDIM, nd);
        return -1;
    }
    if (narrow != NPY_NOTYPE || !PyArray_IS_C_CONTIGUOUS(arr) || !PyArray_ISALIGNED(arr) ||
        !PyArray_ISNOTSWAPPED(arr)) {
        PyObject *b = PyArray_FromAny(a, PyArray_DescrFromType(narrow != NPY_NOTYPE ? narrow : PyArray_TYPE(arr)),
                                      0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST, NULL);
        if (!b || keep(c, b))
            return -1;
        arr = (PyArrayObject *)b;
    }
    if (want_dtype >= 0 && want_dtype != dt) {
        /* a float32 array for a bf16/fp8 argument: rounded as the hardware does */
        if (dt != NK_F32 || !(want_dtype == NK_BF16 || want_dtype >= NK_FP8_E4M3) || want_dtype > NK_FP8_E5M2) {
            PyErr_Format(PyExc_TypeError, "argument %d: a %s array cannot be passed as %s (pass float32 arrays for "
                         "bfloat16 and fp8 arguments)", i, nk_dtype_name(dt), nk_dtype_name(want_dtype));
            return -1;
        }
        PyObject *b = PyArray_SimpleNew(nd, PyArray_DIMS(arr), npy_of(want_dtype));
        if (!b || keep(c, b))
            return -1;
        nk_convert_from_f32(want_dtype, PyArray_DATA(arr), PyArray_DATA((PyArrayObject *)b),
                            (size_t)PyArray_SIZE(arr));
        arr = (PyArrayObject *)b;
        dt = want_dtype;
    }
    nk_array *x = &c->arr[c->narr];
    x->dtype = (nk_dtype)dt;
    x->ndim = nd;
    for (int d = 0; d < NK_MAXDIM; d++)
        x->shape[d] = d < nd ? PyArray_DIMS(arr)[d] : 0;
    x->data = PyArray_DATA(arr);
    c->slot[i] = c->narr++;
    c->kind[i] = ARG_ARRAY;
    uint8_t h[2] = {'A', (uint8_t)(dt | nd << 4)};
    return kput(k, h, 2) || kput(k, x->shape, (size_t)nd * sizeof(int64_t));
}

static int add_arg(pynk_kcall *c, PyObject *o, int i, keybuf *k, int want_dtype)
{
    c->objs[i] = o;
    c->slot[i] = -1;
    if (c->narr >= MAXARGS) {
        PyErr_SetString(PyExc_ValueError, "a kernel takes at most 32 arguments");
        return -1;
    }
    if (PyArray_CheckExact(o) || PyArray_Check(o) || PyObject_TypeCheck(o, &CastType) || is_torch(o))
        return add_array(c, o, i, k, want_dtype);
    if (PyObject_TypeCheck(o, &pynk_PlaceholderType)) {
        placeholder_obj *p = (placeholder_obj *)o;
        nk_array *x = &c->arr[c->narr];
        x->dtype = p->dtype;
        x->ndim = p->ndim;
        memcpy(x->shape, p->shape, sizeof x->shape);
        x->data = NULL;
        c->slot[i] = c->narr++;
        c->kind[i] = ARG_ARRAY;
        c->placeholders++;
        uint8_t h[2] = {'A', (uint8_t)(p->dtype | p->ndim << 4)};
        return kput(k, h, 2) || kput(k, p->shape, (size_t)p->ndim * sizeof(int64_t));
    }
    if (PyBool_Check(o) || PyLong_Check(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || v < INT32_MIN || v > INT32_MAX)
            goto other; /* the tracer's scalars are 32-bit: the value stays Python's */
        nk_array *x = &c->arr[c->narr];
        c->sval[c->narr].i = (int32_t)v;
        *x = (nk_array){NK_I32, 0, {0}, &c->sval[c->narr].i};
        c->slot[i] = c->narr++;
        c->kind[i] = ARG_SCALAR;
        uint8_t h = PyBool_Check(o) ? 'B' : 'I';
        return kput(k, &h, 1) || kput(k, &v, sizeof v);
    }
    if (PyFloat_Check(o)) {
        double v = PyFloat_AS_DOUBLE(o);
        nk_array *x = &c->arr[c->narr];
        c->sval[c->narr].f = (float)v;
        *x = (nk_array){NK_F32, 0, {0}, &c->sval[c->narr].f};
        c->slot[i] = c->narr++;
        c->kind[i] = ARG_SCALAR;
        uint8_t h = 'F';
        return kput(k, &h, 1) || kput(k, &v, sizeof v);
    }
other:
    c->kind[i] = ARG_OTHER;
    {
        /* passed to the kernel as is; its type and repr are its signature */
        PyObject *r = o == Py_None ? NULL : PyObject_Repr(o);
        if (o != Py_None && !r)
            return -1;
        Py_ssize_t n = 0;
        const char *s = r ? PyUnicode_AsUTF8AndSize(r, &n) : "";
        const char *tn = Py_TYPE(o)->tp_name;
        uint32_t ln = (uint32_t)n, lt = (uint32_t)strlen(tn);
        uint8_t h = 'O';
        int rc = !s || kput(k, &h, 1) || kput(k, &lt, 4) || kput(k, tn, lt) || kput(k, &ln, 4) || kput(k, s, ln);
        Py_XDECREF(r);
        return rc ? -1 : 0;
    }
}

/* ---------------------------------------------------------------- kernels */

typedef struct centry {
    uint64_t hash;
    size_t klen;
    uint8_t *key;
    nk_kernel *k;
    const nk_program *p;
    int nout;
    nk_array out[16];
    double trace_ns;
} centry;

enum { MODE_JIT = 0, MODE_EAGER, MODE_BENCHMARK, MODE_PROFILE, MODE_BAREMETAL };

typedef struct {
    PyObject_HEAD
    PyObject *func;
    PyObject *dict;
    char name[64];
    char target[16];      /* platform_target=, or "" */
    int mode;
    int warmup, iters;
    PyObject *save_neff, *save_trace, *workdir;
    int want[MAXARGS];    /* per positional parameter: annotated dtype, or -1 */
    centry *tab;
    uint32_t cap, n;
    uint64_t traces, hits;
    double exec_ns;       /* host execution of the last call */
    double exec_total_ns;
    int sequence;         /* nklab.sequence: the kernels it calls are launched into its program */
    PyObject *grid;       /* kernel[grid]: the launch's grid (a launch object only) */
    int g[NK_MAX_GRID], gnc[NK_MAX_GRID]; /* ... parsed: sizes and nl.nc annotations */
    PyObject *parent;     /* kernel[grid]: the kernel launched */
} kernel_obj;

static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0");
}

/* The table of NKLAB_TARGET_FILE (`nklab python --target-file`), loaded
 * once per process; NULL when the variable is unset. */
static const nk_target *file_table(void)
{
    static nk_target *t;
    static int tried;
    const char *path = getenv("NKLAB_TARGET_FILE");
    if (!path || !*path)
        return NULL;
    if (!tried) {
        char err[512];
        tried = 1;
        if (nk_target_load(path, &t, err, sizeof err)) {
            PyErr_Format(PyExc_ValueError, "NKLAB_TARGET_FILE: %s", err);
            return NULL;
        }
    }
    if (!t)
        PyErr_Format(PyExc_ValueError, "NKLAB_TARGET_FILE: %s could not be loaded", path);
    return t;
}

/* The target: platform_target=, else NKLAB_TARGET_FILE's table (`nklab
 * python --target-file`), else `nklab python --target`, else
 * NEURON_PLATFORM_TARGET_OVERRIDE, else trn1. A table's name goes into the
 * signature; *table is NULL for a built-in target. */
static int resolve_target(const kernel_obj *k, char *out, const nk_target **table)
{
    *table = NULL;
    if (!k->target[0] && getenv("NKLAB_TARGET_FILE") && *getenv("NKLAB_TARGET_FILE")) {
        if (!(*table = file_table()))
            return -1;
        snprintf(out, 16, "%s", nk_target_name(*table));
        return 0;
    }
    const char *t = k->target[0] ? k->target : getenv("NKLAB_TARGET");
    if (!t || !*t)
        t = getenv("NEURON_PLATFORM_TARGET_OVERRIDE");
    if (!t || !*t)
        t = "trn1";
    if (!nk_target_builtin(t)) {
        PyErr_Format(PyExc_ValueError, "unknown target '%s' (nklab models trn1 and trn2)", t);
        return -1;
    }
    snprintf(out, 16, "%s", t);
    return 0;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, p + i, n - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static centry *lookup(kernel_obj *k, uint64_t h, const uint8_t *key, size_t n)
{
    if (!k->cap)
        return NULL;
    for (uint32_t j = (uint32_t)h & (k->cap - 1);; j = (j + 1) & (k->cap - 1)) {
        centry *e = &k->tab[j];
        if (!e->key)
            return NULL;
        if (e->hash == h && e->klen == n && !memcmp(e->key, key, n))
            return e;
    }
}

static centry *insert(kernel_obj *k, uint64_t h, const uint8_t *key, size_t n)
{
    if ((k->n + 1) * 2 > k->cap) {
        uint32_t cap = k->cap ? k->cap * 2 : 8;
        centry *t = calloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (uint32_t i = 0; i < k->cap; i++) {
            if (!k->tab[i].key)
                continue;
            uint32_t j = (uint32_t)k->tab[i].hash & (cap - 1);
            while (t[j].key)
                j = (j + 1) & (cap - 1);
            t[j] = k->tab[i];
        }
        free(k->tab);
        k->tab = t;
        k->cap = cap;
    }
    uint32_t j = (uint32_t)h & (k->cap - 1);
    while (k->tab[j].key)
        j = (j + 1) & (k->cap - 1);
    centry *e = &k->tab[j];
    e->key = malloc(n ? n : 1);
    if (!e->key)
        return NULL;
    memcpy(e->key, key, n);
    e->klen = n;
    e->hash = h;
    k->n++;
    return e;
}

/* ---- tracing */

static pynk_trace *pending;       /* the trace the trampoline runs */
static kernel_obj *pending_kernel;
static uint64_t next_gen = 1;

/* Records the line of the kernel's return statement. */
static int on_profile(PyObject *obj, PyFrameObject *f, int what, PyObject *arg)
{
    (void)obj;
    (void)arg;
    if (what == PyTrace_RETURN && pynk_cur) {
        PyCodeObject *code = PyFrame_GetCode(f);
        if ((PyObject *)code == pynk_cur->code)
            pynk_cur->return_line = PyFrame_GetLineNumber(f);
        Py_DECREF(code);
    }
    return 0;
}

static int return_outputs(nk_ctx *nc, nk_loc loc, PyObject *r)
{
    if (r == Py_None)
        return 0;
    if (PyTuple_Check(r) || PyList_Check(r)) {
        PyObject *seq = PySequence_Fast(r, "outputs");
        if (!seq)
            return -1;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++)
            if (return_outputs(nc, loc, PySequence_Fast_GET_ITEM(seq, i))) {
                Py_DECREF(seq);
                return -1;
            }
        Py_DECREF(seq);
        return 0;
    }
    nk_tensor t;
    if (pynk_tensor_get(r, NULL, &t, "return"))
        return -1;
    nk_return_at(nc, loc, t);
    return pynk_check();
}

/* The kernel function called with Tensor objects for its arrays (nk_kernel_fn). */
static void trampoline(nk_ctx *nc, const nk_tensor *targs, int nt)
{
    (void)nt;
    pynk_trace *T = pending;
    kernel_obj *K = pending_kernel;
    pynk_kcall *c = T->call;
    T->nc = nc;
    T->outer = pynk_cur;
    pynk_cur = T;
    PyObject *code = PyObject_GetAttrString(K->func, "__code__");
    T->code = code;
    PyObject *args = PyTuple_New(c->npos), *kw = c->kw ? PyDict_New() : NULL;
    PyObject *res = NULL;
    if (!args || (c->kw && !kw))
        goto out;
    for (int i = 0; i < c->nargs; i++) {
        PyObject *v;
        if (c->kind[i] == ARG_ARRAY)
            v = pynk_tensor_new(targs[c->slot[i]]);
        else {
            v = c->objs[i];
            Py_INCREF(v);
        }
        if (!v)
            goto out;
        if (i < c->npos) {
            PyTuple_SET_ITEM(args, i, v);
        } else {
            Py_ssize_t pos = 0, j = c->npos;
            PyObject *key, *val;
            while (PyDict_Next(c->kw, &pos, &key, &val))
                if (j++ == i)
                    break;
            int rc = PyDict_SetItem(kw, key, v);
            Py_DECREF(v);
            if (rc)
                goto out;
        }
    }
    PyThreadState *ts = PyThreadState_Get();
    Py_tracefunc old_f = ts->c_profilefunc;
    PyObject *old_o = ts->c_profileobj;
    Py_XINCREF(old_o);
    PyEval_SetProfile(on_profile, NULL);
    res = PyObject_Call(K->func, args, kw);
    PyEval_SetProfile(old_f, old_o);
    Py_XDECREF(old_o);
    if (res) {
        const char *file = "?";
        if (code) {
            PyObject *fn = PyObject_GetAttrString(code, "co_filename");
            file = fn ? PyUnicode_AsUTF8(fn) : "?";
            Py_XDECREF(fn); /* the code object keeps the string */
        }
        nk_loc loc = {file ? file : "?", T->return_line};
        if (!nc->status)
            return_outputs(nc, loc, res);
    }
out:
    if (PyErr_Occurred() && !nc->status) /* a Python error: stop the trace quietly */
        nk__fail(nc, pynk_loc(), NK_EINVAL, "the kernel raised a Python exception");
    Py_XDECREF(res);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_XDECREF(code);
    pynk_cur = T->outer;
    T->nc = NULL;
}

/* The line of the kernel's `def`: the code object's first line is its
 * first decorator's, so the def is the first line from there on that starts
 * with "def " or "async def " (linecache reads the file as Python does). */
static int def_line(PyObject *code, const char *file)
{
    PyObject *first = PyObject_GetAttrString(code, "co_firstlineno");
    long line = first ? PyLong_AsLong(first) : 0;
    Py_XDECREF(first);
    PyObject *lc = PyImport_ImportModule("linecache");
    PyObject *lines = lc ? PyObject_CallMethod(lc, "getlines", "s", file) : NULL;
    Py_XDECREF(lc);
    for (Py_ssize_t i = line - 1; lines && PyList_Check(lines) && i >= 0 && i < PyList_GET_SIZE(lines) &&
                                  i < line + 64; i++) {
        const char *t = PyUnicode_Check(PyList_GET_ITEM(lines, i)) ? PyUnicode_AsUTF8(PyList_GET_ITEM(lines, i))
                                                                   : NULL;
        while (t && (*t == ' ' || *t == '\t'))
            t++;
        if (t && (!strncmp(t, "def ", 4) || !strncmp(t, "async def ", 10))) {
            line = (long)i + 1;
            break;
        }
    }
    Py_XDECREF(lines);
    PyErr_Clear();
    return line > 0 && line < INT32_MAX ? (int)line : 0;
}

/* Names the kernel's array arguments after the function's parameters (the
 * code object's argument names for positional ones, the keyword for
 * keyword ones) and declares them at its def line: profiles then say
 * "a_tensor", at the def, instead of "in0" at "KERNEL:0". A name the
 * profile cannot carry (not printable ASCII) stays unnamed. */
static void declare_params(kernel_obj *K, pynk_kcall *c, nk_kernel *k)
{
    PyObject *code = PyObject_GetAttrString(K->func, "__code__");
    PyObject *vars = code ? PyObject_GetAttrString(code, "co_varnames") : NULL;
    PyObject *argc = code ? PyObject_GetAttrString(code, "co_argcount") : NULL;
    PyObject *fname = code ? PyObject_GetAttrString(code, "co_filename") : NULL;
    const char *file = fname && PyUnicode_Check(fname) ? PyUnicode_AsUTF8(fname) : NULL;
    long nposp = argc ? PyLong_AsLong(argc) : 0;
    const char *names[MAXARGS] = {0};
    Py_ssize_t pos = 0;
    PyObject *key, *val;
    for (int i = 0; vars && PyTuple_Check(vars) && i < c->nargs; i++) {
        PyObject *n = NULL;
        if (i < c->npos)
            n = i < nposp && i < PyTuple_GET_SIZE(vars) ? PyTuple_GET_ITEM(vars, i) : NULL;
        else if (c->kw && PyDict_Next(c->kw, &pos, &key, &val))
            n = key;
        if (c->slot[i] >= 0 && c->slot[i] < MAXARGS && n && PyUnicode_Check(n))
            names[c->slot[i]] = PyUnicode_AsUTF8(n);
    }
    PyErr_Clear();
    int line = code && file ? def_line(code, file) : 0;
    nk_loc decl = {file && line ? file : NULL, line, NULL};
    if (nk_kernel_set_params(k, decl, names, c->narr)) { /* some name it cannot carry: name the others */
        for (int i = 0; i < c->narr; i++) {
            const char *one[MAXARGS] = {0};
            one[i] = names[i];
            if (names[i] && nk_kernel_set_params(k, decl, one, c->narr))
                names[i] = NULL;
        }
        nk_kernel_set_params(k, decl, names, c->narr);
    }
    Py_XDECREF(fname);
    Py_XDECREF(argc);
    Py_XDECREF(vars);
    Py_XDECREF(code);
}

/* Traces (and compiles) the call into entry e. */
static int trace_into(kernel_obj *K, pynk_kcall *c, centry *e, int eager, int probe, pynk_trace *T)
{
    memset(T, 0, sizeof *T);
    T->gen = next_gen++;
    T->sequence = K->sequence;
    T->eager = eager;
    T->probe = probe;
    T->probe_out = -1;
    T->call = c;
    e->k = nk_kernel_new(K->name, trampoline);
    if (!e->k) {
        PyErr_NoMemory();
        return -1;
    }
    declare_params(K, c, e->k);
    nk_options opts = {c->target, 0, c->table, 0};
    opts.threads = nk_cli_env_threads();
    memcpy(opts.grid, c->grid, sizeof opts.grid);
    memcpy(opts.grid_nc, c->grid_nc, sizeof opts.grid_nc);
    pynk_trace *saved = pending;
    kernel_obj *saved_k = pending_kernel;
    pending = T;
    pending_kernel = K;
    double t0 = now_ns();
    int rc = nk_kernel_compile(e->k, c->arr, c->narr, &opts, &e->p);
    e->trace_ns = now_ns() - t0;
    pending = saved;
    pending_kernel = saved_k;
    if (rc) {
        const char *msg = nk_kernel_error(e->k);
        if (!PyErr_Occurred() && !strncmp(msg, "launch grid:", 12)) { /* kernel[grid]: at the call */
            nk_loc l = pynk_loc();
            PyErr_Format(pynk_KernelError, "%s:%d: %s", l.file ? l.file : "?", l.line, msg);
        } else if (!PyErr_Occurred())
            PyErr_SetString(pynk_KernelError, msg);
        return -1;
    }
    if (PyErr_Occurred()) /* a Python error the tracer did not see */
        return -1;
    e->nout = nk_program_num_outputs(e->p);
    if (e->nout > 16) {
        PyErr_SetString(PyExc_ValueError, "a kernel returns at most 16 outputs");
        return -1;
    }
    for (int i = 0; i < e->nout; i++)
        nk_program_output(e->p, i, &e->out[i]);
    K->traces++;
    return 0;
}

static void entry_free(centry *e)
{
    nk_kernel_free(e->k);
    free(e->key);
    memset(e, 0, sizeof *e);
}

/* ---- running */

static PyObject *to_torch(PyObject *a, int bf16)
{
    if (bf16) { /* the bits as int16, viewed as bfloat16 */
        PyObject *i16 = PyArray_View((PyArrayObject *)a, PyArray_DescrFromType(NPY_INT16), NULL);
        if (!i16)
            return NULL;
        PyObject *t = PyObject_CallFunctionObjArgs(torch_from_numpy, i16, NULL);
        Py_DECREF(i16);
        if (!t)
            return NULL;
        PyObject *v = PyObject_CallMethod(t, "view", "O", torch_bf16);
        Py_DECREF(t);
        return v;
    }
    return PyObject_CallFunctionObjArgs(torch_from_numpy, a, NULL);
}

/* Output i as the caller gets it: low-precision floats as float32 (unless
 * raw bits were asked for), torch tensors when the inputs were. */
static PyObject *finish_output(PyObject *raw, nk_dtype dt, int torch)
{
    int lowp = dt == NK_BF16 || (dt >= NK_FP8_E4M3 && dt <= NK_FP8_E5M2);
    if (torch && dt == NK_BF16) {
        PyObject *t = to_torch(raw, 1);
        Py_DECREF(raw);
        return t;
    }
    if (lowp && !low_precision_raw) {
        PyArrayObject *a = (PyArrayObject *)raw;
        PyObject *f = PyArray_SimpleNew(PyArray_NDIM(a), PyArray_DIMS(a), NPY_FLOAT32);
        if (f)
            nk_convert_to_f32(dt, PyArray_DATA(a), PyArray_DATA((PyArrayObject *)f), (size_t)PyArray_SIZE(a));
        Py_DECREF(raw);
        raw = f;
        if (!raw)
            return NULL;
    }
    if (torch) {
        PyObject *t = to_torch(raw, 0);
        Py_DECREF(raw);
        return t;
    }
    return raw;
}

/* Runs e's program on the call's arrays; returns the outputs (one object,
 * a tuple, or placeholders when the call had no values). */
static PyObject *run(kernel_obj *K, centry *e, pynk_kcall *c, int execute)
{
    if (c->placeholders && e->nout == 0) /* an older-style kernel: results went into its arguments */
        Py_RETURN_NONE;
    if (c->placeholders) {
        if (e->nout == 1)
            return placeholder_new(e->out[0].ndim, e->out[0].shape, e->out[0].dtype);
        PyObject *t = PyTuple_New(e->nout);
        for (int i = 0; t && i < e->nout; i++) {
            PyObject *p = placeholder_new(e->out[i].ndim, e->out[i].shape, e->out[i].dtype);
            if (!p) {
                Py_CLEAR(t);
                break;
            }
            PyTuple_SET_ITEM(t, i, p);
        }
        return t;
    }
    PyObject *outs[16];
    nk_array oa[16];
    int n = e->nout;
    for (int i = 0; i < n; i++) {
        npy_intp dims[NK_MAXDIM];
        for (int d = 0; d < e->out[i].ndim; d++)
            dims[d] = (npy_intp)e->out[i].shape[d];
        outs[i] = PyArray_SimpleNew(e->out[i].ndim, dims, npy_of(e->out[i].dtype));
        if (!outs[i]) {
            while (i-- > 0)
                Py_DECREF(outs[i]);
            return NULL;
        }
        oa[i] = e->out[i];
        oa[i].data = PyArray_DATA((PyArrayObject *)outs[i]);
    }
    const nk_program *p = e->p;
    void *stack[64], **hbm = p->nbufs <= 64 ? stack : calloc(p->nbufs, sizeof *hbm);
    int rc = hbm ? nk__program_bind(p, c->arr, c->narr, oa, n, hbm) : NK_ENOMEM;
    if (!rc) {
        double t0 = now_ns();
        if (execute) {
            Py_BEGIN_ALLOW_THREADS
            rc = nk__execute(p, hbm);
            Py_END_ALLOW_THREADS
        }
        K->exec_ns = now_ns() - t0;
        K->exec_total_ns += K->exec_ns;
        nk__program_unbind(p, hbm);
    }
    if (hbm != stack)
        free(hbm);
    if (rc) {
        for (int i = 0; i < n; i++)
            Py_DECREF(outs[i]);
        PyErr_Format(PyExc_RuntimeError, "%s: running the program failed: %s", K->name,
                     rc == NK_EIO && nk_last_error()[0] ? nk_last_error() : nk_strerror(rc));
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        outs[i] = finish_output(outs[i], e->out[i].dtype, c->torch);
        if (!outs[i]) {
            for (int j = 0; j < n; j++)
                if (j != i)
                    Py_XDECREF(outs[j]);
            return NULL;
        }
    }
    if (n == 1)
        return outs[0];
    if (n == 0) /* an older-style kernel wrote into its arguments and returns nothing, as in NKI */
        Py_RETURN_NONE;
    PyObject *t = PyTuple_New(n);
    for (int i = 0; i < n; i++) {
        if (t)
            PyTuple_SET_ITEM(t, i, outs[i]);
        else
            Py_DECREF(outs[i]);
    }
    return t;
}

/* Reads the arguments into c and the signature into k; grid (NULL: none)
 * is the launch grid of kernel[grid](...). */
static int read_call(kernel_obj *K, PyObject *args, PyObject *kw, pynk_kcall *c, keybuf *k, const kernel_obj *grid)
{
    memset(c->grid, 0, sizeof c->grid);
    memset(c->grid_nc, 0, sizeof c->grid_nc);
    if (grid) {
        memcpy(c->grid, grid->g, sizeof c->grid);
        memcpy(c->grid_nc, grid->gnc, sizeof c->grid_nc);
    }
    uint8_t gt = 'G';
    if (kput(k, &gt, 1) || kput(k, c->grid, sizeof c->grid) || kput(k, c->grid_nc, sizeof c->grid_nc))
        return -1;
    c->nargs = 0;
    c->narr = 0;
    c->nkeep = 0;
    c->placeholders = c->torch = 0;
    c->pos = args;
    c->kw = kw && PyDict_GET_SIZE(kw) ? kw : NULL;
    c->npos = (int)PyTuple_GET_SIZE(args);
    if (resolve_target(K, c->target, &c->table))
        return -1;
    uint8_t tl = (uint8_t)strlen(c->target);
    if (kput(k, &tl, 1) || kput(k, c->target, tl))
        return -1;
    if (c->npos + (c->kw ? PyDict_GET_SIZE(c->kw) : 0) > MAXARGS) {
        PyErr_SetString(PyExc_ValueError, "a kernel takes at most 32 arguments");
        return -1;
    }
    for (int i = 0; i < c->npos; i++) {
        if (add_arg(c, PyTuple_GET_ITEM(args, i), i, k, i < MAXARGS ? K->want[i] : -1))
            return -1;
        c->nargs++;
    }
    if (c->kw) {
        Py_ssize_t pos = 0;
        PyObject *key, *val;
        while (PyDict_Next(c->kw, &pos, &key, &val)) {
            Py_ssize_t n;
            const char *s = PyUnicode_AsUTF8AndSize(key, &n);
            uint8_t h = 'K';
            uint32_t ln = (uint32_t)n;
            if (!s || kput(k, &h, 1) || kput(k, &ln, 4) || kput(k, s, ln))
                return -1;
            if (add_arg(c, val, c->nargs, k, -1))
                return -1;
            c->nargs++;
        }
    }
    return 0;
}

static PyObject *bench_and_report(kernel_obj *K, centry *e, pynk_kcall *c, int traced);
static PyObject *profile_and_report(kernel_obj *K, centry *e, pynk_kcall *c);

/* One axis of a launch grid: an int, nl.nc(n), or nl.spmd_dim(...) (the
 * glue in language.py gives both _nklab_size and _nklab_nc). */
static int grid_axis(PyObject *d, int axis, int *size, int *nc)
{
    *nc = 0;
    if (PyLong_Check(d)) {
        long long v = PyLong_AsLongLong(d);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v < 1 || v > NK_MAX_INSTANCES) {
            PyErr_Format(PyExc_ValueError, "kernel[grid]: axis %d of the launch grid is %lld; it must be 1..%d", axis,
                         v, NK_MAX_INSTANCES);
            return -1;
        }
        *size = (int)v;
        return 0;
    }
    PyObject *sz = PyObject_GetAttrString(d, "_nklab_size");
    PyObject *cs = sz ? PyObject_GetAttrString(d, "_nklab_nc") : NULL;
    if (!sz || !cs) {
        Py_XDECREF(sz);
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "kernel[grid]: axis %d of the launch grid is a %s; it must be an int, nl.nc(n) "
                     "or nl.spmd_dim(...)", axis, Py_TYPE(d)->tp_name);
        return -1;
    }
    *size = (int)PyLong_AsLong(sz);
    *nc = (int)PyLong_AsLong(cs);
    Py_DECREF(sz);
    Py_DECREF(cs);
    return PyErr_Occurred() ? -1 : 0;
}

/* kernel[grid]: the grid's sizes and nl.nc annotations; the tracer checks
 * them against the target when the kernel is called. */
static int grid_parse(PyObject *grid, int *g, int *gnc)
{
    memset(g, 0, NK_MAX_GRID * sizeof *g);
    memset(gnc, 0, NK_MAX_GRID * sizeof *gnc);
    if (!grid || grid == Py_None)
        return 0;
    if (!PyTuple_Check(grid) && !PyList_Check(grid))
        return grid_axis(grid, 0, &g[0], &gnc[0]);
    Py_ssize_t n = PySequence_Size(grid);
    if (n < 1 || n > NK_MAX_GRID) {
        PyErr_Format(PyExc_ValueError, "kernel[grid]: a launch grid has 1 to %d axes, not %zd", NK_MAX_GRID, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_GetItem(grid, i);
        int rc = d ? grid_axis(d, (int)i, &g[i], &gnc[i]) : -1;
        Py_XDECREF(d);
        if (rc)
            return -1;
    }
    return 0;
}

/* ---- sequences: a kernel called while an nklab.sequence is traced is
 * launched into the sequence's program (nk_launch) */

static struct {
    kernel_obj *K;
    PyObject *args, *kw;
    pynk_trace *T; /* the launched kernel's trace record (the sequence's context) */
} launching;

static void launch_trampoline(nk_ctx *nc, const nk_tensor *targs, int nt)
{
    (void)targs;
    (void)nt;
    kernel_obj *K = launching.K;
    pynk_trace *T = launching.T;
    pynk_trace *outer = pynk_cur;
    pynk_cur = T;
    PyObject *res = PyObject_Call(K->func, launching.args, launching.kw);
    if (res && !nc->status) {
        const char *file = "?";
        PyObject *fn = T->code ? PyObject_GetAttrString(T->code, "co_filename") : NULL;
        if (fn)
            file = PyUnicode_AsUTF8(fn);
        Py_XDECREF(fn);
        return_outputs(nc, (nk_loc){file ? file : "?", T->return_line}, res);
    }
    if (PyErr_Occurred() && !nc->status)
        nk__fail(nc, pynk_loc(), NK_EINVAL, "the kernel raised a Python exception");
    Py_XDECREF(res);
    pynk_cur = outer;
}

static PyObject *launch_in_sequence(kernel_obj *K, PyObject *args, PyObject *kw)
{
    pynk_trace *outer = pynk_cur;
    pynk_trace L = *outer;
    L.outer = outer;
    L.return_line = 0;
    L.code = PyObject_GetAttrString(K->func, "__code__");
    if (!L.code)
        return NULL;
    launching.K = K;
    launching.args = args;
    launching.kw = kw;
    launching.T = &L;
    nk_tensor outs[16];
    nk_loc loc = pynk_loc();
    int n = nk_launch_at(outer->nc, loc, K->name, launch_trampoline, NULL, 0, outs, 16);
    Py_DECREF(L.code);
    launching.K = NULL;
    if (n < 0 || PyErr_Occurred()) {
        if (!PyErr_Occurred())
            pynk_check();
        return NULL;
    }
    if (n == 0)
        Py_RETURN_NONE;
    if (n == 1)
        return pynk_tensor_new(outs[0]);
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *v = pynk_tensor_new(outs[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *kernel_call(PyObject *self, PyObject *args, PyObject *kw)
{
    kernel_obj *K = (kernel_obj *)self;
    const kernel_obj *launch = NULL;
    if (K->parent) { /* kernel[grid](...) */
        launch = K;
        K = (kernel_obj *)K->parent;
    }
    if (pynk_cur && pynk_cur->nc) {
        if (pynk_cur->sequence && !launch && !pynk_cur->eager)
            return launch_in_sequence(K, args, kw);
        PyErr_Format(PyExc_NotImplementedError, "%s: calling a kernel from inside a kernel is not implemented by "
                     "nklab%s (call it as a plain Python function, or trace the caller as an nklab.sequence)",
                     K->name, launch ? " with a launch grid" : "");
        return NULL;
    }
    pynk_kcall c;
    keybuf k = {.b = NULL, .n = 0, .cap = sizeof k.stack};
    k.b = k.stack;
    PyObject *ret = NULL;
    int eager = K->mode == MODE_EAGER || env_flag("NKLAB_EAGER");
    if (read_call(K, args, kw, &c, &k, launch))
        goto out;
    uint64_t h = hash_bytes(k.b, k.n);
    centry *e = eager ? NULL : lookup(K, h, k.b, k.n);
    int traced = 0;
    centry tmp = {0};
    if (!e) {
        pynk_trace T;
        if (trace_into(K, &c, &tmp, eager, -1, &T)) { /* a failed trace is not kept */
            entry_free(&tmp);
            goto out;
        }
        traced = 1;
        if (eager) {
            e = &tmp;
        } else {
            e = insert(K, h, k.b, k.n);
            if (!e) {
                entry_free(&tmp);
                PyErr_NoMemory();
                goto out;
            }
            uint8_t *key = e->key;
            *e = tmp;
            e->key = key;
            e->klen = k.n;
            e->hash = h;
        }
    } else {
        K->hits++;
    }
    if (K->mode == MODE_BENCHMARK)
        ret = bench_and_report(K, e, &c, traced);
    else if (K->mode == MODE_PROFILE)
        ret = profile_and_report(K, e, &c);
    else
        ret = run(K, e, &c, 1);
    if (eager)
        entry_free(&tmp);
out:
    kcall_release(&c);
    kfree(&k);
    return ret;
}

/* ---- eager values: the probe */

/* In a probe at the requested print: the value stored into a new output. */
static int capture(nk_ctx *nc, nk_loc loc, nk_tensor t)
{
    if (t.pdim) {
        nk__fail(nc, loc, NK_EINVAL, "printing a tile array: index one of its tiles");
        return -1;
    }
    nk_shape s = {t.ndim, {0}};
    for (int i = 0; i < t.ndim; i++)
        s.d[i] = t.shape[i];
    nk_tensor h = nk_ndarray_at(nc, loc, s, (nk_dtype)t.dtype, NK_SHARED_HBM);
    if (t.mem == NK_SHARED_HBM) { /* through SBUF, 128 rows at a time */
        nk_tensor src = t, dst = h;
        if (t.ndim != 2) {
            int64_t rows = 1;
            for (int i = 0; i < t.ndim - 1; i++)
                rows *= t.shape[i];
            nk_shape s2 = {2, {rows, t.shape[t.ndim - 1]}};
            src = nk_reshape_at(nc, loc, t, s2);
            dst = nk_reshape_at(nc, loc, h, s2);
        }
        for (int64_t r = 0; r < src.shape[0] && !nc->status; r += NK_PMAX) {
            int64_t e = r + NK_PMAX < src.shape[0] ? r + NK_PMAX : src.shape[0];
            nk_range rr[1] = {nk_r(r, e)};
            nk_tensor tile = nk_load_at(nc, loc, nk_ix_at(nc, loc, src, 1, rr));
            nk_store_at(nc, loc, nk_ix_at(nc, loc, dst, 1, rr), tile);
        }
    } else {
        nk_tensor v = t.mem == NK_PSUM ? nk_copy_at(nc, loc, t, (nk_dtype)t.dtype) : t;
        nk_store_at(nc, loc, h, v);
    }
    nk_return_at(nc, loc, h);
    return nc->status ? -1 : 0;
}

static PyObject *text_of_values(PyObject *arr, const nk_tensor *t)
{
    static const char *const mem[] = {"hbm", "sbuf", "psum"};
    PyObject *r = PyObject_Str(arr);
    if (!r)
        return NULL;
    char shape[96];
    int k = snprintf(shape, sizeof shape, "[");
    for (int i = 0; i < t->ndim; i++)
        k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%d", i ? ", " : "", t->shape[i]);
    snprintf(shape + k, sizeof shape - (size_t)k, "]");
    PyObject *s = PyUnicode_FromFormat("%s %s %s:\n%U", mem[t->mem < 3 ? t->mem : 0], shape,
                                       nk_dtype_name(t->dtype), r);
    Py_DECREF(r);
    return s;
}

PyObject *pynk_tensor_values(PyObject *tensor)
{
    pynk_trace *T = pynk_cur;
    nk_tensor t;
    if (pynk_tensor_get(tensor, NULL, &t, "print"))
        return NULL;
    int j = T->nrequests++;
    if (T->probe >= 0) { /* a probe: capture request #probe, ignore the others */
        if (j == T->probe && T->probe_out < 0) {
            T->probe_out = nk_program_num_outputs(T->nc->p);
            capture(T->nc, pynk_loc(), t);
            if (pynk_check())
                return NULL;
        }
        return PyUnicode_FromString("");
    }
    if (T->call->placeholders)
        return PyUnicode_FromString("<values: the kernel was called with placeholders>");
    /* trace again as a probe, its output printed nowhere */
    kernel_obj *K = pending_kernel;
    centry e = {0};
    pynk_trace P;
    PyObject *sys_stdout = PySys_GetObject("stdout");
    Py_XINCREF(sys_stdout);
    PyObject *sink = stringio ? PyObject_CallNoArgs(stringio) : NULL;
    if (sink)
        PySys_SetObject("stdout", sink);
    pynk_trace *saved_cur = pynk_cur;
    pynk_cur = T->outer;
    int rc = trace_into(K, T->call, &e, 1, j, &P);
    pynk_cur = saved_cur;
    if (sys_stdout)
        PySys_SetObject("stdout", sys_stdout);
    Py_XDECREF(sys_stdout);
    Py_XDECREF(sink);
    PyObject *result = NULL;
    if (rc || P.probe_out < 0) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        result = ev ? PyUnicode_FromFormat("<values unavailable: %S>", ev)
                    : PyUnicode_FromString("<values unavailable>");
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
    } else {
        double saved_exec = K->exec_ns, saved_total = K->exec_total_ns;
        pynk_kcall *c = T->call;
        int torch = c->torch;
        c->torch = 0;
        int keep_raw = low_precision_raw;
        low_precision_raw = 0;
        PyObject *outs = run(K, &e, c, 1);
        low_precision_raw = keep_raw;
        c->torch = torch;
        K->exec_ns = saved_exec;
        K->exec_total_ns = saved_total;
        if (outs) {
            PyObject *v = e.nout == 1 ? outs : PyTuple_GET_ITEM(outs, P.probe_out);
            result = text_of_values(v, &t);
            Py_DECREF(outs);
        }
    }
    entry_free(&e);
    return result;
}

/* ---- benchmark and profile */

typedef struct {
    PyObject_HEAD
    nk_bench_result r;
    int which;
    PyObject *owner;
} latency_obj;

static void latency_dealloc(PyObject *self)
{
    latency_obj *l = (latency_obj *)self;
    if (l->owner)
        Py_DECREF(l->owner);
    else
        nk_bench_result_free(&l->r);
    PyObject_Free(self);
}

static PyObject *latency_pct(PyObject *self, PyObject *arg)
{
    latency_obj *l = (latency_obj *)self;
    const nk_bench_result *r = l->owner ? &((latency_obj *)l->owner)->r : &l->r;
    double p = PyFloat_AsDouble(arg);
    if (p == -1.0 && PyErr_Occurred())
        return NULL;
    double v = nk_bench_latency_percentile(r, (nk_latency)l->which, p);
    if (v != v) {
        PyErr_Format(PyExc_ValueError, "percentile %g is outside 0..100", p);
        return NULL;
    }
    return PyFloat_FromDouble(v);
}

static PyObject *latency_mean(PyObject *self, PyObject *unused)
{
    (void)unused;
    latency_obj *l = (latency_obj *)self;
    const nk_bench_result *r = l->owner ? &((latency_obj *)l->owner)->r : &l->r;
    return PyFloat_FromDouble(nk_bench_latency_mean(r, (nk_latency)l->which));
}

static PyObject *latency_get(PyObject *self, void *closure);

static PyMethodDef latency_methods[] = {
    {"get_latency_percentile", latency_pct, METH_O, "the p-th percentile in microseconds"},
    {"get_latency_mean", latency_mean, METH_NOARGS, "the mean in microseconds"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef latency_getset[] = {
    {"nc_latency", latency_get, NULL, "device latency (modelled)", (void *)1},
    {"e2e_latency", latency_get, NULL, "end-to-end latency", (void *)0},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LatencyType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.BenchmarkResult",
    .tp_basicsize = sizeof(latency_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a benchmark's latencies: .nc_latency / .e2e_latency .get_latency_percentile(p) in microseconds",
    .tp_dealloc = latency_dealloc,
    .tp_methods = latency_methods,
    .tp_getset = latency_getset,
};

static PyObject *latency_get(PyObject *self, void *closure)
{
    latency_obj *l = PyObject_New(latency_obj, &LatencyType);
    if (!l)
        return NULL;
    memset(&l->r, 0, sizeof l->r);
    l->which = closure ? NK_LATENCY_NC : NK_LATENCY_E2E;
    l->owner = ((latency_obj *)self)->owner ? ((latency_obj *)self)->owner : self;
    Py_INCREF(l->owner);
    return (PyObject *)l;
}

static int py_write(const char *text)
{
    PyObject *out = PySys_GetObject("stdout");
    if (!out || out == Py_None)
        return 0;
    PyObject *r = PyObject_CallMethod(out, "write", "s", text);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static int save_files(kernel_obj *K, const nk_program *p, const char *neff, const char *trace)
{
    char msg[1024];
    if (neff) {
        int rc = nk_program_save(p, neff);
        if (rc) {
            PyErr_Format(PyExc_OSError, "cannot write the compiled program to %s: %s", neff,
                         rc == NK_EIO && nk__file_error()[0] ? nk__file_error() : nk_strerror(rc));
            return -1;
        }
    }
    if (trace) {
        nk_profile *pr = NULL;
        int rc = nk_profile_capture(p, NULL, &pr);
        nk_cli_env_stamp_profile(pr);
        if (!rc)
            rc = nk_profile_write(pr, trace);
        nk_profile_free(pr);
        if (rc) {
            PyErr_Format(PyExc_OSError, "cannot write the profile to %s: %s", trace,
                         rc == NK_EIO && nk__file_error()[0] ? nk__file_error() : nk_strerror(rc));
            return -1;
        }
    }
    if (neff && trace)
        snprintf(msg, sizeof msg, "wrote %s (compiled program) and %s (profile: nklab view %s)\n", neff, trace,
                 trace);
    else if (neff)
        snprintf(msg, sizeof msg, "wrote %s (compiled program)\n", neff);
    else if (trace)
        snprintf(msg, sizeof msg, "wrote %s (profile: nklab view %s)\n", trace, trace);
    else
        return 0;
    (void)K;
    return py_write(msg);
}

static const char *str_or_null(PyObject *o)
{
    return o && o != Py_None ? PyUnicode_AsUTF8(o) : NULL;
}

static PyObject *bench_and_report(kernel_obj *K, centry *e, pynk_kcall *c, int traced)
{
    /* placeholders: zeroed inputs, timing only */
    nk_array arr[MAXARGS];
    memcpy(arr, c->arr, sizeof arr);
    void *bufs[MAXARGS] = {0};
    int execute = !c->placeholders;
    double weights = 0;
    for (int i = 0; i < c->narr; i++) {
        if (arr[i].ndim == 0)
            continue;
        weights += (double)nk_array_nbytes(&arr[i]);
        if (!arr[i].data) {
            int64_t shape[NK_MAXDIM];
            memcpy(shape, arr[i].shape, sizeof shape);
            if (nk_array_alloc(&arr[i], arr[i].dtype, arr[i].ndim, shape)) {
                for (int j = 0; j < i; j++)
                    free(bufs[j]);
                return PyErr_NoMemory();
            }
            bufs[i] = arr[i].data;
        }
    }
    nk_options opts = {c->target, 0, c->table, 0};
    opts.threads = nk_cli_env_threads();
    memcpy(opts.grid, c->grid, sizeof opts.grid);
    memcpy(opts.grid_nc, c->grid_nc, sizeof opts.grid_nc);
    nk_bench_options bo = {K->warmup, K->iters, execute, NULL, NULL};
    latency_obj *res = PyObject_New(latency_obj, &LatencyType);
    int rc = res ? 0 : NK_ENOMEM;
    if (res) {
        res->owner = NULL;
        res->which = NK_LATENCY_NC;
        memset(&res->r, 0, sizeof res->r);
        Py_BEGIN_ALLOW_THREADS
        rc = nk_bench(e->k, arr, c->narr, &opts, &bo, &res->r);
        Py_END_ALLOW_THREADS
    }
    for (int i = 0; i < c->narr; i++)
        free(bufs[i]);
    if (rc) {
        Py_XDECREF(res);
        PyErr_Format(pynk_KernelError, "%s: benchmark failed: %s", K->name, nk_strerror(rc));
        return NULL;
    }
    if (traced)
        res->r.compile_ns = e->trace_ns;
    char *text = NULL;
    if (nk_bench_format_table(K->name, &res->r, weights, &text)) {
        Py_DECREF(res);
        return PyErr_NoMemory();
    }
    int wr = py_write(text);
    free(text);
    if (wr || PyDict_SetItemString(K->dict, "benchmark_result", (PyObject *)res)) {
        Py_DECREF(res);
        return NULL;
    }
    Py_DECREF(res);
    if (save_files(K, e->p, str_or_null(K->save_neff), str_or_null(K->save_trace)))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *join_dir(PyObject *dir, PyObject *name)
{
    if (!name || name == Py_None)
        return NULL;
    if (!dir || dir == Py_None) {
        Py_INCREF(name);
        return name;
    }
    PyObject *os = PyImport_ImportModule("os.path");
    PyObject *r = os ? PyObject_CallMethod(os, "join", "OO", dir, name) : NULL;
    Py_XDECREF(os);
    return r;
}

static PyObject *profile_and_report(kernel_obj *K, centry *e, pynk_kcall *c)
{
    PyObject *outs = run(K, e, c, 1);
    if (!outs)
        return NULL;
    PyObject *trace_name = K->save_trace && K->save_trace != Py_None ? K->save_trace : NULL;
    PyObject *deflt = NULL;
    if (!trace_name)
        trace_name = deflt = PyUnicode_FromString("profile.ntff");
    PyObject *neff = join_dir(K->workdir, K->save_neff), *trace = join_dir(K->workdir, trace_name);
    if (K->workdir && K->workdir != Py_None) {
        PyObject *os = PyImport_ImportModule("os");
        PyObject *mk = os ? PyObject_GetAttrString(os, "makedirs") : NULL;
        PyObject *a = mk ? PyTuple_Pack(1, K->workdir) : NULL;
        PyObject *kw = a ? Py_BuildValue("{sO}", "exist_ok", Py_True) : NULL;
        PyObject *r = kw ? PyObject_Call(mk, a, kw) : NULL;
        Py_XDECREF(mk);
        Py_XDECREF(a);
        Py_XDECREF(kw);
        Py_XDECREF(os);
        Py_XDECREF(r);
    }
    int rc = PyErr_Occurred() ? -1 : save_files(K, e->p, str_or_null(neff), str_or_null(trace));
    Py_XDECREF(neff);
    Py_XDECREF(trace);
    Py_XDECREF(deflt);
    if (rc) {
        Py_DECREF(outs);
        return NULL;
    }
    return outs;
}

/* ---- the type */

static const char *const kernel_kwlist[] = {"func", "mode", "platform_target", "warmup", "iters", "save_neff_name",
                                            "save_trace_name", "working_directory", "sequence", NULL};

static int kernel_init(PyObject *self, PyObject *args, PyObject *kw)
{
    kernel_obj *K = (kernel_obj *)self;
    PyObject *func, *mode = NULL, *target = NULL, *neff = NULL, *trace = NULL, *wd = NULL;
    int warmup = 10, iters = 100, sequence = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOiiOOOp", (char **)kernel_kwlist, &func, &mode, &target, &warmup,
                                     &iters, &neff, &trace, &wd, &sequence))
        return -1;
    K->sequence = sequence;
    if (!PyCallable_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "a kernel is a function");
        return -1;
    }
    if (warmup < 0 || iters < 1) {
        PyErr_SetString(PyExc_ValueError, "warmup >= 0 and iters >= 1");
        return -1;
    }
    Py_INCREF(func);
    Py_XSETREF(K->func, func);
    K->dict = PyDict_New();
    if (!K->dict)
        return -1;
    PyObject *name = PyObject_GetAttrString(func, "__name__");
    snprintf(K->name, sizeof K->name, "%s", name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : "kernel");
    Py_XDECREF(name);
    PyErr_Clear();
    const char *m = mode && mode != Py_None ? PyUnicode_AsUTF8(mode) : "jit";
    if (!m)
        return -1;
    K->mode = !strcmp(m, "eager") || !strcmp(m, "simulation") ? MODE_EAGER
              : !strcmp(m, "benchmark")                       ? MODE_BENCHMARK
              : !strcmp(m, "profile")                         ? MODE_PROFILE
              : !strcmp(m, "baremetal")                       ? MODE_BAREMETAL
                                                              : MODE_JIT;
    const char *t = str_or_null(target);
    if (t && !nk_target_builtin(t)) {
        PyErr_Format(PyExc_ValueError, "unknown platform_target '%s' (nklab models trn1 and trn2)", t);
        return -1;
    }
    snprintf(K->target, sizeof K->target, "%s", t ? t : "");
    K->warmup = warmup;
    K->iters = iters;
    Py_XINCREF(neff);
    Py_XINCREF(trace);
    Py_XINCREF(wd);
    K->save_neff = neff;
    K->save_trace = trace;
    K->workdir = wd;
    /* parameters annotated nt.tensor[shape, nl.bfloat16]: float32 arrays passed there are rounded */
    for (int i = 0; i < MAXARGS; i++)
        K->want[i] = -1;
    PyObject *code = PyObject_GetAttrString(func, "__code__");
    PyObject *ann = PyObject_GetAttrString(func, "__annotations__");
    PyObject *names = code ? PyObject_GetAttrString(code, "co_varnames") : NULL;
    PyObject *argc = code ? PyObject_GetAttrString(code, "co_argcount") : NULL;
    PyErr_Clear();
    if (ann && PyDict_Check(ann) && names && argc) {
        long n = PyLong_AsLong(argc);
        for (long i = 0; i < n && i < MAXARGS && i < PyTuple_GET_SIZE(names); i++) {
            PyObject *a = PyDict_GetItem(ann, PyTuple_GET_ITEM(names, i));
            if (a && PyObject_TypeCheck(a, &pynk_PlaceholderType))
                K->want[i] = ((placeholder_obj *)a)->dtype;
        }
    }
    Py_XDECREF(code);
    Py_XDECREF(ann);
    Py_XDECREF(names);
    Py_XDECREF(argc);
    PyErr_Clear();
    return 0;
}

static void kernel_dealloc(PyObject *self)
{
    kernel_obj *K = (kernel_obj *)self;
    for (uint32_t i = 0; i < K->cap; i++)
        if (K->tab[i].key)
            entry_free(&K->tab[i]);
    free(K->tab);
    Py_XDECREF(K->func);
    Py_XDECREF(K->dict);
    Py_XDECREF(K->save_neff);
    Py_XDECREF(K->save_trace);
    Py_XDECREF(K->workdir);
    Py_XDECREF(K->grid);
    Py_XDECREF(K->parent);
    Py_TYPE(self)->tp_free(self);
}

/* kernel[grid]: a launch of the same kernel (its cache) on a grid. */
static PyObject *kernel_getitem(PyObject *self, PyObject *grid)
{
    kernel_obj *K = (kernel_obj *)self;
    kernel_obj *L = (kernel_obj *)pynk_KernelType.tp_alloc(&pynk_KernelType, 0);
    if (!L)
        return NULL;
    PyObject *parent = K->parent ? K->parent : self;
    Py_INCREF(parent);
    Py_INCREF(grid);
    L->parent = parent;
    L->grid = grid;
    L->func = ((kernel_obj *)parent)->func;
    Py_INCREF(L->func);
    L->dict = PyDict_New();
    snprintf(L->name, sizeof L->name, "%s", K->name);
    if (!L->dict) {
        Py_DECREF(L);
        return NULL;
    }
    if (grid_parse(grid, L->g, L->gnc)) { /* refused where it is written */
        Py_DECREF(L);
        return NULL;
    }
    return (PyObject *)L;
}

static PyMappingMethods kernel_mapping = {.mp_subscript = kernel_getitem};

static PyObject *kernel_getattro(PyObject *self, PyObject *name)
{
    kernel_obj *K = (kernel_obj *)self;
    PyObject *v = PyObject_GenericGetAttr(self, name);
    if (v || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return v;
    PyErr_Clear();
    v = K->dict ? PyDict_GetItemWithError(K->dict, name) : NULL;
    if (v) {
        Py_INCREF(v);
        return v;
    }
    if (!PyErr_Occurred()) /* the function's own attributes (__name__, __doc__ ...) */
        return PyObject_GetAttr(K->func, name);
    return NULL;
}

static int kernel_setattro(PyObject *self, PyObject *name, PyObject *v)
{
    kernel_obj *K = (kernel_obj *)self;
    if (v)
        return PyDict_SetItem(K->dict, name, v);
    return PyDict_DelItem(K->dict, name);
}

static PyObject *kernel_repr(PyObject *self)
{
    kernel_obj *K = (kernel_obj *)self;
    static const char *const modes[] = {"jit", "simulation", "benchmark", "profile", "baremetal"};
    return PyUnicode_FromFormat("<nklab kernel %s (%s)>", K->name, modes[K->mode]);
}

static PyObject *kernel_get_func(PyObject *self, void *u)
{
    (void)u;
    PyObject *f = ((kernel_obj *)self)->func;
    Py_INCREF(f);
    return f;
}

/* kernel[grid]: the grid it launches on (None for a kernel) */
static PyObject *kernel_get_grid(PyObject *self, void *u)
{
    (void)u;
    PyObject *g = ((kernel_obj *)self)->grid;
    if (!g)
        Py_RETURN_NONE;
    Py_INCREF(g);
    return g;
}

/* platform_target= as given (None: the default's resolution at call time) */
static PyObject *kernel_get_target(PyObject *self, void *u)
{
    (void)u;
    kernel_obj *K = (kernel_obj *)self;
    if (K->parent)
        K = (kernel_obj *)K->parent;
    if (!K->target[0])
        Py_RETURN_NONE;
    return PyUnicode_FromString(K->target);
}

static PyGetSetDef kernel_getset[] = {
    {"func", kernel_get_func, NULL, "the kernel function", NULL},
    {"grid", kernel_get_grid, NULL, "kernel[grid]: its launch grid (None otherwise)", NULL},
    {"platform_target", kernel_get_target, NULL, "the platform_target it was made with (None: the default)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pynk_KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.Kernel",
    .tp_basicsize = sizeof(kernel_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Kernel(func, mode='jit', platform_target=None, ...): a kernel traced once per signature",
    .tp_dealloc = kernel_dealloc,
    .tp_repr = kernel_repr,
    .tp_call = kernel_call,
    .tp_as_mapping = &kernel_mapping,
    .tp_getattro = kernel_getattro,
    .tp_setattro = kernel_setattro,
    .tp_getset = kernel_getset,
    .tp_init = kernel_init,
    .tp_new = PyType_GenericNew,
};

/* ---- the command line's kernel */

static kernel_obj *cli_kernel;

int pynk_cli_set_kernel(PyObject *k)
{
    Py_XINCREF(k);
    Py_XSETREF(cli_kernel, (kernel_obj *)k);
    return 0;
}

void pynk_cli_params(nk_kernel *k, int nargs)
{
    if (!cli_kernel)
        return;
    pynk_kcall c;
    memset(&c, 0, sizeof c);
    c.nargs = c.npos = c.narr = nargs < MAXARGS ? nargs : MAXARGS;
    for (int i = 0; i < c.nargs; i++) {
        c.kind[i] = ARG_ARRAY;
        c.slot[i] = i;
    }
    declare_params(cli_kernel, &c, k);
}

void pynk_cli_trampoline(nk_ctx *nc, const nk_tensor *targs, int nt)
{
    static pynk_kcall c;
    memset(&c, 0, sizeof c);
    c.nargs = c.npos = nt < MAXARGS ? nt : MAXARGS;
    for (int i = 0; i < c.nargs; i++) {
        c.kind[i] = ARG_ARRAY;
        c.slot[i] = i;
    }
    pynk_trace T;
    memset(&T, 0, sizeof T);
    T.gen = next_gen++;
    T.probe = T.probe_out = -1;
    T.call = &c;
    pending = &T;
    pending_kernel = cli_kernel;
    trampoline(nc, targs, nt);
    pending = NULL;
    pending_kernel = NULL;
    if (PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(pynk_KernelError))
            PyErr_Clear(); /* the command prints the tracer's message */
        else
            PyErr_Print();
    }
    PyObject *out = PySys_GetObject("stdout");
    PyObject *r = out ? PyObject_CallMethod(out, "flush", NULL) : NULL;
    Py_XDECREF(r);
    PyErr_Clear();
}

/* ---- module functions */

/* cache_info(kernel) -> {"traces", "hits", "programs", "last_exec_ns", "exec_ns"} */
static PyObject *py_cache_info(PyObject *self, PyObject *arg)
{
    (void)self;
    if (!PyObject_TypeCheck(arg, &pynk_KernelType)) {
        PyErr_SetString(PyExc_TypeError, "cache_info(kernel): a kernel made by nki.jit");
        return NULL;
    }
    kernel_obj *K = (kernel_obj *)arg;
    if (K->parent)
        K = (kernel_obj *)K->parent;
    return Py_BuildValue("{sKsKsIsdsd}", "traces", (unsigned long long)K->traces, "hits",
                         (unsigned long long)K->hits, "programs", K->n, "last_exec_ns", K->exec_ns, "exec_ns",
                         K->exec_total_ns);
}

/* program(kernel, *args) -> (instructions, listing): the compiled program of
 * a signature (traced if new), as `nklab` lists programs. */
/* The program of a signature, traced apart from the kernel's cache (not
 * counted as a trace) and handed to what(program), whose result is
 * returned: listing() and timing(). */
static PyObject *with_program(PyObject *args, const char *usage, PyObject *(*what)(const nk_program *p))
{
    if (PyTuple_GET_SIZE(args) < 1 || !PyObject_TypeCheck(PyTuple_GET_ITEM(args, 0), &pynk_KernelType)) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    kernel_obj *K = (kernel_obj *)PyTuple_GET_ITEM(args, 0), *launch = NULL;
    if (K->parent) { /* kernel[grid] */
        launch = K;
        K = (kernel_obj *)K->parent;
    }
    PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
    if (!rest)
        return NULL;
    pynk_kcall c;
    keybuf k = {.n = 0, .cap = sizeof k.stack};
    k.b = k.stack;
    PyObject *ret = NULL;
    centry e = {0};
    pynk_trace T;
    if (!read_call(K, rest, NULL, &c, &k, launch) && !trace_into(K, &c, &e, 0, -1, &T)) {
        K->traces--;
        ret = what(e.p);
    }
    entry_free(&e);
    kcall_release(&c);
    kfree(&k);
    Py_DECREF(rest);
    return ret;
}

static PyObject *listing_of(const nk_program *p)
{
    char *text = NULL;
    if (nk_program_dump(p, &text))
        return PyErr_NoMemory();
    PyObject *ret = Py_BuildValue("(ns)", (Py_ssize_t)nk_program_num_instructions(p), text);
    free(text);
    return ret;
}

static PyObject *py_listing(PyObject *self, PyObject *args)
{
    (void)self;
    return with_program(args, "listing(kernel, *args)", listing_of);
}

static PyObject *timing_of(const nk_program *p)
{
    nk_timeline *tl = NULL;
    int rc = nk__time_program(p, NULL, &tl);
    if (rc)
        return PyErr_Format(pynk_KernelError, "timing the program failed: %s", nk_strerror(rc));
    double bytes = 0;
    for (uint32_t x = 0; x < tl->ndspans; x++)
        bytes += (double)tl->dspans[x].bytes;
    PyObject *ret = Py_BuildValue("{sdsdsdsdsdsn}", "device_ns", tl->total_ns, "launch_ns", nk__timeline_launch_ns(tl),
                                  "host_in_ns", tl->host_in_ns, "host_out_ns", tl->host_out_ns, "dma_bytes", bytes,
                                  "instructions", (Py_ssize_t)nk_program_num_instructions(p));
    nk__timeline_free(tl);
    return ret;
}

/* timing(kernel, *args) -> {"device_ns", "launch_ns", "host_in_ns", "host_out_ns", "dma_bytes",
 * "instructions"}: the modelled device time of a signature's program (traced
 * if new), without executing it. */
static PyObject *py_timing(PyObject *self, PyObject *args)
{
    (void)self;
    return with_program(args, "timing(kernel, *args)", timing_of);
}

static PyObject *py_set_raw(PyObject *self, PyObject *arg)
{
    (void)self;
    int v = PyObject_IsTrue(arg);
    if (v < 0)
        return NULL;
    low_precision_raw = v;
    Py_RETURN_NONE;
}

PyMethodDef pynk_kernel_methods[] = {
    {"cast", py_cast, METH_VARARGS, "cast(array, dtype): a float32 array passed as a bfloat16/fp8 argument"},
    {"cache_info", py_cache_info, METH_O, "cache_info(kernel): traces, hits, programs, execution times"},
    {"listing", py_listing, METH_VARARGS, "listing(kernel, *args): (instructions, program listing)"},
    {"timing", py_timing, METH_VARARGS,
     "timing(kernel, *args): the modelled device time (ns) of the program, with its launch, host I/O, DMA bytes"},
    {"set_low_precision_bits", py_set_raw, METH_O,
     "set_low_precision_bits(True): bfloat16/fp8 outputs as their bits (uint16/uint8) instead of float32"},
    {NULL, NULL, 0, NULL},
};

int pynk_kernel_init(PyObject *m)
{
    if (PyType_Ready(&pynk_KernelType) < 0 || PyType_Ready(&pynk_PlaceholderType) < 0 ||
        PyType_Ready(&NtTensorType) < 0 || PyType_Ready(&CastType) < 0 || PyType_Ready(&LatencyType) < 0)
        return -1;
    Py_INCREF(&pynk_KernelType);
    if (PyModule_AddObject(m, "Kernel", (PyObject *)&pynk_KernelType) < 0)
        return -1;
    Py_INCREF(&pynk_PlaceholderType);
    if (PyModule_AddObject(m, "TensorPlaceholder", (PyObject *)&pynk_PlaceholderType) < 0)
        return -1;
    PyObject *nt = PyObject_New(PyObject, &NtTensorType);
    if (!nt || PyModule_AddObject(m, "tensor", nt) < 0)
        return -1;
    PyObject *io = PyImport_ImportModule("io");
    stringio = io ? PyObject_GetAttrString(io, "StringIO") : NULL;
    Py_XDECREF(io);
    return stringio ? 0 : -1;
}
