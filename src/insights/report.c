/*
 * report.c - insights as text (the `nklab insights` report, the top findings
 * for `nklab summary`) and as JSON (the findings array, the analysis object,
 * both together for the HTML viewer).
 */
#include "insights/insights.h"
#include "core/atomicfile.h"
#include "core/vbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- formatting */

void nk__ins_fmt_ns(char *buf, size_t n, double ns)
{
    if (ns < 0)
        ns = 0;
    if (ns >= 1e6)
        snprintf(buf, n, "%.3f ms", ns / 1e6);
    else if (ns >= 1e3)
        snprintf(buf, n, "%.2f us", ns / 1e3);
    else
        snprintf(buf, n, "%.0f ns", ns);
}

void nk__ins_fmt_bytes(char *buf, size_t n, double b)
{
    if (b >= 1024.0 * 1024 * 1024)
        snprintf(buf, n, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024)
        snprintf(buf, n, "%.2f MiB", b / (1024.0 * 1024));
    else if (b >= 1024)
        snprintf(buf, n, "%.1f KiB", b / 1024);
    else
        snprintf(buf, n, "%.0f B", b);
}

const char *nk__ins_basename(const nk_program *p, uint32_t file)
{
    if (file >= p->nfiles || !p->files[file])
        return "?";
    const char *s = strrchr(p->files[file], '/');
    return s ? s + 1 : p->files[file];
}

const char *nk__ins_line_text(const nk_profile *pr, uint32_t file, int line, char *buf, size_t n)
{
    if (!pr->sources || file >= pr->prog->nfiles || !pr->sources[file].text || line < 1 || n == 0)
        return NULL;
    const char *s = pr->sources[file].text;
    for (int l = 1; l < line; l++) {
        s = strchr(s, '\n');
        if (!s)
            return NULL;
        s++;
    }
    while (*s == ' ' || *s == '\t')
        s++;
    size_t k = 0;
    while (s[k] && s[k] != '\n' && s[k] != '\r' && k + 1 < n) {
        buf[k] = s[k];
        k++;
    }
    while (k > 0 && (buf[k - 1] == ' ' || buf[k - 1] == '\t'))
        k--;
    buf[k] = 0;
    return buf;
}


/* A JSON number (no NaN or infinity in JSON). */
static void jnum(nk_text *t, double x)
{
    if (x != x || x > 1e300 || x < -1e300)
        x = 0;
    nk__vb_g10(t, x); /* "%.10g", without printf: a path has a step per instruction */
}

static const char *unit_suffix(int unit)
{
    switch (unit) {
    case NK_UNIT_NS: return "_ns";
    case NK_UNIT_BYTES: return "_bytes";
    case NK_UNIT_PERCENT: return "_pct";
    case NK_UNIT_FLOPS: return "_flops";
    default: return "";
    }
}

static void fmt_evidence(const nk_ins_evidence *e, char *buf, size_t n)
{
    char v[32];
    switch (e->unit) {
    case NK_UNIT_NS: nk__ins_fmt_ns(v, sizeof v, e->value); break;
    case NK_UNIT_BYTES: nk__ins_fmt_bytes(v, sizeof v, e->value); break;
    case NK_UNIT_PERCENT: snprintf(v, sizeof v, "%.1f%%", e->value); break;
    case NK_UNIT_RATIO: snprintf(v, sizeof v, "%.2fx", e->value); break;
    default: snprintf(v, sizeof v, "%.6g", e->value); break;
    }
    snprintf(buf, n, "%s %s", e->name, v);
}

static void row_name(const nk_ins_step *s, char *buf, size_t n)
{
    if (s->engine == NK_ENGINE_DMA)
        snprintf(buf, n, "dma q%u", s->queue);
    else
        snprintf(buf, n, "%s", nk_engine_name((nk_engine)s->engine));
}

/* An engine row's shared figures, as the metrics define them (metrics.c):
 * active time (ns; DMA: the union of transfers), its percentage of the
 * device time and the instruction count. */
