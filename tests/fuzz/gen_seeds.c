/*
 * gen_seeds.c - the fuzz targets' seed corpora, from real inputs, one
 * directory per target:
 *   profile/  every built-in kernel (SPMD kernels on their example grid,
 *             sequences) at its example shapes, traced, timed and encoded
 *             once per entry point of fuzz_profile.c (first byte 0: a whole
 *             profile file, 1: its sections past the header, 2: the
 *             program's sections), some on trn2 too, and the version-1
 *             files an earlier nklab wrote (tests/golden/v1_*);
 *   program/  program files (fuzz_program.c: 0 whole, 1 past the header);
 *   diff/     pairs of profiles (fuzz_diff.c);
 *   target/   the built-in targets as `nklab target show` writes them, and
 *             edited ones;
 *   npy/      .npy files of every dtype the reader takes, 1 to 4 dims,
 *             versions 1.0 to 3.0, for several requested dtypes;
 *   args/     typical command lines (NUL-separated words).
 *
 * usage: gen_seeds DIR   (run from the repository root; prints "N seeds")
 */
#include "kernels.h"
#include "arch/arch.h"
#include "profile/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *root;
static int total, failed;

static void put2(const char *sub, const char *name, const uint8_t *pre, size_t npre, const void *b, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, sub);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/%s/%s", root, sub, name);
    FILE *f = fopen(path, "wb");
    int bad = !f;
    if (f) {
        bad = fwrite(pre, 1, npre, f) != npre || (n && fwrite(b, 1, n, f) != n);
        bad |= fclose(f) != 0;
    }
    if (bad) {
        fprintf(stderr, "gen_seeds: cannot write %s\n", path);
        failed++;
    } else {
        total++;
    }
}

static void put(const char *sub, const char *name, uint8_t mode, const void *b, size_t n)
{
    put2(sub, name, &mode, 1, b, n);
}

/* The content of the first profile of each kernel, for the diff pairs. */
static struct {
    uint8_t *p;
    size_t n;
} content[64];
static int ncontent;

/* Seeds of one kernel on one target. */
static void seeds_of(const nk_kernel_info *ki, const char *target)
{
    nk_array in[NK_KERNEL_MAX_ARGS];
    const nk_program *p = NULL;
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    nk_options o = {0};
    o.target = target;
    memcpy(o.grid, ki->grid, sizeof o.grid);
    for (int a = 0; a < ki->nargs; a++)
        nk_array_alloc(&in[a], ki->args[a].dtype, ki->args[a].ndim, ki->args[a].shape);
    int rc = nk_kernel_compile(k, in, ki->nargs, &o, &p);
    nk_profile *pr = NULL;
    if (!rc)
        rc = nk_profile_capture(p, NULL, &pr);
    if (!rc) {
        /* sampled counters keep their first samples only: small seeds fuzz faster */
        for (uint32_t c = 0; c < pr->tl->ncounters; c++)
            if (pr->tl->counters[c].n > 8)
                pr->tl->counters[c].n = 8;
        nk_wr w = {0}, pw = {0};
        rc = nk__profile_encode(pr, &w);
        if (!rc)
            rc = nk__program_encode(pr->prog, &pw);
        char name[128], path[1024];
        snprintf(name, sizeof name, "%s-%s", ki->name, target);
        if (!rc) {
            char f[160];
            snprintf(f, sizeof f, "file-%s", name);
            put("profile", f, 0, w.p, w.n);
            snprintf(f, sizeof f, "content-%s", name);
            put("profile", f, 1, w.p + NK_FILE_HEADER_BYTES, w.n - NK_FILE_HEADER_BYTES);
            snprintf(f, sizeof f, "prog-%s", name);
            put("profile", f, 2, pw.p, pw.n);
            if (ncontent < 64 && (content[ncontent].p = malloc(w.n - NK_FILE_HEADER_BYTES))) {
                content[ncontent].n = w.n - NK_FILE_HEADER_BYTES;
                memcpy(content[ncontent++].p, w.p + NK_FILE_HEADER_BYTES, w.n - NK_FILE_HEADER_BYTES);
            }
            /* the program file as nk_program_save writes it */
            snprintf(path, sizeof path, "%s/prog.tmp", root);
            uint8_t *b = NULL;
            size_t n = 0;
            char err[256];
            rc = nk_program_save(pr->prog, path);
            if (!rc)
                rc = nk__file_read_all(path, &b, &n, err, sizeof err);
            remove(path);
            if (!rc) {
                snprintf(f, sizeof f, "file-%s", name);
                put("program", f, 0, b, n);
                snprintf(f, sizeof f, "content-%s", name);
                put("program", f, 1, b + NK_FILE_HEADER_BYTES, n - NK_FILE_HEADER_BYTES);
            }
            free(b);
        }
        nk__wr_free(&w);
        nk__wr_free(&pw);
    }
    if (rc) {
        fprintf(stderr, "gen_seeds: %s on %s: %s %s\n", ki->name, target, nk_strerror(rc), nk_kernel_error(k));
        failed++;
    }
    nk_profile_free(pr);
    for (int a = 0; a < ki->nargs; a++)
        nk_array_free(&in[a]);
    nk_kernel_free(k);
}

