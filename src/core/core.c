/*
 * core.c - status messages, names, host arrays, text buffers and small
 * helpers on access patterns shared by every stage.
 */
#include "nkint.h"
#include "isa/optable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *nk_strerror(int status)
{
    switch (status) {
    case NK_OK: return "success";
    case NK_EINVAL: return "invalid argument";
    case NK_ENOMEM: return "out of memory";
    case NK_EIO: return "input/output error";
    case NK_EFORMAT: return "malformed file";
    case NK_ESHAPE: return "shape mismatch";
    case NK_EDTYPE: return "unsupported or mismatched dtype";
    case NK_EPARTITION: return "invalid partition range";
    case NK_ECAPACITY: return "on-chip memory capacity exceeded";
    case NK_EBOUNDS: return "access out of bounds";
    case NK_EUNINIT: return "read of a tile never written";
    case NK_EMEMORY: return "operand in a memory the operation cannot use";
    case NK_ENOTFOUND: return "not found";
    case NK_ELIMIT: return "engine limit exceeded";
    case NK_ELOOP: return "loop misuse";
    case NK_EVERSION: return "incompatible file version";
    case NK_ESTATE: return "invalid state";
    default: return "unknown error";
    }
}

const char *nk_engine_name(nk_engine e)
{
    static const char *names[NK_ENGINE_COUNT] = {"tensor", "vector", "scalar", "gpsimd", "sync", "dma"};
    return (unsigned)e < NK_ENGINE_COUNT ? names[e] : "default";
}

const char *nk_act_name(nk_act f)
{
    static const char *names[NK_ACT_COUNT] = {
        "copy", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu",
        "gelu_apprx_tanh", "silu", "square", "abs", "reciprocal", "sign", "softplus", "erf",
        "sin", "cos", "arctan", "mish"};
    return (unsigned)f < NK_ACT_COUNT ? names[f] : "invalid";
}

const char *nk_alu_name(nk_alu op)
{
    static const char *names[NK_ALU_COUNT] = {
        "bypass", "add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
        "equal", "not_equal", "greater_equal", "greater", "less_equal", "less",
        "bitwise_and", "bitwise_or", "bitwise_xor"};
    return (unsigned)op < NK_ALU_COUNT ? names[op] : "invalid";
}

const char *nk__op_name(int op)
{
    const nk_opdef *d = nk__op_def(op);
    return d ? d->name : "invalid";
}

/* ---- host arrays */

size_t nk_array_numel(const nk_array *a)
{
    size_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= (size_t)a->shape[i];
    return n;
}

size_t nk_array_nbytes(const nk_array *a) { return nk_array_numel(a) * (size_t)nk_dtype_size(a->dtype); }

int nk_array_alloc(nk_array *a, nk_dtype dt, int ndim, const int64_t *shape)
{
    memset(a, 0, sizeof *a);
    if (ndim < 1 || ndim > NK_MAXDIM || !nk_dtype_size(dt))
        return NK_EINVAL;
    a->dtype = dt;
    a->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1)
            return NK_EINVAL;
        a->shape[i] = shape[i];
    }
    size_t n = nk_array_nbytes(a);
    a->data = nk__big_fixed0(n ? n : 1, 1); /* inputs and outputs are written whole */
    return a->data ? NK_OK : NK_ENOMEM;
}

void nk_array_free(nk_array *a)
{
    if (!a)
        return;
    free(a->data);
    a->data = NULL;
}

/* ---- text */

void nk__text_printf(nk_text *t, const char *fmt, ...)
{
    if (t->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->cap - t->len;
        int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 256;
        while (cap < t->len + (size_t)n + 1)
            cap *= 2;
        char *s = realloc(t->s, cap);
        if (!s) {
            t->oom = 1;
            return;
        }
        t->s = s;
        t->cap = cap;
    }
}

void nk__text_free(nk_text *t)
{
    free(t->s);
    memset(t, 0, sizeof *t);
}

/* ---- access patterns */

