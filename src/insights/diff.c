/*
 * diff.c - two profiles side by side (`nklab diff a.nkp b.nkp`).
 *
 * Source lines are matched by file basename and the line's text, so a line
 * that moved (code added above it) still meets itself; repeated identical
 * lines pair up in order. Lines whose text is unknown (no source captured)
 * fall back to basename and line number.
 */
#include "insights/insights.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct dline {
    const char *base;
    int line;
    char text[160];
    int has_text;
    int occ;          /* occurrence of this (base, text) among the profile's lines, in line order */
    double busy_ns, path_ns;
    uint32_t ninstr;
    int32_t match;    /* index into the other side, -1 none */
} dline;

typedef struct dside {
    const char *name;
    nk_insights *ins;
    dline *l;
    uint32_t n;
    double op_ns[NK_OP_COUNT];
    uint64_t op_count[NK_OP_COUNT];
} dside;

static int cmp_dline(const void *x, const void *y)
{
    const dline *a = x, *b = y;
    int c = strcmp(a->base, b->base);
    if (c)
        return c;
    return a->line < b->line ? -1 : a->line > b->line;
}

static int side_build(dside *s, const nk_profile *pr, const char *name)
{
    s->name = name;
    int rc = nk__insights_build(pr, &s->ins);
    if (rc)
        return rc;
    const nk_ins_analysis *a = &s->ins->a;
    const nk_program *p = pr->prog;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        s->op_count[p->instrs[i].op % NK_OP_COUNT]++;
        s->op_ns[p->instrs[i].op % NK_OP_COUNT] += a->busy[i];
    }
    s->l = calloc(a->nlines ? a->nlines : 1, sizeof *s->l);
    if (!s->l)
        return NK_ENOMEM;
    s->n = a->nlines;
    for (uint32_t k = 0; k < a->nlines; k++) {
        dline *d = &s->l[k];
        d->base = nk__ins_basename(p, a->lines[k].file);
        d->line = a->lines[k].line;
        d->has_text = nk__ins_line_text(pr, a->lines[k].file, d->line, d->text, sizeof d->text) != NULL;
        d->busy_ns = a->lines[k].busy_ns;
        d->path_ns = a->lines[k].path_ns;
        d->ninstr = a->lines[k].ninstr;
        d->match = -1;
    }
    qsort(s->l, s->n, sizeof *s->l, cmp_dline);
    for (uint32_t k = 0; k < s->n; k++)
        for (uint32_t j = 0; j < k; j++)
            if (s->l[j].has_text && s->l[k].has_text && !strcmp(s->l[j].base, s->l[k].base) &&
                !strcmp(s->l[j].text, s->l[k].text))
                s->l[k].occ++;
    return 0;
}

static void side_free(dside *s)
{
    nk__insights_free(s->ins);
    free(s->l);
}

static void match_lines(dside *a, dside *b)
{
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < a->n; i++) {
            dline *x = &a->l[i];
            if (x->match >= 0)
                continue;
            for (uint32_t j = 0; j < b->n; j++) {
                dline *y = &b->l[j];
                if (y->match >= 0 || strcmp(x->base, y->base))
                    continue;
                int same = pass == 0 ? x->has_text && y->has_text && !strcmp(x->text, y->text) && x->occ == y->occ
                                     : (!x->has_text || !y->has_text) && x->line == y->line;
                if (same) {
                    x->match = (int32_t)j;
                    y->match = (int32_t)i;
                    break;
                }
            }
        }
}

static void pct(char *buf, size_t n, double a, double b)
{
    if (a > 0)
        snprintf(buf, n, "(%+.1f%%)", 100 * (b - a) / a);
    else
        buf[0] = 0;
}

static void row_ns(nk_text *out, const char *label, double a, double b)
{
    char x[32], y[32], d[32], p[32];
    nk__ins_fmt_ns(x, sizeof x, a);
    nk__ins_fmt_ns(y, sizeof y, b);
    nk__ins_fmt_ns(d, sizeof d, fabs(b - a));
    pct(p, sizeof p, a, b);
    nk__text_printf(out, "  %-22s %12s %12s   %s%-11s %s\n", label, x, y, b < a ? "-" : "+", d, p);
}

