/*
 * dtype.c - dtype names and conversions with the hardware's rounding.
 *
 * Engines compute in fp32 and cast on output. Casts round to nearest even.
 * Small float formats are encoded by one routine parameterised by exponent
 * and mantissa width; the 8-bit formats decode through 256-entry tables.
 */
#include "nkint.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

static const struct {
    const char *name;
    int size;
    int is_float;
} dtinfo[NK_DTYPE_COUNT] = {
    [NK_F32] = {"float32", 4, 1},        [NK_BF16] = {"bfloat16", 2, 1},
    [NK_F16] = {"float16", 2, 1},        [NK_FP8_E4M3] = {"float8_e4m3", 1, 1},
    [NK_FP8_E4M3FN] = {"float8_e4m3fn", 1, 1}, [NK_FP8_E5M2] = {"float8_e5m2", 1, 1},
    [NK_I8] = {"int8", 1, 0},            [NK_I16] = {"int16", 2, 0},
    [NK_I32] = {"int32", 4, 0},          [NK_U8] = {"uint8", 1, 0},
    [NK_U16] = {"uint16", 2, 0},         [NK_U32] = {"uint32", 4, 0},
};

const char *nk_dtype_name(nk_dtype dt)
{
    return (unsigned)dt < NK_DTYPE_COUNT ? dtinfo[dt].name : "invalid";
}

int nk_dtype_size(nk_dtype dt) { return (unsigned)dt < NK_DTYPE_COUNT ? dtinfo[dt].size : 0; }

int nk_dtype_is_float(nk_dtype dt) { return (unsigned)dt < NK_DTYPE_COUNT && dtinfo[dt].is_float; }

int nk_dtype_parse(const char *name, nk_dtype *out)
{
    static const struct { const char *alias; nk_dtype dt; } aliases[] = {
        {"fp32", NK_F32}, {"f32", NK_F32}, {"bf16", NK_BF16}, {"fp16", NK_F16},
        {"f16", NK_F16}, {"half", NK_F16}, {"fp8_e4m3", NK_FP8_E4M3},
        {"fp8_e4m3fn", NK_FP8_E4M3FN}, {"fp8_e5m2", NK_FP8_E5M2},
    };
    if (!name)
        return NK_EINVAL;
    for (int i = 0; i < NK_DTYPE_COUNT; i++)
        if (!strcmp(name, dtinfo[i].name)) {
            *out = (nk_dtype)i;
            return NK_OK;
        }
    for (size_t i = 0; i < NK_ARRAY_LEN(aliases); i++)
        if (!strcmp(name, aliases[i].alias)) {
            *out = aliases[i].dt;
            return NK_OK;
        }
    return NK_ENOTFOUND;
}

/* ---- small float formats */

typedef struct fmt {
    int ebits, mbits, bias;
    int ieee;          /* exponent all-ones is inf/NaN */
    uint32_t nan_code; /* canonical NaN without sign */
} fmt;

static const fmt F16 = {5, 10, 15, 1, 0x7e00};
static const fmt E4M3 = {4, 3, 7, 1, 0x7c};
static const fmt E4M3FN = {4, 3, 7, 0, 0x7f};
static const fmt E5M2 = {5, 2, 15, 1, 0x7e};

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* m >> s rounded to nearest even. */
static inline uint32_t rne_shift(uint32_t m, int s)
{
    if (s <= 0)
        return m << -s;
    if (s > 25)
        return 0;
    uint32_t q = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    return q;
}

static uint32_t encode(const fmt *f, float x)
{
    uint32_t u = f2u(x);
    uint32_t sign = (u >> 31) << (f->ebits + f->mbits);
    uint32_t e32 = (u >> 23) & 0xff, man = u & 0x7fffff;
    uint32_t emax_field = (1u << f->ebits) - 1;
    uint32_t inf_code = emax_field << f->mbits;
    uint32_t maxfin = f->ieee ? inf_code - 1 : f->nan_code - 1;
    if (e32 == 0xff) {
        if (man)
            return sign | f->nan_code;
        return f->ieee ? sign | inf_code : sign | f->nan_code;
    }
    if (e32 == 0) /* fp32 zero or subnormal: below every target's range */
        return sign;
    int e = (int)e32 - 127;
    uint32_t m = man | 0x800000;
    int emin = 1 - f->bias;
    uint32_t code;
    if (e >= emin) {
        uint32_t r = rne_shift(m, 23 - f->mbits); /* has the implicit bit at mbits */
        code = ((uint32_t)(e + f->bias - 1) << f->mbits) + r;
    } else {
        code = rne_shift(m, 23 - f->mbits + (emin - e)); /* subnormal (may round to min normal) */
    }
    if (code > maxfin)
        return f->ieee ? sign | inf_code : sign | f->nan_code;
    return sign | code;
}

