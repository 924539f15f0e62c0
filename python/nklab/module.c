/*
 * module.c - the _nklab extension module: the trace in progress, source
 * locations from Python frames, KernelError, dtypes, buffers and shapes.
 */
#define PY_ARRAY_UNIQUE_SYMBOL pynk_ARRAY_API
#include "pynk.h"

#include <numpy/arrayobject.h>
#include <frameobject.h>
#include <string.h>

#include "trace/trace.h"

PyObject *pynk_KernelError;
PyObject *pynk_module;
pynk_trace *pynk_cur;

/* Frames in these directories are nklab's own Python glue: a location is
 * the first frame outside them. */
static char *glue_dir;
static size_t glue_len;

/* ---- locations and errors */

static int is_glue(PyCodeObject *code)
{
    if (!glue_dir)
        return 0;
    const char *f = PyUnicode_AsUTF8(code->co_filename);
    return f && !strncmp(f, glue_dir, glue_len);
}

nk_loc pynk_loc(void)
{
    nk_loc loc = {"<python>", 0};
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    while (f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        if (!is_glue(code)) {
            const char *file = PyUnicode_AsUTF8(code->co_filename);
            loc.file = file ? file : "<python>";
            loc.line = PyFrame_GetLineNumber(f);
            Py_DECREF(code); /* the frame keeps it (and the file name) alive */
            Py_DECREF(f);
            return loc;
        }
        Py_DECREF(code);
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    PyErr_Clear();
    return loc;
}

nk_ctx *pynk_nc(const char *what)
{
    if (!pynk_cur || !pynk_cur->nc) {
        PyErr_Format(PyExc_RuntimeError, "%s is a kernel operation: call it inside a function decorated with "
                     "@nki.jit (or run by nki.simulate_kernel, nki.benchmark ...)", what);
        return NULL;
    }
    return pynk_cur->nc;
}

int pynk_check(void)
{
    if (!pynk_cur || !pynk_cur->nc)
        return 0;
    nk_ctx *nc = pynk_cur->nc;
    if (!nc->status)
        return 0;
    if (!PyErr_Occurred())
        PyErr_SetString(pynk_KernelError, nc->err);
    return -1;
}

PyObject *pynk_not_implemented(const char *api, const char *why)
{
    nk_loc l = pynk_loc();
    PyErr_Format(PyExc_NotImplementedError, "%s:%d: %s is not implemented by nklab%s%s", l.file, l.line, api,
                 why ? ": " : "", why ? why : "");
    return NULL;
}

/* ---- dtypes */

static pynk_dtype_obj dtypes[NK_DTYPE_COUNT];
static pynk_dtype_obj dtype_tf32, dtype_bool;

static PyObject *dtype_repr(PyObject *self)
{
    return PyUnicode_FromFormat("nl.%s", ((pynk_dtype_obj *)self)->name);
}

static PyObject *dtype_str(PyObject *self) { return PyUnicode_FromString(((pynk_dtype_obj *)self)->name); }

static Py_hash_t dtype_hash(PyObject *self)
{
    PyObject *s = PyUnicode_FromString(((pynk_dtype_obj *)self)->name);
    if (!s)
        return -1;
    Py_hash_t h = PyObject_Hash(s);
    Py_DECREF(s);
    return h;
}

static PyObject *dtype_richcompare(PyObject *a, PyObject *b, int op)
{
    if (op != Py_EQ && op != Py_NE)
        Py_RETURN_NOTIMPLEMENTED;
    pynk_dtype_obj *x = (pynk_dtype_obj *)a;
    int eq;
    if (PyObject_TypeCheck(b, &pynk_DtypeType)) {
        eq = !strcmp(x->name, ((pynk_dtype_obj *)b)->name);
    } else {
        nk_dtype dt;
        if (pynk_parse_dtype(b, &dt)) {
            PyErr_Clear();
            eq = 0;
        } else {
            eq = x->code >= 0 && (int)dt == x->code && x != &dtype_bool;
        }
    }
    if (op == Py_NE)
        eq = !eq;
    return PyBool_FromLong(eq);
}

/* numpy's dtype for it (np.dtype(nl.float32) works); bfloat16 and fp8 have
 * none in Debian's numpy. */
static PyObject *dtype_np(PyObject *self, void *unused)
{
    (void)unused;
    pynk_dtype_obj *d = (pynk_dtype_obj *)self;
    static const int np_types[NK_DTYPE_COUNT] = {
        [NK_F32] = NPY_FLOAT32, [NK_F16] = NPY_FLOAT16, [NK_I8] = NPY_INT8, [NK_I16] = NPY_INT16,
        [NK_I32] = NPY_INT32, [NK_U8] = NPY_UINT8, [NK_U16] = NPY_UINT16, [NK_U32] = NPY_UINT32,
    };
    if (d == &dtype_bool)
        return (PyObject *)PyArray_DescrFromType(NPY_BOOL);
    if (d->code < 0 || (d->code != NK_F32 && !np_types[d->code])) {
        PyErr_Format(PyExc_AttributeError, "numpy has no %s dtype (nklab passes float32 arrays for %s arguments)",
                     d->name, d->name);
        return NULL;
    }
    return (PyObject *)PyArray_DescrFromType(np_types[d->code]);
}

static PyObject *dtype_name(PyObject *self, void *unused)
{
    (void)unused;
    return PyUnicode_FromString(((pynk_dtype_obj *)self)->name);
}

static PyObject *dtype_itemsize(PyObject *self, void *unused)
{
    (void)unused;
    pynk_dtype_obj *d = (pynk_dtype_obj *)self;
    return PyLong_FromLong(d->code >= 0 ? nk_dtype_size(d->code) : 4);
}

static PyGetSetDef dtype_getset[] = {
    {"dtype", dtype_np, NULL, "the numpy dtype", NULL},
    {"name", dtype_name, NULL, "NKI's name", NULL},
    {"itemsize", dtype_itemsize, NULL, "bytes per element", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pynk_DtypeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.dtype",
    .tp_basicsize = sizeof(pynk_dtype_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "an NKI data type (nl.float32, nl.bfloat16, ...)",
    .tp_repr = dtype_repr,
    .tp_str = dtype_str,
    .tp_hash = dtype_hash,
    .tp_richcompare = dtype_richcompare,
    .tp_getset = dtype_getset,
};

PyObject *pynk_dtype_object(nk_dtype dt)
{
    return dt < NK_DTYPE_COUNT ? (PyObject *)&dtypes[dt] : Py_None;
}

static int parse_dtype_name(const char *s, nk_dtype *out)
{
    if (!strncmp(s, "torch.", 6))
        s += 6;
    if (!strcmp(s, "bool") || !strcmp(s, "bool_")) {
        *out = NK_U8;
        return 0;
    }
    return nk_dtype_parse(s, out);
}

int pynk_parse_dtype(PyObject *o, nk_dtype *out)
{
    if (PyObject_TypeCheck(o, &pynk_DtypeType)) {
        pynk_dtype_obj *d = (pynk_dtype_obj *)o;
        if (d->code < 0) {
            PyErr_Format(PyExc_TypeError, "nklab has no %s storage (use float32 or bfloat16)", d->name);
            return -1;
        }
        *out = (nk_dtype)d->code;
        return 0;
    }
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        if (s && !parse_dtype_name(s, out))
            return 0;
        PyErr_Format(PyExc_TypeError, "unknown dtype '%s'", s ? s : "?");
        return -1;
    }
    PyArray_Descr *descr = NULL;
    if (PyArray_DescrCheck(o) || PyType_Check(o)) {
        if (PyArray_DescrConverter2(o, &descr) && descr) {
            PyObject *name = PyObject_GetAttrString((PyObject *)descr, "name");
            Py_DECREF(descr);
            const char *s = name ? PyUnicode_AsUTF8(name) : NULL;
            int rc = s ? parse_dtype_name(s, out) : -1;
            if (rc)
                PyErr_Format(PyExc_TypeError, "nklab has no %s dtype (NeuronCores have no 64-bit types)",
                             s ? s : "such");
            Py_XDECREF(name);
            return rc ? -1 : 0;
        }
        PyErr_Clear();
    }
    PyObject *s = PyObject_Str(o); /* torch.float32, ... */
    if (!s)
        return -1;
    const char *c = PyUnicode_AsUTF8(s);
    int rc = c ? parse_dtype_name(c, out) : -1;
    if (rc)
        PyErr_Format(PyExc_TypeError, "not a dtype nklab knows: %R", o);
    Py_DECREF(s);
    return rc ? -1 : 0;
}

/* ---- buffers */

static pynk_buffer_obj buffers[5];

static PyObject *buffer_repr(PyObject *self)
{
    return PyUnicode_FromFormat("nl.%s", ((pynk_buffer_obj *)self)->name);
}

PyTypeObject pynk_BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.buffer",
    .tp_basicsize = sizeof(pynk_buffer_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a memory (nl.sbuf, nl.psum, nl.shared_hbm, nl.hbm, nl.private_hbm)",
    .tp_repr = buffer_repr,
};

int pynk_parse_buffer(PyObject *o, nk_buffer *out)
{
    if (o == NULL || o == Py_None) {
        *out = NK_SBUF;
        return 0;
    }
    if (PyObject_TypeCheck(o, &pynk_BufferType)) {
        *out = (nk_buffer)((pynk_buffer_obj *)o)->code;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "buffer must be nl.sbuf, nl.psum, nl.shared_hbm or nl.hbm, not %R", o);
    return -1;
}

/* ---- par_dim and shapes */

static PyObject *pardim_repr(PyObject *self)
{
    return PyUnicode_FromFormat("nl.par_dim(%lld)", (long long)((pynk_pardim_obj *)self)->n);
}

static PyObject *pardim_index(PyObject *self) { return PyLong_FromLongLong(((pynk_pardim_obj *)self)->n); }

static PyNumberMethods pardim_number = {.nb_index = pardim_index, .nb_int = pardim_index};

PyTypeObject pynk_ParDimType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.par_dim",
    .tp_basicsize = sizeof(pynk_pardim_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "nl.par_dim(n): the partition axis of a tile array's shape",
    .tp_repr = pardim_repr,
    .tp_as_number = &pardim_number,
};

static PyObject *lang_par_dim(PyObject *self, PyObject *arg)
{
    (void)self;
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    pynk_pardim_obj *o = PyObject_New(pynk_pardim_obj, &pynk_ParDimType);
    if (o)
        o->n = n;
    return (PyObject *)o;
}

int pynk_parse_shape(PyObject *o, nk_shape *s, int pardim)
{
    memset(s, 0, sizeof *s);
    if (PyLong_Check(o) || PyObject_TypeCheck(o, &pynk_ParDimType)) {
        PyObject *t = PyTuple_Pack(1, o);
        if (!t)
            return -1;
        int rc = pynk_parse_shape(t, s, pardim);
        Py_DECREF(t);
        return rc;
    }
    PyObject *seq = PySequence_Fast(o, "a shape is a tuple of ints");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > NK_MAXDIM) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "a shape has 1 to %d dims, got %zd", NK_MAXDIM, n);
        return -1;
    }
    s->n = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
        if (PyObject_TypeCheck(e, &pynk_ParDimType)) {
            if (!pardim) {
                Py_DECREF(seq);
                PyErr_SetString(PyExc_ValueError, "nl.par_dim is for on-chip tile arrays");
                return -1;
            }
            s->d[i] = nk_par_dim(((pynk_pardim_obj *)e)->n);
            continue;
        }
        long long v = PyLong_AsLongLong(e);
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            PyObject *ix = PyNumber_Index(e);
            if (!ix) {
                Py_DECREF(seq);
                return -1;
            }
            v = PyLong_AsLongLong(ix);
            Py_DECREF(ix);
        }
        if (v < 0) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "negative dimension %lld in a shape", v);
            return -1;
        }
        s->d[i] = v;
    }
    Py_DECREF(seq);
    return 0;
}

