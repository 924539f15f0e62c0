/*
 * test_sched_total.c - nk__schedule_total, the what-if device time of
 * another schedule without a copy of the program, gives the total of the
 * long way (copy the program, schedule the copy, time it) bit for bit, and
 * leaves the program as it was.
 */
#include "test.h"
#include "examples.h"

#include "arch/arch.h"
#include "kernels.h"
#include "nkint.h"
#include "sched/program_io.h"
#include "timing/timing.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static double long_way(const nk_program *p, int mode, const nk_arch *arch)
{
    nk_program *q = NULL;
    nk_timeline *tl = NULL;
    double t = -1;
    if (!nk__program_copy(p, &q) && !nk__schedule(q, mode) && !nk__time_program(q, arch, &tl))
        t = tl->total_ns;
    nk__timeline_free(tl);
    nk_program_free(q);
    return t;
}

TEST(sched_total_matches_copy_schedule_time)
{
    /* kernels whose list schedule differs from their trace order, an SPMD
     * grid (instances grouped), a sequence, both schedules compiled */
    static const char *names[] = {"matmul_tiled", "softmax", "rmsnorm", "layernorm", "spmd_tensor_add",
                                  "attention_fwd", "mamba_v2", "spmd_matmul"};
    const nk_arch *trn2 = nk__arch_get("trn2");
    CHECK(trn2 != NULL);
    int compared = 0, differs = 0;
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        const nk_kernel_info *ki = nk_builtin_kernel(names[n]);
        if (!ki)
            continue;
        nk_array args[NK_KERNEL_MAX_ARGS];
        example_shapes(ki, args);
        for (int compiled = 0; compiled < 2; compiled++) {
            nk_options o = {.target = "trn1", .schedule = compiled ? NK_SCHED_TRACE_ORDER : NK_SCHED_LIST};
            memcpy(o.grid, ki->grid, sizeof o.grid);
            nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
            const nk_program *p = NULL;
            CHECK_INT(nk_kernel_compile(k, args, ki->nargs, &o, &p), 0);
            if (!p) {
                nk_kernel_free(k);
                continue;
            }
            size_t bytes = (size_t)p->ninstr * sizeof *p->instrs;
            nk_instr *before = malloc(bytes ? bytes : 1);
            if (before)
                memcpy(before, p->instrs, bytes);
            for (int mode = 0; mode < 2; mode++) {
                const nk_arch *arches[2] = {NULL, trn2};
                for (int a = 0; a < 2; a++) {
                    int m = mode ? NK_SCHED_TRACE_ORDER : NK_SCHED_LIST;
                    double want = long_way(p, m, arches[a]), got = -2;
                    CHECK_INT(nk__schedule_total(p, m, arches[a], &got), 0);
                    if (!(want > 0 && got == want))
                        nk_test_fail(__FILE__, __LINE__, "%s (compiled %s), mode %d on %s: %.17g ns, the copy %.17g",
                                     ki->name, compiled ? "trace order" : "list", m, a ? "trn2" : "trn1", got, want);
                    compared++;
                }
                double l = -1, t = -1;
                nk__schedule_total(p, NK_SCHED_LIST, NULL, &l);
                nk__schedule_total(p, NK_SCHED_TRACE_ORDER, NULL, &t);
                differs += l != t;
            }
            CHECK(before && !memcmp(before, p->instrs, bytes)); /* p as it was */
            free(before);
            nk_kernel_free(k);
        }
    }
    CHECK(compared >= 40);
    CHECK(differs > 0); /* some schedule changes the time: the modes are not both a no-op */
    double t = 0;
    const nk_kernel_info *ki = nk_builtin_kernel("tensor_exp");
    if (ki) {
        nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
        nk_array a = {ki->args[0].dtype, ki->args[0].ndim, {0}, NULL};
        memcpy(a.shape, ki->args[0].shape, sizeof a.shape);
        const nk_program *p = NULL;
        CHECK_INT(nk_kernel_compile(k, &a, 1, NULL, &p), 0);
        if (p)
            CHECK_INT(nk__schedule_total(p, 7, NULL, &t), NK_EINVAL);
        CHECK(t == -1);
        nk_kernel_free(k);
    }
}

