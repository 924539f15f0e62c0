/*
 * test_target.c - what-if target tables: loading them (nk_target_*),
 * tracing against their capacities, timing on their rates, the program
 * cache telling them apart by contents, and programs and profiles keeping
 * them through their files. Also compiling from shapes alone (no data).
 */
#include "test.h"
#include "timing_detail.h"
#include "kernels.h"
#include "profile/profile.h"

#include <stdlib.h>
#include <unistd.h>

/* ---- fixtures */

#define BIG_F 24576 /* fp32 per partition: 96 KiB, two tiles overflow trn1's 176 KiB */

static int big_line; /* the line of the load that overflows on trn1 */

/* Two [128, 24576] fp32 tiles added into a third: the add needs 288 KiB
 * per partition at once. */
static void k_two_big_tiles(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, BIG_F), NK_F32, NK_SHARED_HBM);
    nk_tensor a = nk_load(nc, args[0]);
    big_line = __LINE__; nk_tensor b = nk_load(nc, args[0]);
    nk_store(nc, out, nk_add(nc, a, b));
    nk_return(nc, out);
}

#define COPY_ROWS 16 /* [128, 2048] fp32 tiles: 8 KiB per partition, contiguous */

/* Copies x [16 * 128, 2048] fp32 through SBUF: nothing but DMA. */
static void k_copy(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(COPY_ROWS * 128, 2048), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, r, COPY_ROWS) {
        nk_tensor t = nk_load(nc, nk_ix(nc, args[0], nk_r(r * 128, r * 128 + 128), NK_ALL));
        nk_store(nc, nk_ix(nc, out, nk_r(r * 128, r * 128 + 128), NK_ALL), t);
    }
    nk_return(nc, out);
}

static nk_array shape_only(nk_dtype dt, int64_t d0, int64_t d1)
{
    nk_array a = {dt, 2, {d0, d1}, NULL};
    return a;
}

static nk_target *parse(const char *text)
{
    nk_target *t = NULL;
    char err[256] = "";
    int rc = nk_target_parse(text, "test", &t, err, sizeof err);
    if (rc)
        printf("  parse: %s\n", err);
    return t;
}

/* ---- the public API */

TEST(target_api_loads_formats_and_names)
{
    const nk_target *trn1 = nk_target_builtin("trn1");
    CHECK(trn1 != NULL && nk_target_builtin(NULL) == trn1 && nk_target_builtin("") == trn1);
    CHECK(nk_target_builtin("trn3") == NULL);
    CHECK_STR(nk_target_name(nk_target_builtin("trn2")), "trn2");
    nk_target_free((nk_target *)trn1); /* a built-in table is never freed */
    CHECK_STR(nk_target_name(nk_target_builtin("trn1")), "trn1");

    nk_target *t = parse("base = trn2\nname = what-if\nhbm_gbps = 123.25\n");
    CHECK(t != NULL);
    if (t) {
        CHECK_STR(nk_target_name(t), "what-if");
        CHECK(t->hbm_gbps == 123.25);
        CHECK(t->pe_ghz == 2.4); /* the rest from trn2 [A3] */
        /* format, parse again: the same values */
        char *text = NULL;
        CHECK_INT(nk_target_format(t, &text), 0);
        CHECK_CONTAINS(text, "base = trn1\n"); /* a table of another name starts from trn1, sets every key */
        CHECK_CONTAINS(text, "\nhbm_gbps                   = 123.25 ");
        CHECK_CONTAINS(text, "\npe_ghz                     = 2.4 ");
        nk_target *u = text ? parse(text) : NULL;
        CHECK(u && !strcmp(u->name, "what-if") && u->hbm_gbps == 123.25 && u->pe_ghz == 2.4 &&
              u->sbuf_partition_bytes == 224 * 1024);
        nk_target_free(u);
        free(text);
    }
    nk_target_free(t);
    nk_target_free(NULL);
}

