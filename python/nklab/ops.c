/*
 * ops.c - NKI's nl.* and nisa.* as calls of the tracer's nk_*_at functions:
 * arguments bound as NKI names them, masks as smaller extents, the result
 * tile of an nisa op allocated where NKI puts it (PSUM for nc_matmul, SBUF
 * otherwise) unless dst= is given. Loops: nl.affine_range and
 * nl.sequential_range drive nk__loop_begin / nk__loop_cond / nk__loop_next
 * from a Python iterator; static_range and range unroll.
 */
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL pynk_ARRAY_API
#include "pynk.h"

#include <numpy/arrayobject.h>
#include <string.h>

#include "trace/trace.h"

/* ---- argument binding */

#define MAXARG 16

/* Binds positional and keyword arguments to names (NULL-terminated), the
 * first nreq required. name= (NKI's tensor names) is accepted and ignored. */
static int bind(const char *op, PyObject *args, PyObject *kw, const char *const *names, int nreq, PyObject **out)
{
    int n = 0;
    while (names[n])
        n++;
    for (int i = 0; i < n; i++)
        out[i] = NULL;
    Py_ssize_t na = args ? PyTuple_GET_SIZE(args) : 0;
    if (na > n) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional arguments (%zd given)", op, n, na);
        return -1;
    }
    for (Py_ssize_t i = 0; i < na; i++)
        out[i] = PyTuple_GET_ITEM(args, i);
    if (kw) {
        PyObject *key, *val;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kw, &pos, &key, &val)) {
            const char *k = PyUnicode_AsUTF8(key);
            if (!k)
                return -1;
            int found = 0;
            for (int i = 0; i < n && !found; i++)
                if (!strcmp(k, names[i])) {
                    if (out[i]) {
                        PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", op, k);
                        return -1;
                    }
                    out[i] = val;
                    found = 1;
                }
            if (!found && strcmp(k, "name")) {
                pynk_not_implemented(op, NULL);
                PyObject *t, *v, *tb;
                PyErr_Fetch(&t, &v, &tb);
                PyErr_Format(PyExc_NotImplementedError, "%S (argument %s= is not supported)", v, k);
                Py_XDECREF(t);
                Py_XDECREF(v);
                Py_XDECREF(tb);
                return -1;
            }
        }
    }
    for (int i = 0; i < nreq; i++)
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", op, names[i]);
            return -1;
        }
    for (int i = 0; i < n; i++)
        if (out[i] == Py_None && i >= nreq)
            out[i] = NULL;
    return 0;
}

/* An operand; without a mask (m NULL) it is read whole, which a tile made
 * under a mask from below (covering a later part of the index space) is not
 * allowed to be: its indices would be taken from 0. */
static int get_t(PyObject *o, pynk_mask *m, nk_tensor *t, const char *what)
{
    if (!m && pynk_tensor_check(o))
        for (int k = 0; k < ((pynk_tensor_obj *)o)->vndim; k++)
            if (((pynk_tensor_obj *)o)->org[k]) {
                char api[112];
                snprintf(api, sizeof api, "%s of a tile made under a mask that bounds an index from below", what);
                pynk_not_implemented(api, "this operand takes no mask");
                return -1;
            }
    return pynk_tensor_get(o, m, t, what);
}

static int opt_dtype(PyObject *o, nk_dtype dflt, nk_dtype *out)
{
    if (!o) {
        *out = dflt;
        return 0;
    }
    return pynk_parse_dtype(o, out);
}

static int opt_bool(PyObject *o, int dflt)
{
    return o ? PyObject_IsTrue(o) : dflt;
}

static PyObject *result(nk_tensor t)
{
    if (pynk_check())
        return NULL;
    return pynk_tensor_new(t);
}

/* A result covering the part of the index space its operands covered
 * (elementwise: every axis; reductions: the partition axis). */
#define ELEM PYNK_RES_ELEMENTWISE
#define PART PYNK_RES_PARTITION
#define OTHER PYNK_RES_OTHER

static PyObject *done(void)
{
    if (pynk_check())
        return NULL;
    Py_RETURN_NONE;
}

static void shape_of(nk_tensor t, nk_shape *s)
{
    s->n = t.ndim;
    for (int i = 0; i < NK_MAXDIM; i++)
        s->d[i] = i < t.ndim ? t.shape[i] : 0;
}

/* A new tile shaped like t (or shape s) in SBUF/PSUM. */
static nk_tensor new_tile(nk_ctx *nc, nk_loc loc, nk_shape s, nk_dtype dt, nk_buffer mem)
{
    return nk_ndarray_at(nc, loc, s, dt, mem);
}

/* A cast to dt after an op whose engine result keeps its input's dtype
 * (nl ops with dtype=): one copy instruction. */
static nk_tensor cast(nk_ctx *nc, nk_loc loc, nk_tensor t, PyObject *dtype)
{
    nk_dtype dt;
    if (!dtype || nc->status)
        return t;
    if (pynk_parse_dtype(dtype, &dt))
        return (nk_tensor){0};
    if (dt == t.dtype)
        return t;
    return nk_copy_at(nc, loc, t, dt);
}

/* The context and the kernel's location, which carries the call's name
 * (op) for messages: "nl.matmul (nc_matmul): ..." */
#define NC(op)                                                                                                    \
    nk_ctx *nc = pynk_nc(op);                                                                                     \
    if (!nc)                                                                                                      \
        return NULL;                                                                                              \
    nk_loc loc = pynk_loc();                                                                                      \
    loc.call = (op)

/* ---- ops given as functions (activation functions, ALU operators) */

static const struct { const char *name; int act; } act_names[] = {
    {"copy", NK_ACT_COPY}, {"exp", NK_ACT_EXP}, {"log", NK_ACT_LOG}, {"sqrt", NK_ACT_SQRT},
    {"rsqrt", NK_ACT_RSQRT}, {"tanh", NK_ACT_TANH}, {"sigmoid", NK_ACT_SIGMOID}, {"relu", NK_ACT_RELU},
    {"gelu", NK_ACT_GELU}, {"gelu_apprx_tanh", NK_ACT_GELU_APPRX_TANH}, {"silu", NK_ACT_SILU},
    {"square", NK_ACT_SQUARE}, {"abs", NK_ACT_ABS}, {"absolute", NK_ACT_ABS}, {"reciprocal", NK_ACT_RECIPROCAL},
    {"sign", NK_ACT_SIGN}, {"softplus", NK_ACT_SOFTPLUS}, {"erf", NK_ACT_ERF}, {"sin", NK_ACT_SIN},
    {"cos", NK_ACT_COS}, {"arctan", NK_ACT_ARCTAN}, {"mish", NK_ACT_MISH}, {"identity", NK_ACT_COPY},
};

static const struct { const char *name; int alu; } alu_names[] = {
    {"add", NK_ALU_ADD}, {"subtract", NK_ALU_SUBTRACT}, {"multiply", NK_ALU_MULTIPLY}, {"divide", NK_ALU_DIVIDE},
    {"true_divide", NK_ALU_DIVIDE}, {"maximum", NK_ALU_MAX}, {"minimum", NK_ALU_MIN}, {"max", NK_ALU_MAX},
    {"min", NK_ALU_MIN}, {"amax", NK_ALU_MAX}, {"amin", NK_ALU_MIN}, {"sum", NK_ALU_ADD}, {"power", NK_ALU_POW},
    {"equal", NK_ALU_IS_EQUAL}, {"not_equal", NK_ALU_NOT_EQUAL}, {"greater_equal", NK_ALU_IS_GE},
    {"greater", NK_ALU_IS_GT}, {"less_equal", NK_ALU_IS_LE}, {"less", NK_ALU_IS_LT},
    {"bitwise_and", NK_ALU_BITWISE_AND}, {"bitwise_or", NK_ALU_BITWISE_OR}, {"bitwise_xor", NK_ALU_BITWISE_XOR},
    {"bypass", NK_ALU_BYPASS},
};

static PyObject *lang_unary(PyObject *self, PyObject *args, PyObject *kw);
static PyObject *lang_binary(PyObject *self, PyObject *args, PyObject *kw);

/* The name of a function-like object (nl.exp, np.exp, ...). */
static int op_name(PyObject *o, char *buf, size_t n)
{
    PyObject *name = PyObject_GetAttrString(o, "__name__");
    if (!name) {
        PyErr_Clear();
        return -1;
    }
    const char *s = PyUnicode_AsUTF8(name);
    if (s)
        snprintf(buf, n, "%s", s);
    Py_DECREF(name);
    return s ? 0 : -1;
}

int pynk_parse_act(PyObject *o, nk_act *out)
{
    if (PyCFunction_Check(o) && PyCFunction_GET_FUNCTION(o) == (PyCFunction)(void (*)(void))lang_unary) {
        *out = (nk_act)PyLong_AsLong(PyCFunction_GET_SELF(o));
        return 0;
    }
    char name[64];
    if (!op_name(o, name, sizeof name))
        for (size_t i = 0; i < sizeof act_names / sizeof act_names[0]; i++)
            if (!strcmp(name, act_names[i].name)) {
                *out = (nk_act)act_names[i].act;
                return 0;
            }
    PyObject *r = PyObject_Repr(o);
    pynk_not_implemented(r ? PyUnicode_AsUTF8(r) : "this activation function", "not an activation function of "
                         "the Scalar engine that nklab models");
    Py_XDECREF(r);
    return -1;
}

int pynk_parse_alu(PyObject *o, nk_alu *out)
{
    if (PyCFunction_Check(o) && PyCFunction_GET_FUNCTION(o) == (PyCFunction)(void (*)(void))lang_binary) {
        *out = (nk_alu)PyLong_AsLong(PyCFunction_GET_SELF(o));
        return 0;
    }
    char name[64];
    if (!op_name(o, name, sizeof name))
        for (size_t i = 0; i < sizeof alu_names / sizeof alu_names[0]; i++)
            if (!strcmp(name, alu_names[i].name)) {
                *out = (nk_alu)alu_names[i].alu;
                return 0;
            }
    PyObject *r = PyObject_Repr(o);
    pynk_not_implemented(r ? PyUnicode_AsUTF8(r) : "this operator", "not an ALU operator nklab models");
    Py_XDECREF(r);
    return -1;
}

