/*
 * bench_exec_elementwise.c - the functional simulator's elementwise
 * instructions on fp32 [128, 512] SBUF tiles, against memcpy's bandwidth
 * and against libm, timed in the same process.
 *
 * usage: bench_exec_elementwise
 *
 * An instruction's time is the difference between two runs of one kernel
 * (load the operands, the instruction REPS + 1 times or once, store),
 * divided by REPS: what each instruction costs inside a real run, dispatch
 * and every per-instruction step included. Its bandwidth counts the bytes it
 * reads and writes (a copy reads and writes one tile, add and multiply read
 * two and write one) against memcpy of one tile between two host buffers of
 * that size (read + write). exp and tanh are set against a loop of libm's
 * expf / tanhf over the same elements (numpy is in python_elementwise.py).
 * Figures are the best of 7 batches, interleaved with the reference's. The
 * goals printed are the project's (>= 50% of memcpy's bandwidth); there are
 * no pass/fail exits on them.
 */
#include "nklab.h"
#include "nkint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 7
#define BATCH_SECONDS 0.03
#define P 128
#define F 512
#define REPS 16

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef enum { OP_COPY, OP_ADD, OP_MUL, OP_EXP, OP_TANH, OP_SIGMOID, OP_GELU, OP_COUNT } op_kind;
static const char *const op_name[OP_COUNT] = {"copy", "add", "multiply", "exp", "tanh", "sigmoid", "gelu"};
static const int op_tiles[OP_COUNT] = {2, 3, 3, 2, 2, 2, 2}; /* tiles read + written */

/* what the kernel below traces: set before each trace (a new nk_kernel each) */
static op_kind cur_op;
static int cur_reps;

static void elementwise(nk_ctx *nc, const nk_tensor *args, int nargs)
{
    (void)nargs;
    nk_tensor out = nk_ndarray(nc, NK_SHAPE(P, F), NK_F32, NK_SHARED_HBM);
    nk_tensor a = nk_load(nc, args[0]), b = nk_load(nc, args[1]);
    nk_tensor c = nk_ndarray(nc, NK_SHAPE(P, F), NK_F32, NK_SBUF);
    for (int r = 0; r < cur_reps; r++) {
        switch (cur_op) {
        case OP_COPY: nk_isa_tensor_copy(nc, c, a); break;
        case OP_ADD: nk_isa_tensor_tensor(nc, c, a, b, NK_ALU_ADD); break;
        case OP_MUL: nk_isa_tensor_tensor(nc, c, a, b, NK_ALU_MULTIPLY); break;
        case OP_EXP: nk_isa_activation(nc, c, NK_ACT_EXP, a, nk_imm(0), nk_imm(1), NK_NONE); break;
        case OP_TANH: nk_isa_activation(nc, c, NK_ACT_TANH, a, nk_imm(0), nk_imm(1), NK_NONE); break;
        case OP_SIGMOID: nk_isa_activation(nc, c, NK_ACT_SIGMOID, a, nk_imm(0), nk_imm(1), NK_NONE); break;
        default: nk_isa_activation(nc, c, NK_ACT_GELU, a, nk_imm(0), nk_imm(1), NK_NONE); break;
        }
    }
    nk_store(nc, out, c);
    nk_return(nc, out);
}

typedef struct job {
    const nk_program *p;
    nk_array *args, *out;
    float *x, *y; /* reference buffers, one tile each */
    op_kind op;
    int bad;
} job;

static void run(job *j)
{
    if (nk_program_run(j->p, j->args, 2, j->out, 1))
        j->bad = 1;
}

static volatile float sink;

static void reference(job *j)
{
    const size_t n = (size_t)P * F;
    switch (j->op) {
    case OP_EXP: for (size_t i = 0; i < n; i++) j->y[i] = expf(j->x[i]); break;
    case OP_TANH: for (size_t i = 0; i < n; i++) j->y[i] = tanhf(j->x[i]); break;
    case OP_SIGMOID: for (size_t i = 0; i < n; i++) j->y[i] = 1.0f / (1.0f + expf(-j->x[i])); break;
    case OP_GELU: for (size_t i = 0; i < n; i++) j->y[i] = 0.5f * j->x[i] * erfcf(-j->x[i] * 0.70710678f); break;
    default: memcpy(j->y, j->x, n * sizeof(float)); break;
    }
    sink = j->y[n / 2];
}

