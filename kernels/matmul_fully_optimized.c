/*
 * matmul_fully_optimized - the last step of NKI's matmul ladder:
 * result[M, N] = lhsT[K, M]^T @ rhs[K, N] with M, N and K all blocked.
 *
 * For each block of BLOCK_N = 1024 output columns, the result block lives
 * in SBUF for the whole K loop, in lhsT's dtype (bf16 in the tutorial), as
 * a tile array result_tiles[m * 16 + bm, bn] of [128, 512] tiles. K is
 * walked in blocks of BLOCK_K = 1024 rows by a sequential loop (the
 * tutorial keeps the compiler from reordering it): each K block loads rhs
 * as 8 slabs of [128, 1024] (wide DMAs), then for each block of BLOCK_M =
 * 2048 rows lhsT as 8 slabs of [128, 2048]; every output tile of the block
 * is accumulated over the 8 K tiles in one PSUM bank and the PSUM tile is
 * added into its SBUF result tile (a Vector add reading PSUM). After the K
 * loop, each 128-row strip of the block is packed into one [128, 1024]
 * tile so that a single DMA stores it.
 *
 * Arguments: lhsT, rhs, and optionally the tutorial's meta-parameters as
 * scalars (0-d arrays): TILES_IN_BLOCK_M (default 16), TILES_IN_BLOCK_N
 * (2), TILES_IN_BLOCK_K (8). M, N and K must be multiples of the block
 * sizes (the tutorial asserts it); otherwise a slice runs past the tensor
 * and tracing stops with a bounds error at the load.
 *
 * Differences the API imposes: the tutorial's result_tiles has five axes
 * (NUM_BLOCK_M, TILES_IN_BLOCK_M, TILES_IN_BLOCK_N, par_dim, 512); tiles
 * have at most four here (NK_MAXDIM), so the two M axes are one block axis
 * of NUM_BLOCK_M * TILES_IN_BLOCK_M. The result accumulates in lhsT's dtype across K blocks, as in the
 * tutorial: one rounding to bf16 per K block.
 */
#include "kernels.h"

#define TILE_M NK_GEMM_STATIONARY_FMAX /* 128 */
#define TILE_K NK_PMAX                 /* 128 */
#define TILE_N NK_GEMM_MOVING_FMAX     /* 512 */

static int64_t tiles(int64_t n, int64_t t) { return (n + t - 1) / t; }

