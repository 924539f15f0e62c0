"""nki.language (nl) on nklab: tiles, loads and stores, index expressions,
loops, dtypes and memories; every op is a call of nklab's tracer (C)."""
from . import _nklab
from ._unimplemented import module_getattr

globals().update({k: v for k, v in vars(_nklab.lang).items() if not k.startswith("__")})

__getattr__ = module_getattr("nki.language", {
    "atomic_rmw", "load_transpose2d", "shared_constant", "shared_identity_matrix", "rand", "random_seed",
    "softmax", "rms_norm", "prod", "var", "gelu_dx", "silu_dx", "erf_dx", "gelu_apprx_sigmoid",
    "gelu_apprx_sigmoid_dx", "ceil", "floor", "trunc", "tan", "logical_and", "logical_or", "logical_xor",
    "logical_not", "invert", "left_shift", "right_shift", "expand_dims", "spmd_dim", "nc", "abs_max",
    "abs_min", "all_reduce", "gather_flattened", "loop_reduce", "dynamic_range", "float8_e5m2_x4",
    "float8_e4m3fn_x4", "float4_e2m1fn_x4", "NkiTensor", "virtual_register", "invariant_range",
})
