/*
 * test_ops_dma.c - nisa.dma_copy within SBUF and within HBM,
 * nl.load_transpose2d, and the partition broadcast of any free size
 * (matmuls of at most 512 columns): values, the DMA model's timing of
 * each, and every check the tracer makes.
 *
 * References: DMAs move bytes, so they are compared exactly with the
 * source's elements in row-major order (transposed for load_transpose2d);
 * a broadcast multiplies by 1.0 and adds nothing, so it is exact too.
 * Timing references are written from the sources (docs/timing-model.md):
 * 17 B/ns per DMA engine on trn1, 23 on trn2 [DMAbw]; 1300 ns from trigger
 * to start [DMAbw]; efficiency chunk / (chunk + 256) (assumed); HBM 410 GB/s
 * per core on trn1, 375 on trn2 [A2][A3]; a trn2 DMA transpose at 90% of a
 * copy [A3]; trn1 transposes element by element (assumed).
 */
#include "test_ops_util.h"

#include <math.h>
#include <stdlib.h>

static int at;

static struct {
    int mode;
    int64_t F;
    nk_dtype dt;
} K;

/* ---- dma_copy within SBUF and within HBM */

/* mode 0: SBUF -> SBUF into [128, 64] as [64, 128]; 1: SBUF -> SBUF from
 * every other column; 2: HBM -> HBM whole; 3: HBM -> HBM rows 10..40 into a
 * 1-D tensor */
static void k_copy(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = args[0];
    if (K.mode == 0) {
        nk_tensor t = nk_load(nc, x), d = nk_ndarray(nc, NK_SHAPE(64, 128), (nk_dtype)x.dtype, NK_SBUF);
        nk_dma_copy(nc, d, t);
        ref_return_tile(nc, d);
    } else if (K.mode == 1) {
        nk_tensor t = nk_load(nc, x), d = nk_ndarray(nc, NK_SHAPE(128, 32), (nk_dtype)x.dtype, NK_SBUF);
        nk_dma_copy(nc, d, nk_ix(nc, t, NK_ALL, nk_rs(0, 64, 2)));
        ref_return_tile(nc, d);
    } else if (K.mode == 2) {
        nk_tensor o = nk_ndarray(nc, NK_SHAPE(x.shape[0], x.shape[1]), (nk_dtype)x.dtype, NK_SHARED_HBM);
        nk_dma_copy(nc, o, x);
        nk_return(nc, o);
    } else {
        nk_tensor o = nk_ndarray(nc, NK_SHAPE(30 * x.shape[1]), (nk_dtype)x.dtype, NK_SHARED_HBM);
        nk_dma_copy(nc, o, nk_ix(nc, x, nk_r(10, 40), NK_ALL));
        nk_return(nc, o);
    }
}

TEST(dma_copy_within_sbuf_and_within_hbm)
{
    const nk_dtype dts[] = {NK_F32, NK_BF16, NK_I8, NK_U32};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (int mode = 0; mode < 4; mode++) {
            K.mode = mode;
            int64_t s[2] = {128, 64};
            uint64_t seed = 10 * d + (uint64_t)mode;
            nk_array in, out;
            arr_new(&in, dts[d], 2, s);
            arr_fill(&in, &seed, ref_is_float(dts[d]) ? -100 : 0, 100);
            double *x = arr_values(&in), want[128 * 64];
            size_t n = 0;
            if (mode == 1) {
                for (int p = 0; p < 128; p++)
                    for (int f = 0; f < 64; f += 2)
                        want[n++] = x[p * 64 + f];
            } else {
                size_t lo = mode == 3 ? 10 * 64 : 0, hi = mode == 3 ? 40 * 64 : 128 * 64;
                for (size_t i = lo; i < hi; i++)
                    want[n++] = x[i];
            }
            if (run_kernel("dma_copy", k_copy, &in, 1, &out, 1) == 0) {
                CHECK_INT(nk_array_numel(&out), n);
                CHECK_ARR("dma_copy", &out, want, 0, NULL, 0);
                nk_array_free(&out);
            }
            free(x);
            nk_array_free(&in);
        }
}