void nk__ins_row_figures(const nk_metrics *m, int e, double *ns, double *pct, double *count)
{
    const double *f;
    switch (e) {
    case NK_ENGINE_TENSOR: f = &m->tensor_engine_instruction_count; break;
    case NK_ENGINE_VECTOR: f = &m->vector_engine_instruction_count; break;
    case NK_ENGINE_SCALAR: f = &m->scalar_engine_instruction_count; break;
    case NK_ENGINE_GPSIMD: f = &m->gpsimd_engine_instruction_count; break;
    case NK_ENGINE_SYNC: f = &m->sync_engine_instruction_count; break;
    default:
        *count = m->dma_instruction_count;
        *ns = m->dma_active_time * 1e9;
        *pct = m->dma_active_time_percent;
        return;
    }
    *count = f[0];
    *ns = f[1] * 1e9;
    *pct = f[2];
}

/* ---- the text report */

static void text_engines(const nk_insights *ins, nk_text *out)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_metrics *m = &ins->m;
    nk__text_printf(out, "Engines used (active: %% of the device time)\n");
    int used = 0;
    for (int e = 0; e < NK_INS_ROWS; e++) {
        if (!a->ninstr[e])
            continue;
        used++;
        char t[32];
        double ns, pct, count;
        nk__ins_row_figures(m, e, &ns, &pct, &count);
        nk__ins_fmt_ns(t, sizeof t, ns);
        nk__text_printf(out, "  %-7s %6.2f%% active (%s), %.0f instruction%s", nk_engine_name((nk_engine)e), pct, t,
                       count, count == 1 ? "" : "s");
        if (e == NK_ENGINE_DMA) {
            nk__ins_fmt_ns(t, sizeof t, m->dma_queue_busy_time * 1e9);
            nk__text_printf(out, " on %.0f queue%s: data moving; queues busy (trigger to completion) %.2f%% (%s)",
                           m->dma_queue_count, m->dma_queue_count == 1 ? "" : "s", m->dma_queue_busy_time_percent,
                           t);
        }
        nk__text_printf(out, "\n");
    }
    if (!used)
        nk__text_printf(out, "  none: the program has no instructions\n");
}

static void text_overlap(const nk_insights *ins, nk_text *out)
{
    const nk_ins_analysis *a = &ins->a;
    double T = a->total_ns > 0 ? a->total_ns : 1;
    nk__text_printf(out, "Overlap (time both are busy, %% of the time without launch)\n");
    char ov[32];
    nk__ins_fmt_ns(ov, sizeof ov, a->dma_compute_ns);
    if (a->active_ns[NK_ENGINE_DMA] > 0 && a->compute_ns > 0) {
        double shorter = a->compute_ns < a->active_ns[NK_ENGINE_DMA] ? a->compute_ns : a->active_ns[NK_ENGINE_DMA];
        nk__text_printf(out, "  DMA with compute: %s (%.1f%%); %.0f%% of the %s time runs under %s\n", ov,
                       100 * a->dma_compute_ns / T, 100 * a->dma_compute_ns / shorter,
                       a->compute_ns <= a->active_ns[NK_ENGINE_DMA] ? "compute" : "DMA",
                       a->compute_ns <= a->active_ns[NK_ENGINE_DMA] ? "DMA" : "compute");
    } else {
        nk__text_printf(out, "  DMA with compute: nothing to overlap (%s)\n",
                       a->compute_ns > 0 ? "no DMA" : "no compute instructions");
    }
    for (int r = 0; r < NK_INS_ROWS; r++)
        for (int s = r + 1; s < NK_INS_ROWS; s++) {
            if (!a->ninstr[r] || !a->ninstr[s])
                continue;
            nk__text_printf(out, "  %s + %s: %.1f%%%s\n", nk_engine_name((nk_engine)r), nk_engine_name((nk_engine)s),
                           100 * a->overlap_ns[r][s] / T, a->overlap_ns[r][s] <= 0 ? " (never together)" : "");
        }
}

