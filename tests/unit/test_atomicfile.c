/*
 * test_atomicfile.c - the one writer of every output file: atomic
 * replacement of regular files (mode kept, old content surviving a failed
 * write), unpredictable temporary names that a planted symlink cannot
 * redirect, devices and FIFOs written in place and never renamed over,
 * directories, sockets and dangling links refused, and the registry of
 * temporary files that a signal handler empties.
 */
#include "test.h"
#include "core/atomicfile.h"
#include "nklab.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

static const char *at(const char *name)
{
    static char p[4][320];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/nklab_afile_XXXXXX");
    if (!mkdtemp(dir))
        nk_test_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
}

/* Entries of the scratch directory other than . and .. */
static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

static void teardown(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(at(e->d_name));
    if (d)
        closedir(d);
    rmdir(dir);
}

static void put_text(const char *path, const char *s)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fputs(s, f);
    fclose(f);
}

static char *text(const char *path) { return nk_test_read_file(path); }

TEST(afile_new_file_mode_and_no_leftovers)
{
    setup();
    mode_t um = umask(022);
    CHECK_INT(nk__file_write(at("a.txt"), "hello", 5, NULL, 0), NK_OK);
    umask(um);
    char *s = text(at("a.txt"));
    CHECK_STR(s, "hello");
    free(s);
    struct stat st;
    CHECK_INT(stat(at("a.txt"), &st), 0);
    CHECK_INT(st.st_mode & 07777, 0644);
    CHECK_INT(entries(), 1); /* no temporary file left */
    CHECK_INT(nk__tmpfiles_count(), 0);
    teardown();
}

TEST(afile_replace_keeps_mode)
{
    setup();
    put_text(at("b.txt"), "old content");
    chmod(at("b.txt"), 0600);
    CHECK_INT(nk__file_write(at("b.txt"), "new", 3, NULL, 0), NK_OK);
    char *s = text(at("b.txt"));
    CHECK_STR(s, "new");
    free(s);
    struct stat st;
    CHECK_INT(stat(at("b.txt"), &st), 0);
    CHECK_INT(st.st_mode & 07777, 0600);
    CHECK_INT(entries(), 1);
    teardown();
}

/* Large writes go through the 64 KiB gathering buffer and around it. */
TEST(afile_streamed_writes)
{
    setup();
    nk__afile f;
    CHECK_INT(nk__afile_open(&f, at("big.bin")), NK_OK);
    static unsigned char chunk[70000];
    size_t total = 0;
    for (int i = 0; i < 40; i++) {
        size_t n = (size_t)(i * 1777) % sizeof chunk;
        memset(chunk, i, n);
        CHECK_INT(nk__afile_write(&f, chunk, n), NK_OK);
        total += n;
    }
    CHECK(f.tmp != NULL);
    CHECK_INT(access(at("big.bin"), F_OK), -1); /* not there before the commit */
    CHECK_INT(nk__afile_commit(&f), NK_OK);
    struct stat st;
    CHECK_INT(stat(at("big.bin"), &st), 0);
    CHECK_INT(st.st_size, (long long)total);
    FILE *r = fopen(at("big.bin"), "rb");
    int ok = r != NULL;
    for (int i = 0; ok && i < 40; i++) {
        size_t n = (size_t)(i * 1777) % sizeof chunk;
        for (size_t j = 0; ok && j < n; j++)
            ok = fgetc(r) == i;
    }
    if (r)
        fclose(r);
    CHECK(ok);
    teardown();
}

/* A regular file's write-back is started every 4 MiB as it is written
 * (commit's fsync then has little left); a file written in place is left
 * to its device. The bytes are the same either way. */
