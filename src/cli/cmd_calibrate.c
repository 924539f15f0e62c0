/*
 * cmd_calibrate.c - `nklab calibrate report | emit DIR | fit RESULTS`: the
 * timing model's micro-benchmarks beside the documented figures; the same
 * benchmarks as NKI Python files for a Trainium machine; and a target file
 * fitted to the latencies they measured there.
 */
#include "args.h"
#include "calib/calib.h"
#include "core/atomicfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void nk_help_calibrate(void)
{
    printf("usage: nklab calibrate report\n"
           "       nklab calibrate emit DIR\n"
           "       nklab calibrate fit RESULTS.csv [--base trn1|trn2] [--name NAME] [-o FILE]\n\n"
           "report  runs every micro-benchmark of the timing model on trn1 and trn2 and prints\n"
           "        it beside the documented figure it must reproduce (source, tolerance, gap);\n"
           "        exit 1 if a figure is outside its tolerance\n"
           "emit    writes the micro-benchmarks as NKI Python files (one per mechanism, each\n"
           "        with @nki.benchmark) and run_all.sh into DIR. They run unchanged on a\n"
           "        Trainium machine (sh run_all.sh, or python3 FILE.py RESULTS.csv) and under\n"
           "        nklab (nklab python FILE.py RESULTS.csv), appending `point,reps,p50_us` rows\n"
           "fit     reads those rows, takes each point's latency slope over its repetitions,\n"
           "        fits the target constants to them by least squares (from --base, default\n"
           "        trn1) and writes a target file for --target-file (stdout, or -o FILE) with\n"
           "        each constant's start value, standard error and residual\n\n"
           "examples:\n"
           "  nklab calibrate report\n"
           "  nklab calibrate emit calib && (cd calib && sh run_all.sh)   # on the machine\n"
           "  nklab calibrate fit calib/calibration-results.csv -o mine.cfg\n"
           "  nklab profile matmul_tiled --target-file mine.cfg -o mm.nkp\n\n"
           "docs/timing-model.md has the table and docs/cli.md the results format.\n"
           "exit codes: 0 success, 1 a figure off its tolerance, an unreadable or malformed\n"
           "results file or a write error, 2 bad command line\n");
}

static int report(void)
{
    char *text = NULL;
    int misses = 0, rc = nk__calib_report(&text, &misses);
    if (rc)
        return nk_cli_error(NK_EXIT_FAIL, "calibrate report: %s", nk_strerror(rc));
    fputs(text, stdout);
    free(text);
    if (misses)
        printf("%d figure%s outside the tolerance\n", misses, misses == 1 ? "" : "s");
    return misses ? NK_EXIT_FAIL : NK_EXIT_OK;
}

static int write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return nk_cli_error(NK_EXIT_FAIL, "calibrate emit: path too long");
    if (nk__file_write_atomic(path, text, strlen(text)))
        return nk_cli_error(NK_EXIT_FAIL, "calibrate emit: cannot write %s: %s", path, strerror(errno));
    return 0;
}

static int emit(const char *dir)
{
    if (mkdir(dir, 0777) && errno != EEXIST)
        return nk_cli_error(NK_EXIT_FAIL, "calibrate emit: cannot create %s: %s", dir, strerror(errno));
    char runner[4096] = "#!/bin/sh\n# Runs every micro-benchmark: python3 by default, PYTHON='nklab python' under nklab.\n"
                        "cd \"$(dirname \"$0\")\" || exit 1\n: \"${PYTHON:=python3}\"\n"
                        "rm -f calibration-results.csv\n";
    for (int f = 0; f < NK_CALIB_NFAMILIES; f++) {
        char *text = NULL, name[64];
        int rc = nk__calib_python(f, &text);
        if (rc)
            return nk_cli_error(NK_EXIT_FAIL, "calibrate emit: %s", nk_strerror(rc));
        snprintf(name, sizeof name, "%s.py", nk__calib_families[f].name);
        rc = write_file(dir, name, text);
        free(text);
        if (rc)
            return rc;
        size_t len = strlen(runner);
        snprintf(runner + len, sizeof runner - len, "$PYTHON %s calibration-results.csv || exit 1\n", name);
        printf("%s/%s\n", dir, name);
    }
    int rc = write_file(dir, "run_all.sh", runner);
    if (!rc)
        printf("%s/run_all.sh\n", dir);
    return rc;
}