/* ---- the module */

static PyMethodDef module_methods[] = {
    {"par_dim", lang_par_dim, METH_O, "nl.par_dim(n): marks the partition axis of a tile array"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "nklab._nklab", "nklab's Python front-end (C extension)", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

static int add_type(PyObject *m, PyTypeObject *t, const char *name)
{
    if (PyType_Ready(t) < 0)
        return -1;
    Py_INCREF(t);
    return PyModule_AddObject(m, name, (PyObject *)t);
}

static int add_functions(PyObject *mod, PyMethodDef *defs)
{
    for (PyMethodDef *d = defs; d->ml_name; d++) {
        PyObject *f = PyCFunction_NewEx(d, NULL, pynk_module);
        if (!f || PyModule_AddObject(mod, d->ml_name, f) < 0)
            return -1;
    }
    return 0;
}

static int init_dtypes(PyObject *lang)
{
    static const char *const nki_names[NK_DTYPE_COUNT] = {
        "float32", "bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
        "int8", "int16", "int32", "uint8", "uint16", "uint32",
    };
    for (int i = 0; i < NK_DTYPE_COUNT; i++) {
        PyObject_Init((PyObject *)&dtypes[i], &pynk_DtypeType);
        dtypes[i].code = i;
        dtypes[i].name = nki_names[i];
        Py_INCREF(&dtypes[i]);
        if (PyModule_AddObject(lang, nki_names[i], (PyObject *)&dtypes[i]) < 0)
            return -1;
    }
    PyObject_Init((PyObject *)&dtype_tf32, &pynk_DtypeType);
    dtype_tf32.code = -1;
    dtype_tf32.name = "tfloat32";
    PyObject_Init((PyObject *)&dtype_bool, &pynk_DtypeType);
    dtype_bool.code = NK_U8;
    dtype_bool.name = "bool";
    Py_INCREF(&dtype_tf32);
    Py_INCREF(&dtype_bool);
    if (PyModule_AddObject(lang, "tfloat32", (PyObject *)&dtype_tf32) < 0 ||
        PyModule_AddObject(lang, "bool_", (PyObject *)&dtype_bool) < 0)
        return -1;
    static const struct { const char *name; int code; } bufs[] = {
        {"sbuf", NK_SBUF}, {"psum", NK_PSUM}, {"shared_hbm", NK_SHARED_HBM}, {"hbm", NK_SHARED_HBM},
        {"private_hbm", NK_SHARED_HBM},
    };
    for (int i = 0; i < 5; i++) {
        PyObject_Init((PyObject *)&buffers[i], &pynk_BufferType);
        buffers[i].code = bufs[i].code;
        buffers[i].name = bufs[i].name;
        Py_INCREF(&buffers[i]);
        if (PyModule_AddObject(lang, bufs[i].name, (PyObject *)&buffers[i]) < 0)
            return -1;
    }
    return 0;
}

/* _nklab._set_glue_dir(path): frames of files under path are not kernel
 * lines (the package glue calls the ops on the kernel's behalf). */
static PyObject *set_glue_dir(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *s = PyUnicode_AsUTF8(arg);
    if (!s)
        return NULL;
    free(glue_dir);
    glue_dir = strdup(s);
    glue_len = glue_dir ? strlen(glue_dir) : 0;
    Py_RETURN_NONE;
}

static PyMethodDef glue_method = {"_set_glue_dir", set_glue_dir, METH_O, NULL};

PyMODINIT_FUNC PyInit__nklab(void)
{
    import_array();
    PyObject *m = PyModule_Create(&moddef);
    if (!m)
        return NULL;
    pynk_module = m;
    PyObject *lang = PyModule_New("nklab._lang");
    PyObject *isa = PyModule_New("nklab._isa");
    if (!lang || !isa || PyModule_AddObject(m, "lang", lang) < 0 || PyModule_AddObject(m, "isa", isa) < 0)
        goto fail;
    pynk_KernelError = PyErr_NewExceptionWithDoc("nklab.KernelError",
                                                 "A kernel the tracer refused; the message starts with FILE.py:LINE.",
                                                 NULL, NULL);
    if (!pynk_KernelError)
        goto fail;
    Py_INCREF(pynk_KernelError);
    if (PyModule_AddObject(m, "KernelError", pynk_KernelError) < 0)
        goto fail;
    if (add_type(m, &pynk_DtypeType, "dtype") || add_type(m, &pynk_BufferType, "buffer") ||
        add_type(m, &pynk_ParDimType, "ParDim") || add_type(m, &pynk_TensorType, "Tensor") ||
        add_type(m, &pynk_IndexType, "IndexExpr") || add_type(m, &pynk_PredType, "IndexPredicate") ||
        add_type(m, &pynk_RangeType, "LoopRange") || init_dtypes(lang))
        goto fail;
    PyObject *pd = PyCFunction_NewEx(&module_methods[0], NULL, pynk_module);
    PyObject *gd = PyCFunction_NewEx(&glue_method, NULL, pynk_module);
    if (!pd || PyModule_AddObject(lang, "par_dim", pd) < 0 || !gd || PyModule_AddObject(m, "_set_glue_dir", gd) < 0)
        goto fail;
    if (add_functions(lang, pynk_lang_methods) || add_functions(isa, pynk_isa_methods) ||
        pynk_ops_init(lang, isa) || pynk_kernel_init(m) || add_functions(m, pynk_kernel_methods) ||
        add_functions(m, pynk_cli_methods))
        goto fail;
    if (PyModule_AddStringConstant(m, "__version__", NK_VERSION) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
