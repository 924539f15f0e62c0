/*
 * test_dtype.c - dtype conversions against the independent model in
 * test_ops_ref.c: every 8- and 16-bit code decoded by formula; encoding
 * checked as "the nearest representable value, ties to even" both against
 * the model's rounding and against the two neighbouring codes; overflow,
 * subnormals, NaN, infinities and signed zeros by hand.
 */
#include "test_ops_ref.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const nk_dtype float_small[] = {NK_BF16, NK_F16, NK_FP8_E4M3, NK_FP8_E4M3FN, NK_FP8_E5M2};

static float lib_to_f32(nk_dtype dt, uint32_t code)
{
    uint8_t b[4] = {(uint8_t)code, (uint8_t)(code >> 8), (uint8_t)(code >> 16), (uint8_t)(code >> 24)};
    float f;
    nk_convert_to_f32(dt, b, &f, 1);
    return f;
}

static uint32_t lib_from_f32(nk_dtype dt, float x)
{
    uint8_t b[4] = {0, 0, 0, 0};
    nk_convert_from_f32(dt, &x, b, 1);
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- decoding */

TEST(dtype_decode_every_8bit_code)
{
    const nk_dtype dts[] = {NK_FP8_E4M3, NK_FP8_E4M3FN, NK_FP8_E5M2, NK_I8, NK_U8};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        int bad = 0;
        uint8_t all[256];
        float batch[256];
        for (int c = 0; c < 256; c++)
            all[c] = (uint8_t)c;
        nk_convert_to_f32(dts[d], all, batch, 256);
        for (uint32_t c = 0; c < 256 && bad < 3; c++) {
            double want = ref_decode_code(dts[d], c);
            float got = lib_to_f32(dts[d], c);
            if (!ref_same(got, want, 1) || !ref_same(batch[c], want, 1)) {
                nk_test_fail(__FILE__, __LINE__, "%s code 0x%02x: got %.9g (batch %.9g), want %.9g",
                             nk_dtype_name(dts[d]), c, got, batch[c], want);
                bad++;
            }
        }
    }
    /* the formats' landmarks, stated independently of the model */
    CHECK(lib_to_f32(NK_FP8_E4M3, 0x77) == 240.0f);
    CHECK(isinf(lib_to_f32(NK_FP8_E4M3, 0x78)));
    CHECK(isnan(lib_to_f32(NK_FP8_E4M3, 0x79)));
    CHECK(lib_to_f32(NK_FP8_E4M3, 0x01) == 0x1p-9f);
    CHECK(lib_to_f32(NK_FP8_E4M3FN, 0x7e) == 448.0f);
    CHECK(lib_to_f32(NK_FP8_E4M3FN, 0x78) == 256.0f);
    CHECK(isnan(lib_to_f32(NK_FP8_E4M3FN, 0x7f)) && isnan(lib_to_f32(NK_FP8_E4M3FN, 0xff)));
    CHECK(lib_to_f32(NK_FP8_E5M2, 0x7b) == 57344.0f);
    CHECK(isinf(lib_to_f32(NK_FP8_E5M2, 0xfc)) && lib_to_f32(NK_FP8_E5M2, 0xfc) < 0);
    CHECK(lib_to_f32(NK_FP8_E5M2, 0x01) == 0x1p-16f);
    CHECK(lib_to_f32(NK_I8, 0x80) == -128.0f);
    CHECK(lib_to_f32(NK_U8, 0xff) == 255.0f);
    float z = lib_to_f32(NK_FP8_E4M3FN, 0x80);
    CHECK(z == 0.0f && signbit(z));
}

