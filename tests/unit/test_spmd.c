/*
 * test_spmd.c - launch grids: instances traced one by one, sharing the HBM
 * tensors; placed on cores as NKI documents; timed per core, a core's
 * instances one after another; kept by the program file.
 */
#include "test.h"
#include "kernels.h"
#include "nkint.h"
#include "profile/profile.h"
#include "timing/timing.h"
#include "view/view.h"

#include <stdlib.h>
#include <unistd.h>

#define U32 0x1.0p-24

static nk_array make2(nk_dtype dt, int64_t d0, int64_t d1, uint64_t seed)
{
    nk_array a;
    int64_t shape[2] = {d0, d1};
    if (nk_array_alloc(&a, dt, 2, shape))
        memset(&a, 0, sizeof a);
    else
        nk_fill_uniform(&a, seed, -1, 1);
    return a;
}

static nk_options grid_opts(const char *target, int g0, int g1, int nc0)
{
    nk_options o = {target, 0};
    o.grid[0] = g0;
    o.grid[1] = g1;
    o.grid_nc[0] = nc0;
    return o;
}

/* Runs a built-in kernel on a grid and compares with its reference; returns
 * the worst |got - ref| - (atol + rtol |ref|) (<= 0 passes). */
static double run_vs_ref(const char *name, const nk_array *args, int nargs, const nk_options *o)
{
    const nk_kernel_info *ki = nk_builtin_kernel(name);
    CHECK(ki != NULL);
    if (!ki)
        return INFINITY;
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    nk_array out;
    int nouts = 0;
    int rc = nk_call(k, args, nargs, o, &out, 1, &nouts);
    CHECK_INT(rc, 0);
    if (rc) {
        printf("  %s: %s\n", name, nk_kernel_error(k));
        nk_kernel_free(k);
        return INFINITY;
    }
    size_t n = (size_t)(nk_array_nbytes(&out) / (size_t)nk_dtype_size(out.dtype));
    double *got = malloc(n * sizeof *got), *ref = malloc(n * sizeof *ref);
    double worst = -INFINITY;
    if (got && ref && !nk_ref_decode(&out, got) && !ki->reference(args, nargs, &ref, &n, 1))
        for (size_t i = 0; i < n; i++) {
            double e = fabs(got[i] - ref[i]) - (ki->atol + ki->rtol * fabs(ref[i]));
            worst = e > worst ? e : worst;
        }
    else
        worst = INFINITY;
    free(got);
    free(ref);
    nk_array_free(&out);
    nk_kernel_free(k);
    return worst;
}

TEST(spmd_kernels_match_their_references_on_any_grid)
{
    nk_array a = make2(NK_F32, 250, 1000, 1), b = make2(NK_F32, 250, 1000, 2);
    nk_array ab[2] = {a, b};
    nk_array l = make2(NK_BF16, 384, 256, 3), r = make2(NK_BF16, 384, 1000, 4);
    nk_array lr[2] = {l, r};
    const char *targets[2] = {"trn1", "trn2"};
    /* no grid, 1-D, 2-D, more instances than tiles, and nl.nc annotations on trn2 */
    int grids[][3] = {{0, 0, 0}, {2, 0, 0}, {2, 2, 0}, {3, 5, 0}, {2, 1, 2}, {4, 2, -2}};
    for (int t = 0; t < 2; t++)
        for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
            if (grids[g][2] && t == 0)
                continue; /* nl.nc(2) is refused on trn1 (below) */
            nk_options o = grid_opts(targets[t], grids[g][0], grids[g][1], grids[g][2]);
            double e1 = run_vs_ref("spmd_tensor_add", ab, 2, &o), e2 = run_vs_ref("spmd_matmul", lr, 2, &o);
            if (!(e1 <= 0) || !(e2 <= 0))
                nk_test_fail(__FILE__, __LINE__, "%s grid [%d, %d] nc %d: excess error add %g, matmul %g",
                             targets[t], grids[g][0], grids[g][1], grids[g][2], e1, e2);
        }
    nk_array_free(&a);
    nk_array_free(&b);
    nk_array_free(&l);
    nk_array_free(&r);
}

static const nk_program *compile(nk_kernel *k, const nk_array *args, int nargs, const nk_options *o)
{
    const nk_program *p = NULL;
    int rc = nk_kernel_compile(k, args, nargs, o, &p);
    if (rc)
        nk_test_fail(__FILE__, __LINE__, "compile: %s", nk_kernel_error(k));
    return rc ? NULL : p;
}

