/*
 * test_references.c - the references for NKI's tutorial kernels (layernorm,
 * fused mamba, attention forward, Stable Diffusion self-attention, average
 * pool 2d, transpose2d) against values worked out by hand in the comments.
 *
 * Inputs are small integers or halves, exact in every dtype used, so the
 * expected values are exact expressions; exp() and sqrt() appear only where the
 * definition has them.
 */
#include "test.h"
#include "kernels.h"

#define EPS_D 1e-15 /* double rounding of a handful of operations */

/* Runs ref on nin inputs with room for n outputs; returns its status. */
static int run_ref(nk_reference_fn ref, const nk_array *in, int nin, double *out, size_t n)
{
    double *o = out;
    return ref(in, nin, &o, &n, 1);
}

/* ---- layernorm */

TEST(reference_layernorm_population_variance_eps_gamma_beta)
{
    /* x rows: [1, 2, 3]: mean 2, var ((-1)^2 + 0 + 1^2) / 3 = 2/3 (the sample
     *         variance would be 1);
     *         [2, 4, 6]: mean 4, var (4 + 0 + 4) / 3 = 8/3;
     *         [5, 5, 5]: var 0, so y = beta (0 / sqrt(eps) = 0).
     * gamma [1, 2, -1], beta [0, 0.5, 1]:
     *   y = [-1/s1, 0 * 2 + 0.5, (1/s1) * -1 + 1] with s1 = sqrt(2/3 + 1e-5),
     *       [-2/s2, 0.5, 1 - 2/s2] with s2 = sqrt(8/3 + 1e-5),
     *       [0, 0.5, 1]. */
    float x[9] = {1, 2, 3, 2, 4, 6, 5, 5, 5}, g[3] = {1, 2, -1}, b[3] = {0, 0.5f, 1};
    nk_array in[3] = {{NK_F32, 2, {3, 3}, x}, {NK_F32, 1, {3}, g}, {NK_F32, 1, {3}, b}};
    double y[9];
    CHECK_INT(run_ref(nk_ref_layernorm, in, 3, y, 9), 0);
    CHECK(NK_LAYERNORM_EPS == 1e-5);
    double s1 = sqrt(2.0 / 3.0 + 1e-5), s2 = sqrt(8.0 / 3.0 + 1e-5);
    double want[9] = {-1 / s1, 0.5, 1 - 1 / s1, -2 / s2, 0.5, 1 - 2 / s2, 0, 0.5, 1};
    for (int i = 0; i < 9; i++)
        CHECK_NEAR(y[i], want[i], EPS_D, EPS_D);

    /* a mismatched gamma, a missing beta, the wrong room */
    nk_array bad[3] = {in[0], {NK_F32, 1, {2}, g}, in[2]};
    CHECK_INT(run_ref(nk_ref_layernorm, bad, 3, y, 9), NK_ESHAPE);
    CHECK_INT(run_ref(nk_ref_layernorm, in, 2, y, 9), NK_ESHAPE);
    CHECK_INT(run_ref(nk_ref_layernorm, in, 3, y, 8), NK_ESHAPE);
}

/* ---- fused mamba */

