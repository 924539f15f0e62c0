/*
 * userkernel.c - kernels from the user's C files: `path/to/kernel.c:function`.
 *
 * The file is compiled with the system C compiler ($CC, else cc) into a
 * shared object against the nklab header next to this executable
 * (<bindir>/../include, true both in the build tree and after make install),
 * then loaded with dlopen; the kernel's nk_* calls resolve to this executable
 * (linked with -rdynamic). The compiler's own diagnostics go straight to
 * stderr; a call to an undeclared function (a misspelt nk_* name) is an
 * error at its line, not an undefined symbol when the object is loaded.
 *
 * The cache. Compiled objects are kept by a hash of the source, the header,
 * the compiler and the flags, so an unchanged file is not recompiled. Each
 * object kNAME.so has a manifest kNAME.so.deps, written (atomically, as every
 * file nklab writes) after the object: the object's size and FNV-1a 64 hash,
 * then every file it was built from (the compiler's -MMD list: the kernel's
 * file and each header it includes) with its hash. An entry is used only
 * when its manifest reads back whole, every file listed still has its
 * recorded content and the object has its recorded hash; otherwise (a header
 * edited, a truncated or corrupted object, an empty manifest) it is rebuilt.
 * The hash detects corruption, not an attack: another user is kept out by
 * the directory itself, which must be the user's own and writable by no one
 * else, below directories no one else can rename it from
 * (check_cache_dir). There is no fallback to a shared directory.
 *
 * Crashes. While the kernel function runs (a trampoline around it) the
 * signals of a crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) end the
 * process with a message naming the kernel's file and the last source line
 * the tracer saw, and exit status 1. Outside the kernel they do what they
 * did before.
 *
 * `path/to/kernel.py:function` names an NKI Python kernel: the nklab command
 * runs such a command under Python (cmd_python.c), where the Python
 * extension sets nk_cli_py_loader.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "userkernel.h"

#include "core/atomicfile.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

nk_py_kernel_loader nk_cli_py_loader;

/* Does the parameter list opening at q (a '(') end in a body, `) {`
 * (comments between them allowed), rather than `);`, on whatever line its
 * ')' is? */
static int opens_body(const char *q, const char *end)
{
    int depth = 0;
    for (; q < end; q++) {
        if (*q == '(')
            depth++;
        else if (*q == ')' && --depth == 0)
            break;
    }
    if (q < end)
        q++;
    for (;;) { /* blanks and comments */
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'))
            q++;
        if (end - q >= 2 && q[0] == '/' && q[1] == '/')
            while (q < end && *q != '\n')
                q++;
        else if (end - q >= 2 && q[0] == '/' && q[1] == '*') {
            for (q += 2; end - q >= 2 && !(q[0] == '*' && q[1] == '/'); q++)
                ;
            q = end - q >= 2 ? q + 2 : end;
        } else
            break;
    }
    return q < end && *q == '{';
}

/* The line of `void FUNCTION(` that defines FUNCTION (its parameter list
 * followed by a body, not by ';' as in a prototype), 0 when there is none:
 * where profiles place the kernel's inputs. */
static int definition_line(const char *src, size_t n, const char *function)
{
    size_t fl = strlen(function);
    int line = 1;
    for (size_t i = 0; i < n; line++) {
        size_t j = i;
        while (j < n && src[j] != '\n')
            j++;
        const char *p = src + i, *end = src + j;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (end - p > 5 && !strncmp(p, "void", 4) && (p[4] == ' ' || p[4] == '\t')) {
            p += 4;
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            const char *q = p + fl;
            if ((size_t)(end - p) > fl && !strncmp(p, function, fl)) {
                while (q < end && (*q == ' ' || *q == '\t'))
                    q++;
                if (q < end && *q == '(' && opens_body(q, src + n))
                    return line;
            }
        }
        i = j + 1;
    }
    return 0;
}
nk_py_kernel_params nk_cli_py_params;

#define CACHE_MAGIC "nklab kernel cache 1\n"

