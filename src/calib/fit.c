/*
 * fit.c - constants of a target from measured micro-benchmark latencies:
 * each point's ns per repetition is the least-squares slope of its
 * latencies over the repetitions; the constants are a Levenberg-Marquardt
 * fit of the model's closed forms (nk__calib_expect_ns) to those slopes,
 * in relative residuals, starting from a base table.
 */
#include "calib.h"

#include "nkint.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct param {
    const char *key;
    size_t off;
    int is_int;
} param;

#define P_D(k) {#k, offsetof(nk_arch, k), 0}
#define P_I(k) {#k, offsetof(nk_arch, k), 1}

/* The constants the suite isolates (each moves some point's closed form). */
static const param params[] = {
    P_D(act_ghz), P_D(dve_ghz), P_D(pool_ghz), P_D(pe_ghz),
    P_I(static_overhead_cycles), P_I(min_ii_cycles), P_I(sram_access_cycles), P_I(pool_fixed_cycles),
    P_I(pe_mm_init_cycles), P_D(pe_fp32_factor), P_D(sem_latency_ns),
    P_D(dma_engine_gbps), P_D(dma_eff_half_bytes), P_D(dma_latency_ns), P_D(hbm_gbps),
};
#define NPAR ((int)(sizeof params / sizeof params[0]))

static double get(const nk_arch *a, int k)
{
    const char *b = (const char *)a + params[k].off;
    return params[k].is_int ? (double)*(const int *)(const void *)b : *(const double *)(const void *)b;
}

static void set(nk_arch *a, int k, double v, int round_int)
{
    char *b = (char *)a + params[k].off;
    if (params[k].is_int)
        *(int *)(void *)b = (int)lround(v);
    else
        *(double *)(void *)b = v;
    (void)round_int;
}

/* The closed forms with real-valued integer keys: the fit works on a copy
 * whose integer fields are read through these doubles. */
typedef struct rarch {
    nk_arch a;
    double v[NPAR];
} rarch;

static double expect(const rarch *r, const nk_calib_point *pt)
{
    /* integer keys enter the closed forms as doubles: scale them in by the
       fractional part through the clock-free expression */
    nk_arch a = r->a;
    double ns = 0;
    int fr = 0;
    for (int k = 0; k < NPAR; k++) {
        if (!params[k].is_int)
            set(&a, k, r->v[k], 0);
        else if (r->v[k] != floor(r->v[k]))
            fr = 1;
    }
    if (!fr) {
        for (int k = 0; k < NPAR; k++)
            if (params[k].is_int)
                set(&a, k, r->v[k], 1);
        return nk__calib_expect_ns(&a, pt);
    }
    /* linear interpolation between the neighbouring integers of every
       fractional key (the closed forms are piecewise linear in them) */
    double lo[NPAR], w[NPAR];
    int idx[NPAR], m = 0;
    for (int k = 0; k < NPAR; k++)
        if (params[k].is_int) {
            lo[k] = floor(r->v[k]);
            w[k] = r->v[k] - lo[k];
            set(&a, k, lo[k], 1);
            if (w[k] > 0)
                idx[m++] = k;
        }
    for (int mask = 0; mask < (1 << m); mask++) {
        double wt = 1;
        for (int j = 0; j < m; j++) {
            int up = mask >> j & 1;
            set(&a, idx[j], lo[idx[j]] + up, 1);
            wt *= up ? w[idx[j]] : 1 - w[idx[j]];
        }
        ns += wt * nk__calib_expect_ns(&a, pt);
    }
    return ns;
}

/* Solves the n x n system A x = b (Gaussian elimination, partial pivoting). */
static int solve(double *A, double *b, int n)
{
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(A[r * n + c]) > fabs(A[p * n + c]))
                p = r;
        if (fabs(A[p * n + c]) < 1e-300)
            return -1;
        if (p != c) {
            for (int k = 0; k < n; k++) {
                double t = A[c * n + k];
                A[c * n + k] = A[p * n + k];
                A[p * n + k] = t;
            }
            double t = b[c];
            b[c] = b[p];
            b[p] = t;
        }
        for (int r = c + 1; r < n; r++) {
            double f = A[r * n + c] / A[c * n + c];
            for (int k = c; k < n; k++)
                A[r * n + k] -= f * A[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int c = n - 1; c >= 0; c--) {
        for (int k = c + 1; k < n; k++)
            b[c] -= A[c * n + k] * b[k];
        b[c] /= A[c * n + c];
    }
    return 0;
}

typedef struct obs {
    const nk_calib_point *pt;
    double per_rep; /* measured ns per repetition */
} obs;

static double resid(const rarch *r, const obs *o) { return (expect(r, o->pt) - o->per_rep) / o->per_rep; }

static double cost(const rarch *r, const obs *o, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double e = resid(r, &o[i]);
        s += e * e;
    }
    return s;
}

