/*
 * vbuf.c - fast appends to an nk_text (see vbuf.h).
 */
#include "core/vbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

static _Thread_local struct {
    nk_text *t;
    nk__vb_sink sink;
    void *ctx;
    int rc;
} stream;

void nk__vb_stream(nk_text *t, nk__vb_sink sink, void *ctx)
{
    stream.t = sink ? t : NULL;
    stream.sink = sink;
    stream.ctx = ctx;
    stream.rc = 0;
}

int nk__vb_stream_status(void) { return stream.rc; }

static int out_write(void *ctx, const char *s, size_t n)
{
    nk__vb_out *o = ctx;
    int rc = o->to_file ? nk__afile_write(&o->f, s, n) : nk__fd_write_all(STDOUT_FILENO, s, n);
    if (rc)
        snprintf(o->why, sizeof o->why, "%s", o->to_file ? o->f.msg : strerror(errno));
    else
        o->bytes += n;
    return rc;
}

int nk__vb_out_begin(nk__vb_out *o, nk_text *t, const char *path)
{
    memset(o, 0, sizeof *o);
    o->f.fd = -1;
    o->to_file = path && strcmp(path, "-");
    if (!o->to_file) {
        if (fflush(stdout)) { /* what printf already buffered goes first */
            snprintf(o->why, sizeof o->why, "%s", strerror(errno));
            return NK_EIO;
        }
    } else if (nk__afile_open(&o->f, path)) {
        snprintf(o->why, sizeof o->why, "%s", o->f.msg);
        o->to_file = 0; /* nothing to abort */
        return NK_EIO;
    }
    nk__vb_stream(t, out_write, o);
    return 0;
}

int nk__vb_out_end(nk__vb_out *o, nk_text *t, int rc, uint64_t *bytes, char *why, size_t whylen)
{
    int st = nk__vb_stream_status();
    nk__vb_stream(NULL, NULL, NULL);
    if (!rc && !st && t->len)
        st = out_write(o, t->s, t->len);
    if (!rc && st)
        rc = NK_EIO;
    if (o->to_file) {
        if (rc)
            nk__afile_abort(&o->f);
        else if (nk__afile_commit(&o->f)) {
            snprintf(o->why, sizeof o->why, "%s", o->f.msg);
            rc = NK_EIO;
        }
    }
    nk__text_free(t);
    if (bytes)
        *bytes = o->bytes;
    if (why && whylen)
        snprintf(why, whylen, "%s", rc == NK_EIO ? o->why : "");
    return rc;
}

int nk__vb_reserve(nk_text *t, size_t n)
{
    if (t->oom)
        return NK_ENOMEM;
    if (t->len + n + 1 <= t->cap)
        return NK_OK;
    if (t == stream.t && t->len && t->len + n + 1 > NK_VB_STREAM_CHUNK) {
        if (!stream.rc)
            stream.rc = stream.sink(stream.ctx, t->s, t->len);
        t->len = 0;
        t->s[0] = 0;
        if (n + 1 <= t->cap)
            return NK_OK;
    }
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + n + 1)
        cap *= 2;
    char *s = nk__big_realloc(t->s, cap);
    if (!s) {
        t->oom = 1;
        return NK_ENOMEM;
    }
    t->s = s;
    t->cap = cap;
    return NK_OK;
}

void nk__vb_mem_slow(nk_text *t, const char *s, size_t n)
{
    if (nk__vb_reserve(t, n))
        return;
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = 0;
}


void nk__vb_u64(nk_text *t, uint64_t v)
{
    char d[24];
    int i = (int)sizeof d;
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    nk__vb_mem(t, d + i, sizeof d - (size_t)i);
}

void nk__vb_i64(nk_text *t, int64_t v)
{
    if (v < 0) {
        nk__vb_chr(t, '-');
        nk__vb_u64(t, (uint64_t)0 - (uint64_t)v);
    } else {
        nk__vb_u64(t, (uint64_t)v);
    }
}

void nk__vb_num(nk_text *t, double x, int decimals)
{
    static const double pow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    if (decimals < 0)
        decimals = 0;
    if (decimals > 9)
        decimals = 9;
    if (!isfinite(x))
        x = 0;
    double scaled = fabs(x) * pow10[decimals];
    if (scaled >= 9e18) { /* too large for the integer path: rare, so printf */
        char buf[400];
        snprintf(buf, sizeof buf, "%.*f", decimals, x);
        nk__vb_str(t, buf);
        return;
    }
    uint64_t v = (uint64_t)llround(scaled);
    uint64_t ip = v / (uint64_t)pow10[decimals], fp = v % (uint64_t)pow10[decimals];
    if (x < 0 && v)
        nk__vb_chr(t, '-');
    nk__vb_u64(t, ip);
    if (!fp)
        return;
    char d[10];
    int nd = decimals;
    for (int i = nd - 1; i >= 0; i--) {
        d[i] = (char)('0' + fp % 10);
        fp /= 10;
    }
    while (nd > 0 && d[nd - 1] == '0')
        nd--;
    nk__vb_chr(t, '.');
    nk__vb_mem(t, d, (size_t)nd);
}

