/*
 * registry.c - the table of built-in kernels: example arguments, reference
 * and the tolerance of the example dtypes against the reference.
 *
 * Tolerances, with u = 2^-24 (fp32 unit roundoff) and u_bf16 = 2^-8:
 *   tensor_exp   expf is within 1 ulp (2u relative): rtol 4u.
 *   tensor_add   one fp32 rounding of an exact sum: rtol 2u.
 *   softmax      max is exact; x - max rounds once (u|x - max| <= 8u in exp
 *                for values in [-4, 4)); exp 2u; a sum of D positive terms
 *                (D - 1)u; reciprocal u; multiply u: within (D + 11)u; rtol
 *                (D + 16)u = 6.2e-5 for D = 1024. No cancellation, no atol.
 *   rmsnorm      squares u, their sum (D - 1)u, mean and eps 3u (halved by
 *                the square root), rsqrt 2u, two multiplies 2u: within
 *                (D/2 + 6)u; rtol (D + 16)u = 6.2e-5 for D = 1024.
 *   matmul_*     the bf16 result rounds once (u_bf16 relative); fp32
 *                accumulation of K exact bf16 products errs by about
 *                sqrt(K) u |a||b| sqrt(K) on the example values (|a|, |b| < 1),
 *                under 1e-4 for K <= 1024, well inside atol 1e-3.
 *                matmul_fully_optimized accumulates K blocks of 1024 rows
 *                in a bf16 SBUF tile, one rounding (u_bf16 relative) per K
 *                block; its example has one K block, so the same bound.
 *   layernorm    inputs uniform in [0, 1) as in the tutorial: mean m ~ 1/2,
 *                mean square Q ~ 1/3, variance V ~ 1/12. The sums err by
 *                (D + 4)u times the mean of |x| and Q; E[x^2] - E[x]^2 then
 *                errs by ~ (Q + 2|m|^2)(D + 4)u = (5/6)(D + 4)u, i.e. 10(D + 4)u
 *                relative to V, half of that through the rsqrt; times
 *                |x - m| rsqrt(V) <= 1.8 and |gamma| < 1, plus the mean's
 *                own error times rsqrt(V) = 3.5: within 10.4(D + 4)u + 24u
 *                absolute. y = n gamma + beta can be near 0, so atol
 *                12 (D + 16) u = 3.8e-4 for D = 512.
 *   layernorm_bn the same inputs; bn_stats and bn_aggr take two-pass
 *                statistics, so the variance errs by a few hundred u
 *                relative to itself and the sums no longer cancel: the
 *                layernorm bound covers it with a wide margin.
 *   sd_attention bf16 Tensor-engine operands (the tutorial's mixed
 *                precision): q/8 and k each round once (u_bf16), so a score
 *                errs by at most 2 u_bf16 (1/8) sum |q||k| <= 1/16 for
 *                q, k in [0, 1) and d = 64 (fp32 accumulation adds 64u).
 *                Softmax is shift-invariant: each normalised weight is off
 *                by a factor within exp(+-2/16), the bf16 weights and v by
 *                1 + u_bf16 each; the output, a weighted mean of v in
 *                [0, 1), within exp(1/8 + 2 u_bf16) - 1 < 0.15: atol 0.15.
 *                (The tests bound each element by its own scores.)
 *   attention_fwd  fp32 throughout, q, k, v in [-1, 1), d = 128: a score
 *                errs by gamma_d sum |q||k| <= 128u * 128 = 9.8e-4, each
 *                normalised weight by a factor within exp(+-2e-3), the sums
 *                of 512 weights by 512u: the output, a weighted mean of v,
 *                within 2.1e-3 (atol).
 *   mamba_v*     delta in [0, 1), A in [-1, -1/2), u, B, C in [-1, 1),
 *                L = 512 steps, S = 16 states: b = delta u B has |b| <=
 *                delta and a = exp(delta A) <= exp(-delta / 2), so |h| <= 3.
 *                Each scan step rounds a (2u: the product delta A and exp),
 *                a h, and the sum, and b twice: at most 6u |h| new error,
 *                carried with a factor a <= 1, so h errs by <= 6u * 3 * L;
 *                y = sum_s C h adds u |C h| per state and the S-term sum:
 *                atol S (18 L + 3) u + S^2 3u = 9e-3.
 *   avgpool2d    p^2 - 1 fp32 additions err by (p^2 - 1)u times the window's
 *                mean |x| (< 1) once divided by p^2: atol 3u; the division
 *                rounds once: rtol u.
 *   transpose2d  a copy: exact.
 *   spmd_*       as tensor_add and matmul_tiled: each output element is
 *                computed by one instance in the same way.
 */
