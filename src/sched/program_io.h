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

/* Version of the container and of every section layout. Any change to a
 * layout bumps it; readers reject versions they do not know. */
#define NK_FORMAT_VERSION 1
#define NK_MAGIC_PROGRAM "NKLABPRG"
#define NK_MAGIC_PROFILE "NKLABPRF"
#define NK_FILE_HEADER_BYTES 32

/* Bounds the decoder enforces (beyond them a file is rejected). */
#define NK_IO_MAX_NAME 4096           /* a file path recorded in a program */
#define NK_IO_MAX_TEXT (64u << 20)    /* one source text */
#define NK_IO_MAX_HBM_BYTES (1ll << 40) /* one HBM tensor (assumed: above any device's HBM) */
#define NK_IO_MAX_STRIDE (1ll << 40)
#define NK_IO_DMA_QUEUES 16           /* [DMA]: 16 queues per DMA engine */
#define NK_IO_DMA_ENGINES 16          /* [DMA]: 16 DMA engines per NeuronCore */
#define NK_IO_MAX_LOOP_BUFS 32        /* the tracer's limit on buffers per tile */

/* ---- writer: grows a byte buffer; on allocation failure sets oom and
 * ignores later writes (checked once at the end). */
typedef struct nk_wr {
    uint8_t *p;
    size_t n, cap;
    int oom;
} nk_wr;

void nk__wr_bytes(nk_wr *w, const void *b, size_t n);
void nk__wr_u8(nk_wr *w, uint8_t v);
void nk__wr_u16(nk_wr *w, uint16_t v);
void nk__wr_u32(nk_wr *w, uint32_t v);
void nk__wr_u64(nk_wr *w, uint64_t v);
void nk__wr_i32(nk_wr *w, int32_t v);
void nk__wr_i64(nk_wr *w, int64_t v);
void nk__wr_f64(nk_wr *w, double v);
void nk__wr_str(nk_wr *w, const char *s); /* u32 length + bytes, no NUL */
/* A section: u32 tag, u64 length, payload. begin returns the position to
 * pass to end, which patches the length. */
size_t nk__wr_begin(nk_wr *w, const char tag[4]);
void nk__wr_end(nk_wr *w, size_t at);
void nk__wr_free(nk_wr *w);

/* ---- reader: every get checks the remaining length; the first failure is
 * recorded (rc and a message prefixed by the reader's context) and later
 * gets return zeros, so callers check rc once per block. */
typedef struct nk_rd {
    const uint8_t *p;
    size_t n, pos;
    int rc;
    char *err;
    size_t errlen;
    char ctx[48]; /* "PROG/BUFS" */
} nk_rd;

void nk__rd_init(nk_rd *r, const void *p, size_t n, char *err, size_t errlen);
int nk__rd_fail(nk_rd *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
uint8_t nk__rd_u8(nk_rd *r);
uint16_t nk__rd_u16(nk_rd *r);
uint32_t nk__rd_u32(nk_rd *r);
uint64_t nk__rd_u64(nk_rd *r);
int32_t nk__rd_i32(nk_rd *r);
int64_t nk__rd_i64(nk_rd *r);
double nk__rd_f64(nk_rd *r);
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
uint64_t nk__checksum(const void *p, size_t n); /* FNV-1a, 64 bits */
void nk__file_begin(nk_wr *w, const char magic[8]);
void nk__file_finish(nk_wr *w); /* fills length and checksum */
/* Checks the header of data[0..n) against magic; what names the kind of
 * file in messages ("profile"). On success content points after the header. */
int nk__file_open(const uint8_t *data, size_t n, const char magic[8], const char *what, nk_rd *content,
                  char *err, size_t errlen);
int nk__file_read_all(const char *path, uint8_t **data, size_t *n, char *err, size_t errlen);
/* Temporary file in the same directory, fsync, rename over path. */
int nk__file_write_atomic(const char *path, const void *data, size_t n);

/* ---- programs */

/* Appends the program's sections (PHDR FILE LOCS LOOP BUFS INST) to w. */
int nk__program_encode(const nk_program *p, nk_wr *w);
/* Reads those sections from r into a new program (owned = 1) and validates
 * it with nk__program_check. */
int nk__program_decode(nk_rd *r, nk_program **out);
/* Everything a later stage (scheduler output readers, executor, timing
 * model, viewer) trusts about a program; a message names the first problem. */
int nk__program_check(const nk_program *p, char *err, size_t errlen);
/* A deep copy (owned = 1) through encode and decode. */
int nk__program_copy(const nk_program *p, nk_program **out);

#endif
