/*
 * test_consistency.c - the summary metrics and the insights agree where they
 * report the same quantity.
 */
#include "test.h"

#include "insights/insights.h"
#include "profile/profile.h"

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
    CHECK_INT(nk_insights_build(pr, &ins), 0);
    if (ins) {
        CHECK_NEAR(ins->a.ridge, m.peak_flops_bandwidth_ratio, 1e-12, 0);
        CHECK_NEAR(ins->a.intensity, m.mm_arithmetic_intensity, 1e-12, 0);
    }
    /* fp32 at a quarter of the bf16 rate [A2]: 23 TFLOPS over 410 GB/s on trn1 */
    const nk_arch *a = nk_arch_get("trn1");
    double fp32_peak = 2.0 * 128 * 128 * a->pe_ghz / a->pe_fp32_factor;
    CHECK_NEAR(m.peak_flops_bandwidth_ratio, fp32_peak / a->hbm_gbps, 1e-12, 0);
    nk_insights_free(ins);
    nk_profile_free(pr);
    nk_kernel_free(k);
}
