/*
 * test_limits.c - shapes, steps and options at the edges of their ranges:
 * products of dims that overflow 64 bits, negative dims, steps near
 * INT64_MAX, buffer counts past the tracer's limit, kernels that read past
 * their arguments, tiles carried across loop iterations after a later
 * iteration's tile took their memory. Each must give its exact message (or
 * the right values), never undefined behaviour or silently stale data (the
 * ASan/UBSan run of these tests traps on any undefined behaviour).
 */
#include "test.h"
#include "nklab.h"

#include <stdlib.h>

#define BIG 2147483647 /* INT32_MAX: the largest dimension a tensor takes */

static int at;                 /* line of the offending call */
static nk_tensor seen[2];      /* handles a kernel saw */
static int64_t seen_shape[2];  /* a view's shape a kernel made */

/* Compiles fn on one [128, 4] float32 argument (nargs of them) with opts
 * and returns the status; msg gets the kernel's message. */
static int compile(nk_kernel_fn fn, int nargs, const nk_options *opts, char *msg, size_t n)
{
    nk_array a[1];
    nk_array_alloc(&a[0], NK_F32, 2, (int64_t[]){128, 4});
    nk_kernel *k = nk_kernel_new("limits", fn);
    const nk_program *p;
    int rc = nk_kernel_compile(k, a, nargs, opts, &p);
    snprintf(msg, n, "%s", nk_kernel_error(k));
    nk_kernel_free(k);
    nk_array_free(&a[0]);
    return rc;
}

/* "<this file>:<at>: " followed by rest */
static void expect_msg(const char *msg, const char *rest)
{
    char want[512];
    snprintf(want, sizeof want, "%s:%d: %s", __FILE__, at, rest);
    CHECK_STR(msg, want);
}

static void copy_out(nk_ctx *nc, nk_tensor in)
{
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 4), NK_F32, NK_SHARED_HBM);
    nk_store(nc, out, nk_load(nc, in));
    nk_return(nc, out);
}

static void k_tile_overflow(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_ndarray(nc, NK_SHAPE(128, BIG, BIG, BIG), NK_F32, NK_SBUF);
    copy_out(nc, a[0]);
}

TEST(limits_tile_free_size_overflowing_64_bits)
{
    char msg[512];
    CHECK_INT(compile(k_tile_overflow, 1, NULL, msg, sizeof msg), NK_ECAPACITY);
    expect_msg(msg, "nk_ndarray: SBUF capacity exceeded: a tile [128, 2147483647, 2147483647, 2147483647] holds "
                    "more than 2147483647 elements per partition");
}

static void k_tile_free_2_31(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_ndarray(nc, NK_SHAPE(2, 65536, 32768), NK_BF16, NK_PSUM); /* 2^31 elements */
    copy_out(nc, a[0]);
}

TEST(limits_tile_free_size_just_past_int32)
{
    char msg[512];
    CHECK_INT(compile(k_tile_free_2_31, 1, NULL, msg, sizeof msg), NK_ECAPACITY);
    expect_msg(msg, "nk_ndarray: PSUM capacity exceeded: a tile [2, 65536, 32768] holds more than 2147483647 "
                    "elements per partition");
}

static void k_hbm_overflow(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_ndarray(nc, NK_SHAPE(BIG, BIG, BIG, 4), NK_F32, NK_SHARED_HBM);
    copy_out(nc, a[0]);
}

TEST(limits_hbm_tensor_overflowing_64_bits)
{
    char msg[512];
    CHECK_INT(compile(k_hbm_overflow, 1, NULL, msg, sizeof msg), NK_ESHAPE);
    expect_msg(msg, "nk_ndarray: an HBM tensor [2147483647, 2147483647, 2147483647, 4] float32 holds more than "
                    "2^63 bytes");
}

static void k_hbm_bytes_overflow(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    /* 2^62 elements fit int64, their 2^64 bytes do not */
    at = __LINE__; nk_ndarray(nc, NK_SHAPE(1 << 30, 1 << 30, 1 << 2), NK_F32, NK_SHARED_HBM);
    copy_out(nc, a[0]);
}

TEST(limits_hbm_tensor_bytes_overflowing)
{
    char msg[512];
    CHECK_INT(compile(k_hbm_bytes_overflow, 1, NULL, msg, sizeof msg), NK_ESHAPE);
    expect_msg(msg, "nk_ndarray: an HBM tensor [1073741824, 1073741824, 4] float32 holds more than 2^63 bytes");
}

