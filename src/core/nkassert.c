/*
 * nkassert.c - a broken invariant (nkassert.h).
 */
#include "core/nkassert.h"

#include <stdio.h>
#include <stdlib.h>

void nk__assert_fail(const char *cond, const char *file, int line, const char *func)
{
    fprintf(stderr, "nklab: invariant broken at %s:%d (%s): %s\n", file, line, func, cond);
    fflush(stderr);
    abort();
}
