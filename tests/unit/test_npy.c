/*
 * test_npy.c - the .npy reader and writer: round trips, every source dtype
 * against values written here, conversions to kernel dtypes, and every
 * malformed variant with its exact message, through both the file reader
 * and the in-memory decoder. Files are built byte by byte in this file.
 */
#include "test.h"
#include "cli/npy.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* ---- building files by hand */

typedef struct fbuf {
    uint8_t b[4096];
    size_t n;
} fbuf;

static void put(fbuf *f, const void *p, size_t n)
{
    memcpy(f->b + f->n, p, n);
    f->n += n;
}

/* magic, version major.minor, header length in the version's width, header. */
static void npy_head(fbuf *f, int major, int minor, const char *header)
{
    f->n = 0;
    put(f, "\x93NUMPY", 6);
    uint8_t v[2] = {(uint8_t)major, (uint8_t)minor};
    put(f, v, 2);
    size_t hl = strlen(header);
    uint8_t len[4] = {(uint8_t)(hl & 255), (uint8_t)(hl >> 8 & 255), (uint8_t)(hl >> 16 & 255), 0};
    put(f, len, major == 1 ? 2 : 4);
    put(f, header, hl);
}

static void put_le(fbuf *f, uint64_t v, int size)
{
    for (int i = 0; i < size; i++)
        f->b[f->n++] = (uint8_t)(v >> (8 * i));
}

static void put_f32(fbuf *f, float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    put_le(f, u, 4);
}

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
    static char p[4][128];
    static int k;
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/nklab_npy_XXXXXX");
        if (!mkdtemp(tmpdir))
            return NULL;
    }
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", tmpdir, name);
    return p[k];
}

static void write_file(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK_INT(fwrite(b, 1, n, f), n);
    fclose(f);
}

static size_t read_file(const char *path, uint8_t *b, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(b, 1, cap, f);
    fclose(f);
    return n;
}

/* Decodes f from memory (as "t.npy") and from a file; both must agree. */
static int decode_both(const fbuf *f, nk_dtype want, nk_array *out, char *err, size_t errlen)
{
    int rc = nk_npy_decode("t.npy", f->b, f->n, want, out, NULL, err, errlen);
    const char *path = tmp_path("t.npy");
    write_file(path, f->b, f->n);
    nk_array a2;
    char err2[512], expect2[600];
    int rc2 = nk_npy_read(path, want, &a2, NULL, err2, sizeof err2);
    CHECK_INT(rc2, rc);
    if (rc) {
        snprintf(expect2, sizeof expect2, "%s%s", path, err + strlen("t.npy"));
        CHECK_STR(err2, expect2);
    } else {
        CHECK_INT(a2.ndim, out->ndim);
        CHECK(!memcmp(a2.shape, out->shape, sizeof a2.shape));
        CHECK(!memcmp(a2.data, out->data, nk_array_nbytes(out)));
        nk_array_free(&a2);
    }
    unlink(path);
    return rc;
}

/* Expects decoding f to fail with status and exactly msg. */
static void expect_error(int line, const fbuf *f, int status, const char *msg)
{
    nk_array a;
    char err[512] = "";
    int rc = decode_both(f, NK_F32, &a, err, sizeof err);
    if (rc != status)
        nk_test_fail(__FILE__, line, "status %d, want %d (%s)", rc, status, err);
    if (strcmp(err, msg))
        nk_test_fail(__FILE__, line, "message \"%s\", want \"%s\"", err, msg);
    if (!rc)
        nk_array_free(&a);
}
#define EXPECT_ERROR(f, st, msg) expect_error(__LINE__, (f), (st), (msg))

static const char *H23 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

/* A valid [2, 3] float32 file with values 0.5 * i. */
static void valid23(fbuf *f, int major, const char *header)
{
    npy_head(f, major, 0, header);
    for (int i = 0; i < 6; i++)
        put_f32(f, 0.5f * (float)i);
}

/* ---- round trips and the written format */

