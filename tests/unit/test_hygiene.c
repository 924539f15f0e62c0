/*
 * test_hygiene.c - the library leaves the host process alone: it reads no
 * environment variable and changes no OpenBLAS setting (its thread count is
 * the host's); the threads it uses come from nk_options.threads.
 *
 * The test binary links the library statically, so the functions defined here
 * take the place of libc's getenv, OpenBLAS's openblas_set_num_threads and
 * (outside the sanitizer build, whose runtime wraps it) pthread_create for
 * every call the library makes by name. OpenBLAS itself is reached through
 * dlsym (src/exec/blas.c), which this cannot see: tests/cli/test_symbols.sh
 * checks that the library names no OpenBLAS setting at all.
 */
#define _GNU_SOURCE
#include "test.h"

#include "kernels.h"
#include "nklab.h"
#include "nkint.h"
#include "profile_fixture.h"
#include "profile/profile.h"
#include "sched/program_io.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HYG_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define HYG_ASAN 1
#endif

extern char **environ;

static int armed;           /* counting the library's calls */
static int getenv_calls, blas_calls;
static char getenv_names[256];

char *getenv(const char *name)
{
    if (armed) {
        getenv_calls++;
        size_t n = strlen(getenv_names);
        snprintf(getenv_names + n, sizeof getenv_names - n, "%s ", name);
    }
    size_t len = strlen(name);
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, name, len) && (*e)[len] == '=')
            return *e + len + 1;
    return NULL;
}

void openblas_set_num_threads(int n);
void openblas_set_num_threads(int n)
{
    (void)n;
    if (armed)
        blas_calls++;
}

#ifndef HYG_ASAN
static int threads_created;
/* while armed, the creations [fail_from, fail_from + fail_n) of the run
 * (counted from 0 in create_calls) fail with EAGAIN, as when a process
 * is out of threads */
static int fail_from = -1, fail_n, create_calls;
int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
    if (armed) {
        int k = __atomic_fetch_add(&create_calls, 1, __ATOMIC_RELAXED);
        if (fail_from >= 0 && k >= fail_from && k < fail_from + fail_n)
            return EAGAIN;
        __atomic_fetch_add(&threads_created, 1, __ATOMIC_RELAXED);
    }
    return real(t, attr, fn, arg);
}
#endif

/* A built-in kernel compiled with threads, run, profiled, summarised and
 * looked at by the insights; returns the number of failures. */
static int run_kernel(const char *name, int threads)
{
    const nk_kernel_info *ki = nk_builtin_kernel(name);
    if (!ki)
        return 1;
    nk_kernel *k = nk_kernel_new(name, ki->fn);
    nk_array args[NK_KERNEL_MAX_ARGS];
    memset(args, 0, sizeof args);
    int bad = !k || nk_kernel_example_args(ki, 1, args) != 0;
    nk_options o = {0};
    memcpy(o.grid, ki->grid, sizeof o.grid);
    o.threads = threads;
    nk_array outs[NK_KERNEL_MAX_OUTS];
    int nouts = 0;
    if (!bad && nk_call(k, args, ki->nargs, &o, outs, NK_KERNEL_MAX_OUTS, &nouts))
        bad = 1;
    for (int i = 0; i < nouts; i++)
        nk_array_free(&outs[i]);
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    char *text = NULL;
    if (!bad && (nk_kernel_compile(k, args, ki->nargs, &o, &p) || nk_profile_capture(p, NULL, &pr)))
        bad = 1;
    if (!bad && !nk_profile_summary(pr, name, 0, &text)) {
        free(text);
        text = NULL;
    }
    if (!bad && !nk_profile_insights(pr, 0, &text))
        free(text);
    nk_profile_free(pr);
    for (int i = 0; i < ki->nargs; i++)
        nk_array_free(&args[i]);
    nk_kernel_free(k);
    return bad;
}

static void *blas_thread(void *arg)
{
    (void)arg;
    armed = 1;
    int bad = run_kernel("matmul_basic", 0);
    armed = 0;
    return (void *)(intptr_t)bad;
}

TEST(hygiene_no_environment_and_no_blas_setting)
{
    setenv("NK_THREADS", "1", 1);
    setenv("NK_PROFILE_FIXED_TIME", "0", 1);
    getenv_calls = blas_calls = 0;
    getenv_names[0] = 0;
    /* on a thread of its own: a first execution on a thread is where the
     * library once set OpenBLAS to one thread */
    pthread_t th;
    void *bad = (void *)1;
    CHECK_INT(pthread_create(&th, NULL, blas_thread, NULL), 0);
    pthread_join(th, &bad);
    unsetenv("NK_THREADS");
    unsetenv("NK_PROFILE_FIXED_TIME");
    CHECK_INT((intptr_t)bad, 0);
    CHECK_INT(blas_calls, 0);
    CHECK_INT(getenv_calls, 0);
    if (getenv_calls)
        printf("  getenv called for: %s\n", getenv_names);
}

#ifndef HYG_ASAN
/* Counts the threads started by compiling, running and profiling kernel
 * name with nk_options.threads = threads. */
static int threads_for(const char *name, int threads)
{
    threads_created = 0;
    armed = 1;
    int bad = run_kernel(name, threads);
    armed = 0;
    CHECK_INT(bad, 0);
    return threads_created;
}

TEST(hygiene_threads_come_from_the_options)
{
    /* 1: everything on the calling thread, whatever NK_THREADS says */
    setenv("NK_THREADS", "4", 1);
    CHECK_INT(threads_for("softmax", 1), 0);
    unsetenv("NK_THREADS");
    /* 3: the scheduler's candidates and the timeline's counters in parallel */
    CHECK(threads_for("softmax", 3) > 0);
    /* 0: the processors online (NK_THREADS=1 is the CLI's, not the library's) */
    setenv("NK_THREADS", "1", 1);
    int n = threads_for("softmax", 0);
    unsetenv("NK_THREADS");
    if (sysconf(_SC_NPROCESSORS_ONLN) > 1)
        CHECK(n > 0);
    else
        CHECK_INT(n, 0);
}

