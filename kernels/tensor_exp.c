/*
 * tensor_exp - NKI's profiling example: exp over a 2-D tensor in tiles of 128
 * rows, the partial last tile clipped by a mask (nl.exp over [250, 512]).
 */
#include "kernels.h"
NK_KERNEL_DECL(nk_kernel_tensor_exp);
void nk_kernel_tensor_exp(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    int64_t rows = in.shape[0], cols = in.shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, cols), in.dtype, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, i, (rows + NK_PMAX - 1) / NK_PMAX) {
        nk_range r = nk_rmask(i * NK_PMAX, (i + 1) * NK_PMAX, rows);
        nk_tensor tile = nk_load(nc, nk_ix(nc, in, r, NK_ALL));
        nk_tensor e = nk_exp(nc, tile);
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), e);
    }
    nk_return(nc, out);
}
