/*
 * test_metrics.c - the summary metrics against references computed here:
 * active times as unions of intervals (by an endpoint sweep, not the merge
 * the library uses), traffic from the kernel's tensor shapes, FLOPs of known
 * matmuls and utilisation against the peaks published for the targets.
 */
#include "profile_fixture.h"

#include <math.h>

/* ---- independent references */

typedef struct endpoint {
    double t;
    int d; /* +1 start, -1 end */
} endpoint;

static int cmp_endpoint(const void *a, const void *b)
{
    const endpoint *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return y->d - x->d; /* starts before ends at the same time: touching intervals merge */
}

/* Length of the union of intervals [s[i], e[i]): sweep over sorted endpoints. */
static double union_length(const double *s, const double *e, int n)
{
    endpoint *p = malloc((size_t)(2 * n + 1) * sizeof *p);
    for (int i = 0; i < n; i++) {
        p[2 * i] = (endpoint){s[i], +1};
        p[2 * i + 1] = (endpoint){e[i], -1};
    }
    qsort(p, (size_t)(2 * n), sizeof *p, cmp_endpoint);
    double total = 0, from = 0;
    int depth = 0;
    for (int i = 0; i < 2 * n; i++) {
        if (depth == 0 && p[i].d > 0)
            from = p[i].t;
        depth += p[i].d;
        if (depth == 0)
            total += p[i].t - from;
    }
    free(p);
    return total;
}

/* Union of the timeline's intervals on one row: engine e's events, or for
 * e == -1 everything (events and DMA spans), for e == -2 the DMA spans. */
static double row_union(const nk_timeline *tl, int e)
{
    int n = 0, cap = (int)(tl->nevents + tl->ndspans) + 1;
    double *s = malloc((size_t)cap * sizeof *s), *f = malloc((size_t)cap * sizeof *f);
    for (uint32_t i = 0; i < tl->nevents; i++)
        if (e == -1 || tl->events[i].engine == e) {
            s[n] = tl->events[i].start;
            f[n++] = tl->events[i].end;
        }
    for (uint32_t i = 0; i < tl->ndspans; i++)
        if (e == -1 || e == -2) {
            s[n] = tl->dspans[i].start;
            f[n++] = tl->dspans[i].end;
        }
    double u = union_length(s, f, n);
    free(s);
    free(f);
    return u;
}

static double metric(const nk_metrics *m, const char *name)
{
    double v = NAN;
    CHECK_INT(nk_metrics_get(m, name, &v), 0);
    return v;
}

/* One event per instruction on its own engine, back to back, 100 ns each. */
static nk_profile *serial_profile(const nk_program *p, double total)
{
    fx_ev *ev = calloc(p->ninstr + 1, sizeof *ev);
    for (uint32_t i = 0; i < p->ninstr; i++)
        ev[i] = (fx_ev){i, p->instrs[i].engine, p->instrs[i].engine == NK_ENGINE_DMA ? NK_EV_DMA_ISSUE : NK_EV_INSTR,
                        p->instrs[i].queue, 100.0 * i, 100.0 * i + 100};
    nk_profile *pr = fx_profile(p, ev, (int)p->ninstr, NULL, 0, total);
    free(ev);
    return pr;
}

/* ---- activity */

