/*
 * examples.h - a built-in kernel's example arguments as shapes alone (no
 * data): what the tests that only compile and time a kernel pass it.
 */
#ifndef NK_TEST_EXAMPLES_H
#define NK_TEST_EXAMPLES_H

#include "kernels.h"

#include <string.h>

/* args (room for NK_KERNEL_MAX_ARGS): ki's example shapes and dtypes. */
static inline void example_shapes(const nk_kernel_info *ki, nk_array *args)
{
    for (int a = 0; a < ki->nargs; a++) {
        args[a] = (nk_array){ki->args[a].dtype, ki->args[a].ndim, {0}, NULL};
        memcpy(args[a].shape, ki->args[a].shape, sizeof args[a].shape);
    }
}

#endif