static void text_path(const nk_insights *ins, nk_text *out)
{
    const nk_ins_analysis *a = &ins->a;
    double T = a->total_ns > 0 ? a->total_ns : 1;
    char t[32];
    nk__ins_fmt_ns(t, sizeof t, a->total_ns);
    nk__text_printf(out, "Critical path (the chain that bounds the %s): %u instruction%s\n  ", t, a->npath,
                   a->npath == 1 ? "" : "s");
    enum { MAX_RUNS = 10 };
    uint32_t runs = 0, k = 0;
    while (k < a->npath) {
        uint32_t m = k;
        double busy = 0;
        char name[24], other[24];
        row_name(&a->path[k], name, sizeof name);
        for (; m < a->npath; m++) {
            row_name(&a->path[m], other, sizeof other);
            if (strcmp(name, other))
                break;
            busy += a->path[m].end - a->path[m].start;
        }
        if (runs < MAX_RUNS) {
            nk__ins_fmt_ns(t, sizeof t, busy);
            nk__text_printf(out, "%s%s x%u %s", runs ? " -> " : "", name, m - k, t);
        } else if (runs == MAX_RUNS) {
            nk__text_printf(out, " -> ...");
        }
        runs++;
        k = m;
    }
    nk__text_printf(out, "\n  share:");
    for (int e = 0; e < NK_INS_ROWS; e++)
        if (a->path_busy_ns[e] > 0)
            nk__text_printf(out, " %s %.1f%%,", nk_engine_name((nk_engine)e), 100 * a->path_busy_ns[e] / T);
    nk__text_printf(out, " latency and waits %.1f%%\n", 100 * a->path_wait_ns / T);
    if (a->path_dma_latency_ns > 0)
        nk__text_printf(out, "  DMA start latency (trigger to first byte) on the path: %.1f%%\n",
                       100 * a->path_dma_latency_ns / T);
}

static void text_idle(const nk_insights *ins, nk_text *out)
{
    const nk_ins_analysis *a = &ins->a;
    nk__text_printf(out, "Idle time of each engine before its last instruction, by cause\n");
    int any = 0;
    for (int e = 0; e <= NK_ENGINE_SYNC; e++) {
        double sum = 0;
        for (int c = 0; c < NK_CAUSE_COUNT; c++)
            sum += a->idle_ns[e][c];
        if (!a->ninstr[e] || sum <= 0)
            continue;
        any = 1;
        char t[32];
        nk__ins_fmt_ns(t, sizeof t, sum);
        nk__text_printf(out, "  %-7s %s:", nk_engine_name((nk_engine)e), t);
        const char *sep = " ";
        for (int c = 0; c < NK_CAUSE_COUNT; c++) {
            if (a->idle_ns[e][c] <= 0)
                continue;
            nk__ins_fmt_ns(t, sizeof t, a->idle_ns[e][c]);
            nk__text_printf(out, "%s%s %s", sep, nk__ins_cause_name(c), t);
            sep = ", ";
        }
        nk__text_printf(out, "\n");
    }
    if (!any)
        nk__text_printf(out, "  none\n");
}

static void text_roofline_dma(const nk_insights *ins, nk_text *out)
{
    const nk_ins_analysis *a = &ins->a;
    char b[32];
    nk__ins_fmt_bytes(b, sizeof b, a->hbm_bytes);
    nk__text_printf(out, "Roofline\n");
    if (!a->nmatmul)
        nk__text_printf(out, "  no matmul: 0 FLOPs per byte over %s of HBM traffic; memory side of the ridge "
                            "(%.0f FLOP/B on %s)\n", b, a->ridge, nk__ins_arch(ins->pr)->name);
    else
        nk__text_printf(out, "  %llu matmul%s: %.4g FLOPs over %s of HBM traffic = %.1f FLOP/B against a ridge of "
                            "%.0f FLOP/B (bf16 peak / HBM bandwidth): %s-bound side; %.1f%% of bf16 peak "
                            "achieved\n", (unsigned long long)a->nmatmul, a->nmatmul == 1 ? "" : "s", a->flops, b,
                       a->intensity, a->ridge, a->intensity < a->ridge ? "memory" : "compute",
                       a->peak_flops > 0 ? 100 * a->achieved_flops / a->peak_flops : 0);
    nk__text_printf(out, "DMA\n");
    if (!a->dma_instrs) {
        nk__text_printf(out, "  no loads or stores\n");
        return;
    }
    nk__ins_fmt_bytes(b, sizeof b, a->dma_bytes);
    nk__text_printf(out, "  %llu load/store%s, %s, in %llu per-partition segments of %.0f B on average "
                        "(< 256 B: %llu, < 2 KiB: %llu, < 4 KiB: %llu, >= 4 KiB: %llu) [DMAbw]\n"
                        "  throughput %.1f%% of the DMA peak (all DMA engines at full rate) over the whole kernel\n",
                   (unsigned long long)a->dma_instrs, a->dma_instrs == 1 ? "" : "s", b,
                   (unsigned long long)a->descriptors, a->desc_bytes_avg,
                   (unsigned long long)a->desc_class[NK_DMA_TINY], (unsigned long long)a->desc_class[NK_DMA_SMALL],
                   (unsigned long long)a->desc_class[NK_DMA_FAIR], (unsigned long long)a->desc_class[NK_DMA_LARGE],
                   100 * a->dma_bw_frac);
}

