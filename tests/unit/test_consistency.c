/*
 * test_consistency.c - one definition per figure: the summary (text and
 * JSON), the insights (text, analysis JSON), the diff, the terminal
 * timeline, the viewer's data and the JSON export show the value the
 * metrics compute, for every built-in kernel on trn1 and trn2.
 */
#include "test.h"
#include "examples.h"

#include "insights/insights.h"
#include "kernels.h"
#include "profile/profile.h"
#include "view/view.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* fp32 x fp32 matmul, one tile: the ridge point is the fp32 peak's. */
static void mm_f32(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SHARED_HBM);
    nk_tensor a = nk_load(nc, args[0]), b = nk_load(nc, args[1]);
    nk_tensor ps = nk_matmul(nc, a, b, 1);
    nk_store(nc, out, nk_copy(nc, ps, NK_F32));
    nk_return(nc, out);
}

TEST(consistency_ridge_and_intensity_of_an_fp32_matmul)
{
    nk_kernel *k = nk_kernel_new("mm_f32", mm_f32);
    nk_array in[2] = {{NK_F32, 2, {128, 128}, NULL}, {NK_F32, 2, {128, 512}, NULL}};
    const nk_program *p;
    CHECK_INT(nk_kernel_compile(k, in, 2, NULL, &p), 0);
    nk_profile *pr = NULL;
    CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    nk_metrics m;
    CHECK_INT(nk_profile_metrics(pr, &m), 0);
    nk_insights *ins = NULL;
    CHECK_INT(nk__insights_build(pr, &ins), 0);
    if (ins) {
        CHECK_NEAR(ins->a.ridge, m.peak_flops_bandwidth_ratio, 1e-12, 0);
        CHECK_NEAR(ins->a.intensity, m.mm_arithmetic_intensity, 1e-12, 0);
    }
    /* fp32 at a quarter of the bf16 rate [A2]: 23 TFLOPS over 410 GB/s on trn1 */
    const nk_arch *a = nk__arch_get("trn1");
    double fp32_peak = 2.0 * 128 * 128 * a->pe_ghz / a->pe_fp32_factor;
    CHECK_NEAR(m.peak_flops_bandwidth_ratio, fp32_peak / a->hbm_gbps, 1e-12, 0);
    nk__insights_free(ins);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* ---- every surface shows the metrics' value of every figure */

/* The number after "key": in json (searching from `from`), or NAN. */
static double json_num(const char *json, const char *from, const char *key)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *s = strstr(from ? from : json, pat);
    return s ? strtod(s + strlen(pat), NULL) : NAN;
}

/* The value a summary text line shows for a metric, in the metric's unit
 * (seconds for times); *tol is half its last printed digit. NAN when absent. */
static double summary_text_value(const char *text, const char *name, double *tol)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\n  %s ", name);
    const char *s = strstr(text, pat);
    if (!s)
        return NAN;
    char *end;
    double v = strtod(s + strlen(pat), &end);
    const char *dot = NULL;
    for (const char *c = s + strlen(pat); c < end; c++)
        if (*c == '.')
            dot = c;
    double digit = dot ? pow(10, -(double)(end - dot - 1)) : 1;
    while (*end == ' ')
        end++;
    double scale = !strncmp(end, "ns", 2) ? 1e-9 : !strncmp(end, "us", 2) ? 1e-6 : !strncmp(end, "ms", 2) ? 1e-3 : 1;
    *tol = 0.5 * digit * scale * (1 + 1e-9);
    return v * scale;
}

static const char *engine_metric_stem[] = {"tensor", "vector", "scalar", "gpsimd", "sync"};

