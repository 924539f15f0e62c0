/*
 * npytool.c - .npy helper for the CLI tests, independent of nklab's own .npy
 * code and of its executor:
 *
 *   npytool rand OUT DTYPE SEED LO HI D0 [D1 D2 D3]
 *       random values uniform in [LO, HI] (DTYPE f4 or f8: rounded to
 *       float32; i4: integers), C order, version 1.0
 *   npytool exp IN OUT       OUT = exp(IN) computed in double, written as f8
 *   npytool cmp A B RTOL ATOL
 *       same shape and |a - b| <= ATOL + RTOL * |b| everywhere; prints the
 *       largest errors; exit 0 when within tolerance, 1 when not
 *   npytool info FILE        prints "DESCR [D0, D1, ...]"
 *
 * Exit 2 on a bad command line or a file it cannot read.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct arr {
    char descr[4];
    int ndim;
    long long shape[4];
    size_t n;
    double *v;
} arr;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "npytool: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static uint64_t le(const unsigned char *p, int size)
{
    uint64_t v = 0;
    for (int i = size - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
        die("cannot read %s", path);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Reads f4, f8 or i4 files into doubles. */
static arr load(const char *path)
{
    size_t len;
    unsigned char *b = slurp(path, &len);
    arr a = {{0}, 0, {0}, 1, NULL};
    if (len < 12 || memcmp(b, "\x93NUMPY", 6) || b[6] < 1 || b[6] > 3)
        die("%s: not a .npy file", path);
    size_t pre = b[6] == 1 ? 10 : 12, hl = (size_t)le(b + 8, b[6] == 1 ? 2 : 4);
    if (pre + hl > len)
        die("%s: truncated header", path);
    char *h = calloc(1, hl + 1);
    memcpy(h, b + pre, hl);
    char *d = strstr(h, "'descr': '"), *s = strstr(h, "'shape': ("), *fo = strstr(h, "'fortran_order': False");
    if (!d || !s || !fo)
        die("%s: header not understood", path);
    memcpy(a.descr, d + 10, 3);
    for (char *p = s + 10; *p != ')';) {
        if (a.ndim == 4)
            die("%s: more than 4 dims", path);
        a.shape[a.ndim] = strtoll(p, &p, 10);
        a.n *= (size_t)a.shape[a.ndim++];
        while (*p == ',' || *p == ' ')
            p++;
    }
    free(h);
    int size = a.descr[2] - '0';
    if (strcmp(a.descr, "<f4") && strcmp(a.descr, "<f8") && strcmp(a.descr, "<i4"))
        die("%s: dtype not handled", path);
    if (pre + hl + a.n * (size_t)size != len)
        die("%s: data size does not match the shape", path);
    a.v = malloc(a.n * sizeof *a.v);
    const unsigned char *p = b + pre + hl;
    for (size_t i = 0; i < a.n; i++) {
        uint64_t bits = le(p + i * (size_t)size, size);
        if (a.descr[1] == 'i') {
            a.v[i] = (int32_t)(uint32_t)bits;
        } else if (size == 4) {
            uint32_t u = (uint32_t)bits;
            float f;
            memcpy(&f, &u, 4);
            a.v[i] = f;
        } else {
            memcpy(&a.v[i], &bits, 8);
        }
    }
    free(b);
    return a;
}

static void save(const char *path, const arr *a)
{
    char dict[160], dims[96] = "";
    for (int i = 0; i < a->ndim; i++)
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%lld, ", a->shape[i]);
    if (a->ndim > 1)
        dims[strlen(dims) - 2] = 0; /* "(2, 3)"; a 1-dim shape keeps "(5,)" */
    else
        dims[strlen(dims) - 1] = 0;
    int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", a->descr, dims);
    size_t total = (10 + (size_t)dl + 1 + 63) / 64 * 64, hl = total - 10;
    FILE *f = fopen(path, "wb");
    if (!f)
        die("cannot write %s", path);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 255), (unsigned char)(hl >> 8)};
    fwrite(pre, 1, 10, f);
    fwrite(dict, 1, (size_t)dl, f);
    for (size_t i = (size_t)dl; i + 1 < hl; i++)
        fputc(' ', f);
    fputc('\n', f);
    int size = a->descr[2] - '0';
    for (size_t i = 0; i < a->n; i++) {
        uint64_t bits;
        if (a->descr[1] == 'i') {
            bits = (uint32_t)(int32_t)a->v[i];
        } else if (size == 4) {
            float x = (float)a->v[i];
            uint32_t u;
            memcpy(&u, &x, 4);
            bits = u;
        } else {
            memcpy(&bits, &a->v[i], 8);
        }
        for (int k = 0; k < size; k++)
            fputc((int)(bits >> (8 * k) & 255), f);
    }
    if (fclose(f))
        die("cannot write %s", path);
}