static void text_lines(const nk_insights *ins, nk_text *out)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    enum { MAX_LINES = 10 };
    nk__text_printf(out, "Time by source line (busy time of its instructions, %% of all busy time)\n");
    for (uint32_t k = 0; k < a->nlines && k < MAX_LINES; k++) {
        const nk_ins_line *L = &a->lines[k];
        char where[96], text[120], t[32], eng[64] = "";
        snprintf(where, sizeof where, "%s:%d", nk__ins_basename(p, L->file), L->line);
        nk__ins_fmt_ns(t, sizeof t, L->busy_ns);
        for (int e = 0; e < NK_ENGINE_COUNT; e++)
            if (L->engines & (1u << e))
                snprintf(eng + strlen(eng), sizeof eng - strlen(eng), "%s%s", eng[0] ? "+" : "",
                         nk_engine_name((nk_engine)e));
        nk__text_printf(out, "  %-22s %5.1f%% %10s %5u instr %-12s%s%s\n", where,
                       a->busy_sum_ns > 0 ? 100 * L->busy_ns / a->busy_sum_ns : 0, t, L->ninstr, eng,
                       L->path_ns > 0 ? " (critical) " : " ",
                       nk__ins_line_text(ins->pr, L->file, L->line, text, sizeof text) ? text : "");
    }
    if (a->nlines > MAX_LINES)
        nk__text_printf(out, "  ... %u more lines\n", a->nlines - MAX_LINES);
}

/* The instructions a finding involves that the kernel did not write itself:
 * each kind (op and the construct lowered to it) with its first lines. */
#define MAX_LOWERED 4
#define MAX_LOWERED_LINES 4
typedef struct lowered {
    uint8_t op;
    uint16_t call;
    uint32_t file, n;
    int32_t line[MAX_LOWERED_LINES];
    int nline;
} lowered;

static int finding_lowered(const nk_program *p, const nk_finding *f, lowered *lw)
{
    int n = 0;
    for (uint32_t k = 0; k < f->ninstrs; k++) {
        const nk_instr *in = f->instrs[k] < p->ninstr ? &p->instrs[f->instrs[k]] : NULL;
        if (!in || !nk__instr_lowered_from(p, in) || in->loc >= p->nlocs)
            continue;
        const nk_locinfo *l = &p->locs[in->loc];
        int j = 0;
        while (j < n && (lw[j].op != in->op || lw[j].call != in->call || lw[j].file != l->file))
            j++;
        if (j == n) {
            if (n == MAX_LOWERED)
                continue;
            lw[n++] = (lowered){in->op, in->call, l->file, 0, {0}, 0};
        }
        lowered *w = &lw[j];
        w->n++;
        int seen = 0;
        for (int q = 0; q < w->nline; q++)
            seen |= w->line[q] == l->line;
        if (!seen && w->nline < MAX_LOWERED_LINES)
            w->line[w->nline++] = l->line;
    }
    return n;
}

/* "nc_matmul (lowered from nk_broadcast at layernorm.c:31, 32)" */
static void fmt_lowered(const nk_program *p, const lowered *w, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "%s (lowered from %s at %s:", nk__op_name(w->op), p->calls[w->call - 1],
                                nk__ins_basename(p, w->file));
    for (int q = 0; q < w->nline && k < n; q++)
        k += (size_t)snprintf(buf + k, n - k, "%s%d", q ? ", " : "", w->line[q]);
    if (k < n)
        snprintf(buf + k, n - k, ")");
}

