/*
 * test_ops_mem.c - loads, stores and views: DMA is a bit-exact copy for
 * every dtype; strided views (nk_rs), single indices (nk_i), masked partial
 * tiles (nk_rmask), 3-D and 4-D tensors and tile views starting at
 * partitions 32, 64 and 96 read and write exactly the elements they name.
 * The expected values come from index arithmetic written here.
 */
#include "test_ops_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct {
    int64_t i;
    float s;
} K;

static void k_roundtrip(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    ref_return_tile(nc, nk_load(nc, args[0]));
}

static void fill_bytes(nk_array *a, uint64_t *rng)
{
    uint8_t *b = a->data;
    for (size_t i = 0; i < nk_array_nbytes(a); i++)
        b[i] = (uint8_t)ref_rand64(rng);
}

TEST(mem_load_store_is_bit_exact_for_every_dtype_and_rank)
{
    const int64_t shapes[3][4] = {{128, 40}, {64, 3, 5}, {16, 2, 3, 4}};
    const int ranks[3] = {2, 3, 4};
    uint64_t rng = 3;
    for (int dt = 0; dt < NK_DTYPE_COUNT; dt++)
        for (int s = 0; s < 3; s++) {
            nk_array in, out;
            arr_new(&in, (nk_dtype)dt, ranks[s], shapes[s]);
            fill_bytes(&in, &rng); /* any bit pattern, NaN payloads included */
            if (!run_kernel("roundtrip", k_roundtrip, &in, 1, &out, 1)) {
                CHECK_INT(out.dtype, dt);
                CHECK_INT(out.ndim, ranks[s]);
                for (int d = 0; d < ranks[s]; d++)
                    CHECK_INT(out.shape[d], shapes[s][d]);
                CHECK(memcmp(in.data, out.data, nk_array_nbytes(&in)) == 0);
                nk_array_free(&out);
            }
            nk_array_free(&in);
        }
}

/* x[3:67, 1:10:4, 2:12:5] of a [128, 10, 12] tensor: offsets and strides on
 * every axis of the HBM side. */
static void k_strided_load(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    ref_return_tile(nc, nk_load(nc, nk_ix(nc, args[0], nk_r(3, 67), nk_rs(1, 10, 4), nk_rs(2, 12, 5))));
}

/* A strided view of a tile read by the Vector engine (x2), and a store into
 * every other column of the output: the skipped columns stay zero. */
static void k_strided_tile(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor t = nk_load(nc, args[0]); /* [96, 30] */
    nk_tensor v = nk_ix(nc, t, NK_ALL, nk_rs(1, 30, 3));            /* [96, 10] */
    nk_tensor y = nk_multiply_s(nc, v, 2.0f);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(96, 20), NK_F32, NK_SHARED_HBM);
    nk_store(nc, nk_ix(nc, out, NK_ALL, nk_rs(0, 20, 2)), y);
    nk_return(nc, out);
}

TEST(mem_strided_views_on_hbm_and_tiles)
{
    uint64_t rng = 5;
    int64_t shape[3] = {128, 10, 12};
    nk_array in, out;
    arr_new(&in, NK_BF16, 3, shape);
    arr_fill(&in, &rng, -50, 50);
    if (!run_kernel("strided_load", k_strided_load, &in, 1, &out, 1)) {
        CHECK_INT(out.ndim, 3);
        CHECK_INT(out.shape[0], 64);
        CHECK_INT(out.shape[1], 3); /* 1, 5, 9 */
        CHECK_INT(out.shape[2], 2); /* 2, 7 */
        double want[64 * 3 * 2];
        for (int p = 0; p < 64; p++)
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 2; b++)
                    want[(p * 3 + a) * 2 + b] = arr_get(&in, (size_t)(((3 + p) * 10 + 1 + 4 * a) * 12 + 2 + 5 * b));
        CHECK_ARR("strided load", &out, want, 0, NULL, 0);
        nk_array_free(&out);
    }
    nk_array_free(&in);

    int64_t s2[2] = {96, 30};
    arr_new(&in, NK_F32, 2, s2);
    arr_fill(&in, &rng, -1000, 1000);
    if (!run_kernel("strided_tile", k_strided_tile, &in, 1, &out, 1)) {
        double want[96 * 20];
        for (int p = 0; p < 96; p++)
            for (int j = 0; j < 20; j++)
                want[p * 20 + j] = j % 2 ? 0.0 : 2.0 * arr_get(&in, (size_t)(p * 30 + 1 + 3 * (j / 2)));
        CHECK_ARR("strided tile view and strided store", &out, want, 0, NULL, 0);
        nk_array_free(&out);
    }
    nk_array_free(&in);
}

