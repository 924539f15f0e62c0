/*
 * test_profile.c - the profile file: capture, round trips, sources, atomic
 * writes, the strict reader against every truncation, bit flips, foreign
 * and future files, the timeline checks, and the summary's golden text.
 */
#include "profile_fixture.h"

#include <dirent.h>
#include <math.h>
#include <time.h>

static int same_timeline(const nk_timeline *a, const nk_timeline *b, uint32_t ninstr)
{
    if (strcmp(a->target, b->target) || a->total_ns != b->total_ns || a->host_in_ns != b->host_in_ns ||
        a->host_out_ns != b->host_out_ns || a->nevents != b->nevents || a->ndspans != b->ndspans ||
        a->ncounters != b->ncounters || a->nregions != b->nregions)
        return 0;
    for (uint32_t i = 0; i < a->nregions; i++) {
        const nk_region *x = &a->regions[i], *y = &b->regions[i];
        if (x->kind != y->kind || x->core != y->core || x->start != y->start || x->end != y->end)
            return 0;
    }
    for (int e = 0; e < NK_ENGINE_COUNT; e++)
        if (a->active_ns[e] != b->active_ns[e])
            return 0;
    for (uint32_t i = 0; i < a->nevents; i++) {
        const nk_event *x = &a->events[i], *y = &b->events[i];
        if (x->instr != y->instr || x->engine != y->engine || x->kind != y->kind || x->queue != y->queue ||
            x->start != y->start || x->end != y->end)
            return 0;
    }
    for (uint32_t i = 0; i < a->ndspans; i++) {
        const nk_dma_span *x = &a->dspans[i], *y = &b->dspans[i];
        if (x->instr != y->instr || x->queue != y->queue || x->to_hbm != y->to_hbm ||
            x->descriptors != y->descriptors || x->partitions != y->partitions || x->bytes != y->bytes ||
            x->engines != y->engines || x->start != y->start || x->end != y->end)
            return 0;
    }
    for (uint32_t i = 0; i < ninstr; i++)
        if (a->instr_start[i] != b->instr_start[i] || a->instr_end[i] != b->instr_end[i])
            return 0;
    for (uint32_t i = 0; i < a->ncounters; i++) {
        const nk_counter *x = &a->counters[i], *y = &b->counters[i];
        if (strcmp(x->name, y->name) || strcmp(x->unit, y->unit) || x->n != y->n)
            return 0;
        for (uint32_t k = 0; k < x->n; k++)
            if (x->t[k] != y->t[k] || x->value[k] != y->value[k])
                return 0;
    }
    return 1;
}

static void check_same_profile(const nk_profile *a, const nk_profile *b)
{
    CHECK_STR(a->nklab_version, b->nklab_version);
    CHECK(a->created_unix == b->created_unix);
    char *ta = NULL, *tb = NULL;
    CHECK_INT(nk__arch_format(&a->arch, &ta), 0);
    CHECK_INT(nk__arch_format(&b->arch, &tb), 0);
    CHECK_STR(ta, tb);
    free(ta);
    free(tb);
    char *da = NULL, *db = NULL;
    CHECK_INT(nk_program_dump(a->prog, &da), 0);
    CHECK_INT(nk_program_dump(b->prog, &db), 0);
    CHECK_STR(da, db);
    free(da);
    free(db);
    CHECK_INT(a->prog->nfiles, b->prog->nfiles);
    for (uint32_t i = 0; i < a->prog->nfiles && i < b->prog->nfiles; i++) {
        CHECK_STR(a->sources[i].path, b->sources[i].path);
        CHECK((a->sources[i].text == NULL) == (b->sources[i].text == NULL));
        if (a->sources[i].text && b->sources[i].text)
            CHECK_STR(a->sources[i].text, b->sources[i].text);
    }
    CHECK(same_timeline(a->tl, b->tl, a->prog->ninstr));
}

/* ---- capture and round trips */

TEST(profile_capture_write_read_roundtrip)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    nk_profile *pr = NULL, *q = NULL;
    char err[256] = "";
    CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    if (!pr) {
        nk_kernel_free(k);
        return;
    }
    CHECK(pr->prog != p); /* a copy the profile owns */
    CHECK_INT(pr->prog->ninstr, 6);
    CHECK_STR(pr->arch.name, "trn1");
    CHECK_STR(pr->nklab_version, NK_VERSION);
    CHECK(pr->tl->nevents >= 6);
    CHECK_INT(nk_profile_write(pr, fx_tmp("a.nkp")), 0);
    CHECK_INT(nk_profile_read(fx_tmp("a.nkp"), &q, err, sizeof err), 0);
    CHECK_STR(err, "");
    if (q) {
        check_same_profile(pr, q);
        /* the program read back owns a copy of trn1's table */
        CHECK(q->prog->arch == &q->prog->table);
        CHECK_STR(q->prog->arch->name, "trn1");
        CHECK(q->prog->arch->pe_ghz == nk__arch_get("trn1")->pe_ghz &&
              q->prog->arch->hbm_gbps == nk__arch_get("trn1")->hbm_gbps);
        CHECK(nk_profile_program(q) == q->prog);
    }
    nk_profile_free(q);
    nk_profile_free(pr);
    unlink(fx_tmp("a.nkp"));
    fx_tmp_done();
    nk_kernel_free(k);
}