static void k_reshape_negative(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    /* (-128) x (-4) has the 512 elements of [128, 4] */
    at = __LINE__; nk_reshape(nc, a[0], NK_SHAPE(-128, -4));
    copy_out(nc, a[0]);
}

TEST(limits_reshape_rejects_negative_dims)
{
    char msg[512];
    CHECK_INT(compile(k_reshape_negative, 1, NULL, msg, sizeof msg), NK_ESHAPE);
    expect_msg(msg, "nk_reshape: invalid dimension -128 on axis 0");
}

static void k_huge_step(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor v = nk_ix(nc, a[0], NK_ALL, nk_rs(1, 4, INT64_MAX)); /* column 1 only */
    seen_shape[0] = v.shape[0];
    seen_shape[1] = v.shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 1), NK_F32, NK_SHARED_HBM);
    nk_store(nc, out, nk_load(nc, v));
    nk_return(nc, out);
}

TEST(limits_view_step_near_int64_max)
{
    nk_array in, out[1];
    int64_t shape[2] = {128, 4};
    nk_array_alloc(&in, NK_F32, 2, shape);
    float *x = in.data;
    for (int i = 0; i < 128 * 4; i++)
        x[i] = (float)i;
    nk_kernel *k = nk_kernel_new("step", k_huge_step);
    int nout = 0;
    seen_shape[0] = seen_shape[1] = -1;
    int rc = nk_call(k, &in, 1, NULL, out, 1, &nout);
    CHECK_INT(rc, 0);
    CHECK_INT(seen_shape[0], 128);
    CHECK_INT(seen_shape[1], 1);
    if (!rc) {
        const float *y = out[0].data;
        for (int r = 0; r < 128; r++)
            CHECK_NEAR(y[r], 4.0 * r + 1, 0, 0);
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&in);
}

static void k_copy(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    NK_AFFINE_RANGE(nc, i, 2) {
        (void)i;
        nk_load(nc, a[0]);
    }
    copy_out(nc, a[0]);
}

TEST(limits_default_bufs_past_the_loop_limit)
{
    char msg[512];
    nk_options o = {0};
    o.target = "trn1";
    o.default_bufs = 33;
    CHECK_INT(compile(k_copy, 1, &o, msg, sizeof msg), NK_EINVAL);
    CHECK_STR(msg, "default_bufs 33 is outside 0..32 (0: the target's default)");
    o.default_bufs = -1;
    CHECK_INT(compile(k_copy, 1, &o, msg, sizeof msg), NK_EINVAL);
    CHECK_STR(msg, "default_bufs -1 is outside 0..32 (0: the target's default)");
    o.default_bufs = 32; /* the limit itself is fine */
    CHECK_INT(compile(k_copy, 1, &o, msg, sizeof msg), 0);
}

static void k_reads_past_args(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    seen[0] = a[0];
    seen[1] = a[1]; /* one argument given: past the end */
    at = __LINE__; nk_load(nc, a[1]);
}

TEST(limits_arguments_past_nargs_are_invalid_handles)
{
    char msg[512];
    memset(seen, 0xff, sizeof seen);
    CHECK_INT(compile(k_reads_past_args, 1, NULL, msg, sizeof msg), NK_EINVAL);
    CHECK(nk_valid(seen[0]));
    CHECK_INT(seen[1].buf, 0);
    CHECK_INT(seen[1].ndim, 0);
    expect_msg(msg, "nk_load: source is not a valid tensor");
}

/* ---- tiles carried across iterations: out block i = x block i + x block i - back */

static int g_back;        /* how many iterations back the carried tile is */
static int g_seq;         /* sequential loop (1 buffer) or affine with 2 */
static int g_use_first;   /* use the carried tile before allocating this iteration's */