TEST(reference_mamba_selective_scan_hand_values)
{
    /* batch 1, channels 2, state 2, seq 3.
     *   delta = [[1, 1, 1], [0.5, 1, 2]]   u = [[1, 2, 3], [2, 0, -1]]
     *   A = [[0, -1], [0, 0]]              (A[channel][state])
     *   B = [[1, 1, 1], [2, 0, 1]]         C = [[1, 0, 1], [1, 1, 1]]  ([state][t])
     * channel 0, state 0: A = 0 so exp(delta A) = 1; delta B u = [1, 2, 3];
     *   h = [1, 3, 6]; C h = [1, 0, 6].
     * channel 0, state 1: exp(delta A) = e^-1 each step; delta B u = [2, 0, 3];
     *   h0 = 2 (the state before t = 0 is 0), h1 = 2/e, h2 = 2/e^2 + 3;
     *   C h = [2, 2/e, 3 + 2/e^2].
     *   y[0] = [3, 2/e, 9 + 2/e^2].
     * channel 1: A = 0 for both states; delta u = [1, 0, -2];
     *   state 0: delta B u = [1, 0, -2], h = [1, 1, -1], C h = [1, 0, -1];
     *   state 1: delta B u = [2, 0, -2], h = [2, 2, 0],  C h = [2, 2, 0].
     *   y[1] = [3, 2, -1]. */
    float delta[6] = {1, 1, 1, 0.5f, 1, 2}, u[6] = {1, 2, 3, 2, 0, -1};
    float A[4] = {0, -1, 0, 0}, B[6] = {1, 1, 1, 2, 0, 1}, C[6] = {1, 0, 1, 1, 1, 1};
    nk_array in[5] = {{NK_F32, 3, {1, 2, 3}, delta}, {NK_F32, 3, {1, 2, 3}, u}, {NK_F32, 2, {2, 2}, A},
                      {NK_F32, 3, {1, 2, 3}, B},     {NK_F32, 3, {1, 2, 3}, C}};
    double y[6];
    CHECK_INT(run_ref(nk_ref_mamba, in, 5, y, 6), 0);
    double e = exp(1.0);
    double want[6] = {3, 2 / e, 9 + 2 / (e * e), 3, 2, -1};
    for (int i = 0; i < 6; i++)
        CHECK_NEAR(y[i], want[i], EPS_D, EPS_D);

    /* the torch function's argument order (delta, A, B, u, C) is not accepted */
    nk_array swapped[5] = {in[0], in[2], in[3], in[1], in[4]};
    CHECK_INT(run_ref(nk_ref_mamba, swapped, 5, y, 6), NK_ESHAPE);
    CHECK_INT(run_ref(nk_ref_mamba, in, 4, y, 6), NK_ESHAPE);
    CHECK_INT(run_ref(nk_ref_mamba, in, 5, y, 5), NK_ESHAPE);
}

TEST(reference_mamba_batches_are_independent)
{
    /* batch 2, channels 1, state 1, seq 2, A = 0 (pure running sums):
     *   batch 0: delta u B = [1, 1] -> h = [1, 2], C = [1, 1] -> y = [1, 2];
     *   batch 1: delta [2, 1], u [1, 3], B [1, 2] -> delta B u = [2, 6],
     *            h = [2, 8], C = [2, 1] -> y = [4, 8]. */
    float delta[4] = {1, 1, 2, 1}, u[4] = {1, 1, 1, 3}, A[1] = {0}, B[4] = {1, 1, 1, 2}, C[4] = {1, 1, 2, 1};
    nk_array in[5] = {{NK_F32, 3, {2, 1, 2}, delta}, {NK_F32, 3, {2, 1, 2}, u}, {NK_F32, 2, {1, 1}, A},
                      {NK_F32, 3, {2, 1, 2}, B},     {NK_F32, 3, {2, 1, 2}, C}};
    double y[4];
    CHECK_INT(run_ref(nk_ref_mamba, in, 5, y, 4), 0);
    CHECK(y[0] == 1 && y[1] == 2 && y[2] == 4 && y[3] == 8);
}

/* ---- attention */

/* Both attention layouts below give scores [[0, 1], [1, 0]], so the softmax
 * rows are [1, e] / (1 + e) and [e, 1] / (1 + e); with v rows (as [S, d])
 * [1, 2] and [3, -2]:
 *   out[0] = ([1, 2] + e [3, -2]) / (1 + e) = [(1 + 3e), (2 - 2e)] / (1 + e)
 *   out[1] = (e [1, 2] + [3, -2]) / (1 + e) = [(e + 3), (2e - 2)] / (1 + e) */
static void check_two_by_two(const double *o)
{
    double e = exp(1.0), want[4] = {(1 + 3 * e) / (1 + e), (2 - 2 * e) / (1 + e), (e + 3) / (1 + e),
                                    (2 * e - 2) / (1 + e)};
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(o[i], want[i], EPS_D, EPS_D);
}