TEST(profile_every_builtin_kernel_captures_on_both_targets)
{
    const char *targets[2] = {"trn1", "trn2"};
    for (int i = 0; i < nk_builtin_kernel_count; i++)
        for (int t = 0; t < 2; t++) {
            const nk_kernel_info *ki = &nk_builtin_kernels[i];
            nk_array in[NK_KERNEL_MAX_ARGS];
            for (int a = 0; a < ki->nargs; a++)
                nk_array_alloc(&in[a], ki->args[a].dtype, ki->args[a].ndim, ki->args[a].shape);
            nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
            nk_options o = {targets[t], 0};
            const nk_program *p = NULL;
            nk_profile *pr = NULL, *q = NULL;
            char err[256] = "";
            CHECK_INT(nk_kernel_compile(k, in, ki->nargs, &o, &p), 0);
            if (p) {
                /* the model's timeline passes the reader's checks */
                nk_timeline *tl = NULL;
                CHECK_INT(nk__time_program(p, NULL, &tl), 0);
                CHECK_INT(nk__timeline_check(tl, p, p->arch, err, sizeof err), 0);
                if (err[0])
                    printf("  %s on %s: %s\n", ki->name, targets[t], err);
                nk__timeline_free(tl);
                CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
            }
            if (pr) {
                CHECK_STR(pr->arch.name, targets[t]);
                CHECK_INT(nk_profile_write(pr, fx_tmp("k.nkp")), 0);
                CHECK_INT(nk_profile_read(fx_tmp("k.nkp"), &q, err, sizeof err), 0);
                if (q)
                    check_same_profile(pr, q);
            }
            nk_profile_free(q);
            nk_profile_free(pr);
            nk_kernel_free(k);
            for (int a = 0; a < ki->nargs; a++)
                nk_array_free(&in[a]);
        }
    unlink(fx_tmp("k.nkp"));
    fx_tmp_done();
}

/* A file read whole is given back to the system page by page behind the
 * reader (nk__rd_release): with the thresholds made small, every built-in
 * kernel's profile reads the same as with them off (no page given back),
 * bytes of the re-encoded profiles compared, and pages were given back. */
TEST(profile_reader_gives_back_pages_behind_it)
{
    size_t min = nk__rd_own_min, step = nk__rd_own_step, slack = nk__rd_own_slack;
    size_t given0 = nk__rd_own_given;
    int kernels = 0;
    for (int i = 0; i < nk_builtin_kernel_count; i++) {
        nk_kernel *k = NULL;
        nk_profile *pr = fx_builtin_profile(&nk_builtin_kernels[i], "trn1", &k);
        nk_profile *q[2] = {NULL, NULL};
        char err[256] = "";
        if (pr && !nk_profile_write(pr, fx_tmp("g.nkp"))) {
            for (int v = 0; v < 2; v++) {
                nk__rd_own_min = v ? 0 : SIZE_MAX; /* v = 1: give back every page it can */
                nk__rd_own_step = v ? 4096 : step;
                nk__rd_own_slack = v ? 4096 : slack;
                CHECK_INT(nk_profile_read(fx_tmp("g.nkp"), &q[v], err, sizeof err), 0);
            }
            nk__rd_own_min = min;
            nk__rd_own_step = step;
            nk__rd_own_slack = slack;
            nk_wr a = {0}, b = {0};
            if (q[0] && q[1] && !nk__profile_encode(q[0], &a) && !nk__profile_encode(q[1], &b)) {
                CHECK(a.n == b.n && !memcmp(a.p, b.p, a.n));
                kernels++;
            }
            nk__wr_free(&a);
            nk__wr_free(&b);
        }
        nk_profile_free(q[0]);
        nk_profile_free(q[1]);
        nk_profile_free(pr);
        nk_kernel_free(k);
    }
    CHECK_INT(kernels, nk_builtin_kernel_count);
    CHECK(nk__rd_own_given > given0);
    unlink(fx_tmp("g.nkp"));
    fx_tmp_done();
}

/* A large profile is written as a stream (its instructions and timeline a
 * chunk at a time, the lengths counted first; the timeline's chunks written
 * on one thread or, large enough, on a second one while the next is
 * encoded): the file is the bytes of the in-memory encoding. 50,176
 * instructions, about 8 MB, above the streaming threshold and over several
 * chunks. */