TEST(npy_write_read_round_trip_f32)
{
    nk_array a;
    int64_t shape[2] = {3, 5};
    CHECK_INT(nk_array_alloc(&a, NK_F32, 2, shape), 0);
    float *x = a.data;
    float special[5] = {-0.0f, 1e-45f, 3.4028235e38f, -1.5f, 0.1f};
    for (int i = 0; i < 15; i++)
        x[i] = i < 5 ? special[i] : (float)(i * i) / 7.0f;
    const char *path = tmp_path("rt.npy");
    char err[512] = "";
    CHECK_INT(nk_npy_write(path, &a, err, sizeof err), 0);
    uint8_t b[1024];
    size_t n = read_file(path, b, sizeof b);
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }";
    CHECK_INT(n, 128 + 15 * 4); /* 10 + header padded to 64-byte alignment */
    CHECK(!memcmp(b, "\x93NUMPY\x01\x00", 8));
    CHECK_INT(b[8] | b[9] << 8, 118);
    CHECK(!memcmp(b + 10, dict, strlen(dict)));
    for (size_t i = 10 + strlen(dict); i < 127; i++)
        CHECK_INT(b[i], ' ');
    CHECK_INT(b[127], '\n');
    for (int i = 0; i < 15; i++) {
        uint32_t u = (uint32_t)b[128 + 4 * i] | (uint32_t)b[129 + 4 * i] << 8 | (uint32_t)b[130 + 4 * i] << 16 |
                     (uint32_t)b[131 + 4 * i] << 24;
        uint32_t want;
        memcpy(&want, &x[i], 4);
        CHECK_INT(u, want);
    }
    nk_array r;
    nk_npy_info info;
    CHECK_INT(nk_npy_read(path, NK_F32, &r, &info, err, sizeof err), 0);
    CHECK_INT(info.major, 1);
    CHECK_STR(info.descr, "<f4");
    CHECK_INT(info.data_offset, 128);
    CHECK_INT(r.dtype, NK_F32);
    CHECK_INT(r.ndim, 2);
    CHECK_INT(r.shape[0], 3);
    CHECK_INT(r.shape[1], 5);
    CHECK(!memcmp(r.data, a.data, 60));
    nk_array_free(&r);
    nk_array_free(&a);
    unlink(path);
}

TEST(npy_write_shapes_1d_and_4d)
{
    nk_array a;
    int64_t s1[1] = {7}, s4[4] = {2, 1, 3, 2};
    uint8_t b[1024];
    char err[512];
    const char *path = tmp_path("s.npy");
    CHECK_INT(nk_array_alloc(&a, NK_F32, 1, s1), 0);
    CHECK_INT(nk_npy_write(path, &a, err, sizeof err), 0);
    size_t n = read_file(path, b, sizeof b);
    const char *d1 = "{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }";
    CHECK(!memcmp(b + 10, d1, strlen(d1)));
    CHECK_INT(n, 128 + 28); /* 10 + 57 + newline is 68: padded to 128 */
    nk_array_free(&a);
    CHECK_INT(nk_array_alloc(&a, NK_F32, 4, s4), 0);
    CHECK_INT(nk_npy_write(path, &a, err, sizeof err), 0);
    n = read_file(path, b, sizeof b);
    const char *d4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 3, 2), }";
    CHECK(!memcmp(b + 10, d4, strlen(d4)));
    CHECK_INT(n, 128 + 48);
    nk_array r;
    CHECK_INT(nk_npy_read(path, NK_F32, &r, NULL, err, sizeof err), 0);
    CHECK_INT(r.ndim, 4);
    CHECK_INT(r.shape[2], 3);
    nk_array_free(&r);
    nk_array_free(&a);
    unlink(path);
}

TEST(npy_write_converts_other_dtypes_to_f32)
{
    char err[512];
    const char *path = tmp_path("c.npy");
    nk_array a;
    int64_t s[1] = {3};
    CHECK_INT(nk_array_alloc(&a, NK_BF16, 1, s), 0);
    uint16_t bf[3] = {0x3F80, 0xC0A0, 0x0001}; /* 1, -5, the smallest bf16 subnormal 2^-133 */
    memcpy(a.data, bf, sizeof bf);
    CHECK_INT(nk_npy_write(path, &a, err, sizeof err), 0);
    nk_array r;
    CHECK_INT(nk_npy_read(path, NK_F32, &r, NULL, err, sizeof err), 0);
    const float *y = r.data;
    CHECK(y[0] == 1.0f);
    CHECK(y[1] == -5.0f);
    CHECK(y[2] == 0x1.0p-133f);
    nk_array_free(&r);
    nk_array_free(&a);
    CHECK_INT(nk_array_alloc(&a, NK_I32, 1, s), 0);
    int32_t iv[3] = {-7, 16777217, INT32_MIN};
    memcpy(a.data, iv, sizeof iv);
    CHECK_INT(nk_npy_write(path, &a, err, sizeof err), 0);
    CHECK_INT(nk_npy_read(path, NK_F32, &r, NULL, err, sizeof err), 0);
    y = r.data;
    CHECK(y[0] == -7.0f);
    CHECK(y[1] == 16777216.0f); /* 2^24 + 1 rounds to even */
    CHECK(y[2] == -2147483648.0f);
    nk_array_free(&r);
    nk_array_free(&a);
    unlink(path);
}

