/*
 * arch_file.c - targets as text: loading a modified target from a file and
 * writing a target in the same format.
 *
 *   # a slower HBM
 *   base = trn1
 *   hbm_gbps = 200
 *
 * The first setting names the built-in target to start from; every later line
 * overrides one field. Messages name the file and line.
 */
#include "arch.h"
#include "nklab.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_INT, K_I64, K_DBL, K_NAME };

typedef struct key {
    const char *name;
    int type;
    size_t off;
    double lo, hi; /* accepted range, inclusive */
    const char *what;
} key;

#define F(field) offsetof(nk_arch, field)

static const key keys[] = {
    {"name", K_NAME, F(name), 0, 0, "target name shown in profiles"},
    {"partitions", K_INT, F(partitions), 1, 128, "SBUF/PSUM partitions"},
    {"sbuf_partition_bytes", K_I64, F(sbuf_partition_bytes), 1024, 1 << 24, "bytes per SBUF partition"},
    {"sbuf_reserved_bytes", K_I64, F(sbuf_reserved_bytes), 0, 1 << 24, "compiler-reserved bytes per SBUF partition"},
    {"psum_partition_bytes", K_I64, F(psum_partition_bytes), 512, 1 << 24, "bytes per PSUM partition"},
    {"psum_bank_bytes", K_I64, F(psum_bank_bytes), 512, 1 << 24, "bytes per PSUM bank per partition"},
    {"psum_banks", K_INT, F(psum_banks), 1, 64, "PSUM banks"},
    {"tile_align", K_I64, F(tile_align), 1, 65536, "SBUF tile alignment in bytes"},
    {"default_bufs", K_INT, F(default_bufs), 1, 32, "buffers per tile in affine loops"},
    {"vector_fmax_sbuf", K_I64, F(vector_fmax_sbuf), 1, 1 << 24, "Vector free elements per instruction (SBUF)"},
    {"vector_fmax_psum", K_I64, F(vector_fmax_psum), 1, 1 << 24, "Vector free elements per instruction (PSUM)"},
    {"gemm_stationary_fmax", K_I64, F(gemm_stationary_fmax), 1, 128, "matmul stationary free size"},
    {"gemm_moving_fmax", K_I64, F(gemm_moving_fmax), 1, 1 << 22, "matmul moving free size"},
    {"psum_fmax", K_I64, F(psum_fmax), 1, 1 << 22, "float32 elements per PSUM bank per partition"},
    {"pe_transpose_max", K_I64, F(pe_transpose_max), 1, 128, "Tensor-engine transpose, partitions and free"},
    {"dve_transpose_max", K_I64, F(dve_transpose_max), 1, 128, "Vector-engine transpose, partitions and free"},
    {"bn_stats_fmax", K_I64, F(bn_stats_fmax), 1, 1 << 16, "free elements of one bn_stats input"},
    {"pe_ghz", K_DBL, F(pe_ghz), 1e-3, 100, "Tensor engine clock, GHz"},
    {"dve_ghz", K_DBL, F(dve_ghz), 1e-3, 100, "Vector engine clock, GHz"},
    {"act_ghz", K_DBL, F(act_ghz), 1e-3, 100, "Scalar engine clock, GHz"},
    {"pool_ghz", K_DBL, F(pool_ghz), 1e-3, 100, "GpSimd engine clock, GHz"},
    {"pe_mm_init_cycles", K_INT, F(pe_mm_init_cycles), 0, 1 << 20, "MM_INIT_LATENCY, PE cycles"},
    {"pe_fp32_factor", K_DBL, F(pe_fp32_factor), 1, 1024, "fp32 matmul cost multiplier"},
    {"pe_fp32_transpose_factor", K_DBL, F(pe_fp32_transpose_factor), 1, 1024, "fp32 PE transpose cost multiplier"},
    {"pe_ls_speedup", K_DBL, F(pe_ls_speedup), 1, 1024, "LoadStationary speed-up over MM of equal free size"},
    {"min_ii_cycles", K_INT, F(min_ii_cycles), 0, 1 << 20, "MIN_II, engine cycles"},
    {"static_overhead_cycles", K_INT, F(static_overhead_cycles), 0, 1 << 20, "static instruction overhead, cycles"},
    {"sram_access_cycles", K_INT, F(sram_access_cycles), 0, 1 << 20, "SBUF/PSUM access start, cycles"},
    {"pool_fixed_cycles", K_INT, F(pool_fixed_cycles), 0, 1 << 20, "fixed cycles of iota/affine_select"},
    {"stride_penalty_bytes", K_INT, F(stride_penalty_bytes), 1, 1 << 20, "innermost stride (bytes) above which ..."},
    {"stride_penalty_factor", K_DBL, F(stride_penalty_factor), 1, 1024, "... streaming time is multiplied by this"},
    {"dve_fast16_factor", K_DBL, F(dve_fast16_factor), 1, 64, "Vector 16-bit performance mode speed-up"},
    {"dve_fast16_copy_factor", K_DBL, F(dve_fast16_copy_factor), 1, 64, "... for contiguous SBUF copies"},
    {"sbuf_dve_pool_exclusive", K_INT, F(sbuf_dve_pool_exclusive), 0, 1, "1: Vector and GpSimd share one SBUF port"},
    {"psum_dve_act_exclusive", K_INT, F(psum_dve_act_exclusive), 0, 1, "1: Vector and Scalar share one PSUM port"},
    {"sem_latency_ns", K_DBL, F(sem_latency_ns), 0, 1e9, "cross-engine semaphore latency, ns"},
    {"spmd_cores", K_INT, F(spmd_cores), 1, NK_MAX_CORES_ARCH, "physical NeuronCores an SPMD launch spreads over"},
    {"dma_engines", K_INT, F(dma_engines), 1, NK_ARCH_MAX_DMA_ENGINES, "DMA engines per core"},
    {"dma_queues", K_INT, F(dma_queues), 1, NK_ARCH_MAX_DMA_QUEUES, "queues per DMA engine"},
    {"dma_engine_gbps", K_DBL, F(dma_engine_gbps), 1e-3, 1e6, "bandwidth per DMA engine, GB/s"},
    {"dma_latency_ns", K_DBL, F(dma_latency_ns), 0, 1e9, "DMA trigger-to-start latency, ns"},
    {"dma_trigger_ns", K_DBL, F(dma_trigger_ns), 0, 1e9, "issuing engine busy per DMA trigger, ns"},
    {"dma_trigger_in_order", K_INT, F(dma_trigger_in_order), 0, 1, "1: Sync triggers DMAs in program order"},
    {"dma_eff_half_bytes", K_DBL, F(dma_eff_half_bytes), 0, 1e9, "contiguous bytes at 50% DMA efficiency"},
    {"dma_transpose_efficiency", K_DBL, F(dma_transpose_efficiency), 0, 1,
     "DMA transpose unit's share of the DMA bandwidth (0: none, element by element)"},
    {"hbm_gbps", K_DBL, F(hbm_gbps), 1e-3, 1e7, "HBM bandwidth per core, GB/s"},
    {"host_gbps", K_DBL, F(host_gbps), 1e-3, 1e7, "host link bandwidth, GB/s"},
    {"launch_startup_ns", K_DBL, F(launch_startup_ns), 0, 1e9, "kernel start-up before the first instruction, ns"},
    {"launch_teardown_ns", K_DBL, F(launch_teardown_ns), 0, 1e9, "kernel tear-down after the last completion, ns"},
};