static int fit(const char *path, const char *base, const char *name, const char *out)
{
    const nk_target *b = nk_target_builtin(base);
    if (!b)
        return nk_cli_error(NK_EXIT_USAGE, "calibrate fit: unknown --base '%s' (trn1 or trn2)", base);
    FILE *f = fopen(path, "rb");
    if (!f)
        return nk_cli_error(NK_EXIT_FAIL, "calibrate fit: cannot read %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    while (text) {
        size_t r = fread(text + len, 1, cap - 1 - len, f);
        len += r;
        if (len < cap - 1)
            break;
        char *t = realloc(text, cap * 2);
        if (!t) {
            free(text);
            text = NULL;
            break;
        }
        text = t;
        cap *= 2;
    }
    fclose(f);
    if (!text)
        return nk_cli_error(NK_EXIT_FAIL, "out of memory");
    text[len] = 0;
    char err[512];
    nk_calib_sample *s = NULL;
    size_t n = 0;
    int rc = nk__calib_read_results(text, path, &s, &n, err, sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "%s\n", err);
        return NK_EXIT_FAIL;
    }
    nk_calib_fit *fr = malloc(sizeof *fr);
    if (!fr) {
        free(s);
        return nk_cli_error(NK_EXIT_FAIL, "out of memory");
    }
    rc = nk__calib_fit_samples((const nk_arch *)b, s, n, fr, err, sizeof err);
    free(s);
    char *cfg = NULL;
    if (rc || (rc = nk__calib_format_fit(fr, name, &cfg))) {
        free(fr);
        return nk_cli_error(NK_EXIT_FAIL, "calibrate fit: %s: %s", path, rc == NK_EINVAL ? err : nk_strerror(rc));
    }
    free(fr);
    /* the result must load as a target file */
    nk_target *chk = NULL;
    if (nk_target_parse(cfg, "fitted target", &chk, err, sizeof err)) {
        free(cfg);
        return nk_cli_error(NK_EXIT_FAIL, "calibrate fit: the fitted table is not a valid target: %s", err);
    }
    nk_target_free(chk);
    rc = NK_EXIT_OK;
    if (out) {
        if (nk__file_write_atomic(out, cfg, strlen(cfg)))
            rc = nk_cli_error(NK_EXIT_FAIL, "calibrate fit: cannot write %s: %s", out, strerror(errno));
    } else {
        fputs(cfg, stdout);
    }
    free(cfg);
    return rc;
}

int nk_cmd_calibrate(int argc, char **argv)
{
    if (argc < 2)
        return nk_cli_error(NK_EXIT_USAGE, "calibrate: expected report, emit DIR or fit RESULTS (see --help)");
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
        nk_help_calibrate();
        return NK_EXIT_OK;
    }
    if (!strcmp(sub, "report")) {
        if (argc != 2)
            return nk_cli_error(NK_EXIT_USAGE, "calibrate report: unexpected argument '%s'", argv[2]);
        return report();
    }
    if (!strcmp(sub, "emit")) {
        if (argc != 3 || argv[2][0] == '-')
            return nk_cli_error(NK_EXIT_USAGE, "calibrate emit: expected one directory");
        return emit(argv[2]);
    }
    if (!strcmp(sub, "fit")) {
        const char *res = NULL, *base = "trn1", *name = "calibrated", *out = NULL;
        for (int i = 2; i < argc; i++) {
            const char *v;
            int r;
            if ((r = nk_cli_optval(argc, argv, &i, "--base", &v))) {
                if (r < 0)
                    return NK_EXIT_USAGE;
                base = v;
            } else if ((r = nk_cli_optval(argc, argv, &i, "--name", &v))) {
                if (r < 0)
                    return NK_EXIT_USAGE;
                name = v;
            } else if ((r = nk_cli_optval(argc, argv, &i, "-o", &v))) {
                if (r < 0)
                    return NK_EXIT_USAGE;
                out = v;
            } else if (argv[i][0] == '-') {
                return nk_cli_error(NK_EXIT_USAGE, "calibrate fit: unknown option '%s'", argv[i]);
            } else if (res) {
                return nk_cli_error(NK_EXIT_USAGE, "calibrate fit: one results file");
            } else {
                res = argv[i];
            }
        }
        if (!res)
            return nk_cli_error(NK_EXIT_USAGE, "calibrate fit: missing RESULTS.csv");
        return fit(res, base, name, out);
    }
    return nk_cli_error(NK_EXIT_USAGE, "calibrate: unknown subcommand '%s' (report, emit or fit)", sub);
}
