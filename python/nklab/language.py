"""nki.language (nl) on nklab: tiles, loads and stores, index expressions,
loops, dtypes and memories; every op is a call of nklab's tracer (C)."""
from . import _nklab
from ._unimplemented import module_getattr

globals().update({k: v for k, v in vars(_nklab.lang).items() if not k.startswith("__")})

__getattr__ = module_getattr("nki.language", {
    "atomic_rmw", "load_transpose2d", "shared_constant", "shared_identity_matrix", "rand", "random_seed",
    "softmax", "rms_norm", "prod", "var", "gelu_dx", "silu_dx", "erf_dx", "gelu_apprx_sigmoid",
    "gelu_apprx_sigmoid_dx", "ceil", "floor", "trunc", "tan", "logical_and", "logical_or", "logical_xor",
    "logical_not", "invert", "left_shift", "right_shift", "expand_dims", "abs_max",
    "abs_min", "all_reduce", "gather_flattened", "loop_reduce", "dynamic_range", "float8_e5m2_x4",
    "float8_e4m3fn_x4", "float4_e2m1fn_x4", "NkiTensor", "virtual_register", "invariant_range",
})


class nc:
    """nl.nc(n): n physical NeuronCores, a factor of a launch grid's axis:
    kernel[nl.nc(2) * 2] is kernel[nl.spmd_dim(nl.nc(2), 2)]."""
    def __init__(self, n):
        self._nklab_size = self._nklab_nc = int(n)

    def __mul__(self, m):
        return spmd_dim(self, m)

    def __rmul__(self, m):
        return spmd_dim(m, self)

    def __repr__(self):
        return "nl.nc(%d)" % self._nklab_nc


class spmd_dim:
    """nl.spmd_dim(nl.nc(n), m): an axis of n * m instances, the core its
    major factor (instances i*m .. i*m + m-1 on core i); nl.spmd_dim(m,
    nl.nc(n)): the core its minor factor (instance i on core i % n)."""
    def __init__(self, *dims):
        cores = [k for k, d in enumerate(dims) if isinstance(d, nc)]
        if len(cores) != 1 or cores[0] not in (0, len(dims) - 1) or len(dims) < 2:
            raise NotImplementedError("nl.spmd_dim%r: nklab takes one nl.nc(n) factor, first or last" % (dims,))
        size = 1
        for d in dims:
            size *= d._nklab_size if isinstance(d, nc) else int(d)
        n = dims[cores[0]]._nklab_nc
        self._nklab_size = size
        self._nklab_nc = n if cores[0] == 0 else -n
        self._dims = dims

    def __repr__(self):
        return "nl.spmd_dim%r" % (self._dims,)