TEST(profile_streamed_file_is_the_encoding)
{
    nk_array args[2] = {{NK_BF16, 2, {4096, 4096}, NULL}, {NK_BF16, 2, {4096, 8192}, NULL}};
    nk_kernel *k = nk_kernel_new("matmul_tiled", nk_kernel_matmul_tiled);
    nk_options o = {.target = "trn1", .threads = 2} /* the writer may take a second thread on any machine */;
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    CHECK_INT(nk_kernel_compile(k, args, 2, &o, &p), 0);
    if (p)
        CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    nk_wr w = {0};
    if (pr && !nk__profile_encode(pr, &w)) {
        CHECK(w.n > (8u << 20) - (1u << 20));
        /* the timeline's chunks written on this thread, then on a second
         * one; its length counted on one thread, then on two */
        size_t pipe_min = nk__profile_pipe_min, split_min = nk__profile_count_split_min;
        for (int piped = 0; piped < 2; piped++)
            for (int split = 0; split < 2; split++) {
                nk__profile_pipe_min = piped ? 0 : SIZE_MAX;
                nk__profile_count_split_min = split ? 0 : SIZE_MAX;
                CHECK_INT(nk_profile_write(pr, fx_tmp("s.nkp")), 0);
                CHECK(fx_file_is(fx_tmp("s.nkp"), w.p, w.n));
            }
        nk__profile_pipe_min = pipe_min;
        nk__profile_count_split_min = split_min;
    }
    nk__wr_free(&w);
    nk_profile_free(pr);
    nk_kernel_free(k);
    unlink(fx_tmp("s.nkp"));
    fx_tmp_done();
}

/* nk__profile_capture_write (what `nklab profile` does: the program's part
 * of the file written on a second thread while the model times it) gives
 * the bytes of a capture then a write, streamed or not, threaded or not;
 * a write that fails is its own status, the capture's profile kept. */
TEST(profile_capture_write_is_capture_then_write)
{
    const double created = 1700000000.0;
    struct { const char *kernel; nk_kernel_fn fn; int nargs; nk_array args[2]; int threads; } cases[] = {
        {"matmul_tiled", nk_kernel_matmul_tiled, 2, {{NK_BF16, 2, {4096, 4096}, NULL}, {NK_BF16, 2, {4096, 8192}, NULL}},
         2},
        {"matmul_tiled", nk_kernel_matmul_tiled, 2, {{NK_BF16, 2, {4096, 4096}, NULL}, {NK_BF16, 2, {4096, 8192}, NULL}},
         1},
        {"tensor_exp", nk_kernel_tensor_exp, 1, {{NK_F32, 2, {256, 512}, NULL}}, 0},
    };
    for (size_t c = 0; c < NK_ARRAY_LEN(cases); c++) {
        nk_kernel *k = nk_kernel_new(cases[c].kernel, cases[c].fn);
        nk_options o = {.target = "trn1", .threads = cases[c].threads};
        const nk_program *p = NULL;
        nk_profile *pr = NULL, *q = NULL;
        CHECK_INT(nk_kernel_compile(k, cases[c].args, cases[c].nargs, &o, &p), 0);
        if (p && !nk_profile_capture(p, NULL, &pr))
            nk_profile_set_created(pr, created);
        nk_wr w = {0};
        if (pr && !nk__profile_encode(pr, &w)) {
            size_t pipe_min = nk__profile_pipe_min;
            for (int piped = 0; piped < 2; piped++) { /* the timeline's chunks written on a thread of their own */
                nk__profile_pipe_min = piped ? 0 : SIZE_MAX;
                int wst = -1;
                CHECK_INT(nk__profile_capture_write(p, fx_tmp("c.nkp"), &created, &q, &wst), 0);
                CHECK_INT(wst, 0);
                CHECK(q && q->tl && q->tl->total_ns == pr->tl->total_ns);
                CHECK(fx_file_is(fx_tmp("c.nkp"), w.p, w.n));
                nk_profile_free(q);
                q = NULL;
            }
            nk__profile_pipe_min = pipe_min;
            int wst;
            /* a file that cannot be written */
            wst = 0;
            CHECK_INT(nk__profile_capture_write(p, fx_tmp("missing/c.nkp"), NULL, &q, &wst), 0);
            CHECK_INT(wst, NK_EIO);
            CHECK(q && q->tl);
            CHECK_CONTAINS(nk_last_error(), "missing/c.nkp");
        }
        nk__wr_free(&w);
        nk_profile_free(pr);
        nk_profile_free(q);
        nk_kernel_free(k);
        unlink(fx_tmp("c.nkp"));
    }
    fx_tmp_done();
}