TEST(afile_write_back_started_as_written)
{
    setup();
    nk__afile f;
    CHECK_INT(nk__afile_open(&f, at("wb.bin")), NK_OK);
    static unsigned char block[65536];
    for (int i = 0; i < 150; i++) { /* 9.375 MiB */
        memset(block, i, sizeof block);
        CHECK_INT(nk__afile_write(&f, block, sizeof block), NK_OK);
    }
    CHECK_INT(f.written, 150 * 65536);
    CHECK_INT(f.kicked, 8 << 20);
    CHECK_INT(nk__afile_commit(&f), NK_OK);
    FILE *r = fopen(at("wb.bin"), "rb");
    int ok = r != NULL;
    for (int i = 0; ok && i < 150; i++)
        for (int j = 0; ok && j < 65536; j++)
            ok = fgetc(r) == i;
    ok = ok && fgetc(r) == EOF;
    if (r)
        fclose(r);
    CHECK(ok);
    nk__afile d;
    CHECK_INT(nk__afile_open(&d, "/dev/null"), NK_OK);
    CHECK(d.through);
    for (int i = 0; i < 150; i++)
        CHECK_INT(nk__afile_write(&d, block, sizeof block), NK_OK);
    CHECK_INT(d.kicked, 0);
    CHECK_INT(nk__afile_commit(&d), NK_OK);
    teardown();
}

/* The temporary file is ".NAME.<12 random characters>.tmp", different every
 * time, and names planted at the old predictable names are never touched. */
TEST(afile_temp_names_unpredictable_planted_links_not_followed)
{
    setup();
    put_text(at("victim"), "precious");
    char planted[3][192];
    snprintf(planted[0], sizeof planted[0], "%s.tmp-%ld-0", at("out.nkp"), (long)getpid());
    snprintf(planted[1], sizeof planted[1], "%s.tmp%ld", at("out.nkp"), (long)getpid());
    snprintf(planted[2], sizeof planted[2], "%s.%ld.tmp", at("out.nkp"), (long)getpid());
    for (int i = 0; i < 3; i++)
        CHECK_INT(symlink(at("victim"), planted[i]), 0);
    nk__afile a, b;
    CHECK_INT(nk__afile_open(&a, at("out.nkp")), NK_OK);
    CHECK_INT(nk__afile_open(&b, at("out.nkp")), NK_OK);
    CHECK(a.tmp && b.tmp && strcmp(a.tmp, b.tmp));
    char pre[192];
    snprintf(pre, sizeof pre, "%s/.out.nkp.", dir);
    for (int k = 0; k < 2; k++) {
        const char *t = k ? b.tmp : a.tmp;
        CHECK(t && !strncmp(t, pre, strlen(pre)) && strlen(t) == strlen(pre) + 12 + 4 &&
              !strcmp(t + strlen(t) - 4, ".tmp"));
    }
    CHECK_INT(nk__tmpfiles_count(), 2);
    nk__afile_abort(&b);
    CHECK_INT(nk__afile_write(&a, "data", 4), NK_OK);
    CHECK_INT(nk__afile_commit(&a), NK_OK);
    CHECK_INT(nk__tmpfiles_count(), 0);
    char *s = text(at("victim"));
    CHECK_STR(s, "precious");
    free(s);
    s = text(at("out.nkp"));
    CHECK_STR(s, "data");
    free(s);
    struct stat st;
    for (int i = 0; i < 3; i++)
        CHECK(lstat(planted[i], &st) == 0 && S_ISLNK(st.st_mode));
    CHECK_INT(entries(), 5); /* victim, out.nkp, the three planted links */
    teardown();
}

/* A symlink at the target is followed: the file it names is replaced, the
 * link stays a link. A dangling one is refused. */
TEST(afile_symlink_target)
{
    setup();
    put_text(at("real"), "old");
    CHECK_INT(symlink("real", at("link")), 0);
    CHECK_INT(nk__file_write(at("link"), "new", 3, NULL, 0), NK_OK);
    struct stat st;
    CHECK(lstat(at("link"), &st) == 0 && S_ISLNK(st.st_mode));
    char *s = text(at("real"));
    CHECK_STR(s, "new");
    free(s);
    CHECK_INT(symlink("missing", at("dangling")), 0);
    char err[256];
    CHECK_INT(nk__file_write(at("dangling"), "x", 1, err, sizeof err), NK_EIO);
    CHECK_STR(err, "is a symbolic link to a missing file");
    CHECK_INT(access(at("missing"), F_OK), -1);
    CHECK_INT(entries(), 3);
    teardown();
}

