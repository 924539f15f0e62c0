/*
 * test_insights.c - the profile analysis, every rule, the reports and
 * `nklab diff`'s comparison.
 *
 * Two kinds of evidence: a hand-written timeline whose every number is
 * worked out below (independent of the timing model), and kernels written to
 * trigger one rule each under the real timing model, whose evidence numbers
 * are recomputed here from the program and the timeline by brute force.
 */
#include "test.h"
#include "kernels.h"
#include "insights/insights.h"
#include "core/vbuf.h"
#include "profile/profile.h"

#include <stdlib.h>

/* The rewrite of tensor_exp that the insights suggest (a user-kernel file). */
#include "variants/tensor_exp.c"

/* ---------------------------------------------------------------- fixtures */

/* Profiles in trace order: the rules are tested on timelines whose
 * instruction indices follow the kernel's text (the scheduler has its own
 * tests). */
static nk_profile *capture(const char *name, nk_kernel_fn fn, const nk_array *args, int nargs)
{
    nk_kernel *k = nk_kernel_new(name, fn);
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    nk_options o = {NULL, 0, NULL, NK_SCHED_TRACE_ORDER};
    if (nk_kernel_compile(k, args, nargs, &o, &p))
        printf("  compile %s: %s\n", name, nk_kernel_error(k));
    else if (nk_profile_capture(p, NULL, &pr))
        pr = NULL;
    nk_kernel_free(k);
    return pr;
}

/* Profile of fn on float32/bf16 zero inputs of the given 2-D shapes. */
static nk_profile *capture2(const char *name, nk_kernel_fn fn, int n, const int64_t (*shape)[2], const nk_dtype *dt)
{
    nk_array a[4];
    for (int i = 0; i < n; i++)
        nk_array_alloc(&a[i], dt ? dt[i] : NK_F32, 2, shape[i]);
    nk_profile *pr = capture(name, fn, a, n);
    for (int i = 0; i < n; i++)
        nk_array_free(&a[i]);
    return pr;
}

static nk_insights *insights_of(const nk_profile *pr)
{
    nk_insights *ins = NULL;
    if (!pr)
        return NULL;
    int rc = nk__insights_build(pr, &ins);
    if (rc)
        printf("  nk__insights_build: %s\n", nk_strerror(rc));
    return ins;
}

static double evidence(const nk_finding *f, const char *name, int unit)
{
    for (int k = 0; k < f->nev; k++)
        if (!strcmp(f->ev[k].name, name) && f->ev[k].unit == unit)
            return f->ev[k].value;
    return NAN;
}

static int has_line(const nk_finding *f, int line)
{
    for (int k = 0; k < f->nlines; k++)
        if (f->lines[k].line == line)
            return 1;
    return 0;
}

static void print_findings(const nk_insights *ins)
{
    for (uint32_t k = 0; ins && k < ins->n; k++)
        printf("    finding %s [%s]: %s\n", ins->f[k].key, nk__ins_severity_name(ins->f[k].severity), ins->f[k].title);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Brute-force busy time: the elementary intervals between all event
 * boundaries during which some event of a selected engine runs (mask bit per
 * engine; both masks non-zero: both groups at once). */
static double ref_busy(const nk_timeline *tl, unsigned mask_a, unsigned mask_b)
{
    uint32_t n = tl->nevents;
    double *t = malloc((2 * n + 1) * sizeof *t);
    for (uint32_t i = 0; i < n; i++) {
        t[2 * i] = tl->events[i].start;
        t[2 * i + 1] = tl->events[i].end;
    }
    qsort(t, 2 * n, sizeof *t, cmp_double);
    double sum = 0;
    for (uint32_t k = 0; k + 1 < 2 * n; k++) {
        double mid = (t[k] + t[k + 1]) / 2;
        int in_a = 0, in_b = mask_b == 0;
        for (uint32_t i = 0; i < n; i++) {
            const nk_event *e = &tl->events[i];
            if (e->start <= mid && mid < e->end) {
                in_a |= (mask_a >> e->engine) & 1;
                in_b |= (mask_b >> e->engine) & 1;
            }
        }
        if (in_a && in_b)
            sum += t[k + 1] - t[k];
    }
    free(t);
    return sum;
}

#define COMPUTE_MASK ((1u << NK_ENGINE_TENSOR) | (1u << NK_ENGINE_VECTOR) | (1u << NK_ENGINE_SCALAR) | \
                      (1u << NK_ENGINE_GPSIMD))
#define DMA_MASK (1u << NK_ENGINE_DMA)

static int line_of(const nk_program *p, uint32_t instr) { return p->locs[p->instrs[instr].loc].line; }

/* ------------------------------------------- a hand-written timeline */

/* tensor_exp [250, 512] has six instructions: per 128-row tile a load (queue
 * 0), an exp (Scalar) and a store (queue 1). The timeline below is made up,
 * with the trn1 table's 1300 ns DMA start latency and 50 ns semaphores:
 *
 *   i0 load   [0, 2300]     transfer [1300, 2300]
 *   i3 load   [0, 3300]     transfer [2300, 3300]   (queued behind i0)
 *   i1 exp    [2300, 2800]
 *   i2 store  [2850, 4650]  transfer [4150, 4650]
 *   i4 exp    [3350, 3850]
 *   i5 store  [3900, 5700]  transfer [5200, 5700]   (its trigger, not i2, held it)
 *
 * Worked out by hand: DMA busy [0, 5700]; Scalar 1000, all of it under DMA.
 * Critical path i0 -> i3 -> i4 -> i5: i5's transfer starts 1300 after its
 * trigger (released by i4), i4 by i3, i3's transfer waited for i0 on its
 * queue; segments 2300 + 1000 + 500 + 1800 and two 50 ns waits = 5700. DMA
 * start latency on it: 1300 (i0) + 1300 (i5). Data moves [1300, 3300],
 * [4150, 4650], [5200, 5700] = 3000; the gaps [3300, 4150] and [4650, 5200]
 * have stores waiting out their latency: 1400 ns. Scalar idles 2300 (i1
 * waits for i0) + 500 (i4 for i3) on DMA and 50 on the semaphore. */
static int cmp_event_start(const void *x, const void *y)
{
    const nk_event *a = x, *b = y;
    return a->start < b->start ? -1 : a->start > b->start;
}

static int cmp_xfer_start(const void *x, const void *y)
{
    const nk_dma_xfer *a = x, *b = y;
    return a->start < b->start ? -1 : a->start > b->start;
}

static nk_profile *hand_profile(void)
{
    int64_t shape[1][2] = {{250, 512}};
    nk_profile *pr = capture2("tensor_exp", nk_kernel_tensor_exp, 1, shape, NULL);
    if (!pr)
        return NULL;
    static const struct { double s, e, xs, xe; } t[6] = {
        {0, 2300, 1300, 2300}, {2300, 2800, 0, 0}, {2850, 4650, 4150, 4650},
        {0, 3300, 2300, 3300}, {3350, 3850, 0, 0}, {3900, 5700, 5200, 5700}};
    nk_timeline *tl = calloc(1, sizeof *tl);
    tl->events = calloc(6, sizeof *tl->events);
    tl->xfers = calloc(4, sizeof *tl->xfers);
    tl->instr_start = calloc(6, sizeof(double));
    tl->instr_end = calloc(6, sizeof(double));
    for (uint32_t i = 0; i < 6; i++) {
        const nk_instr *in = &pr->prog->instrs[i];
        int dma = in->engine == NK_ENGINE_DMA;
        tl->events[i] = (nk_event){i, in->engine, dma ? NK_EV_DMA_ISSUE : NK_EV_INSTR, in->queue, t[i].s, t[i].e};
        tl->instr_start[i] = t[i].s;
        tl->instr_end[i] = t[i].e;
        if (dma)
            tl->xfers[tl->nxfers++] = (nk_dma_xfer){i, in->queue, 0, in->op == NK_OP_STORE, 128, 262144, t[i].xs,
                                                    t[i].xe};
    }
    tl->nevents = 6;
    /* a timeline's events and transfers are sorted by start (the metrics rely on it) */
    qsort(tl->events, tl->nevents, sizeof *tl->events, cmp_event_start);
    qsort(tl->xfers, tl->nxfers, sizeof *tl->xfers, cmp_xfer_start);
    /* the descriptors as a timeline keeps them: DMA spans */
    if (nk__dma_spans_of(tl->xfers, tl->nxfers, pr->prog->ninstr, &tl->dspans, &tl->ndspans))
        tl->ndspans = 0;
    free(tl->xfers);
    tl->xfers = NULL;
    tl->nxfers = 0;
    tl->total_ns = 5700;
    nk__timeline_free(pr->tl);
    pr->tl = tl;
    return pr;
}

TEST(insights_hand_timeline_program_shape)
{
    nk_profile *pr = hand_profile();
    CHECK(pr != NULL);
    if (!pr)
        return;
    const nk_program *p = pr->prog;
    CHECK_INT(p->ninstr, 6);
    static const int ops[6] = {NK_OP_LOAD, NK_OP_ACTIVATION, NK_OP_STORE, NK_OP_LOAD, NK_OP_ACTIVATION, NK_OP_STORE};
    for (uint32_t i = 0; i < 6 && i < p->ninstr; i++)
        CHECK_INT(p->instrs[i].op, ops[i]);
    CHECK_INT(p->instrs[0].queue, p->instrs[3].queue);
    CHECK_INT(p->instrs[2].queue, p->instrs[5].queue);
    CHECK(p->instrs[0].queue != p->instrs[2].queue);
    /* exp waits for its load, store for its exp */
    CHECK_INT(p->instrs[1].ndep, 1);
    CHECK_INT(p->deps[p->instrs[1].dep_off], 0);
    CHECK_INT(p->deps[p->instrs[5].dep_off], 4);
    nk_profile_free(pr);
}

