/*
 * test_errors.c - every check the tracer makes, one small kernel each.
 *
 * Each kernel makes one mistake; `at = __LINE__;` sits on the line of the
 * offending call. A test asserts the status, that the message starts with
 * this file's path and that line, and that it names the offending values.
 * The complete messages are also kept in tests/golden/errors.txt and
 * compared exactly (NK_UPDATE_GOLDEN=1 rewrites the file).
 */
#include "test.h"
#include "nklab.h"

#include <math.h>
#include <stdlib.h>

static int at, at2; /* lines of the offending call and of a related allocation */

#define F32 NK_F32
#define BF16 NK_BF16
#define ARG(dt, ...) ((nk_array){(dt), NK__NARG(__VA_ARGS__), {__VA_ARGS__}, NULL})

/* ---- the kernels */

static void k_load_200_rows(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_tensor t = nk_load(nc, a[0]);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(200, 4), F32, NK_SHARED_HBM);
    nk_store(nc, out, t);
    nk_return(nc, out);
}

static void k_sbuf_tile_200_partitions(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)a, (void)n;
    at = __LINE__; nk_ndarray(nc, NK_SHAPE(200, 4), F32, NK_SBUF);
}

/* One instruction reads two tiles that do not fit together: no allocation
 * or spill can help, and the error names that instruction and its tiles. */
static void k_sbuf_capacity(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at2 = __LINE__; nk_tensor x = nk_zeros(nc, NK_SHAPE(128, 40000), F32, NK_SBUF); /* 160000 of 180224 bytes */
    nk_tensor y = nk_zeros(nc, NK_SHAPE(128, 8192), F32, NK_SBUF);
    at = __LINE__; nk_tensor s = nk_add(nc, nk_ix(nc, x, NK_ALL, nk_r(0, 4)), nk_ix(nc, y, NK_ALL, nk_r(0, 4)));
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(1, 4), F32, NK_SHARED_HBM);
    nk_store(nc, out, nk_ix(nc, s, nk_r(0, 1), NK_ALL));
    nk_return(nc, out);
    (void)a;
}

static void k_psum_capacity(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor ps[9];
    for (int i = 0; i < 8; i++) /* one 2 KiB bank each: PSUM is full */
        ps[i] = nk_zeros(nc, NK_SHAPE(128, 512), F32, NK_PSUM);
    at = __LINE__; ps[8] = nk_zeros(nc, NK_SHAPE(128, 512), F32, NK_PSUM);
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(1, 4), F32, NK_SHARED_HBM);
    for (int i = 0; i < 9; i++)
        nk_store(nc, out, nk_copy(nc, nk_ix(nc, ps[i], nk_r(0, 1), nk_r(0, 4)), F32));
    nk_return(nc, out);
    (void)a;
}

/* loads a[0] (stationary) and a[1] (moving), matmul into a fresh PSUM tile */
static void matmul_of_args(nk_ctx *nc, const nk_tensor *a, int accumulate)
{
    nk_tensor st = nk_load(nc, a[0]), mv = nk_load(nc, a[1]);
    int64_t m = st.shape[1] < 128 ? st.shape[1] : 128; /* the PSUM tile itself is valid */
    at2 = __LINE__; nk_tensor ps = nk_ndarray(nc, NK_SHAPE(m, mv.shape[1]), F32, NK_PSUM);
    at = __LINE__; nk_isa_nc_matmul(nc, ps, st, mv, accumulate);
}

static void k_matmul_stationary_129(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    matmul_of_args(nc, a, 0);
}

static void k_psum_bank_crossing(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor st = nk_load(nc, a[0]), mv = nk_load(nc, a[1]);
    nk_tensor ps = nk_ndarray(nc, NK_SHAPE(128, 1024), F32, NK_PSUM); /* two banks */
    nk_tensor half = nk_ix(nc, ps, NK_ALL, nk_r(256, 768));
    at = __LINE__; nk_isa_nc_matmul(nc, half, st, mv, 0);
}

static void k_add_shape_mismatch(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), y = nk_load(nc, a[1]);
    at = __LINE__; nk_add(nc, x, y);
}

static void k_store_shape_mismatch(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 32), F32, NK_SHARED_HBM);
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_store(nc, out, x);
}

static void k_store_dtype_mismatch(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_store(nc, out, x);
}

static void k_hbm_index_past_end(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_ix(nc, a[0], nk_r(128, 256), NK_ALL);
}

static void k_read_unwritten_tile(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)a, (void)n;
    at2 = __LINE__; nk_tensor t = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SBUF);
    at = __LINE__; nk_exp(nc, t);
}