TEST(dtype_decode_every_16bit_code)
{
    const nk_dtype dts[] = {NK_BF16, NK_F16, NK_I16, NK_U16};
    uint16_t *all = malloc(65536 * sizeof *all);
    float *batch = malloc(65536 * sizeof *batch);
    CHECK(all && batch);
    if (!all || !batch)
        goto out;
    for (uint32_t c = 0; c < 65536; c++)
        all[c] = (uint16_t)c;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        nk_convert_to_f32(dts[d], all, batch, 65536);
        int bad = 0;
        for (uint32_t c = 0; c < 65536 && bad < 3; c++) {
            double want = ref_decode_code(dts[d], c);
            if (!ref_same(batch[c], want, 1)) {
                nk_test_fail(__FILE__, __LINE__, "%s code 0x%04x: got %.9g, want %.9g", nk_dtype_name(dts[d]), c,
                             batch[c], want);
                bad++;
            }
        }
    }
    CHECK(lib_to_f32(NK_F16, 0x7bff) == 65504.0f);
    CHECK(lib_to_f32(NK_F16, 0x0001) == 0x1p-24f);
    CHECK(lib_to_f32(NK_F16, 0x03ff) == 0x3ffp-24f);
    CHECK(lib_to_f32(NK_BF16, 0x3f80) == 1.0f);
    CHECK(lib_to_f32(NK_BF16, 0x0001) == 0x1p-133f);
    CHECK(lib_to_f32(NK_I16, 0x8000) == -32768.0f);
out:
    free(all);
    free(batch);
}

TEST(dtype_decode_32bit_integers_round_to_f32)
{
    /* int32/uint32 -> fp32 rounds to nearest even above 2^24 */
    CHECK(lib_to_f32(NK_I32, 16777217u) == 16777216.0f);
    CHECK(lib_to_f32(NK_I32, 16777219u) == 16777220.0f);
    CHECK(lib_to_f32(NK_I32, 0x80000000u) == -2147483648.0f);
    CHECK(lib_to_f32(NK_I32, 0x7fffffffu) == 2147483648.0f);
    CHECK(lib_to_f32(NK_U32, 0xffffffffu) == 4294967296.0f);
    CHECK(lib_to_f32(NK_U32, 0x01000003u) == 16777220.0f);
    uint64_t rng = 1;
    int bad = 0;
    for (int i = 0; i < 20000 && bad < 3; i++) {
        uint32_t c = (uint32_t)ref_rand64(&rng);
        for (int s = 0; s < 2; s++) {
            nk_dtype dt = s ? NK_U32 : NK_I32;
            float got = lib_to_f32(dt, c);
            double want = ref_round(NK_F32, ref_decode_code(dt, c));
            if (got != want) {
                nk_test_fail(__FILE__, __LINE__, "%s 0x%08x: got %.9g want %.9g", nk_dtype_name(dt), c, got, want);
                bad++;
            }
        }
    }
    float f = bits_f32(0x7fc00001u);
    CHECK(lib_from_f32(NK_F32, f) == 0x7fc00001u); /* fp32 -> fp32 keeps the bits */
}

/* ---- encoding */

/* Codes ordered by value within one sign: next code up in magnitude is +1. */
static int is_finite_code(nk_dtype dt, uint32_t c) { return isfinite(ref_decode_code(dt, c)); }

/* Checks that code c is the correctly rounded encoding of x in dt, using the
 * neighbouring codes: no neighbour is nearer, and on a tie c is even. */
static int nearest_ok(nk_dtype dt, float x, uint32_t c)
{
    double r = ref_decode_code(dt, c);
    if (x != x)
        return r != r;
    if (r != r || isinf(r)) /* overflow: checked against the model instead */
        return 1;
    uint32_t signbitc = 1u << (8 * nk_dtype_size(dt) - 1), mag = c & ~signbitc, sign = c & signbitc;
    double d = fabs((double)x - r);
    for (int k = -1; k <= 1; k += 2) {
        if (mag == 0 && k < 0) {
            /* below zero: the other zero's neighbour is the negative smallest value */
            continue;
        }
        uint32_t nb = sign | (uint32_t)((int64_t)mag + k);
        if ((nb & ~signbitc) != (uint32_t)((int64_t)mag + k) || !is_finite_code(dt, nb))
            continue;
        double dn = fabs((double)x - ref_decode_code(dt, nb));
        if (dn < d || (dn == d && (c & 1)))
            return 0;
    }
    return 1;
}

