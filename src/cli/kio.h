/*
 * kio.h - the kernel of a command (built-in or from a user's C file), its
 * inputs (.npy files or generated) and outputs (.npy files), for every command
 * that runs kernels (run, bench, profile).
 */
#ifndef NK_CLI_KIO_H
#define NK_CLI_KIO_H

#include "args.h"
#include "userkernel.h"

#include "insights/insights.h"

#include <stdio.h>

/* A kernel ready to compile: a built-in one or one loaded from a user's C
 * file, and its inputs. */
typedef struct nk_cli_kernel {
    const nk_kernel_info *info; /* the built-in kernel; NULL for a user kernel */
    nk_user_kernel user;        /* a user kernel's file, function and loaded code */
    nk_kernel *k;
    nk_target *table;           /* --target-file's table; NULL for a built-in target */
    nk_array args[NK_CLI_MAX_FILES];
    int nargs;
} nk_cli_kernel;

/* Before any work: the kernel's C file and the target file are regular files
 * (not a FIFO that would block their reader); no --out is "-"; no output
 * (--out, and more_out: the profile) names an input (--in, the C file, the
 * target file) or another output. Returns NK_EXIT_OK or the exit code after
 * printing. */
int nk_cli_kernel_files(const nk_kernel_cmd *c, const char *const *more_out, int nmore);

/* Checks the command (nk_cli_kernel_check with flags), loads the target file
 * (its loader's "PATH:LINE: message" printed as is on failure), compiles and
 * loads a user kernel's C file, then reads or generates the inputs:
 *   --in FILE[:DTYPE]  the file's shape; values converted to DTYPE, else to
 *                      a built-in argument's declared dtype, else the file's
 *                      own (float64 and 64-bit integers narrow to float32,
 *                      int32 and uint32; bool is uint8);
 *   --random NAME=SHAPE[:DTYPE]  uniform values for c->seed (see
 *                      nk_cli_random_range), DTYPE else the declared dtype
 *                      else float32; with NK_OPEN_SHAPES_ONLY the shape and
 *                      dtype alone (data NULL: compiling and timing read no
 *                      values), with NK_OPEN_NO_FILL zeros never written;
 *   none (built-in, NK_CHECK_EXAMPLES): the kernel's example arguments.
 * Returns NK_EXIT_OK, or the exit code after printing one line (the
 * compiler's own messages come first); ck is then already closed. */
int nk_cli_kernel_open(const nk_kernel_cmd *c, int flags, nk_cli_kernel *ck);
/* The options compiling for c's target (ck->table when a file gave it). */
nk_options nk_cli_kernel_options(const nk_cli_kernel *ck, const nk_kernel_cmd *c);
/* Compiles (traced once, cached) for c's target. A kernel error is printed
 * as "file:line: message" and gives NK_EXIT_FAIL. */
int nk_cli_kernel_compile(nk_cli_kernel *ck, const nk_kernel_cmd *c, const nk_program **p);
void nk_cli_kernel_close(nk_cli_kernel *ck);
/* The kernel's name: a built-in's, or a user kernel's function. */
const char *nk_cli_kernel_name(const nk_cli_kernel *ck);

/* The range of generated values of input i: a built-in argument's example
 * range; else [-1, 1) for floats, [-64, 64) for signed and [0, 128) for
 * unsigned integers (then rounded to the dtype). */
void nk_cli_random_range(const nk_kernel_info *ki, int i, nk_dtype dt, double *lo, double *hi);

/* Allocates one array per program output (its shape and dtype). Returns
 * NK_EXIT_OK or NK_EXIT_FAIL after printing. */
int nk_cli_alloc_outputs(const nk_program *p, nk_array *outs);

/* Writes outs[i] to c->out[i] as float32 .npy, printing "wrote PATH [shape]"
 * on note (NULL: nothing). Returns NK_EXIT_OK or NK_EXIT_FAIL after printing
 * "CMD: cannot write PATH: why". */
int nk_cli_write_outputs(const nk_kernel_cmd *c, const nk_array *outs, int n, FILE *note);

void nk_cli_free_arrays(nk_array *a, int n);

/* Captures the profile of p (timed on its target) and writes it to path
 * ("-": standard output, the note then on stderr), then prints "wrote PATH
 * (...)" on note. Returns NK_EXIT_OK or NK_EXIT_FAIL after printing.
 * (cmd_profile.c) */
int nk_cli_write_profile(const nk_program *p, const char *path, FILE *note);
/* run|bench --profile: a file, not "-" (their standard output is the
 * command's report). NK_EXIT_OK or NK_EXIT_USAGE after printing. */
int nk_cli_profile_file(const char *cmd, const char *path);

/* insights and view given a KERNEL instead of a profile: 1 when arg names
 * a built-in kernel (and no file of that name exists) or FILE.c:FUNCTION. */
int nk_cli_is_kernel_spec(const char *arg);

/* A kernel compiled and profiled in memory (nothing executes: timing needs
 * no values), with a re-trace (rt) that compiles it again with other buffer
 * counts and schedules, so the insights simulate their suggestions. */
typedef struct nk_cli_profiled {
    nk_kernel_cmd kc;     /* filled by the caller (nk_cli_kernel_arg) */
    nk_cli_kernel ck;
    const nk_program *p;
    nk_profile *pr;
    nk_ins_retrace rt;
} nk_cli_profiled;
/* Returns NK_EXIT_OK or the exit code after printing (then nothing to close). */
int nk_cli_profile_kernel(nk_cli_profiled *kp);
void nk_cli_profiled_close(nk_cli_profiled *kp);

#endif