static void k_accumulate_unwritten_psum(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    matmul_of_args(nc, a, 1);
}

static void k_store_from_psum(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)a, (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    nk_tensor ps = nk_zeros(nc, NK_SHAPE(128, 64), F32, NK_PSUM);
    at = __LINE__; nk_store(nc, out, ps);
}

static void k_bitwise_on_floats(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), y = nk_load(nc, a[1]);
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_tensor(nc, d, x, y, NK_ALU_BITWISE_AND);
}

static void k_start_partition(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    nk_tensor v = nk_ix(nc, x, nk_r(16, 80)); /* 64 partitions from 16 */
    at = __LINE__; nk_exp(nc, v);
}

static void k_partition_stride(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_ix(nc, x, nk_rs(0, 128, 2));
}

static void k_hbm_to_exp(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_exp(nc, a[0]);
}

static void k_hbm_to_activation(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(64, 64), F32, NK_SBUF);
    at = __LINE__; nk_isa_activation(nc, d, NK_ACT_EXP, a[0], nk_imm(0), nk_imm(1), NK_NONE);
}

static void k_gpsimd_reads_psum(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)a, (void)n;
    at2 = __LINE__; nk_tensor ps = nk_zeros(nc, NK_SHAPE(128, 64), F32, NK_PSUM);
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_copy_at(nc, NK_HERE, d, ps, NK_ENGINE_GPSIMD);
}

static void k_gpsimd_iota_into_psum(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)a, (void)n;
    nk_tensor ps = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_PSUM);
    nk_affine e = {0, 1, {0}};
    at = __LINE__; nk_isa_iota(nc, ps, e);
}

static void k_break_from_loop(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    at = __LINE__; NK_AFFINE_RANGE(nc, i, 4) {
        nk_store(nc, out, nk_load(nc, a[0]));
        if (i == 1)
            break;
    }
    nk_return(nc, out);
}

static void k_break_from_inner_loop(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    NK_SEQUENTIAL_RANGE(nc, i, 2) {
        at = __LINE__; NK_AFFINE_RANGE(nc, j, 3) {
            nk_store(nc, out, nk_load(nc, a[0]));
            break;
        }
    }
    nk_return(nc, out);
}

static void k_no_output(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    at = __LINE__; nk_store(nc, out, nk_exp(nc, nk_load(nc, a[0])));
}

static void k_return_input(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[1]);
    nk_store(nc, a[1], nk_exp(nc, x));
    at = __LINE__; nk_return(nc, a[1]);
}

static void k_two_errors(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_tensor t = nk_load(nc, a[0]); /* 200 rows */
    nk_tensor ps = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_PSUM);
    at2 = __LINE__; nk_store(nc, a[0], ps); /* from PSUM, but a no-op now */
    nk_return(nc, a[0]);
    (void)t;
}

static void k_tile_used_after_loop(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    nk_tensor last = NK_NONE;
    NK_AFFINE_RANGE(nc, i, 2) {
        at2 = __LINE__; last = nk_exp(nc, nk_load(nc, a[0]));
    }
    at = __LINE__; nk_store(nc, out, last);
    nk_return(nc, out);
}

/* ---- more of the tracer's checks */

static void k_vector_transpose_64(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(64, 64), F32, NK_SBUF);
    at = __LINE__; nk_isa_nc_transpose_at(nc, NK_HERE, d, x, NK_ENGINE_VECTOR);
}

static void k_both_inputs_in_psum(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)a, (void)n;
    nk_tensor p = nk_zeros(nc, NK_SHAPE(128, 64), F32, NK_PSUM), q = nk_zeros(nc, NK_SHAPE(128, 64), F32, NK_PSUM);
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_tensor(nc, d, p, q, NK_ALU_ADD);
}

static void k_reduce_partition_axis(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_sum(nc, x, 0, 1);
}

static void k_activation_reduce_shape(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SBUF), r = nk_ndarray(nc, NK_SHAPE(128, 2), F32, NK_SBUF);
    at = __LINE__; nk_isa_activation(nc, d, NK_ACT_EXP, x, nk_imm(0), nk_imm(1), r);
}

static void k_column_operand_shape(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    nk_tensor c = nk_zeros(nc, NK_SHAPE(128, 2), F32, NK_SBUF);
    at = __LINE__; nk_multiply(nc, x, nk_ix(nc, c, NK_ALL, nk_r(0, 2)));
}