/* ---- load_transpose2d */

static void k_ltr(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor src = K.mode ? nk_ix(nc, args[0], nk_r(3, 3 + K.F), nk_r(1, 65)) : args[0];
    ref_return_tile(nc, nk_load_transpose2d(nc, src));
}

TEST(load_transpose2d_reads_hbm_transposed)
{
    const nk_dtype dts[] = {NK_F32, NK_BF16, NK_FP8_E5M2};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (int mode = 0; mode < 2; mode++) {
            int64_t F = mode ? 200 : 300, P = mode ? 64 : 128, s[2] = {mode ? 256 : F, mode ? 70 : P};
            K.mode = mode, K.F = F;
            uint64_t seed = 40 + d * 2 + (uint64_t)mode;
            nk_array in, out;
            arr_new(&in, dts[d], 2, s);
            arr_fill(&in, &seed, -8, 8);
            double *x = arr_values(&in), *want = malloc((size_t)(P * F) * sizeof *want);
            int64_t r0 = mode ? 3 : 0, c0 = mode ? 1 : 0;
            for (int64_t p = 0; p < P; p++)
                for (int64_t f = 0; f < F; f++)
                    want[p * F + f] = x[(r0 + f) * s[1] + c0 + p];
            if (run_kernel("load_transpose2d", k_ltr, &in, 1, &out, 1) == 0) {
                CHECK_INT(out.shape[0], P);
                CHECK_INT(out.shape[1], F);
                CHECK_ARR("load_transpose2d", &out, want, 0, NULL, 0);
                nk_array_free(&out);
            }
            free(x);
            free(want);
            nk_array_free(&in);
        }
}

/* ---- partition broadcast of any free size */

static void k_bcast(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]); /* [1, F] or [1, 4, F / 4] */
    nk_shape s = x.ndim == 2 ? NK_SHAPE(128, x.shape[1]) : NK_SHAPE(128, x.shape[1], x.shape[2]);
    ref_return_tile(nc, nk_broadcast(nc, x, s));
}

static void check_bcast(nk_dtype dt, int ndim, int64_t F, uint64_t seed)
{
    int64_t s[3] = {1, ndim == 2 ? F : 4, F / 4};
    nk_array in, out;
    arr_new(&in, dt, ndim, s);
    arr_fill(&in, &seed, -10, 10);
    double *x = arr_values(&in), *want = malloc((size_t)(128 * F) * sizeof *want);
    for (int p = 0; p < 128; p++)
        for (int64_t f = 0; f < F; f++)
            want[p * F + f] = x[f];
    if (run_kernel("broadcast", k_bcast, &in, 1, &out, 1) == 0) {
        CHECK_INT(out.shape[0], 128);
        CHECK_ARR("broadcast", &out, want, 0, NULL, 0);
        nk_array_free(&out);
    }
    /* the compiled program: ceil(F / 512) matmuls of at most 512 columns */
    nk_kernel *k = nk_kernel_new("broadcast", k_bcast);
    const nk_program *p = NULL;
    if (nk_kernel_compile(k, &in, 1, NULL, &p) == 0) {
        int mm = 0;
        for (uint32_t i = 0; i < p->ninstr; i++)
            if (p->instrs[i].op == NK_OP_MATMUL) {
                mm++;
                CHECK(nk__opnd_free_size(p, &p->instrs[i].src[1]) <= 512);
            }
        CHECK_INT(mm, (F + 511) / 512);
    }
    nk_kernel_free(k);
    free(x);
    free(want);
    nk_array_free(&in);
}

