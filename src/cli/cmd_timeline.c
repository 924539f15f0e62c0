/*
 * cmd_timeline.c - `nklab timeline P.nkp [--width N]`: a compact per-engine
 * timeline in the terminal.
 */
#include "args.h"

#include "profile/profile.h"
#include "view/view.h"

#include <stdio.h>
#include <stdlib.h>

void nk_help_timeline(void)
{
    printf("usage: nklab timeline PROFILE.nkp [--width N]\n\n"
           "Prints one row per engine and DMA queue: one character per time column\n"
           "showing how busy the row is in it (' ' idle, '.' <20%%, ':' <40%%, '-' <60%%,\n"
           "'=' <80%%, '#' 80%% or more), the row's active share, and a time axis.\n\n"
           "  --width N   width of the engine rows in characters, 40..1000 (default 100)\n\n"
           "exit codes: 0 success, 1 unreadable profile, 2 bad command line\n");
}

int nk_cmd_timeline(int argc, char **argv)
{
    const char *in = NULL, *w = NULL;
    for (int i = 1; i < argc; i++) {
        int r = nk_cli_optval(argc, argv, &i, "--width", &w);
        if (r < 0)
            return NK_EXIT_USAGE;
        if (r > 0)
            continue;
        int code = nk_cli_profile_arg("timeline", argv[i], &in);
        if (code)
            return code;
    }
    int code = nk_cli_profile_given("timeline", in, "nklab timeline PROFILE.nkp");
    if (code)
        return code;
    long width = 100;
    if (w && nk_cli_parse_int("--width", w, 40, 1000, &width))
        return NK_EXIT_USAGE;
    nk_profile *pr;
    if ((code = nk_cli_profile_read("timeline", in, &pr)))
        return code;
    nk_text t = {0};
    int rc = nk__view_timeline(pr, (int)width, &t);
    if (rc)
        code = nk_cli_error(NK_EXIT_FAIL, "timeline: %s", nk_strerror(rc));
    else
        fwrite(t.s, 1, t.len, stdout);
    nk__text_free(&t);
    nk_profile_free(pr);
    return code;
}
