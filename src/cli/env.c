/*
 * env.c - NK_THREADS and NK_PROFILE_FIXED_TIME for the library (env.h).
 */
#include "env.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

int nk_cli_env_threads(void)
{
    const char *e = getenv("NK_THREADS");
    if (!e || !*e)
        return 0;
    char *end;
    long n = strtol(e, &end, 10);
    return *end || n < 1 ? 0 : n > INT_MAX ? INT_MAX : (int)n;
}

int nk_cli_env_created(double *t)
{
    const char *e = getenv("NK_PROFILE_FIXED_TIME");
    if (!e || !*e)
        return 0;
    char *end;
    *t = strtod(e, &end);
    return !*end && isfinite(*t);
}

void nk_cli_env_stamp_profile(nk_profile *pr)
{
    double t;
    if (pr && nk_cli_env_created(&t))
        nk_profile_set_created(pr, t);
}
