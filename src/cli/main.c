/*
 * main.c - `nklab COMMAND ...`: dispatch, global help and exit codes.
 */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const nk_command commands[] = {
    {"kernels", "list the built-in kernels with their argument shapes and dtypes", nk_cmd_kernels, nk_help_kernels},
    {"run", "run a kernel on .npy inputs and write its outputs as .npy", nk_cmd_run, nk_help_run},
    {"view", "write a profile as a self-contained HTML viewer page", nk_cmd_view, nk_help_view},
    {"timeline", "print a profile's per-engine timeline in the terminal", nk_cmd_timeline, nk_help_timeline},
    {"export", "export a profile as Perfetto/Chrome trace JSON, JSON or CSV", nk_cmd_export, nk_help_export},
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
    fprintf(f, "\n`nklab COMMAND --help` describes a command.\n"
               "exit codes: 0 success, 1 the operation failed, 2 bad command line\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return NK_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return NK_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("nklab %s\n", NK_VERSION);
        return NK_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name))
            continue;
        for (int a = 2; a < argc; a++)
            if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
                commands[i].help();
                return NK_EXIT_OK;
            }
        return commands[i].run(argc - 1, argv + 1);
    }
    return nk_cli_error(NK_EXIT_USAGE, "unknown command '%s' (see nklab --help)", argv[1]);
}
