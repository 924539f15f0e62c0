/*
 * tensor.c - Tensor objects (HBM tensors, tiles and their views) and NKI's
 * index expressions: nl.arange / nl.mgrid values, their affine arithmetic
 * and broadcasting ([:, None]), comparisons used as masks or predicates.
 *
 * Indexing a Tensor records the view without applying it: x[i_p, i_f] with a
 * partial last tile reads past the end of x until the op's mask bounds it,
 * so the view goes to the tracer (nk_ix or nk_ap) when an op consumes it,
 * with the op's mask as smaller extents. Slices and integers become nk_ix
 * ranges; index expressions become an nk_ap access pattern.
 */
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL pynk_ARRAY_API
#include "pynk.h"

#include <numpy/arrayobject.h>
#include <string.h>

/* ---------------------------------------------------------------- index expressions */

PyObject *pynk_index_new(int ndim, const int64_t *ext, const int64_t *a, int64_t c)
{
    pynk_index_obj *o = PyObject_New(pynk_index_obj, &pynk_IndexType);
    if (!o)
        return NULL;
    o->ndim = ndim;
    for (int k = 0; k < NK_MAXDIM; k++) {
        o->ext[k] = k < ndim ? ext[k] : 1;
        o->a[k] = k < ndim ? a[k] : 0;
    }
    o->c = c;
    return (PyObject *)o;
}

/* An int operand of index arithmetic (Python ints, numpy integers). */
static int as_int(PyObject *o, int64_t *v)
{
    if (PyBool_Check(o) || pynk_index_check(o) || pynk_tensor_check(o) || PyFloat_Check(o))
        return 0;
    if (!PyLong_Check(o) && !PyIndex_Check(o))
        return 0;
    PyObject *ix = PyNumber_Index(o);
    if (!ix) {
        PyErr_Clear();
        return 0;
    }
    long long x = PyLong_AsLongLong(ix);
    Py_DECREF(ix);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *v = x;
    return 1;
}

/* Broadcasts two grids (numpy's rule, right-aligned): -1 when they clash. */
static int broadcast(const pynk_index_obj *x, const pynk_index_obj *y, int *nd, int64_t *ext)
{
    int n = x->ndim > y->ndim ? x->ndim : y->ndim;
    for (int k = 0; k < n; k++) {
        int kx = k - (n - x->ndim), ky = k - (n - y->ndim);
        int64_t ex = kx >= 0 ? x->ext[kx] : 1, ey = ky >= 0 ? y->ext[ky] : 1;
        if (ex != ey && ex != 1 && ey != 1)
            return -1;
        ext[k] = ex > ey ? ex : ey;
    }
    *nd = n;
    return 0;
}

/* x * sx + y * sy (y may be NULL: a constant cy). */
static PyObject *index_combine(const pynk_index_obj *x, int64_t sx, const pynk_index_obj *y, int64_t sy,
                               int64_t cy)
{
    int64_t ext[NK_MAXDIM], a[NK_MAXDIM] = {0};
    int n = x->ndim;
    if (y) {
        if (broadcast(x, y, &n, ext)) {
            PyErr_SetString(PyExc_ValueError, "index expressions of shapes that do not broadcast");
            return NULL;
        }
    } else {
        memcpy(ext, x->ext, sizeof ext);
    }
    for (int k = 0; k < n; k++) {
        int kx = k - (n - x->ndim);
        a[k] = kx >= 0 ? x->a[kx] * sx : 0;
        if (y) {
            int ky = k - (n - y->ndim);
            a[k] += ky >= 0 ? y->a[ky] * sy : 0;
        }
    }
    return pynk_index_new(n, ext, a, x->c * sx + (y ? y->c * sy : cy));
}

static PyObject *index_not_affine(const char *what)
{
    return pynk_not_implemented(what, "index expressions are affine (an expression times an integer, plus "
                                "expressions and integers)");
}

static PyObject *index_add(PyObject *a, PyObject *b)
{
    int64_t v;
    if (pynk_index_check(a) && pynk_index_check(b))
        return index_combine((pynk_index_obj *)a, 1, (pynk_index_obj *)b, 1, 0);
    if (pynk_index_check(a) && as_int(b, &v))
        return index_combine((pynk_index_obj *)a, 1, NULL, 0, v);
    if (pynk_index_check(b) && as_int(a, &v))
        return index_combine((pynk_index_obj *)b, 1, NULL, 0, v);
    Py_RETURN_NOTIMPLEMENTED;
}

static PyObject *index_sub(PyObject *a, PyObject *b)
{
    int64_t v;
    if (pynk_index_check(a) && pynk_index_check(b))
        return index_combine((pynk_index_obj *)a, 1, (pynk_index_obj *)b, -1, 0);
    if (pynk_index_check(a) && as_int(b, &v))
        return index_combine((pynk_index_obj *)a, 1, NULL, 0, -v);
    if (pynk_index_check(b) && as_int(a, &v))
        return index_combine((pynk_index_obj *)b, -1, NULL, 0, v);
    Py_RETURN_NOTIMPLEMENTED;
}

static PyObject *index_mul(PyObject *a, PyObject *b)
{
    int64_t v;
    if (pynk_index_check(a) && as_int(b, &v))
        return index_combine((pynk_index_obj *)a, v, NULL, 0, 0);
    if (pynk_index_check(b) && as_int(a, &v))
        return index_combine((pynk_index_obj *)b, v, NULL, 0, 0);
    if (pynk_index_check(a) && pynk_index_check(b))
        return index_not_affine("multiplying two index expressions");
    Py_RETURN_NOTIMPLEMENTED;
}

static PyObject *index_neg(PyObject *a) { return index_combine((pynk_index_obj *)a, -1, NULL, 0, 0); }
static PyObject *index_pos(PyObject *a) { Py_INCREF(a); return a; }