/* The program compiled as p was, with the dependency search's buckets set
 * to (shift, span); NULL when it fails. */
static const nk_program *compile_with_buckets(const nk_kernel_info *ki, const nk_array *args, uint32_t shift,
                                              uint32_t span, uint32_t rows, nk_kernel **k)
{
    uint32_t s0 = nk__sched_bucket_shift, n0 = nk__sched_bucket_span, r0 = nk__sched_hbm_row_shift;
    nk__sched_bucket_shift = shift;
    nk__sched_bucket_span = span;
    nk__sched_hbm_row_shift = rows;
    nk_options o = {ki->grid[0] ? "trn2" : "trn1", 0, NULL, NK_SCHED_LIST};
    memcpy(o.grid, ki->grid, sizeof o.grid);
    *k = nk_kernel_new(ki->name, ki->fn);
    const nk_program *p = NULL;
    if (nk_kernel_compile(*k, args, ki->nargs, &o, &p))
        p = NULL;
    nk__sched_bucket_shift = s0;
    nk__sched_bucket_span = n0;
    nk__sched_hbm_row_shift = r0;
    return p;
}

/* The same instructions in the same order, with the same dependencies and
 * DMA queues. */
static int same_schedule(const nk_program *a, const nk_program *b)
{
    if (a->ninstr != b->ninstr || a->ndeps != b->ndeps || (a->ndeps && memcmp(a->deps, b->deps, a->ndeps * 4)))
        return 0;
    for (uint32_t i = 0; i < a->ninstr; i++) {
        const nk_instr *x = &a->instrs[i], *y = &b->instrs[i];
        if (x->op != y->op || x->loc != y->loc || x->iter != y->iter || x->dep_off != y->dep_off ||
            x->ndep != y->ndep || x->queue != y->queue || x->dst.buf != y->dst.buf || x->dst.off != y->dst.off)
            return 0;
    }
    return 1;
}

/* Case i of the schedule tests below: built-in kernel i on its example
 * arguments, or, for i == nk_builtin_kernel_count, matmul_tiled of more
 * than 8,000 instructions by shape only (no values); NULL if it cannot be
 * made. */
static const nk_kernel_info *sched_case(int i, nk_array *args)
{
    if (i < nk_builtin_kernel_count)
        return nk_kernel_example_args(&nk_builtin_kernels[i], 3, args) ? NULL : &nk_builtin_kernels[i];
    const nk_kernel_info *ki = nk_builtin_kernel("matmul_tiled");
    args[0] = (nk_array){NK_BF16, 2, {2048, 4096}, NULL};
    args[1] = (nk_array){NK_BF16, 2, {2048, 4096}, NULL};
    return ki;
}

static void sched_case_free(int i, const nk_kernel_info *ki, nk_array *args)
{
    if (i < nk_builtin_kernel_count)
        for (int a = 0; a < ki->nargs; a++)
            nk_array_free(&args[a]);
}

/* The accesses are searched by address buckets (bytes on chip, rows in
 * HBM): with one bucket for everything (one list per memory, as a plain
 * search), with tiny buckets (most accesses in many, many wide), with one
 * HBM row a bucket (a store of a tile's rows is wide) and with the default,
 * every built-in kernel gets the same dependencies, queues and order, and
 * so does a matmul of more than 8,000 instructions (its output's 256 stores,
 * 8 side by side in each of 32 row blocks). */