/* The program and profile of a kernel compiled and captured with
 * threads (0 when something failed): digested as their files' bytes. */
static uint64_t compiled_digest(const nk_kernel_info *ki, const nk_array *args, int threads)
{
    nk_kernel *k = nk_kernel_new(ki->name, ki->fn);
    nk_options o = {0};
    o.target = ki->grid[0] ? "trn2" : "trn1";
    o.threads = threads;
    memcpy(o.grid, ki->grid, sizeof o.grid);
    const nk_program *p = NULL;
    nk_profile *pr = NULL;
    uint64_t h = 0;
    nk_wr w = {0};
    if (k && !nk_kernel_compile(k, args, ki->nargs, &o, &p) && !nk_profile_capture(p, NULL, &pr)) {
        nk_profile_set_created(pr, 0);
        if (!nk__program_encode(p, &w) && !nk__profile_encode(pr, &w)) {
            h = 0xcbf29ce484222325ull;
            for (size_t i = 0; i < w.n; i++)
                h = (h ^ w.p[i]) * 0x100000001b3ull;
        }
    }
    nk__wr_free(&w);
    nk_profile_free(pr);
    nk_kernel_free(k);
    return h;
}

/* A thread the library cannot start changes nothing: its work is done on
 * the calling thread. With four threads asked for and the first, second,
 * third, first two or every creation failing, the scheduler's candidates
 * (an 8,000-instruction matmul has three; on two threads, the first
 * policy's graph following the list pass), the untimed schedule's helpers
 * (the same matmul taken as too large to time: the list's durations) and
 * the timeline's counters give the same program and profile as one thread.
 * Where a run makes only two creations (the timed matmul on two threads,
 * the untimed one), the cases past the second are left out. */
TEST(hygiene_threads_that_fail_to_start_change_nothing)
{
    static const int fails[][2] = {{0, 1}, {1, 1}, {2, 1}, {0, 2}, {0, 1000}};
    const char *names[] = {"matmul_tiled", "attention_fwd", "spmd_matmul", "matmul_tiled"};
    uint32_t timed_max = nk__sched_timed_max;
    for (int n = 0; n < 4; n++) {
        const nk_kernel_info *ki = nk_builtin_kernel(names[n]);
        nk_array args[NK_KERNEL_MAX_ARGS];
        memset(args, 0, sizeof args);
        int big = n == 0 || n == 3; /* matmul_tiled by shape only, 8,000+ instructions */
        nk__sched_timed_max = n == 3 ? 0 : timed_max;
        if (big) {
            args[0] = (nk_array){NK_BF16, 2, {2048, 4096}, NULL};
            args[1] = (nk_array){NK_BF16, 2, {2048, 4096}, NULL};
        } else if (nk_kernel_example_args(ki, 1, args)) {
            CHECK(0);
            continue;
        }
        uint64_t want = compiled_digest(ki, args, 1);
        CHECK(want != 0);
        /* on four threads (the pool of candidates), and for the timed matmul
         * on two (the first list policy's graph following the list pass:
         * two creations there, that and the counters') */
        uint32_t follow_min = nk__sched_follow_min;
        for (int two = 0; two < (n == 0 ? 2 : 1); two++)
            for (size_t f = 0; f < sizeof fails / sizeof *fails; f++) {
                if ((two || n == 3) && fails[f][0] >= 2)
                    continue;
                nk__sched_follow_min = two ? 0 : follow_min;
                fail_from = fails[f][0];
                fail_n = fails[f][1];
                create_calls = 0;
                armed = 1;
                uint64_t got = compiled_digest(ki, args, two ? 2 : 4);
                armed = 0;
                fail_from = -1;
                nk__sched_follow_min = follow_min;
                if (got != want)
                    nk_test_fail(__FILE__, __LINE__,
                                 "%s, %d threads: creations %d..%d failing: a different program or profile", ki->name,
                                 two ? 2 : 4, fails[f][0], fails[f][0] + fails[f][1] - 1);
                CHECK(create_calls > fails[f][0]); /* the failure was met */
            }
        if (!big)
            for (int a = 0; a < ki->nargs; a++)
                nk_array_free(&args[a]);
    }
    nk__sched_timed_max = timed_max;
}
#endif

/* NK_ASSERT is on in the sanitizer build (NK_DEBUG) and compiled out in the
 * others: a program whose buffer table lost its entries breaks the
 * invariants nk__program_assert checks. */
TEST(hygiene_assertions_in_debug_builds_only)
{
    nk_kernel *k;
    const nk_program *p = fx_compile_exp(&k, 130, 64);
    if (!p) {
        CHECK(0);
        return;
    }
    nk_program bad = *p; /* shares p's arrays, which it only reads */
    bad.nbufs = 1;
    int fd[2];
    CHECK_INT(pipe(fd), 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        nk__program_assert(&bad);
        _exit(0);
    }
    close(fd[1]);
    char msg[512] = "";
    ssize_t n = read(fd[0], msg, sizeof msg - 1);
    msg[n > 0 ? n : 0] = 0;
    close(fd[0]);
    int st = 0;
    CHECK_INT(waitpid(pid, &st, 0), pid);
#ifdef NK_DEBUG
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
    CHECK_CONTAINS(msg, "nklab: invariant broken at src/sched/check.c:");
#else
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_STR(msg, "");
#endif
    nk__program_assert(p); /* a program the compile step made keeps them */
    nk_kernel_free(k);
}
