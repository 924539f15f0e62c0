/*
 * test_sources.c - the source text a profile records: the built-in kernels'
 * embedded sources (byte for byte the files the compiler read, under the
 * paths their instructions record), the process's source lookup and its
 * precedence over the file system, and capture from another directory.
 * Run from the repository root (as the golden-file tests are).
 */
#include "profile_fixture.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

/* A program of built-in kernel ki on its example arguments; NULL on failure. */
static const nk_program *compile_builtin(const nk_kernel_info *ki, nk_kernel **k)
{
    nk_array args[NK_KERNEL_MAX_ARGS];
    const nk_program *p = NULL;
    *k = nk_kernel_new(ki->name, ki->fn);
    if (nk_kernel_example_args(ki, 1, args))
        return NULL;
    if (nk_kernel_compile(*k, args, ki->nargs, NULL, &p))
        printf("  %s: %s\n", ki->name, nk_kernel_error(*k));
    for (int i = 0; i < ki->nargs; i++)
        nk_array_free(&args[i]);
    return p;
}

TEST(sources_builtin_text_is_the_compiled_file)
{
    /* every file a built-in kernel's instructions name is embedded, equal to
     * the file on disk (the one the compiler read); the arguments' location
     * is the pseudo-file named after the kernel, line 0 */
    for (int i = 0; i < nk_builtin_kernel_count; i++) {
        nk_kernel *k;
        const nk_program *p = compile_builtin(&nk_builtin_kernels[i], &k);
        CHECK(p != NULL);
        if (p) {
            CHECK(p->nfiles >= 2);
            CHECK_STR(p->files[0], p->kernel);
            for (uint32_t f = 1; f < p->nfiles; f++) {
                char *disk = fx_read_text(p->files[f]);
                const char *emb = nk_builtin_kernel_source(p->files[f], NULL);
                CHECK(disk != NULL);
                CHECK(emb != NULL);
                if (disk && emb && strcmp(disk, emb))
                    nk_test_fail(__FILE__, __LINE__, "embedded %s differs from the file", p->files[f]);
                free(disk);
            }
        }
        nk_kernel_free(k);
    }
    const char *exp = nk_builtin_kernel_source("kernels/tensor_exp.c", NULL);
    CHECK_CONTAINS(exp, "void nk_kernel_tensor_exp(nk_ctx *nc, const nk_tensor *args, int nargs)\n");
}

TEST(sources_builtin_unknown_paths)
{
    CHECK(nk_builtin_kernel_source(NULL, NULL) == NULL);
    CHECK(nk_builtin_kernel_source("", NULL) == NULL);
    CHECK(nk_builtin_kernel_source("tensor_exp.c", NULL) == NULL);  /* the recorded path, not a basename */
    CHECK(nk_builtin_kernel_source("./kernels/tensor_exp.c", NULL) == NULL);
    CHECK(nk_builtin_kernel_source("kernels/tensor_exp.h", NULL) == NULL);
    CHECK(nk_builtin_kernel_source("kernels/variants/tensor_exp.c", NULL) == NULL); /* not built in */
    CHECK(nk_builtin_kernel_source("examples/tensor_exp.c", NULL) == NULL);
}

/* A lookup that knows one path, counting its calls. */
typedef struct fake_src {
    const char *path, *text;
    int calls;
} fake_src;

static const char *fake_lookup(const char *path, void *user)
{
    fake_src *f = user;
    f->calls++;
    return !strcmp(path, f->path) ? f->text : NULL;
}

/* The captured text of tensor_exp's file (files[1]; files[0] is the
 * arguments' pseudo-file "tensor_exp"); NULL when none. */
static char *captured_text(const nk_program *p)
{
    nk_profile *pr = NULL;
    char *s = NULL;
    if (nk_profile_capture(p, NULL, &pr) == 0 && pr->prog->nfiles == 2 && pr->sources[1].text)
        s = strdup(pr->sources[1].text);
    nk_profile_free(pr);
    return s;
}

TEST(sources_lookup_comes_before_the_file)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    CHECK(p != NULL);
    if (!p) {
        nk_kernel_free(k);
        return;
    }
    CHECK_INT(p->nfiles, 2);
    CHECK_STR(p->files[1], "kernels/tensor_exp.c");
    char *disk = fx_read_text("kernels/tensor_exp.c");
    /* no lookup: the file */
    char *s = captured_text(p);
    CHECK_STR(s, disk);
    free(s);
    /* a lookup that knows the path wins over the readable file */
    fake_src fk = {"kernels/tensor_exp.c", "line one\nline two\n", 0};
    nk_profile_set_source_lookup(fake_lookup, &fk);
    s = captured_text(p);
    CHECK_STR(s, "line one\nline two\n");
    CHECK_INT(fk.calls, 2); /* asked for both files */
    free(s);
    /* one that does not know it: the file */
    fk.path = "kernels/other.c";
    s = captured_text(p);
    CHECK_STR(s, disk);
    CHECK_INT(fk.calls, 4);
    free(s);
    /* removed: not asked any more */
    nk_profile_set_source_lookup(NULL, &fk);
    fk.path = "kernels/tensor_exp.c";
    s = captured_text(p);
    CHECK_STR(s, disk);
    CHECK_INT(fk.calls, 4);
    free(s);
    free(disk);
    nk_kernel_free(k);
}

TEST(sources_capture_from_another_directory)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    char *disk = fx_read_text("kernels/tensor_exp.c");
    char home[PATH_MAX], dir[] = "/tmp/nklab-src-XXXXXX";
    CHECK(p && disk && getcwd(home, sizeof home) && mkdtemp(dir));
    if (!p || !disk || chdir(dir)) {
        free(disk);
        nk_kernel_free(k);
        return;
    }
    /* the relative path names nothing here: no text without the lookup ... */
    char *bare = captured_text(p);
    /* ... the built-in kernels' lookup has the compiled file's */
    nk_builtin_kernel_sources_register();
    nk_profile *pr = NULL, *q = NULL;
    char err[256] = "";
    int rc_cap = nk_profile_capture(p, NULL, &pr);
    int rc_wr = pr ? nk_profile_write(pr, "p.nkp") : -1;
    nk_profile_set_source_lookup(NULL, NULL);
    /* the file carries it: read back with no lookup at all */
    int rc_rd = nk_profile_read("p.nkp", &q, err, sizeof err);
    remove("p.nkp");
    int back = chdir(home);
    rmdir(dir);
    CHECK_INT(back, 0);
    CHECK(bare == NULL);
    CHECK_INT(rc_cap, 0);
    CHECK_INT(rc_wr, 0);
    CHECK_INT(rc_rd, 0);
    CHECK_STR(err, "");
    if (pr)
        CHECK_STR(pr->sources[1].text, disk);
    if (q) {
        CHECK_STR(q->sources[1].path, "kernels/tensor_exp.c");
        CHECK_STR(q->sources[1].text, disk);
        CHECK(q->sources[0].text == NULL); /* the pseudo-file "tensor_exp" */
    }
    free(bare);
    nk_profile_free(pr);
    nk_profile_free(q);
    free(disk);
    nk_kernel_free(k);
}
