/*
 * cmd_run.c - `nklab run KERNEL --in a.npy ... --out y.npy ...`: runs a
 * built-in or user kernel on .npy or generated inputs and writes its outputs
 * as float32 .npy.
 *
 * The steps: parse, load the kernel and its inputs, compile (traced once,
 * cached), write the profile (--profile), then execute and write the outputs,
 * or with --no-exec only report the modelled device time.
 */
#include "args.h"
#include "kio.h"
#include "progress.h"

#include "timing/timing.h"

#include <stdio.h>
#include <string.h>

void nk_help_run(void)
{
    printf("usage: nklab run KERNEL [--in A.npy[:DTYPE] | --random NAME=SHAPE[:DTYPE]] ...\n"
           "                [--out OUT.npy ...] [--seed N]\n"
           "                [--target trn1|trn2 | --target-file FILE]\n"
           "                [--profile FILE.nkp] [--no-exec]\n\n"
           "Runs a kernel on the host and writes its outputs. KERNEL is a built-in kernel\n"
           "(see `nklab kernels`) or FILE.c:FUNCTION, a kernel in your own C file, compiled\n"
           "with the system C compiler ($CC, else cc) against nklab.h and cached.\n\n"
           "  --in FILE[:DTYPE]   a .npy file for the next kernel argument; the shape comes\n"
           "                      from the file (files may hold f2 f4 f8 i1 i2 i4 i8 u1 u2\n"
           "                      u4 u8 b1); the values are converted to DTYPE if given,\n"
           "                      else to a built-in argument's dtype, else kept in the\n"
           "                      file's own (float64 -> float32, 64-bit ints -> 32-bit)\n"
           "  --random NAME=SHAPE[:DTYPE]\n"
           "                      generated values for the next argument, e.g.\n"
           "                      in=250x512:float32: uniform in a built-in argument's\n"
           "                      example range, else [-1, 1) for floats, [-64, 64) for\n"
           "                      ints, [0, 128) for unsigned, rounded to DTYPE (default:\n"
           "                      the declared dtype, else float32); NAME must be the\n"
           "                      built-in argument's name\n"
           "  --seed N            seed of --random values (default 0): same seed, same values\n"
           "  --out FILE          one per kernel output, written as float32 .npy\n"
           "  --target NAME       trn1 (default) or trn2\n"
           "  --target-file FILE  a modified target, to ask what-if questions: a first line\n"
           "                      `base = trn1` (or trn2), then `key = value` lines (set\n"
           "                      `name` to tell it apart); `nklab target show` prints\n"
           "                      every key with its meaning; not with --target\n"
           "  --schedule list|trace  the order of each engine's instructions: the compile\n"
           "                      step's list schedule (default), or the kernel's own order\n"
           "  --grid G            an SPMD launch grid: up to 3 axes separated by ',' or 'x',\n"
           "                      each N, nc(K)*M or M*nc(K) (NKI's spmd_dim with nl.nc(K)),\n"
           "                      or 'none'; a built-in SPMD kernel's default is its\n"
           "                      example grid (`nklab kernels`)\n"
           "  --max-instructions N  fail when the kernel traces more than N instructions\n"
           "                      (default 4000000; a run takes about 1 KiB and 2 us each)\n"
           "  --max-trace-bytes N  fail when the tracer's records would take more than N\n"
           "                      bytes (default 8589934592, 8 GiB)\n"
           "  --profile FILE      also write the profile (the timeline of every instruction\n"
           "                      on the target's model, and the source) to FILE\n"
           "  --no-exec           time the program only: no values are computed and no\n"
           "                      outputs written (--out is then optional); prints the\n"
           "                      modelled device time\n\n"
           "examples:\n"
           "  nklab run tensor_exp --in x.npy --out y.npy\n"
           "  nklab run examples/tensor_exp.c:tensor_exp --random in=250x512:float32 --out y.npy\n"
           "  nklab run tensor_exp --in x.npy:bfloat16 --out y.npy --profile exp.nkp\n\n"
           "exit codes: 0 success, 1 the run failed (unreadable or malformed input or\n"
           "target file, the C file does not compile, kernel error, unwritable output),\n"
           "2 bad command line\n"
           "(unknown kernel or option, wrong number of inputs or --out)\n");
}

