/*
 * kio.h - a built-in kernel's inputs and outputs as .npy files, for every
 * command that runs kernels (run, bench, profile).
 */
#ifndef NK_CLI_KIO_H
#define NK_CLI_KIO_H

#include "args.h"

/* Reads c->in[i] for each argument of k, converted to the argument's declared
 * dtype (the shape comes from the file; the rank must be the declared one).
 * Returns NK_EXIT_OK, or NK_EXIT_FAIL after printing one line (args freed). */
int nk_cli_load_inputs(const nk_kernel_info *k, const nk_kernel_cmd *c, nk_array *args);

/* Allocates one array per program output (its shape and dtype). Returns
 * NK_EXIT_OK or NK_EXIT_FAIL after printing. */
int nk_cli_alloc_outputs(const nk_program *p, nk_array *outs);

/* Writes outs[i] to c->out[i] as float32 .npy, printing "wrote PATH [shape]"
 * on stdout unless quiet. Returns NK_EXIT_OK or NK_EXIT_FAIL after printing. */
int nk_cli_write_outputs(const nk_kernel_cmd *c, const nk_array *outs, int n, int quiet);

void nk_cli_free_arrays(nk_array *a, int n);

#endif