TEST(insights_hand_timeline_activity_and_overlap)
{
    nk_profile *pr = hand_profile();
    nk_insights *ins = insights_of(pr);
    CHECK(ins != NULL);
    if (!ins) {
        nk_profile_free(pr);
        return;
    }
    const nk_ins_analysis *a = &ins->a;
    CHECK_NEAR(a->total_ns, 5700, 0, 1e-9);
    CHECK_NEAR(a->active_ns[NK_ENGINE_DMA], 5700, 0, 1e-9);
    CHECK_NEAR(a->active_ns[NK_ENGINE_SCALAR], 1000, 0, 1e-9);
    CHECK_NEAR(a->active_ns[NK_ENGINE_VECTOR], 0, 0, 1e-9);
    CHECK_NEAR(a->compute_ns, 1000, 0, 1e-9);
    CHECK_NEAR(a->dma_compute_ns, 1000, 0, 1e-9);
    CHECK_NEAR(a->overlap_ns[NK_ENGINE_SCALAR][NK_ENGINE_DMA], 1000, 0, 1e-9);
    CHECK_NEAR(a->overlap_ns[NK_ENGINE_DMA][NK_ENGINE_SCALAR], 1000, 0, 1e-9);
    CHECK_INT(a->ninstr[NK_ENGINE_DMA], 4);
    CHECK_INT(a->ninstr[NK_ENGINE_SCALAR], 2);
    CHECK_INT(a->dma_queues, 2);
    CHECK_NEAR(a->dma_data_ns, 3000, 0, 1e-9);
    CHECK_NEAR(a->dma_latency_gap_ns, 1400, 0, 1e-9);
    CHECK_INT(a->nlat_gaps, 2);
    if (a->nlat_gaps == 2) {
        CHECK_NEAR(a->lat_gaps[0].s, 3300, 0, 1e-9);
        CHECK_NEAR(a->lat_gaps[0].e, 4150, 0, 1e-9);
        CHECK_NEAR(a->lat_gaps[1].s, 4650, 0, 1e-9);
        CHECK_NEAR(a->lat_gaps[1].e, 5200, 0, 1e-9);
    }
    /* busy per line: loads 2300 + 3300, stores 1800 + 1800, exps 500 + 500 */
    CHECK_NEAR(a->busy_sum_ns, 10200, 0, 1e-9);
    CHECK_INT(a->nlines, 3);
    if (a->nlines == 3) {
        CHECK_INT(a->lines[0].line, line_of(pr->prog, 0)); /* loads, busiest */
        CHECK_NEAR(a->lines[0].busy_ns, 5600, 0, 1e-9);
        CHECK_NEAR(a->lines[0].path_ns, 3300, 0, 1e-9); /* i0 2300 + i3 1000 */
        CHECK_INT(a->lines[1].line, line_of(pr->prog, 2));
        CHECK_NEAR(a->lines[1].busy_ns, 3600, 0, 1e-9);
        CHECK_NEAR(a->lines[1].path_ns, 1800, 0, 1e-9); /* i5 */
        CHECK_INT(a->lines[2].line, line_of(pr->prog, 1));
        CHECK_INT(a->lines[2].ninstr, 2);
        CHECK_NEAR(a->lines[2].path_ns, 500, 0, 1e-9); /* i4 */
    }
    nk__insights_free(ins);
    nk_profile_free(pr);
}

TEST(insights_hand_timeline_critical_path)
{
    nk_profile *pr = hand_profile();
    nk_insights *ins = insights_of(pr);
    if (!ins) {
        CHECK(0);
        nk_profile_free(pr);
        return;
    }
    const nk_ins_analysis *a = &ins->a;
    static const uint32_t want[4] = {0, 3, 4, 5};
    static const double seg[4][3] = {{0, 2300, 0}, {2300, 3300, 0}, {3350, 3850, 50}, {3900, 5700, 50}};
    CHECK_INT(a->npath, 4);
    for (uint32_t k = 0; k < 4 && k < a->npath; k++) {
        CHECK_INT(a->path[k].instr, want[k]);
        CHECK_NEAR(a->path[k].start, seg[k][0], 0, 1e-9);
        CHECK_NEAR(a->path[k].end, seg[k][1], 0, 1e-9);
        CHECK_NEAR(a->path[k].wait_ns, seg[k][2], 0, 1e-9);
    }
    CHECK_NEAR(a->path_busy_ns[NK_ENGINE_DMA], 5100, 0, 1e-9);
    CHECK_NEAR(a->path_busy_ns[NK_ENGINE_SCALAR], 500, 0, 1e-9);
    CHECK_NEAR(a->path_wait_ns, 100, 0, 1e-9);
    CHECK_NEAR(a->path_dma_latency_ns, 2600, 0, 1e-9);
    /* idle causes of the Scalar engine */
    CHECK_NEAR(a->idle_ns[NK_ENGINE_SCALAR][NK_CAUSE_DMA], 2800, 0, 1e-9);
    CHECK_NEAR(a->idle_ns[NK_ENGINE_SCALAR][NK_CAUSE_SEMAPHORE], 50, 0, 1e-9);
    CHECK_NEAR(a->idle_ns[NK_ENGINE_SCALAR][NK_CAUSE_ENGINE], 0, 0, 1e-9);
    CHECK_NEAR(a->wait_on[NK_ENGINE_SCALAR][NK_ENGINE_DMA], 2800, 0, 1e-9);
    nk__insights_free(ins);
    nk_profile_free(pr);
}

TEST(insights_hand_timeline_dma_latency_finding)
{
    nk_profile *pr = hand_profile();
    nk_insights *ins = insights_of(pr);
    if (!ins) {
        CHECK(0);
        nk_profile_free(pr);
        return;
    }
    /* DMA holds 5100 / 5700 of the path; 1400 ns idle = 24.6% -> high */
    const nk_finding *f = nk__insights_find(ins, NK_RULE_DMA_LATENCY);
    CHECK(f != NULL);
    if (f) {
        CHECK_NEAR(f->score_ns, 1400, 0, 1e-9);
        CHECK_INT(f->severity, NK_SEV_HIGH);
        CHECK_STR(f->key, "dma-latency-exposed");
        CHECK_NEAR(evidence(f, "idle_waiting", NK_UNIT_NS), 1400, 0, 1e-9);
        CHECK_NEAR(evidence(f, "data_moving", NK_UNIT_NS), 3000, 0, 1e-9);
        CHECK_NEAR(evidence(f, "path_dma", NK_UNIT_PERCENT), 100.0 * 5100 / 5700, 1e-12, 0);
        CHECK_NEAR(evidence(f, "path_latency", NK_UNIT_NS), 2600, 0, 1e-9);
        CHECK_INT(f->nranges, 2);
        CHECK_NEAR(f->ranges[0][0], 3300, 0, 1e-9);
        CHECK_NEAR(f->ranges[0][1], 4150, 0, 1e-9);
        CHECK_NEAR(f->ranges[1][0], 4650, 0, 1e-9);
        CHECK_NEAR(f->ranges[1][1], 5200, 0, 1e-9);
        /* the stores wait out their latency in the gap */
        CHECK_INT(f->ninstrs, 2);
        CHECK_INT(f->instrs[0], 2);
        CHECK_INT(f->instrs[1], 5);
        CHECK_INT(f->nlines, 1);
        CHECK_INT(f->lines[0].line, line_of(pr->prog, 2));
        CHECK_NEAR(f->lines[0].busy_ns, 3600, 0, 1e-9);
        /* the advice names the kernel's loop */
        char loop[64];
        const nk_locinfo *l = &pr->prog->locs[pr->prog->loops[0].loc];
        snprintf(loop, sizeof loop, "tensor_exp.c:%d", l->line);
        CHECK_CONTAINS(f->suggestion, loop);
        CHECK_CONTAINS(f->suggestion, "NK_AFFINE_RANGE_BUFS");
    }
    /* Scalar is entirely hidden under DMA: no overlap finding */
    CHECK(nk__insights_find(ins, NK_RULE_DMA_NOT_OVERLAPPED) == NULL);
    CHECK_INT(nk__insights_problems(ins), 1);
    /* 1 024 000 bytes in 5.7 us: 66% of 16 x 17 B/ns */
    const nk_finding *g = nk__insights_find(ins, NK_RULE_MEMORY_BOUND);
    CHECK(g != NULL);
    if (g)
        CHECK_NEAR(evidence(g, "bandwidth", NK_UNIT_PERCENT), 100.0 * 1024000 / 5700 / 272, 1e-12, 0);
    nk__insights_free(ins);
    nk_profile_free(pr);
}

TEST(insights_rejects_incomplete_profiles)
{
    nk_insights *ins = (nk_insights *)1;
    CHECK_INT(nk__insights_build(NULL, &ins), NK_EINVAL);
    CHECK(ins == NULL);
    nk_profile *pr = hand_profile();
    if (!pr) {
        CHECK(0);
        return;
    }
    nk_timeline *tl = pr->tl;
    pr->tl = NULL;
    CHECK_INT(nk__insights_build(pr, &ins), NK_EINVAL);
    pr->tl = tl;
    double *s = tl->instr_start;
    tl->instr_start = NULL;
    CHECK_INT(nk__insights_build(pr, &ins), NK_EINVAL);
    tl->instr_start = s;
    char target[16];
    memcpy(target, pr->arch.name, sizeof target);
    snprintf(pr->arch.name, sizeof pr->arch.name, "%s", "");
    snprintf(pr->prog->target, sizeof pr->prog->target, "%s", "trn9");
    const nk_arch *saved = pr->prog->arch;
    pr->prog->arch = NULL;
    CHECK_INT(nk__insights_build(pr, &ins), NK_ENOTFOUND);
    pr->prog->arch = saved;
    nk_profile_free(pr);
}

/* ------------------------------------ analysis against brute force */

TEST(insights_builtin_kernels_activity_and_path)
{
    for (int k = 0; k < nk_builtin_kernel_count; k++) {
        const nk_kernel_info *ki = &nk_builtin_kernels[k];
        nk_array args[NK_KERNEL_MAX_ARGS];
        CHECK_INT(nk_kernel_example_args(ki, 7, args), 0);
        nk_profile *pr = capture(ki->name, ki->fn, args, ki->nargs);
        for (int i = 0; i < ki->nargs; i++)
            nk_array_free(&args[i]);
        nk_insights *ins = insights_of(pr);
        CHECK(ins != NULL);
        if (!ins) {
            nk_profile_free(pr);
            continue;
        }
        const nk_ins_analysis *a = &ins->a;
        const nk_timeline *tl = pr->tl;
        double T = tl->total_ns - nk__timeline_launch_ns(tl), t0 = tl->regions ? tl->regions[0].end : 0;
        for (int e = 0; e < NK_ENGINE_COUNT; e++)
            CHECK_NEAR(a->active_ns[e], ref_busy(tl, 1u << e, 0), 1e-9, 1e-6);
        CHECK_NEAR(a->compute_ns, ref_busy(tl, COMPUTE_MASK, 0), 1e-9, 1e-6);
        CHECK_NEAR(a->dma_compute_ns, ref_busy(tl, DMA_MASK, COMPUTE_MASK), 1e-9, 1e-6);
        CHECK_NEAR(a->overlap_ns[NK_ENGINE_VECTOR][NK_ENGINE_SCALAR],
                   ref_busy(tl, 1u << NK_ENGINE_VECTOR, 1u << NK_ENGINE_SCALAR), 1e-9, 1e-6);
        /* the path ends with the last instruction, runs forward in time and,
         * with its waits, adds up to the total time without the launch (from
         * the end of the start-up) */
        CHECK(a->npath > 0);
        double sum = a->path_wait_ns, last_end = t0;
        for (uint32_t s = 0; s < a->npath; s++) {
            sum += a->path[s].end - a->path[s].start;
            CHECK(a->path[s].start >= last_end - 1e-6);
            last_end = a->path[s].end;
        }
        CHECK_NEAR(sum, T, 1e-9, 1e-6);
        double lastc = 0; /* the last completion (a sequence's launches between kernels lie before it) */
        for (uint32_t i = 0; i < pr->prog->ninstr; i++)
            lastc = fmax(lastc, tl->instr_end[i]);
        CHECK_NEAR(last_end, lastc, 1e-12, 1e-9);
        if (pr->prog->nseg <= 1)
            CHECK_NEAR(last_end, t0 + T, 1e-12, 1e-9);
        /* busy per line adds up to all busy time */
        double lines = 0;
        uint32_t ninstr = 0;
        for (uint32_t l = 0; l < a->nlines; l++) {
            lines += a->lines[l].busy_ns;
            ninstr += a->lines[l].ninstr;
        }
        CHECK_INT(ninstr, pr->prog->ninstr);
        CHECK_NEAR(lines, a->busy_sum_ns, 1e-9, 1e-6);
        if (nk_test_failed())
            printf("  in kernel %s\n", ki->name);
        nk__insights_free(ins);
        nk_profile_free(pr);
    }
}