/* ---- nl: memory */

static PyObject *lang_load(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"src", "mask", "dtype", NULL};
    PyObject *a[3];
    if (bind("nl.load", args, kw, names, 1, a))
        return NULL;
    NC("nl.load");
    pynk_mask m;
    nk_tensor src;
    if (pynk_parse_mask(a[1], &m) || get_t(a[0], &m, &src, "nl.load"))
        return NULL;
    nk_tensor t = nk_load_at(nc, loc, src);
    return pynk_result(cast(nc, loc, t, a[2]), &m, ELEM, "nl.load");
}

static PyObject *lang_store(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"dst", "value", "mask", NULL};
    PyObject *a[3];
    if (bind("nl.store", args, kw, names, 2, a))
        return NULL;
    NC("nl.store");
    pynk_mask m;
    nk_tensor dst, v;
    if (pynk_parse_mask(a[2], &m) || get_t(a[0], &m, &dst, "nl.store"))
        return NULL;
    if (!pynk_tensor_check(a[1])) { /* a number: fill a tile and store it */
        double x = PyFloat_AsDouble(a[1]);
        if (x == -1.0 && PyErr_Occurred())
            return NULL;
        nk_shape s;
        shape_of(dst, &s);
        v = nk_full_at(nc, loc, s, x, (nk_dtype)dst.dtype, NK_SBUF);
    } else if (get_t(a[1], &m, &v, "nl.store")) {
        return NULL;
    }
    nk_store_at(nc, loc, dst, v);
    return done();
}

static PyObject *lang_copy(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"src", "dtype", "mask", NULL};
    PyObject *a[3];
    if (bind("nl.copy", args, kw, names, 1, a))
        return NULL;
    NC("nl.copy");
    pynk_mask m;
    nk_tensor x;
    if (pynk_parse_mask(a[2], &m) || get_t(a[0], &m, &x, "nl.copy"))
        return NULL;
    nk_dtype dt;
    if (opt_dtype(a[1], (nk_dtype)x.dtype, &dt))
        return NULL;
    return pynk_result(nk_copy_at(nc, loc, x, dt), &m, ELEM, "nl.copy");
}

/* nl.ndarray / zeros / ones / full / *_like */
static PyObject *make(const char *op, PyObject *shape, PyObject *dtype, PyObject *buffer, int fill, double value)
{
    NC(op);
    nk_shape s;
    nk_dtype dt;
    nk_buffer mem;
    if (pynk_parse_shape(shape, &s, 1) || opt_dtype(dtype, NK_F32, &dt) || pynk_parse_buffer(buffer, &mem))
        return NULL;
    if (!dtype) {
        PyErr_Format(PyExc_TypeError, "%s() missing required argument 'dtype'", op);
        return NULL;
    }
    nk_tensor t;
    if (!fill)
        t = nk_ndarray_at(nc, loc, s, dt, mem);
    else if (mem == NK_SHARED_HBM)
        return pynk_not_implemented(op, "HBM tensors are created with nl.ndarray (contents written by stores)");
    else
        t = nk_full_at(nc, loc, s, value, dt, mem);
    return result(t);
}

static PyObject *lang_ndarray(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"shape", "dtype", "buffer", NULL};
    PyObject *a[3];
    if (bind("nl.ndarray", args, kw, names, 2, a))
        return NULL;
    return make("nl.ndarray", a[0], a[1], a[2], 0, 0);
}

static PyObject *lang_zeros(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"shape", "dtype", "buffer", NULL};
    PyObject *a[3];
    if (bind("nl.zeros", args, kw, names, 2, a))
        return NULL;
    return make("nl.zeros", a[0], a[1], a[2], 1, 0);
}

static PyObject *lang_ones(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"shape", "dtype", "buffer", NULL};
    PyObject *a[3];
    if (bind("nl.ones", args, kw, names, 2, a))
        return NULL;
    return make("nl.ones", a[0], a[1], a[2], 1, 1);
}

static PyObject *lang_full(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"shape", "fill_value", "dtype", "buffer", NULL};
    PyObject *a[4];
    if (bind("nl.full", args, kw, names, 3, a))
        return NULL;
    double v = PyFloat_AsDouble(a[1]);
    if (v == -1.0 && PyErr_Occurred())
        return NULL;
    return make("nl.full", a[0], a[2], a[3], 1, v);
}

static PyObject *like(const char *op, PyObject *args, PyObject *kw, int fill, double value)
{
    static const char *const names[] = {"a", "dtype", "buffer", NULL};
    PyObject *a[3];
    if (bind(op, args, kw, names, 1, a))
        return NULL;
    if (!pynk_tensor_check(a[0])) {
        PyErr_Format(PyExc_TypeError, "%s: expected a tensor", op);
        return NULL;
    }
    pynk_tensor_obj *t = (pynk_tensor_obj *)a[0];
    PyObject *shape = pynk_shape_tuple(t->vshape, t->vndim);
    if (!shape)
        return NULL;
    PyObject *dt = a[1] ? a[1] : pynk_dtype_object(t->t.dtype);
    PyObject *buf = a[2];
    PyObject *r;
    if (!buf && t->t.mem != NK_SBUF) { /* the same memory as a */
        PyObject *lang = PyObject_GetAttrString(pynk_module, "lang");
        buf = lang ? PyObject_GetAttrString(lang, t->t.mem == NK_PSUM ? "psum" : "shared_hbm") : NULL;
        Py_XDECREF(lang);
        r = buf ? make(op, shape, dt, buf, fill, value) : NULL;
        Py_XDECREF(buf);
    } else {
        r = make(op, shape, dt, buf, fill, value);
    }
    Py_DECREF(shape);
    return r;
}

static PyObject *lang_zeros_like(PyObject *s, PyObject *a, PyObject *k) { (void)s; return like("nl.zeros_like", a, k, 1, 0); }
static PyObject *lang_ones_like(PyObject *s, PyObject *a, PyObject *k) { (void)s; return like("nl.ones_like", a, k, 1, 1); }
static PyObject *lang_empty_like(PyObject *s, PyObject *a, PyObject *k) { (void)s; return like("nl.empty_like", a, k, 0, 0); }

/* ---- nl: compute */

static PyObject *lang_unary(PyObject *self, PyObject *args, PyObject *kw)
{
    nk_act f = (nk_act)PyLong_AsLong(self);
    char op[48];
    snprintf(op, sizeof op, "nl.%s", nk_act_name(f));
    static const char *const names[] = {"x", "dtype", "mask", NULL};
    PyObject *a[3];
    if (bind(op, args, kw, names, 1, a))
        return NULL;
    NC(op);
    pynk_mask m;
    nk_tensor x;
    if (pynk_parse_mask(a[2], &m) || get_t(a[0], &m, &x, op))
        return NULL;
    nk_dtype dt;
    if (opt_dtype(a[1], (nk_dtype)x.dtype, &dt))
        return NULL;
    if (dt == x.dtype)
        return pynk_result(nk_unary_at(nc, loc, f, x), &m, ELEM, op);
    /* another dtype: the activation writes it directly */
    nk_shape s;
    shape_of(x, &s);
    nk_tensor t = new_tile(nc, loc, s, dt, NK_SBUF);
    nk_isa_activation_at(nc, loc, t, f, x, nk_imm(0.0f), nk_imm(1.0f), NK_NONE);
    return pynk_result(t, &m, ELEM, op);
}

static PyObject *lang_binary(PyObject *self, PyObject *args, PyObject *kw)
{
    nk_alu alu = (nk_alu)PyLong_AsLong(self);
    char op[48];
    snprintf(op, sizeof op, "nl.%s", nk_alu_name(alu));
    static const char *const names[] = {"x", "y", "dtype", "mask", NULL};
    PyObject *a[4];
    if (bind(op, args, kw, names, 2, a))
        return NULL;
    NC(op);
    pynk_mask m;
    if (pynk_parse_mask(a[3], &m))
        return NULL;
    int tx = pynk_tensor_check(a[0]), ty = pynk_tensor_check(a[1]);
    nk_tensor x, y, r;
    if (tx && ty) {
        if (get_t(a[0], &m, &x, op) || get_t(a[1], &m, &y, op))
            return NULL;
        r = nk_binary_at(nc, loc, alu, x, y);
    } else if (tx || ty) {
        double v = PyFloat_AsDouble(tx ? a[1] : a[0]);
        if (v == -1.0 && PyErr_Occurred())
            return NULL;
        if (get_t(tx ? a[0] : a[1], &m, &x, op))
            return NULL;
        r = nk_binary_scalar_at(nc, loc, alu, x, (float)v, !tx);
    } else {
        PyErr_Format(PyExc_TypeError, "%s: at least one operand must be a tile", op);
        return NULL;
    }
    return pynk_result(cast(nc, loc, r, a[2]), &m, ELEM, op);
}

static PyObject *lang_negative(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"x", "dtype", "mask", NULL};
    PyObject *a[3];
    if (bind("nl.negative", args, kw, names, 1, a))
        return NULL;
    NC("nl.negative");
    pynk_mask m;
    nk_tensor x;
    if (pynk_parse_mask(a[2], &m) || get_t(a[0], &m, &x, "nl.negative"))
        return NULL;
    return pynk_result(cast(nc, loc, nk_binary_scalar_at(nc, loc, NK_ALU_MULTIPLY, x, -1.0f, 0), a[1]), &m, ELEM,
                       "nl.negative");
}