static void diff_overview(nk_text *out, const dside *A, const dside *B)
{
    const nk_ins_analysis *a = &A->ins->a, *b = &B->ins->a;
    nk__text_printf(out, "  %-22s %12s %12s   %s\n", "", "a", "b", "delta (b - a)");
    const nk_metrics *ma = &A->ins->m, *mb = &B->ins->m;
    row_ns(out, "device time", ma->total_time * 1e9, mb->total_time * 1e9);
    row_ns(out, "time without launch", ma->total_time_without_launch * 1e9, mb->total_time_without_launch * 1e9);
    for (int e = 0; e < NK_INS_ROWS; e++) {
        if (!a->ninstr[e] && !b->ninstr[e])
            continue;
        char label[32];
        double xa, xb, pa, pb, ca, cb;
        nk__ins_row_figures(ma, e, &xa, &pa, &ca);
        nk__ins_row_figures(mb, e, &xb, &pb, &cb);
        snprintf(label, sizeof label, "%s active", nk_engine_name((nk_engine)e));
        row_ns(out, label, xa, xb);
    }
    row_ns(out, "DMA queues busy", ma->dma_queue_busy_time * 1e9, mb->dma_queue_busy_time * 1e9);
    row_ns(out, "DMA with compute", a->dma_compute_ns, b->dma_compute_ns);
    row_ns(out, "DMA latency idle", a->dma_latency_gap_ns, b->dma_latency_gap_ns);
    char x[32], y[32], d[32], p[32];
    nk__ins_fmt_bytes(x, sizeof x, a->dma_bytes);
    nk__ins_fmt_bytes(y, sizeof y, b->dma_bytes);
    nk__ins_fmt_bytes(d, sizeof d, fabs(b->dma_bytes - a->dma_bytes));
    pct(p, sizeof p, a->dma_bytes, b->dma_bytes);
    nk__text_printf(out, "  %-22s %12s %12s   %s%-11s %s\n", "DMA bytes", x, y, b->dma_bytes < a->dma_bytes ? "-" : "+",
                   d, p);
    nk__text_printf(out, "  %-22s %12.0f %12.0f   %+.0f\n", "DMA bytes/partition/desc", a->desc_bytes_avg,
                   b->desc_bytes_avg, b->desc_bytes_avg - a->desc_bytes_avg);
    nk__text_printf(out, "  %-22s %12u %12u   %+lld\n", "instructions", A->ins->pr->prog->ninstr,
                   B->ins->pr->prog->ninstr, (long long)B->ins->pr->prog->ninstr - (long long)A->ins->pr->prog->ninstr);
}

static void diff_ops(nk_text *out, const dside *A, const dside *B)
{
    nk__text_printf(out, "\nBy opcode (busy: sum of its instructions' time)\n  %-16s %8s %8s %12s %12s   %s\n", "", "count a",
                   "count b", "time a", "time b", "delta");
    for (int o = 0; o < NK_OP_COUNT; o++) {
        if (!A->op_count[o] && !B->op_count[o])
            continue;
        char x[32], y[32], d[32];
        nk__ins_fmt_ns(x, sizeof x, A->op_ns[o]);
        nk__ins_fmt_ns(y, sizeof y, B->op_ns[o]);
        nk__ins_fmt_ns(d, sizeof d, fabs(B->op_ns[o] - A->op_ns[o]));
        nk__text_printf(out, "  %-16s %8llu %8llu %12s %12s   %s%s\n", nk__op_name(o),
                       (unsigned long long)A->op_count[o], (unsigned long long)B->op_count[o], x, y,
                       B->op_ns[o] < A->op_ns[o] ? "-" : "+", d);
    }
}

