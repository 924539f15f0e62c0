/*
 * program_io.h - byte-level encoding shared by the program file and the
 * profile file: a little-endian writer and a bounds-checked reader, tagged
 * sections with lengths, the file container (magic, format version, content
 * length, checksum) and the program's encoder, decoder and validator.
 *
 * The layout of every byte is described in docs/file-formats.md.
 */
#ifndef NK_PROGRAM_IO_H
#define NK_PROGRAM_IO_H

#include "nkint.h"
#include "core/atomicfile.h"

#include <string.h>

/* Version of the container and of every section layout. Any change to a
 * layout bumps it; readers reject versions they do not know. */
#define NK_FORMAT_VERSION 7
#define NK_MAGIC_PROGRAM "NKLABPRG"
#define NK_MAGIC_PROFILE "NKLABPRF"
#define NK_FILE_HEADER_BYTES 32

/* Bounds the decoder enforces (beyond them a file is rejected). */
#define NK_IO_MAX_NAME 4096           /* a file path recorded in a program */
#define NK_IO_MAX_ARGNAME 63          /* a parameter name or an API call */
#define NK_IO_MAX_TEXT (64u << 20)    /* one source text */
#define NK_IO_MAX_HBM_BYTES (1ll << 40) /* one HBM tensor (assumed: above any device's HBM) */
#define NK_IO_MAX_STRIDE (1ll << 40)
#define NK_IO_MAX_LOOP_BUFS 32        /* the tracer's limit on buffers per tile */
#define NK_IO_MAX_TARGET_TEXT (64u << 10) /* a target table as text (about 4 KiB) */

/* ---- writer: grows a byte buffer; on allocation failure sets oom and
 * ignores later writes (checked once at the end). Fixed-width fields are
 * little-endian; the variable-length ones (uv, sv, fc, fx) are LEB128:
 * seven bits a byte, low first, the high bit set on every byte but the
 * last, at most 10 bytes, no superfluous zero bytes. The primitives are
 * inline: a profile writes tens of millions of them. */
typedef struct nk_wr {
    uint8_t *p;
    size_t n, cap;
    int oom;
} nk_wr;

/* Makes room for n more bytes (or sets oom): the slow path of the writers. */
void nk__wr_grow(nk_wr *w, size_t n);
/* Room for at least n more bytes from now on, to size a buffer up front. */
static inline void nk__wr_reserve(nk_wr *w, size_t n)
{
    if (w->cap - w->n < n)
        nk__wr_grow(w, n);
}

