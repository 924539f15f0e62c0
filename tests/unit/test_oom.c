/*
 * test_oom.c - out of host memory at every allocation: for each operation of
 * the library (trace and compile, execute, time, profile, files, viewer,
 * insights, exports), the Nth allocation fails, for N = 1, 2, 3, ... until the
 * operation completes without reaching it. Every run that met the failure
 * must return an error status (no crash, no abort, no success that dropped
 * something), and the sanitizer build's LeakSanitizer sees no leak at exit.
 *
 * The countdown is oomhook.c's (the unit binary's allocation wrappers).
 * Compiles use nk_options.threads = 1, so the allocations come in the same
 * order every time. Operations of more than STRIDE_FROM allocations are run
 * on every N up to STRIDE_FROM and on every STRIDE-th N after it (plus the
 * last ones), to keep the suite's time; the others on every N.
 */
#define _GNU_SOURCE
#include "test.h"
#include "oomhook.h"

#include "kernels.h"
#include "nkint.h"
#include "profile/profile.h"
#include "sched/program_io.h"
#include "view/view.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- the operations: each returns 0 or a negative status and frees what it
 * made, except its result, which it leaves in the fixture for digest() */

typedef struct fixture {
    const nk_kernel_info *ki;
    nk_array args[NK_KERNEL_MAX_ARGS];
    nk_kernel *k;          /* compiled once, unarmed */
    const nk_program *p;
    nk_profile *pr;
    char dir[64];
    /* an operation's result */
    nk_kernel *rk;
    nk_program *rprog;
    nk_profile *rpr;
    char *rtext;
    nk_array routs[NK_KERNEL_MAX_OUTS];
    int nrouts;
    double rnum[4];
} fixture;

static nk_options fx_opts(const fixture *f)
{
    nk_options o = {0};
    memcpy(o.grid, f->ki->grid, sizeof o.grid);
    o.threads = 1;
    return o;
}

static int op_compile(fixture *f)
{
    nk_kernel *k = nk_kernel_new(f->ki->name, f->ki->fn);
    if (!k)
        return NK_ENOMEM;
    nk_options o = fx_opts(f);
    const nk_program *p;
    int rc = nk_kernel_compile(k, f->args, f->ki->nargs, &o, &p);
    if (rc && !strstr(nk_kernel_error(k), "out of memory"))
        printf("  compile of %s failed with \"%s\"\n", f->ki->name, nk_kernel_error(k));
    f->rk = k;
    return rc;
}

static int op_run(fixture *f)
{
    int n = nk_program_num_outputs(f->p), rc = 0;
    for (; f->nrouts < n && !rc; f->nrouts++) {
        nk_array *a = &f->routs[f->nrouts], d;
        if (!(rc = nk_program_output(f->p, f->nrouts, &d)))
            rc = nk_array_alloc(a, d.dtype, d.ndim, d.shape);
        if (rc)
            memset(a, 0, sizeof *a);
    }
    if (!rc)
        rc = nk_program_run(f->p, f->args, f->ki->nargs, f->routs, n);
    return rc;
}

static int op_call(fixture *f)
{
    nk_options o = fx_opts(f);
    return nk_call(f->k, f->args, f->ki->nargs, &o, f->routs, NK_KERNEL_MAX_OUTS, &f->nrouts);
}

static int op_capture(fixture *f) { return nk_profile_capture(f->p, NULL, &f->rpr); }

static int op_bench(fixture *f)
{
    nk_options o = fx_opts(f);
    nk_bench_options bo = {0, 2, 0, NULL, NULL};
    nk_bench_result r;
    int rc = nk_bench(f->k, f->args, f->ki->nargs, &o, &bo, &r);
    char *text = NULL;
    if (!rc)
        rc = nk_bench_format_table(f->ki->name, &r, 0, &text);
    free(text);
    if (!rc) {
        f->rnum[0] = r.device_ns;
        f->rnum[1] = r.host_in_ns;
        f->rnum[2] = r.host_out_ns;
        f->rnum[3] = (double)r.ninstr;
    }
    nk_bench_result_free(&r);
    return rc;
}

static const char *fpath(fixture *f, const char *name)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    return path;
}

static int op_profile_file(fixture *f)
{
    int rc = nk_profile_write(f->pr, fpath(f, "p.nkp"));
    char err[256];
    if (!rc)
        rc = nk_profile_read(fpath(f, "p.nkp"), &f->rpr, err, sizeof err);
    unlink(fpath(f, "p.nkp"));
    return rc;
}

