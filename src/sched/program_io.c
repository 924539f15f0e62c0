/*
 * program_io.c - the program file: byte-level writer and reader, the file
 * container shared with profiles, the program's encoder and its strict
 * decoder and validator, and the human-readable listing.
 *
 * Every field is written explicitly little-endian, never as a raw struct, so
 * files are independent of the compiler's layout. The decoder trusts
 * nothing: each count is checked against the bytes left before anything is
 * allocated, each index against its table, each enum against its range, and
 * the decoded program is validated as a whole (nk__program_check) before any
 * later stage sees it.
 */
#include "sched/program_io.h"
#include "isa/optable.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ================================================================ writer */

void nk__wr_grow(nk_wr *w, size_t n)
{
    if (w->oom || w->cap - w->n >= n)
        return;
    if (n > SIZE_MAX / 2 - w->n) {
        w->oom = 1;
        return;
    }
    /* doubling, or exactly what a large reservation asks */
    size_t cap = w->cap ? w->cap * 2 : 4096;
    if (cap < w->n + n)
        cap = w->n + n;
    uint8_t *p = nk__big_grow(w->p, cap); /* filled in place as it grows */
    if (!p) {
        w->oom = 1;
        return;
    }
    w->p = p;
    w->cap = cap;
}

void nk__wr_bytes(nk_wr *w, const void *b, size_t n)
{
    uint8_t *d = nk__wr_room(w, n);
    if (!d || !n)
        return;
    memcpy(d, b, n);
    w->n += n;
}

void nk__wr_str(nk_wr *w, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    nk__wr_u32(w, (uint32_t)n);
    nk__wr_bytes(w, s, n);
}

size_t nk__wr_begin(nk_wr *w, const char tag[4])
{
    nk__wr_bytes(w, tag, 4);
    size_t at = w->n;
    nk__wr_u64(w, 0);
    return at;
}

static void put_le_at(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void nk__wr_end(nk_wr *w, size_t at)
{
    if (!w->oom)
        put_le_at(w->p + at, (uint64_t)(w->n - at - 8), 8);
}

void nk__wr_free(nk_wr *w)
{
    free(w->p);
    memset(w, 0, sizeof *w);
}

/* ================================================================ reader */

void nk__rd_init(nk_rd *r, const void *p, size_t n, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->version = NK_FORMAT_VERSION;
    r->p = p;
    r->n = n;
    r->err = err;
    r->errlen = errlen;
    if (err && errlen)
        err[0] = 0;
}

size_t nk__rd_own_min = (size_t)16 << 20, nk__rd_own_step = (size_t)8 << 20, nk__rd_own_slack = (size_t)1 << 20;
_Atomic size_t nk__rd_own_given;

void nk__rd_own(nk_rd *r, nk_rd_owned *o, const uint8_t *data, size_t n)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), lo = (uintptr_t)data;
    o->done = (lo + pg - 1) / pg * pg;
    o->end = lo + n;
    r->owned = n >= nk__rd_own_min && pg ? o : NULL;
}

/* Pages wholly behind the reader, less the slack, go back to the system:
 * the buffer's memory reads as zeros afterwards, which nothing reads. */
void nk__rd_release_slow(nk_rd *r)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), at = (uintptr_t)(r->p + r->pos);
    if (!pg || at > r->owned->end || at < r->owned->done + nk__rd_own_slack)
        return;
    at = (at - nk__rd_own_slack) / pg * pg;
    if (at > r->owned->done && !madvise((void *)r->owned->done, at - r->owned->done, MADV_DONTNEED)) {
        nk__rd_own_given += at - r->owned->done;
        r->owned->done = at;
    }
}

