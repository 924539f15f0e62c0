/*
 * emit.c - the micro-benchmarks as NKI Python files, one per family, each
 * running its points at every repetition count under @nki.benchmark and
 * appending `point,reps,p50_us` rows (the nc_latency p50, microseconds)
 * to the results file that `nklab calibrate fit` reads. The kernels are
 * the C kernels of calib.c written in NKI.
 */
#include "calib.h"

#include "nkint.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sbuf {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && (size_t)w < b->cap - b->len) {
            b->len += (size_t)w;
            return;
        }
        size_t cap = (b->cap + (size_t)w + 1) * 2;
        char *t = realloc(b->s, cap);
        if (!t) {
            b->oom = 1;
            return;
        }
        b->s = t;
        b->cap = cap;
    }
}

static const char *header =
    "import os\n"
    "import sys\n"
    "\n"
    "import numpy as np\n"
    "import neuronxcc.nki as nki\n"
    "import neuronxcc.nki.isa as nisa\n"
    "import neuronxcc.nki.language as nl\n"
    "\n"
    "RESULTS = sys.argv[1] if len(sys.argv) > 1 else \"calibration-results.csv\"\n"
    "WARMUP, ITERS = 2, 10\n"
    "\n"
    "\n"
    "def record(point, reps, bench, *args):\n"
    "    \"\"\"Runs the @nki.benchmark kernel on args and appends its p50 latency (us) to RESULTS.\"\"\"\n"
    "    bench(*args)\n"
    "    p50 = bench.benchmark_result.nc_latency.get_latency_percentile(50)\n"
    "    new = not os.path.exists(RESULTS) or os.path.getsize(RESULTS) == 0\n"
    "    with open(RESULTS, \"a\") as f:\n"
    "        if new:\n"
    "            f.write(\"point,reps,p50_us\\n\")\n"
    "        f.write(\"%s,%d,%.6f\\n\" % (point, reps, p50))\n"
    "\n"
    "\n";

/* The kernel factory of family f: make(n, m, dep, fp32, reps) -> kernel,
 * and args(n, m, reps) -> its inputs. */