static PyObject *index_floordiv(PyObject *a, PyObject *b)
{
    (void)a;
    (void)b;
    return index_not_affine("dividing an index expression");
}

static PyObject *pred_new1(pynk_index_obj *e, int cmp)
{
    pynk_pred_obj *p = PyObject_New(pynk_pred_obj, &pynk_PredType);
    if (!p)
        return NULL;
    p->n = 1;
    p->e[0] = e;
    p->cmp[0] = cmp;
    return (PyObject *)p;
}

/* a cmp b as (a - b) cmp 0 */
static PyObject *index_richcompare(PyObject *a, PyObject *b, int op)
{
    static const int cmps[] = {[Py_LT] = NK_CMP_LT, [Py_LE] = NK_CMP_LE, [Py_EQ] = NK_CMP_EQ,
                               [Py_NE] = NK_CMP_NE, [Py_GT] = NK_CMP_GT, [Py_GE] = NK_CMP_GE};
    int64_t v;
    PyObject *d;
    if (pynk_index_check(b))
        d = index_combine((pynk_index_obj *)a, 1, (pynk_index_obj *)b, -1, 0);
    else if (as_int(b, &v))
        d = index_combine((pynk_index_obj *)a, 1, NULL, 0, -v);
    else
        Py_RETURN_NOTIMPLEMENTED;
    if (!d)
        return NULL;
    PyObject *p = pred_new1((pynk_index_obj *)d, cmps[op]);
    if (!p)
        Py_DECREF(d);
    return p;
}

static int index_nb_bool(PyObject *self)
{
    (void)self;
    PyErr_SetString(PyExc_TypeError, "an index expression has no truth value; use it as a mask (mask=(i_p < n))");
    return -1;
}

static PyNumberMethods index_number = {
    .nb_add = index_add, .nb_subtract = index_sub, .nb_multiply = index_mul, .nb_negative = index_neg,
    .nb_positive = index_pos, .nb_floor_divide = index_floordiv, .nb_bool = index_nb_bool,
};

/* expr[:, None], expr[None, :]: places the grid's axes among new unit axes. */
static PyObject *index_getitem(PyObject *self, PyObject *key)
{
    pynk_index_obj *x = (pynk_index_obj *)self;
    PyObject *t = PyTuple_Check(key) ? (Py_INCREF(key), key) : PyTuple_Pack(1, key);
    if (!t)
        return NULL;
    int64_t ext[NK_MAXDIM], a[NK_MAXDIM];
    int n = 0, used = 0;
    Py_ssize_t m = PyTuple_GET_SIZE(t);
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *e = PyTuple_GET_ITEM(t, i);
        if (n >= NK_MAXDIM)
            goto bad;
        if (e == Py_None) {
            ext[n] = 1;
            a[n++] = 0;
        } else if (PySlice_Check(e)) {
            Py_ssize_t s0, s1, st;
            if (PySlice_Unpack(e, &s0, &s1, &st) < 0)
                goto fail;
            if (s0 != 0 || s1 != PY_SSIZE_T_MAX || st != 1 || used >= x->ndim)
                goto bad;
            ext[n] = x->ext[used];
            a[n++] = x->a[used++];
        } else {
            goto bad;
        }
    }
    while (used < x->ndim && n < NK_MAXDIM) { /* trailing axes kept */
        ext[n] = x->ext[used];
        a[n++] = x->a[used++];
    }
    if (used != x->ndim)
        goto bad;
    Py_DECREF(t);
    return pynk_index_new(n, ext, a, x->c);
bad:
    Py_DECREF(t);
    return pynk_not_implemented("this indexing of an index expression", "only [:, None] / [None, :] style "
                                "placement of its axes");
fail:
    Py_DECREF(t);
    return NULL;
}

static PyMappingMethods index_mapping = {.mp_subscript = index_getitem};

static PyObject *index_repr(PyObject *self)
{
    pynk_index_obj *x = (pynk_index_obj *)self;
    char buf[256];
    int k = snprintf(buf, sizeof buf, "IndexExpr(%lld", (long long)x->c);
    for (int i = 0; i < x->ndim && k < (int)sizeof buf; i++)
        if (x->a[i])
            k += snprintf(buf + k, sizeof buf - (size_t)k, " + %lld*i%d", (long long)x->a[i], i);
    k += snprintf(buf + k, sizeof buf - (size_t)k, ", shape=(");
    for (int i = 0; i < x->ndim && k < (int)sizeof buf; i++)
        k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%lld", i ? ", " : "", (long long)x->ext[i]);
    snprintf(buf + k, sizeof buf - (size_t)k, "%s))", x->ndim == 1 ? "," : "");
    return PyUnicode_FromString(buf);
}

static PyObject *index_shape(PyObject *self, void *unused)
{
    (void)unused;
    pynk_index_obj *x = (pynk_index_obj *)self;
    return pynk_shape_tuple(x->ext, x->ndim);
}

