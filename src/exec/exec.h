/*
 * exec.h - the executor's functions, one per op, for the op table's rows
 * (src/isa/optable.c). Internal to nklab: only the op table names them,
 * only nk__execute calls them (through the table).
 *
 * Each runs one instruction on the run's memories and returns 0 or a
 * negative nk_status.
 */
#ifndef NK_EXEC_H
#define NK_EXEC_H

#include "nkint.h"

typedef struct nk__exec nk__exec;

int nk__exec_dma(nk__exec *x, const nk_instr *in); /* load, store */
int nk__exec_matmul(nk__exec *x, const nk_instr *in);
int nk__exec_transpose(nk__exec *x, const nk_instr *in);
int nk__exec_activation(nk__exec *x, const nk_instr *in);
int nk__exec_tensor_tensor(nk__exec *x, const nk_instr *in);
int nk__exec_tensor_scalar(nk__exec *x, const nk_instr *in);
int nk__exec_tensor_reduce(nk__exec *x, const nk_instr *in);
int nk__exec_tensor_copy(nk__exec *x, const nk_instr *in);
int nk__exec_memset(nk__exec *x, const nk_instr *in);
int nk__exec_iota(nk__exec *x, const nk_instr *in);
int nk__exec_affine_select(nk__exec *x, const nk_instr *in);
int nk__exec_bn_stats(nk__exec *x, const nk_instr *in);
int nk__exec_bn_aggr(nk__exec *x, const nk_instr *in);
int nk__exec_tensor_tensor_scan(nk__exec *x, const nk_instr *in);
int nk__exec_scalar_tensor_tensor(nk__exec *x, const nk_instr *in);
int nk__exec_tensor_scalar_reduce(nk__exec *x, const nk_instr *in);
int nk__exec_select(nk__exec *x, const nk_instr *in);
int nk__exec_dropout(nk__exec *x, const nk_instr *in);
int nk__exec_load_transpose(nk__exec *x, const nk_instr *in);

#endif