static void line_row(nk_text *out, const dline *x, const dline *y)
{
    char wa[64] = "-", wb[64] = "-", ta[32], tb[32], d[32], pa[32], pb[32];
    if (x)
        snprintf(wa, sizeof wa, "%s:%d", x->base, x->line);
    if (y)
        snprintf(wb, sizeof wb, "%s:%d", y->base, y->line);
    double va = x ? x->busy_ns : 0, vb = y ? y->busy_ns : 0;
    nk__ins_fmt_ns(ta, sizeof ta, va);
    nk__ins_fmt_ns(tb, sizeof tb, vb);
    nk__ins_fmt_ns(d, sizeof d, fabs(vb - va));
    nk__ins_fmt_ns(pa, sizeof pa, x ? x->path_ns : 0);
    nk__ins_fmt_ns(pb, sizeof pb, y ? y->path_ns : 0);
    const dline *t = y && y->has_text ? y : x && x->has_text ? x : NULL;
    nk__text_printf(out, "  %-20s %-20s %10s %10s  %s%-10s %10s %10s  %s\n", wa, wb, x ? ta : "-", y ? tb : "-",
                   vb < va ? "-" : "+", d, x ? pa : "-", y ? pb : "-", t ? t->text : "");
}

static void diff_lines(nk_text *out, const dside *A, const dside *B)
{
    nk__text_printf(out, "\nBy source line (matched by file name and line text; busy: sum of its instructions' "
                        "time, path: time on the critical path)\n  %-20s %-20s %10s %10s  %-11s %10s %10s\n",
                   "line in a", "line in b", "busy a", "busy b", "delta", "path a", "path b");
    for (uint32_t i = 0; i < A->n; i++)
        line_row(out, &A->l[i], A->l[i].match >= 0 ? &B->l[A->l[i].match] : NULL);
    for (uint32_t j = 0; j < B->n; j++)
        if (B->l[j].match < 0)
            line_row(out, NULL, &B->l[j]);
}

static const nk_finding *find_key(const nk_insights *ins, const char *key)
{
    for (uint32_t k = 0; k < ins->n; k++)
        if (!strcmp(ins->f[k].key, key))
            return &ins->f[k];
    return NULL;
}

static void diff_findings(nk_text *out, const dside *A, const dside *B)
{
    nk__text_printf(out, "\nFindings\n");
    int any = 0;
    for (uint32_t k = 0; k < A->ins->n; k++) {
        const nk_finding *f = &A->ins->f[k];
        if (!find_key(B->ins, f->key)) {
            nk__text_printf(out, "  gone:    [%s] %s: %s\n", nk__ins_severity_name(f->severity), f->key, f->title);
            any = 1;
        }
    }
    for (uint32_t k = 0; k < B->ins->n; k++) {
        const nk_finding *f = &B->ins->f[k];
        const nk_finding *g = find_key(A->ins, f->key);
        if (!g)
            nk__text_printf(out, "  new:     [%s] %s: %s\n", nk__ins_severity_name(f->severity), f->key, f->title);
        else
            nk__text_printf(out, "  both:    [%s -> %s] %s: %s\n", nk__ins_severity_name(g->severity),
                           nk__ins_severity_name(f->severity), f->key, f->title);
        any = 1;
    }
    if (!any)
        nk__text_printf(out, "  none in either profile\n");
}

int nk__insights_diff(const nk_profile *pa, const char *name_a, const nk_profile *pb, const char *name_b,
                     nk_text *out)
{
    dside A = {0}, B = {0};
    int rc = side_build(&A, pa, name_a ? name_a : "a");
    if (!rc)
        rc = side_build(&B, pb, name_b ? name_b : "b");
    if (rc)
        goto done;
    match_lines(&A, &B);
    /* each on the target its timeline was computed on (what-if tables may differ from the programs') */
    nk__text_printf(out, "a: %s (kernel %s on %s)\nb: %s (kernel %s on %s)\n\n", A.name, pa->prog->kernel,
                   nk__ins_arch(pa)->name, B.name, pb->prog->kernel, nk__ins_arch(pb)->name);
    diff_overview(out, &A, &B);
    diff_ops(out, &A, &B);
    diff_lines(out, &A, &B);
    diff_findings(out, &A, &B);
    rc = out->oom ? NK_ENOMEM : 0;
done:
    side_free(&A);
    side_free(&B);
    return rc;
}

int nk_profile_diff(const nk_profile *a, const char *name_a, const nk_profile *b, const char *name_b, char **text)
{
    *text = NULL;
    if (!a || !b)
        return NK_EINVAL;
    nk_text out = {0};
    int rc = nk__insights_diff(a, name_a, b, name_b, &out);
    if (rc) {
        nk__text_free(&out);
        return rc;
    }
    *text = out.s;
    return 0;
}