/* x[:, i, :] of a [P, A, B] tensor, and x[i] of a 4-D [A, P, B, C] one. */
static void k_index3(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    ref_return_tile(nc, nk_load(nc, nk_ix(nc, args[0], NK_ALL, nk_i(K.i))));
}

static void k_index4(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor t = nk_load(nc, nk_ix(nc, args[0], nk_i(K.i)));  /* [P, B, C] */
    ref_return_tile(nc, nk_exp(nc, t));
}

TEST(mem_single_index_drops_the_axis)
{
    uint64_t rng = 8;
    int64_t s3[3] = {70, 5, 9};
    nk_array in, out;
    arr_new(&in, NK_I16, 3, s3);
    arr_fill(&in, &rng, -30000, 30000);
    for (K.i = 0; K.i < 5; K.i += 2) {
        if (run_kernel("index3", k_index3, &in, 1, &out, 1))
            continue;
        CHECK_INT(out.ndim, 2);
        CHECK_INT(out.shape[1], 9);
        double want[70 * 9];
        for (int p = 0; p < 70; p++)
            for (int b = 0; b < 9; b++)
                want[p * 9 + b] = arr_get(&in, (size_t)((p * 5 + K.i) * 9 + b));
        CHECK_ARR("x[:, i, :]", &out, want, 0, NULL, 0);
        nk_array_free(&out);
    }
    nk_array_free(&in);

    int64_t s4[4] = {3, 32, 4, 6};
    arr_new(&in, NK_F16, 4, s4);
    arr_fill(&in, &rng, -4, 4);
    for (K.i = 0; K.i < 3; K.i++) {
        if (run_kernel("index4", k_index4, &in, 1, &out, 1))
            continue;
        CHECK_INT(out.ndim, 3);
        CHECK_INT(out.shape[0], 32);
        double want[32 * 4 * 6];
        for (int i = 0; i < 32 * 4 * 6; i++)
            want[i] = exp(arr_get(&in, (size_t)(K.i * 32 * 4 * 6 + i)));
        CHECK_ARR("exp(x[i]) of a 4-D tensor", &out, want, 1, NULL, 0);
        nk_array_free(&out);
    }
    nk_array_free(&in);
}

/* [rows, 40] in tiles of 128 rows, the last one clipped by a mask. */
static void k_masked(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = args[0];
    int64_t rows = x.shape[0];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, x.shape[1]), (nk_dtype)x.dtype, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, i, (rows + 127) / 128) {
        nk_range r = nk_rmask(i * 128, (i + 1) * 128, rows);
        nk_tensor t = nk_load(nc, nk_ix(nc, x, r, NK_ALL));
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), nk_add_s(nc, t, K.s));
    }
    nk_return(nc, out);
}

TEST(mem_masked_partial_tiles_cover_every_row_once)
{
    const int64_t rows[] = {250, 128, 129, 1, 383};
    uint64_t rng = 13;
    K.s = 0.5f;
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        int64_t shape[2] = {rows[k], 40};
        nk_array in, out;
        arr_new(&in, NK_F32, 2, shape);
        arr_fill(&in, &rng, -100, 100);
        if (!run_kernel("masked", k_masked, &in, 1, &out, 1)) {
            size_t n = nk_array_numel(&in);
            double *want = malloc(n * sizeof *want);
            for (size_t i = 0; i < n; i++)
                want[i] = ref_round(NK_F32, arr_get(&in, i) + 0.5);
            CHECK_ARR("masked tiles", &out, want, 0, NULL, 0);
            free(want);
            nk_array_free(&out);
        }
        nk_array_free(&in);
    }
}

/* Tile views at partitions 0, 32, 64, 96 (32 wide) and 64 (64 wide): read
 * by a language op, written by ISA ops into one tile, stored back. */
