/*
 * matmul_basic - NKI's single-tile matmul: result[M, N] = lhsT[K, M]^T @
 * rhs[K, N] with K, M <= 128 and N <= 512 (one Tensor-engine instruction):
 * lhsT is the stationary operand, rhs the moving one, the product
 * accumulates in fp32 in one PSUM bank and is cast to lhsT's dtype on the
 * way back to SBUF.
 */
#include "kernels.h"
NK_KERNEL_DECL(nk_kernel_matmul_basic);
void nk_kernel_matmul_basic(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor lhsT = args[0], rhs = args[1];
    int64_t M = lhsT.shape[1], N = rhs.shape[1];
    nk_tensor result = nk_ndarray(nc, NK_SHAPE(M, N), lhsT.dtype, NK_SHARED_HBM);
    nk_tensor stationary = nk_load(nc, lhsT);
    nk_tensor moving = nk_load(nc, rhs);
    nk_tensor psum = nk_ndarray(nc, NK_SHAPE(M, N), NK_F32, NK_PSUM);
    nk_isa_nc_matmul(nc, psum, stationary, moving, 0);
    nk_tensor res = nk_copy(nc, psum, result.dtype);
    nk_store(nc, result, res);
    nk_return(nc, result);
}