/* NKI's SPMD grid example: kernel[nl.spmd_dim(nl.nc(2), 2), 2] puts
 * instances [0..1, *] on core 0 and [2..3, *] on core 1;
 * kernel[nl.spmd_dim(2, nl.nc(2)), 2] puts [0, *], [2, *] on core 0. An
 * unannotated grid alternates cores; on trn1 everything is on core 0. */
TEST(spmd_instances_are_placed_on_cores_as_nki_documents)
{
    nk_array a = make2(NK_F32, 512, 1024, 1), b = make2(NK_F32, 512, 1024, 2);
    nk_array ab[2] = {a, b};
    nk_kernel *k = nk_kernel_new("spmd_tensor_add", nk_kernel_spmd_tensor_add);
    struct { const char *target; int nc; uint8_t core[8]; uint32_t ncores; } cases[] = {
        {"trn2", 2, {0, 0, 0, 0, 1, 1, 1, 1}, 2},
        {"trn2", -2, {0, 0, 1, 1, 0, 0, 1, 1}, 2},
        {"trn2", 0, {0, 1, 0, 1, 0, 1, 0, 1}, 2},
        {"trn1", 0, {0, 0, 0, 0, 0, 0, 0, 0}, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        nk_options o = grid_opts(cases[c].target, 4, 2, cases[c].nc);
        const nk_program *p = compile(k, ab, 2, &o);
        if (!p)
            continue;
        CHECK_INT(p->ninst, 8);
        CHECK_INT(p->grid_ndim, 2);
        CHECK_INT(p->ncores, cases[c].ncores);
        for (uint32_t i = 0; i < 8; i++)
            if (nk__inst_core(p, i) != cases[c].core[i])
                nk_test_fail(__FILE__, __LINE__, "case %zu: instance %u on core %u, want %u", c, i,
                             nk__inst_core(p, i), cases[c].core[i]);
        /* every instance traced: one output, its instructions in instance order */
        CHECK_INT(p->noutputs, 1);
        uint32_t seen = 0;
        for (uint32_t i = 0; i < p->ninstr; i++) {
            CHECK(i == 0 || p->instrs[i].inst >= p->instrs[i - 1].inst);
            seen |= 1u << p->instrs[i].inst;
        }
        CHECK_INT(seen, 0xff);
    }
    nk_kernel_free(k);
    nk_array_free(&a);
    nk_array_free(&b);
}

/* The device time without the launch: a launch starts and tears down each
 * core once, not each instance (docs/timing-model.md). */
static double device_ns(const nk_program *p)
{
    nk_timeline *tl = NULL;
    double t = nk__time_program(p, NULL, &tl) ? -1 : tl->total_ns - nk__timeline_launch_ns(tl);
    nk__timeline_free(tl);
    return t;
}

/* The mechanism, against its documented behaviour: a core runs its
 * instances one after another (trn1: one core per launch), and trn2's two
 * cores run theirs side by side, each with its own engines and DMA. With
 * one 128 x 512 tile per instance, every instance's timeline is that of the
 * one-tile kernel, so n instances on c cores take ceil(n / c) times as
 * long, to rounding. */
TEST(spmd_timing_runs_a_cores_instances_in_sequence_and_cores_in_parallel)
{
    nk_kernel *k = nk_kernel_new("spmd_tensor_add", nk_kernel_spmd_tensor_add);
    const char *targets[2] = {"trn1", "trn2"};
    for (int t = 0; t < 2; t++) {
        nk_array a1 = {NK_F32, 2, {128, 512}, NULL}, one[2] = {a1, a1};
        nk_options o1 = grid_opts(targets[t], 0, 0, 0);
        const nk_program *p1 = compile(k, one, 2, &o1);
        double t1 = p1 ? device_ns(p1) : -1;
        for (int n = 2; n <= 8; n *= 2) {
            nk_array an = {NK_F32, 2, {128 * (int64_t)n, 512}, NULL}, args[2] = {an, an};
            nk_options o = grid_opts(targets[t], n, 0, 0);
            const nk_program *p = compile(k, args, 2, &o);
            if (!p || t1 <= 0)
                continue;
            double tn = device_ns(p), want = t1 * (double)((n + (t ? 1 : 0)) / (t ? 2 : 1));
            CHECK_NEAR(tn, want, 1e-9, 1e-6);
            printf("  %s: %d instances of one [128, 512] tile: %.2f us (one instance %.2f us)\n", targets[t], n,
                   tn * 1e-3, t1 * 1e-3);
        }
    }
    nk_kernel_free(k);
}

/* The timeline keeps each core's engines apart: on trn2 two instances'
 * Vector instructions overlap in time, on trn1 they never do. */
TEST(spmd_timeline_shows_cores_side_by_side)
{
    nk_kernel *k = nk_kernel_new("spmd_tensor_add", nk_kernel_spmd_tensor_add);
    nk_array a = {NK_F32, 2, {256, 512}, NULL}, args[2] = {a, a};
    for (int t = 0; t < 2; t++) {
        nk_options o = grid_opts(t ? "trn2" : "trn1", 2, 0, 0);
        const nk_program *p = compile(k, args, 2, &o);
        nk_timeline *tl = NULL;
        if (!p || nk__time_program(p, NULL, &tl))
            continue;
        double s[2] = {INFINITY, INFINITY}, e[2] = {0, 0};
        for (uint32_t i = 0; i < p->ninstr; i++) {
            uint32_t g = p->instrs[i].inst;
            s[g] = fmin(s[g], tl->instr_start[i]);
            e[g] = fmax(e[g], tl->instr_end[i]);
        }
        if (t)
            CHECK(s[1] < e[0]); /* side by side */
        else
            CHECK(s[1] >= e[0]); /* one after the other */
        nk__timeline_free(tl);
    }
    nk_kernel_free(k);
}

TEST(spmd_program_file_keeps_the_grid)
{
    nk_kernel *k = nk_kernel_new("spmd_matmul", nk_kernel_spmd_matmul);
    nk_array l = {NK_BF16, 2, {256, 256}, NULL}, r = {NK_BF16, 2, {256, 1024}, NULL}, args[2] = {l, r};
    nk_options o = grid_opts("trn2", 2, 2, -2);
    const nk_program *p = compile(k, args, 2, &o);
    char path[] = "/tmp/nklab_spmd_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    if (p && fd >= 0) {
        CHECK_INT(nk_program_save(p, path), 0);
        nk_program *q = NULL;
        char err[256] = "";
        CHECK_INT(nk_program_load(path, &q, err, sizeof err), 0);
        if (q) {
            CHECK_INT(q->ninst, 4);
            CHECK_INT(q->grid_ndim, 2);
            CHECK_INT(q->grid[0], 2);
            CHECK_INT(q->grid_nc[0], -2);
            CHECK_INT(q->ncores, 2);
            for (uint32_t i = 0; i < 4; i++)
                CHECK_INT(nk__inst_core(q, i), nk__inst_core(p, i));
            int same = q->ninstr == p->ninstr;
            for (uint32_t i = 0; same && i < p->ninstr; i++)
                same = q->instrs[i].inst == p->instrs[i].inst;
            CHECK(same);
            CHECK_NEAR(device_ns(q), device_ns(p), 0, 0);
            nk_program_free(q);
        }
    }
    unlink(path);
    nk_kernel_free(k);
}