TEST(reference_attention_fwd_head_dim_first)
{
    /* q, k, v are [d, S]: q = I, so q^T k = k, whose columns are [0, 1] and
     * [1, 0]: scores [[0, 1], [1, 0]]. v [d, S] = [[1, 3], [2, -2]], whose
     * transpose has rows [1, 2] and [3, -2]. No scaling. */
    float q[4] = {1, 0, 0, 1}, k[4] = {0, 1, 1, 0}, v[4] = {1, 3, 2, -2};
    nk_array in[3] = {{NK_F32, 2, {2, 2}, q}, {NK_F32, 2, {2, 2}, k}, {NK_F32, 2, {2, 2}, v}};
    double o[4];
    CHECK_INT(run_ref(nk_ref_attention_fwd, in, 3, o, 4), 0);
    check_two_by_two(o);
    CHECK_INT(run_ref(nk_ref_attention_fwd, in, 3, o, 3), NK_ESHAPE);
    CHECK_INT(run_ref(nk_ref_attention_fwd, in, 2, o, 4), NK_ESHAPE);
}

TEST(reference_attention_fwd_subtracts_the_row_max)
{
    /* d 1, Sq 1, Skv 3: q = [[100]], k = [[10, 10, 9]]: scores 1000, 1000, 900
     * (exp would overflow without the max); weights 1/(2 + e^-100) twice and
     * e^-100/(2 + e^-100); v = [[4, 6, 1000]] -> out = 5 + O(e^-100 * 1000). */
    float q[1] = {100}, k[3] = {10, 10, 9}, v[3] = {4, 6, 1000};
    nk_array in[3] = {{NK_F32, 2, {1, 1}, q}, {NK_F32, 2, {1, 3}, k}, {NK_F32, 2, {1, 3}, v}};
    double o[1];
    CHECK_INT(run_ref(nk_ref_attention_fwd, in, 3, o, 1), 0);
    double t = exp(-100.0), want = (4 + 6 + 1000 * t) / (2 + t);
    CHECK_NEAR(o[0], want, EPS_D, 0);
    CHECK(fabs(o[0] - 5) < 1e-40);
}

TEST(reference_sd_attention_scales_by_one_eighth)
{
    /* q, k, v are [S, d]: 0.125 q = I, so 0.125 q k^T = k^T = [[0, 1], [1, 0]];
     * v rows [1, 2] and [3, -2]: the same values as above. Without the scale
     * the scores would be [[0, 8], [8, 0]]. */
    float q[4] = {8, 0, 0, 8}, k[4] = {0, 1, 1, 0}, v[4] = {1, 2, 3, -2};
    nk_array in[3] = {{NK_F32, 2, {2, 2}, q}, {NK_F32, 2, {2, 2}, k}, {NK_F32, 2, {2, 2}, v}};
    double o[4];
    CHECK(NK_SD_ATTENTION_SCALE == 0.125);
    CHECK_INT(run_ref(nk_ref_sd_attention, in, 3, o, 4), 0);
    check_two_by_two(o);

    /* Sq 1, Skv 2, d 2: q = [[8, 0]] -> scores [0, 1] against the same k */
    nk_array in1[3] = {{NK_F32, 2, {1, 2}, q}, in[1], in[2]};
    double o1[2], e = exp(1.0);
    CHECK_INT(run_ref(nk_ref_sd_attention, in1, 3, o1, 2), 0);
    CHECK_NEAR(o1[0], (1 + 3 * e) / (1 + e), EPS_D, EPS_D);
    CHECK_NEAR(o1[1], (2 - 2 * e) / (1 + e), EPS_D, EPS_D);
    CHECK_INT(run_ref(nk_ref_sd_attention, in1, 3, o, 4), NK_ESHAPE);
}

/* ---- average pool 2d */

/* bf16 of a float exact in bf16 (small integers, halves) */
static uint16_t bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

