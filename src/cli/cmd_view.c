/*
 * cmd_view.c - `nklab view P.nkp [-o P.html]`: the profile as one
 * self-contained HTML page (timeline, source, search, summary, insights).
 */
#include "args.h"
#include "env.h"
#include "kio.h"

#include "insights/insights.h"
#include "profile/profile.h"
#include "view/view.h"

#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nk_help_view(void)
{
    printf("usage: nklab view PROFILE.nkp [-o OUT.html] [--compare OTHER.nkp]\n"
           "       nklab view KERNEL [--in ... | --random ...] [--target ...] [--bufs N] [-o OUT.html]\n\n"
           "Writes the profile as one self-contained HTML page that opens in any browser,\n"
           "offline: a timeline per engine and DMA queue with counters, tooltips, search\n"
           "(file:line or /regex/), box selection, the kernel source with per-line time,\n"
           "the summary metrics, an opcode table and the insights. See docs/viewer.md.\n\n"
           "  -o, --out FILE   the page to write (default: PROFILE with .html for .nkp;\n"
           "                   '-': standard output)\n"
           "  --compare OTHER  draw OTHER's timeline under each row on the same time axis,\n"
           "                   its instructions matched to PROFILE's by source line\n\n"
           "Given a KERNEL (a built-in kernel or FILE.c:FUNCTION, with the inputs, target\n"
           "and schedule options of `nklab profile`) instead of a profile, it is profiled\n"
           "in memory (default page: KERNEL.html) and the insights re-trace it to simulate\n"
           "the buffer counts and schedule they suggest.\n\n"
           "exit codes: 0 success, 1 unreadable profile or unwritable page, 2 bad command line\n");
}

/* "dir/p.nkp" -> "dir/p.html"; anything else gets ".html" appended. */
static char *default_out(const char *in)
{
    size_t n = strlen(in);
    char *s = malloc(n + 6);
    if (!s)
        return NULL;
    memcpy(s, in, n + 1);
    if (n > 4 && !strcmp(in + n - 4, ".nkp"))
        s[n - 4] = 0;
    strcat(s, ".html");
    return s;
}

/* The viewer's notes saved beside the profile: PROFILE.notes.json, else
 * KERNEL.notes.json in its directory (the name the page's "Save notes"
 * gives); NULL when there are none. The page checks their content. */
static char *read_notes(const char *profile, const nk_profile *pr)
{
    size_t n = strlen(profile);
    const char *slash = strrchr(profile, '/');
    size_t dir = slash ? (size_t)(slash - profile) + 1 : 0;
    char *paths[2] = {malloc(n + 16), malloc(dir + strlen(pr->prog->kernel) + 16)};
    char *text = NULL;
    if (paths[0])
        snprintf(paths[0], n + 16, "%s.notes.json", profile);
    if (paths[1])
        snprintf(paths[1], dir + strlen(pr->prog->kernel) + 16, "%.*s%s.notes.json", (int)dir, profile,
                 pr->prog->kernel);
    for (int k = 0; k < 2 && !text; k++) {
        struct stat st;
        if (!paths[k] || stat(paths[k], &st) || !S_ISREG(st.st_mode) || st.st_size > (1 << 20))
            continue;
        FILE *f = fopen(paths[k], "rb");
        if (!f)
            continue;
        text = malloc((size_t)st.st_size + 1);
        size_t got = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
        if (text)
            text[got] = 0;
        fclose(f);
    }
    free(paths[0]);
    free(paths[1]);
    return text;
}

/* nklab view KERNEL ...: profiled in memory, its insights with a re-trace. */
/* Writes the page of pr (insights as given, notes and a compared profile)
 * to out as it is made (a large page is never held whole) and says so;
 * what names the profile in an error. */
static int write_page_of(const char *what, const nk_profile *pr, const nk__view_insights *ins, const char *notes,
                         const nk_profile *cmp, const char *out)
{
    uint64_t bytes = 0;
    char why[384];
    int rc = nk__view_page_to_deferred(pr, ins, notes, cmp, nk_cli_is_stdout(out) ? NULL : out, &bytes, why,
                                       sizeof why);
    if (rc == NK_EIO)
        return nk_cli_write_failed("view", out, rc, why);
    if (rc)
        return nk_cli_error(NK_EXIT_FAIL, "view: %s: %s", what, nk_strerror(rc));
    if (!nk_cli_is_stdout(out))
        fprintf(stderr, "wrote %s (%.1f MB)\n", out, (double)bytes / 1e6);
    return NK_EXIT_OK;
}

static int write_page(const char *what, const nk_profile *pr, const char *insights, const char *notes,
                      const nk_profile *cmp, const char *out)
{
    nk__view_insights ins = {nk__view_given, (void *)insights};
    return write_page_of(what, pr, &ins, notes, cmp, out);
}

/* The insights of a profile file, made on a thread of their own while the
 * page's data is written (they go last in it, and both only read the
 * profile): the same page as made one after the other. */
