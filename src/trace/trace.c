/*
 * trace.c - the tracing context: errors, source locations, buffers, the
 * on-chip allocator, loops and views.
 *
 * On-chip allocation is a bump allocator per memory with scopes: a loop
 * body's tiles are freed when the loop ends. Inside a loop each allocation
 * site (the k-th allocation of an iteration) owns a ring of `bufs` slots and
 * iteration i uses slot i % bufs, so consecutive iterations of an affine loop
 * touch different addresses and can overlap; with one slot (sequential
 * loops, or tiles declared outside the loop) they serialize through the
 * write-after-read dependencies the scheduler derives.
 */
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Invalid tensor handles the kernel sees after its arguments. */
#define NK_ARGS_SLACK 16

/* ---- growable arrays */

static int grow(void **ptr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*ptr, (size_t)c * elem);
    if (!q)
        return -1;
    memset((char *)q + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
    *ptr = q;
    *cap = c;
    return 0;
}

/* ---- errors */

int nk__fail(nk_ctx *nc, nk_loc loc, int status, const char *fmt, ...)
{
    if (nc->status)
        return nc->status;
    nc->status = status;
    int n = snprintf(nc->err, sizeof nc->err, "%s:%d: ", loc.file ? loc.file : "?", loc.line);
    if (n < 0 || (size_t)n >= sizeof nc->err)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(nc->err + n, sizeof nc->err - (size_t)n, fmt, ap);
    va_end(ap);
    return status;
}

/* ---- source locations */

static uint32_t intern_file(nk_ctx *nc, const char *file)
{
    nk_program *p = nc->p;
    for (uint32_t i = 0; i < p->nfiles; i++)
        if (!strcmp(p->files[i], file))
            return i;
    if (grow((void **)&p->files, &nc->cap_files, p->nfiles + 1, sizeof *p->files))
        return UINT32_MAX;
    char *s = strdup(file);
    if (!s)
        return UINT32_MAX;
    p->files[p->nfiles] = s;
    return p->nfiles++;
}

static uint32_t hash_loc(const char *file, int line)
{
    uintptr_t h = (uintptr_t)file * 0x9E3779B97F4A7C15ull;
    return (uint32_t)((h >> 17) ^ (uint32_t)line * 2654435761u);
}

uint32_t nk__loc(nk_ctx *nc, nk_loc loc)
{
    if (!loc.file)
        loc.file = "?";
    if (nc->lochash_n * 2 >= nc->lochash_cap) {
        uint32_t cap = nc->lochash_cap ? nc->lochash_cap * 2 : 64;
        struct lockey *h = calloc(cap, sizeof *h);
        if (!h)
            return 0;
        for (uint32_t i = 0; i < nc->lochash_cap; i++) {
            struct lockey *e = &nc->lochash[i];
            if (!e->file)
                continue;
            uint32_t j = hash_loc(e->file, e->line) & (cap - 1);
            while (h[j].file)
                j = (j + 1) & (cap - 1);
            h[j] = *e;
        }
        free(nc->lochash);
        nc->lochash = h;
        nc->lochash_cap = cap;
    }
    uint32_t j = hash_loc(loc.file, loc.line) & (nc->lochash_cap - 1);
    while (nc->lochash[j].file) {
        if (nc->lochash[j].file == loc.file && nc->lochash[j].line == loc.line)
            return nc->lochash[j].idx;
        j = (j + 1) & (nc->lochash_cap - 1);
    }
    nk_program *p = nc->p;
    uint32_t f = intern_file(nc, loc.file);
    if (f == UINT32_MAX || grow((void **)&p->locs, &nc->cap_locs, p->nlocs + 1, sizeof *p->locs))
        return 0;
    p->locs[p->nlocs] = (nk_locinfo){f, loc.line};
    nc->lochash[j] = (struct lockey){loc.file, loc.line, p->nlocs};
    nc->lochash_n++;
    return p->nlocs++;
}

/* ---- instructions and buffers */

