/*
 * fuzz_common.h - shared by the libFuzzer targets: REQUIRE (a failed
 * condition aborts: a finding), a strict JSON validator for what the
 * writers produce, a scratch file for the readers that take a path, and the
 * checks every decoded program must pass.
 */
#ifndef NK_FUZZ_COMMON_H
#define NK_FUZZ_COMMON_H

#include "profile/profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REQUIRE(cond)                                                                    \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "fuzz: %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
            abort();                                                                     \
        }                                                                                \
    } while (0)

/* ---- JSON (RFC 8259): 1 when s[0..n) is one value and nothing else */

typedef struct fz_json {
    const char *s;
    size_t i, n;
    int depth;
} fz_json;

static inline void fz_ws(fz_json *j)
{
    while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' || j->s[j->i] == '\r'))
        j->i++;
}

static inline int fz_lit(fz_json *j, const char *w)
{
    size_t k = strlen(w);
    if (j->n - j->i < k || memcmp(j->s + j->i, w, k))
        return 0;
    j->i += k;
    return 1;
}

static inline int fz_digits(fz_json *j)
{
    size_t at = j->i;
    while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9')
        j->i++;
    return j->i > at;
}

static inline int fz_number(fz_json *j)
{
    if (j->i < j->n && j->s[j->i] == '-')
        j->i++;
    if (j->i < j->n && j->s[j->i] == '0')
        j->i++;
    else if (!fz_digits(j))
        return 0;
    if (j->i < j->n && j->s[j->i] == '.') {
        j->i++;
        if (!fz_digits(j))
            return 0;
    }
    if (j->i < j->n && (j->s[j->i] == 'e' || j->s[j->i] == 'E')) {
        j->i++;
        if (j->i < j->n && (j->s[j->i] == '+' || j->s[j->i] == '-'))
            j->i++;
        if (!fz_digits(j))
            return 0;
    }
    return 1;
}

static inline int fz_string(fz_json *j)
{
    if (j->i >= j->n || j->s[j->i] != '"')
        return 0;
    for (j->i++; j->i < j->n; j->i++) {
        unsigned char c = (unsigned char)j->s[j->i];
        if (c == '"') {
            j->i++;
            return 1;
        }
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            if (++j->i >= j->n)
                return 0;
            c = (unsigned char)j->s[j->i];
            if (c == 'u') {
                for (int k = 0; k < 4; k++)
                    if (++j->i >= j->n || !strchr("0123456789abcdefABCDEF", j->s[j->i]) || !j->s[j->i])
                        return 0;
            } else if (!c || !strchr("\"\\/bfnrt", c)) {
                return 0;
            }
        }
    }
    return 0;
}

static inline int fz_value(fz_json *j)
{
    fz_ws(j);
    if (j->i >= j->n || ++j->depth > 200)
        return 0;
    int ok = 1;
    char c = j->s[j->i];
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->i++;
        fz_ws(j);
        if (j->i < j->n && j->s[j->i] == close) {
            j->i++;
        } else {
            for (;;) {
                if (c == '{') {
                    fz_ws(j);
                    if (!fz_string(j))
                        return 0;
                    fz_ws(j);
                    if (j->i >= j->n || j->s[j->i++] != ':')
                        return 0;
                }
                if (!fz_value(j))
                    return 0;
                fz_ws(j);
                if (j->i >= j->n)
                    return 0;
                if (j->s[j->i] == ',') {
                    j->i++;
                    continue;
                }
                if (j->s[j->i++] != close)
                    return 0;
                break;
            }
        }
    } else if (c == '"') {
        ok = fz_string(j);
    } else if (c == 't' || c == 'f' || c == 'n') {
        ok = fz_lit(j, "true") || fz_lit(j, "false") || fz_lit(j, "null");
    } else {
        ok = fz_number(j);
    }
    j->depth--;
    return ok;
}

