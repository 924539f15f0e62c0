/*
 * trace.c - the tracing context: errors, source locations, buffers, loops
 * and views.
 *
 * Tiles are recorded without addresses: the compile step gives them
 * addresses by liveness once the whole program is known (sched/alloc.c).
 * The tracer records what that needs: the loop and iteration each tile was
 * allocated in, and where each loop iteration began.
 */
#include "trace.h"

#include "sched/program_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Invalid tensor handles the kernel sees after its arguments. */
#define NK_ARGS_SLACK 16

/* ---- growable arrays */

int nk__grow_raw(void **ptr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = nk__big_grow(*ptr, (size_t)c * elem);
    if (!q)
        return -1;
    *ptr = q;
    *cap = c;
    return 0;
}

int nk__grow(void **ptr, uint32_t *cap, uint32_t need, size_t elem)
{
    uint32_t old = *cap;
    if (nk__grow_raw(ptr, cap, need, elem))
        return -1;
    if (*cap > old)
        memset((char *)*ptr + (size_t)old * elem, 0, (size_t)(*cap - old) * elem);
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
    int m = vsnprintf(nc->err + n, sizeof nc->err - (size_t)n, fmt, ap);
    va_end(ap);
    if (nc->p && nc->p->ninst > 1 && m >= 0 && (size_t)n + (size_t)m < sizeof nc->err) {
        /* which program instance of the grid said it */
        char where[64];
        int k = 0;
        k += snprintf(where + k, sizeof where - (size_t)k, " (program instance [");
        for (int a = 0; a < nc->p->grid_ndim; a++)
            k += snprintf(where + k, sizeof where - (size_t)k, "%s%d", a ? ", " : "", (int)nc->pid[a]);
        snprintf(where + k, sizeof where - (size_t)k, "])");
        snprintf(nc->err + n + m, sizeof nc->err - (size_t)n - (size_t)m, "%s", where);
    }
    return status;
}

/* ---- source locations */

static uint32_t intern_file(nk_ctx *nc, const char *file)
{
    nk_program *p = nc->p;
    for (uint32_t i = 0; i < p->nfiles; i++)
        if (!strcmp(p->files[i], file))
            return i;
    if (nk__grow((void **)&p->files, &nc->cap_files, p->nfiles + 1, sizeof *p->files))
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

nk_loc nk__last_loc(const nk_ctx *nc) { return nc->last; }

uint32_t nk__loc(nk_ctx *nc, nk_loc loc)
{
    if (!loc.file)
        loc.file = "?";
    nc->last = loc;
    if (nc->lochash_n * 2 >= nc->lochash_cap) {
        uint32_t cap = nc->lochash_cap ? nc->lochash_cap * 2 : 64;
        struct lockey *h = calloc(cap, sizeof *h);
        if (!h) {
            nk__fail(nc, loc, NK_ENOMEM, "out of memory while tracing");
            return 0;
        }
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
    if (f == UINT32_MAX || nk__grow((void **)&p->locs, &nc->cap_locs, p->nlocs + 1, sizeof *p->locs)) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory while tracing");
        return 0;
    }
    p->locs[p->nlocs] = (nk_locinfo){f, loc.line};
    nc->lochash[j] = (struct lockey){loc.file, loc.line, p->nlocs};
    nc->lochash_n++;
    return p->nlocs++;
}

/* ---- instructions and buffers */

/* The capacity nk__grow gives an array of cap elements to hold need. */
static uint64_t grown(uint32_t cap, uint32_t need)
{
    uint64_t c = cap ? cap : 16;
    while (c < need)
        c *= 2;
    return c;
}

/* Growing one of the tracer's arrays by more bytes keeps its records
 * within nk_options.max_trace_bytes; otherwise fails at loc. */
static int within_budget(nk_ctx *nc, nk_loc loc, uint64_t more)
{
    uint64_t have = (uint64_t)nc->cap_instrs * sizeof(nk_instr) + (uint64_t)nc->cap_bufs * sizeof(nk_bufinfo) +
                    (uint64_t)nc->cap_bs * sizeof(nk_bufstate) + (uint64_t)nc->cap_locs * sizeof(nk_locinfo) +
                    (uint64_t)nc->lochash_cap * sizeof(struct lockey) + (uint64_t)nc->cap_loops * sizeof(nk_loopinfo) +
                    (uint64_t)nc->cap_la * sizeof(nk_loopalloc) + nc->cap_dead +
                    (uint64_t)nc->p->cap_xop * sizeof(nk_opnd) + (uint64_t)nc->p->cap_xarg * sizeof(nk_xarg) +
                    (uint64_t)nc->p->cap_lays * sizeof(nk_layout) +
                    (uint64_t)nc->p->lay_hcap * sizeof(uint32_t);
    if (have + more <= (uint64_t)nc->max_bytes)
        return 1;
    nk__fail(nc, loc, NK_ELIMIT, "the trace would take more than %lld bytes of memory (%u instructions and %u "
             "tensors and tiles so far): raise nk_options.max_trace_bytes, or --max-trace-bytes on the command line",
             (long long)nc->max_bytes, nc->p->ninstr, nc->p->nbufs - 1);
    return 0;
}
static int open_segment(nk_ctx *nc, nk_loc loc, const char *name);

/* The index + 1 of an API call in p->calls, added when new; 0 for none (or
 * when the table is full: the instruction then names no call, which every
 * surface shows as it shows a program without calls). Out of memory fails
 * the trace. */
static uint16_t intern_call(nk_ctx *nc, const char *call)
{
    if (!call || !call[0])
        return 0;
    struct callkey *ck = &nc->call_cache[((uintptr_t)call >> 3) % NK_CALL_CACHE];
    if (call == ck->call)
        return ck->idx;
    nk_program *p = nc->p;
    /* as stored: at most 63 characters (the file format's bound on a name),
       no blanks, quotes or commas (the reader's rule); looked up so, or a
       call outside those rules would be added again at every instruction */
    char name[64];
    snprintf(name, sizeof name, "%s", call);
    for (char *q = name; *q; q++)
        if (!nk__name_char_ok(*q))
            *q = '_';
    uint32_t k = 0;
    while (k < p->ncalls && strcmp(p->calls[k], name))
        k++;
    if (k == p->ncalls) {
        if (k + 1 >= UINT16_MAX)
            return 0;
        char **c = realloc(p->calls, (k + 1) * sizeof *c);
        if (c)
            p->calls = c;
        if (!c || !(c[k] = strdup(name))) {
            nk__fail(nc, nc->last, NK_ENOMEM, "out of memory while tracing");
            return 0;
        }
        p->ncalls++;
    }
    ck->call = call;
    ck->idx = (uint16_t)(k + 1);
    return ck->idx;
}

nk_instr *nk__emit(nk_ctx *nc, nk_loc loc, int op, int engine)
{
    nk_program *p = nc->p;
    if (p->ninstr >= nc->max_instrs) {
        nk__fail(nc, loc, NK_ELIMIT, "the kernel traced more than %lld instructions (a loop of more iterations "
                 "than meant?): raise nk_options.max_instructions, or --max-instructions on the command line",
                 (long long)nc->max_instrs);
        return NULL;
    }
    if (p->ninstr >= nc->cap_instrs &&
        !within_budget(nc, loc, (grown(nc->cap_instrs, p->ninstr + 1) - nc->cap_instrs) * sizeof(nk_instr)))
        return NULL;
    if (nc->seg_driver_pending) { /* the calling kernel's code after a launch: a segment of its own */
        nc->seg_driver_pending = 0;
        if (open_segment(nc, loc, p->kernel))
            return NULL;
        nc->p->seg_loc[nc->seg] = nc->driver_loc;
    }
    if (nk__grow_raw((void **)&p->instrs, &nc->cap_instrs, p->ninstr + 1, sizeof *p->instrs)) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory recording instruction %u", p->ninstr);
        return NULL;
    }
    nk_instr *in = &p->instrs[p->ninstr++];
    memset(in, 0, sizeof *in);
    in->op = (uint8_t)op;
    in->engine = (uint8_t)engine;
    in->loc = nk__loc(nc, loc);
    in->call = intern_call(nc, loc.call);
    in->inst = (uint16_t)nc->inst;
    in->seg = (uint16_t)nc->seg;
    if (nc->depth > 0) {
        nk_frame *f = &nc->frames[nc->depth - 1];
        in->loop = f->loop;
        in->iter = (uint32_t)f->i;
    }
    return in;
}

