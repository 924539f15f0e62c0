"""nki.isa (nisa) on nklab: one instruction per call, results in new tiles
(or in dst= where given)."""
from . import _nklab
from ._unimplemented import module_getattr

globals().update({k: v for k, v in vars(_nklab.isa).items() if not k.startswith("__")})

__getattr__ = module_getattr("nki.isa", {
    "tensor_partition_reduce", "tensor_scalar_reduce",
    "tensor_scalar_cumulative", "tensor_copy_dynamic_src", "tensor_copy_dynamic_dst", "tensor_copy_predicated",
    "reciprocal", "exponential", "range_select", "select_reduce", "sequence_bounds", "local_gather",
    "nc_n_gather", "dma_transpose", "dma_compute", "max8", "nc_find_index8", "nc_match_replace8",
    "nc_stream_shuffle", "nc_matmul_mx", "quantize_mx", "nc_version", "get_nc_version",
    "dge_mode", "oob_mode", "register_alloc", "register_load", "register_move", "register_store", "core_barrier",
    "sendrecv", "rng", "rand2", "rand_set_state", "rand_get_state", "set_rng_seed", "nonzero_with_count",
    "builtin",
})