static void text_finding(const nk_insights *ins, const nk_finding *f, int rank, nk_text *out)
{
    const nk_program *p = ins->pr->prog;
    nk__text_printf(out, "%d. [%s] %s\n   %s\n", rank, nk__ins_severity_name(f->severity), f->title, f->detail);
    if (f->nev) {
        nk__text_printf(out, "   evidence:");
        for (int k = 0; k < f->nev; k++) {
            char e[64];
            fmt_evidence(&f->ev[k], e, sizeof e);
            nk__text_printf(out, "%s %s", k ? "," : "", e);
        }
        nk__text_printf(out, "\n");
    }
    for (int k = 0; k < f->nlines; k++) {
        char text[120], t[32];
        const nk_ins_line *L = &f->lines[k];
        nk__ins_fmt_ns(t, sizeof t, L->busy_ns);
        nk__text_printf(out, "   %s %s:%d", k ? "     " : "lines", nk__ins_basename(p, L->file), L->line);
        if (L->ninstr)
            nk__text_printf(out, " (%u instr, %s)", L->ninstr, t);
        if (nk__ins_line_text(ins->pr, L->file, L->line, text, sizeof text))
            nk__text_printf(out, "  %s", text);
        nk__text_printf(out, "\n");
    }
    lowered lw[MAX_LOWERED];
    int nlw = finding_lowered(p, f, lw);
    for (int k = 0; k < nlw; k++) {
        char b[256];
        fmt_lowered(p, &lw[k], b, sizeof b);
        nk__text_printf(out, "   %s %s: %u instr\n", k ? "    " : "not written:", b, lw[k].n);
    }
    if (f->nranges) {
        nk__text_printf(out, "   when:");
        for (int k = 0; k < f->nranges; k++) {
            char s[32], e[32];
            nk__ins_fmt_ns(s, sizeof s, f->ranges[k][0]);
            nk__ins_fmt_ns(e, sizeof e, f->ranges[k][1]);
            nk__text_printf(out, "%s %s - %s", k ? "," : "", s, e);
        }
        nk__text_printf(out, "\n");
    }
    nk__text_printf(out, "   %s %s\n", f->severity == NK_SEV_GOOD ? "next:" : "do:", f->suggestion);
}

int nk__insights_text(const nk_insights *ins, nk_text *out)
{
    const nk_program *p = ins->pr->prog;
    char t[32];
    char d[32];
    nk__ins_fmt_ns(d, sizeof d, ins->m.total_time * 1e9);
    nk__ins_fmt_ns(t, sizeof t, ins->m.total_time_without_launch * 1e9);
    /* the target the timeline was computed on (a what-if table may differ from the program's) */
    nk__text_printf(out, "Insights: kernel %s on %s, %s device time (%s without launch), %u instructions\n\n",
                   p->kernel, nk__ins_arch(ins->pr)->name, d, t, p->ninstr);
    text_engines(ins, out);
    text_overlap(ins, out);
    text_path(ins, out);
    text_idle(ins, out);
    text_roofline_dma(ins, out);
    text_lines(ins, out);
    uint32_t np = nk__insights_problems(ins);
    nk__text_printf(out, "\nFindings: %u problem%s, %u good\n", np, np == 1 ? "" : "s", ins->n - np);
    if (!ins->n)
        nk__text_printf(out, "  no rule fired\n");
    for (uint32_t k = 0; k < ins->n; k++)
        text_finding(ins, &ins->f[k], (int)k + 1, out);
    return out->oom ? NK_ENOMEM : 0;
}

int nk__insights_top(const nk_profile *pr, int n, nk_text *out)
{
    nk_insights *ins;
    int rc = nk__insights_build(pr, &ins);
    if (rc)
        return rc;
    uint32_t want = n > 0 ? (uint32_t)n : 0, shown = ins->n < want ? ins->n : want;
    if (shown)
        nk__text_printf(out, "Top findings (nklab insights for all):\n");
    for (uint32_t k = 0; k < shown; k++)
        text_finding(ins, &ins->f[k], (int)k + 1, out);
    nk__insights_free(ins);
    return out->oom ? NK_ENOMEM : 0;
}

int nk__insights_print_top(FILE *f, const nk_profile *pr, int n)
{
    nk_text out = {0};
    int rc = nk__insights_top(pr, n, &out);
    if (!rc && out.len && fwrite(out.s, 1, out.len, f) != out.len) {
        nk__error_set("%s: %s", f == stdout ? "standard output" : "the report's stream", strerror(errno));
        rc = NK_EIO;
    }
    nk__text_free(&out);
    return rc;
}

/* ---- JSON */