/* Is l t's layout (nk__layout_of(t), without making it)? */
static int is_layout_of(const nk_layout *l, const nk_tensor *t)
{
    if (l->dtype != t->dtype || l->ndim != t->ndim || l->mem != t->mem || l->pdim != t->pdim)
        return 0;
    for (int d = 0; d < NK_MAXDIM; d++)
        if (l->shape[d] != t->shape[d] || l->stride[d] != t->stride[d])
            return 0;
    return 1;
}

/* An operand of the instruction just emitted: its layout found in the
 * cache of recent ones, or looked up; a layout new to the program grows
 * its table, within nk_options.max_trace_bytes like the tracer's own
 * arrays. */
static int emit_opnd(nk_ctx *nc, nk_loc loc, nk_opnd *o, const nk_tensor *t)
{
    nk_program *p = nc->p;
    uint64_t h = ((uint64_t)(uint32_t)t->shape[0] | (uint64_t)(uint32_t)t->shape[1] << 32) * 0x9E3779B97F4A7C15ull ^
                 ((uint64_t)(uint32_t)t->shape[2] | (uint64_t)t->dtype << 32 | (uint64_t)t->mem << 40) *
                     0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)t->stride[0] * 0x165667B19E3779F9ull ^ (uint64_t)t->stride[1] * 0x27D4EB2F165667C5ull;
    struct laykey *lk = &nc->lay_cache[(h >> 40) % NK_LAY_CACHE];
    if (is_layout_of(&lk->l, t)) {
        nk__opnd_put(o, t, lk->lay);
        return 0;
    }
    nk_layout l = nk__layout_of(t);
    uint32_t lay = nk__lay_lookup(p, &l);
    if (lay == UINT32_MAX) {
        uint64_t now = (uint64_t)p->cap_lays * sizeof(nk_layout) + (uint64_t)p->lay_hcap * sizeof(uint32_t);
        uint64_t after = nk__lays_bytes_after_one_more(p);
        if (after > now && !within_budget(nc, loc, after - now))
            return NK_ELIMIT;
        lay = nk__lay_intern(p, &l);
        if (lay == UINT32_MAX) {
            nk__fail(nc, loc, NK_ENOMEM, "out of memory recording instruction %u", p->ninstr - 1);
            return NK_ENOMEM;
        }
    }
    lk->l = l;
    lk->lay = lay;
    nk__opnd_put(o, t, lay);
    return 0;
}

int nk__emit_opnd(nk_ctx *nc, nk_loc loc, nk_opnd *o, nk_tensor t) { return emit_opnd(nc, loc, o, &t); }

/* nk__emit_src2 / nk__emit_dst2: the side table grows as the tracer's own
 * arrays do, so it counts against nk_options.max_trace_bytes like them. */
static int emit_xop(nk_ctx *nc, nk_loc loc, nk_instr *in, nk_tensor t, int dst2)
{
    nk_program *p = nc->p;
    uint32_t *x = dst2 ? &in->xdst2 : &in->xsrc2;
    if (!*x && p->nxop >= p->cap_xop &&
        !within_budget(nc, loc, (grown(p->cap_xop, p->nxop + 1) - p->cap_xop) * sizeof(nk_opnd)))
        return NK_ELIMIT;
    nk_opnd o;
    int rc = emit_opnd(nc, loc, &o, &t);
    if (rc)
        return rc;
    rc = nk__set_xop(p, x, &o);
    if (rc)
        nk__fail(nc, loc, rc, "out of memory recording instruction %u", p->ninstr - 1);
    return rc;
}
/* in's scalars to write, as emit_xop grows its table; NULL when it failed. */
static nk_xarg *emit_xarg(nk_ctx *nc, nk_loc loc, nk_instr *in)
{
    nk_program *p = nc->p;
    if (!in->xarg && p->nxarg >= p->cap_xarg &&
        !within_budget(nc, loc, (grown(p->cap_xarg, p->nxarg + 1) - p->cap_xarg) * sizeof(nk_xarg)))
        return NULL;
    nk_xarg *x = nk__xarg_w(p, in);
    if (!x)
        nk__fail(nc, loc, NK_ENOMEM, "out of memory recording instruction %u", p->ninstr - 1);
    return x;
}

int nk__emit_imm(nk_ctx *nc, nk_loc loc, nk_instr *in, int k, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (!in->xarg && !bits)
        return 0; /* what an instruction without an entry reads */
    nk_xarg *x = emit_xarg(nc, loc, in);
    if (!x)
        return nc->status ? nc->status : NK_ENOMEM;
    *(k ? &x->imm1 : &x->imm0) = v;
    return 0;
}

int nk__emit_aff(nk_ctx *nc, nk_loc loc, nk_instr *in, nk_affine a)
{
    if (!in->xarg && nk__xarg_is_zero(&(nk_xarg){.aff = a}))
        return 0;
    nk_xarg *x = emit_xarg(nc, loc, in);
    if (!x)
        return nc->status ? nc->status : NK_ENOMEM;
    x->aff = a;
    return 0;
}

int nk__emit_src2(nk_ctx *nc, nk_loc loc, nk_instr *in, nk_tensor t) { return emit_xop(nc, loc, in, t, 0); }
int nk__emit_dst2(nk_ctx *nc, nk_loc loc, nk_instr *in, nk_tensor t) { return emit_xop(nc, loc, in, t, 1); }

static uint32_t new_buf(nk_ctx *nc, nk_loc loc)
{
    nk_program *p = nc->p;
    if (p->nbufs >= nc->cap_bufs &&
        !within_budget(nc, loc, (grown(nc->cap_bufs, p->nbufs + 1) - nc->cap_bufs) *
                                    (sizeof(nk_bufinfo) + sizeof(nk_bufstate))))
        return 0;
    if (nk__grow_raw((void **)&p->bufs, &nc->cap_bufs, p->nbufs + 1, sizeof *p->bufs)) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory allocating a buffer");
        return 0;
    }
    if (nk__grow((void **)&nc->bs, &nc->cap_bs, p->nbufs + 1, sizeof *nc->bs)) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory allocating a buffer");
        return 0;
    }
    nk_bufinfo *b = &p->bufs[p->nbufs];
    memset(b, 0, sizeof *b);
    b->index = -1;
    b->loc = nk__loc(nc, loc);
    b->loop = nc->depth > 0 ? nc->frames[nc->depth - 1].loop : 0;
    b->inst = (uint16_t)nc->inst;
    nk_bufstate *st = &nc->bs[p->nbufs];
    memset(st, 0, sizeof *st);
    st->iter = nc->depth > 0 ? (uint32_t)nc->frames[nc->depth - 1].i : 0;
    st->born = p->ninstr;
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