static int op_program_file(fixture *f)
{
    int rc = nk_program_save(f->p, fpath(f, "p.nkprog"));
    char err[256];
    if (!rc)
        rc = nk_program_load(fpath(f, "p.nkprog"), &f->rprog, err, sizeof err);
    if (!rc)
        rc = nk_program_dump(f->rprog, &f->rtext);
    unlink(fpath(f, "p.nkprog"));
    return rc;
}

static int op_insights(fixture *f) { return nk_profile_insights(f->pr, 0, &f->rtext); }
static int op_insights_json(fixture *f) { return nk_profile_insights(f->pr, 1, &f->rtext); }

static int op_summary(fixture *f)
{
    int rc = nk_profile_summary(f->pr, "k", 0, &f->rtext);
    nk_metrics m;
    if (!rc)
        rc = nk_profile_metrics(f->pr, &m);
    if (!rc)
        f->rnum[0] = m.total_time;
    return rc;
}

/* FNV-1a over bytes */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static int op_view(fixture *f)
{
    nk_text t = {0};
    int rc = nk__view_html(f->pr, NULL, &t);
    if (!rc)
        f->rnum[0] = (double)fnv(0, t.s, t.len);
    nk__text_free(&t);
    return rc;
}

static int op_exports(fixture *f)
{
    nk_export_opts o = {0};
    int (*fn[3])(const nk_profile *, const nk_export_opts *, nk_text *) = {nk__export_perfetto, nk__export_json,
                                                                           nk__export_csv};
    int rc = 0;
    for (int k = 0; k < 3 && !rc; k++) {
        nk_text t = {0};
        if (!(rc = fn[k](f->pr, &o, &t)))
            f->rnum[k] = (double)fnv(0, t.s, t.len);
        nk__text_free(&t);
    }
    return rc;
}

static int op_diff(fixture *f) { return nk_profile_diff(f->pr, "a", f->pr, "b", &f->rtext); }

static uint64_t profile_digest(nk_profile *pr, uint64_t h)
{
    nk_profile_set_created(pr, 0);
    nk_wr w = {0};
    if (nk__profile_encode(pr, &w))
        return 0;
    h = fnv(h, w.p, w.n);
    nk__wr_free(&w);
    return h;
}

/* The result an operation left (computed unarmed), freed. With want 0 it is
 * only freed and 0 returned: a failed call's result is not compared, and
 * skipping its recompile halves the sweeps' time. */
static uint64_t digest(fixture *f, int want)
{
    uint64_t h = 0xcbf29ce484222325ull;
    if (f->rk && want) {
        nk_options o = fx_opts(f);
        const nk_program *p;
        nk_wr w = {0};
        /* the program as its file holds it: instructions, allocation,
         * dependencies, queues and sources */
        if (!nk_kernel_compile(f->rk, f->args, f->ki->nargs, &o, &p) && !nk__program_encode(p, &w))
            h = fnv(h, w.p, w.n);
        nk__wr_free(&w);
    }
    nk_kernel_free(f->rk);
    for (int i = 0; i < f->nrouts; i++) {
        if (want && f->routs[i].data)
            h = fnv(h, f->routs[i].data, nk_array_nbytes(&f->routs[i]));
        nk_array_free(&f->routs[i]);
    }
    if (want && f->rpr)
        h = profile_digest(f->rpr, h);
    nk_profile_free(f->rpr);
    nk_program_free(f->rprog);
    if (want && f->rtext)
        h = fnv(h, f->rtext, strlen(f->rtext));
    free(f->rtext);
    h = fnv(h, f->rnum, sizeof f->rnum);
    f->rk = NULL;
    f->rprog = NULL;
    f->rpr = NULL;
    f->rtext = NULL;
    f->nrouts = 0;
    memset(f->rnum, 0, sizeof f->rnum);
    return want ? h : 0;
}

/* ---- the driver */

enum { STRIDE_FROM = 3000, STRIDE = 7 };

typedef struct op {
    const char *name;
    int (*fn)(fixture *);
} op;

/* Runs fn with every allocation N failing in turn; returns the allocations
 * of a run that met no failure (-1 if none did). A run that met the failure
 * returns an error, or the same result as a run without one (an allocation
 * the library could do without, such as a buffer it only meant to shrink). */