TEST(npy_write_errors)
{
    char err[512], want[512];
    nk_array a;
    int64_t s[1] = {4};
    CHECK_INT(nk_array_alloc(&a, NK_F32, 1, s), 0);
    const char *path = tmp_path("no/such/dir/y.npy");
    CHECK_INT(nk_npy_write(path, &a, err, sizeof err), NK_EIO);
    (void)want;
    CHECK_STR(err, "No such file or directory"); /* the reason alone: the caller names the file */
    /* a full device: as root a node of our own (1,7, what /dev/full is), so
     * that a regression replaces it and not the system's */
    struct stat st;
    const char *full = "/dev/full";
    if (geteuid() == 0 && !mknod(tmp_path("full"), S_IFCHR | 0666, makedev(1, 7)))
        full = tmp_path("full");
    if (!stat(full, &st) && S_ISCHR(st.st_mode)) {
        CHECK_INT(nk_npy_write(full, &a, err, sizeof err), NK_EIO);
        CHECK_STR(err, "No space left on device");
        CHECK(!stat(full, &st) && S_ISCHR(st.st_mode)); /* never removed or replaced */
    }
    if (strcmp(full, "/dev/full"))
        unlink(full);
    a.ndim = 0;
    CHECK_INT(nk_npy_write(tmp_path("z.npy"), &a, err, sizeof err), NK_EINVAL);
    CHECK_STR(err, "not a valid array");
    nk_array_free(&a);
}

/* A write that fails part way (the file-size limit, EFBIG: a failed write(2)
 * as a full disk gives) keeps the old file whole, and leaves no temporary
 * file. It used to truncate the old file, then delete it. */
TEST(npy_write_failure_keeps_old_file)
{
    const char *path = tmp_path("old.npy");
    nk_array a, r;
    int64_t s1[1] = {3}, s2[1] = {100000};
    char err[512];
    CHECK_INT(nk_array_alloc(&a, NK_F32, 1, s1), 0);
    ((float *)a.data)[0] = 7;
    CHECK_INT(nk_npy_write(path, &a, err, sizeof err), 0);
    nk_array_free(&a);
    CHECK_INT(nk_array_alloc(&a, NK_F32, 1, s2), 0);
    struct rlimit old;
    getrlimit(RLIMIT_FSIZE, &old);
    void (*oldh)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {65536, old.rlim_max};
    CHECK_INT(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = nk_npy_write(path, &a, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, oldh);
    CHECK_INT(rc, NK_EIO);
    CHECK_STR(err, strerror(EFBIG));
    nk_array_free(&a);
    CHECK_INT(nk_npy_read(path, NK_F32, &r, NULL, err, sizeof err), 0);
    CHECK_INT(r.ndim == 1 ? r.shape[0] : -1, 3);
    CHECK(r.data && ((float *)r.data)[0] == 7);
    nk_array_free(&r);
    DIR *d = opendir(tmpdir);
    int others = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        others += e->d_name[0] == '.' && strstr(e->d_name, ".tmp") != NULL;
    if (d)
        closedir(d);
    CHECK_INT(others, 0);
    unlink(path);
}

/* A FIFO as input is refused at once, not waited on (it used to block in
 * open until a writer came). */
TEST(npy_read_refuses_fifo)
{
    const char *path = tmp_path("in.fifo");
    char err[512], want[512];
    nk_array a;
    CHECK_INT(mkfifo(path, 0600), 0);
    CHECK_INT(nk_npy_read(path, NK_F32, &a, NULL, err, sizeof err), NK_EIO);
    snprintf(want, sizeof want, "%s: not a regular file (a FIFO)", path);
    CHECK_STR(err, want);
    CHECK(a.data == NULL);
    unlink(path);
}

/* ---- every source dtype */

/* One element per value, dtype descr, header of shape (n,). */
static void one_d(fbuf *f, const char *descr, int size, const uint64_t *bits, int n)
{
    char h[128];
    snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }", descr, n);
    npy_head(f, 1, 0, h);
    for (int i = 0; i < n; i++)
        put_le(f, bits[i], size);
}