/* "%.10g" exactly: x = m 2^e (m < 2^53) scaled by 10^d to ten digits is
 * m 10^d / 2^-e, at most 2^53 10^13 < 2^97, so unsigned 128-bit integers
 * hold it and its remainder exactly; the quotient rounds half to even, as
 * glibc's printf does in the default rounding mode. */
void nk__vb_g10(nk_text *t, double x)
{
    static const uint64_t p10[] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
                                   100000000ull, 1000000000ull, 10000000000ull, 100000000000ull,
                                   1000000000000ull, 10000000000000ull, 100000000000000ull};
    double a = fabs(x);
    if (!(a >= 1e-4 && a < 1e10)) { /* zero, tiny, huge, not finite: rare */
        char buf[48];
        snprintf(buf, sizeof buf, "%.10g", x);
        nk__vb_str(t, buf);
        return;
    }
    int ex;
    double fr = frexp(a, &ex); /* a = fr 2^ex, fr in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(fr, 53);
    int sh = 53 - ex;          /* a = m / 2^sh, sh > 0 here (a < 2^34) */
    int X = (int)floor(log10(a));
    uint64_t q = 0;
    for (int tries = 0; tries < 3; tries++) {
        int d = 9 - X; /* 10 significant digits: a 10^d in [10^9, 10^10) */
        if (d < 0 || d > 14)
            break;
        unsigned __int128 n = (unsigned __int128)m * p10[d];
        unsigned __int128 mask = ((unsigned __int128)1 << sh) - 1, r = n & mask, half = (unsigned __int128)1 << (sh - 1);
        q = (uint64_t)(n >> sh);
        if (r > half || (r == half && (q & 1)))
            q++;
        if (q >= p10[10])
            X++;
        else if (q < p10[9])
            X--;
        else
            break;
        q = 0;
    }
    if (!q) { /* the exponent guess did not settle: printf */
        char buf[48];
        snprintf(buf, sizeof buf, "%.10g", x);
        nk__vb_str(t, buf);
        return;
    }
    char d[10];
    for (int i = 9; i >= 0; i--) {
        d[i] = (char)('0' + q % 10);
        q /= 10;
    }
    int nd = 10;
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    if (x < 0)
        nk__vb_chr(t, '-');
    if (X >= 0) { /* X + 1 integer digits, then the rest */
        nk__vb_mem(t, d, (size_t)X + 1);
        if (nd > X + 1) {
            nk__vb_chr(t, '.');
            nk__vb_mem(t, d + X + 1, (size_t)(nd - X - 1));
        }
    } else { /* 0.000ddd */
        nk__vb_str(t, "0.");
        for (int z = -1; z > X; z--)
            nk__vb_chr(t, '0');
        nk__vb_mem(t, d, (size_t)nd);
    }
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    int n;
    unsigned min;
    if ((c & 0xE0) == 0xC0) { n = 2; min = 0x80; c &= 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 3; min = 0x800; c &= 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 4; min = 0x10000; c &= 0x07; }
    else return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    return n;
}

void nk__vb_jstr(nk_text *t, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    if (!str) {
        nk__vb_str(t, "null");
        return;
    }
    const unsigned char *s = (const unsigned char *)str;
    nk__vb_chr(t, '"');
    while (*s) {
        const unsigned char *run = s; /* copy plain bytes in one go */
        while (*s >= 0x20 && *s < 0x80 && *s != '"' && *s != '\\' && *s != '<' && *s != '>' && *s != '&')
            s++;
        if (s > run)
            nk__vb_mem(t, (const char *)run, (size_t)(s - run));
        if (!*s)
            break;
        unsigned c = *s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            nk__vb_mem(t, e, 2);
            s++;
        } else if (c == '\n') {
            nk__vb_str(t, "\\n");
            s++;
        } else if (c == '\t') {
            nk__vb_str(t, "\\t");
            s++;
        } else if (c < 0x80) { /* other controls and < > & */
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            nk__vb_mem(t, e, 6);
            s++;
        } else {
            int n = utf8_len(s);
            if (!n) {
                nk__vb_str(t, "\\ufffd");
                s++;
            } else if (n == 3 && s[0] == 0xE2 && s[1] == 0x80 && (s[2] == 0xA8 || s[2] == 0xA9)) {
                nk__vb_str(t, s[2] == 0xA8 ? "\\u2028" : "\\u2029");
                s += 3;
            } else {
                nk__vb_mem(t, (const char *)s, (size_t)n);
                s += n;
            }
        }
    }
    nk__vb_chr(t, '"');
}

void nk__vb_csv(nk_text *t, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        nk__vb_str(t, s);
        return;
    }
    nk__vb_chr(t, '"');
    for (const char *q; (q = strchr(s, '"')); s = q + 1) {
        nk__vb_mem(t, s, (size_t)(q - s));
        nk__vb_str(t, "\"\"");
    }
    nk__vb_str(t, s);
    nk__vb_chr(t, '"');
}
