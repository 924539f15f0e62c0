/*
 * args.h - command-line parsing shared by the commands: long options with a
 * value, and the arguments of every command that runs a built-in kernel
 * (`nklab run|bench|profile KERNEL --in a.npy ... --out y.npy --target trn2`).
 */
#ifndef NK_CLI_ARGS_H
#define NK_CLI_ARGS_H

#include "cli.h"

#include <limits.h>

#define NK_CLI_MAX_FILES 16 /* --in or --out files per command */

/* If argv[*i] is the option `name` ("--in"), written "--in VALUE" or
 * "--in=VALUE": stores the value, leaves *i on the last word used and returns
 * 1. Returns 0 when argv[*i] is something else, -1 after printing a usage
 * error when the value is missing. */
int nk_cli_optval(int argc, char **argv, int *i, const char *name, const char **val);

/* One kernel input: a .npy file (--in FILE[:DTYPE]) or generated values
 * (--random NAME=SHAPE[:DTYPE]). */
typedef struct nk_input_spec {
    const char *text;         /* the option's value as given */
    int random;               /* 1: --random, 0: --in */
    char path[PATH_MAX];      /* --in: the file (text without a :DTYPE suffix) */
    char name[64];            /* --random: the argument's name */
    int ndim;                 /* --random: the shape */
    int64_t shape[NK_MAXDIM];
    int has_dtype;            /* a :DTYPE suffix was given */
    nk_dtype dtype;
} nk_input_spec;

/* The kernel (a built-in name or FILE.c:FUNCTION), its inputs in argument
 * order, output files, target (a built-in name or a target file) and the
 * seed of generated inputs. */
typedef struct nk_kernel_cmd {
    const char *cmd;    /* the command's name, for messages */
    const char *kernel; /* KERNEL, the one positional argument */
    nk_input_spec in[NK_CLI_MAX_FILES];
    int nin;
    const char *out[NK_CLI_MAX_FILES];
    int nout;
    const char *target; /* NULL: trn1 */
    const char *target_file; /* --target-file: a modified target (exclusive with --target) */
    int schedule;       /* --schedule list|trace: NK_SCHED_LIST (default) or NK_SCHED_TRACE_ORDER */
    uint64_t seed;      /* --seed: generated inputs (default 0) */
    int has_grid;       /* --grid given (else a built-in kernel's example grid) */
    int grid[NK_MAX_GRID], grid_nc[NK_MAX_GRID]; /* --grid: the SPMD launch grid (nk_options.grid) */
    long max_instructions, max_trace_bytes; /* --max-instructions, --max-trace-bytes (0: the defaults) */
    long bufs;          /* --bufs N: buffers per tile in affine loops (nk_options.default_bufs; 0: the target's) */
} nk_kernel_cmd;

/* Consumes argv[*i] if it is one of the shared options (--in, --random,
 * --seed, --out, --target, --target-file) or the KERNEL: 1 consumed, 0 not
 * one of them, -1 usage error printed. */
int nk_cli_kernel_arg(int argc, char **argv, int *i, nk_kernel_cmd *c);

/* nk_cli_kernel_check and nk_cli_kernel_open flags */
enum {
    NK_CHECK_OUTS = 1,     /* one --out per output is required (built-in kernels) */
    NK_CHECK_EXAMPLES = 2, /* a built-in kernel without inputs runs on its example arguments */
    NK_OPEN_SHAPES_ONLY = 4, /* nothing executes: --random inputs get a shape and no data */
    NK_OPEN_NO_FILL = 8      /* nothing reads values: --random inputs stay zero (no fill) */
};

/* Checks the parsed command: the kernel exists (a built-in, or FILE.c:FUNCTION
 * syntax), the target is known (and not given twice, by --target and
 * --target-file), one input per built-in kernel argument (none
 * with NK_CHECK_EXAMPLES), --random names match its argument names and
 * (with NK_CHECK_OUTS, else when any are given) one --out per output. Sets
 * *ki to the built-in kernel, NULL for a user kernel. Returns NK_EXIT_OK or
 * NK_EXIT_USAGE after printing. */
