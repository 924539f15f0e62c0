/*
 * opnd.c - operand text through a cache of templates (opnd.h).
 *
 * The key of an instruction is everything its text is made from: the op and
 * its attribute fields (nk__op_attrs: func, alu0, alu1, cmp, axis, flags,
 * imm0, imm1, the affine expression) and, per operand the text shows
 * (nk__view_operands: dst, dst2, the first nsrc sources, each if it has a
 * buffer), what nk__format_ap prints: memory, dtype and shape; for an HBM
 * tensor its buffer (role and index) and, only when negative, its offset
 * (a non-negative one is the " +N" cut out); for a tile its first partition
 * and its address (the buffer's plus the offset). Two instructions with the
 * same key have the same template.
 *
 * The numbers of a template are the non-negative offsets of its HBM
 * operands, in operand order. That is checked on the first instruction of
 * each key against the numbers cut from its formatted text; a key whose
 * numbers do not come out so (some other " +N" in the text), or whose text
 * is near the buffer's size, is formatted anew every time.
 */
#include "view/opnd.h"
#include "view/view.h"
#include "isa/optable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct okey_t {
    uint32_t buf;          /* HBM: the buffer; tiles: 0 (the address says where) */
    uint8_t present, dtype, ndim, mem, part0, pdim, hbm, neg;
    int64_t where;         /* HBM: the offset when negative, else 0; tiles: the address */
    int32_t shape[NK_MAXDIM];
} okey_t;

typedef struct okey {
    uint8_t op, engine, func, alu0, alu1, cmp, nsrc;
    int8_t axis;
    uint16_t flags;
    uint16_t pad;
    uint32_t pad2;
    uint64_t imm0, imm1;
    nk_affine aff;
    okey_t t[NK_OPND_COUNT];
} okey;

typedef struct oent {
    okey key;
    uint32_t tpl;   /* offset of the template in the pool */
    uint8_t literal; /* formatted every time */
} oent;

struct nk_opnd_cache {
    const nk_program *p;
    oent *e;
    uint32_t n, cap;
    uint32_t *slot; /* open addressing: entry + 1, 0 empty */
    uint32_t nslot;
    char *pool;
    size_t len, cap_pool;
    char text[NK_OPND_TEXT], tpl[NK_OPND_TEXT];
};

static void key_of(const nk_program *p, const nk_instr *in, okey *k)
{
    memset(k, 0, sizeof *k);
    k->op = in->op;
    k->engine = in->engine;
    k->func = in->func;
    k->alu0 = in->alu0;
    k->alu1 = in->alu1;
    k->cmp = in->cmp;
    k->nsrc = in->nsrc;
    k->axis = in->axis;
    k->flags = in->flags;
    const nk_xarg *xa = nk__xarg(p, in);
    memcpy(&k->imm0, &xa->imm0, sizeof k->imm0);
    memcpy(&k->imm1, &xa->imm1, sizeof k->imm1);
    k->aff = xa->aff;
    for (int o = 0; o < NK_OPND_COUNT; o++) {
        if (o >= NK_OPND_SRC0 && o - NK_OPND_SRC0 >= in->nsrc)
            continue;
        const nk_opnd *to = nk__op_operand(p, in, o);
        if (!to->buf)
            continue;
        nk_tensor tt = nk__opnd_tensor(p, to);
        const nk_tensor *t = &tt;
        okey_t *kt = &k->t[o];
        kt->present = 1;
        kt->dtype = t->dtype;
        kt->ndim = t->ndim;
        kt->mem = t->mem;
        kt->part0 = t->part0;
        kt->pdim = t->pdim;
        for (int d = 0; d < t->ndim && d < NK_MAXDIM; d++)
            kt->shape[d] = t->shape[d];
        const nk_bufinfo *b = t->buf < p->nbufs ? &p->bufs[t->buf] : NULL;
        if (!b) { /* "?" */
            kt->buf = t->buf;
            continue;
        }
        if (t->mem == NK_SHARED_HBM) {
            kt->hbm = 1;
            kt->buf = t->buf;
            kt->neg = t->off < 0;
            kt->where = t->off < 0 ? t->off : 0;
        } else
            kt->where = b->addr + t->off * nk_dtype_size((nk_dtype)t->dtype);
    }
}