nk_tensor nk__tile(nk_ctx *nc, nk_loc loc, const char *opname, nk_buffer mem, const int64_t *shape, int ndim,
                   nk_dtype dt)
{
    return nk__tile_array(nc, loc, opname, mem, shape, ndim, dt, 0);
}

/* One tile: a buffer of shape [P, free...]; 0 on error. */
static uint32_t new_tile(nk_ctx *nc, nk_loc loc, const char *opname, nk_buffer mem, const int64_t *shape, int ndim,
                         nk_dtype dt)
{
    if (!nk_dtype_size(dt)) {
        nk__fail(nc, loc, NK_EDTYPE, "%s: invalid dtype %d", opname, (int)dt);
        return 0;
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || shape[i] > INT32_MAX) {
            nk__fail(nc, loc, NK_ESHAPE, "%s: invalid dimension %lld", opname, (long long)shape[i]);
            return 0;
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
        return 0;
    }
    if (shape[0] > nc->arch->partitions) {
        nk__fail(nc, loc, NK_EPARTITION, "%s: the new %s tile's partition dimension %lld exceeds %d", opname,
                 mem_name(mem), (long long)shape[0], nc->arch->partitions);
        return 0;
    }
    int64_t bytes = fsz * nk_dtype_size(dt);
    int64_t unit = mem == NK_PSUM ? nc->arch->psum_bank_bytes : nc->arch->tile_align;
    bytes = (bytes + unit - 1) / unit * unit;
    if (shape[0] == 0)
        bytes = 0;
    int64_t cap = mem == NK_PSUM ? nc->arch->psum_partition_bytes
                                 : nc->arch->sbuf_partition_bytes - nc->arch->sbuf_reserved_bytes;
    if (bytes > cap) {
        char banks[48] = "";
        if (mem == NK_PSUM)
            snprintf(banks, sizeof banks, " (%d banks of %lld)", nc->arch->psum_banks,
                     (long long)nc->arch->psum_bank_bytes);
        nk__fail(nc, loc, NK_ECAPACITY, "%s: %s capacity exceeded: a tile needs %lld bytes per partition but a "
                 "partition holds %lld%s", opname, mem_name(mem), (long long)bytes, (long long)cap, banks);
        return 0;
    }
    uint32_t id = new_buf(nc, loc);
    if (!id)
        return 0;
    nk_bufinfo *b = &nc->p->bufs[id];
    b->mem = (uint8_t)mem;
    b->dtype = (uint8_t)dt;
    b->ndim = (uint8_t)ndim;
    b->role = NK_ROLE_TILE;
    for (int i = 0; i < ndim; i++)
        b->shape[i] = shape[i];
    b->bytes = bytes;
    b->nslots = 1;
    return id;
}

/*
 * A tile array, NKI's nl.ndarray((nb, [nb2,] nl.par_dim(P), f...)): every
 * block is a tile of its own (its own buffer, so liveness, allocation and
 * spills treat blocks one by one, as neuronx-cc does), the blocks' buffer
 * ids consecutive in row-major block order. The handle keeps the kernel's
 * axis order with the partition axis at pdim; a block axis's stride counts
 * buffers, the free axes' strides elements. Indexing every block axis
 * (nk_ix with integer indices) gives a block's tile.
 */
nk_tensor nk__tile_array(nk_ctx *nc, nk_loc loc, const char *opname, nk_buffer mem, const int64_t *ushape,
                         int ndim, nk_dtype dt, int pdim)
{
    nk_tensor bad = {0};
    if (nc->status)
        return bad;
    if (ndim < 1 || ndim > NK_MAXDIM || pdim < 0 || pdim >= ndim) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: a tile has 1 to %d dims, got %d", opname, NK_MAXDIM, ndim);
        return bad;
    }
    int64_t nblocks = nk__dims_product(ushape, pdim);
    if (nblocks < 1 || nblocks > (1 << 20)) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: a tile array has 1 to %d blocks, got %lld", opname, 1 << 20,
                 (long long)nblocks);
        return bad;
    }
    uint32_t first = 0;
    for (int64_t k = 0; k < nblocks; k++) {
        uint32_t id = new_tile(nc, loc, opname, mem, ushape + pdim, ndim - pdim, dt);
        if (!id)
            return bad;
        if (!k)
            first = id;
    }
    nk_tensor t;
    memset(&t, 0, sizeof t);
    t.buf = first;
    t.dtype = (uint8_t)dt;
    t.mem = (uint8_t)mem;
    t.ndim = (uint8_t)ndim;
    t.pdim = (uint8_t)pdim;
    int64_t s = 1, sb = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t.shape[i] = (int32_t)ushape[i];
        if (i == pdim) {
            t.stride[i] = 1;
        } else if (i > pdim) {
            t.stride[i] = s;
            s *= ushape[i];
        } else {
            t.stride[i] = sb;
            sb *= ushape[i];
        }
    }
    return t;
}

/* Reads nk_par_dim markers: the partition axis of a tile array, or -1 with
 * an error. Without a marker the first axis is the partition axis. */
int nk__parse_pdim(nk_ctx *nc, nk_loc loc, const char *op, nk_shape *shape, nk_buffer mem)
{
    int pdim = -2;
    for (int i = 0; i < shape->n && i < NK_MAXDIM; i++) {
        if (shape->d[i] >= 0)
            continue;
        if (mem == NK_SHARED_HBM) {
            nk__fail(nc, loc, NK_ESHAPE, "%s: nk_par_dim marks the partition axis of an SBUF or PSUM tile array; "
                     "axis %d of an HBM tensor is %lld", op, i, (long long)shape->d[i]);
            return -1;
        }
        if (pdim != -2) {
            nk__fail(nc, loc, NK_ESHAPE, "%s: axes %d and %d are both marked nk_par_dim; a tile array has one "
                     "partition axis", op, pdim, i);
            return -1;
        }
        pdim = i;
        shape->d[i] = -shape->d[i];
    }
    return pdim == -2 ? 0 : pdim;
}

/* ---- tensors */

/* Program instances share their HBM tensors: the j-th one an instance > 0
 * creates is the j-th one instance 0 created, which must have its shape and
 * dtype (NKI runs the same program on every core; a kernel whose instances
 * create different tensors is not an SPMD kernel). */
