/*
 * viewdata.c - what every view of a profile shares: timeline rows, names and
 * operand text of instructions, the summary computed from the timeline, and
 * writing an output file.
 */
#include "view/view.h"
#include "core/atomicfile.h"
#include "core/vbuf.h"
#include "isa/optable.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const engine_title[NK_ENGINE_COUNT] = {"Tensor", "Vector", "Scalar", "GpSimd", "Sync", "DMA"};

/* ---- rows */

static uint32_t event_core(const nk_view_rows *r, const nk_event *e)
{
    if (r->ncores < 2 || !r->p || e->instr >= r->p->ninstr)
        return 0;
    uint32_t c = nk__instr_core(r->p, &r->p->instrs[e->instr]);
    return c < r->ncores ? c : 0;
}

int nk__view_rows_build(const nk_program *p, const nk_timeline *tl, nk_view_rows *out)
{
    memset(out, 0, sizeof *out);
    out->p = p;
    out->ncores = p && p->ncores > 1 && p->ncores <= NK_MAX_CORES ? p->ncores : 1;
    uint32_t maxq = 0, nc = out->ncores;
    for (uint32_t i = 0; i < tl->nevents; i++)
        if (tl->events[i].engine == NK_ENGINE_DMA && tl->events[i].queue > maxq)
            maxq = tl->events[i].queue;
    out->max_queue = maxq;
    size_t nslot = (size_t)nc * (maxq + 1);
    out->queue_row = calloc(nslot, sizeof *out->queue_row);
    out->engine_row = calloc((size_t)nc * NK_ENGINE_DMA, sizeof *out->engine_row);
    uint8_t *used = calloc(nslot, 1);
    if (!out->queue_row || !out->engine_row || !used)
        goto oom;
    uint32_t nq = 0;
    for (uint32_t i = 0; i < tl->nevents; i++) {
        const nk_event *e = &tl->events[i];
        size_t k = (size_t)event_core(out, e) * (maxq + 1) + e->queue;
        if (e->engine == NK_ENGINE_DMA && !used[k]) {
            used[k] = 1;
            nq++;
        }
    }
    out->row = calloc((size_t)nc * NK_ENGINE_DMA + nq, sizeof *out->row);
    if (!out->row)
        goto oom;
    for (uint32_t c = 0; c < nc; c++) { /* per core: its engines, then its DMA queues with events */
        for (int e = 0; e < NK_ENGINE_DMA; e++) {
            nk_view_row *r = &out->row[out->n];
            r->engine = (uint8_t)e;
            r->core = (uint8_t)c;
            if (nc > 1)
                snprintf(r->name, sizeof r->name, "NC%u %s", (unsigned)c, engine_title[e]);
            else
                snprintf(r->name, sizeof r->name, "%s", engine_title[e]);
            out->engine_row[c * NK_ENGINE_DMA + (uint32_t)e] = out->n++;
        }
        for (uint32_t q = 0; q <= maxq; q++) {
            if (!used[(size_t)c * (maxq + 1) + q])
                continue;
            nk_view_row *r = &out->row[out->n];
            r->engine = NK_ENGINE_DMA;
            r->core = (uint8_t)c;
            r->queue = (uint16_t)q;
            if (nc > 1)
                snprintf(r->name, sizeof r->name, "NC%u DMA q%u", (unsigned)c, (unsigned)q);
            else
                snprintf(r->name, sizeof r->name, "DMA q%u", (unsigned)q);
            out->queue_row[(size_t)c * (maxq + 1) + q] = out->n++;
        }
    }
    free(used);
    return NK_OK;
oom:
    free(used);
    nk__view_rows_free(out);
    return NK_ENOMEM;
}

uint32_t nk__view_event_row(const nk_view_rows *r, const nk_event *e)
{
    uint32_t c = event_core(r, e);
    if (e->engine == NK_ENGINE_DMA)
        return e->queue <= r->max_queue ? r->queue_row[(size_t)c * (r->max_queue + 1) + e->queue] : 0;
    return e->engine < NK_ENGINE_DMA ? r->engine_row[c * NK_ENGINE_DMA + e->engine] : 0;
}

void nk__view_rows_free(nk_view_rows *r)
{
    free(r->row);
    free(r->queue_row);
    free(r->engine_row);
    memset(r, 0, sizeof *r);
}

/* ---- tiles */

int nk__view_tile_uses(const nk_program *p, uint32_t **first, uint32_t **last)
{
    uint32_t *f = nk__big_fixed((size_t)p->nbufs * sizeof *f), *l = nk__big_fixed0(p->nbufs, sizeof *l);
    if (!f || !l) {
        free(f);
        free(l);
        return NK_ENOMEM;
    }
    memset(f, 0xff, (size_t)p->nbufs * sizeof *f);
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        const nk_opnd *ts[5];
        nk__operands(p, in, ts);
        for (int k = 0; k < 5; k++) {
            uint32_t b = ts[k]->buf;
            if (!b || b >= p->nbufs || p->bufs[b].mem == NK_SHARED_HBM)
                continue;
            if (f[b] == UINT32_MAX)
                f[b] = i;
            l[b] = i;
        }
    }
    *first = f;
    *last = l;
    return NK_OK;
}

/* ---- names and operand text */

const char *nk__view_event_name(const nk_program *p, const nk_event *e)
{
    if (e->kind == NK_EV_LOAD_STATIONARY)
        return "LoadStationary";
    if (e->kind == NK_EV_MULTIPLY_MOVING)
        return "MultiplyMoving";
    return e->instr < p->ninstr ? nk__op_name(p->instrs[e->instr].op) : "invalid";
}