typedef struct ins_job {
    const nk_profile *pr;
    nk_text text;
    int rc, started, joined;
    pthread_t th;
} ins_job;

static void *ins_work(void *arg)
{
    ins_job *j = arg;
    j->rc = nk__insights_view_json(j->pr, &j->text);
    return NULL;
}

static const char *ins_wait(void *ctx)
{
    ins_job *j = ctx;
    if (j->started && !j->joined) {
        pthread_join(j->th, NULL);
        j->joined = 1;
    }
    /* a profile the insights cannot analyse still gets its page, without them */
    return j->rc ? NULL : j->text.s;
}

static int view_kernel(int argc, char **argv)
{
    nk_cli_profiled kp;
    memset(&kp, 0, sizeof kp);
    kp.kc.cmd = "view";
    const char *out = NULL, *with = NULL;
    for (int i = 1; i < argc; i++) {
        int r = nk_cli_optval(argc, argv, &i, "-o", &out);
        if (!r)
            r = nk_cli_optval(argc, argv, &i, "--compare", &with);
        if (!r)
            r = nk_cli_kernel_arg(argc, argv, &i, &kp.kc);
        if (r < 0)
            return NK_EXIT_USAGE;
        if (!r)
            return nk_cli_error(NK_EXIT_USAGE, "view: unknown option '%s' (see nklab view --help)", argv[i]);
    }
    if (kp.kc.nout)
        return nk_cli_error(NK_EXIT_USAGE, "view: --out names the page with a KERNEL; use -o OUT.html");
    char def[160];
    if (!out) {
        const char *colon = nk_cli_is_user_kernel(kp.kc.kernel) ? strrchr(kp.kc.kernel, ':') : NULL;
        snprintf(def, sizeof def, "%s.html", colon ? colon + 1 : kp.kc.kernel);
        out = def;
    }
    const char *outs[1] = {out}, *inputs[1] = {with};
    int code = nk_cli_check_outputs("view", outs, 1, inputs, with ? 1 : 0);
    nk_profile *cmp = NULL;
    if (!code && with)
        code = nk_cli_profile_read("view", with, &cmp);
    if (!code)
        code = nk_cli_profile_kernel(&kp);
    if (code) {
        nk_profile_free(cmp);
        return code;
    }
    nk_text ins = {0};
    if (nk__insights_view_json_retrace(kp.pr, &kp.rt, &ins))
        nk__text_free(&ins);
    code = write_page(kp.kc.kernel, kp.pr, ins.s, NULL, cmp, out);
    nk__text_free(&ins);
    nk_profile_free(cmp);
    nk_cli_profiled_close(&kp);
    return code;
}

/* argv[i] is the value of an option that takes one (not a KERNEL). */
static int option_value(char **argv, int i)
{
    const char *o = argv[i - 1];
    return i > 1 && (!strcmp(o, "-o") || !strcmp(o, "--out") || !strcmp(o, "--compare"));
}

int nk_cmd_view(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-' && !option_value(argv, i) && nk_cli_is_kernel_spec(argv[i]))
            return view_kernel(argc, argv);
    const char *in = NULL, *out = NULL, *with = NULL;
    for (int i = 1; i < argc; i++) {
        int r = nk_cli_optval(argc, argv, &i, "-o", &out);
        if (!r)
            r = nk_cli_optval(argc, argv, &i, "--out", &out);
        if (!r)
            r = nk_cli_optval(argc, argv, &i, "--compare", &with);
        if (r < 0)
            return NK_EXIT_USAGE;
        if (r > 0)
            continue;
        int code = nk_cli_profile_arg("view", argv[i], &in);
        if (code)
            return code;
    }
    int code = nk_cli_profile_given("view", in, "nklab view PROFILE.nkp -o OUT.html");
    if (code)
        return code;
    char *def = out ? NULL : default_out(in);
    if (!out)
        out = def;
    if (!out)
        return nk_cli_error(NK_EXIT_FAIL, "view: %s", nk_strerror(NK_ENOMEM));
    const char *outs[1] = {out}, *inputs[2] = {in, with};
    nk_profile *pr, *cmp = NULL;
    if ((code = nk_cli_check_outputs("view", outs, 1, inputs, with ? 2 : 1)) ||
        (code = nk_cli_profile_read("view", in, &pr))) {
        free(def);
        return code;
    }
    if (with && (code = nk_cli_profile_read("view", with, &cmp))) {
        nk_profile_free(pr);
        free(def);
        return code;
    }
    ins_job job;
    memset(&job, 0, sizeof job);
    job.pr = pr;
    int threads = nk_cli_env_threads();
    job.started = threads != 1 && !pthread_create(&job.th, NULL, ins_work, &job);
    if (!job.started)
        ins_work(&job);
    char *notes = read_notes(in, pr);
    nk__view_insights ins = {ins_wait, &job};
    code = write_page_of(in, pr, &ins, notes, cmp, out);
    ins_wait(&job);
    free(notes);
    nk__text_free(&job.text);
    free(def);
    nk_profile_free(pr);
    nk_profile_free(cmp);
    return code;
}