nk_instr *nk__emit(nk_ctx *nc, nk_loc loc, int op, int engine)
{
    nk_program *p = nc->p;
    if (grow((void **)&p->instrs, &nc->cap_instrs, p->ninstr + 1, sizeof *p->instrs)) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory recording instruction %u", p->ninstr);
        return NULL;
    }
    nk_instr *in = &p->instrs[p->ninstr++];
    memset(in, 0, sizeof *in);
    in->op = (uint8_t)op;
    in->engine = (uint8_t)engine;
    in->loc = nk__loc(nc, loc);
    if (nc->depth > 0) {
        nk_frame *f = &nc->frames[nc->depth - 1];
        in->loop = f->loop;
        in->iter = (uint32_t)f->i;
    }
    return in;
}

static uint32_t new_buf(nk_ctx *nc, nk_loc loc)
{
    nk_program *p = nc->p;
    if (grow((void **)&p->bufs, &nc->cap_bufs, p->nbufs + 1, sizeof *p->bufs)) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory allocating a buffer");
        return 0;
    }
    nk_bufinfo *b = &p->bufs[p->nbufs];
    memset(b, 0, sizeof *b);
    b->index = -1;
    b->loc = nk__loc(nc, loc);
    b->loop = nc->depth > 0 ? nc->frames[nc->depth - 1].loop : 0;
    return p->nbufs++;
}

void nk__buf_where(nk_ctx *nc, uint32_t buf, char *out, size_t n)
{
    const nk_program *p = nc->p;
    const nk_locinfo *l = &p->locs[p->bufs[buf].loc];
    snprintf(out, n, "%s:%d", p->files[l->file], l->line);
}

static void init_view(nk_tensor *t, uint32_t buf, nk_buffer mem, nk_dtype dt, const int64_t *shape, int ndim)
{
    memset(t, 0, sizeof *t);
    t->buf = buf;
    t->dtype = (uint8_t)dt;
    t->mem = (uint8_t)mem;
    t->ndim = (uint8_t)ndim;
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t->shape[i] = (int32_t)shape[i];
        t->stride[i] = (mem != NK_SHARED_HBM && i == 0) ? 1 : s;
        if (mem == NK_SHARED_HBM || i > 0)
            s *= shape[i];
    }
}

static const char *mem_name(int mem)
{
    return mem == NK_SBUF ? "SBUF" : mem == NK_PSUM ? "PSUM" : "HBM";
}

int64_t nk__dims_product(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (d[i] < 0 || (d[i] && p > INT64_MAX / d[i]))
            return -1;
        p *= d[i];
    }
    return p;
}

/* Reserves bytes per partition at the top of memory mem, or fails. */
static int reserve(nk_ctx *nc, nk_loc loc, const char *opname, int mem, int64_t bytes, int64_t *addr)
{
    if (nc->top[mem] + bytes > nc->cap[mem]) {
        char banks[48] = "";
        if (mem == NK_PSUM)
            snprintf(banks, sizeof banks, " (%d banks of %lld)", nc->arch->psum_banks,
                     (long long)nc->arch->psum_bank_bytes);
        return nk__fail(nc, loc, NK_ECAPACITY,
                        "%s: %s capacity exceeded: a tile needs %lld bytes per partition but only %lld "
                        "of %lld%s are free",
                        opname, mem_name(mem), (long long)bytes, (long long)(nc->cap[mem] - nc->top[mem]),
                        (long long)nc->cap[mem], banks);
    }
    *addr = nc->top[mem];
    nc->top[mem] += bytes;
    int64_t *peak = mem == NK_SBUF ? &nc->p->sbuf_peak : &nc->p->psum_peak;
    if (nc->top[mem] > *peak)
        *peak = nc->top[mem];
    return 0;
}

/* Buffer id takes slot `slot` of a loop's allocation site: the tile an
 * earlier iteration left there is stale from now on. */