static PyGetSetDef index_getset[] = {
    {"shape", index_shape, NULL, "the index grid's shape", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pynk_IndexType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.IndexExpr",
    .tp_basicsize = sizeof(pynk_index_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "an affine index expression (nl.arange, nl.mgrid)",
    .tp_repr = index_repr,
    .tp_as_number = &index_number,
    .tp_as_mapping = &index_mapping,
    .tp_richcompare = index_richcompare,
    .tp_getset = index_getset,
};

/* ---- predicates: comparisons and their conjunctions */

static void pred_dealloc(PyObject *self)
{
    pynk_pred_obj *p = (pynk_pred_obj *)self;
    for (int i = 0; i < p->n; i++)
        Py_XDECREF(p->e[i]);
    PyObject_Free(self);
}

static PyObject *pred_and(PyObject *a, PyObject *b)
{
    if (!PyObject_TypeCheck(a, &pynk_PredType) || !PyObject_TypeCheck(b, &pynk_PredType))
        Py_RETURN_NOTIMPLEMENTED;
    pynk_pred_obj *x = (pynk_pred_obj *)a, *y = (pynk_pred_obj *)b;
    if (x->n + y->n > PYNK_MAXPRED)
        return pynk_not_implemented("a mask of more than 8 comparisons", NULL);
    pynk_pred_obj *p = PyObject_New(pynk_pred_obj, &pynk_PredType);
    if (!p)
        return NULL;
    p->n = 0;
    for (int k = 0; k < 2; k++) {
        pynk_pred_obj *s = k ? y : x;
        for (int i = 0; i < s->n; i++) {
            Py_INCREF(s->e[i]);
            p->e[p->n] = s->e[i];
            p->cmp[p->n++] = s->cmp[i];
        }
    }
    return (PyObject *)p;
}

static int pred_nb_bool(PyObject *self)
{
    (void)self;
    PyErr_SetString(PyExc_TypeError, "a comparison of index expressions has no truth value here; pass it as "
                    "mask= (combine comparisons with &, not `and`)");
    return -1;
}

static PyNumberMethods pred_number = {.nb_and = pred_and, .nb_bool = pred_nb_bool};

PyTypeObject pynk_PredType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.IndexPredicate",
    .tp_basicsize = sizeof(pynk_pred_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "comparisons of index expressions: a mask, or a predicate of affine_select",
    .tp_dealloc = pred_dealloc,
    .tp_as_number = &pred_number,
};

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

void pynk_mask_none(pynk_mask *m)
{
    for (int k = 0; k < NK_MAXDIM; k++) {
        m->limit[k] = -1;
        m->lo[k] = 0;
        m->first[k] = -1;
        m->cut[k] = 0;
    }
    m->any = 0;
    m->pslot = -1;
}

/* Each comparison a*i + c cmp 0 of one index bounds that index's axis:
 * from above (<, <=), from below (>, >=) or both (==). */
int pynk_parse_mask(PyObject *o, pynk_mask *m)
{
    pynk_mask_none(m);
    if (!o || o == Py_None)
        return 0;
    if (!PyObject_TypeCheck(o, &pynk_PredType)) {
        PyErr_Format(PyExc_TypeError, "mask= takes comparisons of index expressions (i_p < n), not %R", o);
        return -1;
    }
    pynk_pred_obj *p = (pynk_pred_obj *)o;
    for (int i = 0; i < p->n; i++) {
        const pynk_index_obj *e = p->e[i];
        int axis = -1, nax = 0;
        for (int k = 0; k < e->ndim; k++)
            if (e->a[k] && e->ext[k] > 1) {
                axis = k;
                nax++;
            }
        int cmp = p->cmp[i];
        if (nax != 1 || cmp == NK_CMP_NE) {
            pynk_not_implemented("this mask", "a mask bounds indices of one axis per comparison (i < n, i >= n, "
                                 "i == n, combined with &); != and comparisons of two axes are not masks");
            return -1;
        }
        /* the other (unit) axes contribute their single index, 0 */
        int64_t a = e->a[axis], c = e->c;
        if (a < 0) { /* -a*i + c cmp 0  <=>  a*i - c (reversed cmp) 0 */
            a = -a;
            c = -c;
            cmp = cmp == NK_CMP_GE ? NK_CMP_LE : cmp == NK_CMP_GT ? NK_CMP_LT : cmp == NK_CMP_LE ? NK_CMP_GE
                : cmp == NK_CMP_LT ? NK_CMP_GT : cmp;
        }
        /* a*i cmp -c, a > 0 */
        int slot = NK_MAXDIM - e->ndim + axis;
        if (cmp == NK_CMP_LT || cmp == NK_CMP_LE || cmp == NK_CMP_EQ) {
            int64_t lim = floor_div(cmp == NK_CMP_LT ? -c - 1 : -c, a) + 1;
            if (lim < 0)
                lim = 0;
            if (m->limit[slot] < 0 || lim < m->limit[slot])
                m->limit[slot] = lim;
        }
        if (cmp == NK_CMP_GT || cmp == NK_CMP_GE || cmp == NK_CMP_EQ) {
            int64_t lo = cmp == NK_CMP_GT ? floor_div(-c, a) + 1 : -floor_div(c, a); /* > : floor + 1, >= : ceil */
            if (lo > m->lo[slot])
                m->lo[slot] = lo;
        }
        m->any = 1;
    }
    return 0;
}

/* The bounds of slot s in a tile's own indices (its axis starting at index
 * org of the op's index space, extent n): [*start, *stop); returns 1 when
 * they cut the axis. An axis of one index at 0 is broadcast: only a bound
 * from above applies (as a smaller extent, possibly 0). */
static int mask_range(const pynk_mask *m, int s, int64_t org, int64_t n, int64_t *start, int64_t *stop)
{
    *start = 0;
    *stop = n;
    if (!m || s < 0 || s >= NK_MAXDIM)
        return 0;
    if (m->lo[s] > org && !(n == 1 && org == 0))
        *start = m->lo[s] - org < n ? m->lo[s] - org : n;
    if (m->limit[s] >= 0 && m->limit[s] - org < *stop)
        *stop = m->limit[s] - org > *start ? m->limit[s] - org : *start;
    return *start > 0 || *stop < n;
}

/* Records where an operand's axis in slot s starts in the index space;
 * operands of one op must agree. */
static int mask_note(pynk_mask *m, int s, int64_t first, int cut, int broadcast, const char *what)
{
    if (!m)
        return 0;
    m->cut[s] |= cut;
    if (broadcast)
        return 0;
    if (m->first[s] < 0)
        m->first[s] = first;
    else if (m->first[s] != first) {
        nk_loc l = pynk_loc();
        PyErr_Format(PyExc_ValueError, "%s:%d: %s: the operands start at different indices (%lld and %lld) of "
                     "axis %d of the index space (tiles made under different masks); give the op a mask they all "
                     "cover", l.file, l.line, what, (long long)m->first[s], (long long)first, s - NK_MAXDIM);
        return -1;
    }
    return 0;
}

int pynk_mask_shape(pynk_mask *m, nk_shape *s, int64_t *org)
{
    for (int k = 0; k < s->n; k++) {
        int sl = NK_MAXDIM - s->n + k;
        int64_t start, stop;
        int c = mask_range(m, sl, 0, s->d[k], &start, &stop);
        if (k == 0 && m->pslot < 0)
            m->pslot = sl;
        if (mask_note(m, sl, start, c, s->d[k] == 1, "the mask"))
            return -1;
        s->d[k] = stop - start;
        org[k] = start;
    }
    return 0;
}

int pynk_mask_from_zero(const pynk_mask *m, const char *op)
{
    for (int s = 0; m && s < NK_MAXDIM; s++)
        if (m->first[s] > 0 || m->lo[s] > 0) {
            char what[96];
            snprintf(what, sizeof what, "%s under a mask that bounds an index from below", op);
            pynk_not_implemented(what, "the result's axes do not follow its operands' (masks from below apply to "
                                 "elementwise ops, reductions, loads, stores and copies); bound the view by "
                                 "indexing it instead");
            return -1;
        }
    return 0;
}

/* ---------------------------------------------------------------- tensors */

PyObject *pynk_shape_tuple(const int64_t *shape, int n)
{
    PyObject *t = PyTuple_New(n);
    if (!t)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *v = PyLong_FromLongLong(shape[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static uint64_t cur_gen(void) { return pynk_cur ? pynk_cur->gen : 0; }

PyObject *pynk_tensor_new(nk_tensor t)
{
    pynk_tensor_obj *o = PyObject_New(pynk_tensor_obj, &pynk_TensorType);
    if (!o)
        return NULL;
    o->t = t;
    o->gen = cur_gen();
    o->kind = PYNK_VIEW_PLAIN;
    o->nr = 0;
    o->ndim = 0;
    o->inplace = 0;
    o->masked = 0;
    memset(o->org, 0, sizeof o->org);
    o->vndim = t.ndim;
    for (int i = 0; i < NK_MAXDIM; i++)
        o->vshape[i] = i < t.ndim ? t.shape[i] : 0;
    return (PyObject *)o;
}

static void tensor_dealloc(PyObject *self) { PyObject_Free(self); }

static int same_trace(pynk_tensor_obj *o, const char *what)
{
    if (!pynk_cur || !pynk_cur->nc) {
        PyErr_Format(PyExc_RuntimeError, "%s: a kernel's tensors exist only while it is traced", what);
        return 0;
    }
    if (o->gen != pynk_cur->gen) {
        PyErr_Format(PyExc_RuntimeError, "%s: this tensor belongs to another kernel call (tensors do not outlive "
                     "their kernel)", what);
        return 0;
    }
    return 1;
}

int pynk_tensor_get(PyObject *obj, pynk_mask *m, nk_tensor *out, const char *what)
{
    if (!pynk_tensor_check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a tensor or tile, got %.80s", what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    pynk_tensor_obj *o = (pynk_tensor_obj *)obj;
    if (!same_trace(o, what))
        return -1;
    nk_ctx *nc = pynk_cur->nc;
    nk_loc loc = pynk_loc();
    /* the mask's range of each view axis, in the view's own indices */
    int n = o->vndim, cut = 0;
    int64_t start[NK_MAXDIM], stop[NK_MAXDIM];
    for (int k = 0; k < n; k++) {
        int s = NK_MAXDIM - n + k;
        int c = mask_range(m, s, o->org[k], o->vshape[k], &start[k], &stop[k]);
        cut |= c;
        if (m && k == 0 && m->pslot < 0)
            m->pslot = s;
        if (mask_note(m, s, o->org[k] + start[k], c || ((o->masked >> k) & 1), o->vshape[k] == 1 && o->org[k] == 0, what))
            return -1;
    }
    if (o->kind == PYNK_VIEW_PLAIN && !cut) {
        *out = o->t;
        return 0;
    }
    if (o->kind == PYNK_VIEW_AP) {
        int64_t ext[NK_MAXDIM];
        nk_aidx idx[NK_MAXDIM];
        memcpy(idx, o->idx, sizeof idx);
        for (int k = 0; k < o->ndim; k++) {
            ext[k] = stop[k] - start[k];
            for (int d = 0; d < o->t.ndim; d++)
                idx[d].c += idx[d].a[k] * start[k];
        }
        *out = nk_ap_at(nc, loc, o->t, o->ndim, ext, idx);
        return pynk_check();
    }
    nk_range r[NK_MAXDIM];
    int nr = o->kind == PYNK_VIEW_RANGES ? o->nr : o->t.ndim;
    for (int d = 0, k = 0; d < o->t.ndim; d++) {
        nk_range q = o->kind == PYNK_VIEW_RANGES && d < o->nr ? o->r[d] : NK_ALL;
        if (q.kind == NK_RANGE_INDEX) {
            r[d] = q;
            continue;
        }
        if (start[k] > 0 || stop[k] < o->vshape[k]) {
            if (q.kind == NK_RANGE_ALL)
                q = (nk_range){0, o->t.shape[d], 1, 0, NK_RANGE_SLICE};
            int64_t l = q.start + stop[k] * q.step;
            if (q.kind == NK_RANGE_MASKED && q.limit < l)
                l = q.limit;
            q = (nk_range){q.start + start[k] * q.step, q.stop, q.step, l, NK_RANGE_MASKED};
            if (d >= nr)
                nr = d + 1;
        }
        k++;
        r[d] = q;
    }
    *out = nk_ix_at(nc, loc, o->t, nr, r);
    return pynk_check();
}

PyObject *pynk_result(nk_tensor t, const pynk_mask *m, int how, const char *op)
{
    if (pynk_check())
        return NULL;
    if (how == PYNK_RES_OTHER && pynk_mask_from_zero(m, op))
        return NULL;
    PyObject *r = pynk_tensor_new(t);
    if (!r || !m || how == PYNK_RES_OTHER)
        return r;
    pynk_tensor_obj *o = (pynk_tensor_obj *)r;
    for (int k = 0; k < o->vndim; k++) {
        int s = how == PYNK_RES_PARTITION ? (k == 0 ? m->pslot : -1) : NK_MAXDIM - o->vndim + k;
        if (s < 0)
            continue;
        if (m->first[s] > 0)
            o->org[k] = m->first[s];
        if (m->cut[s])
            o->masked |= 1 << k;
    }
    return r;
}

int pynk_tensor_shape(PyObject *obj, int64_t *shape, int *ndim)
{
    pynk_tensor_obj *o = (pynk_tensor_obj *)obj;
    *ndim = o->vndim;
    memcpy(shape, o->vshape, sizeof o->vshape);
    return 0;
}

/* ---- indexing */

static int64_t count_of(int64_t start, int64_t stop, int64_t step)
{
    return stop > start && step > 0 ? 1 + (stop - start - 1) / step : 0;
}

/* A slice's start, stop and step on an axis of size n (negative indices
 * count from the end, as in Python; bounds are the tracer's to check). */
static int slice_bounds(PyObject *e, int64_t size, int64_t *start, int64_t *stop, int64_t *step)
{
    Py_ssize_t s0, s1, st;
    if (PySlice_Unpack(e, &s0, &s1, &st) < 0)
        return -1;
    *start = s0;
    *stop = s1;
    *step = st;
    if (s0 == PY_SSIZE_T_MIN || (s0 < 0 && s0 + size < 0))
        *start = s0 == PY_SSIZE_T_MIN ? 0 : s0;
    else if (s0 < 0)
        *start += size;
    if (s1 == PY_SSIZE_T_MAX)
        *stop = size;
    else if (s1 < 0)
        *stop += size;
    return 0;
}

/* Basic indexing: integers, slices, nl.ds, Ellipsis. */
static int key_ranges(const nk_tensor *t, PyObject *items, pynk_tensor_obj *v)
{
    Py_ssize_t m = PyTuple_GET_SIZE(items), nell = 0;
    for (Py_ssize_t i = 0; i < m; i++)
        nell += PyTuple_GET_ITEM(items, i) == Py_Ellipsis;
    if (m - nell > t->ndim || nell > 1) {
        PyErr_Format(PyExc_IndexError, "%zd indices for a %d-dim tensor", m - nell, t->ndim);
        return -1;
    }
    int d = 0;
    v->vndim = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *e = PyTuple_GET_ITEM(items, i);
        if (e == Py_Ellipsis) {
            int skip = t->ndim - (int)(m - 1);
            for (int j = 0; j < skip; j++, d++) {
                v->r[d] = NK_ALL;
                v->vshape[v->vndim++] = t->shape[d];
            }
            continue;
        }
        int64_t size = t->shape[d], iv;
        if (as_int(e, &iv)) {
            if (iv < 0)
                iv += size;
            v->r[d++] = nk_i(iv);
            continue;
        }
        if (!PySlice_Check(e)) {
            PyErr_Format(PyExc_TypeError, "a tensor index is an int, a slice, nl.ds(...) or an index expression, "
                         "not %.80s", Py_TYPE(e)->tp_name);
            return -1;
        }
        int64_t start, stop, step;
        if (slice_bounds(e, size, &start, &stop, &step))
            return -1;
        if (step == 1 && start == 0 && stop == size)
            v->r[d] = NK_ALL;
        else
            v->r[d] = nk_rs(start, stop, step);
        v->vshape[v->vndim++] = count_of(start, stop, step);
        d++;
    }
    for (; d < t->ndim; d++) {
        v->r[d] = NK_ALL;
        v->vshape[v->vndim++] = t->shape[d];
    }
    v->nr = t->ndim;
    v->kind = PYNK_VIEW_RANGES;
    return 0;
}

/* Advanced indexing: index expressions (and integers) broadcast to one grid,
 * whose axes are the view's. A slice (or nl.ds) in the same subscript reads
 * along a view axis of its own: the grid axis at its place among the
 * subscript's non-integer entries when every expression is broadcast along
 * it (x[i_p, 0:512] with i_p = nl.arange(128)[:, None]), else a new axis
 * inserted there (t[i_p, :, i_f] with i_p, i_f of two axes). Source axes not
 * indexed are appended whole. */
static int key_ap(const nk_tensor *t, PyObject *key, pynk_tensor_obj *v)
{
    Py_ssize_t m0 = PyTuple_GET_SIZE(key), nell = 0;
    for (Py_ssize_t i = 0; i < m0; i++)
        nell += PyTuple_GET_ITEM(key, i) == Py_Ellipsis;
    if (m0 - nell > t->ndim || nell > 1) {
        PyErr_Format(PyExc_IndexError, "%zd indices for a %d-dim tensor", m0 - nell, t->ndim);
        return -1;
    }
    PyObject *items[NK_MAXDIM];
    int m = 0;
    for (Py_ssize_t i = 0; i < m0; i++) {
        PyObject *e = PyTuple_GET_ITEM(key, i);
        if (e != Py_Ellipsis) {
            items[m++] = e;
            continue;
        }
        for (int j = 0; j < t->ndim - (int)(m0 - 1); j++)
            items[m++] = NULL; /* ':' */
    }
    pynk_index_obj acc = {.ndim = 0};
    for (int k = 0; k < NK_MAXDIM; k++)
        acc.ext[k] = 1;
    for (int i = 0; i < m; i++) {
        PyObject *e = items[i];
        int64_t iv;
        if (e && pynk_index_check(e)) {
            int nd;
            int64_t ext[NK_MAXDIM];
            if (broadcast(&acc, (pynk_index_obj *)e, &nd, ext)) {
                PyErr_SetString(PyExc_IndexError, "the index expressions' shapes do not broadcast");
                return -1;
            }
            acc.ndim = nd;
            memcpy(acc.ext, ext, sizeof ext);
        } else if (e && !PySlice_Check(e) && !as_int(e, &iv)) {
            PyErr_Format(PyExc_TypeError, "a tensor index is an int, a slice, nl.ds(...) or an index expression, "
                         "not %.80s", Py_TYPE(e)->tp_name);
            return -1;
        }
    }
    /* the view's axes: the grid's, with the slices placed among them */
    int R = acc.ndim, nv = R;
    int64_t vext[NK_MAXDIM], sstart[NK_MAXDIM] = {0}, sstep[NK_MAXDIM] = {0};
    int gmap[NK_MAXDIM], smap[NK_MAXDIM], taken[NK_MAXDIM] = {0};
    for (int k = 0; k < R; k++) {
        gmap[k] = k;
        vext[k] = acc.ext[k];
    }
    for (int i = 0, pos = 0; i < m; i++) {
        PyObject *e = items[i];
        int64_t iv;
        smap[i] = -1;
        if (e && as_int(e, &iv))
            continue;
        if (e && pynk_index_check(e)) {
            pos++;
            continue;
        }
        int64_t start = 0, stop = t->shape[i], step = 1;
        if (e && slice_bounds(e, t->shape[i], &start, &stop, &step))
            return -1;
        if (step < 1) {
            PyErr_Format(PyExc_IndexError, "slice step %lld on axis %d: steps are positive", (long long)step, i);
            return -1;
        }
        sstart[i] = start;
        sstep[i] = step;
        int64_t count = count_of(start, stop, step);
        if (pos < nv && !taken[pos] && vext[pos] == 1) { /* the unit grid axis at its place */
            taken[pos] = 1;
            vext[pos] = count;
            smap[i] = pos++;
            continue;
        }
        if (nv >= NK_MAXDIM) {
            PyErr_Format(PyExc_IndexError, "the view would have more than %d axes", NK_MAXDIM);
            return -1;
        }
        int q = pos < nv ? pos : nv;
        for (int k = nv; k > q; k--) {
            vext[k] = vext[k - 1];
            taken[k] = taken[k - 1];
        }
        for (int k = 0; k < R; k++)
            gmap[k] += gmap[k] >= q;
        for (int j = 0; j < i; j++)
            smap[j] += smap[j] >= q;
        vext[q] = count;
        taken[q] = 1;
        smap[i] = q;
        nv++;
        pos++;
    }
    int extra = t->ndim - m;
    if (nv + extra > NK_MAXDIM) {
        PyErr_Format(PyExc_IndexError, "the view would have %d axes (at most %d)", nv + extra, NK_MAXDIM);
        return -1;
    }
    memset(v->idx, 0, sizeof v->idx);
    for (int k = 0; k < nv; k++)
        v->ext[k] = vext[k];
    for (int i = 0; i < m; i++) {
        PyObject *e = items[i];
        int64_t iv;
        if (smap[i] >= 0) {
            v->idx[i].c = sstart[i];
            v->idx[i].a[smap[i]] = sstep[i];
        } else if (as_int(e, &iv)) {
            v->idx[i].c = iv < 0 ? iv + t->shape[i] : iv;
        } else {
            pynk_index_obj *x = (pynk_index_obj *)e;
            v->idx[i].c = x->c;
            for (int k = 0; k < x->ndim; k++) {
                int g = k + (R - x->ndim);
                /* broadcast along an axis (one index of its own, 0) or
                 * along a slice's: no coefficient */
                if (x->ext[k] > 1 && !taken[gmap[g]])
                    v->idx[i].a[gmap[g]] = x->a[k];
            }
        }
    }
    for (int j = 0; j < extra; j++) {
        int d = m + j, k = nv + j;
        v->ext[k] = t->shape[d];
        v->idx[d].a[k] = 1;
    }
    v->ndim = nv + extra;
    v->vndim = v->ndim;
    memcpy(v->vshape, v->ext, sizeof v->ext);
    v->kind = PYNK_VIEW_AP;
    return 0;
}

static PyObject *tensor_getitem(PyObject *self, PyObject *key)
{
    pynk_tensor_obj *o = (pynk_tensor_obj *)self;
    for (int k = 0; k < o->vndim; k++)
        if (o->org[k])
            return pynk_not_implemented("indexing a tile made under a mask that bounds an index from below",
                                        "use it whole, under the same mask");
    nk_tensor base;
    if (pynk_tensor_get(self, NULL, &base, "indexing") < 0)
        return NULL;
    PyObject *items = PyTuple_Check(key) ? (Py_INCREF(key), key) : PyTuple_Pack(1, key);
    if (!items)
        return NULL;
    int adv = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items); i++) {
        PyObject *e = PyTuple_GET_ITEM(items, i);
        adv |= pynk_index_check(e);
        if (e == Py_None) {
            Py_DECREF(items);
            return pynk_not_implemented("None (a new axis) in a tensor subscript", "reshape the tensor instead");
        }
    }
    pynk_tensor_obj *v = (pynk_tensor_obj *)pynk_tensor_new(base);
    if (!v) {
        Py_DECREF(items);
        return NULL;
    }
    v->gen = o->gen;
    int rc = adv ? key_ap(&base, items, v) : key_ranges(&base, items, v);
    Py_DECREF(items);
    if (rc) {
        Py_DECREF(v);
        return NULL;
    }
    return (PyObject *)v;
}

/* t[...] = value: a copy into t's view (nk_assign: when nobody else holds
 * the value, the op that made it writes t directly), or a fill. */
static int tensor_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "tensor elements cannot be deleted");
        return -1;
    }
    nk_ctx *nc = pynk_nc("item assignment");
    if (!nc)
        return -1;
    if (pynk_tensor_check(value) && ((pynk_tensor_obj *)value)->inplace) {
        ((pynk_tensor_obj *)value)->inplace = 0; /* t[...] += v already wrote it */
        return 0;
    }
    PyObject *view = tensor_getitem(self, key);
    if (!view)
        return -1;
    /* a value an op made under a mask covers part of the index space: it is
     * written into that part of the view */
    pynk_mask part, *pm = NULL;
    if (pynk_tensor_check(value) && ((pynk_tensor_obj *)value)->masked) {
        pynk_tensor_obj *v = (pynk_tensor_obj *)value;
        pynk_mask_none(&part);
        for (int k = 0; k < v->vndim; k++) {
            int s = NK_MAXDIM - v->vndim + k;
            part.lo[s] = v->org[k];
            part.limit[s] = v->org[k] + v->vshape[k];
        }
        part.any = 1;
        pm = &part;
    }
    nk_tensor dst;
    int rc = pynk_tensor_get(view, pm, &dst, "item assignment");
    Py_DECREF(view);
    if (rc)
        return -1;
    nk_loc loc = pynk_loc();
    if (pynk_tensor_check(value)) {
        nk_tensor v;
        /* one reference: the interpreter's own, the value is a temporary */
        int temporary = Py_REFCNT(value) == 1 && ((pynk_tensor_obj *)value)->kind == PYNK_VIEW_PLAIN;
        if (pynk_tensor_get(value, NULL, &v, "item assignment"))
            return -1;
        if (temporary)
            nk_assign_at(nc, loc, dst, v);
        else
            nk_assign_copy_at(nc, loc, dst, v);
        return pynk_check();
    }
    double x = PyFloat_AsDouble(value);
    if (x == -1.0 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "a tile is assigned a tile or a number, not %.80s", Py_TYPE(value)->tp_name);
        return -1;
    }
    nk_isa_memset_at(nc, loc, dst, x, NK_ENGINE_DEFAULT);
    return pynk_check();
}

