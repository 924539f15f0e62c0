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
    int decl_line; /* C: the line of FUNCTION's definition in path (0: not found) */
} nk_user_kernel;

/* Does spec look like FILE.c:FUNCTION (or FILE.py:FUNCTION)? */
int nk_cli_is_user_kernel(const char *spec);
/* Does spec look like FILE.py:FUNCTION? */
int nk_cli_is_py_kernel(const char *spec);
/* Loads FUNCTION of the Python file path as a kernel function; set by the
 * Python extension when it runs a command (NULL in the nklab executable). */
typedef int (*nk_py_kernel_loader)(const char *path, const char *function, nk_kernel_fn *fn, char *err,
                                   size_t errlen);
extern nk_py_kernel_loader nk_cli_py_loader;
/* Names the loaded Python kernel's nargs positional parameters on k and
 * declares them at its def line (nk_kernel_set_params); set with the loader. */
typedef void (*nk_py_kernel_params)(nk_kernel *k, int nargs);
extern nk_py_kernel_params nk_cli_py_params;
/* Compiles (or finds in the cache) and loads the kernel; on failure writes a
 * one-line message to err (the compiler's own output went to stderr). */
int nk_cli_load_user_kernel(const char *spec, nk_user_kernel *uk, int verbose, char *err, size_t errlen);
void nk_cli_unload_user_kernel(nk_user_kernel *uk);

#endif
