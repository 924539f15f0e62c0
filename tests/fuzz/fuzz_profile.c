/*
 * fuzz_profile.c - libFuzzer target over the profile reader, the program
 * decoder and every consumer of a profile.
 *
 * The first input byte chooses the entry point (mod 3):
 *   0  a whole profile file: header, version, length, checksum, sections;
 *   1  a profile's sections alone, past the checksum, so mutations reach
 *      every check behind it;
 *   2  the program decoder (the sections inside PROG and program files);
 * and, for 1 and 2, the layout (byte / 3 odd: format version 1, which
 * readers still read; even: the current version).
 * Whatever a decoder accepts must hold up in every later stage: it passes
 * the validators again, yields metrics, the summary (text and JSON), the
 * insights report, the terminal timeline, the viewer's data and page, every
 * export and a comparison with itself, re-encodes to bytes that decode
 * again, and its program times on the model into a valid timeline and, when
 * small enough, executes. Every JSON output must parse. Any failure aborts
 * (a finding).
 */
#include "fuzz_common.h"
#include "insights/insights.h"
#include "view/view.h"

static void require_ok_text(const char *what, int rc, nk_text *t, int json)
{
    if (rc) {
        fprintf(stderr, "fuzz: %s failed: %s\n", what, nk_strerror(rc));
        abort();
    }
    REQUIRE(!t->oom && (t->len == 0 || (t->s && t->len == strlen(t->s))));
    REQUIRE(!json || t->len > 0);
    if (json)
        fz_require_json(what, t->s, t->len);
    nk__text_free(t);
}

/* Every consumer of a valid profile; sel picks the export window. */
static void consume(const nk_profile *pr, uint8_t sel)
{
    nk_text t = {0};
    char *s = NULL;
    REQUIRE(nk_profile_summary(pr, "fuzz", 0, &s) == 0 && s && *s);
    free(s);
    REQUIRE(nk_profile_summary(pr, NULL, 1, &s) == 0 && s);
    fz_require_json("summary --json", s, strlen(s));
    free(s);
    nk_view_summary vs;
    REQUIRE(nk__view_summarize(pr, &vs) == 0);
    REQUIRE(vs.event_count == pr->tl->nevents && vs.nop <= NK_OP_COUNT + 2);
    require_ok_text("the summary's JSON", nk__view_summary_json(pr, &vs, &t), &t, 1);

    /* insights: the report, its JSON, the summary's top findings */
    nk_insights *ins = NULL;
    REQUIRE(nk__insights_build(pr, &ins) == 0 && ins);
    REQUIRE(nk__insights_problems(ins) <= ins->n);
    require_ok_text("insights text", nk__insights_text(ins, &t), &t, 0);
    require_ok_text("insights analysis JSON", nk__insights_analysis_json(ins, &t), &t, 1);
    nk_text findings = {0};
    REQUIRE(nk__insights_json(ins, &findings) == 0 && !findings.oom);
    fz_require_json("insights JSON", findings.s, findings.len);
    nk__insights_free(ins);
    require_ok_text("the viewer's insights", nk__insights_view_json(pr, &t), &t, 1);
    require_ok_text("top findings", nk__insights_top(pr, 3, &t), &t, 0);

    /* the views */
    require_ok_text("timeline", nk__view_timeline(pr, sel & 1 ? 40 : 120, &t), &t, 0);
    require_ok_text("viewer data", nk__view_json(pr, findings.s, &t), &t, 1);
    require_ok_text("viewer page", nk__view_html(pr, sel & 2 ? findings.s : NULL, &t), &t, 0);
    nk__text_free(&findings);

    /* the exports, over the whole kernel or a window of it */
    double T = pr->tl->total_ns;
    nk_export_opts o = {0};
    o.no_flows = sel >> 2 & 1;
    switch (sel >> 3 & 3) {
    case 1: o.from_ns = T / 4, o.to_ns = T * 3 / 4; break;
    case 2: o.from_ns = T / 2, o.to_ns = T; break;
    case 3: o.from_ns = -1, o.to_ns = T + 1; break;
    }
    require_ok_text("perfetto export", nk__export_perfetto(pr, &o, &t), &t, 1);
    require_ok_text("json export", nk__export_json(pr, &o, &t), &t, 1);
    require_ok_text("csv export", nk__export_csv(pr, &o, &t), &t, 0);

    /* compared with itself */
    require_ok_text("diff", nk__insights_diff(pr, "a", pr, "b", &t), &t, 0);
}

static void use_profile(const nk_profile *pr, uint8_t sel)
{
    REQUIRE(nk__timeline_check(pr->tl, pr->prog, &pr->arch, NULL, 0) == 0);
    nk_metrics m;
    REQUIRE(nk_profile_metrics(pr, &m) == 0);
    consume(pr, sel);
    nk_wr w = {0};
    REQUIRE(nk__profile_encode(pr, &w) == 0);
    nk_profile *q = NULL;
    char err[256];
    if (nk__profile_decode(w.p, w.n, &q, err, sizeof err)) {
        fprintf(stderr, "fuzz: a re-encoded profile does not decode: %s\n", err);
        abort();
    }
    REQUIRE(q->tl->nevents == pr->tl->nevents && q->prog->ninstr == pr->prog->ninstr);
    nk_profile_free(q);
    nk__wr_free(&w);
    fz_use_program(pr->prog);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 3;
    uint32_t version = data[0] / 3 % 2 ? 1 : NK_FORMAT_VERSION;
    uint8_t sel = size > 1 ? data[size - 1] : 0;
    data++;
    size--;
    char err[256];
    nk_rd r;
    if (mode == 0) {
        nk_profile *pr = NULL;
        if (!nk__profile_decode(data, size, &pr, err, sizeof err))
            use_profile(pr, sel);
        else
            REQUIRE(pr == NULL && err[0]);
        nk_profile_free(pr);
    } else if (mode == 1) {
        nk_profile *pr = NULL;
        nk__rd_init(&r, data, size, err, sizeof err);
        r.version = version;
        if (!nk__profile_decode_content(&r, &pr))
            use_profile(pr, sel);
        else
            REQUIRE(pr == NULL && err[0]);
        nk_profile_free(pr);
    } else {
        nk_program *p = NULL;
        nk__rd_init(&r, data, size, err, sizeof err);
        r.version = version;
        if (!nk__program_decode(&r, &p))
            fz_use_program(p);
        else
            REQUIRE(p == NULL && err[0]);
        nk__program_destroy(p);
    }
    return 0;
}