static int take_slot(nk_ctx *nc, nk_loc loc, nk_site *s, int slot, uint32_t id)
{
    uint32_t prev = s->owner[slot];
    s->owner[slot] = id;
    if (!prev)
        return 0;
    if (grow((void **)&nc->stale, &nc->cap_stale, nc->p->nbufs, 1))
        return nk__fail(nc, loc, NK_ENOMEM, "out of memory");
    nc->stale[prev] = 1;
    return 0;
}

nk_tensor nk__tile(nk_ctx *nc, nk_loc loc, const char *opname, nk_buffer mem, const int64_t *shape, int ndim,
                   nk_dtype dt)
{
    nk_tensor bad = {0};
    if (nc->status)
        return bad;
    if (ndim < 1 || ndim > NK_MAXDIM) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: a tile has 1 to %d dims, got %d", opname, NK_MAXDIM, ndim);
        return bad;
    }
    if (!nk_dtype_size(dt)) {
        nk__fail(nc, loc, NK_EDTYPE, "%s: invalid dtype %d", opname, (int)dt);
        return bad;
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || shape[i] > INT32_MAX) {
            nk__fail(nc, loc, NK_ESHAPE, "%s: invalid dimension %lld", opname, (long long)shape[i]);
            return bad;
        }
    }
    /* at most INT32_MAX elements a partition keeps every byte count below in range */
    int64_t fsz = nk__dims_product(shape + 1, ndim - 1);
    if (fsz < 0 || fsz > INT32_MAX) {
        int32_t s32[NK_MAXDIM];
        char s[96];
        for (int i = 0; i < ndim; i++)
            s32[i] = (int32_t)shape[i];
        nk__format_shape(s, sizeof s, s32, ndim);
        nk__fail(nc, loc, NK_ECAPACITY, "%s: %s capacity exceeded: a tile %s holds more than %d elements per "
                 "partition", opname, mem_name(mem), s, INT32_MAX);
        return bad;
    }
    if (shape[0] > nc->arch->partitions) {
        nk__fail(nc, loc, NK_EPARTITION, "%s: partition dimension %lld exceeds %d", opname,
                 (long long)shape[0], nc->arch->partitions);
        return bad;
    }
    int64_t bytes = fsz * nk_dtype_size(dt);
    int64_t unit = mem == NK_PSUM ? nc->arch->psum_bank_bytes : nc->arch->tile_align;
    bytes = (bytes + unit - 1) / unit * unit;
    if (shape[0] == 0)
        bytes = 0;
    int64_t addr = 0;
    uint16_t slot = 0, nslots = 1;
    nk_site *site = NULL;
    if (nc->depth == 0) {
        if (reserve(nc, loc, opname, mem, bytes, &addr))
            return bad;
    } else {
        nk_frame *f = &nc->frames[nc->depth - 1];
        int k = f->cursor++;
        nk_site *s = k < f->nsites ? &f->sites[k] : NULL;
        if (!s || s->mem != (int)mem || bytes > s->slot_bytes) {
            /* a new site: a ring of bufs slots, fewer if they do not fit */
            if (grow((void **)&f->sites, &f->cap_sites, (uint32_t)f->nsites + 1, sizeof *f->sites)) {
                nk__fail(nc, loc, NK_ENOMEM, "out of memory");
                return bad;
            }
            int n = f->bufs;
            while (n > 1 && nc->top[mem] + n * bytes > nc->cap[mem])
                n--;
            int64_t base;
            if (reserve(nc, loc, opname, mem, n * bytes, &base))
                return bad;
            s = &f->sites[f->nsites];
            if (k < f->nsites) { /* a changed site: replace it in place */
                s = &f->sites[k];
            } else {
                f->nsites++;
            }
            *s = (nk_site){base, bytes, n, (int)mem};
        }
        slot = (uint16_t)(f->i % s->nslots);
        nslots = (uint16_t)s->nslots;
        addr = s->base + slot * s->slot_bytes;
        site = s;
    }
    uint32_t id = new_buf(nc, loc);
    if (!id || (site && take_slot(nc, loc, site, slot, id)))
        return bad;
    nk_bufinfo *b = &nc->p->bufs[id];
    b->mem = (uint8_t)mem;
    b->dtype = (uint8_t)dt;
    b->ndim = (uint8_t)ndim;
    b->role = NK_ROLE_TILE;
    for (int i = 0; i < ndim; i++)
        b->shape[i] = shape[i];
    b->addr = addr;
    b->bytes = bytes;
    b->slot = slot;
    b->nslots = nslots;
    nk_tensor t;
    init_view(&t, id, mem, dt, shape, ndim);
    return t;
}

