/*
 * sequence - two kernels composed into one device program with nk_launch:
 * a producer (lhsT scaled by 2 on the Vector engine) feeding matmul_basic
 * (128 x 128 x 512), as a model's call sequence would run them.
 *
 *   seq_scale_matmul_hbm     the producer stores its result to HBM and the
 *                            matmul loads it back, as NKI requires of a
 *                            kernel's inputs and outputs;
 *   seq_scale_matmul_onchip  the producer returns its SBUF tile and the
 *                            matmul reads it where it is: no store, no load.
 *
 * matmul_basic is the same kernel in both: in a launched kernel, an nk_load
 * of an on-chip tile is the tile. `nklab diff` of the two profiles shows
 * the DMA bytes and the time the hand-off saves.
 */
#include "kernels.h"

/* y = 2 x, x [K, M] in HBM: y stored to a new HBM tensor */
static void scale_to_hbm(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = args[0];
    nk_tensor y = nk_multiply_s(nc, nk_load(nc, x), 2.0f);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(x.shape[0], x.shape[1]), x.dtype, NK_SHARED_HBM);
    nk_store(nc, out, y);
    nk_return(nc, out);
}

/* the same, y returned as the SBUF tile it is computed in */
static void scale_on_chip(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_return(nc, nk_multiply_s(nc, nk_load(nc, args[0]), 2.0f));
}

static void scale_matmul(nk_ctx *nc, const nk_tensor *args, nk_kernel_fn producer)
{
    nk_tensor y, out;
    if (nk_launch(nc, "scale", producer, &args[0], 1, &y, 1) != 1)
        return;
    nk_tensor margs[2] = {y, args[1]};
    if (nk_launch(nc, "matmul_basic", nk_kernel_matmul_basic, margs, 2, &out, 1) != 1)
        return;
    nk_return(nc, out);
}
NK_KERNEL_DECL(nk_kernel_seq_scale_matmul_hbm);
void nk_kernel_seq_scale_matmul_hbm(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    scale_matmul(nc, args, scale_to_hbm);
}
NK_KERNEL_DECL(nk_kernel_seq_scale_matmul_onchip);
void nk_kernel_seq_scale_matmul_onchip(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    scale_matmul(nc, args, scale_on_chip);
}