TEST(metrics_active_time_is_union_of_event_intervals)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    /* 300 pseudo-random events over every row, many overlapping */
    enum { N = 300 };
    fx_ev ev[N];
    uint32_t x = 12345;
    double start = 0;
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        start += (double)((x >> 16) % 50);
        x = x * 1103515245u + 12345u;
        double len = 1 + (double)((x >> 16) % 400);
        x = x * 1103515245u + 12345u;
        int eng = (int)((x >> 16) % NK_ENGINE_COUNT);
        ev[i] = (fx_ev){(uint32_t)(i % 6), eng, eng == NK_ENGINE_DMA ? NK_EV_DMA_ISSUE : NK_EV_INSTR, 0, start,
                        start + len};
    }
    double total = 0;
    for (int i = 0; i < N; i++)
        total = ev[i].end > total ? ev[i].end : total;
    total += 50;
    nk_profile *pr = fx_profile(p, ev, N, NULL, 0, total);
    nk_metrics m;
    CHECK_INT(nk_profile_metrics(pr, &m), 0);
    static const char *names[5] = {"tensor", "vector", "scalar", "gpsimd", "sync"};
    for (int e = 0; e < 5; e++) {
        char a[64], c[64], pc[64];
        snprintf(a, sizeof a, "%s_engine_active_time", names[e]);
        snprintf(pc, sizeof pc, "%s_engine_active_time_percent", names[e]);
        snprintf(c, sizeof c, "%s_engine_instruction_count", names[e]);
        double u = row_union(pr->tl, e);
        CHECK(u > 0);
        CHECK_NEAR(metric(&m, a), u * 1e-9, 1e-12, 0);
        CHECK_NEAR(metric(&m, pc), 100.0 * u / total, 1e-12, 0);
        /* distinct instructions with an event on that row */
        int seen[6] = {0}, count = 0;
        for (int i = 0; i < N; i++)
            if (ev[i].engine == e && !seen[ev[i].instr]) {
                seen[ev[i].instr] = 1;
                count++;
            }
        CHECK_INT(metric(&m, c), count);
    }
    /* no transfers recorded: DMA activity from the DMA queue events */
    CHECK_NEAR(m.dma_active_time_percent, 100.0 * row_union(pr->tl, NK_ENGINE_DMA) / total, 1e-12, 0);
    CHECK_NEAR(m.total_active_time_percent, 100.0 * row_union(pr->tl, -1) / total, 1e-12, 0);
    CHECK_NEAR(m.total_time, total * 1e-9, 1e-15, 0);
    CHECK_INT(m.event_count, N);
    CHECK_INT(m.dma_transfer_count, 0);
    CHECK_INT(m.dma_queue_count, 1);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

TEST(metrics_fixture_values_worked_by_hand)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    nk_profile *pr = fx_exp_profile(p);
    nk_metrics m;
    CHECK_INT(nk_profile_metrics(pr, &m), 0);
    /* see fx_exp_profile: Scalar busy 2100..2900; transfers 1300..2100 and
     * 3900..6000; everything together covers 0..6000 */
    CHECK_NEAR(m.scalar_engine_active_time, 800e-9, 1e-12, 0);
    CHECK_NEAR(m.scalar_engine_active_time_percent, 100.0 * 800 / 6000, 1e-12, 0);
    CHECK_INT(m.scalar_engine_instruction_count, 2);
    CHECK_NEAR(m.dma_active_time_percent, 100.0 * 2900 / 6000, 1e-12, 0);
    CHECK_NEAR(m.total_active_time_percent, 100.0, 1e-12, 0);
    CHECK_INT(m.dma_transfer_count, 8);
    CHECK_INT(m.dma_transfer_total_bytes, 6 * 131072 + 2 * 118784);
    CHECK_NEAR(m.dma_transfer_average_bytes, 1024000.0 / 8, 1e-12, 0);
    CHECK_INT(m.dma_queue_count, 2);
    CHECK_INT(m.tensor_engine_instruction_count, 0);
    CHECK(m.tensor_engine_active_time == 0 && m.hardware_flops == 0 && m.mfu_estimated_percent == 0);
    /* HBM traffic [A2]: 410 GB/s per trn1 core */
    CHECK_NEAR(m.mbu_estimated_percent, 100.0 * 1024000 / 6000 / 410, 1e-12, 0);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

TEST(metrics_zero_length_timeline_gives_zeros_not_nan)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    nk_profile *pr = fx_profile(p, NULL, 0, NULL, 0, 0);
    nk_metrics m;
    CHECK_INT(nk_profile_metrics(pr, &m), 0);
    for (int i = 0; i < nk_metrics_count(); i++) {
        double v = metric(&m, nk_metrics_name(i));
        CHECK(isfinite(v));
    }
    CHECK(m.total_active_time_percent == 0 && m.mbu_estimated_percent == 0);
    CHECK_INT(m.hbm_read_bytes, 512000); /* traffic does not depend on time */
    CHECK_INT(nk_profile_metrics(NULL, &m), NK_EINVAL);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* ---- traffic */

