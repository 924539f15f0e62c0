/*
 * profile_fixture.h - helpers shared by the profile and metrics tests: a
 * traced program, profiles with hand-written timelines (independent of the
 * timing model, so expected values can be worked out by hand), golden files
 * and temporary paths.
 */
#ifndef NK_PROFILE_FIXTURE_H
#define NK_PROFILE_FIXTURE_H

#include "test.h"
#include "kernels.h"
#include "profile/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fx_ev {
    uint32_t instr;
    int engine, kind, queue;
    double start, end;
} fx_ev;

typedef struct fx_xfer {
    uint32_t instr;
    int queue, dma_engine, to_hbm, partitions;
    uint64_t bytes;
    double start, end;
} fx_xfer;

/* A timing-only profile of built-in kernel info on target, on its example
 * shapes and grid (*k is the kernel, to free after the profile); NULL on
 * failure, after a failed check. */
static inline nk_profile *fx_builtin_profile(const nk_kernel_info *info, const char *target, nk_kernel **k)
{
    nk_array args[NK_KERNEL_MAX_ARGS];
    for (int a = 0; a < info->nargs; a++) {
        args[a] = (nk_array){info->args[a].dtype, info->args[a].ndim, {0}, NULL};
        memcpy(args[a].shape, info->args[a].shape, sizeof args[a].shape);
    }
    nk_options o = {.target = target};
    memcpy(o.grid, info->grid, sizeof o.grid);
    *k = nk_builtin_kernel_new(info);
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    CHECK_INT(nk_kernel_compile(*k, args, info->nargs, &o, &p), 0);
    if (p)
        CHECK_INT(nk_profile_capture(p, NULL, &pr), 0);
    return pr;
}

/* tensor_exp traced for shape [rows, cols] float32, in trace order (the hand
 * timelines give events by instruction index); NULL on failure. */
static inline const nk_program *fx_compile_exp(nk_kernel **k, int rows, int cols)
{
    nk_array in;
    int64_t shape[2] = {rows, cols};
    const nk_program *p = NULL;
    *k = nk_kernel_new("tensor_exp", nk_kernel_tensor_exp);
    nk_array_alloc(&in, NK_F32, 2, shape);
    nk_options o = {NULL, 0, NULL, NK_SCHED_TRACE_ORDER};
    if (nk_kernel_compile(*k, &in, 1, &o, &p))
        printf("  compile: %s\n", nk_kernel_error(*k));
    nk_array_free(&in);
    return p;
}

/* A profile of p with the given events and transfers (each sorted by start)
 * lasting total ns; instruction spans are the hull of their events. */
static inline nk_profile *fx_profile(const nk_program *p, const fx_ev *ev, int nev, const fx_xfer *xf, int nx,
                                     double total)
{
    nk_profile *pr = calloc(1, sizeof *pr);
    nk_timeline *tl = calloc(1, sizeof *tl);
    if (!pr || !tl || nk__program_copy(p, &pr->prog)) {
        free(tl);
        nk_profile_free(pr);
        return NULL;
    }
    pr->tl = tl;
    pr->arch = *nk__arch_get(p->target);
    snprintf(pr->nklab_version, sizeof pr->nklab_version, "%s", NK_VERSION);
    pr->created_unix = 1700000000.25;
    snprintf(tl->target, sizeof tl->target, "%s", p->target);
    tl->total_ns = total;
    tl->host_in_ns = 1000;
    tl->host_out_ns = 2000;
    uint32_t n = p->ninstr ? p->ninstr : 1;
    tl->events = calloc((size_t)nev + 1, sizeof *tl->events);
    tl->xfers = calloc((size_t)nx + 1, sizeof *tl->xfers);
    tl->instr_start = calloc(n, sizeof(double));
    tl->instr_end = calloc(n, sizeof(double));
    for (int i = 0; i < nev; i++) {
        tl->events[i] = (nk_event){ev[i].instr, (uint8_t)ev[i].engine, (uint8_t)ev[i].kind, (uint16_t)ev[i].queue,
                                   ev[i].start, ev[i].end};
        double *s = &tl->instr_start[ev[i].instr], *e = &tl->instr_end[ev[i].instr];
        int first = *e == 0;
        if (first || ev[i].start < *s)
            *s = ev[i].start;
        if (ev[i].end > *e)
            *e = ev[i].end;
    }
    tl->nevents = (uint32_t)nev;
    for (int i = 0; i < nx; i++)
        tl->xfers[i] = (nk_dma_xfer){xf[i].instr, (uint16_t)xf[i].queue, (uint8_t)xf[i].dma_engine,
                                     (uint8_t)xf[i].to_hbm, (uint32_t)xf[i].partitions, xf[i].bytes,
                                     xf[i].start, xf[i].end};
    tl->nxfers = (uint32_t)nx;
    /* the descriptors as a timeline keeps them: DMA spans */
    int bad = nk__dma_spans_of(tl->xfers, tl->nxfers, p->ninstr, &tl->dspans, &tl->ndspans);
    free(tl->xfers);
    tl->xfers = NULL;
    tl->nxfers = 0;
    if (bad) {
        nk_profile_free(pr);
        return NULL;
    }
    if (nk__profile_read_sources(pr)) {
        nk_profile_free(pr);
        return NULL;
    }
    return pr;
}