/* ---- errors */

static int g_line, g_case;

static void k_spmd_bad(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    static nk_tensor kept; /* a tile carried from one instance to the next */
    int id = nk_program_id(nc, 0);
    switch (g_case) {
    case 0: /* an axis the grid does not have */
        g_line = __LINE__; nk_program_id(nc, 1);
        break;
    case 1: { /* instances create different HBM tensors */
        g_line = __LINE__; nk_tensor o = nk_ndarray(nc, NK_SHAPE(128, id ? 64 : 32), NK_F32, NK_SHARED_HBM);
        nk_store(nc, o, nk_load(nc, nk_ix(nc, a[0], NK_ALL, nk_r(0, id ? 64 : 32))));
        nk_return(nc, o);
        return;
    }
    case 2: /* a tile of another instance */
        if (id == 0)
            kept = nk_load(nc, a[0]);
        else {
            g_line = __LINE__; nk_store(nc, a[0], kept);
        }
        break;
    case 3: { /* only instance 0 returns */
        nk_tensor o = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SHARED_HBM);
        g_line = __LINE__; nk_store(nc, o, nk_load(nc, a[0]));
        if (id == 0)
            nk_return(nc, o);
        return;
    }
    }
    nk_store(nc, a[0], nk_load(nc, a[0]));
}

