/*
 * test_progress.c - the published count one thread waits on
 * (sched/progress.h): every position is seen once it is there, with what
 * was written before it was published; an abandon ends a wait; a waiter
 * sleeps rather than spins.
 */
#include "test.h"

#include "sched/progress.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

typedef struct pub_job {
    nk__progress pg;
    uint32_t n, step, pause_every; /* publish every step positions; pause (0.2 ms) every pause_every */
    uint32_t *data;                /* n: data[k] = 3 k + 1, written before k is published */
    long first_sleep_ms;           /* before anything is published */
    uint32_t abandon_after;        /* abandon once this many are published (0: never) */
} pub_job;

static void sleep_ns(long ns)
{
    struct timespec t = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&t, &t))
        ;
}

static void *publisher(void *arg)
{
    pub_job *j = arg;
    if (j->first_sleep_ms)
        sleep_ns(j->first_sleep_ms * 1000000L);
    for (uint32_t k = 0; k < j->n; k++) {
        j->data[k] = 3 * k + 1;
        uint32_t made = k + 1;
        if (made % j->step == 0 || made == j->n)
            nk__progress_publish(&j->pg, made);
        if (j->pause_every && made % j->pause_every == 0)
            sleep_ns(200000);
        if (j->abandon_after && made == j->abandon_after) {
            nk__progress_abandon(&j->pg);
            return NULL;
        }
    }
    return NULL;
}

/* j's data made and its publisher started on *th: 0, else -1 (failed a check). */
static int start(pub_job *j, pthread_t *th)
{
    j->data = calloc(j->n, sizeof *j->data);
    CHECK(j->data != NULL);
    if (!j->data)
        return -1;
    int rc = pthread_create(th, NULL, publisher, j);
    CHECK_INT(rc, 0);
    if (rc)
        free(j->data);
    return rc ? -1 : 0;
}

static void finish(pub_job *j, pthread_t th)
{
    pthread_join(th, NULL);
    free(j->data);
}

static double thread_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

TEST(progress_every_position_with_its_data)
{
    enum { N = 200000 };
    pub_job j = {NK_PROGRESS_INIT, N, 7, 20000, NULL, 5, 0};
    pthread_t th;
    if (start(&j, &th))
        return;
    uint32_t have = 0, bad = 0, fails = 0, last = 0;
    for (uint32_t i = 0; i < N; i++) {
        if (i >= have) {
            if (nk__progress_wait(&j.pg, i, &have))
                fails++;
            if (have <= i || have < last)
                bad++;
            last = have;
        }
        if (j.data[i] != 3 * i + 1) /* written before its position was published */
            bad++;
    }
    finish(&j, th);
    CHECK_INT(fails, 0);
    CHECK_INT(bad, 0);
    CHECK_INT(have, N);
}

TEST(progress_abandon_ends_a_wait)
{
    pub_job j = {NK_PROGRESS_INIT, 1000, 10, 0, NULL, 20, 50};
    pthread_t th;
    if (start(&j, &th))
        return;
    uint32_t have = 0;
    CHECK_INT(nk__progress_wait(&j.pg, 5, &have), 0); /* there before the abandon */
    CHECK(have > 5);
    CHECK_INT(nk__progress_wait(&j.pg, 500, &have), 1); /* never will be */
    CHECK_INT(have, 50);
    CHECK_INT(nk__progress_wait(&j.pg, 40, &have), 0); /* what was published stays */
    finish(&j, th);
}

/* A waiter for 100 ms of nothing sleeps: its thread's CPU time is a small
 * part of the wait (a waiter that yields in a loop takes about all of it). */
TEST(progress_waiter_sleeps)
{
    pub_job j = {NK_PROGRESS_INIT, 10, 1, 0, NULL, 100, 0};
    pthread_t th;
    double c0 = thread_cpu(), w0 = wall();
    if (start(&j, &th))
        return;
    uint32_t have = 0;
    CHECK_INT(nk__progress_wait(&j.pg, 0, &have), 0);
    double cpu = thread_cpu() - c0, waited = wall() - w0;
    finish(&j, th);
    CHECK(waited >= 0.09);
    CHECK(cpu < 0.25 * waited);
}