TEST(sched_address_buckets_find_what_one_list_finds)
{
    enum { NCFG = 4 };
    static const uint32_t cfg[NCFG][3] = {{40, UINT32_MAX, 40}, {4, 3, 6}, {10, 16, 0}, {10, 16, 4}};
    int kernels = 0;
    for (int i = 0; i <= nk_builtin_kernel_count; i++) {
        nk_array args[NK_KERNEL_MAX_ARGS];
        const nk_kernel_info *ki = sched_case(i, args);
        CHECK(ki != NULL);
        if (!ki)
            continue;
        nk_kernel *k[NCFG] = {NULL};
        const nk_program *p[NCFG];
        int made = 1;
        for (int c = 0; c < NCFG; c++) {
            p[c] = compile_with_buckets(ki, args, cfg[c][0], cfg[c][1], cfg[c][2], &k[c]);
            made &= p[c] != NULL;
        }
        CHECK(made);
        if (made) {
            for (int c = 1; c < NCFG; c++)
                if (!same_schedule(p[0], p[c]))
                    nk_test_fail(__FILE__, __LINE__, "%s: buckets (%u, %u, %u) change the schedule", ki->name,
                                 cfg[c][0], cfg[c][1], cfg[c][2]);
            kernels++;
            if (i == nk_builtin_kernel_count)
                CHECK(p[0]->ninstr > 8000);
        }
        for (int c = 0; c < NCFG; c++)
            nk_kernel_free(k[c]);
        sched_case_free(i, ki, args);
    }
    CHECK_INT(kernels, nk_builtin_kernel_count + 1);
}

/* Rows of an HBM tensor written by four stores of 128 rows and read back
 * in ranges that straddle them, then written whole by one store (of a
 * [128, 256] view of its 512 rows: wide in small buckets) and read again:
 * each read must wait for exactly the stores whose rows it shares and
 * that no later store covers, whatever the row buckets. */
static const int64_t hbm_reads[][2] = {{100, 130}, {250, 260}, {384, 400}, {130, 250}, {256, 257}, {0, 512}};
static const int64_t hbm_reads_after[][2] = {{100, 130}, {300, 310}, {511, 512}};
enum { HBM_READS = sizeof hbm_reads / sizeof *hbm_reads, HBM_READS_AFTER = sizeof hbm_reads_after / sizeof *hbm_reads_after };

static void hbm_read_back(nk_ctx *nc, nk_tensor mid, nk_tensor out, int64_t r0, int64_t r1)
{
    for (int64_t a = r0; a < r1; a += 128) { /* in parts of at most 128 rows, copied out */
        int64_t b = a + 128 < r1 ? a + 128 : r1;
        nk_store(nc, nk_ix(nc, out, nk_r(a, b), NK_ALL), nk_load(nc, nk_ix(nc, mid, nk_r(a, b), NK_ALL)));
    }
}

static void k_hbm_rows(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = args[0], mid = nk_ndarray(nc, NK_SHAPE(512, 64), NK_F32, NK_SHARED_HBM);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(512, 64), NK_F32, NK_SHARED_HBM);
    for (int t = 0; t < 4; t++)
        nk_store(nc, nk_ix(nc, mid, nk_r(128 * t, 128 * t + 128), NK_ALL),
                 nk_load(nc, nk_ix(nc, x, nk_r(128 * t, 128 * t + 128), NK_ALL)));
    for (int r = 0; r < HBM_READS; r++)
        hbm_read_back(nc, mid, out, hbm_reads[r][0], hbm_reads[r][1]);
    nk_store(nc, nk_reshape(nc, mid, NK_SHAPE(128, 256)), nk_load(nc, nk_reshape(nc, x, NK_SHAPE(128, 256))));
    for (int r = 0; r < HBM_READS_AFTER; r++)
        hbm_read_back(nc, mid, out, hbm_reads_after[r][0], hbm_reads_after[r][1]);
    nk_return(nc, out);
}

/* Each read waits for every store it shares rows with and no later store
 * covers (it may wait for others too, for its SBUF tile's sake), and for
 * the same stores with any row buckets as with one bucket for all (2^40
 * rows: one list). Stores are told apart by their place among the stores
 * into the tensor: 0..3 the 128-row ones, 4 the whole one. */
