/*
 * tensor_add - NKI's first tutorial: c = a + b over a 2-D tensor of any shape,
 * in tiles of 128 rows x 512 columns; the partial tiles at the bottom and
 * right edges are clipped by masks. b has a's shape; the result has a's
 * dtype (a mixed-dtype sum is computed in the promoted dtype, then cast).
 */
#include "kernels.h"

#define TILE_P NK_PMAX /* rows per tile: the partitions */
#define TILE_F 512     /* columns per tile */
NK_KERNEL_DECL(nk_kernel_tensor_add);
void nk_kernel_tensor_add(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = args[0], b = args[1];
    int64_t rows = a.shape[0], cols = a.shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, cols), a.dtype, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, i, (rows + TILE_P - 1) / TILE_P) {
        NK_AFFINE_RANGE(nc, j, (cols + TILE_F - 1) / TILE_F) {
            nk_range r = nk_rmask(i * TILE_P, (i + 1) * TILE_P, rows);
            nk_range c = nk_rmask(j * TILE_F, (j + 1) * TILE_F, cols);
            nk_tensor at = nk_load(nc, nk_ix(nc, a, r, c));
            nk_tensor bt = nk_load(nc, nk_ix(nc, b, r, c));
            nk_tensor sum = nk_add(nc, at, bt);
            if (sum.dtype != out.dtype)
                sum = nk_copy(nc, sum, out.dtype);
            nk_store(nc, nk_ix(nc, out, r, c), sum);
        }
    }
    nk_return(nc, out);
}
