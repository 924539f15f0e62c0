/*
 * cli.h - the nklab command line: one file per command (cmd_*.c), each
 * exporting an entry point listed in main.c's command table.
 */
#ifndef NK_CLI_H
#define NK_CLI_H

#include "nklab.h"
#include "kernels.h"

/* Exit codes (documented in `nklab --help` and docs/cli.md). */
enum {
    NK_EXIT_OK = 0,
    NK_EXIT_FAIL = 1,     /* the operation failed (kernel error, bad input file, ...) */
    NK_EXIT_USAGE = 2,    /* bad command line */
};

/* Freed heap memory the process keeps for reuse before giving it back
 * (glibc's trim threshold, set in main; nk_cli_kernel_compile gives it back
 * once a compile is over). 4 MiB: the 1x matmul profile 0.93x the wall
 * time of glibc's 128 KiB, its peak within 0.3 MiB; 8 MiB or more raised
 * that peak by 1 MiB (heap kept beside the schedule's candidate runs). */
#define NK_HEAP_KEEP (4 << 20)
/* Set by main once it has set NK_HEAP_KEEP: the commands' code also runs
 * inside the Python extension's interpreter, whose allocator settings are
 * the interpreter's own and are left alone. */
extern int nk_cli_heap_kept;

typedef struct nk_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    void (*help)(void);
} nk_command;

/* Prints "nklab: message" to stderr (one line) and returns code. */
int nk_cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int nk_cmd_kernels(int argc, char **argv);
void nk_help_kernels(void);
int nk_cmd_run(int argc, char **argv);
void nk_help_run(void);
int nk_cmd_bench(int argc, char **argv);
void nk_help_bench(void);
int nk_cmd_profile(int argc, char **argv);
void nk_help_profile(void);
int nk_cmd_view(int argc, char **argv);
void nk_help_view(void);
int nk_cmd_timeline(int argc, char **argv);
void nk_help_timeline(void);
int nk_cmd_export(int argc, char **argv);
void nk_help_export(void);
int nk_cmd_insights(int argc, char **argv);
void nk_help_insights(void);
int nk_cmd_diff(int argc, char **argv);
void nk_help_diff(void);
int nk_cmd_summary(int argc, char **argv);
void nk_help_summary(void);
int nk_cmd_target(int argc, char **argv);
void nk_help_target(void);
int nk_cmd_calibrate(int argc, char **argv);
void nk_help_calibrate(void);
int nk_cmd_python(int argc, char **argv);
void nk_help_python(void);
/* run|bench|profile of a FILE.py:FUNCTION kernel (argv[0] the command)? */
int nk_cli_runs_python(int argc, char **argv);
/* Runs that command under Python (cmd_python.c); returns only on failure. */
int nk_cli_python_command(int argc, char **argv);

#endif
