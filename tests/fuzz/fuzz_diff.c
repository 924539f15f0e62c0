/*
 * fuzz_diff.c - libFuzzer target over the comparison of two profiles
 * (nk__insights_diff, `nklab diff`).
 *
 * The input holds two profiles' sections (what follows a profile file's
 * header): a first byte (bit 0: the first is format version 1, bit 1: the
 * second), the first's length as 4 bytes little-endian, the first, then the
 * second. When both decode, each is compared with the other, both ways.
 */
#include "fuzz_common.h"
#include "insights/insights.h"

static nk_profile *decode(const uint8_t *b, size_t n, int v1)
{
    char err[256] = "";
    nk_rd r;
    nk_profile *pr = NULL;
    nk__rd_init(&r, b, n, err, sizeof err);
    r.version = v1 ? 1 : NK_FORMAT_VERSION;
    if (nk__profile_decode_content(&r, &pr)) {
        REQUIRE(pr == NULL && err[0]);
        return NULL;
    }
    REQUIRE(nk__timeline_check(pr->tl, pr->prog, &pr->arch, NULL, 0) == 0);
    return pr;
}

static void diff(const nk_profile *a, const nk_profile *b)
{
    nk_text t = {0};
    int rc = nk__insights_diff(a, "a.nkp", b, "b.nkp", &t);
    if (rc) {
        fprintf(stderr, "fuzz: diff failed: %s\n", nk_strerror(rc));
        abort();
    }
    REQUIRE(!t.oom && t.s && t.len == strlen(t.s) && strstr(t.s, "a.nkp") && strstr(t.s, "b.nkp"));
    nk__text_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    uint32_t la = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24;
    const uint8_t *rest = data + 5;
    size_t n = size - 5;
    if (la > n)
        return 0;
    nk_profile *a = decode(rest, la, data[0] & 1);
    nk_profile *b = a ? decode(rest + la, n - la, data[0] & 2) : NULL;
    if (a && b) {
        diff(a, b);
        diff(b, a);
    }
    nk_profile_free(a);
    nk_profile_free(b);
    return 0;
}