/* ------------------------------------------------- one kernel per rule */

static int L_SMALL_LOAD, L_SMALL_STORE;

/* 16 column blocks of 32 float32: 128 B per partition per transfer. */
static void k_small_dma(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, j, 16) {
        L_SMALL_LOAD = __LINE__; nk_tensor t = nk_load(nc, nk_ix(nc, in, NK_ALL, nk_r(j * 32, j * 32 + 32)));
        nk_tensor e = nk_exp(nc, t);
        L_SMALL_STORE = __LINE__; nk_store(nc, nk_ix(nc, out, NK_ALL, nk_r(j * 32, j * 32 + 32)), e);
    }
    nk_return(nc, out);
}

TEST(insights_rule_small_dma)
{
    int64_t shape[1][2] = {{128, 512}};
    nk_profile *pr = capture2("small_dma", k_small_dma, 1, shape, NULL);
    nk_insights *ins = insights_of(pr);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_SMALL_DMA) : NULL;
    CHECK(f != NULL);
    if (f) {
        CHECK_NEAR(evidence(f, "avg_descriptor", NK_UNIT_BYTES), 32 * 4, 0, 1e-9);
        CHECK_NEAR(evidence(f, "transfers", NK_UNIT_COUNT), 32, 0, 0);
        CHECK_NEAR(evidence(f, "descriptors", NK_UNIT_COUNT), 32 * 128, 0, 0);
        CHECK_NEAR(evidence(f, "bytes", NK_UNIT_BYTES), 2.0 * 128 * 512 * 4, 0, 0);
        /* bytes at the target's peak: 16 DMA engines x 17 B/ns on trn1 */
        CHECK_NEAR(evidence(f, "at_peak", NK_UNIT_NS), 2.0 * 128 * 512 * 4 / (16 * 17.0), 1e-9, 0);
        CHECK(has_line(f, L_SMALL_LOAD));
        CHECK(has_line(f, L_SMALL_STORE));
        CHECK_INT(f->ninstrs_total, 32);
        CHECK_CONTAINS(f->detail, "under 256 B");
        CHECK(f->score_ns > 0);
    }
    if (ins) {
        CHECK_INT(ins->a.desc_class[NK_DMA_TINY], 32 * 128);
        CHECK_INT(ins->a.desc_class[NK_DMA_LARGE], 0);
    }
    nk__insights_free(ins);
    nk_profile_free(pr);
}

static int L_STATIC_EXP;

/* 24 dependent exps on [128, 16]: static overhead and no streaming. */
static void k_static(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 16), NK_F32, NK_SHARED_HBM);
    nk_tensor t = nk_load(nc, args[0]);
    for (int k = 0; k < 24; k++) {
        L_STATIC_EXP = __LINE__; t = nk_exp(nc, t);
    }
    nk_store(nc, out, t);
    nk_return(nc, out);
}

TEST(insights_rule_static_overhead)
{
    int64_t shape[1][2] = {{128, 16}};
    nk_profile *pr = capture2("static", k_static, 1, shape, NULL);
    nk_insights *ins = insights_of(pr);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_STATIC_OVERHEAD) : NULL;
    CHECK(f != NULL);
    if (f) {
        CHECK_NEAR(evidence(f, "instructions", NK_UNIT_COUNT), 24, 0, 0);
        CHECK_NEAR(evidence(f, "avg_free_elements", NK_UNIT_COUNT), 16, 0, 0);
        /* busy: the exps' event durations; streaming: 24 x 16 elements at 1.4 GHz */
        double busy = 0;
        for (uint32_t i = 0; i < pr->tl->nevents; i++)
            if (pr->tl->events[i].engine == NK_ENGINE_SCALAR)
                busy += pr->tl->events[i].end - pr->tl->events[i].start;
        CHECK_NEAR(evidence(f, "busy", NK_UNIT_NS), busy, 1e-9, 1e-9);
        CHECK_NEAR(evidence(f, "streaming", NK_UNIT_NS), 24 * 16 / 1.4, 1e-9, 1e-9);
        CHECK_NEAR(f->score_ns, busy - 24 * 16 / 1.4, 1e-9, 1e-9);
        CHECK_INT(f->nlines, 1);
        CHECK_INT(f->lines[0].line, L_STATIC_EXP);
        CHECK_INT(f->lines[0].ninstr, 24);
    }
    nk__insights_free(ins);
    nk_profile_free(pr);
}

static int L_MM;

/* 32 bf16 matmuls streaming 16 columns each (MM floor: 64 cycles). */
static void k_mm_short(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 16), NK_F32, NK_SHARED_HBM);
    nk_tensor st = nk_load(nc, args[0]), mv = nk_load(nc, args[1]);
    nk_tensor acc = nk_ndarray(nc, NK_SHAPE(128, 16), NK_F32, NK_PSUM);
    for (int k = 0; k < 32; k++) {
        L_MM = __LINE__; nk_isa_nc_matmul(nc, acc, st, mv, k > 0);
    }
    nk_store(nc, out, nk_copy(nc, acc, NK_F32));
    nk_return(nc, out);
}

/* 8 float32 matmuls [128, 128] x [128, 512]. */
static void k_mm_fp32(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SHARED_HBM);
    nk_tensor st = nk_load(nc, args[0]), mv = nk_load(nc, args[1]);
    nk_tensor acc = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_PSUM);
    for (int k = 0; k < 8; k++) {
        L_MM = __LINE__; nk_isa_nc_matmul(nc, acc, st, mv, k > 0);
    }
    nk_store(nc, out, nk_copy(nc, acc, NK_F32));
    nk_return(nc, out);
}

static double matmul_busy(const nk_profile *pr)
{
    double busy = 0;
    for (uint32_t i = 0; i < pr->tl->nevents; i++)
        if (pr->prog->instrs[pr->tl->events[i].instr].op == NK_OP_MATMUL)
            busy += pr->tl->events[i].end - pr->tl->events[i].start;
    return busy;
}

TEST(insights_rule_matmul_short_moving)
{
    int64_t shape[2][2] = {{128, 128}, {128, 16}};
    nk_dtype dt[2] = {NK_BF16, NK_BF16};
    nk_profile *pr = capture2("mm_short", k_mm_short, 2, shape, dt);
    nk_insights *ins = insights_of(pr);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_MATMUL_SHORT_MOVING) : NULL;
    CHECK(f != NULL);
    if (f) {
        CHECK_NEAR(evidence(f, "matmuls", NK_UNIT_COUNT), 32, 0, 0);
        CHECK_NEAR(evidence(f, "avg_moving_columns", NK_UNIT_COUNT), 16, 0, 0);
        double busy = matmul_busy(pr);
        CHECK_NEAR(evidence(f, "busy", NK_UNIT_NS), busy, 1e-9, 1e-9);
        /* 16 of the 64 columns an MM costs do work */
        CHECK_NEAR(f->score_ns, busy * (1 - 16.0 / 64), 1e-9, 1e-9);
        CHECK_INT(f->lines[0].line, L_MM);
    }
    CHECK(ins && !nk__insights_find(ins, NK_RULE_MATMUL_FP32));
    /* the roofline: 32 x 2 x 128 x 128 x 16 FLOPs over the bytes moved */
    if (ins) {
        CHECK_NEAR(ins->a.flops, 32.0 * 2 * 128 * 128 * 16, 0, 0);
        double bytes = 128 * 128 * 2 + 128 * 16 * 2 + 128 * 16 * 4;
        CHECK_NEAR(ins->a.hbm_bytes, bytes, 0, 0);
        CHECK_NEAR(ins->a.intensity, 32.0 * 2 * 128 * 128 * 16 / bytes, 1e-12, 0);
        /* bf16 peak 2 x 128 x 128 x 2.8 GHz over 410 GB/s: about 224 FLOP/B ([PG] says about 222) */
        CHECK_NEAR(ins->a.ridge, 2.0 * 128 * 128 * 2.8 / 410, 1e-12, 0);
    }
    nk__insights_free(ins);
    nk_profile_free(pr);
}

TEST(insights_rule_matmul_fp32)
{
    int64_t shape[2][2] = {{128, 128}, {128, 512}};
    nk_profile *pr = capture2("mm_fp32", k_mm_fp32, 2, shape, NULL);
    nk_insights *ins = insights_of(pr);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_MATMUL_FP32) : NULL;
    CHECK(f != NULL);
    if (f) {
        CHECK_NEAR(evidence(f, "matmuls", NK_UNIT_COUNT), 8, 0, 0);
        double busy = matmul_busy(pr);
        CHECK_NEAR(f->score_ns, busy * 0.75, 1e-9, 1e-9); /* 4x slower [ISA-old][A2] */
        CHECK_INT(f->lines[0].line, L_MM);
        CHECK_CONTAINS(f->suggestion, "bfloat16");
    }
    CHECK(ins && !nk__insights_find(ins, NK_RULE_MATMUL_SHORT_MOVING));
    nk__insights_free(ins);
    nk_profile_free(pr);
}

/* The same with nk_matmul: the kernel wrote these matmuls (nk_matmul is
 * lowered to nc_matmul, but it is a matmul), so the advice is to cast their
 * operands, not about a construct carried out as matmuls. */
static void k_mm_fp32_api(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SHARED_HBM);
    nk_tensor st = nk_load(nc, args[0]), mv = nk_load(nc, args[1]);
    nk_tensor acc = nk_matmul(nc, st, mv, 1);
    for (int k = 1; k < 8; k++)
        acc = nk_matmul(nc, st, mv, 1);
    nk_store(nc, out, nk_copy(nc, acc, NK_F32));
    nk_return(nc, out);
}

TEST(insights_rule_matmul_fp32_of_nk_matmul_says_cast_the_operands)
{
    int64_t shape[2][2] = {{128, 128}, {128, 512}};
    nk_profile *pr = capture2("mm_fp32_api", k_mm_fp32_api, 2, shape, NULL);
    nk_insights *ins = insights_of(pr);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_MATMUL_FP32) : NULL;
    CHECK(f != NULL);
    if (f) {
        CHECK_CONTAINS(f->suggestion, "Cast the operands to bfloat16 before the matmul");
        CHECK(!strstr(f->suggestion, "wrote no matmul"));
        CHECK(!strstr(f->suggestion, "is carried out"));
    }
    nk__insights_free(ins);
    nk_profile_free(pr);
}