TEST(target_api_errors_name_the_file_and_line)
{
    nk_target *t = (nk_target *)1;
    char err[256];
    CHECK_INT(nk_target_load("/nonexistent/what-if.txt", &t, err, sizeof err), NK_EIO);
    CHECK_STR(err, "/nonexistent/what-if.txt: cannot open: No such file or directory");
    CHECK(t == NULL);
    CHECK_INT(nk_target_parse("base = trn1\nhbm_gbps = fast\n", "w.txt", &t, err, sizeof err), NK_EINVAL);
    CHECK_STR(err, "w.txt:2: bad value 'fast' for 'hbm_gbps': expected a number in [0.001, 1e+07]");
    CHECK_INT(nk_target_parse("hbm_gbps = 1\n", "w.txt", &t, err, sizeof err), NK_EFORMAT);
    CHECK_STR(err, "w.txt:1: the first setting must be 'base = trn1' or 'base = trn2'");
    CHECK_INT(nk_target_parse("base = trn7\n", "w.txt", &t, err, sizeof err), NK_ENOTFOUND);
    CHECK_STR(err, "w.txt:1: unknown base target 'trn7' (known: trn1, trn2)");
    CHECK(t == NULL);
    CHECK_INT(nk_target_load(NULL, &t, err, sizeof err), NK_EINVAL);
}

/* A table a caller built by hand is checked like a file before tracing. */
TEST(target_table_out_of_range_is_refused_by_the_tracer)
{
    nk_target *t = parse("base = trn1\n");
    if (!t)
        return;
    t->partitions = 0;
    nk_kernel *k = nk_kernel_new("copy", k_copy);
    nk_array x = shape_only(NK_F32, COPY_ROWS * 128, 2048);
    nk_options o = {NULL, 0, t};
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o, &p), NK_EINVAL);
    CHECK_STR(nk_kernel_error(k), "target trn1: partitions = 0: expected an integer in [1, 128]");
    t->partitions = 128;
    t->sbuf_reserved_bytes = t->sbuf_partition_bytes;
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o, &p), NK_EINVAL);
    CHECK_STR(nk_kernel_error(k), "target trn1: sbuf_reserved_bytes (196608) must be less than "
                                  "sbuf_partition_bytes (196608)");
    nk_kernel_free(k);
    nk_target_free(t);
}

/* ---- tracing: capacities come from the table */

TEST(target_doubled_sbuf_lets_an_overflowing_kernel_trace)
{
    nk_array x = shape_only(NK_F32, 128, BIG_F);
    nk_kernel *k = nk_kernel_new("two_big_tiles", k_two_big_tiles);
    const nk_program *p = NULL;
    /* trn1: 176 KiB for kernels per partition [ALLOC]; the add's three 96 KiB tiles do not fit */
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), NK_ECAPACITY);
    char want[512];
    snprintf(want, sizeof want, "%s:%d: SBUF capacity exceeded: this tensor_tensor needs its tiles resident at "
             "once, 294912 bytes per partition, and 180224 are available; its tiles: [128, 24576] float32 at %s:%d "
             "(98304 bytes); [128, 24576] float32 at %s:%d (98304 bytes); [128, 24576] float32 at %s:%d (98304 "
             "bytes)", __FILE__, big_line + 1, __FILE__, big_line + 1, __FILE__, big_line - 1, __FILE__, big_line);
    CHECK_STR(nk_kernel_error(k), want);

    nk_target *t = parse("base = trn1\nname = sbuf2x\nsbuf_partition_bytes = 393216\n");
    if (!t) {
        nk_kernel_free(k);
        return;
    }
    nk_options o = {NULL, 0, t};
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o, &p), 0);
    nk_target_free(t); /* the program keeps its own copy */
    if (p) {
        CHECK_STR(nk_program_target(p), "sbuf2x");
        const nk_target *own = nk_program_target_table(p);
        CHECK(own == p->arch && own == &p->table);
        CHECK_INT(own->sbuf_partition_bytes, 393216);
        CHECK_INT(p->sbuf_peak, 2 * 98304 + 98304); /* a, b and their sum */
        char err[256] = "";
        CHECK_INT(nk__program_check(p, err, sizeof err), 0);
        CHECK_STR(err, "");
    }
    nk_kernel_free(k);
}