static Py_ssize_t tensor_len(PyObject *self)
{
    pynk_tensor_obj *o = (pynk_tensor_obj *)self;
    return o->vndim ? (Py_ssize_t)o->vshape[0] : 0;
}

static PyMappingMethods tensor_mapping = {
    .mp_length = tensor_len, .mp_subscript = tensor_getitem, .mp_ass_subscript = tensor_setitem,
};

/* ---- operators: the tile ops of nl.* */

static PyObject *binary(PyObject *a, PyObject *b, nk_alu op, const char *name)
{
    int ta = pynk_tensor_check(a), tb = pynk_tensor_check(b);
    if ((!ta && pynk_index_check(a)) || (!tb && pynk_index_check(b)))
        Py_RETURN_NOTIMPLEMENTED;
    nk_ctx *nc = pynk_nc(name);
    if (!nc)
        return NULL;
    nk_tensor x, y;
    pynk_mask m; /* no bounds: the result covers what its operands cover */
    pynk_mask_none(&m);
    if (ta && tb) {
        if (pynk_tensor_get(a, &m, &x, name) || pynk_tensor_get(b, &m, &y, name))
            return NULL;
        nk_tensor r = nk_binary_at(nc, pynk_loc(), op, x, y);
        return pynk_result(r, &m, PYNK_RES_ELEMENTWISE, name);
    }
    PyObject *t = ta ? a : b, *s = ta ? b : a;
    double v = PyFloat_AsDouble(s);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (pynk_tensor_get(t, &m, &x, name))
        return NULL;
    nk_tensor r = nk_binary_scalar_at(nc, pynk_loc(), op, x, (float)v, !ta);
    return pynk_result(r, &m, PYNK_RES_ELEMENTWISE, name);
}