/* Jacobian of the residuals over the free parameters, in units of each
 * parameter's start value (x_k = v_k / v0_k). */
static void jacobian(const rarch *r, const double *v0, const int *fr, int nf, const obs *o, int n, double *J)
{
    for (int j = 0; j < nf; j++) {
        int k = fr[j];
        double h = 1e-4 * v0[k];
        rarch up = *r, dn = *r;
        up.v[k] += h;
        dn.v[k] -= h;
        for (int i = 0; i < n; i++)
            J[i * nf + j] = (resid(&up, &o[i]) - resid(&dn, &o[i])) / 2 / 1e-4;
    }
}

const nk_calib_point *nk__calib_find(const char *id)
{
    for (size_t i = 0; i < nk__calib_npoints; i++)
        if (!strcmp(nk__calib_points[i].id, id))
            return &nk__calib_points[i];
    return NULL;
}

int nk__calib_fit_samples(const nk_arch *base, const nk_calib_sample *s, size_t ns, nk_calib_fit *fit, char *err,
                         size_t errlen)
{
    memset(fit, 0, sizeof *fit);
    obs o[64];
    int n = 0;
    /* group the samples by point: the slope over its repetitions */
    for (size_t i = 0; i < ns; i++) {
        const nk_calib_point *pt = nk__calib_find(s[i].id);
        if (!pt) {
            snprintf(err, errlen, "unknown benchmark point '%s' (not in this nklab's suite)", s[i].id);
            return NK_EINVAL;
        }
        int seen = 0;
        for (int j = 0; j < n; j++)
            seen |= o[j].pt == pt;
        if (seen)
            continue;
        double x[64], y[64];
        int m = 0;
        for (size_t k = i; k < ns && m < 64; k++)
            if (!strcmp(s[k].id, pt->id)) {
                x[m] = s[k].reps;
                y[m++] = s[k].us * 1000;
            }
        double per = m >= 2 ? nk__calib_slope(x, y, m) : NAN;
        if (!(per > 0)) {
            snprintf(err, errlen, "%s: need latencies at two or more repetition counts that grow with them", pt->id);
            return NK_EINVAL;
        }
        if (n == 64)
            break;
        o[n].pt = pt;
        o[n++].per_rep = per;
    }
    if (!n) {
        snprintf(err, errlen, "no measurements");
        return NK_EINVAL;
    }
    rarch r = {*base, {0}};
    double v0[NPAR];
    for (int k = 0; k < NPAR; k++)
        v0[k] = r.v[k] = get(base, k);
    /* the free parameters: those some measured point depends on */
    int fr[NPAR], nf = 0;
    double *J = malloc(sizeof *J * (size_t)n * NPAR);
    if (!J)
        return NK_ENOMEM;
    {
        int all[NPAR];
        for (int k = 0; k < NPAR; k++)
            all[k] = k;
        jacobian(&r, v0, all, NPAR, o, n, J);
        for (int k = 0; k < NPAR; k++) {
            double c = 0;
            for (int i = 0; i < n; i++)
                c += fabs(J[i * NPAR + k]);
            if (c > 1e-9)
                fr[nf++] = k;
        }
    }
    double lambda = 1e-3, c0 = cost(&r, o, n);
    double A[NPAR * NPAR], g[NPAR];
    for (int it = 0; it < 200 && c0 > 1e-24; it++) {
        jacobian(&r, v0, fr, nf, o, n, J);
        memset(A, 0, sizeof A);
        memset(g, 0, sizeof g);
        for (int i = 0; i < n; i++) {
            double e = resid(&r, &o[i]);
            for (int a = 0; a < nf; a++) {
                g[a] -= J[i * nf + a] * e;
                for (int b = 0; b < nf; b++)
                    A[a * nf + b] += J[i * nf + a] * J[i * nf + b];
            }
        }
        int improved = 0;
        while (lambda < 1e12) {
            double M[NPAR * NPAR], d[NPAR];
            memcpy(M, A, sizeof M);
            memcpy(d, g, sizeof d);
            for (int a = 0; a < nf; a++)
                M[a * nf + a] += lambda * (A[a * nf + a] > 0 ? A[a * nf + a] : 1);
            if (solve(M, d, nf)) {
                lambda *= 10;
                continue;
            }
            rarch t = r;
            for (int a = 0; a < nf; a++)
                t.v[fr[a]] = fmax(r.v[fr[a]] + d[a] * v0[fr[a]], 1e-6 * v0[fr[a]]);
            double c1 = cost(&t, o, n);
            if (c1 < c0) {
                r = t;
                improved = c0 - c1 > 1e-15 * c0;
                c0 = c1;
                lambda = fmax(lambda / 10, 1e-12);
                break;
            }
            lambda *= 10;
        }
        if (!improved)
            break;
    }
    /* the result: integer keys rounded; standard errors from (J^T J)^-1 */
    nk_arch out = *base;
    for (int k = 0; k < NPAR; k++)
        set(&out, k, r.v[k], 1);
    rarch fin = {out, {0}};
    for (int k = 0; k < NPAR; k++)
        fin.v[k] = get(&out, k);
    jacobian(&fin, v0, fr, nf, o, n, J);
    memset(A, 0, sizeof A);
    double ss = 0;
    for (int i = 0; i < n; i++) {
        double e = resid(&fin, &o[i]);
        ss += e * e;
        if (fabs(e) >= fit->max_resid) {
            fit->max_resid = fabs(e);
            snprintf(fit->worst, sizeof fit->worst, "%s", o[i].pt->id);
        }
        for (int a = 0; a < nf; a++)
            for (int b = 0; b < nf; b++)
                A[a * nf + b] += J[i * nf + a] * J[i * nf + b];
    }
    double sigma2 = n > nf ? ss / (n - nf) : 0;
    fit->arch = out;
    fit->npoints = n;
    fit->rms_resid = sqrt(ss / n);
    for (int a = 0; a < nf && a < NK_CALIB_MAXPARAMS; a++) {
        int k = fr[a];
        nk_calib_fitted *f = &fit->par[fit->npar++];
        f->key = params[k].key;
        f->start = v0[k];
        f->value = get(&out, k);
        double M[NPAR * NPAR], e[NPAR] = {0};
        memcpy(M, A, sizeof M);
        e[a] = 1;
        f->stderr_ = solve(M, e, nf) ? INFINITY : sqrt(fmax(e[a], 0) * sigma2) * v0[k];
        double sr = 0;
        for (int i = 0; i < n; i++)
            if (fabs(J[i * nf + a]) > 1e-9) {
                double q = resid(&fin, &o[i]);
                sr += q * q;
                f->npoints++;
            }
        f->rms_resid = f->npoints ? sqrt(sr / f->npoints) : 0;
    }
    free(J);
    return 0;
}