/* ---- timing: rates come from the table */

/* Seconds of one DMA descriptor of the copy kernel: 8 partitions of 8 KiB
 * contiguous on one engine at dma_engine_gbps x efficiency, efficiency
 * 8192 / (8192 + 256) [DMAbw], computed here from the formula. */
static double desc_ns(double gbps) { return 8 * 8192 / (gbps * 8192.0 / (8192.0 + 256.0)); }

TEST(target_doubled_dma_and_hbm_make_a_dma_bound_kernel_faster)
{
    nk_array x = shape_only(NK_F32, COPY_ROWS * 128, 2048);
    nk_kernel *k = nk_kernel_new("copy", k_copy);
    nk_target *fast = parse("base = trn1\nname = fast-dma\ndma_engine_gbps = 34\nhbm_gbps = 820\n");
    const nk_program *base = NULL, *quick = NULL;
    nk_options o = {NULL, 0, fast};
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &base), 0);
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o, &quick), 0);
    nk_profile *a = NULL, *b = NULL, *c = NULL;
    if (base && quick && fast) {
        CHECK_INT(nk_profile_capture(base, NULL, &a), 0);
        CHECK_INT(nk_profile_capture(quick, NULL, &b), 0);  /* the program's own table */
        CHECK_INT(nk_profile_capture(base, fast, &c), 0);   /* what-if timing of the trn1 program */
    }
    if (a && b && c) {
        /* the timelines name their tables and keep them */
        CHECK_STR(a->tl->target, "trn1");
        CHECK_STR(b->tl->target, "fast-dma");
        CHECK_STR(b->arch.name, "fast-dma");
        CHECK(b->arch.dma_engine_gbps == 34 && b->arch.hbm_gbps == 820);
        /* the first descriptor starts after the kernel's start-up (1300 ns, assumed) and the
           DMA latency (1300 ns [DMAbw]) and lasts its bytes over the engine's rate: 17 GB/s
           on trn1, 34 here */
        double ta = a->tl->total_ns, tb = b->tl->total_ns;
        nk_timeline *da = NULL, *db = NULL; /* the same timings, every descriptor kept */
        CHECK_INT(time_detail(base, NULL, &da), 0);
        CHECK_INT(time_detail(quick, NULL, &db), 0);
        if (da && db && da->nxfers && db->nxfers) {
            CHECK(da->total_ns == ta && db->total_ns == tb);
            CHECK_NEAR(da->xfers[0].start, 1300 + 1300, 0, 1e-9);
            CHECK_NEAR(da->xfers[0].end - da->xfers[0].start, desc_ns(17), 1e-12, 0);
            CHECK_NEAR(db->xfers[0].start, 1300 + 1300, 0, 1e-9);
            CHECK_NEAR(db->xfers[0].end - db->xfers[0].start, desc_ns(34), 1e-12, 0);
            CHECK_INT(db->xfers[0].bytes, 8 * 8192);
            /* 16 engines of 34 GB/s (528 GB/s at this efficiency) stay under HBM's 820:
               every descriptor runs at the engine rate */
            for (uint32_t i = 0; i < db->nxfers; i++)
                if (db->xfers[i].bytes == 8 * 8192)
                    CHECK_NEAR(db->xfers[i].end - db->xfers[i].start, desc_ns(34), 1e-9, 0);
        } else
            CHECK(!"descriptor transfers kept");
        nk__timeline_free(da);
        nk__timeline_free(db);
        /* the profile's first DMA span starts with the first descriptor */
        CHECK(a->tl->ndspans > 0 && b->tl->ndspans > 0);
        if (a->tl->ndspans && b->tl->ndspans)
            CHECK(a->tl->dspans[0].start == 1300 + 1300 && b->tl->dspans[0].start == 1300 + 1300);
        /* DMA-bound: the transfers are most of the time, so doubling both
           bandwidths nearly halves it (the fixed latencies stay) */
        CHECK(tb < ta * 0.6 && tb > ta * 0.5);
        printf("  copy of 16 x [128, 2048] fp32: %.1f us on trn1, %.1f us with 2x DMA and HBM\n", ta * 1e-3,
               tb * 1e-3);
        /* the same capacities: timing the trn1 program on the table equals
           tracing for it */
        CHECK(c->tl->total_ns == tb);
        CHECK_STR(c->arch.name, "fast-dma");
        CHECK_STR(c->prog->target, "trn1");
        /* metrics use the timeline's table: MBU over 820 GB/s */
        nk_metrics m;
        CHECK_INT(nk_profile_metrics(c, &m), 0);
        double bytes = 2.0 * COPY_ROWS * 128 * 2048 * 4; /* every byte read once and written once */
        CHECK_NEAR(m.hbm_read_bytes + m.hbm_write_bytes, bytes, 0, 0);
        CHECK_NEAR(m.mbu_estimated_percent, 100.0 * bytes / 820.0 / tb, 1e-12, 0);
        CHECK_INT(nk_profile_metrics(a, &m), 0);
        CHECK_NEAR(m.mbu_estimated_percent, 100.0 * bytes / 410.0 / ta, 1e-12, 0);
        /* insights and diff name the table each timeline was computed on */
        char *text = NULL;
        CHECK_INT(nk_profile_insights(c, 0, &text), 0);
        CHECK_CONTAINS(text, "Insights: kernel copy on fast-dma, ");
        free(text);
        text = NULL;
        CHECK_INT(nk_profile_diff(a, "base", c, "what-if", &text), 0);
        CHECK_CONTAINS(text, "a: base (kernel copy on trn1)\nb: what-if (kernel copy on fast-dma)\n");
        free(text);
    }
    nk_profile_free(a);
    nk_profile_free(b);
    nk_profile_free(c);
    nk_target_free(fast);
    nk_kernel_free(k);
}