TEST(metrics_traffic_is_the_kernels_tensor_traffic)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    nk_profile *pr = NULL;
    CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    if (!pr) {
        nk_kernel_free(k);
        return;
    }
    nk_metrics m;
    CHECK_INT(nk_profile_metrics(pr, &m), 0);
    /* tensor_exp reads its 250 x 512 float32 input once and writes the output
     * once; on chip each element is written by the load and the exp and read
     * by the exp and the store */
    double bytes = 250.0 * 512 * 4;
    CHECK_INT(m.hbm_read_bytes, bytes);
    CHECK_INT(m.hbm_write_bytes, bytes);
    CHECK_INT(m.sbuf_read_bytes, 2 * bytes);
    CHECK_INT(m.sbuf_write_bytes, 2 * bytes);
    CHECK_INT(m.psum_read_bytes, 0);
    CHECK_INT(m.psum_write_bytes, 0);
    /* the model's transfers move exactly the kernel's HBM traffic */
    CHECK(pr->tl->ndspans > 0);
    if (pr->tl->ndspans) {
        CHECK_INT(m.dma_transfer_total_bytes, 2 * bytes);
        CHECK_NEAR(m.dma_active_time_percent, 100.0 * row_union(pr->tl, -2) / pr->tl->total_ns, 1e-12, 0);
    }
    /* the union measured here agrees with the timing model's own */
    for (int e = 0; e < NK_ENGINE_COUNT; e++) {
        double u = row_union(pr->tl, e == NK_ENGINE_DMA && pr->tl->ndspans ? -2 : e);
        CHECK_NEAR(pr->tl->active_ns[e], u, 1e-9, 1e-6);
    }
    CHECK_INT(m.event_count, pr->tl->nevents);
    CHECK_INT(m.scalar_engine_instruction_count, 2);
    CHECK_NEAR(m.total_time, pr->tl->total_ns * 1e-9, 1e-15, 0);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* ---- FLOPs */

/* out[M, N] = st[K, M]^T @ mv[K, N] in one nc_matmul, then a [64, 32] PE
 * transpose of part of the result when transpose is set. */
static int g_transpose;
static void k_mm(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor st = nk_load(nc, args[0]), mv = nk_load(nc, args[1]);
    int M = args[0].shape[1], N = args[1].shape[1];
    nk_tensor ps = nk_ndarray(nc, NK_SHAPE(M, N), NK_F32, NK_PSUM);
    nk_isa_nc_matmul(nc, ps, st, mv, 0);
    nk_tensor s = nk_copy(nc, ps, NK_F32);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(M, N), NK_F32, NK_SHARED_HBM);
    nk_store(nc, out, s);
    if (g_transpose) {
        nk_tensor t = nk_transpose(nc, nk_ix(nc, s, nk_r(0, 64), nk_r(0, 32)));
        nk_tensor o2 = nk_ndarray(nc, NK_SHAPE(32, 64), NK_F32, NK_SHARED_HBM);
        nk_store(nc, o2, t);
        nk_return(nc, o2);
    }
    nk_return(nc, out);
}

static const nk_program *compile_mm(nk_kernel **k, nk_dtype dt, int K, int M, int N, const char *target)
{
    nk_array in[2];
    int64_t sa[2] = {K, M}, sb[2] = {K, N};
    nk_options o = {target, 0};
    const nk_program *p = NULL;
    *k = nk_kernel_new("mm", k_mm);
    nk_array_alloc(&in[0], dt, 2, sa);
    nk_array_alloc(&in[1], dt, 2, sb);
    if (nk_kernel_compile(*k, in, 2, &o, &p))
        printf("  compile: %s\n", nk_kernel_error(*k));
    nk_array_free(&in[0]);
    nk_array_free(&in[1]);
    return p;
}