TEST(partition_broadcast_of_any_free_size)
{
    check_bcast(NK_F32, 2, 100, 1);
    check_bcast(NK_F32, 2, 512, 2);
    check_bcast(NK_F32, 2, 513, 3);
    check_bcast(NK_BF16, 2, 1300, 4);
    check_bcast(NK_F32, 2, 4096, 5);
    check_bcast(NK_I32, 2, 700, 6); /* integers go through a float32 copy */
    check_bcast(NK_BF16, 3, 2400, 7); /* [1, 4, 600] -> [128, 4, 600] */
}

/* ---- timing */

#define LAT 1300.0
#define HALF 256.0

static double eff(double chunk) { return chunk / (chunk + HALF); }

/* mode 0: load; 1: SBUF -> SBUF of the loaded tile; 2: HBM -> HBM;
 * 3: load_transpose2d of [F, 128] */
static void k_dma_time(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = args[0];
    if (K.mode == 2) {
        nk_tensor o = nk_ndarray(nc, NK_SHAPE(x.shape[0], x.shape[1]), NK_F32, NK_SHARED_HBM);
        nk_dma_copy(nc, o, x);
        nk_return(nc, o);
        return;
    }
    nk_tensor t = K.mode == 3 ? nk_load_transpose2d(nc, x) : nk_load(nc, x);
    if (K.mode == 1) {
        nk_tensor d = nk_ndarray(nc, NK_SHAPE(128, x.shape[1]), NK_F32, NK_SBUF);
        nk_dma_copy(nc, d, t);
        t = d;
    }
    ref_return_tile(nc, t);
}

static double dma_bar(int mode, int op, int64_t rows, int64_t cols, const char *target, timed *keep)
{
    K.mode = mode;
    int64_t s[2] = {rows, cols};
    nk_array in = arr_shape(NK_F32, 2, s);
    timed t;
    double ns = -1;
    if (timed_run(&t, k_dma_time, &in, 1, target) == 0)
        ns = timed_bar_ns(&t, op, 0);
    if (keep)
        *keep = t;
    else
        timed_free(&t);
    return ns;
}

TEST(dma_copy_and_load_transpose2d_timing)
{
    /* [128, 2048] float32: 16 descriptors of 8 partitions x 8 KiB = 64 KiB */
    double bytes = 8 * 2048 * 4, desc1 = bytes / (17 * eff(8192));
    /* a load: one HBM side, 16 x 64 KiB over 410 GB/s ends before the engines */
    CHECK_NEAR(dma_bar(0, NK_OP_LOAD, 128, 2048, "trn1", NULL), LAT + desc1, 1e-9, 0);
    /* SBUF to SBUF: no HBM at all, the same engine time */
    timed t;
    CHECK_NEAR(dma_bar(1, NK_OP_DMA_COPY, 128, 2048, "trn1", &t), LAT + desc1, 1e-9, 0);
    if (t.tl) {
        int i = timed_nth(&t, NK_OP_DMA_COPY, 0), n = 0;
        for (uint32_t k = 0; k < t.tl->nxfers; k++)
            if ((int)t.tl->xfers[k].instr == i) {
                n++;
                CHECK_INT(t.tl->xfers[k].partitions, 8);
                CHECK_INT(t.tl->xfers[k].bytes, 8 * 8192);
                CHECK_INT(t.tl->xfers[k].to_hbm, 0);
            }
        CHECK_INT(n, 16);
    }
    timed_free(&t);
    /* HBM to HBM: each byte read and written, so the 16 descriptors pass
       2 x 64 KiB each through the shared 410 GB/s: HBM-bound */
    CHECK_NEAR(dma_bar(2, NK_OP_DMA_COPY, 128, 2048, "trn1", NULL), LAT + 16 * 2 * bytes / 410, 1e-9, 0);
    /* load_transpose2d of [512, 128] float32 on trn1: 8 partitions x 2 KiB per
       descriptor, read 4 bytes at a time */
    double tb = 8 * 512 * 4;
    CHECK_NEAR(dma_bar(3, NK_OP_LOAD_TRANSPOSE, 512, 128, "trn1", NULL), LAT + tb / (17 * eff(4)), 1e-9, 0);
    /* on trn2 the DMA transpose runs at 90% of a copy's 23 B/ns */
    CHECK_NEAR(dma_bar(3, NK_OP_LOAD_TRANSPOSE, 512, 128, "trn2", NULL), LAT + tb / (23 * 0.9), 1e-9, 0);
}