/* ---- the program cache */

TEST(target_cache_keys_on_the_table_contents)
{
    nk_array x = shape_only(NK_F32, COPY_ROWS * 128, 2048);
    nk_kernel *k = nk_kernel_new("copy", k_copy);
    nk_target *t1 = parse("base = trn1\nname = custom\nhbm_gbps = 100\n");
    nk_target *t2 = parse("base = trn1\nname = custom\nhbm_gbps = 200\n");
    nk_target *t1b = parse("# the same values as t1\nbase = trn1\nhbm_gbps = 100\nname = custom\n");
    const nk_program *p0 = NULL, *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL;
    uint64_t compiles = 0, hits = 0;
    nk_options o0 = {"trn1", 0, NULL}, o1 = {NULL, 0, t1}, o2 = {"trn2", 0, t2}, o3 = {NULL, 0, t1b};
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o0, &p0), 0);
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o1, &p1), 0);
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o2, &p2), 0); /* the table wins over `target` */
    nk_kernel_cache_stats(k, &compiles, &hits);
    CHECK_INT(compiles, 3);
    CHECK_INT(hits, 0);
    CHECK(p0 != p1 && p1 != p2 && p0 != p2);
    if (p1 && p2) {
        /* same name, different values: separate programs with their own tables */
        CHECK_STR(p1->target, "custom");
        CHECK_STR(p2->target, "custom");
        CHECK(p1->arch->hbm_gbps == 100 && p2->arch->hbm_gbps == 200);
    }
    /* another table with equal contents finds the program */
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o3, &p3), 0);
    CHECK(p3 == p1);
    /* and the first table freed, its program stays (its own copy) */
    nk_target_free(t1);
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o3, &p4), 0);
    CHECK(p4 == p1);
    nk_kernel_cache_stats(k, &compiles, &hits);
    CHECK_INT(compiles, 3);
    CHECK_INT(hits, 2);
    if (p4)
        CHECK(p4->arch->hbm_gbps == 100);
    nk_target_free(t2);
    nk_target_free(t1b);
    nk_kernel_free(k);
}