TEST(afile_refuses_directory_and_socket)
{
    setup();
    char err[256];
    CHECK_INT(mkdir(at("d"), 0755), 0);
    CHECK_INT(nk__file_write(at("d"), "x", 1, err, sizeof err), NK_EIO);
    CHECK_STR(err, "is a directory");
    CHECK_INT(errno, EISDIR);
    CHECK_STR(nk__file_error(), "is a directory");
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", at("sock"));
    CHECK_INT(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
    CHECK_INT(nk__file_write(at("sock"), "x", 1, err, sizeof err), NK_EIO);
    CHECK_STR(err, "is a socket, not a regular file: refusing to write to it");
    struct stat st;
    CHECK(lstat(at("sock"), &st) == 0 && S_ISSOCK(st.st_mode));
    close(s);
    rmdir(at("d"));
    CHECK_INT(entries(), 1);
    CHECK_INT(nk__file_write(NULL, "x", 1, err, sizeof err), NK_EINVAL);
    CHECK_INT(nk__file_write(at("nodir/x"), "x", 1, err, sizeof err), NK_EIO);
    CHECK_STR(err, "No such file or directory");
    teardown();
}

/* Character devices are written in place: a null device takes the bytes, a
 * full one reports its ENOSPC, and both stay the devices they are. As root
 * the nodes are made in the scratch directory (1,3 and 1,7: what /dev/null
 * and /dev/full are), so that a regression that renames over its target
 * replaces those and not the system's; otherwise /dev/null and /dev/full,
 * which a user cannot replace. */
TEST(afile_char_devices_written_in_place)
{
    setup();
    struct stat st;
    char err[256];
    const char *null = "/dev/null", *full = "/dev/full";
    if (geteuid() == 0 && !mknod(at("null"), S_IFCHR | 0666, makedev(1, 3)) &&
        !mknod(at("full"), S_IFCHR | 0666, makedev(1, 7))) {
        null = at("null");
        full = at("full");
    }
    CHECK_INT(nk__file_write(null, "abc", 3, err, sizeof err), NK_OK);
    CHECK(stat(null, &st) == 0 && S_ISCHR(st.st_mode));
    if (stat(full, &st) == 0) {
        CHECK_INT(nk__file_write(full, "abc", 3, err, sizeof err), NK_EIO);
        CHECK_STR(err, "No space left on device");
        CHECK_INT(errno, ENOSPC);
        CHECK(stat(full, &st) == 0 && S_ISCHR(st.st_mode));
    }
    CHECK_INT(nk__tmpfiles_count(), 0);
    unlink(at("null"));
    unlink(at("full"));
    CHECK_INT(entries(), 0);
    teardown();
}

/* A FIFO with a reader receives the bytes and stays a FIFO. */
TEST(afile_fifo_written_in_place)
{
    setup();
    CHECK_INT(mkfifo(at("p"), 0600), 0);
    int rd = open(at("p"), O_RDONLY | O_NONBLOCK);
    CHECK(rd >= 0);
    CHECK_INT(nk__file_write(at("p"), "through", 7, NULL, 0), NK_OK);
    char got[16] = {0};
    CHECK_INT(read(rd, got, sizeof got - 1), 7);
    CHECK_STR(got, "through");
    close(rd);
    struct stat st;
    CHECK(lstat(at("p"), &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK_INT(entries(), 1);
    teardown();
}

/* A write that fails (here the kernel's file-size limit, EFBIG, standing in
 * for a full disk: the same failed write(2)) leaves the old file intact and
 * no temporary file behind. */
TEST(afile_failed_write_keeps_old_file)
{
    setup();
    put_text(at("keep.npy"), "the old file");
    struct rlimit old;
    getrlimit(RLIMIT_FSIZE, &old);
    void (*oldh)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {4096, old.rlim_max};
    CHECK_INT(setrlimit(RLIMIT_FSIZE, &lim), 0);
    static char big[200000];
    memset(big, 'x', sizeof big);
    char err[256];
    int rc = nk__file_write(at("keep.npy"), big, sizeof big, err, sizeof err);
    int e = errno;
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, oldh);
    CHECK_INT(rc, NK_EIO);
    CHECK_INT(e, EFBIG);
    CHECK_STR(err, strerror(EFBIG));
    char *s = text(at("keep.npy"));
    CHECK_STR(s, "the old file");
    free(s);
    CHECK_INT(entries(), 1);
    CHECK_INT(nk__tmpfiles_count(), 0);
    teardown();
}

/* A write that fails on another thread (the profile writer's) is reported
 * on the thread that commits or aborts: its reason as that thread's last
 * error, errno as the write left it, the file named. */
static void *write_big(void *arg)
{
    static char big[200000];
    memset(big, 'x', sizeof big);
    nk__afile_write(arg, big, sizeof big);
    nk__afile_write(arg, big, sizeof big);
    return NULL;
}

TEST(afile_failure_on_another_thread_reported_here)
{
    setup();
    put_text(at("keep.nkp"), "the old file");
    struct rlimit old;
    getrlimit(RLIMIT_FSIZE, &old);
    void (*oldh)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {4096, old.rlim_max};
    for (int commit = 0; commit < 2; commit++) {
        nk__afile f;
        CHECK_INT(nk__afile_open(&f, at("keep.nkp")), NK_OK);
        nk__error_set("an earlier error");
        CHECK_INT(setrlimit(RLIMIT_FSIZE, &lim), 0);
        pthread_t th;
        CHECK_INT(pthread_create(&th, NULL, write_big, &f), 0);
        pthread_join(th, NULL);
        setrlimit(RLIMIT_FSIZE, &old);
        CHECK(f.failed);
        errno = 0;
        if (commit)
            CHECK_INT(nk__afile_commit(&f), NK_EIO);
        else
            nk__afile_abort(&f);
        CHECK_INT(errno, EFBIG);
        CHECK_STR(nk__file_error(), strerror(EFBIG));
        CHECK_CONTAINS(nk_last_error(), "keep.nkp");
        CHECK_CONTAINS(nk_last_error(), strerror(EFBIG));
    }
    signal(SIGXFSZ, oldh);
    char *s = text(at("keep.nkp"));
    CHECK_STR(s, "the old file");
    free(s);
    CHECK_INT(entries(), 1);
    CHECK_INT(nk__tmpfiles_count(), 0);
    teardown();
}

/* The registry: a live temporary file is listed, nk__tmpfiles_remove
 * unlinks it; in a child killed by SIGTERM, a handler that calls it and
 * re-raises leaves neither the temporary nor the target. */
static void on_term(int sig)
{
    nk__tmpfiles_remove();
    signal(sig, SIG_DFL);
    raise(sig);
}

TEST(afile_registry_and_signal)
{
    setup();
    nk__afile f;
    CHECK_INT(nk__afile_open(&f, at("t.html")), NK_OK);
    CHECK_INT(nk__tmpfiles_count(), 1);
    CHECK_INT(access(f.tmp, F_OK), 0);
    nk__tmpfiles_remove();
    CHECK_INT(access(f.tmp, F_OK), -1);
    nk__afile_abort(&f);
    CHECK_INT(nk__tmpfiles_count(), 0);
    CHECK_INT(entries(), 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGTERM, on_term);
        nk__afile g;
        if (nk__afile_open(&g, at("k.npy")) || nk__afile_write(&g, "partial", 7))
            _exit(3);
        raise(SIGTERM);
        _exit(4);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    CHECK_INT(entries(), 0);
    teardown();
}
