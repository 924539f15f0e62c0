"""A kernel that prints a tile: `nklab python --eager tests/python/k_print.py` shows its values."""
import numpy as np
import nki
import nki.language as nl
import nki.isa as nisa

@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        e = nisa.activation(op=nl.exp, data=t)
        print(f"iteration {i}:", e)
        nl.store(out[i * 128:(i + 1) * 128, :], value=e)
    return out

x = np.arange(256 * 3, dtype=np.float32).reshape(256, 3) / 1000
y = kernel(x)
print(np.abs(y - np.exp(x)).max())