TEST(spmd_errors_name_the_line_and_the_instance)
{
    nk_array x = {NK_F32, 2, {128, 64}, NULL};
    const char *want[4] = {
        "nk_program_id: axis 1 is not an axis of the launch grid (1 axis) (program instance [0])",
        "nk_ndarray: HBM tensor 0 of this instance is [128, 64] float32, but instance 0's",
        "uses a tile",
        ("this instance returned 0 outputs, instance 0 returned 1: every instance of a launch grid returns the same "
         "tensors (program instance [1])"),
    };
    for (g_case = 0; g_case < 4; g_case++) {
        nk_kernel *k = nk_kernel_new("spmd_bad", k_spmd_bad);
        nk_options o = grid_opts("trn1", 2, 0, 0);
        const nk_program *p = NULL;
        CHECK(nk_kernel_compile(k, &x, 1, &o, &p) < 0);
        char at[64];
        snprintf(at, sizeof at, "%s:%d: ", __FILE__, g_line);
        CHECK_CONTAINS(nk_kernel_error(k), at);
        CHECK_CONTAINS(nk_kernel_error(k), want[g_case]);
        nk_kernel_free(k);
    }
    /* the grid itself */
    struct { const char *target; int g[3], nc[3]; const char *msg; } bad[] = {
        {"trn1", {2, 2, 0}, {2, 0, 0}, "launch grid: nl.nc(2) on axis 0, but a launch on trn1 spreads over 1 "
                                       "physical NeuronCore (target key spmd_cores)"},
        {"trn2", {3, 0, 0}, {2, 0, 0}, "launch grid: axis 0 has 3 instances, not a multiple of nl.nc(2)"},
        {"trn2", {0, 2, 0}, {0, 0, 0}, "launch grid: axis 1 is 2; the grid's sizes are positive and leading "
                                       "(all zero: no grid)"},
        {"trn2", {2, 2, 0}, {2, 2, 0}, "launch grid: nl.nc on axes 0 and 1; one axis spreads over the cores"},
        {"trn2", {2, 0, 0}, {0, 2, 0}, "launch grid: nl.nc(2) on axis 1, which the grid does not have"},
        {"trn1", {-1, 0, 0}, {0, 0, 0}, "launch grid: axis 0 is -1"},
        {"trn1", {65536, 1, 0}, {0, 0, 0}, "launch grid: more than 65535 program instances"},
    };
    g_case = 4;
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        nk_kernel *k = nk_kernel_new("spmd_bad", k_spmd_bad);
        nk_options o = {bad[c].target, 0};
        memcpy(o.grid, bad[c].g, sizeof o.grid);
        memcpy(o.grid_nc, bad[c].nc, sizeof o.grid_nc);
        const nk_program *p = NULL;
        CHECK(nk_kernel_compile(k, &x, 1, &o, &p) < 0);
        CHECK_CONTAINS(nk_kernel_error(k), bad[c].msg);
        nk_kernel_free(k);
    }
}

/* Without a grid a kernel sees one instance: program_id 0, num_programs 1,
 * program_ndim 0 (NKI's LNC overview). A grid is part of the signature. */
static int g_seen[3];
static void k_spmd_ids(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    g_seen[0] = nk_program_id(nc, 0);
    g_seen[1] = nk_num_programs(nc, 0);
    g_seen[2] = nk_program_ndim(nc);
    nk_store(nc, a[0], nk_load(nc, a[0]));
}

TEST(spmd_ids_without_a_grid_and_the_cache)
{
    nk_array x = {NK_F32, 2, {128, 64}, NULL};
    nk_kernel *k = nk_kernel_new("ids", k_spmd_ids);
    const nk_program *p = NULL, *q = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), 0);
    CHECK(g_seen[0] == 0 && g_seen[1] == 1 && g_seen[2] == 0);
    nk_options o = grid_opts("trn1", 3, 0, 0);
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o, &q), 0);
    CHECK(q != p && q && q->ninst == 3);
    CHECK(g_seen[0] == 2 && g_seen[1] == 3 && g_seen[2] == 1); /* the last instance traced */
    uint64_t compiles = 0, hits = 0;
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o, &q), 0);
    nk_kernel_cache_stats(k, &compiles, &hits);
    CHECK_INT(compiles, 2);
    CHECK_INT(hits, 1);
    nk_kernel_free(k);
}

/* ---- the profile's surfaces: a row group per core */

