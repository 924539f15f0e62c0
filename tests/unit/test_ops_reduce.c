/*
 * test_ops_reduce.c - sum, max, min and mean along each free axis and all of
 * them, keepdims both ways, on 2-D, 3-D and 4-D tiles; tensor_reduce with
 * multiply and the bitvec operators.
 *
 * Reference: the reduction in double (integers exactly in int64).
 * Tolerances: max, min and the bitvec operators are exact. Sums allow the
 * fp32 summation bound (n - 1) * 2^-24 * sum |x_i| (any order of fp32
 * additions stays within it) plus one ulp of the output dtype; mean adds
 * two fp32 roundings (1/n and the product).
 */
#include "test_ops_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static struct {
    nk_alu op;
    int axis, keep, mean;
    nk_dtype dt;
} K;

static void k_reduce(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]);
    ref_return_tile(nc, K.mean ? nk_mean(nc, x, K.axis, K.keep) : nk_reduce_at(nc, NK_HERE, K.op, x, K.axis, K.keep));
}

static void k_isa_reduce(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor x = nk_load(nc, args[0]);
    int64_t kept = 1;
    for (int d = 1; d < x.ndim; d++)
        if (K.axis != -1 && d != K.axis)
            kept *= x.shape[d];
    nk_tensor dst = nk_ndarray(nc, NK_SHAPE(x.shape[0], kept), K.dt, NK_SBUF);
    nk_isa_tensor_reduce(nc, dst, x, K.op, K.axis, K.keep);
    ref_return_tile(nc, dst);
}

/* The reduced shape NKI gives: the axis dropped, or kept as 1. */
static int reduced_shape(const nk_array *in, int axis, int keep, int64_t *shape)
{
    int n = 0;
    shape[n++] = in->shape[0];
    for (int d = 1; d < in->ndim; d++) {
        if (axis == -1 || d == axis) {
            if (keep)
                shape[n++] = 1;
        } else {
            shape[n++] = in->shape[d];
        }
    }
    return n;
}

/* want[o] and the summation bound for every output element. Walks the input
 * in row-major order; the output index drops the reduced axis. */
static void reference(const nk_array *in, nk_alu op, int axis, int mean, double *want, double *bound)
{
    int64_t dims[NK_MAXDIM] = {1, 1, 1, 1};
    for (int d = 0; d < in->ndim; d++)
        dims[d] = in->shape[d];
    size_t nout = (size_t)dims[0];
    int64_t count = 1;
    for (int d = 1; d < in->ndim; d++) {
        if (axis == -1 || d == axis)
            count *= dims[d];
        else
            nout *= (size_t)dims[d];
    }
    double *abs = calloc(nout, sizeof *abs);
    for (size_t o = 0; o < nout; o++)
        want[o] = op == NK_ALU_MAX ? -INFINITY : op == NK_ALU_MIN ? INFINITY : op == NK_ALU_MULTIPLY ? 1.0 : 0.0;
    int64_t idx[NK_MAXDIM] = {0, 0, 0, 0};
    size_t n = nk_array_numel(in);
    for (size_t i = 0; i < n; i++) {
        int64_t r = (int64_t)i;
        for (int d = in->ndim - 1; d >= 0; d--) {
            idx[d] = r % dims[d];
            r /= dims[d];
        }
        size_t o = (size_t)idx[0];
        for (int d = 1; d < in->ndim; d++)
            if (!(axis == -1 || d == axis))
                o = o * (size_t)dims[d] + (size_t)idx[d];
        double x = ref_round(NK_F32, arr_get(in, i));
        switch (op) {
        case NK_ALU_MAX: want[o] = x > want[o] ? x : want[o]; break;
        case NK_ALU_MIN: want[o] = x < want[o] ? x : want[o]; break;
        case NK_ALU_MULTIPLY: want[o] *= x; break;
        default: want[o] += x; break;
        }
        abs[o] += fabs(x);
    }
    for (size_t o = 0; o < nout; o++) {
        double b = op == NK_ALU_ADD ? (double)(count - 1) * REF_U32 * abs[o] : 0.0;
        if (op == NK_ALU_MULTIPLY) /* each of count - 1 fp32 products rounds once */
            b = (double)(count - 1) * 1.0000001 * REF_U32 * fabs(want[o]);
        if (mean) {
            want[o] /= (double)count;
            b = b / (double)count + 2 * REF_U32 * fabs(want[o]) * 1.0000001;
        }
        bound[o] = b;
    }
    free(abs);
}