static int L_RELOAD;

/* The same [128, 512] input loaded in each of 4 iterations. */
static void k_reload(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(512, 512), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, i, 4) {
        L_RELOAD = __LINE__; nk_tensor t = nk_load(nc, args[0]);
        nk_store(nc, nk_ix(nc, out, nk_r(i * 128, i * 128 + 128), NK_ALL), nk_exp(nc, t));
    }
    nk_return(nc, out);
}

TEST(insights_rule_tensor_reloaded)
{
    int64_t shape[1][2] = {{128, 512}};
    nk_profile *pr = capture2("reload", k_reload, 1, shape, NULL);
    nk_insights *ins = insights_of(pr);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_TENSOR_RELOADED) : NULL;
    CHECK(f != NULL);
    if (f) {
        CHECK_NEAR(evidence(f, "times", NK_UNIT_RATIO), 4.0, 0, 0);
        CHECK_NEAR(evidence(f, "loads", NK_UNIT_COUNT), 4, 0, 0);
        CHECK_NEAR(evidence(f, "tensor", NK_UNIT_BYTES), 128 * 512 * 4, 0, 0);
        CHECK_NEAR(evidence(f, "loaded", NK_UNIT_BYTES), 4.0 * 128 * 512 * 4, 0, 0);
        CHECK_INT(f->nlines, 1);
        CHECK_INT(f->lines[0].line, L_RELOAD);
        CHECK_CONTAINS(f->title, "input 0 is loaded 4.0 times");
        CHECK_STR(f->key, "tensor-reloaded:hbm1");
    }
    nk__insights_free(ins);
    nk_profile_free(pr);
}

static int L_DECL, L_ACT, L_ACC;

/* The exp's destination declared once, outside the loop: each iteration's
 * exp must wait until the previous iteration's store has read it. */
static void k_outside(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(768, 512), NK_F32, NK_SHARED_HBM);
    L_DECL = __LINE__; nk_tensor t = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SBUF);
    NK_AFFINE_RANGE(nc, i, 6) {
        nk_range r = nk_r(i * 128, i * 128 + 128);
        nk_tensor x = nk_load(nc, nk_ix(nc, in, r, NK_ALL));
        L_ACT = __LINE__; nk_isa_activation(nc, t, NK_ACT_EXP, x, nk_imm(0), nk_imm(1), NK_NONE);
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), t);
    }
    nk_return(nc, out);
}

/* The same with the tile declared in the body (multi-buffered). */
static void k_inside(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(768, 512), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, i, 6) {
        nk_range r = nk_r(i * 128, i * 128 + 128);
        nk_tensor t = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SBUF);
        nk_tensor x = nk_load(nc, nk_ix(nc, in, r, NK_ALL));
        nk_isa_activation(nc, t, NK_ACT_EXP, x, nk_imm(0), nk_imm(1), NK_NONE);
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), t);
    }
    nk_return(nc, out);
}

/* A running sum in a tile declared outside a sequential loop: a value
 * carried between iterations, not a mistake. */
static void k_carry(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 512), NK_F32, NK_SHARED_HBM);
    L_ACC = __LINE__; nk_tensor acc = nk_zeros(nc, NK_SHAPE(128, 512), NK_F32, NK_SBUF);
    NK_SEQUENTIAL_RANGE(nc, i, 6) {
        nk_tensor x = nk_load(nc, nk_ix(nc, in, nk_r(i * 128, i * 128 + 128), NK_ALL));
        nk_isa_tensor_tensor(nc, acc, acc, x, NK_ALU_ADD);
    }
    nk_store(nc, out, acc);
    nk_return(nc, out);
}

/* Stall of instruction i on dependencies through tile memory written by an
 * earlier iteration: from the later of its engine predecessor's end and its
 * other dependencies' ends, to the end of those dependencies. */
static double ref_stall(const nk_program *p, const nk_timeline *tl, uint32_t i, uint32_t tile)
{
    const nk_instr *in = &p->instrs[i];
    double other = 0, through = -1;
    for (uint32_t j = i; j-- > 0;)
        if (p->instrs[j].engine == in->engine) {
            other = tl->instr_end[j];
            break;
        }
    for (uint32_t k = 0; k < in->ndep; k++) {
        uint32_t j = p->deps[in->dep_off + k];
        const nk_instr *jn = &p->instrs[j];
        int uses = jn->dst.buf == tile || (jn->nsrc > 0 && jn->src[0].buf == tile);
        if (uses && jn->iter < in->iter)
            through = fmax(through, tl->instr_end[j]);
        else
            other = fmax(other, tl->instr_end[j]);
    }
    return fmax(0, fmin(tl->instr_start[i], through) - other);
}

TEST(insights_rule_serialized_tile)
{
    int64_t shape[1][2] = {{768, 512}};
    nk_profile *pr = capture2("outside", k_outside, 1, shape, NULL);
    nk_profile *good = capture2("inside", k_inside, 1, shape, NULL);
    nk_insights *ins = insights_of(pr), *gi = insights_of(good);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_SERIALIZED_TILE) : NULL;
    CHECK(f != NULL);
    if (f) {
        char key[64], decl[64];
        snprintf(key, sizeof key, "serialized-tile:test_insights.c:%d", L_DECL);
        snprintf(decl, sizeof decl, "declared at test_insights.c:%d", L_DECL);
        CHECK_STR(f->key, key);
        CHECK_CONTAINS(f->title, decl);
        CHECK(has_line(f, L_DECL));
        CHECK(has_line(f, L_ACT));
        CHECK_NEAR(evidence(f, "iterations", NK_UNIT_COUNT), 6, 0, 0);
        /* iterations 1..5: the exp waits for the previous exp (write after
         * write) and the previous store (write after read) */
        CHECK_NEAR(evidence(f, "waits", NK_UNIT_COUNT), 10, 0, 0);
        const nk_program *p = pr->prog;
        uint32_t tile = 0;
        double stall = 0;
        for (uint32_t i = 0; i < p->ninstr; i++)
            if (p->instrs[i].op == NK_OP_ACTIVATION) {
                tile = p->instrs[i].dst.buf;
                stall += ref_stall(p, pr->tl, i, tile);
            }
        CHECK_NEAR(evidence(f, "stall", NK_UNIT_NS), stall, 1e-9, 1e-6);
        CHECK(stall > 0);
        CHECK_CONTAINS(f->suggestion, "inside the loop body");
    }
    /* declared inside: no finding, and faster */
    CHECK(gi && !nk__insights_find(gi, NK_RULE_SERIALIZED_TILE));
    if (pr && good)
        CHECK(good->tl->total_ns < pr->tl->total_ns);
    nk__insights_free(ins);
    nk__insights_free(gi);
    nk_profile_free(pr);
    nk_profile_free(good);
}

TEST(insights_rule_serialized_tile_ignores_carried_values)
{
    int64_t shape[1][2] = {{768, 512}};
    nk_profile *pr = capture2("carry", k_carry, 1, shape, NULL);
    nk_insights *ins = insights_of(pr);
    CHECK(ins != NULL);
    /* the running sum is not flagged (the loads' single buffer may be) */
    char acc[64];
    snprintf(acc, sizeof acc, "serialized-tile:test_insights.c:%d", L_ACC);
    for (uint32_t k = 0; ins && k < ins->n; k++)
        CHECK(strcmp(ins->f[k].key, acc) != 0);
    nk__insights_free(ins);
    nk_profile_free(pr);
}

static int L_UNPIPE_LOAD, UNPIPE_BUFS;

/* Compute that reads the loaded tile until its last instruction: with one
 * buffer the next load waits for all of it (write after read), so loads and
 * compute alternate. */
static void k_unpipelined(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(1024, 2048), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE_BUFS(nc, i, 8, UNPIPE_BUFS) {
        nk_range r = nk_r(i * 128, i * 128 + 128);
        L_UNPIPE_LOAD = __LINE__; nk_tensor x = nk_load(nc, nk_ix(nc, in, r, NK_ALL));
        nk_tensor y = nk_tanh(nc, nk_exp(nc, x));
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), nk_multiply(nc, y, x));
    }
    nk_return(nc, out);
}

TEST(insights_rule_dma_not_overlapped)
{
    int64_t shape[1][2] = {{1024, 2048}};
    UNPIPE_BUFS = 1;
    nk_profile *pr = capture2("unpipelined", k_unpipelined, 1, shape, NULL);
    UNPIPE_BUFS = 3;
    nk_profile *good = capture2("pipelined", k_unpipelined, 1, shape, NULL);
    nk_insights *ins = insights_of(pr), *gi = insights_of(good);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_DMA_NOT_OVERLAPPED) : NULL;
    CHECK(f != NULL);
    if (f) {
        double dma = ref_busy(pr->tl, DMA_MASK, 0), comp = ref_busy(pr->tl, COMPUTE_MASK, 0);
        double ov = ref_busy(pr->tl, DMA_MASK, COMPUTE_MASK);
        CHECK_NEAR(evidence(f, "dma_active", NK_UNIT_NS), dma, 1e-9, 1e-6);
        CHECK_NEAR(evidence(f, "compute_active", NK_UNIT_NS), comp, 1e-9, 1e-6);
        CHECK_NEAR(evidence(f, "overlap", NK_UNIT_NS), ov, 1e-9, 1e-6);
        CHECK_NEAR(f->score_ns, fmin(dma, comp) - ov, 1e-9, 1e-6);
        CHECK(ov < 0.5 * fmin(dma, comp));
        CHECK(has_line(f, L_UNPIPE_LOAD));
        CHECK(f->nranges > 0);
        /* the loop keeps one buffer: the advice is to give it more */
        CHECK_CONTAINS(f->suggestion, "1 buffer per tile");
    }
    /* three buffers: overlapped, no finding, faster */
    CHECK(gi && !nk__insights_find(gi, NK_RULE_DMA_NOT_OVERLAPPED));
    if (pr && good)
        CHECK(good->tl->total_ns < 0.9 * pr->tl->total_ns);
    nk__insights_free(ins);
    nk__insights_free(gi);
    nk_profile_free(pr);
    nk_profile_free(good);
}

/* Vector and Scalar take turns on one tile: each needs the other's result. */
static void k_pingpong(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 2048), NK_F32, NK_SHARED_HBM);
    nk_tensor t = nk_load(nc, args[0]);
    for (int k = 0; k < 6; k++) {
        t = nk_exp(nc, t);               /* Scalar */
        t = nk_multiply_s(nc, t, 0.5f);  /* Vector */
    }
    nk_store(nc, out, t);
    nk_return(nc, out);
}

