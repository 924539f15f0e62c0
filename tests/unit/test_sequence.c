/*
 * test_sequence.c - kernels composed into one device program (nk_launch):
 * values against the reference, the on-chip hand-off without DMA, kernel
 * boundaries in the timeline, the program file, and the errors.
 */
#include "test.h"
#include "kernels.h"
#include "nkint.h"
#include "timing/timing.h"

#include <stdlib.h>
#include <unistd.h>

static const nk_program *compile(nk_kernel *k, const nk_array *args, int nargs)
{
    const nk_program *p = NULL;
    int rc = nk_kernel_compile(k, args, nargs, NULL, &p);
    if (rc)
        nk_test_fail(__FILE__, __LINE__, "compile: %s", nk_kernel_error(k));
    return rc ? NULL : p;
}

static uint32_t seg_named(const nk_program *p, const char *name)
{
    for (uint32_t k = 0; k < p->nseg; k++)
        if (!strcmp(p->seg_name[k], name))
            return k;
    return UINT32_MAX;
}

TEST(seq_hbm_and_onchip_match_the_reference_and_each_other)
{
    const nk_kernel_info *h = nk_builtin_kernel("seq_scale_matmul_hbm"), *o = nk_builtin_kernel("seq_scale_matmul_onchip");
    CHECK(h && o);
    if (!h || !o)
        return;
    nk_array args[2], outs[2];
    CHECK_INT(nk_kernel_example_args(h, 9, args), 0);
    const nk_kernel_info *ki[2] = {h, o};
    for (int v = 0; v < 2; v++) {
        nk_kernel *k = nk_kernel_new(ki[v]->name, ki[v]->fn);
        int n = 0;
        CHECK_INT(nk_call(k, args, 2, NULL, &outs[v], 1, &n), 0);
        CHECK_INT(n, 1);
        nk_kernel_free(k);
    }
    size_t n = (size_t)(128 * 512);
    double *got = malloc(n * sizeof *got), *ref = malloc(n * sizeof *ref);
    CHECK_INT(ki[0]->reference(args, 2, &ref, &n, 1), 0);
    CHECK_INT(nk_ref_decode(&outs[0], got), 0);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(got[i] - ref[i]) - (h->atol + h->rtol * fabs(ref[i]));
        worst = e > worst ? e : worst;
    }
    CHECK(worst <= 0);
    CHECK(!memcmp(outs[0].data, outs[1].data, nk_array_nbytes(&outs[0]))); /* the hand-off changes no value */
    free(got);
    free(ref);
    for (int v = 0; v < 2; v++)
        nk_array_free(&outs[v]);
    nk_array_free(&args[0]);
    nk_array_free(&args[1]);
}

/* The kernels are segments in program order; the on-chip version moves the
 * scaled tile with no DMA; the matmul kernel starts after the producer has
 * completed (a kernel boundary). */
TEST(seq_segments_boundaries_and_no_dma_between_kernels_on_chip)
{
    nk_array l = {NK_BF16, 2, {128, 128}, NULL}, r = {NK_BF16, 2, {128, 512}, NULL}, args[2] = {l, r};
    const char *names[2] = {"seq_scale_matmul_hbm", "seq_scale_matmul_onchip"};
    for (int v = 0; v < 2; v++) {
        const nk_kernel_info *ki = nk_builtin_kernel(names[v]);
        nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
        const nk_program *p = compile(k, args, 2);
        if (!p) {
            nk_kernel_free(k);
            continue;
        }
        uint32_t s1 = seg_named(p, "scale"), s2 = seg_named(p, "matmul_basic");
        CHECK(p->nseg == 3 && s1 == 1 && s2 == 2);
        CHECK_STR(p->seg_name[0], names[v]);
        int dma[3] = {0, 0, 0};
        for (uint32_t i = 0; i < p->ninstr; i++) {
            CHECK(i == 0 || p->instrs[i].seg >= p->instrs[i - 1].seg);
            if (p->instrs[i].engine == NK_ENGINE_DMA && p->instrs[i].seg < 3)
                dma[p->instrs[i].seg]++;
        }
        /* hbm: scale loads x and stores y, matmul loads y and rhs and stores; on chip: one of each fewer */
        CHECK_INT(dma[1], v ? 1 : 2);
        CHECK_INT(dma[2], v ? 2 : 3);
        nk_timeline *tl = NULL;
        CHECK_INT(nk__time_program(p, NULL, &tl), 0);
        if (tl) {
            double end1 = 0, start2 = INFINITY;
            for (uint32_t i = 0; i < p->ninstr; i++) {
                if (p->instrs[i].seg == s1)
                    end1 = fmax(end1, tl->instr_end[i]);
                if (p->instrs[i].seg == s2)
                    start2 = fmin(start2, tl->instr_start[i]);
            }
            CHECK(end1 > 0 && start2 >= end1);
            nk__timeline_free(tl);
        }
        nk_kernel_free(k);
    }
}

