/*
 * bench_cache.c - what the program cache saves: the first call of a kernel
 * (trace + schedule) against the whole host overhead of a cached call, all
 * that nk_call pays except executing the instructions: the cache lookup in
 * nk_kernel_compile, allocating the outputs, argument binding and the run's
 * own set-up (the binding table, the on-chip memories, scratch tensors,
 * freeing them). That call is timed as one body: a real nk_call's lookup
 * and allocations, then nk_program_run of the program with its instruction
 * list emptied (a copy of the program, so nothing is left out).
 *
 * usage: bench_cache [KERNEL...]   (default: every built-in kernel, with its
 * example argument shapes and dtypes)
 *
 * Each figure is the best of 5 batches (the machine may be shared); each batch
 * averages many calls. Ratios come from the same run; there are no pass/fail
 * thresholds.
 */
#include "kernels.h"
#include "nkint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 5
#define BATCH_SECONDS 0.05

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile uintptr_t sink; /* keeps measured results alive */

/* Trace + compile on a fresh kernel each time: ns per first call. */
static double first_call(const nk_kernel_info *ki, const nk_array *args)
{
    double best = 1e30;
    for (int b = 0; b < BATCHES; b++) {
        double spent = 0;
        long n = 0;
        while (spent < BATCH_SECONDS || n < 3) {
            nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
            const nk_program *p = NULL;
            double t0 = now();
            int rc = nk_kernel_compile(k, args, ki->nargs, NULL, &p);
            spent += now() - t0;
            sink = (uintptr_t)p;
            nk_kernel_free(k);
            if (rc)
                return -1;
            n++;
        }
        if (spent / (double)n < best)
            best = spent / (double)n;
    }
    return best * 1e9;
}

/* ns per call of body(ctx), best of BATCHES batches of about BATCH_SECONDS. */
static double per_call(void (*body)(void *), void *ctx)
{
    long n = 1;
    for (;;) { /* calibrate the batch size */
        double t0 = now();
        for (long i = 0; i < n; i++)
            body(ctx);
        if (now() - t0 > BATCH_SECONDS / 4 || n > (1L << 30))
            break;
        n *= 2;
    }
    n *= 4;
    double best = 1e30;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now();
        for (long i = 0; i < n; i++)
            body(ctx);
        double t = (now() - t0) / (double)n;
        if (t < best)
            best = t;
    }
    return best * 1e9;
}

typedef struct ctx {
    nk_kernel *k;
    const nk_kernel_info *ki;
    const nk_program *p;
    nk_array *args, *outs;
    void **hbm;
    int bad;
    const nk_options *opts; /* NULL: the default target by name */
    nk_program empty;       /* *p with no instructions: a run that is all set-up */
} ctx;

static void lookup(void *v)
{
    ctx *c = v;
    const nk_program *p = NULL;
    if (nk_kernel_compile(c->k, c->args, c->ki->nargs, c->opts, &p) || p != c->p)
        c->bad = 1;
    sink = (uintptr_t)p;
}

static void bind(void *v)
{
    ctx *c = v;
    if (nk__program_bind(c->p, c->args, c->ki->nargs, c->outs, c->p->noutputs, c->hbm))
        c->bad = 1;
    nk__program_unbind(c->p, c->hbm);
}

static void run(void *v)
{
    ctx *c = v;
    if (nk_program_run(c->p, c->args, c->ki->nargs, c->outs, c->p->noutputs))
        c->bad = 1;
}

/* nk_program_run without the instructions: binding, set-up, unbinding */
static void setup(void *v)
{
    ctx *c = v;
    if (nk_program_run(&c->empty, c->args, c->ki->nargs, c->outs, c->p->noutputs))
        c->bad = 1;
}