static void k_carry(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = a[0];
    int64_t rows = x.shape[0], cols = x.shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, cols), NK_F32, NK_SHARED_HBM);
    nk_tensor zero = nk_zeros(nc, NK_SHAPE(128, cols), NK_F32, NK_SBUF);
    nk_tensor hist[3] = {zero, zero, zero}; /* hist[k]: the block k + 1 iterations back */
    int bufs = g_seq ? 1 : 2;
    for (int64_t i = nk__loop_begin(nc, NK_HERE, rows / 128, g_seq ? NK_LOOP_SEQUENTIAL : NK_LOOP_AFFINE, bufs);
         nk__loop_cond(nc, i); i = nk__loop_next(nc, i)) {
        nk_tensor dst = nk_ix(nc, out, nk_r(i * 128, i * 128 + 128), NK_ALL);
        nk_tensor src = nk_ix(nc, x, nk_r(i * 128, i * 128 + 128), NK_ALL);
        nk_tensor cur;
        if (g_use_first) { /* the previous block is read before this iteration allocates */
            nk_tensor acc = nk_ndarray(nc, NK_SHAPE(128, cols), NK_F32, NK_SBUF);
            nk_isa_tensor_copy(nc, acc, hist[g_back - 1]);
            cur = nk_load(nc, src);
            nk_store(nc, dst, nk_add(nc, acc, cur));
        } else {
            cur = nk_load(nc, src);
            at = __LINE__; nk_store(nc, dst, nk_add(nc, cur, hist[g_back - 1]));
        }
        hist[2] = hist[1];
        hist[1] = hist[0];
        hist[0] = cur;
    }
    nk_return(nc, out);
}

/* Runs k_carry on [512, 8] values 0, 1, 2, ...; 0 with the output checked
 * against x[r] + x[r - 128 * back] (0 for the first blocks), else the status. */
static int run_carry(int back, int seq, int use_first, char *msg, size_t n)
{
    g_back = back;
    g_seq = seq;
    g_use_first = use_first;
    nk_array in, out[1];
    nk_array_alloc(&in, NK_F32, 2, (int64_t[]){512, 8});
    float *x = in.data;
    for (int i = 0; i < 512 * 8; i++)
        x[i] = (float)i;
    nk_kernel *k = nk_kernel_new("carry", k_carry);
    int nout = 0, rc = nk_call(k, &in, 1, NULL, out, 1, &nout);
    snprintf(msg, n, "%s", nk_kernel_error(k));
    if (!rc) {
        const float *y = out[0].data;
        int wrong = 0;
        for (int r = 0; r < 512; r++)
            for (int c = 0; c < 8; c++) {
                double want = x[r * 8 + c] + (r >= 128 * back ? x[(r - 128 * back) * 8 + c] : 0.0);
                wrong += y[r * 8 + c] != want;
            }
        CHECK_INT(wrong, 0);
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&in);
    return rc;
}

/* A tile of an earlier iteration read in a later one stays live until that
 * read, whatever the loop's buffer count: the allocator sees the use. */
TEST(limits_carried_tile_from_an_earlier_iteration_keeps_its_values)
{
    char msg[1024];
    CHECK_INT(run_carry(1, 1, 0, msg, sizeof msg), 0); /* sequential: one buffer */
    CHECK_STR(msg, "");
    CHECK_INT(run_carry(2, 0, 0, msg, sizeof msg), 0); /* affine, 2 buffers, two iterations back */
    CHECK_STR(msg, "");
}

TEST(limits_carried_tile_still_in_its_slot_keeps_its_values)
{
    char msg[1024];
    CHECK_INT(run_carry(1, 0, 0, msg, sizeof msg), 0); /* 2 buffers: the previous block is intact */
    CHECK_INT(run_carry(1, 1, 1, msg, sizeof msg), 0); /* read before this iteration's load */
    CHECK_INT(run_carry(2, 0, 1, msg, sizeof msg), 0);
}

/* ---- bounds on a trace (nk_options.max_instructions, max_trace_bytes) */

static void k_runaway(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 4), NK_F32, NK_SHARED_HBM);
    nk_tensor x = nk_load(nc, a[0]);
    NK_SEQUENTIAL_RANGE(nc, i, 5000000000ll) {
        (void)i;
        at = __LINE__; x = nk_add(nc, x, x);
    }
    nk_store(nc, out, x);
    nk_return(nc, out);
}