static void check_values(int line, const char *descr, int size, const uint64_t *bits, const float *want, int n)
{
    fbuf f;
    one_d(&f, descr, size, bits, n);
    nk_array a;
    char err[512] = "";
    int rc = decode_both(&f, NK_F32, &a, err, sizeof err);
    if (rc) {
        nk_test_fail(__FILE__, line, "%s: %s", descr, err);
        return;
    }
    const float *y = a.data;
    for (int i = 0; i < n; i++) {
        uint32_t got, exp;
        memcpy(&got, &y[i], 4);
        memcpy(&exp, &want[i], 4);
        if (got != exp)
            nk_test_fail(__FILE__, line, "%s element %d: %.9g (0x%08x), want %.9g (0x%08x)", descr, i, y[i], got,
                         want[i], exp);
    }
    nk_array_free(&a);
}
#define CHECK_VALUES(descr, size, bits, want) \
    check_values(__LINE__, descr, size, bits, want, (int)(sizeof(want) / sizeof(want)[0]))

static uint64_t f64_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}

static uint64_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

TEST(npy_reads_every_dtype_as_f32)
{
    uint64_t f2[] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00, 0x3555};
    float f2w[] = {1.0f, -2.0f, 65504.0f, 0x1.0p-24f, INFINITY, 0.333251953125f};
    CHECK_VALUES("<f2", 2, f2, f2w);
    uint64_t f4[] = {f32_bits(-0.0f), f32_bits(1e-45f), f32_bits(3.25f), f32_bits(-INFINITY)};
    float f4w[] = {-0.0f, 1e-45f, 3.25f, -INFINITY};
    CHECK_VALUES("<f4", 4, f4, f4w);
    uint64_t f8[] = {f64_bits(0.1), f64_bits(1e300), f64_bits(1e-300), f64_bits(-2.5)};
    float f8w[] = {0.1f, INFINITY, 0.0f, -2.5f};
    CHECK_VALUES("<f8", 8, f8, f8w);
    uint64_t i1[] = {0x80, 0x7F, 0xFF};
    float i1w[] = {-128.0f, 127.0f, -1.0f};
    CHECK_VALUES("|i1", 1, i1, i1w);
    CHECK_VALUES("<i1", 1, i1, i1w);
    uint64_t i2[] = {0x8000, 0x7FFF, 0xFFFE};
    float i2w[] = {-32768.0f, 32767.0f, -2.0f};
    CHECK_VALUES("<i2", 2, i2, i2w);
    uint64_t i4[] = {0x80000000u, 16777217u, 0xFFFFFFF9u};
    float i4w[] = {-2147483648.0f, 16777216.0f, -7.0f};
    CHECK_VALUES("<i4", 4, i4, i4w);
    uint64_t i8[] = {(uint64_t)-5, 1ull << 40};
    float i8w[] = {-5.0f, 0x1.0p40f};
    CHECK_VALUES("<i8", 8, i8, i8w);
    uint64_t u1[] = {255, 0};
    float u1w[] = {255.0f, 0.0f};
    CHECK_VALUES("|u1", 1, u1, u1w);
    uint64_t u2[] = {65535};
    float u2w[] = {65535.0f};
    CHECK_VALUES("<u2", 2, u2, u2w);
    uint64_t u4[] = {4000000000u};
    float u4w[] = {4e9f};
    CHECK_VALUES("<u4", 4, u4, u4w);
    uint64_t u8[] = {1ull << 63};
    float u8w[] = {0x1.0p63f};
    CHECK_VALUES("<u8", 8, u8, u8w);
    uint64_t b1[] = {0, 1, 2};
    float b1w[] = {0.0f, 1.0f, 1.0f};
    CHECK_VALUES("|b1", 1, b1, b1w);
}

TEST(npy_f4_nan_survives)
{
    uint64_t bits[] = {0x7FC00001};
    fbuf f;
    one_d(&f, "<f4", 4, bits, 1);
    nk_array a;
    char err[512];
    CHECK_INT(decode_both(&f, NK_F32, &a, err, sizeof err), 0);
    CHECK(isnan(((float *)a.data)[0]));
    nk_array_free(&a);
}