static void k_column_operand_isa(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    nk_tensor c = nk_zeros(nc, NK_SHAPE(128, 2), F32, NK_SBUF), d = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_scalar(nc, d, x, NK_ALU_ADD, nk_col(c), 0, NK_ALU_BYPASS, nk_imm(0), 0);
}

static void k_vector_free_size_psum(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)a, (void)n;
    nk_tensor p = nk_ndarray(nc, NK_SHAPE(128, 5000), BF16, NK_PSUM); /* 10000 bytes of 16384 */
    nk_isa_memset_at(nc, NK_HERE, nk_ix(nc, p, NK_ALL, nk_r(0, 4000)), 0.0, NK_ENGINE_VECTOR);
    nk_isa_memset_at(nc, NK_HERE, nk_ix(nc, p, NK_ALL, nk_r(4000, 5000)), 0.0, NK_ENGINE_VECTOR);
    at = __LINE__; nk_copy(nc, p, F32);
}

static void k_matmul_dst(nk_ctx *nc, const nk_tensor *a, int n, nk_buffer mem, nk_dtype dt, int64_t cols)
{
    (void)n;
    nk_tensor st = nk_load(nc, a[0]), mv = nk_load(nc, a[1]);
    nk_tensor d = nk_ndarray(nc, NK_SHAPE(128, cols), dt, mem);
    at = __LINE__; nk_isa_nc_matmul(nc, d, st, mv, 0);
}
static void k_matmul_dst_sbuf(nk_ctx *nc, const nk_tensor *a, int n) { k_matmul_dst(nc, a, n, NK_SBUF, F32, 512); }
static void k_matmul_dst_bf16(nk_ctx *nc, const nk_tensor *a, int n) { k_matmul_dst(nc, a, n, NK_PSUM, BF16, 512); }
static void k_matmul_dst_shape(nk_ctx *nc, const nk_tensor *a, int n) { k_matmul_dst(nc, a, n, NK_PSUM, F32, 256); }

static void k_load_from_sbuf(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_load(nc, x);
}

static void k_store_into_tile(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), y = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SBUF);
    at = __LINE__; nk_store(nc, y, x);
}

static void k_store_hbm_value(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    at = __LINE__; nk_store(nc, out, a[0]);
}

static void k_return_twice(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    nk_store(nc, out, nk_load(nc, a[0]));
    nk_return(nc, out);
    at = __LINE__; nk_return(nc, out);
}

static void k_return_tile(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_return(nc, x);
}

static void k_full_in_hbm(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)a, (void)n;
    at = __LINE__; nk_full(nc, NK_SHAPE(128, 64), 1.0, F32, NK_SHARED_HBM);
}

static void k_ix_zero_step(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_ix(nc, a[0], NK_ALL, nk_rs(0, 64, 0));
}

static void k_ix_empty_range(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_ix(nc, a[0], nk_r(4, 4));
}

static void k_ix_too_many_indices(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_ix(nc, a[0], NK_ALL, NK_ALL, nk_r(0, 1));
}

static void k_ix_every_axis_single(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_ix(nc, a[0], nk_i(3), nk_i(5));
}

static void k_ix_partition_single_index(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_ix(nc, x, nk_i(3));
}

static void k_reshape_count(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    at = __LINE__; nk_reshape(nc, a[0], NK_SHAPE(100, 100));
}

static void k_reshape_tile_partitions(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_reshape(nc, x, NK_SHAPE(64, 128));
}

static void k_reshape_strided_view(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor v = nk_ix(nc, a[0], NK_ALL, nk_r(0, 32));
    at = __LINE__; nk_reshape(nc, v, NK_SHAPE(32, 128));
}

static void k_loop_negative_trip(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)a, (void)n;
    at = __LINE__; NK_AFFINE_RANGE(nc, i, -3) {
    }
}

static void k_loop_bufs(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)a, (void)n;
    at = __LINE__; NK_AFFINE_RANGE_BUFS(nc, i, 2, 33) {
    }
}

/* nested traced loops, one per call: legal recursion until the depth limit */
static void nest(nk_ctx *nc, int depth, nk_tensor out, nk_tensor in)
{
    if (depth == 17) {
        nk_store(nc, out, nk_load(nc, in));
        return;
    }
    if (depth == 16)
        at = __LINE__ + 1;
    NK_SEQUENTIAL_RANGE(nc, i, 1) {
        nest(nc, depth + 1, out, in);
    }
}

static void k_loops_too_deep(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    nest(nc, 0, out, a[0]);
    nk_return(nc, out);
}

static void k_invalid_engine(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_tensor_at(nc, NK_HERE, d, x, x, NK_ALU_ADD, NK_ENGINE_SCALAR);
}

