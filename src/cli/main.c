/*
 * main.c - `nklab COMMAND ...`: dispatch, global help and exit codes.
 */
#include "cli.h"

#include "core/atomicfile.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const nk_command commands[] = {
    {"kernels", "list the built-in kernels with their argument shapes and dtypes", nk_cmd_kernels, nk_help_kernels},
    {"run", "run a kernel (built-in or FILE.c:FUNCTION) on .npy or generated inputs", nk_cmd_run, nk_help_run},
    {"bench", "benchmark a kernel: warm-up, timed iterations, latency percentiles", nk_cmd_bench, nk_help_bench},
    {"profile", "run a kernel once and write its profile (.nkp)", nk_cmd_profile, nk_help_profile},
    {"view", "write a profile as a self-contained HTML viewer page", nk_cmd_view, nk_help_view},
    {"timeline", "print a profile's per-engine timeline in the terminal", nk_cmd_timeline, nk_help_timeline},
    {"export", "export a profile as Perfetto/Chrome trace JSON, JSON or CSV", nk_cmd_export, nk_help_export},
    {"insights", "explain what limits a kernel, with evidence, source lines and suggestions", nk_cmd_insights,
     nk_help_insights},
    {"diff", "compare two profiles: time, engines, opcodes, source lines, findings", nk_cmd_diff, nk_help_diff},
    {"summary", "print a profile's summary metrics and top findings (or --json metrics)", nk_cmd_summary,
     nk_help_summary},
    {"target", "print a target table (trn1, trn2 or a what-if target file) as a target file", nk_cmd_target,
     nk_help_target},
    {"calibrate", "the timing model's micro-benchmarks: report, emit as NKI Python, fit measured latencies",
     nk_cmd_calibrate, nk_help_calibrate},
    {"python", "run an NKI Python file unchanged, neuronxcc.nki and nki resolving to nklab", nk_cmd_python,
     nk_help_python},
};

int nk_cli_error(int code, const char *fmt, ...)
{
    va_list ap;
    fputs("nklab: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

static void usage(FILE *f)
{
    fprintf(f, "nklab %s - write, run, time and profile NeuronCore kernels without the hardware\n\n", NK_VERSION);
    fprintf(f, "usage: nklab COMMAND [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nexamples:\n"
               "  nklab kernels\n"
               "  nklab run tensor_exp --in x.npy --out y.npy\n"
               "  nklab bench examples/tensor_exp.c:tensor_exp --random in=250x512:float32\n"
               "  nklab profile tensor_exp -o exp.nkp && nklab summary exp.nkp\n"
               "  nklab python examples/exp.py\n"
               "\n`nklab COMMAND --help` describes a command; docs/cli.md all of them.\n"
               "exit codes: 0 success, 1 the operation failed, 2 bad command line\n");
}

/* A command's result once its output is out: stdout is buffered, so a full
 * disk shows only when it is flushed, and must fail a command that succeeded
 * (exit 1) rather than pass unnoticed. A command that failed has said why. */
static int finish(int code)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return code;
    if (code != NK_EXIT_OK)
        return code;
    return nk_cli_error(NK_EXIT_FAIL, "cannot write standard output: %s", errno ? strerror(errno) : "write error");
}

/* SIGINT, SIGTERM, SIGHUP, SIGQUIT: the temporary file of an output being
 * written is removed, then the signal does what it would have done. */
static void on_fatal_signal(int sig)
{
    nk__tmpfiles_remove();
    signal(sig, SIG_DFL);
    raise(sig); /* delivered when the handler returns */
}

static void remove_temporaries_on_signals(void)
{
    /* a file-size limit (ulimit -f) fails the write with EFBIG, which the
     * command reports ("File too large") and cleans up after, instead of
     * killing it with its temporary file left behind */
    signal(SIGXFSZ, SIG_IGN);
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;
        if (sigaction(sigs[i], NULL, &old) || old.sa_handler == SIG_IGN) /* nohup's SIGHUP stays ignored */
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

int main(int argc, char **argv)
{
#ifdef __GLIBC__
    /* A large program's arrays (tens of megabytes each: a few bytes per
     * instruction) come and go phase by phase. glibc raises its mmap
     * threshold to the size of each mapped block freed, and the arrays
     * allocated after that come from the heap, where what is freed stays
     * resident behind what is not. A fixed threshold keeps every block of a
     * megabyte or more mapped, given back to the system when freed: the
     * timing-only profile of a 794,624-instruction matmul peaks 28 MiB lower. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    /* The blocks under a megabyte, on the other hand, come from the heap,
     * and a phase frees megabytes of them that the next phase allocates
     * again: glibc gives the heap's free top back to the system past 128 KiB
     * (its trim threshold), and every 4 KiB of it is then a page fault
     * again (11 us on this project's machines). Freed memory is kept up to
     * NK_HEAP_KEEP through a kernel's compile (nk_cli_kernel_compile gives
     * it back and restores glibc's threshold for what follows); a command
     * that compiles no kernel that way (bench compiles and times inside
     * nk_bench; view, summary and the others compile none) keeps it
     * throughout, 4 MiB at most in each of glibc's arenas. */
    mallopt(M_TRIM_THRESHOLD, NK_HEAP_KEEP);
    nk_cli_heap_kept = 1;
#endif
    remove_temporaries_on_signals();
    /* profiles of built-in kernels hold their source from any directory */
    nk_builtin_kernel_sources_register();
    if (argc < 2) {
        usage(stderr);
        return NK_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return finish(NK_EXIT_OK);
    }
    if (!strcmp(argv[1], "--version")) {
        printf("nklab %s\n", NK_VERSION);
        return finish(NK_EXIT_OK);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name))
            continue;
        if (commands[i].run == nk_cmd_python) /* its options end at FILE.py */
            return finish(nk_cmd_python(argc - 1, argv + 1));
        for (int a = 2; a < argc; a++)
            if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
                commands[i].help();
                return finish(NK_EXIT_OK);
            }
        if (nk_cli_runs_python(argc - 1, argv + 1))
            return finish(nk_cli_python_command(argc - 1, argv + 1));
        return finish(commands[i].run(argc - 1, argv + 1));
    }
    return nk_cli_error(NK_EXIT_USAGE, "unknown command '%s' (see nklab --help)", argv[1]);
}
