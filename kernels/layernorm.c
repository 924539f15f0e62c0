/*
 * layernorm - NKI's LayerNorm tutorial, the version written with language
 * ops only: y = (x - mean) / sqrt(var + eps) * gamma + beta over each row of
 * x[R, D], in tiles of 128 rows with the partial last tile masked.
 *
 * gamma and beta are loaded once as [1, D] rows and broadcast across the
 * 128 partitions before the row loop. Per tile the mean and the mean of
 * the squares come from two mean reductions and the variance as
 * E[x^2] - E[x]^2, as the tutorial computes it (one pass over the data,
 * but it cancels when |mean| is large against the spread: the tests bound
 * the error accordingly). Everything is in x's dtype (fp32 in the
 * tutorial); the reductions sum in fp32.
 *
 * Arguments, as the tutorial's kernel takes them: x, epsilon (a scalar,
 * 0-d), gamma[D], beta[D]; or x, gamma, beta with epsilon the tutorial
 * driver's NK_LAYERNORM_EPS.
 */
#include "kernels.h"
NK_KERNEL_DECL(nk_kernel_layernorm);
void nk_kernel_layernorm(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    int with_eps = nargs >= 4;
    nk_tensor x = args[0], gamma = args[1 + with_eps], beta = args[2 + with_eps];
    float eps = with_eps ? (float)nk_scalar(nc, args[1]) : (float)NK_LAYERNORM_EPS;
    int64_t rows = x.shape[0], D = x.shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, D), x.dtype, NK_SHARED_HBM);

    /* reused by every row tile */
    nk_tensor gamma_sb = nk_load(nc, nk_reshape(nc, gamma, NK_SHAPE(1, D)));
    nk_tensor beta_sb = nk_load(nc, nk_reshape(nc, beta, NK_SHAPE(1, D)));
    nk_tensor gamma_bcast = nk_broadcast(nc, gamma_sb, NK_SHAPE(NK_PMAX, D));
    nk_tensor beta_bcast = nk_broadcast(nc, beta_sb, NK_SHAPE(NK_PMAX, D));

    NK_AFFINE_RANGE(nc, i, (rows + NK_PMAX - 1) / NK_PMAX) {
        nk_range r = nk_rmask(i * NK_PMAX, (i + 1) * NK_PMAX, rows);
        nk_tensor x_sb = nk_load(nc, nk_ix(nc, x, r, NK_ALL));
        int64_t p = x_sb.shape[0];

        nk_tensor mean = nk_mean(nc, x_sb, 1, 1);
        nk_tensor var = nk_subtract(nc, nk_mean(nc, nk_square(nc, x_sb), 1, 1), nk_multiply(nc, mean, mean));

        nk_tensor shift_scale = nk_multiply(nc, nk_subtract(nc, x_sb, mean), nk_rsqrt(nc, nk_add_s(nc, var, eps)));

        nk_tensor y = nk_add(nc, nk_multiply(nc, shift_scale, nk_ix(nc, gamma_bcast, nk_r(0, p))),
                             nk_ix(nc, beta_bcast, nk_r(0, p)));
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), y);
    }
    nk_return(nc, out);
}
