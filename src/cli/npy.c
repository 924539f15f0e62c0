/*
 * npy.c - NumPy .npy reader and writer.
 *
 * The format: the magic "\x93NUMPY", a major and a minor version byte, the
 * header length (2 bytes little-endian in version 1.0, 4 bytes in 2.0 and
 * 3.0), then the header: a Python dict literal with exactly the keys 'descr',
 * 'fortran_order' and 'shape', padded with spaces and ended by a newline.
 * The data follows, C order, nothing after it.
 *
 * The reader parses the dict as a small grammar (any key order, either quote,
 * trailing comma, whitespace) rather than matching the text numpy happens to
 * write, and checks the data size against the file size before allocating,
 * so a lying header cannot make it allocate or read past the end. Values are
 * converted chunk by chunk into the requested dtype, never whole-file twice.
 */
#include "npy.h"

#include "core/atomicfile.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK 1024 /* elements converted per step */

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* Source element kinds. */
enum { K_F16, K_F32, K_F64, K_I8, K_I16, K_I32, K_I64, K_U8, K_U16, K_U32, K_U64, K_BOOL };

static int fail(char *err, size_t errlen, int status, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail(char *err, size_t errlen, int status, const char *name, const char *fmt, ...)
{
    if (!err || !errlen)
        return status;
    int n = snprintf(err, errlen, "%s: ", name);
    if (n < 0 || (size_t)n >= errlen)
        return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return status;
}

/* "[250, 512]" */
static void fmt_shape(char *buf, size_t n, const int64_t *shape, int ndim)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

static int host_le(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static uint64_t ld_le(const uint8_t *p, int size)
{
    uint64_t v = 0;
    for (int i = size - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* ---- the header dict */

typedef struct hparse {
    const char *s;
    size_t n, i;
    const char *name;
    char *err;
    size_t errlen;
} hparse;

static void skip_ws(hparse *h)
{
    while (h->i < h->n && (h->s[h->i] == ' ' || h->s[h->i] == '\t' || h->s[h->i] == '\n' || h->s[h->i] == '\r'))
        h->i++;
}

static int peek(const hparse *h) { return h->i < h->n ? (unsigned char)h->s[h->i] : -1; }

static int syntax(hparse *h, const char *what)
{
    if (h->i >= h->n)
        return fail(h->err, h->errlen, NK_EFORMAT, h->name, "malformed header: expected %s, found the end", what);
    return fail(h->err, h->errlen, NK_EFORMAT, h->name, "malformed header: expected %s at byte %zu", what,
                h->i);
}

static int expect(hparse *h, char c, const char *what)
{
    skip_ws(h);
    if (peek(h) != (unsigned char)c)
        return syntax(h, what);
    h->i++;
    return 0;
}

/* A quoted string ('...' or "..."), no escapes; truncated to cap - 1. */
static int parse_string(hparse *h, char *out, size_t cap)
{
    skip_ws(h);
    int q = peek(h);
    if (q != '\'' && q != '"')
        return syntax(h, "a quoted string");
    size_t start = ++h->i;
    while (h->i < h->n && h->s[h->i] != q) {
        if (h->s[h->i] == '\\' || h->s[h->i] == '\n')
            return syntax(h, "a plain string (no escapes or newlines)");
        h->i++;
    }
    if (h->i >= h->n)
        return fail(h->err, h->errlen, NK_EFORMAT, h->name, "malformed header: unterminated string");
    size_t len = h->i - start;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, h->s + start, len);
    out[len] = 0;
    h->i++;
    return 0;
}

static int parse_bool(hparse *h, int *out)
{
    skip_ws(h);
    if (h->n - h->i >= 4 && !memcmp(h->s + h->i, "True", 4)) {
        *out = 1;
        h->i += 4;
    } else if (h->n - h->i >= 5 && !memcmp(h->s + h->i, "False", 5)) {
        *out = 0;
        h->i += 5;
    } else {
        return syntax(h, "True or False");
    }
    return 0;
}

/* A tuple of non-negative integers: (), (5,), (2, 3) with an optional
 * Python 2 'L' suffix. Dims beyond NK_MAXDIM are counted, not stored. */
static int parse_shape(hparse *h, nk_npy_info *info)
{
    if (expect(h, '(', "a shape tuple '('"))
        return NK_EFORMAT;
    int nd = 0, commas = 0;
    for (;;) {
        skip_ws(h);
        int c = peek(h);
        if (c == ')') {
            h->i++;
            break;
        }
        if (c == '-')
            return fail(h->err, h->errlen, NK_EFORMAT, h->name, "negative dimension in shape");
        if (c < '0' || c > '9')
            return syntax(h, "a dimension or ')'");
        int64_t v = 0;
        while ((c = peek(h)) >= '0' && c <= '9') {
            v = v * 10 + (c - '0');
            if (v > INT32_MAX)
                return fail(h->err, h->errlen, NK_EFORMAT, h->name,
                            "absurd size: a shape dimension exceeds 2147483647");
            h->i++;
        }
        if (peek(h) == 'L')
            h->i++;
        if (nd < NK_MAXDIM)
            info->shape[nd] = v;
        nd++;
        skip_ws(h);
        c = peek(h);
        if (c == ',') {
            h->i++;
            commas++;
        } else if (c != ')') {
            return syntax(h, "',' or ')' in the shape");
        }
    }
    if (nd == 1 && commas == 0)
        return fail(h->err, h->errlen, NK_EFORMAT, h->name,
                    "malformed header: shape (N) is not a tuple; a 1-dim shape is written (N,)");
    info->ndim = nd;
    return 0;
}

/* Maps a descr to a kind and item size, or fails naming it. */
static int parse_descr(hparse *h, const char *d, int *kind, int *size)
{
    static const struct {
        char type;
        int size, kind;
    } known[] = {
        {'f', 2, K_F16}, {'f', 4, K_F32}, {'f', 8, K_F64}, {'i', 1, K_I8}, {'i', 2, K_I16}, {'i', 4, K_I32},
        {'i', 8, K_I64}, {'u', 1, K_U8},  {'u', 2, K_U16}, {'u', 4, K_U32}, {'u', 8, K_U64}, {'b', 1, K_BOOL},
    };
    if (strlen(d) == 3 && d[2] >= '1' && d[2] <= '8') {
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
            if (known[i].type != d[1] || known[i].size != d[2] - '0')
                continue;
            int one = known[i].size == 1;
            if (d[0] == '>' && !one)
                return fail(h->err, h->errlen, NK_EDTYPE, h->name,
                            "big-endian dtype '%s' is not supported (save as '<%c%c')", d, d[1], d[2]);
            if (d[0] == '<' || (one && (d[0] == '|' || d[0] == '>'))) {
                *kind = known[i].kind;
                *size = known[i].size;
                return 0;
            }
        }
    }
    return fail(h->err, h->errlen, NK_EDTYPE, h->name,
                "unsupported dtype '%s' (little-endian f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1 are read)", d);
}

/* Parses the dict into info and *kind. */
static int parse_dict(const char *name, const char *text, size_t n, nk_npy_info *info, int *kind, char *err,
                      size_t errlen)
{
    hparse h = {text, n, 0, name, err, errlen};
    char descr[32] = {0};
    /* the header is text: a NUL would end a key or the descr early ('<f4\0x' read as '<f4') */
    const char *nul = memchr(text, 0, n);
    if (nul)
        return fail(err, errlen, NK_EFORMAT, name, "malformed header: a NUL byte at byte %zu",
                    (size_t)(nul - text));
    int seen_descr = 0, seen_fortran = 0, seen_shape = 0, fortran = 0;
    if (expect(&h, '{', "'{'"))
        return NK_EFORMAT;
    for (;;) {
        skip_ws(&h);
        if (peek(&h) == '}') {
            h.i++;
            break;
        }
        char key[32];
        if (parse_string(&h, key, sizeof key) || expect(&h, ':', "':' after a key"))
            return NK_EFORMAT;
        int *seen = !strcmp(key, "descr") ? &seen_descr
                    : !strcmp(key, "fortran_order") ? &seen_fortran
                    : !strcmp(key, "shape") ? &seen_shape : NULL;
        if (!seen)
            return fail(err, errlen, NK_EFORMAT, name, "header has an unexpected key '%s'", key);
        if (*seen)
            return fail(err, errlen, NK_EFORMAT, name, "header repeats the key '%s'", key);
        *seen = 1;
        int rc;
        if (seen == &seen_descr) {
            skip_ws(&h);
            if (peek(&h) == '[')
                return fail(err, errlen, NK_EDTYPE, name, "structured dtypes are not supported");
            rc = parse_string(&h, descr, sizeof descr);
        } else if (seen == &seen_fortran) {
            rc = parse_bool(&h, &fortran);
        } else {
            rc = parse_shape(&h, info);
        }
        if (rc)
            return rc;
        skip_ws(&h);
        if (peek(&h) == ',') {
            h.i++;
            continue;
        }
        if (expect(&h, '}', "',' or '}'"))
            return NK_EFORMAT;
        break;
    }
    skip_ws(&h);
    if (h.i < h.n)
        return fail(err, errlen, NK_EFORMAT, name, "malformed header: unexpected text after the dict at byte %zu",
                    h.i);
    const char *missing = !seen_descr ? "descr" : !seen_fortran ? "fortran_order" : !seen_shape ? "shape" : NULL;
    if (missing)
        return fail(err, errlen, NK_EFORMAT, name, "header has no '%s'", missing);
    if (fortran)
        return fail(err, errlen, NK_EFORMAT, name,
                    "fortran_order True (column-major data) is not supported; save a C-order array");
    snprintf(info->descr, sizeof info->descr, "%s", descr);
    return parse_descr(&h, descr, kind, &info->itemsize);
}

/* Checks rank, dims and the element count. */
static int check_shape(const char *name, const nk_npy_info *info, int64_t *numel, char *err, size_t errlen)
{
    if (info->ndim < 1 || info->ndim > NK_MAXDIM)
        return fail(err, errlen, NK_ESHAPE, name, "rank %d is not supported (1 to %d dims)", info->ndim,
                    NK_MAXDIM);
    char s[96];
    fmt_shape(s, sizeof s, info->shape, info->ndim);
    int64_t n = 1;
    for (int i = 0; i < info->ndim; i++)
        if (info->shape[i] == 0)
            return fail(err, errlen, NK_ESHAPE, name, "zero-size dimension in shape %s", s);
    for (int i = 0; i < info->ndim; i++) {
        if (n > NK_NPY_MAX_ELEMS / info->shape[i])
            return fail(err, errlen, NK_ESHAPE, name, "absurd size: shape %s has more than %lld elements", s,
                        (long long)NK_NPY_MAX_ELEMS);
        n *= info->shape[i];
    }
    *numel = n;
    return 0;
}

/* Magic, version and header length, given the first `have` bytes of a file
 * of `total` bytes. */
static int parse_preamble(const char *name, const uint8_t *p, size_t have, uint64_t total, nk_npy_info *info,
                          size_t *hlen, char *err, size_t errlen)
{
    if (total == 0)
        return fail(err, errlen, NK_EFORMAT, name, "empty file (not a .npy file)");
    size_t m = have < sizeof magic ? have : sizeof magic;
    if (memcmp(p, magic, m))
        return fail(err, errlen, NK_EFORMAT, name, "not a .npy file (bad magic)");
    if (have < 8)
        return fail(err, errlen, NK_EFORMAT, name, "truncated header (the file ends after %zu bytes)", have);
    info->major = p[6];
    info->minor = p[7];
    if (info->major < 1 || info->major > 3 || info->minor != 0)
        return fail(err, errlen, NK_EVERSION, name, "unsupported .npy version %d.%d (1.0, 2.0 and 3.0 are read)",
                    info->major, info->minor);
    size_t pre = info->major == 1 ? 10 : 12;
    if (have < pre)
        return fail(err, errlen, NK_EFORMAT, name, "truncated header (the file ends after %zu bytes)", have);
    uint64_t len = ld_le(p + 8, info->major == 1 ? 2 : 4);
    if (len > NK_NPY_MAX_HEADER)
        return fail(err, errlen, NK_EFORMAT, name, "absurd header length %llu (at most %d bytes)",
                    (unsigned long long)len, NK_NPY_MAX_HEADER);
    if (total < pre + len)
        return fail(err, errlen, NK_EFORMAT, name, "truncated header (%llu bytes announced, %llu present)",
                    (unsigned long long)len, (unsigned long long)(total - pre));
    info->data_offset = pre + (size_t)len;
    *hlen = (size_t)len;
    return 0;
}

/* The data section must be exactly numel * itemsize bytes. */
static int check_data_size(const char *name, const nk_npy_info *info, int64_t numel, uint64_t total, char *err,
                           size_t errlen)
{
    uint64_t want = (uint64_t)numel * (uint64_t)info->itemsize;
    uint64_t have = total - info->data_offset;
    if (have < want)
        return fail(err, errlen, NK_EFORMAT, name, "truncated data (%llu bytes expected, %llu present)",
                    (unsigned long long)want, (unsigned long long)have);
    if (have > want)
        return fail(err, errlen, NK_EFORMAT, name, "%llu byte%s of trailing data after the array",
                    (unsigned long long)(have - want), have - want == 1 ? "" : "s");
    return 0;
}

/* ---- value conversion */

static void decode(int kind, const uint8_t *p, size_t n, double *v)
{
    switch (kind) {
    case K_F16: {
        uint16_t h[CHUNK];
        float f[CHUNK];
        for (size_t i = 0; i < n; i++)
            h[i] = (uint16_t)ld_le(p + 2 * i, 2);
        nk_convert_to_f32(NK_F16, h, f, n);
        for (size_t i = 0; i < n; i++)
            v[i] = f[i];
        break;
    }
    case K_F32:
        for (size_t i = 0; i < n; i++) {
            uint32_t b = (uint32_t)ld_le(p + 4 * i, 4);
            float f;
            memcpy(&f, &b, 4);
            v[i] = f;
        }
        break;
    case K_F64:
        for (size_t i = 0; i < n; i++) {
            uint64_t b = ld_le(p + 8 * i, 8);
            memcpy(&v[i], &b, 8);
        }
        break;
    case K_I8: for (size_t i = 0; i < n; i++) v[i] = (int8_t)p[i]; break;
    case K_I16: for (size_t i = 0; i < n; i++) v[i] = (int16_t)ld_le(p + 2 * i, 2); break;
    case K_I32: for (size_t i = 0; i < n; i++) v[i] = (int32_t)ld_le(p + 4 * i, 4); break;
    case K_I64: for (size_t i = 0; i < n; i++) v[i] = (double)(int64_t)ld_le(p + 8 * i, 8); break;
    case K_U8: for (size_t i = 0; i < n; i++) v[i] = p[i]; break;
    case K_U16: for (size_t i = 0; i < n; i++) v[i] = (double)ld_le(p + 2 * i, 2); break;
    case K_U32: for (size_t i = 0; i < n; i++) v[i] = (double)ld_le(p + 4 * i, 4); break;
    case K_U64: for (size_t i = 0; i < n; i++) v[i] = (double)ld_le(p + 8 * i, 8); break;
    case K_BOOL: for (size_t i = 0; i < n; i++) v[i] = p[i] != 0; break;
    }
}

/* Nearest integer (ties to even), clamped to [lo, hi]; NaN is 0. */
static double sat_round(double v, double lo, double hi)
{
    if (isnan(v))
        return 0;
    v = nearbyint(v);
    return v < lo ? lo : v > hi ? hi : v;
}

static void encode(nk_dtype want, const double *v, size_t n, void *dst)
{
    if (nk_dtype_is_float(want)) {
        float f[CHUNK];
        for (size_t i = 0; i < n; i++)
            f[i] = (float)v[i];
        nk_convert_from_f32(want, f, dst, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        switch (want) {
        case NK_I8: ((int8_t *)dst)[i] = (int8_t)sat_round(v[i], INT8_MIN, INT8_MAX); break;
        case NK_I16: ((int16_t *)dst)[i] = (int16_t)sat_round(v[i], INT16_MIN, INT16_MAX); break;
        case NK_I32: ((int32_t *)dst)[i] = (int32_t)sat_round(v[i], INT32_MIN, INT32_MAX); break;
        case NK_U8: ((uint8_t *)dst)[i] = (uint8_t)sat_round(v[i], 0, UINT8_MAX); break;
        case NK_U16: ((uint16_t *)dst)[i] = (uint16_t)sat_round(v[i], 0, UINT16_MAX); break;
        case NK_U32: ((uint32_t *)dst)[i] = (uint32_t)sat_round(v[i], 0, UINT32_MAX); break;
        default: break;
        }
    }
}

/* Converts n <= CHUNK raw elements into dst (elements of dtype want). */
static void convert(int kind, const uint8_t *raw, size_t n, nk_dtype want, void *dst)
{
    if (kind == K_F32 && want == NK_F32 && host_le()) {
        memcpy(dst, raw, n * 4);
        return;
    }
    double v[CHUNK];
    decode(kind, raw, n, v);
    encode(want, v, n, dst);
}

/* ---- reading */

static int check_want(const char *name, nk_dtype want, char *err, size_t errlen)
{
    if (!nk_dtype_size(want))
        return fail(err, errlen, NK_EINVAL, name, "invalid target dtype %d", (int)want);
    return 0;
}

static int alloc_out(const char *name, const nk_npy_info *info, nk_dtype want, nk_array *out, char *err,
                     size_t errlen)
{
    int rc = nk_array_alloc(out, want, info->ndim, info->shape);
    if (rc)
        return fail(err, errlen, rc, name, "out of memory for %zu bytes", nk_array_nbytes(out));
    return 0;
}

int nk_npy_decode(const char *name, const void *buf, size_t len, nk_dtype want, nk_array *out, nk_npy_info *info,
                  char *err, size_t errlen)
{
    nk_npy_info local;
    if (!info)
        info = &local;
    memset(info, 0, sizeof *info);
    memset(out, 0, sizeof *out);
    if (check_want(name, want, err, errlen))
        return NK_EINVAL;
    const uint8_t *p = buf;
    size_t hlen;
    int64_t numel;
    int kind, rc;
    if ((rc = parse_preamble(name, p, len < 12 ? len : 12, len, info, &hlen, err, errlen)) ||
        (rc = parse_dict(name, (const char *)p + info->data_offset - hlen, hlen, info, &kind, err, errlen)) ||
        (rc = check_shape(name, info, &numel, err, errlen)) ||
        (rc = check_data_size(name, info, numel, len, err, errlen)) ||
        (rc = alloc_out(name, info, want, out, err, errlen)))
        return rc;
    size_t osz = (size_t)nk_dtype_size(want);
    const uint8_t *src = p + info->data_offset;
    for (int64_t i = 0; i < numel; i += CHUNK) {
        size_t n = (size_t)(numel - i < CHUNK ? numel - i : CHUNK);
        convert(kind, src + (size_t)i * (size_t)info->itemsize, n, want, (uint8_t *)out->data + (size_t)i * osz);
    }
    return 0;
}

/* Reads exactly n bytes at offset off. */
static int read_at(FILE *f, const char *name, long off, void *dst, size_t n, char *err, size_t errlen)
{
    if (fseek(f, off, SEEK_SET) || fread(dst, 1, n, f) != n)
        return fail(err, errlen, NK_EIO, name, "read error: %s", ferror(f) ? strerror(errno) : "file changed size");
    return 0;
}

static int read_file(FILE *f, const char *name, uint64_t total, nk_dtype want, nk_array *out, nk_npy_info *info,
                     char *err, size_t errlen)
{
    uint8_t pre[12];
    size_t have = total < sizeof pre ? (size_t)total : sizeof pre, hlen;
    int64_t numel;
    int kind, rc;
    if ((rc = read_at(f, name, 0, pre, have, err, errlen)) ||
        (rc = parse_preamble(name, pre, have, total, info, &hlen, err, errlen)))
        return rc;
    char *hdr = malloc(hlen ? hlen : 1);
    if (!hdr)
        return fail(err, errlen, NK_ENOMEM, name, "out of memory");
    rc = read_at(f, name, (long)(info->data_offset - hlen), hdr, hlen, err, errlen);
    if (!rc)
        rc = parse_dict(name, hdr, hlen, info, &kind, err, errlen);
    free(hdr);
    if (rc || (rc = check_shape(name, info, &numel, err, errlen)) ||
        (rc = check_data_size(name, info, numel, total, err, errlen)) ||
        (rc = alloc_out(name, info, want, out, err, errlen)))
        return rc;
    uint8_t raw[CHUNK * 8];
    size_t osz = (size_t)nk_dtype_size(want);
    if (fseek(f, (long)info->data_offset, SEEK_SET))
        return fail(err, errlen, NK_EIO, name, "read error: %s", strerror(errno));
    for (int64_t i = 0; i < numel; i += CHUNK) {
        size_t n = (size_t)(numel - i < CHUNK ? numel - i : CHUNK);
        if (fread(raw, (size_t)info->itemsize, n, f) != n) {
            nk_array_free(out);
            return fail(err, errlen, NK_EIO, name, "read error: %s",
                        ferror(f) ? strerror(errno) : "file changed size");
        }
        convert(kind, raw, n, want, (uint8_t *)out->data + (size_t)i * osz);
    }
    return 0;
}

int nk_npy_read(const char *path, nk_dtype want, nk_array *out, nk_npy_info *info, char *err, size_t errlen)
{
    nk_npy_info local;
    if (!info)
        info = &local;
    memset(info, 0, sizeof *info);
    memset(out, 0, sizeof *out);
    if (check_want(path, want, err, errlen))
        return NK_EINVAL;
    /* O_NONBLOCK: a FIFO or a device is refused below, never waited on */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, NK_EIO, path, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        return fail(err, errlen, NK_EIO, path, "cannot stat: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, NK_EIO, path, "not a regular file (%s)", nk_cli_file_type(st.st_mode));
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return fail(err, errlen, NK_ENOMEM, path, "cannot open: %s", strerror(e));
    }
    int rc = read_file(f, path, (uint64_t)st.st_size, want, out, info, err, errlen);
    fclose(f);
    if (rc)
        nk_array_free(out);
    return rc;
}

const char *nk_cli_file_type(unsigned mode)
{
    mode_t m = (mode_t)mode;
    return S_ISREG(m) ? "a regular file" : S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket"
         : S_ISLNK(m) ? "a symbolic link" : "an unknown kind of file";
}

/* ---- writing */

/* The version 1.0 preamble and header for a float32 array of this shape;
 * returns its length (a multiple of 64, as numpy aligns it). */
static size_t make_header(char *buf, size_t cap, const nk_array *a)
{
    char dims[128];
    size_t k = 0;
    for (int i = 0; i < a->ndim; i++)
        k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%lld", i ? ", " : "", (long long)a->shape[i]);
    if (a->ndim == 1)
        snprintf(dims + k, sizeof dims - k, ",");
    char dict[192];
    int dl = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", dims);
    size_t total = 10 + (size_t)dl + 1;
    total = (total + 63) / 64 * 64;
    if (total > cap)
        return 0;
    size_t hlen = total - 10;
    memcpy(buf, magic, 6);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    memcpy(buf + 10, dict, (size_t)dl);
    memset(buf + 10 + dl, ' ', hlen - (size_t)dl - 1);
    buf[total - 1] = '\n';
    return total;
}

/* Writes the values of a as little-endian float32. */
static int write_data(nk__afile *f, const nk_array *a)
{
    size_t n = nk_array_numel(a), esz = (size_t)nk_dtype_size(a->dtype);
    if (a->dtype == NK_F32 && host_le())
        return nk__afile_write(f, a->data, 4 * n);
    float tmp[CHUNK];
    uint8_t le[CHUNK * 4];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t m = n - i < CHUNK ? n - i : CHUNK;
        nk_convert_to_f32(a->dtype, (const uint8_t *)a->data + i * esz, tmp, m);
        for (size_t j = 0; j < m; j++) {
            uint32_t b;
            memcpy(&b, &tmp[j], 4);
            for (int k = 0; k < 4; k++)
                le[4 * j + (size_t)k] = (uint8_t)(b >> (8 * k));
        }
        if (nk__afile_write(f, le, 4 * m))
            return NK_EIO;
    }
    return 0;
}

int nk_npy_write(const char *path, const nk_array *a, char *err, size_t errlen)
{
    int ok = a && a->data && a->ndim >= 1 && a->ndim <= NK_MAXDIM && nk_dtype_size(a->dtype);
    for (int i = 0; ok && i < a->ndim; i++)
        ok = a->shape[i] >= 1;
    if (!ok) {
        if (err && errlen)
            snprintf(err, errlen, "not a valid array");
        return NK_EINVAL;
    }
    char hdr[256];
    size_t hl = make_header(hdr, sizeof hdr, a);
    nk__afile f;
    int rc = nk__afile_open(&f, path);
    if (!rc && !(rc = nk__afile_write(&f, hdr, hl)) && !(rc = write_data(&f, a)))
        rc = nk__afile_commit(&f);
    else
        nk__afile_abort(&f);
    if (rc && err && errlen)
        snprintf(err, errlen, "%s", f.msg);
    return rc;
}
