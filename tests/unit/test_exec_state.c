/*
 * test_exec_state.c - a run's results never depend on what ran before it.
 */
#include "test.h"

#include "nklab.h"

#include <stdint.h>
#include <stdlib.h>

/* Writes only partitions 0..63 of a 128-partition tile, then stores all 128. */
static void half_written(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 8), NK_F32, NK_SHARED_HBM);
    nk_tensor t = nk_ndarray(nc, NK_SHAPE(128, 8), NK_F32, NK_SBUF);
    nk_tensor x = nk_load(nc, nk_ix(nc, in, nk_r(0, 64), NK_ALL));
    nk_isa_tensor_copy(nc, nk_ix(nc, t, nk_r(0, 64), NK_ALL), x);
    nk_store(nc, out, t);
    nk_return(nc, out);
}

/* Fills a full tile with a constant, so on-chip memory holds 7.0 afterwards. */
static void fill_sevens(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)args;
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 8), NK_F32, NK_SHARED_HBM);
    nk_tensor t = nk_full(nc, NK_SHAPE(128, 8), 7.0, NK_F32, NK_SBUF);
    nk_store(nc, out, t);
    nk_return(nc, out);
}

TEST(exec_unwritten_partitions_read_the_same_every_run)
{
    nk_kernel *half = nk_kernel_new("half_written", half_written);
    nk_kernel *fill = nk_kernel_new("fill_sevens", fill_sevens);
    nk_array in, dummy;
    CHECK_INT(nk_array_alloc(&in, NK_F32, 2, (int64_t[]){64, 8}), 0);
    CHECK_INT(nk_array_alloc(&dummy, NK_F32, 1, (int64_t[]){1}), 0);
    float *x = in.data;
    for (int i = 0; i < 64 * 8; i++)
        x[i] = (float)i;
    nk_array a[1], b[1], f[1];
    int n;
    CHECK_INT(nk_call(half, &in, 1, NULL, a, 1, &n), 0);
    CHECK_INT(nk_call(fill, &dummy, 1, NULL, f, 1, &n), 0);
    CHECK_INT(nk_call(half, &in, 1, NULL, b, 1, &n), 0);
    const uint32_t *ua = a[0].data, *ub = b[0].data;
    const float *fa = a[0].data;
    for (int i = 0; i < 128 * 8; i++) {
        if (i < 64 * 8)
            CHECK_NEAR(fa[i], (double)i, 0, 0);
        else
            CHECK(fa[i] != fa[i]); /* never written: NaN, not what the previous kernel left */
        CHECK_INT(ua[i], ub[i]);
    }
    CHECK_NEAR(((float *)f[0].data)[0], 7.0, 0, 0);
    nk_array_free(&a[0]);
    nk_array_free(&b[0]);
    nk_array_free(&f[0]);
    nk_array_free(&in);
    nk_array_free(&dummy);
    nk_kernel_free(half);
    nk_kernel_free(fill);
}

/* 100 partial writes of one tile, then one read of all of it: the read
 * depends on every one of them (none dropped however many there are). */
static void many_writers(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)args;
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 100), NK_F32, NK_SHARED_HBM);
    nk_tensor t = nk_ndarray(nc, NK_SHAPE(128, 100), NK_F32, NK_SBUF);
    for (int i = 0; i < 100; i++)
        nk_isa_memset_at(nc, NK_HERE, nk_ix(nc, t, NK_ALL, nk_r(i, i + 1)), (double)i,
                         i % 2 ? NK_ENGINE_GPSIMD : NK_ENGINE_VECTOR);
    nk_store(nc, out, t);
    nk_return(nc, out);
}

#include "nkint.h"

TEST(sched_keeps_every_predecessor)
{
    nk_kernel *k = nk_kernel_new("many_writers", many_writers);
    nk_array dummy;
    CHECK_INT(nk_array_alloc(&dummy, NK_F32, 1, (int64_t[]){1}), 0);
    const nk_program *p;
    CHECK_INT(nk_kernel_compile(k, &dummy, 1, NULL, &p), 0);
    CHECK_INT(p->ninstr, 101);
    const nk_instr *st = &p->instrs[100];
    CHECK_INT(st->op, NK_OP_STORE);
    CHECK_INT(st->ndep, 100);
    for (uint32_t d = 0; d < st->ndep && d < 100; d++)
        CHECK_INT(p->deps[st->dep_off + d], d); /* sorted, each writer once */
    nk_array_free(&dummy);
    nk_kernel_free(k);
}
