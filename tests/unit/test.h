/*
 * test.h - a small test harness: self-registering tests, checks that print
 * both operands, and a summary line "N passed, N failed".
 */
#ifndef NK_TEST_H
#define NK_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*nk_test_fn)(void);
void nk_test_register(const char *name, nk_test_fn fn, const char *file);
void nk_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int nk_test_failed(void); /* has the current test failed so far */
/* The whole file as a NUL-terminated string (free it), or NULL. */
char *nk_test_read_file(const char *path);
/* Compares text with tests/golden/NAME (tests run from the repository root);
 * with NK_UPDATE_GOLDEN=1 in the environment rewrites the file instead. */
void nk_test_golden_at(const char *file, int line, const char *name, const char *text);
#define CHECK_GOLDEN(name, text) nk_test_golden_at(__FILE__, __LINE__, (name), (text))

#define TEST(name)                                                                   \
    static void name(void);                                                          \
    __attribute__((constructor)) static void nk_reg_##name(void)                     \
    { nk_test_register(#name, name, __FILE__); }                                     \
    static void name(void)

#define CHECK(cond)                                                                  \
    do { if (!(cond)) nk_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); } while (0)

#define CHECK_INT(a, b)                                                              \
    do { long long va_ = (long long)(a), vb_ = (long long)(b);                       \
         if (va_ != vb_) nk_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld",  \
                                      #a, #b, va_, vb_); } while (0)

/* |a - b| <= atol + rtol * |b| */
#define CHECK_NEAR(a, b, rtol, atol)                                                 \
    do { double va_ = (double)(a), vb_ = (double)(b);                                \
         if (!(fabs(va_ - vb_) <= (atol) + (rtol) * fabs(vb_)))                      \
             nk_test_fail(__FILE__, __LINE__, "%s ~ %s: %.9g vs %.9g (rtol %g, atol %g)", \
                          #a, #b, va_, vb_, (double)(rtol), (double)(atol)); } while (0)

#define CHECK_STR(a, b)                                                              \
    do { const char *va_ = (a), *vb_ = (b);                                          \
         if (!va_ || !vb_ || strcmp(va_, vb_))                                       \
             nk_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,   \
                          va_ ? va_ : "(null)", vb_ ? vb_ : "(null)"); } while (0)

#define CHECK_CONTAINS(hay, needle)                                                  \
    do { const char *h_ = (hay), *n_ = (needle);                                     \
         if (!h_ || !strstr(h_, n_))                                                 \
             nk_test_fail(__FILE__, __LINE__, "\"%s\" does not contain \"%s\"",      \
                          h_ ? h_ : "(null)", n_); } while (0)

#endif