TEST(insights_rule_engines_never_overlap)
{
    int64_t shape[1][2] = {{128, 2048}};
    nk_profile *pr = capture2("pingpong", k_pingpong, 1, shape, NULL);
    nk_insights *ins = insights_of(pr);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_ENGINES_NO_OVERLAP) : NULL;
    CHECK(f != NULL);
    if (f) {
        CHECK_STR(f->key, "engines-never-overlap:vector+scalar");
        CHECK_NEAR(evidence(f, "overlap", NK_UNIT_NS),
                   ref_busy(pr->tl, 1u << NK_ENGINE_VECTOR, 1u << NK_ENGINE_SCALAR), 0, 1e-6);
        CHECK_NEAR(evidence(f, "a_active", NK_UNIT_NS), ref_busy(pr->tl, 1u << NK_ENGINE_VECTOR, 0), 1e-9, 1e-6);
        CHECK_NEAR(evidence(f, "b_active", NK_UNIT_NS), ref_busy(pr->tl, 1u << NK_ENGINE_SCALAR, 0), 1e-9, 1e-6);
        CHECK(evidence(f, "mutual_wait", NK_UNIT_NS) > 0);
        CHECK_INT(f->ninstrs_total, 12);
    }
    nk__insights_free(ins);
    nk_profile_free(pr);
}

/* 120 exps over one [128, 4096] tile after one load: Scalar-bound. */
static void k_busy_scalar(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 4096), NK_BF16, NK_SHARED_HBM);
    nk_tensor x = nk_load(nc, args[0]);
    nk_tensor y = nk_ndarray(nc, NK_SHAPE(128, 4096), NK_BF16, NK_SBUF);
    for (int k = 0; k < 120; k++)
        nk_isa_activation(nc, y, NK_ACT_EXP, x, nk_imm(0), nk_imm(1), NK_NONE);
    nk_store(nc, out, y);
    nk_return(nc, out);
}

/* A pipelined copy of [1024, 2048] float32 in 8 KiB-per-partition tiles. */
static void k_copy(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(1024, 2048), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE_BUFS(nc, i, 8, 4) {
        nk_range r = nk_r(i * 128, i * 128 + 128);
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), nk_load(nc, nk_ix(nc, args[0], r, NK_ALL)));
    }
    nk_return(nc, out);
}

/* exp over [1024, 2048] float32 in 8 KiB-per-partition tiles, 4 buffers. */
static void k_exp_big(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(1024, 2048), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE_BUFS(nc, i, 8, 4) {
        nk_range r = nk_r(i * 128, i * 128 + 128);
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), nk_exp(nc, nk_load(nc, nk_ix(nc, args[0], r, NK_ALL))));
    }
    nk_return(nc, out);
}

TEST(insights_good_news_compute_bound)
{
    int64_t shape[1][2] = {{128, 4096}};
    nk_dtype dt[1] = {NK_BF16};
    nk_profile *pr = capture2("busy_scalar", k_busy_scalar, 1, shape, dt);
    nk_insights *ins = insights_of(pr);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_COMPUTE_BOUND) : NULL;
    CHECK(f != NULL);
    if (f) {
        double frac = ref_busy(pr->tl, 1u << NK_ENGINE_SCALAR, 0) / (pr->tl->total_ns - nk__timeline_launch_ns(pr->tl));
        CHECK(frac >= 0.9);
        CHECK_NEAR(evidence(f, "active", NK_UNIT_PERCENT), 100 * frac, 1e-9, 1e-9);
        CHECK_INT(f->severity, NK_SEV_GOOD);
        CHECK_STR(f->key, "compute-bound:scalar");
    }
    CHECK(ins && nk__insights_problems(ins) == 0);
    if (ins && nk__insights_problems(ins))
        print_findings(ins);
    nk__insights_free(ins);
    nk_profile_free(pr);
}

TEST(insights_well_pipelined_kernels_have_no_problems)
{
    int64_t shape[1][2] = {{1024, 2048}};
    nk_kernel_fn fns[2] = {k_copy, k_exp_big};
    const char *names[2] = {"copy", "exp_big"};
    for (int k = 0; k < 2; k++) {
        nk_profile *pr = capture2(names[k], fns[k], 1, shape, NULL);
        nk_insights *ins = insights_of(pr);
        CHECK(ins != NULL);
        if (!ins) {
            nk_profile_free(pr);
            continue;
        }
        CHECK_INT(nk__insights_problems(ins), 0);
        /* and the good news: DMA at >= 60% of 272 B/ns */
        const nk_finding *f = nk__insights_find(ins, NK_RULE_MEMORY_BOUND);
        double frac = 2.0 * 1024 * 2048 * 4 / (pr->tl->total_ns - nk__timeline_launch_ns(pr->tl)) / (16 * 17.0);
        CHECK(frac >= 0.6);
        CHECK(f != NULL);
        if (f)
            CHECK_NEAR(evidence(f, "bandwidth", NK_UNIT_PERCENT), 100 * frac, 1e-9, 1e-9);
        if (nk_test_failed()) {
            printf("  in kernel %s\n", names[k]);
            print_findings(ins);
        }
        nk__insights_free(ins);
        nk_profile_free(pr);
    }
}

/* ------------------------------------ tensor_exp: the done criterion */

static nk_profile *exp_profile(nk_kernel_fn fn)
{
    int64_t shape[1][2] = {{250, 512}};
    return capture2("tensor_exp", fn, 1, shape, NULL);
}

TEST(insights_tensor_exp_says_what_to_change)
{
    nk_profile *pr = exp_profile(nk_kernel_tensor_exp);
    nk_insights *ins = insights_of(pr);
    nk_text t = {0};
    CHECK(ins && nk__insights_text(ins, &t) == 0);
    if (!ins || !t.s) {
        nk__insights_free(ins);
        nk_profile_free(pr);
        return;
    }
    /* which engines, whether they overlap, whether DMA overlaps compute */
    CHECK_CONTAINS(t.s, "Engines used (active: % of the device time)\n  scalar ");
    CHECK_CONTAINS(t.s, "\n  dma ");
    CHECK(!strstr(t.s, "\n  vector ") && !strstr(t.s, "\n  tensor "));
    CHECK_CONTAINS(t.s, "DMA with compute: ");
    CHECK_CONTAINS(t.s, "100% of the compute time runs under DMA");
    CHECK_NEAR(ins->a.dma_compute_ns, ref_busy(pr->tl, 1u << NK_ENGINE_SCALAR, 0), 1e-9, 1e-6);
    /* what to change: DMA-bound, DMA engines idling on start latency */
    const nk_finding *f = nk__insights_find(ins, NK_RULE_DMA_LATENCY);
    CHECK(f != NULL);
    CHECK(ins->n > 0 && ins->f[0].rule == NK_RULE_DMA_LATENCY);
    if (f) {
        CHECK(f->severity >= NK_SEV_MEDIUM);
        CHECK_CONTAINS(t.s, f->suggestion);
        CHECK_CONTAINS(f->suggestion, "tensor_exp.c:13 runs only 2 iterations");
        /* the store line is where the DMAs wait */
        CHECK(has_line(f, line_of(pr->prog, 2)));
    }
    nk__text_free(&t);
    nk__insights_free(ins);
    nk_profile_free(pr);
}

TEST(insights_tensor_exp_rewrite_diff)
{
    nk_profile *a = exp_profile(nk_kernel_tensor_exp), *b = exp_profile(nk_kernel_tensor_exp_pipelined);
    nk_insights *ib = insights_of(b);
    CHECK(a && b && ib);
    if (!a || !b || !ib) {
        nk__insights_free(ib);
        nk_profile_free(a);
        nk_profile_free(b);
        return;
    }
    /* the rewrite is faster and the finding is gone, with no new problem */
    CHECK(b->tl->total_ns < 0.95 * a->tl->total_ns);
    CHECK(!nk__insights_find(ib, NK_RULE_DMA_LATENCY));
    CHECK_INT(nk__insights_problems(ib), 0);
    nk_text d = {0};
    CHECK_INT(nk__insights_diff(a, "before.nkp", b, "after.nkp", &d), 0);
    if (d.s) {
        CHECK_CONTAINS(d.s, "a: before.nkp (kernel tensor_exp on trn1)");
        char total[512], ta[32], tb[32], dd[32];
        /* the insights judge the kernel's own time: the device time without the launch */
        double xa = a->tl->total_ns - nk__timeline_launch_ns(a->tl), xb = b->tl->total_ns - nk__timeline_launch_ns(b->tl);
        nk__ins_fmt_ns(ta, sizeof ta, xa);
        nk__ins_fmt_ns(tb, sizeof tb, xb);
        nk__ins_fmt_ns(dd, sizeof dd, xa - xb);
        snprintf(total, sizeof total, "  %-22s %12s %12s   -%-11s (%+.1f%%)", "time without launch", ta, tb, dd,
                 100 * (xb - xa) / xa);
        CHECK_CONTAINS(d.s, total);
        CHECK_CONTAINS(d.s, "gone:    [medium] dma-latency-exposed");
        /* the only new finding is good news */
        CHECK_CONTAINS(d.s, "new:     [good] memory-bound");
        CHECK(!strstr(d.s, "new:     [low") && !strstr(d.s, "new:     [medium") && !strstr(d.s, "new:     [high"));
        /* the exp line moved (16 in tensor_exp.c, another number in the
         * rewrite) and is matched by its text */
        char pair[96];
        snprintf(pair, sizeof pair, "tensor_exp.c:%-7d tensor_exp.c:%-7d", line_of(a->prog, 1), line_of(b->prog, 1));
        CHECK_CONTAINS(d.s, pair);
        CHECK(line_of(a->prog, 1) != line_of(b->prog, 1));
        CHECK_CONTAINS(d.s, "nk_tensor e = nk_exp(nc, tile);");
        /* per opcode: twice the loads */
        CHECK_CONTAINS(d.s, "  load                    2        4");
    }
    nk__text_free(&d);
    nk__insights_free(ib);
    nk_profile_free(a);
    nk_profile_free(b);
}

TEST(insights_diff_of_a_profile_with_itself)
{
    nk_profile *a = exp_profile(nk_kernel_tensor_exp);
    nk_text d = {0};
    CHECK(a && nk__insights_diff(a, NULL, a, NULL, &d) == 0);
    if (d.s) {
        CHECK_CONTAINS(d.s, "(+0.0%)");
        CHECK_CONTAINS(d.s, "both:    [medium -> medium] dma-latency-exposed");
        CHECK(!strstr(d.s, "gone:") && !strstr(d.s, "new:"));
    }
    nk__text_free(&d);
    nk_profile_free(a);
}

