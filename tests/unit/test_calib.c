/*
 * test_calib.c - the calibration micro-benchmarks: each documented figure
 * within its stated tolerance on trn1 and trn2, the closed forms equal to the
 * simulation (so the fit fits the model itself), a fit that recovers a known
 * table from latencies timed on it, and the results reader's errors.
 *
 * Figures written here from the sources, not read from the table: dependent
 * 1-element ScalarE instructions ~189 ns apart on trn1 [PG]; a 128x128x512
 * bf16 matmul ~512 PE cycles [A2]; ~1300 ns from semaphore to DMA start and
 * 17 B/ns per DMA engine on trn1 [DMAbw].
 */
#include "test.h"
#include "calib/calib.h"

#include <stdlib.h>

static const nk_calib_point *point(const char *id)
{
    for (size_t i = 0; i < nk__calib_npoints; i++)
        if (!strcmp(nk__calib_points[i].id, id))
            return &nk__calib_points[i];
    return NULL;
}

static double per_rep(const char *target, const char *id)
{
    double v = -1;
    const nk_calib_point *pt = point(id);
    CHECK(pt != NULL);
    if (pt)
        CHECK_INT(nk__calib_simulate(nk__arch_get(target), pt, &v), 0);
    return v;
}

/* A table unlike both targets in every constant the suite fits. */
static nk_arch known_table(void)
{
    nk_arch a = *nk__arch_get("trn1");
    a.act_ghz = 1.5, a.dve_ghz = 1.0, a.pool_ghz = 1.3, a.pe_ghz = 3.0;
    a.static_overhead_cycles = 120, a.min_ii_cycles = 56, a.sram_access_cycles = 70, a.pool_fixed_cycles = 170;
    a.pe_mm_init_cycles = 72, a.pe_fp32_factor = 3.5, a.sem_latency_ns = 80;
    a.dma_engine_gbps = 20, a.dma_eff_half_bytes = 300, a.dma_latency_ns = 1500, a.hbm_gbps = 380;
    return a;
}

TEST(calib_every_documented_figure_within_its_tolerance)
{
    int checked = 0;
    for (size_t i = 0; i < nk__calib_npoints; i++) {
        const nk_calib_point *pt = &nk__calib_points[i];
        for (int t = 0; t < 2; t++) {
            const nk_arch *a = nk__arch_get(t ? "trn2" : "trn1");
            double ns;
            CHECK_INT(nk__calib_simulate(a, pt, &ns), 0);
            double v = nk__calib_in_unit(a, pt, ns);
            int w = nk__calib_within(pt, t, v);
            if (w == 0)
                nk_test_fail(__FILE__, __LINE__, "%s on %s: model %.2f, documented %.2f %s", pt->id, a->name, v,
                             pt->doc[t], pt->source);
            checked += w == 1;
        }
    }
    CHECK(checked >= 40);
    char *text = NULL;
    int misses = -1;
    CHECK_INT(nk__calib_report(&text, &misses), 0);
    CHECK_INT(misses, 0);
    CHECK_CONTAINS(text, "act_dep/n=1            trn1       ns        189.0        160.0   -15.3%    yes  [PG]");
    free(text);
}

TEST(calib_figures_from_the_sources)
{
    /* [PG] ~189 ns on trn1; the model is 15% faster (100 + 64 + 60 cycles at 1.4 GHz) */
    CHECK_NEAR(per_rep("trn1", "act_dep/n=1"), 224 / 1.4, 1e-9, 0);
    /* [A2] 512 cycles at 2.8 GHz */
    CHECK_NEAR(per_rep("trn1", "pe/m=128:n=512:bf16"), 512 / 2.8, 1e-9, 0);
    /* [PG] short moving: one MM every 64 cycles; short stationary: 128 */
    CHECK_NEAR(per_rep("trn1", "pe/m=128:n=1:bf16"), 64 / 2.8, 1e-9, 0);
    CHECK_NEAR(per_rep("trn1", "pe/m=1:n=128:bf16"), 128 / 2.8, 1e-9, 0);
    /* [DMAbw] 1300 ns to start, then 4 bytes at 17 B/ns and 4/(4 + 256) efficiency */
    CHECK_NEAR(per_rep("trn1", "dma_chain/bytes=4"), 1300 + 260 / 17.0, 1e-9, 0);
    /* 4 KiB per partition: 256 GB/s of the 272 [DMAbw] (one 4-byte output column per load besides) */
    CHECK_NEAR(128 * 4096 / per_rep("trn1", "dma_load/bpp=4096"), 256.0, 1e-3, 0);
    /* HBM-to-HBM: 410 GB/s of reads and writes per trn1 core [A2] */
    CHECK_NEAR(2 * 128 * 4096 / per_rep("trn1", "hbm_copy/bpp=4096"), 410, 1e-9, 0);
    /* v2 serializes Vector and GpSimd on SBUF [A2]; v3 does not [A3] */
    CHECK_NEAR(per_rep("trn1", "ports/n=2048"), 2048 / 1.12 + 2198 / 1.4, 1e-9, 0);
    CHECK_NEAR(per_rep("trn2", "ports/n=2048"), 2048 / 0.96, 1e-9, 0);
}

