/*
 * html.c - the self-contained viewer page: the template (viewer.html) with
 * the styles, the script and the profile's data spliced in. No network: the
 * page needs nothing but itself.
 */
#include "view/view.h"
#include "core/atomicfile.h"
#include "core/vbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int page(const nk_profile *pr, const nk__view_insights *ins, const char *notes_json, const nk_profile *cmp,
                nk_text *t);

int nk__view_page(const nk_profile *pr, const char *insights_json, const char *notes_json, const nk_profile *cmp,
                 nk_text *t)
{
    nk__view_insights ins = {nk__view_given, (void *)insights_json};
    return page(pr, &ins, notes_json, cmp, t);
}

static int page(const nk_profile *pr, const nk__view_insights *ins, const char *notes_json, const nk_profile *cmp,
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
            rc = nk__view_json_deferred(pr, ins, t);
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

int nk__view_page_to(const nk_profile *pr, const char *insights_json, const char *notes_json, const nk_profile *cmp,
                     const char *path, uint64_t *bytes, char *why, size_t whylen)
{
    nk__view_insights ins = {nk__view_given, (void *)insights_json};
    return nk__view_page_to_deferred(pr, &ins, notes_json, cmp, path, bytes, why, whylen);
}

int nk__view_page_to_deferred(const nk_profile *pr, const nk__view_insights *ins, const char *notes_json,
                              const nk_profile *cmp, const char *path, uint64_t *bytes, char *why, size_t whylen)
{
    nk__vb_out *o = malloc(sizeof *o);
    if (!o)
        return NK_ENOMEM;
    nk_text t = {0};
    int rc = nk__vb_out_begin(o, &t, path);
    if (!rc)
        rc = page(pr, ins, notes_json, cmp, &t);
    rc = nk__vb_out_end(o, &t, rc, bytes, why, whylen);
    free(o);
    return rc;
}