TEST(sched_hbm_row_buckets_wait_for_the_stores_a_read_shares_rows_with)
{
    static const uint32_t rows[] = {40, 0, 1, 4, 6, 7};
    enum { NC = sizeof rows / sizeof *rows, MAXR = 16 };
    unsigned got[NC][MAXR];
    nk_array x = {NK_F32, 2, {512, 64}, NULL};
    for (int c = 0; c < NC; c++) {
        uint32_t r0 = nk__sched_hbm_row_shift, s0 = nk__sched_bucket_span;
        nk__sched_hbm_row_shift = rows[c];
        nk__sched_bucket_span = 3; /* a 128-row store is wide below 64 rows a bucket, the whole one below 256 */
        nk_kernel *k = nk_kernel_new("hbm_rows", k_hbm_rows);
        nk_options o = {"trn1", 0, NULL, NK_SCHED_TRACE_ORDER};
        const nk_program *p = NULL;
        CHECK_INT(nk_kernel_compile(k, &x, 1, &o, &p), 0);
        nk__sched_hbm_row_shift = r0;
        nk__sched_bucket_span = s0;
        int reads = 0, stores = 0;
        uint32_t mid = 0, store_at[5] = {0};
        for (uint32_t i = 0; p && i < p->ninstr; i++) {
            const nk_instr *in = &p->instrs[i];
            if (in->op == NK_OP_LOAD && in->src[0].buf && p->bufs[in->src[0].buf].role != NK_ROLE_INPUT)
                mid = in->src[0].buf;
        }
        for (uint32_t i = 0; p && i < p->ninstr; i++) {
            const nk_instr *in = &p->instrs[i];
            if (in->op == NK_OP_STORE && in->dst.buf == mid && stores < 5)
                store_at[stores++] = i;
            if (in->op != NK_OP_LOAD || in->src[0].buf != mid || reads == MAXR)
                continue;
            /* rows [a, b) of mid */
            int64_t a = in->src[0].off / 64, b = a + nk__lay(p, &in->src[0])->shape[0];
            unsigned want = 0, g = 0;
            if (stores == 5)
                want = 1u << 4;
            else
                for (int t = 0; t < 4; t++)
                    if (a < 128 * t + 128 && 128 * t < b)
                        want |= 1u << t;
            for (uint32_t d = 0; d < in->ndep; d++)
                for (int t = 0; t < stores; t++)
                    if (p->deps[in->dep_off + d] == store_at[t])
                        g |= 1u << t;
            if ((g & want) != want)
                nk_test_fail(__FILE__, __LINE__, "rows %lld..%lld with 2^%u rows a bucket: waits for stores %#x, "
                             "not all of %#x", (long long)a, (long long)b, rows[c], g, want);
            if (c && g != got[0][reads])
                nk_test_fail(__FILE__, __LINE__, "rows %lld..%lld with 2^%u rows a bucket: waits for stores %#x, "
                             "with one list %#x", (long long)a, (long long)b, rows[c], g, got[0][reads]);
            got[c][reads++] = g;
        }
        CHECK_INT(stores, 5);
        CHECK_INT(reads, 9 + 3);
        nk_kernel_free(k);
    }
}

/* A tall HBM tensor (2^30 rows) written near its end: its row buckets are
 * bounded (HBM_BUCKETS_MAX over the tensor), not one per 2^4 rows up to
 * the highest row touched (a GiB of empty buckets). Compiled in a child
 * process limited to 512 MiB of address space (not under ASan, whose
 * shadow memory needs terabytes of it). */
static void k_tall_store(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    int64_t R = (int64_t)1 << 30;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(R, 64), NK_F32, NK_SHARED_HBM);
    nk_store(nc, nk_ix(nc, out, nk_r(R - 128, R), NK_ALL), nk_load(nc, args[0]));
    nk_store(nc, nk_ix(nc, out, nk_r(R - 256, R - 128), NK_ALL), nk_load(nc, args[0]));
    nk_return(nc, out);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SCHED_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SCHED_ASAN 1
#endif

TEST(sched_hbm_row_buckets_of_a_tall_tensor_stay_few)
{
#ifndef SCHED_ASAN
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit lim = {512u << 20, 512u << 20};
        setrlimit(RLIMIT_AS, &lim);
        nk_array a = {NK_F32, 2, {128, 64}, NULL};
        nk_kernel *k = nk_kernel_new("tall", k_tall_store);
        nk_options o = {"trn1", 0, NULL, NK_SCHED_TRACE_ORDER};
        const nk_program *p = NULL;
        int rc = nk_kernel_compile(k, &a, 1, &o, &p);
        _exit(rc == 0 && p && p->ninstr == 4 ? 0 : 1);
    }
    int st = 0;
    CHECK_INT(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
#else
    (void)k_tall_store;
#endif
}

