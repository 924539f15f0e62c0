/*
 * vbuf.h - fast appends to an nk_text for the view's writers: strings,
 * integers, fixed-decimal numbers and JSON string literals. Writing a
 * million-instruction profile calls these tens of millions of times, so
 * they avoid printf.
 */
#ifndef NK_VBUF_H
#define NK_VBUF_H

#include "nkint.h"
#include "core/atomicfile.h"

#include <stdint.h>
#include <string.h>

/* Makes room for n more bytes (and a terminator); 0 or NK_ENOMEM. */
int nk__vb_reserve(nk_text *t, size_t n);

/* Streaming (this thread's, one text at a time): while t is the stream's
 * text, a reserve that would grow it past NK_VB_STREAM_CHUNK bytes first
 * hands the text so far to sink (which returns 0 or a negative status: the
 * first failure is kept, later text is dropped) and starts it again empty,
 * so the writers above never hold more than a chunk of it. The writers only
 * append, so what the sink receives is the text they would have made.
 * nk__vb_stream(t, NULL, NULL) ends it; the caller hands the rest over. */
#define NK_VB_STREAM_CHUNK ((size_t)1 << 20)
typedef int (*nk__vb_sink)(void *ctx, const char *s, size_t n);
void nk__vb_stream(nk_text *t, nk__vb_sink sink, void *ctx);
/* The first failure of the stream's sink, 0 if none. */
int nk__vb_stream_status(void);

/* A text written to path (NULL or "-": standard output) as it is made: the
 * file replaces path only when the whole text is written (core/atomicfile.h).
 * nk__vb_out_begin opens it and streams t into it; nk__vb_out_end (always
 * called after a begin) stops the stream, writes the rest when rc is 0,
 * commits or aborts, frees t and returns rc, or NK_EIO when writing failed
 * (why then says how). *bytes: what was written. */
typedef struct nk__vb_out {
    nk__afile f;
    int to_file;
    uint64_t bytes;
    char why[384];
} nk__vb_out;
int nk__vb_out_begin(nk__vb_out *o, nk_text *t, const char *path);
int nk__vb_out_end(nk__vb_out *o, nk_text *t, int rc, uint64_t *bytes, char *why, size_t whylen);
/* The appends: inline while the text has room (the common case: these run
 * per character and per number of a page), the rest out of line. */
void nk__vb_mem_slow(nk_text *t, const char *s, size_t n);
static inline void nk__vb_mem(nk_text *t, const char *s, size_t n)
{
    if (!t->oom && t->len + n < t->cap) {
        memcpy(t->s + t->len, s, n);
        t->len += n;
        t->s[t->len] = 0;
    } else
        nk__vb_mem_slow(t, s, n);
}
static inline void nk__vb_str(nk_text *t, const char *s) { nk__vb_mem(t, s, strlen(s)); }
static inline void nk__vb_chr(nk_text *t, char c)
{
    if (!t->oom && t->len + 1 < t->cap) {
        t->s[t->len++] = c;
        t->s[t->len] = 0;
    } else
        nk__vb_mem_slow(t, &c, 1);
}
void nk__vb_u64(nk_text *t, uint64_t v);
void nk__vb_i64(nk_text *t, int64_t v);
/* x with at most `decimals` (0..9) fraction digits, trailing zeros removed;
 * non-finite values print as 0 (JSON has no NaN). */
void nk__vb_num(nk_text *t, double x, int decimals);
/* x as printf's "%.10g" gives it, byte for byte (the digits correctly
 * rounded, ties to even), without printf for the values of a timeline
 * (1e-4 <= |x| < 1e10); others go through snprintf. */
void nk__vb_g10(nk_text *t, double x);
/* A JSON string literal. Escapes ", \, control characters, <, >, & and
 * U+2028/U+2029, so the result is also safe inside an HTML <script>;
 * invalid UTF-8 becomes U+FFFD. NULL prints null. */
void nk__vb_jstr(nk_text *t, const char *s);
/* A CSV field: quoted (with "" for ") when it holds , " CR or LF. */
void nk__vb_csv(nk_text *t, const char *s);

#endif