int nk_cli_kernel_check(const nk_kernel_cmd *c, int flags, const nk_kernel_info **ki);

/* The commands that read one profile (`nklab CMD PROFILE.nkp ...`: summary,
 * timeline, view, insights), after their own options:
 * nk_cli_profile_arg takes argv[i], which is neither one of them nor "-":
 * an unknown option or a second profile is a usage error; else it becomes *in.
 * nk_cli_profile_given: a usage error, naming `usage`, when no profile is given.
 * nk_cli_profile_read: reads it, "CMD: PROFILE: why" when it cannot.
 * Each returns NK_EXIT_OK, or its exit code after printing the message. */
int nk_cli_profile_arg(const char *cmd, const char *arg, const char **in);
int nk_cli_profile_given(const char *cmd, const char *in, const char *usage);
int nk_cli_profile_read(const char *cmd, const char *in, nk_profile **pr);
/* All three for `nklab CMD PROFILE.nkp [--json]` (summary, insights): the
 * profile's name in *in, --json in *json, the profile read into *pr. */
int nk_cli_profile_json_args(const char *cmd, int argc, char **argv, const char **in, int *json, nk_profile **pr);

/* ---- numbers: one syntax for every option that takes one
 * Integers are decimal digits alone: no sign (a leading '-' only where lo is
 * negative), no spaces, no '+', no hex. Numbers (nk_cli_parse_double) are
 * decimal, optionally with a fraction and an exponent ("1.5", "2e3"), again
 * without spaces or '+'; nan and inf are refused. Out of range, the message
 * says which bound: "--iters '0': expected an integer from 1 to 10000000",
 * "--seed '99999999999999999999': too large (max 9223372036854775807)". Each
 * prints its usage error and returns -1, else stores *out and returns 0. */
int nk_cli_parse_int(const char *opt, const char *val, long lo, long hi, long *out);
int nk_cli_parse_double(const char *opt, const char *val, double lo, double hi, double *out);
/* The digits of a shape dimension ("250" of "250x512"), [first, end): an
 * integer from 1 to hi by the same rules; what labels the message. */
int nk_cli_parse_dim(const char *what, const char *first, const char *end, long hi, long *out);

/* ---- files
 * Inputs must be regular files: nk_cli_check_input refuses anything else (a
 * FIFO would block the reader) with "CMD: PATH: not a regular file (a
 * FIFO)"; a missing file is left to the reader's own message.
 * nk_cli_check_outputs refuses, before any work, an output that names one of
 * the inputs or another output (same device and inode when the file exists,
 * else the same directory and name); devices, FIFOs and "-" (standard
 * output) are never compared. Both return NK_EXIT_OK or the exit code after
 * printing. */
int nk_cli_check_input(const char *cmd, const char *path);
int nk_cli_check_outputs(const char *cmd, const char *const *outs, int nout, const char *const *ins, int nin);
/* 1 when path is "-", standard output. */
int nk_cli_is_stdout(const char *path);
/* The one message of a failed write: "CMD: cannot write PATH: WHY", WHY
 * being the writer's reason (nk__file_error()) or nk_strerror(rc).
 * Returns NK_EXIT_FAIL. */
int nk_cli_write_failed(const char *cmd, const char *path, int rc, const char *why);
/* Why a run (nk_program_run, nk_call, nk_bench) failed with status st:
 * nk_last_error() for an NK_EIO that set it (OpenBLAS or SLEEF could not
 * be loaded), else nk_strerror(st). */
const char *nk_cli_run_error(int st);
/* Writes t whole to standard output or, for any other path, to the file
 * (core/atomicfile.h); prints the failure. */
int nk_cli_write_text(const char *cmd, const char *path, const void *data, size_t n);

#endif