/* ---- conversion to kernel dtypes */

TEST(npy_converts_to_bf16_with_round_to_even)
{
    /* 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: even is 1 (0x3F80);
     * 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: even is 0x3F82. */
    uint64_t bits[] = {f32_bits(1.00390625f), f32_bits(1.01171875f), f32_bits(-2.0f)};
    fbuf f;
    one_d(&f, "<f4", 4, bits, 3);
    nk_array a;
    char err[512];
    CHECK_INT(decode_both(&f, NK_BF16, &a, err, sizeof err), 0);
    CHECK_INT(a.dtype, NK_BF16);
    const uint16_t *h = a.data;
    CHECK_INT(h[0], 0x3F80);
    CHECK_INT(h[1], 0x3F82);
    CHECK_INT(h[2], 0xC000);
    nk_array_free(&a);
}

TEST(npy_converts_to_integers_directly)
{
    fbuf f;
    nk_array a;
    char err[512];
    uint64_t d[] = {f64_bits(2.5), f64_bits(3.5), f64_bits(-2.5), f64_bits(1e10), f64_bits(-1e10), f64_bits(NAN)};
    one_d(&f, "<f8", 8, d, 6);
    CHECK_INT(decode_both(&f, NK_I32, &a, err, sizeof err), 0);
    const int32_t *v = a.data;
    CHECK_INT(v[0], 2);
    CHECK_INT(v[1], 4);
    CHECK_INT(v[2], -2);
    CHECK_INT(v[3], INT32_MAX);
    CHECK_INT(v[4], INT32_MIN);
    CHECK_INT(v[5], 0);
    nk_array_free(&a);
    /* integers keep every bit (no detour through float32) */
    uint64_t i[] = {16777217u, 0x80000001u};
    one_d(&f, "<i4", 4, i, 2);
    CHECK_INT(decode_both(&f, NK_I32, &a, err, sizeof err), 0);
    v = a.data;
    CHECK_INT(v[0], 16777217);
    CHECK_INT(v[1], -2147483647);
    nk_array_free(&a);
    uint64_t s[] = {(uint16_t)-3, 300, 7};
    one_d(&f, "<i2", 2, s, 3);
    CHECK_INT(decode_both(&f, NK_U8, &a, err, sizeof err), 0);
    const uint8_t *u = a.data;
    CHECK_INT(u[0], 0);
    CHECK_INT(u[1], 255);
    CHECK_INT(u[2], 7);
    nk_array_free(&a);
    uint64_t big[] = {1ull << 40};
    one_d(&f, "<i8", 8, big, 1);
    CHECK_INT(decode_both(&f, NK_U32, &a, err, sizeof err), 0);
    CHECK_INT(((uint32_t *)a.data)[0], UINT32_MAX);
    nk_array_free(&a);
}

TEST(npy_many_chunks_both_paths)
{
    /* 3 x 1000 float64 values: crosses the reader's conversion chunks */
    static fbuf f;
    const char *h = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 1000), }";
    f.n = 0;
    put(&f, "\x93NUMPY\x01\x00", 8);
    uint8_t len[2] = {(uint8_t)strlen(h), 0};
    put(&f, len, 2);
    put(&f, h, strlen(h));
    uint8_t *big = malloc(f.n + 3000 * 8);
    memcpy(big, f.b, f.n);
    for (int i = 0; i < 3000; i++) {
        uint64_t u = f64_bits(0.5 * i - 700);
        for (int k = 0; k < 8; k++)
            big[f.n + 8 * (size_t)i + (size_t)k] = (uint8_t)(u >> (8 * k));
    }
    size_t n = f.n + 3000 * 8;
    const char *path = tmp_path("big.npy");
    write_file(path, big, n);
    nk_array a, b;
    char err[512];
    CHECK_INT(nk_npy_decode("big.npy", big, n, NK_F32, &a, NULL, err, sizeof err), 0);
    CHECK_INT(nk_npy_read(path, NK_F32, &b, NULL, err, sizeof err), 0);
    int bad = 0;
    for (int i = 0; i < 3000; i++)
        bad += ((float *)a.data)[i] != (float)(0.5 * i - 700) || ((float *)b.data)[i] != (float)(0.5 * i - 700);
    CHECK_INT(bad, 0);
    nk_array_free(&a);
    nk_array_free(&b);
    free(big);
    unlink(path);
}

