/*
 * html.c - the self-contained viewer page: the template (viewer.html) with
 * the styles, the script and the profile's data spliced in. No network: the
 * page needs nothing but itself.
 */
#include "view/view.h"
#include "core/atomicfile.h"
#include "core/vbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Appends s with HTML's special characters escaped (for the <title>). */
static void put_html_text(nk_text *t, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': nk__vb_str(t, "&lt;"); break;
        case '>': nk__vb_str(t, "&gt;"); break;
        case '&': nk__vb_str(t, "&amp;"); break;
        case '"': nk__vb_str(t, "&quot;"); break;
        case '\'': nk__vb_str(t, "&#39;"); break;
        default: nk__vb_chr(t, *s);
        }
    }
}

/* Copies the template up to the next "{{NAME}}" marker; returns the marker's
 * name (in name) and the text after it, or NULL at the end. */
static const char *copy_until_marker(nk_text *t, const char *s, char *name, size_t n)
{
    const char *m = strstr(s, "{{");
    const char *e = m ? strstr(m, "}}") : NULL;
    if (!m || !e || (size_t)(e - m - 2) >= n) {
        nk__vb_str(t, s);
        return NULL;
    }
    nk__vb_mem(t, s, (size_t)(m - s));
    memcpy(name, m + 2, (size_t)(e - m - 2));
    name[e - m - 2] = 0;
    return e + 2;
}

int nk__view_html(const nk_profile *pr, const char *insights_json, nk_text *t)
{
    return nk__view_page(pr, insights_json, NULL, NULL, t);
}

/* Text inside <script type="application/json">: "</" would end the script
 * (JSON allows "\/" for "/" in strings, and "</" cannot occur elsewhere). */
static void put_script_text(nk_text *t, const char *s)
{
    for (const char *p = s; *p; p++) {
        if (p[0] == '<' && p[1] == '/') {
            nk__vb_str(t, "<\\/");
            p++;
        } else {
            nk__vb_chr(t, *p);
        }
    }
}

int nk__view_page(const nk_profile *pr, const char *insights_json, const char *notes_json, const nk_profile *cmp,
                 nk_text *t)
{
    if (!pr || !pr->prog || !pr->tl)
        return NK_EINVAL;
    const char *s = nk__view_asset_html;
    char name[16];
    int rc = NK_OK;
    while (s && !rc) {
        s = copy_until_marker(t, s, name, sizeof name);
        if (!s)
            break;
        if (!strcmp(name, "TITLE")) {
            put_html_text(t, pr->prog->kernel);
            nk__vb_str(t, " (");
            put_html_text(t, pr->prog->target);
            nk__vb_str(t, ") - nklab profile");
        } else if (!strcmp(name, "CSS")) {
            nk__vb_str(t, nk__view_asset_css);
        } else if (!strcmp(name, "JS")) {
            nk__vb_str(t, nk__view_asset_js);
        } else if (!strcmp(name, "DATA")) {
            rc = nk__view_json(pr, insights_json, t);
        } else if (!strcmp(name, "NOTES")) { /* markers saved beside the profile (the page checks them) */
            put_script_text(t, notes_json && *notes_json ? notes_json : "null");
        } else if (!strcmp(name, "CMP")) { /* a second profile, drawn on the same time axis */
            if (cmp && cmp->prog && cmp->tl)
                rc = nk__view_json(cmp, NULL, t);
            else
                nk__vb_str(t, "null");
        } else {
            rc = NK_EINVAL; /* a marker the template should not have */
        }
    }
    return rc ? rc : t->oom ? NK_ENOMEM : NK_OK;
}

/* ---- the page written as it is made */

typedef struct page_sink {
    nk__afile f;
    int to_file;
    uint64_t bytes;
    char why[384];
} page_sink;

static int page_write(void *ctx, const char *s, size_t n)
{
    page_sink *k = ctx;
    int rc = k->to_file ? nk__afile_write(&k->f, s, n) : nk__fd_write_all(STDOUT_FILENO, s, n);
    if (rc)
        snprintf(k->why, sizeof k->why, "%s", k->to_file ? k->f.msg : strerror(errno));
    else
        k->bytes += n;
    return rc;
}

int nk__view_page_to(const nk_profile *pr, const char *insights_json, const char *notes_json, const nk_profile *cmp,
                     const char *path, uint64_t *bytes, char *why, size_t whylen)
{
    *bytes = 0;
    if (why && whylen)
        why[0] = 0;
    page_sink *k = calloc(1, sizeof *k);
    if (!k)
        return NK_ENOMEM;
    int rc = 0;
    k->to_file = path && strcmp(path, "-");
    if (!k->to_file) {
        if (fflush(stdout)) { /* what printf already buffered goes first */
            snprintf(k->why, sizeof k->why, "%s", strerror(errno));
            rc = NK_EIO;
        }
    } else if (nk__afile_open(&k->f, path)) {
        snprintf(k->why, sizeof k->why, "%s", k->f.msg);
        rc = NK_EIO;
    }
    nk_text t = {0};
    if (!rc) {
        nk__vb_stream(&t, page_write, k);
        rc = nk__view_page(pr, insights_json, notes_json, cmp, &t);
        int st = nk__vb_stream_status();
        nk__vb_stream(NULL, NULL, NULL);
        if (!rc && !st && t.len)
            st = page_write(k, t.s, t.len);
        if (!rc && st)
            rc = NK_EIO;
        if (k->to_file) {
            if (rc)
                nk__afile_abort(&k->f);
            else if (nk__afile_commit(&k->f)) {
                snprintf(k->why, sizeof k->why, "%s", k->f.msg);
                rc = NK_EIO;
            }
        }
    }
    nk__text_free(&t);
    if (rc == NK_EIO && why && whylen)
        snprintf(why, whylen, "%s", k->why);
    *bytes = k->bytes;
    free(k);
    return rc;
}