static PyObject *t_add(PyObject *a, PyObject *b) { return binary(a, b, NK_ALU_ADD, "+"); }
static PyObject *t_sub(PyObject *a, PyObject *b) { return binary(a, b, NK_ALU_SUBTRACT, "-"); }
static PyObject *t_mul(PyObject *a, PyObject *b) { return binary(a, b, NK_ALU_MULTIPLY, "*"); }
static PyObject *t_div(PyObject *a, PyObject *b) { return binary(a, b, NK_ALU_DIVIDE, "/"); }
static PyObject *t_and(PyObject *a, PyObject *b) { return binary(a, b, NK_ALU_BITWISE_AND, "&"); }
static PyObject *t_or(PyObject *a, PyObject *b) { return binary(a, b, NK_ALU_BITWISE_OR, "|"); }
static PyObject *t_xor(PyObject *a, PyObject *b) { return binary(a, b, NK_ALU_BITWISE_XOR, "^"); }

static PyObject *t_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None)
        return pynk_not_implemented("pow with a modulus", NULL);
    return binary(a, b, NK_ALU_POW, "**");
}

static PyObject *t_neg(PyObject *a)
{
    PyObject *m1 = PyFloat_FromDouble(-1.0);
    if (!m1)
        return NULL;
    PyObject *r = binary(a, m1, NK_ALU_MULTIPLY, "-x");
    Py_DECREF(m1);
    return r;
}
static PyObject *t_pos(PyObject *a) { Py_INCREF(a); return a; }