/* ---- header variants that are valid */

TEST(npy_accepts_header_variants)
{
    static const char *ok[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }                                     \n",
        "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
        "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}\n",
        "{'descr':'<f4','fortran_order':False,'shape':(2,3)}",
        "{ 'descr' : '<f4' ,\t'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }\n",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        for (int major = 1; major <= 3; major++) {
            fbuf f;
            valid23(&f, major, ok[i]);
            nk_array a;
            char err[512] = "";
            int rc = decode_both(&f, NK_F32, &a, err, sizeof err);
            if (rc) {
                nk_test_fail(__FILE__, __LINE__, "variant %zu, version %d: %s", i, major, err);
                continue;
            }
            CHECK_INT(a.ndim, 2);
            CHECK_INT(a.shape[0], 2);
            CHECK_INT(a.shape[1], 3);
            CHECK(((float *)a.data)[5] == 2.5f);
            nk_array_free(&a);
        }
    }
}

/* ---- malformed files, each with its exact message */

TEST(npy_rejects_bad_preamble)
{
    fbuf f = {{0}, 0};
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: empty file (not a .npy file)");
    f.n = 0;
    put(&f, "hello, not an array", 19);
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: not a .npy file (bad magic)");
    f.n = 0;
    put(&f, "\x93NUM", 4);
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: truncated header (the file ends after 4 bytes)");
    f.n = 0;
    put(&f, "\x93NUMPX", 6);
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: not a .npy file (bad magic)");
    valid23(&f, 4, H23);
    EXPECT_ERROR(&f, NK_EVERSION, "t.npy: unsupported .npy version 4.0 (1.0, 2.0 and 3.0 are read)");
    npy_head(&f, 1, 1, H23);
    EXPECT_ERROR(&f, NK_EVERSION, "t.npy: unsupported .npy version 1.1 (1.0, 2.0 and 3.0 are read)");
    valid23(&f, 1, H23);
    f.n = 9;
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: truncated header (the file ends after 9 bytes)");
    valid23(&f, 2, H23);
    f.n = 11;
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: truncated header (the file ends after 11 bytes)");
    valid23(&f, 1, H23);
    f.b[8] = 0xE8; /* header length 1000 */
    f.b[9] = 0x03;
    char msg[128];
    snprintf(msg, sizeof msg, "t.npy: truncated header (1000 bytes announced, %zu present)", strlen(H23) + 24);
    EXPECT_ERROR(&f, NK_EFORMAT, msg);
    valid23(&f, 2, H23);
    f.b[8] = 0xFF, f.b[9] = 0xFF, f.b[10] = 0xFF, f.b[11] = 0x7F;
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: absurd header length 2147483647 (at most 65536 bytes)");
}

/* The message for header h with data of the [2, 3] float32 array. */
static void expect_header_error(int line, const char *h, int status, const char *msg)
{
    fbuf f;
    valid23(&f, 1, h);
    expect_error(line, &f, status, msg);
}
#define EXPECT_HEADER_ERROR(h, st, msg) expect_header_error(__LINE__, (h), (st), (msg))