typedef struct cursor {
    char *buf;
    size_t n, k;
} cursor;

static void put(cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(cursor *c, const char *fmt, ...)
{
    if (c->k >= c->n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(c->buf + c->k, c->n - c->k, fmt, ap);
    va_end(ap);
    if (w > 0)
        c->k += (size_t)w;
}

static void put_ap(cursor *c, const nk_program *p, const char *name, const nk_opnd *t)
{
    if (!t->buf)
        return;
    char ap[160];
    nk__format_ap(ap, sizeof ap, p, t);
    put(c, "%s%s=%s", c->k ? " " : "", name, ap);
}

/* The attributes first (the op table's text, as the program listing shows
 * it), then every operand under the kernel API's name for it. */
void nk__view_operands(const nk_program *p, uint32_t i, char *buf, size_t n)
{
    cursor c = {buf, n, 0};
    if (!n)
        return;
    buf[0] = 0;
    if (i >= p->ninstr)
        return;
    const nk_instr *in = &p->instrs[i];
    c.k = nk__op_attrs(p, in, buf, n);
    for (int k = 0; k < NK_OPND_COUNT; k++)
        if (k < NK_OPND_SRC0 || k - NK_OPND_SRC0 < in->nsrc)
            put_ap(&c, p, nk__op_operand_name(in, k), nk__op_operand(p, in, k));
}

uint64_t nk__view_instr_bytes(const nk_program *p, uint32_t i)
{
    if (i >= p->ninstr)
        return 0;
    const nk_opnd *t = &p->instrs[i].dst;
    if (!t->buf)
        return 0;
    return (uint64_t)nk__opnd_numel(p, t) * (uint64_t)nk_dtype_size((nk_dtype)nk__opnd_dtype(p, t));
}

const char *nk__view_instr_file(const nk_program *p, uint32_t i, int *line)
{
    *line = 0;
    if (i >= p->ninstr || p->instrs[i].loc >= p->nlocs)
        return "?";
    const nk_locinfo *l = &p->locs[p->instrs[i].loc];
    *line = l->line;
    return l->file < p->nfiles && p->files[l->file] ? p->files[l->file] : "?";
}

/* ---- summary */

static void count_op(nk_view_summary *s, const char *name, double dur)
{
    uint32_t k = 0;
    while (k < s->nop && strcmp(s->op[k].name, name))
        k++;
    if (k == s->nop) {
        if (s->nop == NK_ARRAY_LEN(s->op))
            return;
        snprintf(s->op[k].name, sizeof s->op[k].name, "%s", name);
        s->nop++;
    }
    s->op[k].count++;
    s->op[k].total_ns += dur;
}

int nk__view_summarize(const nk_profile *pr, nk_view_summary *s)
{
    memset(s, 0, sizeof *s);
    if (!pr || !pr->prog || !pr->tl)
        return NK_EINVAL;
    s->instr_count = pr->prog->ninstr;
    s->event_count = pr->tl->nevents;
    for (uint32_t i = 0; i < pr->tl->nevents; i++) {
        const nk_event *e = &pr->tl->events[i];
        count_op(s, nk__view_event_name(pr->prog, e), e->end - e->start);
    }
    return NK_OK;
}

static void key_num(nk_text *t, const char *key, double v, int dec)
{
    nk__vb_str(t, ",\"");
    nk__vb_str(t, key);
    nk__vb_str(t, "\":");
    nk__vb_num(t, v, dec);
}

int nk__view_summary_json(const nk_profile *pr, const nk_view_summary *s, nk_text *t)
{
    nk_metrics m;
    int rc = nk_profile_metrics(pr, &m);
    if (rc)
        return rc;
    nk__vb_str(t, "{\"instruction_count\":");
    nk__vb_u64(t, s->instr_count);
    for (int i = 0; i < nk_metrics_count(); i++) {
        double v = 0;
        nk_metrics_get(&m, nk_metrics_name(i), &v);
        char num[40];
        snprintf(num, sizeof num, "%.12g", isfinite(v) ? v : 0.0);
        nk__vb_str(t, ",\"");
        nk__vb_str(t, nk_metrics_name(i));
        nk__vb_str(t, "\":");
        nk__vb_str(t, num);
    }
    nk__vb_str(t, ",\"units\":{");
    for (int i = 0; i < nk_metrics_count(); i++) {
        nk__vb_str(t, i ? ",\"" : "\"");
        nk__vb_str(t, nk_metrics_name(i));
        nk__vb_str(t, "\":");
        nk__vb_jstr(t, nk_metrics_unit(i));
    }
    nk__vb_str(t, "},\"opcodes\":[");
    for (uint32_t i = 0; i < s->nop; i++) {
        nk__vb_str(t, i ? ",{\"opcode\":" : "{\"opcode\":");
        nk__vb_jstr(t, s->op[i].name);
        key_num(t, "count", (double)s->op[i].count, 0);
        key_num(t, "total_ns", s->op[i].total_ns, 3);
        key_num(t, "average_ns", s->op[i].count ? s->op[i].total_ns / (double)s->op[i].count : 0, 3);
        nk__vb_chr(t, '}');
    }
    nk__vb_str(t, "]}");
    return t->oom ? NK_ENOMEM : NK_OK;
}

/* ---- files */

int nk__view_write_file(const char *path, const nk_text *t)
{
    if (!path || !t || t->oom)
        return NK_EINVAL;
    return nk__file_write_atomic(path, t->s, t->len);
}