int64_t nk__numel(const nk_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

int64_t nk__free_size(const nk_tensor *t)
{
    int64_t n = 1;
    for (int i = 1; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

void nk__extent(const nk_tensor *t, int64_t *lo, int64_t *hi)
{
    /* Strides are never negative; tiles exclude axis 0 (the partition). */
    int first = t->mem == NK_SHARED_HBM ? 0 : 1;
    int64_t span = 0;
    for (int i = first; i < t->ndim; i++)
        if (t->shape[i] > 0)
            span += (int64_t)(t->shape[i] - 1) * t->stride[i];
    *lo = t->off;
    *hi = t->off + span;
}

nk__region nk__region_hbm(const nk_program *p, uint32_t buf, int64_t lo, int64_t hi, int64_t es, const nk_layout *t)
{
    /* Rows of the tensor (its axis 0) x bytes within a row, so that two
     * tiles of one tensor side by side (columns 0..511 and 512..1023 of
     * the same rows) do not overlap. A view whose elements wrap from one
     * row into the next covers its rows whole. */
    nk__region r;
    r.key = NK_REGION_KEY_HBM0 + buf;
    const nk_bufinfo *b = buf < p->nbufs ? &p->bufs[buf] : NULL;
    int64_t row = 1;
    for (int i = 1; b && i < b->ndim && i < NK_MAXDIM; i++)
        row *= b->shape[i];
    if (!b || b->ndim < 2 || row <= 0 || b->shape[0] > INT32_MAX) {
        r.p0 = 0;
        r.p1 = 1;
        r.b0 = lo * es;
        r.b1 = (hi + 1) * es;
    } else {
        int64_t r0 = lo / row, r1 = hi / row, c0 = lo % row, c1 = hi % row;
        /* the elements of each row the view touches lie in [c0, c1] when
         * every axis but the rows' stays within a row */
        int64_t inrow = 0;
        int rows_axis = -1;
        for (int i = 0; i < t->ndim; i++) {
            if (t->shape[i] <= 1)
                continue;
            if (rows_axis < 0 && t->stride[i] % row == 0)
                rows_axis = i;
            else
                inrow += (int64_t)(t->shape[i] - 1) * t->stride[i];
        }
        if (c0 + inrow >= row || c1 < c0 || (rows_axis < 0 && r1 != r0)) {
            c0 = 0; /* wraps: whole rows */
            c1 = row - 1;
        }
        r.p0 = (int32_t)r0;
        r.p1 = (int32_t)(r1 + 1);
        r.b0 = c0 * es;
        r.b1 = (c1 + 1) * es;
    }
    return r;
}

nk__region nk__region_of_tensor(const nk_program *p, const nk_tensor *t)
{
    nk_layout l = nk__layout_of(t);
    return nk__region_at(p, t->buf, t->off, t->part0, &l);
}

int nk__writes_into(const nk_program *p, const nk_instr *w, const nk_opnd *t)
{
    nk__region r = nk__region_of(p, t), d = nk__region_of(p, &w->dst);
    if (nk__regions_overlap(&d, &r))
        return 1;
    const nk_opnd *d2 = nk__dst2(p, w);
    if (!d2->buf)
        return 0;
    d = nk__region_of(p, d2);
    return nk__regions_overlap(&d, &r);
}

int nk__reads_output(const nk_program *p, const nk_instr *r, const nk_instr *w)
{
    for (int k = 0; k < r->nsrc && k < 3; k++) {
        const nk_opnd *s = nk__src(p, r, k);
        if (s->buf && nk__writes_into(p, w, s))
            return 1;
    }
    return 0;
}

/* ---- operands outside the record */

const nk_opnd nk__no_opnd;
const nk_layout nk__no_layout;

/* Over the fields, not the bytes: padding need not be zero. */
static uint32_t lay_hash(const nk_layout *l)
{
    uint64_t h = ((uint64_t)l->dtype | (uint64_t)l->ndim << 8 | (uint64_t)l->mem << 16 | (uint64_t)l->pdim << 24) *
                 0x9E3779B97F4A7C15ull;
    for (int d = 0; d < NK_MAXDIM; d++) {
        h = (h ^ (uint32_t)l->shape[d]) * 0x9E3779B97F4A7C15ull;
        h = (h ^ (uint64_t)l->stride[d]) * 0x9E3779B97F4A7C15ull;
    }
    return (uint32_t)(h >> 32);
}

static int lay_same(const nk_layout *a, const nk_layout *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->mem != b->mem || a->pdim != b->pdim)
        return 0;
    for (int d = 0; d < NK_MAXDIM; d++)
        if (a->shape[d] != b->shape[d] || a->stride[d] != b->stride[d])
            return 0;
    return 1;
}

/* (Re)builds p->lay_hash for cap slots; 0 or NK_ENOMEM. */
static int lay_rehash(nk_program *p, uint32_t cap)
{
    uint32_t *h = calloc(cap, sizeof *h);
    if (!h)
        return NK_ENOMEM;
    for (uint32_t i = 0; i < p->nlays; i++) {
        uint32_t j = lay_hash(&p->lays[i]) & (cap - 1);
        while (h[j])
            j = (j + 1) & (cap - 1);
        h[j] = i + 1;
    }
    free(p->lay_hash);
    p->lay_hash = h;
    p->lay_hcap = cap;
    return 0;
}

/* The table sizes after one more layout: lays doubling from 16, the hash
 * kept at most half full. */
static uint32_t lays_cap_for(uint32_t cap, uint32_t need)
{
    uint32_t c = cap ? cap : 16;
    while (c < need)
        c *= 2;
    return c;
}
static uint32_t hash_cap_for(uint32_t n)
{
    uint32_t c = 32;
    while (c < 2 * n)
        c *= 2;
    return c;
}

uint64_t nk__lays_bytes_after_one_more(const nk_program *p)
{
    return (uint64_t)lays_cap_for(p->cap_lays, p->nlays + 1) * sizeof(nk_layout) +
           (uint64_t)hash_cap_for(p->nlays + 1) * sizeof(uint32_t);
}

uint32_t nk__lay_intern(nk_program *p, const nk_layout *l)
{
    if (lay_same(l, &nk__no_layout))
        return 0;
    const nk_layout k = *l;
    if ((!p->lay_hash || p->lay_hcap < 2 * (p->nlays + 1)) && lay_rehash(p, hash_cap_for(p->nlays + 1)))
        return UINT32_MAX;
    uint32_t j = lay_hash(&k) & (p->lay_hcap - 1);
    for (; p->lay_hash[j]; j = (j + 1) & (p->lay_hcap - 1))
        if (lay_same(&p->lays[p->lay_hash[j] - 1], &k))
            return p->lay_hash[j];
    if (p->nlays >= NK_MAX_LAYOUTS) /* what nk_opnd can name */
        return UINT32_MAX;
    if (p->nlays >= p->cap_lays) {
        if (p->cap_lays >= UINT32_MAX / 4)
            return UINT32_MAX;
        uint32_t c = lays_cap_for(p->cap_lays, p->nlays + 1);
        nk_layout *v = realloc(p->lays, (size_t)c * sizeof *v);
        if (!v)
            return UINT32_MAX;
        p->lays = v;
        p->cap_lays = c;
    }
    p->lays[p->nlays++] = k;
    p->lay_hash[j] = p->nlays;
    return p->nlays;
}

uint32_t nk__lay_lookup(const nk_program *p, const nk_layout *l)
{
    if (lay_same(l, &nk__no_layout))
        return 0;
    if (!p->lay_hash) {
        for (uint32_t i = 0; i < p->nlays; i++)
            if (lay_same(&p->lays[i], l))
                return i + 1;
        return UINT32_MAX;
    }
    for (uint32_t j = lay_hash(l) & (p->lay_hcap - 1); p->lay_hash[j]; j = (j + 1) & (p->lay_hcap - 1))
        if (lay_same(&p->lays[p->lay_hash[j] - 1], l))
            return p->lay_hash[j];
    return UINT32_MAX;
}

int nk__opnd_set(nk_program *p, nk_opnd *o, const nk_tensor *t)
{
    nk_layout l = nk__layout_of(t);
    uint32_t lay = nk__lay_intern(p, &l);
    if (lay == UINT32_MAX)
        return NK_ENOMEM;
    nk__opnd_put(o, t, lay);
    return 0;
}

/* A new last element of a side table (*v, *n of them, room for *cap of
 * elem bytes), uninitialised; NULL when it cannot grow. Doubling, as the
 * tracer's arrays grow: a program traced with one such entry per
 * instruction appends a million times. */
static void *side_append(void **v, uint32_t *n, uint32_t *cap, size_t elem)
{
    if (*n >= *cap) {
        if (*cap >= UINT32_MAX / 2)
            return NULL;
        uint32_t c = *cap ? 2 * *cap : 16;
        void *q = realloc(*v, (size_t)c * elem);
        if (!q)
            return NULL;
        *v = q;
        *cap = c;
    }
    return (char *)*v + (size_t)(*n)++ * elem;
}

/* Stores *o at *x (an index + 1 into p->xop), appending an entry when *x is
 * 0. */
int nk__set_xop(nk_program *p, uint32_t *x, const nk_opnd *o)
{
    if (*x) {
        p->xop[*x - 1] = *o;
        return 0;
    }
    nk_opnd *e = side_append((void **)&p->xop, &p->nxop, &p->cap_xop, sizeof *e);
    if (!e)
        return NK_ENOMEM;
    *e = *o;
    *x = p->nxop;
    return 0;
}

const nk_xarg nk__no_xarg;

nk_xarg *nk__xarg_w(nk_program *p, nk_instr *in)
{
    if (in->xarg)
        return &p->xarg[in->xarg - 1];
    nk_xarg *x = side_append((void **)&p->xarg, &p->nxarg, &p->cap_xarg, sizeof *x);
    if (!x)
        return NULL;
    memset(x, 0, sizeof *x);
    in->xarg = p->nxarg;
    return x;
}

int nk__xarg_is_zero(const nk_xarg *x)
{
    uint64_t a, b;
    memcpy(&a, &x->imm0, sizeof a);
    memcpy(&b, &x->imm1, sizeof b);
    return !a && !b && !memcmp(&x->aff, &nk__no_xarg.aff, sizeof x->aff);
}

int nk__set_xarg(nk_program *p, nk_instr *in, const nk_xarg *x)
{
    if (!in->xarg && nk__xarg_is_zero(x))
        return 0;
    nk_xarg *w = nk__xarg_w(p, in);
    if (!w)
        return NK_ENOMEM;
    w->imm0 = x->imm0; /* field by field: the padding stays zero */
    w->imm1 = x->imm1;
    w->aff = x->aff;
    return 0;
}

static int set_xop(nk_program *p, uint32_t *x, const nk_tensor *t)
{
    nk_opnd o;
    if (nk__opnd_set(p, &o, t))
        return NK_ENOMEM;
    return nk__set_xop(p, x, &o);
}

int nk__set_src2(nk_program *p, nk_instr *in, const nk_tensor *t) { return set_xop(p, &in->xsrc2, t); }
int nk__set_dst2(nk_program *p, nk_instr *in, const nk_tensor *t) { return set_xop(p, &in->xdst2, t); }

void nk__format_shape(char *buf, size_t n, const int32_t *shape, int ndim)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%d", i ? ", " : "", shape[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

const char *nk__buf_label(const nk_program *p, uint32_t buf, char *out, size_t n)
{
    const nk_bufinfo *b = buf < p->nbufs ? &p->bufs[buf] : NULL;
    if (!b) {
        snprintf(out, n, "?");
        return out;
    }
    if (b->role == NK_ROLE_INPUT && p->in_name && b->index >= 0 && b->index < p->ninputs && p->in_name[b->index] &&
        p->in_name[b->index][0]) {
        snprintf(out, n, "%s", p->in_name[b->index]);
        return out;
    }
    const char *role = b->role == NK_ROLE_INPUT ? "in" : b->role == NK_ROLE_OUTPUT ? "out"
                     : b->role == NK_ROLE_CONSTANT ? "const" : "tmp";
    snprintf(out, n, "%s%d", role, b->index);
    return out;
}

const char *nk__instr_call(const nk_program *p, const nk_instr *in)
{
    return in->call && p->calls && in->call <= p->ncalls ? p->calls[in->call - 1] : NULL;
}

int nk__call_is_op(const char *call, const char *op)
{
    size_t lc = strlen(call), lo = strlen(op);
    return lc >= lo && !strcmp(call + lc - lo, op) && (lc == lo || call[lc - lo - 1] == '_' || call[lc - lo - 1] == '.');
}

const char *nk__instr_lowered_from(const nk_program *p, const nk_instr *in)
{
    const char *c = nk__instr_call(p, in);
    return c && c[0] && !nk__call_is_op(c, nk__op_name(in->op)) ? c : NULL;
}

void nk__format_instr_origin(char *buf, size_t n, const nk_program *p, const nk_instr *in)
{
    const char *c = nk__instr_lowered_from(p, in);
    const nk_locinfo *l = in->loc < p->nlocs ? &p->locs[in->loc] : NULL;
    if (!c)
        snprintf(buf, n, "%s", nk__op_name(in->op));
    else if (l && l->file < p->nfiles) {
        const char *f = p->files[l->file], *s = strrchr(f, '/');
        snprintf(buf, n, "%s (lowered from %s at %s:%d)", nk__op_name(in->op), c, s ? s + 1 : f, l->line);
    } else
        snprintf(buf, n, "%s (lowered from %s)", nk__op_name(in->op), c);
}

void nk__format_ap(char *buf, size_t n, const nk_program *p, const nk_opnd *o)
{
    nk_tensor tt = nk__opnd_tensor(p, o);
    const nk_tensor *t = &tt;
    char sh[64];
    nk__format_shape(sh, sizeof sh, t->shape, t->ndim);
    static const char *mem[] = {"hbm", "sbuf", "psum"};
    const nk_bufinfo *b = t->buf < p->nbufs ? &p->bufs[t->buf] : NULL;
    if (!b) {
        snprintf(buf, n, "?");
        return;
    }
    if (t->mem == NK_SHARED_HBM) {
        char name[64];
        snprintf(buf, n, "%s%s %s +%lld", nk__buf_label(p, t->buf, name, sizeof name), sh, nk_dtype_name(t->dtype),
                 (long long)t->off);
    } else {
        snprintf(buf, n, "%s[%d:%d]@%lld %s %s", mem[t->mem % 3], t->part0, t->part0 + t->shape[0],
                 (long long)(b->addr + t->off * nk_dtype_size(t->dtype)), sh, nk_dtype_name(t->dtype));
    }
}

void nk__program_destroy(nk_program *p)
{
    if (!p)
        return;
    free(p->instrs);
    free(p->xop);
    free(p->xarg);
    free(p->lays);
    free(p->lay_hash);
    free(p->bufs);
    free(p->locs);
    for (uint32_t i = 0; i < p->nfiles; i++)
        free(p->files[i]);
    free(p->files);
    free(p->loops);
    free(p->deps);
    free(p->input_buf);
    free(p->output_buf);
    free(p->hbm_list);
    free(p->inst_core);
    free(p->seg_name);
    free(p->seg_loc);
    for (int i = 0; p->in_name && i < p->ninputs; i++)
        free(p->in_name[i]);
    free(p->in_name);
    for (uint32_t i = 0; p->calls && i < p->ncalls; i++)
        free(p->calls[i]);
    free(p->calls);
    for (uint32_t b = 0; p->cdata && b < p->nbufs; b++)
        free(p->cdata[b]);
    free(p->cdata);
    free(p);
}
