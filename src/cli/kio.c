/*
 * kio.c - the kernel of a command, its inputs (.npy files, generated values or
 * a built-in kernel's examples) and its outputs.
 */
#include "kio.h"
#include "npy.h"
#include "env.h"
#include "progress.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void nk_cli_free_arrays(nk_array *a, int n)
{
    for (int i = 0; i < n; i++)
        nk_array_free(&a[i]);
}

static void shape_text(char *buf, size_t n, const int64_t *shape, int ndim)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

/* The dtype of a .npy file's values as nklab holds them. */
static nk_dtype npy_dtype(const nk_npy_info *info)
{
    char kind = info->descr[1];
    int size = info->itemsize;
    if (kind == 'f')
        return size == 2 ? NK_F16 : NK_F32;
    if (kind == 'i')
        return size == 1 ? NK_I8 : size == 2 ? NK_I16 : NK_I32;
    if (kind == 'u')
        return size == 1 ? NK_U8 : size == 2 ? NK_U16 : NK_U32;
    return NK_U8; /* bool */
}

static int load_file(const nk_kernel_cmd *c, const nk_kernel_info *ki, int i, nk_array *a)
{
    const nk_input_spec *s = &c->in[i];
    char err[512];
    nk_npy_info info;
    nk_dtype want = s->has_dtype ? s->dtype : ki ? ki->args[i].dtype : NK_F32;
    if (nk_npy_read(s->path, want, a, &info, err, sizeof err))
        return nk_cli_error(NK_EXIT_FAIL, "%s", err);
    if (!ki && !s->has_dtype && npy_dtype(&info) != want) {
        /* a user kernel sees the file's own dtype: read it again as that */
        nk_array_free(a);
        if (nk_npy_read(s->path, npy_dtype(&info), a, NULL, err, sizeof err))
            return nk_cli_error(NK_EXIT_FAIL, "%s", err);
    }
    if (ki && a->ndim != ki->args[i].ndim) {
        const nk_argspec *as = &ki->args[i];
        char sh[96];
        int nd = a->ndim;
        shape_text(sh, sizeof sh, a->shape, nd);
        nk_array_free(a);
        return nk_cli_error(NK_EXIT_FAIL, "%s: %s's argument '%s' has %d dim%s, the file has %d (%s)", s->path,
                            ki->name, as->name, as->ndim, as->ndim == 1 ? "" : "s", nd, sh);
    }
    return NK_EXIT_OK;
}

void nk_cli_random_range(const nk_kernel_info *ki, int i, nk_dtype dt, double *lo, double *hi)
{
    if (ki && (ki->args[i].lo != 0 || ki->args[i].hi != 0)) {
        *lo = ki->args[i].lo;
        *hi = ki->args[i].hi;
    } else if (nk_dtype_is_float(dt) || ki) {
        *lo = -1;
        *hi = 1;
    } else if (dt == NK_U8 || dt == NK_U16 || dt == NK_U32) {
        *lo = 0;
        *hi = 128;
    } else {
        *lo = -64;
        *hi = 64;
    }
}

/* The seed of input i: the same derivation as nk_kernel_example_args, so a
 * --random input equals the built-in example argument of the same seed. */
static uint64_t input_seed(uint64_t seed, int i) { return seed * 1000003u + (uint64_t)i; }

static int gen_random(const nk_kernel_cmd *c, const nk_kernel_info *ki, int i, int flags, nk_array *a)
{
    const nk_input_spec *s = &c->in[i];
    nk_dtype dt = s->has_dtype ? s->dtype : ki ? ki->args[i].dtype : NK_F32;
    if (flags & NK_OPEN_SHAPES_ONLY) { /* nothing will read the values: no memory for them */
        memset(a, 0, sizeof *a);
        a->dtype = dt;
        a->ndim = s->ndim;
        memcpy(a->shape, s->shape, sizeof a->shape);
        return NK_EXIT_OK;
    }
    if (nk_array_alloc(a, dt, s->ndim, s->shape))
        return nk_cli_error(NK_EXIT_FAIL, "--random '%s': out of memory", s->text);
    if (flags & NK_OPEN_NO_FILL) /* zeroed pages, never touched */
        return NK_EXIT_OK;
    double lo, hi;
    nk_cli_random_range(ki, i, dt, &lo, &hi);
    nk_fill_uniform(a, input_seed(c->seed, i), lo, hi);
    return NK_EXIT_OK;
}

