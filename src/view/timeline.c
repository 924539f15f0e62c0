/*
 * timeline.c - the terminal timeline: one row per engine and DMA queue, one
 * character per time column showing how busy the row is in that column, the
 * row's active share at the end, and a time axis.
 */
#include "view/view.h"
#include "core/vbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_W 10   /* row name column */
#define PCT_W 7      /* " 100.0%" */
#define TICK_EVERY 10

/* Busy-fraction levels: 0, (0, 20%), [20, 40%), [40, 60%), [60, 80%), >= 80%. */
static char level(double f)
{
    static const char ch[] = " .:-=#";
    if (f <= 0)
        return ch[0];
    int k = 1 + (int)(f * 5.0);
    return ch[k > 5 ? 5 : k];
}

/* "750ns", "1.25us", "3.5ms" (3 significant digits). */
static void fmt_time(char *buf, size_t n, double ns)
{
    if (ns < 1e3)
        snprintf(buf, n, "%.3gns", ns);
    else if (ns < 1e6)
        snprintf(buf, n, "%.3gus", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, n, "%.3gms", ns / 1e6);
    else
        snprintf(buf, n, "%.3gs", ns / 1e9);
}

/* Adds the coverage of [s, e) to the columns it spans. */
static void cover(double *busy, int cols, double dt, double s, double e)
{
    if (e <= s)
        return;
    int c0 = (int)(s / dt), c1 = (int)(e / dt);
    if (c0 < 0)
        c0 = 0;
    if (c1 >= cols)
        c1 = cols - 1;
    for (int c = c0; c <= c1; c++) {
        double lo = fmax(s, c * dt), hi = fmin(e, (c + 1) * dt);
        if (hi > lo)
            busy[c] += hi - lo;
    }
}

/* Per row and column, busy time: events of a row merged into their union. */
static void fill_busy(const nk_timeline *tl, const nk_view_rows *rows, int cols, double dt, double *busy,
                      double *active)
{
    double *ms = calloc(rows->n, sizeof *ms), *me = calloc(rows->n, sizeof *me);
    if (!ms || !me)
        goto out;
    for (uint32_t i = 0; i < tl->nevents; i++) {
        const nk_event *e = &tl->events[i];
        uint32_t r = nk__view_event_row(rows, e);
        if (e->end <= e->start)
            continue;
        if (e->start > me[r]) {
            cover(busy + (size_t)r * cols, cols, dt, ms[r], me[r]);
            active[r] += me[r] - ms[r];
            ms[r] = e->start;
            me[r] = e->end;
        } else if (e->end > me[r]) {
            me[r] = e->end;
        }
    }
    for (uint32_t r = 0; r < rows->n; r++) {
        cover(busy + (size_t)r * cols, cols, dt, ms[r], me[r]);
        active[r] += me[r] - ms[r];
    }
out:
    free(ms);
    free(me);
}

/* The smallest of 1, 2, 5 x 10^k that is >= x. */
static double nice_step(double x)
{
    double p = pow(10.0, floor(log10(x)));
    return x <= p ? p : x <= 2 * p ? 2 * p : x <= 5 * p ? 5 * p : 10 * p;
}

/* Ticks at round times (a 1-2-5 step, at least TICK_EVERY columns apart) with
 * their labels below; a label that would overlap the previous is skipped. */
static void put_axis(nk_text *t, int lw, int cols, double dt)
{
    char line[1100], labels[1100];
    int w = lw + cols + 2;
    if (w > (int)sizeof line - 1)
        w = (int)sizeof line - 1;
    memset(line, ' ', (size_t)w);
    memset(labels, ' ', (size_t)w);
    line[lw] = '+';
    for (int c = 1; c <= cols; c++)
        line[lw + c] = '-';
    double step = nice_step(dt * TICK_EVERY);
    int next_free = 0;
    for (int k = 0;; k++) {
        int c = (int)floor(k * step / dt + 0.5);
        if (c > cols)
            break;
        line[lw + c] = '+';
        char lab[32];
        fmt_time(lab, sizeof lab, k * step);
        int pos = lw + c, len = (int)strlen(lab);
        if (pos < next_free || pos + len > w)
            continue;
        memcpy(labels + pos, lab, (size_t)len);
        next_free = pos + len + 1;
    }
    int n = w;
    while (n > 0 && line[n - 1] == ' ')
        n--;
    nk__vb_mem(t, line, (size_t)n);
    nk__vb_chr(t, '\n');
    while (w > 0 && labels[w - 1] == ' ')
        w--;
    nk__vb_mem(t, labels, (size_t)w);
    nk__vb_chr(t, '\n');
}

int nk__view_timeline(const nk_profile *pr, int width, nk_text *t)
{
    if (!pr || !pr->prog || !pr->tl || width < 40 || width > 1000)
        return NK_EINVAL;
    const nk_timeline *tl = pr->tl;
    double total = tl->total_ns;
    for (uint32_t i = 0; i < tl->nevents; i++)
        if (tl->events[i].end > total)
            total = tl->events[i].end;
    char tot[32];
    fmt_time(tot, sizeof tot, total);
    char head[256];
    snprintf(head, sizeof head, "%s on %s: %s device time, %u instructions, %u events\n", pr->prog->kernel,
             pr->prog->target, tot, (unsigned)pr->prog->ninstr, (unsigned)tl->nevents);
    nk__vb_str(t, head);
    if (total <= 0) {
        nk__vb_str(t, "(empty timeline)\n");
        return t->oom ? NK_ENOMEM : NK_OK;
    }
    nk_view_rows rows;
    int rc = nk__view_rows_build(pr->prog, tl, &rows);
    if (rc)
        return rc;
    int lw = rows.ncores > 1 ? LABEL_W + 3 : LABEL_W; /* "NC1 Vector" */
    int cols = width - lw - 2 - PCT_W;
    double dt = total / cols;
    double *busy = calloc((size_t)rows.n * cols, sizeof *busy);
    double *active = calloc(rows.n, sizeof *active);
    if (!busy || !active) {
        rc = NK_ENOMEM;
        goto out;
    }
    fill_busy(tl, &rows, cols, dt, busy, active);
    for (uint32_t r = 0; r < rows.n; r++) {
        char lab[LABEL_W + 4];
        snprintf(lab, sizeof lab, "%-*.*s", lw, lw - 1, rows.row[r].name);
        nk__vb_str(t, lab);
        nk__vb_chr(t, '|');
        for (int c = 0; c < cols; c++)
            nk__vb_chr(t, level(busy[(size_t)r * cols + c] / dt));
        char pct[16];
        snprintf(pct, sizeof pct, "|%6.1f%%\n", 100.0 * active[r] / total);
        nk__vb_str(t, pct);
    }
    put_axis(t, lw, cols, dt);
    nk__vb_str(t, "busy per column: ' ' idle  '.' <20%  ':' <40%  '-' <60%  '=' <80%  '#' >=80%\n");
    nk_metrics m; /* the shared figure, as the summary shows it */
    if (!nk_profile_metrics(pr, &m)) {
        char dma[160];
        snprintf(dma, sizeof dma, "DMA active (some transfer moving data) %.1f%%; a DMA row: its queue busy, "
                 "trigger to completion\n", m.dma_active_time_percent);
        nk__vb_str(t, dma);
    }
    rc = t->oom ? NK_ENOMEM : NK_OK;
out:
    free(busy);
    free(active);
    nk__view_rows_free(&rows);
    return rc;
}