#include "kernels.h"

#include <string.h>

const nk_kernel_info *nk_builtin_kernel(const char *name)
{
    for (int i = 0; i < nk_builtin_kernel_count; i++)
        if (!strcmp(nk_builtin_kernels[i].name, name))
            return &nk_builtin_kernels[i];
    return NULL;
}

/* Levenshtein distance, for names of at most 63 bytes (longer: a large value). */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 1 << 20;
    int row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

const nk_kernel_info *nk_builtin_kernel_nearest(const char *name)
{
    const nk_kernel_info *best = NULL;
    int bd = 0, limit = (int)strlen(name) / 3 > 2 ? (int)strlen(name) / 3 : 2;
    for (int i = 0; i < nk_builtin_kernel_count; i++) {
        int d = edit_distance(name, nk_builtin_kernels[i].name);
        if (d <= limit && (!best || d < bd)) {
            best = &nk_builtin_kernels[i];
            bd = d;
        }
    }
    return best;
}

#define U32 0x1.0p-24

/* batch 1, channels 256, seq_len 512, state 16: the tutorial's toy size */
#define MAMBA_ARGS                                                                                   \
    {{"delta", NK_F32, 3, {1, 256, 512}, 0, 1}, {"u", NK_F32, 3, {1, 256, 512}},                         \
     {"A", NK_F32, 2, {256, 16}, -1, -0.5}, {"B", NK_F32, 3, {1, 16, 512}}, {"C", NK_F32, 3, {1, 16, 512}}}