typedef struct red_shape {
    int ndim;
    int64_t shape[NK_MAXDIM];
} red_shape;

static const red_shape red_shapes[] = {
    {2, {128, 300}}, {3, {64, 6, 10}}, {4, {32, 3, 4, 5}}, {2, {7, 1}},
};

static void run_case(nk_dtype dt, const red_shape *rs, uint64_t *rng, double lo, double hi)
{
    nk_array in, out;
    arr_new(&in, dt, rs->ndim, rs->shape);
    arr_fill(&in, rng, lo, hi);
    size_t nin = nk_array_numel(&in);
    double *want = malloc(nin * sizeof *want), *bound = malloc(nin * sizeof *bound);
    for (int axis = -1; axis < rs->ndim; axis++) {
        if (axis == 0)
            continue;
        for (int keep = 0; keep < 2; keep++) {
            K.axis = axis;
            K.keep = keep;
            if (run_kernel("reduce", k_reduce, &in, 1, &out, 1))
                continue;
            int64_t shape[NK_MAXDIM];
            int nd = reduced_shape(&in, axis, keep, shape);
            CHECK_INT(out.ndim, nd);
            for (int d = 0; d < nd && d < out.ndim; d++)
                CHECK_INT(out.shape[d], shape[d]);
            CHECK_INT(out.dtype, dt);
            reference(&in, K.mean ? NK_ALU_ADD : K.op, axis, K.mean, want, bound);
            char what[128];
            snprintf(what, sizeof what, "%s over axis %d of a %d-D tile, keepdims %d",
                     K.mean ? "mean" : nk_alu_name(K.op), axis, rs->ndim, keep);
            CHECK_ARR(what, &out, want, K.mean || K.op == NK_ALU_ADD ? 1 : 0, bound, 0);
            nk_array_free(&out);
        }
    }
    free(want);
    free(bound);
    nk_array_free(&in);
}

TEST(reduce_sum_max_min_mean_every_axis_and_keepdims)
{
    const nk_dtype dts[] = {NK_F32, NK_BF16, NK_F16, NK_FP8_E4M3};
    const nk_alu ops[] = {NK_ALU_ADD, NK_ALU_MAX, NK_ALU_MIN};
    uint64_t rng = 23;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t s = 0; s < sizeof red_shapes / sizeof red_shapes[0]; s++) {
            for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
                K.mean = 0;
                K.op = ops[o];
                /* fp8 sums of hundreds of elements overflow e4m3: keep them small */
                double r = dts[d] == NK_FP8_E4M3 && ops[o] == NK_ALU_ADD ? 0.5 : 10;
                run_case(dts[d], &red_shapes[s], &rng, -r, r);
            }
            K.mean = 1;
            run_case(dts[d], &red_shapes[s], &rng, -10, 10);
        }
}

TEST(reduce_integers)
{
    const nk_dtype dts[] = {NK_I32, NK_I16, NK_U8};
    uint64_t rng = 29;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        K.mean = 0;
        K.op = NK_ALU_MAX;
        run_case(dts[d], &red_shapes[1], &rng, 0, 200);
        K.op = NK_ALU_ADD; /* sums of at most 60 values below 200: exact in fp32 and in range */
        run_case(dts[d], &red_shapes[1], &rng, 0, dts[d] == NK_U8 ? 4 : 200);
        K.mean = 1;
        run_case(dts[d], &red_shapes[1], &rng, 0, 200);
    }
}

