/*
 * atomicfile.h - how every file nklab writes is written: program files,
 * profiles, viewer pages, exports, .npy outputs, cache entries.
 *
 * The target decides:
 *   - a regular file, or no file yet: replaced atomically. The data goes to a
 *     new temporary file in the target's directory, created with
 *     O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC under an unpredictable name
 *     (".NAME.XXXXXXXXXXXX.tmp", 12 random characters), so a name planted in
 *     advance is never followed or overwritten. It is fsync'ed, renamed over
 *     the target and the directory fsync'ed. Until the rename the old file is
 *     untouched: a full disk, a failed write or a kill leaves it as it was. The
 *     new file gets 0666 & ~umask, or the mode (and, for root, the owner) of
 *     the file it replaces. Hard links to the old file keep the old content.
 *   - a symbolic link: followed; the file it names is replaced as above and
 *     the link kept. A link to a missing file is refused.
 *   - a character device or a FIFO (/dev/null, /dev/full, a named pipe): written
 *     in place (opened without O_CREAT or O_TRUNC; a FIFO waits for its
 *     reader, as every writer of a pipe does), never renamed over. So is any
 *     existing name under /dev/ or /proc/ (/dev/stdout redirected to a file is
 *     truncated and written like the shell's `>`).
 *   - a directory, a socket or a block device: refused, nothing written.
 *
 * Errors: the functions return NK_OK, NK_EINVAL (no path) or NK_EIO, and on
 * NK_EIO leave errno at the cause and a one-line reason that does not repeat
 * the path ("No space left on device", "is a directory", "cannot create a
 * temporary file in 'out': Permission denied") in the afile, in err when
 * given, and in nk__file_error() (per thread: the last failure of any writer);
 * nk_last_error() (nklab.h) has the same reason after the path as the caller
 * named it ("out/p.nkp: No space left on device").
 * A failure removes the temporary file on every path.
 *
 * Signals: each temporary file is registered while it exists (signals are
 * blocked around its creation and its rename, so no window leaves one
 * unregistered). The library installs no signal handler; a program's handler
 * for SIGINT/SIGTERM calls nk__tmpfiles_remove() (async-signal-safe: unlink
 * only) and then re-raises the signal. At most NK__TMP_SLOTS temporary files
 * are registered at once; more still work, without that cleanup.
 */
#ifndef NK_CORE_ATOMICFILE_H
#define NK_CORE_ATOMICFILE_H

#include <stddef.h>
#include <stdint.h>

#define NK__TMP_SLOTS 32

typedef struct nk__afile {
    int fd;           /* -1 when not open */
    int through;      /* 1: written in place (device, FIFO, /dev or /proc name) */
    int slot;         /* the temporary file's registry slot, -1 for none */
    int failed;       /* a write has failed: commit aborts */
    char *target;     /* the file renamed over (links resolved) */
    char *tmp;        /* the temporary file; NULL when written in place */
    char *shown;      /* the path as the caller named it, for messages */
    unsigned char *buf; /* writes are gathered into 64 KiB blocks */
    size_t nbuf;
    uint64_t written; /* bytes handed to the file so far */
    uint64_t kicked;  /* of them, those whose write-back has been started */
    int err;          /* the errno of the first failure */
    char msg[384];    /* why it failed; "" while it has not */
} nk__afile;

/* Opens path for writing as described above. On failure nothing is left
 * behind and f->msg says why. */
int nk__afile_open(nk__afile *f, const char *path);
/* Appends n bytes. A failure is remembered: later writes do nothing and
 * commit fails (and removes the temporary file). */
int nk__afile_write(nk__afile *f, const void *p, size_t n);
/* Flushes, fsyncs, renames over the target and fsyncs its directory (in
 * place: flushes and closes). On failure the temporary file is removed and
 * the target keeps its old content. Frees f's resources either way. */
int nk__afile_commit(nk__afile *f);
/* Gives up: removes the temporary file, frees f. Safe after a failed open or
 * a commit, and on a zeroed afile. */
void nk__afile_abort(nk__afile *f);

/* The whole of data[0..n) to path (open, write, commit). err (may be NULL)
 * receives the reason of a failure. */
int nk__file_write(const char *path, const void *data, size_t n, char *err, size_t errlen);
/* As nk__file_write, the reason in nk__file_error() and errno only. */
int nk__file_write_atomic(const char *path, const void *data, size_t n);
/* All of data[0..n) to an open descriptor (standard output), retrying short
 * writes and EINTR; NK_EIO with errno and nk__file_error() on failure. */
int nk__fd_write_all(int fd, const void *data, size_t n);

/* The reason of this thread's last failed write ("" when none failed). */
const char *nk__file_error(void);
/* Sets nk_last_error()'s text (for a failure outside an afile). */
void nk__error_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Records that an operation of the caller's on f's descriptor failed with
 * errno e (as a failed write does); returns NK_EIO. */
int nk__afile_fail(nk__afile *f, int e);

/* Unlinks every registered temporary file. Async-signal-safe: for a
 * program's SIGINT/SIGTERM handler, which then re-raises the signal. */
void nk__tmpfiles_remove(void);
/* Registered temporary files right now (tests). */
int nk__tmpfiles_count(void);

#endif
