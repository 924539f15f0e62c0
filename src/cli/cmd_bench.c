/*
 * cmd_bench.c - `nklab bench KERNEL ...`: compiles once, runs warm-up and
 * timed iterations (nk_bench) and prints the one-row latency table of the
 * Neuron tools, or every percentile as JSON.
 */
#include "args.h"
#include "kio.h"
#include "progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nk_help_bench(void)
{
    printf("usage: nklab bench KERNEL [--in A.npy[:DTYPE] | --random NAME=SHAPE[:DTYPE]] ...\n"
           "                  [--seed N] [--warmup N] [--iters N]\n"
           "                  [--target trn1|trn2 | --target-file FILE]\n"
           "                  [--no-exec] [--profile FILE.nkp] [--json]\n\n"
           "Benchmarks KERNEL (a built-in kernel or FILE.c:FUNCTION): compiles it once, runs\n"
           "--warmup untimed iterations and --iters timed ones, and prints one row:\n\n"
           "  B        batch: 1 (a kernel call is one inference)\n"
           "  NC       NeuronCores requested: 1 (one core is modelled)\n"
           "  NC-USED  NeuronCores used: 1\n"
           "  WEIGHTS  bytes of the kernel's input tensors (its weights and activations\n"
           "           alike: a kernel's arguments are all inputs), copied to the device\n"
           "           in every iteration (the host I/O in L)\n"
           "  MODE     sim: values computed by the host simulation every iteration;\n"
           "           model: --no-exec, timing only\n"
           "  INF/S    inferences per second end to end: 1e6 / mean L\n"
           "  IRES/S   inference results per second of the device alone: 1e6 / NCL(50)\n"
           "  L(p)     end-to-end latency percentile, microseconds: host dispatch (measured\n"
           "           each iteration: cached program lookup and argument binding) + copy\n"
           "           of the inputs to the device and of the outputs back (modelled over\n"
           "           the target's host link) + device time; varies with the dispatch\n"
           "  NCL(p)   device latency percentile, microseconds: the modelled time of the\n"
           "           compiled program on the target, from its first instruction to its\n"
           "           last; timing does not depend on values, so it is computed once and\n"
           "           every percentile is the same\n"
           "  %%USER    user CPU time of nklab over the wall time of the timed loop, in\n"
           "           percent (getrusage; nklab computes on one thread, so at most\n"
           "           about 100; other processes on the machine take it lower); - when\n"
           "           the loop took under 50 ms, too short for the kernel's tick-based\n"
           "           user/system split\n\n"
           "The host simulation itself is in no latency: it stands in for the device.\n"
           "Percentiles interpolate linearly between the closest ranks (numpy's default).\n\n"
           "  --in, --random, --seed, --target, --target-file, --schedule, --grid,\n"
           "  --max-instructions, --max-trace-bytes\n"
           "                 the kernel's inputs, target, schedule and bounds, as for `nklab run`;\n"
           "                 a built-in kernel without inputs runs on its example arguments\n"
           "  --warmup N     untimed iterations first (default 10)\n"
           "  --iters N      timed iterations (default 100)\n"
           "  --no-exec      dispatch and timing only: no values are computed (MODE model)\n"
           "  --profile FILE also write the profile of the kernel to FILE (see nklab profile)\n"
           "  --json         one JSON object instead of the table: every percentile (0, 1,\n"
           "                 10, 25, 50, 90, 99, 100) of both latencies and their parts\n\n"
           "examples:\n"
           "  nklab bench tensor_exp\n"
           "  nklab bench examples/tensor_exp.c:tensor_exp --random in=250x512:float32 --seed 7\n"
           "  nklab bench tensor_exp --in x.npy:bfloat16 --iters 1000 --json\n\n"
           "exit codes: 0 success, 1 failed (unreadable input or target file, the C file\n"
           "does not compile, kernel error), 2 bad command line\n");
}

typedef struct bench_opts {
    nk_kernel_cmd kc;
    long warmup, iters;
    int no_exec, json;
    const char *profile;
} bench_opts;

/* --warmup N / --iters N */
static int count_opt(int argc, char **argv, int *i, const char *name, long lo, long *out)
{
    const char *v;
    int r = nk_cli_optval(argc, argv, i, name, &v);
    if (r > 0 && nk_cli_parse_int(name, v, lo, 10000000, out))
        return -1;
    return r;
}

static int parse(int argc, char **argv, bench_opts *o)
{
    for (int i = 1; i < argc; i++) {
        int r = nk_cli_kernel_arg(argc, argv, &i, &o->kc);
        if (!r)
            r = count_opt(argc, argv, &i, "--warmup", 0, &o->warmup);
        if (!r)
            r = count_opt(argc, argv, &i, "--iters", 1, &o->iters);
        if (!r)
            r = nk_cli_optval(argc, argv, &i, "--profile", &o->profile);
        if (!r && !strcmp(argv[i], "--no-exec"))
            r = o->no_exec = 1;
        if (!r && !strcmp(argv[i], "--json"))
            r = o->json = 1;
        if (r < 0)
            return NK_EXIT_USAGE;
        if (r > 0)
            continue;
        return nk_cli_error(NK_EXIT_USAGE, "bench: unknown option '%s' (see nklab bench --help)", argv[i]);
    }
    if (o->kc.nout)
        return nk_cli_error(NK_EXIT_USAGE, "bench: --out is not used (nklab run writes outputs)");
    return NK_EXIT_OK;
}

