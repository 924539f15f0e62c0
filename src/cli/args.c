/*
 * args.c - long options and the shared KERNEL --in/--random/--seed/--out/--target/
 * --target-file arguments.
 */
#include "args.h"

#include "npy.h"
#include "userkernel.h"
#include "arch/arch.h"
#include "core/atomicfile.h"
#include "profile/profile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

#define NK_DTYPE_LIST "float32, bfloat16, float16, float8_e4m3, float8_e4m3fn, float8_e5m2, int8, int16, " \
                      "int32, uint8, uint16, uint32"

/* Decimal digits [p, end) into *v; 0 when one is not a digit (or none),
 * *over set when the value exceeds LONG_MAX. */
static int digits(const char *p, const char *end, unsigned long *v, int *over)
{
    *v = 0;
    *over = 0;
    if (p >= end)
        return 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        unsigned d = (unsigned)(*p - '0');
        if (*v > ((unsigned long)LONG_MAX - d) / 10)
            *over = 1;
        else
            *v = *v * 10 + d;
    }
    return 1;
}

int nk_cli_parse_int(const char *opt, const char *val, long lo, long hi, long *out)
{
    int neg = val[0] == '-' && lo < 0;
    unsigned long v;
    int over;
    if (!digits(val + neg, val + strlen(val), &v, &over)) {
        nk_cli_error(NK_EXIT_USAGE, "%s '%s': expected an integer from %ld to %ld", opt, val, lo, hi);
        return -1;
    }
    if (!neg && (over || v > (unsigned long)hi)) {
        nk_cli_error(NK_EXIT_USAGE, "%s '%s': too large (max %ld)", opt, val, hi);
        return -1;
    }
    long x = neg ? -(long)v : (long)v;
    if (over || x < lo || x > hi) {
        nk_cli_error(NK_EXIT_USAGE, "%s '%s': expected an integer from %ld to %ld", opt, val, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* --grid: "none", or up to three axes separated by ',' or 'x', each N, or
 * nc(K)*M / M*nc(K) (NKI's nl.spmd_dim(nl.nc(K), M) / spmd_dim(M, nl.nc(K)):
 * K cores, the axis K * M instances; "nc(K)" alone is K instances, one per
 * core). The tracer checks the grid against the target. */
static int grid_factor(nk_kernel_cmd *c, const char *s, const char *e, long *n, int *is_nc)
{
    *is_nc = 0;
    if (e - s > 3 && !strncmp(s, "nc(", 3) && e[-1] == ')') {
        *is_nc = 1;
        s += 3;
        e--;
    }
    unsigned long v;
    int over;
    if (!digits(s, e, &v, &over) || over || v < 1 || v > NK_MAX_INSTANCES) {
        nk_cli_error(NK_EXIT_USAGE, "%s: --grid axis '%.*s' is not an integer from 1 to %d (or nc(K))", c->cmd,
                     (int)(e - s), s, NK_MAX_INSTANCES);
        return -1;
    }
    *n = (long)v;
    return 0;
}

static int parse_grid(nk_kernel_cmd *c, const char *v)
{
    memset(c->grid, 0, sizeof c->grid);
    memset(c->grid_nc, 0, sizeof c->grid_nc);
    c->has_grid = 1;
    if (!strcmp(v, "none"))
        return 0;
    const char *p = v;
    for (int a = 0;; a++) {
        const char *e = p + strcspn(p, ",x");
        if (a >= NK_MAX_GRID) {
            nk_cli_error(NK_EXIT_USAGE, "%s: --grid '%s': at most %d axes", c->cmd, v, NK_MAX_GRID);
            return -1;
        }
        const char *star = memchr(p, '*', (size_t)(e - p));
        long f0, f1 = 1;
        int nc0, nc1 = 0;
        if (grid_factor(c, p, star ? star : e, &f0, &nc0) || (star && grid_factor(c, star + 1, e, &f1, &nc1)))
            return -1;
        if (star && nc0 == nc1) {
            nk_cli_error(NK_EXIT_USAGE, "%s: --grid axis '%.*s': one factor is nc(K), the other a count", c->cmd,
                         (int)(e - p), p);
            return -1;
        }
        if (f0 * f1 > NK_MAX_INSTANCES) {
            nk_cli_error(NK_EXIT_USAGE, "%s: --grid axis '%.*s': more than %d instances", c->cmd, (int)(e - p), p,
                         NK_MAX_INSTANCES);
            return -1;
        }
        c->grid[a] = (int)(f0 * f1);
        c->grid_nc[a] = nc0 ? (int)f0 : nc1 ? -(int)f1 : 0;
        if (!*e)
            return 0;
        p = e + 1;
    }
}

int nk_cli_parse_dim(const char *what, const char *first, const char *end, long hi, long *out)
{
    unsigned long v;
    int over;
    int n = (int)(end - first);
    if (!digits(first, end, &v, &over) || (!over && v == 0)) {
        nk_cli_error(NK_EXIT_USAGE, "%s: dimension '%.*s' is not a positive integer", what, n, first);
        return -1;
    }
    if (over || v > (unsigned long)hi) {
        nk_cli_error(NK_EXIT_USAGE, "%s: dimension '%.*s' is too large (max %ld)", what, n, first, hi);
        return -1;
    }
    *out = (long)v;
    return 0;
}

/* [-]DIGITS[.DIGITS][e[+-]DIGITS] or [-].DIGITS...: what strtod reads, less
 * its spaces, '+', hex, inf and nan. */
static int decimal_syntax(const char *s)
{
    int nd = 0;
    if (*s == '-')
        s++;
    for (; *s >= '0' && *s <= '9'; s++)
        nd++;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++)
            nd++;
    if (!nd)
        return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        if (*s < '0' || *s > '9')
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == 0;
}

int nk_cli_parse_double(const char *opt, const char *val, double lo, double hi, double *out)
{
    double v = 0;
    int ok = decimal_syntax(val) && (val[0] != '-' || lo < 0);
    if (ok) {
        errno = 0;
        v = strtod(val, NULL);
        ok = isfinite(v) || errno == ERANGE;
    }
    if (ok && (v > hi || !isfinite(v))) {
        nk_cli_error(NK_EXIT_USAGE, "%s '%s': too large (max %g)", opt, val, hi);
        return -1;
    }
    if (!ok || v < lo) {
        nk_cli_error(NK_EXIT_USAGE, "%s '%s': expected a number from %g to %g", opt, val, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* "...:DTYPE": parses the suffix after the last ':' into s (none: 0). */
static int dtype_suffix(const char *opt, const char *text, const char *colon, nk_input_spec *s)
{
    if (!colon)
        return 0;
    if (nk_dtype_parse(colon + 1, &s->dtype)) {
        nk_cli_error(NK_EXIT_USAGE, "%s '%s': unknown dtype '%s' (one of " NK_DTYPE_LIST ")", opt, text, colon + 1);
        return -1;
    }
    s->has_dtype = 1;
    return 0;
}

/* --in FILE[:DTYPE]. A suffix after the last ':' holding no '/' or '.' is a
 * dtype (so "x.npy:bf16" converts; "dir:1/x.npy" is a file). */
static int parse_in(const char *v, nk_input_spec *s)
{
    const char *colon = strrchr(v, ':');
    if (colon && strpbrk(colon + 1, "/."))
        colon = NULL;
    size_t n = colon ? (size_t)(colon - v) : strlen(v);
    if (n == 0 || n >= sizeof s->path) {
        nk_cli_error(NK_EXIT_USAGE, "--in '%s': %s", v, n ? "path too long" : "no file name");
        return -1;
    }
    memcpy(s->path, v, n);
    s->path[n] = 0;
    return dtype_suffix("--in", v, colon, s);
}

/* "250x512" into s->shape. */
static int parse_shape(const char *v, const char *p, const char *end, nk_input_spec *s)
{
    s->ndim = 0;
    int64_t numel = 1;
    while (p < end) {
        const char *x = memchr(p, 'x', (size_t)(end - p));
        if (!x)
            x = end;
        char what[512];
        snprintf(what, sizeof what, "--random '%s'", v);
        long d;
        if (nk_cli_parse_dim(what, p, x, INT32_MAX, &d))
            return -1;
        if (s->ndim == NK_MAXDIM) {
            nk_cli_error(NK_EXIT_USAGE, "--random '%s': at most %d dimensions", v, NK_MAXDIM);
            return -1;
        }
        numel *= d;
        if (numel > ((int64_t)1 << 31)) {
            nk_cli_error(NK_EXIT_USAGE, "--random '%s': more than 2^31 elements", v);
            return -1;
        }
        s->shape[s->ndim++] = d;
        p = x + 1;
        if (x == end - 1) { /* a trailing 'x' */
            nk_cli_error(NK_EXIT_USAGE, "--random '%s': dimension '' is not a positive integer", v);
            return -1;
        }
    }
    return 0;
}

/* --random NAME=D0xD1[...][:DTYPE] */
static int parse_random(const char *v, nk_input_spec *s)
{
    const char *eq = strchr(v, '=');
    const char *colon = eq ? strchr(eq, ':') : NULL;
    const char *end = colon ? colon : v + strlen(v);
    if (!eq || eq == v || eq + 1 == end) {
        nk_cli_error(NK_EXIT_USAGE, "--random '%s': expected NAME=SHAPE[:DTYPE], e.g. x=250x512:float32", v);
        return -1;
    }
    if ((size_t)(eq - v) >= sizeof s->name) {
        nk_cli_error(NK_EXIT_USAGE, "--random '%s': name too long", v);
        return -1;
    }
    memcpy(s->name, v, (size_t)(eq - v));
    s->name[eq - v] = 0;
    s->random = 1;
    if (parse_shape(v, eq + 1, end, s))
        return -1;
    return dtype_suffix("--random", v, colon, s);
}

static int add_input(nk_kernel_cmd *c, const char *opt, const char *v)
{
    if (c->nin >= NK_CLI_MAX_FILES) {
        nk_cli_error(NK_EXIT_USAGE, "%s: at most %d inputs (--in and --random)", c->cmd, NK_CLI_MAX_FILES);
        return -1;
    }
    nk_input_spec *s = &c->in[c->nin];
    memset(s, 0, sizeof *s);
    s->text = v;
    if (opt[2] == 'r' ? parse_random(v, s) : parse_in(v, s))
        return -1;
    c->nin++;
    return 1;
}

int nk_cli_kernel_arg(int argc, char **argv, int *i, nk_kernel_cmd *c)
{
    const char *v;
    int r;
    if ((r = nk_cli_optval(argc, argv, i, "--in", &v)))
        return r < 0 ? r : add_input(c, "--in", v);
    if ((r = nk_cli_optval(argc, argv, i, "--random", &v)))
        return r < 0 ? r : add_input(c, "--random", v);
    if ((r = nk_cli_optval(argc, argv, i, "--seed", &v))) {
        long seed;
        if (r < 0 || nk_cli_parse_int("--seed", v, 0, LONG_MAX, &seed))
            return -1;
        c->seed = (uint64_t)seed;
        return 1;
    }
    if ((r = nk_cli_optval(argc, argv, i, "--out", &v)))
        return r < 0 ? r : add_file(c->cmd, "--out", c->out, &c->nout, v);
    if ((r = nk_cli_optval(argc, argv, i, "--target", &v))) {
        if (r > 0)
            c->target = v;
        return r;
    }
    if ((r = nk_cli_optval(argc, argv, i, "--target-file", &v))) {
        if (r > 0)
            c->target_file = v;
        return r;
    }
    if ((r = nk_cli_optval(argc, argv, i, "--grid", &v))) {
        if (r < 0 || parse_grid(c, v))
            return -1;
        return 1;
    }
    if ((r = nk_cli_optval(argc, argv, i, "--max-instructions", &v))) {
        if (r < 0 || nk_cli_parse_int("--max-instructions", v, 1, (long)UINT32_MAX - 1, &c->max_instructions))
            return -1;
        return 1;
    }
    if ((r = nk_cli_optval(argc, argv, i, "--max-trace-bytes", &v))) {
        if (r < 0 || nk_cli_parse_int("--max-trace-bytes", v, 1, LONG_MAX, &c->max_trace_bytes))
            return -1;
        return 1;
    }
    if ((r = nk_cli_optval(argc, argv, i, "--bufs", &v))) {
        if (r < 0 || nk_cli_parse_int("--bufs", v, 1, 32, &c->bufs)) /* the tracer's NK_MAX_LOOP_BUFS */
            return -1;
        return 1;
    }
    if ((r = nk_cli_optval(argc, argv, i, "--schedule", &v))) {
        if (r < 0)
            return r;
        if (!strcmp(v, "list"))
            c->schedule = NK_SCHED_LIST;
        else if (!strcmp(v, "trace"))
            c->schedule = NK_SCHED_TRACE_ORDER;
        else
            return nk_cli_error(NK_EXIT_USAGE, "%s: --schedule is 'list' or 'trace', not '%s'", c->cmd, v), -1;
        return 1;
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

/* Built-in kernels: input count, --random names and ranks. */
static int check_builtin_inputs(const nk_kernel_cmd *c, int flags, const nk_kernel_info *k)
{
    if (c->nin == 0 && (flags & NK_CHECK_EXAMPLES))
        return NK_EXIT_OK;
    if (c->nin != k->nargs)
        return nk_cli_error(NK_EXIT_USAGE, "%s takes %d input%s (one --in or --random per argument), got %d",
                            k->name, k->nargs, k->nargs == 1 ? "" : "s", c->nin);
    for (int i = 0; i < c->nin; i++) {
        const nk_input_spec *s = &c->in[i];
        const nk_argspec *a = &k->args[i];
        if (!s->random)
            continue;
        if (strcmp(s->name, a->name))
            return nk_cli_error(NK_EXIT_USAGE, "--random '%s': %s's argument %d is '%s', not '%s'", s->text,
                                k->name, i + 1, a->name, s->name);
        if (s->ndim != a->ndim)
            return nk_cli_error(NK_EXIT_USAGE, "--random '%s': %s's argument '%s' has %d dim%s, not %d", s->text,
                                k->name, a->name, a->ndim, a->ndim == 1 ? "" : "s", s->ndim);
    }
    return NK_EXIT_OK;
}

int nk_cli_kernel_check(const nk_kernel_cmd *c, int flags, const nk_kernel_info **ki)
{
    *ki = NULL;
    if (!c->kernel)
        return nk_cli_error(NK_EXIT_USAGE, "%s: missing KERNEL (see nklab %s --help)", c->cmd, c->cmd);
    if (c->target && c->target_file)
        return nk_cli_error(NK_EXIT_USAGE, "%s: --target and --target-file exclude each other (a target file "
                            "names its base target)", c->cmd);
    if (c->target && !nk__arch_get(c->target))
        return nk_cli_error(NK_EXIT_USAGE, "unknown target '%s' (trn1 or trn2)", c->target);
    if (nk_cli_is_user_kernel(c->kernel)) {
        if (c->nin == 0)
            return nk_cli_error(NK_EXIT_USAGE, "%s: a kernel from a C file needs its inputs: --in FILE.npy or "
                                "--random NAME=SHAPE:DTYPE, one per argument", c->cmd);
        return NK_EXIT_OK;
    }
    const nk_kernel_info *k = nk_builtin_kernel(c->kernel);
    if (!k) {
        if (strchr(c->kernel, ':') || strstr(c->kernel, ".c"))
            return nk_cli_error(NK_EXIT_USAGE, "'%s' is neither a built-in kernel nor FILE.c:FUNCTION",
                                c->kernel);
        const nk_kernel_info *near = nk_builtin_kernel_nearest(c->kernel);
        if (near)
            return nk_cli_error(NK_EXIT_USAGE, "unknown kernel '%s'; did you mean '%s'? (`nklab kernels` lists them)",
                                c->kernel, near->name);
        return nk_cli_error(NK_EXIT_USAGE, "unknown kernel '%s' (`nklab kernels` lists them)", c->kernel);
    }
    int rc = check_builtin_inputs(c, flags, k);
    if (rc)
        return rc;
    if (((flags & NK_CHECK_OUTS) || c->nout) && c->nout != k->nouts)
        return nk_cli_error(NK_EXIT_USAGE, "%s has %d output%s (one --out per output), got %d", k->name, k->nouts,
                            k->nouts == 1 ? "" : "s", c->nout);
    *ki = k;
    return NK_EXIT_OK;
}

int nk_cli_profile_arg(const char *cmd, const char *arg, const char **in)
{
    if (arg[0] == '-' && arg[1])
        return nk_cli_error(NK_EXIT_USAGE, "%s: unknown option '%s' (see nklab %s --help)", cmd, arg, cmd);
    if (*in)
        return nk_cli_error(NK_EXIT_USAGE, "%s: one profile at a time ('%s' and '%s')", cmd, *in, arg);
    *in = arg;
    return NK_EXIT_OK;
}

int nk_cli_profile_given(const char *cmd, const char *in, const char *usage)
{
    return in ? NK_EXIT_OK : nk_cli_error(NK_EXIT_USAGE, "%s: which profile? (%s)", cmd, usage);
}

int nk_cli_profile_read(const char *cmd, const char *in, nk_profile **pr)
{
    char err[256];
    int code = nk_cli_check_input(cmd, in);
    if (code)
        return code;
    if (nk_profile_read(in, pr, err, sizeof err))
        return nk_cli_error(NK_EXIT_FAIL, "%s: %s: %s", cmd, in, err);
    return NK_EXIT_OK;
}

int nk_cli_profile_json_args(const char *cmd, int argc, char **argv, const char **in, int *json, nk_profile **pr)
{
    *in = NULL;
    *json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            *json = 1;
            continue;
        }
        int code = nk_cli_profile_arg(cmd, argv[i], in);
        if (code)
            return code;
    }
    char usage[64];
    snprintf(usage, sizeof usage, "nklab %s PROFILE.nkp", cmd);
    int code = nk_cli_profile_given(cmd, *in, usage);
    return code ? code : nk_cli_profile_read(cmd, *in, pr);
}

/* ---- files */

int nk_cli_is_stdout(const char *path) { return path && !strcmp(path, "-"); }

int nk_cli_check_input(const char *cmd, const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) || S_ISREG(st.st_mode))
        return NK_EXIT_OK; /* missing: the reader says so */
    return nk_cli_error(NK_EXIT_FAIL, "%s: %s: not a regular file (%s)", cmd, path, nk_cli_file_type(st.st_mode));
}

/* Where path is or would be: its directory's device and inode and its last
 * name. 0 when the directory does not exist. */
static int locate(const char *path, struct stat *dir, const char **name)
{
    const char *slash = strrchr(path, '/');
    char d[PATH_MAX];
    if (!slash)
        snprintf(d, sizeof d, ".");
    else if (slash == path)
        snprintf(d, sizeof d, "/");
    else
        snprintf(d, sizeof d, "%.*s", (int)(slash - path), path);
    *name = slash ? slash + 1 : path;
    return stat(d, dir) == 0;
}

/* Do a and b name the same regular file, or the same name not yet made?
 * Devices and FIFOs are never the same: two outputs to /dev/null are fine. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    int ha = stat(a, &sa) == 0, hb = stat(b, &sb) == 0;
    if (ha && hb)
        return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ha || hb)
        return 0;
    const char *na, *nb;
    return locate(a, &sa, &na) && locate(b, &sb, &nb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino &&
           !strcmp(na, nb);
}

int nk_cli_check_outputs(const char *cmd, const char *const *outs, int nout, const char *const *ins, int nin)
{
    for (int i = 0; i < nout; i++) {
        if (!outs[i] || nk_cli_is_stdout(outs[i]))
            continue;
        for (int j = 0; j < nin; j++)
            if (ins[j] && same_file(outs[i], ins[j]))
                return nk_cli_error(NK_EXIT_USAGE, "%s: the output %s is the input %s: write it elsewhere", cmd,
                                    outs[i], ins[j]);
        for (int j = 0; j < i; j++)
            if (outs[j] && !nk_cli_is_stdout(outs[j]) && same_file(outs[i], outs[j]))
                return nk_cli_error(NK_EXIT_USAGE, "%s: %s and %s are the same file: give each output its own",
                                    cmd, outs[j], outs[i]);
    }
    return NK_EXIT_OK;
}

int nk_cli_write_failed(const char *cmd, const char *path, int rc, const char *why)
{
    if (!why || !*why)
        why = rc == NK_EIO && errno ? strerror(errno) : nk_strerror(rc);
    return nk_cli_error(NK_EXIT_FAIL, "%s: cannot write %s: %s", cmd,
                        nk_cli_is_stdout(path) ? "standard output" : path, why);
}

int nk_cli_write_text(const char *cmd, const char *path, const void *data, size_t n)
{
    char why[384] = "";
    int rc;
    if (nk_cli_is_stdout(path)) {
        /* what printf already buffered goes first */
        rc = fflush(stdout) ? NK_EIO : nk__fd_write_all(STDOUT_FILENO, data, n);
        if (rc)
            snprintf(why, sizeof why, "%s", strerror(errno));
    } else {
        rc = nk__file_write(path, data, n, why, sizeof why);
    }
    return rc ? nk_cli_write_failed(cmd, path, rc, why) : NK_EXIT_OK;
}

const char *nk_cli_run_error(int st)
{
    const char *why = nk_last_error();
    return st == NK_EIO && why[0] ? why : nk_strerror(st);
}
