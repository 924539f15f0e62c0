/*
 * oomhook.c - the unit binary's allocation wrappers (oomhook.h).
 */
#define _GNU_SOURCE
#include "oomhook.h"

#include <errno.h>
#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
char *__real_realpath(const char *path, char *resolved);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
char *__wrap_realpath(const char *path, char *resolved);

static long fail_at; /* 0: off; else the allocation (from 1) that fails */
static long seen;    /* allocations since the countdown was armed */
static int hit;      /* the failing one was reached */

void nk_oom_arm(long n)
{
    __atomic_store_n(&seen, 0, __ATOMIC_RELAXED);
    hit = 0;
    __atomic_store_n(&fail_at, n, __ATOMIC_RELAXED);
}

long nk_oom_disarm(int *was_hit)
{
    __atomic_store_n(&fail_at, 0, __ATOMIC_RELAXED);
    if (was_hit)
        *was_hit = hit;
    return __atomic_load_n(&seen, __ATOMIC_RELAXED);
}

static int fail_now(void)
{
    long at = __atomic_load_n(&fail_at, __ATOMIC_RELAXED);
    if (!at || __atomic_add_fetch(&seen, 1, __ATOMIC_RELAXED) != at)
        return 0;
    hit = 1;
    errno = ENOMEM;
    return 1;
}

static size_t last_size; /* (of any thread: tests read it on one) */
size_t nk_oom_last_size(void) { return __atomic_load_n(&last_size, __ATOMIC_RELAXED); }
static void note_size(size_t n) { __atomic_store_n(&last_size, n, __ATOMIC_RELAXED); }

void *__wrap_malloc(size_t n) { return note_size(n), fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return note_size(n * m), fail_now() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return note_size(n), fail_now() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return fail_now() ? NULL : __real_strndup(s, n); }
char *__wrap_realpath(const char *path, char *resolved)
{
    /* only the allocating form (resolved NULL) */
    return !resolved && fail_now() ? NULL : __real_realpath(path, resolved);
}
