/*
 * env.h - the environment variables that tune the library, read by its
 * front-ends (the CLI and the Python extension) and passed in explicitly:
 * the library itself reads no environment variable.
 *
 *   NK_THREADS=N             host threads of the compile step and the timing
 *                            model (nk_options.threads; 1: the calling thread),
 *                            and of nklab view (1: its insights not on a thread
 *                            of their own)
 *   NK_PROFILE_FIXED_TIME=S  a profile's creation time, in seconds since the
 *                            epoch, for reproducible files (nk_profile_set_created)
 */
#ifndef NK_CLI_ENV_H
#define NK_CLI_ENV_H

#include "nklab.h"

/* NK_THREADS as a positive count, or 0 (unset, empty or not a positive
 * integer: the library's default). */
int nk_cli_env_threads(void);
/* The creation time NK_PROFILE_FIXED_TIME names into *t: 1 when it is set to
 * a finite number, else 0. */
int nk_cli_env_created(double *t);
/* Gives pr that creation time, when there is one; otherwise leaves the
 * capture's clock time. */
void nk_cli_env_stamp_profile(nk_profile *pr);

#endif
