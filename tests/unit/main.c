/*
 * main.c - runs the registered tests: `test_nklab [substring...]` runs the
 * tests whose name contains one of the substrings (all by default).
 */
#include "test.h"

#include <stdarg.h>
#include <stdlib.h>

typedef struct entry {
    const char *name, *file;
    nk_test_fn fn;
} entry;

static entry tests[1024];
static int ntests, cur_failed;
static const char *cur_name;

void nk_test_register(const char *name, nk_test_fn fn, const char *file)
{
    if (ntests < (int)(sizeof tests / sizeof tests[0]))
        tests[ntests++] = (entry){name, file, fn};
}

void nk_test_fail(const char *file, int line, const char *fmt, ...)
{
    if (cur_failed < 10) {
        fprintf(stdout, "  FAIL %s: %s:%d: ", cur_name, file, line);
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stdout, fmt, ap);
        va_end(ap);
        fputc('\n', stdout);
    }
    cur_failed++;
}

int nk_test_failed(void) { return cur_failed > 0; }

static int cmp(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->name, y->name);
}

int main(int argc, char **argv)
{
    qsort(tests, (size_t)ntests, sizeof tests[0], cmp);
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        int want = argc < 2;
        for (int a = 1; a < argc; a++)
            want |= strstr(tests[i].name, argv[a]) != NULL;
        if (!want)
            continue;
        cur_name = tests[i].name;
        cur_failed = 0;
        tests[i].fn();
        if (cur_failed) {
            failed++;
            printf("FAIL %s (%d checks failed)\n", tests[i].name, cur_failed);
        } else {
            passed++;
            if (getenv("NK_TEST_VERBOSE"))
                printf("ok   %s\n", tests[i].name);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    fflush(stdout); /* before any exit-time sanitizer report */
    return failed ? 1 : 0;
}