/* axis=1, axis=(1,), axis=[1, 2]: one free axis, or all of them (-1). */
static int parse_axis(PyObject *o, int ndim, int *axis)
{
    PyObject *seq = PySequence_Check(o) ? PySequence_Fast(o, "axis") : NULL;
    if (!seq) {
        PyErr_Clear();
        long v = PyLong_AsLong(o);
        if (v == -1 && PyErr_Occurred())
            return -1;
        *axis = v < 0 ? (int)(v + ndim) : (int)v;
        if (ndim == 2 && *axis == 1)
            *axis = 1;
        return 0;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int axes[NK_MAXDIM] = {0}, k = 0;
    for (Py_ssize_t i = 0; i < n && k < NK_MAXDIM; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        axes[k++] = v < 0 ? (int)(v + ndim) : (int)v;
    }
    Py_DECREF(seq);
    if (k == 1) {
        *axis = axes[0];
        return 0;
    }
    int all = k == ndim - 1;
    for (int i = 0; i < k && all; i++)
        all = axes[i] == i + 1;
    if (all) {
        *axis = -1;
        return 0;
    }
    pynk_not_implemented("a reduction over these axes", "reduce along one free axis or all of them");
    return -1;
}

static PyObject *reduce(const char *op, int alu, int mean, PyObject *args, PyObject *kw)
{
    static const char *const names[] = {"x", "axis", "dtype", "mask", "keepdims", NULL};
    PyObject *a[5];
    if (bind(op, args, kw, names, 2, a))
        return NULL;
    NC(op);
    pynk_mask m;
    nk_tensor x;
    int axis;
    if (pynk_parse_mask(a[3], &m) || get_t(a[0], &m, &x, op) || parse_axis(a[1], x.ndim, &axis))
        return NULL;
    int keep = opt_bool(a[4], 0);
    if (keep < 0)
        return NULL;
    nk_tensor r = mean ? nk_mean_at(nc, loc, x, axis, keep) : nk_reduce_at(nc, loc, (nk_alu)alu, x, axis, keep);
    return pynk_result(cast(nc, loc, r, a[2]), &m, PART, op);
}

static PyObject *lang_sum(PyObject *s, PyObject *a, PyObject *k) { (void)s; return reduce("nl.sum", NK_ALU_ADD, 0, a, k); }
static PyObject *lang_max(PyObject *s, PyObject *a, PyObject *k) { (void)s; return reduce("nl.max", NK_ALU_MAX, 0, a, k); }
static PyObject *lang_min(PyObject *s, PyObject *a, PyObject *k) { (void)s; return reduce("nl.min", NK_ALU_MIN, 0, a, k); }
static PyObject *lang_mean(PyObject *s, PyObject *a, PyObject *k) { (void)s; return reduce("nl.mean", 0, 1, a, k); }

static PyObject *lang_transpose(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"x", "dtype", "mask", NULL};
    PyObject *a[3];
    if (bind("nl.transpose", args, kw, names, 1, a))
        return NULL;
    NC("nl.transpose");
    pynk_mask m;
    nk_tensor x;
    if (pynk_parse_mask(a[2], &m) || get_t(a[0], &m, &x, "nl.transpose"))
        return NULL;
    return pynk_result(cast(nc, loc, nk_transpose_at(nc, loc, x), a[1]), &m, OTHER, "nl.transpose");
}

static PyObject *lang_matmul(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"x", "y", "transpose_x", "mask", NULL};
    PyObject *a[4];
    if (bind("nl.matmul", args, kw, names, 2, a))
        return NULL;
    NC("nl.matmul");
    pynk_mask m;
    nk_tensor x, y;
    if (pynk_parse_mask(a[3], &m) || get_t(a[0], &m, &x, "nl.matmul") || get_t(a[1], &m, &y, "nl.matmul"))
        return NULL;
    int tx = opt_bool(a[2], 0);
    if (tx < 0)
        return NULL;
    return pynk_result(nk_matmul_at(nc, loc, x, y, tx), &m, OTHER, "nl.matmul");
}

static PyObject *lang_broadcast_to(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"src", "shape", NULL};
    PyObject *a[2];
    if (bind("nl.broadcast_to", args, kw, names, 2, a))
        return NULL;
    NC("nl.broadcast_to");
    nk_tensor x;
    nk_shape s;
    if (get_t(a[0], NULL, &x, "nl.broadcast_to") || pynk_parse_shape(a[1], &s, 0))
        return NULL;
    return result(nk_broadcast_at(nc, loc, x, s));
}

/* ---- nl: index expressions */

static PyObject *lang_arange(PyObject *self, PyObject *args)
{
    (void)self;
    long long v[3] = {0, 0, 1};
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n < 1 || n > 3) {
        PyErr_SetString(PyExc_TypeError, "nl.arange(stop) or nl.arange(start, stop[, step])");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        v[n == 1 ? 1 : i] = PyLong_AsLongLong(PyTuple_GET_ITEM(args, i));
        if (PyErr_Occurred())
            return NULL;
    }
    if (v[2] < 1)
        return pynk_not_implemented("nl.arange with a step below 1", NULL);
    int64_t ext = v[1] > v[0] ? 1 + (v[1] - v[0] - 1) / v[2] : 0, a = v[2];
    return pynk_index_new(1, &ext, &a, v[0]);
}

/* nl.mgrid[0:128, 0:512]: one expression per axis over the whole grid;
 * unpacks as a tuple, and .p / .x name the first and last. */
typedef struct {
    PyObject_HEAD
    PyObject *items; /* tuple */
} grid_obj;

static void grid_dealloc(PyObject *self)
{
    Py_XDECREF(((grid_obj *)self)->items);
    PyObject_Free(self);
}
static Py_ssize_t grid_len(PyObject *self) { return PyTuple_GET_SIZE(((grid_obj *)self)->items); }
static PyObject *grid_item(PyObject *self, Py_ssize_t i)
{
    PyObject *t = ((grid_obj *)self)->items;
    if (i < 0 || i >= PyTuple_GET_SIZE(t)) {
        PyErr_SetString(PyExc_IndexError, "mgrid index out of range");
        return NULL;
    }
    PyObject *o = PyTuple_GET_ITEM(t, i);
    Py_INCREF(o);
    return o;
}
static PyObject *grid_p(PyObject *self, void *u) { (void)u; return grid_item(self, 0); }
static PyObject *grid_x(PyObject *self, void *u) { (void)u; return grid_item(self, grid_len(self) - 1); }
static PySequenceMethods grid_seq = {.sq_length = grid_len, .sq_item = grid_item};
static PyGetSetDef grid_getset[] = {
    {"p", grid_p, NULL, "the partition (first) axis' expression", NULL},
    {"x", grid_x, NULL, "the free (last) axis' expression", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PyTypeObject GridType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.Grid",
    .tp_basicsize = sizeof(grid_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = grid_dealloc,
    .tp_as_sequence = &grid_seq,
    .tp_getset = grid_getset,
};

static PyObject *mgrid_getitem(PyObject *self, PyObject *key)
{
    (void)self;
    PyObject *t = PyTuple_Check(key) ? (Py_INCREF(key), key) : PyTuple_Pack(1, key);
    if (!t)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    if (n < 1 || n > NK_MAXDIM) {
        Py_DECREF(t);
        PyErr_Format(PyExc_IndexError, "nl.mgrid takes 1 to %d slices", NK_MAXDIM);
        return NULL;
    }
    int64_t ext[NK_MAXDIM], start[NK_MAXDIM], step[NK_MAXDIM];
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t s0, s1, st;
        PyObject *e = PyTuple_GET_ITEM(t, i);
        if (!PySlice_Check(e) || PySlice_Unpack(e, &s0, &s1, &st) < 0 || s1 == PY_SSIZE_T_MAX || st < 1) {
            Py_DECREF(t);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_IndexError, "nl.mgrid[start:stop, ...] takes slices with a stop");
            return NULL;
        }
        if (s0 == PY_SSIZE_T_MIN)
            s0 = 0;
        start[i] = s0;
        step[i] = st;
        ext[i] = s1 > s0 ? 1 + (s1 - s0 - 1) / st : 0;
    }
    Py_DECREF(t);
    grid_obj *g = PyObject_New(grid_obj, &GridType);
    if (!g)
        return NULL;
    g->items = PyTuple_New(n);
    if (!g->items) {
        Py_DECREF(g);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t a[NK_MAXDIM] = {0};
        a[i] = step[i];
        PyObject *e = pynk_index_new((int)n, ext, a, start[i]);
        if (!e) {
            Py_DECREF(g);
            return NULL;
        }
        PyTuple_SET_ITEM(g->items, i, e);
    }
    return (PyObject *)g;
}

static PyMappingMethods mgrid_mapping = {.mp_subscript = mgrid_getitem};
static PyTypeObject MgridType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.mgrid",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_as_mapping = &mgrid_mapping,
};

static PyObject *lang_ds(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *start, *size;
    if (!PyArg_ParseTuple(args, "OO:ds", &start, &size))
        return NULL;
    PyObject *stop = PyNumber_Add(start, size);
    if (!stop)
        return NULL;
    PyObject *s = PySlice_New(start, stop, NULL);
    Py_DECREF(stop);
    return s;
}

/* ---- loops */

typedef struct {
    PyObject_HEAD
    int64_t start, step, n, i;
    int kind, state; /* state: 0 not started, 1 running, 2 done */
    uint64_t gen;
} range_obj;

static PyObject *range_iter(PyObject *self)
{
    range_obj *r = (range_obj *)self;
    if (r->state != 0) {
        PyErr_SetString(PyExc_RuntimeError, "a loop range is iterated once (write the nl.affine_range(...) call "
                        "in the for statement)");
        return NULL;
    }
    nk_ctx *nc = pynk_nc(r->kind == NK_LOOP_AFFINE ? "nl.affine_range" : "nl.sequential_range");
    if (!nc)
        return NULL;
    r->gen = pynk_cur->gen;
    r->i = nk__loop_begin(nc, pynk_loc(), r->n, (nk_loop_kind)r->kind, 0);
    r->state = 1;
    if (pynk_check())
        return NULL;
    Py_INCREF(self);
    return self;
}

