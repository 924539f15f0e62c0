/*
 * vbuf.h - fast appends to an nk_text for the view's writers: strings,
 * integers, fixed-decimal numbers and JSON string literals. Writing a
 * million-instruction profile calls these tens of millions of times, so
 * they avoid printf.
 */
#ifndef NK_VBUF_H
#define NK_VBUF_H

#include "nkint.h"

#include <stdint.h>

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
void nk__vb_mem(nk_text *t, const char *s, size_t n);
void nk__vb_str(nk_text *t, const char *s);
void nk__vb_chr(nk_text *t, char c);
void nk__vb_u64(nk_text *t, uint64_t v);
void nk__vb_i64(nk_text *t, int64_t v);
/* x with at most `decimals` (0..9) fraction digits, trailing zeros removed;
 * non-finite values print as 0 (JSON has no NaN). */
void nk__vb_num(nk_text *t, double x, int decimals);
/* A JSON string literal. Escapes ", \, control characters, <, >, & and
 * U+2028/U+2029, so the result is also safe inside an HTML <script>;
 * invalid UTF-8 becomes U+FFFD. NULL prints null. */
void nk__vb_jstr(nk_text *t, const char *s);
/* A CSV field: quoted (with "" for ") when it holds , " CR or LF. */
void nk__vb_csv(nk_text *t, const char *s);

#endif
