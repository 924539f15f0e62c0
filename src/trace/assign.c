/*
 * assign.c - writes into existing tiles, as NKI spells them:
 *
 *   t[k] = nl.load(x[...])         nk_assign(nc, nk_ix(nc, t, nk_i(k)), nk_load(nc, ...))
 *   res_psum += nl.matmul(a, b)    nk_assign_add(nc, res_psum, nk_matmul(nc, a, b, 1))
 *   nl.zeros(..., buffer=nl.psum)  folded into the first accumulating matmul
 *
 * The compiler writes an op's result straight into the tile it is assigned
 * to; so does the tracer: when the value is a fresh tile that only the last
 * instruction wrote and nothing read, that instruction is retargeted at the
 * destination and the fresh tile disappears (using its handle afterwards is
 * an error naming the tile it went to). Otherwise the value is copied.
 *
 * A memset of zeros followed, with nothing touching that region in between,
 * by an accumulating matmul into exactly the same region is what neuronx-cc
 * turns into a matmul that starts the accumulation group: the memset is
 * dropped (removed when tracing ends) and the matmul does not accumulate.
 */
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pending zero memsets, per buffer */

/* Two views of one tile share an element? (partition range x extent: may
 * say yes for interleaved views that do not, never no when they do) */
/* (a is an operand of p, read in place: the pending lists are walked at
 * every instruction.) */
static int views_overlap(const nk_program *p, const nk_opnd *a, const nk_tensor *b)
{
    if (a->buf != b->buf)
        return 0;
    const nk_layout *la = nk__lay(p, a);
    int64_t alo = a->off, ahi = a->off, blo, bhi;
    for (int i = la->mem == NK_SHARED_HBM ? 0 : 1; i < la->ndim; i++) /* as nk__extent */
        if (la->shape[i] > 0)
            ahi += (int64_t)(la->shape[i] - 1) * la->stride[i];
    nk__extent(b, &blo, &bhi);
    int pa0 = a->part0, pa1 = a->part0 + la->shape[0], pb0 = b->part0, pb1 = b->part0 + b->shape[0];
    return pa0 < pb1 && pb0 < pa1 && alo <= bhi && blo <= ahi;
}

static int same_view(const nk_program *p, const nk_opnd *a, const nk_tensor *b)
{
    const nk_layout *la = nk__lay(p, a);
    if (a->buf != b->buf || a->part0 != b->part0 || la->ndim != b->ndim || a->off != b->off)
        return 0;
    for (int d = 0; d < la->ndim; d++)
        if (la->shape[d] != b->shape[d] || (la->shape[d] > 1 && la->stride[d] != b->stride[d]))
            return 0;
    return 1;
}

/* Drops the pending zero memsets of o's tile that instruction i touches. */
static void clear_zero(nk_ctx *nc, const nk_opnd *o, uint32_t i)
{
    if (!o->buf || nk__opnd_mem(nc->p, o) == NK_SHARED_HBM || o->buf >= nc->cap_bs)
        return;
    uint32_t *link = &nc->bs[o->buf].zero;
    if (!*link)
        return;
    nk_tensor tt = nk__opnd_tensor(nc->p, o);
    const nk_tensor *t = &tt;
    while (*link) {
        nk_znode *z = &nc->zpool[*link - 1];
        if (z->instr != i && views_overlap(nc->p, &nc->p->instrs[z->instr].dst, t))
            *link = z->next;
        else
            link = &z->next;
    }
}

/* Brings the pending lists up to date with every recorded instruction. */
static int account(nk_ctx *nc)
{
    nk_program *p = nc->p;
    for (uint32_t i = nc->nacc; i < p->ninstr; i++) {
        if (i < nc->cap_dead && nc->dead[i])
            continue;
        const nk_instr *in = &p->instrs[i];
        clear_zero(nc, &in->dst, i);
        clear_zero(nc, nk__dst2(p, in), i);
        for (int k = 0; k < 3; k++)
            clear_zero(nc, nk__src(p, in, k), i);
        if (in->op == NK_OP_MEMSET && nk__imm0(p, in) == 0.0 && nk__opnd_mem(p, &in->dst) != NK_SHARED_HBM &&
            in->dst.buf < nc->cap_bs) {
            if (nk__grow((void **)&nc->zpool, &nc->cap_z, nc->nz + 1, sizeof *nc->zpool))
                return NK_ENOMEM;
            nc->zpool[nc->nz] = (nk_znode){i, nc->bs[in->dst.buf].zero};
            nc->bs[in->dst.buf].zero = ++nc->nz;
        }
    }
    nc->nacc = p->ninstr;
    return 0;
}