TEST(insights_diff_without_sources_matches_line_numbers)
{
    nk_profile *a = exp_profile(nk_kernel_tensor_exp), *b = exp_profile(nk_kernel_tensor_exp_pipelined);
    if (!a || !b) {
        CHECK(0);
        nk_profile_free(a);
        nk_profile_free(b);
        return;
    }
    /* no source text: the load lines pair up only when the numbers agree */
    for (uint32_t f = 0; f < a->prog->nfiles; f++) {
        free(a->sources[f].text);
        a->sources[f].text = NULL;
    }
    nk_text d = {0};
    CHECK_INT(nk__insights_diff(a, NULL, b, NULL, &d), 0);
    char row[96];
    snprintf(row, sizeof row, "tensor_exp.c:%-7d -   ", line_of(a->prog, 1));
    if (d.s) {
        CHECK_CONTAINS(d.s, row);
        snprintf(row, sizeof row, "-                    tensor_exp.c:%-7d", line_of(b->prog, 1));
        CHECK_CONTAINS(d.s, row);
    }
    nk__text_free(&d);
    nk_profile_free(a);
    nk_profile_free(b);
}

/* ------------------------------------------------------------ reports */

/* A small JSON checker: 1 when s holds exactly one valid JSON value. */
static const char *js_value(const char *s);
static const char *js_ws(const char *s)
{
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
        s++;
    return s;
}
static const char *js_string(const char *s)
{
    if (*s++ != '"')
        return NULL;
    while (*s && *s != '"') {
        if ((unsigned char)*s < 0x20)
            return NULL;
        if (*s == '\\') {
            s++;
            if (*s == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (!strchr("0123456789abcdefABCDEF", s[k]) || !s[k])
                        return NULL;
                s += 4;
            } else if (!*s || !strchr("\"\\/bfnrt", *s)) {
                return NULL;
            }
        }
        s++;
    }
    return *s == '"' ? s + 1 : NULL;
}
static const char *js_seq(const char *s, char close, int object)
{
    s = js_ws(s + 1);
    if (*s == close)
        return s + 1;
    for (;;) {
        if (object) {
            s = js_string(js_ws(s));
            if (!s || *(s = js_ws(s)) != ':')
                return NULL;
            s++;
        }
        s = js_value(s);
        if (!s)
            return NULL;
        s = js_ws(s);
        if (*s == close)
            return s + 1;
        if (*s != ',')
            return NULL;
        s++;
    }
}
static const char *js_value(const char *s)
{
    s = js_ws(s);
    if (*s == '{')
        return js_seq(s, '}', 1);
    if (*s == '[')
        return js_seq(s, ']', 0);
    if (*s == '"')
        return js_string(s);
    if (!strncmp(s, "true", 4) || !strncmp(s, "null", 4))
        return s + 4;
    if (!strncmp(s, "false", 5))
        return s + 5;
    char *end;
    strtod(s, &end);
    return end > s ? end : NULL;
}
static int json_ok(const char *s)
{
    const char *e = s ? js_value(s) : NULL;
    return e && !*js_ws(e);
}

TEST(insights_json_is_valid_and_complete)
{
    int64_t shape[1][2] = {{128, 512}};
    nk_profile *pr = capture2("small_dma", k_small_dma, 1, shape, NULL);
    nk_insights *ins = insights_of(pr);
    nk_text j = {0}, an = {0}, v = {0};
    CHECK(ins && nk__insights_json(ins, &j) == 0 && nk__insights_analysis_json(ins, &an) == 0);
    CHECK_INT(nk__insights_view_json(pr, &v), 0);
    CHECK(json_ok(j.s));
    CHECK(json_ok(an.s));
    CHECK(json_ok(v.s));
    CHECK(j.s && j.s[0] == '[');
    CHECK_CONTAINS(j.s, "\"rule\":\"small-dma\"");
    CHECK_CONTAINS(j.s, "\"avg_descriptor_bytes\":128");
    char line[96];
    snprintf(line, sizeof line, "\"file\":\"tests/unit/test_insights.c\",\"line\":%d", L_SMALL_LOAD);
    CHECK_CONTAINS(j.s, line);
    CHECK_CONTAINS(j.s, "\"ranges\":[[");
    CHECK_CONTAINS(an.s, "\"engines\":[{\"engine\":\"tensor\"");
    CHECK_CONTAINS(an.s, "\"critical_path\":{");
    CHECK_CONTAINS(an.s, "\"descriptors_by_size\":{\"lt256\":4096,");
    CHECK_CONTAINS(v.s, "{\"analysis\":{\"kernel\":\"small_dma\"");
    CHECK_CONTAINS(v.s, ",\"findings\":[");
    /* escaping: quotes, control characters and '<' stay valid inside a <script> */
    nk_text e = {0};
    nk__vb_jstr(&e, "a\"b\\c\n\x01</script>");
    CHECK_STR(e.s, "\"a\\\"b\\\\c\\n\\u0001\\u003c/script\\u003e\"");
    CHECK(json_ok(e.s));
    nk__text_free(&e);
    nk__text_free(&j);
    nk__text_free(&an);
    nk__text_free(&v);
    nk__insights_free(ins);
    nk_profile_free(pr);
}

TEST(insights_print_top)
{
    int64_t shape[1][2] = {{128, 512}};
    nk_profile *pr = capture2("small_dma", k_small_dma, 1, shape, NULL);
    nk_insights *ins = insights_of(pr);
    FILE *f = tmpfile();
    CHECK(f && pr && ins);
    if (!f || !pr || !ins) {
        if (f)
            fclose(f);
        nk__insights_free(ins);
        nk_profile_free(pr);
        return;
    }
    CHECK(ins->n >= 2);
    CHECK_INT(nk__insights_print_top(f, pr, 1), 0);
    char buf[4096] = {0};
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    CHECK_CONTAINS(buf, "Top findings");
    CHECK_CONTAINS(buf, "1. [");
    CHECK_CONTAINS(buf, ins->f[0].title);
    CHECK(!strstr(buf, "2. ["));
    /* nothing printed for n = 0 */
    FILE *g = tmpfile();
    CHECK_INT(nk__insights_print_top(g, pr, 0), 0);
    CHECK_INT(ftell(g), 0);
    fclose(g);
    fclose(f);
    nk__insights_free(ins);
    nk_profile_free(pr);
}

TEST(insights_text_report_sections)
{
    nk_profile *pr = hand_profile();
    nk_insights *ins = insights_of(pr);
    nk_text t = {0};
    CHECK(ins && nk__insights_text(ins, &t) == 0);
    if (t.s) {
        CHECK_CONTAINS(t.s, "Insights: kernel tensor_exp on trn1, 5.70 us device time (5.70 us without launch), "
                            "6 instructions");
        CHECK_CONTAINS(t.s, "  dma      52.63% active (3.00 us), 4 instructions on 2 queues: data moving; queues busy "
                            "(trigger to completion) 100.00% (5.70 us)");
        CHECK_CONTAINS(t.s, "  scalar   17.54% active (1.00 us), 2 instructions\n");
        CHECK_CONTAINS(t.s, "DMA with compute: 1.00 us (17.5%); 100% of the compute time runs under DMA");
        CHECK_CONTAINS(t.s, "dma q0 x2 3.30 us -> scalar x1 500 ns -> dma q1 x1 1.80 us");
        CHECK_CONTAINS(t.s, "share: scalar 8.8%, dma 89.5%, latency and waits 1.8%");
        CHECK_CONTAINS(t.s, "on the path: 45.6%");
        CHECK_CONTAINS(t.s, "scalar  2.85 us: waiting on DMA 2.80 us, semaphore latency 50 ns");
        CHECK_CONTAINS(t.s, "Findings: 1 problem, 1 good");
        CHECK_CONTAINS(t.s, "1. [high] DMA-bound");
        CHECK_CONTAINS(t.s, "   when: 3.30 us - 4.15 us, 4.65 us - 5.20 us\n");
        char line[96];
        snprintf(line, sizeof line, "tensor_exp.c:%d (2 instr, 3.60 us)  nk_store(", line_of(pr->prog, 2));
        CHECK_CONTAINS(t.s, line);
    }
    nk__text_free(&t);
    nk__insights_free(ins);
    nk_profile_free(pr);
}

TEST(insights_public_api)
{
    nk_profile *a = exp_profile(nk_kernel_tensor_exp);
    nk_insights *ins = insights_of(a);
    char *text = NULL, *json = NULL, *diff = NULL;
    CHECK_INT(nk_profile_insights(a, 0, &text), 0);
    CHECK_INT(nk_profile_insights(a, 1, &json), 0);
    CHECK_INT(nk_profile_diff(a, "x", a, "y", &diff), 0);
    nk_text t = {0}, j = {0};
    if (ins) {
        nk__insights_text(ins, &t);
        nk__insights_json(ins, &j);
        CHECK_STR(text, t.s);
        CHECK_STR(json, j.s);
    }
    CHECK_CONTAINS(diff, "a: x (kernel tensor_exp on trn1)\nb: y (kernel tensor_exp on trn1)");
    char *none = (char *)1;
    CHECK_INT(nk_profile_diff(a, NULL, NULL, NULL, &none), NK_EINVAL);
    CHECK(none == NULL);
    CHECK_INT(nk_profile_insights(NULL, 0, &none), NK_EINVAL);
    CHECK(none == NULL);
    free(text);
    free(json);
    free(diff);
    nk__text_free(&t);
    nk__text_free(&j);
    nk__insights_free(ins);
    nk_profile_free(a);
}

/* ------------------------------------------- advice tested by simulation */

typedef struct retrace_ctx {
    const nk_kernel_info *ki;
    nk_array *args;
    const char *target;
} retrace_ctx;

/* Re-traces a built-in kernel with bufs buffers per tile and a schedule. */
static int retime_builtin(void *ctx, int bufs, int schedule, double *device_ns)
{
    retrace_ctx *c = ctx;
    nk_kernel *k = nk_kernel_new(c->ki->name, c->ki->fn);
    nk_options o = {c->target, bufs, NULL, schedule};
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    int rc = nk_kernel_compile(k, c->args, c->ki->nargs, &o, &p);
    if (!rc)
        rc = nk_profile_capture(p, NULL, &pr);
    if (!rc)
        *device_ns = pr->tl->total_ns;
    nk_profile_free(pr);
    nk_kernel_free(k);
    return rc;
}

/* softmax [2048, 256] fp32 on trn1 at its defaults: a Vector/Scalar
 * ping-pong of small dependent instructions. With a re-trace the finding
 * names the buffer count that helps and its simulated time; compiling the
 * kernel that way realises it. */
