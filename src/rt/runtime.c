/*
 * runtime.c - kernels, the program cache and running compiled programs.
 *
 * A kernel is traced and compiled once per signature (argument dtypes and
 * shapes, target, options); later calls hash the signature, find the program
 * and only bind arguments. The cache is an open-addressing table keyed by the
 * encoded signature. A caller's target table is part of the key byte for
 * byte, so tables that differ in any value never share a program.
 */
#include "nkint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NK_MAX_ARGS 32
#define KEY_MAX (36 + 8 * NK_MAX_GRID + sizeof(nk_arch) + NK_MAX_ARGS * (2 + 8 * NK_MAXDIM + 4))

typedef struct centry {
    uint64_t hash;
    uint32_t klen;
    uint8_t key[KEY_MAX];
    nk_program *prog;
} centry;

struct nk_kernel {
    char name[64];
    nk_kernel_fn fn;
    centry *tab;
    uint32_t cap, n;
    uint64_t compiles, hits;
    char err[512];
    nk__kparams params;   /* from nk_kernel_set_params */
    char *decl_file;
};

static void clear_params(nk_kernel *k)
{
    for (int i = 0; k->params.names && i < k->params.nnames; i++)
        free(k->params.names[i]);
    free(k->params.names);
    free(k->decl_file);
    memset(&k->params, 0, sizeof k->params);
    k->decl_file = NULL;
}

nk_kernel *nk_kernel_new(const char *name, nk_kernel_fn fn)
{
    if (!fn)
        return NULL;
    nk_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    snprintf(k->name, sizeof k->name, "%s", name ? name : "kernel");
    k->fn = fn;
    return k;
}

void nk_kernel_free(nk_kernel *k)
{
    if (!k)
        return;
    for (uint32_t i = 0; i < k->cap; i++)
        nk__program_destroy(k->tab[i].prog);
    free(k->tab);
    clear_params(k);
    free(k);
}

int nk_kernel_set_params(nk_kernel *k, nk_loc decl, const char *const *names, int nnames)
{
    if (!k || nnames < 0 || nnames > NK_MAX_ARGS || (nnames && !names) || decl.line < 0)
        return NK_EINVAL;
    for (int i = 0; i < nnames; i++) {
        const char *n = names[i];
        if (!n)
            continue;
        size_t len = strlen(n);
        if (len > 63)
            return NK_EINVAL;
        for (size_t j = 0; j < len; j++)
            if (!nk__name_char_ok(n[j]))
                return NK_EINVAL;
    }
    nk__kparams kp = {{NULL, 0, NULL}, NULL, nnames};
    char *file = decl.file ? strdup(decl.file) : NULL;
    kp.names = nnames ? calloc((size_t)nnames, sizeof *kp.names) : NULL;
    int bad = (decl.file && !file) || (nnames && !kp.names);
    for (int i = 0; !bad && i < nnames; i++)
        bad = names[i] && !(kp.names[i] = strdup(names[i]));
    if (bad) {
        for (int i = 0; kp.names && i < nnames; i++)
            free(kp.names[i]);
        free(kp.names);
        free(file);
        return NK_ENOMEM;
    }
    clear_params(k);
    kp.decl = (nk_loc){file, decl.line, NULL};
    k->params = kp;
    k->decl_file = file;
    return 0;
}

const char *nk_kernel_name(const nk_kernel *k) { return k->name; }
const char *nk_kernel_error(const nk_kernel *k) { return k->err; }

void nk_kernel_cache_stats(const nk_kernel *k, uint64_t *compiles, uint64_t *hits)
{
    if (compiles)
        *compiles = k->compiles;
    if (hits)
        *hits = k->hits;
}

/* Encodes the signature (target, options, then dtype, rank and shape of
 * each argument: a prefix-free encoding, so equal keys mean equal
 * signatures). The target is a built-in's name, or every byte of the
 * caller's table: equal bytes are equal tables (tables are built zeroed, so
 * padding matches; were it not, two equal tables would only trace twice).
 * Returns its length, or -1 for too many arguments and -2 for a target name
 * too long to be one. */