TEST(calib_closed_forms_are_the_simulation)
{
    nk_arch k = known_table();
    const nk_arch *tabs[3] = {nk__arch_get("trn1"), nk__arch_get("trn2"), &k};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < nk__calib_npoints; i++) {
            double ns = -1;
            CHECK_INT(nk__calib_simulate(tabs[t], &nk__calib_points[i], &ns), 0);
            double e = nk__calib_expect_ns(tabs[t], &nk__calib_points[i]);
            if (!(fabs(ns - e) <= 1e-9 * e))
                nk_test_fail(__FILE__, __LINE__, "%s on table %d: simulated %.6f ns, closed form %.6f",
                             nk__calib_points[i].id, t, ns, e);
        }
}

TEST(calib_fit_recovers_a_known_table)
{
    nk_arch k = known_table();
    size_t n = 0;
    nk_calib_sample *s = calloc(nk__calib_npoints * NK_CALIB_MAXREPS, sizeof *s);
    CHECK(s != NULL);
    if (!s)
        return;
    for (size_t i = 0; i < nk__calib_npoints; i++)
        for (int r = 0; r < NK_CALIB_MAXREPS; r++) {
            double ns;
            CHECK_INT(nk__calib_time(&k, &nk__calib_points[i], nk__calib_points[i].reps[r], &ns), 0);
            snprintf(s[n].id, sizeof s[n].id, "%s", nk__calib_points[i].id);
            s[n].reps = nk__calib_points[i].reps[r];
            s[n++].us = ns / 1000;
        }
    nk_calib_fit *f = malloc(sizeof *f);
    char err[256] = "";
    CHECK_INT(nk__calib_fit_samples(nk__arch_get("trn1"), s, n, f, err, sizeof err), 0);
    CHECK_INT(f->npoints, (int)nk__calib_npoints);
    CHECK_INT(f->npar, 15);
    CHECK(f->rms_resid < 1e-6);
    CHECK_NEAR(f->arch.act_ghz, 1.5, 1e-6, 0);
    CHECK_NEAR(f->arch.dve_ghz, 1.0, 1e-6, 0);
    CHECK_NEAR(f->arch.pool_ghz, 1.3, 1e-6, 0);
    CHECK_NEAR(f->arch.pe_ghz, 3.0, 1e-6, 0);
    CHECK_INT(f->arch.static_overhead_cycles, 120);
    CHECK_INT(f->arch.min_ii_cycles, 56);
    CHECK_INT(f->arch.sram_access_cycles, 70);
    CHECK_INT(f->arch.pool_fixed_cycles, 170);
    CHECK_INT(f->arch.pe_mm_init_cycles, 72);
    CHECK_NEAR(f->arch.pe_fp32_factor, 3.5, 1e-6, 0);
    CHECK_NEAR(f->arch.sem_latency_ns, 80, 1e-6, 0);
    CHECK_NEAR(f->arch.dma_engine_gbps, 20, 1e-6, 0);
    CHECK_NEAR(f->arch.dma_eff_half_bytes, 300, 1e-6, 0);
    CHECK_NEAR(f->arch.dma_latency_ns, 1500, 1e-6, 0);
    CHECK_NEAR(f->arch.hbm_gbps, 380, 1e-6, 0);
    for (int i = 0; i < f->npar; i++)
        CHECK(f->par[i].rms_resid < 1e-6 && f->par[i].npoints >= 1);
    /* the fitted file loads as a target and times the suite as the known table does */
    char *cfg = NULL;
    CHECK_INT(nk__calib_format_fit(f, "known", &cfg), 0);
    nk_arch back = *nk__arch_get("trn1");
    CHECK_INT(nk__arch_load_text(cfg, "fit", &back, err, sizeof err), 0);
    CHECK_STR(back.name, "known");
    CHECK_INT(back.sram_access_cycles, 70);
    CHECK_NEAR(per_rep("trn1", "sem/n=1"), 460, 1e-9, 0);
    double a, b;
    CHECK_INT(nk__calib_simulate(&back, point("sem/n=1"), &a), 0);
    CHECK_INT(nk__calib_simulate(&k, point("sem/n=1"), &b), 0);
    CHECK_NEAR(a, b, 1e-6, 0);
    free(cfg);
    free(f);
    free(s);
}

