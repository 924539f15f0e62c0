/*
 * profile.h - a profile: a compiled program, its timeline and the kernel's
 * source text, as one value that can be written to and read from one
 * self-contained versioned file (.nkp).
 *
 * This header is the contract between the profile (src/profile), the viewer
 * and exporters (src/view), insights and the CLI.
 */
#ifndef NK_PROFILE_H
#define NK_PROFILE_H

#include "nkint.h"
#include "timing/timing.h"

typedef struct nk_source {
    char *path;  /* as recorded in the program's files[] (same index) */
    char *text;  /* the file's text at capture time; NULL if unreadable */
} nk_source;

typedef struct nk_profile {
    nk_program *prog;      /* owned by the profile */
    nk_timeline *tl;       /* owned by the profile */
    nk_source *sources;    /* prog->nfiles entries */
    char nklab_version[16];
    double created_unix;   /* seconds since the epoch at capture */
} nk_profile;

/* Captures a profile of p: copies the program, times it on arch (NULL: the
 * program's target) and reads the source files it names. */
int nk_profile_capture(const nk_program *p, const nk_arch *arch, nk_profile **out);
/* Writes atomically (temporary file + rename). */
int nk_profile_write(const nk_profile *pr, const char *path);
/* Strict reader: a corrupt, truncated or foreign file fails with a message. */
int nk_profile_read(const char *path, nk_profile **out, char *err, size_t errlen);
void nk_profile_free(nk_profile *pr);

#endif