/* ---- tensors */

nk_tensor nk_ndarray_at(nk_ctx *nc, nk_loc loc, nk_shape shape, nk_dtype dt, nk_buffer mem)
{
    nk_tensor bad = {0};
    if (nc->status)
        return bad;
    if (shape.n < 1 || shape.n > NK_MAXDIM) {
        nk__fail(nc, loc, NK_ESHAPE, "nk_ndarray: a tensor has 1 to %d dims, got %d", NK_MAXDIM, shape.n);
        return bad;
    }
    if (mem == NK_SBUF || mem == NK_PSUM)
        return nk__tile(nc, loc, "nk_ndarray", mem, shape.d, shape.n, dt);
    if (mem != NK_SHARED_HBM) {
        nk__fail(nc, loc, NK_EINVAL, "nk_ndarray: unknown buffer %d", (int)mem);
        return bad;
    }
    if (!nk_dtype_size(dt)) {
        nk__fail(nc, loc, NK_EDTYPE, "nk_ndarray: invalid dtype %d", (int)dt);
        return bad;
    }
    for (int i = 0; i < shape.n; i++) {
        if (shape.d[i] < 1 || shape.d[i] > INT32_MAX) {
            nk__fail(nc, loc, NK_ESHAPE, "nk_ndarray: invalid dimension %lld on axis %d", (long long)shape.d[i], i);
            return bad;
        }
    }
    int64_t n = nk__dims_product(shape.d, shape.n);
    if (n < 0 || n > INT64_MAX / nk_dtype_size(dt)) {
        int32_t s32[NK_MAXDIM];
        char s[96];
        for (int i = 0; i < shape.n; i++)
            s32[i] = (int32_t)shape.d[i];
        nk__format_shape(s, sizeof s, s32, shape.n);
        nk__fail(nc, loc, NK_ESHAPE, "nk_ndarray: an HBM tensor %s %s holds more than 2^63 bytes", s,
                 nk_dtype_name(dt));
        return bad;
    }
    uint32_t id = new_buf(nc, loc);
    if (!id)
        return bad;
    nk_bufinfo *b = &nc->p->bufs[id];
    b->mem = NK_SHARED_HBM;
    b->dtype = (uint8_t)dt;
    b->ndim = (uint8_t)shape.n;
    b->role = NK_ROLE_SCRATCH;
    for (int i = 0; i < shape.n; i++)
        b->shape[i] = shape.d[i];
    b->bytes = n * nk_dtype_size(dt);
    nk_tensor t;
    init_view(&t, id, NK_SHARED_HBM, dt, shape.d, shape.n);
    return t;
}

void nk_return_at(nk_ctx *nc, nk_loc loc, nk_tensor t)
{
    if (nc->status)
        return;
    if (!t.buf || t.buf >= nc->p->nbufs) {
        nk__fail(nc, loc, NK_EINVAL, "nk_return: not a valid tensor");
        return;
    }
    nk_bufinfo *b = nk__buf(nc, t);
    if (b->mem != NK_SHARED_HBM || b->role == NK_ROLE_INPUT) {
        char what[32];
        if (b->role == NK_ROLE_INPUT)
            snprintf(what, sizeof what, "input %d", b->index);
        else
            snprintf(what, sizeof what, "an on-chip %s tile", mem_name(b->mem));
        nk__fail(nc, loc, NK_EMEMORY,
                 "nk_return: a kernel returns HBM tensors it created with nk_ndarray(..., NK_SHARED_HBM), not %s",
                 what);
        return;
    }
    if (b->role == NK_ROLE_OUTPUT) {
        nk__fail(nc, loc, NK_EINVAL, "nk_return: tensor already returned as output %d", b->index);
        return;
    }
    nk_program *p = nc->p;
    if (grow((void **)&p->output_buf, &nc->cap_outs, (uint32_t)p->noutputs + 1, sizeof *p->output_buf)) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory");
        return;
    }
    b->role = NK_ROLE_OUTPUT;
    b->index = p->noutputs;
    p->output_buf[p->noutputs++] = t.buf;
}

