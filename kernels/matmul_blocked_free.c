/*
 * matmul_blocked_free - the second step of NKI's matmul ladder:
 * result[M, N] = lhsT[K, M]^T @ rhs[K, N] with both free dimensions blocked.
 * A block of 2 x 128 columns of lhsT (all K tiles of both strips) and a
 * block of 2 x 512 columns of rhs are loaded into two-level tile arrays,
 * then each of the 2 x 2 output tiles of the block pair is accumulated over
 * K in PSUM, cast to lhsT's dtype and stored. Every loaded tile now serves
 * two output tiles instead of one, halving HBM traffic per matmul.
 *
 * M must be a multiple of 256, N of 1024, K of 128 (the tutorial asserts
 * it); other sizes run a slice past the tensor and tracing stops with a
 * bounds error at the load.
 */
#include "kernels.h"

#define TILE_M NK_GEMM_STATIONARY_FMAX /* 128 */
#define TILE_K NK_PMAX                 /* 128 */
#define TILE_N NK_GEMM_MOVING_FMAX     /* 512 */
#define TILES_IN_BLOCK_M 2
#define TILES_IN_BLOCK_N 2
#define BLOCK_M (TILE_M * TILES_IN_BLOCK_M) /* 256 */
#define BLOCK_N (TILE_N * TILES_IN_BLOCK_N) /* 1024 */

static int64_t tiles(int64_t n, int64_t t) { return (n + t - 1) / t; }
NK_KERNEL_DECL(nk_kernel_matmul_blocked_free);
void nk_kernel_matmul_blocked_free(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor lhsT = args[0], rhs = args[1];
    int64_t K = lhsT.shape[0], M = lhsT.shape[1], N = rhs.shape[1];
    int64_t KT = tiles(K, TILE_K);
    nk_tensor result = nk_ndarray(nc, NK_SHAPE(M, N), lhsT.dtype, NK_SHARED_HBM);

    NK_AFFINE_RANGE(nc, m, tiles(M, BLOCK_M)) {
        nk_tensor lhsT_tiles = nk_ndarray(nc, NK_SHAPE(TILES_IN_BLOCK_M, KT, nk_par_dim(TILE_K), TILE_M), lhsT.dtype,
                                          NK_SBUF);
        NK_AFFINE_RANGE(nc, bm, TILES_IN_BLOCK_M) {
            int64_t c0 = (m * TILES_IN_BLOCK_M + bm) * TILE_M;
            NK_AFFINE_RANGE(nc, k, KT)
                nk_assign(nc, nk_ix(nc, lhsT_tiles, nk_i(bm), nk_i(k)),
                          nk_load(nc, nk_ix(nc, lhsT, nk_r(k * TILE_K, (k + 1) * TILE_K), nk_r(c0, c0 + TILE_M))));
        }

        NK_AFFINE_RANGE(nc, n, tiles(N, BLOCK_N)) {
            nk_tensor rhs_tiles = nk_ndarray(nc, NK_SHAPE(TILES_IN_BLOCK_N, KT, nk_par_dim(TILE_K), TILE_N),
                                             rhs.dtype, NK_SBUF);
            NK_AFFINE_RANGE(nc, bn, TILES_IN_BLOCK_N) {
                int64_t c0 = (n * TILES_IN_BLOCK_N + bn) * TILE_N;
                NK_AFFINE_RANGE(nc, k, KT)
                    nk_assign(nc, nk_ix(nc, rhs_tiles, nk_i(bn), nk_i(k)),
                              nk_load(nc, nk_ix(nc, rhs, nk_r(k * TILE_K, (k + 1) * TILE_K), nk_r(c0, c0 + TILE_N))));
            }

            NK_AFFINE_RANGE(nc, bm, TILES_IN_BLOCK_M) {
                NK_AFFINE_RANGE(nc, bn, TILES_IN_BLOCK_N) {
                    nk_tensor res_psum = nk_zeros(nc, NK_SHAPE(TILE_M, TILE_N), NK_F32, NK_PSUM);
                    NK_AFFINE_RANGE(nc, k, KT)
                        nk_assign_add(nc, res_psum,
                                      nk_matmul(nc, nk_ix(nc, lhsT_tiles, nk_i(bm), nk_i(k)),
                                                nk_ix(nc, rhs_tiles, nk_i(bn), nk_i(k)), 1));

                    nk_tensor res_sb = nk_copy(nc, res_psum, result.dtype);
                    int64_t r0 = (m * TILES_IN_BLOCK_M + bm) * TILE_M, c0 = (n * TILES_IN_BLOCK_N + bn) * TILE_N;
                    nk_store(nc, nk_ix(nc, result, nk_r(r0, r0 + TILE_M), nk_r(c0, c0 + TILE_N)), res_sb);
                }
            }
        }
    }
    nk_return(nc, result);
}
