/* progress.c - see progress.h. */
#include "sched/progress.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Spins before the waiter sleeps (assumed: a position is usually a few
 * microseconds away once the publisher's pass is under way, less than a
 * sleep and a wake-up cost). */
enum { SPINS = 256 };

static void wake(nk__progress *pg)
{
    /* seq_cst: with the waiter's store of waiting and load of seq, one of
     * the two sees the other (see nk__progress_wait) */
    atomic_fetch_add(&pg->seq, 1);
    if (atomic_load(&pg->waiting))
        syscall(SYS_futex, &pg->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void nk__progress_publish(nk__progress *pg, uint32_t made)
{
    atomic_store_explicit(&pg->made, made, memory_order_release);
    wake(pg);
}

void nk__progress_abandon(nk__progress *pg)
{
    atomic_store_explicit(&pg->abandon, 1, memory_order_release);
    wake(pg);
}

int nk__progress_wait(nk__progress *pg, uint32_t i, uint32_t *have)
{
    for (unsigned spins = 0;; spins++) {
        *have = atomic_load_explicit(&pg->made, memory_order_acquire);
        if (*have > i)
            return 0;
        if (atomic_load_explicit(&pg->abandon, memory_order_acquire))
            return 1;
        if (spins < SPINS)
            continue;
        /* waiting, then seq, then the state: a publish after the state was
         * read changes seq after this read of it (the futex then returns at
         * once) and sees waiting set (so it wakes a sleep begun later) */
        atomic_store(&pg->waiting, 1);
        uint32_t s = atomic_load(&pg->seq);
        *have = atomic_load(&pg->made);
        int done = *have > i, gone = atomic_load(&pg->abandon);
        if (!done && !gone)
            syscall(SYS_futex, &pg->seq, FUTEX_WAIT_PRIVATE, s, NULL, NULL, 0); /* (EAGAIN, EINTR: look again) */
        atomic_store(&pg->waiting, 0);
        if (done)
            return 0;
        if (gone)
            return 1;
        spins = 0;
    }
}