/* ---- files keep the table */

TEST(target_program_and_profile_files_keep_a_modified_table)
{
    nk_array x = shape_only(NK_F32, 128, BIG_F);
    nk_kernel *k = nk_kernel_new("two_big_tiles", k_two_big_tiles);
    nk_target *t = parse("base = trn1\nname = wide\nsbuf_partition_bytes = 393216\nhbm_gbps = 123.5\n"
                         "pe_ghz = 3.1\n");
    nk_options o = {NULL, 0, t};
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o, &p), 0);
    char dir[] = "/tmp/nklab-target-XXXXXX", prog_path[64], prof_path[64], err[256] = "";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(prog_path, sizeof prog_path, "%s/wide.nkprog", dir);
    snprintf(prof_path, sizeof prof_path, "%s/wide.nkp", dir);
    nk_program *q = NULL;
    nk_profile *pr = NULL, *back = NULL;
    if (p) {
        /* its SBUF peak (288 KiB) exceeds trn1's: only its own table validates it */
        CHECK(p->sbuf_peak > nk_target_builtin("trn1")->sbuf_partition_bytes);
        CHECK_INT(nk_program_save(p, prog_path), 0);
        CHECK_INT(nk_program_load(prog_path, &q, err, sizeof err), 0);
        CHECK_STR(err, "");
        CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    }
    if (q) {
        CHECK_STR(nk_program_target(q), "wide");
        CHECK(q->arch == &q->table);
        CHECK(q->arch->hbm_gbps == 123.5 && q->arch->pe_ghz == 3.1);
        CHECK_INT(q->arch->sbuf_partition_bytes, 393216);
        CHECK_INT(q->sbuf_peak, p->sbuf_peak);
        nk_timeline *ta = NULL, *tb = NULL;
        CHECK_INT(time_detail(p, NULL, &ta), 0);
        CHECK_INT(time_detail(q, NULL, &tb), 0);
        if (ta && tb)
            CHECK(ta->total_ns == tb->total_ns);
        nk__timeline_free(ta);
        nk__timeline_free(tb);
    }
    if (pr) {
        CHECK_INT(nk_profile_write(pr, prof_path), 0);
        CHECK_INT(nk_profile_read(prof_path, &back, err, sizeof err), 0);
        CHECK_STR(err, "");
    }
    if (back) {
        CHECK_STR(back->arch.name, "wide");
        CHECK(back->arch.hbm_gbps == 123.5);
        CHECK_STR(back->prog->target, "wide");
        CHECK(back->prog->arch->pe_ghz == 3.1 && back->prog->arch == &back->prog->table);
        CHECK(back->tl->total_ns == pr->tl->total_ns);
        CHECK_INT(back->tl->ndspans, pr->tl->ndspans);
        for (uint32_t i = 0; i < back->tl->ndspans && i < pr->tl->ndspans; i++)
            if (back->tl->dspans[i].start != pr->tl->dspans[i].start || back->tl->dspans[i].end != pr->tl->dspans[i].end) {
                CHECK(!"DMA span times round trip exactly");
                break;
            }
    }
    nk_profile_free(back);
    nk_profile_free(pr);
    nk_program_free(q);
    unlink(prog_path);
    unlink(prof_path);
    rmdir(dir);
    nk_target_free(t);
    nk_kernel_free(k);
}

