/*
 * target.c - the public face of target tables (nk_target_*): loading a
 * modified target from a file or text, the built-in tables, formatting.
 *
 * An nk_target is an nk_arch; a loaded one is a heap copy its caller owns.
 */
#include "nkint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int new_table(const char *path, const char *text, const char *where, nk_target **out, char *err,
                     size_t errlen)
{
    if (!out)
        return NK_EINVAL;
    *out = NULL;
    nk_arch *a = calloc(1, sizeof *a); /* zeroed, padding included: tables compare bytewise */
    if (!a) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", path ? path : where ? where : "<target>");
        return NK_ENOMEM;
    }
    int rc = path ? nk__arch_load_file(path, a, err, errlen) : nk__arch_load_text(text, where, a, err, errlen);
    if (rc) {
        free(a);
        return rc;
    }
    *out = a;
    return 0;
}

int nk_target_load(const char *path, nk_target **out, char *err, size_t errlen)
{
    if (!path) {
        if (out)
            *out = NULL;
        return NK_EINVAL;
    }
    return new_table(path, NULL, NULL, out, err, errlen);
}

int nk_target_parse(const char *text, const char *where, nk_target **out, char *err, size_t errlen)
{
    return new_table(NULL, text, where, out, err, errlen);
}

const nk_target *nk_target_builtin(const char *name) { return nk__arch_get(name); }

void nk_target_free(nk_target *t)
{
    if (t && nk__arch_get(t->name) != t)
        free(t);
}

const char *nk_target_name(const nk_target *t) { return t ? t->name : NULL; }

int nk_target_format(const nk_target *t, char **text)
{
    if (!text)
        return NK_EINVAL;
    *text = NULL;
    return t ? nk__arch_format(t, text) : NK_EINVAL;
}