TEST(insights_softmax_ping_pong_saving_is_realised)
{
    const nk_kernel_info *ki = nk_builtin_kernel("softmax");
    CHECK(ki != NULL);
    if (!ki)
        return;
    nk_array x = {NK_F32, 2, {2048, 256}, NULL};
    retrace_ctx c = {ki, &x, "trn1"};
    double before = -1;
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    nk_options o = {"trn1", 0, NULL, NK_SCHED_LIST};
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, &o, &p), 0);
    CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    if (!pr) {
        nk_kernel_free(k);
        return;
    }
    before = pr->tl->total_ns;
    nk_ins_retrace rt = {retime_builtin, &c};
    nk_insights *ins = NULL, *plain = NULL;
    CHECK_INT(nk__insights_build_retrace(pr, &rt, &ins), 0);
    CHECK_INT(nk__insights_build(pr, &plain), 0);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_PING_PONG) : NULL;
    CHECK(f != NULL);
    if (f) {
        double saving = -1, bufs = -1, predicted = -1;
        for (int e = 0; e < f->nev; e++) {
            if (!strcmp(f->ev[e].name, "simulated_saving"))
                saving = f->ev[e].value;
            if (!strcmp(f->ev[e].name, "buffers"))
                bufs = f->ev[e].value;
            if (!strcmp(f->ev[e].name, "simulated_time"))
                predicted = f->ev[e].value;
        }
        printf("  softmax [2048, 256] trn1: %.2f us; finding predicts %.0f buffers: %.2f us (-%.2f us)\n",
               before / 1000, bufs, predicted / 1000, saving / 1000);
        CHECK(bufs >= 3);
        CHECK(saving > 0.1 * before);  /* more than 10% of the kernel */
        CHECK_NEAR(f->score_ns, saving, 1e-9, 0); /* ranked by the simulated saving */
        CHECK_CONTAINS(f->suggestion, "Simulated (re-traced and re-timed)");
        CHECK(f->nlines >= 2);
        /* apply it */
        nk_kernel *k2 = nk_kernel_new(ki->name, ki->fn);
        nk_options o2 = {"trn1", (int)bufs, NULL, NK_SCHED_LIST};
        const nk_program *p2 = NULL;
        nk_profile *pr2 = NULL;
        CHECK_INT(nk_kernel_compile(k2, &x, 1, &o2, &p2), 0);
        CHECK_INT(nk_profile_capture(p2, NULL, &pr2), 0);
        if (pr2) {
            printf("  realised: %.2f us\n", pr2->tl->total_ns / 1000);
            CHECK_NEAR(pr2->tl->total_ns, predicted, 1e-6, 0);
            CHECK_NEAR(before - pr2->tl->total_ns, saving, 1e-6, 0);
        }
        nk_profile_free(pr2);
        nk_kernel_free(k2);
    }
    /* without the kernel at hand, the same finding says it is not simulated */
    const nk_finding *g = plain ? nk__insights_find(plain, NK_RULE_PING_PONG) : NULL;
    CHECK(g != NULL);
    if (g)
        CHECK_CONTAINS(g->suggestion, "Not simulated");
    nk__insights_free(ins);
    nk__insights_free(plain);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* In trace order with 4 buffers, softmax's engines stall in order; the list
 * schedule, simulated on the profile's program alone, removes it. */
TEST(insights_in_order_stall_simulated_by_the_list_schedule)
{
    const nk_kernel_info *ki = nk_builtin_kernel("softmax");
    if (!ki) {
        CHECK(0);
        return;
    }
    nk_array x = {NK_F32, 2, {2048, 256}, NULL};
    double t[2] = {-1, -1};
    nk_insights *ins = NULL;
    nk_profile *prs[2] = {NULL, NULL};
    nk_kernel *ks[2];
    for (int s = 0; s < 2; s++) {
        ks[s] = nk_kernel_new(ki->name, ki->fn);
        nk_options o = {"trn1", 4, NULL, s ? NK_SCHED_LIST : NK_SCHED_TRACE_ORDER};
        const nk_program *p = NULL;
        if (!nk_kernel_compile(ks[s], &x, 1, &o, &p) && !nk_profile_capture(p, NULL, &prs[s]))
            t[s] = prs[s]->tl->total_ns;
    }
    CHECK(t[0] > 0 && t[1] > 0);
    if (prs[0])
        CHECK_INT(nk__insights_build(prs[0], &ins), 0);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_INORDER_STALL) : NULL;
    CHECK(f != NULL);
    if (f) {
        CHECK_CONTAINS(f->suggestion, "Simulated (re-scheduled and re-timed): the list schedule");
        CHECK_NEAR(t[0] - f->score_ns, t[1], 1e-6, 0); /* realised by compiling with NK_SCHED_LIST */
        printf("  softmax 4 buffers trace order %.2f us; in-order-stall predicts %.2f us; list schedule %.2f us\n",
               t[0] / 1000, (t[0] - f->score_ns) / 1000, t[1] / 1000);
    }
    nk__insights_free(ins);
    for (int s = 0; s < 2; s++) {
        nk_profile_free(prs[s]);
        nk_kernel_free(ks[s]);
    }
}

/* The profile of a built-in kernel compiled with bufs buffers per tile (0:
 * the target's default) and the list schedule, on arguments of these shapes
 * (NULL: its example shapes); no values (timing only). k is the caller's. */
static nk_profile *builtin_profile(nk_kernel *k, const nk_array *shapes, int bufs)
{
    nk_options o = {"trn1", bufs, NULL, NK_SCHED_LIST};
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    if (nk_kernel_compile(k, shapes, nk_builtin_kernel(nk_kernel_name(k))->nargs, &o, &p) ||
        nk_profile_capture(p, NULL, &pr))
        return NULL;
    return pr;
}

static void example_shapes(const nk_kernel_info *ki, nk_array *a)
{
    for (int i = 0; i < ki->nargs; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].dtype = ki->args[i].dtype;
        a[i].ndim = ki->args[i].ndim;
        memcpy(a[i].shape, ki->args[i].shape, sizeof a[i].shape);
    }
}

static double evidence_of(const nk_finding *f, const char *name)
{
    for (int e = 0; e < f->nev; e++)
        if (!strcmp(f->ev[e].name, name))
            return f->ev[e].value;
    return -1;
}

/* Findings whose advice is a buffer count: with a re-trace the simulated
 * time is the time the kernel takes when compiled with that count, and the
 * ranking uses the simulated saving; without one, the figure is an estimate. */
TEST(insights_buffer_advice_simulated_and_realised)
{
    struct {
        const char *kernel;
        int64_t shape[2][2]; /* {0}: the example shapes */
        int rule;
    } cases[] = {
        {"matmul_tiled", {{0}}, NK_RULE_DMA_LATENCY},
        {"matmul_tiled", {{512, 128}, {512, 2048}}, NK_RULE_ENGINES_NO_OVERLAP},
        {"softmax", {{2048, 256}}, NK_RULE_ENGINES_NO_OVERLAP},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const nk_kernel_info *ki = nk_builtin_kernel(cases[c].kernel);
        CHECK(ki != NULL);
        if (!ki)
            continue;
        nk_array x[NK_KERNEL_MAX_ARGS];
        example_shapes(ki, x);
        for (int i = 0; i < ki->nargs && cases[c].shape[0][0]; i++)
            if (cases[c].shape[i][0])
                memcpy(x[i].shape, cases[c].shape[i], 2 * sizeof(int64_t));
        nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
        nk_profile *pr = builtin_profile(k, x, 0);
        CHECK(pr != NULL);
        retrace_ctx rc = {ki, x, "trn1"};
        nk_ins_retrace rt = {retime_builtin, &rc};
        nk_insights *ins = NULL, *plain = NULL;
        if (pr) {
            CHECK_INT(nk__insights_build_retrace(pr, &rt, &ins), 0);
            CHECK_INT(nk__insights_build(pr, &plain), 0);
        }
        const nk_finding *f = ins ? nk__insights_find(ins, cases[c].rule) : NULL;
        CHECK(f != NULL);
        if (f) {
            double bufs = evidence_of(f, "buffers"), predicted = evidence_of(f, "simulated_time");
            double saving = evidence_of(f, "simulated_saving");
            CHECK(bufs >= 3);
            CHECK(saving >= 0.01 * pr->tl->total_ns);
            CHECK_NEAR(f->score_ns, saving, 1e-9, 0);
            CHECK_CONTAINS(f->suggestion, "Simulated (re-traced and re-timed)");
            nk_profile *done = builtin_profile(k, x, (int)bufs);
            CHECK(done != NULL);
            if (done) {
                printf("  %s %s: %.2f us; predicted with %.0f buffers %.2f us; compiled so %.2f us\n", ki->name,
                       nk__ins_rule_name(cases[c].rule), pr->tl->total_ns / 1000, bufs, predicted / 1000,
                       done->tl->total_ns / 1000);
                CHECK_NEAR(done->tl->total_ns, predicted, 1e-6, 0); /* the same model on the same program */
            }
            nk_profile_free(done);
        }
        const nk_finding *g = plain ? nk__insights_find(plain, cases[c].rule) : NULL;
        CHECK(g != NULL);
        if (g) {
            CHECK_CONTAINS(g->suggestion, "Estimate, not simulated: re-tracing with other buffer counts needs the "
                                          "kernel");
            CHECK(evidence_of(g, "simulated_saving") < 0);
        }
        nk__insights_free(ins);
        nk__insights_free(plain);
        nk_profile_free(pr);
        nk_kernel_free(k);
    }
}

/* A re-trace that runs out of memory fails the build with NK_ENOMEM: the
 * findings would otherwise depend on the memory left (the advice dropped
 * as if no buffer count helped). Other failures only leave that variant out. */
static int retime_status;
static int retime_failing(void *ctx, int bufs, int schedule, double *device_ns)
{
    (void)ctx, (void)bufs, (void)schedule, (void)device_ns;
    return retime_status;
}

TEST(insights_retrace_out_of_memory_is_returned)
{
    const nk_kernel_info *ki = nk_builtin_kernel("matmul_tiled");
    nk_array x[NK_KERNEL_MAX_ARGS];
    example_shapes(ki, x);
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    nk_profile *pr = builtin_profile(k, x, 0);
    CHECK(pr != NULL);
    nk_ins_retrace rt = {retime_failing, NULL};
    nk_insights *ins = NULL;
    retime_status = NK_ENOMEM;
    if (pr)
        CHECK_INT(nk__insights_build_retrace(pr, &rt, &ins), NK_ENOMEM);
    CHECK(ins == NULL);
    retime_status = NK_EINVAL; /* a variant that cannot be compiled: the finding stays, not simulated */
    if (pr)
        CHECK_INT(nk__insights_build_retrace(pr, &rt, &ins), 0);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_DMA_LATENCY) : NULL;
    CHECK(f == NULL || !strstr(f->suggestion, "Simulated ("));
    nk__insights_free(ins);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* matmul_blocked_free at its example shapes: DMA-bound with DMA start
 * latency exposed, and the rule's advice is more buffers; but no buffer
 * count changes its time, so with a re-trace the advice is not given. */