int nk_cli_is_py_kernel(const char *spec)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec)
        return 0;
    size_t n = (size_t)(colon - spec);
    return n >= 3 && !strncmp(spec + n - 3, ".py", 3);
}

int nk_cli_is_user_kernel(const char *spec)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec)
        return 0;
    size_t n = (size_t)(colon - spec);
    return (n >= 2 && spec[n - 2] == '.' && spec[n - 1] == 'c') || nk_cli_is_py_kernel(spec);
}

/* All of an open file; closes fd. */
static int read_fd(int fd, char **out, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            char *q = realloc(buf, cap * 2);
            if (!q) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = q;
            cap *= 2;
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            free(buf);
            buf = NULL;
            break;
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    int e = errno;
    close(fd);
    errno = e;
    if (!buf)
        return -1;
    buf[n] = 0; /* (the loop ends with room: a read of 0 bytes follows a full buffer) */
    *out = buf;
    *len = n;
    return 0;
}

static int read_all(const char *path, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -1 : read_fd(fd, out, len);
}

/* A cache file: a regular file of this user's, not a link. */
static int read_own(const char *path, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return read_fd(fd, out, len);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

#define FNV0 1469598103934665603ull

/* <dir of this executable>/../include (installed, or build/nklab), else
 * <dir>/../../include (build/NAME/nklab in a build tree), if it holds nklab.h. */
static int include_dir(char *out, size_t n)
{
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0)
        return -1;
    exe[k] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    static const char *const up[] = {"/../include", "/../../include"};
    for (size_t i = 0; i < sizeof up / sizeof up[0]; i++) {
        char dir[PATH_MAX], hdr[PATH_MAX + 16];
        if (snprintf(dir, sizeof dir, "%s%s", exe, up[i]) >= (int)sizeof dir)
            return -1;
        snprintf(hdr, sizeof hdr, "%s/nklab.h", dir);
        if (access(hdr, R_OK) == 0) {
            /* messages name the header by its plain path */
            if (!realpath(dir, out) && snprintf(out, n, "%s", dir) >= (int)n)
                return -1;
            return 0;
        }
    }
    return -1;
}

static int mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0700) && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, 0700) && errno != EEXIST ? -1 : 0;
}

/* $NKLAB_CACHE_DIR, else $XDG_CACHE_HOME/nklab, else $HOME/.cache/nklab
 * (XDG_CACHE_HOME and HOME only as absolute paths, as the XDG rules say).
 * Without any of them there is no cache directory: a shared fallback such as
 * /tmp/nklab-UID could be created first by another user. */
static int cache_dir(char *out, size_t n, char *err, size_t errlen)
{
    const char *x = getenv("NKLAB_CACHE_DIR");
    int w;
    if (x && *x)
        w = snprintf(out, n, "%s", x);
    else if ((x = getenv("XDG_CACHE_HOME")) && x[0] == '/')
        w = snprintf(out, n, "%s/nklab", x);
    else if ((x = getenv("HOME")) && x[0] == '/')
        w = snprintf(out, n, "%s/.cache/nklab", x);
    else {
        snprintf(err, errlen, "no directory for compiled kernels: HOME and XDG_CACHE_HOME are unset (or not "
                 "absolute paths); set NKLAB_CACHE_DIR to a directory of your own");
        return -1;
    }
    if (w < 0 || (size_t)w >= n) {
        snprintf(err, errlen, "the cache directory's path is too long: %s", x);
        return -1;
    }
    return 0;
}

static const char *writers(mode_t m)
{
    return (m & 020) && (m & 002) ? "its group and others" : m & 020 ? "its group" : "others";
}

/* The cache directory holds code nklab runs, so no one but the user may
 * put anything in it: with links resolved, it is a directory owned by the
 * user and writable by no one else, and every directory above it is owned
 * by the user or root and writable by no one else unless sticky (/tmp):
 * otherwise its owner could replace the cache directory itself. */
