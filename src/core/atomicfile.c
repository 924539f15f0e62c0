/*
 * atomicfile.c - the one way nklab writes a file (see atomicfile.h): a
 * temporary file renamed over a regular target, devices and FIFOs written in
 * place, everything else refused; temporary files registered for a signal
 * handler to remove.
 */
#define _GNU_SOURCE /* sync_file_range */
#include "core/atomicfile.h"
#include "core/nkassert.h"
#include "nklab.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES 65536

static _Thread_local char last_error[384];
/* the same with the file's name: the library's one error channel for files */
static _Thread_local char last_public[384 + 512];

const char *nk__file_error(void) { return last_error; }

const char *nk_last_error(void) { return last_public; }

void nk__error_set(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_public, sizeof last_public, fmt, ap);
    va_end(ap);
}

/* ---- the registry of temporary files, read by signal handlers */

enum { SLOT_FREE, SLOT_FILLING, SLOT_LIVE };
static struct {
    atomic_int state;
    char path[PATH_MAX];
} slots[NK__TMP_SLOTS];

static int slot_claim(const char *path)
{
    if (strlen(path) >= PATH_MAX)
        return -1;
    for (int i = 0; i < NK__TMP_SLOTS; i++) {
        int want = SLOT_FREE;
        if (atomic_compare_exchange_strong(&slots[i].state, &want, SLOT_FILLING)) {
            strcpy(slots[i].path, path);
            atomic_store(&slots[i].state, SLOT_LIVE);
            return i;
        }
    }
    return -1;
}

static void slot_release(int i)
{
    NK_ASSERT(i < NK__TMP_SLOTS);
    if (i >= 0)
        atomic_store(&slots[i].state, SLOT_FREE);
}

void nk__tmpfiles_remove(void)
{
    for (int i = 0; i < NK__TMP_SLOTS; i++)
        if (atomic_load(&slots[i].state) == SLOT_LIVE)
            (void)unlink(slots[i].path);
}

int nk__tmpfiles_count(void)
{
    int n = 0;
    for (int i = 0; i < NK__TMP_SLOTS; i++)
        n += atomic_load(&slots[i].state) == SLOT_LIVE;
    return n;
}

/* Creating a temporary file and registering it, or renaming it and
 * unregistering it, happen with every signal blocked: a handler never sees a
 * file that exists unregistered, nor a registered name that now names the
 * target. */
