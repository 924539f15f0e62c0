/*
 * fuzz_profile.c - libFuzzer target over the profile reader and the program
 * decoder.
 *
 * The first input byte chooses the entry point (mod 3):
 *   0  a whole profile file: header, version, length, checksum, sections;
 *   1  a profile's sections alone, past the checksum, so mutations reach
 *      every check behind it;
 *   2  the program decoder (the sections inside PROG and program files);
 * and, for 1 and 2, the layout (byte / 3 odd: format version 1, which
 * readers still read; even: the current version).
 * Whatever a decoder accepts must hold up in every later stage: it passes
 * the validators again, yields metrics, a summary and a listing, re-encodes
 * to bytes that decode again, times on the model into a valid timeline and,
 * when small enough, executes. Any failure there aborts (a finding).
 */
#include "profile/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUIRE(cond)                                                                    \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "fuzz_profile: %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
            abort();                                                                     \
        }                                                                                \
    } while (0)

/* Runs the executor when the program's memory and work are small. */
static void try_execute(const nk_program *p)
{
    int64_t hbm = 0, work = 0;
    for (uint32_t i = 0; i < p->nhbm; i++)
        hbm += p->bufs[p->hbm_list[i]].bytes;
    for (uint32_t i = 0; i < p->ninstr; i++)
        for (int k = 0; k < 5; k++) {
            const nk_instr *in = &p->instrs[i];
            const nk_tensor *t = k == 0 ? &in->dst : k == 1 ? &in->dst2 : &in->src[k - 2];
            if (t->buf)
                work += nk__numel(t);
        }
    if (hbm > (8 << 20) || work > (4 << 20))
        return;
    void **mem = calloc(p->nbufs, sizeof *mem);
    REQUIRE(mem);
    int ok = 1;
    for (uint32_t i = 0; i < p->nhbm; i++)
        ok &= (mem[p->hbm_list[i]] = calloc(1, (size_t)p->bufs[p->hbm_list[i]].bytes + 1)) != NULL;
    if (ok)
        REQUIRE(nk_execute(p, mem) == 0);
    for (uint32_t i = 0; i < p->nhbm; i++)
        free(mem[p->hbm_list[i]]);
    free(mem);
}

static void use_program(const nk_program *p)
{
    REQUIRE(nk__program_check(p, NULL, 0) == 0);
    char *text = NULL;
    REQUIRE(nk_program_dump(p, &text) == 0);
    free(text);
    /* encoding what was decoded gives bytes that decode to the same program */
    nk_program *q = NULL;
    nk_wr w = {0};
    nk_rd r;
    REQUIRE(nk__program_encode(p, &w) == 0);
    nk__rd_init(&r, w.p, w.n, NULL, 0);
    REQUIRE(nk__program_decode(&r, &q) == 0 && nk__rd_end(&r) == 0);
    REQUIRE(q->ninstr == p->ninstr && q->nbufs == p->nbufs && q->ndeps == p->ndeps);
    REQUIRE(!strcmp(q->arch->name, p->arch->name) && q->arch->hbm_gbps == p->arch->hbm_gbps);
    nk__program_destroy(q);
    nk__wr_free(&w);
    /* so does a direct copy */
    REQUIRE(nk__program_copy(p, &q) == 0);
    REQUIRE(q->ninstr == p->ninstr && q->arch == &q->table);
    nk__program_destroy(q);
    /* the timing model accepts every valid program and yields a valid timeline */
    nk_timeline *tl = NULL;
    char err[256];
    REQUIRE(nk_time_program(p, NULL, &tl) == 0);
    if (nk__timeline_check(tl, p, p->arch, err, sizeof err)) {
        fprintf(stderr, "fuzz_profile: the timing model's timeline fails its check: %s\n", err);
        abort();
    }
    nk_timeline_free(tl);
    try_execute(p);
}

static void use_profile(const nk_profile *pr)
{
    REQUIRE(nk__timeline_check(pr->tl, pr->prog, &pr->arch, NULL, 0) == 0);
    nk_metrics m;
    REQUIRE(nk_profile_metrics(pr, &m) == 0);
    char *text = NULL;
    REQUIRE(nk_profile_summary(pr, "fuzz", 0, &text) == 0);
    free(text);
    REQUIRE(nk_profile_summary(pr, NULL, 1, &text) == 0);
    free(text);
    nk_wr w = {0};
    REQUIRE(nk__profile_encode(pr, &w) == 0);
    nk_profile *q = NULL;
    char err[256];
    if (nk__profile_decode(w.p, w.n, &q, err, sizeof err)) {
        fprintf(stderr, "fuzz_profile: a re-encoded profile does not decode: %s\n", err);
        abort();
    }
    REQUIRE(q->tl->nevents == pr->tl->nevents && q->prog->ninstr == pr->prog->ninstr);
    nk_profile_free(q);
    nk__wr_free(&w);
    use_program(pr->prog);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 3;
    uint32_t version = data[0] / 3 % 2 ? 1 : NK_FORMAT_VERSION;
    data++;
    size--;
    char err[256];
    nk_rd r;
    if (mode == 0) {
        nk_profile *pr = NULL;
        if (!nk__profile_decode(data, size, &pr, err, sizeof err))
            use_profile(pr);
        else
            REQUIRE(pr == NULL && err[0]);
        nk_profile_free(pr);
    } else if (mode == 1) {
        nk_profile *pr = NULL;
        nk__rd_init(&r, data, size, err, sizeof err);
        r.version = version;
        if (!nk__profile_decode_content(&r, &pr))
            use_profile(pr);
        else
            REQUIRE(pr == NULL && err[0]);
        nk_profile_free(pr);
    } else {
        nk_program *p = NULL;
        nk__rd_init(&r, data, size, err, sizeof err);
        r.version = version;
        if (!nk__program_decode(&r, &p))
            use_program(p);
        else
            REQUIRE(p == NULL && err[0]);
        nk__program_destroy(p);
    }
    return 0;
}