nk_tensor nk_ix_at(nk_ctx *nc, nk_loc loc, nk_tensor t, int n, const nk_range *r)
{
    nk_tensor bad = {0}, v = t;
    if (nc->status)
        return bad;
    if (!t.buf || t.buf >= nc->p->nbufs) {
        nk__fail(nc, loc, NK_EINVAL, "nk_ix: not a valid tensor");
        return bad;
    }
    if (n > t.ndim) {
        nk__fail(nc, loc, NK_ESHAPE, "nk_ix: %d indices for a %d-dim tensor", n, t.ndim);
        return bad;
    }
    int tile = t.mem != NK_SHARED_HBM, nd = 0;
    v.ndim = 0;
    for (int d = 0; d < t.ndim; d++) {
        nk_range q = d < n ? r[d] : NK_ALL;
        int64_t size = t.shape[d], start = q.start, stop = q.stop, step = q.step;
        if (q.kind == NK_RANGE_ALL) {
            start = 0;
            stop = size;
            step = 1;
        }
        if (q.kind == NK_RANGE_MASKED && q.limit < stop)
            stop = q.limit < start ? start : q.limit;
        if (step < 1) {
            nk__fail(nc, loc, NK_EINVAL, "nk_ix: step %lld on axis %d must be positive", (long long)step, d);
            return bad;
        }
        if (start < 0 || stop > size || (start >= size && q.kind != NK_RANGE_MASKED)) {
            nk__fail(nc, loc, NK_EBOUNDS, "nk_ix: index [%lld:%lld] out of bounds for axis %d of size %lld",
                     (long long)q.start, (long long)q.stop, d, (long long)size);
            return bad;
        }
        if (stop <= start && q.kind != NK_RANGE_MASKED) {
            nk__fail(nc, loc, NK_EBOUNDS, "nk_ix: empty range [%lld:%lld] on axis %d", (long long)start,
                     (long long)stop, d);
            return bad;
        }
        int64_t count = stop > start ? 1 + (stop - start - 1) / step : 0; /* no overflow for a huge step */
        if (tile && d == 0) {
            if (q.kind == NK_RANGE_INDEX) {
                nk__fail(nc, loc, NK_EPARTITION,
                         "nk_ix: the partition axis cannot take a single index; use nk_r(%lld, %lld)",
                         (long long)start, (long long)start + 1);
                return bad;
            }
            if (step != 1) {
                nk__fail(nc, loc, NK_EPARTITION, "nk_ix: no striding along partitions (step %lld)", (long long)step);
                return bad;
            }
            v.part0 = (uint8_t)(t.part0 + start);
            v.shape[0] = (int32_t)count;
            v.stride[0] = 1;
            nd = 1;
            continue;
        }
        v.off += start * t.stride[d];
        if (q.kind == NK_RANGE_INDEX)
            continue;
        v.shape[nd] = (int32_t)count;
        v.stride[nd] = count > 1 ? t.stride[d] * step : t.stride[d]; /* one element: any step */
        nd++;
    }
    if (nd == 0) {
        nk__fail(nc, loc, NK_ESHAPE, "nk_ix: indexing every axis with a single index leaves no tensor; "
                 "keep one axis with nk_r(i, i + 1)");
        return bad;
    }
    v.ndim = (uint8_t)nd;
    for (int d = nd; d < NK_MAXDIM; d++) {
        v.shape[d] = 0;
        v.stride[d] = 0;
    }
    return v;
}

