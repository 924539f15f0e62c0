/*
 * table.c - the latency table of the Neuron tools for a benchmark result,
 * as `nklab bench` and the Python front-end's nki.benchmark print it: one
 * header and one row (B NC NC-USED WEIGHTS MODE INF/S IRES/S L(1) L(50)
 * L(99) NCL(1) NCL(50) NCL(99) %USER), then how L(50) splits and what the
 * compile and the host simulation took.
 */
#include "nkint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Below this wall time of the timed loop %USER is not shown: the kernel
 * splits a process's CPU time between user and system by clock ticks (1 to
 * 10 ms), too coarse for a shorter loop. */
#define USER_MIN_WALL_S 0.05

double nk_bench_user_percent(const nk_bench_result *r)
{
    return r->wall_s >= USER_MIN_WALL_S ? 100.0 * r->user_s / r->wall_s : -1;
}

static void table(nk_text *t, const char *name, const nk_bench_result *r, double weights)
{
    nk__text_printf(t, "%s on %s: %d iterations after %d warm-up, %s; latencies in microseconds\n", name, r->target,
                   r->iters, r->warmup, r->executed ? "values computed" : "--no-exec, timing only");
    static const char *head[] = {"B", "NC", "NC-USED", "WEIGHTS", "MODE", "INF/S", "IRES/S", "L(1)", "L(50)",
                                 "L(99)", "NCL(1)", "NCL(50)", "NCL(99)", "%USER"};
    char val[14][32];
    snprintf(val[0], 32, "1");
    snprintf(val[1], 32, "1");
    snprintf(val[2], 32, "1");
    snprintf(val[3], 32, "%.0f", weights);
    snprintf(val[4], 32, "%s", r->executed ? "sim" : "model");
    snprintf(val[5], 32, "%.0f", 1e6 / nk_bench_latency_mean(r, NK_LATENCY_E2E));
    snprintf(val[6], 32, "%.0f", 1e6 / nk_bench_latency_percentile(r, NK_LATENCY_NC, 50));
    static const double lp[] = {1, 50, 99};
    for (int i = 0; i < 3; i++) {
        snprintf(val[7 + i], 32, "%.2f", nk_bench_latency_percentile(r, NK_LATENCY_E2E, lp[i]));
        snprintf(val[10 + i], 32, "%.2f", nk_bench_latency_percentile(r, NK_LATENCY_NC, lp[i]));
    }
    if (nk_bench_user_percent(r) >= 0)
        snprintf(val[13], 32, "%.1f", nk_bench_user_percent(r));
    else
        snprintf(val[13], 32, "-");
    int w[14];
    for (int i = 0; i < 14; i++) {
        int a = (int)strlen(head[i]), b = (int)strlen(val[i]);
        w[i] = a > b ? a : b;
    }
    for (int i = 0; i < 14; i++) /* the last column unpadded */
        nk__text_printf(t, "%-*s%s", i < 13 ? w[i] : 0, head[i], i < 13 ? "  " : "\n");
    for (int i = 0; i < 14; i++)
        nk__text_printf(t, "%-*s%s", i < 13 ? w[i] : 0, val[i], i < 13 ? "  " : "\n");
}

static double median_dispatch_us(const nk_bench_result *r)
{
    /* e2e minus its fixed part is the dispatch, in the same order */
    double fixed = (r->host_in_ns + r->device_ns + r->host_out_ns) * 1e-3;
    return nk_bench_latency_percentile(r, NK_LATENCY_E2E, 50) - fixed;
}

static void parts(nk_text *t, const nk_bench_result *r)
{
    nk__text_printf(t, "L(50) = dispatch %.2f (measured) + host I/O %.2f (modelled) + device %.2f (modelled)\n",
                   median_dispatch_us(r), (r->host_in_ns + r->host_out_ns) * 1e-3, r->device_ns * 1e-3);
    nk__text_printf(t, "compiled once");
    if (r->compile_ns > 0)
        nk__text_printf(t, " in %.2f ms", r->compile_ns * 1e-6);
    nk__text_printf(t, " (%zu instructions)", r->ninstr);
    if (r->executed)
        nk__text_printf(t, "; host simulation %.2f ms per iteration (in no latency)", r->exec_ns * 1e-6);
    nk__text_printf(t, "\n");
}

int nk_bench_format_table(const char *name, const nk_bench_result *r, double weights, char **text)
{
    if (!name || !r || !text || r->iters < 1)
        return NK_EINVAL;
    nk_text t = {0};
    table(&t, name, r, weights);
    parts(&t, r);
    if (t.oom) {
        nk__text_free(&t);
        return NK_ENOMEM;
    }
    *text = t.s;
    return 0;
}