/* nk_call's allocation of the outputs (zeroed) and their release */
static void outputs(void *v)
{
    ctx *c = v;
    nk_array o[8];
    int n = 0;
    for (; n < c->p->noutputs; n++) {
        nk_array d;
        nk_program_output(c->p, n, &d);
        if (nk_array_alloc(&o[n], d.dtype, d.ndim, d.shape)) {
            c->bad = 1;
            break;
        }
    }
    while (n-- > 0)
        nk_array_free(&o[n]);
}

/* A cached nk_call without executing: lookup, outputs allocated, the run's
 * set-up, the outputs freed (the caller's part, counted here too). */
static void call(void *v)
{
    ctx *c = v;
    const nk_program *p = NULL;
    nk_array o[8];
    int n = 0;
    if (nk_kernel_compile(c->k, c->args, c->ki->nargs, c->opts, &p) || p != c->p) {
        c->bad = 1;
        return;
    }
    for (; n < p->noutputs; n++) {
        nk_array d;
        nk_program_output(p, n, &d);
        if (nk_array_alloc(&o[n], d.dtype, d.ndim, d.shape)) {
            c->bad = 1;
            break;
        }
    }
    if (n == p->noutputs && nk_program_run(&c->empty, c->args, c->ki->nargs, o, n))
        c->bad = 1;
    while (n-- > 0)
        nk_array_free(&o[n]);
}

static void signature(char *buf, size_t n, const nk_kernel_info *ki)
{
    size_t k = 0;
    buf[0] = 0;
    for (int a = 0; a < ki->nargs && k < n; a++) {
        const nk_argspec *s = &ki->args[a];
        k += (size_t)snprintf(buf + k, n - k, "%s%s[", a ? " " : "", s->name);
        for (int d = 0; d < s->ndim && k < n; d++)
            k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "", (long long)s->shape[d]);
        if (k < n)
            k += (size_t)snprintf(buf + k, n - k, "]:%s", nk_dtype_name(s->dtype));
    }
}

static const char *fmt_ns(char *buf, double ns)
{
    if (ns >= 1e6)
        sprintf(buf, "%.2f ms", ns / 1e6);
    else if (ns >= 1e3)
        sprintf(buf, "%.2f us", ns / 1e3);
    else
        sprintf(buf, "%.1f ns", ns);
    return buf;
}

/* Measures one kernel; returns 0 or -1 after printing why not. */
static int bench_kernel(const nk_kernel_info *ki)
{
    nk_array args[NK_KERNEL_MAX_ARGS] = {{0}}, outs[8] = {{0}};
    int rc = -1;
    ctx c = {nk_kernel_new(ki->name, ki->fn), ki, NULL, args, outs, NULL, 0};
    for (int a = 0; a < ki->nargs; a++)
        if (nk_array_alloc(&args[a], ki->args[a].dtype, ki->args[a].ndim, ki->args[a].shape))
            goto out;
    double first = first_call(ki, args);
    if (first < 0 || nk_kernel_compile(c.k, args, ki->nargs, NULL, &c.p)) {
        printf("%-14s compile failed: %s\n", ki->name, nk_kernel_error(c.k));
        goto out;
    }
    if (c.p->noutputs > 8 || !(c.hbm = calloc(c.p->nbufs, sizeof *c.hbm)))
        goto out;
    for (int i = 0; i < c.p->noutputs; i++) {
        nk_array d;
        nk_program_output(c.p, i, &d);
        if (nk_array_alloc(&outs[i], d.dtype, d.ndim, d.shape))
            goto out;
    }
    c.empty = *c.p;
    c.empty.ninstr = 0;
    double look = per_call(lookup, &c), bnd = per_call(bind, &c), set = per_call(setup, &c) - bnd;
    double outs_ns = per_call(outputs, &c), cached = per_call(call, &c), exe = per_call(run, &c) - (bnd + set);
    if (c.bad) {
        printf("%-14s a cached call failed or missed the cache\n", ki->name);
        goto out;
    }
    char sig[160], b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32];
    signature(sig, sizeof sig, ki);
    printf("%-14s %-46s %7zu %10s %10s %10s %10s %10s %10s %11.0fx %10s\n", ki->name, sig,
           nk_program_num_instructions(c.p), fmt_ns(b1, first), fmt_ns(b2, look), fmt_ns(b3, bnd), fmt_ns(b6, set),
           fmt_ns(b7, outs_ns), fmt_ns(b4, cached), first / cached, fmt_ns(b5, exe));
    rc = 0;
