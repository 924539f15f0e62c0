/*
 * test_assign_copy.c - nk_assign_copy: an assignment that keeps the value's
 * handle valid (the Python front-end's `t[...] = v` when v is still named).
 */
#include "test.h"
#include "nklab.h"
#include "nkint.h"

#include <stdlib.h>

static nk_array arr(int64_t r, int64_t c)
{
    nk_array a;
    nk_array_alloc(&a, NK_F32, 2, (int64_t[]){r, c});
    float *x = a.data;
    for (int64_t i = 0; i < r * c; i++)
        x[i] = (float)((i * 29 % 97) - 48) * 0.01f;
    return a;
}

static int count(const nk_program *p, int op)
{
    int n = 0;
    for (uint32_t i = 0; i < p->ninstr; i++)
        n += p->instrs[i].op == op;
    return n;
}

/* v = exp(x) is fresh (nk_assign would move it into t); a copy keeps v,
 * which is used again: out = t + v = 2 exp(x). */
static void k_copy_keeps_value(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 32), NK_F32, NK_SHARED_HBM);
    nk_tensor t = nk_ndarray(nc, NK_SHAPE(128, 32), NK_F32, NK_SBUF);
    nk_tensor v = nk_exp(nc, nk_load(nc, a[0]));
    nk_assign_copy(nc, t, v);
    nk_store(nc, out, nk_add(nc, t, v));
    nk_return(nc, out);
}

TEST(assign_copy_keeps_the_value_usable)
{
    nk_array x = arr(128, 32), out[1];
    nk_kernel *k = nk_kernel_new("copy_keeps_value", k_copy_keeps_value);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), 0);
    if (p)
        CHECK_INT(count(p, NK_OP_TENSOR_COPY), 1);
    int nout = 0;
    CHECK_INT(nk_call(k, &x, 1, NULL, out, 1, &nout), 0);
    if (nout == 1) {
        const float *xi = x.data, *y = out[0].data;
        int bad = 0;
        for (int i = 0; i < 128 * 32; i++)
            bad += !(fabs(y[i] - 2 * exp(xi[i])) <= 1e-6 * 2 * exp(xi[i]));
        CHECK_INT(bad, 0);
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&x);
}

/* Into HBM it is a store, from HBM a load, as nk_assign. */
static void k_copy_hbm(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 32), NK_F32, NK_SHARED_HBM);
    nk_tensor t = nk_ndarray(nc, NK_SHAPE(128, 32), NK_F32, NK_SBUF);
    nk_assign_copy(nc, t, a[0]);
    nk_assign_copy(nc, out, t);
    nk_return(nc, out);
}

TEST(assign_copy_to_and_from_hbm_is_a_dma)
{
    nk_array x = arr(128, 32), out[1];
    nk_kernel *k = nk_kernel_new("copy_hbm", k_copy_hbm);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), 0);
    if (p) {
        CHECK_INT(p->ninstr, 2);
        CHECK_INT(count(p, NK_OP_LOAD), 1);
        CHECK_INT(count(p, NK_OP_STORE), 1);
    }
    int nout = 0;
    CHECK_INT(nk_call(k, &x, 1, NULL, out, 1, &nout), 0);
    if (nout == 1) {
        CHECK(!memcmp(out[0].data, x.data, 128 * 32 * sizeof(float)));
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&x);
}

static int g_line;

static void k_copy_shape(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor t = nk_ndarray(nc, NK_SHAPE(128, 16), NK_F32, NK_SBUF);
    nk_tensor v = nk_load(nc, a[0]);
    g_line = __LINE__; nk_assign_copy(nc, t, v);
    nk_return(nc, a[0]);
}

TEST(assign_copy_checks_shapes)
{
    nk_array x = arr(128, 32);
    nk_kernel *k = nk_kernel_new("copy_shape", k_copy_shape);
    const nk_program *p = NULL;
    CHECK_INT(nk_kernel_compile(k, &x, 1, NULL, &p), NK_ESHAPE);
    char want[256];
    snprintf(want, sizeof want, "%s:%d: nk_assign_copy: a value [128, 32] cannot be assigned into [128, 16]",
             __FILE__, g_line);
    CHECK_STR(nk_kernel_error(k), want);
    nk_kernel_free(k);
    nk_array_free(&x);
}
