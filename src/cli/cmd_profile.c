/*
 * cmd_profile.c - `nklab profile KERNEL ... -o P.nkp`: compiles a kernel,
 * runs it once and writes its profile (every instruction on every engine and
 * DMA queue of the target's model, mapped to the source), the file that
 * summary, view, timeline, export and insights read. Also the profile writer
 * of `run --profile` and `bench --profile`.
 */
#include "args.h"
#include "kio.h"
#include "env.h"
#include "progress.h"

#include "core/atomicfile.h"
#include "profile/profile.h"
#include "sched/program_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nk_help_profile(void)
{
    printf("usage: nklab profile KERNEL [--in A.npy[:DTYPE] | --random NAME=SHAPE[:DTYPE]] ...\n"
           "                    [-o FILE.nkp] [--out OUT.npy ...] [--seed N]\n"
           "                    [--target trn1|trn2 | --target-file FILE] [--no-exec]\n\n"
           "Compiles KERNEL (a built-in kernel or FILE.c:FUNCTION), runs it once and writes\n"
           "its profile: the compiled program, the modelled timeline of every instruction on\n"
           "every engine and DMA queue, and the kernel's source, in one file. Read it with\n"
           "`nklab summary`, `nklab timeline`, `nklab view`, `nklab insights`, `nklab export`.\n\n"
           "  -o, --output FILE   the profile to write (default: KERNEL.nkp, KERNEL being the\n"
           "                      built-in's or the C function's name; '-': standard output)\n"
           "  --in, --random, --seed, --target, --target-file, --schedule, --grid,\n"
           "  --max-instructions, --max-trace-bytes\n"
           "                      the kernel's inputs, target, schedule and bounds, as for\n"
           "                      `nklab run`; a built-in kernel without inputs runs on its\n"
           "                      example arguments (`nklab kernels`)\n"
           "  --out FILE          also write the outputs of the run (float32 .npy)\n"
           "  --no-exec           do not execute: the timeline needs no values (--random\n"
           "                      inputs are then never generated, only their shapes)\n\n"
           "examples:\n"
           "  nklab profile tensor_exp -o exp.nkp\n"
           "  nklab profile examples/tensor_exp.c:tensor_exp --random in=250x512:float32 -o exp.nkp\n"
           "  nklab summary exp.nkp\n"
           "  nklab profile tensor_exp --target-file fast-dma.txt -o exp-fast-dma.nkp\n\n"
           "exit codes: 0 success, 1 failed (unreadable input or target file, the C file\n"
           "does not compile, kernel error, unwritable file), 2 bad command line\n");
}

int nk_cli_profile_file(const char *cmd, const char *path)
{
    if (nk_cli_is_stdout(path))
        return nk_cli_error(NK_EXIT_USAGE, "%s: --profile '-': the profile goes to a file (`nklab profile -o -` "
                            "writes one to standard output)", cmd);
    return NK_EXIT_OK;
}

int nk_cli_write_profile(const nk_program *p, const char *path, FILE *note)
{
    nk_profile *pr;
    int st, code;
    if (nk_cli_is_stdout(path)) {
        st = nk__profile_capture_view(p, NULL, &pr); /* p outlives pr: no copy of it */
        nk_cli_env_stamp_profile(pr);
        if (st)
            return nk_cli_error(NK_EXIT_FAIL, "profile: capturing %s failed: %s", path, nk_strerror(st));
        nk_wr w = {0};
        st = nk__profile_encode(pr, &w);
        code = st ? nk_cli_write_failed("profile", path, st, NULL) : nk_cli_write_text("profile", path, w.p, w.n);
        nk__wr_free(&w);
        note = stderr;
    } else { /* the program's part of the file is written while the model times it */
        double t;
        int wst;
        st = nk__profile_capture_write(p, path, nk_cli_env_created(&t) ? &t : NULL, &pr, &wst);
        if (st)
            return nk_cli_error(NK_EXIT_FAIL, "profile: capturing %s failed: %s", path, nk_strerror(st));
        code = wst ? nk_cli_write_failed("profile", path, wst, wst == NK_EIO ? nk__file_error() : NULL) : NK_EXIT_OK;
    }
    if (!code)
        fprintf(note, "wrote %s (%zu instructions, device time %.3f us on %s)\n",
                nk_cli_is_stdout(path) ? "standard output" : path, nk_program_num_instructions(p),
                pr->tl->total_ns * 1e-3, nk_program_target(p));
    nk_profile_free(pr);
    return code;
}

