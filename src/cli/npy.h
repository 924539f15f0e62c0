/*
 * npy.h - NumPy .npy files: a strict reader (versions 1.0, 2.0 and 3.0,
 * little-endian numeric dtypes, C order, 1 to 4 dims) that converts the values
 * to a chosen nklab dtype, and a writer of float32 files.
 *
 * Errors are one line naming the file and what is wrong ("x.npy: truncated
 * data: ..."), written to the caller's buffer; nothing here prints.
 */
#ifndef NK_NPY_H
#define NK_NPY_H

#include "nklab.h"

#include <stddef.h>
#include <stdint.h>

/* Largest header accepted: a 4-dim header is under 128 bytes; anything near
 * this size is not a file we wrote or numpy would write for such arrays. */
#define NK_NPY_MAX_HEADER 65536
/* Largest element count accepted (2^31): larger inputs are not something a
 * host run of a kernel can use, and the limit keeps byte counts far from
 * overflow. */
#define NK_NPY_MAX_ELEMS ((int64_t)1 << 31)

/* What a .npy header says. */
typedef struct nk_npy_info {
    int major, minor;   /* format version */
    char descr[8];      /* dtype as written, e.g. "<f4", "|b1" */
    int itemsize;       /* bytes per element */
    int ndim;
    int64_t shape[NK_MAXDIM];
    size_t data_offset; /* bytes before the data */
} nk_npy_info;

/* Reads path into out (allocated with nk_array_alloc, dtype want), converting
 * every value: floats through float32 with the library's rounding
 * (nk_convert_from_f32); integer targets directly, rounding to nearest even
 * and saturating (NaN to 0); bools as 0 and 1. info may be NULL. */
int nk_npy_read(const char *path, nk_dtype want, nk_array *out, nk_npy_info *info, char *err, size_t errlen);

/* "a FIFO", "a directory", ... for a st_mode (messages). */
const char *nk_cli_file_type(unsigned mode);

/* As nk_npy_read on the len bytes at buf; name labels the errors. */
int nk_npy_decode(const char *name, const void *buf, size_t len, nk_dtype want, nk_array *out,
                  nk_npy_info *info, char *err, size_t errlen);

/* Writes a as a float32 .npy file (version 1.0, C order), converting from its
 * dtype exactly (every nklab dtype widens to float32 except int32/uint32
 * beyond 2^24, which round to nearest). The file is written as every output
 * is (core/atomicfile.h): a regular file is replaced atomically, so a failed
 * write or a kill leaves the old file as it was; a device or FIFO is written
 * in place. On failure err holds the reason alone, without the path ("No
 * space left on device"), for the caller's "cannot write PATH: ..." line. */
int nk_npy_write(const char *path, const nk_array *a, char *err, size_t errlen);

#endif
