/*
 * spawn.h - what the benchmarks that time whole nklab commands share: a
 * command (or a function) in a child process, its wall time, CPU time, peak
 * resident memory and minor page faults.
 */
#ifndef NK_BENCH_SPAWN_H
#define NK_BENCH_SPAWN_H

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct run {
    double wall, cpu; /* seconds */
    long maxrss_kb;
    long minflt; /* minor page faults: first touches of fresh memory */
} run;

/* Runs argv in a child (argv NULL: the child returns fn(arg) as its exit
 * status instead), with extra environment entries env_add (NULL-terminated,
 * or NULL) and its standard output and error to out (NULL: discarded).
 * 0 when the child exits with status 0, -1 otherwise. */
static inline int spawn(char *const argv[], const char *const *env_add, const char *out, int (*fn)(void *), void *arg,
                        run *r)
{
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (!argv)
            _exit(fn(arg));
        for (int k = 0; env_add && env_add[k]; k++)
            putenv((char *)env_add[k]);
        int fd = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0)
        return -1;
    r->wall = now() - t0;
    r->cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
             1e-6 * (double)ru.ru_stime.tv_usec;
    r->maxrss_kb = ru.ru_maxrss;
    r->minflt = ru.ru_minflt;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

#endif
