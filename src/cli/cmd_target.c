/*
 * cmd_target.c - `nklab target show [trn1|trn2 | --target-file FILE]`: prints
 * a target table in the target-file format (every key, its value and
 * meaning), the starting point of a what-if target file.
 */
#include "args.h"
#include "arch/arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nk_help_target(void)
{
    printf("usage: nklab target show [trn1|trn2 | --target-file FILE]\n\n"
           "Prints a target table as a target file: `base`, then every key with its value\n"
           "and meaning; for a built-in target each value's source follows its meaning\n"
           "([A2], assumed, carried [A2]: the keys of docs/timing-model.md's sources).\n"
           "Save it, change some values, set `name`, and pass it to run, bench or profile\n"
           "with --target-file to ask what-if questions of the model. Only the keys you\n"
           "change need to stay in the file.\n\n"
           "  NAME                a built-in target: trn1 (default) or trn2\n"
           "  --target-file FILE  a target file, checked and printed with every key\n\n"
           "examples:\n"
           "  nklab target show trn1 > fast-dma.txt    # then edit dma_engine_gbps, name\n"
           "  nklab target show --target-file fast-dma.txt\n"
           "  nklab profile matmul_tiled --target-file fast-dma.txt -o mm-fast-dma.nkp\n\n"
           "exit codes: 0 success, 1 unreadable or malformed target file, 2 bad command\n"
           "line (unknown target)\n");
}

static int show(const char *name, const char *file)
{
    nk_target *loaded = NULL;
    const nk_target *t;
    if (file) {
        char err[4352];
        if (nk_target_load(file, &loaded, err, sizeof err)) {
            fprintf(stderr, "%s\n", err); /* "PATH:LINE: message" */
            return NK_EXIT_FAIL;
        }
        t = loaded;
    } else if (!(t = nk_target_builtin(name))) {
        return nk_cli_error(NK_EXIT_USAGE, "target show: unknown target '%s' (trn1 or trn2)", name);
    }
    char *text = NULL;
    int rc = nk__arch_format_sources(t, &text);
    if (rc)
        rc = nk_cli_error(NK_EXIT_FAIL, "target show: %s", nk_strerror(rc));
    else
        fputs(text, stdout);
    free(text);
    nk_target_free(loaded);
    return rc;
}

int nk_cmd_target(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "show"))
        return nk_cli_error(NK_EXIT_USAGE, "target: expected `nklab target show [trn1|trn2 | --target-file FILE]`");
    const char *name = NULL, *file = NULL;
    for (int i = 2; i < argc; i++) {
        const char *v;
        int r = nk_cli_optval(argc, argv, &i, "--target-file", &v);
        if (r < 0)
            return NK_EXIT_USAGE;
        if (r > 0) {
            file = v;
            continue;
        }
        if (argv[i][0] == '-')
            return nk_cli_error(NK_EXIT_USAGE, "target show: unknown option '%s' (see nklab target --help)", argv[i]);
        if (name)
            return nk_cli_error(NK_EXIT_USAGE, "target show: unexpected argument '%s' (one target)", argv[i]);
        name = argv[i];
    }
    if (name && file)
        return nk_cli_error(NK_EXIT_USAGE, "target show: a target name or --target-file, not both");
    return show(name ? name : "trn1", file);
}
