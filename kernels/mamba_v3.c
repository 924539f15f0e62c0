/*
 * mamba_v3 - NKI's fused Mamba tutorial, third version: mamba_v2 with the
 * sequence cut into chunks of 512 (seq a multiple of 512, channels of 128),
 * so that the per-state intermediates are [128, 512] instead of
 * [128, seq] and stay small as the sequence grows. The scan of each chunk
 * starts from the last value of the previous chunk's scan, carried in a
 * [128, 1] tile; the chunk loop is a plain (unrolled) loop, the tutorial's
 * static_range, since each chunk depends on the one before.
 *
 * Per state and chunk: deltaA = exp(delta * A[:, s]) on a free-axis slice
 * of delta; deltaBu = delta * u * B[s] with B's 512-column chunk broadcast
 * across partitions; one tensor_tensor_scan from the carried value; the
 * carry updated from the scan's last column; the accumulator's chunk adds
 * h * C[s].
 */
#include "kernels.h"

#define CHANNEL_PSIZE NK_PMAX
#define SEQ_LEN_FSIZE 512 /* the tutorial's chunk, found by profiling */
NK_KERNEL_DECL(nk_kernel_mamba_v3);
void nk_kernel_mamba_v3(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor delta = args[0], u = args[1], A = args[2], B = args[3], C = args[4];
    int64_t batch_size = delta.shape[0], channels = delta.shape[1], seq_len = delta.shape[2];
    int64_t state_size = A.shape[1];
    int64_t n_channel_tile = (channels + CHANNEL_PSIZE - 1) / CHANNEL_PSIZE; /* a partial tile: a bounds error */
    int64_t n_seq_len_tile = (seq_len + SEQ_LEN_FSIZE - 1) / SEQ_LEN_FSIZE;
    nk_dtype dt = (nk_dtype)delta.dtype;
    nk_tensor output = nk_ndarray(nc, NK_SHAPE(batch_size, channels, seq_len), dt, NK_SHARED_HBM);

    NK_AFFINE_RANGE(nc, i_batch, batch_size) {
        NK_AFFINE_RANGE(nc, i_channel_tile, n_channel_tile) {
            nk_range ch = nk_r(i_channel_tile * CHANNEL_PSIZE, (i_channel_tile + 1) * CHANNEL_PSIZE);
            nk_tensor scanC_accum = nk_zeros(nc, NK_SHAPE(CHANNEL_PSIZE, seq_len), dt, NK_SBUF);

            nk_tensor delta_i = nk_load(nc, nk_ix(nc, delta, nk_i(i_batch), ch, NK_ALL));
            nk_tensor u_i = nk_load(nc, nk_ix(nc, u, nk_i(i_batch), ch, NK_ALL));

            NK_AFFINE_RANGE(nc, i_state, state_size) {
                nk_tensor A_i = nk_load(nc, nk_ix(nc, A, ch, nk_r(i_state, i_state + 1)));

                /* the last scan value of the previous chunk */
                nk_tensor scan_init = nk_zeros(nc, NK_SHAPE(CHANNEL_PSIZE, 1), dt, NK_SBUF);
                for (int64_t i_seq_len_tile = 0; i_seq_len_tile < n_seq_len_tile; i_seq_len_tile++) {
                    int64_t s0 = i_seq_len_tile * SEQ_LEN_FSIZE;
                    nk_range seq = nk_r(s0, s0 + SEQ_LEN_FSIZE); /* past seq_len: a bounds error */

                    /* steps 1 and 2: exp(delta * A) */
                    nk_tensor deltaA = nk_ndarray(nc, NK_SHAPE(CHANNEL_PSIZE, SEQ_LEN_FSIZE), dt, NK_SBUF);
                    nk_isa_activation(nc, deltaA, NK_ACT_EXP, nk_ix(nc, delta_i, NK_ALL, seq), nk_imm(0.0f),
                                      nk_col(A_i), NK_NONE);

                    /* step 3: delta * u * B */
                    nk_tensor B_i = nk_load(nc, nk_ix(nc, B, nk_i(i_batch), nk_r(i_state, i_state + 1), seq));
                    nk_tensor deltaU = nk_multiply(nc, nk_ix(nc, delta_i, NK_ALL, seq), nk_ix(nc, u_i, NK_ALL, seq));
                    nk_tensor B_i_bcast = nk_broadcast(nc, B_i, NK_SHAPE(CHANNEL_PSIZE, SEQ_LEN_FSIZE));
                    nk_tensor deltaBu = nk_multiply(nc, deltaU, B_i_bcast);

                    /* step 4: the scan of this chunk, carried on */
                    nk_tensor scan_res = nk_ndarray(nc, NK_SHAPE(CHANNEL_PSIZE, SEQ_LEN_FSIZE), dt, NK_SBUF);
                    nk_isa_tensor_tensor_scan(nc, scan_res, deltaA, deltaBu, nk_col(scan_init), NK_ALU_MULTIPLY,
                                              NK_ALU_ADD, 0, 0);
                    nk_assign(nc, scan_init, nk_ix(nc, scan_res, NK_ALL, nk_r(SEQ_LEN_FSIZE - 1, SEQ_LEN_FSIZE)));

                    /* step 5: times C */
                    nk_tensor C_i = nk_load(nc, nk_ix(nc, C, nk_i(i_batch), nk_r(i_state, i_state + 1), seq));
                    nk_tensor C_i_bcast = nk_broadcast(nc, C_i, NK_SHAPE(CHANNEL_PSIZE, SEQ_LEN_FSIZE));
                    nk_tensor scanC = nk_multiply(nc, scan_res, C_i_bcast);

                    /* step 6: summed over the states */
                    nk_assign_add(nc, nk_ix(nc, scanC_accum, NK_ALL, seq), scanC);
                }
            }

            nk_store(nc, nk_ix(nc, output, nk_i(i_batch), ch, NK_ALL), scanC_accum);
        }
    }
    nk_return(nc, output);
}