TEST(profile_records_source_text_and_absent_files)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 130, 64);
    nk_profile *pr = NULL;
    CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    if (!pr) {
        nk_kernel_free(k);
        return;
    }
    /* files: the kernel name (where the arguments were created: no such file)
     * and the kernel's source, read independently here */
    CHECK_INT(pr->prog->nfiles, 2);
    CHECK_STR(pr->sources[0].path, "tensor_exp");
    CHECK(pr->sources[0].text == NULL);
    CHECK_STR(pr->sources[1].path, "kernels/tensor_exp.c");
    char *want = fx_read_text("kernels/tensor_exp.c");
    CHECK(want != NULL);
    CHECK_STR(pr->sources[1].text, want);
    CHECK_CONTAINS(pr->sources[1].text, "nk_exp(nc, tile)");
    /* still there after a round trip, the absent one still absent */
    nk_profile *q = NULL;
    char err[256];
    CHECK_INT(nk_profile_write(pr, fx_tmp("s.nkp")), 0);
    CHECK_INT(nk_profile_read(fx_tmp("s.nkp"), &q, err, sizeof err), 0);
    if (q) {
        CHECK(q->sources[0].text == NULL);
        CHECK_STR(q->sources[1].text, want);
    }
    free(want);
    nk_profile_free(q);
    nk_profile_free(pr);
    unlink(fx_tmp("s.nkp"));
    fx_tmp_done();
    nk_kernel_free(k);
}

TEST(profile_synthetic_timeline_with_counters_roundtrips)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    nk_profile *pr = fx_exp_profile(p), *q = NULL;
    CHECK(pr != NULL);
    if (!pr)
        return;
    double t[3] = {0, 1300, 2100}, v[3] = {0, 436.9, 0.0};
    fx_counter(pr, "dma_throughput", "GB/s", t, v, 3);
    fx_counter(pr, "empty", "", t, v, 0);
    pr->tl->active_ns[NK_ENGINE_SCALAR] = 800;
    char err[256] = "";
    CHECK_INT(nk__timeline_check(pr->tl, pr->prog, &pr->arch, err, sizeof err), 0);
    CHECK_STR(err, "");
    nk_wr w = {0};
    CHECK_INT(nk__profile_encode(pr, &w), 0);
    CHECK_INT(nk__profile_decode(w.p, w.n, &q, err, sizeof err), 0);
    CHECK_STR(err, "");
    if (q) {
        check_same_profile(pr, q);
        CHECK_INT(q->tl->ncounters, 2);
        CHECK_STR(q->tl->counters[0].unit, "GB/s");
        CHECK(q->tl->counters[0].value[1] == 436.9);
        CHECK_INT(q->tl->counters[1].n, 0);
    }
    nk__wr_free(&w);
    nk_profile_free(q);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

TEST(profile_fixed_time_makes_files_reproducible)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 130, 64);
    /* the library reads no environment: NK_PROFILE_FIXED_TIME is the CLI's */
    setenv("NK_PROFILE_FIXED_TIME", "1700000000.5", 1);
    nk_profile *a = NULL, *b = NULL;
    CHECK_INT(nk_profile_capture(p, NULL, &a), 0);
    CHECK_INT(nk_profile_capture(p, NULL, &b), 0);
    unsetenv("NK_PROFILE_FIXED_TIME");
    if (a && b) {
        CHECK(fabs(a->created_unix - (double)time(NULL)) < 60); /* the clock */
        CHECK_INT(nk_profile_set_created(a, 1700000000.5), 0);
        CHECK_INT(nk_profile_set_created(b, 1700000000.5), 0);
        CHECK_INT(nk_profile_set_created(b, NAN), NK_EINVAL);
        CHECK_INT(nk_profile_set_created(b, -1), NK_EINVAL);      /* before 1970 */
        CHECK_INT(nk_profile_set_created(b, 253402300800.0), NK_EINVAL); /* after 9999 */
        CHECK_INT(nk_profile_set_created(NULL, 0), NK_EINVAL);
        CHECK(a->created_unix == 1700000000.5);
        CHECK(b->created_unix == 1700000000.5);
        nk_wr wa = {0}, wb = {0};
        CHECK_INT(nk__profile_encode(a, &wa), 0);
        CHECK_INT(nk__profile_encode(b, &wb), 0);
        CHECK_INT(wa.n, wb.n);
        CHECK(wa.n == wb.n && !memcmp(wa.p, wb.p, wa.n));
        nk__wr_free(&wa);
        nk__wr_free(&wb);
    }
    nk_profile_free(a);
    nk_profile_free(b);
    nk_kernel_free(k);
}

/* A creation time no calendar can print (a fuzzed file had 6.1e47 s, which
 * the summary's conversion to time_t made undefined) is refused on read. */