TEST(insights_buffer_advice_not_given_when_it_does_not_help)
{
    const nk_kernel_info *ki = nk_builtin_kernel("matmul_blocked_free");
    CHECK(ki != NULL);
    if (!ki)
        return;
    nk_array x[NK_KERNEL_MAX_ARGS];
    example_shapes(ki, x);
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    nk_profile *pr = builtin_profile(k, x, 0);
    CHECK(pr != NULL);
    if (!pr) {
        nk_kernel_free(k);
        return;
    }
    for (int b = 3; b <= 4; b++) { /* independently: more buffers do not help */
        nk_profile *more = builtin_profile(k, x, b);
        CHECK(more && more->tl->total_ns > 0.99 * pr->tl->total_ns);
        nk_profile_free(more);
    }
    retrace_ctx rc = {ki, x, "trn1"};
    nk_ins_retrace rt = {retime_builtin, &rc};
    nk_insights *ins = NULL, *plain = NULL;
    CHECK_INT(nk__insights_build_retrace(pr, &rt, &ins), 0);
    CHECK_INT(nk__insights_build(pr, &plain), 0);
    const nk_finding *g = plain ? nk__insights_find(plain, NK_RULE_DMA_LATENCY) : NULL;
    CHECK(g != NULL);
    if (g)
        CHECK_CONTAINS(g->suggestion, "give it more buffers");
    CHECK(ins && !nk__insights_find(ins, NK_RULE_DMA_LATENCY));
    for (uint32_t i = 0; ins && i < ins->n; i++)
        CHECK(!strstr(ins->f[i].suggestion, "give it more buffers"));
    nk__insights_free(ins);
    nk__insights_free(plain);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* ------------------------------------------------ partitions and PSUM banks */

static int64_t g_rows = 128;
static int L_ROWS_ACT;

/* exp(exp(exp(exp(in)))) of in[1024, 512] in tiles of g_rows rows. */
static void k_rows(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(1024, 512), NK_F32, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, i, 1024 / g_rows) {
        nk_range r = nk_r(i * g_rows, (i + 1) * g_rows);
        nk_tensor x = nk_load(nc, nk_ix(nc, in, r, NK_ALL));
        nk_tensor t = nk_ndarray(nc, NK_SHAPE(g_rows, 512), NK_F32, NK_SBUF);
        L_ROWS_ACT = __LINE__; nk_isa_activation(nc, t, NK_ACT_EXP, x, nk_imm(0), nk_imm(1), NK_NONE);
        for (int k = 0; k < 3; k++) /* Scalar-bound: three more exps per tile */
            nk_isa_activation(nc, t, NK_ACT_EXP, t, nk_imm(0), nk_imm(1), NK_NONE);
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), t);
    }
    nk_return(nc, out);
}

static double engine_busy(const nk_profile *pr, int engine)
{
    double t = 0;
    for (uint32_t i = 0; i < pr->prog->ninstr; i++)
        if (pr->prog->instrs[i].engine == engine)
            t += pr->tl->instr_end[i] - pr->tl->instr_start[i];
    return t;
}

/* 64-row tiles: 16 exps on half the partitions. An instruction's cost does
 * not depend on its partitions in the model, so the estimate (8 of the 16
 * instructions saved) is what 128-row tiles measure: Scalar busy time halves.
 * 128-row tiles get no finding, and neither do 64-partition DMAs (they still
 * use all 16 DMA engines). */
TEST(insights_rule_partition_underuse)
{
    int64_t shape[1][2] = {{1024, 512}};
    g_rows = 64;
    nk_profile *half = capture2("rows64", k_rows, 1, shape, NULL);
    g_rows = 128;
    nk_profile *full = capture2("rows128", k_rows, 1, shape, NULL);
    nk_insights *hi = insights_of(half), *fi = insights_of(full);
    const nk_finding *f = hi ? nk__insights_find(hi, NK_RULE_PARTITIONS) : NULL;
    CHECK(f != NULL);
    if (f && full) {
        CHECK_STR(f->key, "partition-underuse:scalar");
        CHECK_NEAR(evidence(f, "instructions", NK_UNIT_COUNT), 64, 0, 0);
        CHECK_NEAR(evidence(f, "avg_partitions", NK_UNIT_COUNT), 64, 0, 0);
        CHECK_NEAR(evidence(f, "engine_share", NK_UNIT_PERCENT), 100, 1e-9, 0);
        /* the engine's saving is what 128-row tiles measure on the Scalar engine, within 2% (an instruction's
         * cost does not depend on its partitions; the few ns each differ come from its operands' timing) */
        double saved = engine_busy(half, NK_ENGINE_SCALAR) - engine_busy(full, NK_ENGINE_SCALAR);
        double realised = half->tl->total_ns - full->tl->total_ns;
        printf("  exp^4 [1024, 512]: Scalar busy %.2f us in 64-row tiles, %.2f us in 128-row tiles (engine estimate "
               "%.2f us); kernel %.2f -> %.2f us, estimate on the path %.2f us\n",
               engine_busy(half, NK_ENGINE_SCALAR) / 1000, engine_busy(full, NK_ENGINE_SCALAR) / 1000,
               evidence(f, "engine_saving", NK_UNIT_NS) / 1000, half->tl->total_ns / 1000, full->tl->total_ns / 1000,
               f->score_ns / 1000);
        CHECK(saved > 0);
        CHECK_NEAR(evidence(f, "engine_saving", NK_UNIT_NS), saved, 0.02, 0);
        CHECK_NEAR(evidence(f, "path_saving", NK_UNIT_NS), f->score_ns, 0, 0);
        /* the time at stake is the Scalar part on the critical path: at least a third of what 128-row tiles
         * gain, and no more (they also halve the loads and stores, each with its start latency) */
        CHECK(f->score_ns > realised / 3 && f->score_ns <= realised);
        CHECK_CONTAINS(f->suggestion, "Estimate, not simulated");
        CHECK(has_line(f, L_ROWS_ACT));
    }
    for (uint32_t i = 0; hi && i < hi->n; i++)
        CHECK(strcmp(hi->f[i].key, "partition-underuse:dma") != 0);
    CHECK(fi && !nk__insights_find(fi, NK_RULE_PARTITIONS));
    nk__insights_free(hi);
    nk__insights_free(fi);
    nk_profile_free(half);
    nk_profile_free(full);
}

static int64_t g_banks = 4;
static int L_PSUM_TILE;

/* Six iterations, each filling a PSUM tile of g_banks banks with g_banks
 * [128, 512] float32 matmul results (operands loaded once, before the loop)
 * and reducing the whole tile in one Vector instruction into its own column
 * of an SBUF result. */
static void k_psum(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor st = nk_load(nc, args[0]), mv = nk_load(nc, args[1]);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 6), NK_F32, NK_SHARED_HBM);
    nk_tensor res = nk_ndarray(nc, NK_SHAPE(128, 6), NK_F32, NK_SBUF);
    NK_AFFINE_RANGE(nc, i, 6) {
        L_PSUM_TILE = __LINE__; nk_tensor acc = nk_ndarray(nc, NK_SHAPE(128, g_banks * 512), NK_F32, NK_PSUM);
        for (int64_t j = 0; j < g_banks; j++)
            nk_isa_nc_matmul(nc, nk_ix(nc, acc, NK_ALL, nk_r(j * 512, (j + 1) * 512)), st, mv, 0);
        nk_isa_tensor_reduce(nc, nk_ix(nc, res, NK_ALL, nk_r(i, i + 1)), acc, NK_ALU_MAX, 1, 1);
    }
    nk_store(nc, out, res);
    nk_return(nc, out);
}

/* Five banks per tile: two buffers would need 10 of the 8 banks, so the
 * allocator keeps one, and each iteration's first matmul waits for the
 * previous iteration's reduction to release the tile; that wait is on the
 * critical path. With three banks per tile (two buffers fit) the Vector
 * engine is the bottleneck and the Tensor engine's waits cost nothing: no
 * finding; nor on matmul_tiled (one bank per tile, two buffers). */
TEST(insights_rule_psum_banks)
{
    int64_t shape[2][2] = {{128, 128}, {128, 512}};
    nk_dtype dt[2] = {NK_BF16, NK_BF16};
    g_banks = 5;
    nk_profile *pr = capture2("psum5", k_psum, 2, shape, dt);
    g_banks = 3;
    nk_profile *ok3 = capture2("psum3", k_psum, 2, shape, dt);
    nk_insights *ins = insights_of(pr), *i3 = insights_of(ok3);
    const nk_finding *f = ins ? nk__insights_find(ins, NK_RULE_PSUM_BANKS) : NULL;
    CHECK(f != NULL);
    if (f) {
        char key[64];
        snprintf(key, sizeof key, "psum-banks:test_insights.c:%d", L_PSUM_TILE);
        CHECK_STR(f->key, key);
        CHECK_CONTAINS(f->title, "PSUM bank pressure");
        CHECK_NEAR(evidence(f, "banks", NK_UNIT_COUNT), 8, 0, 0);
        CHECK_NEAR(evidence(f, "tile_banks", NK_UNIT_COUNT), 5, 0, 0);
        CHECK_NEAR(evidence(f, "tile_buffers", NK_UNIT_COUNT), 1, 0, 0);
        CHECK_NEAR(evidence(f, "peak_banks", NK_UNIT_COUNT), 5, 0, 0);
        /* by hand: iteration i's first matmul waits from the previous
         * matmul's end (the Tensor engine was free) to the end of iteration
         * i-1's reduction */
        const nk_program *p = pr->prog;
        double ref = 0, last_mm = -1, reduce_end = -1;
        int64_t iter = -1;
        for (uint32_t i = 0; i < p->ninstr; i++) {
            const nk_instr *in = &p->instrs[i];
            if (in->op == NK_OP_MATMUL && in->iter != iter) {
                if (iter >= 0)
                    ref += fmax(0, fmin(pr->tl->instr_end[i], reduce_end) - last_mm);
                iter = in->iter;
            }
            if (in->op == NK_OP_MATMUL)
                last_mm = pr->tl->instr_end[i];
            else if (in->engine == NK_ENGINE_VECTOR)
                reduce_end = pr->tl->instr_end[i];
        }
        printf("  5-bank PSUM tile, one buffer: %.2f us, stall %.2f us (by hand %.2f us)\n", pr->tl->total_ns / 1000,
               evidence(f, "stall", NK_UNIT_NS) / 1000, ref / 1000);
        CHECK(ref > 0.1 * pr->tl->total_ns);
        CHECK_NEAR(evidence(f, "stall", NK_UNIT_NS), ref, 1e-9, 1e-6);
        CHECK_NEAR(f->score_ns, ref, 1e-9, 1e-6);
        CHECK(has_line(f, L_PSUM_TILE));
        CHECK_CONTAINS(f->suggestion, "Free banks sooner");
        CHECK_CONTAINS(f->suggestion, "Estimate, not simulated");
    }
    CHECK(i3 && !nk__insights_find(i3, NK_RULE_PSUM_BANKS));
    const nk_kernel_info *ki = nk_builtin_kernel("matmul_tiled");
    nk_array x[NK_KERNEL_MAX_ARGS];
    example_shapes(ki, x);
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    nk_profile *mt = builtin_profile(k, x, 0);
    nk_insights *im = insights_of(mt);
    CHECK(im && !nk__insights_find(im, NK_RULE_PSUM_BANKS));
    nk__insights_free(im);
    nk_profile_free(mt);
    nk_kernel_free(k);
    nk__insights_free(ins);
    nk__insights_free(i3);
    nk_profile_free(pr);
    nk_profile_free(ok3);
}
