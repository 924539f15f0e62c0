/*
 * args.h - command-line parsing shared by the commands: long options with a
 * value, and the arguments of every command that runs a built-in kernel
 * (`nklab run|bench|profile KERNEL --in a.npy ... --out y.npy --target trn2`).
 */
#ifndef NK_CLI_ARGS_H
#define NK_CLI_ARGS_H

#include "cli.h"

#define NK_CLI_MAX_FILES 16 /* --in or --out files per command */

/* If argv[*i] is the option `name` ("--in"), written "--in VALUE" or
 * "--in=VALUE": stores the value, leaves *i on the last word used and returns
 * 1. Returns 0 when argv[*i] is something else, -1 after printing a usage
 * error when the value is missing. */
int nk_cli_optval(int argc, char **argv, int *i, const char *name, const char **val);

/* The kernel, its input and output files and the target. */
typedef struct nk_kernel_cmd {
    const char *cmd;    /* the command's name, for messages */
    const char *kernel; /* KERNEL, the one positional argument */
    const char *in[NK_CLI_MAX_FILES];
    int nin;
    const char *out[NK_CLI_MAX_FILES];
    int nout;
    const char *target; /* NULL: trn1 */
} nk_kernel_cmd;

/* Consumes argv[*i] if it is one of the shared options (--in, --out,
 * --target) or the KERNEL name: 1 consumed, 0 not one of them, -1 usage
 * error printed. */
int nk_cli_kernel_arg(int argc, char **argv, int *i, nk_kernel_cmd *c);

/* Checks the parsed command: the kernel exists, the target is known, one
 * --in per kernel argument and (when outs_required, else when any are given)
 * one --out per kernel output. Returns the kernel or NULL after printing a
 * usage error. */
const nk_kernel_info *nk_cli_kernel_check(const nk_kernel_cmd *c, int outs_required);

#endif