static void check_surfaces(const char *what, const nk_profile *pr)
{
    nk_metrics m;
    CHECK_INT(nk_profile_metrics(pr, &m), 0);
    char *sum_text = NULL, *sum_json = NULL;
    CHECK_INT(nk_profile_summary(pr, NULL, 0, &sum_text), 0);
    CHECK_INT(nk_profile_summary(pr, NULL, 1, &sum_json), 0);
    nk_text exp = {0}, view = {0}, tline = {0}, itext = {0}, diff = {0};
    nk_export_opts eo = {0};
    CHECK_INT(nk__export_json(pr, &eo, &exp), 0);
    CHECK_INT(nk__view_json(pr, NULL, &view), 0);
    CHECK_INT(nk__view_timeline(pr, 120, &tline), 0);
    nk_insights *ins = NULL;
    CHECK_INT(nk__insights_build(pr, &ins), 0);
    CHECK_INT(nk__insights_diff(pr, "a", pr, "b", &diff), 0);
    nk_text aj = {0};
    if (ins) {
        CHECK_INT(nk__insights_text(ins, &itext), 0);
        CHECK_INT(nk__insights_analysis_json(ins, &aj), 0);
    }
    if (!sum_text || !sum_json || !exp.s || !view.s || !tline.s || !itext.s || !aj.s || !diff.s) {
        CHECK(0);
        goto out;
    }
    /* summary (text, JSON), export JSON, viewer: every metric */
    const char *exp_sum = strstr(exp.s, "\"summary\":"), *view_sum = strstr(view.s, "\"summary\":");
    CHECK(exp_sum && view_sum);
    for (int i = 0; i < nk_metrics_count(); i++) {
        const char *name = nk_metrics_name(i);
        double v = 0, tol = 0;
        nk_metrics_get(&m, name, &v);
        double rel = 1e-9 * fabs(v) + 1e-12; /* the JSON surfaces print 9 (summary) or 12 significant digits */
        double js = json_num(sum_json, NULL, name), ex = json_num(exp.s, exp_sum, name),
               vw = json_num(view.s, view_sum, name), tx = summary_text_value(sum_text, name, &tol);
        if (!(fabs(js - v) <= 10 * rel) || !(fabs(ex - v) <= rel) || !(fabs(vw - v) <= rel) || !(fabs(tx - v) <= tol)) {
            printf("  %s: %s = %.12g; summary json %.12g, export %.12g, viewer %.12g, summary text %.12g\n", what,
                   name, v, js, ex, vw, tx);
            CHECK(0);
        }
    }
    /* insights: engine rows (text, analysis JSON) and the device time; diff */
    char buf[240];
    nk__ins_fmt_ns(buf, sizeof buf, m.total_time * 1e9);
    CHECK_CONTAINS(itext.s, buf);
    CHECK(fabs(json_num(aj.s, NULL, "device_ns") - m.total_time * 1e9) <= 1e-6 * m.total_time * 1e9 + 1e-9);
    for (int e = 0; e < NK_ENGINE_COUNT; e++) {
        double ns, pct, count;
        nk__ins_row_figures(&m, e, &ns, &pct, &count);
        if (e < NK_ENGINE_SYNC) { /* the row figures are the metrics' own fields */
            char key[64];
            double v;
            snprintf(key, sizeof key, "%s_engine_active_time_percent", engine_metric_stem[e]);
            nk_metrics_get(&m, key, &v);
            CHECK_NEAR(pct, v, 1e-12, 0);
        } else if (e == NK_ENGINE_DMA) {
            CHECK_NEAR(pct, m.dma_active_time_percent, 1e-12, 0);
            CHECK_NEAR(ns, m.dma_active_time * 1e9, 1e-6, 0);
        }
        if (!ins->a.ninstr[e])
            continue;
        char t[32];
        nk__ins_fmt_ns(t, sizeof t, ns);
        snprintf(buf, sizeof buf, "  %-7s %6.2f%% active (%s), %.0f instruction", nk_engine_name((nk_engine)e), pct,
                 t, count);
        CHECK_CONTAINS(itext.s, buf);
        snprintf(buf, sizeof buf, "{\"engine\":\"%s\",\"instructions\":%.0f,\"active_ns\":", nk_engine_name((nk_engine)e),
                 count);
        const char *row = strstr(aj.s, buf);
        CHECK(row != NULL);
        if (row) {
            CHECK(fabs(json_num(aj.s, row, "active_ns") - ns) <= 1e-6 * ns + 1e-9);
            CHECK(fabs(json_num(aj.s, row, "active_pct") - pct) <= 1e-9 * pct + 1e-12);
        }
        char lab[32];
        snprintf(lab, sizeof lab, "%s active", nk_engine_name((nk_engine)e));
        snprintf(buf, sizeof buf, "  %-22s %12s %12s", lab, t, t);
        CHECK_CONTAINS(diff.s, buf);
    }
    nk__ins_fmt_ns(buf, sizeof buf, m.dma_queue_busy_time * 1e9);
    if (ins->a.ninstr[NK_ENGINE_DMA]) {
        char want[300];
        snprintf(want, sizeof want, "queues busy (trigger to completion) %.2f%% (%s)", m.dma_queue_busy_time_percent,
                 buf);
        CHECK_CONTAINS(itext.s, want);
        /* the analysis' DMA row is the queue-busy figure */
        CHECK(fabs(ins->a.active_ns[NK_ENGINE_DMA] - m.dma_queue_busy_time * 1e9) <= 1e-6 * ins->a.active_ns[NK_ENGINE_DMA] + 1e-6);
        CHECK(fabs(ins->a.dma_data_ns - m.dma_active_time * 1e9) <= 1e-6 * ins->a.dma_data_ns + 1e-6);
    }
    /* timeline: the DMA figure, and each engine row of a one-core program */
    snprintf(buf, sizeof buf, "DMA active (some transfer moving data) %.1f%%", m.dma_active_time_percent);
    CHECK_CONTAINS(tline.s, buf);
    if (!strstr(tline.s, "NC1 ")) {
        static const char *rows[] = {"Tensor", "Vector", "Scalar", "GpSimd", "Sync"};
        for (int e = 0; e < NK_ENGINE_SYNC; e++) {
            double ns, pct, count;
            nk__ins_row_figures(&m, e, &ns, &pct, &count);
            char pat[16];
            snprintf(pat, sizeof pat, "\n%-10s|", rows[e]);
            const char *r = strstr(tline.s, pat);
            if (!r || !count)
                continue;
            const char *bar = strchr(r + strlen(pat), '|');
            CHECK(bar && fabs(strtod(bar + 1, NULL) - pct) <= 0.05 + 1e-9);
        }
    }
out:
    free(sum_text);
    free(sum_json);
    nk__text_free(&exp);
    nk__text_free(&view);
    nk__text_free(&tline);
    nk__text_free(&itext);
    nk__text_free(&aj);
    nk__text_free(&diff);
    nk__insights_free(ins);
}