static int check_cache_dir(const char *dir, char *err, size_t errlen)
{
    char real[PATH_MAX];
    if (!realpath(dir, real)) {
        snprintf(err, errlen, "cannot use the cache directory %s: %s", dir, strerror(errno));
        return -1;
    }
    uid_t me = geteuid();
    struct stat st;
    if (lstat(real, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "the cache directory %s is not a directory", dir);
        return -1;
    }
    if (st.st_uid != me) {
        snprintf(err, errlen, "the cache directory %s belongs to uid %u, not to you (uid %u): nklab loads only "
                 "kernels it compiled into a directory of your own; set NKLAB_CACHE_DIR to one",
                 dir, (unsigned)st.st_uid, (unsigned)me);
        return -1;
    }
    if (st.st_mode & 022) {
        snprintf(err, errlen, "the cache directory %s is writable by %s (mode %04o): anyone who can write there "
                 "could plant a kernel; chmod go-w it, or set NKLAB_CACHE_DIR to a private directory",
                 dir, writers(st.st_mode), (unsigned)(st.st_mode & 07777));
        return -1;
    }
    while (strcmp(real, "/")) {
        char *slash = strrchr(real, '/');
        if (slash == real)
            slash[1] = 0;
        else
            *slash = 0;
        if (lstat(real, &st)) {
            snprintf(err, errlen, "cannot use the cache directory %s: %s: %s", dir, real, strerror(errno));
            return -1;
        }
        if (st.st_uid != me && st.st_uid != 0) {
            snprintf(err, errlen, "the cache directory %s is inside %s, which belongs to uid %u: its owner could "
                     "replace the cache; set NKLAB_CACHE_DIR to a directory of your own", dir, real,
                     (unsigned)st.st_uid);
            return -1;
        }
        if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)) {
            snprintf(err, errlen, "the cache directory %s is inside %s, which is writable by %s (mode %04o): they "
                     "could replace the cache; set NKLAB_CACHE_DIR to a directory of your own", dir, real,
                     writers(st.st_mode), (unsigned)(st.st_mode & 07777));
            return -1;
        }
    }
    return 0;
}

/* Runs argv; quiet: the compiler's output goes nowhere (a probe). */
static int run_compiler(char *const argv[], int quiet, char *err, size_t errlen)
{
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (quiet)
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        snprintf(err, errlen, "cannot run the C compiler '%s': %s (set CC to a C compiler)", argv[0], strerror(rc));
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            snprintf(err, errlen, "waiting for the C compiler: %s", strerror(errno));
            return -1;
        }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "compiling failed (%s exited with status %d); the compiler's messages are above",
                 argv[0], WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    return 0;
}

/* The flag that keeps a diagnostic at the user's line instead of following
 * every macro expansion into nklab.h: clang's or gcc's spelling, by asking
 * the compiler which it is. */
static const char *macro_flag(const char *cc, const char *bdir)
{
    char out[PATH_MAX + 16], err[256];
    snprintf(out, sizeof out, "%s/probe.h", bdir);
    char *argv[] = {(char *)cc, "-dM", "-E", "-x", "c", "/dev/null", "-o", out, NULL};
    const char *flag = NULL;
    char *text;
    size_t n;
    if (!run_compiler(argv, 1, err, sizeof err) && !read_all(out, &text, &n)) {
        int clang = 0, gnu = 0;
        for (char *line = text; line && line < text + n; line = memchr(line, '\n', (size_t)(text + n - line))) {
            line += *line == '\n';
            clang |= !strncmp(line, "#define __clang__ ", 18);
            gnu |= !strncmp(line, "#define __GNUC__ ", 17);
        }
        free(text);
        flag = clang ? "-fmacro-backtrace-limit=1" : gnu ? "-ftrack-macro-expansion=0" : NULL;
    }
    unlink(out);
    return flag;
}

/* The manifest of a compiled object: CACHE_MAGIC, "so HASH SIZE" for the
 * object, then "HASH PATH" for every file it was built from (from the
 * compiler's -MMD output), so that an edit to any header the kernel
 * includes, not only to its own file, triggers a rebuild. */