static long every_n(fixture *f, const op *o)
{
    int rc = o->fn(f), bad = 0;
    if (rc)
        nk_test_fail(__FILE__, __LINE__, "%s on %s: %s without a failure", o->name, f->ki->name, nk_strerror(rc));
    uint64_t want = digest(f, 1);
    for (long n = 1, total = -1; n < 1000000;
         n = n < STRIDE_FROM || (total > 0 && n + STRIDE > total - STRIDE) ? n + 1 : n + STRIDE) {
        nk_oom_arm(n);
        rc = o->fn(f);
        int hit;
        long seen = nk_oom_disarm(&hit);
        uint64_t got = digest(f, !hit || rc >= 0);
        if (!hit) {
            if (rc || got != want)
                nk_test_fail(__FILE__, __LINE__, "%s on %s: %s, result %s after %ld allocations without a failure",
                             o->name, f->ki->name, nk_strerror(rc), got == want ? "the same" : "differs", seen);
            return seen;
        }
        if (n == 1)
            total = -1;
        if (rc >= 0 && got != want && bad++ < 3)
            nk_test_fail(__FILE__, __LINE__, "%s on %s: allocation %ld failed, the call returned %d and its "
                         "result differs", o->name, f->ki->name, n, rc);
    }
    return -1;
}

static const op ops[] = {
    {"compile", op_compile},           {"nk_program_run", op_run},   {"nk_call", op_call},
    {"nk_profile_capture", op_capture}, {"nk_bench", op_bench},       {"profile file", op_profile_file},
    {"program file", op_program_file}, {"insights", op_insights},   {"insights json", op_insights_json},
    {"summary", op_summary},           {"viewer page", op_view},      {"exports", op_exports},
    {"diff", op_diff},
};

static void run_kernel(const char *name, const char *const *only)
{
    fixture f;
    memset(&f, 0, sizeof f);
    f.ki = nk_builtin_kernel(name);
    CHECK(f.ki != NULL);
    if (!f.ki)
        return;
    snprintf(f.dir, sizeof f.dir, "/tmp/nklab-oom-XXXXXX");
    CHECK(mkdtemp(f.dir) != NULL);
    nk_options o = fx_opts(&f);
    if (nk_kernel_example_args(f.ki, 1, f.args) || !(f.k = nk_kernel_new(name, f.ki->fn)) ||
        nk_kernel_compile(f.k, f.args, f.ki->nargs, &o, &f.p) || nk_profile_capture(f.p, NULL, &f.pr)) {
        CHECK(0);
    } else {
        for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
            int want = !only;
            for (int j = 0; only && only[j]; j++)
                want |= !strcmp(only[j], ops[i].name);
            long n = want ? every_n(&f, &ops[i]) : 1;
            if (n < 0)
                nk_test_fail(__FILE__, __LINE__, "%s on %s never completed", ops[i].name, name);
            else if (n == 0) /* every operation allocates: the wrappers are not linked in */
                nk_test_fail(__FILE__, __LINE__, "%s on %s made no allocation through oomhook.c", ops[i].name, name);
            if (getenv("NK_OOM_VERBOSE"))
                printf("  %s on %s: %ld allocations\n", ops[i].name, name, n);
        }
    }
    nk_profile_free(f.pr);
    nk_kernel_free(f.k);
    for (int i = 0; i < f.ki->nargs; i++)
        nk_array_free(&f.args[i]);
    rmdir(f.dir);
}

TEST(oom_tensor_exp_every_operation) { run_kernel("tensor_exp", NULL); }

TEST(oom_spmd_and_sequence_compile_run_capture)
{
    static const char *const some[] = {"compile", "nk_program_run", "nk_profile_capture", "profile file", NULL};
    run_kernel("spmd_tensor_add", some);
    run_kernel("seq_scale_matmul_onchip", some);
}

/* Compiling every built-in kernel: a failed allocation in the tracer's
 * optional rewrites (a memset of zeros folded into the matmul that adds to
 * it) must fail the compile, not give a program without the rewrite. */
TEST(oom_every_builtin_kernel_compile)
{
    static const char *const some[] = {"compile", NULL};
    for (int i = 0; i < nk_builtin_kernel_count; i++)
        run_kernel(nk_builtin_kernels[i].name, some);
}