static void json_finding(const nk_insights *ins, const nk_finding *f, nk_text *out)
{
    const nk_program *p = ins->pr->prog;
    nk__text_printf(out, "{\"rule\":");
    nk__vb_jstr(out, nk__ins_rule_name(f->rule));
    nk__text_printf(out, ",\"key\":");
    nk__vb_jstr(out, f->key);
    nk__text_printf(out, ",\"severity\":");
    nk__vb_jstr(out, nk__ins_severity_name(f->severity));
    nk__text_printf(out, ",\"score_ns\":");
    jnum(out, f->score_ns);
    nk__text_printf(out, ",\"share\":");
    jnum(out, ins->a.total_ns > 0 ? f->score_ns / ins->a.total_ns : 0);
    nk__text_printf(out, ",\"title\":");
    nk__vb_jstr(out, f->title);
    nk__text_printf(out, ",\"detail\":");
    nk__vb_jstr(out, f->detail);
    nk__text_printf(out, ",\"suggestion\":");
    nk__vb_jstr(out, f->suggestion);
    nk__text_printf(out, ",\"evidence\":{");
    for (int k = 0; k < f->nev; k++) {
        char key[48];
        snprintf(key, sizeof key, "%s%s", f->ev[k].name, unit_suffix(f->ev[k].unit));
        nk__text_printf(out, "%s", k ? "," : "");
        nk__vb_jstr(out, key);
        nk__text_printf(out, ":");
        jnum(out, f->ev[k].value);
    }
    nk__text_printf(out, "},\"lines\":[");
    for (int k = 0; k < f->nlines; k++) {
        const nk_ins_line *L = &f->lines[k];
        nk__text_printf(out, "%s{\"file\":", k ? "," : "");
        nk__vb_jstr(out, L->file < p->nfiles ? p->files[L->file] : "?");
        nk__text_printf(out, ",\"line\":%d,\"instructions\":%u,\"busy_ns\":", L->line, L->ninstr);
        jnum(out, L->busy_ns);
        nk__text_printf(out, "}");
    }
    nk__text_printf(out, "],\"lowered\":[");
    lowered lw[MAX_LOWERED];
    int nlw = finding_lowered(p, f, lw);
    for (int k = 0; k < nlw; k++) {
        char b[256];
        fmt_lowered(p, &lw[k], b, sizeof b);
        nk__text_printf(out, "%s{\"opcode\":", k ? "," : "");
        nk__vb_jstr(out, nk__op_name(lw[k].op));
        nk__text_printf(out, ",\"call\":");
        nk__vb_jstr(out, p->calls[lw[k].call - 1]);
        nk__text_printf(out, ",\"file\":");
        nk__vb_jstr(out, lw[k].file < p->nfiles ? p->files[lw[k].file] : "?");
        nk__text_printf(out, ",\"lines\":[");
        for (int q = 0; q < lw[k].nline; q++)
            nk__text_printf(out, "%s%d", q ? "," : "", lw[k].line[q]);
        nk__text_printf(out, "],\"instructions\":%u,\"text\":", lw[k].n);
        nk__vb_jstr(out, b);
        nk__text_printf(out, "}");
    }
    nk__text_printf(out, "],\"ranges\":[");
    for (int k = 0; k < f->nranges; k++) {
        nk__text_printf(out, "%s[", k ? "," : "");
        jnum(out, f->ranges[k][0]);
        nk__text_printf(out, ",");
        jnum(out, f->ranges[k][1]);
        nk__text_printf(out, "]");
    }
    nk__text_printf(out, "],\"instrs\":[");
    for (uint32_t k = 0; k < f->ninstrs; k++)
        nk__text_printf(out, "%s%u", k ? "," : "", f->instrs[k]);
    nk__text_printf(out, "],\"instr_count\":%u}", f->ninstrs_total);
}

int nk__insights_json(const nk_insights *ins, nk_text *out)
{
    nk__text_printf(out, "[");
    for (uint32_t k = 0; k < ins->n; k++) {
        nk__text_printf(out, "%s", k ? ",\n" : "");
        json_finding(ins, &ins->f[k], out);
    }
    nk__text_printf(out, "]");
    return out->oom ? NK_ENOMEM : 0;
}

