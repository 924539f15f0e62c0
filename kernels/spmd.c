/*
 * spmd - two kernels written for a launch grid (NKI's kernel[gx, gy]), each
 * program instance taking its share of the output tiles by nk_program_id:
 *
 *   spmd_tensor_add  c = a + b, 128 x 512 tiles; axis 0 of the grid splits
 *                    the row tiles, axis 1 (if any) the column tiles.
 *   spmd_matmul      out[M, N] = lhsT[K, M]^T @ rhs[K, N], 128 x 512 output
 *                    tiles split the same way, K accumulated in PSUM.
 *
 * Any grid works (none, 1-D or 2-D; more instances than tiles leaves some
 * idle): instance p of n along an axis takes tiles [p*T/n, (p+1)*T/n) of
 * the T tiles along it. The instances share the output tensor (NKI's
 * shared_hbm): each creates it, and all create the same one.
 */
#include "kernels.h"

#define TILE_P NK_PMAX /* rows per tile: the partitions */
#define TILE_F 512     /* columns per tile; the moving free size of a matmul */

/* This instance's share [*lo, *hi) of t tiles along grid axis `axis`. */
static void share(nk_ctx *nc, int axis, int64_t t, int64_t *lo, int64_t *hi)
{
    int64_t p = 0, n = 1;
    if (axis < nk_program_ndim(nc)) {
        p = nk_program_id(nc, axis);
        n = nk_num_programs(nc, axis);
    }
    *lo = p * t / n;
    *hi = (p + 1) * t / n;
}
NK_KERNEL_DECL(nk_kernel_spmd_tensor_add);
void nk_kernel_spmd_tensor_add(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = args[0], b = args[1];
    int64_t rows = a.shape[0], cols = a.shape[1], i0, i1, j0, j1;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, cols), a.dtype, NK_SHARED_HBM);
    share(nc, 0, (rows + TILE_P - 1) / TILE_P, &i0, &i1);
    share(nc, 1, (cols + TILE_F - 1) / TILE_F, &j0, &j1);
    NK_AFFINE_RANGE(nc, ii, i1 - i0) {
        NK_AFFINE_RANGE(nc, jj, j1 - j0) {
            int64_t i = i0 + ii, j = j0 + jj;
            nk_range r = nk_rmask(i * TILE_P, (i + 1) * TILE_P, rows);
            nk_range c = nk_rmask(j * TILE_F, (j + 1) * TILE_F, cols);
            nk_tensor sum = nk_add(nc, nk_load(nc, nk_ix(nc, a, r, c)), nk_load(nc, nk_ix(nc, b, r, c)));
            if (sum.dtype != out.dtype)
                sum = nk_copy(nc, sum, out.dtype);
            nk_store(nc, nk_ix(nc, out, r, c), sum);
        }
    }
    nk_return(nc, out);
}
NK_KERNEL_DECL(nk_kernel_spmd_matmul);
void nk_kernel_spmd_matmul(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor lhsT = args[0], rhs = args[1];
    int64_t K = lhsT.shape[0], M = lhsT.shape[1], N = rhs.shape[1], i0, i1, j0, j1;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(M, N), lhsT.dtype, NK_SHARED_HBM);
    share(nc, 0, (M + TILE_P - 1) / TILE_P, &i0, &i1);
    share(nc, 1, (N + TILE_F - 1) / TILE_F, &j0, &j1);
    NK_AFFINE_RANGE(nc, ii, i1 - i0) {
        NK_AFFINE_RANGE(nc, jj, j1 - j0) {
            int64_t m = i0 + ii, n = j0 + jj;
            nk_range rm = nk_rmask(m * TILE_P, (m + 1) * TILE_P, M);
            nk_range rn = nk_rmask(n * TILE_F, (n + 1) * TILE_F, N);
            int64_t tm = (m + 1) * TILE_P <= M ? TILE_P : M - m * TILE_P;
            int64_t tn = (n + 1) * TILE_F <= N ? TILE_F : N - n * TILE_F;
            nk_tensor acc = nk_ndarray(nc, NK_SHAPE(tm, tn), NK_F32, NK_PSUM);
            NK_AFFINE_RANGE(nc, k, (K + TILE_P - 1) / TILE_P) {
                nk_range rk = nk_rmask(k * TILE_P, (k + 1) * TILE_P, K);
                nk_tensor st = nk_load(nc, nk_ix(nc, lhsT, rk, rm));
                nk_tensor mv = nk_load(nc, nk_ix(nc, rhs, rk, rn));
                nk_isa_nc_matmul(nc, acc, st, mv, k > 0);
            }
            nk_store(nc, nk_ix(nc, out, rm, rn), nk_copy(nc, acc, out.dtype));
        }
    }
    nk_return(nc, out);
}