static nk_tensor instance0_tensor(nk_ctx *nc, nk_loc loc, nk_shape shape, nk_dtype dt)
{
    nk_tensor t = {0};
    uint32_t j = nc->hbm_seq++;
    if (j >= nc->nhbm0) {
        nk__fail(nc, loc, NK_EINVAL, "nk_ndarray: this instance creates more HBM tensors than instance 0 did (%u): "
                 "the instances of a launch grid share their HBM tensors, so each must create the same ones in "
                 "the same order", nc->nhbm0);
        return t;
    }
    uint32_t id = nc->hbm0[j];
    const nk_bufinfo *b = &nc->p->bufs[id];
    int same = b->dtype == dt && b->ndim == shape.n;
    for (int i = 0; same && i < shape.n; i++)
        same = b->shape[i] == shape.d[i];
    if (!same) {
        int32_t s0[NK_MAXDIM], s1[NK_MAXDIM];
        char a0[96], a1[96], w[160];
        for (int i = 0; i < b->ndim; i++)
            s0[i] = (int32_t)b->shape[i];
        for (int i = 0; i < shape.n; i++)
            s1[i] = (int32_t)shape.d[i];
        nk__format_shape(a0, sizeof a0, s0, b->ndim);
        nk__format_shape(a1, sizeof a1, s1, shape.n);
        nk__buf_where(nc, id, w, sizeof w);
        nk__fail(nc, loc, NK_ESHAPE, "nk_ndarray: HBM tensor %u of this instance is %s %s, but instance 0's (%s) "
                 "is %s %s: the instances of a launch grid share their HBM tensors", j, a1, nk_dtype_name(dt), w,
                 a0, nk_dtype_name((nk_dtype)b->dtype));
        return t;
    }
    init_view(&t, id, NK_SHARED_HBM, dt, shape.d, shape.n);
    return t;
}

nk_tensor nk_ndarray_at(nk_ctx *nc, nk_loc loc, nk_shape shape, nk_dtype dt, nk_buffer mem)
{
    nk_tensor bad = {0};
    if (nc->status)
        return bad;
    if (shape.n < 1 || shape.n > NK_MAXDIM) {
        nk__fail(nc, loc, NK_ESHAPE, "nk_ndarray: a tensor has 1 to %d dims, got %d", NK_MAXDIM, shape.n);
        return bad;
    }
    int pdim = nk__parse_pdim(nc, loc, "nk_ndarray", &shape, mem);
    if (pdim < 0)
        return bad;
    if (mem == NK_SBUF || mem == NK_PSUM)
        return nk__tile_array(nc, loc, loc.call ? loc.call : "nk_ndarray", mem, shape.d, shape.n, dt, pdim);
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
    if (n < 0 || n > NK_IO_MAX_HBM_BYTES / nk_dtype_size(dt)) {
        int32_t s32[NK_MAXDIM];
        char s[96];
        for (int i = 0; i < shape.n; i++)
            s32[i] = (int32_t)shape.d[i];
        nk__format_shape(s, sizeof s, s32, shape.n);
        if (n < 0 || n > INT64_MAX / nk_dtype_size(dt))
            nk__fail(nc, loc, NK_ESHAPE, "nk_ndarray: an HBM tensor %s %s holds more than 2^63 bytes", s,
                     nk_dtype_name(dt));
        else /* what program and profile files hold */
            nk__fail(nc, loc, NK_ESHAPE, "nk_ndarray: an HBM tensor %s %s takes more than %lld bytes (1 TiB), the "
                     "most a program or profile file holds", s, nk_dtype_name(dt), (long long)NK_IO_MAX_HBM_BYTES);
        return bad;
    }
    if (nc->in_kernel && nc->inst > 0)
        return instance0_tensor(nc, loc, shape, dt);
    uint32_t id = new_buf(nc, loc);
    if (!id)
        return bad;
    if (nc->in_kernel && nc->p->ninst > 1 &&
        nk__grow((void **)&nc->hbm0, &nc->cap_hbm0, nc->nhbm0 + 1, sizeof *nc->hbm0)) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory");
        return bad;
    }
    if (nc->in_kernel && nc->p->ninst > 1)
        nc->hbm0[nc->nhbm0++] = id;
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
    if (!nc->in_launch && (b->mem != NK_SHARED_HBM || b->role == NK_ROLE_INPUT)) {
        char what[96];
        if (b->role == NK_ROLE_INPUT && nc->p->in_name && nc->p->in_name[b->index])
            snprintf(what, sizeof what, "input %d (%s)", b->index, nc->p->in_name[b->index]);
        else if (b->role == NK_ROLE_INPUT)
            snprintf(what, sizeof what, "input %d", b->index);
        else
            snprintf(what, sizeof what, "an on-chip %s tile", mem_name(b->mem));
        nk__fail(nc, loc, NK_EMEMORY,
                 "nk_return: a kernel returns HBM tensors it created with nk_ndarray(..., NK_SHARED_HBM), not %s",
                 what);
        return;
    }
    nk_program *p = nc->p;
    if (nc->in_launch) { /* a launched kernel's result goes back to its caller: HBM or on chip */
        if (nc->launch_n >= nc->launch_max) {
            nk__fail(nc, loc, NK_EINVAL, "nk_return: the kernel returns more than the %d output%s its nk_launch "
                     "takes", nc->launch_max, nc->launch_max == 1 ? "" : "s");
            return;
        }
        nc->launch_outs[nc->launch_n++] = t;
        return;
    }
    if (nc->inst > 0) { /* a later instance returns what instance 0 did, in order */
        int k = nc->ret_seq++;
        if (k >= p->noutputs || p->output_buf[k] != t.buf)
            nk__fail(nc, loc, NK_EINVAL, "nk_return: instance 0 returned %s here; every instance of a launch "
                     "grid returns the same tensors in the same order",
                     k >= p->noutputs ? "no more outputs" : "another tensor");
        return;
    }
    if (b->role == NK_ROLE_OUTPUT) {
        nk__fail(nc, loc, NK_EINVAL, "nk_return: tensor already returned as output %d", b->index);
        return;
    }
    if (nk__grow((void **)&p->output_buf, &nc->cap_outs, (uint32_t)p->noutputs + 1, sizeof *p->output_buf)) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory");
        return;
    }
    b->role = NK_ROLE_OUTPUT;
    b->index = p->noutputs;
    p->output_buf[p->noutputs++] = t.buf;
}

nk_tensor nk_shared_constant_at(nk_ctx *nc, nk_loc loc, const nk_array *value)
{
    const char *op = "nk_shared_constant";
    nk_tensor bad = {0};
    if (nc->status)
        return bad;
    if (!value || !value->data || value->ndim < 1 || value->ndim > NK_MAXDIM) {
        nk__fail(nc, loc, NK_EINVAL, "%s: the value must be an array of 1 to %d dims with data", op, NK_MAXDIM);
        return bad;
    }
    nk_shape s = {value->ndim, {0}};
    for (int d = 0; d < value->ndim; d++)
        s.d[d] = value->shape[d];
    nk_tensor t = nk_ndarray_at(nc, loc, s, value->dtype, NK_SHARED_HBM);
    if (nc->status)
        return bad;
    nk_program *p = nc->p;
    nk_bufinfo *b = &p->bufs[t.buf];
    if (nc->inst > 0) { /* instance 0's constant: the data must not diverge across instances */
        if (b->role != NK_ROLE_CONSTANT || memcmp(p->cdata[t.buf], value->data, (size_t)b->bytes)) {
            nk__fail(nc, loc, NK_EINVAL, "%s: this instance's constant differs from instance 0's: the instances "
                     "of a launch grid share one copy", op);
            return bad;
        }
        return t;
    }
    if (nk__grow((void **)&p->cdata, &nc->cap_cdata, p->nbufs, sizeof *p->cdata)) {
        nk__fail(nc, loc, NK_ENOMEM, "%s: out of memory", op);
        return bad;
    }
    uint8_t *copy = malloc((size_t)b->bytes ? (size_t)b->bytes : 1);
    if (!copy) {
        nk__fail(nc, loc, NK_ENOMEM, "%s: out of memory for %lld bytes", op, (long long)b->bytes);
        return bad;
    }
    memcpy(copy, value->data, (size_t)b->bytes);
    p->cdata[t.buf] = copy;
    b->role = NK_ROLE_CONSTANT;
    b->written = 1;
    return t;
}

