/*
 * test_sync_order.c - the target option dma_trigger_in_order (the Sync
 * engine triggers its DMAs in program order, without prefetch) on NKI's
 * profiling example, exp over [250, 512] in two tiles of 128 rows: in trace
 * order the store of tile 0 waits for its exp and holds back the load of
 * tile 1, so no transfer runs under compute (the example's documented
 * reading); the default lets that load go first. The insight rule
 * dma-trigger-order names the held DMAs, and its held time is recomputed
 * here from the timeline.
 */
#include "test.h"
#include "kernels.h"
#include "insights/insights.h"
#include "profile/profile.h"

#include <stdlib.h>

static void k_exp(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    int64_t rows = in.shape[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, in.shape[1]), in.dtype, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, t, (rows + NK_PMAX - 1) / NK_PMAX) {
        nk_range r = nk_rmask(t * NK_PMAX, (t + 1) * NK_PMAX, rows);
        nk_tensor tile = nk_load(nc, nk_ix(nc, in, r, NK_ALL));
        nk_tensor e = nk_exp(nc, tile);
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), e);
    }
    nk_return(nc, out);
}

/* The example profiled in trace order on trn1, with or without in-order triggers. */
static nk_profile *profile_exp(int in_order, nk_arch *a)
{
    *a = *nk__arch_get("trn1");
    a->dma_trigger_in_order = in_order;
    nk_array x;
    nk_array_alloc(&x, NK_F32, 2, (int64_t[]){250, 512});
    nk_kernel *k = nk_kernel_new("exp", k_exp);
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    nk_options o = {NULL, 0, (const nk_target *)a, NK_SCHED_TRACE_ORDER};
    if (nk_kernel_compile(k, &x, 1, &o, &p) || nk_profile_capture(p, (const nk_target *)a, &pr))
        pr = NULL;
    nk_kernel_free(k);
    nk_array_free(&x);
    return pr;
}

/* Time some DMA transfer (a DMA span) and some compute instruction run together. */
static double dma_compute_overlap(const nk_timeline *tl)
{
    double t = 0;
    for (uint32_t x = 0; x < tl->ndspans; x++)
        for (uint32_t k = 0; k < tl->nevents; k++) {
            const nk_event *e = &tl->events[k];
            if (e->engine > NK_ENGINE_GPSIMD)
                continue;
            double lo = fmax(tl->dspans[x].start, e->start), hi = fmin(tl->dspans[x].end, e->end);
            if (hi > lo)
                t += hi - lo;
        }
    return t;
}

/* Trigger start of DMA instruction i (its NK_EV_DMA_TRIGGER event). */
static double trigger_start(const nk_timeline *tl, uint32_t i)
{
    for (uint32_t k = 0; k < tl->nevents; k++)
        if (tl->events[k].kind == NK_EV_DMA_TRIGGER && tl->events[k].instr == i)
            return tl->events[k].start;
    return NAN;
}

static const nk_finding *finding(const nk_insights *ins, const char *rule)
{
    for (uint32_t k = 0; ins && k < ins->n; k++)
        if (!strcmp(nk__ins_rule_name(ins->f[k].rule), rule))
            return &ins->f[k];
    return NULL;
}