static void k_partitions(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor t = nk_load(nc, args[0]); /* [128, 24] */
    nk_tensor dst = nk_ndarray(nc, NK_SHAPE(128, 24), NK_F32, NK_SBUF);
    for (int q = 0; q < 4; q++) {
        nk_tensor src = nk_ix(nc, t, nk_r(32 * q, 32 * q + 32));
        nk_tensor d = nk_ix(nc, dst, nk_r(32 * q, 32 * q + 32));
        nk_isa_tensor_scalar(nc, d, src, NK_ALU_MULTIPLY, nk_imm((float)(q + 1)), 0, NK_ALU_BYPASS, nk_imm(0), 0);
    }
    ref_return_tile(nc, dst);
    /* the upper 64 partitions through a language op: a new tile at partition 0 */
    ref_return_tile(nc, nk_add_s(nc, nk_ix(nc, t, nk_r(64, 128)), 1.0f));
    /* a 32-partition slice stored into rows 96..127 of an HBM tensor */
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 24), NK_F32, NK_SHARED_HBM);
    nk_store(nc, nk_ix(nc, out, nk_r(96, 128)), nk_ix(nc, dst, nk_r(96, 128)));
    nk_return(nc, out);
}

TEST(mem_tile_views_at_partitions_32_64_96)
{
    uint64_t rng = 17;
    int64_t shape[2] = {128, 24};
    nk_array in, out[3];
    arr_new(&in, NK_F32, 2, shape);
    arr_fill(&in, &rng, -10, 10);
    if (!run_kernel("partitions", k_partitions, &in, 1, out, 3)) {
        double want0[128 * 24], want1[64 * 24], want2[128 * 24];
        for (int p = 0; p < 128; p++)
            for (int f = 0; f < 24; f++) {
                double x = arr_get(&in, (size_t)(p * 24 + f));
                want0[p * 24 + f] = ref_round(NK_F32, x * (p / 32 + 1));
                if (p >= 64)
                    want1[(p - 64) * 24 + f] = ref_round(NK_F32, x + 1.0);
                want2[p * 24 + f] = p >= 96 ? want0[p * 24 + f] : 0.0;
            }
        CHECK_ARR("ISA writes at partitions 0/32/64/96", &out[0], want0, 0, NULL, 0);
        CHECK_INT(out[1].shape[0], 64);
        CHECK_ARR("read at partition 64", &out[1], want1, 0, NULL, 0);
        CHECK_ARR("store from partition 96", &out[2], want2, 0, NULL, 0);
        arr_free_all(out, 3);
    }
    nk_array_free(&in);
}

/* Compute on 3-D and 4-D tiles: every free dim walked in row-major order. */
static void k_rank(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor a = nk_load(nc, args[0]), b = nk_load(nc, args[1]);
    ref_return_tile(nc, nk_subtract(nc, nk_multiply(nc, a, b), a));
}

TEST(mem_rank_3_and_4_tiles_compute_elementwise)
{
    const int64_t shapes[2][4] = {{100, 3, 7}, {40, 2, 3, 5}};
    uint64_t rng = 19;
    for (int s = 0; s < 2; s++) {
        nk_array in[2], out;
        arr_new(&in[0], NK_BF16, 3 + s, shapes[s]);
        arr_new(&in[1], NK_BF16, 3 + s, shapes[s]);
        arr_fill(&in[0], &rng, -8, 8);
        arr_fill(&in[1], &rng, -8, 8);
        if (!run_kernel("rank", k_rank, in, 2, &out, 1)) {
            size_t n = nk_array_numel(&out);
            double *want = malloc(n * sizeof *want);
            for (size_t i = 0; i < n; i++) {
                double a = arr_get(&in[0], i), b = arr_get(&in[1], i);
                double ab = ref_round(NK_BF16, ref_round(NK_F32, a * b)); /* the intermediate tile is bf16 */
                want[i] = ref_round(NK_F32, ab - a);
            }
            CHECK_ARR("a*b - a on a rank-n tile", &out, want, 0, NULL, 0);
            free(want);
            nk_array_free(&out);
        }
        arr_free_all(in, 2);
    }
}