TEST(metrics_flops_and_utilisation_of_a_known_matmul)
{
    /* bf16 and fp32 on trn1: 92 and 23 TFLOPS [A2] (derived peak
     * 2 * 128 * 128 * 2.8 GHz = 91.75 TFLOPS; fp32 a quarter) */
    struct {
        nk_dtype dt;
        const char *target;
        double peak_tflops, hbm_gbps;
    } cases[] = {
        {NK_BF16, "trn1", 2.0 * 128 * 128 * 2.8e9 / 1e12, 410},
        {NK_F32, "trn1", 2.0 * 128 * 128 * 2.8e9 / 4 / 1e12, 410},
        {NK_BF16, "trn2", 2.0 * 128 * 128 * 2.4e9 / 1e12, 375},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        g_transpose = 0;
        nk_kernel *k;
        const nk_program *p = compile_mm(&k, cases[c].dt, 128, 128, 512, cases[c].target);
        if (!p)
            return;
        double T = 10000; /* ns */
        nk_profile *pr = serial_profile(p, T);
        nk_metrics m;
        CHECK_INT(nk_profile_metrics(pr, &m), 0);
        double es = cases[c].dt == NK_F32 ? 4 : 2;
        double flops = 2.0 * 128 * 128 * 512;
        CHECK_INT(m.hardware_flops, flops);
        CHECK_INT(m.matmul_instruction_count, 1);
        CHECK_INT(m.tensor_engine_instruction_count, 1);
        double hbm_r = (128.0 * 128 + 128.0 * 512) * es, hbm_w = 128.0 * 512 * 4;
        CHECK_INT(m.hbm_read_bytes, hbm_r);
        CHECK_INT(m.hbm_write_bytes, hbm_w);
        CHECK_INT(m.psum_write_bytes, 128 * 512 * 4);
        CHECK_INT(m.psum_read_bytes, 128 * 512 * 4); /* the copy out of PSUM */
        CHECK_INT(m.sbuf_read_bytes, hbm_r + 128 * 512 * 4);  /* matmul operands, the store */
        CHECK_INT(m.sbuf_write_bytes, hbm_r + 128 * 512 * 4); /* the loads, the copy */
        double mfu = 100.0 * flops / (cases[c].peak_tflops * 1e12) / (T * 1e-9);
        CHECK_NEAR(m.mfu_estimated_percent, mfu, 1e-9, 0);
        CHECK_NEAR(m.hfu_estimated_percent, mfu, 1e-9, 0);
        CHECK_NEAR(m.mm_arithmetic_intensity, flops / (hbm_r + hbm_w), 1e-12, 0);
        CHECK_NEAR(m.peak_flops_bandwidth_ratio, cases[c].peak_tflops * 1e12 / (cases[c].hbm_gbps * 1e9), 1e-12, 0);
        CHECK_NEAR(m.mbu_estimated_percent, 100.0 * (hbm_r + hbm_w) / (T * 1e-9) / (cases[c].hbm_gbps * 1e9), 1e-9,
                   0);
        nk_profile_free(pr);
        nk_kernel_free(k);
    }
}

