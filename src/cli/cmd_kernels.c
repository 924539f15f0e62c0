/*
 * cmd_kernels.c - `nklab kernels`: the built-in kernels and their arguments.
 */
#include "cli.h"

#include <stdio.h>

void nk_help_kernels(void)
{
    printf("usage: nklab kernels\n\n"
           "Lists the built-in kernels: name, example argument shapes and dtypes, summary.\n"
           "Run one with `nklab run NAME --in a.npy ... --out out.npy`; `nklab bench NAME`\n"
           "and `nklab profile NAME` run it on these example arguments.\n\n"
           "exit codes: 0 success, 2 bad command line (any argument)\n");
}

int nk_cmd_kernels(int argc, char **argv)
{
    if (argc > 1)
        return nk_cli_error(NK_EXIT_USAGE, "kernels: takes no arguments, got '%s'", argv[1]);
    for (int i = 0; i < nk_builtin_kernel_count; i++) {
        const nk_kernel_info *k = &nk_builtin_kernels[i];
        printf("%-14s", k->name);
        for (int a = 0; a < k->nargs; a++) {
            const nk_argspec *s = &k->args[a];
            printf("%s%s[", a ? ", " : " ", s->name);
            for (int d = 0; d < s->ndim; d++)
                printf("%s%lld", d ? "," : "", (long long)s->shape[d]);
            printf("]:%s", nk_dtype_name(s->dtype));
        }
        for (int g = 0; g < NK_MAX_GRID && k->grid[g] > 0; g++) /* an SPMD kernel's example grid */
            printf("%s%d", g ? "x" : ", grid ", k->grid[g]);
        printf("\n    %s\n", k->summary);
    }
    return NK_EXIT_OK;
}
