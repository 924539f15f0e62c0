/*
 * test_blas.c - the executor's OpenBLAS, loaded on first use
 * (src/exec/blas.c): the build's library gives a cblas_sgemm that
 * multiplies, the process-wide one is that same function, and a library
 * that is missing or has no cblas_sgemm is an NK_EIO saying which and why.
 *
 * Reference: the products summed in double; tolerance (K + 1) * 2^-24 *
 * sum |a b| per element, the bound for K fp32 products and additions in
 * any order (test_ops_mm.c's).
 */
#define _GNU_SOURCE
#include "test.h"

#include "exec/blas.h"

#include <dlfcn.h>
#include <math.h>

TEST(blas_build_library_multiplies)
{
    nk__sgemm_fn *f = NULL;
    char why[512] = "";
    CHECK_INT(nk__blas_open(NK_BLAS_LIB, 0, &f, why, sizeof why), 0);
    CHECK_STR(why, "");
    if (!f)
        return;
    /* the process's sgemm is the build's library's (nothing else loaded one) */
    CHECK(nk__sgemm() == f);
    enum { K = 37, M = 19, N = 23 };
    float a[K * M], b[K * N], c[M * N];
    for (int i = 0; i < K * M; i++)
        a[i] = (float)((i * 7919) % 61 - 30) / 16.0f;
    for (int i = 0; i < K * N; i++)
        b[i] = (float)((i * 104729) % 53 - 26) / 8.0f;
    for (int i = 0; i < M * N; i++)
        c[i] = 1.5f; /* beta = 1 adds to it */
    /* c[M, N] += a[K, M]^T @ b[K, N], as the executor calls it */
    f(CblasRowMajor, CblasTrans, CblasNoTrans, M, N, K, 1.0f, a, M, b, N, 1.0f, c, N);
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double ref = 1.5, mag = 1.5;
            for (int k = 0; k < K; k++) {
                ref += (double)a[k * M + m] * b[k * N + n];
                mag += fabs((double)a[k * M + m] * b[k * N + n]);
            }
            if (fabs(c[m * N + n] - ref) > (K + 1) * 0x1p-24 * mag && bad++ < 3)
                CHECK_NEAR(c[m * N + n], ref, 0, (K + 1) * 0x1p-24 * mag);
        }
    CHECK_INT(bad, 0);
}

TEST(blas_missing_library_says_which_and_why)
{
    nk__sgemm_fn *f = (nk__sgemm_fn *)1;
    char why[512] = "";
    CHECK_INT(nk__blas_open("/nonexistent/nklab/libopenblas.so.0", 0, &f, why, sizeof why), NK_EIO);
    CHECK(f == NULL);
    CHECK_CONTAINS(why, "/nonexistent/nklab/libopenblas.so.0");
    CHECK_CONTAINS(why, "No such file");
    /* a library that loads but is no BLAS */
    CHECK_INT(nk__blas_open("libm.so.6", 0, &f, why, sizeof why), NK_EIO);
    CHECK(f == NULL);
    CHECK_STR(why, "libm.so.6: has no cblas_sgemm");
    /* only one the process holds already, with RTLD_NOLOAD */
    CHECK_INT(nk__blas_open("libnklab-never-loaded.so.1", RTLD_NOLOAD, &f, why, sizeof why), NK_EIO);
    CHECK(f == NULL);
    CHECK_CONTAINS(why, "libnklab-never-loaded.so.1");
}
