/*
 * matmul_hoisted - the first step of NKI's matmul optimisation ladder:
 * result[M, N] = lhsT[K, M]^T @ rhs[K, N] with the loads hoisted out of
 * the innermost loop. For each 128-column strip m of lhsT, every K tile of
 * that strip is loaded once into a tile array lhsT_tiles[k] and reused for
 * all N/512 output tiles of the strip; for each n the K tiles of rhs's
 * 512-column strip are loaded into rhs_tiles[k]; then the K loop only
 * multiplies, accumulating in one PSUM bank. The finished tile is cast to
 * lhsT's dtype and stored.
 *
 * lhsT_tiles is declared 512 columns wide, as the tutorial declares it
 * (TILE_N where TILE_M is meant): only columns 0..127 of each block are
 * written and read, but the allocator sees the tutorial's footprint.
 *
 * M and K must be multiples of 128 and N of 512 (the tutorial asserts it):
 * otherwise the last tile's slice runs past the tensor and tracing stops
 * with a bounds error at the load.
 */
#include "kernels.h"

#define TILE_M NK_GEMM_STATIONARY_FMAX /* 128 */
#define TILE_K NK_PMAX                 /* 128 */
#define TILE_N NK_GEMM_MOVING_FMAX     /* 512 */

static int64_t tiles(int64_t n, int64_t t) { return (n + t - 1) / t; }
NK_KERNEL_DECL(nk_kernel_matmul_hoisted);
void nk_kernel_matmul_hoisted(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor lhsT = args[0], rhs = args[1];
    int64_t K = lhsT.shape[0], M = lhsT.shape[1], N = rhs.shape[1];
    int64_t KT = tiles(K, TILE_K);
    nk_tensor result = nk_ndarray(nc, NK_SHAPE(M, N), lhsT.dtype, NK_SHARED_HBM);

    NK_AFFINE_RANGE(nc, m, tiles(M, TILE_M)) {
        /* a whole strip of lhsT: K/128 tiles of [128, 128] */
        nk_tensor lhsT_tiles = nk_ndarray(nc, NK_SHAPE(KT, nk_par_dim(TILE_K), TILE_N), lhsT.dtype, NK_SBUF);
        NK_AFFINE_RANGE(nc, k, KT)
            nk_assign(nc, nk_ix(nc, lhsT_tiles, nk_i(k), NK_ALL, nk_r(0, TILE_M)),
                      nk_load(nc, nk_ix(nc, lhsT, nk_r(k * TILE_K, (k + 1) * TILE_K),
                                        nk_r(m * TILE_M, (m + 1) * TILE_M))));

        NK_AFFINE_RANGE(nc, n, tiles(N, TILE_N)) {
            nk_tensor rhs_tiles = nk_ndarray(nc, NK_SHAPE(KT, nk_par_dim(TILE_K), TILE_N), rhs.dtype, NK_SBUF);
            NK_AFFINE_RANGE(nc, k, KT)
                nk_assign(nc, nk_ix(nc, rhs_tiles, nk_i(k)),
                          nk_load(nc, nk_ix(nc, rhs, nk_r(k * TILE_K, (k + 1) * TILE_K),
                                            nk_r(n * TILE_N, (n + 1) * TILE_N))));

            nk_tensor res_psum = nk_zeros(nc, NK_SHAPE(TILE_M, TILE_N), NK_F32, NK_PSUM);
            NK_AFFINE_RANGE(nc, k, KT)
                nk_assign_add(nc, res_psum,
                              nk_matmul(nc, nk_ix(nc, lhsT_tiles, nk_i(k), NK_ALL, nk_r(0, TILE_M)),
                                        nk_ix(nc, rhs_tiles, nk_i(k)), 1));

            nk_tensor res_sb = nk_copy(nc, res_psum, result.dtype);
            nk_store(nc, nk_ix(nc, result, nk_r(m * TILE_M, (m + 1) * TILE_M), nk_r(n * TILE_N, (n + 1) * TILE_N)),
                     res_sb);
        }
    }
    nk_return(nc, result);
}