#undef F

static int fail(char *err, size_t errlen, int status, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int status, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return status;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

static const key *find_key(const char *name)
{
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(keys[i].name, name))
            return &keys[i];
    return NULL;
}

static int valid_name(const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n >= sizeof(((nk_arch *)0)->name))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)v[i]) && v[i] != '_' && v[i] != '-' && v[i] != '.')
            return 0;
    return 1;
}

/* Parses v into the field of k in a; 0 or -1 when the value is bad. */
static int set_value(nk_arch *a, const key *k, const char *v)
{
    char *base = (char *)a + k->off;
    if (k->type == K_NAME) {
        if (!valid_name(v))
            return -1;
        memset(base, 0, sizeof a->name);
        memcpy(base, v, strlen(v));
        return 0;
    }
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(d) || d < k->lo || d > k->hi)
        return -1;
    if (k->type != K_DBL && d != floor(d))
        return -1;
    if (k->type == K_INT)
        *(int *)(void *)base = (int)d;
    else if (k->type == K_I64)
        *(int64_t *)(void *)base = (int64_t)d;
    else
        *(double *)(void *)base = d;
    return 0;
}

static void expected(char *buf, size_t n, const key *k)
{
    if (k->type == K_NAME)
        snprintf(buf, n, "1 to %zu letters, digits, '_', '-' or '.'", sizeof(((nk_arch *)0)->name) - 1);
    else if (k->type == K_DBL)
        snprintf(buf, n, "a number in [%g, %g]", k->lo, k->hi);
    else
        snprintf(buf, n, "an integer in [%.0f, %.0f]", k->lo, k->hi);
}

