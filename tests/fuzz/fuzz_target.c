/*
 * fuzz_target.c - libFuzzer target over the target-file parser
 * (nk__arch_load_text). The input is the file's text. A table the parser
 * accepts must pass nk__arch_check, and format (nk__arch_format) to text that
 * parses back to the same table, which formats to the same text.
 */
#include "fuzz_common.h"
#include "arch/arch.h"

static void same_table(const nk_arch *a, const nk_arch *b)
{
    if (memcmp(a, b, sizeof *a)) {
        const unsigned char *x = (const void *)a, *y = (const void *)b;
        size_t i = 0;
        while (x[i] == y[i])
            i++;
        fprintf(stderr, "fuzz: the re-read table differs at byte %zu of %zu\n", i, sizeof *a);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    REQUIRE(text);
    memcpy(text, data, size);
    text[size] = 0;
    nk_arch a, b;
    memset(&a, 0xa5, sizeof a);
    nk_arch before = a;
    char err[256] = "";
    int rc = nk__arch_load_text(text, "fuzz", &a, err, sizeof err);
    if (rc) {
        REQUIRE(err[0] && rc < 0);
        REQUIRE(!memcmp(&a, &before, sizeof a)); /* on failure the table is unchanged */
    } else {
        if (nk__arch_check(&a, err, sizeof err)) {
            fprintf(stderr, "fuzz: a loaded table fails its check: %s\n", err);
            abort();
        }
        char *t1 = NULL, *t2 = NULL;
        REQUIRE(nk__arch_format(&a, &t1) == 0 && t1);
        memset(&b, 0, sizeof b);
        if (nk__arch_load_text(t1, "formatted", &b, err, sizeof err)) {
            fprintf(stderr, "fuzz: a formatted table does not load: %s\n%s", err, t1);
            abort();
        }
        same_table(&a, &b);
        REQUIRE(nk__arch_format(&b, &t2) == 0 && t2);
        REQUIRE(!strcmp(t1, t2));
        free(t1);
        free(t2);
    }
    free(text);
    return 0;
}