static void family_code(sbuf *b, int f)
{
    switch (f) {
    case NK_CALIB_ACT:
    case NK_CALIB_DVE:
    case NK_CALIB_SEM:
        put(b, "def make(n, m, dep, fp32, reps):\n"
               "    @nki.benchmark(warmup=WARMUP, iters=ITERS)\n"
               "    def kernel(x):\n"
               "        t = nl.load(x)\n"
               "        y = t\n"
               "        for r in nl.static_range(reps):\n"
               "            src = y if dep else t\n");
        if (f == NK_CALIB_ACT)
            put(b, "            y = nl.exp(src)                                    # Scalar engine\n");
        else if (f == NK_CALIB_DVE)
            put(b, "            y = nisa.tensor_scalar(src, np.multiply, 1.0)      # Vector engine\n");
        else
            put(b, "            y = nisa.tensor_scalar(nl.exp(y), np.multiply, 1.0)  # Scalar, then Vector\n");
        put(b, "        out = nl.ndarray((128, n), dtype=nl.float32, buffer=nl.shared_hbm)\n"
               "        nl.store(out, value=y)\n"
               "        return out\n"
               "    return kernel\n\n\n"
               "def args(n, m, reps):\n"
               "    return (np.ones((128, n), dtype=np.float32),)\n");
        break;
    case NK_CALIB_POOL:
        put(b, "def make(n, m, dep, fp32, reps):\n"
               "    @nki.benchmark(warmup=WARMUP, iters=ITERS)\n"
               "    def kernel(x):\n"
               "        i_p, i_f = nl.mgrid[0:128, 0:n]\n"
               "        for r in nl.static_range(reps):\n"
               "            y = nisa.iota(i_p * n + i_f, nl.float32)           # GpSimd engine\n"
               "        out = nl.ndarray((128, n), dtype=nl.float32, buffer=nl.shared_hbm)\n"
               "        nl.store(out, value=y)\n"
               "        return out\n"
               "    return kernel\n\n\n"
               "def args(n, m, reps):\n"
               "    return (np.ones((128, n), dtype=np.float32),)\n");
        break;
    case NK_CALIB_PORTS:
        put(b, "def make(n, m, dep, fp32, reps):\n"
               "    @nki.benchmark(warmup=WARMUP, iters=ITERS)\n"
               "    def kernel(x):\n"
               "        t = nl.load(x)\n"
               "        # every result in its own columns: no write reuses another's memory\n"
               "        v = nl.ndarray((128, reps * n), dtype=nl.float32, buffer=nl.sbuf)\n"
               "        g = nl.ndarray((128, reps * n), dtype=nl.float32, buffer=nl.sbuf)\n"
               "        i_p, i_f = nl.mgrid[0:128, 0:n]\n"
               "        for r in nl.static_range(reps):\n"
               "            v[:, r * n:(r + 1) * n] = nisa.tensor_scalar(t, np.multiply, 1.0)  # Vector\n"
               "            g[:, r * n:(r + 1) * n] = nisa.iota(i_p * n + i_f, nl.float32)     # GpSimd\n"
               "        out = nl.ndarray((128, n), dtype=nl.float32, buffer=nl.shared_hbm)\n"
               "        nl.store(out, value=v[:, (reps - 1) * n:reps * n])\n"
               "        return out\n"
               "    return kernel\n\n\n"
               "def args(n, m, reps):\n"
               "    return (np.ones((128, n), dtype=np.float32),)\n");
        break;
    case NK_CALIB_DVE_TT:
        put(b, "def make(n, m, dep, fp32, reps):\n"
               "    @nki.benchmark(warmup=WARMUP, iters=ITERS)\n"
               "    def kernel(x):\n"
               "        t = nl.load(x)\n"
               "        if not fp32:\n"
               "            t = nl.copy(t, dtype=nl.bfloat16)\n"
               "        v = t[:, 0:n * m:m]                                   # step m along the free axis\n"
               "        for r in nl.static_range(reps):\n"
               "            y = nisa.tensor_tensor(v, v, np.add)              # Vector engine\n"
               "        out = nl.ndarray((128, n), dtype=y.dtype, buffer=nl.shared_hbm)\n"
               "        nl.store(out, value=y)\n"
               "        return out\n"
               "    return kernel\n\n\n"
               "def args(n, m, reps):\n"
               "    return (np.ones((128, n * m), dtype=np.float32),)\n");
        break;
    case NK_CALIB_PE:
        put(b, "def make(n, m, dep, fp32, reps):\n"
               "    @nki.benchmark(warmup=WARMUP, iters=ITERS)\n"
               "    def kernel(a, b):\n"
               "        st = nl.load(a)\n"
               "        mv = nl.load(b)\n"
               "        if not fp32:\n"
               "            st = nl.copy(st, dtype=nl.bfloat16)\n"
               "            mv = nl.copy(mv, dtype=nl.bfloat16)\n"
               "        ps = nl.zeros((m, n), nl.float32, buffer=nl.psum)\n"
               "        for r in nl.static_range(reps):\n"
               "            ps += nisa.nc_matmul(st, mv)                      # Tensor engine\n"
               "        out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)\n"
               "        nl.store(out, value=nl.copy(ps, dtype=nl.float32))\n"
               "        return out\n"
               "    return kernel\n\n\n"
               "def args(n, m, reps):\n"
               "    return (np.ones((128, m), dtype=np.float32), np.ones((128, n), dtype=np.float32))\n");
        break;
    case NK_CALIB_DMA_LOAD:
    case NK_CALIB_DMA_QUEUES: {
        int q = f == NK_CALIB_DMA_QUEUES ? 4 : 1;
        put(b, "Q = %d  # HBM tensors the loads cycle over (one DMA queue each)\n\n\n"
               "def make(n, m, dep, fp32, reps):\n"
               "    @nki.benchmark(warmup=WARMUP, iters=ITERS)\n"
               "    def kernel(*xs):\n"
               "        buf = nl.ndarray((128, reps * n), dtype=nl.float32, buffer=nl.sbuf)\n"
               "        for r in nl.static_range(reps):\n"
               "            row = (r // Q) * 128\n"
               "            nisa.dma_copy(dst=buf[:, r * n:(r + 1) * n], src=xs[r %% Q][row:row + 128, :])\n"
               "        # one element of every load, by one strided copy: the output waits for\n"
               "        # every load whatever order the compiler gives them\n"
               "        col = nisa.tensor_copy(buf[:, 0:reps * n:n])\n"
               "        out = nl.ndarray((128, reps), dtype=nl.float32, buffer=nl.shared_hbm)\n"
               "        nl.store(out, value=col)\n"
               "        return out\n"
               "    return kernel\n\n\n"
               "def args(n, m, reps):\n"
               "    return tuple(np.ones(((reps + Q - 1) // Q * 128, n), dtype=np.float32) for _ in range(Q))\n",
            q);
        break;
    }
    case NK_CALIB_DMA_CHAIN:
        put(b, "def make(n, m, dep, fp32, reps):\n"
               "    @nki.benchmark(warmup=WARMUP, iters=ITERS)\n"
               "    def kernel(x):\n"
               "        t = nl.load(x)\n"
               "        for r in nl.static_range(reps):\n"
               "            u = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)\n"
               "            nisa.dma_copy(dst=u, src=t)                      # each DMA waits for the last\n"
               "            t = u\n"
               "        out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)\n"
               "        nl.store(out, value=t)\n"
               "        return out\n"
               "    return kernel\n\n\n"
               "def args(n, m, reps):\n"
               "    return (np.ones((1, 1), dtype=np.float32),)\n");
        break;
    case NK_CALIB_HBM_COPY:
        put(b, "def make(n, m, dep, fp32, reps):\n"
               "    @nki.benchmark(warmup=WARMUP, iters=ITERS)\n"
               "    def kernel(x):\n"
               "        out = nl.ndarray((reps * 128, n), dtype=nl.float32, buffer=nl.shared_hbm)\n"
               "        for r in nl.static_range(reps):\n"
               "            nisa.dma_copy(dst=out[r * 128:(r + 1) * 128, :], src=x[r * 128:(r + 1) * 128, :])\n"
               "        return out\n"
               "    return kernel\n\n\n"
               "def args(n, m, reps):\n"
               "    return (np.ones((reps * 128, n), dtype=np.float32),)\n");
        break;
    }
}