static uint64_t rng;
static double uniform(void) /* [0, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1.0p-53;
}

static int cmd_rand(int argc, char **argv)
{
    if (argc < 8 || argc > 11)
        die("usage: npytool rand OUT DTYPE SEED LO HI D0 [D1 D2 D3]");
    arr a = {{0}, argc - 7, {0}, 1, NULL};
    snprintf(a.descr, sizeof a.descr, "<%s", argv[3]);
    if (strcmp(argv[3], "f4") && strcmp(argv[3], "f8") && strcmp(argv[3], "i4"))
        die("rand: dtype %s is not f4, f8 or i4", argv[3]);
    rng = strtoull(argv[4], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
    double lo = atof(argv[5]), hi = atof(argv[6]);
    for (int i = 0; i < a.ndim; i++) {
        a.shape[i] = atoll(argv[7 + i]);
        a.n *= (size_t)a.shape[i];
    }
    a.v = malloc(a.n * sizeof *a.v);
    for (size_t i = 0; i < a.n; i++)
        a.v[i] = argv[3][0] == 'i' ? floor(lo + (hi - lo + 1) * uniform()) : (float)(lo + (hi - lo) * uniform());
    save(argv[2], &a);
    free(a.v);
    return 0;
}

static int cmd_exp(int argc, char **argv)
{
    if (argc != 4)
        die("usage: npytool exp IN OUT");
    arr a = load(argv[2]);
    for (size_t i = 0; i < a.n; i++)
        a.v[i] = exp(a.v[i]);
    strcpy(a.descr, "<f8");
    save(argv[3], &a);
    free(a.v);
    return 0;
}

static int cmd_cmp(int argc, char **argv)
{
    if (argc != 6)
        die("usage: npytool cmp A B RTOL ATOL");
    arr a = load(argv[2]), b = load(argv[3]);
    double rtol = atof(argv[4]), atol = atof(argv[5]);
    if (a.ndim != b.ndim || memcmp(a.shape, b.shape, sizeof a.shape)) {
        printf("shapes differ\n");
        free(a.v);
        free(b.v);
        return 1;
    }
    double max_abs = 0, max_rel = 0;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < a.n; i++) {
        double e = fabs(a.v[i] - b.v[i]);
        if (e > max_abs)
            max_abs = e;
        if (b.v[i] != 0 && e / fabs(b.v[i]) > max_rel)
            max_rel = e / fabs(b.v[i]);
        if (!(e <= atol + rtol * fabs(b.v[i])) && !bad++)
            first = i;
    }
    printf("%zu elements, max abs err %.3g, max rel err %.3g, %zu outside tolerance", a.n, max_abs, max_rel, bad);
    if (bad)
        printf(" (first at %zu: %.9g vs %.9g)", first, a.v[first], b.v[first]);
    printf("\n");
    free(a.v);
    free(b.v);
    return bad ? 1 : 0;
}

static int cmd_info(int argc, char **argv)
{
    if (argc != 3)
        die("usage: npytool info FILE");
    arr a = load(argv[2]);
    printf("%s [", a.descr);
    for (int i = 0; i < a.ndim; i++)
        printf("%s%lld", i ? ", " : "", a.shape[i]);
    printf("]\n");
    free(a.v);
    return 0;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    if (!strcmp(c, "rand"))
        return cmd_rand(argc, argv);
    if (!strcmp(c, "exp"))
        return cmd_exp(argc, argv);
    if (!strcmp(c, "cmp"))
        return cmd_cmp(argc, argv);
    if (!strcmp(c, "info"))
        return cmd_info(argc, argv);
    die("usage: npytool rand|exp|cmp|info ...");
}