/* Every built-in kernel and a matmul of more than 8,000 instructions
 * compiled on one thread, two and four: the same order, dependencies,
 * queues, chosen policy and trace order's time. untimed: with every program
 * taken as too large to time its candidates; followed: with every program
 * that times them on two threads following the list pass. */
static void schedules_alike_on_threads(int untimed, int followed)
{
    static const int threads[] = {1, 2, 4};
    uint32_t keep = nk__sched_timed_max, keep_follow = nk__sched_follow_min;
    if (untimed)
        nk__sched_timed_max = 0;
    if (followed)
        nk__sched_follow_min = 0;
    int kernels = 0, chose_list = 0;
    for (int i = 0; i <= nk_builtin_kernel_count; i++) {
        nk_array args[NK_KERNEL_MAX_ARGS];
        const nk_kernel_info *ki = sched_case(i, args);
        CHECK(ki != NULL);
        if (!ki)
            continue;
        nk_kernel *k[3] = {NULL, NULL, NULL};
        const nk_program *p[3] = {NULL, NULL, NULL};
        for (int t = 0; t < 3; t++) {
            nk_options o = {.target = ki->grid[0] ? "trn2" : "trn1", .schedule = NK_SCHED_LIST, .threads = threads[t]};
            memcpy(o.grid, ki->grid, sizeof o.grid);
            k[t] = nk_kernel_new(ki->name, ki->fn);
            if (nk_kernel_compile(k[t], args, ki->nargs, &o, &p[t]))
                p[t] = NULL;
        }
        CHECK(p[0] && p[1] && p[2]);
        if (p[0] && p[1] && p[2]) {
            for (int t = 0; t < 3; t++)
                if (untimed && ((p[t]->ninstr > 1 && p[t]->sched_policy != 1) || p[t]->trace_order_ns != -1))
                    nk_test_fail(__FILE__, __LINE__, "%s: %d threads: timed candidates", ki->name, threads[t]);
            for (int t = 1; t < 3; t++)
                if (!same_schedule(p[0], p[t]) || p[0]->sched_policy != p[t]->sched_policy ||
                    memcmp(&p[0]->trace_order_ns, &p[t]->trace_order_ns, sizeof(double)))
                    nk_test_fail(__FILE__, __LINE__, "%s: %d threads schedule it otherwise than one", ki->name,
                                 threads[t]);
            kernels++;
            chose_list += p[0]->sched_policy != 0;
            if (i == nk_builtin_kernel_count && !untimed)
                CHECK(p[0]->ninstr > 8000 && p[0]->trace_order_ns > 0);
        }
        for (int t = 0; t < 3; t++)
            nk_kernel_free(k[t]);
        sched_case_free(i, ki, args);
    }
    nk__sched_timed_max = keep;
    nk__sched_follow_min = keep_follow;
    CHECK_INT(kernels, nk_builtin_kernel_count + 1);
    CHECK(chose_list > 0); /* some kernel keeps a list order: the candidates are not all trace order */
}

/* The candidate schedules are timed on as many threads as there are (trace
 * order's while the list orders are made), the choice made afterwards in
 * the serial order. */
TEST(sched_candidates_choose_alike_on_any_threads) { schedules_alike_on_threads(0, 0); }

/* On two threads, a program of 4,096 instructions or more has the first
 * list policy's graph derived as the list pass writes its order, and trace
 * order timed after it; here every program does, those whose first policy
 * is no candidate (its graph made for nothing) among them. */
TEST(sched_candidates_followed_alike_on_any_threads) { schedules_alike_on_threads(0, 1); }

/* A program too large to time its candidates keeps the first list order
 * (the list's durations estimated on a second thread while the
 * conservative graph is derived). */
TEST(sched_untimed_orders_alike_on_any_threads) { schedules_alike_on_threads(1, 0); }

/* An instruction's accesses, as the definition reads them (nk__region_of
 * on each operand, not the derivation's own tables): its sources (and its
 * output when it accumulates) are read, its outputs written. */