/* acc += v: nk_assign_add (a fresh matmul accumulates into acc's PSUM). */
static PyObject *t_iadd(PyObject *a, PyObject *b)
{
    if (!pynk_tensor_check(a) || !pynk_tensor_check(b))
        return t_add(a, b);
    nk_ctx *nc = pynk_nc("+=");
    if (!nc)
        return NULL;
    nk_tensor dst, v;
    if (pynk_tensor_get(a, NULL, &dst, "+=") || pynk_tensor_get(b, NULL, &v, "+="))
        return NULL;
    nk_assign_add_at(nc, pynk_loc(), dst, v);
    if (pynk_check())
        return NULL;
    ((pynk_tensor_obj *)a)->inplace = 1;
    Py_INCREF(a);
    return a;
}

static int t_bool(PyObject *self)
{
    (void)self;
    PyErr_SetString(PyExc_TypeError, "a tile has no truth value while a kernel is traced (its values exist only "
                    "when the program runs); compare shapes or use a mask");
    return -1;
}

static PyNumberMethods tensor_number = {
    .nb_add = t_add, .nb_subtract = t_sub, .nb_multiply = t_mul, .nb_true_divide = t_div,
    .nb_power = t_pow, .nb_negative = t_neg, .nb_positive = t_pos, .nb_and = t_and, .nb_or = t_or,
    .nb_xor = t_xor, .nb_inplace_add = t_iadd, .nb_bool = t_bool,
};

