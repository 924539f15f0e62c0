/*
 * test_cache.c - the program cache: a kernel is traced once per signature
 * (argument dtypes and shapes, target, options); later calls find the same
 * program and only bind arguments. Trace counts are observed independently
 * by a kernel that counts its own invocations.
 */
#include "test.h"
#include "kernels.h"
#include "nkint.h"

#include <stdlib.h>

static int traces; /* invocations of counting_exp: one per trace */

/* exp of its first argument, counting how often it is traced. */
static void counting_exp(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    traces++;
    nk_kernel_tensor_exp(nc, args, nargs);
}

enum { WIDE_LOAD_LINE = __LINE__ + 6 };
/* Loads its whole input at once: a tracer error when it has more than 128
 * rows, fine otherwise. */
static void whole_load(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor t = nk_load(nc, args[0]);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(args[0].shape[0], args[0].shape[1]), args[0].dtype, NK_SHARED_HBM);
    nk_store(nc, out, t);
    nk_return(nc, out);
}

static nk_array arr2(nk_dtype dt, int64_t r, int64_t c)
{
    nk_array a;
    int64_t s[2] = {r, c};
    CHECK_INT(nk_array_alloc(&a, dt, 2, s), 0);
    return a;
}

static void stats(nk_kernel *k, uint64_t *compiles, uint64_t *hits)
{
    nk_kernel_cache_stats(k, compiles, hits);
}

TEST(cache_same_signature_same_program)
{
    nk_kernel *k = nk_kernel_new("counting_exp", counting_exp);
    nk_array a = arr2(NK_F32, 250, 512), b = arr2(NK_F32, 250, 512);
    const nk_program *p1 = NULL, *p2 = NULL;
    traces = 0;
    CHECK_INT(nk_kernel_compile(k, &a, 1, NULL, &p1), 0);
    CHECK_INT(nk_kernel_compile(k, &b, 1, NULL, &p2), 0); /* other data, same signature */
    CHECK(p1 != NULL && p1 == p2);
    uint64_t c, h;
    stats(k, &c, &h);
    CHECK_INT(c, 1);
    CHECK_INT(h, 1);
    CHECK_INT(traces, 1);
    /* NULL options and explicit defaults name the same program */
    nk_options trn1 = {"trn1", 0};
    CHECK_INT(nk_kernel_compile(k, &a, 1, &trn1, &p2), 0);
    CHECK(p2 == p1);
    CHECK_INT(traces, 1);
    nk_array_free(&a);
    nk_array_free(&b);
    nk_kernel_free(k);
}

TEST(cache_call_binds_new_data_without_tracing)
{
    nk_kernel *k = nk_kernel_new("counting_exp", counting_exp);
    nk_array a = arr2(NK_F32, 130, 64);
    traces = 0;
    for (int round = 0; round < 3; round++) {
        float *x = a.data;
        for (int i = 0; i < 130 * 64; i++)
            x[i] = (float)((i * 7 + round * 13) % 41 - 20) / 8.0f;
        nk_array out[1];
        int n = 0;
        CHECK_INT(nk_call(k, &a, 1, NULL, out, 1, &n), 0);
        CHECK_INT(n, 1);
        const float *y = out[0].data;
        int bad = 0;
        for (int i = 0; i < 130 * 64; i++)
            bad += !(fabs(y[i] - exp((double)x[i])) <= 2.4e-7 * exp((double)x[i]));
        CHECK_INT(bad, 0);
        nk_array_free(&out[0]);
    }
    CHECK_INT(traces, 1);
    uint64_t c, h;
    stats(k, &c, &h);
    CHECK_INT(c, 1);
    CHECK_INT(h, 2);
    nk_array_free(&a);
    nk_kernel_free(k);
}

