/*
 * cmd_insights.c - `nklab insights P.nkp [--json]`: what the profile says, in
 * words: engines and overlap, the critical path, idle time and its causes,
 * roofline and DMA efficiency, time per source line, then every finding,
 * ranked, with evidence, source lines and a suggestion.
 */
#include "args.h"

#include "insights/insights.h"
#include "profile/profile.h"

#include <stdio.h>

void nk_help_insights(void)
{
    printf("usage: nklab insights PROFILE.nkp [--json]\n\n"
           "Analyses a profile and prints what limits the kernel: the engines it uses and\n"
           "how much they overlap (with each other and with DMA), the critical path, why\n"
           "engines sit idle, roofline position, DMA transfer sizes, time per source line,\n"
           "then the findings of every rule, ranked by the time at stake, each with its\n"
           "evidence, the source lines involved and what to change. See docs/insights.md.\n\n"
           "  --json   print the findings as a JSON array of objects instead\n\n"
           "exit codes: 0 success, 1 unreadable profile, 2 bad command line\n");
}

int nk_cmd_insights(int argc, char **argv)
{
    const char *in;
    int json;
    nk_profile *pr;
    int code = nk_cli_profile_json_args("insights", argc, argv, &in, &json, &pr);
    if (code)
        return code;
    nk_insights *ins = NULL;
    nk_text out = {0};
    int rc = nk__insights_build(pr, &ins);
    if (!rc)
        rc = json ? nk__insights_json(ins, &out) : nk__insights_text(ins, &out);
    if (rc)
        code = nk_cli_error(NK_EXIT_FAIL, "insights: %s: %s", in, nk_strerror(rc));
    else if (fwrite(out.s, 1, out.len, stdout) != out.len || (json && putchar('\n') == EOF))
        code = nk_cli_error(NK_EXIT_FAIL, "insights: cannot write the report");
    nk__text_free(&out);
    nk__insights_free(ins);
    nk_profile_free(pr);
    return code;
}