/* The numbers the key's template takes from instruction in. */
static int key_numbers(const nk_program *p, const nk_instr *in, uint64_t *num)
{
    int nn = 0;
    for (int o = 0; o < NK_OPND_COUNT && nn < NK_OPND_NUMS; o++) {
        if (o >= NK_OPND_SRC0 && o - NK_OPND_SRC0 >= in->nsrc)
            continue;
        const nk_opnd *t = nk__op_operand(p, in, o);
        if (t->buf && t->buf < p->nbufs && nk__opnd_mem(p, t) == NK_SHARED_HBM && t->off >= 0)
            num[nn++] = (uint64_t)t->off;
    }
    return nn;
}

static uint64_t hash_key(const okey *k)
{
    const uint8_t *b = (const uint8_t *)k;
    uint64_t h = 0x9e3779b97f4a7c15ull, w;
    size_t i = 0;
    for (; i + 8 <= sizeof *k; i += 8) {
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    for (; i < sizeof *k; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

/* nk__view_operands' text split as the viewer's data splits it: each " +N"
 * (up to NK_OPND_NUMS) to " +\x01" and N. */
static int split_numbers(const char *s, char *tpl, size_t n, uint64_t *num, int maxnum)
{
    size_t k = 0;
    int nn = 0;
    while (*s && k + 2 < n) {
        if (s[0] == ' ' && s[1] == '+' && s[2] >= '0' && s[2] <= '9' && nn < maxnum) {
            uint64_t v = 0;
            s += 2;
            while (*s >= '0' && *s <= '9')
                v = v * 10 + (uint64_t)(*s++ - '0');
            num[nn++] = v;
            tpl[k++] = ' ';
            tpl[k++] = '+';
            if (k + 1 < n)
                tpl[k++] = '\x01';
            continue;
        }
        tpl[k++] = *s++;
    }
    tpl[k] = 0;
    return nn;
}

nk_opnd_cache *nk__opnd_new(const nk_program *p)
{
    nk_opnd_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->p = p;
    c->nslot = 1024;
    c->slot = calloc(c->nslot, sizeof *c->slot);
    if (!c->slot) {
        free(c);
        return NULL;
    }
    return c;
}

void nk__opnd_free(nk_opnd_cache *c)
{
    if (!c)
        return;
    free(c->e);
    free(c->slot);
    free(c->pool);
    free(c);
}

static int grow_slots(nk_opnd_cache *c)
{
    uint32_t ns = c->nslot * 2;
    uint32_t *slot = calloc(ns, sizeof *slot);
    if (!slot)
        return NK_ENOMEM;
    for (uint32_t k = 0; k < c->n; k++) {
        uint32_t h = (uint32_t)hash_key(&c->e[k].key) & (ns - 1);
        while (slot[h])
            h = (h + 1) & (ns - 1);
        slot[h] = k + 1;
    }
    free(c->slot);
    c->slot = slot;
    c->nslot = ns;
    return 0;
}

/* The entry of instruction i (formatting its text into c->text and
 * c->tpl, and its numbers, when it is new or literal): its index, or a
 * negative status. *fresh: c->text and c->tpl hold this instruction's. */
static int64_t lookup(nk_opnd_cache *c, uint32_t i, uint64_t *num, int *nn, int *fresh)
{
    const nk_program *p = c->p;
    const nk_instr *in = &p->instrs[i];
    okey k;
    key_of(p, in, &k);
    uint32_t h = (uint32_t)hash_key(&k) & (c->nslot - 1);
    *fresh = 0;
    for (; c->slot[h]; h = (h + 1) & (c->nslot - 1)) {
        oent *e = &c->e[c->slot[h] - 1];
        if (memcmp(&e->key, &k, sizeof k))
            continue;
        if (e->literal) {
            nk__view_operands(p, i, c->text, sizeof c->text);
            *nn = split_numbers(c->text, c->tpl, sizeof c->tpl, num, NK_OPND_NUMS);
            *fresh = 1;
        } else
            *nn = key_numbers(p, in, num);
        return c->slot[h] - 1;
    }
    /* new: format it, and check that its numbers are its offsets */
    nk__view_operands(p, i, c->text, sizeof c->text);
    *nn = split_numbers(c->text, c->tpl, sizeof c->tpl, num, NK_OPND_NUMS);
    *fresh = 1;
    uint64_t want[NK_OPND_NUMS];
    int nw = key_numbers(p, in, want);
    int literal = nw != *nn || memcmp(want, num, (size_t)nw * sizeof *num) || strlen(c->text) + 64 > sizeof c->text;
    if ((uint64_t)(c->n + 1) * 2 > c->nslot) {
        if (grow_slots(c))
            return NK_ENOMEM;
        h = (uint32_t)hash_key(&k) & (c->nslot - 1);
        while (c->slot[h])
            h = (h + 1) & (c->nslot - 1);
    }
    if (c->n == c->cap) {
        uint32_t cap = c->cap ? 2 * c->cap : 256;
        oent *e = realloc(c->e, cap * sizeof *e);
        if (!e)
            return NK_ENOMEM;
        c->e = e;
        c->cap = cap;
    }
    size_t tl = strlen(c->tpl) + 1;
    if (c->len + tl > c->cap_pool) {
        size_t cap = c->cap_pool ? 2 * c->cap_pool : 65536;
        while (cap < c->len + tl)
            cap *= 2;
        char *pool = realloc(c->pool, cap);
        if (!pool)
            return NK_ENOMEM;
        c->pool = pool;
        c->cap_pool = cap;
    }
    memcpy(c->pool + c->len, c->tpl, tl);
    c->e[c->n] = (oent){k, (uint32_t)c->len, (uint8_t)literal};
    c->len += tl;
    c->slot[h] = c->n + 1;
    return c->n++;
}

int nk__opnd_template(nk_opnd_cache *c, uint32_t i, const char **tpl, uint32_t *id, uint64_t num[NK_OPND_NUMS])
{
    int nn = 0, fresh = 0;
    int64_t k = i < c->p->ninstr ? lookup(c, i, num, &nn, &fresh) : NK_EINVAL;
    if (k < 0)
        return (int)k;
    *id = c->e[k].literal ? UINT32_MAX : (uint32_t)k;
    *tpl = fresh ? c->tpl : c->pool + c->e[k].tpl;
    return nn;
}

void nk__opnd_text(nk_opnd_cache *c, uint32_t i, char *buf, size_t n)
{
    uint64_t num[NK_OPND_NUMS];
    int nn = 0, fresh = 0;
    if (!n)
        return;
    if (n < sizeof c->text) { /* a buffer the text may not fit: cut as nk__view_operands cuts */
        nk__view_operands(c->p, i, buf, n);
        return;
    }
    int64_t k = i < c->p->ninstr ? lookup(c, i, num, &nn, &fresh) : NK_EINVAL;
    if (k < 0) {
        nk__view_operands(c->p, i, buf, n);
        return;
    }
    if (fresh) { /* formatted just now */
        memcpy(buf, c->text, strlen(c->text) + 1);
        return;
    }
    /* the template with the numbers put back */
    const char *t = c->pool + c->e[k].tpl;
    size_t o = 0;
    int j = 0;
    for (; *t && o + 1 < n; t++) {
        if (*t == '\x01' && j < nn) {
            char d[24];
            int w = snprintf(d, sizeof d, "%llu", (unsigned long long)num[j++]);
            for (int q = 0; q < w && o + 1 < n; q++)
                buf[o++] = d[q];
            continue;
        }
        buf[o++] = *t;
    }
    buf[o] = 0;
}
