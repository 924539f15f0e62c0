/*
 * cmd_summary.c - `nklab summary P.nkp [--json]`: the profile's summary
 * metrics, as aligned text with units followed by the top findings of the
 * insights, or as one JSON object.
 */
#include "args.h"

#include "profile/profile.h"

#include <stdio.h>
#include <stdlib.h>

void nk_help_summary(void)
{
    printf("usage: nklab summary PROFILE.nkp [--json]\n\n"
           "Prints the profile's summary metrics, named as in the Neuron profiler:\n"
           "total_time, per-engine instruction counts and active time, DMA transfers\n"
           "and queues, HBM/SBUF/PSUM traffic, FLOPs and the utilisation estimates\n"
           "(hfu, mfu against the target's peak FLOPs, mbu against its HBM bandwidth),\n"
           "arithmetic intensity against the ridge point (peak_flops_bandwidth_ratio).\n"
           "docs/file-formats.md defines each metric. Then the top 3 findings of\n"
           "`nklab insights` (what limits the kernel and what to change), if any.\n\n"
           "  --json   one JSON object whose keys are exactly the metric names\n"
           "           (times in seconds, percentages 0..100, sizes in bytes);\n"
           "           no findings\n\n"
           "exit codes: 0 success, 1 unreadable profile, 2 bad command line\n");
}

int nk_cmd_summary(int argc, char **argv)
{
    const char *in;
    int json;
    nk_profile *pr;
    int code = nk_cli_profile_json_args("summary", argc, argv, &in, &json, &pr);
    if (code)
        return code;
    char *text = NULL;
    int rc = nk_profile_summary(pr, in, json, &text);
    if (rc)
        code = nk_cli_error(NK_EXIT_FAIL, "summary: %s", nk_strerror(rc));
    else
        fputs(text, stdout);
    free(text);
    nk_profile_free(pr);
    return code;
}
