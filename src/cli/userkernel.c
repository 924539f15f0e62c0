/*
 * userkernel.c - kernels from the user's C files: `path/to/kernel.c:function`.
 *
 * The file is compiled with the system C compiler ($CC, else cc) into a
 * shared object against the nklab header next to this executable
 * (<bindir>/../include, true both in the build tree and after make install),
 * then loaded with dlopen; the kernel's nk_* calls resolve to this executable
 * (linked with -rdynamic). Compiled objects are cached by a hash of the
 * source, the header, the compiler and the flags, so an unchanged file is
 * not recompiled. The compiler's own diagnostics go straight to stderr.
 *
 * `path/to/kernel.py:function` names an NKI Python kernel: the nklab command
 * runs such a command under Python (cmd_python.c), where the Python
 * extension sets nk_cli_py_loader.
 */
#include "userkernel.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

nk_py_kernel_loader nk_cli_py_loader;

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

static int read_all(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
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
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0)
            break;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

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
        if (snprintf(out, n, "%s%s", exe, up[i]) >= (int)n)
            return -1;
        char hdr[PATH_MAX + 16];
        snprintf(hdr, sizeof hdr, "%s/nklab.h", out);
        if (access(hdr, R_OK) == 0)
            return 0;
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

static void cache_dir(char *out, size_t n)
{
    const char *x = getenv("NKLAB_CACHE_DIR");
    if (x && *x) {
        snprintf(out, n, "%s", x);
        return;
    }
    x = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (x && *x)
        snprintf(out, n, "%s/nklab", x);
    else if (home && *home)
        snprintf(out, n, "%s/.cache/nklab", home);
    else
        snprintf(out, n, "/tmp/nklab-%u", (unsigned)getuid());
}

static int run_compiler(char *const argv[], char *err, size_t errlen)
{
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
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

/* The files a compiled kernel was built from (the compiler's -MMD list),
 * kept beside the object as "HASH PATH" lines so that an edit to any header
 * the kernel includes, not only to its own file, triggers a rebuild. */
static uint64_t file_hash(const char *path, int *ok)
{
    char *buf;
    size_t n;
    *ok = read_all(path, &buf, &n) == 0;
    if (!*ok)
        return 0;
    uint64_t h = fnv(1469598103934665603ull, buf, n);
    free(buf);
    return h;
}

static int write_deps(const char *so, const char *dfile)
{
    char *d;
    size_t n;
    if (read_all(dfile, &d, &n))
        return -1;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s.deps", so);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(d);
        return -1;
    }
    size_t i = 0;
    while (i < n && d[i] != ':') /* skip the target */
        i++;
    i++;
    while (i < n) {
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
        if (k == 0 || (k > 0 && dep[k - 1] == ':'))
            continue;
        int ok;
        uint64_t h = file_hash(dep, &ok);
        if (ok)
            fprintf(f, "%016llx %s\n", (unsigned long long)h, dep);
    }
    free(d);
    return fclose(f) ? -1 : 0;
}

/* Every file listed beside the object still has the content it was built from. */
static int deps_fresh(const char *so)
{
    char path[PATH_MAX + 32], line[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s.deps", so);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int fresh = 1;
    while (fresh && fgets(line, sizeof line, f)) {
        unsigned long long want;
        char dep[PATH_MAX];
        if (sscanf(line, "%16llx %4095[^\n]", &want, dep) != 2) {
            fresh = 0;
            break;
        }
        int ok;
        fresh = file_hash(dep, &ok) == want && ok;
    }
    fclose(f);
    return fresh;
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
    static const char flags[] = "-std=c11 -O2 -g -fPIC -shared -Wall -Wextra";
    uint64_t h = 1469598103934665603ull;
    h = fnv(h, src, srclen);
    h = fnv(h, hdr, hdrlen);
    h = fnv(h, cc, strlen(cc));
    h = fnv(h, flags, sizeof flags);
    h = fnv(h, uk->path, strlen(uk->path)); /* __FILE__ is part of the object */
    free(src);
    free(hdr);
    char dir[PATH_MAX - 64], so[PATH_MAX];
    cache_dir(dir, sizeof dir);
    if (mkdirs(dir)) {
        snprintf(err, errlen, "cannot create the cache directory %s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(so, sizeof so, "%s/k%016llx.so", dir, (unsigned long long)h);
    if (access(so, R_OK) != 0 || !deps_fresh(so)) {
        char tmp[PATH_MAX + 32], dtmp[PATH_MAX + 40], incflag[PATH_MAX + 4];
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", so, (long)getpid());
        snprintf(dtmp, sizeof dtmp, "%s.%ld.d", so, (long)getpid());
        snprintf(incflag, sizeof incflag, "-I%s", inc);
        if (verbose)
            fprintf(stderr, "compiling %s ...\n", uk->path);
        char *argv[] = {(char *)cc, "-std=c11", "-O2", "-g", "-fPIC", "-shared", "-Wall", "-Wextra", incflag,
                        "-MMD", "-MF", dtmp, "-o", tmp, uk->path, NULL};
        if (run_compiler(argv, err, errlen)) {
            unlink(tmp);
            unlink(dtmp);
            return -1;
        }
        int bad = write_deps(so, dtmp);
        unlink(dtmp);
        if (bad || rename(tmp, so)) {
            snprintf(err, errlen, "cannot store the compiled kernel in %s: %s", so, strerror(errno));
            unlink(tmp);
            return -1;
        }
    }
    uk->handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!uk->handle) {
        snprintf(err, errlen, "cannot load the compiled kernel: %s", dlerror());
        return -1;
    }
    dlerror();
    void *sym = dlsym(uk->handle, uk->function);
    if (!sym) {
        snprintf(err, errlen, "%s has no function '%s' (kernels are `void %s(nk_ctx *nc, const nk_tensor *args, "
                 "int nargs)` and must not be static)", uk->path, uk->function, uk->function);
        dlclose(uk->handle);
        uk->handle = NULL;
        return -1;
    }
    /* POSIX guarantees object/function pointer conversion for dlsym results */
    memcpy(&uk->fn, &sym, sizeof uk->fn);
    return 0;
}

void nk_cli_unload_user_kernel(nk_user_kernel *uk)
{
    if (uk->handle)
        dlclose(uk->handle);
    uk->handle = NULL;
}