int nk__calib_read_results(const char *text, const char *where, nk_calib_sample **out, size_t *n, char *err,
                          size_t errlen)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    nk_calib_sample *v = NULL;
    int line = 0, header = 0;
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char buf[256];
        line++;
        if (len >= sizeof buf) {
            snprintf(err, errlen, "%s:%d: line too long", where, line);
            goto fail;
        }
        memcpy(buf, p, len);
        buf[len] = 0;
        p += len + (e ? 1 : 0);
        char *c = strchr(buf, '#');
        if (c)
            *c = 0;
        for (char *q = buf + strlen(buf); q > buf && isspace((unsigned char)q[-1]);)
            *--q = 0;
        if (!buf[0])
            continue;
        if (!header) {
            if (strcmp(buf, "point,reps,p50_us")) {
                snprintf(err, errlen, "%s:%d: expected the header 'point,reps,p50_us'", where, line);
                goto fail;
            }
            header = 1;
            continue;
        }
        char id[64];
        int reps, used = 0;
        double us;
        if (sscanf(buf, "%63[^,],%d,%lf%n", id, &reps, &us, &used) != 3 || buf[used] || reps < 1 || !(us > 0) ||
            !isfinite(us)) {
            snprintf(err, errlen, "%s:%d: expected 'point,reps,p50_us' with reps >= 1 and a latency > 0", where, line);
            goto fail;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            nk_calib_sample *t = realloc(v, cap * sizeof *v);
            if (!t) {
                free(v);
                return NK_ENOMEM;
            }
            v = t;
        }
        snprintf(v[*n].id, sizeof v[*n].id, "%s", id);
        v[*n].reps = reps;
        v[(*n)++].us = us;
    }
    if (!header) {
        snprintf(err, errlen, "%s: empty (expected the header 'point,reps,p50_us')", where);
        goto fail;
    }
    *out = v;
    return 0;
fail:
    free(v);
    *n = 0;
    return NK_EINVAL;
}

int nk__calib_format_fit(const nk_calib_fit *fit, const char *name, char **text)
{
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    if (!s)
        return NK_ENOMEM;
    const nk_arch *b = nk__arch_get(fit->arch.name);
    len += (size_t)snprintf(s + len, cap - len,
                            "# nklab calibrate fit: %d benchmark points, rms relative residual %.3g%%, "
                            "worst %.3g%% (%s)\n"
                            "# key = value  # start value, standard error, rms residual of the points it informs\n"
                            "base = %s\nname = %s\n",
                            fit->npoints, 100 * fit->rms_resid, 100 * fit->max_resid, fit->worst,
                            b ? fit->arch.name : "trn1", name);
    for (int i = 0; i < fit->npar; i++) {
        const nk_calib_fitted *f = &fit->par[i];
        len += (size_t)snprintf(s + len, cap - len, "%-24s = %-12.10g # from %g, +- %.3g, residual %.3g%% over %d\n",
                                f->key, f->value, f->start, f->stderr_, 100 * f->rms_resid, f->npoints);
    }
    *text = s;
    return 0;
}
