/*
 * layernorm_bn - NKI's LayerNorm tutorial, the version with ISA ops: the
 * same y = (x - mean) / sqrt(var + eps) * gamma + beta over the rows of
 * x[R, D] in 128-row tiles (partial last tile masked), with the row
 * statistics from the Vector engine's batch-norm instructions.
 *
 * Per tile: bn_stats over each 512-column chunk of the row
 * (nl.tile_size.bn_stats_fmax; the last chunk masked to the columns left)
 * writes six statistics per chunk side by side into one tile; bn_aggr
 * merges them into the mean and the variance (no E[x^2] - E[x]^2
 * cancellation); rsqrt(var + eps); one tensor_scalar subtracts the mean and
 * multiplies by that in a single instruction; then gamma and beta, loaded
 * and broadcast across partitions once, as in the language-ops version
 * (layernorm.c).
 *
 * Arguments: x, epsilon (a scalar, 0-d), gamma[D], beta[D]; or x, gamma,
 * beta with epsilon the tutorial driver's NK_LAYERNORM_EPS.
 */
#include "kernels.h"

#define BN_STATS_FMAX 512 /* nl.tile_size.bn_stats_fmax */
#define BN_STATS_DIM 6    /* statistics per bn_stats */
NK_KERNEL_DECL(nk_kernel_layernorm_bn);
void nk_kernel_layernorm_bn(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    int with_eps = nargs >= 4;
    nk_tensor x = args[0], gamma = args[1 + with_eps], beta = args[2 + with_eps];
    float eps = with_eps ? (float)nk_scalar(nc, args[1]) : (float)NK_LAYERNORM_EPS;
    int64_t rows = x.shape[0], D = x.shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, D), x.dtype, NK_SHARED_HBM);

    nk_tensor gamma_sb = nk_load(nc, nk_reshape(nc, gamma, NK_SHAPE(1, D)));
    nk_tensor beta_sb = nk_load(nc, nk_reshape(nc, beta, NK_SHAPE(1, D)));
    nk_tensor gamma_bcast = nk_broadcast(nc, gamma_sb, NK_SHAPE(NK_PMAX, D));
    nk_tensor beta_bcast = nk_broadcast(nc, beta_sb, NK_SHAPE(NK_PMAX, D));

    NK_AFFINE_RANGE(nc, i, (rows + NK_PMAX - 1) / NK_PMAX) {
        nk_range r = nk_rmask(i * NK_PMAX, (i + 1) * NK_PMAX, rows);
        nk_tensor x_sb = nk_load(nc, nk_ix(nc, x, r, NK_ALL));
        int64_t p = x_sb.shape[0];

        /* statistics of each 512-column chunk, side by side */
        int64_t num_bn_stats = (D + BN_STATS_FMAX - 1) / BN_STATS_FMAX;
        nk_tensor stats = nk_ndarray(nc, NK_SHAPE(p, BN_STATS_DIM * num_bn_stats), NK_F32, NK_SBUF);
        NK_AFFINE_RANGE(nc, j, num_bn_stats)
            nk_isa_bn_stats(nc, nk_ix(nc, stats, NK_ALL, nk_r(j * BN_STATS_DIM, (j + 1) * BN_STATS_DIM)),
                            nk_ix(nc, x_sb, NK_ALL, nk_rmask(j * BN_STATS_FMAX, (j + 1) * BN_STATS_FMAX, D)));

        /* mean in column 0, variance in column 1 */
        nk_tensor mean_var = nk_ndarray(nc, NK_SHAPE(p, 2), NK_F32, NK_SBUF);
        nk_isa_bn_aggr(nc, mean_var, stats);
        nk_tensor mean = nk_ix(nc, mean_var, NK_ALL, nk_r(0, 1)), var = nk_ix(nc, mean_var, NK_ALL, nk_r(1, 2));

        nk_tensor scale_var = nk_rsqrt(nc, nk_add_s(nc, var, eps));

        /* (x - mean) * scale_var: two ALU ops in one instruction */
        nk_tensor shift_scale = nk_ndarray(nc, NK_SHAPE(p, D), x.dtype, NK_SBUF);
        nk_isa_tensor_scalar(nc, shift_scale, x_sb, NK_ALU_SUBTRACT, nk_col(mean), 0, NK_ALU_MULTIPLY,
                             nk_col(scale_var), 0);

        nk_tensor y = nk_add(nc, nk_multiply(nc, shift_scale, nk_ix(nc, gamma_bcast, nk_r(0, p))),
                             nk_ix(nc, beta_bcast, nk_r(0, p)));
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), y);
    }
    nk_return(nc, out);
}