int nk__calib_python(int f, char **text)
{
    *text = NULL;
    if (f < 0 || f >= NK_CALIB_NFAMILIES)
        return NK_EINVAL;
    sbuf b = {0};
    put(&b, "# nklab calibration micro-benchmark '%s': %s.\n", nk__calib_families[f].name,
        nk__calib_families[f].mechanism);
    put(&b, "# Written by `nklab calibrate emit`. Runs unchanged on a Trainium machine\n"
            "# (python3 %s.py RESULTS.csv) and under nklab (nklab python %s.py RESULTS.csv).\n"
            "# Each point runs at several repetition counts; the slope of the latency\n"
            "# over them is the mechanism's cost. Appends `point,reps,p50_us` rows to\n"
            "# RESULTS.csv, which `nklab calibrate fit RESULTS.csv` reads.\n",
        nk__calib_families[f].name, nk__calib_families[f].name);
    put(&b, "%s", header);
    family_code(&b, f);
    put(&b, "\n\n# point, n, m, dep, fp32, repetitions\nPOINTS = [\n");
    for (size_t i = 0; i < nk__calib_npoints; i++) {
        const nk_calib_point *pt = &nk__calib_points[i];
        if (pt->family != f)
            continue;
        put(&b, "    (\"%s\", %lld, %lld, %s, %s, (%d, %d, %d)),\n", pt->id, (long long)pt->n, (long long)pt->m,
            pt->dep ? "True" : "False", pt->fp32 ? "True" : "False", pt->reps[0], pt->reps[1], pt->reps[2]);
    }
    put(&b, "]\n\n"
            "if __name__ == \"__main__\":\n"
            "    for point, n, m, dep, fp32, reps_list in POINTS:\n"
            "        for reps in reps_list:\n"
            "            record(point, reps, make(n, m, dep, fp32, reps), *args(n, m, reps))\n");
    if (b.oom) {
        free(b.s);
        return NK_ENOMEM;
    }
    *text = b.s;
    return 0;
}