TEST(spmd_profile_shows_a_row_group_per_core)
{
    nk_kernel *k = nk_kernel_new("spmd_tensor_add", nk_kernel_spmd_tensor_add);
    nk_array a = {NK_F32, 2, {256, 1024}, NULL}, args[2] = {a, a};
    nk_options o = grid_opts("trn2", 2, 2, 0);
    const nk_program *p = compile(k, args, 2, &o);
    nk_profile *pr = NULL;
    if (!p || nk_profile_capture(p, NULL, &pr)) {
        CHECK(0);
        nk_kernel_free(k);
        return;
    }
    nk_view_rows rows;
    CHECK_INT(nk__view_rows_build(p, pr->tl, &rows), 0);
    CHECK_INT(rows.ncores, 2);
    uint32_t per_core[2] = {0, 0};
    for (uint32_t r = 0; r < rows.n; r++)
        per_core[rows.row[r].core % 2]++;
    CHECK(per_core[0] > NK_ENGINE_DMA && per_core[1] > NK_ENGINE_DMA); /* engines and DMA queues each */
    CHECK_STR(rows.row[per_core[0] + 1].name, "NC1 Vector");
    /* every event lands in its own core's group */
    for (uint32_t e = 0; e < pr->tl->nevents; e++) {
        const nk_event *ev = &pr->tl->events[e];
        const nk_view_row *r = &rows.row[nk__view_event_row(&rows, ev)];
        if (r->core != nk__instr_core(p, &p->instrs[ev->instr]) || r->engine != ev->engine) {
            nk_test_fail(__FILE__, __LINE__, "event %u on row %s", e, r->name);
            break;
        }
    }
    nk__view_rows_free(&rows);
    nk_text tx = {0}, pf = {0}, csv = {0}, js = {0};
    CHECK_INT(nk__view_timeline(pr, 100, &tx), 0);
    CHECK_CONTAINS(tx.s, "\nNC1 Vector   |");
    CHECK_INT(nk__export_perfetto(pr, NULL, &pf), 0);
    CHECK_CONTAINS(pf.s, "\"pid\":2,\"name\":\"process_name\"");
    CHECK_CONTAINS(pf.s, "{\"ph\":\"X\",\"pid\":2,");
    CHECK_INT(nk__export_csv(pr, NULL, &csv), 0);
    CHECK_CONTAINS(csv.s, ",deps,core,instance,kernel,call,lowered_from\r\n");
    CHECK_INT(nk__export_json(pr, NULL, &js), 0);
    CHECK_CONTAINS(js.s, "\"spmd\":{\"grid\":[2,2],\"nc\":[0,0],\"cores\":2,\"instance_core\":[0,1,0,1]}");
    CHECK_CONTAINS(js.s, "\"core\":1,\"instance\":3");
    char *sum = NULL;
    CHECK_INT(nk_profile_summary(pr, NULL, 0, &sum), 0);
    CHECK_CONTAINS(sum, "grid          [2, 2]: 4 program instances on 2 NeuronCores\n  NC0         2 instances, busy");
    free(sum);
    nk__text_free(&tx);
    nk__text_free(&pf);
    nk__text_free(&csv);
    nk__text_free(&js);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* ---- HBM regions: rows x bytes within a row */

TEST(spmd_hbm_regions_separate_tiles_side_by_side)
{
    nk_program p;
    nk_bufinfo bufs[2];
    memset(&p, 0, sizeof p);
    memset(bufs, 0, sizeof bufs);
    bufs[1].mem = NK_SHARED_HBM;
    bufs[1].dtype = NK_F32;
    bufs[1].ndim = 2;
    bufs[1].shape[0] = 256;
    bufs[1].shape[1] = 1024;
    p.bufs = bufs;
    p.nbufs = 2;
    nk_tensor left = {0}, right = {0}, wrap = {0}, below = {0};
    /* out[0:128, 0:512] and out[0:128, 512:1024] */
    left.buf = right.buf = wrap.buf = below.buf = 1;
    left.mem = right.mem = wrap.mem = below.mem = NK_SHARED_HBM;
    left.dtype = right.dtype = wrap.dtype = below.dtype = NK_F32;
    left.ndim = right.ndim = below.ndim = 2;
    left.shape[0] = right.shape[0] = below.shape[0] = 128;
    left.shape[1] = right.shape[1] = below.shape[1] = 512;
    left.stride[0] = right.stride[0] = below.stride[0] = 1024;
    left.stride[1] = right.stride[1] = below.stride[1] = 1;
    right.off = 512;
    below.off = 128 * 1024;
    /* a flat view of 1000 elements from column 512 wraps into the next row */
    wrap.ndim = 1;
    wrap.shape[0] = 1000;
    wrap.stride[0] = 1;
    wrap.off = 512;
    nk__region l = nk__region_of_tensor(&p, &left), r = nk__region_of_tensor(&p, &right),
               w = nk__region_of_tensor(&p, &wrap), b = nk__region_of_tensor(&p, &below);
    CHECK(!nk__regions_overlap(&l, &r));
    CHECK(!nk__regions_overlap(&l, &b) && !nk__regions_overlap(&r, &b));
    CHECK(l.p0 == 0 && l.p1 == 128 && l.b0 == 0 && l.b1 == 2048);
    CHECK(r.b0 == 2048 && r.b1 == 4096);
    CHECK(nk__regions_overlap(&w, &l) && nk__regions_overlap(&w, &r)); /* whole rows 0 and 1 */
    CHECK(w.p0 == 0 && w.p1 == 2 && w.b0 == 0 && w.b1 == 4096);
}

/* Instances with nothing to do (more instances than tiles) finish at once,
 * also when one is the first on its core. */
TEST(spmd_idle_instances_do_not_stall_their_core)
{
    nk_kernel *k = nk_kernel_new("spmd_matmul", nk_kernel_spmd_matmul);
    nk_array l = {NK_BF16, 2, {1024, 256}, NULL}, r = {NK_BF16, 2, {1024, 1024}, NULL}, args[2] = {l, r};
    int ncs[3] = {0, 2, -2};
    double t22 = -1;
    nk_options o22 = grid_opts("trn2", 2, 2, 0);
    const nk_program *p22 = compile(k, args, 2, &o22);
    if (p22)
        t22 = device_ns(p22);
    for (int c = 0; c < 3; c++) {
        nk_options o = grid_opts("trn2", 4, 2, ncs[c]); /* instances [0, *] and [2, *] have no rows */
        const nk_program *p = compile(k, args, 2, &o);
        if (!p)
            continue;
        uint32_t n0 = 0;
        for (uint32_t i = 0; i < p->ninstr; i++)
            n0 += p->instrs[i].inst == 0;
        CHECK_INT(n0, 0);
        double t = device_ns(p);
        CHECK(t > 0);
        /* the working instances are [1, *] and [3, *]: two per core, except with nl.nc minor
           (core = row index % 2), which puts all four on core 1 */
        if (ncs[c] != -2)
            CHECK_NEAR(t, t22, 1e-9, 0);
        else
            CHECK_NEAR(t, 2 * t22, 1e-9, 0);
    }
    nk_kernel_free(k);
}

/* Spills inserted by the compile step belong to the instance whose tile they
 * move: each instance of this kernel holds four [128, 12288] fp32 tiles at
 * once (192 KiB a partition where 176 KiB are free). */
static void k_spmd_spill(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    int64_t F = a[0].shape[1], base = 512 * (int64_t)nk_program_id(nc, 0);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(a[0].shape[0], F), NK_F32, NK_SHARED_HBM);
    nk_tensor t[4];
    for (int i = 0; i < 4; i++)
        t[i] = nk_load(nc, nk_ix(nc, a[0], nk_r(base + i * 128, base + i * 128 + 128)));
    for (int i = 0; i < 4; i++)
        nk_store(nc, nk_ix(nc, out, nk_r(base + i * 128, base + i * 128 + 128)), t[i]);
    nk_return(nc, out);
}