TEST(profile_reader_refuses_a_creation_time_out_of_range)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 130, 64);
    nk_profile *pr = fx_exp_profile(p), *q = NULL;
    CHECK(pr != NULL);
    static const double bad[] = {6.11193e47, -1.0, 253402300800.0};
    for (int i = 0; pr && i < 3; i++) {
        pr->created_unix = bad[i]; /* as a file could hold it: the setter refuses these */
        nk_wr w = {0};
        char err[256] = "";
        CHECK_INT(nk__profile_encode(pr, &w), 0);
        CHECK_INT(nk__profile_decode(w.p, w.n, &q, err, sizeof err), NK_EFORMAT);
        CHECK_CONTAINS(err, "creation time is not between 1970 and 9999");
        CHECK(q == NULL);
        nk__wr_free(&w);
    }
    if (pr) {
        pr->created_unix = 253402300799.0; /* 9999-12-31 23:59:59 still reads */
        nk_wr w = {0};
        char err[256] = "";
        CHECK_INT(nk__profile_encode(pr, &w), 0);
        CHECK_INT(nk__profile_decode(w.p, w.n, &q, err, sizeof err), 0);
        nk__wr_free(&w);
        nk_profile_free(q);
    }
    nk_profile_free(pr);
    nk_kernel_free(k);
}

TEST(profile_on_a_modified_target_keeps_that_table)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    nk_arch slow;
    char err[256] = "";
    CHECK_INT(nk__arch_load_text("base = trn1\nname = slowhbm\nhbm_gbps = 100\n", "test", &slow, err, sizeof err), 0);
    nk_profile *pr = NULL, *q = NULL;
    CHECK_INT(nk_profile_capture(p, &slow, &pr), 0);
    if (pr) {
        CHECK_STR(pr->arch.name, "slowhbm");
        CHECK_INT(nk_profile_write(pr, fx_tmp("m.nkp")), 0);
        CHECK_INT(nk_profile_read(fx_tmp("m.nkp"), &q, err, sizeof err), 0);
        if (q) {
            CHECK_STR(q->arch.name, "slowhbm");
            CHECK(q->arch.hbm_gbps == 100.0);
            CHECK(q->arch.pe_ghz == nk__arch_get("trn1")->pe_ghz);
            CHECK_STR(q->prog->target, "trn1");
        }
    }
    nk_profile_free(q);
    nk_profile_free(pr);
    unlink(fx_tmp("m.nkp"));
    fx_tmp_done();
    nk_kernel_free(k);
}

/* ---- atomic writes */

static int count_entries(const char *dir, const char *needle)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, needle) != NULL;
    closedir(d);
    return n;
}

TEST(profile_write_is_atomic_and_leaves_no_temporary)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    nk_profile *pr = fx_exp_profile(p), *q = NULL;
    if (!pr)
        return;
    const char *path = fx_tmp("w.nkp");
    char dir[160], err[256];
    snprintf(dir, sizeof dir, "%s", fx_dir);
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs("an older file", f);
        fclose(f);
    }
    CHECK_INT(nk_profile_write(pr, path), 0);
    CHECK_INT(count_entries(dir, ".tmp"), 0);
    CHECK_INT(count_entries(dir, "w.nkp"), 1);
    CHECK_INT(nk_profile_read(path, &q, err, sizeof err), 0); /* replaced */
    nk_profile_free(q);
    /* a directory that does not exist: an error, nothing created */
    CHECK_INT(nk_profile_write(pr, "/nonexistent-nklab-dir/x.nkp"), NK_EIO);
    CHECK_INT(nk_profile_write(pr, NULL), NK_EINVAL);
    unlink(path);
    fx_tmp_done();
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* ---- the strict reader */

/* Rewrites the header's length and checksum for content of n bytes. */
static void fix_header(uint8_t *b, size_t n)
{
    uint64_t len = n - NK_FILE_HEADER_BYTES, sum = nk__checksum(b + NK_FILE_HEADER_BYTES, len);
    for (int i = 0; i < 8; i++) {
        b[16 + i] = (uint8_t)(len >> (8 * i));
        b[24 + i] = (uint8_t)(sum >> (8 * i));
    }
}

static int decode(const uint8_t *b, size_t n, char *err, size_t errlen)
{
    nk_profile *q = NULL;
    int rc = nk__profile_decode(b, n, &q, err, errlen);
    if (!rc) {
        /* whatever the reader accepts passes the checks every consumer relies on */
        CHECK_INT(nk__program_check(q->prog, NULL, 0), 0);
        CHECK_INT(nk__timeline_check(q->tl, q->prog, &q->arch, NULL, 0), 0);
        nk_metrics m;
        CHECK_INT(nk_profile_metrics(q, &m), 0);
    } else {
        CHECK(q == NULL);
    }
    nk_profile_free(q);
    return rc;
}

/* The hand-written tensor_exp profile with a small counter: a few KB, so
 * every byte can be cut or flipped quickly (a captured profile carries a
 * 2001-sample throughput counter). */