/* Relations between fields that single ranges cannot express. */
static int check_target(const nk_arch *a, const char *where, char *err, size_t errlen)
{
    if (a->sbuf_reserved_bytes >= a->sbuf_partition_bytes)
        return fail(err, errlen, NK_EINVAL, "%s: sbuf_reserved_bytes (%lld) must be less than sbuf_partition_bytes (%lld)",
                    where, (long long)a->sbuf_reserved_bytes, (long long)a->sbuf_partition_bytes);
    if (a->psum_bank_bytes * a->psum_banks > a->psum_partition_bytes)
        return fail(err, errlen, NK_EINVAL,
                    "%s: psum_banks x psum_bank_bytes (%d x %lld) exceeds psum_partition_bytes (%lld)", where,
                    a->psum_banks, (long long)a->psum_bank_bytes, (long long)a->psum_partition_bytes);
    if (a->psum_fmax * 4 > a->psum_bank_bytes)
        return fail(err, errlen, NK_EINVAL, "%s: psum_fmax (%lld) float32 take %lld bytes, more than psum_bank_bytes (%lld)",
                    where, (long long)a->psum_fmax, (long long)(a->psum_fmax * 4), (long long)a->psum_bank_bytes);
    /* one matmul writes [stationary free, moving free] into one PSUM bank */
    if (a->gemm_moving_fmax > a->psum_fmax)
        return fail(err, errlen, NK_EINVAL, "%s: gemm_moving_fmax (%lld) exceeds psum_fmax (%lld)", where,
                    (long long)a->gemm_moving_fmax, (long long)a->psum_fmax);
    return 0;
}

/* One "key = value" line (already stripped of its comment). */
static int parse_line(char *s, int lineno, const char *where, nk_arch *a, int *have_base, int *seen,
                      char *err, size_t errlen)
{
    char *eq = strchr(s, '=');
    if (!eq)
        return fail(err, errlen, NK_EFORMAT, "%s:%d: expected 'key = value', got '%s'", where, lineno, s);
    *eq = 0;
    char *k = trim(s), *v = trim(eq + 1);
    if (!*k || !*v)
        return fail(err, errlen, NK_EFORMAT, "%s:%d: expected 'key = value'", where, lineno);
    if (!strcmp(k, "base")) {
        if (*have_base)
            return fail(err, errlen, NK_EFORMAT, "%s:%d: 'base' may appear only once, as the first setting", where,
                        lineno);
        const nk_arch *b = nk__arch_get(v);
        if (!b)
            return fail(err, errlen, NK_ENOTFOUND, "%s:%d: unknown base target '%s' (known: trn1, trn2)", where,
                        lineno, v);
        *a = *b;
        *have_base = lineno;
        return 0;
    }
    if (!*have_base)
        return fail(err, errlen, NK_EFORMAT, "%s:%d: the first setting must be 'base = trn1' or 'base = trn2'",
                    where, lineno);
    const key *kk = find_key(k);
    if (!kk)
        return fail(err, errlen, NK_EINVAL, "%s:%d: unknown key '%s'", where, lineno, k);
    int idx = (int)(kk - keys);
    if (seen[idx])
        return fail(err, errlen, NK_EINVAL, "%s:%d: '%s' is set twice (first on line %d)", where, lineno, k,
                    seen[idx]);
    seen[idx] = lineno;
    if (set_value(a, kk, v)) {
        char exp[96];
        expected(exp, sizeof exp, kk);
        return fail(err, errlen, NK_EINVAL, "%s:%d: bad value '%s' for '%s': expected %s", where, lineno, v, k, exp);
    }
    return 0;
}

int nk__arch_load_text(const char *text, const char *where, nk_arch *arch, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!where)
        where = "<target>";
    char *buf = strdup(text ? text : "");
    if (!buf)
        return fail(err, errlen, NK_ENOMEM, "%s: out of memory", where);
    nk_arch a;
    memset(&a, 0, sizeof a);
    int seen[sizeof keys / sizeof keys[0]] = {0};
    int have_base = 0, lineno = 0, rc = 0;
    for (char *line = buf; line && !rc; lineno++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *s = trim(line);
        if (*s)
            rc = parse_line(s, lineno + 1, where, &a, &have_base, seen, err, errlen);
        line = nl ? nl + 1 : NULL;
    }
    if (!rc && !have_base)
        rc = fail(err, errlen, NK_EFORMAT, "%s: no 'base = trn1' or 'base = trn2' setting", where);
    if (!rc)
        rc = check_target(&a, where, err, errlen);
    if (!rc)
        *arch = a;
    free(buf);
    return rc;
}