static PyObject *tensor_richcompare(PyObject *a, PyObject *b, int op)
{
    static const nk_alu alus[] = {[Py_LT] = NK_ALU_IS_LT, [Py_LE] = NK_ALU_IS_LE, [Py_EQ] = NK_ALU_IS_EQUAL,
                                  [Py_NE] = NK_ALU_NOT_EQUAL, [Py_GT] = NK_ALU_IS_GT, [Py_GE] = NK_ALU_IS_GE};
    if (!pynk_cur || !pynk_cur->nc) { /* outside a trace: identity */
        if (op == Py_EQ || op == Py_NE)
            return PyBool_FromLong((a == b) == (op == Py_EQ));
        Py_RETURN_NOTIMPLEMENTED;
    }
    /* a scalar on the left is reflected by Python: b < a becomes a > b */
    return binary(a, b, alus[op], "comparison");
}

/* ---- attributes and methods */

static PyObject *tensor_get_shape(PyObject *self, void *unused)
{
    (void)unused;
    pynk_tensor_obj *o = (pynk_tensor_obj *)self;
    return pynk_shape_tuple(o->vshape, o->vndim);
}

static PyObject *tensor_get_dtype(PyObject *self, void *unused)
{
    (void)unused;
    PyObject *d = pynk_dtype_object(((pynk_tensor_obj *)self)->t.dtype);
    Py_INCREF(d);
    return d;
}