static void check_encode(nk_dtype dt, float x, int *bad)
{
    uint32_t c = lib_from_f32(dt, x), xbits;
    memcpy(&xbits, &x, 4);
    double got = ref_decode_code(dt, c), want = ref_round(dt, x);
    int is_float = ref_is_float(dt);
    if ((!ref_same(got, want, is_float) || (is_float && !nearest_ok(dt, x, c))) && *bad < 5) {
        nk_test_fail(__FILE__, __LINE__, "%s: %.9g (bits 0x%08x) encodes to 0x%x = %.9g, want %.9g",
                     nk_dtype_name(dt), x, xbits, c, got, want);
        (*bad)++;
    }
}

TEST(dtype_encode_every_code_round_trips)
{
    for (size_t d = 0; d < sizeof float_small / sizeof float_small[0]; d++) {
        nk_dtype dt = float_small[d];
        uint32_t ncodes = 1u << (8 * nk_dtype_size(dt));
        int bad = 0;
        for (uint32_t c = 0; c < ncodes && bad < 3; c++) {
            double v = ref_decode_code(dt, c);
            uint32_t back = lib_from_f32(dt, (float)v);
            int ok = v != v ? ref_decode_code(dt, back) != ref_decode_code(dt, back) : back == c;
            if (!ok) {
                nk_test_fail(__FILE__, __LINE__, "%s code 0x%x (%.9g) re-encodes to 0x%x", nk_dtype_name(dt), c, v,
                             back);
                bad++;
            }
        }
    }
}

/* Between every pair of adjacent finite values: the midpoint rounds to the
 * even code, one fp32 step either side rounds to the nearer value. */
TEST(dtype_encode_midpoints_ties_to_even)
{
    for (size_t d = 0; d < sizeof float_small / sizeof float_small[0]; d++) {
        nk_dtype dt = float_small[d];
        uint32_t half = 1u << (8 * nk_dtype_size(dt) - 1);
        int bad = 0;
        for (uint32_t sign = 0; sign <= half; sign += half)
            for (uint32_t m = 0; m + 1 < half && bad < 3; m++) {
                uint32_t lo = sign | m, hi = sign | (m + 1);
                double a = ref_decode_code(dt, lo), b = ref_decode_code(dt, hi);
                if (!isfinite(a) || !isfinite(b))
                    continue;
                float mid = (float)((a + b) / 2);
                if ((double)mid != (a + b) / 2) {
                    nk_test_fail(__FILE__, __LINE__, "midpoint not exact in fp32");
                    bad++;
                    continue;
                }
                uint32_t even = (lo & 1) ? hi : lo;
                uint32_t got = lib_from_f32(dt, mid);
                uint32_t below = lib_from_f32(dt, nextafterf(mid, (float)a));
                uint32_t above = lib_from_f32(dt, nextafterf(mid, (float)b));
                /* +0 and -0 both stand for zero next to the smallest subnormal */
                if (got != even || below != lo || above != hi) {
                    nk_test_fail(__FILE__, __LINE__, "%s between 0x%x (%.9g) and 0x%x (%.9g): mid -> 0x%x "
                                 "(want 0x%x), below -> 0x%x, above -> 0x%x", nk_dtype_name(dt), lo, a, hi, b, got,
                                 even, below, above);
                    bad++;
                }
            }
    }
}

TEST(dtype_encode_random_against_model_and_neighbours)
{
    uint64_t rng = 42;
    const nk_dtype all[] = {NK_BF16, NK_F16, NK_FP8_E4M3, NK_FP8_E4M3FN, NK_FP8_E5M2, NK_I8, NK_I16,
                            NK_I32, NK_U8, NK_U16, NK_U32};
    for (size_t d = 0; d < sizeof all / sizeof all[0]; d++) {
        nk_dtype dt = all[d];
        int bad = 0;
        double range = ref_max(dt) * 1.25;
        for (int i = 0; i < 30000; i++) {
            /* any fp32 bit pattern: NaNs, infinities, subnormals, huge */
            check_encode(dt, bits_f32((uint32_t)ref_rand64(&rng)), &bad);
            /* values in and just past the format's range */
            float x = (float)ref_uniform(&rng, -range, range);
            check_encode(dt, x, &bad);
            /* small magnitudes: the subnormal range of each format */
            check_encode(dt, (float)ldexp(ref_uniform(&rng, -1, 1), -(int)(ref_rand64(&rng) % 30)), &bad);
        }
    }
}

