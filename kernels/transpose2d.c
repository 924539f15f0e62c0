/*
 * transpose2d - NKI's transpose2d tutorial: each partition row of x[P, F]
 * holds a row-major F1 x F2 matrix (F = F1 * F2); the output row holds its
 * F2 x F1 transpose, y[p, j * F1 + i] = x[p, i * F2 + j]. A transpose
 * within each partition, along the free axis only (the partition axis
 * stays; swapping it with the free axis would be nc_transpose).
 *
 * One load, one copy between two access patterns of the same [P, F1, F2]
 * index space - the source read row-major (i * F2 + j), the destination
 * written column-major (j * F1 + i) - and one store. P <= 128.
 *
 * Arguments: x, then the tutorial's shape2D = (F1, F2) as two scalars;
 * without them F1 = NK_TRANSPOSE2D_F1 (the tutorial's 3) and F2 = F / F1.
 */
#include "kernels.h"
NK_KERNEL_DECL(nk_kernel_transpose2d);
void nk_kernel_transpose2d(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    nk_tensor in_tensor = args[0];
    int64_t sz_p = in_tensor.shape[0], sz_f = in_tensor.shape[1];
    int64_t sz_f1 = nargs >= 3 ? (int64_t)nk_scalar(nc, args[1]) : NK_TRANSPOSE2D_F1;
    int64_t sz_f2 = nargs >= 3 ? (int64_t)nk_scalar(nc, args[2]) : sz_f / sz_f1;
    nk_tensor out_tensor = nk_ndarray(nc, NK_SHAPE(sz_p, sz_f), in_tensor.dtype, NK_SHARED_HBM);

    nk_tensor in_tile = nk_load(nc, in_tensor);

    /* the index space [p, i_f1, i_f2] read as in_tile[p, i_f1 * F2 + i_f2]
     * and written as out_tile[p, i_f2 * F1 + i_f1] */
    int64_t extent[3] = {sz_p, sz_f1, sz_f2};
    nk_aidx src[2] = {{0, {1, 0, 0}}, {0, {0, sz_f2, 1}}};
    nk_aidx dst[2] = {{0, {1, 0, 0}}, {0, {0, 1, sz_f1}}};
    nk_tensor out_tile = nk_ndarray(nc, NK_SHAPE(sz_p, sz_f2 * sz_f1), out_tensor.dtype, NK_SBUF);
    nk_assign(nc, nk_ap(nc, out_tile, 3, extent, dst), nk_copy(nc, nk_ap(nc, in_tile, 3, extent, src), out_tile.dtype));

    nk_store(nc, out_tensor, out_tile);
    nk_return(nc, out_tensor);
}
