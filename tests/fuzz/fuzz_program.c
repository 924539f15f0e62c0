/*
 * fuzz_program.c - libFuzzer target over the program file reader
 * (nk_program_load) and the listing.
 *
 * The first input byte chooses the entry point (mod 2):
 *   0  the rest is a whole program file: magic, version, length, checksum,
 *      the META and PROG sections;
 *   1  the rest is the content past the header: the target wraps it in a
 *      header of the current version with the right length and checksum,
 *      so mutations reach the sections.
 * A program the reader accepts must list, re-encode, time and execute
 * (fuzz_common.h) and, saved again, load to the same program.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 2;
    data++;
    size--;
    nk_wr w = {0};
    if (mode == 1) {
        nk__file_begin(&w, NK_MAGIC_PROGRAM);
        nk__wr_bytes(&w, data, size);
        nk__file_finish(&w);
        REQUIRE(!w.oom);
        data = w.p;
        size = w.n;
    }
    const char *path = fz_scratch(data, size);
    nk_program *p = NULL;
    char err[256] = "";
    int rc = nk_program_load(path, &p, err, sizeof err);
    if (rc) {
        REQUIRE(p == NULL && err[0]);
    } else {
        fz_use_program(p);
        REQUIRE(nk_program_save(p, path) == 0);
        nk_program *q = NULL;
        if (nk_program_load(path, &q, err, sizeof err)) {
            fprintf(stderr, "fuzz: a saved program does not load: %s\n", err);
            abort();
        }
        REQUIRE(q->ninstr == p->ninstr && q->nbufs == p->nbufs && q->ndeps == p->ndeps);
        char *a = NULL, *b = NULL;
        REQUIRE(nk_program_dump(p, &a) == 0 && nk_program_dump(q, &b) == 0);
        REQUIRE(!strcmp(a, b));
        free(a);
        free(b);
        nk_program_free(q);
        nk_program_free(p);
    }
    nk__wr_free(&w);
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    atexit(fz_scratch_remove);
    return 0;
}