static char *manifest(const char *dfile, uint64_t so_hash, size_t so_len)
{
    char *d;
    size_t n;
    if (read_all(dfile, &d, &n))
        return NULL;
    size_t cap = 256, len = 0;
    char *m = malloc(cap);
    if (m)
        len = (size_t)snprintf(m, cap, "%sso %016llx %zu\n", CACHE_MAGIC, (unsigned long long)so_hash, so_len);
    size_t i = 0, ndeps = 0;
    while (i < n && d[i] != ':') /* skip the target */
        i++;
    i++;
    while (m && i < n) {
        char dep[PATH_MAX];
        size_t k = 0;
        while (i < n && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || (d[i] == '\\' && i + 1 < n && d[i + 1] == '\n')))
            i += d[i] == '\\' ? 2 : 1;
        while (i < n && d[i] != ' ' && d[i] != '\t' && d[i] != '\n' && k + 1 < sizeof dep) {
            if (d[i] == '\\' && i + 1 < n && d[i + 1] == ' ')
                i++;
            dep[k++] = d[i++];
        }
        dep[k] = 0;
        if (k == 0 || dep[k - 1] == ':')
            continue;
        char *text;
        size_t tn;
        if (read_all(dep, &text, &tn)) { /* a file the object depends on, unreadable: never fresh */
            free(m);
            m = NULL;
            break;
        }
        uint64_t h = fnv(FNV0, text, tn);
        free(text);
        if (len + k + 32 > cap) {
            char *q = realloc(m, cap = 2 * cap + k + 32);
            if (!q) {
                free(m);
                m = NULL;
                break;
            }
            m = q;
        }
        len += (size_t)snprintf(m + len, cap - len, "%016llx %s\n", (unsigned long long)h, dep);
        ndeps++;
    }
    free(d);
    if (m && !ndeps) { /* at least the kernel's own file */
        free(m);
        m = NULL;
    }
    return m;
}

/* The entry so is usable: its manifest reads back whole, every file listed
 * still has the content it was built from, and the object has its recorded
 * size and hash. */
static int entry_fresh(const char *so)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s.deps", so);
    char *m, *obj;
    size_t mn, on;
    if (read_own(path, &m, &mn))
        return 0;
    int fresh = 0;
    size_t magic = sizeof CACHE_MAGIC - 1;
    unsigned long long want;
    size_t want_len;
    char *p = m + magic, *end = m + mn;
    int used;
    if (mn == 0 || m[mn - 1] != '\n' || memchr(m, 0, mn) || mn < magic || memcmp(m, CACHE_MAGIC, magic) ||
        sscanf(p, "so %16llx %zu\n%n", &want, &want_len, &used) != 2)
        goto out;
    m[mn - 1] = 0; /* the last line's newline: lines end at '\n' or the end */
    p += used;
    int ndeps = 0;
    while (p < end && *p) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        unsigned long long h;
        int at = 0;
        if (sscanf(p, "%16llx %n", &h, &at) != 1 || !at || !p[at])
            goto out;
        char *text;
        size_t tn;
        if (read_all(p + at, &text, &tn))
            goto out;
        int same = fnv(FNV0, text, tn) == h;
        free(text);
        if (!same)
            goto out;
        ndeps++;
        p = nl ? nl + 1 : end;
    }
    if (!ndeps || read_own(so, &obj, &on))
        goto out;
    fresh = on == want_len && fnv(FNV0, obj, on) == want;
    free(obj);
out:
    free(m);
    return fresh;
}

/* Removes the build directory and what the compiler left in it. */
static void remove_build_dir(const char *bdir)
{
    static const char *const names[] = {"k.so", "k.d", "probe.h"};
    char path[PATH_MAX + 16];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", bdir, names[i]);
        unlink(path);
    }
    rmdir(bdir);
}

/* Compiles the kernel into a private build directory, then stores the
 * object and, after it, its manifest, each atomically. */