TEST(consistency_every_surface_shows_the_metrics_of_every_builtin_kernel)
{
    static const char *targets[] = {"trn1", "trn2"};
    int checked = 0;
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < nk_builtin_kernel_count; i++) {
            const nk_kernel_info *ki = &nk_builtin_kernels[i];
            nk_array args[NK_KERNEL_MAX_ARGS];
            example_shapes(ki, args);
            nk_options o = {0};
            o.target = targets[t];
            memcpy(o.grid, ki->grid, sizeof o.grid);
            nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
            const nk_program *p = NULL;
            nk_profile *pr = NULL;
            int rc = nk_kernel_compile(k, args, ki->nargs, &o, &p);
            if (!rc)
                rc = nk_profile_capture(p, NULL, &pr);
            if (rc)
                printf("  %s on %s: %s\n", ki->name, targets[t], nk_kernel_error(k));
            CHECK_INT(rc, 0);
            if (pr) {
                char what[96];
                snprintf(what, sizeof what, "%s on %s", ki->name, targets[t]);
                check_surfaces(what, pr);
                checked++;
            }
            nk_profile_free(pr);
            nk_kernel_free(k);
        }
    CHECK_INT(checked, 2 * nk_builtin_kernel_count);
}

/* Re-traces softmax with bufs buffers per tile and a schedule. */
static nk_array g_softmax_x = {NK_F32, 2, {2048, 256}, NULL};
static int retime_softmax(void *ctx, int bufs, int schedule, double *device_ns)
{
    nk_kernel *k = ctx;
    nk_options o = {"trn1", bufs, NULL, schedule};
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    int rc = nk_kernel_compile(k, &g_softmax_x, 1, &o, &p);
    if (!rc)
        rc = nk_profile_capture(p, NULL, &pr);
    if (!rc)
        *device_ns = pr->tl->total_ns;
    nk_profile_free(pr);
    return rc;
}

/* A simulated saving is computed once: the text report, the findings' JSON
 * and the viewer's data show the same figures, and the simulation runs once
 * per report whatever the number of findings that use it. */
TEST(consistency_simulated_savings_on_every_surface)
{
    const nk_kernel_info *ki = nk_builtin_kernel("softmax");
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    nk_options o = {"trn1", 0, NULL, NK_SCHED_LIST};
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    CHECK_INT(nk_kernel_compile(k, &g_softmax_x, 1, &o, &p), 0);
    CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    nk_ins_retrace rt = {retime_softmax, k};
    nk_insights *ins = NULL;
    nk_text text = {0}, json = {0}, view = {0};
    uint64_t c0 = 0, c1 = 0, h0 = 0, h1 = 0;
    nk_kernel_cache_stats(k, &c0, &h0);
    if (pr && !nk__insights_build_retrace(pr, &rt, &ins)) {
        nk_kernel_cache_stats(k, &c1, &h1);
        CHECK_INT(nk__insights_text(ins, &text), 0);
        CHECK_INT(nk__insights_json(ins, &json), 0);
        CHECK_INT(nk__insights_view_json_retrace(pr, &rt, &view), 0);
        CHECK(json.s && view.s && strstr(view.s, json.s) != NULL); /* the viewer embeds the same findings */
        int simulated = 0;
        for (uint32_t i = 0; i < ins->n; i++) {
            const nk_finding *f = &ins->f[i];
            const char *sim = strstr(f->suggestion, "Simulated (");
            if (!sim)
                continue;
            simulated++;
            CHECK_CONTAINS(text.s, sim); /* the same sentence, figures and all */
            char num[64];
            snprintf(num, sizeof num, "%.2f -> %.2f us", pr->tl->total_ns / 1000, (pr->tl->total_ns - f->score_ns) / 1000);
            CHECK_CONTAINS(f->suggestion, num);
        }
        CHECK(simulated >= 2);
        /* 3 and 4 buffers traced once each, for every finding: a second
           simulation would find them in the kernel's cache */
        CHECK(c1 - c0 <= 2);
        CHECK_INT(h1 - h0, 0);
    }
    nk__text_free(&text);
    nk__text_free(&json);
    nk__text_free(&view);
    nk__insights_free(ins);
    nk_profile_free(pr);
    nk_kernel_free(k);
}