out:
    for (int i = 0; i < 8; i++)
        nk_array_free(&outs[i]);
    for (int a = 0; a < ki->nargs; a++)
        nk_array_free(&args[a]);
    free(c.hbm);
    nk_kernel_free(c.k);
    return rc;
}

/* A lookup whose key holds a whole target table (nk_options.arch, every
 * byte of it) against one keyed by a built-in target's name. */
static int bench_table_key(void)
{
    const nk_kernel_info *ki = nk_builtin_kernel("tensor_exp");
    nk_array args[NK_KERNEL_MAX_ARGS] = {{0}};
    nk_target *t = NULL;
    char err[256];
    int rc = -1;
    ctx c = {nk_kernel_new(ki->name, ki->fn), ki, NULL, args, NULL, NULL, 0, NULL};
    for (int a = 0; a < ki->nargs; a++) /* shapes and dtypes only: a lookup reads no values */
        args[a] = (nk_array){ki->args[a].dtype, ki->args[a].ndim,
                             {ki->args[a].shape[0], ki->args[a].shape[1], ki->args[a].shape[2], ki->args[a].shape[3]},
                             NULL};
    if (nk_target_parse("base = trn1\nname = what-if\nhbm_gbps = 820\n", "bench", &t, err, sizeof err)) {
        printf("target table: %s\n", err);
        goto out;
    }
    nk_options by_table = {NULL, 0, t};
    if (nk_kernel_compile(c.k, args, ki->nargs, NULL, &c.p))
        goto out;
    double by_name = per_call(lookup, &c);
    c.opts = &by_table;
    if (nk_kernel_compile(c.k, args, ki->nargs, c.opts, &c.p))
        goto out;
    double table = per_call(lookup, &c);
    if (c.bad)
        goto out;
    char b1[32], b2[32];
    printf("\ncached lookup of %s keyed by the target's name: %s; by a loaded target table (%zu bytes of key): "
           "%s\n", ki->name, fmt_ns(b1, by_name), sizeof(nk_arch), fmt_ns(b2, table));
    rc = 0;
out:
    nk_target_free(t);
    nk_kernel_free(c.k);
    return rc;
}

int main(int argc, char **argv)
{
    printf("program cache: first call (trace + compile) vs a cached call's whole host overhead\n"
           "(lookup = nk_kernel_compile on a hit; bind = argument checks and binding; set-up = the rest\n"
           "of nk_program_run before and after the instructions; outputs = nk_call's allocation of the\n"
           "outputs (zeroed) and their release; cached = one nk_call without executing: lookup, outputs,\n"
           "bind, set-up, timed as one; execute = the instructions, for scale). Best of %d batches of many\n"
           "calls each.\n\n",
           BATCHES);
    printf("%-14s %-46s %7s %10s %10s %10s %10s %10s %10s %10s %10s\n", "kernel", "arguments", "instrs", "first",
           "lookup", "bind", "set-up", "outputs", "cached", "first/cached", "execute");
    int failed = 0, found = 0;
    for (int i = 0; i < nk_builtin_kernel_count; i++) {
        const nk_kernel_info *ki = &nk_builtin_kernels[i];
        int want = argc < 2;
        for (int a = 1; a < argc; a++)
            want |= !strcmp(argv[a], ki->name);
        if (!want)
            continue;
        found++;
        failed |= bench_kernel(ki) != 0;
    }
    if (!found) {
        fprintf(stderr, "bench_cache: no such kernel (see nklab kernels)\n");
        return 2;
    }
    return failed | (bench_table_key() != 0);
}
