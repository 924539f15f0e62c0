/*
 * sd_attention - the fused self-attention of NKI's Stable Diffusion
 * tutorial: out = softmax(scale * q k^T) v for q, k, v [S, d], S a multiple
 * of 128, d <= 128, scale = NK_SD_ATTENTION_SCALE (0.125, fixed as in the
 * tutorial), an optional causal mask.
 *
 * Set-up: v is loaded as 128-row tiles side by side in one tile
 * trans_v[128, S/128, d] (the stationary operand of the second matmul as
 * it lies in HBM); q and k are loaded transposed a 128-row tile at a time
 * into [d, 128] tiles of the tile arrays q_local and k_local (q already
 * scaled), so that the first matmul contracts over d on partitions.
 *
 * Per 128-row tile of q: the scores of all S keys (one [128, 128] PSUM tile
 * per key tile, copied side by side into qk_res_buf), the maximum of each
 * key tile, then one activation exp(s - max) over the whole row of S, its
 * sum, and the weights cast for the Tensor engine. The weights are
 * transposed a key tile at a time and the second matmul accumulates
 * out^T[d, 128] over the key tiles in PSUM. The division by the row sum is
 * delayed until after that matmul (fewer elements: [d, 128] instead of
 * [128, S]): the reciprocal, broadcast to [128, d] and transposed,
 * multiplies out^T, which is stored transposed into the output rows.
 *
 * Arguments: q, k, v, then optionally use_causal_mask (scalar, default 0)
 * and mixed_precision (scalar, default 1: Tensor-engine operands in bf16
 * with fp32 accumulation; 0: in the inputs' dtype). Intermediates are in
 * q's dtype (kernel_dtype), as in the tutorial.
 *
 * Where the API differs from the tutorial: nl.load(..., dtype=bf16) and
 * nl.load_transpose2d(..., dtype=bf16) are the DMA followed by a cast (DMA
 * here does not convert; the q tile's cast is the scaling multiply's own);
 * tensor_reduce has no negate, so the maximum of the row is
 * taken as is and negated once ([128, 1]) instead of taking the minimum of
 * negated per-tile maxima. The causal mask's affine_select runs on the
 * GpSimd engine, which cannot read PSUM ([ISA] wants on_true_tile in
 * SBUF), so the scores are copied out of PSUM first; the tutorial passes
 * the PSUM tile itself.
 */
#include "kernels.h"

#include <float.h>

#define TILE NK_PMAX /* 128 rows of q, k, v per tile */

/* nl.load(src, dtype=dt): the load, cast on chip when dt differs. */
static nk_tensor load_as(nk_ctx *nc, nk_tensor src, nk_dtype dt)
{
    nk_tensor t = nk_load(nc, src);
    return t.dtype == dt ? t : nk_copy(nc, t, dt);
}