static int contiguous(const nk_tensor *t)
{
    int64_t s = 1;
    int first = t->mem == NK_SHARED_HBM ? 0 : 1;
    for (int i = t->ndim - 1; i >= first; i--) {
        if (t->shape[i] != 1 && t->stride[i] != s)
            return 0;
        s *= t->shape[i];
    }
    return 1;
}

nk_tensor nk_reshape_at(nk_ctx *nc, nk_loc loc, nk_tensor t, nk_shape shape)
{
    nk_tensor bad = {0}, v = t;
    if (nc->status)
        return bad;
    if (!t.buf || t.buf >= nc->p->nbufs) {
        nk__fail(nc, loc, NK_EINVAL, "nk_reshape: not a valid tensor");
        return bad;
    }
    if (shape.n < 1 || shape.n > NK_MAXDIM) {
        nk__fail(nc, loc, NK_ESHAPE, "nk_reshape: 1 to %d dims, got %d", NK_MAXDIM, shape.n);
        return bad;
    }
    for (int i = 0; i < shape.n; i++) {
        if (shape.d[i] < 0 || shape.d[i] > INT32_MAX) {
            nk__fail(nc, loc, NK_ESHAPE, "nk_reshape: invalid dimension %lld on axis %d", (long long)shape.d[i], i);
            return bad;
        }
    }
    int64_t n = nk__dims_product(shape.d, shape.n);
    int tile = t.mem != NK_SHARED_HBM;
    if (n != nk__numel(&t) || (tile && shape.d[0] != t.shape[0])) {
        char a[64], b[64];
        int32_t s32[NK_MAXDIM];
        for (int i = 0; i < shape.n; i++)
            s32[i] = (int32_t)shape.d[i];
        nk__format_shape(a, sizeof a, t.shape, t.ndim);
        nk__format_shape(b, sizeof b, s32, shape.n);
        nk__fail(nc, loc, NK_ESHAPE, "nk_reshape: cannot reshape %s to %s%s", a, b,
                 tile ? " (tiles keep their partition axis)" : "");
        return bad;
    }
    if (!contiguous(&t)) {
        nk__fail(nc, loc, NK_ESHAPE, "nk_reshape: the view is not contiguous");
        return bad;
    }
    v.ndim = (uint8_t)shape.n;
    int64_t s = 1;
    for (int i = shape.n - 1; i >= 0; i--) {
        v.shape[i] = (int32_t)shape.d[i];
        v.stride[i] = (tile && i == 0) ? 1 : s;
        if (!tile || i > 0)
            s *= shape.d[i];
    }
    for (int i = shape.n; i < NK_MAXDIM; i++) {
        v.shape[i] = 0;
        v.stride[i] = 0;
    }
    return v;
}

/* ---- loops */

/* A loop the kernel left early (break, return, goto): reported at its line. */
static void fail_left_loop(nk_ctx *nc, const nk_frame *f)
{
    nk_program *p = nc->p;
    nk_loc l = {"?", 0};
    if (f->loop) {
        nk_locinfo *li = &p->locs[p->loops[f->loop - 1].loc];
        l = (nk_loc){p->files[li->file], li->line};
    }
    nk__fail(nc, l, NK_ELOOP, "the kernel left this loop of %lld iterations with break, return or goto (or "
             "changed its index); traced loops run every iteration", (long long)f->n);
}