/* Where the next n bytes go, or NULL after an allocation failure. */
static inline uint8_t *nk__wr_room(nk_wr *w, size_t n)
{
    nk__wr_reserve(w, n);
    return w->oom || !w->p ? NULL : w->p + w->n;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NK_IO_LITTLE_ENDIAN 1 /* the host's order is the files': plain loads and stores */
#else
#define NK_IO_LITTLE_ENDIAN 0
#endif

/* The low `bytes` bytes of v at b, little-endian. */
static inline void nk__put_le(uint8_t *b, uint64_t v, int bytes)
{
    if (NK_IO_LITTLE_ENDIAN) {
        memcpy(b, &v, (size_t)bytes);
        return;
    }
    for (int i = 0; i < bytes; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t nk__get_le(const uint8_t *b, int bytes)
{
    uint64_t v = 0;
    if (NK_IO_LITTLE_ENDIAN) {
        memcpy(&v, b, (size_t)bytes);
        return v;
    }
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

static inline void nk__wr_le(nk_wr *w, uint64_t v, int bytes)
{
    uint8_t *b = nk__wr_room(w, 8);
    if (!b)
        return;
    nk__put_le(b, v, bytes);
    w->n += (size_t)bytes;
}

void nk__wr_bytes(nk_wr *w, const void *b, size_t n);
static inline void nk__wr_u8(nk_wr *w, uint8_t v) { nk__wr_le(w, v, 1); }
static inline void nk__wr_u16(nk_wr *w, uint16_t v) { nk__wr_le(w, v, 2); }
static inline void nk__wr_u32(nk_wr *w, uint32_t v) { nk__wr_le(w, v, 4); }
static inline void nk__wr_u64(nk_wr *w, uint64_t v) { nk__wr_le(w, v, 8); }
static inline void nk__wr_i32(nk_wr *w, int32_t v) { nk__wr_le(w, (uint32_t)v, 4); }
static inline void nk__wr_i64(nk_wr *w, int64_t v) { nk__wr_le(w, (uint64_t)v, 8); }

static inline uint64_t nk__f64_bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static inline double nk__bits_f64(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static inline void nk__wr_f64(nk_wr *w, double v) { nk__wr_le(w, nk__f64_bits(v), 8); }

/* uv: an unsigned integer in 1 to 10 bytes. */
static inline void nk__wr_uv(nk_wr *w, uint64_t v)
{
    uint8_t *b = nk__wr_room(w, 10);
    if (!b)
        return;
    size_t k = 0;
    for (; v >= 0x80; v >>= 7)
        b[k++] = (uint8_t)(v | 0x80);
    b[k++] = (uint8_t)v;
    w->n += k;
}

/* sv: a signed integer, zigzag-mapped (0, -1, 1, -2 ... to 0, 1, 2, 3 ...)
 * so small magnitudes of either sign are short. */
static inline void nk__wr_sv(nk_wr *w, int64_t v)
{
    uint64_t u = (uint64_t)v;
    nk__wr_uv(w, (u << 1) ^ (0 - (u >> 63)));
}

/* fc: a double as the uv of its bits byte-reversed, so values with short
 * mantissas (0, 1, 0.5, 1e3) take 1 to 3 bytes. Exact for every double. */
static inline void nk__wr_fc(nk_wr *w, double v) { nk__wr_uv(w, __builtin_bswap64(nk__f64_bits(v))); }

/* fx: a double as the uv of its bits xor the bits of prev, a nearby value
 * (the previous time of a sorted series): sign, exponent and leading
 * mantissa bits cancel. Exact for every double. */
static inline void nk__wr_fx(nk_wr *w, double v, double prev)
{
    nk__wr_uv(w, nk__f64_bits(v) ^ nk__f64_bits(prev));
}

void nk__wr_str(nk_wr *w, const char *s); /* u32 length + bytes, no NUL */
/* A section: u32 tag, u64 length, payload. begin returns the position to
 * pass to end, which patches the length. */
size_t nk__wr_begin(nk_wr *w, const char tag[4]);
void nk__wr_end(nk_wr *w, size_t at);
void nk__wr_free(nk_wr *w);

/* ---- reader: every get checks the remaining length; the first failure is
 * recorded (rc and a message prefixed by the reader's context) and later
 * gets return zeros, so callers check rc once per block. */
/* A buffer the reader owns and reads once, front to back (a file read
 * whole): the pages behind the reader are given back to the system as it
 * goes (nk__rd_release), so a large file is not held beside what it
 * decodes to. */
typedef struct nk_rd_owned {
    uintptr_t done, end; /* given back: [page after the start, done); the buffer ends at end */
} nk_rd_owned;

typedef struct nk_rd {
    const uint8_t *p;
    size_t n, pos;
    nk_rd_owned *owned; /* NULL: the bytes are the caller's (sections inherit it) */
    int rc;
    char *err;
    size_t errlen;
    char ctx[48]; /* "PROG/BUFS" */
    uint32_t version; /* the format version of the bytes (the file's; sections inherit it) */
} nk_rd;

void nk__rd_init(nk_rd *r, const void *p, size_t n, char *err, size_t errlen);
/* Marks r's bytes, data[0..n) (r reads all of them), as owned by the reader. */
void nk__rd_own(nk_rd *r, nk_rd_owned *o, const uint8_t *data, size_t n);
void nk__rd_release_slow(nk_rd *r);
/* When pages go back: buffers of at least nk__rd_own_min bytes, every
 * nk__rd_own_step bytes read, all but the last nk__rd_own_slack bytes
 * behind the reader (a record read the checked way starts again from its
 * own start). 16 MiB, 8 MiB and 1 MiB; the tests make them small. */
extern size_t nk__rd_own_min, nk__rd_own_step, nk__rd_own_slack;
/* Bytes given back so far, by every reader of the process (for the tests). */
extern _Atomic size_t nk__rd_own_given;
/* Gives back the owned pages well behind the reader (none when not owned);
 * cheap enough to call per record. */
static inline void nk__rd_release(nk_rd *r)
{
    if (r->owned && (uintptr_t)(r->p + r->pos) > r->owned->done + nk__rd_own_step)
        nk__rd_release_slow(r);
}
int nk__rd_fail(nk_rd *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The slow paths: a read past the end (records the failure, returns 0) and
 * a variable-length integer near the end or malformed. */
uint64_t nk__rd_short(nk_rd *r, size_t bytes);
uint64_t nk__rd_uv_slow(nk_rd *r);

static inline uint64_t nk__rd_le(nk_rd *r, int bytes)
{
    if (r->rc || r->n - r->pos < (size_t)bytes)
        return nk__rd_short(r, (size_t)bytes);
    uint64_t v = nk__get_le(r->p + r->pos, bytes);
    r->pos += (size_t)bytes;
    return v;
}

static inline uint8_t nk__rd_u8(nk_rd *r) { return (uint8_t)nk__rd_le(r, 1); }
static inline uint16_t nk__rd_u16(nk_rd *r) { return (uint16_t)nk__rd_le(r, 2); }
static inline uint32_t nk__rd_u32(nk_rd *r) { return (uint32_t)nk__rd_le(r, 4); }
static inline uint64_t nk__rd_u64(nk_rd *r) { return nk__rd_le(r, 8); }
static inline int32_t nk__rd_i32(nk_rd *r) { return (int32_t)(uint32_t)nk__rd_le(r, 4); }
static inline int64_t nk__rd_i64(nk_rd *r) { return (int64_t)nk__rd_le(r, 8); }
static inline double nk__rd_f64(nk_rd *r) { return nk__bits_f64(nk__rd_le(r, 8)); }

/* uv. Fails (NK_EFORMAT) on a truncated, overlong (a superfluous final zero
 * byte, more than 10 bytes) or out-of-range (above 2^64 - 1) encoding, so
 * every value has exactly one encoding. */
static inline uint64_t nk__rd_uv(nk_rd *r)
{
    if (!r->rc && r->n - r->pos >= 10) { /* up to 9 bytes here; the rest, and errors, in the slow path */
        const uint8_t *b = r->p + r->pos;
        uint64_t v = 0;
        for (int k = 0; k < 9; k++) {
            v |= (uint64_t)(b[k] & 0x7f) << (7 * k);
            if (b[k] < 0x80) {
                if (k && !b[k])
                    break;
                r->pos += (size_t)k + 1;
                return v;
            }
        }
    }
    return nk__rd_uv_slow(r);
}

static inline int64_t nk__rd_sv(nk_rd *r)
{
    uint64_t u = nk__rd_uv(r);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* uv and sv that must fit narrower fields: out of range is malformed. */
uint64_t nk__rd_too_wide(nk_rd *r, int64_t v, int is_signed, size_t at, int bits);

static inline uint32_t nk__rd_uv32(nk_rd *r)
{
    size_t at = r->pos;
    uint64_t v = nk__rd_uv(r);
    return v <= UINT32_MAX ? (uint32_t)v : (uint32_t)nk__rd_too_wide(r, (int64_t)v, 0, at, 32);
}

static inline uint16_t nk__rd_uv16(nk_rd *r)
{
    size_t at = r->pos;
    uint64_t v = nk__rd_uv(r);
    return v <= UINT16_MAX ? (uint16_t)v : (uint16_t)nk__rd_too_wide(r, (int64_t)v, 0, at, 16);
}

static inline int32_t nk__rd_sv32(nk_rd *r)
{
    size_t at = r->pos;
    int64_t v = nk__rd_sv(r);
    return v >= INT32_MIN && v <= INT32_MAX ? (int32_t)v : (int32_t)nk__rd_too_wide(r, v, 1, at, 32);
}

static inline double nk__rd_fc(nk_rd *r) { return nk__bits_f64(__builtin_bswap64(nk__rd_uv(r))); }
static inline double nk__rd_fx(nk_rd *r, double prev) { return nk__bits_f64(nk__rd_uv(r) ^ nk__f64_bits(prev)); }

/* Fields whose encoding the format version decides: fixed-width in version
 * 1, variable-length since version 2 (readers keep reading version 1). */
static inline int nk__rd_v1(const nk_rd *r) { return r->version < 2; }
static inline uint16_t nk__rd_vu16(nk_rd *r) { return nk__rd_v1(r) ? nk__rd_u16(r) : nk__rd_uv16(r); }
static inline uint32_t nk__rd_vu32(nk_rd *r) { return nk__rd_v1(r) ? nk__rd_u32(r) : nk__rd_uv32(r); }
static inline uint64_t nk__rd_vu64(nk_rd *r) { return nk__rd_v1(r) ? nk__rd_u64(r) : nk__rd_uv(r); }
static inline int32_t nk__rd_vi32(nk_rd *r) { return nk__rd_v1(r) ? nk__rd_i32(r) : nk__rd_sv32(r); }
static inline int64_t nk__rd_vi64(nk_rd *r) { return nk__rd_v1(r) ? nk__rd_i64(r) : nk__rd_sv(r); }
static inline double nk__rd_vfc(nk_rd *r) { return nk__rd_v1(r) ? nk__rd_f64(r) : nk__rd_fc(r); }
static inline double nk__rd_vfx(nk_rd *r, double prev) { return nk__rd_v1(r) ? nk__rd_f64(r) : nk__rd_fx(r, prev); }
/* Bytes of the smallest encoding of an element: v1 (fixed) or later. */
static inline size_t nk__rd_vmin(const nk_rd *r, size_t v1, size_t later) { return nk__rd_v1(r) ? v1 : later; }

/* A string of at most max bytes without NUL, into a new allocation. */
char *nk__rd_str(nk_rd *r, size_t max, const char *what);
/* A string that must fit dst (cap includes the NUL). */
int nk__rd_str_into(nk_rd *r, char *dst, size_t cap, const char *what);
/* An element count, rejected when count * min_each exceeds what is left. */
uint32_t nk__rd_count(nk_rd *r, size_t min_each, const char *what);
/* The next section, which must carry tag: sub reads its payload. */
int nk__rd_section(nk_rd *r, const char tag[4], nk_rd *sub);
/* Fails when bytes are left over after a section's last field. */
int nk__rd_end(nk_rd *r);

/* ---- file container: header (magic, version, flags, content length,
 * checksum) followed by sections. */
uint64_t nk__checksum(const void *p, size_t n); /* XXH64, seed 0 */
void nk__file_begin(nk_wr *w, const char magic[8]);
void nk__file_finish(nk_wr *w); /* fills length and checksum */
/* Checks the header of data[0..n) against magic; what names the kind of
 * file in messages ("profile"). On success content points after the header. */
int nk__file_open(const uint8_t *data, size_t n, const char magic[8], const char *what, nk_rd *content,
                  char *err, size_t errlen);
int nk__file_read_all(const char *path, uint8_t **data, size_t *n, char *err, size_t errlen);
/* Files are written with nk__file_write / nk__file_write_atomic (core/atomicfile.h). */

/* ---- programs */

/* Appends the program's sections (PHDR TARG FILE LOCS LOOP BUFS INST) to w. */
int nk__program_encode(const nk_program *p, nk_wr *w);
/* The same in parts, for a writer that streams the instructions rather than
 * holding them: the subsections before INST, the INST records of
 * instructions i0..i1 (INST's header, length and count are the caller's),
 * the bytes of all of them (counted a chunk at a time), and the subsections
 * after INST. head, the INST section and tail are nk__program_encode's
 * bytes. */
int nk__program_encode_head(const nk_program *p, nk_wr *w);
void nk__program_encode_instrs(const nk_program *p, nk_wr *w, uint32_t i0, uint32_t i1);
int nk__program_instrs_bytes(const nk_program *p, uint64_t *bytes);
int nk__program_encode_tail(const nk_program *p, nk_wr *w);
/* head itself in parts: the subsections before BUFS, the BUFS records of
 * buffers b0..b1 (ids; 0 is not stored: BUFS's header, length and count are
 * the caller's) and the bytes of all of them. */
int nk__program_encode_head0(const nk_program *p, nk_wr *w);
void nk__program_encode_bufs(const nk_program *p, nk_wr *w, uint32_t b0, uint32_t b1);
int nk__program_bufs_bytes(const nk_program *p, uint64_t *bytes);
/* Reads those sections from r into a new program (owned = 1) and validates
 * it with nk__program_check. */
int nk__program_decode(nk_rd *r, nk_program **out);
/* Everything a later stage (scheduler output readers, executor, timing
 * model, viewer) trusts about a program; a message names the first problem. */
int nk__program_check(const nk_program *p, char *err, size_t errlen);
/* A deep copy (owned = 1) with its own copy of the target table. The
 * program is trusted as it is (traced, or decoded and checked). */
int nk__program_copy(const nk_program *p, nk_program **out);

#endif