static PyObject *tensor_get_ndim(PyObject *self, void *unused)
{
    (void)unused;
    return PyLong_FromLong(((pynk_tensor_obj *)self)->vndim);
}

static PyObject *tensor_get_buffer(PyObject *self, void *unused)
{
    (void)unused;
    PyObject *lang = PyObject_GetAttrString(pynk_module, "lang");
    if (!lang)
        return NULL;
    static const char *const names[] = {"shared_hbm", "sbuf", "psum"};
    int mem = ((pynk_tensor_obj *)self)->t.mem;
    PyObject *b = PyObject_GetAttrString(lang, names[mem < 3 ? mem : 0]);
    Py_DECREF(lang);
    return b;
}

static PyObject *tensor_reshape(PyObject *self, PyObject *args)
{
    nk_ctx *nc = pynk_nc("reshape");
    if (!nc)
        return NULL;
    PyObject *shape = PyTuple_GET_SIZE(args) == 1 ? PyTuple_GET_ITEM(args, 0) : args;
    nk_shape s;
    nk_tensor t;
    if (pynk_parse_shape(shape, &s, 0) || pynk_tensor_get(self, NULL, &t, "reshape"))
        return NULL;
    nk_tensor r = nk_reshape_at(nc, pynk_loc(), t, s);
    return pynk_check() ? NULL : pynk_tensor_new(r);
}

static PyObject *tensor_repr(PyObject *self)
{
    pynk_tensor_obj *o = (pynk_tensor_obj *)self;
    if (pynk_cur && pynk_cur->eager && o->gen == pynk_cur->gen)
        return pynk_tensor_values(self);
    static const char *const mem[] = {"hbm", "sbuf", "psum"};
    char shape[96];
    int k = snprintf(shape, sizeof shape, "[");
    for (int i = 0; i < o->vndim; i++)
        k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%lld", i ? ", " : "", (long long)o->vshape[i]);
    snprintf(shape + k, sizeof shape - (size_t)k, "]");
    return PyUnicode_FromFormat("<%s %s %s%s>", o->t.mem < 3 ? mem[o->t.mem] : "scalar", shape,
                                nk_dtype_name(o->t.dtype),
                                pynk_cur && pynk_cur->nc ? " (values: run under nki.simulate_kernel or "
                                                           "nklab python --eager)" : "");
}

static PyObject *tensor_iter(PyObject *self)
{
    (void)self;
    PyErr_SetString(PyExc_TypeError, "a tensor is not iterable in a kernel; index it (t[i]) in an nl.affine_range "
                    "loop");
    return NULL;
}

static PyGetSetDef tensor_getset[] = {
    {"shape", tensor_get_shape, NULL, "the view's shape", NULL},
    {"dtype", tensor_get_dtype, NULL, "the element type", NULL},
    {"ndim", tensor_get_ndim, NULL, "number of axes", NULL},
    {"buffer", tensor_get_buffer, NULL, "the memory it lives in", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef tensor_methods[] = {
    {"reshape", tensor_reshape, METH_VARARGS, "the same elements in a new shape (contiguous tensors)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject pynk_TensorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nklab.Tensor",
    .tp_basicsize = sizeof(pynk_tensor_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "an HBM tensor or an on-chip tile of a kernel being traced (or a view of one)",
    .tp_dealloc = tensor_dealloc,
    .tp_repr = tensor_repr,
    .tp_as_number = &tensor_number,
    .tp_as_mapping = &tensor_mapping,
    .tp_richcompare = tensor_richcompare,
    .tp_iter = tensor_iter,
    .tp_getset = tensor_getset,
    .tp_methods = tensor_methods,
};