int64_t nk__loop_begin(nk_ctx *nc, nk_loc loc, int64_t n, nk_loop_kind kind, int bufs)
{
    if (nc->depth >= NK_MAX_LOOP_DEPTH) {
        nk__fail(nc, loc, NK_ELOOP, "loops nested deeper than %d", NK_MAX_LOOP_DEPTH);
        nc->overflow++;
        return 0;
    }
    if (n < 0) {
        nk__fail(nc, loc, NK_EINVAL, "loop trip count %lld is negative", (long long)n);
        n = 0;
    }
    if (bufs < 0 || bufs > NK_MAX_LOOP_BUFS) {
        nk__fail(nc, loc, NK_EINVAL, "loop buffer count %d is outside 1..%d", bufs, NK_MAX_LOOP_BUFS);
        bufs = 1;
    }
    if (kind == NK_LOOP_SEQUENTIAL)
        bufs = 1;
    else if (bufs == 0)
        bufs = nc->p->bufs_default;
    nk_program *p = nc->p;
    uint32_t parent = nc->depth > 0 ? nc->frames[nc->depth - 1].loop : 0;
    uint32_t id = 0;
    if (!nc->status && !grow((void **)&p->loops, &nc->cap_loops, p->nloops + 1, sizeof *p->loops)) {
        p->loops[p->nloops] = (nk_loopinfo){nk__loc(nc, loc), parent, n, (uint8_t)kind, (uint8_t)bufs,
                                            (uint16_t)nc->depth};
        id = ++p->nloops;
    }
    nk_frame *f = &nc->frames[nc->depth++];
    nk_site *sites = f->sites;
    uint32_t cap = f->cap_sites;
    memset(f, 0, sizeof *f);
    f->sites = sites; /* reuse the previous frame's site array at this depth */
    f->cap_sites = cap;
    f->loop = id;
    f->n = n;
    f->kind = kind;
    f->bufs = bufs;
    f->i = -1;
    memcpy(f->mark, nc->top, sizeof f->mark);
    return 0;
}

int nk__loop_cond(nk_ctx *nc, int64_t i)
{
    if (nc->overflow) {
        nc->overflow--;
        return 0;
    }
    nk_frame *f = &nc->frames[nc->depth - 1];
    /* every iteration asks with the next index; another index means the
     * caller is an enclosing loop and this one was left early */
    if (!nc->status && i != f->i + 1)
        fail_left_loop(nc, f);
    if (nc->status || i >= f->n) {
        memcpy(nc->top, f->mark, sizeof nc->top);
        nc->depth--;
        return 0;
    }
    f->i = i;
    f->cursor = 0;
    return 1;
}

int64_t nk__loop_next(nk_ctx *nc, int64_t i)
{
    (void)nc;
    return i + 1;
}

/* ---- the trace entry point */

/* The location of the kernel's last instruction, or of its last allocation
 * when it has none: where to report what is missing at the end. */
static nk_loc last_call(nk_ctx *nc, nk_loc dflt)
{
    const nk_program *p = nc->p;
    uint32_t li;
    if (p->ninstr)
        li = p->instrs[p->ninstr - 1].loc;
    else if (p->nbufs > (uint32_t)p->ninputs + 1)
        li = p->bufs[p->nbufs - 1].loc;
    else
        return dflt;
    return (nk_loc){p->files[p->locs[li].file], p->locs[li].line};
}