const nk_kernel_info nk_builtin_kernels[] = {
    {"tensor_exp", "exp over a 2-D tensor in 128-row tiles, partial last tile masked", nk_kernel_tensor_exp, 1,
     {{"in", NK_F32, 2, {250, 512}, -4, 4}}, 1, nk_ref_tensor_exp, 4 * U32, 0},
    {"tensor_add", "a + b over a 2-D tensor in 128 x 512 tiles, partial edge tiles masked", nk_kernel_tensor_add,
     2, {{"a", NK_F32, 2, {250, 1000}}, {"b", NK_F32, 2, {250, 1000}}}, 1, nk_ref_tensor_add, 2 * U32, 0},
    {"matmul_basic", "lhsT[K,M]^T @ rhs[K,N] in one Tensor-engine instruction (K, M <= 128, N <= 512)",
     nk_kernel_matmul_basic, 2, {{"lhsT", NK_BF16, 2, {128, 128}}, {"rhs", NK_BF16, 2, {128, 512}}}, 1,
     nk_ref_matmul, 0x1.0p-8, 1e-3},
    {"matmul_tiled", "lhsT[K,M]^T @ rhs[K,N] in 128x512 output tiles, K accumulated in PSUM",
     nk_kernel_matmul_tiled, 2, {{"lhsT", NK_BF16, 2, {1024, 256}}, {"rhs", NK_BF16, 2, {1024, 1024}}}, 1,
     nk_ref_matmul, 0x1.0p-8, 1e-3},
    {"softmax", "row-wise softmax: max, fused exp with row sum, reciprocal, multiply", nk_kernel_softmax, 1,
     {{"x", NK_F32, 2, {250, 1024}, -4, 4}}, 1, nk_ref_softmax, (1024 + 16) * U32, 0},
    {"rmsnorm", "x / sqrt(mean(x^2) + 1e-6) * gamma over rows, gamma broadcast once", nk_kernel_rmsnorm, 2,
     {{"x", NK_F32, 2, {250, 1024}}, {"gamma", NK_F32, 1, {1024}}}, 1, nk_ref_rmsnorm, (1024 + 16) * U32, 0},
    /* NKI's tutorial kernels (test_tutorials.c) */
    {"matmul_hoisted", "matmul_tiled with the K tiles of a 128-column lhsT strip and a 512-column rhs strip loaded "
     "once into tile arrays", nk_kernel_matmul_hoisted, 2,
     {{"lhsT", NK_BF16, 2, {1024, 256}}, {"rhs", NK_BF16, 2, {1024, 1024}}}, 1, nk_ref_matmul, 0x1.0p-8, 1e-3},
    {"matmul_blocked_free", "matmul_hoisted with the free dimensions blocked: 2 lhsT strips x 2 rhs strips per "
     "block pair", nk_kernel_matmul_blocked_free, 2,
     {{"lhsT", NK_BF16, 2, {512, 512}}, {"rhs", NK_BF16, 2, {512, 2048}}}, 1, nk_ref_matmul, 0x1.0p-8, 1e-3},
    {"matmul_fully_optimized", "M, N, K blocked (2048 x 1024 x 1024), sequential K blocks accumulated in an SBUF "
     "result block, packed stores", nk_kernel_matmul_fully_optimized, 2,
     {{"lhsT", NK_BF16, 2, {1024, 2048}}, {"rhs", NK_BF16, 2, {1024, 1024}}}, 1, nk_ref_matmul, 0x1.0p-8, 1e-3},
    {"layernorm", "(x - mean) rsqrt(E[x^2] - E[x]^2 + 1e-5) gamma + beta over rows, language ops only",
     nk_kernel_layernorm, 3, {{"x", NK_F32, 2, {250, 512}, 0, 1}, {"gamma", NK_F32, 1, {512}, 0, 1},
     {"beta", NK_F32, 1, {512}, 0, 1}}, 1, nk_ref_layernorm, 0, 12 * (512 + 16) * U32},
    {"layernorm_bn", "layernorm with bn_stats over 512-column chunks, bn_aggr, one two-op tensor_scalar",
     nk_kernel_layernorm_bn, 3, {{"x", NK_F32, 2, {250, 512}, 0, 1}, {"gamma", NK_F32, 1, {512}, 0, 1},
     {"beta", NK_F32, 1, {512}, 0, 1}}, 1, nk_ref_layernorm, 0, 12 * (512 + 16) * U32},
    {"sd_attention", "softmax(q k^T / 8) v, 128-row query tiles, bf16 matmuls, division after the second matmul",
     nk_kernel_sd_attention, 3, {{"q", NK_F32, 2, {256, 64}, 0, 1}, {"k", NK_F32, 2, {256, 64}, 0, 1},
     {"v", NK_F32, 2, {256, 64}, 0, 1}}, 1, nk_ref_sd_attention, 0, 0.15},
    {"attention_fwd", "softmax(q^T k) v^T, q, k, v [d, S]: exp and row sum in one activation, delayed division",
     nk_kernel_attention_fwd, 3, {{"q", NK_F32, 2, {128, 512}}, {"k", NK_F32, 2, {128, 512}},
     {"v", NK_F32, 2, {128, 512}}}, 1, nk_ref_attention_fwd, 0, 2.1e-3},
    {"mamba_v1", "selective scan: exp(delta A), delta u B, one tensor_tensor_scan per state and channel tile, "
     "states summed in a tile array", nk_kernel_mamba_v1, 5, MAMBA_ARGS, 1, nk_ref_mamba, 0, 9e-3},
    {"mamba_v2", "mamba_v1 with channel tiles outside the states: delta and u loaded once per tile",
     nk_kernel_mamba_v2, 5, MAMBA_ARGS, 1, nk_ref_mamba, 0, 9e-3},
    {"mamba_v3", "mamba_v2 over 512-column chunks of the sequence, the scan carried from chunk to chunk",
     nk_kernel_mamba_v3, 5, MAMBA_ARGS, 1, nk_ref_mamba, 0, 9e-3},
    {"avgpool2d", "mean of each 2 x 2 window of x[C, H, W] (stride 2) through strided access patterns",
     nk_kernel_avgpool2d, 1, {{"x", NK_F32, 3, {64, 14, 15}}}, 1, nk_ref_avgpool2d, U32, 3 * U32},
    {"transpose2d", "each row of x[P, 3 * F2] read as a 3 x F2 matrix and written transposed, one strided copy",
     nk_kernel_transpose2d, 1, {{"x", NK_I8, 2, {5, 12}, -100, 100}}, 1, nk_ref_transpose2d, 0, 0},
    /* SPMD: the example runs on a 2 x 2 launch grid */
    {"spmd_tensor_add", "a + b with a launch grid: each program instance adds its share of the 128 x 512 tiles",
     nk_kernel_spmd_tensor_add, 2, {{"a", NK_F32, 2, {250, 1000}}, {"b", NK_F32, 2, {250, 1000}}}, 1,
     nk_ref_tensor_add, 2 * U32, 0, {2, 2}},
    {"spmd_matmul", "lhsT[K,M]^T @ rhs[K,N] with a launch grid: each instance computes its share of the 128 x 512 "
     "output tiles", nk_kernel_spmd_matmul, 2, {{"lhsT", NK_BF16, 2, {1024, 256}}, {"rhs", NK_BF16, 2, {1024, 1024}}},
     1, nk_ref_matmul, 0x1.0p-8, 1e-3, {2, 2}},
    /* sequences: a producer kernel feeding matmul_basic in one device program */
    {"seq_scale_matmul_hbm", "a sequence: (2 lhsT) computed by one kernel, stored to HBM and loaded back by "
     "matmul_basic", nk_kernel_seq_scale_matmul_hbm, 2, {{"lhsT", NK_BF16, 2, {128, 128}},
     {"rhs", NK_BF16, 2, {128, 512}}}, 1, nk_ref_scale_matmul, 0x1.0p-8, 2e-3},
    {"seq_scale_matmul_onchip", "the same sequence with the scaled tile handed to matmul_basic on chip (no HBM "
     "round trip)", nk_kernel_seq_scale_matmul_onchip, 2, {{"lhsT", NK_BF16, 2, {128, 128}},
     {"rhs", NK_BF16, 2, {128, 512}}}, 1, nk_ref_scale_matmul, 0x1.0p-8, 2e-3},
};
const int nk_builtin_kernel_count = (int)(sizeof nk_builtin_kernels / sizeof nk_builtin_kernels[0]);