static long calls_for(void (*f)(job *), job *j)
{
    long n = 1;
    for (;;) {
        double t0 = now();
        for (long i = 0; i < n; i++)
            f(j);
        if (now() - t0 > BATCH_SECONDS / 2 || n > (1L << 24))
            return n;
        n *= 2;
    }
}

static double batch(void (*f)(job *), job *j, long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++)
        f(j);
    return (now() - t0) / (double)n;
}

static const nk_program *trace(nk_kernel **k, op_kind op, int reps, nk_array *args)
{
    const nk_program *p = NULL;
    cur_op = op;
    cur_reps = reps;
    *k = nk_kernel_new("elementwise", elementwise);
    if (!*k || nk_kernel_compile(*k, args, 2, NULL, &p)) {
        printf("%s: compile failed: %s\n", op_name[op], *k ? nk_kernel_error(*k) : "out of memory");
        return NULL;
    }
    return p;
}

int main(void)
{
    nk_array args[2] = {{0}}, out = {0};
    int64_t shape[2] = {P, F};
    const size_t n = (size_t)P * F, bytes = n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes);
    if (!x || !y || nk_array_alloc(&args[0], NK_F32, 2, shape) || nk_array_alloc(&args[1], NK_F32, 2, shape) ||
        nk_array_alloc(&out, NK_F32, 2, shape))
        return 1;
    for (size_t i = 0; i < n; i++) { /* uniform-ish in [-4, 4) */
        float v = (float)((i * 7919) % 8192) / 1024.0f - 4.0f;
        x[i] = v;
        ((float *)args[0].data)[i] = v;
        ((float *)args[1].data)[i] = 1.0f + v / 8.0f;
    }
    printf("elementwise instructions on fp32 [%d, %d] SBUF tiles (%zu KiB each): the cost of one instruction\n"
           "inside a run, (run with %d + 1 instructions - run with 1) / %d, best of %d interleaved batches.\n"
           "bandwidth counts the tiles read and written; memcpy: one tile between two host buffers.\n"
           "goals: copy, add, multiply >= 50%% of memcpy's bandwidth; exp, tanh: see python_elementwise.py\n"
           "for numpy (the reference here is a libm loop)\n\n",
           P, F, bytes / 1024, REPS, REPS, BATCHES);
    printf("%-9s %10s %10s %10s %10s %9s\n", "op", "instr us", "GB/s", "ref us", "ref", "ratio");
    int failed = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        nk_kernel *k1 = NULL, *kn = NULL;
        job j1 = {trace(&k1, (op_kind)op, 1, args), args, &out, x, y, (op_kind)op, 0};
        job jn = {trace(&kn, (op_kind)op, REPS + 1, args), args, &out, x, y, (op_kind)op, 0};
        if (!j1.p || !jn.p) {
            failed = 1;
            nk_kernel_free(k1);
            nk_kernel_free(kn);
            continue;
        }
        run(&j1);
        run(&jn);
        reference(&j1);
        long c1 = calls_for(run, &j1), cn = calls_for(run, &jn), cr = calls_for(reference, &j1);
        double t1 = 1e30, tn = 1e30, tr = 1e30;
        for (int b = 0; b < BATCHES; b++) {
            double a = batch(run, &j1, c1), c = batch(run, &jn, cn), r = batch(reference, &j1, cr);
            t1 = a < t1 ? a : t1;
            tn = c < tn ? c : tn;
            tr = r < tr ? r : tr;
        }
        if (j1.bad || jn.bad) {
            printf("%s: a run failed\n", op_name[op]);
            failed = 1;
        }
        double ti = (tn - t1) / REPS;
        if (op <= OP_MUL) {
            double bw = (double)op_tiles[op] * (double)bytes / ti, ref = 2.0 * (double)bytes / tr;
            printf("%-9s %10.2f %10.1f %10.2f %7.1f GB/s memcpy %5.0f%% of memcpy  %s\n", op_name[op], ti * 1e6,
                   bw * 1e-9, tr * 1e6, ref * 1e-9, 100.0 * bw / ref, bw / ref >= 0.5 ? "met" : "NOT met");
        } else {
            double bw = (double)op_tiles[op] * (double)bytes / ti;
            printf("%-9s %10.2f %10.1f %10.2f %10s %8.2fx of the libm loop\n", op_name[op], ti * 1e6, bw * 1e-9,
                   tr * 1e6, "libm", ti / tr);
        }
        nk_kernel_free(k1);
        nk_kernel_free(kn);
    }
    nk_array_free(&args[0]);
    nk_array_free(&args[1]);
    nk_array_free(&out);
    free(x);
    free(y);
    return failed;
}
