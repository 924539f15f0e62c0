/*
 * fuzz_npy.c - libFuzzer target over the CLI's .npy reader.
 *
 * The first input byte picks the dtype the values are converted to (mod
 * NK_DTYPE_COUNT; 255: an invalid one); the rest is the file. The reader
 * from memory (nk_npy_decode) and the reader from a file (nk_npy_read) must
 * agree: the same status and message, the same header, the same values,
 * byte for byte. An array read as float32 must write (nk_npy_write) and read
 * back to the same values.
 */
#include "fuzz_common.h"
#include "cli/npy.h"

static int same_f32(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(a[i] == b[i] || (isnan(a[i]) && isnan(b[i]))) || signbit(a[i]) != signbit(b[i]))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    nk_dtype want = data[0] == 255 ? (nk_dtype)NK_DTYPE_COUNT : (nk_dtype)(data[0] % NK_DTYPE_COUNT);
    data++;
    size--;
    const char *path = fz_scratch(data, size);
    nk_array a, b;
    nk_npy_info ia, ib;
    char ea[512] = "", eb[512] = "";
    int ra = nk_npy_decode(path, data, size, want, &a, &ia, ea, sizeof ea);
    int rb = nk_npy_read(path, want, &b, &ib, eb, sizeof eb);
    if (ra != rb || strcmp(ea, eb)) {
        fprintf(stderr, "fuzz: the readers disagree:\n  memory: %d %s\n  file:   %d %s\n", ra, ea, rb, eb);
        abort();
    }
    if (ra) {
        REQUIRE(ra < 0 && ea[0] && !strncmp(ea, path, strlen(path)));
        REQUIRE(a.data == NULL && b.data == NULL);
        return 0;
    }
    REQUIRE(!memcmp(&ia, &ib, sizeof ia));
    REQUIRE(a.dtype == want && a.ndim == ia.ndim && a.ndim >= 1 && a.ndim <= NK_MAXDIM);
    size_t numel = 1;
    for (int d = 0; d < a.ndim; d++) {
        REQUIRE(a.shape[d] == ia.shape[d] && b.shape[d] == a.shape[d] && a.shape[d] >= 1);
        numel *= (size_t)a.shape[d];
    }
    REQUIRE(numel == nk_array_numel(&a) && ia.itemsize > 0);
    REQUIRE(ia.data_offset + numel * (size_t)ia.itemsize == size);
    REQUIRE(!memcmp(a.data, b.data, nk_array_nbytes(&a)));
    if (want == NK_F32) {
        char err[512];
        if (nk_npy_write(path, &a, err, sizeof err)) {
            fprintf(stderr, "fuzz: cannot write back: %s\n", err);
            abort();
        }
        nk_array c;
        REQUIRE(nk_npy_read(path, NK_F32, &c, NULL, err, sizeof err) == 0);
        REQUIRE(c.ndim == a.ndim && !memcmp(c.shape, a.shape, sizeof a.shape));
        REQUIRE(same_f32(a.data, c.data, numel));
        nk_array_free(&c);
    }
    nk_array_free(&a);
    nk_array_free(&b);
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    atexit(fz_scratch_remove);
    return 0;
}