static const struct {
    nk_kernel_fn fn;
    const nk_loc *decl;
} decls[] = {
    {nk_kernel_attention_fwd, &nk_kernel_attention_fwd_decl},
    {nk_kernel_avgpool2d, &nk_kernel_avgpool2d_decl},
    {nk_kernel_layernorm, &nk_kernel_layernorm_decl},
    {nk_kernel_layernorm_bn, &nk_kernel_layernorm_bn_decl},
    {nk_kernel_mamba_v1, &nk_kernel_mamba_v1_decl},
    {nk_kernel_mamba_v2, &nk_kernel_mamba_v2_decl},
    {nk_kernel_mamba_v3, &nk_kernel_mamba_v3_decl},
    {nk_kernel_matmul_basic, &nk_kernel_matmul_basic_decl},
    {nk_kernel_matmul_blocked_free, &nk_kernel_matmul_blocked_free_decl},
    {nk_kernel_matmul_fully_optimized, &nk_kernel_matmul_fully_optimized_decl},
    {nk_kernel_matmul_hoisted, &nk_kernel_matmul_hoisted_decl},
    {nk_kernel_matmul_tiled, &nk_kernel_matmul_tiled_decl},
    {nk_kernel_rmsnorm, &nk_kernel_rmsnorm_decl},
    {nk_kernel_sd_attention, &nk_kernel_sd_attention_decl},
    {nk_kernel_seq_scale_matmul_hbm, &nk_kernel_seq_scale_matmul_hbm_decl},
    {nk_kernel_seq_scale_matmul_onchip, &nk_kernel_seq_scale_matmul_onchip_decl},
    {nk_kernel_softmax, &nk_kernel_softmax_decl},
    {nk_kernel_spmd_tensor_add, &nk_kernel_spmd_tensor_add_decl},
    {nk_kernel_spmd_matmul, &nk_kernel_spmd_matmul_decl},
    {nk_kernel_tensor_add, &nk_kernel_tensor_add_decl},
    {nk_kernel_tensor_exp, &nk_kernel_tensor_exp_decl},
    {nk_kernel_transpose2d, &nk_kernel_transpose2d_decl},
};

const nk_loc *nk_builtin_kernel_decl(const nk_kernel_info *k)
{
    for (size_t i = 0; k && i < sizeof decls / sizeof decls[0]; i++)
        if (decls[i].fn == k->fn)
            return decls[i].decl;
    return NULL;
}

nk_kernel *nk_builtin_kernel_new(const nk_kernel_info *k)
{
    nk_kernel *kn = nk_kernel_new(k->name, k->fn);
    const nk_loc *d = nk_builtin_kernel_decl(k);
    const char *names[NK_KERNEL_MAX_ARGS];
    for (int i = 0; i < k->nargs && i < NK_KERNEL_MAX_ARGS; i++)
        names[i] = k->args[i].name;
    if (kn && nk_kernel_set_params(kn, d ? *d : (nk_loc){NULL, 0, NULL}, names, k->nargs)) {
        nk_kernel_free(kn);
        return NULL;
    }
    return kn;
}