/* Replaces the TARG section of an encoded program with text. */
static int decode_with_table(const nk_program *p, const char *text, char *err, size_t errlen)
{
    nk_wr w = {0}, x = {0};
    int rc = nk__program_encode(p, &w);
    size_t phdr = 12 + (size_t)(w.p[4] | w.p[5] << 8), targ_len = 0;
    for (int i = 0; i < 8; i++)
        targ_len |= (size_t)w.p[phdr + 4 + i] << (8 * i);
    size_t rest = phdr + 12 + targ_len;
    nk__wr_bytes(&x, w.p, phdr);
    size_t s = nk__wr_begin(&x, "TARG");
    nk__wr_str(&x, text);
    nk__wr_end(&x, s);
    nk__wr_bytes(&x, w.p + rest, w.n - rest);
    if (!rc) {
        nk_rd r;
        nk_program *q = NULL;
        nk__rd_init(&r, x.p, x.n, err, errlen);
        rc = nk__program_decode(&r, &q);
        nk__program_destroy(q);
    }
    nk__wr_free(&w);
    nk__wr_free(&x);
    return rc;
}

TEST(target_decoder_checks_the_table)
{
    nk_array x = shape_only(NK_F32, COPY_ROWS * 128, 2048);
    nk_kernel *k = nk_kernel_new("copy", k_copy);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), 0);
    if (p) {
        char err[256];
        CHECK_INT(decode_with_table(p, "base = trn1\nhbm_gbps = 300\n", err, sizeof err), 0);
        CHECK_INT(decode_with_table(p, "base = trn1\nbogus = 1\n", err, sizeof err), NK_EFORMAT);
        CHECK_STR(err, "TARG: target table:2: unknown key 'bogus'");
        CHECK_INT(decode_with_table(p, "base = trn2\n", err, sizeof err), NK_EFORMAT);
        CHECK_STR(err, "TARG: the table is target 'trn2', the header names 'trn1'");
        CHECK_INT(decode_with_table(p, "base = trn1\npsum_banks = 16\n", err, sizeof err), NK_EFORMAT);
        CHECK_STR(err, "TARG: target table: psum_banks x psum_bank_bytes (16 x 2048) exceeds "
                       "psum_partition_bytes (16384)");
        /* a smaller SBUF than the program's peak fails the program's check */
        CHECK_INT(decode_with_table(p, "base = trn1\nsbuf_partition_bytes = 20480\n", err, sizeof err),
                  NK_EFORMAT);
        CHECK_STR(err, "SBUF peak 16384 outside 0..4096 bytes per partition"); /* 2 buffers x 8 KiB */
    }
    nk_kernel_free(k);
}

/* ---- compiling from shapes alone */

TEST(target_compile_needs_shapes_and_dtypes_only)
{
    int64_t shape[2] = {COPY_ROWS * 128, 2048};
    nk_array with;
    CHECK_INT(nk_array_alloc(&with, NK_F32, 2, shape), 0);
    nk_array without = shape_only(NK_F32, shape[0], shape[1]);
    nk_kernel *k1 = nk_kernel_new("copy", k_copy), *k2 = nk_kernel_new("copy", k_copy);
    const nk_program *a = NULL, *b = NULL;
    CHECK_INT(nk_kernel_compile(k1, &with, 1, NULL, &a), 0);
    CHECK_INT(nk_kernel_compile(k2, &without, 1, NULL, &b), 0);
    /* the same key: the cached program serves both */
    const nk_program *c = NULL;
    CHECK_INT(nk_kernel_compile(k1, &without, 1, NULL, &c), 0);
    CHECK(c == a);
    if (a && b) {
        char *ta = NULL, *tb = NULL;
        CHECK_INT(nk_program_dump(a, &ta), 0);
        CHECK_INT(nk_program_dump(b, &tb), 0);
        if (ta && tb)
            CHECK_STR(ta, tb);
        free(ta);
        free(tb);
        /* running needs the values: refused without them */
        nk_array out;
        nk_array_alloc(&out, NK_F32, 2, shape);
        CHECK_INT(nk_program_run(b, &without, 1, &out, 1), NK_EDTYPE);
        CHECK_INT(nk_program_run(b, &with, 1, &out, 1), 0);
        nk_array_free(&out);
    }
    nk_array_free(&with);
    nk_kernel_free(k1);
    nk_kernel_free(k2);
}

