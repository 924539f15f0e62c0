/*
 * nkassert.h - NK_ASSERT(cond): an invariant of the library's own data
 * (indices in range, orders sorted, ranges apart), checked when NK_DEBUG is
 * defined (the sanitizer builds define it) and compiled out otherwise (cond
 * is type-checked, never evaluated). A broken one is a bug of nklab, never a
 * user's error: it prints "nklab: invariant broken at FILE:LINE (FUNC): COND"
 * and aborts. Inputs from users and files are checked with errors instead.
 */
#ifndef NK_CORE_NKASSERT_H
#define NK_CORE_NKASSERT_H

void nk__assert_fail(const char *cond, const char *file, int line, const char *func) __attribute__((noreturn));

#ifdef NK_DEBUG
#define NK_ASSERT(c) ((c) ? (void)0 : nk__assert_fail(#c, __FILE__, __LINE__, __func__))
#else
#define NK_ASSERT(c) ((void)sizeof(!(c)))
#endif

#endif
