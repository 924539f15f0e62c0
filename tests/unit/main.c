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

char *nk_test_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0, k;
    char *s = malloc(cap + 1);
    while (s && (k = fread(s + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            char *q = realloc(s, cap * 2 + 1);
            if (!q) {
                free(s);
                s = NULL;
                break;
            }
            s = q;
            cap *= 2;
        }
    }
    fclose(f);
    if (s)
        s[n] = 0;
    return s;
}

void nk_test_golden_at(const char *file, int line, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "tests/golden/%s", name);
    const char *upd = getenv("NK_UPDATE_GOLDEN");
    if (upd && !strcmp(upd, "1")) {
        FILE *f = fopen(path, "wb");
        if (!f || fputs(text, f) < 0)
            nk_test_fail(file, line, "cannot write %s", path);
        if (f)
            fclose(f);
        return;
    }
    char *want = nk_test_read_file(path);
    if (!want) {
        nk_test_fail(file, line, "cannot read %s (run from the repository root; NK_UPDATE_GOLDEN=1 writes it)",
                     path);
        return;
    }
    if (strcmp(want, text)) {
        /* the first differing line, with its number */
        const char *a = want, *b = text;
        int n = 1;
        while (*a && *a == *b) {
            n += *a == '\n';
            a++, b++;
        }
        while (a > want && a[-1] != '\n')
            a--, b--;
        nk_test_fail(file, line, "%s differs at line %d (NK_UPDATE_GOLDEN=1 rewrites it):\n    want: %.*s\n"
                     "    got:  %.*s", path, n, (int)strcspn(a, "\n"), a, (int)strcspn(b, "\n"), b);
    }
    free(want);
}

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
