/*
 * blas.c - OpenBLAS's sgemm for the executor, loaded when the first matmul
 * runs (blas.h).
 *
 * A process linked with OpenBLAS pays for it at start-up whether it runs a
 * matmul or not: about 2.2 MB of resident memory and 2.3 ms on the
 * reference machine (docs/speed.md), for the relocation of its per-CPU
 * kernel tables and the libgfortran and libquadmath it brings. Most uses
 * of the library execute no matmul (timing only, reading profiles, the
 * viewer, the exports), so the library does not link OpenBLAS; the first
 * matmul to execute loads it, once per process:
 *   1. an OpenBLAS the process holds already under its soname is used as
 *      it is (in the Python front-end, the one Debian's numpy loads through
 *      libblas.so.3: one copy, not two);
 *   2. else the single-threaded build the library was built against
 *      (NK_BLAS_LIB: the Makefile's BLAS_DIR);
 *   3. else the soname on the loader's search path.
 */
#define _GNU_SOURCE
#include "exec/blas.h"
#include "core/atomicfile.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define BLAS_SONAME "libopenblas.so.0"
#ifndef NK_BLAS_LIB
#define NK_BLAS_LIB BLAS_SONAME
#endif

int nk__blas_open(const char *lib, int flags, nk__sgemm_fn **out, char *why, size_t n)
{
    *out = NULL;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | flags);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, n, "%s", e ? e : lib);
        return NK_EIO;
    }
    void *f = dlsym(h, "cblas_sgemm");
    if (!f) {
        snprintf(why, n, "%s: has no cblas_sgemm", lib);
        dlclose(h);
        return NK_EIO;
    }
    /* the handle stays open for the process's life: *out points into it */
    _Static_assert(sizeof f == sizeof *out, "a function pointer is a data pointer's size");
    memcpy(out, &f, sizeof f);
    return 0;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static nk__sgemm_fn *sgemm;
static char failed[640]; /* why none could be loaded (the last attempt's reason) */

static void load(void)
{
    char why[512];
    if (!nk__blas_open(BLAS_SONAME, RTLD_NOLOAD, &sgemm, why, sizeof why) ||
        !nk__blas_open(NK_BLAS_LIB, 0, &sgemm, why, sizeof why) ||
        !nk__blas_open(BLAS_SONAME, 0, &sgemm, why, sizeof why))
        return;
    snprintf(failed, sizeof failed, "the matmul needs OpenBLAS, which could not be loaded: %s", why);
}

nk__sgemm_fn *nk__sgemm(void)
{
    pthread_once(&once, load);
    if (!sgemm)
        nk__error_set("%s", failed);
    return sgemm;
}