int nk__take_zero(nk_ctx *nc, nk_loc loc, nk_tensor dst)
{
    if (account(nc)) {
        nk__fail(nc, loc, NK_ENOMEM, "out of memory while tracing");
        return 0;
    }
    if (!dst.buf || dst.buf >= nc->cap_bs)
        return 0;
    uint32_t *link = &nc->bs[dst.buf].zero;
    while (*link) {
        nk_znode *z = &nc->zpool[*link - 1];
        if (same_view(nc->p, &nc->p->instrs[z->instr].dst, &dst)) {
            if (nk__grow((void **)&nc->dead, &nc->cap_dead, z->instr + 1, 1)) {
                nk__fail(nc, loc, NK_ENOMEM, "out of memory while tracing");
                return 0;
            }
            nc->dead[z->instr] = 1;
            *link = z->next;
            return 1;
        }
        link = &z->next;
    }
    return 0;
}

/* ---- assignment */

/* The instruction that alone produced value, a whole fresh tile nothing has
 * read yet; NULL when there is none. */
static nk_instr *sole_writer(nk_ctx *nc, nk_tensor v)
{
    nk_program *p = nc->p;
    if (!v.buf || v.buf >= p->nbufs || v.mem == NK_SHARED_HBM || v.pdim || v.part0 || v.off || !p->ninstr)
        return NULL;
    const nk_bufinfo *b = &p->bufs[v.buf];
    const nk_bufstate *st = &nc->bs[v.buf];
    if (b->role != NK_ROLE_TILE || st->moved || v.ndim != b->ndim || nk__numel(&v) != nk__dims_product(b->shape, b->ndim))
        return NULL;
    uint32_t last = p->ninstr - 1;
    if (st->born > last || (last < nc->cap_dead && nc->dead[last]))
        return NULL;
    for (uint32_t i = st->born; i <= last; i++) {
        const nk_instr *in = &p->instrs[i];
        if (i < nc->cap_dead && nc->dead[i])
            continue;
        int uses = nk__dst2(p, in)->buf == v.buf;
        for (int k = 0; k < 3; k++)
            uses |= nk__src(p, in, k)->buf == v.buf;
        if (uses || (in->dst.buf == v.buf && i != last))
            return NULL;
    }
    nk_instr *in = &p->instrs[last];
    return in->dst.buf == v.buf && same_view(p, &in->dst, &v) ? in : NULL;
}

static int same_shape(const nk_tensor *a, const nk_tensor *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

/* Can instruction in write dst instead of the tile it writes now? */
static int retargetable(nk_ctx *nc, const nk_instr *in, const nk_tensor *dst)
{
    nk_tensor cur = nk__opnd_tensor(nc->p, &in->dst);
    if (!same_shape(&cur, dst) || dst->mem == NK_SHARED_HBM)
        return 0;
    switch (in->engine) {
    case NK_ENGINE_TENSOR: /* writes PSUM, fp32 (or a transpose's own dtype) */
        if (dst->mem != NK_PSUM || dst->dtype != cur.dtype)
            return 0;
        break;
    case NK_ENGINE_DMA:    /* moves bytes: no cast */
        return dst->mem == NK_SBUF && dst->dtype == cur.dtype;
    case NK_ENGINE_GPSIMD:
        if (dst->mem == NK_PSUM)
            return 0;
        break;
    default:
        break;
    }
    /* compute engines round to any dtype on write; an engine's partition start rule applies */
    int n = dst->shape[0], p0 = dst->part0;
    return !(n > 0 && ((n > 64 && p0 != 0) || (n > 32 && p0 != 0 && p0 != 64) || p0 % 32 != 0));
}

/* A matmul's accumulation group stays in one PSUM bank (tiles start on one). */
static int ok_bank(nk_ctx *nc, nk_loc loc, const char *op, const nk_tensor *dst)
{
    int64_t lo, hi, bank = nc->arch->psum_bank_bytes;
    nk__extent(dst, &lo, &hi);
    if ((lo * 4) / bank != (hi * 4 + 3) / bank) {
        nk__fail(nc, loc, NK_ECAPACITY, "%s: the accumulation group spans PSUM bytes %lld..%lld per partition, "
                 "crossing a %lld-byte bank", op, (long long)(lo * 4), (long long)(hi * 4 + 3), (long long)bank);
        return 0;
    }
    return 1;
}

static void moved(nk_ctx *nc, nk_loc loc, nk_tensor v, nk_tensor dst)
{
    nc->bs[v.buf].moved = nk__loc(nc, loc) + 1;
    nc->p->bufs[dst.buf].written = 1;
    if (nc->nacc > nc->p->ninstr - 1)
        nc->nacc = nc->p->ninstr - 1; /* account the retargeted instruction again */
}

static int check_pair(nk_ctx *nc, nk_loc loc, const char *op, nk_tensor dst, nk_tensor v)
{
    if (nc->status)
        return 0;
    for (int k = 0; k < 2; k++) {
        nk_tensor t = k ? v : dst;
        const char *what = k ? "the value" : "the destination";
        if (!t.buf || t.buf >= nc->p->nbufs || t.ndim < 1) {
            nk__fail(nc, loc, NK_EINVAL, "%s: %s is not a valid tensor", op, what);
            return 0;
        }
        if (t.pdim) {
            nk__fail(nc, loc, NK_ESHAPE, "%s: %s is a tile array with block axes; index the blocks to get a tile",
                     op, what);
            return 0;
        }
        if (t.buf < nc->cap_bs && nc->bs[t.buf].moved) {
            const nk_locinfo *l = &nc->p->locs[nc->bs[t.buf].moved - 1];
            nk__fail(nc, loc, NK_EINVAL, "%s: %s is a tile whose value was assigned into another tile at %s:%d; use "
                     "that tile", op, what, nc->p->files[l->file], l->line);
            return 0;
        }
    }
    if (nk__numel(&dst) != nk__numel(&v) || dst.shape[0] != v.shape[0]) {
        char a[64], b[64];
        nk__format_shape(a, sizeof a, v.shape, v.ndim);
        nk__format_shape(b, sizeof b, dst.shape, dst.ndim);
        nk__fail(nc, loc, NK_ESHAPE, "%s: a value %s cannot be assigned into %s", op, a, b);
        return 0;
    }
    return 1;
}

void nk_assign_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor value)
{
    const char *op = "nk_assign";
    if (!check_pair(nc, loc, op, dst, value))
        return;
    if (dst.mem == NK_SHARED_HBM) { /* out[...] = tile: a store */
        nk_store_at(nc, loc, dst, value);
        return;
    }
    if (value.mem == NK_SHARED_HBM) { /* tile[...] = x[...]: a load */
        nk_dma_copy_at(nc, loc, dst, value);
        return;
    }
    /* a value assigned into its own tile has nowhere else to move */
    nk_instr *in = value.buf != dst.buf ? sole_writer(nc, value) : NULL;
    if (in && retargetable(nc, in, &dst) && (in->op != NK_OP_MATMUL || ok_bank(nc, loc, op, &dst))) {
        if (nk__emit_opnd(nc, loc, &in->dst, dst))
            return;
        moved(nc, loc, value, dst);
        return;
    }
    nk_isa_tensor_copy_at(nc, loc, dst, value, NK_ENGINE_DEFAULT);
}