static void json_engines(const nk_metrics *m, const nk_ins_analysis *a, nk_text *out)
{
    static const char *cause_keys[NK_CAUSE_COUNT] = {"dma", "engine", "semaphore", "inorder", "start"};
    nk__text_printf(out, "\"engines\":[");
    for (int e = 0; e < NK_INS_ROWS; e++) {
        double ns, pct, count;
        nk__ins_row_figures(m, e, &ns, &pct, &count);
        nk__text_printf(out, "%s{\"engine\":\"%s\",\"instructions\":%.0f,\"active_ns\":", e ? "," : "",
                       nk_engine_name((nk_engine)e), count);
        jnum(out, ns);
        nk__text_printf(out, ",\"active_pct\":");
        jnum(out, pct);
        if (e == NK_ENGINE_DMA) {
            nk__text_printf(out, ",\"queue_busy_ns\":");
            jnum(out, m->dma_queue_busy_time * 1e9);
            nk__text_printf(out, ",\"queue_busy_pct\":");
            jnum(out, m->dma_queue_busy_time_percent);
        }
        nk__text_printf(out, ",\"critical_path_ns\":");
        jnum(out, a->path_busy_ns[e]);
        nk__text_printf(out, ",\"idle_ns\":{");
        for (int c = 0; c < NK_CAUSE_COUNT; c++) {
            nk__text_printf(out, "%s\"%s\":", c ? "," : "", cause_keys[c]);
            jnum(out, a->idle_ns[e][c]);
        }
        nk__text_printf(out, "}}");
    }
    nk__text_printf(out, "],\"overlap\":{\"dma_compute_ns\":");
    jnum(out, a->dma_compute_ns);
    nk__text_printf(out, ",\"compute_ns\":");
    jnum(out, a->compute_ns);
    nk__text_printf(out, ",\"pairs\":[");
    int first = 1;
    for (int r = 0; r < NK_INS_ROWS; r++)
        for (int s = r + 1; s < NK_INS_ROWS; s++) {
            if (!a->ninstr[r] || !a->ninstr[s])
                continue;
            nk__text_printf(out, "%s{\"a\":\"%s\",\"b\":\"%s\",\"ns\":", first ? "" : ",",
                           nk_engine_name((nk_engine)r), nk_engine_name((nk_engine)s));
            jnum(out, a->overlap_ns[r][s]);
            nk__text_printf(out, "}");
            first = 0;
        }
    nk__text_printf(out, "]}");
}

static void json_path(const nk_ins_analysis *a, nk_text *out)
{
    nk__text_printf(out, "\"critical_path\":{\"wait_ns\":");
    jnum(out, a->path_wait_ns);
    nk__text_printf(out, ",\"dma_latency_ns\":");
    jnum(out, a->path_dma_latency_ns);
    nk__text_printf(out, ",\"steps\":[");
    for (uint32_t k = 0; k < a->npath; k++) { /* as printf would, without it */
        const nk_ins_step *s = &a->path[k];
        nk__vb_str(out, k ? ",{\"instr\":" : "{\"instr\":");
        nk__vb_u64(out, s->instr);
        nk__vb_str(out, ",\"engine\":\"");
        nk__vb_str(out, nk_engine_name((nk_engine)s->engine));
        nk__vb_str(out, "\",\"queue\":");
        nk__vb_u64(out, s->queue);
        nk__vb_str(out, ",\"start\":");
        jnum(out, s->start);
        nk__vb_str(out, ",\"end\":");
        jnum(out, s->end);
        nk__vb_str(out, ",\"wait_ns\":");
        jnum(out, s->wait_ns);
        nk__vb_chr(out, '}');
    }
    nk__text_printf(out, "]}");
}