static void k_reduce_with_subtract(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]), d = nk_ndarray(nc, NK_SHAPE(128, 1), F32, NK_SBUF);
    at = __LINE__; nk_isa_tensor_reduce(nc, d, x, NK_ALU_SUBTRACT, 1, 1);
}

static void k_broadcast_shape(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor x = nk_load(nc, a[0]);
    at = __LINE__; nk_broadcast(nc, x, NK_SHAPE(128, 128));
}

static void k_load_of_unwritten_output(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)a, (void)n;
    at2 = __LINE__; nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    at = __LINE__; nk_load(nc, out);
}

/* Legal: a recursive function whose loop is entered again inside itself. */
static void tree(nk_ctx *nc, int depth, nk_tensor out, nk_tensor in)
{
    NK_AFFINE_RANGE(nc, i, 2) {
        if (depth < 3)
            tree(nc, depth + 1, out, in);
        else
            nk_store(nc, out, nk_exp(nc, nk_load(nc, in)));
    }
}

static void k_recursive_loops(nk_ctx *nc, const nk_tensor *a, int n)
{
    (void)n;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(128, 64), F32, NK_SHARED_HBM);
    tree(nc, 0, out, a[0]);
    nk_return(nc, out);
}

/* ---- the cases: kernel and argument shapes */

typedef struct ecase {
    const char *name;
    nk_kernel_fn fn;
    int nargs;
    nk_array args[2];
} ecase;