/* Format version 1, from the files an earlier nklab wrote: the whole
 * profile (entry 0), its content past the header (entry 1 on version 1:
 * byte 4) and the program file's PROG payload (entry 2 on version 1: byte 5). */
static void seeds_v1(void)
{
    uint8_t *prof = NULL, *prog = NULL;
    size_t np = 0, ng = 0;
    char err[256];
    if (nk__file_read_all("tests/golden/v1_tensor_exp_trn2.profile", &prof, &np, err, sizeof err) ||
        nk__file_read_all("tests/golden/v1_tensor_exp_trn2.nkprog", &prog, &ng, err, sizeof err)) {
        fprintf(stderr, "gen_seeds: %s (run from the repository root)\n", err);
        failed++;
        goto out;
    }
    /* the program file: header, META (tag, u64 length, payload), PROG (tag, u64 length, payload) */
    size_t meta = NK_FILE_HEADER_BYTES, len = 0;
    for (int i = 0; i < 8 && meta + 12 <= ng; i++)
        len |= (size_t)prog[meta + 4 + i] << (8 * i);
    size_t at = meta + 12 + len;
    if (np <= NK_FILE_HEADER_BYTES || at + 12 > ng) {
        fprintf(stderr, "gen_seeds: tests/golden/v1_* are not the expected files\n");
        failed++;
        goto out;
    }
    put("profile", "file-v1", 0, prof, np);
    put("profile", "content-v1", 4, prof + NK_FILE_HEADER_BYTES, np - NK_FILE_HEADER_BYTES);
    put("profile", "prog-v1", 5, prog + at + 12, ng - at - 12);
    put("program", "file-v1", 0, prog, ng);
    /* a version-1 profile against a current one */
    if (ncontent) {
        uint8_t pre[5] = {1, 0, 0, 0, 0};
        size_t la = np - NK_FILE_HEADER_BYTES;
        for (int i = 0; i < 4; i++)
            pre[1 + i] = (uint8_t)(la >> (8 * i));
        uint8_t *b = malloc(la + content[0].n);
        if (b) {
            memcpy(b, prof + NK_FILE_HEADER_BYTES, la);
            memcpy(b + la, content[0].p, content[0].n);
            put2("diff", "v1-vs-current", pre, 5, b, la + content[0].n);
            free(b);
        }
    }
out:
    free(prof);
    free(prog);
}

/* Pairs of profiles: neighbours in the registry, and each with itself. */
static void seeds_diff(void)
{
    for (int i = 0; i < ncontent; i++) {
        int j = (i + 1) % ncontent;
        for (int same = 0; same < 2; same++) {
            int k = same ? i : j;
            if (same && i % 4)
                continue;
            uint8_t pre[5] = {0};
            for (int s = 0; s < 4; s++)
                pre[1 + s] = (uint8_t)(content[i].n >> (8 * s));
            uint8_t *b = malloc(content[i].n + content[k].n);
            if (!b)
                continue;
            memcpy(b, content[i].p, content[i].n);
            memcpy(b + content[i].n, content[k].p, content[k].n);
            char name[32];
            snprintf(name, sizeof name, "pair-%02d-%02d", i, k);
            put2("diff", name, pre, 5, b, content[i].n + content[k].n);
            free(b);
        }
    }
}

static void seeds_target(void)
{
    const char *names[] = {"trn1", "trn2"};
    for (int i = 0; i < 2; i++) {
        char *t = NULL;
        if (nk__arch_format(nk__arch_get(names[i]), &t)) {
            failed++;
            continue;
        }
        put2("target", names[i], (const uint8_t *)t, strlen(t), NULL, 0);
        free(t);
    }
    static const char *edited[] = {
        "# a slower HBM\nbase = trn1\nhbm_gbps = 200\n",
        ("base = trn2\nname = trn2-big\nsbuf_partition_bytes = 262144 # more SBUF\npsum_banks = 8\n"
         "pe_ghz = 1.75\ndma_engines = 8\n"),
        "base=trn1\n  partitions=64\t\ntile_align = 64\nlaunch_startup_ns = 0\nlaunch_teardown_ns = 1e3\n",
    };
    for (size_t i = 0; i < sizeof edited / sizeof edited[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "edited-%zu", i);
        put2("target", name, (const uint8_t *)edited[i], strlen(edited[i]), NULL, 0);
    }
}