TEST(metrics_pe_transposes_count_as_hardware_flops_only)
{
    g_transpose = 1;
    nk_kernel *k;
    const nk_program *p = compile_mm(&k, NK_BF16, 128, 128, 512, "trn1");
    g_transpose = 0;
    if (!p)
        return;
    double T = 20000;
    nk_profile *pr = serial_profile(p, T);
    nk_metrics m;
    CHECK_INT(nk_profile_metrics(pr, &m), 0);
    /* the transpose of a [64, 32] fp32 tile multiplies it by a 64 x 64
     * identity: 2 * 64 * 32 * 64 FLOPs at the fp32 rate (a quarter) */
    double mm = 2.0 * 128 * 128 * 512, tr = 2.0 * 64 * 32 * 64, peak = 2.0 * 128 * 128 * 2.8e9;
    CHECK_INT(m.matmul_instruction_count, 1);
    CHECK_INT(m.tensor_engine_instruction_count, 2);
    CHECK_INT(m.hardware_flops, mm + tr);
    CHECK_NEAR(m.mfu_estimated_percent, 100.0 * mm / peak / (T * 1e-9), 1e-9, 0);
    CHECK_NEAR(m.hfu_estimated_percent, 100.0 * (mm / peak + tr * 4 / peak) / (T * 1e-9), 1e-9, 0);
    CHECK(m.hfu_estimated_percent > m.mfu_estimated_percent);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

TEST(metrics_of_a_captured_matmul_are_consistent)
{
    nk_kernel *k;
    const nk_program *p = compile_mm(&k, NK_BF16, 128, 128, 512, "trn1");
    nk_profile *pr = NULL;
    if (!p || nk_profile_capture(p, NULL, &pr)) {
        CHECK(0);
        nk_kernel_free(k);
        return;
    }
    nk_metrics m;
    CHECK_INT(nk_profile_metrics(pr, &m), 0);
    double T = pr->tl->total_ns, flops = 2.0 * 128 * 128 * 512;
    CHECK(T > 0);
    CHECK_NEAR(m.mfu_estimated_percent, 100.0 * flops / (2.0 * 128 * 128 * 2.8) / T, 1e-9, 0);
    CHECK(m.mfu_estimated_percent > 0 && m.mfu_estimated_percent < 100);
    CHECK_NEAR(m.tensor_engine_active_time, row_union(pr->tl, NK_ENGINE_TENSOR) * 1e-9, 1e-12, 0);
    /* the PE cannot beat its peak: its busy time covers the FLOPs at peak */
    CHECK(m.tensor_engine_active_time * 1e9 >= flops / (2.0 * 128 * 128 * 2.8) * (1 - 1e-9));
    CHECK(pr->tl->ndspans > 0);
    CHECK_INT(m.dma_transfer_total_bytes, m.hbm_read_bytes + m.hbm_write_bytes);
    nk_profile_free(pr);
    nk_kernel_free(k);
}

/* ---- names */

TEST(metrics_lookup_by_name_and_units)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 250, 512);
    nk_profile *pr = fx_exp_profile(p);
    nk_metrics m;
    CHECK_INT(nk_profile_metrics(pr, &m), 0);
    double v = -1;
    CHECK_INT(nk_metrics_get(&m, "hbm_write_bytes", &v), 0);
    CHECK(v == m.hbm_write_bytes);
    CHECK_INT(nk_metrics_get(&m, "scalar_engine_active_time", &v), 0);
    CHECK(v == m.scalar_engine_active_time);
    CHECK_INT(nk_metrics_get(&m, "peak_flops_bandwidth_ratio", &v), 0);
    CHECK(v == m.peak_flops_bandwidth_ratio);
    CHECK_INT(nk_metrics_get(&m, "no_such_metric", &v), NK_ENOTFOUND);
    CHECK_INT(nk_metrics_get(&m, NULL, &v), NK_ENOTFOUND);
    /* every name distinct, every field of the struct named once */
    int n = nk_metrics_count();
    CHECK_INT(n, (int)(sizeof(nk_metrics) / sizeof(double)));
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            CHECK(strcmp(nk_metrics_name(i), nk_metrics_name(j)));
    CHECK(nk_metrics_name(n) == NULL && nk_metrics_name(-1) == NULL);
    CHECK_STR(nk_metrics_unit(0), "s");
    CHECK_STR(nk_metrics_name(0), "total_time");
    for (int i = 0; i < n; i++) {
        const char *u = nk_metrics_unit(i), *name = nk_metrics_name(i);
        if (strstr(name, "_percent"))
            CHECK_STR(u, "%");
        else if (strstr(name, "_bytes"))
            CHECK_STR(u, "bytes");
        else if (strstr(name, "_count"))
            CHECK_STR(u, "count");
    }
    nk_profile_free(pr);
    nk_kernel_free(k);
}