/* ---- files of format version 1 (tests/golden/v1_*, written by nklab 0.1.0
 * before programs stored their table) stay readable */

TEST(target_version_1_program_file_reads_with_its_builtin_table)
{
    nk_program *q = NULL, *r = NULL;
    char err[256] = "";
    CHECK_INT(nk_program_load("tests/golden/v1_tensor_exp_trn2.nkprog", &q, err, sizeof err), 0);
    CHECK_STR(err, "");
    if (!q)
        return;
    /* tensor_exp of [128, 64] on trn2: load, exp, store */
    CHECK_STR(q->kernel, "tensor_exp");
    CHECK_STR(q->target, "trn2");
    CHECK(q->arch == &q->table && q->arch->pe_ghz == 2.4 && q->arch->hbm_gbps == 375);
    CHECK_INT(q->ninstr, 3);
    CHECK_INT(q->instrs[0].op, NK_OP_LOAD);
    CHECK_INT(q->instrs[1].op, NK_OP_ACTIVATION);
    CHECK_INT(q->instrs[1].func, NK_ACT_EXP);
    CHECK_INT(q->instrs[2].op, NK_OP_STORE);
    CHECK_INT(q->instrs[2].ndep, 1);
    CHECK_INT(q->deps[q->instrs[2].dep_off], 1);
    CHECK_INT(nk__program_check(q, err, sizeof err), 0);
    /* saved again it is version 2, and reads back the same */
    char dir[] = "/tmp/nklab-v1-XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/again.nkprog", dir);
    CHECK_INT(nk_program_save(q, path), 0);
    CHECK_INT(nk_program_load(path, &r, err, sizeof err), 0);
    if (r) {
        char *a = NULL, *b = NULL;
        CHECK_INT(nk_program_dump(q, &a), 0);
        CHECK_INT(nk_program_dump(r, &b), 0);
        if (a && b)
            CHECK_STR(a, b);
        free(a);
        free(b);
    }
    uint8_t *d = NULL;
    size_t n = 0;
    CHECK_INT(nk__file_read_all(path, &d, &n, err, sizeof err), 0);
    CHECK(d && n > 12 && d[8] == NK_FORMAT_VERSION);
    free(d);
    nk_program_free(r);
    nk_program_free(q);
    unlink(path);
    rmdir(dir);
}

TEST(target_version_1_profile_reads_with_its_values)
{
    nk_profile *pr = NULL, *back = NULL;
    char err[256] = "";
    CHECK_INT(nk_profile_read("tests/golden/v1_tensor_exp_trn2.profile", &pr, err, sizeof err), 0);
    CHECK_STR(err, "");
    if (!pr)
        return;
    /* the values the version-1 writer printed when it made the file */
    CHECK(pr->tl->total_ns == 3192.8405797101445);
    CHECK_INT(pr->tl->nevents, 3);
    /* its 32 descriptor transfers, read as the DMA spans they make: the load's and the store's */
    CHECK_INT(pr->tl->nxfers, 0);
    CHECK_INT(pr->tl->ndspans, 2);
    uint32_t ndesc = 0;
    for (uint32_t i = 0; i < pr->tl->ndspans; i++)
        ndesc += pr->tl->dspans[i].descriptors;
    CHECK_INT(ndesc, 32);
    CHECK_INT(pr->tl->ncounters, 3);
    CHECK_INT(pr->tl->counters[0].n, 8);
    CHECK_STR(pr->arch.name, "trn2");
    CHECK_STR(pr->tl->target, "trn2");
    CHECK_STR(pr->prog->target, "trn2");
    CHECK(pr->created_unix == 1700000000);
    CHECK_INT(pr->prog->nfiles, 2); /* the kernel's name (arguments' location), then its source */
    CHECK_STR(pr->sources[1].path, "kernels/tensor_exp.c");
    CHECK_CONTAINS(pr->sources[1].text, "nk_kernel_tensor_exp");
    /* written again (version 2) and read back: the same timeline, bit for bit */
    char dir[] = "/tmp/nklab-v1-XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/again.nkp", dir);
    CHECK_INT(nk_profile_write(pr, path), 0);
    CHECK_INT(nk_profile_read(path, &back, err, sizeof err), 0);
    if (back) {
        const nk_timeline *a = pr->tl, *b = back->tl;
        CHECK(a->total_ns == b->total_ns && a->nevents == b->nevents && a->ndspans == b->ndspans);
        CHECK(!memcmp(a->events, b->events, a->nevents * sizeof *a->events));
        CHECK(!memcmp(a->dspans, b->dspans, a->ndspans * sizeof *a->dspans));
        CHECK(!memcmp(a->instr_start, b->instr_start, pr->prog->ninstr * sizeof(double)));
        CHECK(!memcmp(a->instr_end, b->instr_end, pr->prog->ninstr * sizeof(double)));
        for (uint32_t c = 0; c < a->ncounters && c < b->ncounters; c++) {
            CHECK_INT(a->counters[c].n, b->counters[c].n);
            CHECK(!memcmp(a->counters[c].t, b->counters[c].t, a->counters[c].n * sizeof(double)));
            CHECK(!memcmp(a->counters[c].value, b->counters[c].value, a->counters[c].n * sizeof(double)));
        }
    }
    nk_profile_free(back);
    nk_profile_free(pr);
    unlink(path);
    rmdir(dir);
}

