"""A 128x128x512 matmul as an @nki.jit kernel, called 100 times from numpy and
from torch: the first call traces and compiles, every later one replays the
cached program.

    nklab python examples/matmul.py

The kernel is NKI Python as written for the Neuron SDK; only the timing loop
around it is this file's own.
"""
import time

import numpy as np
from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matmul_kernel(lhsT, rhs):
    """result[M, N] = lhsT[K, M].T @ rhs[K, N], K = M = 128, N = 512."""
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, "the contraction dimensions differ"
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    lhsT_tile = nl.load(lhsT)
    rhs_tile = nl.load(rhs)
    product = nisa.nc_matmul(lhsT_tile, rhs_tile)  # a PSUM tile
    nl.store(result, value=nl.copy(product, dtype=nl.float32))
    return result


def timed_calls(name, lhsT, rhs, n=100):
    times = []
    for _ in range(n):
        t0 = time.time()
        out = matmul_kernel(lhsT, rhs)
        times.append(time.time() - t0)
    us = [t * 1e6 for t in times]
    later = sorted(us[1:])
    print(f"{name}: call 1 {us[0]:9.1f} us (traced and compiled); calls 2-{n}: "
          f"min {later[0]:.1f} us, median {later[len(later) // 2]:.1f} us, max {later[-1]:.1f} us")
    return out


if __name__ == "__main__":
    rng = np.random.default_rng(7)
    lhsT = rng.standard_normal((128, 128), dtype=np.float32)
    rhs = rng.standard_normal((128, 512), dtype=np.float32)
    want = lhsT.T @ rhs

    out = timed_calls("numpy", lhsT, rhs)
    print(f"numpy: max |error| against lhsT.T @ rhs: {np.abs(out - want).max():.2e}")
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        tl, tr = torch.from_numpy(lhsT), torch.from_numpy(rhs)
        out = timed_calls("torch", tl, tr)
        print(f"torch: returns {type(out).__module__}.{type(out).__name__}, max |error| against "
              f"torch.matmul: {(out - tl.T @ tr).abs().max().item():.2e}")