TEST(limits_trace_stops_at_max_instructions)
{
    char msg[512];
    nk_options o = {0};
    o.max_instructions = 100; /* the load, then 99 adds */
    CHECK_INT(compile(k_runaway, 1, &o, msg, sizeof msg), NK_ELIMIT);
    expect_msg(msg, "the kernel traced more than 100 instructions (a loop of more iterations than meant?): raise "
                    "nk_options.max_instructions, or --max-instructions on the command line");
    o.max_instructions = 4; /* k_copy's two loads, its load and its store: exactly the bound */
    CHECK_INT(compile(k_copy, 1, &o, msg, sizeof msg), 0);
    o.max_instructions = 3;
    CHECK_INT(compile(k_copy, 1, &o, msg, sizeof msg), NK_ELIMIT);
    /* one kernel: a program cached under a higher bound is not handed to a
     * call with a lower one; that call traces and stops as it would alone */
    nk_array a;
    nk_array_alloc(&a, NK_F32, 2, (int64_t[]){128, 4});
    nk_kernel *k = nk_kernel_new("limits", k_copy);
    const nk_program *p;
    o.max_instructions = 0;
    CHECK_INT(nk_kernel_compile(k, &a, 1, &o, &p), 0);
    o.max_instructions = 3;
    CHECK_INT(nk_kernel_compile(k, &a, 1, &o, &p), NK_ELIMIT);
    o.max_instructions = 0;
    CHECK_INT(nk_kernel_compile(k, &a, 1, &o, &p), 0); /* the first program again */
    uint64_t compiles = 0, hits = 0;
    nk_kernel_cache_stats(k, &compiles, &hits);
    CHECK_INT(compiles, 1);
    CHECK_INT(hits, 1);
    nk_kernel_free(k);
    nk_array_free(&a);
}

static void k_many_tiles(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n, (void)a;
    NK_SEQUENTIAL_RANGE(nc, i, 5000000000ll) {
        (void)i;
        at = __LINE__; nk_ndarray(nc, NK_SHAPE(128, 4), NK_F32, NK_SBUF);
    }
}

TEST(limits_trace_stops_at_max_trace_bytes)
{
    char msg[512];
    nk_options o = {0};
    o.max_trace_bytes = 1 << 20;
    CHECK_INT(compile(k_many_tiles, 1, &o, msg, sizeof msg), NK_ELIMIT);
    /* buffer records double from 16: 8192 of 88 bytes fit in 1 MiB, 16384 do not */
    expect_msg(msg, "the trace would take more than 1048576 bytes of memory (0 instructions and 8191 tensors and "
                    "tiles so far): raise nk_options.max_trace_bytes, or --max-trace-bytes on the command line");
    o.max_trace_bytes = 1 << 20;
    CHECK_INT(compile(k_copy, 1, &o, msg, sizeof msg), 0);
}

TEST(limits_trace_bounds_out_of_range)
{
    char msg[512];
    nk_options o = {0};
    o.max_instructions = -1;
    CHECK_INT(compile(k_copy, 1, &o, msg, sizeof msg), NK_EINVAL);
    CHECK_STR(msg, "max_instructions -1 (0 to 4294967294) or max_trace_bytes 0 (0 or more) out of range (0: the "
                   "default)");
    o.max_instructions = 4294967295ll;
    CHECK_INT(compile(k_copy, 1, &o, msg, sizeof msg), NK_EINVAL);
    o.max_instructions = 0;
    o.max_trace_bytes = -5;
    CHECK_INT(compile(k_copy, 1, &o, msg, sizeof msg), NK_EINVAL);
    o.max_trace_bytes = 0; /* the defaults */
    CHECK_INT(compile(k_copy, 1, &o, msg, sizeof msg), 0);
}

/* The file format holds HBM tensors of up to 2^40 bytes: the tracer refuses
 * more, so that no profile is written that its reader rejects. */
static void k_hbm_past_format(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_ndarray(nc, NK_SHAPE(1 << 20, (1 << 18) + 1), NK_F32, NK_SHARED_HBM);
    copy_out(nc, a[0]);
}

static void k_hbm_at_format_limit(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_ndarray(nc, NK_SHAPE(1 << 20, 1 << 18), NK_F32, NK_SHARED_HBM);
    copy_out(nc, a[0]);
}

TEST(limits_hbm_tensor_past_the_file_format)
{
    char msg[512];
    CHECK_INT(compile(k_hbm_past_format, 1, NULL, msg, sizeof msg), NK_ESHAPE);
    expect_msg(msg, "nk_ndarray: an HBM tensor [1048576, 262145] float32 takes more than 1099511627776 bytes "
                    "(1 TiB), the most a program or profile file holds");
    CHECK_INT(compile(k_hbm_at_format_limit, 1, NULL, msg, sizeof msg), 0);
}