/* A .npy file: header of version major (padded so the data starts on a
 * 64-byte boundary), then n elements of the given size, counting up. */
static void npy(const char *descr, int size, const char *shape, int n, int major, uint8_t want)
{
    char dict[256];
    int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    int pre = major == 1 ? 10 : 12;
    int hlen = (dl + 1 + pre + 63) / 64 * 64 - pre;
    uint8_t buf[1024];
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    buf[7] = 0;
    for (int i = 0; i < pre - 8; i++)
        buf[8 + i] = (uint8_t)(hlen >> (8 * i));
    memset(buf + pre, ' ', (size_t)hlen);
    memcpy(buf + pre, dict, (size_t)dl);
    buf[pre + hlen - 1] = '\n';
    size_t at = (size_t)(pre + hlen);
    for (int i = 0; i < n && at + (size_t)size <= sizeof buf; i++, at += (size_t)size) {
        uint64_t v = (uint64_t)(i * 37 % 11);
        if (descr[1] == 'f')
            v = size == 2 ? 0x3c00u + (uint64_t)i : size == 4 ? 0x3f800000u + ((uint64_t)i << 20)
                                                       : 0x3ff0000000000000ull + ((uint64_t)i << 48);
        if (descr[1] == 'b')
            v &= 1;
        for (int b = 0; b < size; b++)
            buf[at + (size_t)b] = (uint8_t)(v >> (8 * b));
    }
    char name[64];
    snprintf(name, sizeof name, "v%d-%c%c%d-n%d-as%d", major, descr[1], descr[2], size, n, want);
    put("npy", name, want, buf, at);
}

static void seeds_npy(void)
{
    static const struct {
        const char *d;
        int size;
    } kinds[] = {{"<f2", 2}, {"<f4", 4}, {"<f8", 8}, {"|i1", 1}, {"<i2", 2}, {"<i4", 4}, {"<i8", 8},
                 {"|u1", 1}, {"<u2", 2}, {"<u4", 4}, {"<u8", 8}, {"|b1", 1}};
    static const struct {
        const char *s;
        int n;
    } shapes[] = {{"(5,)", 5}, {"(2, 3)", 6}, {"(1, 2, 2, 2)", 8}, {"(3, 1, 2)", 6}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        npy(kinds[k].d, kinds[k].size, shapes[k % 4].s, shapes[k % 4].n, 1 + (int)(k % 3), (uint8_t)(k % NK_DTYPE_COUNT));
    for (int w = 0; w < NK_DTYPE_COUNT; w++)
        npy("<f4", 4, "(2, 3)", 6, 1, (uint8_t)w);
}

static void seeds_args(void)
{
    static const char *lines[] = {
        "tensor_exp|--random|x=250x512:float32|--out|y.npy",
        "matmul_tiled|--in|a.npy:bfloat16|--in=b.npy|--target|trn2|--seed|42",
        "spmd_matmul|--random|lhsT=1024x256:bfloat16|--random|rhs=1024x1024:bfloat16|--grid|nc(2)*2,2",
        "spmd_tensor_add|--grid=2x2|--target-file|t.txt|--schedule|trace",
        "kernels/my.c:my_kernel|--random|x=128x512|--max-instructions|1000|--max-trace-bytes=1048576",
        "tensor_add|--in|dir:1/x.npy|--in|y.npy:int8|--out|a.npy|--out|b.npy|--iters|10",
        "--grid|none|seq_scale_matmul_hbm|--seed=18446744073709551615",
        "tensor_exp|--random|x=0x5|--schedule|other|--in",
    };
    static const uint8_t flags[] = {1, 2, 3, 0, 2, 1, 2, 0};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        char b[512];
        size_t n = strlen(lines[i]);
        memcpy(b, lines[i], n);
        for (size_t k = 0; k < n; k++)
            if (b[k] == '|')
                b[k] = 0;
        char name[32];
        snprintf(name, sizeof name, "line-%zu", i);
        put("args", name, (uint8_t)(flags[i] | (i << 2)), b, n);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_seeds DIR\n");
        return 2;
    }
    root = argv[1];
    for (int i = 0; i < nk_builtin_kernel_count; i++)
        seeds_of(&nk_builtin_kernels[i], "trn1");
    for (int i = 0; i < nk_builtin_kernel_count; i++)
        if (i % 5 == 0 || nk_builtin_kernels[i].grid[0])
            seeds_of(&nk_builtin_kernels[i], "trn2");
    seeds_v1();
    seeds_diff();
    seeds_target();
    seeds_npy();
    seeds_args();
    for (int i = 0; i < ncontent; i++)
        free(content[i].p);
    printf("%d seeds\n", total);
    return failed ? 1 : 0;
}