int nk__rd_fail(nk_rd *r, int rc, const char *fmt, ...)
{
    if (r->rc)
        return r->rc;
    r->rc = rc;
    if (r->err && r->errlen) {
        int k = 0;
        if (r->ctx[0])
            k = snprintf(r->err, r->errlen, "%s: ", r->ctx);
        if (k < 0 || (size_t)k >= r->errlen)
            k = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err + k, r->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* The next n bytes, or NULL (and a recorded error) when fewer are left. */
static const uint8_t *rd_take(nk_rd *r, size_t n)
{
    if (r->rc)
        return NULL;
    if (n > r->n - r->pos) {
        nk__rd_fail(r, NK_EFORMAT, "truncated: %zu bytes needed at offset %zu, %zu left", n, r->pos,
                    r->n - r->pos);
        return NULL;
    }
    const uint8_t *b = r->p + r->pos;
    r->pos += n;
    return b;
}

uint64_t nk__rd_short(nk_rd *r, size_t bytes)
{
    rd_take(r, bytes); /* fails: records why */
    return 0;
}

uint64_t nk__rd_uv_slow(nk_rd *r)
{
    if (r->rc)
        return 0;
    uint64_t v = 0;
    size_t at = r->pos;
    for (int k = 0; k < 10; k++) {
        if (r->pos >= r->n) {
            nk__rd_fail(r, NK_EFORMAT, "truncated: variable-length integer at offset %zu runs past the end", at);
            return 0;
        }
        uint8_t b = r->p[r->pos++];
        if (k == 9 && b > 1) /* bit 64 and above */
            break;
        v |= (uint64_t)(b & 0x7f) << (7 * k);
        if (b < 0x80) {
            if (k > 0 && b == 0)
                break;
            return v;
        }
    }
    nk__rd_fail(r, NK_EFORMAT, "malformed variable-length integer at offset %zu", at);
    return 0;
}

uint64_t nk__rd_too_wide(nk_rd *r, int64_t v, int is_signed, size_t at, int bits)
{
    if (is_signed)
        nk__rd_fail(r, NK_EFORMAT, "integer %lld at offset %zu exceeds %d bits", (long long)v, at, bits);
    else
        nk__rd_fail(r, NK_EFORMAT, "integer %llu at offset %zu exceeds %d bits", (unsigned long long)(uint64_t)v,
                    at, bits);
    return 0;
}

static const uint8_t *rd_strbytes(nk_rd *r, size_t max, const char *what, uint32_t *len)
{
    uint32_t n = nk__rd_u32(r);
    if (r->rc)
        return NULL;
    if (n > max) {
        nk__rd_fail(r, NK_EFORMAT, "%s: length %u exceeds %zu", what, n, max);
        return NULL;
    }
    const uint8_t *b = rd_take(r, n);
    if (b && memchr(b, 0, n)) {
        nk__rd_fail(r, NK_EFORMAT, "%s: contains a NUL byte", what);
        return NULL;
    }
    *len = n;
    return b;
}

char *nk__rd_str(nk_rd *r, size_t max, const char *what)
{
    uint32_t n = 0;
    const uint8_t *b = rd_strbytes(r, max, what, &n);
    if (!b)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) {
        nk__rd_fail(r, NK_ENOMEM, "out of memory");
        return NULL;
    }
    memcpy(s, b, n);
    s[n] = 0;
    return s;
}

int nk__rd_str_into(nk_rd *r, char *dst, size_t cap, const char *what)
{
    uint32_t n = 0;
    const uint8_t *b = rd_strbytes(r, cap - 1, what, &n);
    if (!b)
        return r->rc;
    memcpy(dst, b, n);
    dst[n] = 0;
    return 0;
}

uint32_t nk__rd_count(nk_rd *r, size_t min_each, const char *what)
{
    uint32_t n = nk__rd_u32(r);
    if (r->rc)
        return 0;
    if (min_each && n > (r->n - r->pos) / min_each) {
        nk__rd_fail(r, NK_EFORMAT, "%s: count %u needs at least %zu bytes, %zu left", what, n,
                    (size_t)n * min_each, r->n - r->pos);
        return 0;
    }
    return n;
}

static void tag_str(char out[5], const uint8_t *t)
{
    for (int i = 0; i < 4; i++)
        out[i] = t[i] >= 0x20 && t[i] < 0x7f ? (char)t[i] : '?';
    out[4] = 0;
}

int nk__rd_section(nk_rd *r, const char tag[4], nk_rd *sub)
{
    const uint8_t *t = rd_take(r, 4);
    uint64_t len = nk__rd_u64(r);
    if (r->rc)
        return r->rc;
    if (memcmp(t, tag, 4)) {
        char got[5];
        tag_str(got, t);
        return nk__rd_fail(r, NK_EFORMAT, "expected section %.4s, found '%s'", tag, got);
    }
    if (len > r->n - r->pos)
        return nk__rd_fail(r, NK_EFORMAT, "section %.4s: length %llu exceeds the %zu bytes left", tag,
                           (unsigned long long)len, r->n - r->pos);
    nk__rd_release(r);
    nk__rd_init(sub, r->p + r->pos, (size_t)len, r->err, r->errlen);
    sub->owned = r->owned;
    size_t k = strnlen(r->ctx, sizeof r->ctx - 6);
    memcpy(sub->ctx, r->ctx, k);
    if (k)
        sub->ctx[k++] = '/';
    memcpy(sub->ctx + k, tag, 4);
    sub->ctx[k + 4] = 0;
    sub->version = r->version;
    r->pos += (size_t)len;
    return 0;
}

int nk__rd_end(nk_rd *r)
{
    if (!r->rc && r->pos != r->n)
        nk__rd_fail(r, NK_EFORMAT, "%zu unexpected bytes after the last field", r->n - r->pos);
    return r->rc;
}

/* ================================================================ files */

/* The checksum is XXH64 with seed 0 (the xxHash specification), chosen
 * for speed: four independent lanes of 8-byte words, several GB/s, where a
 * byte-at-a-time hash spends tens of milliseconds on a large profile. */
#define XP1 0x9e3779b185ebca87ull
#define XP2 0xc2b2ae3d27d4eb4full
#define XP3 0x165667b19e3779f9ull
#define XP4 0x85ebca77c2b2ae63ull
#define XP5 0x27d4eb2f165667c5ull

static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t le64(const uint8_t *b) { return nk__get_le(b, 8); }
static uint64_t le32(const uint8_t *b) { return nk__get_le(b, 4); }

static uint64_t xxh_round(uint64_t acc, uint64_t input) { return rotl64(acc + input * XP2, 31) * XP1; }

static uint64_t xxh_merge(uint64_t h, uint64_t v) { return (h ^ xxh_round(0, v)) * XP1 + XP4; }

/* Version 1's checksum: FNV-1a, 64 bits. */
static uint64_t fnv1a64(const uint8_t *b, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

uint64_t nk__checksum(const void *p, size_t n)
{
    const uint8_t *b = p, *end = b + n;
    uint64_t h;
    if (n >= 32) {
        uint64_t v1 = XP1 + XP2, v2 = XP2, v3 = 0, v4 = 0 - XP1;
        for (; end - b >= 32; b += 32) {
            v1 = xxh_round(v1, le64(b));
            v2 = xxh_round(v2, le64(b + 8));
            v3 = xxh_round(v3, le64(b + 16));
            v4 = xxh_round(v4, le64(b + 24));
        }
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = xxh_merge(xxh_merge(xxh_merge(xxh_merge(h, v1), v2), v3), v4);
    } else {
        h = XP5;
    }
    h += (uint64_t)n;
    for (; end - b >= 8; b += 8)
        h = rotl64(h ^ xxh_round(0, le64(b)), 27) * XP1 + XP4;
    if (end - b >= 4) {
        h = rotl64(h ^ le32(b) * XP1, 23) * XP2 + XP3;
        b += 4;
    }
    for (; b < end; b++)
        h = rotl64(h ^ *b * XP5, 11) * XP1;
    h ^= h >> 33;
    h *= XP2;
    h ^= h >> 29;
    h *= XP3;
    return h ^ (h >> 32);
}

void nk__file_begin(nk_wr *w, const char magic[8])
{
    nk__wr_bytes(w, magic, 8);
    nk__wr_u32(w, NK_FORMAT_VERSION);
    nk__wr_u32(w, 0); /* flags: none defined */
    nk__wr_u64(w, 0); /* content length, patched by finish */
    nk__wr_u64(w, 0); /* checksum */
}

void nk__file_finish(nk_wr *w)
{
    if (w->oom || w->n < NK_FILE_HEADER_BYTES)
        return;
    size_t len = w->n - NK_FILE_HEADER_BYTES;
    put_le_at(w->p + 16, (uint64_t)len, 8);
    put_le_at(w->p + 24, nk__checksum(w->p + NK_FILE_HEADER_BYTES, len), 8);
}

static int errf(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

int nk__file_open(const uint8_t *data, size_t n, const char magic[8], const char *what, nk_rd *content,
                  char *err, size_t errlen)
{
    if (n == 0)
        return errf(err, errlen, NK_EFORMAT, "empty file: not an nklab %s", what);
    if (n < 8 && !memcmp(data, magic, n))
        return errf(err, errlen, NK_EFORMAT, "truncated: %zu bytes, shorter than the %d-byte header", n,
                    NK_FILE_HEADER_BYTES);
    if (n < 8 || memcmp(data, magic, 8)) {
        if (n >= 8 && !memcmp(data, NK_MAGIC_PROGRAM, 8))
            return errf(err, errlen, NK_EFORMAT, "not an nklab %s: this is an nklab program file", what);
        if (n >= 8 && !memcmp(data, NK_MAGIC_PROFILE, 8))
            return errf(err, errlen, NK_EFORMAT, "not an nklab %s: this is an nklab profile", what);
        return errf(err, errlen, NK_EFORMAT, "not an nklab %s (wrong magic number)", what);
    }
    if (n < NK_FILE_HEADER_BYTES)
        return errf(err, errlen, NK_EFORMAT, "truncated: %zu bytes, shorter than the %d-byte header", n,
                    NK_FILE_HEADER_BYTES);
    nk_rd h;
    nk__rd_init(&h, data + 8, NK_FILE_HEADER_BYTES - 8, NULL, 0);
    uint32_t version = nk__rd_u32(&h), flags = nk__rd_u32(&h);
    uint64_t len = nk__rd_u64(&h), sum = nk__rd_u64(&h);
    if (version > NK_FORMAT_VERSION)
        return errf(err, errlen, NK_EVERSION,
                    "format version %u is newer than this nklab reads (%d); use a newer nklab", version,
                    NK_FORMAT_VERSION);
    if (version < 1)
        return errf(err, errlen, NK_EVERSION, "format version %u is not a valid version", version);
    if (flags)
        return errf(err, errlen, NK_EFORMAT, "unknown header flags 0x%x", flags);
    size_t have = n - NK_FILE_HEADER_BYTES;
    if (len > have)
        return errf(err, errlen, NK_EFORMAT, "truncated: the header announces %llu bytes of content, the file "
                    "holds %zu", (unsigned long long)len, have);
    if (len < have)
        return errf(err, errlen, NK_EFORMAT, "%zu bytes of trailing data after the announced %llu bytes of "
                    "content", have - (size_t)len, (unsigned long long)len);
    uint64_t want = version == 1 ? fnv1a64(data + NK_FILE_HEADER_BYTES, have)
                                 : nk__checksum(data + NK_FILE_HEADER_BYTES, have);
    if (want != sum)
        return errf(err, errlen, NK_EFORMAT, "checksum mismatch: the content is corrupt");
    nk__rd_init(content, data + NK_FILE_HEADER_BYTES, have, err, errlen);
    content->version = version;
    return 0;
}

int nk__file_read_all(const char *path, uint8_t **data, size_t *n, char *err, size_t errlen)
{
    *data = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return errf(err, errlen, NK_EIO, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
        fclose(f);
        return errf(err, errlen, NK_EIO, "not a regular file");
    }
    if ((uint64_t)st.st_size > ((uint64_t)1 << 34)) {
        fclose(f);
        return errf(err, errlen, NK_EFORMAT, "file of %lld bytes is too large", (long long)st.st_size);
    }
    size_t size = (size_t)st.st_size;
    uint8_t *b = nk__big_fixed(size ? size : 1); /* written whole by the read */
    if (!b) {
        fclose(f);
        return errf(err, errlen, NK_ENOMEM, "out of memory reading %zu bytes", size);
    }
    size_t got = fread(b, 1, size, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != size) {
        free(b);
        return errf(err, errlen, NK_EIO, "read error");
    }
    *data = b;
    *n = size;
    return 0;
}

/* ================================================================ encode */

/* Operands and buffers use the variable-length fields (uv, sv, fc): most
 * values are small, and a profile of a large kernel holds millions. */
static void put_tensor(nk_wr *w, const nk_tensor *t)
{
    nk__wr_uv(w, t->buf);
    if (!t->buf)
        return;
    nk__wr_u8(w, t->dtype);
    nk__wr_u8(w, t->ndim);
    nk__wr_u8(w, t->mem);
    nk__wr_u8(w, t->part0);
    nk__wr_sv(w, t->off);
    for (int d = 0; d < t->ndim && d < NK_MAXDIM; d++) {
        nk__wr_sv(w, t->shape[d]);
        nk__wr_sv(w, t->stride[d]);
    }
}

/* Dependencies newest first, each as its distance from the one before
 * (from the instruction itself for the first): small numbers. */
static void put_deps(nk_wr *w, const nk_program *p, uint32_t i, const nk_instr *in)
{
    nk__wr_uv(w, in->ndep);
    int64_t prev = i;
    for (uint32_t k = in->ndep; k-- > 0;) {
        int64_t d = p->deps[in->dep_off + k];
        nk__wr_sv(w, prev - d);
        prev = d;
    }
}

static void put_instr(nk_wr *w, const nk_program *p, uint32_t i)
{
    const nk_instr *in = &p->instrs[i];
    nk__wr_u8(w, in->op);
    nk__wr_u8(w, in->engine);
    nk__wr_u8(w, in->func);
    nk__wr_u8(w, in->alu0);
    nk__wr_u8(w, in->alu1);
    nk__wr_u8(w, in->cmp);
    nk__wr_u8(w, (uint8_t)in->axis);
    nk__wr_u8(w, in->nsrc);
    nk__wr_uv(w, in->flags);
    nk__wr_uv(w, in->queue);
    nk__wr_uv(w, in->loc);
    nk__wr_uv(w, in->loop);
    nk__wr_uv(w, in->iter);
    const nk_xarg *xa = nk__xarg(p, in);
    nk__wr_fc(w, xa->imm0);
    nk__wr_fc(w, xa->imm1);
    nk__wr_sv(w, xa->aff.c);
    nk__wr_sv(w, xa->aff.cp);
    for (int k = 0; k < NK_MAXDIM - 1; k++)
        nk__wr_sv(w, xa->aff.cf[k]);
    put_deps(w, p, i, in);
    /* the file holds whole access patterns, as before layouts were interned */
    nk_tensor t = nk__opnd_tensor(p, &in->dst);
    put_tensor(w, &t);
    t = nk__opnd_tensor(p, nk__dst2(p, in));
    put_tensor(w, &t);
    for (int k = 0; k < 3; k++) {
        t = nk__opnd_tensor(p, nk__src(p, in, k));
        put_tensor(w, &t);
    }
}

static void put_buf(nk_wr *w, const nk_bufinfo *b)
{
    nk__wr_u8(w, b->mem);
    nk__wr_u8(w, b->dtype);
    nk__wr_u8(w, b->ndim);
    nk__wr_u8(w, b->role);
    nk__wr_sv(w, b->index);
    for (int d = 0; d < b->ndim && d < NK_MAXDIM; d++)
        nk__wr_sv(w, b->shape[d]);
    nk__wr_sv(w, b->addr);
    nk__wr_sv(w, b->bytes);
    nk__wr_uv(w, b->loc);
    nk__wr_uv(w, b->loop);
    nk__wr_uv(w, b->slot);
    nk__wr_uv(w, b->nslots);
}

int nk__program_encode(const nk_program *p, nk_wr *w)
{
    int rc = nk__program_encode_head(p, w);
    if (rc)
        return rc;
    size_t s = nk__wr_begin(w, "INST");
    nk__wr_u32(w, p->ninstr);
    nk__program_encode_instrs(p, w, 0, p->ninstr);
    nk__wr_end(w, s);
    return nk__program_encode_tail(p, w);
}

void nk__program_encode_instrs(const nk_program *p, nk_wr *w, uint32_t i0, uint32_t i1)
{
    for (uint32_t i = i0; i < i1 && i < p->ninstr; i++)
        put_instr(w, p, i);
}

/* The bytes of records from .. to - 1 as enc writes them, counted a chunk
 * at a time: no buffer of them all. */
static int records_bytes(const nk_program *p, uint32_t from, uint32_t to,
                         void (*enc)(const nk_program *, nk_wr *, uint32_t, uint32_t), uint64_t *bytes)
{
    nk_wr w = {0};
    uint64_t n = 0;
    for (uint32_t i = from; i < to && !w.oom; i += 4096) {
        w.n = 0;
        enc(p, &w, i, i + 4096 < to ? i + 4096 : to);
        n += w.n;
    }
    int oom = w.oom;
    nk__wr_free(&w);
    *bytes = n;
    return oom ? NK_ENOMEM : 0;
}

int nk__program_instrs_bytes(const nk_program *p, uint64_t *bytes)
{
    return records_bytes(p, 0, p->ninstr, nk__program_encode_instrs, bytes);
}

int nk__program_encode_head(const nk_program *p, nk_wr *w)
{
    int rc = nk__program_encode_head0(p, w);
    if (rc)
        return rc;
    size_t s = nk__wr_begin(w, "BUFS");
    nk__wr_u32(w, p->nbufs ? p->nbufs - 1 : 0); /* id 0 is the invalid id, not stored */
    nk__program_encode_bufs(p, w, 1, p->nbufs);
    nk__wr_end(w, s);
    return w->oom ? NK_ENOMEM : 0;
}

void nk__program_encode_bufs(const nk_program *p, nk_wr *w, uint32_t b0, uint32_t b1)
{
    for (uint32_t b = b0 ? b0 : 1; b < b1 && b < p->nbufs; b++)
        put_buf(w, &p->bufs[b]);
}

int nk__program_bufs_bytes(const nk_program *p, uint64_t *bytes)
{
    return records_bytes(p, 1, p->nbufs, nk__program_encode_bufs, bytes);
}

int nk__program_encode_head0(const nk_program *p, nk_wr *w)
{
    char *table = NULL;
    if (!p->arch)
        return NK_EINVAL;
    int rc = nk__arch_format(p->arch, &table);
    if (rc)
        return rc;
    size_t s = nk__wr_begin(w, "PHDR");
    nk__wr_str(w, p->kernel);
    nk__wr_str(w, p->target);
    nk__wr_u32(w, (uint32_t)p->bufs_default);
    nk__wr_i64(w, p->sbuf_peak);
    nk__wr_i64(w, p->psum_peak);
    nk__wr_u32(w, (uint32_t)p->ninputs);
    nk__wr_u32(w, (uint32_t)p->noutputs);
    nk__wr_u8(w, p->sched); /* version 3: how the order was chosen */
    nk__wr_u8(w, p->sched_policy);
    nk__wr_f64(w, p->trace_order_ns);
    nk__wr_end(w, s);

    /* the whole target table, so a program traced for a modified target
       reads back without it */
    s = nk__wr_begin(w, "TARG");
    nk__wr_str(w, table);
    nk__wr_end(w, s);
    free(table);

    s = nk__wr_begin(w, "FILE");
    nk__wr_u32(w, p->nfiles);
    for (uint32_t i = 0; i < p->nfiles; i++)
        nk__wr_str(w, p->files[i]);
    nk__wr_end(w, s);

    s = nk__wr_begin(w, "LOCS");
    nk__wr_u32(w, p->nlocs);
    for (uint32_t i = 0; i < p->nlocs; i++) {
        nk__wr_u32(w, p->locs[i].file);
        nk__wr_i32(w, p->locs[i].line);
    }
    nk__wr_end(w, s);

    s = nk__wr_begin(w, "LOOP");
    nk__wr_u32(w, p->nloops);
    for (uint32_t i = 0; i < p->nloops; i++) {
        const nk_loopinfo *l = &p->loops[i];
        nk__wr_u32(w, l->loc);
        nk__wr_u32(w, l->parent);
        nk__wr_i64(w, l->trip);
        nk__wr_u8(w, l->kind);
        nk__wr_u8(w, l->bufs);
        nk__wr_u16(w, l->depth);
    }
    nk__wr_end(w, s);
    return w->oom ? NK_ENOMEM : 0;
}

int nk__program_encode_tail(const nk_program *p, nk_wr *w)
{
    /* version 3: the constants' bytes (nl.shared_constant) */
    size_t s = nk__wr_begin(w, "CNST");
    uint32_t nc = 0;
    for (uint32_t b = 1; b < p->nbufs; b++)
        nc += p->bufs[b].role == NK_ROLE_CONSTANT;
    nk__wr_u32(w, nc);
    for (uint32_t b = 1; b < p->nbufs; b++) {
        if (p->bufs[b].role != NK_ROLE_CONSTANT)
            continue;
        nk__wr_u32(w, b);
        nk__wr_bytes(w, p->cdata[b], (size_t)p->bufs[b].bytes);
    }
    nk__wr_end(w, s);

    /* version 4: the SPMD launch grid, each instance's core, and the
       instance of every instruction and buffer (absent for one instance) */
    s = nk__wr_begin(w, "SPMD");
    nk__wr_u8(w, p->grid_ndim);
    for (int a = 0; a < p->grid_ndim && a < NK_MAX_GRID; a++) {
        nk__wr_sv(w, p->grid[a]);
        nk__wr_sv(w, p->grid_nc[a]);
    }
    uint32_t ninst = p->ninst ? p->ninst : 1;
    nk__wr_uv(w, ninst);
    if (ninst > 1) {
        for (uint32_t k = 0; k < ninst; k++)
            nk__wr_u8(w, (uint8_t)nk__inst_core(p, k));
        for (uint32_t i = 0; i < p->ninstr; i++)
            nk__wr_uv(w, p->instrs[i].inst);
        for (uint32_t b = 1; b < p->nbufs; b++)
            nk__wr_uv(w, p->bufs[b].inst);
    }
    /* the kernels of a sequence (nk_launch) */
    uint32_t nseg = p->nseg > 1 ? p->nseg : 1;
    nk__wr_uv(w, nseg);
    if (nseg > 1) {
        for (uint32_t k = 0; k < nseg; k++) {
            nk__wr_str(w, p->seg_name[k]);
            nk__wr_uv(w, p->seg_loc[k]);
        }
        for (uint32_t i = 0; i < p->ninstr; i++)
            nk__wr_uv(w, p->instrs[i].seg);
    }
    nk__wr_end(w, s);

    /* version 6: the inputs' parameter names and the API call of every
       instruction (absent when none was recorded) */
    s = nk__wr_begin(w, "NAME");
    nk__wr_uv(w, p->in_name ? (uint32_t)p->ninputs : 0);
    for (int i = 0; p->in_name && i < p->ninputs; i++)
        nk__wr_str(w, p->in_name[i] ? p->in_name[i] : "");
    uint32_t ncalls = p->calls ? p->ncalls : 0;
    nk__wr_uv(w, ncalls);
    for (uint32_t k = 0; k < ncalls; k++)
        nk__wr_str(w, p->calls[k]);
    if (ncalls)
        for (uint32_t i = 0; i < p->ninstr; i++)
            nk__wr_uv(w, p->instrs[i].call);
    nk__wr_end(w, s);
    return w->oom ? NK_ENOMEM : 0;
}

/* ================================================================ decode */

/* Minimum encoded sizes, for the counts-versus-bytes checks: a location,
 * a loop, a rank-1 buffer, an instruction with no dependency and five
 * absent tensors (one byte per variable-length field; version 1 in the
 * second column). */
enum { MIN_LOC = 8, MIN_LOOP = 20, MIN_BUF = 12, MIN_BUF_V1 = 44, MIN_INSTR = 26, MIN_INSTR_V1 = 84 };

static void get_tensor(nk_rd *r, nk_tensor *t)
{
    memset(t, 0, sizeof *t);
    t->buf = nk__rd_vu32(r);
    if (!t->buf)
        return;
    t->dtype = nk__rd_u8(r);
    t->ndim = nk__rd_u8(r);
    t->mem = nk__rd_u8(r);
    t->part0 = nk__rd_u8(r);
    t->off = nk__rd_vi64(r);
    if (r->rc)
        return;
    if (t->ndim < 1 || t->ndim > NK_MAXDIM) {
        nk__rd_fail(r, NK_EFORMAT, "tensor of buffer %u has %u dims (1..%d)", t->buf, t->ndim, NK_MAXDIM);
        return;
    }
    for (int d = 0; d < t->ndim; d++) {
        t->shape[d] = nk__rd_vi32(r);
        t->stride[d] = nk__rd_vi64(r);
    }
}

static int get_phdr(nk_rd *r, nk_program *p)
{
    nk_rd s;
    if (nk__rd_section(r, "PHDR", &s))
        return r->rc;
    nk__rd_str_into(&s, p->kernel, sizeof p->kernel, "kernel name");
    nk__rd_str_into(&s, p->target, sizeof p->target, "target name");
    uint32_t bufs = nk__rd_u32(&s);
    p->sbuf_peak = nk__rd_i64(&s);
    p->psum_peak = nk__rd_i64(&s);
    uint32_t nin = nk__rd_u32(&s), nout = nk__rd_u32(&s);
    p->sched = NK_SCHED_TRACE_ORDER; /* before version 3 every program ran in trace order */
    p->sched_policy = 0;
    p->trace_order_ns = -1;
    if (r->version >= 3) {
        p->sched = nk__rd_u8(&s);
        p->sched_policy = nk__rd_u8(&s);
        p->trace_order_ns = nk__rd_f64(&s);
    }
    if (nk__rd_end(&s))
        return r->rc = s.rc;
    if (p->sched > NK_SCHED_TRACE_ORDER || p->sched_policy > 2 || p->trace_order_ns != p->trace_order_ns ||
        (p->trace_order_ns < 0 && p->trace_order_ns != -1))
        return r->rc = nk__rd_fail(&s, NK_EFORMAT, "schedule %u, policy %u or trace-order time %g out of range",
                                   p->sched, p->sched_policy, p->trace_order_ns);
    if (bufs > NK_IO_MAX_LOOP_BUFS || nin > (1u << 20) || nout > (1u << 20))
        return r->rc = nk__rd_fail(&s, NK_EFORMAT, "default bufs %u, inputs %u or outputs %u out of range", bufs,
                                   nin, nout);
    p->bufs_default = (int)bufs;
    p->ninputs = (int)nin;
    p->noutputs = (int)nout;
    if (nk__rd_v1(r)) { /* version 1 names a built-in target and stores no table */
        const nk_arch *a = nk__arch_get(p->target);
        if (!p->target[0] || !a)
            return r->rc = nk__rd_fail(&s, NK_EFORMAT, "unknown target '%s'", p->target);
        p->table = *a;
        p->arch = &p->table;
    }
    return 0;
}

/* The program's target table, as target-file text; its name must be the
 * header's target. */
static int get_targ(nk_rd *r, nk_program *p)
{
    nk_rd s;
    if (nk__rd_v1(r))
        return 0;
    if (nk__rd_section(r, "TARG", &s))
        return r->rc;
    char *text = nk__rd_str(&s, NK_IO_MAX_TARGET_TEXT, "target table");
    if (text) {
        char msg[256];
        if (nk__arch_load_text(text, "target table", &p->table, msg, sizeof msg))
            nk__rd_fail(&s, NK_EFORMAT, "%s", msg);
        else if (strcmp(p->table.name, p->target))
            nk__rd_fail(&s, NK_EFORMAT, "the table is target '%s', the header names '%s'", p->table.name,
                        p->target);
        else
            p->arch = &p->table;
        free(text);
    }
    return r->rc = nk__rd_end(&s);
}

static int get_files(nk_rd *r, nk_program *p)
{
    nk_rd s;
    if (nk__rd_section(r, "FILE", &s))
        return r->rc;
    uint32_t n = nk__rd_count(&s, 4, "files");
    if (!s.rc && !(p->files = calloc(n ? n : 1, sizeof *p->files)))
        nk__rd_fail(&s, NK_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < n && !s.rc; i++) {
        p->files[i] = nk__rd_str(&s, NK_IO_MAX_NAME, "file name");
        if (p->files[i])
            p->nfiles = i + 1;
    }
    return r->rc = nk__rd_end(&s);
}

static int get_locs(nk_rd *r, nk_program *p)
{
    nk_rd s;
    if (nk__rd_section(r, "LOCS", &s))
        return r->rc;
    uint32_t n = nk__rd_count(&s, MIN_LOC, "locations");
    if (!s.rc && !(p->locs = calloc(n ? n : 1, sizeof *p->locs)))
        nk__rd_fail(&s, NK_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < n && !s.rc; i++) {
        p->locs[i].file = nk__rd_u32(&s);
        p->locs[i].line = nk__rd_i32(&s);
    }
    if (!s.rc)
        p->nlocs = n;
    return r->rc = nk__rd_end(&s);
}

static int get_loops(nk_rd *r, nk_program *p)
{
    nk_rd s;
    if (nk__rd_section(r, "LOOP", &s))
        return r->rc;
    uint32_t n = nk__rd_count(&s, MIN_LOOP, "loops");
    if (!s.rc && !(p->loops = calloc(n ? n : 1, sizeof *p->loops)))
        nk__rd_fail(&s, NK_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < n && !s.rc; i++) {
        nk_loopinfo *l = &p->loops[i];
        l->loc = nk__rd_u32(&s);
        l->parent = nk__rd_u32(&s);
        l->trip = nk__rd_i64(&s);
        l->kind = nk__rd_u8(&s);
        l->bufs = nk__rd_u8(&s);
        l->depth = nk__rd_u16(&s);
    }
    if (!s.rc)
        p->nloops = n;
    return r->rc = nk__rd_end(&s);
}

static int get_bufs(nk_rd *r, nk_program *p)
{
    nk_rd s;
    if (nk__rd_section(r, "BUFS", &s))
        return r->rc;
    uint32_t n = nk__rd_count(&s, nk__rd_vmin(&s, MIN_BUF_V1, MIN_BUF), "buffers");
    if (!s.rc && !(p->bufs = nk__big_fixed0((size_t)n + 1, sizeof *p->bufs)))
        nk__rd_fail(&s, NK_ENOMEM, "out of memory");
    for (uint32_t i = 1; i <= n && !s.rc; i++) {
        nk_bufinfo *b = &p->bufs[i];
        b->mem = nk__rd_u8(&s);
        b->dtype = nk__rd_u8(&s);
        b->ndim = nk__rd_u8(&s);
        b->role = nk__rd_u8(&s);
        b->index = nk__rd_vi32(&s);
        if (s.rc)
            break;
        if (b->ndim < 1 || b->ndim > NK_MAXDIM) {
            nk__rd_fail(&s, NK_EFORMAT, "buffer %u has %u dims (1..%d)", i, b->ndim, NK_MAXDIM);
            break;
        }
        for (int d = 0; d < b->ndim; d++)
            b->shape[d] = nk__rd_vi64(&s);
        b->addr = nk__rd_vi64(&s);
        b->bytes = nk__rd_vi64(&s);
        b->loc = nk__rd_vu32(&s);
        b->loop = nk__rd_vu32(&s);
        b->slot = nk__rd_vu16(&s);
        b->nslots = nk__rd_vu16(&s);
    }
    if (!s.rc)
        p->nbufs = n + 1;
    return r->rc = nk__rd_end(&s);
}

/* A dependency count, checked against the bytes left (4 bytes each in
 * version 1, at least 1 since). */
static uint32_t get_dep_count(nk_rd *s)
{
    if (nk__rd_v1(s))
        return nk__rd_count(s, 4, "dependencies");
    uint64_t n = nk__rd_uv(s);
    if (!s->rc && (n > s->n - s->pos || n > UINT32_MAX))
        nk__rd_fail(s, NK_EFORMAT, "dependencies: count %llu needs at least as many bytes, %zu left",
                    (unsigned long long)n, s->n - s->pos);
    return s->rc ? 0 : (uint32_t)n;
}

/* The dependencies of instruction i: version 1 stores them as they are;
 * later versions newest first, each as its distance from the one before. */
static void get_deps(nk_rd *s, uint32_t i, uint32_t *deps, uint32_t nd)
{
    if (nk__rd_v1(s)) {
        for (uint32_t k = 0; k < nd; k++)
            deps[k] = nk__rd_u32(s);
        return;
    }
    int64_t prev = i;
    for (uint32_t k = nd; k-- > 0 && !s->rc;) {
        int64_t d = prev - nk__rd_sv(s);
        if (d < 0 || d > UINT32_MAX)
            nk__rd_fail(s, NK_EFORMAT, "instruction %u: dependency %lld out of range", i, (long long)d);
        deps[k] = (uint32_t)d;
        prev = d;
    }
}

static int get_instrs(nk_rd *r, nk_program *p)
{
    nk_rd s;
    uint32_t capdeps = 0;
    if (nk__rd_section(r, "INST", &s))
        return r->rc;
    uint32_t n = nk__rd_count(&s, nk__rd_vmin(&s, MIN_INSTR_V1, MIN_INSTR), "instructions");
    if (!s.rc && !(p->instrs = nk__big_fixed0(n ? n : 1, sizeof *p->instrs)))
        nk__rd_fail(&s, NK_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < n && !s.rc; i++) {
        nk_instr *in = &p->instrs[i];
        nk__rd_release(&s);
        in->op = nk__rd_u8(&s);
        in->engine = nk__rd_u8(&s);
        in->func = nk__rd_u8(&s);
        in->alu0 = nk__rd_u8(&s);
        in->alu1 = nk__rd_u8(&s);
        in->cmp = nk__rd_u8(&s);
        in->axis = (int8_t)nk__rd_u8(&s);
        in->nsrc = nk__rd_u8(&s);
        in->flags = nk__rd_vu16(&s);
        in->queue = nk__rd_vu16(&s);
        in->loc = nk__rd_vu32(&s);
        in->loop = nk__rd_vu32(&s);
        in->iter = nk__rd_vu32(&s);
        nk_xarg xa;
        xa.imm0 = nk__rd_vfc(&s);
        xa.imm1 = nk__rd_vfc(&s);
        xa.aff.c = nk__rd_vi32(&s);
        xa.aff.cp = nk__rd_vi32(&s);
        for (int k = 0; k < NK_MAXDIM - 1; k++)
            xa.aff.cf[k] = nk__rd_vi32(&s);
        if (nk__set_xarg(p, in, &xa)) {
            nk__rd_fail(&s, NK_ENOMEM, "out of memory");
            break;
        }
        uint32_t nd = get_dep_count(&s);
        if (s.rc)
            break;
        if ((uint64_t)p->ndeps + nd > capdeps) {
            uint64_t cap = capdeps ? capdeps : 256;
            while (cap < (uint64_t)p->ndeps + nd)
                cap *= 2;
            uint32_t *d = cap <= UINT32_MAX ? nk__big_grow(p->deps, (size_t)cap * sizeof *d) : NULL;
            if (!d) {
                nk__rd_fail(&s, NK_ENOMEM, "out of memory");
                break;
            }
            p->deps = d;
            capdeps = (uint32_t)cap;
        }
        in->dep_off = p->ndeps;
        in->ndep = nd;
        if (nd)
            get_deps(&s, i, p->deps + p->ndeps, nd);
        p->ndeps += nd;
        nk_tensor x;
        get_tensor(&s, &x);
        if (nk__opnd_set(p, &in->dst, &x))
            nk__rd_fail(&s, NK_ENOMEM, "out of memory");
        get_tensor(&s, &x);
        if (x.buf && nk__set_dst2(p, in, &x))
            nk__rd_fail(&s, NK_ENOMEM, "out of memory");
        for (int k = 0; k < 2; k++) {
            get_tensor(&s, &x);
            if (nk__opnd_set(p, &in->src[k], &x))
                nk__rd_fail(&s, NK_ENOMEM, "out of memory");
        }
        get_tensor(&s, &x); /* a tensor without a buffer is all zero: the absent operand */
        if (x.buf && nk__set_src2(p, in, &x))
            nk__rd_fail(&s, NK_ENOMEM, "out of memory");
        if (!s.rc)
            p->ninstr = i + 1;
    }
    p->deps = nk__big_fit(p->deps, (size_t)p->ndeps * sizeof *p->deps); /* its room back */
    return r->rc = nk__rd_end(&s);
}

/* Input and output tables and the HBM list, derived from the buffers' roles. */
/* The constants' bytes: every constant buffer's, once, in buffer order. */
static int get_consts(nk_rd *r, nk_program *p)
{
    uint32_t want = 0;
    for (uint32_t b = 1; b < p->nbufs; b++)
        want += p->bufs[b].role == NK_ROLE_CONSTANT;
    if (r->version < 3)
        return want ? nk__rd_fail(r, NK_EFORMAT, "a constant buffer in a version %u file", r->version) : 0;
    nk_rd s;
    if (nk__rd_section(r, "CNST", &s))
        return r->rc;
    uint32_t n = nk__rd_u32(&s), prev = 0;
    if (!s.rc && n != want)
        return r->rc = nk__rd_fail(&s, NK_EFORMAT, "%u constants for %u constant buffers", n, want);
    if (n && !(p->cdata = calloc(p->nbufs, sizeof *p->cdata)))
        return r->rc = nk__rd_fail(&s, NK_ENOMEM, "out of memory");
    for (uint32_t k = 0; k < n && !s.rc; k++) {
        uint32_t b = nk__rd_u32(&s);
        if (s.rc)
            break;
        if (b <= prev || b >= p->nbufs || p->bufs[b].role != NK_ROLE_CONSTANT)
            return r->rc = nk__rd_fail(&s, NK_EFORMAT, "constant %u: buffer %u is not the next constant buffer", k, b);
        size_t bytes = (size_t)p->bufs[b].bytes;
        if (bytes > s.n - s.pos)
            return r->rc = nk__rd_fail(&s, NK_EFORMAT, "constant %u: %zu bytes, %zu left", k, bytes, s.n - s.pos);
        if (!(p->cdata[b] = malloc(bytes ? bytes : 1)))
            return r->rc = nk__rd_fail(&s, NK_ENOMEM, "out of memory");
        memcpy(p->cdata[b], s.p + s.pos, bytes);
        s.pos += bytes;
        prev = b;
    }
    if (nk__rd_end(&s))
        return r->rc = s.rc;
    return 0;
}

static int get_spmd(nk_rd *r, nk_program *p)
{
    p->ninst = 1;
    p->ncores = 1;
    if (r->version < 4)
        return 0;
    nk_rd s;
    if (nk__rd_section(r, "SPMD", &s))
        return r->rc;
    p->grid_ndim = nk__rd_u8(&s);
    if (!s.rc && p->grid_ndim > NK_MAX_GRID)
        return r->rc = nk__rd_fail(&s, NK_EFORMAT, "a launch grid of %u axes (at most %d)", p->grid_ndim, NK_MAX_GRID);
    uint64_t total = 1;
    for (int a = 0; a < p->grid_ndim && !s.rc; a++) {
        p->grid[a] = nk__rd_sv32(&s);
        p->grid_nc[a] = nk__rd_sv32(&s);
        if (!s.rc && (p->grid[a] < 1 || p->grid[a] > NK_MAX_INSTANCES || p->grid_nc[a] < -NK_MAX_CORES ||
                      p->grid_nc[a] > NK_MAX_CORES))
            return r->rc = nk__rd_fail(&s, NK_EFORMAT, "launch grid axis %d: %d instances, nl.nc(%d)", a, p->grid[a],
                                       p->grid_nc[a]);
        total *= (uint64_t)p->grid[a];
    }
    uint32_t ninst = nk__rd_uv32(&s);
    if (!s.rc && (ninst < 1 || ninst > NK_MAX_INSTANCES || ninst != total))
        return r->rc = nk__rd_fail(&s, NK_EFORMAT, "%u program instances for a grid of %llu", ninst,
                                   (unsigned long long)total);
    p->ninst = ninst;
    if (ninst > 1 && !s.rc) {
        if (!(p->inst_core = malloc(ninst)))
            return r->rc = nk__rd_fail(&s, NK_ENOMEM, "out of memory");
        for (uint32_t k = 0; k < ninst && !s.rc; k++) {
            p->inst_core[k] = nk__rd_u8(&s);
            if (!s.rc && p->inst_core[k] >= NK_MAX_CORES)
                return r->rc = nk__rd_fail(&s, NK_EFORMAT, "instance %u on core %u (at most %d cores)", k,
                                           p->inst_core[k], NK_MAX_CORES);
            if (p->inst_core[k] + 1u > p->ncores)
                p->ncores = p->inst_core[k] + 1u;
        }
        for (uint32_t i = 0; i < p->ninstr && !s.rc; i++)
            p->instrs[i].inst = nk__rd_uv16(&s);
        for (uint32_t b = 1; b < p->nbufs && !s.rc; b++)
            p->bufs[b].inst = nk__rd_uv16(&s);
    }
    uint32_t nseg = nk__rd_uv32(&s);
    if (!s.rc && (nseg < 1 || nseg >= UINT16_MAX || (nseg > 1 && ninst > 1)))
        return r->rc = nk__rd_fail(&s, NK_EFORMAT, "%u kernels in a sequence of %u instances", nseg, ninst);
    if (nseg > 1 && !s.rc) {
        p->seg_name = calloc(nseg, sizeof *p->seg_name);
        p->seg_loc = calloc(nseg, sizeof *p->seg_loc);
        if (!p->seg_name || !p->seg_loc)
            return r->rc = nk__rd_fail(&s, NK_ENOMEM, "out of memory");
        p->nseg = nseg;
        for (uint32_t k = 0; k < nseg && !s.rc; k++) {
            nk__rd_str_into(&s, p->seg_name[k], sizeof p->seg_name[k], "kernel name");
            p->seg_loc[k] = nk__rd_uv32(&s);
            if (!s.rc && p->seg_loc[k] >= p->nlocs)
                return r->rc = nk__rd_fail(&s, NK_EFORMAT, "kernel %u: location %u of %u", k, p->seg_loc[k],
                                           p->nlocs);
        }
        for (uint32_t i = 0; i < p->ninstr && !s.rc; i++)
            p->instrs[i].seg = nk__rd_uv16(&s);
    }
    if (nk__rd_end(&s))
        return r->rc = s.rc;
    return 0;
}

/* A parameter name or an API call: printable ASCII, no quote or backslash
 * (they go into messages, JSON, CSV and the viewer as they are). */
static int name_ok(const char *n)
{
    for (; *n; n++)
        if (!nk__name_char_ok(*n))
            return 0;
    return 1;
}

static int get_names(nk_rd *r, nk_program *p)
{
    if (r->version < 6)
        return 0;
    nk_rd s;
    if (nk__rd_section(r, "NAME", &s))
        return r->rc;
    uint32_t nn = nk__rd_uv32(&s);
    if (!s.rc && nn && nn != (uint32_t)p->ninputs)
        return r->rc = nk__rd_fail(&s, NK_EFORMAT, "%u parameter names for %d inputs", nn, p->ninputs);
    if (nn && !s.rc && !(p->in_name = calloc(nn, sizeof *p->in_name)))
        return r->rc = nk__rd_fail(&s, NK_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < nn && !s.rc; i++) {
        p->in_name[i] = nk__rd_str(&s, NK_IO_MAX_ARGNAME, "parameter name");
        if (p->in_name[i] && !name_ok(p->in_name[i]))
            return r->rc = nk__rd_fail(&s, NK_EFORMAT, "input %u: parameter name with a blank, quote, comma or "
                                       "control character", i);
    }
    uint32_t nc = nk__rd_uv32(&s);
    if (!s.rc && nc >= UINT16_MAX)
        return r->rc = nk__rd_fail(&s, NK_EFORMAT, "%u API calls (at most %d)", nc, UINT16_MAX - 1);
    if (!s.rc && nc > s.n - s.pos)
        return r->rc = nk__rd_fail(&s, NK_EFORMAT, "%u API calls in %zu bytes", nc, s.n - s.pos);
    if (nc && !s.rc) {
        if (!(p->calls = calloc(nc, sizeof *p->calls)))
            return r->rc = nk__rd_fail(&s, NK_ENOMEM, "out of memory");
        p->ncalls = nc;
    }
    for (uint32_t k = 0; k < nc && !s.rc; k++) {
        p->calls[k] = nk__rd_str(&s, NK_IO_MAX_ARGNAME, "API call");
        if (p->calls[k] && (!p->calls[k][0] || !name_ok(p->calls[k])))
            return r->rc = nk__rd_fail(&s, NK_EFORMAT, "API call %u: empty, or with a blank, quote, comma or "
                                       "control character", k);
    }
    for (uint32_t i = 0; nc && i < p->ninstr && !s.rc; i++) {
        uint32_t c = nk__rd_uv32(&s);
        if (!s.rc && c > nc)
            return r->rc = nk__rd_fail(&s, NK_EFORMAT, "instruction %u: API call %u of %u", i, c, nc);
        p->instrs[i].call = (uint16_t)c;
    }
    if (nk__rd_end(&s))
        return r->rc = s.rc;
    return 0;
}

static int derive_tables(nk_rd *r, nk_program *p)
{
    p->input_buf = calloc((size_t)p->ninputs + 1, sizeof *p->input_buf);
    p->output_buf = calloc((size_t)p->noutputs + 1, sizeof *p->output_buf);
    p->hbm_list = calloc(p->nbufs, sizeof *p->hbm_list);
    if (!p->input_buf || !p->output_buf || !p->hbm_list)
        return nk__rd_fail(r, NK_ENOMEM, "out of memory");
    for (uint32_t b = 1; b < p->nbufs; b++) {
        const nk_bufinfo *bi = &p->bufs[b];
        if (bi->mem == NK_SHARED_HBM)
            p->hbm_list[p->nhbm++] = b;
        int in = bi->role == NK_ROLE_INPUT, out = bi->role == NK_ROLE_OUTPUT;
        if (!in && !out)
            continue;
        int count = in ? p->ninputs : p->noutputs;
        uint32_t *tab = in ? p->input_buf : p->output_buf;
        if (bi->index < 0 || bi->index >= count)
            return nk__rd_fail(r, NK_EFORMAT, "buffer %u: %s index %d out of range (0..%d)", b,
                               in ? "input" : "output", bi->index, count - 1);
        if (tab[bi->index])
            return nk__rd_fail(r, NK_EFORMAT, "buffers %u and %u are both %s %d", tab[bi->index], b,
                               in ? "input" : "output", bi->index);
        tab[bi->index] = b;
    }
    for (int i = 0; i < p->ninputs; i++)
        if (!p->input_buf[i])
            return nk__rd_fail(r, NK_EFORMAT, "no buffer is input %d", i);
    for (int i = 0; i < p->noutputs; i++)
        if (!p->output_buf[i])
            return nk__rd_fail(r, NK_EFORMAT, "no buffer is output %d", i);
    return 0;
}

int nk__program_decode(nk_rd *r, nk_program **out)
{
    *out = NULL;
    nk_program *p = calloc(1, sizeof *p);
    if (!p)
        return nk__rd_fail(r, NK_ENOMEM, "out of memory");
    p->owned = 1;
    if (get_phdr(r, p) || get_targ(r, p) || get_files(r, p) || get_locs(r, p) || get_loops(r, p) || get_bufs(r, p) ||
        get_instrs(r, p) || get_consts(r, p) || get_spmd(r, p) || get_names(r, p) ||
        derive_tables(r, p))
        goto fail;
    char msg[384];
    int rc = nk__program_check(p, msg, sizeof msg);
    if (rc) {
        nk__rd_fail(r, rc, "%s", msg);
        goto fail;
    }
    *out = p;
    return 0;
fail:
    nk__program_destroy(p);
    return r->rc ? r->rc : NK_EFORMAT;
}

/* A copy of n elements of size bytes (a non-NULL pointer even for none);
 * NULL after setting *bad when out of memory. */
static void *dup_array(const void *src, size_t n, size_t size, int *bad)
{
    void *d = malloc(n ? n * size : 1);
    if (!d)
        *bad = 1;
    else if (n)
        memcpy(d, src, n * size);
    return d;
}

/* A copy of n strings (entries may be NULL), or NULL for none. */
static char **dup_strs(char *const *src, uint32_t n, int *bad)
{
    if (!src || !n)
        return NULL;
    char **d = calloc(n, sizeof *d);
    if (!d) {
        *bad = 1;
        return NULL;
    }
    for (uint32_t i = 0; i < n && !*bad; i++)
        if (src[i] && !(d[i] = strdup(src[i])))
            *bad = 1;
    return d;
}

int nk__program_copy(const nk_program *p, nk_program **out)
{
    *out = NULL;
    if (!p || !p->arch)
        return NK_EINVAL;
    nk_program *q = malloc(sizeof *q);
    if (!q)
        return NK_ENOMEM;
    *q = *p;
    q->files = NULL;
    q->nfiles = 0;
    q->in_name = NULL;
    q->calls = NULL;
    q->ncalls = 0;
    q->table = *p->arch;
    q->arch = &q->table;
    q->owned = 1;
    int bad = 0;
    q->instrs = dup_array(p->instrs, p->ninstr, sizeof *p->instrs, &bad);
    q->xop = dup_array(p->xop, p->nxop, sizeof *p->xop, &bad);
    q->cap_xop = p->nxop;
    q->xarg = dup_array(p->xarg, p->nxarg, sizeof *p->xarg, &bad);
    q->cap_xarg = p->nxarg;
    q->lays = dup_array(p->lays, p->nlays, sizeof *p->lays, &bad);
    q->cap_lays = p->nlays;
    q->lay_hash = NULL; /* rebuilt when the copy interns a layout */
    q->lay_hcap = 0;
    q->bufs = dup_array(p->bufs, p->nbufs, sizeof *p->bufs, &bad);
    q->locs = dup_array(p->locs, p->nlocs, sizeof *p->locs, &bad);
    q->loops = dup_array(p->loops, p->nloops, sizeof *p->loops, &bad);
    q->deps = dup_array(p->deps, p->ndeps, sizeof *p->deps, &bad);
    q->input_buf = dup_array(p->input_buf, (size_t)p->ninputs, sizeof *p->input_buf, &bad);
    q->output_buf = dup_array(p->output_buf, (size_t)p->noutputs, sizeof *p->output_buf, &bad);
    q->hbm_list = dup_array(p->hbm_list, p->nhbm, sizeof *p->hbm_list, &bad);
    q->inst_core = p->inst_core ? dup_array(p->inst_core, p->ninst, 1, &bad) : NULL;
    q->seg_name = p->seg_name ? dup_array(p->seg_name, p->nseg, sizeof *p->seg_name, &bad) : NULL;
    q->seg_loc = p->seg_loc ? dup_array(p->seg_loc, p->nseg, sizeof *p->seg_loc, &bad) : NULL;
    q->in_name = dup_strs(p->in_name, (uint32_t)p->ninputs, &bad);
    q->calls = dup_strs(p->calls, p->ncalls, &bad);
    q->ncalls = q->calls ? p->ncalls : 0;
    q->cdata = p->cdata ? calloc(p->nbufs, sizeof *q->cdata) : NULL;
    bad |= p->cdata && !q->cdata;
    for (uint32_t b = 1; !bad && p->cdata && b < p->nbufs; b++)
        if (p->cdata[b])
            q->cdata[b] = dup_array(p->cdata[b], (size_t)p->bufs[b].bytes, 1, &bad);
    q->files = calloc(p->nfiles ? p->nfiles : 1, sizeof *q->files);
    bad |= !q->files;
    for (uint32_t i = 0; !bad && i < p->nfiles; i++) {
        bad = !(q->files[i] = strdup(p->files[i]));
        q->nfiles = i + 1;
    }
    if (bad) {
        nk__program_destroy(q);
        return NK_ENOMEM;
    }
    *out = q;
    return 0;
}

/* ================================================================ check */

typedef struct chk {
    const nk_program *p;
    char *err;
    size_t errlen;
} chk;

static int bad(chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(chk *c, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    return NK_EFORMAT;
}

static int64_t peak_of(const nk_program *p, int mem) { return mem == NK_SBUF ? p->sbuf_peak : p->psum_peak; }

/* The tracer places tiles at multiples of this (so every element is aligned
 * and the executor can use the peak as the partition stride). */
static int64_t alloc_unit(const nk_program *p, int mem)
{
    return mem == NK_PSUM ? p->arch->psum_bank_bytes : p->arch->tile_align;
}

static int check_header(chk *c)
{
    const nk_program *p = c->p;
    const nk_arch *a = p->arch;
    if (!memchr(p->kernel, 0, sizeof p->kernel) || !memchr(p->target, 0, sizeof p->target))
        return bad(c, "kernel or target name not terminated");
    if (!a || !p->target[0] || strcmp(a->name, p->target))
        return bad(c, "target '%s' without its table, or a table of another name", p->target);
    char msg[160];
    if (nk__arch_check(a, msg, sizeof msg))
        return bad(c, "%s", msg);
    if (p->bufs_default < 1 || p->bufs_default > NK_IO_MAX_LOOP_BUFS)
        return bad(c, "default buffers per tile %d outside 1..%d", p->bufs_default, NK_IO_MAX_LOOP_BUFS);
    int64_t sbuf_cap = a->sbuf_partition_bytes - a->sbuf_reserved_bytes;
    if (p->sbuf_peak < 0 || p->sbuf_peak > sbuf_cap)
        return bad(c, "SBUF peak %lld outside 0..%lld bytes per partition", (long long)p->sbuf_peak,
                   (long long)sbuf_cap);
    if (p->psum_peak < 0 || p->psum_peak > a->psum_partition_bytes)
        return bad(c, "PSUM peak %lld outside 0..%lld bytes per partition", (long long)p->psum_peak,
                   (long long)a->psum_partition_bytes);
    if (p->sbuf_peak % alloc_unit(p, NK_SBUF) || p->psum_peak % alloc_unit(p, NK_PSUM))
        return bad(c, "SBUF peak %lld or PSUM peak %lld not a multiple of the allocation unit (%lld, %lld bytes)",
                   (long long)p->sbuf_peak, (long long)p->psum_peak, (long long)alloc_unit(p, NK_SBUF),
                   (long long)alloc_unit(p, NK_PSUM));
    if (p->ninputs < 0 || p->noutputs < 0 || p->nbufs < 1)
        return bad(c, "negative input or output count, or no buffer table");
    for (uint32_t i = 0; i < p->nfiles; i++)
        if (!p->files[i])
            return bad(c, "file %u has no name", i);
    for (uint32_t i = 0; i < p->nlocs; i++)
        if (p->locs[i].file >= p->nfiles)
            return bad(c, "location %u: file %u out of range (%u files)", i, p->locs[i].file, p->nfiles);
    return 0;
}

static int check_loops(chk *c)
{
    const nk_program *p = c->p;
    for (uint32_t i = 0; i < p->nloops; i++) {
        const nk_loopinfo *l = &p->loops[i];
        if (l->loc >= p->nlocs)
            return bad(c, "loop %u: location %u out of range (%u locations)", i + 1, l->loc, p->nlocs);
        if (l->parent > i)
            return bad(c, "loop %u: parent %u is not an earlier loop", i + 1, l->parent);
        if (l->kind > NK_LOOP_SEQUENTIAL || l->bufs < 1 || l->bufs > NK_IO_MAX_LOOP_BUFS || l->trip < 0 ||
            l->trip > UINT32_MAX)
            return bad(c, "loop %u: kind %u, buffers %u or trip count %lld out of range", i + 1, l->kind, l->bufs,
                       (long long)l->trip);
        unsigned want = l->parent ? p->loops[l->parent - 1].depth + 1u : 0u;
        if (l->depth != want)
            return bad(c, "loop %u: depth %u, expected %u from its parent", i + 1, l->depth, want);
    }
    return 0;
}

static int check_buf(chk *c, uint32_t id)
{
    const nk_program *p = c->p;
    const nk_bufinfo *b = &p->bufs[id];
    int es = nk_dtype_size((nk_dtype)b->dtype);
    if (b->mem > NK_PSUM || !es || b->ndim < 1 || b->ndim > NK_MAXDIM || b->role > NK_ROLE_CONSTANT)
        return bad(c, "buffer %u: memory %u, dtype %u, rank %u or role %u out of range", id, b->mem, b->dtype,
                   b->ndim, b->role);
    if ((b->role == NK_ROLE_TILE) != (b->mem != NK_SHARED_HBM))
        return bad(c, "buffer %u: role %u does not match memory %u", id, b->role, b->mem);
    if (b->role == NK_ROLE_CONSTANT && (!p->cdata || !p->cdata[id]))
        return bad(c, "buffer %u: a constant without its bytes", id);
    if (b->role != NK_ROLE_INPUT && b->role != NK_ROLE_OUTPUT && b->index != -1)
        return bad(c, "buffer %u: index %d on a buffer that is neither input nor output", id, b->index);
    if (b->loc >= p->nlocs || b->loop > p->nloops)
        return bad(c, "buffer %u: location %u or loop %u out of range", id, b->loc, b->loop);
    int hbm = b->mem == NK_SHARED_HBM;
    if (hbm ? b->slot || b->nslots > 1 : b->nslots < 1 || b->slot >= b->nslots)
        return bad(c, "buffer %u: slot %u of %u", id, b->slot, b->nslots);
    for (int d = b->ndim; d < NK_MAXDIM; d++)
        if (b->shape[d])
            return bad(c, "buffer %u: nonzero size on unused axis %d", id, d);
    int64_t n = es, limit = hbm ? NK_IO_MAX_HBM_BYTES : b->bytes;
    for (int d = 0; d < b->ndim; d++) {
        int64_t lo = hbm ? 1 : 0;
        if (b->shape[d] < lo || b->shape[d] > INT32_MAX)
            return bad(c, "buffer %u: size %lld on axis %d", id, (long long)b->shape[d], d);
        if (!hbm && d == 0) {
            if (b->shape[0] > p->arch->partitions)
                return bad(c, "buffer %u: %lld partitions, more than %d", id, (long long)b->shape[0],
                           p->arch->partitions);
            continue;
        }
        if (!hbm && !b->shape[0])
            break; /* an empty tile (all partitions masked off) holds no bytes */
        if (b->shape[d] && n > limit / b->shape[d])
            return bad(c, "buffer %u: %s exceed %lld bytes", id, hbm ? "elements" : "a partition's elements",
                       (long long)limit);
        n *= b->shape[d];
    }
    if (hbm) {
        if (b->bytes != n || b->addr)
            return bad(c, "buffer %u: HBM tensor of %lld bytes records %lld bytes at address %lld", id, (long long)n,
                       (long long)b->bytes, (long long)b->addr);
        return 0;
    }
    if (b->addr % alloc_unit(p, b->mem))
        return bad(c, "buffer %u: tile address %lld not a multiple of the %lld-byte allocation unit", id,
                   (long long)b->addr, (long long)alloc_unit(p, b->mem));
    /* peak - bytes cannot overflow: the peak is at most a partition, bytes >= 0 */
    if (b->bytes < 0 || b->addr < 0 || b->addr > peak_of(p, b->mem) - b->bytes)
        return bad(c, "buffer %u: tile of %lld bytes at %lld outside the %s peak of %lld bytes per partition", id,
                   (long long)b->bytes, (long long)b->addr, b->mem == NK_SBUF ? "SBUF" : "PSUM",
                   (long long)peak_of(p, b->mem));
    return 0;
}

static int check_io_tables(chk *c)
{
    const nk_program *p = c->p;
    int nin = 0, nout = 0;
    uint32_t nhbm = 0;
    for (uint32_t b = 1; b < p->nbufs; b++) {
        nin += p->bufs[b].role == NK_ROLE_INPUT;
        nout += p->bufs[b].role == NK_ROLE_OUTPUT;
        if (p->bufs[b].mem == NK_SHARED_HBM) {
            if (nhbm >= p->nhbm || p->hbm_list[nhbm] != b)
                return bad(c, "HBM list does not list buffer %u in order", b);
            nhbm++;
        }
    }
    if (nhbm != p->nhbm)
        return bad(c, "HBM list has %u entries for %u HBM buffers", p->nhbm, nhbm);
    if (nin != p->ninputs || nout != p->noutputs)
        return bad(c, "%d input and %d output buffers for %d inputs and %d outputs", nin, nout, p->ninputs,
                   p->noutputs);
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? p->noutputs : p->ninputs;
        const uint32_t *tab = pass ? p->output_buf : p->input_buf;
        for (int i = 0; i < n; i++) {
            uint32_t b = tab[i];
            int role = pass ? NK_ROLE_OUTPUT : NK_ROLE_INPUT;
            if (!b || b >= p->nbufs || p->bufs[b].role != role || p->bufs[b].index != i)
                return bad(c, "%s %d maps to buffer %u, which is not that %s", pass ? "output" : "input", i, b,
                           pass ? "output" : "input");
        }
    }
    return 0;
}

/* One operand: buffer, memory, rank, sizes, strides and the bytes it touches
 * inside its buffer. On success *numel holds its element count. */
static int check_view(chk *c, uint32_t i, const char *what, const nk_tensor *t, int64_t *numel)
{
    const nk_program *p = c->p;
    if (!t->buf || t->buf >= p->nbufs)
        return bad(c, "instruction %u: %s: buffer %u out of range (1..%u)", i, what, t->buf, p->nbufs - 1);
    const nk_bufinfo *b = &p->bufs[t->buf];
    int es = nk_dtype_size((nk_dtype)t->dtype);
    if (t->mem != b->mem || t->dtype != b->dtype || t->ndim < 1 || t->ndim > NK_MAXDIM)
        return bad(c, "instruction %u: %s: memory %u or dtype %u differ from buffer %u's (%u, %u), or rank %u", i,
                   what, t->mem, t->dtype, t->buf, b->mem, b->dtype, t->ndim);
    int tile = t->mem != NK_SHARED_HBM;
    if (t->off < 0 || t->off > NK_IO_MAX_STRIDE || (!tile && t->part0))
        return bad(c, "instruction %u: %s: offset %lld or first partition %u invalid", i, what, (long long)t->off,
                   t->part0);
    int64_t n = 1, span = 0;
    for (int d = 0; d < NK_MAXDIM; d++) {
        if (d >= t->ndim) {
            if (t->shape[d] || t->stride[d])
                return bad(c, "instruction %u: %s: nonzero size or stride on unused axis %d", i, what, d);
            continue;
        }
        if (t->shape[d] < 1 || t->stride[d] < 0 || t->stride[d] > NK_IO_MAX_STRIDE)
            return bad(c, "instruction %u: %s: size %d or stride %lld on axis %d invalid", i, what, t->shape[d],
                       (long long)t->stride[d], d);
        if (tile && d == 0)
            continue;
        int64_t term;
        if (__builtin_mul_overflow((int64_t)(t->shape[d] - 1), t->stride[d], &term) ||
            __builtin_add_overflow(span, term, &span) || __builtin_mul_overflow(n, (int64_t)t->shape[d], &n) ||
            n > NK_IO_MAX_HBM_BYTES)
            return bad(c, "instruction %u: %s: access pattern too large", i, what);
    }
    int64_t hi; /* last element touched, within a partition for tiles */
    if (__builtin_add_overflow(t->off, span, &hi) || hi >= b->bytes / es)
        return bad(c, "instruction %u: %s: elements %lld..%lld outside buffer %u of %lld bytes%s", i, what,
                   (long long)t->off, (long long)hi, t->buf, (long long)b->bytes, tile ? " per partition" : "");
    if (tile) {
        if (t->part0 + t->shape[0] > b->shape[0])
            return bad(c, "instruction %u: %s: partitions %u..%d outside the tile's %lld", i, what, t->part0,
                       t->part0 + t->shape[0] - 1, (long long)b->shape[0]);
        if (n > p->arch->sbuf_partition_bytes)
            return bad(c, "instruction %u: %s: %lld elements per partition", i, what, (long long)n);
        n *= t->shape[0];
    } else if (n > b->bytes / es) {
        return bad(c, "instruction %u: %s: %lld elements in a tensor of %lld bytes", i, what, (long long)n,
                   (long long)b->bytes);
    }
    *numel = n;
    return 0;
}

static int check_fields(chk *c, uint32_t i, const nk_instr *in)
{
    const nk_program *p = c->p;
    const nk_opdef *od = nk__op_def(in->op);
    if (!od)
        return bad(c, "instruction %u: opcode %u out of range", i, in->op);
    if (in->engine >= NK_ENGINE_COUNT || !(od->engines & NK_ENG(in->engine)))
        return bad(c, "instruction %u: %s cannot run on engine %u", i, nk__op_name(in->op), in->engine);
    if (in->flags & ~od->flags)
        return bad(c, "instruction %u: flags 0x%x invalid for %s", i, in->flags, nk__op_name(in->op));
    if (in->func >= NK_ACT_COUNT || in->alu0 >= NK_ALU_COUNT || in->alu1 >= NK_ALU_COUNT || in->cmp > NK_CMP_LT ||
        in->axis < -1 || in->axis >= NK_MAXDIM)
        return bad(c, "instruction %u: function %u, operator %u/%u, comparison %u or axis %d out of range", i,
                   in->func, in->alu0, in->alu1, in->cmp, in->axis);
    if (in->engine == NK_ENGINE_DMA ? in->queue >= p->arch->dma_queues : in->queue != 0)
        return bad(c, "instruction %u: DMA queue %u invalid for engine %s", i, in->queue,
                   nk_engine_name((nk_engine)in->engine));
    if (in->loc >= p->nlocs)
        return bad(c, "instruction %u: location %u out of range (%u locations)", i, in->loc, p->nlocs);
    if (in->loop > p->nloops || (in->loop && in->iter >= p->loops[in->loop - 1].trip))
        return bad(c, "instruction %u: loop %u iteration %u out of range", i, in->loop, in->iter);
    if (in->dep_off > p->ndeps || in->ndep > p->ndeps - in->dep_off)
        return bad(c, "instruction %u: dependencies %u..+%u outside the %u recorded", i, in->dep_off, in->ndep,
                   p->ndeps);
    for (uint32_t k = 0; k < in->ndep; k++) {
        uint32_t d = p->deps[in->dep_off + k];
        if (d >= i)
            return bad(c, "instruction %u: depends on instruction %u, which is not earlier", i, d);
        if (k && d <= p->deps[in->dep_off + k - 1])
            return bad(c, "instruction %u: dependencies not strictly increasing", i);
    }
    if (in->nsrc != nk__op_nsrc(in))
        return bad(c, "instruction %u: %u source operands, %s takes %d", i, in->nsrc, nk__op_name(in->op),
                   nk__op_nsrc(in));
    if (in->xsrc2 > p->nxop || in->xdst2 > p->nxop || (p->nxop && !p->xop))
        return bad(c, "instruction %u: operands %u, %u outside the side table of %u", i, in->xsrc2, in->xdst2,
                   p->nxop);
    if (in->xarg > p->nxarg || (p->nxarg && !p->xarg))
        return bad(c, "instruction %u: scalars %u outside the side table of %u", i, in->xarg, p->nxarg);
    const nk_opnd *ts[5];
    nk__operands(p, in, ts);
    for (int k = 0; k < 5; k++)
        if (ts[k]->lay > p->nlays || (p->nlays && !p->lays))
            return bad(c, "instruction %u: operand layout %u outside the table of %u", i, ts[k]->lay, p->nlays);
    return 0;
}

/* Operand memories (the op's and its engine's rules) and the op's own shape
 * relations and limits on the program's target, which the executor relies on. */
static int check_semantics(chk *c, uint32_t i, const nk_instr *in, const int64_t *n)
{
    const nk_opdef *od = nk__op_def(in->op);
    for (int k = 0; k < NK_OPND_COUNT; k++) { /* buffer and memory only: read in place */
        const nk_opnd *t = nk__op_operand(c->p, in, k);
        unsigned ok = nk__op_operand_mems(in, k), mem = t->buf ? nk__opnd_mem(c->p, t) : 0;
        if (t->buf && !(ok & NK_MEM(mem)))
            return bad(c, "instruction %u: %s: %s in %s; on the %s engine it must be in %s", i, od->name,
                       nk__op_operand_name(in, k), nk__mem_names(NK_MEM(mem)),
                       nk_engine_name((nk_engine)in->engine), nk__mem_names(ok));
    }
    char msg[192];
    if (od->check && od->check(c->p->arch, c->p, in, n, msg, sizeof msg))
        return bad(c, "instruction %u: %s", i, msg);
    return 0;
}

static int check_instr(chk *c, uint32_t i)
{
    const nk_instr *in = &c->p->instrs[i];
    int rc = check_fields(c, i, in);
    if (rc)
        return rc;
    if (!in->dst.buf)
        return bad(c, "instruction %u: no destination", i);
    int want2 = nk__op_operand_present(in, NK_OPND_DST2);
    if (!!nk__dst2(c->p, in)->buf != want2)
        return bad(c, "instruction %u: second destination %s", i, want2 ? "missing" : "unexpected");
    int64_t n[NK_OPND_COUNT] = {0, 0, 0, 0, 0}; /* dst, dst2, src[0..2] */
    static const char *names[NK_OPND_COUNT] = {"dst", "dst2", "src[0]", "src[1]", "src[2]"};
    for (int k = 0; k < NK_OPND_COUNT; k++) {
        const nk_opnd *o = nk__op_operand(c->p, in, k);
        if (!nk__op_operand_present(in, k)) {
            if (o->buf)
                return bad(c, "instruction %u: %s present but unused", i, names[k]);
            continue;
        }
        nk_tensor t = nk__opnd_tensor(c->p, o); /* the whole access pattern, for its bounds */
        if ((rc = check_view(c, i, names[k], &t, &n[k])))
            return rc;
    }
    return check_semantics(c, i, in, n);
}

/* SPMD: instances in order, each tile used only by its own instance. */
static int check_instances(chk *c)
{
    const nk_program *p = c->p;
    uint32_t ninst = p->ninst ? p->ninst : 1;
    if (ninst > 1 && !p->inst_core)
        return bad(c, "%u program instances without their cores", ninst);
    for (uint32_t b = 1; b < p->nbufs; b++)
        if (p->bufs[b].inst >= ninst)
            return bad(c, "buffer %u: program instance %u of %u", b, p->bufs[b].inst, ninst);
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        if (in->inst >= ninst || (i && in->inst < p->instrs[i - 1].inst))
            return bad(c, "instruction %u: program instance %u out of order or range (%u instances)", i, in->inst,
                       ninst);
        if (in->seg >= (p->nseg > 1 ? p->nseg : 1) || (i && in->seg < p->instrs[i - 1].seg))
            return bad(c, "instruction %u: kernel %u out of order or range (%u kernels)", i, in->seg,
                       p->nseg > 1 ? p->nseg : 1);
        const nk_opnd *ts[5];
        nk__operands(p, in, ts);
        for (int k = 0; k < 5; k++)
            if (ts[k]->buf && nk__opnd_mem(p, ts[k]) != NK_SHARED_HBM && p->bufs[ts[k]->buf].inst != in->inst)
                return bad(c, "instruction %u of instance %u uses tile %u of instance %u", i, in->inst, ts[k]->buf,
                           p->bufs[ts[k]->buf].inst);
    }
    return 0;
}

int nk__program_check(const nk_program *p, char *err, size_t errlen)
{
    chk c = {p, err, errlen};
    int rc = check_header(&c);
    if (!rc)
        rc = check_loops(&c);
    for (uint32_t b = 1; !rc && b < p->nbufs; b++)
        rc = check_buf(&c, b);
    if (!rc)
        rc = check_io_tables(&c);
    for (uint32_t i = 0; !rc && i < p->ninstr; i++)
        rc = check_instr(&c, i);
    if (!rc)
        rc = check_instances(&c);
    return rc;
}

/* ================================================================ files of programs */

int nk_program_save(const nk_program *p, const char *path)
{
    if (!p || !path)
        return NK_EINVAL;
    nk_wr w = {0};
    nk__file_begin(&w, NK_MAGIC_PROGRAM);
    size_t s = nk__wr_begin(&w, "META");
    nk__wr_str(&w, NK_VERSION);
    nk__wr_end(&w, s);
    s = nk__wr_begin(&w, "PROG");
    int rc = nk__program_encode(p, &w);
    nk__wr_end(&w, s);
    nk__file_finish(&w);
    if (!rc)
        rc = w.oom ? NK_ENOMEM : nk__file_write_atomic(path, w.p, w.n);
    nk__wr_free(&w);
    return rc;
}

int nk_program_load(const char *path, nk_program **out, char *err, size_t errlen)
{
    uint8_t *data = NULL;
    size_t n = 0;
    *out = NULL;
    int rc = nk__file_read_all(path, &data, &n, err, errlen);
    if (rc)
        return rc;
    nk_rd r, meta, prog;
    rc = nk__file_open(data, n, NK_MAGIC_PROGRAM, "program file", &r, err, errlen);
    if (!rc && !nk__rd_section(&r, "META", &meta)) {
        char version[16];
        nk__rd_str_into(&meta, version, sizeof version, "nklab version");
        if (nk__rd_end(&meta))
            r.rc = meta.rc;
    }
    if (!rc && !r.rc && !nk__rd_section(&r, "PROG", &prog)) {
        if (!nk__program_decode(&prog, out))
            nk__rd_end(&prog);
        r.rc = prog.rc;
    }
    if (!rc && !r.rc)
        nk__rd_end(&r);
    if (!rc)
        rc = r.rc;
    if (rc && *out) {
        nk__program_destroy(*out);
        *out = NULL;
    }
    if (!rc)
        nk__program_assert(*out); /* what the reader accepts is a program the library can run */
    free(data);
    return rc;
}

/* ================================================================ listing */

static void dump_operands(nk_text *t, const nk_program *p, const nk_instr *in)
{
    char b[160];
    nk__format_ap(b, sizeof b, p, &in->dst);
    nk__text_printf(t, "%s", b);
    const nk_opnd *d2 = nk__dst2(p, in);
    if (d2->buf) {
        nk__format_ap(b, sizeof b, p, d2);
        nk__text_printf(t, ", %s", b);
    }
    const char *sep = " <- ";
    for (int k = 0; k < in->nsrc && k < 3; k++) {
        const nk_opnd *s = nk__src(p, in, k);
        if (!s->buf)
            continue;
        nk__format_ap(b, sizeof b, p, s);
        nk__text_printf(t, "%s%s", sep, b);
        sep = ", ";
    }
}

/* The attributes, as every view and export shows them (src/isa). */
static void dump_details(nk_text *t, const nk_program *p, const nk_instr *in)
{
    char a[256];
    if (nk__op_attrs(p, in, a, sizeof a))
        nk__text_printf(t, " %s", a);
}

static void dump_where(nk_text *t, const nk_program *p, uint32_t loc)
{
    if (loc < p->nlocs && p->locs[loc].file < p->nfiles)
        nk__text_printf(t, "%s:%d", p->files[p->locs[loc].file], p->locs[loc].line);
    else
        nk__text_printf(t, "?");
}

static void dump_header(nk_text *t, const nk_program *p)
{
    nk__text_printf(t, "program %s  target %s  default bufs %d\n", p->kernel, p->target, p->bufs_default);
    for (uint32_t k = 0; k < p->nhbm; k++) {
        const nk_bufinfo *b = &p->bufs[p->hbm_list[k]];
        int32_t sh[NK_MAXDIM];
        char s[96];
        for (int d = 0; d < b->ndim && d < NK_MAXDIM; d++)
            sh[d] = (int32_t)b->shape[d];
        nk__format_shape(s, sizeof s, sh, b->ndim);
        const char *role = b->role == NK_ROLE_INPUT ? "input" : b->role == NK_ROLE_OUTPUT ? "output" : "scratch";
        nk__text_printf(t, "  %s", role);
        if (b->index >= 0)
            nk__text_printf(t, " %d", b->index);
        nk__text_printf(t, ": %s %s (buffer %u)\n", s, nk_dtype_name((nk_dtype)b->dtype), p->hbm_list[k]);
    }
    nk__text_printf(t, "  sbuf peak %lld B/partition, psum peak %lld B/partition, %u buffers\n",
                   (long long)p->sbuf_peak, (long long)p->psum_peak, p->nbufs ? p->nbufs - 1 : 0);
    for (uint32_t k = 0; k < p->nloops; k++) {
        const nk_loopinfo *l = &p->loops[k];
        nk__text_printf(t, "  loop %u: %s(%lld) bufs %u depth %u at ", k + 1,
                       l->kind == NK_LOOP_AFFINE ? "affine_range" : "sequential_range", (long long)l->trip, l->bufs,
                       l->depth);
        dump_where(t, p, l->loc);
        nk__text_printf(t, "\n");
    }
    nk__text_printf(t, "%u instructions:\n", p->ninstr);
}

int nk_program_dump(const nk_program *p, char **text)
{
    nk_text t = {0};
    *text = NULL;
    dump_header(&t, p);
    for (uint32_t i = 0; i < p->ninstr; i++) {
        const nk_instr *in = &p->instrs[i];
        nk__text_printf(&t, "%5u  %-6s", i, nk_engine_name((nk_engine)in->engine));
        if (in->engine == NK_ENGINE_DMA)
            nk__text_printf(&t, " q%-2u", in->queue);
        else
            nk__text_printf(&t, "    ");
        nk__text_printf(&t, " %-13s ", nk__op_name(in->op));
        dump_operands(&t, p, in);
        dump_details(&t, p, in);
        nk__text_printf(&t, "  deps ");
        for (uint32_t k = 0; k < in->ndep; k++)
            nk__text_printf(&t, "%s%u", k ? "," : "", p->deps[in->dep_off + k]);
        if (!in->ndep)
            nk__text_printf(&t, "-");
        nk__text_printf(&t, "  ");
        dump_where(&t, p, in->loc);
        if (in->loop)
            nk__text_printf(&t, " (loop %u i=%u)", in->loop, in->iter);
        nk__text_printf(&t, "\n");
    }
    if (t.oom) {
        nk__text_free(&t);
        return NK_ENOMEM;
    }
    if (!t.s)
        nk__text_printf(&t, "%s", "");
    *text = t.s;
    return t.oom ? NK_ENOMEM : 0;
}