static PyObject *range_next(PyObject *self)
{
    range_obj *r = (range_obj *)self;
    if (r->state != 1 || !pynk_cur || !pynk_cur->nc || pynk_cur->gen != r->gen)
        return NULL;
    nk_ctx *nc = pynk_cur->nc;
    if (!nk__loop_cond(nc, r->i)) {
        r->state = 2;
        pynk_check();
        return NULL; /* StopIteration, or the tracer's error */
    }
    int64_t v = r->start + r->i * r->step;
    r->i = nk__loop_next(nc, r->i);
    return PyLong_FromLongLong(v);
}

static PyObject *range_len(PyObject *self) { return PyLong_FromLongLong(((range_obj *)self)->n); }

static PyMethodDef range_methods[] = {
    {"__len__", (PyCFunction)(void (*)(void))range_len, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject pynk_RangeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.LoopRange",
    .tp_basicsize = sizeof(range_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "nl.affine_range / nl.sequential_range: a loop traced once per iteration",
    .tp_iter = range_iter,
    .tp_iternext = range_next,
    .tp_methods = range_methods,
};

static int range_args(PyObject *args, PyObject *kw, int64_t *start, int64_t *stop, int64_t *step)
{
    static const char *const names[] = {"start", "stop", "step", NULL};
    PyObject *a[3];
    if (bind("range", args, kw, names, 1, a))
        return -1;
    long long v[3] = {0, 0, 1};
    for (int i = 0; i < 3; i++)
        if (a[i]) {
            PyObject *ix = PyNumber_Index(a[i]);
            if (!ix)
                return -1;
            v[i] = PyLong_AsLongLong(ix);
            Py_DECREF(ix);
        }
    if (!a[1]) {
        v[1] = v[0];
        v[0] = 0;
    }
    if (v[2] == 0) {
        PyErr_SetString(PyExc_ValueError, "a loop's step must not be zero");
        return -1;
    }
    *start = v[0];
    *stop = v[1];
    *step = v[2];
    return 0;
}

static PyObject *loop(int kind, PyObject *args, PyObject *kw)
{
    int64_t start, stop, step;
    if (range_args(args, kw, &start, &stop, &step))
        return NULL;
    range_obj *r = PyObject_New(range_obj, &pynk_RangeType);
    if (!r)
        return NULL;
    r->start = start;
    r->step = step;
    r->n = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                    : (start > stop ? (start - stop - step - 1) / -step : 0);
    r->kind = kind;
    r->state = 0;
    r->i = 0;
    r->gen = 0;
    return (PyObject *)r;
}

static PyObject *lang_affine_range(PyObject *s, PyObject *a, PyObject *k) { (void)s; return loop(NK_LOOP_AFFINE, a, k); }
static PyObject *lang_sequential_range(PyObject *s, PyObject *a, PyObject *k) { (void)s; return loop(NK_LOOP_SEQUENTIAL, a, k); }

static PyObject *lang_static_range(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    int64_t start, stop, step;
    if (range_args(args, kw, &start, &stop, &step))
        return NULL;
    return PyObject_CallFunction((PyObject *)&PyRange_Type, "LLL", (long long)start, (long long)stop,
                                 (long long)step);
}

/* ---- SPMD and printing */

static PyObject *lang_program_id(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"axis", NULL};
    PyObject *a[1] = {NULL};
    nk_ctx *nc;
    if (bind("nl.program_id", args, kw, names, 0, a) || !(nc = pynk_nc("nl.program_id")))
        return NULL;
    long axis = a[0] && a[0] != Py_None ? PyLong_AsLong(a[0]) : 0;
    if (axis == -1 && PyErr_Occurred())
        return NULL;
    int v = nk_program_id_at(nc, pynk_loc(), (int)axis);
    return pynk_check() ? NULL : PyLong_FromLong(v);
}

/* nl.num_programs(axes=None): the whole grid's instances, or the product
 * along an axis or a tuple of axes. */
static PyObject *lang_num_programs(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"axes", NULL};
    PyObject *a[1] = {NULL};
    nk_ctx *nc;
    if (bind("nl.num_programs", args, kw, names, 0, a) || !(nc = pynk_nc("nl.num_programs")))
        return NULL;
    nk_loc loc = pynk_loc();
    if (!a[0] || a[0] == Py_None)
        return PyLong_FromLong(nk_num_programs_at(nc, loc, -1));
    if (PyLong_Check(a[0])) {
        long axis = PyLong_AsLong(a[0]);
        if (axis == -1 && PyErr_Occurred())
            return NULL;
        int v = nk_num_programs_at(nc, loc, axis < 0 ? -2 : (int)axis);
        return pynk_check() ? NULL : PyLong_FromLong(v);
    }
    PyObject *seq = PySequence_Fast(a[0], "nl.num_programs: axes is an int or a sequence of ints");
    if (!seq)
        return NULL;
    long prod = 1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && !PyErr_Occurred(); i++) {
        long axis = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (!PyErr_Occurred())
            prod *= nk_num_programs_at(nc, loc, axis < 0 ? -2 : (int)axis);
    }
    Py_DECREF(seq);
    if (PyErr_Occurred() || pynk_check())
        return NULL;
    return PyLong_FromLong(prod);
}

static PyObject *lang_program_ndim(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    nk_ctx *nc = pynk_nc("nl.program_ndim");
    if (!nc)
        return NULL;
    return PyLong_FromLong(nk_program_ndim(nc));
}

static PyObject *lang_device_print(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"prefix", "x", "mask", NULL};
    PyObject *a[3];
    if (bind("nl.device_print", args, kw, names, 2, a) || !pynk_nc("nl.device_print"))
        return NULL;
    PyObject *text = PyObject_Repr(a[1]);
    if (!text)
        return NULL;
    PyObject *sys_stdout = PySys_GetObject("stdout");
    PyObject *line = PyUnicode_FromFormat("%S %S\n", a[0], text);
    Py_DECREF(text);
    if (!line)
        return NULL;
    if (sys_stdout && sys_stdout != Py_None) {
        PyObject *r = PyObject_CallMethod(sys_stdout, "write", "O", line);
        Py_XDECREF(r);
    }
    Py_DECREF(line);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* ---- nisa */

/* The destination: dst= when given, else a new tile. */
static int isa_dst(nk_ctx *nc, nk_loc loc, PyObject *dsto, pynk_mask *m, nk_shape s, nk_dtype dt,
                   nk_buffer mem, nk_tensor *dst, const char *op)
{
    if (dsto)
        return get_t(dsto, m, dst, op);
    *dst = new_tile(nc, loc, s, dt, mem);
    return pynk_check();
}

static PyObject *isa_result(PyObject *dsto, nk_tensor dst, pynk_mask *m, int how, const char *op)
{
    if (pynk_check())
        return NULL;
    if (dsto) {
        if (how == OTHER && pynk_mask_from_zero(m, op))
            return NULL;
        Py_INCREF(dsto);
        return dsto;
    }
    return pynk_result(dst, m, how, op);
}

static int operand(PyObject *o, pynk_mask *m, nk_operand *out, float dflt, const char *op)
{
    if (!o) {
        *out = nk_imm(dflt);
        return 0;
    }
    if (pynk_tensor_check(o)) {
        nk_tensor t;
        if (get_t(o, m, &t, op))
            return -1;
        *out = nk_col(t);
        return 0;
    }
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    *out = nk_imm((float)v);
    return 0;
}

static int parse_engine(PyObject *o, nk_engine *e)
{
    *e = NK_ENGINE_DEFAULT;
    if (!o)
        return 0;
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *e = v < 0 || v >= NK_ENGINE_COUNT ? NK_ENGINE_DEFAULT : (nk_engine)v;
    return 0;
}

static PyObject *isa_nc_matmul(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"stationary", "moving", "is_stationary_onezero", "is_moving_onezero",
                                        "is_transpose", "tile_position", "tile_size", "mask", "dst", "accumulate",
                                        NULL};
    PyObject *a[10];
    /* the newer form nc_matmul(dst, stationary, moving, ...) */
    PyObject *args2 = args;
    PyObject *dsto = NULL;
    if (PyTuple_GET_SIZE(args) >= 3 && pynk_tensor_check(PyTuple_GET_ITEM(args, 2))) {
        dsto = PyTuple_GET_ITEM(args, 0);
        args2 = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
        if (!args2)
            return NULL;
    }
    int rc = bind("nisa.nc_matmul", args2, kw, names, 2, a);
    if (args2 != args)
        Py_DECREF(args2);
    if (rc)
        return NULL;
    if (a[8])
        dsto = a[8];
    NC("nisa.nc_matmul");
    /* is_transpose=True: on NeuronCore-v2 the instruction is the matmul it
     * is (stationary.T @ moving, the moving tile an identity for a
     * transpose), marked a transpose for the profiler only [ISA] */
    int transpose = opt_bool(a[4], 0);
    if (transpose < 0)
        return NULL;
    pynk_mask m;
    nk_tensor st, mv, dst;
    if (pynk_parse_mask(a[7], &m) || get_t(a[0], &m, &st, "nisa.nc_matmul") ||
        get_t(a[1], &m, &mv, "nisa.nc_matmul"))
        return NULL;
    nk_shape s = {2, {nk__free_size(&st), nk__free_size(&mv)}};
    int acc = opt_bool(a[9], 0);
    if (acc < 0 || isa_dst(nc, loc, dsto, &m, s, NK_F32, NK_PSUM, &dst, "nisa.nc_matmul"))
        return NULL;
    if (transpose && dst.dtype != NK_F32)
        return pynk_not_implemented("nisa.nc_matmul(is_transpose=True) into a 16-bit dst", "NeuronCore-v3's "
                                    "transpose mode (16-bit PSUM output, NaN/Inf moved bit-exactly) is not "
                                    "modelled; use nisa.nc_transpose(..., engine=nisa.engine.tensor)");
    nk_isa_nc_matmul_at(nc, loc, dst, st, mv, acc);
    return isa_result(dsto, dst, &m, OTHER, "nisa.nc_matmul");
}