static int encode_key(uint8_t *key, const nk_array *args, int nargs, const nk_options *opts)
{
    if (nargs < 0 || nargs > NK_MAX_ARGS)
        return -1;
    size_t n = 0;
    if (opts && opts->arch) {
        key[n++] = 0xff; /* no name length: names are shorter */
        memcpy(key + n, opts->arch, sizeof(nk_arch));
        n += sizeof(nk_arch);
    } else {
        const char *t = opts && opts->target ? opts->target : "trn1";
        size_t tl = strlen(t);
        if (tl > 11)
            return -2;
        key[n++] = (uint8_t)tl;
        memcpy(key + n, t, tl);
        n += tl;
    }
    int bufs = opts ? opts->default_bufs : 0, sched = opts ? opts->schedule : 0;
    memcpy(key + n, &bufs, sizeof bufs);
    n += sizeof bufs;
    memcpy(key + n, &sched, sizeof sched);
    n += sizeof sched;
    /* the trace's bounds: a call with a lower bound traces again (and stops
     * where that trace would), rather than reuse what a higher one allowed */
    int64_t caps[2] = {opts ? opts->max_instructions : 0, opts ? opts->max_trace_bytes : 0};
    memcpy(key + n, caps, sizeof caps);
    n += sizeof caps;
    for (int g = 0; g < NK_MAX_GRID; g++) { /* the launch grid: another grid is another program */
        int32_t v[2] = {opts ? opts->grid[g] : 0, opts ? opts->grid_nc[g] : 0};
        memcpy(key + n, v, sizeof v);
        n += sizeof v;
    }
    for (int i = 0; i < nargs; i++) {
        key[n++] = (uint8_t)args[i].dtype;
        key[n++] = (uint8_t)args[i].ndim;
        int nd = args[i].ndim > 0 && args[i].ndim <= NK_MAXDIM ? args[i].ndim : 0;
        memcpy(key + n, args[i].shape, (size_t)nd * sizeof(int64_t));
        n += (size_t)nd * sizeof(int64_t);
        if (args[i].ndim == 0) { /* a scalar: its value is part of the signature */
            int es = nk_dtype_size(args[i].dtype);
            memset(key + n, 0, 4);
            if (args[i].data && es > 0 && es <= 4)
                memcpy(key + n, args[i].data, (size_t)es);
            n += 4;
        }
    }
    return (int)n;
}

/* A 64-bit hash of the key, eight bytes a step (multiply and xor-shift),
 * so a key holding a whole target table still hashes in well under a
 * microsecond. Only the table's slot depends on it: keys are compared. */
