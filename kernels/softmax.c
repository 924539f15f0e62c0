/*
 * softmax - row-wise softmax of x[N, D] (D up to a few thousand), 128 rows a
 * tile, partial last tile masked. The fused form: a max reduction on the
 * Vector engine, then one Scalar-engine activation computes exp(x - max)
 * with -max as a per-partition bias column and adds the row up on the way
 * out; the reciprocal of the sum multiplies the row as a column operand.
 * The output has x's dtype; everything in between is fp32.
 */
#include "kernels.h"
NK_KERNEL_DECL(nk_kernel_softmax);
void nk_kernel_softmax(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = args[0];
    int64_t rows = x.shape[0], D = x.shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, D), x.dtype, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, i, (rows + NK_PMAX - 1) / NK_PMAX) {
        nk_range r = nk_rmask(i * NK_PMAX, (i + 1) * NK_PMAX, rows);
        nk_tensor xt = nk_load(nc, nk_ix(nc, x, r, NK_ALL));
        int64_t p = xt.shape[0];
        nk_tensor mx = nk_ndarray(nc, NK_SHAPE(p, 1), NK_F32, NK_SBUF);
        nk_isa_tensor_reduce(nc, mx, xt, NK_ALU_MAX, 1, 1);
        nk_tensor neg_mx = nk_multiply_s(nc, mx, -1.0f);
        nk_tensor e = nk_ndarray(nc, NK_SHAPE(p, D), NK_F32, NK_SBUF);
        nk_tensor sum = nk_ndarray(nc, NK_SHAPE(p, 1), NK_F32, NK_SBUF);
        nk_isa_activation(nc, e, NK_ACT_EXP, xt, nk_col(neg_mx), nk_imm(1.0f), sum);
        nk_tensor inv = nk_reciprocal(nc, sum);
        nk_tensor y = nk_ndarray(nc, NK_SHAPE(p, D), out.dtype, NK_SBUF);
        nk_isa_tensor_scalar(nc, y, e, NK_ALU_MULTIPLY, nk_col(inv), 0, NK_ALU_BYPASS, nk_imm(0.0f), 0);
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), y);
    }
    nk_return(nc, out);
}