static nk_wr small_profile(nk_kernel **k)
{
    nk_wr w = {0};
    const nk_program *p = fx_compile_exp(k, 250, 512);
    nk_profile *pr = p ? fx_exp_profile(p) : NULL;
    if (pr) {
        double t[2] = {0, 10}, v[2] = {1, 2};
        fx_counter(pr, "c", "u", t, v, 2);
        nk__profile_encode(pr, &w);
    }
    nk_profile_free(pr);
    return w;
}

TEST(profile_reader_rejects_every_truncation)
{
    nk_kernel *k;
    nk_wr w = small_profile(&k);
    char err[256];
    CHECK(w.n > 1000);
    CHECK_INT(decode(w.p, w.n, err, sizeof err), 0);
    uint8_t *b = malloc(w.n);
    int header_fail = 0, content_fail = 0;
    for (size_t n = 0; b && n < w.n; n++) {
        /* cut as is: caught by the header */
        header_fail += decode(w.p, n, err, sizeof err) == NK_EFORMAT && err[0];
        /* cut with a header rewritten to match: caught by the sections */
        if (n >= NK_FILE_HEADER_BYTES) {
            memcpy(b, w.p, n);
            fix_header(b, n);
            content_fail += decode(b, n, err, sizeof err) == NK_EFORMAT && err[0];
        } else {
            content_fail++;
        }
    }
    CHECK_INT(header_fail, w.n);
    CHECK_INT(content_fail, w.n);
    /* messages at a few lengths */
    decode(w.p, 0, err, sizeof err);
    CHECK_STR(err, "empty file: not an nklab profile");
    decode(w.p, 5, err, sizeof err);
    CHECK_STR(err, "truncated: 5 bytes, shorter than the 32-byte header");
    decode(w.p, 31, err, sizeof err);
    CHECK_STR(err, "truncated: 31 bytes, shorter than the 32-byte header");
    decode(w.p, 100, err, sizeof err);
    char want[160];
    snprintf(want, sizeof want, "truncated: the header announces %zu bytes of content, the file holds 68", w.n - 32);
    CHECK_STR(err, want);
    memcpy(b, w.p, 40);
    fix_header(b, 40);
    decode(b, 40, err, sizeof err);
    CHECK_STR(err, "truncated: 8 bytes needed at offset 4, 4 left");
    memcpy(b, w.p, w.n - 1);
    fix_header(b, w.n - 1);
    decode(b, w.n - 1, err, sizeof err);
    /* SRCS is the last section: its length is what follows its 12-byte head */
    size_t srcs = 0;
    for (size_t i = NK_FILE_HEADER_BYTES; i + 4 <= w.n; i++)
        if (!memcmp(w.p + i, "SRCS", 4))
            srcs = i;
    size_t len = w.n - srcs - 12;
    snprintf(want, sizeof want, "section SRCS: length %zu exceeds the %zu bytes left", len, len - 1);
    CHECK_STR(err, want);
    free(b);
    nk__wr_free(&w);
    nk_kernel_free(k);
}

