/*
 * cmd_diff.c - `nklab diff A.nkp B.nkp`: two profiles side by side (total
 * time, engine activity, DMA bytes, per-opcode and per-source-line deltas,
 * findings that appeared or disappeared).
 */
#include "args.h"

#include "insights/insights.h"
#include "profile/profile.h"

#include <stdio.h>

void nk_help_diff(void)
{
    printf("usage: nklab diff A.nkp B.nkp\n\n"
           "Compares two profiles, typically a kernel before and after a change: total\n"
           "time, active time per engine, DMA bytes and transfer sizes, instruction count,\n"
           "time per opcode, time per source line (lines are matched by file name and the\n"
           "line's text, so edits that move lines still pair them up), and the insights\n"
           "findings that are gone, new, or in both. Deltas are B - A. See docs/insights.md.\n\n"
           "exit codes: 0 success, 1 unreadable profile, 2 bad command line\n");
}

int nk_cmd_diff(int argc, char **argv)
{
    const char *path[2] = {NULL, NULL};
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1])
            return nk_cli_error(NK_EXIT_USAGE, "diff: unknown option '%s' (see nklab diff --help)", argv[i]);
        if (n == 2)
            return nk_cli_error(NK_EXIT_USAGE, "diff: compares two profiles, got a third ('%s')", argv[i]);
        path[n++] = argv[i];
    }
    if (n < 2)
        return nk_cli_error(NK_EXIT_USAGE, "diff: needs two profiles (nklab diff A.nkp B.nkp)");
    nk_profile *pr[2] = {NULL, NULL};
    int code = NK_EXIT_OK;
    for (int k = 0; k < 2 && code == NK_EXIT_OK; k++) {
        char err[256];
        if ((code = nk_cli_check_input("diff", path[k])))
            break;
        if (nk_profile_read(path[k], &pr[k], err, sizeof err))
            code = nk_cli_error(NK_EXIT_FAIL, "diff: %s: %s", path[k], err);
    }
    if (code == NK_EXIT_OK) {
        nk_text out = {0};
        int rc = nk__insights_diff(pr[0], path[0], pr[1], path[1], &out);
        if (rc)
            code = nk_cli_error(NK_EXIT_FAIL, "diff: %s", nk_strerror(rc));
        else if (fwrite(out.s, 1, out.len, stdout) != out.len)
            code = nk_cli_error(NK_EXIT_FAIL, "diff: cannot write the comparison");
        nk__text_free(&out);
    }
    nk_profile_free(pr[0]);
    nk_profile_free(pr[1]);
    return code;
}