static int flag(nk_ctx *nc, const nk_tensor *args, int nargs, int i, int dflt)
{
    return nargs > i ? nk_scalar(nc, args[i]) != 0 : dflt;
}
NK_KERNEL_DECL(nk_kernel_sd_attention);
void nk_kernel_sd_attention(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    nk_tensor q_ref = args[0], k_ref = args[1], v_ref = args[2];
    int use_causal_mask = flag(nc, args, nargs, 3, 0), mixed_precision = flag(nc, args, nargs, 4, 1);
    nk_dtype kernel_dtype = (nk_dtype)q_ref.dtype, pe_in_dt = mixed_precision ? NK_BF16 : kernel_dtype;
    int64_t seqlen = q_ref.shape[0], d_head = q_ref.shape[1];
    int64_t n_tiles = (seqlen + TILE - 1) / TILE; /* a partial tile runs past the tensor: an error */
    const float softmax_scale = (float)NK_SD_ATTENTION_SCALE;
    nk_tensor out_ref = nk_ndarray(nc, NK_SHAPE(seqlen, d_head), kernel_dtype, NK_SHARED_HBM);

    /* v as it lies: key rows on partitions, the key tiles side by side */
    nk_tensor trans_v = nk_ndarray(nc, NK_SHAPE(TILE, n_tiles, d_head), pe_in_dt, NK_SBUF);
    NK_AFFINE_RANGE(nc, j, n_tiles)
        nk_assign(nc, nk_ix(nc, trans_v, NK_ALL, nk_i(j), NK_ALL),
                  load_as(nc, nk_ix(nc, v_ref, nk_r(j * TILE, (j + 1) * TILE)), pe_in_dt));

    /* q^T and k^T tiles [d, 128] (the head dimension on partitions), read
     * transposed by the DMA */
    nk_tensor q_local = nk_ndarray(nc, NK_SHAPE(n_tiles, nk_par_dim(d_head), TILE), pe_in_dt, NK_SBUF);
    NK_AFFINE_RANGE(nc, i, n_tiles)
        nk_assign(nc, nk_ix(nc, q_local, nk_i(i)),
                  nk_multiply_s(nc, nk_load_transpose2d(nc, nk_ix(nc, q_ref, nk_r(i * TILE, (i + 1) * TILE))),
                                softmax_scale));
    nk_tensor k_local = nk_ndarray(nc, NK_SHAPE(n_tiles, nk_par_dim(d_head), TILE), pe_in_dt, NK_SBUF);
    NK_AFFINE_RANGE(nc, j, n_tiles)
        nk_assign(nc, nk_ix(nc, k_local, nk_i(j)),
                  nk_load_transpose2d(nc, nk_ix(nc, k_ref, nk_r(j * TILE, (j + 1) * TILE))));

    NK_AFFINE_RANGE(nc, i, n_tiles) {
        /* the scores of this query tile against every key */
        nk_tensor qk_res_buf = nk_ndarray(nc, NK_SHAPE(TILE, seqlen), kernel_dtype, NK_SBUF);
        nk_tensor max_res = nk_ndarray(nc, NK_SHAPE(TILE, n_tiles), kernel_dtype, NK_SBUF);
        NK_AFFINE_RANGE(nc, j, n_tiles) {
            nk_range cols = nk_r(j * TILE, (j + 1) * TILE);
            nk_tensor qk_psum = nk_zeros(nc, NK_SHAPE(TILE, TILE), NK_F32, NK_PSUM);
            nk_assign_add(nc, qk_psum, nk_matmul(nc, nk_ix(nc, q_local, nk_i(i)), nk_ix(nc, k_local, nk_i(j)), 1));
            if (use_causal_mask) /* keep key <= query, the rest the fp32 minimum */
                nk_isa_affine_select(nc, nk_ix(nc, qk_res_buf, NK_ALL, cols),
                                     ((nk_affine){(int32_t)((i - j) * TILE), 1, {-1, 0, 0}}), NK_CMP_GE,
                                     nk_copy(nc, qk_psum, kernel_dtype), -FLT_MAX);
            else
                nk_assign(nc, nk_ix(nc, qk_res_buf, NK_ALL, cols), nk_copy(nc, qk_psum, kernel_dtype));
            nk_isa_tensor_reduce(nc, nk_ix(nc, max_res, NK_ALL, nk_r(j, j + 1)), nk_ix(nc, qk_res_buf, NK_ALL, cols),
                                 NK_ALU_MAX, 1, 1);
        }
        nk_tensor neg_max_res_final = nk_multiply_s(nc, nk_max(nc, max_res, 1, 1), -1.0f);

        /* one activation over the whole row of scores */
        nk_tensor exp_res = nk_ndarray(nc, NK_SHAPE(TILE, seqlen), kernel_dtype, NK_SBUF);
        nk_isa_activation(nc, exp_res, NK_ACT_EXP, qk_res_buf, nk_col(neg_max_res_final), nk_imm(1.0f), NK_NONE);
        nk_tensor sum_res = nk_sum(nc, exp_res, 1, 1);
        nk_tensor softmax_res = nk_copy(nc, exp_res, pe_in_dt);
        nk_tensor sum_divisor = nk_ndarray(nc, NK_SHAPE(TILE, d_head), kernel_dtype, NK_SBUF);
        nk_assign(nc, sum_divisor,
                  nk_broadcast(nc, nk_binary_scalar_at(nc, NK_HERE, NK_ALU_DIVIDE, sum_res, 1.0f, 1),
                               NK_SHAPE(TILE, d_head)));

        /* the weights transposed: key rows on partitions */
        nk_tensor trans_softmax_res = nk_ndarray(nc, NK_SHAPE(TILE, n_tiles, TILE), pe_in_dt, NK_SBUF);
        NK_AFFINE_RANGE(nc, j, n_tiles)
            nk_assign(nc, nk_ix(nc, trans_softmax_res, NK_ALL, nk_i(j), NK_ALL),
                      nk_transpose(nc, nk_ix(nc, softmax_res, NK_ALL, nk_r(j * TILE, (j + 1) * TILE))));

        /* out^T [d, 128] accumulated over the key tiles */
        nk_tensor attn_res_psum = nk_zeros(nc, NK_SHAPE(d_head, TILE), NK_F32, NK_PSUM);
        NK_AFFINE_RANGE(nc, j, n_tiles)
            nk_assign_add(nc, attn_res_psum,
                          nk_matmul(nc, nk_ix(nc, trans_v, NK_ALL, nk_i(j), NK_ALL),
                                    nk_ix(nc, trans_softmax_res, NK_ALL, nk_i(j), NK_ALL), 1));

        nk_tensor attn_res_sbuf = nk_copy(nc, attn_res_psum, kernel_dtype);
        nk_tensor attn_res_div = nk_multiply(nc, attn_res_sbuf, nk_transpose(nc, sum_divisor));

        /* out[i * 128 + f, p] = attn_res_div[p, f]: a transposed store */
        int64_t extent[2] = {d_head, TILE};
        nk_aidx idx[2] = {{i * TILE, {0, 1}}, {0, {1, 0}}};
        nk_store(nc, nk_ap(nc, out_ref, 2, extent, idx), attn_res_div);
    }
    nk_return(nc, out_ref);
}
