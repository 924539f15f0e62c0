/*
 * rmsnorm - y = x / sqrt(mean(x^2) + eps) * gamma over the rows of x[N, D],
 * gamma[D], eps = NK_RMSNORM_EPS, 128 rows a tile, partial last tile masked.
 *
 * gamma is put on all 128 partitions once, before the row loop: a ones row
 * times gamma on the Tensor engine (a partition broadcast), 512 columns (one
 * PSUM bank) at a time. Per tile: one Scalar-engine activation squares x and
 * adds each row up; one Vector instruction turns the sum into mean + eps;
 * rsqrt on the Scalar engine; x times that column, times gamma. Intermediates
 * are fp32; the output has x's dtype.
 */
#include "kernels.h"

#define CHUNK NK_PSUM_FMAX /* fp32 columns per PSUM bank */

/* gamma[D] -> an fp32 SBUF tile [128, D] with gamma on every partition. */
static nk_tensor broadcast_gamma(nk_ctx *nc, nk_tensor gamma, int64_t D)
{
    nk_tensor g_row = nk_load(nc, nk_reshape(nc, gamma, NK_SHAPE(1, D)));
    nk_tensor ones = nk_full(nc, NK_SHAPE(1, NK_PMAX), 1.0, gamma.dtype, NK_SBUF);
    nk_tensor g_all = nk_ndarray(nc, NK_SHAPE(NK_PMAX, D), NK_F32, NK_SBUF);
    NK_AFFINE_RANGE(nc, c, (D + CHUNK - 1) / CHUNK) {
        nk_range rc = nk_rmask(c * CHUNK, (c + 1) * CHUNK, D);
        int64_t w = (c + 1) * CHUNK <= D ? CHUNK : D - c * CHUNK;
        nk_tensor ps = nk_ndarray(nc, NK_SHAPE(NK_PMAX, w), NK_F32, NK_PSUM);
        nk_isa_nc_matmul(nc, ps, ones, nk_ix(nc, g_row, NK_ALL, rc), 0);
        nk_isa_tensor_copy(nc, nk_ix(nc, g_all, NK_ALL, rc), ps);
    }
    return g_all;
}
NK_KERNEL_DECL(nk_kernel_rmsnorm);
void nk_kernel_rmsnorm(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = args[0], gamma = args[1];
    int64_t rows = x.shape[0], D = x.shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, D), x.dtype, NK_SHARED_HBM);
    nk_tensor g_all = broadcast_gamma(nc, gamma, D);
    NK_AFFINE_RANGE(nc, i, (rows + NK_PMAX - 1) / NK_PMAX) {
        nk_range r = nk_rmask(i * NK_PMAX, (i + 1) * NK_PMAX, rows);
        nk_tensor xt = nk_load(nc, nk_ix(nc, x, r, NK_ALL));
        int64_t p = xt.shape[0];
        /* work holds x^2, then (its squares consumed) x / rms */
        nk_tensor work = nk_ndarray(nc, NK_SHAPE(p, D), NK_F32, NK_SBUF);
        nk_tensor sumsq = nk_ndarray(nc, NK_SHAPE(p, 1), NK_F32, NK_SBUF);
        nk_isa_activation(nc, work, NK_ACT_SQUARE, xt, nk_imm(0.0f), nk_imm(1.0f), sumsq);
        nk_tensor ms = nk_ndarray(nc, NK_SHAPE(p, 1), NK_F32, NK_SBUF);
        nk_isa_tensor_scalar(nc, ms, sumsq, NK_ALU_MULTIPLY, nk_imm(1.0f / (float)D), 0, NK_ALU_ADD,
                             nk_imm((float)NK_RMSNORM_EPS), 0);
        nk_tensor inv = nk_rsqrt(nc, ms);
        nk_isa_tensor_scalar(nc, work, xt, NK_ALU_MULTIPLY, nk_col(inv), 0, NK_ALU_BYPASS, nk_imm(0.0f), 0);
        nk_tensor y = nk_ndarray(nc, NK_SHAPE(p, D), out.dtype, NK_SBUF);
        nk_isa_tensor_tensor(nc, y, work, nk_ix(nc, g_all, nk_r(0, p)), NK_ALU_MULTIPLY);
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), y);
    }
    nk_return(nc, out);
}
