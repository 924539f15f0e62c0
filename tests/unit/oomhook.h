/*
 * oomhook.h - failing the Nth allocation: the unit binary is linked with
 * -Wl,--wrap for malloc, calloc, realloc, strdup, strndup and realpath
 * (Makefile), so every call the library's objects (and the tests) make goes
 * through oomhook.c, which passes it through until a test arms the
 * countdown. OpenBLAS, SLEEF and libc allocate for themselves, unwrapped.
 */
#ifndef NK_TEST_OOMHOOK_H
#define NK_TEST_OOMHOOK_H

#include <stddef.h>

/* From now on, allocation n (counting from 1) fails with ENOMEM; every other
 * one succeeds. */
void nk_oom_arm(long n);
/* Stops failing; returns the allocations made since nk_oom_arm, *hit 1 when
 * the failing one was reached. */
long nk_oom_disarm(int *hit);
/* The bytes the latest malloc, calloc (n * m) or realloc asked for. */
size_t nk_oom_last_size(void);

#endif