static int load_inputs(const nk_kernel_cmd *c, int flags, nk_cli_kernel *ck)
{
    const nk_kernel_info *ki = ck->info;
    if (ki && c->nin == 0) {
        if (nk_kernel_example_args(ki, c->seed, ck->args))
            return nk_cli_error(NK_EXIT_FAIL, "out of memory for %s's example arguments", ki->name);
        ck->nargs = ki->nargs;
        return NK_EXIT_OK;
    }
    for (int i = 0; i < c->nin; i++) {
        int rc = c->in[i].random ? gen_random(c, ki, i, flags, &ck->args[i]) : load_file(c, ki, i, &ck->args[i]);
        if (rc)
            return rc;
        ck->nargs = i + 1;
    }
    return NK_EXIT_OK;
}

const char *nk_cli_kernel_name(const nk_cli_kernel *ck)
{
    return ck->info ? ck->info->name : ck->user.function;
}

void nk_cli_kernel_close(nk_cli_kernel *ck)
{
    nk_cli_free_arrays(ck->args, ck->nargs);
    ck->nargs = 0;
    nk_kernel_free(ck->k);
    ck->k = NULL;
    nk_target_free(ck->table);
    ck->table = NULL;
    nk_cli_unload_user_kernel(&ck->user);
}

/* The C file of a FILE.c:FUNCTION kernel, into buf. */
static const char *kernel_file(const char *spec, char *buf, size_t n)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || (size_t)(colon - spec) >= n)
        return NULL;
    memcpy(buf, spec, (size_t)(colon - spec));
    buf[colon - spec] = 0;
    return buf;
}

int nk_cli_kernel_files(const nk_kernel_cmd *c, const char *const *more_out, int nmore)
{
    const char *outs[NK_CLI_MAX_FILES + 4], *ins[NK_CLI_MAX_FILES + 2];
    int nout = 0, nin = 0;
    for (int i = 0; i < c->nout; i++) {
        if (nk_cli_is_stdout(c->out[i]))
            return nk_cli_error(NK_EXIT_USAGE, "%s: --out '-': outputs are written to .npy files, not to "
                                "standard output", c->cmd);
        outs[nout++] = c->out[i];
    }
    for (int i = 0; i < nmore && nout < NK_CLI_MAX_FILES + 4; i++)
        outs[nout++] = more_out[i];
    char kfile[PATH_MAX];
    if (c->kernel && nk_cli_is_user_kernel(c->kernel) && kernel_file(c->kernel, kfile, sizeof kfile)) {
        struct stat st;
        if (!stat(kfile, &st) && !S_ISREG(st.st_mode)) /* a FIFO would block the compiler */
            return nk_cli_error(NK_EXIT_FAIL, "cannot read %s: not a regular file (%s)", kfile,
                                nk_cli_file_type(st.st_mode));
        ins[nin++] = kfile;
    }
    if (c->target_file) {
        int rc = nk_cli_check_input(c->cmd, c->target_file);
        if (rc)
            return rc;
        ins[nin++] = c->target_file;
    }
    for (int i = 0; i < c->nin && nin < NK_CLI_MAX_FILES + 2; i++)
        if (!c->in[i].random)
            ins[nin++] = c->in[i].path;
    return nk_cli_check_outputs(c->cmd, outs, nout, ins, nin);
}

