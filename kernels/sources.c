/*
 * sources.c - the built-in kernels' source texts, embedded at build time
 * (scripts/embed-assets.sh --table, from the Makefile), so a profile of a
 * built-in kernel holds its source wherever it is captured: from another
 * directory, or by an installed nklab, where the relative path the kernel
 * recorded (its __FILE__, "kernels/tensor_exp.c") names no file.
 */
#include "kernels.h"

#include <string.h>

/* generated from every kernels .c file, paths as the Makefile compiles them */
extern const int nk__kernel_src_count;
extern const char *const nk__kernel_src_path[];
extern const char *const nk__kernel_src_text[];

const char *nk_builtin_kernel_source(const char *path, void *user)
{
    (void)user;
    if (!path)
        return NULL;
    for (int i = 0; i < nk__kernel_src_count; i++)
        if (!strcmp(nk__kernel_src_path[i], path))
            return nk__kernel_src_text[i];
    return NULL;
}

void nk_builtin_kernel_sources_register(void)
{
    nk_profile_set_source_lookup(nk_builtin_kernel_source, NULL);
}
