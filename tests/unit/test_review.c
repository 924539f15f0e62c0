/*
 * test_review.c - kernels at the edges of the tracer's folds.
 */
#include "test.h"
#include "nklab.h"
#include "nkint.h"

#define F32 NK_F32

/* t = exp(x); t[...] = t: the value is its own destination, so nothing
 * moves and t stays usable. */
static void k_self_assign(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    nk_tensor t = nk_exp(nc, nk_load(nc, a[0]));
    nk_assign(nc, t, t);
    nk_store(nc, out, t);
    nk_return(nc, out);
}

TEST(review_self_assign_keeps_the_tile_usable)
{
    nk_array x, out[1];
    nk_array_alloc(&x, F32, 2, (int64_t[]){128, 64});
    float *xv = x.data;
    for (int i = 0; i < 128 * 64; i++)
        xv[i] = (float)(i % 17) * 0.1f;
    nk_kernel *k = nk_kernel_new("self_assign", k_self_assign);
    int nout = 0;
    int rc = nk_call(k, &x, 1, NULL, out, 1, &nout);
    if (rc)
        printf("  %s\n", nk_kernel_error(k));
    CHECK_INT(rc, 0);
    if (nout == 1) {
        const float *y = out[0].data;
        int bad = 0;
        for (int i = 0; i < 128 * 64; i++)
            bad += !(fabs(y[i] - exp(xv[i])) <= 4e-7 * exp(xv[i]));
        CHECK_INT(bad, 0);
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&x);
}

/* p = a^T b; p += p adds the value to itself: a tensor_tensor with both
 * inputs in PSUM, which the engines refuse with that reason (not by calling
 * p a tile that moved elsewhere). */
static void k_self_add(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(64, 64), F32, NK_SHARED_HBM);
    nk_tensor p = nk_matmul(nc, nk_load(nc, a[0]), nk_load(nc, a[1]), 1);
    nk_assign_add(nc, p, p);
    nk_store(nc, out, nk_copy(nc, p, F32));
    nk_return(nc, out);
}

TEST(review_self_plus_equals_on_psum_names_the_psum_rule)
{
    nk_array in[2] = {{F32, 2, {128, 64}, NULL}, {F32, 2, {128, 64}, NULL}};
    nk_kernel *k = nk_kernel_new("self_add", k_self_add);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, in, 2, NULL, &p), NK_EMEMORY);
    CHECK_CONTAINS(nk_kernel_error(k), "test_review.c:55: nk_assign_add (tensor_tensor): both inputs are in PSUM");
    nk_kernel_free(k);
}