static PyObject *isa_nc_transpose(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"data", "mask", "dtype", "engine", "dst", NULL};
    PyObject *a[5];
    if (bind("nisa.nc_transpose", args, kw, names, 1, a))
        return NULL;
    NC("nisa.nc_transpose");
    pynk_mask m;
    nk_tensor x, dst;
    nk_engine e;
    if (pynk_parse_mask(a[1], &m) || get_t(a[0], &m, &x, "nisa.nc_transpose") || parse_engine(a[3], &e))
        return NULL;
    if (e == NK_ENGINE_DEFAULT)
        e = NK_ENGINE_TENSOR;
    nk_dtype dt;
    if (opt_dtype(a[2], (nk_dtype)x.dtype, &dt))
        return NULL;
    nk_shape s = {2, {nk__free_size(&x), x.shape[0]}};
    if (isa_dst(nc, loc, a[4], &m, s, dt, e == NK_ENGINE_TENSOR ? NK_PSUM : NK_SBUF, &dst, "nisa.nc_transpose"))
        return NULL;
    nk_isa_nc_transpose_at(nc, loc, dst, x, e);
    return isa_result(a[4], dst, &m, OTHER, "nisa.nc_transpose");
}

static nk_dtype pair_dtype(nk_tensor a, nk_tensor b)
{
    if (a.dtype == b.dtype)
        return (nk_dtype)a.dtype;
    return NK_F32;
}

/* nisa.reduce_cmd, as NKI numbers it */
enum { RC_IDLE = 0, RC_RESET = 1, RC_REDUCE = 2, RC_RESET_REDUCE = 3, RC_LOAD_REDUCE = 4 };
static const char *const reduce_cmds[] = {"idle", "reset", "reduce", "reset_reduce", "load_reduce"};
static const char *reduce_cmd_name(long c) { return c >= 0 && c <= RC_LOAD_REDUCE ? reduce_cmds[c] : "?"; }

static PyObject *activation(const char *op, int has_reduce, PyObject *args, PyObject *kw)
{
    static const char *const names[] = {"op", "data", "bias", "scale", "reduce_op", "reduce_res", "reduce_cmd",
                                        "dtype", "mask", "dst", NULL};
    static const char *const rnames[] = {"op", "data", "reduce_op", "reduce_res", "bias", "scale", "dtype", "mask",
                                         "dst", NULL};
    PyObject *a[10], *b[9];
    if (has_reduce) {
        if (bind(op, args, kw, rnames, 4, b))
            return NULL;
        a[0] = b[0], a[1] = b[1], a[4] = b[2], a[5] = b[3], a[2] = b[4], a[3] = b[5], a[6] = NULL;
        a[7] = b[6], a[8] = b[7], a[9] = b[8];
    } else if (bind(op, args, kw, names, 2, a)) {
        return NULL;
    }
    NC(op);
    nk_act f;
    pynk_mask m;
    nk_tensor x, dst, rdst = NK_NONE;
    nk_operand bias, scale;
    if (pynk_parse_act(a[0], &f) || pynk_parse_mask(a[8], &m) || get_t(a[1], &m, &x, op) ||
        operand(a[2], &m, &bias, 0.0f, op) || operand(a[3], &m, &scale, 1.0f, op))
        return NULL;
    /* reduce_cmd: the Scalar engine's accumulator registers are modelled
     * within one instruction (reset, reduce into them, read out into
     * reduce_res), not across instructions */
    if (a[6]) {
        long cmd = PyLong_AsLong(a[6]);
        if (cmd == -1 && PyErr_Occurred())
            return NULL;
        if (cmd != RC_RESET_REDUCE && !((cmd == RC_IDLE || cmd == RC_RESET) && !a[5])) {
            char what[96];
            snprintf(what, sizeof what, "%s(reduce_cmd=nisa.reduce_cmd.%s%s)", op, reduce_cmd_name(cmd),
                     a[5] ? ", reduce_res=..." : "");
            return pynk_not_implemented(what, "the accumulator registers are not kept from one instruction to the "
                                        "next; reduce_cmd=nisa.reduce_cmd.reset_reduce with reduce_res reduces "
                                        "within the call");
        }
    }
    if (a[5]) {
        nk_alu r = NK_ALU_ADD;
        if (a[4] && pynk_parse_alu(a[4], &r))
            return NULL;
        if (r != NK_ALU_ADD)
            return pynk_not_implemented("an activation reduction other than nl.add", NULL);
        if (get_t(a[5], NULL, &rdst, op))
            return NULL;
    }
    nk_dtype dt;
    if (opt_dtype(a[7], (nk_dtype)x.dtype, &dt))
        return NULL;
    nk_shape s;
    shape_of(x, &s);
    if (isa_dst(nc, loc, a[9], &m, s, dt, NK_SBUF, &dst, op))
        return NULL;
    nk_isa_activation_at(nc, loc, dst, f, x, bias, scale, rdst);
    return isa_result(a[9], dst, &m, ELEM, op);
}

static PyObject *isa_activation(PyObject *s, PyObject *a, PyObject *k) { (void)s; return activation("nisa.activation", 0, a, k); }

static PyObject *isa_activation_reduce(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"op", "data", "reduce_op", "reduce_res", "bias", "scale", "dtype", "mask",
                                        "dst", NULL};
    PyObject *a[9];
    const char *op = "nisa.activation_reduce";
    if (bind(op, args, kw, names, 4, a))
        return NULL;
    NC(op);
    nk_act f;
    nk_alu r;
    pynk_mask m;
    nk_tensor x, dst, rres;
    nk_operand bias, scale;
    if (pynk_parse_act(a[0], &f) || pynk_parse_alu(a[2], &r) || pynk_parse_mask(a[7], &m) ||
        get_t(a[1], &m, &x, op) || get_t(a[3], NULL, &rres, op) || operand(a[4], &m, &bias, 0.0f, op) ||
        operand(a[5], &m, &scale, 1.0f, op))
        return NULL;
    nk_dtype dt;
    if (opt_dtype(a[6], (nk_dtype)x.dtype, &dt))
        return NULL;
    nk_shape s;
    shape_of(x, &s);
    if (isa_dst(nc, loc, a[8], &m, s, dt, NK_SBUF, &dst, op))
        return NULL;
    nk_isa_activation_reduce_at(nc, loc, dst, f, x, r, rres, bias, scale);
    return isa_result(a[8], dst, &m, ELEM, op);
}

static PyObject *isa_tensor_tensor_scan(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"data0", "data1", "initial", "op0", "op1", "reverse0", "reverse1", "dtype",
                                        "mask", "dst", NULL};
    PyObject *a[10];
    const char *op = "nisa.tensor_tensor_scan";
    if (bind(op, args, kw, names, 5, a))
        return NULL;
    NC(op);
    pynk_mask m;
    nk_tensor d0, d1, dst;
    nk_operand init;
    nk_alu op0, op1;
    if (pynk_parse_mask(a[8], &m) || get_t(a[0], &m, &d0, op) || get_t(a[1], &m, &d1, op) ||
        operand(a[2], &m, &init, 0.0f, op) || pynk_parse_alu(a[3], &op0) || pynk_parse_alu(a[4], &op1))
        return NULL;
    int r0 = opt_bool(a[5], 0), r1 = opt_bool(a[6], 0);
    nk_dtype dt;
    if (r0 < 0 || r1 < 0 || opt_dtype(a[7], pair_dtype(d0, d1), &dt))
        return NULL;
    nk_shape s;
    shape_of(d0, &s);
    if (isa_dst(nc, loc, a[9], &m, s, dt, NK_SBUF, &dst, op))
        return NULL;
    nk_isa_tensor_tensor_scan_at(nc, loc, dst, d0, d1, init, op0, op1, r0, r1);
    return isa_result(a[9], dst, &m, ELEM, op);
}

static PyObject *isa_scalar_tensor_tensor(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"data", "op0", "operand0", "op1", "operand1", "reverse0", "reverse1",
                                        "dtype", "mask", "dst", NULL};
    PyObject *a[10];
    const char *op = "nisa.scalar_tensor_tensor";
    if (bind(op, args, kw, names, 5, a))
        return NULL;
    NC(op);
    pynk_mask m;
    nk_tensor x, o1, dst;
    nk_operand o0;
    nk_alu op0, op1;
    if (pynk_parse_mask(a[8], &m) || get_t(a[0], &m, &x, op) || pynk_parse_alu(a[1], &op0) ||
        operand(a[2], &m, &o0, 0.0f, op) || pynk_parse_alu(a[3], &op1) || get_t(a[4], &m, &o1, op))
        return NULL;
    int r0 = opt_bool(a[5], 0), r1 = opt_bool(a[6], 0);
    nk_dtype dt;
    if (r0 < 0 || r1 < 0 || opt_dtype(a[7], (nk_dtype)x.dtype, &dt))
        return NULL;
    nk_shape s;
    shape_of(x, &s);
    if (isa_dst(nc, loc, a[9], &m, s, dt, NK_SBUF, &dst, op))
        return NULL;
    nk_isa_scalar_tensor_tensor_at(nc, loc, dst, x, op0, o0, op1, o1, r0, r1);
    return isa_result(a[9], dst, &m, ELEM, op);
}

