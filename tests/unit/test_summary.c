/*
 * test_summary.c - the text form of `nklab summary` ends with the top three
 * findings of the insights (ranked as `nklab insights` ranks them), the JSON
 * form holds the metrics only, and a profile where no rule fires ends with
 * its metrics.
 */
#include "profile_fixture.h"
#include "insights/insights.h"

#include <stdlib.h>

/* 16 column blocks of 32 float32 (128 B per partition per transfer), each
 * loaded three times and through 8 dependent exps: small DMAs, a reloaded input,
 * static overhead, DMA latency exposed. */
static void k_many(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, j, 16) {
        nk_tensor t = nk_load(nc, nk_ix(nc, in, NK_ALL, nk_r(j * 32, j * 32 + 32)));
        nk_tensor u = nk_load(nc, nk_ix(nc, in, NK_ALL, nk_r(j * 32, j * 32 + 32)));
        nk_tensor v = nk_load(nc, nk_ix(nc, in, NK_ALL, nk_r(j * 32, j * 32 + 32)));
        for (int k = 0; k < 8; k++)
            t = nk_exp(nc, t);
        nk_store(nc, nk_ix(nc, out, NK_ALL, nk_r(j * 32, j * 32 + 32)), nk_add(nc, t, nk_add(nc, u, v)));
    }
    nk_return(nc, out);
}

/* An output and no instruction. */
static void k_empty(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    (void)args;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SHARED_HBM);
    nk_return(nc, out);
}

static nk_profile *capture_fn(const char *name, nk_kernel_fn fn)
{
    nk_array in;
    int64_t shape[2] = {128, 512};
    nk_kernel *k = nk_kernel_new(name, fn);
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    nk_array_alloc(&in, NK_F32, 2, shape);
    if (nk_kernel_compile(k, &in, 1, NULL, &p))
        printf("  compile %s: %s\n", name, nk_kernel_error(k));
    else if (nk_profile_capture(p, NULL, &pr))
        pr = NULL;
    nk_array_free(&in);
    nk_kernel_free(k);
    return pr;
}

/* Position of "N. [severity] title\n" of finding f (numbered n) in text, or NULL. */
static const char *find_heading(const char *text, int n, const nk_finding *f)
{
    char want[256];
    snprintf(want, sizeof want, "\n%d. [%s] %s\n", n, nk__ins_severity_name(f->severity), f->title);
    return strstr(text, want);
}

TEST(summary_text_ends_with_the_top_three_findings)
{
    nk_profile *pr = capture_fn("many", k_many);
    nk_insights *ins = NULL;
    char *text = NULL, *json = NULL;
    CHECK(pr != NULL);
    if (pr) {
        CHECK_INT(nk__insights_build(pr, &ins), 0);
        CHECK_INT(nk_profile_summary(pr, "many.nkp", 0, &text), 0);
        CHECK_INT(nk_profile_summary(pr, "many.nkp", 1, &json), 0);
    }
    if (!ins || !text || !json)
        goto out;
    /* more findings than the summary shows: it shows exactly the first three */
    CHECK(ins->n > 3);
    for (uint32_t k = 0; ins->n <= 3 && k < ins->n; k++)
        printf("    finding %s\n", ins->f[k].key);
    const char *metrics_end = strstr(text, "\n  spill_reload_bytes ");
    const char *head = strstr(text, "\n\nTop findings (nklab insights for all):\n1. [");
    CHECK(metrics_end && head && metrics_end < head);
    const char *prev = head;
    for (int k = 0; k < 3; k++) {
        const char *at = find_heading(text, k + 1, &ins->f[k]);
        if (!at)
            nk_test_fail(__FILE__, __LINE__, "finding %d (%s) is not in the summary", k + 1, ins->f[k].title);
        CHECK(at && prev && at > prev);
        prev = at;
    }
    CHECK(find_heading(text, 4, &ins->f[3]) == NULL);
    CHECK(strstr(text, "\n4. [") == NULL);
    /* each shown finding carries its suggestion */
    for (int k = 0; k < 3; k++)
        CHECK_CONTAINS(text, ins->f[k].suggestion);
    /* the JSON form stays the metrics object */
    CHECK(strstr(json, "Top findings") == NULL);
    CHECK(strstr(json, "finding") == NULL);
    CHECK(json[0] == '{' && !strcmp(json + strlen(json) - 2, "}\n"));
out:
    free(text);
    free(json);
    nk__insights_free(ins);
    nk_profile_free(pr);
}

TEST(summary_text_without_findings_ends_with_the_metrics)
{
    nk_profile *pr = capture_fn("empty", k_empty);
    nk_insights *ins = NULL;
    char *text = NULL;
    CHECK(pr != NULL);
    if (pr) {
        CHECK_INT(nk__insights_build(pr, &ins), 0);
        CHECK_INT(nk_profile_summary(pr, NULL, 0, &text), 0);
    }
    if (ins && text) {
        CHECK_INT(ins->n, 0);
        for (uint32_t k = 0; k < ins->n; k++)
            printf("    finding %s\n", ins->f[k].key);
        CHECK(strstr(text, "Top findings") == NULL);
        const char *last = strstr(text, "\n  spill_reload_bytes ");
        CHECK(last && !strchr(last + 1, '\n')[1]); /* the metric's line is the last */
    }
    free(text);
    nk__insights_free(ins);
    nk_profile_free(pr);
}