TEST(npy_rejects_bad_header_dicts)
{
    char msg[256];
    EXPECT_HEADER_ERROR("[1, 2]", NK_EFORMAT, "t.npy: malformed header: expected '{' at byte 0");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False}", NK_EFORMAT, "t.npy: header has no 'shape'");
    EXPECT_HEADER_ERROR("{'shape': (2, 3), 'fortran_order': False}", NK_EFORMAT, "t.npy: header has no 'descr'");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'shape': (2, 3)}", NK_EFORMAT, "t.npy: header has no 'fortran_order'");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", NK_EFORMAT,
                        "t.npy: header repeats the key 'descr'");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", NK_EFORMAT,
                        "t.npy: header has an unexpected key 'extra'");
    const char *h = "{'descr': '<f4', 'fortran_order': no, 'shape': (2, 3)}";
    snprintf(msg, sizeof msg, "t.npy: malformed header: expected True or False at byte %d",
             (int)(strstr(h, "no") - h));
    EXPECT_HEADER_ERROR(h, NK_EFORMAT, msg);
    h = "{'descr': 5, 'fortran_order': False, 'shape': (2, 3)}";
    snprintf(msg, sizeof msg, "t.npy: malformed header: expected a quoted string at byte %d",
             (int)(strchr(h, '5') - h));
    EXPECT_HEADER_ERROR(h, NK_EFORMAT, msg);
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x";
    snprintf(msg, sizeof msg, "t.npy: malformed header: unexpected text after the dict at byte %d",
             (int)(strlen(h) - 1));
    EXPECT_HEADER_ERROR(h, NK_EFORMAT, msg);
    EXPECT_HEADER_ERROR("{'descr': '<f4", NK_EFORMAT, "t.npy: malformed header: unterminated string");
    h = "{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3)}";
    snprintf(msg, sizeof msg, "t.npy: malformed header: expected ':' after a key at byte %d",
             (int)(strstr(h, " '<") - h + 1));
    EXPECT_HEADER_ERROR(h, NK_EFORMAT, msg);
    h = "{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}";
    snprintf(msg, sizeof msg, "t.npy: malformed header: expected ',' or '}' at byte %d",
             (int)(strstr(h, "'fortran") - h));
    EXPECT_HEADER_ERROR(h, NK_EFORMAT, msg);
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)",
                        NK_EFORMAT, "t.npy: malformed header: expected ',' or '}', found the end");
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}";
    snprintf(msg, sizeof msg, "t.npy: malformed header: expected a shape tuple '(' at byte %d",
             (int)(strchr(h, '[') - h));
    EXPECT_HEADER_ERROR(h, NK_EFORMAT, msg);
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2; 3)}";
    snprintf(msg, sizeof msg, "t.npy: malformed header: expected ',' or ')' in the shape at byte %d",
             (int)(strchr(h, ';') - h));
    EXPECT_HEADER_ERROR(h, NK_EFORMAT, msg);
}

TEST(npy_rejects_unsupported_layouts_and_dtypes)
{
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", NK_EFORMAT,
                        "t.npy: fortran_order True (column-major data) is not supported; save a C-order array");
    EXPECT_HEADER_ERROR("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", NK_EDTYPE,
                        "t.npy: big-endian dtype '>f4' is not supported (save as '<f4')");
    EXPECT_HEADER_ERROR("{'descr': '>i2', 'fortran_order': False, 'shape': (2, 3), }", NK_EDTYPE,
                        "t.npy: big-endian dtype '>i2' is not supported (save as '<i2')");
    static const char *bad[] = {"<c8", "<U10", "=f4", "|f4", "<f3", "<b2", "O", "<M8[ns]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char h[128], msg[256];
        snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (2, 3), }", bad[i]);
        snprintf(msg, sizeof msg,
                 "t.npy: unsupported dtype '%s' (little-endian f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1 are read)",
                 bad[i]);
        EXPECT_HEADER_ERROR(h, NK_EDTYPE, msg);
    }
    EXPECT_HEADER_ERROR("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }", NK_EDTYPE,
                        "t.npy: structured dtypes are not supported");
}

TEST(npy_rejects_bad_shapes_and_sizes)
{
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 2, 3), }", NK_ESHAPE,
                        "t.npy: rank 5 is not supported (1 to 4 dims)");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", NK_ESHAPE,
                        "t.npy: rank 0 is not supported (1 to 4 dims)");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 0), }", NK_ESHAPE,
                        "t.npy: zero-size dimension in shape [2, 0]");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", NK_EFORMAT,
                        "t.npy: negative dimension in shape");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", NK_EFORMAT,
                        "t.npy: malformed header: shape (N) is not a tuple; a 1-dim shape is written (N,)");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }", NK_ESHAPE,
                        "t.npy: absurd size: shape [100000, 100000] has more than 2147483648 elements");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 1), }", NK_EFORMAT,
                        "t.npy: absurd size: a shape dimension exceeds 2147483647");
    /* a dimension that fits int32 but no file: rejected by size before allocating */
    EXPECT_HEADER_ERROR("{'descr': '<f8', 'fortran_order': False, 'shape': (2147483647,), }", NK_EFORMAT,
                        "t.npy: truncated data (17179869176 bytes expected, 24 present)");
    fbuf f;
    valid23(&f, 1, H23);
    f.n--;
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: truncated data (24 bytes expected, 23 present)");
    f.n += 2;
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: 1 byte of trailing data after the array");
    f.n += 5;
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: 6 bytes of trailing data after the array");
}