static PyObject *isa_tensor_scalar_reduce(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"data", "op0", "operand0", "reduce_op", "reduce_res", "reverse0", "dtype",
                                        "mask", "dst", NULL};
    PyObject *a[9];
    const char *op = "nisa.tensor_scalar_reduce";
    if (bind(op, args, kw, names, 5, a))
        return NULL;
    NC(op);
    if (a[5] && PyObject_IsTrue(a[5]))
        return pynk_not_implemented("nisa.tensor_scalar_reduce(reverse0=True)", NULL);
    pynk_mask m;
    nk_tensor x, rres, dst;
    nk_operand o0;
    nk_alu op0, rop;
    if (pynk_parse_mask(a[7], &m) || get_t(a[0], &m, &x, op) || pynk_parse_alu(a[1], &op0) ||
        operand(a[2], &m, &o0, 0.0f, op) || pynk_parse_alu(a[3], &rop) || get_t(a[4], NULL, &rres, op))
        return NULL;
    nk_dtype dt;
    if (opt_dtype(a[6], (nk_dtype)x.dtype, &dt))
        return NULL;
    nk_shape s;
    shape_of(x, &s);
    if (isa_dst(nc, loc, a[8], &m, s, dt, NK_SBUF, &dst, op))
        return NULL;
    nk_isa_tensor_scalar_reduce_at(nc, loc, dst, x, op0, o0, rop, rres);
    return isa_result(a[8], dst, &m, ELEM, op);
}

static PyObject *isa_dropout(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"data", "prob", "mask", "dtype", "dst", NULL};
    PyObject *a[5];
    const char *op = "nisa.dropout";
    if (bind(op, args, kw, names, 2, a))
        return NULL;
    NC(op);
    pynk_mask m;
    nk_tensor x, dst;
    nk_operand p;
    if (pynk_parse_mask(a[2], &m) || get_t(a[0], &m, &x, op) || operand(a[1], &m, &p, 0.0f, op))
        return NULL;
    nk_dtype dt;
    if (opt_dtype(a[3], (nk_dtype)x.dtype, &dt))
        return NULL;
    nk_shape s;
    shape_of(x, &s);
    if (isa_dst(nc, loc, a[4], &m, s, dt, NK_SBUF, &dst, op))
        return NULL;
    nk_isa_dropout_at(nc, loc, dst, x, p);
    return isa_result(a[4], dst, &m, ELEM, op);
}

static PyObject *lang_dropout(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"x", "rate", "dtype", "mask", NULL};
    PyObject *a[4];
    if (bind("nl.dropout", args, kw, names, 2, a))
        return NULL;
    NC("nl.dropout");
    pynk_mask m;
    nk_tensor x;
    nk_operand r;
    if (pynk_parse_mask(a[3], &m) || get_t(a[0], &m, &x, "nl.dropout") || operand(a[1], &m, &r, 0.0f, "nl.dropout"))
        return NULL;
    return pynk_result(cast(nc, loc, nk_dropout_at(nc, loc, x, r), a[2]), &m, ELEM, "nl.dropout");
}

static PyObject *lang_random_seed(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"seed", "mask", NULL};
    PyObject *a[2];
    if (bind("nl.random_seed", args, kw, names, 1, a))
        return NULL;
    NC("nl.random_seed");
    nk_tensor t;
    if (get_t(a[0], NULL, &t, "nl.random_seed"))
        return NULL;
    nk_random_seed_at(nc, loc, t);
    return done();
}

static PyObject *lang_where(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"condition", "x", "y", "dtype", "mask", NULL};
    PyObject *a[5];
    if (bind("nl.where", args, kw, names, 3, a))
        return NULL;
    NC("nl.where");
    pynk_mask m;
    nk_tensor c, x, y;
    if (pynk_parse_mask(a[4], &m) || get_t(a[0], &m, &c, "nl.where") || get_t(a[1], &m, &x, "nl.where"))
        return NULL;
    nk_tensor r;
    if (pynk_tensor_check(a[2])) {
        if (get_t(a[2], &m, &y, "nl.where"))
            return NULL;
        r = nk_where_at(nc, loc, c, x, y);
    } else {
        double v = PyFloat_AsDouble(a[2]);
        if (v == -1.0 && PyErr_Occurred())
            return NULL;
        r = nk_where_s_at(nc, loc, c, x, (float)v);
    }
    return pynk_result(cast(nc, loc, r, a[3]), &m, ELEM, "nl.where");
}

static PyObject *lang_all(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"x", "axis", "dtype", "mask", NULL};
    PyObject *a[4];
    if (bind("nl.all", args, kw, names, 2, a))
        return NULL;
    NC("nl.all");
    pynk_mask m;
    nk_tensor x;
    int axis;
    if (pynk_parse_mask(a[3], &m) || get_t(a[0], &m, &x, "nl.all") || parse_axis(a[1], x.ndim, &axis))
        return NULL;
    return pynk_result(cast(nc, loc, nk_all_at(nc, loc, x, axis), a[2]), &m, PART, "nl.all");
}

static PyObject *isa_tensor_tensor(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"data1", "data2", "op", "dtype", "mask", "engine", "dst", NULL};
    PyObject *a[7];
    if (bind("nisa.tensor_tensor", args, kw, names, 3, a))
        return NULL;
    NC("nisa.tensor_tensor");
    pynk_mask m;
    nk_tensor x, y, dst;
    nk_alu alu;
    nk_engine e;
    if (pynk_parse_mask(a[4], &m) || get_t(a[0], &m, &x, "nisa.tensor_tensor") ||
        get_t(a[1], &m, &y, "nisa.tensor_tensor") || pynk_parse_alu(a[2], &alu) || parse_engine(a[5], &e))
        return NULL;
    nk_dtype dt;
    if (opt_dtype(a[3], pair_dtype(x, y), &dt))
        return NULL;
    nk_shape s;
    shape_of(x, &s);
    if (isa_dst(nc, loc, a[6], &m, s, dt, NK_SBUF, &dst, "nisa.tensor_tensor"))
        return NULL;
    nk_isa_tensor_tensor_at(nc, loc, dst, x, y, alu, e);
    return isa_result(a[6], dst, &m, ELEM, "nisa.tensor_tensor");
}

static PyObject *isa_tensor_scalar(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"data", "op0", "operand0", "reverse0", "op1", "operand1", "reverse1",
                                        "dtype", "mask", "engine", "dst", NULL};
    PyObject *a[11];
    if (bind("nisa.tensor_scalar", args, kw, names, 3, a))
        return NULL;
    NC("nisa.tensor_scalar");
    pynk_mask m;
    nk_tensor x, dst;
    nk_alu op0, op1 = NK_ALU_BYPASS;
    nk_operand o0, o1 = nk_imm(0.0f);
    nk_engine e;
    if (pynk_parse_mask(a[8], &m) || get_t(a[0], &m, &x, "nisa.tensor_scalar") || pynk_parse_alu(a[1], &op0) ||
        operand(a[2], &m, &o0, 0.0f, "nisa.tensor_scalar") || parse_engine(a[9], &e))
        return NULL;
    if (a[4] && (pynk_parse_alu(a[4], &op1) || operand(a[5], &m, &o1, 0.0f, "nisa.tensor_scalar")))
        return NULL;
    int r0 = opt_bool(a[3], 0), r1 = opt_bool(a[6], 0);
    if (r0 < 0 || r1 < 0)
        return NULL;
    nk_dtype dt;
    if (opt_dtype(a[7], (nk_dtype)x.dtype, &dt))
        return NULL;
    nk_shape s;
    shape_of(x, &s);
    if (isa_dst(nc, loc, a[10], &m, s, dt, NK_SBUF, &dst, "nisa.tensor_scalar"))
        return NULL;
    nk_isa_tensor_scalar_at(nc, loc, dst, x, op0, o0, r0, op1, o1, r1, e);
    return isa_result(a[10], dst, &m, ELEM, "nisa.tensor_scalar");
}

static PyObject *isa_tensor_reduce(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"op", "data", "axis", "mask", "dtype", "negate", "keepdims", "dst", NULL};
    PyObject *a[8];
    if (bind("nisa.tensor_reduce", args, kw, names, 3, a))
        return NULL;
    NC("nisa.tensor_reduce");
    pynk_mask m;
    nk_tensor x, dst;
    nk_alu alu;
    int axis;
    if (pynk_parse_alu(a[0], &alu) || pynk_parse_mask(a[3], &m) || get_t(a[1], &m, &x, "nisa.tensor_reduce") ||
        parse_axis(a[2], x.ndim, &axis))
        return NULL;
    int negate = opt_bool(a[5], 0), keep = opt_bool(a[6], 0);
    if (negate < 0 || keep < 0)
        return NULL;
    if (negate && (alu == NK_ALU_BITWISE_AND || alu == NK_ALU_BITWISE_OR || alu == NK_ALU_BITWISE_XOR))
        return pynk_not_implemented("nisa.tensor_reduce(negate=True) with a bitwise operator", "negate applies to "
                                    "arithmetic reductions");
    nk_dtype dt;
    if (opt_dtype(a[4], (nk_dtype)x.dtype, &dt))
        return NULL;
    nk_shape s = {0, {0}};
    s.d[s.n++] = x.shape[0];
    for (int d = 1; d < x.ndim; d++) {
        int reduced = axis < 0 || d == axis;
        if (!reduced)
            s.d[s.n++] = x.shape[d];
        else if (keep)
            s.d[s.n++] = 1;
    }
    if (s.n == 1)
        s.d[s.n++] = 1;
    if (isa_dst(nc, loc, a[7], &m, s, dt, NK_SBUF, &dst, "nisa.tensor_reduce"))
        return NULL;
    nk_isa_tensor_reduce_at(nc, loc, dst, x, alu, axis, keep);
    /* negate=True: the result times -1 (exact: rounding is symmetric), as a
     * second Vector instruction where the hardware's reduction negates for free */
    if (negate)
        nk_isa_tensor_scalar_at(nc, loc, dst, dst, NK_ALU_MULTIPLY, nk_imm(-1.0f), 0, NK_ALU_BYPASS, nk_imm(0.0f), 0,
                                NK_ENGINE_VECTOR);
    return isa_result(a[7], dst, &m, PART, "nisa.tensor_reduce");
}

