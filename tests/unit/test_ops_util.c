/*
 * test_ops_util.c - helpers for the tests of single ops (test_ops_util.h).
 */
#include "test_ops_util.h"
#include "timing_detail.h"

#include <stdio.h>
#include <string.h>

void expect_trace_error_at(const char *file, int line, nk_kernel_fn fn, const nk_array *args, int nargs,
                           int status, const char *kfile, const int *at, const char *const *needles)
{
    nk_kernel *k = nk_kernel_new("error_case", fn);
    const nk_program *p = NULL;
    int rc = nk_kernel_compile(k, args, nargs, NULL, &p);
    const char *msg = nk_kernel_error(k) ? nk_kernel_error(k) : "";
    char want[512];
    snprintf(want, sizeof want, "%s:%d: ", kfile, *at);
    if (rc != status)
        nk_test_fail(file, line, "status %d (%s), expected %d (%s): \"%s\"", rc, nk_strerror(rc), status,
                     nk_strerror(status), msg);
    if (*at <= 0 || strncmp(msg, want, strlen(want)))
        nk_test_fail(file, line, "message \"%s\" does not start with \"%s\"", msg, want);
    for (int i = 0; needles[i]; i++)
        if (!strstr(msg, needles[i]))
            nk_test_fail(file, line, "message \"%s\" does not contain \"%s\"", msg, needles[i]);
    nk_kernel_free(k);
}

int timed_run_at(const char *file, int line, timed *t, nk_kernel_fn fn, const nk_array *args, int nargs,
                 const char *target)
{
    memset(t, 0, sizeof *t);
    t->k = nk_kernel_new("timed", fn);
    nk_options o = {.target = target};
    int rc = nk_kernel_compile(t->k, args, nargs, &o, &t->p);
    if (rc) {
        nk_test_fail(file, line, "compile on %s: %s", target, nk_kernel_error(t->k));
        return rc;
    }
    rc = time_detail(t->p, NULL, &t->tl);
    if (rc)
        nk_test_fail(file, line, "timing on %s: %d (%s)", target, rc, nk_strerror(rc));
    return rc;
}

void timed_free(timed *t)
{
    nk__timeline_free(t->tl);
    nk_kernel_free(t->k);
    memset(t, 0, sizeof *t);
}

int timed_nth(const timed *t, int op, int nth)
{
    if (!t->p)
        return -1;
    for (uint32_t i = 0; i < t->p->ninstr; i++)
        if (t->p->instrs[i].op == op && nth-- == 0)
            return (int)i;
    return -1;
}

double timed_bar_ns(const timed *t, int op, int nth)
{
    int i = timed_nth(t, op, nth);
    if (i < 0 || !t->tl)
        return -1;
    for (uint32_t k = 0; k < t->tl->nevents; k++) {
        const nk_event *e = &t->tl->events[k];
        if ((int)e->instr == i && (e->kind == NK_EV_INSTR || e->kind == NK_EV_DMA_ISSUE))
            return e->end - e->start;
    }
    return -1;
}
