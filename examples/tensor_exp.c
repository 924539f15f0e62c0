/*
 * tensor_exp.c - NKI's profiling example, exp over a [250, 512] tensor, as a
 * kernel in a file of your own. Run, benchmark or profile it with
 *
 *   nklab run     examples/tensor_exp.c:tensor_exp --random in=250x512:float32 --out y.npy
 *   nklab bench   examples/tensor_exp.c:tensor_exp --random in=250x512:float32
 *   nklab profile examples/tensor_exp.c:tensor_exp --random in=250x512:float32 -o exp.nkp
 *
 * nklab compiles this file with the system C compiler against nklab.h and
 * calls the function named after the ':'. Kernel errors are reported with
 * this file's line numbers.
 */
#include "nklab.h"

/* The kernel's one argument is the input tensor in HBM; the function returns
 * its output with nk_return, as an NKI kernel returns its result. */
void tensor_exp(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    int64_t rows = in.shape[0], cols = in.shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, cols), in.dtype, NK_SHARED_HBM);

    /* Tiles of 128 rows (the partition limit); the iterations are independent,
     * so the tiles rotate through buffers and loads overlap the exp. */
    NK_AFFINE_RANGE(nc, t, (rows + NK_PMAX - 1) / NK_PMAX) {
        /* rows t*128 .. t*128+127, those past the end masked off (250 = 128 + 122) */
        nk_range r = nk_rmask(t * NK_PMAX, (t + 1) * NK_PMAX, rows);
        nk_tensor tile = nk_load(nc, nk_ix(nc, in, r, NK_ALL));
        nk_tensor e = nk_exp(nc, tile);
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), e);
    }
    nk_return(nc, out);
}