TEST(reference_avgpool2d_tutorial_case)
{
    /* The tutorial's case: x = arange(72) as [2, 6, 6], pool 2, stride 2 ->
     * [2, 3, 3]. Window (c, i, j) holds x0, x0 + 1, x0 + 6, x0 + 7 with
     * x0 = 36c + 12i + 2j: mean x0 + 3.5. In bf16 (integers < 256 are exact). */
    uint16_t x[72];
    for (int i = 0; i < 72; i++)
        x[i] = bf16((float)i);
    nk_array in = {NK_BF16, 3, {2, 6, 6}, x};
    double y[18];
    CHECK(NK_AVGPOOL2D_POOL == 2);
    CHECK_INT(run_ref(nk_ref_avgpool2d, &in, 1, y, 18), 0);
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                CHECK(y[(c * 3 + i) * 3 + j] == 36 * c + 12 * i + 2 * j + 3.5);
    CHECK_INT(run_ref(nk_ref_avgpool2d, &in, 1, y, 17), NK_ESHAPE);
}

TEST(reference_avgpool2d_drops_partial_windows)
{
    /* arange(25) as [1, 5, 5] -> [1, 2, 2]; row 4 and column 4 are not read:
     *   (0,0): 0 1 5 6 -> 3     (0,1): 2 3 7 8 -> 5
     *   (1,0): 10 11 15 16 -> 13 (1,1): 12 13 17 18 -> 15 */
    float x[25];
    for (int i = 0; i < 25; i++)
        x[i] = (float)i;
    x[4] = x[20] = x[24] = NAN; /* outside every whole window */
    nk_array in = {NK_F32, 3, {1, 5, 5}, x};
    double y[4];
    CHECK_INT(run_ref(nk_ref_avgpool2d, &in, 1, y, 4), 0);
    CHECK(y[0] == 3 && y[1] == 5 && y[2] == 13 && y[3] == 15);
    /* a NaN inside a window propagates (sum / 4, as the kernel does) */
    x[6] = NAN;
    CHECK_INT(run_ref(nk_ref_avgpool2d, &in, 1, y, 4), 0);
    CHECK(isnan(y[0]) && y[1] == 5);
}

/* ---- transpose2d */

TEST(reference_transpose2d_per_partition)
{
    /* [P=2, F1=2, F2=3], values 0..11: row 0 [0 1 2 | 3 4 5] is the matrix
     * [[0, 1, 2], [3, 4, 5]]; its transpose [[0, 3], [1, 4], [2, 5]] flattens
     * to [0, 3, 1, 4, 2, 5]; row 1 likewise [6, 9, 7, 10, 8, 11]. */
    int8_t x[12];
    for (int i = 0; i < 12; i++)
        x[i] = (int8_t)i;
    nk_array in = {NK_I8, 3, {2, 2, 3}, x};
    double y[12];
    CHECK_INT(run_ref(nk_ref_transpose2d, &in, 1, y, 12), 0);
    double want[12] = {0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11};
    for (int i = 0; i < 12; i++)
        CHECK(y[i] == want[i]);
    CHECK_INT(run_ref(nk_ref_transpose2d, &in, 1, y, 11), NK_ESHAPE);
}

TEST(reference_transpose2d_tutorial_shape2d)
{
    /* 2-D input with the tutorial's shape2D (3, 4): the row a0..a3 b0..b3
     * c0..c3 = 0..11 becomes a0 b0 c0 a1 b1 c1 ... = 0 4 8 1 5 9 2 6 10 3 7 11.
     * A row of 10 is not a multiple of 3. */
    int8_t x[12];
    for (int i = 0; i < 12; i++)
        x[i] = (int8_t)i;
    nk_array in = {NK_I8, 2, {1, 12}, x};
    double y[12];
    CHECK(NK_TRANSPOSE2D_F1 == 3);
    CHECK_INT(run_ref(nk_ref_transpose2d, &in, 1, y, 12), 0);
    double want[12] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
    for (int i = 0; i < 12; i++)
        CHECK(y[i] == want[i]);
    nk_array odd = {NK_I8, 2, {1, 10}, x};
    CHECK_INT(run_ref(nk_ref_transpose2d, &odd, 1, y, 10), NK_ESHAPE);
}
