/*
 * progress.h - progress of long work (compiling a user kernel, benchmark
 * iterations, executing a large program) on stderr, only when stderr is a
 * terminal: one line rewritten in place and erased when the work is done, so
 * output captured in files and pipes stays exactly the command's.
 */
#ifndef NK_CLI_PROGRESS_H
#define NK_CLI_PROGRESS_H

/* Is stderr a terminal (and NKLAB_PROGRESS not "0")? */
int nk_progress_enabled(void);

typedef struct nk_progress {
    int on;          /* drawing at all */
    int shown;       /* a line is on the terminal */
    double last_ns;  /* when it was last drawn */
    char label[96];
} nk_progress;

/* Starts a progress line "LABEL ..." (nothing when disabled). */
void nk_progress_begin(nk_progress *pg, const char *label);
/* "LABEL done/total", redrawn at most 10 times a second; the signature of
 * nk_bench_options.progress (user is the nk_progress). */
void nk_progress_update(void *pg, int done, int total);
/* Erases the line. */
void nk_progress_end(nk_progress *pg);

#endif
