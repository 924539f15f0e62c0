"""NKI's profiling example on nklab: exp over a [250, 512] float32 tensor in
tiles of 128 rows (the last one masked), benchmarked.

    nklab python examples/exp.py     # prints the latency table, writes the files
    nklab view profile.ntff          # the timeline beside this file's source

The file is NKI Python as written for the Neuron SDK: nothing here is nklab's.
"""
from neuronxcc import nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt


@nki.benchmark(save_neff_name='file.neff', save_trace_name='profile.ntff')
def tensor_exp_kernel(in_tensor):
    """out = exp(in), 128 rows at a time."""
    out_tensor = nl.ndarray(in_tensor.shape, dtype=in_tensor.dtype, buffer=nl.shared_hbm)
    rows, cols = in_tensor.shape
    i_f = nl.arange(cols)[None, :]
    ntiles = (rows + nl.tile_size.pmax - 1) // nl.tile_size.pmax
    for t in nl.affine_range(ntiles):
        i_p = t * nl.tile_size.pmax + nl.arange(nl.tile_size.pmax)[:, None]
        tile = nl.load(in_tensor[i_p, i_f], mask=(i_p < rows))
        result = nl.exp(tile, mask=(i_p < rows))
        nl.store(out_tensor[i_p, i_f], value=result, mask=(i_p < rows))
    return out_tensor


if __name__ == "__main__":
    # a placeholder argument: the shape and dtype are all a benchmark needs
    tensor_exp_kernel(nt.tensor[[250, 512], nl.float32])
    p50 = tensor_exp_kernel.benchmark_result.nc_latency.get_latency_percentile(50)
    print(f"device latency p50: {p50:.2f} us")
