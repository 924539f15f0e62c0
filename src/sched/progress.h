/*
 * progress.h - a count one thread publishes as it goes and one other thread
 * waits on: the positions of an order written so far (the list pass writes
 * it, the graph of that order is derived behind it).
 *
 * The waiter spins briefly, then sleeps on a futex instead of yielding in
 * a loop: on a 2-core machine a spinning waiter takes a core the other
 * threads (and other processes) could use, for as long as the publisher's
 * set-up runs (tens of milliseconds at a million instructions). A publish
 * costs a system call only while the waiter is asleep.
 */
#ifndef NK_SCHED_PROGRESS_H
#define NK_SCHED_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct nk__progress {
    _Atomic uint32_t made;    /* positions there so far */
    atomic_int abandon;       /* set: no more will be */
    _Atomic uint32_t seq;     /* changes at each publish and at the abandon (the futex word) */
    _Atomic uint32_t waiting; /* the waiter is asleep, or about to be */
} nk__progress;

#define NK_PROGRESS_INIT {0, 0, 0, 0}

/* By the one publishing thread: the first made positions are there. */
void nk__progress_publish(nk__progress *pg, uint32_t made);
/* No more positions will be published (an error on the publisher's side). */
void nk__progress_abandon(nk__progress *pg);
/* By the one waiting thread: until position i is there (0, *have the count
 * seen, above i) or never will be (1). */
int nk__progress_wait(nk__progress *pg, uint32_t i, uint32_t *have);

#endif