static PyObject *isa_tensor_copy(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"src", "mask", "dtype", "engine", "dst", NULL};
    PyObject *a[5];
    if (bind("nisa.tensor_copy", args, kw, names, 1, a))
        return NULL;
    NC("nisa.tensor_copy");
    pynk_mask m;
    nk_tensor x, dst;
    nk_engine e;
    if (pynk_parse_mask(a[1], &m) || get_t(a[0], &m, &x, "nisa.tensor_copy") || parse_engine(a[3], &e))
        return NULL;
    nk_dtype dt;
    if (opt_dtype(a[2], (nk_dtype)x.dtype, &dt))
        return NULL;
    nk_shape s;
    shape_of(x, &s);
    if (isa_dst(nc, loc, a[4], &m, s, dt, NK_SBUF, &dst, "nisa.tensor_copy"))
        return NULL;
    nk_isa_tensor_copy_at(nc, loc, dst, x, e);
    return isa_result(a[4], dst, &m, ELEM, "nisa.tensor_copy");
}

static PyObject *isa_memset(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"shape", "value", "dtype", "mask", "engine", "dst", NULL};
    PyObject *a[6];
    /* the newer form memset(dst, value) */
    if (PyTuple_GET_SIZE(args) >= 1 && pynk_tensor_check(PyTuple_GET_ITEM(args, 0))) {
        static const char *const n2[] = {"dst", "value", "engine", NULL};
        PyObject *b[3];
        if (bind("nisa.memset", args, kw, n2, 2, b))
            return NULL;
        a[0] = NULL, a[1] = b[1], a[2] = NULL, a[3] = NULL, a[4] = b[2], a[5] = b[0];
    } else if (bind("nisa.memset", args, kw, names, 2, a)) {
        return NULL;
    }
    NC("nisa.memset");
    pynk_mask m;
    nk_tensor dst;
    nk_engine e;
    double v = PyFloat_AsDouble(a[1]);
    if ((v == -1.0 && PyErr_Occurred()) || pynk_parse_mask(a[3], &m) || parse_engine(a[4], &e))
        return NULL;
    nk_shape s = {0, {0}};
    nk_dtype dt = NK_F32;
    if (!a[5] && (!a[0] || !a[2] || pynk_parse_shape(a[0], &s, 0) || pynk_parse_dtype(a[2], &dt))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "nisa.memset(shape, value, dtype) or nisa.memset(dst=, value=)");
        return NULL;
    }
    int64_t org[NK_MAXDIM];
    if ((!a[5] && pynk_mask_shape(&m, &s, org)) || isa_dst(nc, loc, a[5], &m, s, dt, NK_SBUF, &dst, "nisa.memset"))
        return NULL;
    nk_isa_memset_at(nc, loc, dst, v, e);
    return isa_result(a[5], dst, &m, ELEM, "nisa.memset");
}

/* An index expression as nk_affine: axis 0 the partition, the rest free. */
static int to_affine(PyObject *o, nk_affine *aff, nk_shape *s)
{
    if (!pynk_index_check(o)) {
        PyErr_SetString(PyExc_TypeError, "expected an index expression of nl.arange / nl.mgrid values");
        return -1;
    }
    pynk_index_obj *e = (pynk_index_obj *)o;
    memset(aff, 0, sizeof *aff);
    aff->c = (int32_t)e->c;
    aff->cp = (int32_t)e->a[0];
    for (int k = 1; k < e->ndim; k++)
        aff->cf[k - 1] = (int32_t)e->a[k];
    if (s) {
        s->n = e->ndim;
        for (int k = 0; k < e->ndim; k++)
            s->d[k] = e->ext[k];
        if (s->n == 1) {
            s->n = 2;
            s->d[1] = 1;
        }
    }
    return 0;
}

/* An expression of a view whose axis k starts at index `by` of the index
 * space, as one of the view's own indices. */
static void shift_affine(nk_affine *aff, int k, int64_t by)
{
    if (by <= 0)
        return;
    aff->c += (int32_t)(by * (k == 0 ? aff->cp : k <= NK_MAXDIM - 1 ? aff->cf[k - 1] : 0));
}

static PyObject *isa_iota(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"expr", "dtype", "mask", "dst", NULL};
    PyObject *a[4];
    if (bind("nisa.iota", args, kw, names, 2, a))
        return NULL;
    NC("nisa.iota");
    pynk_mask m;
    nk_affine aff;
    nk_shape s;
    nk_dtype dt;
    nk_tensor dst;
    int64_t org[NK_MAXDIM] = {0};
    if (to_affine(a[0], &aff, &s) || pynk_parse_dtype(a[1], &dt) || pynk_parse_mask(a[2], &m) ||
        (!a[3] && pynk_mask_shape(&m, &s, org)) || isa_dst(nc, loc, a[3], &m, s, dt, NK_SBUF, &dst, "nisa.iota"))
        return NULL;
    for (int k = 0; k < s.n; k++) /* the values at the indices the mask keeps */
        shift_affine(&aff, k, a[3] ? m.first[NK_MAXDIM - s.n + k] : org[k]);
    nk_isa_iota_at(nc, loc, dst, aff);
    return isa_result(a[3], dst, &m, ELEM, "nisa.iota");
}

static PyObject *isa_affine_select(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"pred", "on_true_tile", "on_false_value", "mask", "dtype", "dst", NULL};
    PyObject *a[6];
    if (bind("nisa.affine_select", args, kw, names, 3, a))
        return NULL;
    NC("nisa.affine_select");
    if (!PyObject_TypeCheck(a[0], &pynk_PredType) || ((pynk_pred_obj *)a[0])->n != 1) {
        PyErr_SetString(PyExc_TypeError, "nisa.affine_select: pred is one comparison of an index expression "
                        "(i_p - i_f >= 0)");
        return NULL;
    }
    pynk_pred_obj *p = (pynk_pred_obj *)a[0];
    pynk_mask m;
    nk_affine aff;
    nk_tensor t, dst;
    double fv = PyFloat_AsDouble(a[2]);
    if ((fv == -1.0 && PyErr_Occurred()) || to_affine((PyObject *)p->e[0], &aff, NULL) ||
        pynk_parse_mask(a[3], &m) || get_t(a[1], &m, &t, "nisa.affine_select"))
        return NULL;
    nk_dtype dt;
    if (opt_dtype(a[4], (nk_dtype)t.dtype, &dt))
        return NULL;
    nk_shape s;
    shape_of(t, &s);
    if (isa_dst(nc, loc, a[5], &m, s, dt, NK_SBUF, &dst, "nisa.affine_select"))
        return NULL;
    for (int k = 0; k < t.ndim; k++) /* the predicate at the indices the mask keeps */
        shift_affine(&aff, k, m.first[NK_MAXDIM - t.ndim + k]);
    nk_isa_affine_select_at(nc, loc, dst, aff, (nk_cmp)p->cmp[0], t, (float)fv);
    return isa_result(a[5], dst, &m, ELEM, "nisa.affine_select");
}

static PyObject *stats(const char *op, int aggr, PyObject *args, PyObject *kw)
{
    static const char *const names[] = {"data", "mask", "dtype", "dst", NULL};
    PyObject *a[4];
    if (bind(op, args, kw, names, 1, a))
        return NULL;
    NC(op);
    pynk_mask m;
    nk_tensor x, dst;
    if (pynk_parse_mask(a[1], &m) || get_t(a[0], &m, &x, op))
        return NULL;
    nk_dtype dt;
    if (opt_dtype(a[2], nk_dtype_is_float(x.dtype) ? (nk_dtype)x.dtype : NK_F32, &dt))
        return NULL;
    nk_shape s = {2, {x.shape[0], aggr ? 2 : 6}};
    if (isa_dst(nc, loc, a[3], &m, s, dt, NK_SBUF, &dst, op))
        return NULL;
    if (aggr)
        nk_isa_bn_aggr_at(nc, loc, dst, x);
    else
        nk_isa_bn_stats_at(nc, loc, dst, x);
    return isa_result(a[3], dst, &m, PART, op);
}

static PyObject *isa_bn_stats(PyObject *s, PyObject *a, PyObject *k) { (void)s; return stats("nisa.bn_stats", 0, a, k); }
static PyObject *isa_bn_aggr(PyObject *s, PyObject *a, PyObject *k) { (void)s; return stats("nisa.bn_aggr", 1, a, k); }

static PyObject *isa_dma_copy(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static const char *const names[] = {"dst", "src", "mask", "dge_mode", NULL};
    PyObject *a[4];
    if (bind("nisa.dma_copy", args, kw, names, 2, a))
        return NULL;
    NC("nisa.dma_copy");
    pynk_mask m;
    nk_tensor dst, src;
    if (pynk_parse_mask(a[2], &m) || get_t(a[0], &m, &dst, "nisa.dma_copy") || get_t(a[1], &m, &src, "nisa.dma_copy"))
        return NULL;
    nk_dma_copy_at(nc, loc, dst, src);
    return done();
}

/* ---- tables */

#define KW (METH_VARARGS | METH_KEYWORDS)
#define F(fn) (PyCFunction)(void (*)(void))(fn)