double nk_scalar_at(nk_ctx *nc, nk_loc loc, nk_tensor arg)
{
    if (nc->status)
        return 0.0;
    if (arg.buf || arg.mem != NK__MEM_SCALAR || arg.off < 0 || arg.off >= nc->nargs) {
        nk__fail(nc, loc, NK_EINVAL, "nk_scalar: not a scalar argument (pass a 0-d array for it)");
        return 0.0;
    }
    return nc->scalars[arg.off];
}

/* ---- sequences: kernels composed into one program */

static void fail_left_loop(nk_ctx *nc, const nk_frame *f);

static int open_segment(nk_ctx *nc, nk_loc loc, const char *name)
{
    nk_program *p = nc->p;
    uint32_t k = p->nseg ? p->nseg : 1; /* segment 0 is the calling kernel's first stretch */
    if (k >= UINT16_MAX) {
        nk__fail(nc, loc, NK_ELIMIT, "nk_launch: more than %d kernels in one sequence", UINT16_MAX - 1);
        return -1;
    }
    if (nk__grow((void **)&p->seg_loc, &nc->cap_segs, k + 1, sizeof *p->seg_loc)) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory");
        return -1;
    }
    uint32_t cap = nc->cap_segs;
    void *nn = realloc(p->seg_name, (size_t)cap * sizeof *p->seg_name);
    if (!nn) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory");
        return -1;
    }
    p->seg_name = nn;
    if (!p->nseg) { /* segment 0: the calling kernel */
        snprintf(p->seg_name[0], sizeof p->seg_name[0], "%s", p->kernel);
        p->seg_loc[0] = nc->driver_loc;
    }
    snprintf(p->seg_name[k], sizeof p->seg_name[k], "%s", name && *name ? name : "kernel");
    p->seg_loc[k] = nk__loc(nc, loc);
    p->nseg = k + 1;
    nc->seg = k;
    return 0;
}

int nk_launch_at(nk_ctx *nc, nk_loc loc, const char *name, nk_kernel_fn fn, const nk_tensor *args, int nargs,
                 nk_tensor *outs, int max_outs)
{
    if (nc->status)
        return -1;
    if (!fn || nargs < 0 || (nargs && !args) || max_outs < 0 || (max_outs && !outs)) {
        nk__fail(nc, loc, NK_EINVAL, "nk_launch: a kernel function, its arguments and room for its outputs");
        return -1;
    }
    if (nc->in_launch) {
        nk__fail(nc, loc, NK_EINVAL, "nk_launch: a launched kernel cannot launch another (call it as a function, "
                 "or launch both from the sequence)");
        return -1;
    }
    if (nc->p->ninst > 1) {
        nk__fail(nc, loc, NK_EINVAL, "nk_launch: a kernel on a launch grid cannot launch kernels (sequences of SPMD "
                 "kernels are not modelled)");
        return -1;
    }
    if (nc->depth > 0) {
        nk__fail(nc, loc, NK_EINVAL, "nk_launch: launch kernels outside the sequence's loops (each launch is a "
                 "kernel boundary; unroll with a C loop)");
        return -1;
    }
    nc->seg_driver_pending = 0;
    if (open_segment(nc, loc, name))
        return -1;
    nc->in_launch = 1;
    nc->launch_outs = outs;
    nc->launch_max = max_outs;
    nc->launch_n = 0;
    /* as nk__trace gives them: past the arguments, invalid handles */
    nk_tensor *a = calloc((size_t)nargs + NK_ARGS_SLACK, sizeof *a);
    if (!a) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory");
        nc->in_launch = 0;
        return -1;
    }
    if (nargs)
        memcpy(a, args, (size_t)nargs * sizeof *a);
    fn(nc, a, nargs);
    free(a);
    if (!nc->status && nc->depth > 0)
        fail_left_loop(nc, &nc->frames[nc->depth - 1]);
    nc->in_launch = 0;
    nc->seg_driver_pending = 1;
    return nc->status ? -1 : nc->launch_n;
}

/* ---- SPMD */

static int grid_axes(const nk_ctx *nc) { return nc->p->grid_ndim > 0 ? nc->p->grid_ndim : 1; }

int nk_program_id_at(nk_ctx *nc, nk_loc loc, int axis)
{
    if (nc->status)
        return 0;
    if (axis < 0 || axis >= grid_axes(nc)) {
        nk__fail(nc, loc, NK_EINVAL, "nk_program_id: axis %d is not an axis of the launch grid (%d ax%s)", axis,
                 nc->p->grid_ndim, nc->p->grid_ndim == 1 ? "is" : "es");
        return 0;
    }
    return nc->p->grid_ndim ? nc->pid[axis] : 0;
}

int nk_num_programs_at(nk_ctx *nc, nk_loc loc, int axis)
{
    if (nc->status)
        return 1;
    if (axis == -1)
        return (int)nc->p->ninst;
    if (axis < 0 || axis >= grid_axes(nc)) {
        nk__fail(nc, loc, NK_EINVAL, "nk_num_programs: axis %d is not an axis of the launch grid (%d ax%s)", axis,
                 nc->p->grid_ndim, nc->p->grid_ndim == 1 ? "is" : "es");
        return 1;
    }
    return nc->p->grid_ndim ? nc->p->grid[axis] : 1;
}

int nk_program_ndim(nk_ctx *nc) { return nc->p->grid_ndim; }

/* The launch grid of opts into p: its axes, its instances and the core each
 * runs on (see nk_options.grid_nc); an error message when it is invalid. */
static int setup_grid(nk_program *p, const nk_options *opts, const nk_arch *arch, char *err, size_t errlen)
{
    p->ninst = 1;
    p->ncores = 1;
    p->grid_ndim = 0;
    if (!opts)
        return 0;
    int nd = 0, total = 1, nc_axis = -1;
    for (int a = 0; a < NK_MAX_GRID; a++) {
        int g = opts->grid[a], c = opts->grid_nc[a];
        if (g < 0 || (g > 0 && nd < a)) { /* negative, or after an axis of 0 */
            if (err)
                snprintf(err, errlen, "launch grid: axis %d is %d; the grid's sizes are positive and leading "
                         "(all zero: no grid)", a, g);
            return NK_EINVAL;
        }
        if (g == 0 && c) {
            if (err)
                snprintf(err, errlen, "launch grid: nl.nc(%d) on axis %d, which the grid does not have", c < 0 ? -c : c,
                         a);
            return NK_EINVAL;
        }
        if (g == 0)
            continue;
        if (total > NK_MAX_INSTANCES / g) {
            if (err)
                snprintf(err, errlen, "launch grid: more than %d program instances", NK_MAX_INSTANCES);
            return NK_ELIMIT;
        }
        total *= g;
        p->grid[nd] = g;
        p->grid_nc[nd] = c;
        nd++;
        if (c) {
            int n = c < 0 ? -c : c;
            if (nc_axis >= 0) {
                if (err)
                    snprintf(err, errlen, "launch grid: nl.nc on axes %d and %d; one axis spreads over the cores",
                             nc_axis, a);
                return NK_EINVAL;
            }
            nc_axis = a;
            if (n > arch->spmd_cores) {
                if (err)
                    snprintf(err, errlen, "launch grid: nl.nc(%d) on axis %d, but a launch on %s spreads over %d "
                             "physical NeuronCore%s (target key spmd_cores)", n, a, arch->name, arch->spmd_cores,
                             arch->spmd_cores == 1 ? "" : "s");
                return NK_EINVAL;
            }
            if (g % n) {
                if (err)
                    snprintf(err, errlen, "launch grid: axis %d has %d instances, not a multiple of nl.nc(%d)", a,
                             g, n);
                return NK_EINVAL;
            }
        }
    }
    p->grid_ndim = (uint8_t)nd;
    p->ninst = (uint32_t)total;
    if (total == 1)
        return 0;
    p->inst_core = malloc((size_t)total);
    if (!p->inst_core)
        return NK_ENOMEM;
    uint32_t maxc = 0;
    for (int k = 0; k < total; k++) {
        int core = k % arch->spmd_cores;
        if (nc_axis >= 0) { /* the index along the annotated axis, row-major */
            int idx = k;
            for (int a = nd - 1; a > nc_axis; a--)
                idx /= p->grid[a];
            idx %= p->grid[nc_axis];
            int g = p->grid[nc_axis], c = p->grid_nc[nc_axis];
            core = c > 0 ? idx / (g / c) : idx % -c;
        }
        p->inst_core[k] = (uint8_t)core;
        if ((uint32_t)core > maxc)
            maxc = (uint32_t)core;
    }
    p->ncores = maxc + 1;
    return 0;
}

