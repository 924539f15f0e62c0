/*
 * userkernel.h - compile and load a kernel from a user's C file.
 */
#ifndef NK_USERKERNEL_H
#define NK_USERKERNEL_H

#include "nklab.h"

#include <limits.h>

typedef struct nk_user_kernel {
    char path[PATH_MAX];
    char function[128];
    nk_kernel_fn fn;
    void *handle;
} nk_user_kernel;

/* Does spec look like FILE.c:FUNCTION? */
int nk_cli_is_user_kernel(const char *spec);
/* Compiles (or finds in the cache) and loads the kernel; on failure writes a
 * one-line message to err (the compiler's own output went to stderr). */
int nk_cli_load_user_kernel(const char *spec, nk_user_kernel *uk, int verbose, char *err, size_t errlen);
void nk_cli_unload_user_kernel(nk_user_kernel *uk);

#endif
