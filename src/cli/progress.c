/*
 * progress.c - one self-erasing status line on a terminal's stderr.
 */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REDRAW_NS 100e6 /* 10 redraws a second: readable, and cheap next to the work */

int nk_progress_enabled(void)
{
    const char *e = getenv("NKLAB_PROGRESS");
    if (e && !strcmp(e, "0"))
        return 0;
    return isatty(STDERR_FILENO);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

void nk_progress_begin(nk_progress *pg, const char *label)
{
    memset(pg, 0, sizeof *pg);
    pg->on = nk_progress_enabled();
    snprintf(pg->label, sizeof pg->label, "%s", label);
    if (!pg->on)
        return;
    fprintf(stderr, "\r\033[K%s ...", pg->label);
    fflush(stderr);
    pg->shown = 1;
    pg->last_ns = now_ns();
}

void nk_progress_update(void *user, int done, int total)
{
    nk_progress *pg = user;
    if (!pg->on)
        return;
    double t = now_ns();
    if (done < total && t - pg->last_ns < REDRAW_NS)
        return;
    pg->last_ns = t;
    fprintf(stderr, "\r\033[K%s %d/%d", pg->label, done, total);
    fflush(stderr);
    pg->shown = 1;
}

void nk_progress_end(nk_progress *pg)
{
    if (pg->on && pg->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    pg->shown = 0;
}