typedef struct enc_case {
    nk_dtype dt;
    float in;
    double want; /* NAN for NaN */
} enc_case;

TEST(dtype_encode_hand_picked)
{
    const enc_case cases[] = {
        /* bfloat16: ties to even, overflow to inf */
        {NK_BF16, 1.00390625f, 1.0},          /* 1 + 2^-8: tie -> even 1.0 */
        {NK_BF16, 1.01171875f, 1.015625},     /* 1 + 3*2^-8: tie -> even 1 + 2^-6 */
        {NK_BF16, 0x1.010002p0f, 1.0078125}, /* just above the tie */
        {NK_BF16, FLT_MAX, INFINITY},
        {NK_BF16, -FLT_MAX, -INFINITY},
        {NK_BF16, 0x1.fefffep127f, 0x1.fep127}, /* below the overflow midpoint */
        {NK_BF16, 0x1p-133f, 0x1p-133},         /* smallest bf16 subnormal */
        {NK_BF16, 0x1p-134f, 0.0},              /* half of it: tie -> 0 */
        {NK_BF16, 0x1.8p-134f, 0x1p-133},
        /* float16 */
        {NK_F16, 65504.0f, 65504.0},
        {NK_F16, 65519.99f, 65504.0},
        {NK_F16, 65520.0f, INFINITY},         /* overflow midpoint: tie -> inf */
        {NK_F16, -65520.0f, -INFINITY},
        {NK_F16, 0x1p-24f, 0x1p-24},          /* smallest subnormal */
        {NK_F16, 0x1p-25f, 0.0},              /* tie -> 0 */
        {NK_F16, 0x1.8p-25f, 0x1p-24},
        {NK_F16, 0x1.ffcp-15f, 0x1p-14},      /* largest subnormal + half a step: tie -> min normal */
        {NK_F16, 1e-10f, 0.0},
        {NK_F16, 2049.0f, 2048.0},            /* tie -> even */
        {NK_F16, 2051.0f, 2052.0},
        /* float8_e4m3 (IEEE-style, max 240) */
        {NK_FP8_E4M3, 240.0f, 240.0},
        {NK_FP8_E4M3, 247.99f, 240.0},
        {NK_FP8_E4M3, 248.0f, INFINITY},       /* tie between 240 and the inf code -> inf */
        {NK_FP8_E4M3, -300.0f, -INFINITY},
        {NK_FP8_E4M3, INFINITY, INFINITY},
        {NK_FP8_E4M3, 0x1p-9f, 0x1p-9},
        {NK_FP8_E4M3, 0x1p-10f, 0.0},
        {NK_FP8_E4M3, 0x1.8p-10f, 0x1p-9},
        {NK_FP8_E4M3, 0x1.ep-7f, 0x1p-6},     /* largest subnormal (7 * 2^-9) + a half step -> min normal */
        {NK_FP8_E4M3, 1.0625f, 1.0},           /* tie -> even */
        {NK_FP8_E4M3, 1.1875f, 1.25},          /* tie -> even */
        /* float8_e4m3fn (no inf, max 448) */
        {NK_FP8_E4M3FN, 448.0f, 448.0},
        {NK_FP8_E4M3FN, 464.0f, 448.0},        /* tie between 448 (even) and the NaN code */
        {NK_FP8_E4M3FN, 464.01f, NAN},
        {NK_FP8_E4M3FN, 1e6f, NAN},
        {NK_FP8_E4M3FN, -1e6f, NAN},
        {NK_FP8_E4M3FN, INFINITY, NAN},
        {NK_FP8_E4M3FN, -INFINITY, NAN},
        {NK_FP8_E4M3FN, 256.0f, 256.0},
        {NK_FP8_E4M3FN, 0x1p-9f, 0x1p-9},
        {NK_FP8_E4M3FN, -0x1p-10f, -0.0},
        /* float8_e5m2 (max 57344) */
        {NK_FP8_E5M2, 57344.0f, 57344.0},
        {NK_FP8_E5M2, 61439.0f, 57344.0},
        {NK_FP8_E5M2, 61440.0f, INFINITY},
        {NK_FP8_E5M2, 0x1p-16f, 0x1p-16},
        {NK_FP8_E5M2, 0x1p-17f, 0.0},
        {NK_FP8_E5M2, 1.125f, 1.0},
        {NK_FP8_E5M2, 1.375f, 1.5},
        /* NaN stays NaN */
        {NK_BF16, NAN, NAN}, {NK_F16, NAN, NAN}, {NK_FP8_E4M3, NAN, NAN},
        {NK_FP8_E4M3FN, NAN, NAN}, {NK_FP8_E5M2, NAN, NAN},
        /* integers: round half to even, saturate, NaN -> 0 */
        {NK_I8, 2.5f, 2}, {NK_I8, 3.5f, 4}, {NK_I8, -2.5f, -2}, {NK_I8, -0.5f, 0},
        {NK_I8, 126.5f, 126}, {NK_I8, 127.5f, 127}, {NK_I8, -128.5f, -128}, {NK_I8, -129.0f, -128},
        {NK_I8, 1e9f, 127}, {NK_I8, NAN, 0}, {NK_I8, INFINITY, 127}, {NK_I8, -INFINITY, -128},
        {NK_U8, -1.0f, 0}, {NK_U8, -0.4f, 0}, {NK_U8, 254.5f, 254}, {NK_U8, 255.5f, 255}, {NK_U8, 300.0f, 255},
        {NK_U8, NAN, 0},
        {NK_I16, 32766.5f, 32766}, {NK_I16, 32767.5f, 32767}, {NK_I16, -40000.0f, -32768},
        {NK_U16, 65535.5f, 65535}, {NK_U16, 1e7f, 65535}, {NK_U16, 0.5f, 0}, {NK_U16, 1.5f, 2},
        {NK_I32, 2147483520.0f, 2147483520.0}, {NK_I32, 2147483648.0f, 2147483647.0},
        {NK_I32, -2147483648.0f, -2147483648.0}, {NK_I32, -1e12f, -2147483648.0}, {NK_I32, NAN, 0},
        {NK_I32, 16777215.0f, 16777215.0}, {NK_I32, -7.5f, -8},
        {NK_U32, 4294967040.0f, 4294967040.0}, {NK_U32, 4294967296.0f, 4294967295.0}, {NK_U32, -5.0f, 0},
        {NK_U32, INFINITY, 4294967295.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const enc_case *c = &cases[i];
        uint32_t code = lib_from_f32(c->dt, c->in);
        double got = ref_decode_code(c->dt, code);
        if (!ref_same(got, c->want, 1))
            nk_test_fail(__FILE__, __LINE__, "case %zu: %s(%.9g) = %.9g, want %.9g", i, nk_dtype_name(c->dt),
                         c->in, got, c->want);
        /* the model agrees with the hand-picked value too */
        if (!ref_same(ref_round(c->dt, c->in), c->want, 1))
            nk_test_fail(__FILE__, __LINE__, "case %zu: model %s(%.9g) = %.9g, want %.9g", i,
                         nk_dtype_name(c->dt), c->in, ref_round(c->dt, c->in), c->want);
    }
    /* signed zero survives every float format */
    for (size_t d = 0; d < sizeof float_small / sizeof float_small[0]; d++) {
        double z = ref_decode_code(float_small[d], lib_from_f32(float_small[d], -0.0f));
        CHECK(z == 0 && signbit(z));
    }
    /* the e4m3fn NaN is the code S.1111.111, keeping the sign of the input */
    CHECK_INT(lib_from_f32(NK_FP8_E4M3FN, 1000.0f), 0x7f);
    CHECK_INT(lib_from_f32(NK_FP8_E4M3FN, -1000.0f), 0xff);
}

TEST(dtype_round_f32_matches_model)
{
    uint64_t rng = 7;
    for (int dt = 0; dt < NK_DTYPE_COUNT; dt++) {
        int bad = 0;
        double range = dt == NK_F32 ? 1e30 : ref_max((nk_dtype)dt) * 1.1;
        for (int i = 0; i < 5000 && bad < 3; i++) {
            float x = (float)ref_uniform(&rng, -range, range);
            if (i % 2)
                x = (float)ldexp(ref_uniform(&rng, -1, 1), -(int)(ref_rand64(&rng) % 20));
            float got = nk_round_f32((nk_dtype)dt, x);
            double want = ref_round(NK_F32, ref_round((nk_dtype)dt, x));
            if (!ref_same(got, want, ref_is_float((nk_dtype)dt))) {
                nk_test_fail(__FILE__, __LINE__, "nk_round_f32(%s, %.9g) = %.9g, want %.9g",
                             nk_dtype_name((nk_dtype)dt), x, got, want);
                bad++;
            }
        }
    }
    CHECK(nk_round_f32(NK_BF16, 3.14159265f) == 3.140625f);
    CHECK(nk_round_f32(NK_F16, 3.14159265f) == 3.140625f);
    CHECK(nk_round_f32(NK_FP8_E4M3, 3.14159265f) == 3.25f);
    CHECK(nk_round_f32(NK_I8, 3.5f) == 4.0f);
}

/* Conversions of long buffers agree with element-by-element ones (the bulk
 * paths are the ones the executor uses). */
TEST(dtype_bulk_matches_single)
{
    enum { N = 4099 };
    static float src[N], back[N];
    static uint8_t buf[N * 4];
    uint64_t rng = 99;
    for (int i = 0; i < N; i++)
        src[i] = (float)ref_uniform(&rng, -70000, 70000) * (float)ldexp(1, -(int)(ref_rand64(&rng) % 24));
    for (int dt = 0; dt < NK_DTYPE_COUNT; dt++) {
        nk_convert_from_f32((nk_dtype)dt, src, buf, N);
        nk_convert_to_f32((nk_dtype)dt, buf, back, N);
        int bad = 0;
        for (int i = 0; i < N && bad < 3; i++) {
            float one = nk_round_f32((nk_dtype)dt, src[i]);
            if (!ref_same(one, back[i], 1)) {
                nk_test_fail(__FILE__, __LINE__, "%s [%d]: bulk %.9g, single %.9g", nk_dtype_name((nk_dtype)dt), i,
                             back[i], one);
                bad++;
            }
        }
    }
}

TEST(dtype_names_sizes_and_parsing)
{
    const struct { nk_dtype dt; const char *name; int size, is_float; } t[] = {
        {NK_F32, "float32", 4, 1}, {NK_BF16, "bfloat16", 2, 1}, {NK_F16, "float16", 2, 1},
        {NK_FP8_E4M3, "float8_e4m3", 1, 1}, {NK_FP8_E4M3FN, "float8_e4m3fn", 1, 1},
        {NK_FP8_E5M2, "float8_e5m2", 1, 1}, {NK_I8, "int8", 1, 0}, {NK_I16, "int16", 2, 0},
        {NK_I32, "int32", 4, 0}, {NK_U8, "uint8", 1, 0}, {NK_U16, "uint16", 2, 0}, {NK_U32, "uint32", 4, 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        CHECK_STR(nk_dtype_name(t[i].dt), t[i].name);
        CHECK_INT(nk_dtype_size(t[i].dt), t[i].size);
        CHECK_INT(nk_dtype_is_float(t[i].dt), t[i].is_float);
        nk_dtype got = NK_DTYPE_COUNT;
        CHECK_INT(nk_dtype_parse(t[i].name, &got), NK_OK);
        CHECK_INT(got, t[i].dt);
    }
    nk_dtype got = NK_DTYPE_COUNT;
    CHECK_INT(nk_dtype_parse("bf16", &got), NK_OK);
    CHECK_INT(got, NK_BF16);
    CHECK_INT(nk_dtype_parse("fp32", &got), NK_OK);
    CHECK_INT(got, NK_F32);
    CHECK_INT(nk_dtype_parse("float64", &got), NK_ENOTFOUND);
    CHECK_INT(nk_dtype_parse(NULL, &got), NK_EINVAL);
    CHECK_STR(nk_dtype_name(NK_DTYPE_COUNT), "invalid");
    CHECK_INT(nk_dtype_size(NK_DTYPE_COUNT), 0);
}
