/*
 * args.c - long options and the shared KERNEL --in/--out/--target arguments.
 */
#include "args.h"

#include "arch/arch.h"

#include <string.h>

int nk_cli_optval(int argc, char **argv, int *i, const char *name, const char **val)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n))
        return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
    } else if (a[n]) {
        return 0;
    } else if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2)) {
        *val = argv[++*i];
    } else {
        nk_cli_error(NK_EXIT_USAGE, "option %s needs a value", name);
        return -1;
    }
    if (!**val) {
        nk_cli_error(NK_EXIT_USAGE, "option %s needs a value", name);
        return -1;
    }
    return 1;
}

static int add_file(const char *cmd, const char *opt, const char **list, int *n, const char *path)
{
    if (*n >= NK_CLI_MAX_FILES) {
        nk_cli_error(NK_EXIT_USAGE, "%s: at most %d %s files", cmd, NK_CLI_MAX_FILES, opt);
        return -1;
    }
    list[(*n)++] = path;
    return 1;
}

int nk_cli_kernel_arg(int argc, char **argv, int *i, nk_kernel_cmd *c)
{
    const char *v;
    int r;
    if ((r = nk_cli_optval(argc, argv, i, "--in", &v)))
        return r < 0 ? r : add_file(c->cmd, "--in", c->in, &c->nin, v);
    if ((r = nk_cli_optval(argc, argv, i, "--out", &v)))
        return r < 0 ? r : add_file(c->cmd, "--out", c->out, &c->nout, v);
    if ((r = nk_cli_optval(argc, argv, i, "--target", &v))) {
        if (r > 0)
            c->target = v;
        return r;
    }
    if (argv[*i][0] == '-')
        return 0;
    if (c->kernel) {
        nk_cli_error(NK_EXIT_USAGE, "%s: unexpected argument '%s' (one KERNEL; files go after --in or --out)",
                     c->cmd, argv[*i]);
        return -1;
    }
    c->kernel = argv[*i];
    return 1;
}

const nk_kernel_info *nk_cli_kernel_check(const nk_kernel_cmd *c, int outs_required)
{
    if (!c->kernel) {
        nk_cli_error(NK_EXIT_USAGE, "%s: missing KERNEL (see nklab %s --help)", c->cmd, c->cmd);
        return NULL;
    }
    const nk_kernel_info *k = nk_builtin_kernel(c->kernel);
    if (!k) {
        nk_cli_error(NK_EXIT_USAGE, "unknown kernel '%s' (`nklab kernels` lists them)", c->kernel);
        return NULL;
    }
    if (c->target && !nk_arch_get(c->target)) {
        nk_cli_error(NK_EXIT_USAGE, "unknown target '%s' (trn1 or trn2)", c->target);
        return NULL;
    }
    if (c->nin != k->nargs) {
        nk_cli_error(NK_EXIT_USAGE, "%s takes %d input%s (one --in per argument), got %d", k->name, k->nargs,
                     k->nargs == 1 ? "" : "s", c->nin);
        return NULL;
    }
    if ((outs_required || c->nout) && c->nout != k->nouts) {
        nk_cli_error(NK_EXIT_USAGE, "%s has %d output%s (one --out per output), got %d", k->name, k->nouts,
                     k->nouts == 1 ? "" : "s", c->nout);
        return NULL;
    }
    return k;
}