/* The grid indices of instance k (row-major). */
static void instance_ids(const nk_program *p, uint32_t k, int32_t *pid)
{
    for (int a = p->grid_ndim - 1; a >= 0; a--) {
        pid[a] = (int32_t)(k % (uint32_t)p->grid[a]);
        k /= (uint32_t)p->grid[a];
    }
}

/* Every on-chip operand of an instruction belongs to its instance: a tile
 * lives in one core's memory. */
static void check_instances(nk_ctx *nc)
{
    nk_program *p = nc->p;
    if (p->ninst < 2)
        return;
    for (uint32_t i = 0; i < p->ninstr && !nc->status; i++) {
        const nk_instr *in = &p->instrs[i];
        const nk_opnd *ts[5];
        nk__operands(p, in, ts);
        for (int k = 0; k < 5; k++) {
            if (!ts[k]->buf || ts[k]->buf >= p->nbufs || nk__opnd_mem(p, ts[k]) == NK_SHARED_HBM ||
                p->bufs[ts[k]->buf].inst == in->inst)
                continue;
            char w[160];
            nk__buf_where(nc, ts[k]->buf, w, sizeof w);
            nc->pid[0] = 0;
            instance_ids(p, in->inst, nc->pid);
            nk__fail(nc, (nk_loc){p->files[p->locs[in->loc].file], p->locs[in->loc].line}, NK_EMEMORY,
                     "%s uses a tile (%s) of program instance %u, which lives in another instance's memory; "
                     "instances share HBM tensors only", nk__op_name(in->op), w, p->bufs[ts[k]->buf].inst);
            break;
        }
    }
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
        if (tile && d == t.pdim) {
            v.pdim = (uint8_t)nd; /* the block axes kept before it */
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
            v.shape[nd] = (int32_t)count;
            v.stride[nd] = 1;
            nd++;
            continue;
        }
        if (tile && d < t.pdim) { /* a block axis: its stride counts the blocks' buffers */
            if (count > 0)
                v.buf += (uint32_t)(start * t.stride[d]);
        }
        else
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

nk_tensor nk_ap_at(nk_ctx *nc, nk_loc loc, nk_tensor t, int ndim, const int64_t *extent, const nk_aidx *idx)
{
    const char *op = "nk_ap";
    nk_tensor bad = {0}, v = t;
    if (nc->status)
        return bad;
    if (!t.buf || t.buf >= nc->p->nbufs || t.ndim < 1) {
        nk__fail(nc, loc, NK_EINVAL, "%s: not a valid tensor", op);
        return bad;
    }
    if (ndim < 1 || ndim > NK_MAXDIM || !extent || !idx) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: a view has 1 to %d axes, got %d", op, NK_MAXDIM, ndim);
        return bad;
    }
    if (t.pdim) {
        nk__fail(nc, loc, NK_ESHAPE, "%s: a tile array's blocks are separate tiles; index the blocks first "
                 "(nk_ix(nc, t, nk_i(k)))", op);
        return bad;
    }
    int tile = t.mem != NK_SHARED_HBM, empty = 0;
    for (int k = 0; k < ndim; k++) {
        if (extent[k] < 0 || extent[k] > INT32_MAX) {
            nk__fail(nc, loc, NK_ESHAPE, "%s: extent %lld of axis %d is invalid", op, (long long)extent[k], k);
            return bad;
        }
        empty |= extent[k] == 0;
    }
    v.ndim = (uint8_t)ndim;
    v.pdim = 0;
    v.off = t.off;
    int64_t stride[NK_MAXDIM] = {0};
    for (int d = 0; d < t.ndim; d++) {
        const nk_aidx *e = &idx[d];
        /* the index range this axis reads, overflow-checked */
        __int128 lo = e->c, hi = e->c;
        for (int k = 0; k < ndim; k++) {
            __int128 span = (__int128)e->a[k] * (extent[k] > 0 ? extent[k] - 1 : 0);
            if (span < 0)
                lo += span;
            else
                hi += span;
        }
        if (!empty && (lo < 0 || hi >= t.shape[d])) {
            nk__fail(nc, loc, NK_EBOUNDS, "%s: axis %d of size %d is read at indices %lld..%lld", op, d, t.shape[d],
                     (long long)lo, (long long)hi);
            return bad;
        }
        if (tile && d == t.pdim) {
            int ok = e->a[0] == 1;
            for (int k = 1; k < ndim; k++)
                ok &= e->a[k] == 0;
            if (!ok) {
                nk__fail(nc, loc, NK_EPARTITION, "%s: the partition axis of a tile must be read by the view's first "
                         "axis with coefficient 1 (no striding or permuting partitions)", op);
                return bad;
            }
            v.part0 = (uint8_t)(t.part0 + e->c);
            continue;
        }
        if (tile && e->a[0] != 0) {
            nk__fail(nc, loc, NK_EPARTITION, "%s: axis %d of the tile is a free axis; the view's first (partition) "
                     "axis cannot index it", op, d);
            return bad;
        }
        v.off += e->c * t.stride[d];
        for (int k = 0; k < ndim; k++)
            if (extent[k] > 1) /* an axis of one index moves nowhere, whatever its coefficient */
                stride[k] += e->a[k] * t.stride[d];
    }
    for (int k = 0; k < NK_MAXDIM; k++) {
        v.shape[k] = k < ndim ? (int32_t)extent[k] : 0;
        v.stride[k] = k < ndim ? stride[k] : 0;
    }
    if (tile)
        v.stride[0] = 1;
    for (int k = tile; k < ndim; k++)
        if (v.stride[k] < 0) {
            nk__fail(nc, loc, NK_EINVAL, "%s: view axis %d walks backwards (stride %lld); access patterns step "
                     "forwards", op, k, (long long)v.stride[k]);
            return bad;
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
    if (t.pdim) {
        nk__fail(nc, loc, NK_ESHAPE, "nk_reshape: a tile array with block axes cannot be reshaped; index a block "
                 "first");
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
    int explicit_bufs = bufs > 0;
    if (kind == NK_LOOP_SEQUENTIAL)
        bufs = 1;
    else if (bufs == 0)
        bufs = nc->p->bufs_default;
    nk_program *p = nc->p;
    uint32_t parent = nc->depth > 0 ? nc->frames[nc->depth - 1].loop : 0;
    uint32_t id = 0;
    if (!nc->status && !nk__grow((void **)&p->loops, &nc->cap_loops, p->nloops + 1, sizeof *p->loops) &&
        !nk__grow((void **)&nc->la, &nc->cap_la, p->nloops + 1, sizeof *nc->la)) {
        p->loops[p->nloops] = (nk_loopinfo){nk__loc(nc, loc), parent, n, (uint8_t)kind, (uint8_t)bufs,
                                            (uint16_t)nc->depth, (uint8_t)explicit_bufs};
        nc->la[p->nloops] = (nk_loopalloc){NULL, 0, 0, (uint8_t)explicit_bufs};
        id = ++p->nloops;
    } else if (!nc->status) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory while tracing");
    }
    nk_frame *f = &nc->frames[nc->depth++];
    memset(f, 0, sizeof *f);
    f->loop = id;
    f->n = n;
    f->kind = kind;
    f->bufs = bufs;
    f->i = -1;
    return 0;
}

/* Where iteration i of the innermost loop begins (see nk_iterstart). */
static void note_iteration(nk_ctx *nc, nk_frame *f, int64_t i)
{
    uint32_t start = nc->p->ninstr;
    if (f->nits && f->its[f->nits - 1].start == start) {
        f->its[f->nits - 1].iter = (uint32_t)i; /* the previous iteration emitted nothing */
        return;
    }
    if (nk__grow((void **)&f->its, &f->cap_its, f->nits + 1, sizeof *f->its)) {
        nk__fail(nc, (nk_loc){"?", 0}, NK_ENOMEM, "out of memory recording loop iterations");
        return;
    }
    f->its[f->nits++] = (nk_iterstart){(uint32_t)i, start};
}

/* The loop's iteration record goes to its loop instance. */
static void end_loop(nk_ctx *nc, nk_frame *f)
{
    if (f->loop && f->loop <= nc->p->nloops) {
        nk_loopalloc *l = &nc->la[f->loop - 1];
        l->its = f->its;
        l->nits = f->nits;
        l->end = nc->p->ninstr;
    } else {
        free(f->its);
    }
    f->its = NULL;
    f->nits = f->cap_its = 0;
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
        end_loop(nc, f);
        nc->depth--;
        return 0;
    }
    f->i = i;
    note_iteration(nc, f, i);
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

/* Removes the instructions folded away during tracing (a memset that the
 * first accumulating matmul replaced), keeping the loops' iteration starts
 * pointing at the same instructions. */
static int compact(nk_ctx *nc)
{
    nk_program *p = nc->p;
    if (!nc->dead)
        return 0;
    uint32_t *newidx = malloc(((size_t)p->ninstr + 1) * sizeof *newidx);
    if (!newidx)
        return NK_ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        newidx[i] = n;
        if (i >= nc->cap_dead || !nc->dead[i])
            p->instrs[n++] = p->instrs[i];
    }
    newidx[p->ninstr] = n;
    for (uint32_t l = 0; l < p->nloops; l++) {
        nk_loopalloc *la = &nc->la[l];
        for (uint32_t k = 0; k < la->nits; k++)
            la->its[k].start = newidx[la->its[k].start];
        la->end = newidx[la->end];
    }
    p->ninstr = n;
    free(newidx);
    return 0;
}