TEST(seq_program_file_keeps_the_kernels)
{
    nk_array l = {NK_BF16, 2, {128, 128}, NULL}, r = {NK_BF16, 2, {128, 512}, NULL}, args[2] = {l, r};
    const nk_kernel_info *ki = nk_builtin_kernel("seq_scale_matmul_onchip");
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    const nk_program *p = compile(k, args, 2);
    char path[] = "/tmp/nklab_seq_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    if (p && fd >= 0) {
        CHECK_INT(nk_program_save(p, path), 0);
        nk_program *q = NULL;
        char err[256] = "";
        CHECK_INT(nk_program_load(path, &q, err, sizeof err), 0);
        if (q) {
            CHECK_INT(q->nseg, p->nseg);
            for (uint32_t s = 0; s < q->nseg && s < p->nseg; s++) {
                CHECK_STR(q->seg_name[s], p->seg_name[s]);
                CHECK_INT(q->seg_loc[s], p->seg_loc[s]);
            }
            int same = q->ninstr == p->ninstr;
            for (uint32_t i = 0; same && i < p->ninstr; i++)
                same = q->instrs[i].seg == p->instrs[i].seg;
            CHECK(same);
            nk_program_free(q);
        }
    }
    unlink(path);
    nk_kernel_free(k);
}

/* ---- errors */

static int g_case, g_line;

static void k_inner(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor t = nk_load(nc, a[0]);
    if (g_case == 0) {
        nk_tensor o;
        g_line = __LINE__; nk_launch(nc, "again", k_inner, a, 1, &o, 1);
    }
    if (g_case == 3) { /* two results where the launch takes one */
        nk_return(nc, t);
        g_line = __LINE__; nk_return(nc, t);
        return;
    }
    nk_return(nc, t);
}

/* a [64, 128] tile handed to matmul_basic with a [128, 512] rhs */
static void k_half(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_return(nc, nk_load(nc, nk_ix(nc, a[0], nk_r(0, 64))));
}

static void k_seq_bad(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor o[2];
    switch (g_case) {
    case 0:
    case 3:
        nk_launch(nc, "inner", k_inner, a, 1, o, 1);
        break;
    case 1:
        NK_AFFINE_RANGE(nc, i, 2) {
            (void)i;
            g_line = __LINE__; nk_launch(nc, "inner", k_inner, a, 1, o, 1);
        }
        break;
    case 2: {
        nk_launch(nc, "half", k_half, a, 1, o, 1);
        nk_tensor m[2] = {o[0], a[1]};
        nk_launch(nc, "matmul_basic", nk_kernel_matmul_basic, m, 2, &o[1], 1);
        break;
    }
    case 4: /* the sequence returns the on-chip tile itself */
        nk_launch(nc, "inner", k_inner, a, 1, o, 1);
        g_line = __LINE__; nk_return(nc, o[0]);
        return;
    }
    nk_store(nc, a[0], nk_load(nc, a[0]));
}

TEST(seq_errors_name_the_line)
{
    nk_array x = {NK_BF16, 2, {128, 128}, NULL}, y = {NK_BF16, 2, {128, 512}, NULL}, args[2] = {x, y};
    const char *want[5] = {
        "nk_launch: a launched kernel cannot launch another",
        "nk_launch: launch kernels outside the sequence's loops",
        "contraction (partition) sizes differ: stationary K=64, moving K=128",
        "nk_return: the kernel returns more than the 1 output its nk_launch takes",
        ("nk_return: a kernel returns HBM tensors it created with nk_ndarray(..., NK_SHARED_HBM), not an on-chip "
         "SBUF tile"),
    };
    for (g_case = 0; g_case < 5; g_case++) {
        nk_kernel *k = nk_kernel_new("seq_bad", k_seq_bad);
        const nk_program *p = NULL;
        CHECK(nk_kernel_compile(k, args, 2, NULL, &p) < 0);
        CHECK_CONTAINS(nk_kernel_error(k), want[g_case]);
        if (g_case != 2) {
            char at[96];
            snprintf(at, sizeof at, "%s:%d: ", __FILE__, g_line);
            CHECK_CONTAINS(nk_kernel_error(k), at);
        } else {
            CHECK_CONTAINS(nk_kernel_error(k), "kernels/matmul_basic.c:19: ");
        }
        nk_kernel_free(k);
    }
    /* not on a launch grid */
    nk_kernel *k = nk_kernel_new("seq_bad", k_seq_bad);
    nk_options o = {"trn2", 0};
    o.grid[0] = 2;
    const nk_program *p = NULL;
    g_case = 0;
    CHECK(nk_kernel_compile(k, args, 2, &o, &p) < 0);
    CHECK_CONTAINS(nk_kernel_error(k), "nk_launch: a kernel on a launch grid cannot launch kernels");
    nk_kernel_free(k);
}

