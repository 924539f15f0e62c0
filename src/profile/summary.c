/*
 * summary.c - `nklab summary`: the metrics of a profile as aligned text with
 * units followed by the top findings of the insights, or as one JSON object
 * whose keys are exactly the metric names.
 */
#include "profile/profile.h"
#include "insights/insights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A time in seconds scaled to the unit that suits the kernel's length. */
static void fmt_time(nk_text *t, double s, double scale_s)
{
    static const struct { double f; const char *u; } units[] = {{1e9, "ns"}, {1e6, "us"}, {1e3, "ms"}, {1, "s"}};
    int k = scale_s < 1e-6 ? 0 : scale_s < 1e-3 ? 1 : scale_s < 1 ? 2 : 3;
    nk__text_printf(t, "%14.3f %s", s * units[k].f, units[k].u);
}

/* 1536 -> "   (1.50 KiB)"; nothing below one base unit */
static void human(char *buf, size_t n, double v, const char *const *units, double base)
{
    int k = 0;
    while (fabs(v) >= base && units[k + 1]) {
        v /= base;
        k++;
    }
    if (k)
        snprintf(buf, n, "   (%.2f %s)", v, units[k]);
    else
        buf[0] = 0;
}

static void fmt_value(nk_text *t, int kind, double v, double total_s)
{
    static const char *const bytes[] = {"B", "KiB", "MiB", "GiB", "TiB", NULL};
    static const char *const flops[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", NULL};
    char h[48];
    switch (kind) {
    case NK_MK_TIME: fmt_time(t, v, total_s); break;
    case NK_MK_PERCENT: nk__text_printf(t, "%14.2f %%", v); break;
    case NK_MK_BYTES:
        human(h, sizeof h, v, bytes, 1024);
        nk__text_printf(t, "%14.0f B%s", v, h);
        break;
    case NK_MK_FLOPS:
        human(h, sizeof h, v, flops, 1000);
        nk__text_printf(t, "%14.0f FLOP%s", v, h);
        break;
    case NK_MK_RATIO: nk__text_printf(t, "%14.2f FLOP/B", v); break;
    default: nk__text_printf(t, "%14.0f", v); break;
    }
}

/* Section headings before the metric at that index. */
static const char *heading(const char *name)
{
    if (!strcmp(name, "total_time"))
        return "time";
    if (!strcmp(name, "tensor_engine_instruction_count"))
        return "engines";
    if (!strcmp(name, "dma_instruction_count"))
        return "DMA";
    if (!strcmp(name, "hbm_read_bytes"))
        return "memory traffic";
    if (!strcmp(name, "hardware_flops"))
        return "compute";
    return NULL;
}

/* The device time and the launch within it: the start-ups and tear-downs of
 * the core that ends last (a profile of format version 4 or older has no
 * launch regions). */
static void device_time(nk_text *t, const nk_timeline *tl)
{
    const nk_region *down = NULL;
    for (uint32_t k = 0; k < tl->nregions; k++)
        if (tl->regions[k].kind == NK_REGION_TEARDOWN && (!down || tl->regions[k].end > down->end))
            down = &tl->regions[k];
    nk__text_printf(t, "device time   %.3f us", tl->total_ns / 1000);
    if (!down) {
        nk__text_printf(t, " (no launch regions recorded)\n");
        return;
    }
    /* that core's regions: one start-up and tear-down, or one of each per kernel of a sequence */
    double a = 0, b = 0;
    int n = 0;
    for (uint32_t k = 0; k < tl->nregions; k++)
        if (tl->regions[k].core == down->core) {
            double d = tl->regions[k].end - tl->regions[k].start;
            if (tl->regions[k].kind == NK_REGION_STARTUP)
                a += d, n++;
            else
                b += d;
        }
    nk__text_printf(t, ", of which launch %.3f us (start-up %.3f, tear-down %.3f", (a + b) / 1000, a / 1000, b / 1000);
    if (n > 1)
        nk__text_printf(t, "; %d kernel launches", n);
    nk__text_printf(t, "); %.3f us without\n", (tl->total_ns - a - b) / 1000);
}

static void summary_text(nk_text *t, const nk_profile *pr, const char *label, const nk_metrics *m)
{
    const nk_program *p = pr->prog;
    char when[64] = "?";
    time_t secs = (time_t)floor(pr->created_unix);
    struct tm tm;
    if (gmtime_r(&secs, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    if (label)
        nk__text_printf(t, "profile       %s\n", label);
    nk__text_printf(t, "kernel        %s\n", p->kernel);
    nk__text_printf(t, "target        %s (program traced for %s)\n", pr->arch.name, p->target);
    nk__text_printf(t, "instructions  %u\n", p->ninstr);
    static const char *const policy[3] = {"trace order", "list, earliest start", "list, critical path"};
    if (p->sched != NK_SCHED_LIST)
        nk__text_printf(t, "schedule      trace order (asked for)\n");
    else if (p->sched_policy == 0)
        nk__text_printf(t, "schedule      trace order (no list schedule was faster)\n");
    else if (p->trace_order_ns >= 0)
        nk__text_printf(t, "schedule      %s (trace order: %.3f us)\n", policy[p->sched_policy % 3],
                       p->trace_order_ns / 1000);
    else
        nk__text_printf(t, "schedule      %s\n", policy[p->sched_policy % 3]);
    if (p->ninst > 1) { /* SPMD: the grid, and each core's share of the device time */
        nk__text_printf(t, "grid          [");
        for (int a = 0; a < p->grid_ndim; a++)
            nk__text_printf(t, "%s%d%s", a ? ", " : "", p->grid[a],
                           p->grid_nc[a] > 0 ? " (nl.nc major)" : p->grid_nc[a] < 0 ? " (nl.nc minor)" : "");
        nk__text_printf(t, "]: %u program instances on %u NeuronCore%s\n", p->ninst, p->ncores,
                       p->ncores == 1 ? ", one after another" : "s");
        double c0[NK_MAX_CORES], c1[NK_MAX_CORES];
        uint32_t ni[NK_MAX_CORES] = {0};
        for (uint32_t c = 0; c < NK_MAX_CORES; c++) {
            c0[c] = INFINITY;
            c1[c] = 0;
        }
        for (uint32_t k = 0; k < p->ninst; k++)
            ni[nk__inst_core(p, k) % NK_MAX_CORES]++;
        for (uint32_t i = 0; pr->tl && i < p->ninstr; i++) {
            uint32_t c = nk__instr_core(p, &p->instrs[i]) % NK_MAX_CORES;
            c0[c] = fmin(c0[c], pr->tl->instr_start[i]);
            c1[c] = fmax(c1[c], pr->tl->instr_end[i]);
        }
        for (uint32_t c = 0; c < p->ncores && c < NK_MAX_CORES; c++)
            if (c1[c] > 0) {
                char nm[16];
                snprintf(nm, sizeof nm, "NC%u", (unsigned)c);
                nk__text_printf(t, "  %-12s%u instance%s, busy %.3f .. %.3f us\n", nm, ni[c], ni[c] == 1 ? "" : "s",
                               c0[c] / 1000, c1[c] / 1000);
            }
    }
    if (pr->tl)
        device_time(t, pr->tl);
    if (p->nseg > 1 && pr->tl) { /* a sequence: each kernel and its span on the timeline */
        int shown = 0;
        for (uint32_t k = 0; k < p->nseg; k++) {
            double k0 = INFINITY, k1 = 0;
            uint32_t n = 0;
            for (uint32_t i = 0; i < p->ninstr; i++)
                if (p->instrs[i].seg == k) {
                    k0 = fmin(k0, pr->tl->instr_start[i]);
                    k1 = fmax(k1, pr->tl->instr_end[i]);
                    n++;
                }
            if (!n)
                continue;
            nk__text_printf(t, "%s%-20s %u instruction%s, %.3f .. %.3f us\n", shown++ ? "              " : "kernels       ",
                           p->seg_name[k], n, n == 1 ? "" : "s", k0 / 1000, k1 / 1000);
        }
    }
    nk__text_printf(t, "captured      %s by nklab %s\n", when, pr->nklab_version);
    double s;
    for (int i = 0; i < nk_metrics_count(); i++) {
        const char *name = nk_metrics_name(i), *h = heading(name);
        if (h)
            nk__text_printf(t, "\n%s\n", h);
        nk_metrics_get(m, name, &s);
        nk__text_printf(t, "  %-34s", name);
        fmt_value(t, nk__metric_kind(i), s, m->total_time);
        nk__text_printf(t, "\n");
    }
}

static void summary_json(nk_text *t, const nk_metrics *m)
{
    nk__text_printf(t, "{");
    for (int i = 0; i < nk_metrics_count(); i++) {
        double v;
        nk_metrics_get(m, nk_metrics_name(i), &v);
        if (!isfinite(v))
            v = 0; /* JSON has no NaN or infinity; the metrics guard against both */
        int kind = nk__metric_kind(i);
        int integral = kind == NK_MK_COUNT || kind == NK_MK_FLOPS || (kind == NK_MK_BYTES && v == floor(v));
        nk__text_printf(t, "%s\"%s\": ", i ? ", " : "", nk_metrics_name(i));
        if (integral)
            nk__text_printf(t, "%.0f", v);
        else
            nk__text_printf(t, "%.9g", v);
    }
    nk__text_printf(t, "}\n");
}

/* How many findings the text form shows; `nklab insights` shows them all. */
#define SUMMARY_FINDINGS 3

/* The top findings after the metrics, under a blank line; nothing when no
 * rule fired. */
static int top_findings(nk_text *t, const nk_profile *pr)
{
    nk_text f = {0};
    int rc = nk__insights_top(pr, SUMMARY_FINDINGS, &f);
    if (!rc && f.len)
        nk__text_printf(t, "\n%s", f.s);
    nk__text_free(&f);
    return rc;
}

int nk_profile_summary(const nk_profile *pr, const char *label, int json, char **text)
{
    *text = NULL;
    nk_metrics m;
    int rc = nk_profile_metrics(pr, &m);
    if (rc)
        return rc;
    nk_text t = {0};
    if (json)
        summary_json(&t, &m);
    else {
        summary_text(&t, pr, label, &m);
        rc = top_findings(&t, pr);
    }
    if (rc || t.oom || !t.s) {
        nk__text_free(&t);
        return rc ? rc : NK_ENOMEM;
    }
    *text = t.s;
    return 0;
}