int nk__arch_load_file(const char *path, nk_arch *arch, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(err, errlen, NK_EIO, "%s: cannot open: %s", path, strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *t = realloc(text, cap);
            if (!t) {
                rc = fail(err, errlen, NK_ENOMEM, "%s: out of memory", path);
                break;
            }
            text = t;
        }
        size_t got = fread(text + len, 1, 4096, f);
        len += got;
        if (got < 4096)
            break;
    }
    if (!rc && ferror(f))
        rc = fail(err, errlen, NK_EIO, "%s: read error", path);
    fclose(f);
    if (!rc) {
        text[len] = 0;
        if (strlen(text) != len)
            rc = fail(err, errlen, NK_EFORMAT, "%s: not a text file (contains a NUL byte)", path);
    }
    if (!rc)
        rc = nk__arch_load_text(text, path, arch, err, errlen);
    free(text);
    return rc;
}

/* The numeric value of field k of a. */
static double field_value(const nk_arch *a, const key *k)
{
    const char *base = (const char *)a + k->off;
    if (k->type == K_INT)
        return *(const int *)(const void *)base;
    if (k->type == K_I64)
        return (double)*(const int64_t *)(const void *)base;
    return *(const double *)(const void *)base;
}

int nk__arch_check(const nk_arch *arch, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!arch)
        return fail(err, errlen, NK_EINVAL, "no target table");
    if (!memchr(arch->name, 0, sizeof arch->name) || !valid_name(arch->name))
        return fail(err, errlen, NK_EINVAL, "target table: invalid name");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const key *k = &keys[i];
        if (k->type == K_NAME)
            continue;
        double v = field_value(arch, k);
        if (!isfinite(v) || v < k->lo || v > k->hi) {
            char exp[96];
            expected(exp, sizeof exp, k);
            return fail(err, errlen, NK_EINVAL, "target %s: %s = %.17g: expected %s", arch->name, k->name, v, exp);
        }
    }
    char where[40];
    snprintf(where, sizeof where, "target %s", arch->name);
    return check_target(arch, where, err, errlen);
}

static void format_value(char *buf, size_t n, const nk_arch *a, const key *k)
{
    const char *base = (const char *)a + k->off;
    if (k->type == K_NAME)
        snprintf(buf, n, "%s", a->name);
    else if (k->type == K_INT)
        snprintf(buf, n, "%d", *(const int *)(const void *)base);
    else if (k->type == K_I64)
        snprintf(buf, n, "%lld", (long long)*(const int64_t *)(const void *)base);
    else {
        /* the shortest decimal that reads back as the same double (2.8, not
           2.7999999999999998) */
        double v = *(const double *)(const void *)base;
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, n, "%.*g", prec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
    }
}

static int format_table(const nk_arch *arch, int with_sources, char **text)
{
    *text = NULL;
    const nk_arch *b = nk__arch_get(arch->name);
    /* every line is under 200 bytes: 26-wide key, %.17g value, a short description
       and its source */
    size_t cap = 200 * (sizeof keys / sizeof keys[0] + 2), len = 0;
    char *s = malloc(cap);
    if (!s)
        return NK_ENOMEM;
    len += (size_t)snprintf(s + len, cap - len, "# nklab target (see docs/timing-model.md)\nbase = %s\n",
                            b ? arch->name : "trn1");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char v[64];
        format_value(v, sizeof v, arch, &keys[i]);
        const char *src = NULL;
        if (with_sources && b && keys[i].type != K_NAME) {
            char bv[64];
            format_value(bv, sizeof bv, b, &keys[i]);
            src = strcmp(v, bv) ? NULL : nk__arch_source(b->name, keys[i].name);
        }
        int w = snprintf(s + len, cap - len, "%-26s = %-22s # %s%s%s\n", keys[i].name, v, keys[i].what,
                         src ? "; " : "", src ? src : "");
        if (w < 0 || (size_t)w >= cap - len) {
            free(s);
            return NK_EINVAL; /* a description longer than the line budget above */
        }
        len += (size_t)w;
    }
    *text = s;
    return 0;
}

int nk__arch_format(const nk_arch *arch, char **text) { return format_table(arch, 0, text); }

int nk__arch_format_sources(const nk_arch *arch, char **text) { return format_table(arch, 1, text); }