/* ---- the tracer's checks */

static void k_err_count(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor t = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 32), NK_F32, NK_SBUF);
    at = __LINE__; nk_dma_copy(nc, d, t);
}

static void k_err_dtype(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor o = nk_ndarray(nc, NK_SHAPE(128, 64), NK_BF16, NK_SHARED_HBM);
    at = __LINE__; nk_dma_copy(nc, o, a[0]);
}

static void k_err_unwritten(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n, (void)a;
    nk_tensor s = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SHARED_HBM);
    nk_tensor o = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SHARED_HBM);
    at = __LINE__; nk_dma_copy(nc, o, s);
}

static void k_err_psum(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor t = nk_load(nc, a[0]), ps = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_PSUM);
    nk_isa_tensor_copy(nc, ps, t);
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(128, 64), NK_F32, NK_SBUF);
    at = __LINE__; nk_dma_copy(nc, d, ps);
}

static void k_err_ltr_tile(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor t = nk_load(nc, a[0]);
    at = __LINE__; nk_load_transpose2d(nc, t);
}

static void k_err_ltr_dims(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_load_transpose2d(nc, nk_reshape(nc, a[0], NK_SHAPE(128, 8, 8)));
}

static void k_err_ltr_columns(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_load_transpose2d(nc, nk_reshape(nc, a[0], NK_SHAPE(32, 256)));
}

static void k_err_ltr_unwritten(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n, (void)a;
    nk_tensor s = nk_ndarray(nc, NK_SHAPE(256, 64), NK_F32, NK_SHARED_HBM);
    at = __LINE__; nk_load_transpose2d(nc, s);
}

TEST(dma_copy_and_load_transpose2d_errors)
{
    int64_t s[2] = {128, 64};
    nk_array x = arr_shape(NK_F32, 2, s);
    EXPECT_TRACE_ERROR(k_err_count, &x, 1, NK_ESHAPE, &at,
                       "nk_dma_copy: src [128, 64] has 8192 elements but dst [128, 32] has 4096");
    EXPECT_TRACE_ERROR(k_err_dtype, &x, 1, NK_EDTYPE, &at,
                       "nk_dma_copy: src is float32 but dst is bfloat16 (DMA does not convert");
    EXPECT_TRACE_ERROR(k_err_unwritten, &x, 1, NK_EUNINIT, &at, "nk_dma_copy: src is an HBM tensor [128, 64]",
                       "never written");
    EXPECT_TRACE_ERROR(k_err_psum, &x, 1, NK_EMEMORY, &at, "nk_dma_copy: DMA does not access PSUM");
    EXPECT_TRACE_ERROR(k_err_ltr_tile, &x, 1, NK_EMEMORY, &at,
                       "nk_load_transpose2d: the source is an SBUF tile; nk_load_transpose2d reads HBM tensors");
    EXPECT_TRACE_ERROR(k_err_ltr_dims, &x, 1, NK_ESHAPE, &at,
                       "nk_load_transpose2d: transposes 2-D tensors, the source [128, 8, 8] has 3 dims");
    EXPECT_TRACE_ERROR(k_err_ltr_columns, &x, 1, NK_EPARTITION, &at, "nk_load_transpose2d: the source [32, 256]",
                       "has 256 columns, which become partitions; at most 128");
    EXPECT_TRACE_ERROR(k_err_ltr_unwritten, &x, 1, NK_EUNINIT, &at, "nk_load_transpose2d: the source is an HBM tensor",
                       "never written");
}