void nk_assign_copy_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor value)
{
    if (!check_pair(nc, loc, "nk_assign_copy", dst, value))
        return;
    if (dst.mem == NK_SHARED_HBM)
        nk_store_at(nc, loc, dst, value);
    else if (value.mem == NK_SHARED_HBM)
        nk_dma_copy_at(nc, loc, dst, value);
    else
        nk_isa_tensor_copy_at(nc, loc, dst, value, NK_ENGINE_DEFAULT);
}

void nk_assign_add_at(nk_ctx *nc, nk_loc loc, nk_tensor dst, nk_tensor value)
{
    const char *op = "nk_assign_add";
    if (!check_pair(nc, loc, op, dst, value))
        return;
    /* t += t adds the value to itself: no matmul to retarget */
    nk_instr *in = value.buf != dst.buf ? sole_writer(nc, value) : NULL;
    if (in && in->op == NK_OP_MATMUL && !(in->flags & NK_IF_ACCUMULATE) && retargetable(nc, in, &dst)) {
        if (!ok_bank(nc, loc, op, &dst))
            return;
        uint32_t idx = (uint32_t)(in - nc->p->instrs);
        int fresh = nk__take_zero(nc, loc, dst);
        if (nc->status)
            return;
        in = &nc->p->instrs[idx];
        if (!fresh && !nc->p->bufs[dst.buf].written) {
            char where[256];
            nk__buf_where(nc, dst.buf, where, sizeof where);
            nk__fail(nc, loc, NK_EUNINIT, "%s: accumulates into the PSUM tile allocated at %s that was never "
                     "written (start it with nk_zeros)", op, where);
            return;
        }
        if (nk__emit_opnd(nc, loc, &in->dst, dst))
            return;
        if (!fresh)
            in->flags |= NK_IF_ACCUMULATE;
        moved(nc, loc, value, dst);
        return;
    }
    nk_isa_tensor_tensor_at(nc, loc, dst, dst, value, NK_ALU_ADD, NK_ENGINE_DEFAULT);
}

/* nl.loop_reduce: acc = x op acc, once per iteration of the loop around it;
 * NKI documents it as a tensor_tensor whose destination is also its rhs
 * input (its example passes the accumulator as the lhs: the two agree for
 * the commutative operators a reduction uses). */
void nk_loop_reduce_at(nk_ctx *nc, nk_loc loc, nk_tensor acc, nk_tensor x, nk_alu op)
{
    nk_isa_tensor_tensor_at(nc, loc, acc, x, acc, op, NK_ENGINE_DEFAULT);
}