static const ecase cases[] = {
    {"load_200_rows", k_load_200_rows, 1, {ARG(F32, 200, 4)}},
    {"sbuf_tile_200_partitions", k_sbuf_tile_200_partitions, 1, {ARG(F32, 4)}},
    {"sbuf_capacity", k_sbuf_capacity, 1, {ARG(F32, 4)}},
    {"psum_capacity", k_psum_capacity, 1, {ARG(F32, 4)}},
    {"matmul_stationary_129", k_matmul_stationary_129, 2, {ARG(BF16, 128, 129), ARG(BF16, 128, 512)}},
    {"matmul_moving_513", k_matmul_stationary_129, 2, {ARG(BF16, 128, 128), ARG(BF16, 128, 513)}},
    {"psum_bank_crossing", k_psum_bank_crossing, 2, {ARG(BF16, 128, 128), ARG(BF16, 128, 512)}},
    {"add_shape_mismatch", k_add_shape_mismatch, 2, {ARG(F32, 128, 64), ARG(F32, 128, 32)}},
    {"store_shape_mismatch", k_store_shape_mismatch, 1, {ARG(F32, 128, 64)}},
    {"store_dtype_mismatch", k_store_dtype_mismatch, 1, {ARG(BF16, 128, 64)}},
    {"matmul_dtype_mismatch", k_matmul_stationary_129, 2, {ARG(BF16, 128, 128), ARG(F32, 128, 512)}},
    {"hbm_index_past_end", k_hbm_index_past_end, 1, {ARG(F32, 200, 4)}},
    {"read_unwritten_tile", k_read_unwritten_tile, 1, {ARG(F32, 4)}},
    {"accumulate_unwritten_psum", k_accumulate_unwritten_psum, 2, {ARG(BF16, 128, 128), ARG(BF16, 128, 512)}},
    {"store_from_psum", k_store_from_psum, 1, {ARG(F32, 4)}},
    {"int_matmul", k_matmul_stationary_129, 2, {ARG(NK_I32, 128, 128), ARG(NK_I32, 128, 512)}},
    {"bitwise_on_floats", k_bitwise_on_floats, 2, {ARG(F32, 128, 64), ARG(F32, 128, 64)}},
    {"start_partition", k_start_partition, 1, {ARG(F32, 128, 8)}},
    {"partition_stride", k_partition_stride, 1, {ARG(F32, 128, 8)}},
    {"hbm_to_exp", k_hbm_to_exp, 1, {ARG(F32, 250, 512)}},
    {"hbm_to_activation", k_hbm_to_activation, 1, {ARG(F32, 64, 64)}},
    {"gpsimd_reads_psum", k_gpsimd_reads_psum, 1, {ARG(F32, 4)}},
    {"gpsimd_iota_into_psum", k_gpsimd_iota_into_psum, 1, {ARG(F32, 4)}},
    {"break_from_loop", k_break_from_loop, 1, {ARG(F32, 128, 64)}},
    {"break_from_inner_loop", k_break_from_inner_loop, 1, {ARG(F32, 128, 64)}},
    {"no_output", k_no_output, 1, {ARG(F32, 128, 64)}},
    {"return_input", k_return_input, 2, {ARG(F32, 4), ARG(F32, 128, 64)}},
    {"two_errors", k_two_errors, 1, {ARG(F32, 200, 4)}},
    {"tile_used_after_loop", k_tile_used_after_loop, 1, {ARG(F32, 128, 64)}},
    {"vector_transpose_64", k_vector_transpose_64, 1, {ARG(F32, 64, 64)}},
    {"both_inputs_in_psum", k_both_inputs_in_psum, 1, {ARG(F32, 4)}},
    {"reduce_partition_axis", k_reduce_partition_axis, 1, {ARG(F32, 128, 64)}},
    {"activation_reduce_shape", k_activation_reduce_shape, 1, {ARG(F32, 128, 64)}},
    {"column_operand_shape", k_column_operand_shape, 1, {ARG(F32, 128, 64)}},
    {"column_operand_isa", k_column_operand_isa, 1, {ARG(F32, 128, 64)}},
    {"vector_free_size_psum", k_vector_free_size_psum, 1, {ARG(F32, 4)}},
    {"matmul_dst_sbuf", k_matmul_dst_sbuf, 2, {ARG(BF16, 128, 128), ARG(BF16, 128, 512)}},
    {"matmul_dst_bf16", k_matmul_dst_bf16, 2, {ARG(BF16, 128, 128), ARG(BF16, 128, 512)}},
    {"matmul_dst_shape", k_matmul_dst_shape, 2, {ARG(BF16, 128, 128), ARG(BF16, 128, 512)}},
    {"matmul_contraction_mismatch", k_matmul_stationary_129, 2, {ARG(BF16, 128, 128), ARG(BF16, 64, 512)}},
    {"load_from_sbuf", k_load_from_sbuf, 1, {ARG(F32, 128, 64)}},
    {"store_into_tile", k_store_into_tile, 1, {ARG(F32, 128, 64)}},
    {"store_hbm_value", k_store_hbm_value, 1, {ARG(F32, 128, 64)}},
    {"return_twice", k_return_twice, 1, {ARG(F32, 128, 64)}},
    {"return_tile", k_return_tile, 1, {ARG(F32, 128, 64)}},
    {"full_in_hbm", k_full_in_hbm, 1, {ARG(F32, 4)}},
    {"ix_zero_step", k_ix_zero_step, 1, {ARG(F32, 128, 64)}},
    {"ix_empty_range", k_ix_empty_range, 1, {ARG(F32, 128, 64)}},
    {"ix_too_many_indices", k_ix_too_many_indices, 1, {ARG(F32, 128, 64)}},
    {"ix_every_axis_single", k_ix_every_axis_single, 1, {ARG(F32, 128, 64)}},
    {"ix_partition_single_index", k_ix_partition_single_index, 1, {ARG(F32, 128, 64)}},
    {"reshape_count", k_reshape_count, 1, {ARG(F32, 128, 64)}},
    {"reshape_tile_partitions", k_reshape_tile_partitions, 1, {ARG(F32, 128, 64)}},
    {"reshape_strided_view", k_reshape_strided_view, 1, {ARG(F32, 128, 64)}},
    {"loop_negative_trip", k_loop_negative_trip, 1, {ARG(F32, 4)}},
    {"loop_bufs", k_loop_bufs, 1, {ARG(F32, 4)}},
    {"loops_too_deep", k_loops_too_deep, 1, {ARG(F32, 128, 64)}},
    {"invalid_engine", k_invalid_engine, 1, {ARG(F32, 128, 64)}},
    {"reduce_with_subtract", k_reduce_with_subtract, 1, {ARG(F32, 128, 64)}},
    {"broadcast_shape", k_broadcast_shape, 1, {ARG(F32, 128, 64)}},
    {"load_of_unwritten_output", k_load_of_unwritten_output, 1, {ARG(F32, 4)}},
    {"recursive_loops", k_recursive_loops, 1, {ARG(F32, 128, 64)}},
};

/* Traces a case; returns its status and copies the kernel's message. */
static int trace_case(const ecase *c, char *msg, size_t n)
{
    nk_kernel *k = nk_kernel_new(c->name, c->fn);
    const nk_program *p = NULL;
    at = at2 = 0;
    int rc = nk_kernel_compile(k, c->args, c->nargs, NULL, &p);
    snprintf(msg, n, "%s", nk_kernel_error(k));
    nk_kernel_free(k);
    return rc;
}

static const ecase *find_case(const char *name)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(cases[i].name, name))
            return &cases[i];
    return NULL;
}