static float decode(const fmt *f, uint32_t code)
{
    uint32_t sbit = code >> (f->ebits + f->mbits) & 1;
    uint32_t efield = (code >> f->mbits) & ((1u << f->ebits) - 1);
    uint32_t mfield = code & ((1u << f->mbits) - 1);
    float v;
    if (f->ieee && efield == (1u << f->ebits) - 1)
        v = mfield ? NAN : INFINITY;
    else if (!f->ieee && (code & ~(1u << (f->ebits + f->mbits))) == f->nan_code)
        v = NAN;
    else if (efield == 0)
        v = ldexpf((float)mfield, 1 - f->bias - f->mbits);
    else
        v = ldexpf((float)(mfield | (1u << f->mbits)), (int)efield - f->bias - f->mbits);
    return sbit ? -v : v;
}

static float tab_e4m3[256], tab_e4m3fn[256], tab_e5m2[256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void fill_tables(void)
{
    for (uint32_t c = 0; c < 256; c++) {
        tab_e4m3[c] = decode(&E4M3, c);
        tab_e4m3fn[c] = decode(&E4M3FN, c);
        tab_e5m2[c] = decode(&E5M2, c);
    }
}

/* Once per process: runs may execute on several threads at a time. */
static void init_tables(void) { pthread_once(&tables_once, fill_tables); }

static inline uint16_t f32_to_bf16(float x)
{
    uint32_t u = f2u(x);
    if ((u & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static inline float bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

static inline float f16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f)
        return u2f(s | 0x7f800000 | (m << 13));
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return s ? -v : v;
    }
    return u2f(s | ((e + 112) << 23) | (m << 13));
}

/* Float to integer: round to nearest even, saturate, NaN to 0. */
static inline int64_t f2i(float x, int64_t lo, int64_t hi)
{
    if (x != x)
        return 0;
    double r = nearbyint((double)x);
    if (r < (double)lo)
        return lo;
    if (r > (double)hi)
        return hi;
    return (int64_t)r;
}

void nk_convert_from_f32(nk_dtype dt, const float *src, void *dst, size_t n)
{
    switch (dt) {
    case NK_F32: memcpy(dst, src, n * 4); break;
    case NK_BF16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = f32_to_bf16(src[i]); } break;
    case NK_F16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = (uint16_t)encode(&F16, src[i]); } break;
    case NK_FP8_E4M3: { uint8_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = (uint8_t)encode(&E4M3, src[i]); } break;
    case NK_FP8_E4M3FN: { uint8_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = (uint8_t)encode(&E4M3FN, src[i]); } break;
    case NK_FP8_E5M2: { uint8_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = (uint8_t)encode(&E5M2, src[i]); } break;
    case NK_I8: { int8_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = (int8_t)f2i(src[i], INT8_MIN, INT8_MAX); } break;
    case NK_I16: { int16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = (int16_t)f2i(src[i], INT16_MIN, INT16_MAX); } break;
    case NK_I32: { int32_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = (int32_t)f2i(src[i], INT32_MIN, INT32_MAX); } break;
    case NK_U8: { uint8_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = (uint8_t)f2i(src[i], 0, UINT8_MAX); } break;
    case NK_U16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = (uint16_t)f2i(src[i], 0, UINT16_MAX); } break;
    case NK_U32: { uint32_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = (uint32_t)f2i(src[i], 0, UINT32_MAX); } break;
    default: break;
    }
}

void nk_convert_to_f32(nk_dtype dt, const void *src, float *dst, size_t n)
{
    init_tables();
    switch (dt) {
    case NK_F32: memcpy(dst, src, n * 4); break;
    case NK_BF16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = bf16_to_f32(s[i]); } break;
    case NK_F16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = f16_to_f32(s[i]); } break;
    case NK_FP8_E4M3: { const uint8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = tab_e4m3[s[i]]; } break;
    case NK_FP8_E4M3FN: { const uint8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = tab_e4m3fn[s[i]]; } break;
    case NK_FP8_E5M2: { const uint8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = tab_e5m2[s[i]]; } break;
    case NK_I8: { const int8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (float)s[i]; } break;
    case NK_I16: { const int16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (float)s[i]; } break;
    case NK_I32: { const int32_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (float)s[i]; } break;
    case NK_U8: { const uint8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (float)s[i]; } break;
    case NK_U16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (float)s[i]; } break;
    case NK_U32: { const uint32_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (float)s[i]; } break;
    default: break;
    }
}

float nk_round_f32(nk_dtype dt, float x)
{
    unsigned char buf[8];
    float y;
    nk_convert_from_f32(dt, &x, buf, 1);
    nk_convert_to_f32(dt, buf, &y, 1);
    return y;
}