typedef struct access_set {
    nk__region r[6];
    uint8_t write[6];
    int n;
} access_set;

static void accesses_of(const nk_program *p, const nk_instr *in, access_set *a)
{
    a->n = 0;
    for (int k = 0; k < in->nsrc && k < 3; k++) {
        const nk_opnd *t = nk__src(p, in, k);
        if (t->buf) {
            a->r[a->n] = nk__region_of(p, t);
            a->write[a->n++] = 0;
        }
    }
    if (in->flags & NK_IF_ACCUMULATE) {
        a->r[a->n] = nk__region_of(p, &in->dst);
        a->write[a->n++] = 0;
    }
    a->r[a->n] = nk__region_of(p, &in->dst);
    a->write[a->n++] = 1;
    const nk_opnd *d2 = nk__dst2(p, in);
    if (d2->buf) {
        a->r[a->n] = nk__region_of(p, d2);
        a->write[a->n++] = 1;
    }
}

static int conflict(const access_set *x, const access_set *y)
{
    for (int a = 0; a < x->n; a++)
        for (int b = 0; b < y->n; b++)
            if ((x->write[a] || y->write[b]) && nk__regions_overlap(&x->r[a], &y->r[b]))
                return 1;
    return 0;
}

/* The unit whose instructions complete in order: a core's compute engine.
 * UINT32_MAX for a DMA: a queue's DMAs may end out of order (each on its
 * own engines). */
static uint32_t unit_of_instr(const nk_program *p, const nk_instr *in)
{
    return in->engine == NK_ENGINE_DMA ? UINT32_MAX : in->engine + nk__instr_core(p, in) * NK_ENGINE_COUNT;
}

/* Checks p's dependencies against the definition, by brute force: each is a
 * conflict (the two share memory, one of them writing it), and every
 * conflict between two instructions is ordered by a path of dependencies
 * and compute engines' program order (an earlier instruction of the same
 * engine completes first). Returns the number of failures reported; adds
 * the dependencies checked (conflicts, each) to *nconf. */
static int check_graph(const nk_program *p, const char *what, uint64_t *nconf)
{
    uint32_t n = p->ninstr, words = (n + 63) / 64;
    access_set *acc = malloc((n ? n : 1) * sizeof *acc);
    uint64_t *reach = calloc((size_t)n * words + 1, sizeof *reach); /* reach[i]: what i comes after */
    uint32_t *last = malloc(NK_ENGINE_COUNT * NK_MAX_CORES * sizeof *last);
    int bad = 0;
    if (!acc || !reach || !last) {
        nk_test_fail(__FILE__, __LINE__, "%s: out of memory", what);
        bad = 1;
        goto out;
    }
    memset(last, 0xff, NK_ENGINE_COUNT * NK_MAX_CORES * sizeof *last);
    for (uint32_t i = 0; i < n && !bad; i++) {
        const nk_instr *in = &p->instrs[i];
        uint64_t *ri = reach + (size_t)i * words;
        accesses_of(p, in, &acc[i]);
        for (uint32_t k = 0; k < in->ndep; k++) {
            uint32_t j = p->deps[in->dep_off + k];
            if (j >= i || !conflict(&acc[i], &acc[j])) {
                nk_test_fail(__FILE__, __LINE__, "%s: instruction %u waits for %u, which it has no conflict with",
                             what, i, j);
                bad++;
                break;
            }
            for (uint32_t w = 0; w < words; w++)
                ri[w] |= reach[(size_t)j * words + w];
            ri[j / 64] |= 1ull << (j % 64);
            ++*nconf;
        }
        uint32_t u = unit_of_instr(p, in);
        if (u != UINT32_MAX && last[u] != UINT32_MAX) {
            uint32_t j = last[u];
            for (uint32_t w = 0; w < words; w++)
                ri[w] |= reach[(size_t)j * words + w];
            ri[j / 64] |= 1ull << (j % 64);
        }
        if (u != UINT32_MAX)
            last[u] = i;
        for (uint32_t j = 0; j < i && !bad; j++)
            if (!(ri[j / 64] >> (j % 64) & 1) && conflict(&acc[i], &acc[j])) {
                nk_test_fail(__FILE__, __LINE__, "%s: instruction %u conflicts with %u and may pass it", what, i, j);
                bad++;
            }
    }
out:
    free(acc);
    free(reach);
    free(last);
    return bad;
}

