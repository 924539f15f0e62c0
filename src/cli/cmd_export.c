/*
 * cmd_export.c - `nklab export P.nkp --format perfetto|json|csv -o FILE`:
 * the profile for other tools.
 */
#include "args.h"

#include "profile/profile.h"
#include "view/view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nk_help_export(void)
{
    printf("usage: nklab export PROFILE.nkp --format perfetto|json|csv [-o FILE]\n"
           "                    [--no-flows] [--from A --to B]\n\n"
           "  perfetto   Chrome Trace Event JSON: open it in ui.perfetto.dev or chrome://tracing.\n"
           "             One process per core, one thread per engine and DMA queue, a slice per\n"
           "             instruction (args: opcode, operands, source), counter tracks, and\n"
           "             dependency arrows (leave them out with --no-flows)\n"
           "  json       the summary metrics and the instruction list (start, duration, opcode,\n"
           "             engine, operands, bytes, source location, dependencies)\n"
           "  csv        one row per instruction, with a header row\n\n"
           "  -o, --out FILE    where to write (default or '-': standard output)\n"
           "  --from A --to B   json and csv: only the instructions running at some time\n"
           "                    in [A, B] (ns from the kernel's start)\n\n"
           "exit codes: 0 success, 1 unreadable profile or unwritable output, 2 bad command line\n");
}

typedef struct export_opts {
    const char *in, *out, *format, *from, *to;
    nk_export_opts o;
} export_opts;

/* A time in ns from the kernel's start: finite, 0 to 1e18 (31 years). */
static int parse_ns(const char *opt, const char *s, double *v)
{
    return nk_cli_parse_double(opt, s, 0, 1e18, v) ? NK_EXIT_USAGE : NK_EXIT_OK;
}

static int parse(int argc, char **argv, export_opts *e)
{
    for (int i = 1; i < argc; i++) {
        int r = nk_cli_optval(argc, argv, &i, "-o", &e->out);
        if (!r)
            r = nk_cli_optval(argc, argv, &i, "--out", &e->out);
        if (!r)
            r = nk_cli_optval(argc, argv, &i, "--format", &e->format);
        if (!r)
            r = nk_cli_optval(argc, argv, &i, "--from", &e->from);
        if (!r)
            r = nk_cli_optval(argc, argv, &i, "--to", &e->to);
        if (r < 0)
            return NK_EXIT_USAGE;
        if (r > 0)
            continue;
        if (!strcmp(argv[i], "--no-flows")) {
            e->o.no_flows = 1;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return nk_cli_error(NK_EXIT_USAGE, "export: unknown option '%s' (see nklab export --help)", argv[i]);
        if (e->in)
            return nk_cli_error(NK_EXIT_USAGE, "export: one profile at a time ('%s' and '%s')", e->in, argv[i]);
        e->in = argv[i];
    }
    if (!e->in)
        return nk_cli_error(NK_EXIT_USAGE, "export: which profile? (nklab export PROFILE.nkp --format perfetto -o t.json)");
    if (!e->format)
        return nk_cli_error(NK_EXIT_USAGE, "export: --format perfetto, json or csv is required");
    if (strcmp(e->format, "perfetto") && strcmp(e->format, "json") && strcmp(e->format, "csv"))
        return nk_cli_error(NK_EXIT_USAGE, "export: unknown format '%s' (perfetto, json or csv)", e->format);
    if (!e->from != !e->to)
        return nk_cli_error(NK_EXIT_USAGE, "export: --from and --to go together");
    if (e->from) {
        if (parse_ns("--from", e->from, &e->o.from_ns) || parse_ns("--to", e->to, &e->o.to_ns))
            return NK_EXIT_USAGE;
        if (e->o.to_ns <= e->o.from_ns)
            return nk_cli_error(NK_EXIT_USAGE, "export: --to must be after --from");
        if (!strcmp(e->format, "perfetto"))
            return nk_cli_error(NK_EXIT_USAGE, "export: --from/--to apply to json and csv only");
    }
    const char *out[1] = {e->out}, *in[1] = {e->in};
    return nk_cli_check_outputs("export", out, 1, in, 1);
}

int nk_cmd_export(int argc, char **argv)
{
    export_opts e;
    memset(&e, 0, sizeof e);
    int code = parse(argc, argv, &e);
    if (code)
        return code;
    char err[256];
    nk_profile *pr;
    if ((code = nk_cli_check_input("export", e.in)))
        return code;
    if (nk_profile_read(e.in, &pr, err, sizeof err))
        return nk_cli_error(NK_EXIT_FAIL, "export: %s: %s", e.in, err);
    /* written as it is made: a large export is never held whole */
    uint64_t bytes = 0;
    char why[384];
    int rc = nk__export_to(pr, e.format, &e.o, nk_cli_is_stdout(e.out) ? NULL : e.out, &bytes, why, sizeof why);
    if (rc == NK_EIO)
        code = nk_cli_write_failed("export", e.out ? e.out : "-", rc, why);
    else if (rc)
        code = nk_cli_error(NK_EXIT_FAIL, "export: %s: %s", e.in, nk_strerror(rc));
    if (!code && e.out && !nk_cli_is_stdout(e.out)) /* as view and profile say what they wrote */
        fprintf(stderr, "wrote %s (%s, %.1f MB)\n", e.out, e.format, (double)bytes / 1e6);
    nk_profile_free(pr);
    return code;
}