typedef struct profile_opts {
    nk_kernel_cmd kc;
    const char *output; /* -o FILE */
    int no_exec;
} profile_opts;

static int parse(int argc, char **argv, profile_opts *o)
{
    for (int i = 1; i < argc; i++) {
        int r = nk_cli_kernel_arg(argc, argv, &i, &o->kc);
        if (!r)
            r = nk_cli_optval(argc, argv, &i, "-o", &o->output);
        if (!r)
            r = nk_cli_optval(argc, argv, &i, "--output", &o->output);
        if (!r && !strcmp(argv[i], "--no-exec"))
            r = o->no_exec = 1;
        if (r < 0)
            return NK_EXIT_USAGE;
        if (r > 0)
            continue;
        return nk_cli_error(NK_EXIT_USAGE, "profile: unknown option '%s' (see nklab profile --help)", argv[i]);
    }
    if (o->no_exec && o->kc.nout)
        return nk_cli_error(NK_EXIT_USAGE, "profile: --out needs values; --no-exec computes none");
    return NK_EXIT_OK;
}

/* Runs p once; writes the outputs when --out was given. */
static int run_once(const profile_opts *o, const nk_cli_kernel *ck, const nk_program *p)
{
    int nouts = nk_program_num_outputs(p);
    if (o->kc.nout && nouts != o->kc.nout)
        return nk_cli_error(NK_EXIT_FAIL, "%s returned %d outputs, %d --out given", nk_cli_kernel_name(ck), nouts,
                            o->kc.nout);
    nk_array outs[NK_CLI_MAX_FILES] = {{0}};
    if (nouts > NK_CLI_MAX_FILES)
        return nk_cli_error(NK_EXIT_FAIL, "%s returned %d outputs (at most %d)", nk_cli_kernel_name(ck), nouts,
                            NK_CLI_MAX_FILES);
    int rc = nk_cli_alloc_outputs(p, outs);
    if (rc)
        return rc;
    nk_progress pg;
    nk_progress_begin(&pg, "running once");
    int st = nk_program_run(p, ck->args, ck->nargs, outs, nouts);
    nk_progress_end(&pg);
    if (st)
        rc = nk_cli_error(NK_EXIT_FAIL, "%s: execution failed: %s", nk_cli_kernel_name(ck), nk_cli_run_error(st));
    else if (o->kc.nout)
        rc = nk_cli_write_outputs(&o->kc, outs, nouts, nk_cli_is_stdout(o->output) ? stderr : stdout);
    nk_cli_free_arrays(outs, nouts);
    return rc;
}

int nk_cmd_profile(int argc, char **argv)
{
    profile_opts o = {.kc = {.cmd = "profile"}};
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    /* the default, KERNEL.nkp: the built-in's name or the C function's */
    char def[160];
    if (!o.output && o.kc.kernel) {
        const char *colon = nk_cli_is_user_kernel(o.kc.kernel) ? strrchr(o.kc.kernel, ':') : NULL;
        snprintf(def, sizeof def, "%s.nkp", colon ? colon + 1 : o.kc.kernel);
        o.output = def;
    }
    const char *outs[1] = {o.output};
    if ((rc = nk_cli_kernel_files(&o.kc, outs, o.output != NULL)))
        return rc;
    nk_cli_kernel ck;
    if ((rc = nk_cli_kernel_open(&o.kc, NK_CHECK_EXAMPLES | (o.no_exec ? NK_OPEN_SHAPES_ONLY : 0), &ck)))
        return rc;
    const nk_program *p;
    rc = nk_cli_kernel_compile(&ck, &o.kc, &p);
    if (!rc && !o.no_exec)
        rc = run_once(&o, &ck, p);
    if (!rc)
        rc = nk_cli_write_profile(p, o.output, stdout);
    nk_cli_kernel_close(&ck);
    return rc;
}