static void block_signals(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

static void restore_signals(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

/* ---- messages */

static int failf(nk__afile *f, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* f's failure as this thread's last error, errno its first's. */
static void record_here(const nk__afile *f)
{
    snprintf(last_error, sizeof last_error, "%s", f->msg);
    const char *name = f->shown ? f->shown : f->target;
    nk__error_set("%.500s: %s", name ? name : "(a file)", f->msg);
    errno = f->err;
}

/* Records why f failed (first reason wins), in f and this thread's last
 * error; leaves errno at the first failure's (e for a first one). */
static int failf(nk__afile *f, int e, const char *fmt, ...)
{
    if (!f->msg[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->msg, sizeof f->msg, fmt, ap);
        va_end(ap);
        f->err = e;
    }
    f->failed = 1;
    record_here(f);
    return NK_EIO;
}

/* ---- names */

/* 12 characters of [a-z0-9] from the kernel's random source (getrandom, else
 * /dev/urandom, else a mix of the clock, the pid and a counter: O_EXCL keeps
 * even that safe, merely guessable). */
static void random_suffix(char out[13])
{
    static const char alpha[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    static atomic_uint counter;
    unsigned char r[12];
    ssize_t got = getrandom(r, sizeof r, GRND_NONBLOCK);
    if (got != (ssize_t)sizeof r) {
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        got = fd >= 0 ? read(fd, r, sizeof r) : -1;
        if (fd >= 0)
            close(fd);
    }
    if (got != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 16) ^
                     atomic_fetch_add(&counter, 1u) ^ (uint64_t)(uintptr_t)out;
        for (size_t i = 0; i < sizeof r; i++) {
            x += 0x9e3779b97f4a7c15u; /* splitmix64 */
            uint64_t z = x;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
            r[i] = (unsigned char)(z ^ (z >> 31));
        }
    }
    for (int i = 0; i < 12; i++)
        out[i] = alpha[r[i] % 36];
    out[12] = 0;
}

/* The directory part of path ("." for none) and its last component. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static const char *type_name(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket" : S_ISBLK(m) ? "a block device"
         : S_ISCHR(m) ? "a character device" : S_ISFIFO(m) ? "a FIFO" : S_ISLNK(m) ? "a symbolic link"
         : "not a regular file";
}

static int under_dev_or_proc(const char *path) { return !strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6); }

/* ---- opening */

static int open_through(nk__afile *f, const char *path, int truncate)
{
    int fd;
    do
        fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | (truncate ? O_TRUNC : 0));
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return failf(f, errno, "%s", strerror(errno));
    f->fd = fd;
    f->through = 1;
    return NK_OK;
}

static int open_temp(nk__afile *f, const struct stat *old)
{
    char *dir = dir_of(f->target);
    const char *base = base_of(f->target);
    if (!dir)
        return failf(f, ENOMEM, "out of memory");
    if (!*base) {
        free(dir);
        return failf(f, EISDIR, "is a directory");
    }
    size_t cap = strlen(dir) + strlen(base) + 32;
    f->tmp = malloc(cap);
    if (!f->tmp) {
        free(dir);
        return failf(f, ENOMEM, "out of memory");
    }
    int fd = -1, e = 0;
    for (int attempt = 0; attempt < 32 && fd < 0; attempt++) {
        char r[13];
        random_suffix(r);
        /* a long name keeps its first 200 bytes: the temporary name stays under NAME_MAX */
        snprintf(f->tmp, cap, "%s/.%.200s.%s.tmp", dir, base, r);
        sigset_t old_mask;
        block_signals(&old_mask);
        fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        e = errno;
        if (fd >= 0)
            f->slot = slot_claim(f->tmp);
        restore_signals(&old_mask);
        if (fd < 0 && e != EEXIST && e != EINTR)
            break;
    }
    if (fd < 0) {
        if (e == ENOENT || e == ENOTDIR) /* no such directory: the usual message */
            failf(f, e, "%s", strerror(e));
        else
            failf(f, e, "cannot create a temporary file in '%s': %s", dir, strerror(e));
        free(dir);
        free(f->tmp);
        f->tmp = NULL;
        return NK_EIO;
    }
    free(dir);
    f->fd = fd;
    if (old) { /* the replaced file's mode, and owner when we may set it */
        if (geteuid() == 0 && (old->st_uid != geteuid() || old->st_gid != getegid()))
            (void)fchown(fd, old->st_uid, old->st_gid);
        if (fchmod(fd, old->st_mode & 07777))
            return failf(f, errno, "cannot set the mode of the temporary file: %s", strerror(errno));
    }
    return NK_OK;
}

int nk__afile_open(nk__afile *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->slot = -1;
    last_error[0] = 0;
    f->shown = path ? strdup(path) : NULL; /* NULL: messages name the target */
    if (!path || !*path) {
        failf(f, EINVAL, "no file name");
        return NK_EINVAL;
    }
    struct stat ls, st;
    int rc;
    if (lstat(path, &ls)) {
        if (errno != ENOENT)
            rc = failf(f, errno, "%s", strerror(errno));
        else if (!(f->target = strdup(path)))
            rc = failf(f, ENOMEM, "out of memory");
        else
            rc = open_temp(f, NULL);
        goto out;
    }
    if (S_ISLNK(ls.st_mode) && stat(path, &st)) {
        rc = errno == ENOENT ? failf(f, ENOENT, "is a symbolic link to a missing file")
                             : failf(f, errno, "%s", strerror(errno));
        goto out;
    }
    if (!S_ISLNK(ls.st_mode))
        st = ls;
    if (under_dev_or_proc(path) && (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        rc = open_through(f, path, S_ISREG(st.st_mode));
        goto out;
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
        rc = open_through(f, path, 0);
    } else if (S_ISDIR(st.st_mode)) {
        rc = failf(f, EISDIR, "is a directory");
    } else if (!S_ISREG(st.st_mode)) {
        rc = failf(f, EPERM, "is %s, not a regular file: refusing to write to it", type_name(st.st_mode));
    } else {
        f->target = S_ISLNK(ls.st_mode) ? realpath(path, NULL) : strdup(path);
        rc = f->target ? open_temp(f, &st) : failf(f, errno, "%s", strerror(errno));
    }
out:
    if (!rc && !(f->buf = malloc(BUF_BYTES)))
        rc = failf(f, ENOMEM, "out of memory");
    if (rc)
        nk__afile_abort(f);
    return rc;
}

/* ---- writing */

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* A large file's pages are sent to the disk as it is written, 4 MiB at a
 * time, not all at its fsync, which then waits for the last few only: the
 * 8x matmul's 126 MB profile, 70 ms of fsync after its last write, is now
 * 2 ms, for 12 ms of these calls spread over the writes (its 16 MB 1x,
 * 11 ms: 3 ms and 1 ms). The write-back is started, not waited for; where a
 * file system cannot, the call fails and the fsync does it all. */
#define KICK_BYTES ((uint64_t)4 << 20)

static void wrote(nk__afile *f, size_t n)
{
    f->written += n;
    if (f->through || f->written - f->kicked < KICK_BYTES)
        return;
    (void)sync_file_range(f->fd, (off_t)f->kicked, (off_t)(f->written - f->kicked), SYNC_FILE_RANGE_WRITE);
    f->kicked = f->written;
}

static int flush_buf(nk__afile *f)
{
    if (f->nbuf && write_all(f->fd, f->buf, f->nbuf))
        return failf(f, errno, "%s", strerror(errno));
    wrote(f, f->nbuf);
    f->nbuf = 0;
    return NK_OK;
}

int nk__afile_write(nk__afile *f, const void *p, size_t n)
{
    if (f->failed || f->fd < 0)
        return NK_EIO;
    if (f->nbuf + n <= BUF_BYTES) {
        memcpy(f->buf + f->nbuf, p, n);
        f->nbuf += n;
        return NK_OK;
    }
    if (flush_buf(f))
        return NK_EIO;
    if (n >= BUF_BYTES) {
        if (write_all(f->fd, p, n))
            return failf(f, errno, "%s", strerror(errno));
        wrote(f, n);
        return NK_OK;
    }
    memcpy(f->buf, p, n);
    f->nbuf = n;
    return NK_OK;
}

/* Makes the rename durable; best effort (some filesystems refuse to sync a
 * directory). */
static void sync_dir_of(const char *path)
{
    char *dir = dir_of(path);
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

static void release(nk__afile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    free(f->target);
    free(f->tmp);
    free(f->buf);
    free(f->shown);
    f->target = f->tmp = f->shown = NULL;
    f->buf = NULL;
    f->nbuf = 0;
}

void nk__afile_abort(nk__afile *f)
{
    /* a write that failed on another thread (the profile writer's) recorded
     * its reason in that thread's last error: it is this one's too (not once
     * released: an abort after a failed open, which aborted already) */
    if (f->failed && f->msg[0] && (f->shown || f->target))
        record_here(f);
    int e = errno;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->tmp)
        (void)unlink(f->tmp);
    slot_release(f->slot);
    f->slot = -1;
    release(f);
    errno = e;
}

int nk__afile_commit(nk__afile *f)
{
    if (f->fd < 0)
        return f->msg[0] ? NK_EIO : failf(f, EBADF, "not open");
    if (f->failed && f->msg[0])
        record_here(f); /* (as in abort) */
    int rc = f->failed ? NK_EIO : flush_buf(f);
    if (f->through) {
        int e = close(f->fd) ? errno : 0;
        f->fd = -1;
        if (!rc && e)
            rc = failf(f, e, "%s", strerror(e));
        release(f);
        return rc;
    }
    if (!rc && fsync(f->fd))
        rc = failf(f, errno, "%s", strerror(errno));
    if (!rc) {
        int e = close(f->fd) ? errno : 0;
        f->fd = -1;
        if (e)
            rc = failf(f, e, "%s", strerror(e));
    }
    /* the target changed into something that is not a regular file while we wrote */
    struct stat st;
    if (!rc && !lstat(f->target, &st) && !S_ISREG(st.st_mode))
        rc = failf(f, EPERM, "became %s while it was written: refusing to replace it", type_name(st.st_mode));
    if (!rc) {
        sigset_t old;
        block_signals(&old);
        int bad = rename(f->tmp, f->target);
        int e = errno;
        if (!bad) {
            slot_release(f->slot);
            f->slot = -1;
            free(f->tmp);
            f->tmp = NULL;
        }
        restore_signals(&old);
        if (bad)
            rc = failf(f, e, "cannot rename the temporary file over it: %s", strerror(e));
        else
            sync_dir_of(f->target);
    }
    if (rc)
        nk__afile_abort(f);
    else
        release(f);
    return rc;
}

/* ---- whole files */

int nk__file_write(const char *path, const void *data, size_t n, char *err, size_t errlen)
{
    nk__afile f;
    int rc = nk__afile_open(&f, path);
    if (!rc && n)
        rc = nk__afile_write(&f, data, n);
    if (!rc)
        rc = nk__afile_commit(&f);
    else
        nk__afile_abort(&f);
    if (rc && err && errlen)
        snprintf(err, errlen, "%s", f.msg);
    return rc;
}

int nk__file_write_atomic(const char *path, const void *data, size_t n)
{
    return nk__file_write(path, data, n, NULL, 0);
}

int nk__fd_write_all(int fd, const void *data, size_t n)
{
    if (!write_all(fd, data, n))
        return NK_OK;
    int e = errno;
    snprintf(last_error, sizeof last_error, "%s", strerror(e));
    if (fd == 1)
        nk__error_set("standard output: %s", last_error);
    else
        nk__error_set("file descriptor %d: %s", fd, last_error);
    errno = e;
    return NK_EIO;
}

int nk__afile_fail(nk__afile *f, int e) { return failf(f, e, "%s", strerror(e)); }