TEST(cache_new_compile_per_shape_dtype_target_options)
{
    nk_kernel *k = nk_kernel_new("counting_exp", counting_exp);
    nk_array f = arr2(NK_F32, 250, 512), g = arr2(NK_F32, 512, 250), bf = arr2(NK_BF16, 250, 512);
    const nk_program *base, *p;
    traces = 0;
    CHECK_INT(nk_kernel_compile(k, &f, 1, NULL, &base), 0);
    CHECK_INT(nk_kernel_compile(k, &g, 1, NULL, &p), 0); /* transposed shape */
    CHECK(p != base);
    nk_array d;
    CHECK_INT(nk_program_input(p, 0, &d), 0);
    CHECK_INT(d.shape[0], 512);
    CHECK_INT(nk_kernel_compile(k, &bf, 1, NULL, &p), 0); /* dtype */
    CHECK(p != base);
    CHECK_INT(nk_program_input(p, 0, &d), 0);
    CHECK_INT(d.dtype, NK_BF16);
    nk_options o2 = {"trn2", 0};
    CHECK_INT(nk_kernel_compile(k, &f, 1, &o2, &p), 0); /* target */
    CHECK(p != base);
    CHECK_STR(nk_program_target(p), "trn2");
    CHECK_STR(nk_program_target(base), "trn1");
    nk_options single = {"trn1", 1};
    CHECK_INT(nk_kernel_compile(k, &f, 1, &single, &p), 0); /* options */
    CHECK(p != base);
    CHECK_INT(p->bufs_default, 1);
    CHECK_INT(base->bufs_default, 2);
    CHECK_INT(traces, 5);
    /* every one of them is found again */
    const nk_program *again;
    CHECK_INT(nk_kernel_compile(k, &f, 1, NULL, &again), 0);
    CHECK(again == base);
    CHECK_INT(nk_kernel_compile(k, &f, 1, &single, &again), 0);
    CHECK(again == p);
    CHECK_INT(traces, 5);
    uint64_t c, h;
    stats(k, &c, &h);
    CHECK_INT(c, 5);
    CHECK_INT(h, 2);
    nk_array_free(&f);
    nk_array_free(&g);
    nk_array_free(&bf);
    nk_kernel_free(k);
}

TEST(cache_argument_count_is_part_of_the_signature)
{
    nk_kernel *k = nk_kernel_new("counting_exp", counting_exp);
    nk_array a[2] = {arr2(NK_F32, 4, 8), arr2(NK_F32, 4, 8)};
    const nk_program *p1, *p2;
    traces = 0;
    CHECK_INT(nk_kernel_compile(k, a, 1, NULL, &p1), 0);
    CHECK_INT(nk_kernel_compile(k, a, 2, NULL, &p2), 0);
    CHECK(p1 != p2);
    CHECK_INT(nk_program_num_inputs(p1), 1);
    CHECK_INT(nk_program_num_inputs(p2), 2);
    CHECK_INT(traces, 2);
    nk_array_free(&a[0]);
    nk_array_free(&a[1]);
    nk_kernel_free(k);
}

TEST(cache_many_signatures_survive_growth)
{
    nk_kernel *k = nk_kernel_new("counting_exp", counting_exp);
    enum { N = 40 };
    const nk_program *first[N];
    traces = 0;
    for (int i = 0; i < N; i++) {
        nk_array a = arr2(NK_F32, 1 + i, 16);
        CHECK_INT(nk_kernel_compile(k, &a, 1, NULL, &first[i]), 0);
        nk_array_free(&a);
    }
    for (int i = N - 1; i >= 0; i--) {
        nk_array a = arr2(NK_F32, 1 + i, 16);
        const nk_program *p = NULL;
        CHECK_INT(nk_kernel_compile(k, &a, 1, NULL, &p), 0);
        CHECK(p == first[i]);
        nk_array d;
        nk_program_input(p, 0, &d);
        CHECK_INT(d.shape[0], 1 + i);
        nk_array_free(&a);
    }
    for (int i = 1; i < N; i++)
        CHECK(first[i] != first[i - 1]);
    uint64_t c, h;
    stats(k, &c, &h);
    CHECK_INT(c, N);
    CHECK_INT(h, N);
    CHECK_INT(traces, N);
    nk_kernel_free(k);
}