int nk_cli_kernel_open(const nk_kernel_cmd *c, int flags, nk_cli_kernel *ck)
{
    memset(ck, 0, sizeof *ck);
    int rc = nk_cli_kernel_check(c, flags, &ck->info);
    if (rc)
        return rc;
    if (c->target_file) {
        char err[PATH_MAX + 256];
        if (nk_target_load(c->target_file, &ck->table, err, sizeof err)) {
            fprintf(stderr, "%s\n", err); /* "PATH:LINE: message", as compilers print */
            return NK_EXIT_FAIL;
        }
    }
    nk_kernel_fn fn = ck->info ? ck->info->fn : NULL;
    if (!ck->info) {
        char err[PATH_MAX + 256];
        if (nk_cli_load_user_kernel(c->kernel, &ck->user, nk_progress_enabled(), err, sizeof err)) {
            nk_cli_kernel_close(ck);
            return nk_cli_error(NK_EXIT_FAIL, "%s", err);
        }
        fn = ck->user.fn;
    }
    ck->k = ck->info ? nk_builtin_kernel_new(ck->info) : nk_kernel_new(nk_cli_kernel_name(ck), fn);
    if (!ck->k)
        rc = nk_cli_error(NK_EXIT_FAIL, "out of memory");
    else
        rc = load_inputs(c, flags, ck);
    if (!rc && !ck->info && nk_cli_py_params && nk_cli_is_py_kernel(c->kernel))
        nk_cli_py_params(ck->k, ck->nargs);
    else if (!rc && !ck->info && ck->nargs <= NK_CLI_MAX_FILES) {
        /* a C kernel takes an array: its inputs are named as --random names them, at its definition */
        const char *names[NK_CLI_MAX_FILES] = {0};
        for (int i = 0; i < ck->nargs && i < c->nin; i++)
            names[i] = c->in[i].random && c->in[i].name[0] ? c->in[i].name : NULL;
        nk_loc decl = {ck->user.decl_line ? ck->user.path : NULL, ck->user.decl_line, NULL};
        if (nk_kernel_set_params(ck->k, decl, names, ck->nargs)) /* a name it cannot carry: the place only */
            nk_kernel_set_params(ck->k, decl, NULL, 0);
    }
    if (rc)
        nk_cli_kernel_close(ck);
    return rc;
}

nk_options nk_cli_kernel_options(const nk_cli_kernel *ck, const nk_kernel_cmd *c)
{
    nk_options opts = {c->target, (int)c->bufs, ck->table, c->schedule};
    opts.max_instructions = c->max_instructions;
    opts.max_trace_bytes = c->max_trace_bytes;
    opts.threads = nk_cli_env_threads();
    if (c->has_grid) {
        memcpy(opts.grid, c->grid, sizeof opts.grid);
        memcpy(opts.grid_nc, c->grid_nc, sizeof opts.grid_nc);
    } else if (ck->info) { /* a built-in kernel's example grid */
        memcpy(opts.grid, ck->info->grid, sizeof opts.grid);
    }
    return opts;
}

int nk_cli_heap_kept;

int nk_cli_kernel_compile(nk_cli_kernel *ck, const nk_kernel_cmd *c, const nk_program **p)
{
    nk_options opts = nk_cli_kernel_options(ck, c);
    if (nk_kernel_compile(ck->k, ck->args, ck->nargs, &opts, p)) {
        /* the tracer's message starts with the kernel's file:line */
        fprintf(stderr, "%s\n", nk_kernel_error(ck->k));
        return NK_EXIT_FAIL;
    }
#ifdef __GLIBC__
    /* the compile's phases reused each other's freed heap memory (main's
     * NK_HEAP_KEEP); kept now, it would sit under the run's own peak, whose
     * last phase (the timeline's merge, in blocks of their own) comes after
     * the run has freed its heap blocks: from here on, glibc's default */
    if (nk_cli_heap_kept) {
        malloc_trim(0);
        mallopt(M_TRIM_THRESHOLD, 128 << 10);
        nk_cli_heap_kept = 0;
    }
#endif
    return NK_EXIT_OK;
}