/* Aborts naming `what` and the place when text is not one JSON value. */
static inline void fz_require_json(const char *what, const char *s, size_t n)
{
    fz_json j = {s, 0, n, 0};
    int ok = fz_value(&j);
    fz_ws(&j);
    if (!ok || j.i != n) {
        size_t at = j.i < n ? j.i : n;
        size_t from = at > 60 ? at - 60 : 0;
        fprintf(stderr, "fuzz: %s is not valid JSON at byte %zu: ...%.*s<HERE>%.*s\n", what, at, (int)(at - from),
                s + from, (int)(n - at < 60 ? n - at : 60), s + at);
        abort();
    }
}

/* ---- a scratch file for the readers that take a path */

/* Writes the n bytes at b to one file per process under TMPDIR (or /tmp)
 * and returns its path (removed at exit). */
static inline const char *fz_scratch(const void *b, size_t n)
{
    static char path[256];
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/nklab-fuzz-%ld", dir && *dir ? dir : "/tmp", (long)getpid());
    }
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    REQUIRE(fwrite(b, 1, n, f) == n);
    REQUIRE(fclose(f) == 0);
    return path;
}

static inline void fz_scratch_remove(void)
{
    char path[256];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/nklab-fuzz-%ld", dir && *dir ? dir : "/tmp", (long)getpid());
    unlink(path);
}

/* ---- programs */

/* Runs the executor when the program's memory and work are small. */
static inline void fz_try_execute(const nk_program *p)
{
    int64_t hbm = 0, work = 0;
    for (uint32_t i = 0; i < p->nhbm; i++)
        hbm += p->bufs[p->hbm_list[i]].bytes;
    for (uint32_t i = 0; i < p->ninstr; i++)
        for (int k = 0; k < 5; k++) {
            const nk_instr *in = &p->instrs[i];
            const nk_opnd *t = k == 0 ? &in->dst : k == 1 ? nk__dst2(p, in) : nk__src(p, in, k - 2);
            if (t->buf)
                work += nk__opnd_numel(p, t);
        }
    if (hbm > (8 << 20) || work > (4 << 20))
        return;
    void **mem = calloc(p->nbufs, sizeof *mem);
    REQUIRE(mem);
    int ok = 1;
    for (uint32_t i = 0; i < p->nhbm; i++)
        ok &= (mem[p->hbm_list[i]] = calloc(1, (size_t)p->bufs[p->hbm_list[i]].bytes + 1)) != NULL;
    if (ok)
        REQUIRE(nk__execute(p, mem) == 0);
    for (uint32_t i = 0; i < p->nhbm; i++)
        free(mem[p->hbm_list[i]]);
    free(mem);
}

/* Whatever a decoder accepts holds up in every later stage: it passes the
 * validator again, lists, re-encodes to bytes that decode to the same
 * program, copies, times on the model into a valid timeline and, when
 * small enough, executes. */
static inline void fz_use_program(const nk_program *p)
{
    REQUIRE(nk__program_check(p, NULL, 0) == 0);
    char *text = NULL;
    REQUIRE(nk_program_dump(p, &text) == 0);
    REQUIRE(text && strlen(text) > 0);
    free(text);
    nk_program *q = NULL;
    nk_wr w = {0};
    nk_rd r;
    REQUIRE(nk__program_encode(p, &w) == 0);
    nk__rd_init(&r, w.p, w.n, NULL, 0);
    REQUIRE(nk__program_decode(&r, &q) == 0 && nk__rd_end(&r) == 0);
    REQUIRE(q->ninstr == p->ninstr && q->nbufs == p->nbufs && q->ndeps == p->ndeps);
    REQUIRE(!strcmp(q->arch->name, p->arch->name) && q->arch->hbm_gbps == p->arch->hbm_gbps);
    nk__program_destroy(q);
    nk__wr_free(&w);
    REQUIRE(nk__program_copy(p, &q) == 0);
    REQUIRE(q->ninstr == p->ninstr && q->arch == &q->table);
    nk__program_destroy(q);
    nk_timeline *tl = NULL;
    char err[256];
    REQUIRE(nk__time_program(p, NULL, &tl) == 0);
    if (nk__timeline_check(tl, p, p->arch, err, sizeof err)) {
        fprintf(stderr, "fuzz: the timing model's timeline fails its check: %s\n", err);
        abort();
    }
    nk__timeline_free(tl);
    fz_try_execute(p);
}

#endif