TEST(cache_kernel_error_is_reported_again)
{
    nk_kernel *k = nk_kernel_new("whole_load", whole_load);
    nk_array wide = arr2(NK_F32, 200, 8), ok = arr2(NK_F32, 100, 8);
    const nk_program *p = NULL;
    char want[128];
    snprintf(want, sizeof want, "%s:%d: nk_load: the source [200, 8] has partition dimension 200", __FILE__, (int)WIDE_LOAD_LINE);
    for (int round = 0; round < 2; round++) {
        CHECK_INT(nk_kernel_compile(k, &wide, 1, NULL, &p), NK_EPARTITION);
        CHECK_INT(strncmp(nk_kernel_error(k), want, strlen(want)), 0);
        if (strncmp(nk_kernel_error(k), want, strlen(want)))
            printf("  got \"%s\", want a message starting \"%s\"\n", nk_kernel_error(k), want);
        uint64_t c, h;
        stats(k, &c, &h);
        CHECK_INT(c, 0);
        CHECK_INT(h, 0);
    }
    /* a good signature compiles; the bad one still fails afterwards */
    CHECK_INT(nk_kernel_compile(k, &ok, 1, NULL, &p), 0);
    CHECK_INT(nk_kernel_compile(k, &wide, 1, NULL, &p), NK_EPARTITION);
    CHECK_CONTAINS(nk_kernel_error(k), "partition dimension 200");
    uint64_t c;
    stats(k, &c, NULL);
    CHECK_INT(c, 1);
    /* nk_call reports it the same way and allocates nothing */
    nk_array out[1] = {{0}};
    int n = -1;
    CHECK_INT(nk_call(k, &wide, 1, NULL, out, 1, &n), NK_EPARTITION);
    CHECK(out[0].data == NULL);
    CHECK_INT(n, -1);
    nk_array_free(&wide);
    nk_array_free(&ok);
    nk_kernel_free(k);
}

TEST(cache_rejects_bad_signatures_with_messages)
{
    nk_kernel *k = nk_kernel_new("counting_exp", counting_exp);
    nk_array a[33];
    for (int i = 0; i < 33; i++)
        a[i] = (nk_array){NK_F32, 1, {4}, NULL};
    const nk_program *p;
    CHECK_INT(nk_kernel_compile(k, a, 33, NULL, &p), NK_EINVAL);
    CHECK_STR(nk_kernel_error(k), "33 arguments: a kernel takes 0 to 32");
    CHECK_INT(nk_kernel_compile(k, a, -1, NULL, &p), NK_EINVAL);
    CHECK_STR(nk_kernel_error(k), "-1 arguments: a kernel takes 0 to 32");
    nk_options bad = {"no_such_target", 0};
    CHECK_INT(nk_kernel_compile(k, a, 1, &bad, &p), NK_ENOTFOUND);
    CHECK_STR(nk_kernel_error(k), "unknown target 'no_such_target' (known: trn1, trn2)");
    nk_options unknown = {"trn9", 0};
    CHECK_INT(nk_kernel_compile(k, a, 1, &unknown, &p), NK_ENOTFOUND);
    CHECK_STR(nk_kernel_error(k), "unknown target 'trn9' (known: trn1, trn2)");
    a[0].ndim = 0;
    CHECK_INT(nk_kernel_compile(k, a, 1, NULL, &p), NK_EINVAL);
    CHECK_STR(nk_kernel_error(k), "argument 0: invalid dtype or rank");
    uint64_t c;
    stats(k, &c, NULL);
    CHECK_INT(c, 0);
    nk_kernel_free(k);
}

TEST(cache_program_run_checks_bindings)
{
    nk_kernel *k = nk_kernel_new("tensor_exp", nk_kernel_tensor_exp);
    nk_array a = arr2(NK_F32, 16, 32), other = arr2(NK_F32, 16, 33), half = arr2(NK_F16, 16, 32);
    nk_array out = arr2(NK_F32, 16, 32);
    const nk_program *p;
    CHECK_INT(nk_kernel_compile(k, &a, 1, NULL, &p), 0);
    CHECK_INT(nk_program_run(p, &a, 1, &out, 1), 0);
    CHECK_INT(nk_program_run(p, &other, 1, &out, 1), NK_ESHAPE);
    CHECK_INT(nk_program_run(p, &half, 1, &out, 1), NK_EDTYPE);
    CHECK_INT(nk_program_run(p, &a, 1, &other, 1), NK_ESHAPE);
    CHECK_INT(nk_program_run(p, &a, 0, &out, 1), NK_EINVAL);
    CHECK_INT(nk_program_run(p, &a, 1, &out, 0), NK_EINVAL);
    /* bind alone: inputs and outputs point at the caller's arrays */
    void **hbm = calloc(p->nbufs, sizeof *hbm);
    CHECK_INT(nk__program_bind(p, &a, 1, &out, 1, hbm), 0);
    CHECK(hbm[p->input_buf[0]] == a.data);
    CHECK(hbm[p->output_buf[0]] == out.data);
    nk__program_unbind(p, hbm);
    free(hbm);
    nk_array_free(&a);
    nk_array_free(&other);
    nk_array_free(&half);
    nk_array_free(&out);
    nk_kernel_free(k);
}
