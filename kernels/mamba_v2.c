/*
 * mamba_v2 - NKI's fused Mamba tutorial, second version: mamba_v1's
 * selective scan (nk_ref_mamba; delta, u [batch, channels, seq], A
 * [channels, state], B, C [batch, state, seq]) with the loops reordered
 * and fused: channel tiles outside, states inside, so that delta and u are
 * loaded once per channel tile and reused by every state, and the
 * accumulator is one [128, seq] tile stored right after the state loop.
 *
 * Per state: deltaA = exp(delta * A[:, s]) in one activation; deltaBu =
 * delta * u * B[s] (B's row broadcast across partitions); one
 * tensor_tensor_scan h[t] = deltaA[t] h[t-1] + deltaBu[t] from h[-1] = 0;
 * the accumulator adds h * C[s]. Channels a multiple of 128.
 */
#include "kernels.h"

#define CHANNEL_PSIZE NK_PMAX
NK_KERNEL_DECL(nk_kernel_mamba_v2);
void nk_kernel_mamba_v2(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor delta = args[0], u = args[1], A = args[2], B = args[3], C = args[4];
    int64_t batch_size = delta.shape[0], channels = delta.shape[1], seq_len = delta.shape[2];
    int64_t state_size = A.shape[1];
    int64_t n_channel_tile = (channels + CHANNEL_PSIZE - 1) / CHANNEL_PSIZE; /* a partial tile: a bounds error */
    nk_dtype dt = (nk_dtype)delta.dtype;
    nk_tensor output = nk_ndarray(nc, NK_SHAPE(batch_size, channels, seq_len), dt, NK_SHARED_HBM);

    NK_AFFINE_RANGE(nc, i_batch, batch_size) {
        NK_AFFINE_RANGE(nc, i_channel_tile, n_channel_tile) {
            nk_range ch = nk_r(i_channel_tile * CHANNEL_PSIZE, (i_channel_tile + 1) * CHANNEL_PSIZE);
            nk_tensor scanC_accum = nk_zeros(nc, NK_SHAPE(CHANNEL_PSIZE, seq_len), dt, NK_SBUF);

            /* loaded once, reused by every state */
            nk_tensor delta_i = nk_load(nc, nk_ix(nc, delta, nk_i(i_batch), ch, NK_ALL));
            nk_tensor u_i = nk_load(nc, nk_ix(nc, u, nk_i(i_batch), ch, NK_ALL));

            NK_AFFINE_RANGE(nc, i_state, state_size) {
                nk_tensor A_i = nk_load(nc, nk_ix(nc, A, ch, nk_r(i_state, i_state + 1)));

                /* steps 1 and 2: exp(delta * A) */
                nk_tensor deltaA = nk_ndarray(nc, NK_SHAPE(CHANNEL_PSIZE, seq_len), dt, NK_SBUF);
                nk_isa_activation(nc, deltaA, NK_ACT_EXP, delta_i, nk_imm(0.0f), nk_col(A_i), NK_NONE);

                /* step 3: delta * u * B */
                nk_tensor B_i = nk_load(nc, nk_ix(nc, B, nk_i(i_batch), nk_r(i_state, i_state + 1), NK_ALL));
                nk_tensor deltaU = nk_multiply(nc, delta_i, u_i);
                nk_tensor B_i_bcast = nk_broadcast(nc, B_i, NK_SHAPE(CHANNEL_PSIZE, seq_len));
                nk_tensor deltaBu = nk_multiply(nc, deltaU, B_i_bcast);

                /* step 4: the scan along the sequence */
                nk_tensor scan_res = nk_ndarray(nc, NK_SHAPE(CHANNEL_PSIZE, seq_len), dt, NK_SBUF);
                nk_isa_tensor_tensor_scan(nc, scan_res, deltaA, deltaBu, nk_imm(0.0f), NK_ALU_MULTIPLY, NK_ALU_ADD, 0,
                                          0);

                /* step 5: times C */
                nk_tensor C_i = nk_load(nc, nk_ix(nc, C, nk_i(i_batch), nk_r(i_state, i_state + 1), NK_ALL));
                nk_tensor C_i_bcast = nk_broadcast(nc, C_i, NK_SHAPE(CHANNEL_PSIZE, seq_len));
                nk_tensor scanC = nk_multiply(nc, scan_res, C_i_bcast);

                /* step 6: summed over the states */
                nk_assign_add(nc, scanC_accum, scanC);
            }

            nk_store(nc, nk_ix(nc, output, nk_i(i_batch), ch, NK_ALL), scanC_accum);
        }
    }
    nk_return(nc, output);
}