static int build(const nk_user_kernel *uk, const char *cc, const char *inc, const char *dir, const char *so,
                 int verbose, char *err, size_t errlen)
{
    char bdir[PATH_MAX], out[PATH_MAX + 8], dfile[PATH_MAX + 8], incflag[PATH_MAX + 4];
    snprintf(bdir, sizeof bdir, "%s/.build-XXXXXX", dir);
    if (!mkdtemp(bdir)) {
        snprintf(err, errlen, "cannot create a build directory in %s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(out, sizeof out, "%s/k.so", bdir);
    snprintf(dfile, sizeof dfile, "%s/k.d", bdir);
    snprintf(incflag, sizeof incflag, "-I%s", inc);
    const char *mflag = macro_flag(cc, bdir);
    if (verbose)
        fprintf(stderr, "compiling %s ...\n", uk->path);
    char *argv[24];
    int a = 0;
    static const char *const flags[] = {"-std=c11", "-O2", "-g", "-fPIC", "-shared", "-Wall", "-Wextra",
                                        "-Werror=implicit-function-declaration"};
    argv[a++] = (char *)cc;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        argv[a++] = (char *)flags[i];
    if (mflag)
        argv[a++] = (char *)mflag;
    char *rest[] = {incflag, "-MMD", "-MF", dfile, "-o", out, (char *)uk->path, NULL};
    memcpy(argv + a, rest, sizeof rest);
    int rc = run_compiler(argv, 0, err, errlen);
    char *obj = NULL, *man = NULL;
    size_t on = 0;
    if (!rc && read_all(out, &obj, &on)) {
        snprintf(err, errlen, "cannot read the compiled kernel %s: %s", out, strerror(errno));
        rc = -1;
    }
    if (!rc && !(man = manifest(dfile, fnv(FNV0, obj, on), on))) {
        snprintf(err, errlen, "cannot list the files %s was compiled from (%s)", uk->path, dfile);
        rc = -1;
    }
    char deps[PATH_MAX + 32], why[384];
    snprintf(deps, sizeof deps, "%s.deps", so);
    if (!rc && (nk__file_write(so, obj, on, why, sizeof why) ||
                nk__file_write(deps, man, strlen(man), why, sizeof why))) {
        snprintf(err, errlen, "cannot store the compiled kernel in %s: %s", dir, why);
        rc = -1;
    }
    free(obj);
    free(man);
    remove_build_dir(bdir);
    return rc;
}

/* ---- is the symbol a function of the kernel's own object? */

typedef struct {
    const void *addr;
    const char *so;
    int found, exec, ours;
} seg_query;

static int find_segment(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    seg_query *q = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, a = (uintptr_t)q->addr;
        if (ph->p_type != PT_LOAD || a < lo || a - lo >= ph->p_memsz)
            continue;
        q->found = 1;
        q->exec = (ph->p_flags & PF_X) != 0;
        q->ours = info->dlpi_name && !strcmp(info->dlpi_name, q->so);
        return 1;
    }
    return 0;
}

/* ---- crashes while the kernel runs */

static nk_kernel_fn uk_fn;                 /* the loaded kernel function */
static char uk_path[PATH_MAX], uk_name[128];
static nk_ctx *volatile uk_nc;             /* its tracing context while it runs */
static volatile sig_atomic_t uk_running;

static const int crash_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define NCRASH (int)(sizeof crash_sigs / sizeof crash_sigs[0])
static struct sigaction crash_old[NCRASH];
static int crash_installed;

static void uk_trampoline(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    uk_nc = nc;
    uk_running = 1;
    uk_fn(nc, args, nargs);
    uk_running = 0;
    uk_nc = NULL;
}

static size_t put(char *b, size_t n, size_t cap, const char *s)
{
    while (*s && n + 1 < cap)
        b[n++] = *s++;
    return n;
}

static size_t put_int(char *b, size_t n, size_t cap, long v)
{
    char d[24];
    int k = 0;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    do
        d[k++] = (char)('0' + u % 10);
    while ((u /= 10) && k < 23);
    if (v < 0)
        d[k++] = '-';
    while (k && n + 1 < cap)
        b[n++] = d[--k];
    return n;
}

/* Async-signal-safe: formats by hand, write(2), _exit(2). */
static void on_crash(int sig, siginfo_t *si, void *uctx)
{
    (void)uctx;
    int idx = 0;
    while (idx < NCRASH - 1 && crash_sigs[idx] != sig)
        idx++;
    if (!uk_running) { /* not the kernel's: what the signal did before */
        sigaction(sig, &crash_old[idx], NULL);
        if (si->si_code <= 0) /* sent (kill, raise, abort): again; a fault recurs on return */
            raise(sig);
        return;
    }
    nk__tmpfiles_remove();
    static const char *const what[] = {
        "SIGSEGV, an invalid memory access",
        "SIGBUS, a bus error",
        "SIGILL, an illegal instruction",
        ("SIGFPE, an arithmetic error such as an integer division by zero"),
        "SIGABRT, abort() or a failed assert",
    };
    char b[PATH_MAX * 2 + 512];
    size_t n = 0, cap = sizeof b;
    n = put(b, n, cap, "nklab: ");
    n = put(b, n, cap, uk_path);
    n = put(b, n, cap, ": the kernel '");
    n = put(b, n, cap, uk_name);
    n = put(b, n, cap, "' crashed (");
    n = put(b, n, cap, what[idx]);
    n = put(b, n, cap, ")");
    nk_ctx *nc = uk_nc;
    nk_loc l = nc ? nk__last_loc(nc) : (nk_loc){NULL, 0};
    if (l.file && l.line > 0) {
        n = put(b, n, cap, "; the last line it traced: ");
        n = put(b, n, cap, l.file);
        n = put(b, n, cap, ":");
        n = put_int(b, n, cap, l.line);
    } else {
        n = put(b, n, cap, " before tracing anything");
    }
    n = put(b, n, cap, "\n");
    for (size_t off = 0; off < n;) {
        ssize_t w = write(2, b + off, n - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    _exit(1);
}

static void install_crash_handlers(void)
{
    if (crash_installed)
        return;
    /* a kernel that overflows its stack still gets its message (an
     * alternate stack already set, as Python's faulthandler sets one, stays) */
    static char altstack[1 << 16];
    stack_t cur, ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    if (!sigaltstack(NULL, &cur) && (cur.ss_flags & SS_DISABLE))
        sigaltstack(&ss, NULL);
    for (int i = 0; i < NCRASH; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_crash;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK; /* a fault in the handler itself: the default action */
        sigemptyset(&sa.sa_mask);
        sigaction(crash_sigs[i], &sa, &crash_old[i]);
    }
    crash_installed = 1;
}

static void remove_crash_handlers(void)
{
    if (!crash_installed)
        return;
    for (int i = 0; i < NCRASH; i++)
        sigaction(crash_sigs[i], &crash_old[i], NULL);
    crash_installed = 0;
}

int nk_cli_load_user_kernel(const char *spec, nk_user_kernel *uk, int verbose, char *err, size_t errlen)
{
    memset(uk, 0, sizeof *uk);
    const char *colon = strrchr(spec, ':');
    if (!nk_cli_is_user_kernel(spec) || !colon[1]) {
        snprintf(err, errlen, "'%s' is not FILE.c:FUNCTION", spec);
        return -1;
    }
    snprintf(uk->path, sizeof uk->path, "%.*s", (int)(colon - spec), spec);
    snprintf(uk->function, sizeof uk->function, "%s", colon + 1);
    if (nk_cli_is_py_kernel(spec)) {
        if (!nk_cli_py_loader) {
            snprintf(err, errlen, "%s: a Python kernel runs under Python (nklab python ...)", spec);
            return -1;
        }
        return nk_cli_py_loader(uk->path, uk->function, &uk->fn, err, errlen);
    }
    for (const char *c = uk->function; *c; c++)
        if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (c > uk->function && *c >= '0' && *c <= '9'))) {
            snprintf(err, errlen, "'%s' is not a C function name", uk->function);
            return -1;
        }
    char *src = NULL, *hdr = NULL;
    size_t srclen = 0, hdrlen = 0;
    if (read_all(uk->path, &src, &srclen)) {
        snprintf(err, errlen, "cannot read %s: %s", uk->path, strerror(errno));
        return -1;
    }
    uk->decl_line = definition_line(src, srclen, uk->function);
    char inc[PATH_MAX], hpath[PATH_MAX + 16];
    if (include_dir(inc, sizeof inc)) {
        free(src);
        snprintf(err, errlen, "cannot find nklab.h next to this executable (expected <bindir>/../include)");
        return -1;
    }
    snprintf(hpath, sizeof hpath, "%s/nklab.h", inc);
    if (read_all(hpath, &hdr, &hdrlen)) {
        free(src);
        snprintf(err, errlen, "cannot read %s", hpath);
        return -1;
    }
    const char *cc = getenv("CC");
    if (!cc || !*cc)
        cc = "cc";
    /* the flags of build(); the macro-expansion flag follows the compiler */
    static const char flags[] = "-std=c11 -O2 -g -fPIC -shared -Wall -Wextra -Werror=implicit-function-declaration "
                                "macro-expansion-1";
    uint64_t h = FNV0;
    h = fnv(h, src, srclen);
    h = fnv(h, hdr, hdrlen);
    h = fnv(h, cc, strlen(cc));
    h = fnv(h, flags, sizeof flags);
    h = fnv(h, uk->path, strlen(uk->path)); /* __FILE__ is part of the object */
    free(src);
    free(hdr);
    char dir[PATH_MAX - 64], so[PATH_MAX];
    if (cache_dir(dir, sizeof dir, err, errlen))
        return -1;
    if (mkdirs(dir)) {
        snprintf(err, errlen, "cannot create the cache directory %s: %s (set NKLAB_CACHE_DIR to a directory of "
                 "your own)", dir, strerror(errno));
        return -1;
    }
    if (check_cache_dir(dir, err, errlen))
        return -1;
    snprintf(so, sizeof so, "%s/k%016llx.so", dir, (unsigned long long)h);
    if (!entry_fresh(so) && build(uk, cc, inc, dir, so, verbose, err, errlen))
        return -1;
    uk->handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!uk->handle) {
        snprintf(err, errlen, "cannot load the compiled kernel: %s", dlerror());
        return -1;
    }
    dlerror();
    void *sym = dlsym(uk->handle, uk->function);
    seg_query q = {sym, so, 0, 0, 0};
    if (sym)
        dl_iterate_phdr(find_segment, &q);
    if (!sym || !q.ours || !q.exec) {
        if (sym && q.ours)
            snprintf(err, errlen, "%s: '%s' is not a function but data (a variable or an array); kernels are "
                     "`void %s(nk_ctx *nc, const nk_tensor *args, int nargs)`", uk->path, uk->function,
                     uk->function);
        else
            snprintf(err, errlen, "%s has no function '%s' (kernels are `void %s(nk_ctx *nc, const nk_tensor *args, "
                     "int nargs)` and must not be static)", uk->path, uk->function, uk->function);
        dlclose(uk->handle);
        uk->handle = NULL;
        return -1;
    }
    /* POSIX guarantees object/function pointer conversion for dlsym results */
    memcpy(&uk_fn, &sym, sizeof uk_fn);
    snprintf(uk_path, sizeof uk_path, "%s", uk->path);
    snprintf(uk_name, sizeof uk_name, "%s", uk->function);
    uk->fn = uk_trampoline;
    install_crash_handlers();
    return 0;
}

void nk_cli_unload_user_kernel(nk_user_kernel *uk)
{
    if (uk->handle) {
        remove_crash_handlers();
        dlclose(uk->handle);
    }
    uk->handle = NULL;
}