PyMethodDef pynk_lang_methods[] = {
    {"load", F(lang_load), KW, "nl.load(src, mask=None, dtype=None): HBM -> SBUF tile"},
    {"store", F(lang_store), KW, "nl.store(dst, value, mask=None): tile -> HBM"},
    {"copy", F(lang_copy), KW, "nl.copy(src, dtype=None, mask=None)"},
    {"ndarray", F(lang_ndarray), KW, "nl.ndarray(shape, dtype, buffer=nl.sbuf)"},
    {"zeros", F(lang_zeros), KW, "nl.zeros(shape, dtype, buffer=nl.sbuf)"},
    {"ones", F(lang_ones), KW, "nl.ones(shape, dtype, buffer=nl.sbuf)"},
    {"full", F(lang_full), KW, "nl.full(shape, fill_value, dtype, buffer=nl.sbuf)"},
    {"zeros_like", F(lang_zeros_like), KW, "nl.zeros_like(a, dtype=None, buffer=None)"},
    {"ones_like", F(lang_ones_like), KW, "nl.ones_like(a, dtype=None, buffer=None)"},
    {"empty_like", F(lang_empty_like), KW, "nl.empty_like(a, dtype=None, buffer=None)"},
    {"negative", F(lang_negative), KW, "nl.negative(x)"},
    {"sum", F(lang_sum), KW, "nl.sum(x, axis, dtype=None, mask=None, keepdims=False)"},
    {"max", F(lang_max), KW, "nl.max(x, axis, ...)"},
    {"min", F(lang_min), KW, "nl.min(x, axis, ...)"},
    {"mean", F(lang_mean), KW, "nl.mean(x, axis, ...)"},
    {"transpose", F(lang_transpose), KW, "nl.transpose(x)"},
    {"matmul", F(lang_matmul), KW, "nl.matmul(x, y, transpose_x=False): a new fp32 PSUM tile"},
    {"broadcast_to", F(lang_broadcast_to), KW, "nl.broadcast_to(src, shape)"},
    {"arange", F(lang_arange), METH_VARARGS, "nl.arange(n): an index expression"},
    {"ds", F(lang_ds), METH_VARARGS, "nl.ds(start, size): slice(start, start + size)"},
    {"affine_range", F(lang_affine_range), KW, "nl.affine_range(start, stop=None, step=1)"},
    {"sequential_range", F(lang_sequential_range), KW, "nl.sequential_range(start, stop=None, step=1)"},
    {"static_range", F(lang_static_range), KW, "nl.static_range(start, stop=None, step=1): unrolled"},
    {"program_id", F(lang_program_id), KW, "nl.program_id(axis)"},
    {"num_programs", F(lang_num_programs), KW, "nl.num_programs(axes=None)"},
    {"program_ndim", F(lang_program_ndim), METH_NOARGS, "nl.program_ndim()"},
    {"device_print", F(lang_device_print), KW, "nl.device_print(prefix, x)"},
    {"dropout", F(lang_dropout), KW, "nl.dropout(x, rate)"},
    {"random_seed", F(lang_random_seed), KW, "nl.random_seed(seed): a [1, 1] tile"},
    {"where", F(lang_where), KW, "nl.where(condition, x, y)"},
    {"all", F(lang_all), KW, "nl.all(x, axis)"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef pynk_isa_methods[] = {
    {"nc_matmul", F(isa_nc_matmul), KW, "nisa.nc_matmul(stationary, moving): stationary.T @ moving into PSUM"},
    {"nc_transpose", F(isa_nc_transpose), KW, "nisa.nc_transpose(data, engine=...)"},
    {"activation", F(isa_activation), KW, "nisa.activation(op, data, bias=None, scale=1.0, ...)"},
    {"activation_reduce", F(isa_activation_reduce), KW, "nisa.activation_reduce(op, data, reduce_op, reduce_res)"},
    {"tensor_tensor", F(isa_tensor_tensor), KW, "nisa.tensor_tensor(data1, data2, op)"},
    {"tensor_scalar", F(isa_tensor_scalar), KW, "nisa.tensor_scalar(data, op0, operand0, ...)"},
    {"tensor_reduce", F(isa_tensor_reduce), KW, "nisa.tensor_reduce(op, data, axis, keepdims=False)"},
    {"tensor_copy", F(isa_tensor_copy), KW, "nisa.tensor_copy(src, dtype=None, engine=...)"},
    {"memset", F(isa_memset), KW, "nisa.memset(shape, value, dtype)"},
    {"iota", F(isa_iota), KW, "nisa.iota(expr, dtype)"},
    {"affine_select", F(isa_affine_select), KW, "nisa.affine_select(pred, on_true_tile, on_false_value)"},
    {"bn_stats", F(isa_bn_stats), KW, "nisa.bn_stats(data)"},
    {"bn_aggr", F(isa_bn_aggr), KW, "nisa.bn_aggr(data)"},
    {"dma_copy", F(isa_dma_copy), KW, "nisa.dma_copy(dst, src)"},
    {"tensor_tensor_scan", F(isa_tensor_tensor_scan), KW, "nisa.tensor_tensor_scan(data0, data1, initial, op0, op1)"},
    {"scalar_tensor_tensor", F(isa_scalar_tensor_tensor), KW,
     "nisa.scalar_tensor_tensor(data, op0, operand0, op1, operand1)"},
    {"tensor_scalar_reduce", F(isa_tensor_scalar_reduce), KW,
     "nisa.tensor_scalar_reduce(data, op0, operand0, reduce_op, reduce_res)"},
    {"dropout", F(isa_dropout), KW, "nisa.dropout(data, prob)"},
    {NULL, NULL, 0, NULL},
};

/* Functions that carry their op code as self (nl.exp is NK_ACT_EXP), so
 * nisa.activation(op=nl.exp) and tensor_tensor(op=nl.add) read it back. */
static PyMethodDef unary_def = {"unary", F(lang_unary), KW, "an activation function on the Scalar engine"};
static PyMethodDef binary_def = {"binary", F(lang_binary), KW, "an elementwise op on the Vector engine"};

static const struct { const char *name; int code; } unary_ops[] = {
    {"exp", NK_ACT_EXP}, {"log", NK_ACT_LOG}, {"sqrt", NK_ACT_SQRT}, {"rsqrt", NK_ACT_RSQRT},
    {"tanh", NK_ACT_TANH}, {"sigmoid", NK_ACT_SIGMOID}, {"relu", NK_ACT_RELU}, {"gelu", NK_ACT_GELU},
    {"gelu_apprx_tanh", NK_ACT_GELU_APPRX_TANH}, {"silu", NK_ACT_SILU}, {"square", NK_ACT_SQUARE},
    {"abs", NK_ACT_ABS}, {"reciprocal", NK_ACT_RECIPROCAL}, {"sign", NK_ACT_SIGN}, {"softplus", NK_ACT_SOFTPLUS},
    {"erf", NK_ACT_ERF}, {"sin", NK_ACT_SIN}, {"cos", NK_ACT_COS}, {"arctan", NK_ACT_ARCTAN}, {"mish", NK_ACT_MISH},
};

static const struct { const char *name; int code; } binary_ops[] = {
    {"add", NK_ALU_ADD}, {"subtract", NK_ALU_SUBTRACT}, {"multiply", NK_ALU_MULTIPLY}, {"divide", NK_ALU_DIVIDE},
    {"maximum", NK_ALU_MAX}, {"minimum", NK_ALU_MIN}, {"power", NK_ALU_POW}, {"equal", NK_ALU_IS_EQUAL},
    {"not_equal", NK_ALU_NOT_EQUAL}, {"greater_equal", NK_ALU_IS_GE}, {"greater", NK_ALU_IS_GT},
    {"less_equal", NK_ALU_IS_LE}, {"less", NK_ALU_IS_LT}, {"bitwise_and", NK_ALU_BITWISE_AND},
    {"bitwise_or", NK_ALU_BITWISE_OR}, {"bitwise_xor", NK_ALU_BITWISE_XOR},
};

static int add_int(PyObject *m, const char *name, long v)
{
    return PyModule_AddIntConstant(m, name, v);
}

int pynk_ops_init(PyObject *lang, PyObject *isa)
{
    if (PyType_Ready(&GridType) < 0 || PyType_Ready(&MgridType) < 0)
        return -1;
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++) {
        PyObject *code = PyLong_FromLong(unary_ops[i].code);
        PyObject *f = code ? PyCFunction_NewEx(&unary_def, code, NULL) : NULL;
        Py_XDECREF(code);
        if (!f || PyModule_AddObject(lang, unary_ops[i].name, f) < 0)
            return -1;
    }
    for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++) {
        PyObject *code = PyLong_FromLong(binary_ops[i].code);
        PyObject *f = code ? PyCFunction_NewEx(&binary_def, code, NULL) : NULL;
        Py_XDECREF(code);
        if (!f || PyModule_AddObject(lang, binary_ops[i].name, f) < 0)
            return -1;
    }
    PyObject *mg = PyObject_New(PyObject, &MgridType);
    if (!mg || PyModule_AddObject(lang, "mgrid", mg) < 0)
        return -1;
    /* nl.tile_size: the trn1 values NKI documents */
    PyObject *ts = PyModule_New("tile_size");
    const nk_target *t1 = nk_target_builtin("trn1");
    if (!ts || !t1 || add_int(ts, "pmax", NK_PMAX) || add_int(ts, "psum_fmax", NK_PSUM_FMAX) ||
        add_int(ts, "gemm_stationary_fmax", NK_GEMM_STATIONARY_FMAX) ||
        add_int(ts, "gemm_moving_fmax", NK_GEMM_MOVING_FMAX) ||
        add_int(ts, "bn_stats_fmax", (long)((const nk_arch *)t1)->bn_stats_fmax) ||
        add_int(ts, "psum_partition", NK_PMAX) || PyModule_AddObject(lang, "tile_size", ts) < 0)
        return -1;
    /* nisa.reduce_cmd */
    PyObject *rc = PyModule_New("reduce_cmd");
    if (!rc)
        return -1;
    for (int i = RC_IDLE; i <= RC_LOAD_REDUCE; i++)
        if (add_int(rc, reduce_cmds[i], i))
            return -1;
    if (PyModule_AddObject(isa, "reduce_cmd", rc) < 0)
        return -1;
    /* nisa.engine */
    PyObject *eng = PyModule_New("engine");
    if (!eng || add_int(eng, "tensor", NK_ENGINE_TENSOR) || add_int(eng, "vector", NK_ENGINE_VECTOR) ||
        add_int(eng, "scalar", NK_ENGINE_SCALAR) || add_int(eng, "gpsimd", NK_ENGINE_GPSIMD) ||
        add_int(eng, "sync", NK_ENGINE_SYNC) || add_int(eng, "unknown", -1) ||
        PyModule_AddObject(isa, "engine", eng) < 0)
        return -1;
    return 0;
}