static void json_roofline_dma(const nk_ins_analysis *a, nk_text *out)
{
    nk__text_printf(out, "\"roofline\":{\"matmuls\":%llu,\"flops\":", (unsigned long long)a->nmatmul);
    jnum(out, a->flops);
    nk__text_printf(out, ",\"hbm_bytes\":");
    jnum(out, a->hbm_bytes);
    nk__text_printf(out, ",\"intensity\":");
    jnum(out, a->intensity);
    nk__text_printf(out, ",\"ridge\":");
    jnum(out, a->ridge);
    nk__text_printf(out, ",\"peak_flops_per_ns\":");
    jnum(out, a->peak_flops);
    nk__text_printf(out, ",\"achieved_flops_per_ns\":");
    jnum(out, a->achieved_flops);
    nk__text_printf(out, "},\"dma\":{\"transfers\":%llu,\"descriptors\":%llu,\"bytes\":",
                   (unsigned long long)a->dma_instrs, (unsigned long long)a->descriptors);
    jnum(out, a->dma_bytes);
    nk__text_printf(out, ",\"descriptor_bytes_avg\":");
    jnum(out, a->desc_bytes_avg);
    nk__text_printf(out, ",\"descriptors_by_size\":{\"lt256\":%llu,\"lt2k\":%llu,\"lt4k\":%llu,\"ge4k\":%llu}",
                   (unsigned long long)a->desc_class[NK_DMA_TINY], (unsigned long long)a->desc_class[NK_DMA_SMALL],
                   (unsigned long long)a->desc_class[NK_DMA_FAIR], (unsigned long long)a->desc_class[NK_DMA_LARGE]);
    nk__text_printf(out, ",\"bandwidth_pct\":");
    jnum(out, 100 * a->dma_bw_frac);
    nk__text_printf(out, ",\"data_moving_ns\":");
    jnum(out, a->dma_data_ns);
    nk__text_printf(out, ",\"latency_idle_ns\":");
    jnum(out, a->dma_latency_gap_ns);
    nk__text_printf(out, "}");
}

static void json_lines(const nk_insights *ins, nk_text *out)
{
    const nk_ins_analysis *a = &ins->a;
    const nk_program *p = ins->pr->prog;
    nk__text_printf(out, "\"lines\":[");
    for (uint32_t k = 0; k < a->nlines; k++) {
        const nk_ins_line *L = &a->lines[k];
        nk__text_printf(out, "%s{\"file\":", k ? "," : "");
        nk__vb_jstr(out, L->file < p->nfiles ? p->files[L->file] : "?");
        nk__text_printf(out, ",\"line\":%d,\"instructions\":%u,\"busy_ns\":", L->line, L->ninstr);
        jnum(out, L->busy_ns);
        nk__text_printf(out, ",\"share\":");
        jnum(out, a->busy_sum_ns > 0 ? L->busy_ns / a->busy_sum_ns : 0);
        nk__text_printf(out, ",\"critical_path_ns\":");
        jnum(out, L->path_ns);
        nk__text_printf(out, "}");
    }
    nk__text_printf(out, "]");
}

int nk__insights_analysis_json(const nk_insights *ins, nk_text *out)
{
    const nk_program *p = ins->pr->prog;
    nk__text_printf(out, "{\"kernel\":");
    nk__vb_jstr(out, p->kernel);
    nk__text_printf(out, ",\"target\":");
    nk__vb_jstr(out, p->target);
    nk__text_printf(out, ",\"device_ns\":");
    jnum(out, ins->m.total_time * 1e9);
    nk__text_printf(out, ",\"total_ns\":");
    jnum(out, ins->a.total_ns);
    nk__text_printf(out, ",");
    json_engines(&ins->m, &ins->a, out);
    nk__text_printf(out, ",");
    json_path(&ins->a, out);
    nk__text_printf(out, ",");
    json_roofline_dma(&ins->a, out);
    nk__text_printf(out, ",");
    json_lines(ins, out);
    nk__text_printf(out, "}");
    return out->oom ? NK_ENOMEM : 0;
}

int nk__insights_view_json(const nk_profile *pr, nk_text *out) { return nk__insights_view_json_retrace(pr, NULL, out); }

int nk__insights_view_json_retrace(const nk_profile *pr, const nk_ins_retrace *rt, nk_text *out)
{
    nk_insights *ins;
    int rc = nk__insights_build_retrace(pr, rt, &ins);
    if (rc)
        return rc;
    nk__text_printf(out, "{\"analysis\":");
    rc = nk__insights_analysis_json(ins, out);
    nk__text_printf(out, ",\"findings\":");
    if (!rc)
        rc = nk__insights_json(ins, out);
    nk__text_printf(out, "}");
    nk__insights_free(ins);
    return rc ? rc : out->oom ? NK_ENOMEM : 0;
}

/* ---- public API (nklab.h) */

int nk_profile_insights(const nk_profile *pr, int json, char **text)
{
    *text = NULL;
    nk_insights *ins;
    int rc = nk__insights_build(pr, &ins);
    if (rc)
        return rc;
    nk_text out = {0};
    rc = json ? nk__insights_json(ins, &out) : nk__insights_text(ins, &out);
    nk__insights_free(ins);
    if (rc) {
        nk__text_free(&out);
        return rc;
    }
    *text = out.s;
    return 0;
}