TEST(spmd_spills_stay_in_their_instance)
{
    nk_array x;
    int64_t shape[2] = {1024, 12288};
    CHECK_INT(nk_array_alloc(&x, NK_F32, 2, shape), 0);
    nk_fill_uniform(&x, 5, -1, 1);
    for (int t = 0; t < 2; t++) {
        nk_kernel *k = nk_kernel_new("spmd_spill", k_spmd_spill);
        nk_options o = grid_opts(t ? "trn2" : "trn1", 2, 0, 0);
        const nk_program *p = compile(k, &x, 1, &o);
        if (p) {
            uint32_t spills[2] = {0, 0};
            for (uint32_t i = 0; i < p->ninstr; i++)
                if (p->instrs[i].flags & NK_IF_SPILL)
                    spills[p->instrs[i].inst % 2]++;
            uint32_t want = t ? 0 : 2; /* trn2's SBUF holds all four (208 KiB free) */
            CHECK(spills[0] == want && spills[1] == want);
            CHECK(device_ns(p) > 0);
        }
        nk_array out;
        int nout = 0;
        CHECK_INT(nk_call(k, &x, 1, &o, &out, 1, &nout), 0);
        if (nout == 1) {
            CHECK(!memcmp(out.data, x.data, nk_array_nbytes(&x)));
            nk_array_free(&out);
        }
        nk_kernel_free(k);
    }
    nk_array_free(&x);
}
