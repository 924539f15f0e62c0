/*
 * cmd_run.c - `nklab run KERNEL --in a.npy ... --out y.npy ...`: runs a
 * built-in kernel on .npy inputs and writes its outputs as float32 .npy.
 *
 * The steps are kept apart so options can slot in between: parse, load the
 * inputs, compile (traced once, cached), [time or profile the program],
 * execute, write the outputs.
 */
#include "args.h"
#include "kio.h"

#include <stdio.h>

void nk_help_run(void)
{
    printf("usage: nklab run KERNEL --in A.npy [--in B.npy ...] --out OUT.npy [--out ...]\n"
           "                [--target trn1|trn2]\n\n"
           "Runs a built-in kernel (see `nklab kernels`) on the host and writes its outputs.\n\n"
           "  --in FILE       one .npy file per kernel argument, in the kernel's argument order;\n"
           "                  the shape comes from the file, the values are converted to the\n"
           "                  argument's dtype (files may hold f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)\n"
           "  --out FILE      one per kernel output, written as float32 .npy\n"
           "  --target NAME   trn1 (default) or trn2\n\n"
           "example:\n"
           "  nklab run tensor_exp --in x.npy --out y.npy\n\n"
           "exit codes: 0 success, 1 the run failed (unreadable or malformed input, kernel\n"
           "error, unwritable output), 2 bad command line (unknown kernel or option, wrong\n"
           "number of --in or --out)\n");
}

typedef struct run_opts {
    nk_kernel_cmd kc;
    /* run's own options (--profile FILE, --no-exec) are added here */
} run_opts;

static int parse(int argc, char **argv, run_opts *o)
{
    for (int i = 1; i < argc; i++) {
        int r = nk_cli_kernel_arg(argc, argv, &i, &o->kc);
        if (r < 0)
            return NK_EXIT_USAGE;
        if (r > 0)
            continue;
        /* run's own options are matched here, before the unknown-option error */
        return nk_cli_error(NK_EXIT_USAGE, "run: unknown option '%s' (see nklab run --help)", argv[i]);
    }
    return NK_EXIT_OK;
}

/* Compiles, executes and writes; args are the loaded inputs. */
static int run_kernel(const run_opts *o, const nk_kernel_info *ki, nk_kernel *k, const nk_array *args)
{
    nk_options opts = {o->kc.target, 0};
    const nk_program *p;
    if (nk_kernel_compile(k, args, ki->nargs, &opts, &p)) {
        /* the tracer's message starts with the kernel's file:line */
        fprintf(stderr, "%s\n", nk_kernel_error(k));
        return NK_EXIT_FAIL;
    }
    int nouts = nk_program_num_outputs(p);
    if (nouts != o->kc.nout)
        return nk_cli_error(NK_EXIT_FAIL, "%s returned %d outputs, %d --out given", ki->name, nouts, o->kc.nout);
    /* timing and profiling of p (--profile FILE) and skipping execution
     * (--no-exec) go here: the program is compiled, nothing has run yet */
    nk_array outs[NK_CLI_MAX_FILES] = {{0}};
    int rc = nk_cli_alloc_outputs(p, outs);
    if (rc)
        return rc;
    int st = nk_program_run(p, args, ki->nargs, outs, nouts);
    if (st)
        rc = nk_cli_error(NK_EXIT_FAIL, "%s: execution failed: %s", ki->name, nk_strerror(st));
    else
        rc = nk_cli_write_outputs(&o->kc, outs, nouts, 0);
    nk_cli_free_arrays(outs, nouts);
    return rc;
}

int nk_cmd_run(int argc, char **argv)
{
    run_opts o = {.kc = {.cmd = "run"}};
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    const nk_kernel_info *ki = nk_cli_kernel_check(&o.kc, 1);
    if (!ki)
        return NK_EXIT_USAGE;
    nk_array args[NK_KERNEL_MAX_ARGS] = {{0}};
    if ((rc = nk_cli_load_inputs(ki, &o.kc, args)))
        return rc;
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    if (!k)
        rc = nk_cli_error(NK_EXIT_FAIL, "out of memory");
    else
        rc = run_kernel(&o, ki, k, args);
    nk_kernel_free(k);
    nk_cli_free_arrays(args, ki->nargs);
    return rc;
}