/* The meta-parameter in args[i] when given, else the tutorial's default. */
static int64_t meta(nk_ctx *nc, const nk_tensor *args, int nargs, int i, int64_t dflt)
{
    if (nargs <= i)
        return dflt;
    double v = nk_scalar(nc, args[i]);
    return v >= 1 ? (int64_t)v : dflt;
}
NK_KERNEL_DECL(nk_kernel_matmul_fully_optimized);
void nk_kernel_matmul_fully_optimized(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    nk_tensor lhsT = args[0], rhs = args[1];
    int64_t TILES_IN_BLOCK_M = meta(nc, args, nargs, 2, 16);
    int64_t TILES_IN_BLOCK_N = meta(nc, args, nargs, 3, 2);
    int64_t TILES_IN_BLOCK_K = meta(nc, args, nargs, 4, 8);
    int64_t BLOCK_M = TILE_M * TILES_IN_BLOCK_M, BLOCK_N = TILE_N * TILES_IN_BLOCK_N;
    int64_t BLOCK_K = TILE_K * TILES_IN_BLOCK_K;
    int64_t K = lhsT.shape[0], M = lhsT.shape[1], N = rhs.shape[1];
    int64_t NUM_BLOCK_M = tiles(M, BLOCK_M), NUM_BLOCK_N = tiles(N, BLOCK_N), NUM_BLOCK_K = tiles(K, BLOCK_K);
    nk_tensor result = nk_ndarray(nc, NK_SHAPE(M, N), lhsT.dtype, NK_SHARED_HBM);

    NK_AFFINE_RANGE(nc, n, NUM_BLOCK_N) {
        /* the result block, zeroed: [m * TILES_IN_BLOCK_M + bm, bn] */
        nk_tensor result_tiles = nk_zeros(
            nc, NK_SHAPE(NUM_BLOCK_M * TILES_IN_BLOCK_M, TILES_IN_BLOCK_N, nk_par_dim(TILE_M), TILE_N), lhsT.dtype,
            NK_SBUF);

        NK_SEQUENTIAL_RANGE(nc, k, NUM_BLOCK_K) {
            /* rhs K block: TILES_IN_BLOCK_K slabs of [128, BLOCK_N] */
            nk_tensor rhs_tiles = nk_ndarray(nc, NK_SHAPE(TILES_IN_BLOCK_K, nk_par_dim(TILE_K), BLOCK_N), rhs.dtype,
                                             NK_SBUF);
            NK_AFFINE_RANGE(nc, bk_r, TILES_IN_BLOCK_K) {
                int64_t r0 = (TILES_IN_BLOCK_K * k + bk_r) * TILE_K;
                nk_assign(nc, nk_ix(nc, rhs_tiles, nk_i(bk_r)),
                          nk_load(nc, nk_ix(nc, rhs, nk_r(r0, r0 + TILE_K), nk_r(BLOCK_N * n, BLOCK_N * (n + 1)))));
            }

            NK_AFFINE_RANGE(nc, m, NUM_BLOCK_M) {
                /* lhsT K block: TILES_IN_BLOCK_K slabs of [128, BLOCK_M] */
                nk_tensor lhsT_tiles = nk_ndarray(nc, NK_SHAPE(TILES_IN_BLOCK_K, nk_par_dim(TILE_K), BLOCK_M),
                                                  lhsT.dtype, NK_SBUF);
                NK_AFFINE_RANGE(nc, bk_l, TILES_IN_BLOCK_K) {
                    int64_t r0 = (TILES_IN_BLOCK_K * k + bk_l) * TILE_K;
                    nk_assign(nc, nk_ix(nc, lhsT_tiles, nk_i(bk_l)),
                              nk_load(nc, nk_ix(nc, lhsT, nk_r(r0, r0 + TILE_K),
                                                nk_r(BLOCK_M * m, BLOCK_M * (m + 1)))));
                }

                NK_AFFINE_RANGE(nc, bn, TILES_IN_BLOCK_N) {
                    NK_AFFINE_RANGE(nc, bm, TILES_IN_BLOCK_M) {
                        nk_tensor res_tile = nk_zeros(nc, NK_SHAPE(TILE_M, TILE_N), NK_F32, NK_PSUM);
                        NK_AFFINE_RANGE(nc, bk, TILES_IN_BLOCK_K)
                            nk_assign_add(nc, res_tile,
                                          nk_matmul(nc,
                                                    nk_ix(nc, lhsT_tiles, nk_i(bk), NK_ALL,
                                                          nk_r(bm * TILE_M, (bm + 1) * TILE_M)),
                                                    nk_ix(nc, rhs_tiles, nk_i(bk), NK_ALL,
                                                          nk_r(bn * TILE_N, (bn + 1) * TILE_N)),
                                                    1));
                        /* accumulate on the result tile in SBUF */
                        nk_assign_add(nc, nk_ix(nc, result_tiles, nk_i(m * TILES_IN_BLOCK_M + bm), nk_i(bn)),
                                      res_tile);
                    }
                }
            }
        }

        /* pack each 128-row strip of the block and store it with one DMA */
        NK_AFFINE_RANGE(nc, m, NUM_BLOCK_M) {
            NK_AFFINE_RANGE(nc, bm, TILES_IN_BLOCK_M) {
                nk_tensor result_packed = nk_ndarray(nc, NK_SHAPE(TILE_M, BLOCK_N), lhsT.dtype, NK_SBUF);
                NK_AFFINE_RANGE(nc, bn, TILES_IN_BLOCK_N)
                    nk_assign(nc, nk_ix(nc, result_packed, NK_ALL, nk_r(bn * TILE_N, (bn + 1) * TILE_N)),
                              nk_copy(nc, nk_ix(nc, result_tiles, nk_i(m * TILES_IN_BLOCK_M + bm), nk_i(bn)),
                                      lhsT.dtype));
                int64_t r0 = (TILES_IN_BLOCK_M * m + bm) * TILE_M;
                nk_store(nc, nk_ix(nc, result, nk_r(r0, r0 + TILE_M), nk_r(BLOCK_N * n, BLOCK_N * (n + 1))),
                         result_packed);
            }
        }
    }
    nk_return(nc, result);
}
