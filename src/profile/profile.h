/*
 * profile.h - a profile: a compiled program, its timeline and the kernel's
 * source text, as one value that can be written to and read from one
 * self-contained versioned file (.nkp).
 *
 * This header is the contract between the profile (src/profile), the viewer
 * and exporters (src/view), insights and the CLI. The file layout is in
 * docs/file-formats.md.
 */
#ifndef NK_PROFILE_H
#define NK_PROFILE_H

#include "nkint.h"
#include "timing/timing.h"
#include "sched/program_io.h"

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
    /* added after the first version of this contract */
    nk_arch arch;          /* the target table the timeline was computed on (a
                              copy: it may be a modified target, not prog->arch) */
} nk_profile;

/* Captures a profile of p: copies the program, times it on arch (NULL: the
 * program's target) and records the source files it names
 * (nk__profile_read_sources). The creation time is the clock's
 * (nk_profile_set_created changes it, for reproducible files). */
int nk_profile_capture(const nk_program *p, const nk_arch *arch, nk_profile **out);
/* Writes atomically (temporary file + fsync + rename). */
int nk_profile_write(const nk_profile *pr, const char *path);
/* Strict reader: a corrupt, truncated or foreign file fails with a message. */
int nk_profile_read(const char *path, nk_profile **out, char *err, size_t errlen);
void nk_profile_free(nk_profile *pr);

/* A streamed timeline section of this many bytes or more is hashed and
 * written on a second thread while it is encoded (profile.c); tests lower
 * it to take that path with small profiles. */
extern size_t nk__profile_pipe_min;
/* A timeline of this many DMA spans and counter samples or more has its
 * streamed length counted on two threads (profile.c); tests set it to take
 * either way. */
extern size_t nk__profile_count_split_min;

/* nk__profile_capture_view of p (its program p itself, timed on its target)
 * written to path as nk_profile_write writes it, with the creation time
 * *created (NULL, or one nk_profile_set_created refuses: the clock's). The file's parts that depend on the program
 * alone are written on a second thread while the model times it. Returns
 * the capture's status (*out NULL unless 0); *write_rc gets the write's. */
int nk__profile_capture_write(const nk_program *p, const char *path, const double *created, nk_profile **out,
                              int *write_rc);

/* ---- below: for the file's own tests, the fuzzer and tools */

/* The whole file (header and sections) into w. */
int nk__profile_encode(const nk_profile *pr, nk_wr *w);
/* A whole file's bytes: header, checksum, then the sections. */
int nk__profile_decode(const uint8_t *data, size_t n, nk_profile **out, char *err, size_t errlen);
/* The sections alone (what follows the header), past the checksum: lets a
 * fuzzer reach every check behind it. */
int nk__profile_decode_content(nk_rd *r, nk_profile **out);
/* What the reader trusts about a timeline, given its program and target. */
int nk__timeline_check(const nk_timeline *tl, const nk_program *p, const nk_arch *arch, char *err,
                       size_t errlen);
/* The source text of each of the program's files into pr->sources: the
 * source lookup's (nk_profile_set_source_lookup) when it knows the file, else
 * the file's, else NULL. */
int nk__profile_read_sources(nk_profile *pr);

/* ---- metrics (metrics.c): names as in the Neuron profiler's summary */

enum { NK_MK_COUNT = 0, NK_MK_TIME, NK_MK_PERCENT, NK_MK_BYTES, NK_MK_FLOPS, NK_MK_RATIO };
/* Kind of metric i (NK_MK_*), for formatting; -1 when out of range. */
int nk__metric_kind(int i);

#endif
