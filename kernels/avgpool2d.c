/*
 * avgpool2d - NKI's average-pool tutorial: x[C, H, W] -> y[C, H/p, W/p],
 * the mean of each p x p window with stride p; rows and columns past the
 * last whole window are dropped. Channels on partitions (C <= 128), the
 * whole tensor in one tile, no loops.
 *
 * The tutorial reads the tile through one 5-D access pattern
 * [c, i_h, k_h, i_w, k_w] -> x[c, p i_h + k_h, p i_w + k_w] and sums axes
 * k_h and k_w in one reduction. Views have at most four axes here
 * (NK_MAXDIM), so the window is summed in two reductions over 4-D patterns:
 * first along k_w ([c, h, i_w, k_w] -> x[c, h, p i_w + k_w]), then along
 * k_h of that result ([c, i_h, i_w, k_h] -> s[c, p i_h + k_h, i_w]); the
 * sums are fp32, and the division by p * p writes x's dtype.
 *
 * Arguments: x, then optionally pool_size (a scalar; the tutorial's
 * NK_AVGPOOL2D_POOL = 2 without it).
 */
#include "kernels.h"
NK_KERNEL_DECL(nk_kernel_avgpool2d);
void nk_kernel_avgpool2d(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    nk_tensor in_tensor = args[0];
    int64_t pool = nargs >= 2 ? (int64_t)nk_scalar(nc, args[1]) : NK_AVGPOOL2D_POOL;
    int64_t sz_c = in_tensor.shape[0], sz_hin = in_tensor.shape[1], sz_win = in_tensor.shape[2];
    int64_t sz_hout = sz_hin / pool, sz_wout = sz_win / pool;
    nk_tensor out_tensor = nk_ndarray(nc, NK_SHAPE(sz_c, sz_hout, sz_wout), in_tensor.dtype, NK_SHARED_HBM);

    nk_tensor in_tile = nk_load(nc, in_tensor);

    /* sum along k_w: [c, h, i_w, k_w] -> in_tile[c, h, pool * i_w + k_w] */
    int64_t ext_w[4] = {sz_c, sz_hout * pool, sz_wout, pool};
    nk_aidx by_w[3] = {{0, {1, 0, 0, 0}}, {0, {0, 1, 0, 0}}, {0, {0, 0, pool, 1}}};
    nk_tensor row_sum = nk_ndarray(nc, NK_SHAPE(sz_c, sz_hout * pool, sz_wout), NK_F32, NK_SBUF);
    nk_isa_tensor_reduce(nc, row_sum, nk_ap(nc, in_tile, 4, ext_w, by_w), NK_ALU_ADD, 3, 0);

    /* sum along k_h: [c, i_h, i_w, k_h] -> row_sum[c, pool * i_h + k_h, i_w] */
    int64_t ext_h[4] = {sz_c, sz_hout, sz_wout, pool};
    nk_aidx by_h[3] = {{0, {1, 0, 0, 0}}, {0, {0, pool, 0, 1}}, {0, {0, 0, 1, 0}}};
    nk_tensor win_sum = nk_ndarray(nc, NK_SHAPE(sz_c, sz_hout, sz_wout), NK_F32, NK_SBUF);
    nk_isa_tensor_reduce(nc, win_sum, nk_ap(nc, row_sum, 4, ext_h, by_h), NK_ALU_ADD, 3, 0);

    nk_tensor out_tile = nk_ndarray(nc, NK_SHAPE(sz_c, sz_hout, sz_wout), out_tensor.dtype, NK_SBUF);
    nk_isa_tensor_scalar(nc, out_tile, win_sum, NK_ALU_DIVIDE, nk_imm((float)(pool * pool)), 0, NK_ALU_BYPASS,
                         nk_imm(0.0f), 0);
    nk_store(nc, out_tensor, out_tile);
    nk_return(nc, out_tensor);
}