/* Runs case `name`: status, "this file:line: " prefix, then each of the
 * NULL-terminated values in the message; "@2" stands for "file:at2". */
static void expect(const char *name, int status, const char *const *values)
{
    const ecase *c = find_case(name);
    CHECK(c != NULL);
    if (!c)
        return;
    char msg[1024], want[512];
    CHECK_INT(trace_case(c, msg, sizeof msg), status);
    snprintf(want, sizeof want, "%s:%d: ", __FILE__, at);
    CHECK(at > 0);
    if (strncmp(msg, want, strlen(want)))
        nk_test_fail(__FILE__, __LINE__, "message \"%s\" does not start with \"%s\"", msg, want);
    for (int i = 0; values[i]; i++) {
        if (!strcmp(values[i], "@2")) {
            snprintf(want, sizeof want, "%s:%d", __FILE__, at2);
            CHECK_CONTAINS(msg + strlen(__FILE__), want);
        } else {
            CHECK_CONTAINS(msg, values[i]);
        }
    }
}

#define V(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- one test per check */

TEST(err_load_of_200_rows)
{
    expect("load_200_rows", NK_EPARTITION, V("nk_load: the source [200, 4] has partition dimension 200, which exceeds 128"));
}

TEST(err_sbuf_tile_of_200_partitions)
{
    expect("sbuf_tile_200_partitions", NK_EPARTITION, V("nk_ndarray: the new SBUF tile's partition dimension 200 exceeds 128"));
}

TEST(err_sbuf_capacity)
{
    /* 176 KiB usable per partition; the add needs 160000 + 32768 + 64 at once */
    expect("sbuf_capacity", NK_ECAPACITY,
           V("SBUF capacity exceeded: this tensor_tensor needs its tiles resident at once, 192832 bytes per "
             "partition, and 180224 are available", "[128, 40000] float32 at", "@2", "(160000 bytes)",
             "[128, 8192] float32"));
}

TEST(err_psum_capacity)
{
    expect("psum_capacity", NK_ECAPACITY,
           V("PSUM capacity exceeded", "18432 bytes per partition would be live here, 16384 are available",
             "[128, 512] float32", "(2048 bytes)"));
}

TEST(err_matmul_stationary_free_size)
{
    expect("matmul_stationary_129", NK_ELIMIT, V("nc_matmul:", "stationary free size 129 exceeds 128"));
}

TEST(err_matmul_moving_free_size)
{
    expect("matmul_moving_513", NK_ELIMIT, V("nc_matmul:", "moving free size 513 exceeds 512"));
}

TEST(err_psum_bank_crossing)
{
    /* fp32 columns 256..767: bytes 1024..3071 straddle the bank boundary at 2048 */
    expect("psum_bank_crossing", NK_ECAPACITY, V("bytes 1024..3071", "2048-byte bank"));
}

TEST(err_elementwise_shape_mismatch)
{
    expect("add_shape_mismatch", NK_ESHAPE, V("add:", "[128, 64]", "[128, 32]", "do not broadcast"));
}

TEST(err_store_shape_mismatch)
{
    expect("store_shape_mismatch", NK_ESHAPE, V("nk_store:", "value [128, 64]", "destination [128, 32]"));
}

TEST(err_store_dtype_mismatch)
{
    expect("store_dtype_mismatch", NK_EDTYPE, V("nk_store:", "value is bfloat16", "destination is float32"));
}

TEST(err_matmul_dtype_mismatch)
{
    expect("matmul_dtype_mismatch", NK_EDTYPE, V("nc_matmul:", "stationary is bfloat16", "moving is float32"));
}

TEST(err_hbm_index_past_the_end)
{
    expect("hbm_index_past_end", NK_EBOUNDS, V("nk_ix:", "[128:256]", "axis 0 of size 200"));
}

TEST(err_read_of_unwritten_tile)
{
    expect("read_unwritten_tile", NK_EUNINIT, V("nk_exp (activation): src is an SBUF tile [128, 64]", "@2", "never written"));
}

TEST(err_accumulate_into_unwritten_psum)
{
    expect("accumulate_unwritten_psum", NK_EUNINIT, V("nc_matmul:", "accumulates into the PSUM tile", "@2"));
}

TEST(err_store_from_psum)
{
    expect("store_from_psum", NK_EMEMORY, V("nk_store:", "straight from PSUM"));
}

TEST(err_int_matmul)
{
    expect("int_matmul", NK_EDTYPE, V("nc_matmul:", "float types", "stationary is int32"));
}