int nk_cli_alloc_outputs(const nk_program *p, nk_array *outs)
{
    int n = nk_program_num_outputs(p);
    for (int i = 0; i < n; i++) {
        nk_array d;
        nk_program_output(p, i, &d);
        if (nk_array_alloc(&outs[i], d.dtype, d.ndim, d.shape)) {
            nk_cli_free_arrays(outs, i);
            return nk_cli_error(NK_EXIT_FAIL, "out of memory for output %d", i);
        }
    }
    return NK_EXIT_OK;
}

int nk_cli_write_outputs(const nk_kernel_cmd *c, const nk_array *outs, int n, FILE *note)
{
    char err[512];
    for (int i = 0; i < n && i < c->nout; i++) {
        int rc = nk_npy_write(c->out[i], &outs[i], err, sizeof err);
        if (rc)
            return nk_cli_write_failed(c->cmd, c->out[i], rc, err);
        if (note) {
            char sh[96];
            shape_text(sh, sizeof sh, outs[i].shape, outs[i].ndim);
            fprintf(note, "wrote %s %s float32", c->out[i], sh);
            if (outs[i].dtype != NK_F32)
                fprintf(note, " (from %s)", nk_dtype_name(outs[i].dtype));
            fprintf(note, "\n");
        }
    }
    return NK_EXIT_OK;
}

/* ---- a kernel profiled in memory, re-traced on request (insights, view) */

int nk_cli_is_kernel_spec(const char *arg)
{
    struct stat st;
    if (nk_cli_is_user_kernel(arg))
        return 1;
    return nk_builtin_kernel(arg) && stat(arg, &st) != 0; /* a file of that name is a profile */
}

/* nk_ins_retrace: compiles the kernel again with bufs buffers per tile and
 * the schedule (the kernel's cache keeps every program: the profiled one
 * stays valid) and times it (the device time alone, as a profile's
 * timeline would total it). */
static int retime_kernel(void *ctx, int bufs, int schedule, double *device_ns)
{
    nk_cli_profiled *kp = ctx;
    nk_options o = nk_cli_kernel_options(&kp->ck, &kp->kc);
    o.default_bufs = bufs;
    o.schedule = schedule;
    const nk_program *p;
    int rc = nk_kernel_compile(kp->ck.k, kp->ck.args, kp->ck.nargs, &o, &p);
    return rc ? rc : nk__time_total(p, NULL, NULL, device_ns);
}

int nk_cli_profile_kernel(nk_cli_profiled *kp)
{
    int rc = nk_cli_kernel_files(&kp->kc, NULL, 0);
    if (!rc)
        rc = nk_cli_kernel_open(&kp->kc, NK_CHECK_EXAMPLES | NK_OPEN_SHAPES_ONLY, &kp->ck);
    if (rc)
        return rc;
    rc = nk_cli_kernel_compile(&kp->ck, &kp->kc, &kp->p);
    if (!rc) {
        int st = nk__profile_capture_view(kp->p, NULL, &kp->pr);
        nk_cli_env_stamp_profile(kp->pr);
        if (st)
            rc = nk_cli_error(NK_EXIT_FAIL, "%s: capturing the profile failed: %s", kp->kc.cmd, nk_strerror(st));
    }
    if (rc) {
        nk_cli_kernel_close(&kp->ck);
        return rc;
    }
    kp->rt.retime = retime_kernel;
    kp->rt.ctx = kp;
    return NK_EXIT_OK;
}

void nk_cli_profiled_close(nk_cli_profiled *kp)
{
    nk_profile_free(kp->pr);
    kp->pr = NULL;
    nk_cli_kernel_close(&kp->ck);
}