/* The compile step's first part: folded instructions out, addresses in. */
static int finish(nk_ctx *nc, char *err, size_t errlen)
{
    nk_program *p = nc->p;
    int rc = compact(nc);
    if (rc)
        return rc;
    uint32_t *iters = nk__big_fixed((size_t)p->nbufs * sizeof *iters);
    if (!iters)
        return NK_ENOMEM;
    for (uint32_t b = 0; b < p->nbufs; b++)
        iters[b] = b < nc->cap_bs ? nc->bs[b].iter : 0;
    nk_alloc_info ai = {nc->la, iters};
    rc = nk__allocate(p, &ai, err, errlen);
    free(iters);
    return rc;
}

int nk__trace(const char *name, nk_kernel_fn fn, const nk_array *args, int nargs, const nk_options *opts,
             nk_program **out, char *err, size_t errlen)
{
    return nk__trace_params(name, fn, NULL, args, nargs, opts, out, err, errlen);
}

/* What only tracing needs (per buffer, per loop instance, the location
 * and HBM lookups), freed, with the counts and capacities that describe
 * it (nothing may grow or read it after); the context itself stays
 * (idempotent). */
static void free_trace_state(nk_ctx *nc)
{
    for (int d = 0; d < NK_MAX_LOOP_DEPTH; d++) {
        free(nc->frames[d].its);
        nc->frames[d].its = NULL;
        nc->frames[d].nits = nc->frames[d].cap_its = 0;
    }
    for (uint32_t l = 0; nc->la && l < nc->p->nloops; l++)
        free(nc->la[l].its);
    void **ps[] = {(void **)&nc->la, (void **)&nc->lochash, (void **)&nc->bs, (void **)&nc->dead,
                   (void **)&nc->zpool, (void **)&nc->scalars, (void **)&nc->hbm0};
    for (size_t k = 0; k < sizeof ps / sizeof *ps; k++) {
        free(*ps[k]);
        *ps[k] = NULL;
    }
    nc->cap_la = nc->cap_bs = nc->cap_dead = 0;
    nc->lochash_cap = nc->lochash_n = 0;
    nc->nz = nc->cap_z = 0;
    nc->nhbm0 = nc->cap_hbm0 = 0;
}

