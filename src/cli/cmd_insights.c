/*
 * cmd_insights.c - `nklab insights P.nkp [--json]`: what the profile says, in
 * words: engines and overlap, the critical path, idle time and its causes,
 * roofline and DMA efficiency, time per source line, then every finding,
 * ranked, with evidence, source lines and a suggestion. Given a KERNEL
 * instead of a profile, the kernel is profiled in memory and the findings
 * re-trace it to simulate the buffer counts they suggest.
 */
#include "args.h"
#include "kio.h"

#include "insights/insights.h"
#include "profile/profile.h"

#include <stdio.h>
#include <string.h>

void nk_help_insights(void)
{
    printf("usage: nklab insights PROFILE.nkp [--json]\n"
           "       nklab insights KERNEL [--in ... | --random ...] [--target ...] [--bufs N] [--json]\n\n"
           "Analyses a profile and prints what limits the kernel: the engines it uses and\n"
           "how much they overlap (with each other and with DMA), the critical path, why\n"
           "engines sit idle, roofline position, DMA transfer sizes, time per source line,\n"
           "then the findings of every rule, ranked by the time at stake, each with its\n"
           "evidence, the source lines involved and what to change. See docs/insights.md.\n\n"
           "Given a KERNEL (a built-in kernel or FILE.c:FUNCTION, with the inputs, target\n"
           "and schedule options of `nklab profile`) instead of a profile, it is profiled\n"
           "in memory, and the findings whose fix is a buffer count or the schedule re-trace\n"
           "it with that change and report the simulated time; from a profile file alone\n"
           "those figures are estimates.\n\n"
           "  --json   print the findings as a JSON array of objects instead\n\n"
           "exit codes: 0 success, 1 unreadable profile (or the kernel failed), 2 bad command line\n");
}

/* The report of a built analysis to standard output. */
static int report(nk_insights *ins, const char *in, int json)
{
    nk_text out = {0};
    int code = NK_EXIT_OK;
    int rc = json ? nk__insights_json(ins, &out) : nk__insights_text(ins, &out);
    if (rc)
        code = nk_cli_error(NK_EXIT_FAIL, "insights: %s: %s", in, nk_strerror(rc));
    else if (fwrite(out.s, 1, out.len, stdout) != out.len || (json && putchar('\n') == EOF))
        code = nk_cli_error(NK_EXIT_FAIL, "insights: cannot write the report");
    nk__text_free(&out);
    return code;
}

/* nklab insights KERNEL ...: profiled in memory, with a re-trace. */
static int insights_of_kernel(int argc, char **argv)
{
    nk_cli_profiled kp;
    memset(&kp, 0, sizeof kp);
    kp.kc.cmd = "insights";
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
            continue;
        }
        int r = nk_cli_kernel_arg(argc, argv, &i, &kp.kc);
        if (r < 0)
            return NK_EXIT_USAGE;
        if (!r)
            return nk_cli_error(NK_EXIT_USAGE, "insights: unknown option '%s' (see nklab insights --help)", argv[i]);
    }
    if (kp.kc.nout)
        return nk_cli_error(NK_EXIT_USAGE, "insights: --out needs values; insights only time the kernel");
    int code = nk_cli_profile_kernel(&kp);
    if (code)
        return code;
    nk_insights *ins = NULL;
    int rc = nk__insights_build_retrace(kp.pr, &kp.rt, &ins);
    if (rc)
        code = nk_cli_error(NK_EXIT_FAIL, "insights: %s: %s", kp.kc.kernel, nk_strerror(rc));
    else
        code = report(ins, kp.kc.kernel, json);
    nk__insights_free(ins);
    nk_cli_profiled_close(&kp);
    return code;
}

int nk_cmd_insights(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-')
            if (nk_cli_is_kernel_spec(argv[i]))
                return insights_of_kernel(argc, argv);
    const char *in;
    int json;
    nk_profile *pr;
    int code = nk_cli_profile_json_args("insights", argc, argv, &in, &json, &pr);
    if (code)
        return code;
    nk_insights *ins = NULL;
    int rc = nk__insights_build(pr, &ins);
    if (rc)
        code = nk_cli_error(NK_EXIT_FAIL, "insights: %s: %s", in, nk_strerror(rc));
    else
        code = report(ins, in, json);
    nk__insights_free(ins);
    nk_profile_free(pr);
    return code;
}