/* Each kernel of a sequence is launched: a start-up before it and a
 * tear-down after it (the target's launch keys), so the next kernel's first
 * instruction waits for both. The profile's surfaces name the kernels. */
#include "profile/profile.h"
#include "view/view.h"

TEST(seq_every_kernel_is_launched_and_named_in_the_profile)
{
    nk_array l = {NK_BF16, 2, {128, 128}, NULL}, r = {NK_BF16, 2, {128, 512}, NULL}, args[2] = {l, r};
    const nk_kernel_info *ki = nk_builtin_kernel("seq_scale_matmul_onchip");
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    const nk_program *p = compile(k, args, 2);
    nk_profile *pr = NULL;
    if (!p || nk_profile_capture(p, NULL, &pr)) {
        CHECK(0);
        nk_kernel_free(k);
        return;
    }
    const nk_timeline *tl = pr->tl;
    const nk_arch *a = p->arch;
    CHECK_INT(tl->nregions, 4);
    CHECK_NEAR(nk__timeline_launch_ns(tl), 2 * (a->launch_startup_ns + a->launch_teardown_ns), 1e-12, 1e-9);
    double end1 = 0, start2 = INFINITY, end2 = 0;
    for (uint32_t i = 0; i < p->ninstr; i++) {
        if (p->instrs[i].seg == 1)
            end1 = fmax(end1, tl->instr_end[i]);
        else if (p->instrs[i].seg == 2) {
            start2 = fmin(start2, tl->instr_start[i]);
            end2 = fmax(end2, tl->instr_end[i]);
        }
    }
    CHECK(start2 >= end1 + a->launch_teardown_ns + a->launch_startup_ns - 1e-9);
    CHECK_NEAR(tl->total_ns, end2 + a->launch_teardown_ns, 1e-12, 1e-9);
    char *sum = NULL;
    CHECK_INT(nk_profile_summary(pr, NULL, 0, &sum), 0);
    CHECK_CONTAINS(sum, "; 2 kernel launches)");
    CHECK_CONTAINS(sum, "\nkernels       scale                2 instructions");
    CHECK_CONTAINS(sum, "\n              matmul_basic         4 instructions");
    free(sum);
    nk_text csv = {0}, js = {0}, pf = {0};
    CHECK_INT(nk__export_csv(pr, NULL, &csv), 0);
    CHECK_CONTAINS(csv.s, ",kernel,call,lowered_from\r\n");
    CHECK_CONTAINS(csv.s, ",scale,");
    CHECK_CONTAINS(csv.s, ",matmul_basic,");
    CHECK_INT(nk__export_json(pr, NULL, &js), 0);
    CHECK_CONTAINS(js.s, "\"kernel\":\"matmul_basic\"");
    CHECK_INT(nk__export_perfetto(pr, NULL, &pf), 0);
    CHECK_CONTAINS(pf.s, "\"kernel\":\"scale\"");
    nk__text_free(&csv);
    nk__text_free(&js);
    nk__text_free(&pf);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* The round trip through HBM between two kernels is a finding of the HBM
 * version only, naming both kernels and the store's and load's lines. */
#include "insights/insights.h"

TEST(seq_insight_names_the_hbm_round_trip)
{
    nk_array l = {NK_BF16, 2, {128, 128}, NULL}, r = {NK_BF16, 2, {128, 512}, NULL}, args[2] = {l, r};
    const char *names[2] = {"seq_scale_matmul_hbm", "seq_scale_matmul_onchip"};
    double total[2] = {0, 0}, simulated = -1;
    for (int v = 0; v < 2; v++) {
        const nk_kernel_info *ki = nk_builtin_kernel(names[v]);
        nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
        const nk_program *p = compile(k, args, 2);
        nk_profile *pr = NULL;
        nk_insights *ins = NULL;
        if (p && !nk_profile_capture(p, NULL, &pr) && !nk__insights_build(pr, &ins)) {
            const nk_finding *f = nk__insights_find(ins, NK_RULE_HBM_ROUND_TRIP);
            if (v == 0) {
                CHECK(f != NULL);
                if (f) {
                    CHECK_STR(f->title, "32.0 KiB go to HBM and straight back between kernels scale and matmul_basic");
                    CHECK(f->score_ns > 0);
                    for (int e = 0; e < f->nev; e++)
                        if (!strcmp(f->ev[e].name, "simulated_saving"))
                            simulated = f->ev[e].value;
                    CHECK_CONTAINS(f->suggestion, "Re-timed without the round trip, the kernel takes");
                }
            } else {
                CHECK(f == NULL);
            }
        } else {
            CHECK(0);
        }
        if (pr)
            total[v] = pr->tl->total_ns;
        nk__insights_free(ins);
        nk_profile_free(pr);
        nk_kernel_free(k);
    }
    /* the saving the insight simulates is the one the on-chip version realises (to 2%) */
    CHECK(simulated > 0);
    CHECK_NEAR(simulated, total[0] - total[1], 0.02, 0);
}
