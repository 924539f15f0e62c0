"""Two NKI kernels composed into one device program: a producer (lhsT scaled
by 2) feeding the 128x128x512 matmul, called 100 times from a Python loop.

    nklab python examples/composed.py

(a) through HBM, as NKI requires of a kernel's inputs and outputs today: the
    producer stores its result and the matmul loads it back;
(b) on chip: the producer returns its SBUF tile and the matmul, given it,
    reads it where it is (its nl.load of the tile is the tile).

Both run as an nklab.sequence: one device program in which each kernel is
launched after the previous one. The matmul kernel is the same function in
both. For each the script prints the measured host overhead of a call, the
modelled device time (launches included), the modelled host I/O and their
sum, the end-to-end latency of one call.
"""
import time

import numpy as np
import nklab
from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def scale(x, on_chip):
    """2 * x; on_chip: return the SBUF tile instead of an HBM tensor."""
    t = nl.multiply(nl.load(x), 2.0)
    if on_chip:
        return t
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=t)
    return out


@nki.jit
def matmul(lhsT, rhs):
    """result[M, N] = lhsT[K, M].T @ rhs[K, N], K = M = 128, N = 512."""
    result = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    product = nisa.nc_matmul(nl.load(lhsT), nl.load(rhs))  # a PSUM tile
    nl.store(result, value=nl.copy(product, dtype=nl.float32))
    return result


@nklab.sequence
def scaled_matmul(lhsT, rhs, on_chip):
    return matmul(scale(lhsT, on_chip), rhs)


def run(name, on_chip, lhsT, rhs, n=100):
    calls = []
    for _ in range(n):
        t0 = time.perf_counter()
        out = scaled_matmul(lhsT, rhs, on_chip)
        calls.append(time.perf_counter() - t0)
        calls[-1] -= nklab.cache_info(scaled_matmul)["last_exec_ns"] * 1e-9  # the simulation is not host overhead
    later = sorted(calls[1:])
    host_us = later[len(later) // 2] * 1e6
    t = nklab.timing(scaled_matmul, lhsT, rhs, on_chip)
    dev, io = t["device_ns"] / 1e3, (t["host_in_ns"] + t["host_out_ns"]) / 1e3
    err = np.abs(out - (2 * lhsT).T @ rhs).max()
    print(f"{name}: first call {calls[0] * 1e6:8.1f} us (traced and compiled); later calls: host overhead "
          f"{host_us:.1f} us (median of {n - 1})")
    print(f"{'':{len(name)}}  device {dev:.3f} us (of which launches {t['launch_ns'] / 1e3:.3f} us), "
          f"{t['dma_bytes'] / 1024:.0f} KiB of DMA, host I/O {io:.3f} us: end to end {host_us + dev + io:.3f} us; "
          f"max |error| {err:.1e}")
    return dev, t["dma_bytes"]


if __name__ == "__main__":
    rng = np.random.default_rng(3)
    lhsT = rng.standard_normal((128, 128), dtype=np.float32)
    rhs = rng.standard_normal((128, 512), dtype=np.float32)
    hbm = run("(a) through HBM", False, lhsT, rhs)
    chip = run("(b) on chip    ", True, lhsT, rhs)
    print(f"on chip saves {hbm[0] - chip[0]:.3f} us of device time ({100 * (1 - chip[0] / hbm[0]):.1f}%) and "
          f"{(hbm[1] - chip[1]) / 1024:.0f} KiB of DMA")