TEST(err_bitwise_op_on_floats)
{
    expect("bitwise_on_floats", NK_EDTYPE, V("tensor_tensor:", "bitwise_and needs integer operands", "float32"));
}

TEST(err_start_partition_rule)
{
    expect("start_partition", NK_EPARTITION, V("64 partitions starting at partition 16"));
}

TEST(err_no_striding_on_partitions)
{
    expect("partition_stride", NK_EPARTITION, V("nk_ix:", "no striding along partitions (step 2)"));
}

TEST(err_hbm_tensor_to_compute_op)
{
    /* a language op names the HBM input before it shapes a result like it */
    expect("hbm_to_exp", NK_EMEMORY, V("exp: input is an HBM tensor", "nk_load it first"));
    expect("hbm_to_activation", NK_EMEMORY, V("activation: src is an HBM tensor"));
}

TEST(err_gpsimd_touches_psum)
{
    expect("gpsimd_reads_psum", NK_EMEMORY, V("tensor_copy:", "GpSimd engine cannot access PSUM", "[128, 64]", "@2"));
    expect("gpsimd_iota_into_psum", NK_EMEMORY, V("iota:", "PSUM", "GpSimd"));
}

TEST(err_break_out_of_traced_loop)
{
    expect("break_from_loop", NK_ELOOP, V("left this loop of 4 iterations", "break"));
    /* an inner loop left early is caught when the outer loop enters it again */
    expect("break_from_inner_loop", NK_ELOOP, V("left this loop of 3 iterations"));
}

TEST(err_kernel_with_no_output)
{
    /* reported at the kernel's last call */
    expect("no_output", NK_EINVAL, V("returned no output", "nk_return"));
}

TEST(err_return_of_an_input)
{
    expect("return_input", NK_EMEMORY, V("nk_return:", "not input 1"));
}

TEST(err_first_of_two_errors_wins)
{
    /* the store from PSUM (line at2) comes after the failed load (line at) */
    expect("two_errors", NK_EPARTITION, V("nk_load:", "partition dimension 200"));
    char msg[1024], second[64];
    trace_case(find_case("two_errors"), msg, sizeof msg);
    snprintf(second, sizeof second, ":%d:", at2);
    CHECK(strstr(msg, second) == NULL);
    CHECK(strstr(msg, "PSUM") == NULL);
}

/* NKI's semantics: a tile allocated in a loop and used after it holds the
 * last iteration's value (the allocator keeps it live until its last use). */
TEST(tile_used_after_its_loop_holds_the_last_iteration)
{
    const ecase *c = find_case("tile_used_after_loop");
    CHECK(c != NULL);
    if (!c)
        return;
    nk_array in = {0}, out[1];
    nk_array_alloc(&in, F32, 2, (int64_t[]){128, 64});
    float *x = in.data;
    for (int i = 0; i < 128 * 64; i++)
        x[i] = (float)(i % 17) / 16.0f;
    nk_kernel *k = nk_kernel_new(c->name, c->fn);
    int nout = 0;
    CHECK_INT(nk_call(k, &in, 1, NULL, out, 1, &nout), 0);
    if (nout == 1) {
        const float *y = out[0].data;
        int wrong = 0;
        for (int i = 0; i < 128 * 64; i++)
            wrong += fabs(y[i] - exp(x[i])) > 1e-6 * exp(x[i]);
        CHECK_INT(wrong, 0);
        nk_array_free(&out[0]);
    }
    nk_kernel_free(k);
    nk_array_free(&in);
}

TEST(err_engine_limits)
{
    expect("vector_transpose_64", NK_ELIMIT, V("nc_transpose:", "vector engine", "32x32", "[64, 64]"));
    expect("vector_free_size_psum", NK_ELIMIT, V("nk_copy (tensor_copy):", "free size 5000", "4096", "from PSUM"));
}

TEST(err_vector_both_inputs_in_psum)
{
    expect("both_inputs_in_psum", NK_EMEMORY, V("tensor_tensor:", "both inputs are in PSUM"));
}

TEST(err_reduction_axis_and_operator)
{
    expect("reduce_partition_axis", NK_EINVAL, V("nk_sum: axis 0 is not a free axis", "transpose"));
    expect("reduce_with_subtract", NK_EINVAL, V("tensor_reduce:", "subtract is not a reduction operator"));
}

TEST(err_column_operands)
{
    expect("activation_reduce_shape", NK_ESHAPE, V("activation:", "reduce_res must be [128, 1], got [128, 2]"));
    expect("column_operand_shape", NK_ESHAPE, V("multiply:", "[128, 64]", "[128, 2]", "do not broadcast"));
    expect("column_operand_isa", NK_ESHAPE, V("tensor_scalar:", "operand0", "[128, 1], got [128, 2]"));
}