int nk__trace_params(const char *name, nk_kernel_fn fn, const nk__kparams *kp, const nk_array *args, int nargs,
                     const nk_options *opts, nk_program **out, char *err, size_t errlen)
{
    const char *target = opts && opts->target ? opts->target : "trn1";
    const nk_arch *arch = opts && opts->arch ? opts->arch : nk__arch_get(target);
    *out = NULL;
    if (err && errlen)
        err[0] = 0;
    if (!arch) {
        if (err)
            snprintf(err, errlen, "unknown target '%s' (known: trn1, trn2)", target);
        return NK_ENOTFOUND;
    }
    if (opts && opts->arch) { /* a caller's table: trusted no more than a file */
        int rc = nk__arch_check(arch, err, errlen);
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
    if (opts && opts->schedule != NK_SCHED_LIST && opts->schedule != NK_SCHED_TRACE_ORDER) {
        if (err)
            snprintf(err, errlen, "schedule %d is neither NK_SCHED_LIST (0) nor NK_SCHED_TRACE_ORDER (1)",
                     opts->schedule);
        rc = NK_EINVAL;
        goto out;
    }
    if (opts && (opts->default_bufs < 0 || opts->default_bufs > NK_MAX_LOOP_BUFS)) {
        if (err)
            snprintf(err, errlen, "default_bufs %d is outside 0..%d (0: the target's default)", opts->default_bufs,
                     NK_MAX_LOOP_BUFS);
        rc = NK_EINVAL;
        goto out;
    }
    p->bufs_default = opts && opts->default_bufs > 0 ? opts->default_bufs : arch->default_bufs;
    if (opts && (opts->max_instructions < 0 || opts->max_instructions > (int64_t)UINT32_MAX - 1 ||
                 opts->max_trace_bytes < 0)) {
        if (err)
            snprintf(err, errlen, "max_instructions %lld (0 to %lld) or max_trace_bytes %lld (0 or more) out of "
                     "range (0: the default)", (long long)opts->max_instructions, (long long)UINT32_MAX - 1,
                     (long long)opts->max_trace_bytes);
        rc = NK_EINVAL;
        goto out;
    }
    nc->max_instrs = opts && opts->max_instructions ? opts->max_instructions : NK_DEFAULT_MAX_INSTRUCTIONS;
    nc->max_bytes = opts && opts->max_trace_bytes ? opts->max_trace_bytes : NK_DEFAULT_MAX_TRACE_BYTES;
    if ((rc = setup_grid(p, opts, arch, err, errlen)))
        goto out;
    rc = NK_ENOMEM;
    nc->p = p;
    nc->arch = arch;
    /* buffer 0 is the invalid id */
    if (nk__grow((void **)&p->bufs, &nc->cap_bufs, 1, sizeof *p->bufs))
        goto out;
    p->nbufs = 1;
    /* the inputs are made at the kernel's declaration when it says where
       that is; else at the pseudo-location "KERNEL:0" */
    nk_loc here = {name ? name : "kernel", 0};
    if (kp && kp->decl.file)
        here = (nk_loc){kp->decl.file, kp->decl.line, NULL};
    int named = kp && kp->names && kp->nnames == nargs && nargs > 0;
    p->input_buf = calloc((size_t)(nargs > 0 ? nargs : 1), sizeof *p->input_buf);
    if (!p->input_buf || (named && !(p->in_name = calloc((size_t)nargs, sizeof *p->in_name))))
        goto out;
    nc->scalars = calloc((size_t)(nargs > 0 ? nargs : 1), sizeof *nc->scalars);
    if (!nc->scalars)
        goto out;
    int ntensors = 0;
    for (int i = 0; i < nargs; i++) {
        if (args[i].ndim == 0) { /* a scalar parameter: its value is part of the program */
            if (!args[i].data || !nk_dtype_size(args[i].dtype)) {
                if (err)
                    snprintf(err, errlen, "argument %d: a scalar argument needs a value and a dtype", i);
                rc = NK_EINVAL;
                goto out;
            }
            float f;
            nk_convert_to_f32(args[i].dtype, args[i].data, &f, 1);
            nc->scalars[i] = f;
            if (args[i].dtype == NK_I32)
                nc->scalars[i] = *(const int32_t *)args[i].data;
            else if (args[i].dtype == NK_U32)
                nc->scalars[i] = *(const uint32_t *)args[i].data;
            targs[i] = (nk_tensor){0};
            targs[i].dtype = (uint8_t)args[i].dtype;
            targs[i].off = i; /* nk_scalar finds the value by argument index */
            targs[i].mem = NK__MEM_SCALAR;
            continue;
        }
        nk_shape s = {args[i].ndim, {0}};
        for (int d = 0; d < args[i].ndim && d < NK_MAXDIM; d++)
            s.d[d] = args[i].shape[d];
        targs[i] = nk_ndarray_at(nc, here, s, args[i].dtype, NK_SHARED_HBM);
        if (nc->status) {
            if (err)
                snprintf(err, errlen, "argument %d: %s", i, nc->err);
            rc = nc->status;
            goto out;
        }
        nk_bufinfo *b = &p->bufs[targs[i].buf];
        b->role = NK_ROLE_INPUT;
        b->index = ntensors;
        b->written = 1;
        if (named && kp->names[i] && kp->names[i][0] && !(p->in_name[ntensors] = strdup(kp->names[i])))
            goto out;
        p->input_buf[ntensors++] = targs[i].buf;
    }
    nc->nargs = nargs;
    p->ninputs = ntensors;
    nc->in_kernel = 1;
    nc->driver_loc = nk__loc(nc, here);
    nc->last = (nk_loc){NULL, 0, NULL}; /* the arguments' place is not a line the kernel traced */
    for (uint32_t k = 0; k < p->ninst && !nc->status; k++) {
        nc->inst = k;
        instance_ids(p, k, nc->pid);
        nc->hbm_seq = 0;
        nc->ret_seq = 0;
        nc->rng_seed = (nk_tensor){0}; /* the seed tile was the previous instance's */
        fn(nc, targs, nargs);
        if (!nc->status && nc->depth > 0)
            fail_left_loop(nc, &nc->frames[nc->depth - 1]);
        if (!nc->status && k > 0 && nc->ret_seq != p->noutputs)
            nk__fail(nc, last_call(nc, here), NK_EINVAL, "this instance returned %d output%s, instance 0 returned "
                     "%d: every instance of a launch grid returns the same tensors", nc->ret_seq,
                     nc->ret_seq == 1 ? "" : "s", p->noutputs);
    }
    check_instances(nc);
    /* a kernel returns its outputs, or (NKI's older style) writes into
     * tensors it was given */
    int wrote_arg = 0;
    for (uint32_t i = 0; i < p->ninstr && !wrote_arg; i++) {
        const nk_instr *in = &p->instrs[i];
        wrote_arg = nk__opnd_mem(p, &in->dst) == NK_SHARED_HBM && in->dst.buf < p->nbufs &&
                    p->bufs[in->dst.buf].role == NK_ROLE_INPUT;
    }
    if (!nc->status && p->noutputs == 0 && !wrote_arg)
        nk__fail(nc, last_call(nc, here), NK_EINVAL, "the kernel returned no output: it ends after this call "
                 "without nk_return of an HBM tensor created with nk_ndarray(..., NK_SHARED_HBM), and writes none "
                 "of its arguments");
    rc = nc->status;
    if (rc) {
        if (err)
            snprintf(err, errlen, "%s", nc->err);
        goto out;
    }
    for (uint32_t b = 1; b < p->nbufs; b++)
        p->bufs[b].written = 0; /* tracing state only */
    rc = finish(nc, err, errlen); /* may add spill buffers */
    if (rc)
        goto out;
    if (p->cdata && nc->cap_cdata < p->nbufs && /* constants' table covers the spills' buffers too */
        nk__grow((void **)&p->cdata, &nc->cap_cdata, p->nbufs, sizeof *p->cdata)) {
        rc = NK_ENOMEM;
        goto out;
    }
    p->hbm_list = calloc(p->nbufs, sizeof *p->hbm_list);
    if (!p->hbm_list) {
        rc = NK_ENOMEM;
        goto out;
    }
    for (uint32_t b = 1; b < p->nbufs; b++)
        if (p->bufs[b].mem == NK_SHARED_HBM)
            p->hbm_list[p->nhbm++] = b;
    p->threads = opts && opts->threads > 0 ? opts->threads : 0;
    free_trace_state(nc); /* the program is complete: the schedule needs none of it */
    rc = nk__schedule(p, opts ? opts->schedule : NK_SCHED_LIST);
    if (rc) {
        if (err)
            snprintf(err, errlen, "scheduling failed: %s", nk_strerror(rc));
        goto out;
    }
    nk__program_assert(p);
    *out = p;
    p = NULL;
out:
    if (rc == NK_ENOMEM && err && !err[0])
        snprintf(err, errlen, "out of memory while tracing");
    if (nc)
        free_trace_state(nc);
    free(nc);
    free(targs);
    nk__program_destroy(p);
    return rc;
}