static uint64_t hash_key(const uint8_t *p, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, p + i, n - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static int cache_insert(nk_kernel *k, uint64_t h, const uint8_t *key, uint32_t klen, nk_program *prog)
{
    if ((k->n + 1) * 2 > k->cap) {
        uint32_t cap = k->cap ? k->cap * 2 : 8;
        centry *t = calloc(cap, sizeof *t);
        if (!t)
            return NK_ENOMEM;
        for (uint32_t i = 0; i < k->cap; i++) {
            if (!k->tab[i].prog)
                continue;
            uint32_t j = (uint32_t)k->tab[i].hash & (cap - 1);
            while (t[j].prog)
                j = (j + 1) & (cap - 1);
            t[j] = k->tab[i];
        }
        free(k->tab);
        k->tab = t;
        k->cap = cap;
    }
    uint32_t j = (uint32_t)h & (k->cap - 1);
    while (k->tab[j].prog)
        j = (j + 1) & (k->cap - 1);
    k->tab[j].hash = h;
    k->tab[j].klen = klen;
    memcpy(k->tab[j].key, key, klen);
    k->tab[j].prog = prog;
    k->n++;
    return 0;
}

int nk_kernel_compile(nk_kernel *k, const nk_array *args, int nargs, const nk_options *opts, const nk_program **out)
{
    uint8_t key[KEY_MAX];
    int klen = encode_key(key, args, nargs, opts);
    if (klen == -1) {
        snprintf(k->err, sizeof k->err, "%d arguments: a kernel takes 0 to %d", nargs, NK_MAX_ARGS);
        return NK_EINVAL;
    }
    if (klen < 0) {
        snprintf(k->err, sizeof k->err, "unknown target '%.40s' (known: trn1, trn2)", opts->target);
        return NK_ENOTFOUND;
    }
    uint64_t h = hash_key(key, (size_t)klen);
    if (k->cap) {
        uint32_t j = (uint32_t)h & (k->cap - 1);
        while (k->tab[j].prog) {
            centry *e = &k->tab[j];
            if (e->hash == h && e->klen == (uint32_t)klen && !memcmp(e->key, key, (size_t)klen)) {
                k->hits++;
                *out = e->prog;
                return 0;
            }
            j = (j + 1) & (k->cap - 1);
        }
    }
    for (int i = 0; i < nargs; i++) {
        if (args[i].ndim < 0 || args[i].ndim > NK_MAXDIM || !nk_dtype_size(args[i].dtype) ||
            (args[i].ndim == 0 && (!args[i].data || nk_dtype_size(args[i].dtype) > 4))) {
            snprintf(k->err, sizeof k->err, "argument %d: invalid dtype or rank", i);
            return NK_EINVAL;
        }
    }
    nk_program *p = NULL;
    k->err[0] = 0;
    int rc = nk__trace_params(k->name, k->fn, &k->params, args, nargs, opts, &p, k->err, sizeof k->err);
    if (rc)
        return rc;
    k->compiles++;
    rc = cache_insert(k, h, key, (uint32_t)klen, p);
    if (rc) {
        nk__program_destroy(p);
        snprintf(k->err, sizeof k->err, "out of memory");
        return rc;
    }
    *out = p;
    return 0;
}

/* ---- programs */

int nk_program_num_inputs(const nk_program *p) { return p->ninputs; }
int nk_program_num_outputs(const nk_program *p) { return p->noutputs; }
size_t nk_program_num_instructions(const nk_program *p) { return p->ninstr; }
const char *nk_program_target(const nk_program *p) { return p->target; }
const nk_target *nk_program_target_table(const nk_program *p) { return p->arch; }

static int describe(const nk_program *p, uint32_t buf, nk_array *d)
{
    const nk_bufinfo *b = &p->bufs[buf];
    d->dtype = (nk_dtype)b->dtype;
    d->ndim = b->ndim;
    for (int i = 0; i < NK_MAXDIM; i++)
        d->shape[i] = i < b->ndim ? b->shape[i] : 0;
    return 0;
}

int nk_program_output(const nk_program *p, int i, nk_array *d)
{
    if (i < 0 || i >= p->noutputs)
        return NK_EINVAL;
    return describe(p, p->output_buf[i], d);
}

int nk_program_input(const nk_program *p, int i, nk_array *d)
{
    if (i < 0 || i >= p->ninputs)
        return NK_EINVAL;
    return describe(p, p->input_buf[i], d);
}

static int matches(const nk_program *p, uint32_t buf, const nk_array *a)
{
    const nk_bufinfo *b = &p->bufs[buf];
    if (!a->data || a->dtype != (nk_dtype)b->dtype)
        return NK_EDTYPE;
    if (a->ndim != b->ndim)
        return NK_ESHAPE;
    for (int i = 0; i < b->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return NK_ESHAPE;
    return 0;
}

/* Frees the scratch buffers among the first n HBM buffers. */
static void free_scratch(const nk_program *p, void **hbm, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t b = p->hbm_list[i];
        if (p->bufs[b].role == NK_ROLE_SCRATCH) {
            free(hbm[b]);
            hbm[b] = NULL;
        }
    }
}

int nk__program_bind(const nk_program *p, const nk_array *all, int nall, nk_array *outs, int nouts, void **hbm)
{
    /* scalar arguments (0-d) are part of the program, not bound */
    const nk_array *args[NK_MAX_ARGS];
    int nargs = 0;
    for (int i = 0; i < nall && nargs < NK_MAX_ARGS; i++)
        if (all[i].ndim != 0)
            args[nargs++] = &all[i];
    if (nall < 0 || nall > NK_MAX_ARGS || nargs != p->ninputs || nouts != p->noutputs)
        return NK_EINVAL;
    for (int i = 0; i < nargs; i++) {
        int rc = matches(p, p->input_buf[i], args[i]);
        if (rc)
            return rc;
    }
    for (int i = 0; i < nouts; i++) {
        int rc = matches(p, p->output_buf[i], &outs[i]);
        if (rc)
            return rc;
    }
    for (uint32_t i = 0; i < p->nhbm; i++) {
        uint32_t b = p->hbm_list[i];
        const nk_bufinfo *bi = &p->bufs[b];
        if (bi->role == NK_ROLE_INPUT) {
            hbm[b] = args[bi->index]->data;
        } else if (bi->role == NK_ROLE_OUTPUT) {
            hbm[b] = outs[bi->index].data;
        } else if (bi->role == NK_ROLE_CONSTANT) { /* read-only: the tracer refuses writes */
            hbm[b] = p->cdata[b];
        } else if (!(hbm[b] = calloc((size_t)bi->bytes, 1))) {
            free_scratch(p, hbm, i);
            return NK_ENOMEM;
        }
    }
    return 0;
}

void nk__program_unbind(const nk_program *p, void **hbm) { free_scratch(p, hbm, p->nhbm); }

/* The binding table is allocated per run (one allocation, nothing per
 * instruction): a thread-local cache would leak when its thread exits. */
int nk_program_run(const nk_program *p, const nk_array *args, int nargs, nk_array *outs, int nouts)
{
    void **ptrs = calloc(p->nbufs ? p->nbufs : 1, sizeof *ptrs);
    if (!ptrs)
        return NK_ENOMEM;
    int rc = nk__program_bind(p, args, nargs, outs, nouts, ptrs);
    if (!rc) {
        rc = nk__execute(p, ptrs);
        nk__program_unbind(p, ptrs);
    }
    free(ptrs);
    return rc;
}

int nk_call(nk_kernel *k, const nk_array *args, int nargs, const nk_options *opts, nk_array *outs, int max_outs,
            int *nouts)
{
    const nk_program *p;
    int rc = nk_kernel_compile(k, args, nargs, opts, &p);
    if (rc)
        return rc;
    if (p->noutputs > max_outs) {
        snprintf(k->err, sizeof k->err, "the kernel has %d outputs, room for %d", p->noutputs, max_outs);
        return NK_EINVAL;
    }
    int i;
    for (i = 0; i < p->noutputs; i++) {
        nk_array d;
        nk_program_output(p, i, &d);
        rc = nk_array_alloc(&outs[i], d.dtype, d.ndim, d.shape);
        if (rc)
            goto fail;
    }
    rc = nk_program_run(p, args, nargs, outs, p->noutputs);
    if (rc) {
        snprintf(k->err, sizeof k->err, "run failed: %s", nk_strerror(rc));
        goto fail;
    }
    if (nouts)
        *nouts = p->noutputs;
    return 0;
fail:
    while (i-- > 0)
        nk_array_free(&outs[i]);
    return rc;
}

void nk_program_free(nk_program *p)
{
    if (p && p->owned)
        nk__program_destroy(p);
}
