/*
 * exp_program.c - nklab as a library: a kernel and the program that runs,
 * checks and benchmarks it, built against an installed nklab with pkg-config:
 *
 *   cc -O2 exp_program.c $(pkg-config --cflags --libs nklab) -o exp_program
 *   ./exp_program
 *
 * Prints the largest error against libm's exp in double precision, the
 * modelled device time and the benchmark's median latencies; exits 1 when the
 * error is over the bound.
 */
#include <nklab.h>

#include <math.h>
#include <stdio.h>

/* exp over [rows, cols] in 128-row tiles, the last tile masked. */
static void tensor_exp(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor in = args[0];
    int64_t rows = in.shape[0], cols = in.shape[1];
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(rows, cols), in.dtype, NK_SHARED_HBM);
    NK_AFFINE_RANGE(nc, t, (rows + NK_PMAX - 1) / NK_PMAX) {
        nk_range r = nk_rmask(t * NK_PMAX, (t + 1) * NK_PMAX, rows);
        nk_tensor e = nk_exp(nc, nk_load(nc, nk_ix(nc, in, r, NK_ALL)));
        nk_store(nc, nk_ix(nc, out, r, NK_ALL), e);
    }
    nk_return(nc, out);
}

int main(void)
{
    nk_kernel *k = nk_kernel_new("tensor_exp", tensor_exp);
    nk_array x, y;
    int64_t shape[2] = {250, 512};
    if (!k || nk_array_alloc(&x, NK_F32, 2, shape))
        return 1;
    float *xv = x.data;
    for (size_t i = 0; i < nk_array_numel(&x); i++)
        xv[i] = (float)((double)(i % 1001) / 125.0 - 4.0); /* [-4, 4] */
    int nouts, rc = nk_call(k, &x, 1, NULL, &y, 1, &nouts);
    if (rc) {
        fprintf(stderr, "%s\n", nk_kernel_error(k));
        return 1;
    }
    /* float32 exp: within 1 ulp of the exact value, plus the final rounding */
    const float *yv = y.data;
    double worst = 0;
    for (size_t i = 0; i < nk_array_numel(&y); i++) {
        double ref = exp((double)xv[i]), rel = fabs(yv[i] - ref) / ref;
        worst = rel > worst ? rel : worst;
    }
    printf("max relative error %.3g (bound %.3g)\n", worst, 4 * 0x1.0p-24);

    nk_bench_options bo = nk_bench_defaults();
    nk_bench_result r;
    if ((rc = nk_bench(k, &x, 1, NULL, &bo, &r))) {
        fprintf(stderr, "bench: %s\n", nk_strerror(rc));
        return 1;
    }
    printf("device %.3f us, L(50) %.2f us, NCL(50) %.2f us over %d iterations\n", r.device_ns * 1e-3,
           nk_bench_latency_percentile(&r, NK_LATENCY_E2E, 50), nk_bench_latency_percentile(&r, NK_LATENCY_NC, 50),
           r.iters);
    nk_bench_result_free(&r);
    nk_array_free(&y);
    nk_array_free(&x);
    nk_kernel_free(k);
    return worst <= 4 * 0x1.0p-24 ? 0 : 1;
}