/* A NUL inside the header, as in the descr '<f4\0', is refused: read as a C
 * string the descr was '<f4' and the file was accepted. */
TEST(npy_nul_in_header)
{
    static const char h[] = "{'descr': '<f4\0', 'fortran_order': False, 'shape': (2, 3), }";
    fbuf f;
    npy_head(&f, 1, 0, "");
    size_t hl = sizeof h - 1; /* the NUL inside counts, the terminator does not */
    f.b[8] = (uint8_t)hl;
    f.b[9] = 0;
    put(&f, h, hl);
    for (int i = 0; i < 6; i++)
        put_f32(&f, 0.5f * (float)i);
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: malformed header: a NUL byte at byte 14");
    static const char k[] = "{'descr': '<f4', 'fortran_order': False, 'sha\0pe': (2, 3), }";
    npy_head(&f, 1, 0, "");
    f.b[8] = (uint8_t)(sizeof k - 1);
    put(&f, k, sizeof k - 1);
    for (int i = 0; i < 6; i++)
        put_f32(&f, 0.5f * (float)i);
    EXPECT_ERROR(&f, NK_EFORMAT, "t.npy: malformed header: a NUL byte at byte 45");
}

TEST(npy_file_errors)
{
    nk_array a;
    char err[512], want[512];
    const char *path = tmp_path("missing.npy");
    CHECK_INT(nk_npy_read(path, NK_F32, &a, NULL, err, sizeof err), NK_EIO);
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
    CHECK_STR(err, want);
    CHECK(a.data == NULL);
    CHECK_INT(nk_npy_read(tmpdir, NK_F32, &a, NULL, err, sizeof err), NK_EIO);
    snprintf(want, sizeof want, "%s: not a regular file (a directory)", tmpdir);
    CHECK_STR(err, want);
    fbuf f;
    valid23(&f, 1, H23);
    CHECK_INT(nk_npy_decode("t.npy", f.b, f.n, (nk_dtype)99, &a, NULL, err, sizeof err), NK_EINVAL);
    CHECK_STR(err, "t.npy: invalid target dtype 99");
}

/* Random corruptions of a valid file never crash or read out of bounds (run
 * under ASan) and either fail with a message naming the file or decode an
 * array whose size matches the file. */
TEST(npy_fuzz_corruptions)
{
    fbuf base;
    valid23(&base, 1, H23);
    uint64_t s = 0x243F6A8885A308D3ull;
    int ok = 0, bad = 0;
    for (int it = 0; it < 20000; it++) {
        fbuf f = base;
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        int flips = 1 + (int)(s % 4);
        for (int k = 0; k < flips; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            size_t pos = (size_t)(s >> 8) % f.n;
            static const char alphabet[] = "{}()[],:'\" 0123456789-LTrueFalse<>|fiub\n\x93";
            f.b[pos] = (s & 1) ? (uint8_t)(s >> 40) : (uint8_t)alphabet[(s >> 16) % (sizeof alphabet - 1)];
        }
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        if (s % 5 == 0)
            f.n = (size_t)(s >> 20) % (f.n + 1);
        uint8_t *copy = malloc(f.n ? f.n : 1); /* exact size, so ASan sees any overread */
        memcpy(copy, f.b, f.n);
        nk_array a;
        nk_npy_info info;
        char err[512] = "";
        int rc = nk_npy_decode("t.npy", copy, f.n, NK_F32, &a, &info, err, sizeof err);
        if (rc) {
            bad++;
            if (strncmp(err, "t.npy: ", 7) || strchr(err, '\n'))
                nk_test_fail(__FILE__, __LINE__, "iteration %d: message \"%s\"", it, err);
        } else {
            ok++;
            size_t numel = nk_array_numel(&a);
            if (info.ndim < 1 || info.ndim > 4 || info.data_offset + numel * (size_t)info.itemsize != f.n)
                nk_test_fail(__FILE__, __LINE__, "iteration %d: accepted an inconsistent file", it);
            nk_array_free(&a);
        }
        free(copy);
    }
    CHECK(ok > 0);
    CHECK(bad > 1000);
}

TEST(npy_zz_cleanup)
{
    if (tmpdir[0])
        CHECK_INT(rmdir(tmpdir), 0);
}
