/*
 * matmul_tiled - NKI's tiled matmul: result[M, N] = lhsT[K, M]^T @ rhs[K, N]
 * in output tiles of 128 x 512 (one PSUM bank of fp32 each). For each output
 * tile the K loop loads a 128 x 128 stationary tile and a 128 x 512 moving
 * tile and accumulates their product in the same PSUM tile (the first
 * matmul of the group overwrites, the rest add); the finished tile is cast
 * to lhsT's dtype in SBUF and stored. M, K, N are meant to be multiples of
 * 128, 128 and 512; other sizes give partial edge tiles clipped by masks.
 */
#include "kernels.h"

#define TILE_M NK_GEMM_STATIONARY_FMAX /* 128: stationary free size */
#define TILE_K NK_PMAX                 /* 128: contraction over partitions */
#define TILE_N NK_GEMM_MOVING_FMAX     /* 512: moving free size, one PSUM bank */
NK_KERNEL_DECL(nk_kernel_matmul_tiled);
void nk_kernel_matmul_tiled(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor lhsT = args[0], rhs = args[1];
    int64_t K = lhsT.shape[0], M = lhsT.shape[1], N = rhs.shape[1];
    nk_tensor result = nk_ndarray(nc, NK_SHAPE(M, N), lhsT.dtype, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, m, (M + TILE_M - 1) / TILE_M) {
        nk_range rm = nk_rmask(m * TILE_M, (m + 1) * TILE_M, M);
        NK_AFFINE_RANGE(nc, n, (N + TILE_N - 1) / TILE_N) {
            nk_range rn = nk_rmask(n * TILE_N, (n + 1) * TILE_N, N);
            int64_t tm = (m + 1) * TILE_M <= M ? TILE_M : M - m * TILE_M;
            int64_t tn = (n + 1) * TILE_N <= N ? TILE_N : N - n * TILE_N;
            nk_tensor acc = nk_ndarray(nc, NK_SHAPE(tm, tn), NK_F32, NK_PSUM);
            NK_AFFINE_RANGE(nc, k, (K + TILE_K - 1) / TILE_K) {
                nk_range rk = nk_rmask(k * TILE_K, (k + 1) * TILE_K, K);
                nk_tensor st = nk_load(nc, nk_ix(nc, lhsT, rk, rm));
                nk_tensor mv = nk_load(nc, nk_ix(nc, rhs, rk, rn));
                nk_isa_nc_matmul(nc, acc, st, mv, k > 0);
            }
            nk_tensor res = nk_copy(nc, acc, result.dtype);
            nk_store(nc, nk_ix(nc, result, rm, rn), res);
        }
    }
    nk_return(nc, result);
}
