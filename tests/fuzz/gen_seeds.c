/*
 * gen_seeds.c - the fuzzer's seed corpus, from real programs and profiles:
 * every built-in kernel at its example shapes, traced, timed and encoded
 * once per entry point of fuzz_profile.c (first byte 0: a whole profile
 * file, 1: its sections past the header, 2: the program's sections).
 *
 * usage: gen_seeds DIR   (prints "N seeds")
 */
#include "kernels.h"
#include "profile/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int put(const char *dir, const char *kind, const char *name, uint8_t mode, const uint8_t *b, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s-%s", dir, kind, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int bad = fwrite(&mode, 1, 1, f) != 1 || fwrite(b, 1, n, f) != n;
    bad |= fclose(f) != 0;
    return bad ? -1 : 1;
}

/* Seeds of one kernel; returns how many were written or -1. */
static int seeds_of(const char *dir, const nk_kernel_info *ki)
{
    nk_array in[NK_KERNEL_MAX_ARGS];
    const nk_program *p = NULL;
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    int n = 0, rc = 0;
    for (int a = 0; a < ki->nargs; a++)
        nk_array_alloc(&in[a], ki->args[a].dtype, ki->args[a].ndim, ki->args[a].shape);
    rc = nk_kernel_compile(k, in, ki->nargs, NULL, &p);
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
        if (!rc && (put(dir, "file", ki->name, 0, w.p, w.n) < 0 ||
                    put(dir, "content", ki->name, 1, w.p + NK_FILE_HEADER_BYTES, w.n - NK_FILE_HEADER_BYTES) < 0 ||
                    put(dir, "prog", ki->name, 2, pw.p, pw.n) < 0))
            rc = NK_EIO;
        n = rc ? 0 : 3;
        nk__wr_free(&w);
        nk__wr_free(&pw);
    }
    if (rc)
        fprintf(stderr, "gen_seeds: %s: %s %s\n", ki->name, nk_strerror(rc), nk_kernel_error(k));
    nk_profile_free(pr);
    for (int a = 0; a < ki->nargs; a++)
        nk_array_free(&in[a]);
    nk_kernel_free(k);
    return rc ? -1 : n;
}

/* Seeds in format version 1 from the files an earlier nklab wrote
 * (tests/golden/v1_*): the whole profile (entry 0), its content past the
 * header (entry 1 on version 1: byte 4) and the program file's PROG payload
 * (entry 2 on version 1: byte 5). Returns how many were written or -1. */
static int seeds_v1(const char *dir)
{
    uint8_t *prof = NULL, *prog = NULL;
    size_t np = 0, ng = 0;
    char err[256];
    int n = -1;
    if (nk__file_read_all("tests/golden/v1_tensor_exp_trn2.profile", &prof, &np, err, sizeof err) ||
        nk__file_read_all("tests/golden/v1_tensor_exp_trn2.nkprog", &prog, &ng, err, sizeof err)) {
        fprintf(stderr, "gen_seeds: %s (run from the repository root)\n", err);
        goto out;
    }
    /* the program file: header, META (tag, u64 length, payload), PROG (tag, u64 length, payload) */
    size_t meta = NK_FILE_HEADER_BYTES, len = 0;
    for (int i = 0; i < 8 && meta + 12 <= ng; i++)
        len |= (size_t)prog[meta + 4 + i] << (8 * i);
    size_t at = meta + 12 + len;
    if (np <= NK_FILE_HEADER_BYTES || at + 12 > ng) {
        fprintf(stderr, "gen_seeds: tests/golden/v1_* are not the expected files\n");
        goto out;
    }
    if (put(dir, "file", "v1", 0, prof, np) < 0 ||
        put(dir, "content", "v1", 4, prof + NK_FILE_HEADER_BYTES, np - NK_FILE_HEADER_BYTES) < 0 ||
        put(dir, "prog", "v1", 5, prog + at + 12, ng - at - 12) < 0)
        goto out;
    n = 3;
out:
    free(prof);
    free(prog);
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_seeds DIR\n");
        return 2;
    }
    int total = 0, failed = 0;
    for (int i = 0; i < nk_builtin_kernel_count; i++) {
        int n = seeds_of(argv[1], &nk_builtin_kernels[i]);
        if (n < 0)
            failed++;
        else
            total += n;
    }
    int v1 = seeds_v1(argv[1]);
    if (v1 < 0)
        failed++;
    else
        total += v1;
    printf("%d seeds\n", total);
    return failed ? 1 : 0;
}