int nk_trace(const char *name, nk_kernel_fn fn, const nk_array *args, int nargs, const nk_options *opts,
             nk_program **out, char *err, size_t errlen)
{
    const char *target = opts && opts->target ? opts->target : "trn1";
    const nk_arch *arch = opts && opts->arch ? opts->arch : nk_arch_get(target);
    *out = NULL;
    if (err && errlen)
        err[0] = 0;
    if (!arch) {
        if (err)
            snprintf(err, errlen, "unknown target '%s' (known: trn1, trn2)", target);
        return NK_ENOTFOUND;
    }
    if (opts && opts->arch) { /* a caller's table: trusted no more than a file */
        int rc = nk_arch_check(arch, err, errlen);
        if (rc)
            return rc;
    }
    nk_ctx *nc = calloc(1, sizeof *nc);
    nk_program *p = calloc(1, sizeof *p);
    /* invalid handles (buf 0) past the arguments: a kernel given too few
     * inputs that reads args[nargs] gets an error, not memory past the array */
    nk_tensor *targs = calloc((size_t)(nargs > 0 ? nargs : 0) + NK_ARGS_SLACK, sizeof *targs);
    int rc = NK_ENOMEM;
    if (!nc || !p || !targs)
        goto out;
    snprintf(p->kernel, sizeof p->kernel, "%s", name ? name : "kernel");
    p->table = *arch; /* the program's own copy: the caller's table may go */
    p->arch = arch = &p->table;
    snprintf(p->target, sizeof p->target, "%s", arch->name);
    if (opts && (opts->default_bufs < 0 || opts->default_bufs > NK_MAX_LOOP_BUFS)) {
        if (err)
            snprintf(err, errlen, "default_bufs %d is outside 0..%d (0: the target's default)", opts->default_bufs,
                     NK_MAX_LOOP_BUFS);
        rc = NK_EINVAL;
        goto out;
    }
    p->bufs_default = opts && opts->default_bufs > 0 ? opts->default_bufs : arch->default_bufs;
    nc->p = p;
    nc->arch = arch;
    nc->cap[NK_SBUF] = arch->sbuf_partition_bytes - arch->sbuf_reserved_bytes;
    nc->cap[NK_PSUM] = arch->psum_partition_bytes;
    /* buffer 0 is the invalid id */
    if (grow((void **)&p->bufs, &nc->cap_bufs, 1, sizeof *p->bufs))
        goto out;
    p->nbufs = 1;
    nk_loc here = {name ? name : "kernel", 0};
    p->input_buf = calloc((size_t)(nargs > 0 ? nargs : 1), sizeof *p->input_buf);
    if (!p->input_buf)
        goto out;
    for (int i = 0; i < nargs; i++) {
        nk_shape s = {args[i].ndim, {0}};
        for (int d = 0; d < args[i].ndim && d < NK_MAXDIM; d++)
            s.d[d] = args[i].shape[d];
        targs[i] = nk_ndarray_at(nc, here, s, args[i].dtype, NK_SHARED_HBM);
        if (nc->status) {
            snprintf(err, errlen, "argument %d: %s", i, nc->err);
            rc = nc->status;
            goto out;
        }
        nk_bufinfo *b = &p->bufs[targs[i].buf];
        b->role = NK_ROLE_INPUT;
        b->index = i;
        b->written = 1;
        p->input_buf[i] = targs[i].buf;
    }
    p->ninputs = nargs;
    fn(nc, targs, nargs);
    if (!nc->status && nc->depth > 0)
        fail_left_loop(nc, &nc->frames[nc->depth - 1]);
    if (!nc->status && p->noutputs == 0)
        nk__fail(nc, last_call(nc, here), NK_EINVAL, "the kernel returned no output: it ends after this call "
                 "without nk_return of an HBM tensor created with nk_ndarray(..., NK_SHARED_HBM)");
    rc = nc->status;
    if (rc) {
        if (err)
            snprintf(err, errlen, "%s", nc->err);
        goto out;
    }
    p->hbm_list = calloc(p->nbufs, sizeof *p->hbm_list);
    if (!p->hbm_list) {
        rc = NK_ENOMEM;
        goto out;
    }
    for (uint32_t b = 1; b < p->nbufs; b++) {
        p->bufs[b].written = 0; /* tracing state only */
        if (p->bufs[b].mem == NK_SHARED_HBM)
            p->hbm_list[p->nhbm++] = b;
    }
    rc = nk_schedule(p);
    if (rc) {
        if (err)
            snprintf(err, errlen, "scheduling failed: %s", nk_strerror(rc));
        goto out;
    }
    *out = p;
    p = NULL;
out:
    if (rc == NK_ENOMEM && err && !err[0])
        snprintf(err, errlen, "out of memory while tracing");
    if (nc) {
        for (int d = 0; d < NK_MAX_LOOP_DEPTH; d++)
            free(nc->frames[d].sites);
        free(nc->lochash);
        free(nc->stale);
    }
    free(nc);
    free(targs);
    nk__program_destroy(p);
    return rc;
}