static const double PCTS[] = {0, 1, 10, 25, 50, 90, 99, 100};

/* %USER, or a negative value when the loop was too short to tell. */
static double user_percent(const nk_bench_result *r) { return nk_bench_user_percent(r); }

/* WEIGHTS: bytes of the kernel's inputs, the host-to-device copy of every
 * iteration (host_in_ns is this over the target's host link). */
static double input_bytes(const nk_cli_kernel *ck)
{
    double bytes = 0;
    for (int i = 0; i < ck->nargs; i++) {
        double n = nk_dtype_size(ck->args[i].dtype);
        for (int d = 0; d < ck->args[i].ndim; d++)
            n *= (double)ck->args[i].shape[d];
        bytes += n;
    }
    return bytes;
}

static void json_pcts(const char *key, const nk_bench_result *r, nk_latency which, int last)
{
    printf("  \"%s\": {", key);
    for (size_t i = 0; i < sizeof PCTS / sizeof PCTS[0]; i++)
        printf("\"p%g\": %.3f, ", PCTS[i], nk_bench_latency_percentile(r, which, PCTS[i]));
    printf("\"mean\": %.3f}%s\n", nk_bench_latency_mean(r, which), last ? "" : ",");
}

static void print_json(const char *name, const nk_bench_result *r, double weights)
{
    printf("{\n");
    printf("  \"kernel\": \"");
    for (const char *c = name; *c; c++) /* names are C identifiers; escape anyway */
        printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
    printf("\",\n");
    printf("  \"target\": \"%s\",\n", r->target);
    printf("  \"mode\": \"%s\",\n", r->executed ? "sim" : "model");
    printf("  \"batch\": 1,\n  \"nc\": 1,\n  \"nc_used\": 1,\n  \"weights\": %.0f,\n", weights);
    printf("  \"warmup\": %d,\n  \"iters\": %d,\n  \"instructions\": %zu,\n", r->warmup, r->iters, r->ninstr);
    printf("  \"inf_per_s\": %.3f,\n", 1e6 / nk_bench_latency_mean(r, NK_LATENCY_E2E));
    printf("  \"ires_per_s\": %.3f,\n", 1e6 / nk_bench_latency_percentile(r, NK_LATENCY_NC, 50));
    if (user_percent(r) >= 0)
        printf("  \"user_percent\": %.3f,\n", user_percent(r));
    else
        printf("  \"user_percent\": null,\n");
    printf("  \"device_us\": %.3f,\n", r->device_ns * 1e-3);
    printf("  \"host_in_us\": %.3f,\n", r->host_in_ns * 1e-3);
    printf("  \"host_out_us\": %.3f,\n", r->host_out_ns * 1e-3);
    printf("  \"compile_us\": %.3f,\n", r->compile_ns * 1e-3);
    printf("  \"exec_us\": %.3f,\n", r->exec_ns * 1e-3);
    json_pcts("latency_us", r, NK_LATENCY_E2E, 0);
    json_pcts("nc_latency_us", r, NK_LATENCY_NC, 1);
    printf("}\n");
}

static int bench(const bench_opts *o, nk_cli_kernel *ck)
{
    nk_options opts = nk_cli_kernel_options(ck, &o->kc);
    nk_progress pg;
    char label[96];
    snprintf(label, sizeof label, "benchmarking %s", nk_cli_kernel_name(ck));
    nk_progress_begin(&pg, label);
    nk_bench_options bo = {(int)o->warmup, (int)o->iters, !o->no_exec, nk_progress_update, &pg};
    nk_bench_result r;
    int st = nk_bench(ck->k, ck->args, ck->nargs, &opts, &bo, &r);
    nk_progress_end(&pg);
    if (st) {
        const char *e = nk_kernel_error(ck->k);
        if (e[0]) /* a kernel error: "file:line: message" */
            fprintf(stderr, "%s\n", e);
        else
            nk_cli_error(NK_EXIT_FAIL, "bench: %s: %s", nk_cli_kernel_name(ck), nk_cli_run_error(st));
        return NK_EXIT_FAIL;
    }
    if (o->json)
        print_json(nk_cli_kernel_name(ck), &r, input_bytes(ck));
    else {
        char *text = NULL;
        if (nk_bench_format_table(nk_cli_kernel_name(ck), &r, input_bytes(ck), &text)) {
            nk_bench_result_free(&r);
            return nk_cli_error(NK_EXIT_FAIL, "bench: out of memory");
        }
        fputs(text, stdout);
        free(text);
    }
    nk_bench_result_free(&r);
    return NK_EXIT_OK;
}

int nk_cmd_bench(int argc, char **argv)
{
    bench_opts o = {.kc = {.cmd = "bench"}, .warmup = 10, .iters = 100};
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    nk_cli_kernel ck;
    const char *prof[1] = {o.profile};
    if ((rc = nk_cli_profile_file("bench", o.profile)) || (rc = nk_cli_kernel_files(&o.kc, prof, o.profile != NULL)))
        return rc;
    if ((rc = nk_cli_kernel_open(&o.kc, NK_CHECK_EXAMPLES | (o.no_exec ? NK_OPEN_NO_FILL : 0), &ck)))
        return rc;
    rc = bench(&o, &ck);
    const nk_program *p;
    if (!rc && o.profile && !(rc = nk_cli_kernel_compile(&ck, &o.kc, &p)))
        rc = nk_cli_write_profile(p, o.profile, o.json ? stderr : stdout);
    nk_cli_kernel_close(&ck);
    return rc;
}