/* A list order keeps every conflict the way trace order has it (the list
 * pass reads the conservative graph, which holds for any order): the
 * trace-order program t scheduled again in list mode, each record tagged
 * with its trace position, puts every conflicting pair in trace order.
 * Returns the number of failures reported. */
static int check_list_keeps_conflicts(const nk_program *t, const char *what)
{
    nk_program *q = NULL;
    uint32_t n = t->ninstr, *pos = malloc((n ? n : 1) * sizeof *pos);
    access_set *acc = malloc((n ? n : 1) * sizeof *acc);
    int bad = 0;
    if (!pos || !acc || nk__program_copy(t, &q)) {
        nk_test_fail(__FILE__, __LINE__, "%s: out of memory", what);
        bad = 1;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++)
        q->instrs[i].iter = i; /* (the schedule reads no iteration) */
    if (nk__schedule(q, NK_SCHED_LIST)) {
        nk_test_fail(__FILE__, __LINE__, "%s: the list schedule failed", what);
        bad = 1;
        goto out;
    }
    for (uint32_t m = 0; m < n; m++)
        pos[q->instrs[m].iter] = m;
    for (uint32_t i = 0; i < n; i++)
        accesses_of(t, &t->instrs[i], &acc[i]);
    for (uint32_t i = 0; i < n && !bad; i++)
        for (uint32_t j = 0; j < i && !bad; j++)
            if (pos[j] > pos[i] && conflict(&acc[i], &acc[j])) {
                nk_test_fail(__FILE__, __LINE__, "%s: the list order puts %u before %u, which it conflicts with", what,
                             i, j);
                bad++;
            }
out:
    nk_program_free(q);
    free(pos);
    free(acc);
    return bad;
}

/* Every built-in kernel and a matmul of more than 8,000 instructions, in
 * trace order and in the list order chosen, timed or not, with the default
 * address buckets and with tiny ones (most accesses then wide, in their
 * key's own list), with the buffers' table and without: the dependency graph the compile step installs orders
 * every memory conflict, and holds nothing else. The definition is applied
 * by brute force over all pairs, from the operands' regions, so a search
 * that misses a conflict (a bucket or list not searched, a region misread,
 * an access dropped too early) fails here whatever the derivation's own
 * structures say. */
TEST(sched_graph_orders_every_conflict_and_nothing_else)
{
    static const struct {
        int mode;
        int untimed;
        uint32_t shift, span;
        const char *name;
        uint32_t table_min;
    } ways[] = {{NK_SCHED_TRACE_ORDER, 0, 10, 16, "trace order", UINT32_MAX},
                {NK_SCHED_LIST, 0, 10, 16, "list", UINT32_MAX},
                {NK_SCHED_LIST, 1, 10, 16, "untimed list", UINT32_MAX},
                {NK_SCHED_LIST, 0, 4, 3, "list, tiny buckets", UINT32_MAX},
                {NK_SCHED_LIST, 1, 4, 3, "untimed list, tiny buckets", UINT32_MAX},
                {NK_SCHED_TRACE_ORDER, 0, 10, 16, "trace order, buffers' table", 0},
                {NK_SCHED_LIST, 0, 10, 16, "list, buffers' table", 0},
                {NK_SCHED_LIST, 1, 4, 3, "untimed list, tiny buckets, buffers' table", 0}};
    enum { NWAYS = sizeof ways / sizeof *ways };
    uint32_t keep = nk__sched_timed_max, s0 = nk__sched_bucket_shift, n0 = nk__sched_bucket_span;
    uint32_t t0 = nk__sched_table_min;
    uint64_t nconf = 0;
    int checked = 0;
    for (int i = 0; i <= nk_builtin_kernel_count; i++) {
        nk_array args[NK_KERNEL_MAX_ARGS];
        const nk_kernel_info *ki = sched_case(i, args);
        CHECK(ki != NULL);
        if (!ki)
            continue;
        for (int w = 0; w < NWAYS; w++) {
            nk__sched_timed_max = ways[w].untimed ? 0 : keep;
            nk__sched_bucket_shift = ways[w].shift;
            nk__sched_bucket_span = ways[w].span;
            nk__sched_table_min = ways[w].table_min;
            nk_options o = {.target = ki->grid[0] ? "trn2" : "trn1", .schedule = ways[w].mode};
            memcpy(o.grid, ki->grid, sizeof o.grid);
            nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
            const nk_program *p = NULL;
            CHECK(k && !nk_kernel_compile(k, args, ki->nargs, &o, &p) && p);
            if (p) {
                char what[160];
                snprintf(what, sizeof what, "%s (%s)", ki->name, ways[w].name);
                check_graph(p, what, &nconf);
                if (ways[w].mode == NK_SCHED_TRACE_ORDER)
                    check_list_keeps_conflicts(p, what);
                checked++;
            }
            nk_kernel_free(k);
        }
        sched_case_free(i, ki, args);
    }
    nk__sched_timed_max = keep;
    nk__sched_bucket_shift = s0;
    nk__sched_bucket_span = n0;
    nk__sched_table_min = t0;
    CHECK_INT(checked, NWAYS * (nk_builtin_kernel_count + 1));
    CHECK(nconf > 100000); /* not vacuous: the graphs hold conflicts (about 690,000 over the cases here) */
}