TEST(calib_results_reader_rejects_bad_input)
{
    nk_calib_sample *s = NULL;
    size_t n = 0;
    char err[256];
    CHECK_INT(nk__calib_read_results("point,reps,p50_us\n# a comment\nact_dep/n=1,4,6.5\n\nact_dep/n=1,8,7.25\n", "r.csv",
                                    &s, &n, err, sizeof err),
              0);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(s[1].id, "act_dep/n=1");
        CHECK_INT(s[1].reps, 8);
        CHECK_NEAR(s[1].us, 7.25, 0, 0);
    }
    free(s);
    CHECK(nk__calib_read_results("bench,reps,us\n", "r.csv", &s, &n, err, sizeof err) < 0);
    CHECK_STR(err, "r.csv:1: expected the header 'point,reps,p50_us'");
    CHECK(nk__calib_read_results("point,reps,p50_us\nact_dep/n=1,0,6.5\n", "r.csv", &s, &n, err, sizeof err) < 0);
    CHECK_STR(err, "r.csv:2: expected 'point,reps,p50_us' with reps >= 1 and a latency > 0");
    CHECK(nk__calib_read_results("point,reps,p50_us\nact_dep/n=1,4,6.5x\n", "r.csv", &s, &n, err, sizeof err) < 0);
    CHECK(nk__calib_read_results("", "r.csv", &s, &n, err, sizeof err) < 0);
    CHECK_STR(err, "r.csv: empty (expected the header 'point,reps,p50_us')");
    nk_calib_sample one[2] = {{"no_such/point", 4, 1.0}, {"no_such/point", 8, 2.0}};
    nk_calib_fit *f = malloc(sizeof *f);
    CHECK(nk__calib_fit_samples(nk__arch_get("trn1"), one, 2, f, err, sizeof err) < 0);
    CHECK_STR(err, "unknown benchmark point 'no_such/point' (not in this nklab's suite)");
    nk_calib_sample flat[2] = {{"act_dep/n=1", 4, 1.0}, {"act_dep/n=1", 8, 1.0}};
    CHECK(nk__calib_fit_samples(nk__arch_get("trn1"), flat, 2, f, err, sizeof err) < 0);
    CHECK_CONTAINS(err, "act_dep/n=1: need latencies at two or more repetition counts");
    free(f);
}

TEST(calib_python_files_name_every_point)
{
    for (int fam = 0; fam < NK_CALIB_NFAMILIES; fam++) {
        char *py = NULL;
        CHECK_INT(nk__calib_python(fam, &py), 0);
        CHECK_CONTAINS(py, "@nki.benchmark(warmup=WARMUP, iters=ITERS)");
        CHECK_CONTAINS(py, "import neuronxcc.nki as nki");
        for (size_t i = 0; i < nk__calib_npoints; i++)
            if (nk__calib_points[i].family == fam) {
                char q[80];
                snprintf(q, sizeof q, "(\"%s\",", nk__calib_points[i].id);
                CHECK_CONTAINS(py, q);
            }
        free(py);
    }
    char *py = NULL;
    CHECK(nk__calib_python(NK_CALIB_NFAMILIES, &py) < 0);
}