/* `nklab target show` names the source of every built-in value: each key of
 * the table has one on both targets, and a value changed by a file has none. */
TEST(target_format_sources_cover_every_key)
{
    for (int t = 0; t < 2; t++) {
        const char *name = t ? "trn2" : "trn1";
        char *text = NULL;
        CHECK_INT(nk__arch_format_sources(nk__arch_get(name), &text), 0);
        int lines = 0;
        for (char *l = text; l && *l; l = strchr(l, '\n') + 1) {
            char key[64];
            if (*l != '#' && strncmp(l, "base", 4) && strncmp(l, "name ", 5) && sscanf(l, "%63s", key) == 1) {
                lines++;
                const char *src = nk__arch_source(name, key);
                if (!src)
                    nk_test_fail(__FILE__, __LINE__, "%s: no source for %s", name, key);
                else {
                    /* this line's comment ends with it (not a later line's) */
                    char want[96], line[256];
                    snprintf(want, sizeof want, "; %s", src);
                    size_t len = strcspn(l, "\n");
                    snprintf(line, sizeof line, "%.*s", (int)len, l);
                    const char *semi = strchr(line, ';');
                    CHECK(semi && !strcmp(semi, want));
                    if (!semi || strcmp(semi, want))
                        printf("  %s: %s\n", name, line);
                }
            }
            if (!strchr(l, '\n'))
                break;
        }
        CHECK(lines > 40);
        free(text);
    }
    CHECK_STR(nk__arch_source("trn2", "pe_mm_init_cycles"), "carried [A2]");
    CHECK_STR(nk__arch_source("trn2", "dve_fast16_copy_factor"), "[A3]");
    CHECK_STR(nk__arch_source("trn1", "dma_engine_gbps"), "[DMAbw]");
    nk_arch a = *nk__arch_get("trn1");
    a.hbm_gbps = 205;
    char *text = NULL;
    CHECK_INT(nk__arch_format_sources(&a, &text), 0);
    CHECK(text && strstr(text, "# HBM bandwidth per core, GB/s\n") != NULL);
    CHECK(text && strstr(text, "# DMA trigger-to-start latency, ns; [DMAbw]\n") != NULL);
    free(text);
    /* the file format itself (program and profile files) carries no sources */
    CHECK_INT(nk__arch_format(nk__arch_get("trn1"), &text), 0);
    CHECK(text && strstr(text, "; [A2]") == NULL);
    free(text);
}