TEST(err_matmul_destination)
{
    expect("matmul_dst_sbuf", NK_EMEMORY, V("nc_matmul:", "dst must be a PSUM tile"));
    expect("matmul_dst_bf16", NK_EDTYPE, V("nc_matmul:", "float32", "dst is bfloat16"));
    expect("matmul_dst_shape", NK_ESHAPE, V("nc_matmul:", "dst [128, 256] must be [128, 512]"));
    expect("matmul_contraction_mismatch", NK_ESHAPE, V("nc_matmul:", "stationary K=128, moving K=64"));
}

TEST(err_load_store_memories)
{
    expect("load_from_sbuf", NK_EMEMORY, V("nk_load:", "the source is an SBUF tile"));
    expect("store_into_tile", NK_EMEMORY, V("nk_store:", "the destination is an SBUF tile"));
    expect("store_hbm_value", NK_EMEMORY, V("nk_store:", "the value is an HBM tensor"));
    expect("load_of_unwritten_output", NK_EUNINIT, V("nk_load: the source is an HBM tensor [128, 64]", "@2", "never written"));
}

TEST(err_outputs)
{
    expect("return_twice", NK_EINVAL, V("nk_return:", "already returned as output 0"));
    expect("return_tile", NK_EMEMORY, V("nk_return:", "not an on-chip SBUF tile"));
    expect("full_in_hbm", NK_EMEMORY, V("nk_full:", "SBUF or PSUM"));
}

TEST(err_views)
{
    expect("ix_zero_step", NK_EINVAL, V("nk_ix:", "step 0 on axis 1"));
    expect("ix_empty_range", NK_EBOUNDS, V("nk_ix:", "empty range [4:4] on axis 0"));
    expect("ix_too_many_indices", NK_ESHAPE, V("nk_ix:", "3 indices for a 2-dim tensor"));
    expect("ix_every_axis_single", NK_ESHAPE, V("nk_ix:", "single index leaves no tensor"));
    expect("ix_partition_single_index", NK_EPARTITION, V("nk_ix:", "partition axis", "nk_r(3, 4)"));
    expect("reshape_count", NK_ESHAPE, V("nk_reshape:", "cannot reshape [128, 64] to [100, 100]"));
    expect("reshape_tile_partitions", NK_ESHAPE, V("nk_reshape:", "[128, 64] to [64, 128]", "partition axis"));
    expect("reshape_strided_view", NK_ESHAPE, V("nk_reshape:", "not contiguous"));
}

TEST(err_loop_arguments)
{
    expect("loop_negative_trip", NK_EINVAL, V("trip count -3 is negative"));
    expect("loop_bufs", NK_EINVAL, V("buffer count 33 is outside 1..32"));
    expect("loops_too_deep", NK_ELOOP, V("nested deeper than 16"));
}

TEST(err_invalid_engine_for_op)
{
    expect("invalid_engine", NK_EINVAL, V("tensor_tensor:", "cannot run on the scalar engine"));
}

TEST(err_broadcast_shapes)
{
    expect("broadcast_shape", NK_ESHAPE, V("nk_broadcast:", "[128, 64]", "128 partitions x 128"));
}

TEST(err_none_for_recursive_loops)
{
    /* a loop entered again inside itself by recursion is not a loop left early */
    char msg[1024];
    CHECK_INT(trace_case(find_case("recursive_loops"), msg, sizeof msg), 0);
    CHECK_STR(msg, "");
}

TEST(err_messages_match_golden_file)
{
    struct { char *s; size_t len, cap; } t = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char msg[1024];
        int rc = trace_case(&cases[i], msg, sizeof msg);
        /* fixed width for the status: it is part of what the file pins */
        int w = (int)strlen(cases[i].name);
        int pad = w < 28 ? 28 - w : 0;
        char line[1200];
        snprintf(line, sizeof line, "%s:%*s %3d  %s\n", cases[i].name, pad, "", rc, msg[0] ? msg : "(no error)");
        size_t need = t.len + strlen(line) + 1;
        if (need > t.cap) {
            char *q = realloc(t.s, need * 2);
            CHECK(q != NULL);
            if (!q)
                break;
            t.s = q;
            t.cap = need * 2;
        }
        memcpy(t.s + t.len, line, strlen(line) + 1);
        t.len += strlen(line);
    }
    CHECK_GOLDEN("errors.txt", t.s);
    free(t.s);
}