typedef struct run_opts {
    nk_kernel_cmd kc;
    const char *profile; /* --profile FILE */
    int no_exec;         /* --no-exec */
} run_opts;

static int parse(int argc, char **argv, run_opts *o)
{
    for (int i = 1; i < argc; i++) {
        int r = nk_cli_kernel_arg(argc, argv, &i, &o->kc);
        if (!r)
            r = nk_cli_optval(argc, argv, &i, "--profile", &o->profile);
        if (!r && !strcmp(argv[i], "--no-exec"))
            r = o->no_exec = 1;
        if (r < 0)
            return NK_EXIT_USAGE;
        if (r > 0)
            continue;
        return nk_cli_error(NK_EXIT_USAGE, "run: unknown option '%s' (see nklab run --help)", argv[i]);
    }
    return NK_EXIT_OK;
}

/* --no-exec: the modelled device time instead of values. */
static int report_model_only(const nk_cli_kernel *ck, const nk_program *p)
{
    nk_timeline *tl;
    int st = nk__time_program(p, NULL, &tl);
    if (st)
        return nk_cli_error(NK_EXIT_FAIL, "%s: timing failed: %s", nk_cli_kernel_name(ck), nk_strerror(st));
    printf("%s on %s: %zu instructions, device time %.3f us (modelled)\n", nk_cli_kernel_name(ck),
           nk_program_target(p), nk_program_num_instructions(p), tl->total_ns * 1e-3);
    printf("--no-exec: no values computed, no outputs written\n");
    nk__timeline_free(tl);
    return NK_EXIT_OK;
}

/* Executes p and writes the outputs. */
static int execute(const run_opts *o, const nk_cli_kernel *ck, const nk_program *p)
{
    int nouts = nk_program_num_outputs(p);
    if (nouts != o->kc.nout)
        return nk_cli_error(NK_EXIT_FAIL, "%s returned %d outputs, %d --out given", nk_cli_kernel_name(ck), nouts,
                            o->kc.nout);
    nk_array outs[NK_CLI_MAX_FILES] = {{0}};
    int rc = nk_cli_alloc_outputs(p, outs);
    if (rc)
        return rc;
    nk_progress pg;
    char label[96];
    snprintf(label, sizeof label, "running %s (%zu instructions)", nk_cli_kernel_name(ck),
             nk_program_num_instructions(p));
    nk_progress_begin(&pg, label);
    int st = nk_program_run(p, ck->args, ck->nargs, outs, nouts);
    nk_progress_end(&pg);
    if (st)
        rc = nk_cli_error(NK_EXIT_FAIL, "%s: execution failed: %s", nk_cli_kernel_name(ck), nk_cli_run_error(st));
    else
        rc = nk_cli_write_outputs(&o->kc, outs, nouts, stdout);
    nk_cli_free_arrays(outs, nouts);
    return rc;
}

int nk_cmd_run(int argc, char **argv)
{
    run_opts o = {.kc = {.cmd = "run"}};
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    const char *prof[1] = {o.profile};
    if ((rc = nk_cli_profile_file("run", o.profile)) || (rc = nk_cli_kernel_files(&o.kc, prof, o.profile != NULL)))
        return rc;
    nk_cli_kernel ck;
    if ((rc = nk_cli_kernel_open(&o.kc, o.no_exec ? NK_OPEN_SHAPES_ONLY : NK_CHECK_OUTS, &ck)))
        return rc;
    const nk_program *p;
    rc = nk_cli_kernel_compile(&ck, &o.kc, &p);
    if (!rc && o.profile)
        rc = nk_cli_write_profile(p, o.profile, stdout);
    if (!rc)
        rc = o.no_exec ? report_model_only(&ck, p) : execute(&o, &ck, p);
    nk_cli_kernel_close(&ck);
    return rc;
}