/* Adds a counter with n samples to the profile's timeline. */
static inline void fx_counter(nk_profile *pr, const char *name, const char *unit, const double *t, const double *v,
                              uint32_t n)
{
    nk_timeline *tl = pr->tl;
    nk_counter *c = realloc(tl->counters, (tl->ncounters + 1) * sizeof *c);
    if (!c)
        return;
    tl->counters = c;
    c = &c[tl->ncounters++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->unit, sizeof c->unit, "%s", unit);
    c->n = n;
    c->t = malloc((n ? n : 1) * sizeof(double));
    c->value = malloc((n ? n : 1) * sizeof(double));
    memcpy(c->t, t, n * sizeof(double));
    memcpy(c->value, v, n * sizeof(double));
}

/* The events of tensor_exp [250, 512] laid out by hand: two loads on DMA
 * queue 0, two exps on the Scalar engine, two stores on queue 1. */
static inline nk_profile *fx_exp_profile(const nk_program *p)
{
    static const fx_ev ev[] = {
        {0, NK_ENGINE_DMA, NK_EV_DMA_ISSUE, 0, 0, 2000},
        {3, NK_ENGINE_DMA, NK_EV_DMA_ISSUE, 0, 100, 2100},
        {1, NK_ENGINE_SCALAR, NK_EV_INSTR, 0, 2100, 2500},
        {4, NK_ENGINE_SCALAR, NK_EV_INSTR, 0, 2500, 2900},
        {2, NK_ENGINE_DMA, NK_EV_DMA_ISSUE, 1, 2600, 4600},
        {5, NK_ENGINE_DMA, NK_EV_DMA_ISSUE, 1, 3000, 6000},
    };
    /* one transfer per 64 partitions: 64 x 2048 bytes (the 122-row tile: 64 + 58) */
    static const fx_xfer xf[] = {
        {0, 0, 0, 0, 64, 131072, 1300, 1900},   {0, 0, 1, 0, 64, 131072, 1300, 2000},
        {3, 0, 2, 0, 64, 131072, 1400, 2000},   {3, 0, 3, 0, 58, 118784, 1400, 2100},
        {2, 1, 0, 1, 64, 131072, 3900, 4500},   {2, 1, 1, 1, 64, 131072, 3900, 4600},
        {5, 1, 2, 1, 64, 131072, 4300, 5000},   {5, 1, 3, 1, 58, 118784, 4300, 6000},
    };
    return fx_profile(p, ev, 6, xf, 8, 6000);
}

static inline char *fx_read_text(const char *path) { return nk_test_read_file(path); }

/* Are the file's bytes at path the n bytes at want (no more, no fewer)? */
static inline int fx_file_is(const char *path, const void *want, size_t n)
{
    FILE *f = fopen(path, "rb");
    char *b = malloc(n + 1);
    size_t got = f && b ? fread(b, 1, n + 1, f) : 0;
    int same = b && got == n && !memcmp(b, want, n);
    if (f)
        fclose(f);
    free(b);
    return same;
}


/* A fresh temporary directory per call of fx_tmpdir; fx_tmp_done removes it
 * once the test has removed its files. */
static char fx_dir[64];

static inline const char *fx_tmp(const char *name)
{
    static char path[160];
    if (!fx_dir[0]) {
        snprintf(fx_dir, sizeof fx_dir, "/tmp/nklab-prof-XXXXXX");
        if (!mkdtemp(fx_dir))
            return "/nonexistent/nklab";
    }
    snprintf(path, sizeof path, "%s/%s", fx_dir, name);
    return path;
}

static inline void fx_tmp_done(void)
{
    if (fx_dir[0])
        rmdir(fx_dir);
    fx_dir[0] = 0;
}

#endif