/* A sum where fp32 accumulation visibly loses bits: 2^24 + 1 + 1 ... */
static void k_sum_all(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    ref_return_tile(nc, nk_sum(nc, nk_load(nc, args[0]), -1, 1));
}

TEST(reduce_sum_accumulates_in_fp32)
{
    int64_t shape[2] = {1, 5};
    nk_array in, out;
    arr_new(&in, NK_F32, 2, shape);
    const double x[5] = {16777216.0, 1.0, 1.0, 1.0, 1.0};
    for (int i = 0; i < 5; i++)
        arr_set(&in, (size_t)i, x[i]);
    if (!run_kernel("sum_all", k_sum_all, &in, 1, &out, 1)) {
        /* in order, each + 1 rounds back to 2^24 (ties to even) */
        CHECK_NEAR(arr_get(&out, 0), 16777216.0, 0, 0);
        CHECK_INT(out.ndim, 2);
        nk_array_free(&out);
    }
    nk_array_free(&in);
}

TEST(reduce_isa_bitvec_and_multiply)
{
    uint64_t rng = 37;
    const nk_alu bitops[] = {NK_ALU_BITWISE_AND, NK_ALU_BITWISE_OR, NK_ALU_BITWISE_XOR};
    const nk_dtype dts[] = {NK_I32, NK_U32, NK_I16, NK_U8};
    int64_t shape[3] = {128, 5, 6};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t o = 0; o < 3; o++)
            for (int axis = -1; axis < 3; axis++) {
                if (axis == 0)
                    continue;
                nk_array in, out;
                arr_new(&in, dts[d], 3, shape);
                uint8_t *b = in.data; /* every bit pattern, beyond fp32's 24 bits */
                for (size_t i = 0; i < nk_array_nbytes(&in); i++)
                    b[i] = (uint8_t)ref_rand64(&rng);
                K.op = bitops[o];
                K.axis = axis;
                K.keep = 0;
                K.dt = dts[d];
                if (run_kernel("isa_reduce", k_isa_reduce, &in, 1, &out, 1)) {
                    nk_array_free(&in);
                    continue;
                }
                size_t nout = nk_array_numel(&out);
                double *want = malloc(nout * sizeof *want);
                for (size_t q = 0; q < nout; q++) {
                    size_t p = q / (nout / 128), k = q % (nout / 128);
                    int64_t acc = bitops[o] == NK_ALU_BITWISE_AND ? -1 : 0;
                    for (int i = 0; i < 5; i++)
                        for (int j = 0; j < 6; j++) {
                            int keep = axis == -1 ? k == 0 : axis == 1 ? (size_t)j == k : (size_t)i == k;
                            if (!keep)
                                continue;
                            int64_t v = (int64_t)arr_get(&in, p * 30 + (size_t)(i * 6 + j));
                            acc = bitops[o] == NK_ALU_BITWISE_AND ? acc & v : bitops[o] == NK_ALU_BITWISE_OR ? acc | v
                                                                                                            : acc ^ v;
                        }
                    want[q] = (double)acc;
                }
                char what[96];
                snprintf(what, sizeof what, "tensor_reduce %s axis %d", nk_alu_name(bitops[o]), axis);
                CHECK_ARR(what, &out, want, 0, NULL, 0);
                free(want);
                nk_array_free(&out);
                nk_array_free(&in);
            }
    /* multiply along the innermost axis */
    int64_t s2[2] = {64, 12};
    nk_array in, out;
    arr_new(&in, NK_F32, 2, s2);
    arr_fill(&in, &rng, 0.5, 2);
    K.op = NK_ALU_MULTIPLY;
    K.axis = 1;
    K.dt = NK_F32;
    if (!run_kernel("isa_reduce", k_isa_reduce, &in, 1, &out, 1)) {
        double want[64], bound[64];
        reference(&in, NK_ALU_MULTIPLY, 1, 0, want, bound);
        CHECK_ARR("tensor_reduce multiply", &out, want, 1, bound, 0);
        nk_array_free(&out);
    }
    nk_array_free(&in);
}