TEST(profile_reader_rejects_bit_flips)
{
    nk_kernel *k;
    nk_wr w = small_profile(&k);
    uint8_t *b = malloc(w.n);
    char err[256];
    int rejected = 0, clean = 0;
    for (size_t i = 0; b && i < w.n; i++) {
        memcpy(b, w.p, w.n);
        b[i] ^= (uint8_t)(1u << (i % 8));
        rejected += decode(b, w.n, err, sizeof err) != 0;
        /* with the checksum rewritten the flip reaches the decoder, which
         * must reject it or produce a profile that passes every check */
        if (i >= NK_FILE_HEADER_BYTES) {
            fix_header(b, w.n);
            int rc = decode(b, w.n, err, sizeof err);
            clean += rc == 0 || (rc == NK_EFORMAT && err[0]);
        } else {
            clean++;
        }
    }
    CHECK_INT(rejected, w.n);
    CHECK_INT(clean, w.n);
    memcpy(b, w.p, w.n);
    b[w.n - 3] ^= 4;
    CHECK_INT(decode(b, w.n, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "checksum mismatch: the content is corrupt");
    free(b);
    nk__wr_free(&w);
    nk_kernel_free(k);
}

TEST(profile_reader_rejects_foreign_and_future_files)
{
    nk_kernel *k;
    nk_wr w = small_profile(&k);
    uint8_t *b = malloc(w.n);
    char err[256];
    if (!b)
        return;
    memcpy(b, w.p, w.n);
    memcpy(b, "\x89PNG\r\n\x1a\n", 8);
    CHECK_INT(decode(b, w.n, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "not an nklab profile (wrong magic number)");
    memcpy(b, NK_MAGIC_PROGRAM, 8);
    CHECK_INT(decode(b, w.n, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "not an nklab profile: this is an nklab program file");
    memcpy(b, w.p, w.n);
    b[8] = 8;
    CHECK_INT(decode(b, w.n, err, sizeof err), NK_EVERSION);
    CHECK_STR(err, "format version 8 is newer than this nklab reads (7); use a newer nklab");
    b[8] = 1; /* version 1 is read, with its own checksum (FNV-1a), which this content fails */
    CHECK_INT(decode(b, w.n, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "checksum mismatch: the content is corrupt");
    b[8] = 0;
    b[11] = 1; /* 2^24 */
    CHECK_INT(decode(b, w.n, err, sizeof err), NK_EVERSION);
    CHECK_STR(err, "format version 16777216 is newer than this nklab reads (7); use a newer nklab");
    memcpy(b, w.p, w.n);
    b[12] = 1;
    CHECK_INT(decode(b, w.n, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "unknown header flags 0x1");
    /* a program file handed to the profile reader, through the file API */
    nk_kernel *k2;
    const nk_program *p = fx_compile_exp(&k2, 130, 64);
    nk_profile *q = NULL;
    CHECK_INT(nk_program_save(p, fx_tmp("p.nkprog")), 0);
    CHECK_INT(nk_profile_read(fx_tmp("p.nkprog"), &q, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "not an nklab profile: this is an nklab program file");
    CHECK(q == NULL);
    CHECK_INT(nk_profile_read(fx_tmp("none.nkp"), &q, err, sizeof err), NK_EIO);
    CHECK_STR(err, "cannot open: No such file or directory");
    CHECK_INT(nk_profile_read(fx_dir, &q, err, sizeof err), NK_EIO);
    CHECK_STR(err, "not a regular file");
    unlink(fx_tmp("p.nkprog"));
    fx_tmp_done();
    free(b);
    nk__wr_free(&w);
    nk_kernel_free(k);
    nk_kernel_free(k2);
}

/* ---- timeline checks */

static void t_instr(nk_timeline *tl) { tl->events[2].instr = 6; }
static void t_order(nk_timeline *tl) { tl->events[1].start = -1; }
static void t_sort(nk_timeline *tl) { tl->events[3].start = 2000; }
static void t_xfer(nk_timeline *tl) { tl->dspans[0].instr = 1; }
static void t_dir(nk_timeline *tl) { tl->dspans[0].to_hbm = 1; }
static void t_parts(nk_timeline *tl) { tl->dspans[1].partitions = 2 * 129; } /* 2 descriptors */
static void t_engines(nk_timeline *tl) { tl->dspans[2].engines = 7; }      /* 3 engines, 2 descriptors */
static void t_end(nk_timeline *tl) { tl->events[5].end = 6001; }
static void t_nan(nk_timeline *tl) { tl->total_ns = NAN; }
static void t_span(nk_timeline *tl) { tl->instr_end[4] = tl->instr_start[4] - 1; }
static void t_active(nk_timeline *tl) { tl->active_ns[NK_ENGINE_DMA] = 7000; }
static void t_kind(nk_timeline *tl) { tl->events[0].kind = NK_EV_KIND_COUNT; }
static void t_xsort(nk_timeline *tl) { tl->dspans[3].start = 3800; }
static void t_region(nk_timeline *tl, nk_region g)
{
    free(tl->regions);
    tl->regions = malloc(sizeof *tl->regions);
    tl->regions[0] = g;
    tl->nregions = 1;
}
static void t_rcore(nk_timeline *tl) { t_region(tl, (nk_region){NK_REGION_TEARDOWN, 1, 5000, 6000}); }
static void t_rtime(nk_timeline *tl) { t_region(tl, (nk_region){NK_REGION_STARTUP, 0, 0, 6500}); }

TEST(profile_timeline_checks_name_the_problem)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    struct {
        void (*edit)(nk_timeline *);
        const char *msg;
    } cases[] = {
        {t_instr, "event 2: instruction 6, engine 2, kind 0 or queue 0 out of range"},
        {t_order, "event 1: times -1..2100 outside 0..6000 ns"},
        {t_sort, "event 3: not sorted by start"},
        {t_xfer, "DMA span 0: instruction 1 is a activation, direction 0"},
        {t_dir, "DMA span 0: instruction 0 is a load, direction 1"},
        {t_parts, "DMA span 1: queue 0, 2 descriptors on engines 0xc, partitions 258 or bytes 249856 out of range"},
        {t_engines, "DMA span 2: queue 1, 2 descriptors on engines 0x7, partitions 128 or bytes 262144 out of range"},
        {t_end, "event 5: times 3000..6001 outside 0..6000 ns"},
        {t_nan, "total nan ns or host copies 1000/2000 ns not finite and non-negative"},
        {t_span, "instruction 4: span 2500..2499 outside 0..6000 ns"},
        {t_active, "active time 7000 ns of engine dma outside 0..6000 ns"},
        {t_kind, "event 0: instruction 0, engine 5, kind 5 or queue 0 out of range"},
        {t_rcore, "launch region 0: kind 1 or core 1 out of range"},
        {t_rtime, "launch region 0: times 0..6500 outside 0..6000 ns"},
        {t_xsort, "DMA span 3: not sorted by start"},
    };
    for (size_t i = 0; p && i < sizeof cases / sizeof cases[0]; i++) {
        nk_profile *pr = fx_exp_profile(p), *q = NULL;
        char err[256] = "";
        if (!pr)
            break;
        CHECK_INT(nk__timeline_check(pr->tl, pr->prog, &pr->arch, err, sizeof err), 0);
        cases[i].edit(pr->tl);
        CHECK_INT(nk__timeline_check(pr->tl, pr->prog, &pr->arch, err, sizeof err), NK_EFORMAT);
        CHECK_STR(err, cases[i].msg);
        /* the same problem in a file: the reader names the section */
        nk_wr w = {0};
        CHECK_INT(nk__profile_encode(pr, &w), 0);
        char want[300];
        snprintf(want, sizeof want, "TIME: %s", cases[i].msg);
        CHECK_INT(nk__profile_decode(w.p, w.n, &q, err, sizeof err), NK_EFORMAT);
        CHECK_STR(err, want);
        CHECK(q == NULL);
        nk__wr_free(&w);
        nk_profile_free(pr);
    }
    nk_kernel_free(k);
}

/* ---- summary */

TEST(profile_summary_text_matches_golden)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    nk_profile *pr = fx_exp_profile(p);
    char *text = NULL;
    CHECK(pr != NULL);
    if (pr) {
        CHECK_INT(nk_profile_summary(pr, "fixture.nkp", 0, &text), 0);
        if (text)
            CHECK_GOLDEN("summary_tensor_exp.txt", text);
        free(text);
    }
    nk_profile_free(pr);
    nk_kernel_free(k);
}

TEST(profile_summary_json_has_exactly_the_metric_keys)
{
    static const char *keys[] = {
        "total_time", "launch_time", "total_time_without_launch", "event_count", "total_active_time_percent",
        "tensor_engine_instruction_count", "tensor_engine_active_time", "tensor_engine_active_time_percent",
        "vector_engine_instruction_count", "vector_engine_active_time", "vector_engine_active_time_percent",
        "scalar_engine_instruction_count", "scalar_engine_active_time", "scalar_engine_active_time_percent",
        "gpsimd_engine_instruction_count", "gpsimd_engine_active_time", "gpsimd_engine_active_time_percent",
        "sync_engine_instruction_count", "sync_engine_active_time", "sync_engine_active_time_percent",
        "dma_instruction_count", "dma_active_time", "dma_active_time_percent", "dma_transfer_count", "dma_transfer_total_bytes",
        "dma_transfer_average_bytes", "dma_queue_count", "dma_queue_busy_time", "dma_queue_busy_time_percent",
        "hbm_read_bytes", "hbm_write_bytes",
        "sbuf_read_bytes", "sbuf_write_bytes", "psum_read_bytes", "psum_write_bytes", "hardware_flops",
        "hfu_estimated_percent", "mfu_estimated_percent", "mbu_estimated_percent", "mm_arithmetic_intensity",
        "peak_flops_bandwidth_ratio", "matmul_instruction_count", "spill_store_bytes", "spill_reload_bytes",
    };
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    nk_profile *pr = fx_exp_profile(p);
    char *json = NULL;
    if (!pr || nk_profile_summary(pr, NULL, 1, &json)) {
        CHECK(0);
        return;
    }
    /* walk the object: "key": number pairs, in order, nothing else */
    const char *s = json;
    size_t nk = sizeof keys / sizeof keys[0];
    CHECK(*s == '{');
    s++;
    for (size_t i = 0; i < nk && !nk_test_failed(); i++) {
        char want[64];
        snprintf(want, sizeof want, "%s\"%s\": ", i ? ", " : "", keys[i]);
        CHECK(!strncmp(s, want, strlen(want)));
        s += strlen(want);
        char *end;
        strtod(s, &end);
        CHECK(end > s);
        s = end;
    }
    CHECK_STR(s, "}\n");
    /* values as the fixture implies: see test_metrics.c for the derivations */
    CHECK_CONTAINS(json, "\"total_time\": 6e-06,");
    CHECK_CONTAINS(json, "\"hbm_read_bytes\": 512000,");
    CHECK_CONTAINS(json, "\"dma_transfer_count\": 8,");
    CHECK_INT(nk_metrics_count(), (int)nk);
    free(json);
    nk_profile_free(pr);
    nk_kernel_free(k);
}
