/*
 * cmd_python.c - `nklab python FILE.py [ARGS...]`: runs an NKI Python file
 * unchanged with the system python3, `neuronxcc.nki` and `nki` resolving to
 * nklab through a shim directory put on PYTHONPATH for that process only
 * (nothing named neuronxcc or nki is installed into site-packages).
 *
 * `nklab run|bench|profile FILE.py:FUNCTION ...` re-execute themselves the
 * same way as `python3 -m nklab._cli CMD ...`, where the Python extension
 * runs the same command code with the Python kernel.
 */
#include "cli.h"
#include "userkernel.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void nk_help_python(void)
{
    printf("usage: nklab python [--eager] [--target trn1|trn2 | --target-file FILE] FILE.py [ARGS...]\n\n"
           "Runs FILE.py with the system python3 (/usr/bin/python3, or $NKLAB_PYTHON), with\n"
           "`neuronxcc.nki` (and .language, .isa, .typing, ...) and `nki` resolving to nklab:\n"
           "NKI kernel files run unchanged. @nki.jit kernels are traced once per signature\n"
           "and replayed; @nki.benchmark prints the latency table of `nklab bench` and\n"
           "writes the compiled program and the profile at save_neff_name and\n"
           "save_trace_name (open it with `nklab view`). See docs/python.md.\n\n"
           "  --eager        every kernel call traces again, and print(tile) shows the tile's\n"
           "                 values at that line (as under nki.simulate_kernel)\n"
           "  --target T     the target of kernels without platform_target= (default: the\n"
           "                 NEURON_PLATFORM_TARGET_OVERRIDE environment variable, else trn1)\n"
           "  --target-file F  a target file (`nklab target show`) for those kernels instead;\n"
           "                 sets NKLAB_TARGET_FILE, which names one for a python3 run too\n\n"
           "nklab run|bench|profile FILE.py:FUNCTION run a Python kernel as they run\n"
           "FILE.c:FUNCTION (--in, --random, ...).\n\n"
           "examples:\n"
           "  nklab python examples/exp.py\n"
           "  nklab python --eager tests/python/k_print.py\n"
           "  nklab bench examples/exp.py:tensor_exp_kernel --random in=250x512:float32\n\n"
           "exit codes: the Python program's (2 for a bad command line here)\n");
}

static int is_dir(const char *p)
{
    struct stat st;
    return !stat(p, &st) && S_ISDIR(st.st_mode);
}

/* <bindir>/python (the build tree), else <bindir>/../lib/nklab/python. */
static int python_dir(char *out, size_t n)
{
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0)
        return -1;
    exe[k] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    static const char *const sub[] = {"/python", "/../lib/nklab/python"};
    for (int i = 0; i < 2; i++) {
        char nk[PATH_MAX + 64];
        if (snprintf(out, n, "%s%s", exe, sub[i]) >= (int)n)
            continue;
        snprintf(nk, sizeof nk, "%s/nklab", out);
        if (is_dir(nk))
            return 0;
    }
    return -1;
}

/* PYTHONPATH = shim:package[:the caller's], then exec python3 with argv. */
static int exec_python(char **argv)
{
    char dir[PATH_MAX];
    if (python_dir(dir, sizeof dir))
        return nk_cli_error(NK_EXIT_FAIL, "cannot find nklab's Python package next to this executable (expected "
                            "<bindir>/python or <bindir>/../lib/nklab/python; run make)");
    const char *old = getenv("PYTHONPATH");
    size_t len = 2 * strlen(dir) + (old ? strlen(old) : 0) + 16;
    char *pp = malloc(len);
    if (!pp)
        return nk_cli_error(NK_EXIT_FAIL, "out of memory");
    snprintf(pp, len, "%s/shim:%s%s%s", dir, dir, old && *old ? ":" : "", old && *old ? old : "");
    setenv("PYTHONPATH", pp, 1);
    free(pp);
    const char *py = getenv("NKLAB_PYTHON");
    if (!py || !*py)
        py = "/usr/bin/python3";
    fflush(stdout);
    execv(py, argv);
    return nk_cli_error(NK_EXIT_FAIL, "cannot run %s: %s (install python3 and python3-numpy)", py, strerror(errno));
}

int nk_cmd_python(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            nk_help_python();
            return NK_EXIT_OK;
        } else if (!strcmp(argv[i], "--eager")) {
            setenv("NKLAB_EAGER", "1", 1);
        } else if (!strcmp(argv[i], "--target") || !strncmp(argv[i], "--target=", 9)) {
            const char *t = argv[i][8] == '=' ? argv[i] + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!t)
                return nk_cli_error(NK_EXIT_USAGE, "python: --target needs a value (trn1 or trn2)");
            if (!nk_target_builtin(t))
                return nk_cli_error(NK_EXIT_USAGE, "unknown target '%s' (trn1 or trn2)", t);
            setenv("NKLAB_TARGET", t, 1);
        } else if (!strcmp(argv[i], "--target-file") || !strncmp(argv[i], "--target-file=", 14)) {
            const char *t = argv[i][13] == '=' ? argv[i] + 14 : (i + 1 < argc ? argv[++i] : NULL);
            if (!t)
                return nk_cli_error(NK_EXIT_USAGE, "python: --target-file needs a file");
            nk_target *tab = NULL;
            char err[4352];
            if (nk_target_load(t, &tab, err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                return NK_EXIT_FAIL;
            }
            nk_target_free(tab);
            setenv("NKLAB_TARGET_FILE", t, 1);
        } else if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else {
            return nk_cli_error(NK_EXIT_USAGE, "python: unknown option '%s' (see nklab python --help)", argv[i]);
        }
    }
    if (i >= argc)
        return nk_cli_error(NK_EXIT_USAGE, "python: missing FILE.py (see nklab python --help)");
    char **pargv = calloc((size_t)(argc - i) + 2, sizeof *pargv);
    if (!pargv)
        return nk_cli_error(NK_EXIT_FAIL, "out of memory");
    pargv[0] = "python3";
    for (int k = i; k < argc; k++)
        pargv[k - i + 1] = argv[k];
    int rc = exec_python(pargv);
    free(pargv);
    return rc;
}

int nk_cli_runs_python(int argc, char **argv)
{
    if (strcmp(argv[0], "run") && strcmp(argv[0], "bench") && strcmp(argv[0], "profile"))
        return 0;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-' && nk_cli_is_py_kernel(argv[i]))
            return 1;
    return 0;
}

int nk_cli_python_command(int argc, char **argv)
{
    char **pargv = calloc((size_t)argc + 4, sizeof *pargv);
    if (!pargv)
        return nk_cli_error(NK_EXIT_FAIL, "out of memory");
    pargv[0] = "python3";
    pargv[1] = "-m";
    pargv[2] = "nklab._cli";
    for (int k = 0; k < argc; k++)
        pargv[k + 3] = argv[k];
    int rc = exec_python(pargv);
    free(pargv);
    return rc;
}