TEST(sync_order_profiling_example_has_no_dma_under_compute)
{
    nk_arch a;
    nk_profile *pr = profile_exp(1, &a);
    CHECK(pr != NULL);
    if (!pr)
        return;
    const nk_program *p = pr->prog;
    const nk_timeline *tl = pr->tl;
    /* trace order: load0, exp0, store0, load1, exp1, store1 */
    CHECK_INT(p->ninstr, 6);
    if (p->ninstr != 6) {
        nk_profile_free(pr);
        return;
    }
    for (int i = 0; i < 6; i++)
        CHECK_INT(p->instrs[i].engine, i % 3 == 1 ? NK_ENGINE_SCALAR : NK_ENGINE_DMA);
    CHECK_NEAR(dma_compute_overlap(tl), 0, 0, 1e-9);
    /* store0 is triggered when exp0's output has been written (its 60-cycle
       write access at 1.4 GHz; the semaphore is part of the DMA latency) ... */
    CHECK_NEAR(trigger_start(tl, 2), tl->instr_end[1] + 60 / 1.4, 0, 1e-6);
    /* ... and load1, ready at the start-up, only after it, on the one Sync engine */
    CHECK_NEAR(trigger_start(tl, 3), trigger_start(tl, 2) + a.dma_trigger_ns, 0, 1e-6);
    CHECK(trigger_start(tl, 3) > a.launch_startup_ns + 1000);

    /* the rule: load1's held time is its trigger start minus its readiness */
    nk_insights *ins = NULL;
    CHECK_INT(nk__insights_build(pr, &ins), 0);
    const nk_finding *f = finding(ins, "dma-trigger-order");
    CHECK(f != NULL);
    if (f) {
        double held = trigger_start(tl, 3) - a.launch_startup_ns - a.dma_trigger_ns;
        double ev = NAN;
        for (int k = 0; k < f->nev; k++)
            if (!strcmp(f->ev[k].name, "held"))
                ev = f->ev[k].value;
        CHECK_NEAR(ev, held, 1e-9, 1e-6);
        CHECK(strstr(f->detail, "waited for its input from the scalar engine") != NULL);
        CHECK(strstr(f->suggestion, "list schedule") != NULL);
    }
    nk__insights_free(ins);
    nk_profile_free(pr);
}

TEST(sync_order_default_lets_the_next_load_run_under_compute)
{
    nk_arch a;
    nk_profile *pr = profile_exp(0, &a);
    CHECK(pr != NULL);
    if (!pr)
        return;
    const nk_timeline *tl = pr->tl;
    /* load1 (no dependency: two buffers) is triggered at the start-up, 8 ns after load0 */
    CHECK_NEAR(trigger_start(tl, 3), a.launch_startup_ns + a.dma_trigger_ns, 0, 1e-6);
    CHECK(dma_compute_overlap(tl) > 0);
    nk_insights *ins = NULL;
    CHECK_INT(nk__insights_build(pr, &ins), 0);
    CHECK(finding(ins, "dma-trigger-order") == NULL);
    nk__insights_free(ins);
    nk_profile_free(pr);
}

/* spmd_tensor_add on trn1: a grid of 2x2 instances, run one after another
 * on the one core. In-order triggers cost it nothing (its device time is
 * the default's), so no DMA was held by a trigger: an instance's first load
 * waits for the instance before it, not for the Sync queue. */
TEST(sync_order_spmd_instances_waiting_for_their_turn_are_not_held)
{
    const nk_kernel_info *ki = nk_builtin_kernel("spmd_tensor_add");
    CHECK(ki != NULL);
    if (!ki)
        return;
    nk_array x[NK_KERNEL_MAX_ARGS];
    for (int i = 0; i < ki->nargs; i++) {
        memset(&x[i], 0, sizeof x[i]);
        x[i].dtype = ki->args[i].dtype;
        x[i].ndim = ki->args[i].ndim;
        memcpy(x[i].shape, ki->args[i].shape, sizeof x[i].shape);
    }
    double t[2] = {0, 0};
    nk_profile *pr[2] = {NULL, NULL};
    for (int in_order = 0; in_order < 2; in_order++) {
        nk_arch a = *nk__arch_get("trn1");
        a.dma_trigger_in_order = in_order;
        nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
        nk_options o = {NULL, 0, (const nk_target *)&a, NK_SCHED_LIST};
        memcpy(o.grid, ki->grid, sizeof o.grid);
        const nk_program *p = NULL;
        CHECK_INT(nk_kernel_compile(k, x, ki->nargs, &o, &p), 0);
        if (p && !nk_profile_capture(p, (const nk_target *)&a, &pr[in_order]))
            t[in_order] = pr[in_order]->tl->total_ns;
        nk_kernel_free(k);
    }
    CHECK(pr[1] && pr[1]->prog->ninst == 4);
    CHECK_NEAR(t[1], t[0], 0, 1e-9);
    nk_insights *ins = NULL;
    if (pr[1])
        CHECK_INT(nk__insights_build(pr[1], &ins), 0);
    const nk_finding *f = finding(ins, "dma-trigger-order");
    CHECK(f == NULL);
    if (f)
        printf("  %s\n", f->title);
    nk__insights_free(ins);
    nk_profile_free(pr[0]);
    nk_profile_free(pr[1]);
}