/* A tile stored twice on one DMA queue (two row blocks of one tensor, which
 * share no byte in HBM), then written over in place: the write waits for
 * both stores' reads of it. A queue's DMAs need not end in order (each on
 * its own engines), so the second store's read does not stand for the
 * first's. */
static void k_stored_twice(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(384, 64), NK_F32, NK_SHARED_HBM);
    nk_tensor t = nk_load(nc, args[0]);
    nk_store(nc, nk_ix(nc, out, nk_r(0, 128), NK_ALL), t);
    nk_store(nc, nk_ix(nc, out, nk_r(128, 256), NK_ALL), t);
    nk_assign(nc, t, nk_exp(nc, t));
    nk_store(nc, nk_ix(nc, out, nk_r(256, 384), NK_ALL), t);
    nk_return(nc, out);
}

TEST(sched_a_write_waits_for_every_dma_reading_it_on_one_queue)
{
    static const int modes[] = {NK_SCHED_TRACE_ORDER, NK_SCHED_LIST};
    nk_array a = {NK_F32, 2, {128, 64}, NULL};
    uint64_t nconf = 0;
    for (int m = 0; m < 2; m++) {
        nk_kernel *k = nk_kernel_new("stored_twice", k_stored_twice);
        nk_options o = {"trn1", 0, NULL, modes[m]};
        const nk_program *p = NULL;
        CHECK(k && !nk_kernel_compile(k, &a, 1, &o, &p) && p);
        if (p) {
            uint32_t exp = UINT32_MAX, stores[3], ns = 0;
            for (uint32_t i = 0; i < p->ninstr; i++)
                if (p->instrs[i].engine == NK_ENGINE_DMA && nk__opnd_mem(p, &p->instrs[i].dst) == NK_SHARED_HBM &&
                    ns < 3)
                    stores[ns++] = i;
                else if (p->instrs[i].engine != NK_ENGINE_DMA)
                    exp = i;
            CHECK_INT(ns, 3);
            CHECK(exp != UINT32_MAX && ns == 3 && p->instrs[stores[0]].queue == p->instrs[stores[1]].queue);
            if (exp != UINT32_MAX && ns == 3) {
                const nk_instr *e = &p->instrs[exp];
                int waits0 = 0, waits1 = 0;
                for (uint32_t d = 0; d < e->ndep; d++) {
                    waits0 |= p->deps[e->dep_off + d] == stores[0];
                    waits1 |= p->deps[e->dep_off + d] == stores[1];
                }
                CHECK(waits0 && waits1);
            }
            check_graph(p, m ? "stored twice (list)" : "stored twice (trace order)", &nconf);
        }
        nk_kernel_free(k);
    }
}
