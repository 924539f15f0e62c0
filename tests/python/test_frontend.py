"""Tests of the Python front-end, run by tests/python/run.sh as
`nklab python tests/python/test_frontend.py`: every NKI construct the
front-end spells, values against numpy, errors at this file's lines, caching,
placeholders, torch, eager values, benchmark and profile files.

Prints one line per failure and "N passed, N failed[, N skipped]" last.
"""
import io
import os
import subprocess
import sys
import tempfile
import traceback
import warnings
import contextlib

import numpy as np
from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import nklab

HERE = os.path.abspath(__file__)
BUILD = os.environ.get("NK_BUILD", "build")
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def line_of(text):
    """The line of this file holding text (errors must name it)."""
    with open(HERE) as f:
        for i, l in enumerate(f, 1):
            if text in l and "line_of(" not in l:
                return i
    raise AssertionError(f"no line holds {text!r}")


def close(a, b, rtol=1e-5, atol=1e-6):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    err = np.abs(a - b) - (atol + rtol * np.abs(b))
    assert (err <= 0).all(), f"max error {np.abs(a - b).max():.3g} at {np.unravel_index(err.argmax(), a.shape)}"


RNG = np.random.default_rng(11)


def rand(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


# ---------------------------------------------------------------- kernels

@nki.jit
def k_exp(in_tensor):
    out = nl.ndarray(in_tensor.shape, dtype=in_tensor.dtype, buffer=nl.shared_hbm)
    rows, cols = in_tensor.shape
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range((rows + nl.tile_size.pmax - 1) // nl.tile_size.pmax):
        i_p = t * nl.tile_size.pmax + nl.arange(nl.tile_size.pmax)[:, None]
        tile = nl.load(in_tensor[i_p, i_f], mask=(i_p < rows))
        nl.store(out[i_p, i_f], value=nl.exp(tile, mask=(i_p < rows)), mask=(i_p < rows))
    return out


@test
def masked_exp_matches_numpy_and_caches():
    x = rand(250, 512)
    close(k_exp(x), np.exp(x), rtol=2e-7)
    before = nklab.cache_info(k_exp)
    y = k_exp(rand(250, 512))
    after = nklab.cache_info(k_exp)
    assert after["traces"] == before["traces"], "a second call with the same signature traced again"
    assert after["hits"] == before["hits"] + 1
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    k_exp(rand(100, 64))  # a new shape: a new trace
    assert nklab.cache_info(k_exp)["traces"] == before["traces"] + 1


@nki.jit
def k_ops(a, b, s):
    out = nl.ndarray((8, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    nl.store(out[0], value=x + y)
    nl.store(out[1], value=x - y)
    nl.store(out[2], value=x * y)
    nl.store(out[3], value=x / (y * y + 1.0))
    nl.store(out[4], value=-x + s)
    nl.store(out[5], value=2.0 - x)
    nl.store(out[6], value=(x * x + 1.0) ** 0.5)
    nl.store(out[7], value=nl.maximum(x, y))
    return out


@test
def tile_operators_and_scalar_arguments():
    a, b = rand(128, 64), rand(128, 64)
    out = k_ops(a, b, 3.0)
    want = [a + b, a - b, a * b, a / (b * b + 1), -a + 3, 2 - a, np.sqrt(a * a + 1), np.maximum(a, b)]
    for i, w in enumerate(want):
        close(out[i], w, rtol=2e-6, atol=2e-6)
    t0 = nklab.cache_info(k_ops)["traces"]
    k_ops(a, b, 3.0)
    assert nklab.cache_info(k_ops)["traces"] == t0
    close(k_ops(a, b, 5.0)[4], -a + 5)  # another scalar value: another program
    assert nklab.cache_info(k_ops)["traces"] == t0 + 1


@nki.jit
def k_compare(a, b):
    out = nl.ndarray((2, 128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    x, y = nl.load(a), nl.load(b)
    nl.store(out[0], value=nl.copy(x < y, dtype=nl.float32))
    nl.store(out[1], value=nl.copy(x >= 0.25, dtype=nl.float32))
    return out


@test
def comparisons_give_zero_one_tiles():
    a, b = rand(128, 32), rand(128, 32)
    out = k_compare(a, b)
    close(out[0], (a < b).astype(np.float32))
    close(out[1], (a >= 0.25).astype(np.float32))


@nki.jit
def k_index(x):
    # x [256, 64]: mgrid, slices, nl.ds, a transposed access and an offset
    out = nl.ndarray((64, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    out2 = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    out3 = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    grid = nl.mgrid[0:64, 0:128]
    t = nl.load(x[grid.x + 128, grid.p])          # x[128:256, :].T
    nl.store(out[grid.p, grid.x], value=t)
    i_p, i_f = nl.mgrid[0:128, 0:32]
    nl.store(out2[i_p, i_f], value=nl.load(x[i_p, 2 * i_f + 1]))
    s = nl.load(x[nl.ds(128, 128), :])
    nl.store(out3[0:128, 0:64], value=s)
    return out, out2, out3


@test
def index_expressions_slices_and_ds():
    x = rand(256, 64)
    o1, o2, o3 = k_index(x)
    close(o1, x[128:256, :].T)
    close(o2, x[:128, 1::2])
    close(o3, x[128:256])


@nki.jit
def k_column(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    m = nl.max(t, axis=1, keepdims=True)      # [128, 1]
    s = nl.sum(t, axis=[1], keepdims=True)
    nl.store(out, value=(t - m) * s)
    return out


@test
def reductions_and_column_broadcast():
    x = rand(128, 96)
    want = (x - x.max(axis=1, keepdims=True)) * x.sum(axis=1, keepdims=True)
    close(k_column(x), want, rtol=1e-5, atol=1e-5)


@nki.jit
def k_psum(a_t, b):
    # a_t [K, M] (lhs transposed), b [K, N]; K = 512 in 4 chunks accumulating in PSUM
    K, M = a_t.shape
    _, N = b.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((M, N), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        acc += nl.matmul(nl.load(a_t[k * 128:(k + 1) * 128, :]), nl.load(b[k * 128:(k + 1) * 128, :]),
                         transpose_x=True)
    nl.store(out, value=nl.copy(acc))
    return out


@test
def psum_accumulation_with_plus_equals():
    a_t, b = rand(512, 128), rand(512, 256)
    close(k_psum(a_t, b), a_t.T @ b, rtol=1e-4, atol=1e-4)
    n, listing = nklab.listing(k_psum, a_t, b)
    assert "memset" not in listing, "nl.zeros in PSUM folds into the first matmul"


@nki.jit
def k_tiles(x):
    # a tile array filled block by block, then summed: item assignment and par_dim
    n = x.shape[0] // 128
    out = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    blocks = nl.ndarray((n, nl.par_dim(128), x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(n):
        blocks[k] = nl.load(x[k * 128:(k + 1) * 128, :])
    acc = nl.zeros((128, x.shape[1]), dtype=nl.float32)
    for k in nl.sequential_range(n):
        acc[...] = nl.add(acc, blocks[k])
    nl.store(out, value=acc)
    return out


@test
def tile_arrays_item_assignment_and_sequential_loops():
    x = rand(512, 32)
    close(k_tiles(x), x.reshape(4, 128, 32).sum(axis=0), rtol=1e-5, atol=1e-5)
    n, listing = nklab.listing(k_tiles, x)
    assert listing.count("tensor_copy") == 0, "a temporary assigned into a tile is written there directly"


@nki.jit
def k_named_assign(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    e = nl.exp(nl.load(x))
    t[...] = e            # e is still named: copied, and stays usable
    nl.store(out, value=t + e)
    return out


@test
def assigning_a_named_tile_copies_it():
    x = rand(128, 16)
    close(k_named_assign(x), 2 * np.exp(x), rtol=1e-6)
    n, listing = nklab.listing(k_named_assign, x)
    assert listing.count("tensor_copy") == 1


@nki.jit
def k_loops(x):
    out = nl.ndarray((4, 128, 16), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(2):               # plain range: unrolled
        nl.store(out[i], value=nl.load(x) * float(i + 1))
    for i in nl.static_range(2, 4):
        nl.store(out[i], value=nl.load(x) * float(i + 1))
    return out


@test
def plain_and_static_ranges_unroll():
    x = rand(128, 16)
    out = k_loops(x)
    for i in range(4):
        close(out[i], x * (i + 1))


@nki.jit
def k_isa(x, col):
    P, F = x.shape
    out = nl.ndarray((8, P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    c = nl.load(col)                                                      # [P, 1]
    nl.store(out[0], value=nisa.activation(op=nl.exp, data=t, bias=c, scale=2.0))
    nl.store(out[1], value=nisa.tensor_tensor(t, t, op=nl.multiply))
    nl.store(out[2], value=nisa.tensor_scalar(t, np.add, 1.0, op1=np.multiply, operand1=3.0))
    nl.store(out[3], value=nisa.tensor_copy(t))
    nl.store(out[4], value=nisa.memset((P, F), 7.0, nl.float32))
    i_p, i_f = nl.mgrid[0:P, 0:F]
    nl.store(out[5], value=nisa.iota(i_p * F + i_f, nl.float32))
    nl.store(out[6], value=nisa.affine_select(i_p - i_f >= 0, t, -1.0))
    r = nisa.tensor_reduce(np.add, t, axis=1, keepdims=True)
    nl.store(out[7], value=nl.add(nisa.memset((P, F), 0.0, nl.float32), r))
    return out


@test
def isa_ops():
    x, col = rand(128, 64), rand(128, 1)
    out = k_isa(x, col)
    i_p, i_f = np.mgrid[0:128, 0:64]
    close(out[0], np.exp(2 * x + col), rtol=1e-5)
    close(out[1], x * x)
    close(out[2], (x + 1) * 3, rtol=1e-6)
    close(out[3], x)
    close(out[4], np.full_like(x, 7))
    close(out[5], (i_p * 64 + i_f).astype(np.float32))
    close(out[6], np.where(i_p - i_f >= 0, x, -1))
    close(out[7], np.broadcast_to(x.sum(axis=1, keepdims=True), x.shape), rtol=1e-5, atol=1e-5)


@nki.jit
def k_matmul(lhsT, rhs):
    K, M = lhsT.shape
    result = nl.ndarray((M, rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    p = nisa.nc_matmul(nl.load(lhsT), nl.load(rhs))
    nl.store(result, value=nl.copy(p, dtype=nl.float32))
    return result


@nki.jit
def k_transpose(x):
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.copy(nisa.nc_transpose(nl.load(x))))
    return out


@test
def nc_matmul_and_nc_transpose():
    lt, r = rand(128, 128), rand(128, 512)
    close(k_matmul(lt, r), lt.T @ r, rtol=1e-4, atol=1e-4)
    x = rand(128, 64)
    close(k_transpose(x), x.T)


@nki.jit
def k_stats(x):
    out = nl.ndarray((x.shape[0], 2), dtype=nl.float32, buffer=nl.shared_hbm)
    st = nisa.bn_stats(nl.load(x), dtype=nl.float32)
    nl.store(out, value=nisa.bn_aggr(st))
    return out


@test
def bn_stats_and_bn_aggr():
    x = rand(128, 256)
    out = k_stats(x)
    close(out[:, 0], x.mean(axis=1), rtol=1e-4, atol=1e-5)
    close(out[:, 1], x.var(axis=1), rtol=1e-4, atol=1e-5)


@nki.jit
def k_reshape(x):
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    v = x.reshape((128, 64))
    assert v.shape == (128, 64) and v.dtype == nl.float32
    nl.store(out, value=nl.load(v))
    return out


@test
def reshape_shape_and_dtype():
    x = rand(64, 128)
    close(k_reshape(x), x.reshape(128, 64))


@nki.jit
def k_assert(x):
    assert x.shape[0] <= 128, "at most 128 rows"
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out


@test
def assert_behaves_as_in_python():
    k_assert(rand(128, 8))
    try:
        k_assert(rand(256, 8))
    except AssertionError as e:
        assert "at most 128 rows" in str(e)
    else:
        raise AssertionError("no AssertionError")


@nki.jit
def k_too_many_partitions(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[0:200, :])  # ERROR-LINE-200
    nl.store(out, value=t)
    return out


@test
def tracer_errors_name_the_py_line():
    try:
        k_too_many_partitions(rand(256, 32))
    except nklab.KernelError as e:
        msg = str(e)
        want = f"{HERE}:{line_of('ERROR-LINE-200')}: nl.load: the source [200, 32] has partition dimension 200"
        assert msg.startswith(want), msg
    else:
        raise AssertionError("no KernelError")
    # a failed trace is not cached: it fails again
    try:
        k_too_many_partitions(rand(256, 32))
    except nklab.KernelError:
        pass
    else:
        raise AssertionError("no KernelError the second time")


@nki.jit
def k_bad_matmul(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    z = nl.matmul(x, y, transpose_x=True)  # MATMUL-K-LINE
    nl.store(out, value=z)
    return out


@test
def tracer_errors_name_the_call_and_its_instruction():
    try:
        k_bad_matmul(rand(128, 128), rand(64, 512))
    except nklab.KernelError as e:
        msg = str(e)
        want = (f"{HERE}:{line_of('MATMUL-K-LINE')}: nl.matmul (nc_matmul): contraction (partition) sizes "
                "differ: stationary K=128, moving K=64")
        assert msg == want, msg
    else:
        raise AssertionError("no KernelError")


@nki.jit
def k_unimplemented(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.softmax(nl.load(x), axis=1)  # UNIMPLEMENTED-LINE
    nl.store(out, value=t)
    return out


@test
def unimplemented_apis_raise_not_implemented_error_with_the_line():
    try:
        k_unimplemented(rand(128, 8))
    except NotImplementedError as e:
        assert f"{HERE}:{line_of('UNIMPLEMENTED-LINE')}: nki.language.softmax is not implemented" in str(e), str(e)
    else:
        raise AssertionError("no NotImplementedError")


def spmd_add(a, b):
    # one 128 x 512 tile per program instance of a 2-D launch grid
    c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i, j = nl.program_id(0), nl.program_id(axis=1)
    ix = i * 128 + nl.arange(128)[:, None]
    iy = j * 512 + nl.arange(512)[None, :]
    nl.store(c[ix, iy], value=nl.load(a[ix, iy]) + nl.load(b[ix, iy]))
    return c


k_spmd_add = nki.jit(spmd_add)
k_spmd_add2 = nki.jit(spmd_add, platform_target="trn2")
SPMD_SEEN = []


@nki.jit
def k_spmd_ids(x):
    SPMD_SEEN.append((nl.program_ndim(), nl.program_id(0), nl.num_programs(), nl.num_programs(0),
                      nl.num_programs((0, 1)) if nl.program_ndim() > 1 else None))
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(x))
    return out


@nki.jit
def k_spmd_bad_axis(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(x) * nl.program_id(1))  # BAD-AXIS-LINE
    return out


@test
def spmd_launch_grids_run_every_instance():
    a, b = rand(256, 1024), rand(256, 1024)
    close(k_spmd_add[2, 2](a, b), a + b, rtol=0, atol=0)
    info = nklab.cache_info(k_spmd_add)
    close(k_spmd_add[2, 2](a, b), a + b, rtol=0, atol=0)  # cached: the grid is part of the signature
    assert nklab.cache_info(k_spmd_add)["traces"] == info["traces"], nklab.cache_info(k_spmd_add)
    # each instance sees its own ids; without a grid one instance, no axes
    x = rand(128, 8)
    SPMD_SEEN.clear()
    close(k_spmd_ids[3, 2](x), x, rtol=0, atol=0)
    assert SPMD_SEEN == [(2, i, 6, 3, 6) for i in range(3) for _ in range(2)], SPMD_SEEN
    SPMD_SEEN.clear()
    close(k_spmd_ids(x), x, rtol=0, atol=0)
    assert SPMD_SEEN == [(0, 0, 1, 1, None)], SPMD_SEEN
    try:
        k_spmd_bad_axis[2](x)
    except nklab.KernelError as e:
        assert f"{HERE}:{line_of('BAD-AXIS-LINE')}: nk_program_id: axis 1 is not an axis of the launch grid" in str(e), str(e)
    else:
        raise AssertionError("no KernelError")


@test
def spmd_logical_cores_on_trn2():
    a, b = rand(512, 1024), rand(512, 1024)
    for grid in [(4, 2), (nl.spmd_dim(nl.nc(2), 2), 2), (nl.nc(2) * 2, 2), (2 * nl.nc(2), 2)]:
        close(k_spmd_add2[grid](a, b), a + b, rtol=0, atol=0)
    assert repr(nl.spmd_dim(2, nl.nc(2))) == "nl.spmd_dim(2, nl.nc(2))"
    try:
        k_spmd_add[nl.nc(2) * 2, 2](a, b)  # NC-ON-TRN1-LINE
    except nklab.KernelError as e:
        assert f":{line_of('NC-ON-TRN1-LINE')}: launch grid: nl.nc(2) on axis 0, but a launch on trn1" in str(e), str(e)
    else:
        raise AssertionError("no KernelError")
    # simulated on its grid and its target: nki.simulate_kernel(kernel[grid], ...)
    close(nki.simulate_kernel(k_spmd_add2[nl.nc(2) * 2, 2], a, b), a + b, rtol=0, atol=0)
    assert nki.simulate(k_spmd_add2).platform_target == "trn2"
    assert k_spmd_add2[2, 2].grid == (2, 2) and k_spmd_add2.grid is None
    for bad, err in [((0,), ValueError), ((1, 2, 3, 4), ValueError), (("x",), TypeError)]:
        try:
            k_spmd_add[bad]
        except err:
            pass
        else:
            raise AssertionError(f"kernel[{bad}] accepted")


@nki.jit
def k_seq_scale(x, on_chip):
    t = nl.multiply(nl.load(x), 2.0)
    if on_chip:
        return t
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=t)
    return out


@nki.jit
def k_seq_matmul(lhsT, rhs):
    out = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.copy(nisa.nc_matmul(nl.load(lhsT), nl.load(rhs))))
    return out


@nklab.sequence
def k_seq(lhsT, rhs, on_chip):
    return k_seq_matmul(k_seq_scale(lhsT, on_chip), rhs)


@nklab.sequence
def k_seq_grid(x):
    return k_spmd_add[2, 2](x, x)  # SEQ-GRID-LINE


@test
def sequences_compose_kernels_on_chip():
    a, b = rand(128, 128), rand(128, 512)
    want = (2 * a.astype(np.float64)).T @ b
    outs = [k_seq(a, b, oc) for oc in (False, True)]
    for o in outs:
        close(o, want, rtol=1e-5, atol=1e-4)
    assert np.array_equal(outs[0], outs[1])
    n_hbm, listing_hbm = nklab.listing(k_seq, a, b, False)
    n_chip, listing_chip = nklab.listing(k_seq, a, b, True)
    assert n_hbm - n_chip == 2, (n_hbm, n_chip)  # the store and the load between the kernels
    t_hbm, t_chip = nklab.timing(k_seq, a, b, False), nklab.timing(k_seq, a, b, True)
    assert t_chip["device_ns"] < t_hbm["device_ns"], (t_hbm, t_chip)
    assert t_hbm["dma_bytes"] - t_chip["dma_bytes"] == 2 * 128 * 128 * 4, (t_hbm, t_chip)
    assert t_hbm["launch_ns"] > 0 and t_hbm["launch_ns"] == t_chip["launch_ns"]
    # a sequence is cached like any kernel
    info = nklab.cache_info(k_seq)
    k_seq(a, b, True)
    assert nklab.cache_info(k_seq)["traces"] == info["traces"]
    # outside a sequence a kernel calling a kernel is refused; a launch grid inside one too
    try:
        k_seq_grid(rand(128, 512))
    except NotImplementedError as e:
        assert "with a launch grid" in str(e), str(e)
    else:
        raise AssertionError("no NotImplementedError")


@test
def placeholders_trace_without_values():
    out = k_exp(nt.tensor[[250, 512], nl.float32])
    assert isinstance(out, nt.TensorPlaceholder), type(out)
    assert out.shape == (250, 512) and out.dtype == nl.float32


@test
def torch_tensors_in_and_out():
    try:
        import torch
    except ImportError:
        return "skip: torch is not installed"
    a = torch.rand(128, 128)
    b = torch.rand(128, 512)
    out = k_matmul(a, b)
    assert isinstance(out, torch.Tensor), type(out)
    close(out.numpy(), (a.T @ b).numpy(), rtol=1e-4, atol=1e-4)
    # bfloat16 natively: in as bf16, out as bf16
    xb = torch.rand(128, 64).to(torch.bfloat16)
    yb = k_exp(xb)
    assert yb.dtype == torch.bfloat16, yb.dtype
    close(yb.float().numpy(), torch.exp(xb.float()).to(torch.bfloat16).float().numpy(), rtol=1e-2)


@test
def float32_arrays_as_bfloat16_arguments():
    x = rand(128, 64)
    y = k_exp(nklab.cast(x, nl.bfloat16))
    assert y.dtype == np.float32  # bf16 outputs come back as float32
    xr = x.view(np.uint32)
    # round x to bf16 (nearest even), exp, round again
    def bf16(v):
        u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
        return u.astype(np.uint32).view(np.float32)
    close(y, bf16(np.exp(bf16(x))), rtol=1e-2)
    assert xr is not None


@test
def jit_options_accepted_meaningless_ones_warned_once():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")

        @nki.jit(additional_compile_opt="--lnc=1", platform_target="trn2")
        def k_opts(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=nl.load(x))
            return out

        @nki.jit(mode="auto", additional_compile_opt="-O3")
        def k_opts2(x):
            return k_opts.func(x)

    assert sum("additional_compile_opt" in str(x.message) for x in w) <= 1
    x = rand(128, 8)
    close(k_opts(x), x)
    close(k_opts2(x), x)


@test
def platform_target_chooses_the_target():
    @nki.profile(platform_target="trn2", working_directory=TMP, save_trace_name="trn2.ntff")
    def k_t2(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.exp(nl.load(x)))
        return out

    x = rand(128, 64)
    with contextlib.redirect_stdout(io.StringIO()):
        close(k_t2(x), np.exp(x), rtol=1e-6)
    text = subprocess.run([f"{BUILD}/nklab", "summary", os.path.join(TMP, "trn2.ntff")], capture_output=True,
                          text=True).stdout
    assert "trn2" in text, text


@nki.jit
def k_print(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    e = nl.exp(t)
    print("exp tile:", e)
    nl.device_print("loaded:", t)
    nl.store(out, value=e * 2.0)
    return out


@test
def eager_print_shows_values_and_values_match_the_cached_path():
    x = (np.arange(128 * 4, dtype=np.float32).reshape(128, 4) / 512).astype(np.float32)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        y_eager = nki.simulate_kernel(k_print, x)
    text = buf.getvalue()
    assert "exp tile:" in text and f"{np.exp(x[0, 1]):.8f}"[:6] in text, text
    assert "loaded:" in text and "0.00195312" in text, text
    with contextlib.redirect_stdout(io.StringIO()):
        y_jit = k_print(x)
        y_sim = nki.simulate(k_print)(x)
    assert np.array_equal(y_eager, y_jit) and np.array_equal(y_sim, y_jit), "eager and cached values differ"


@test
def benchmark_prints_the_table_and_writes_both_files():
    neff, ntff = os.path.join(TMP, "k.neff"), os.path.join(TMP, "k.ntff")

    @nki.benchmark(warmup=2, iters=5, save_neff_name=neff, save_trace_name=ntff)
    def k_bench(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.exp(nl.load(x)))
        return out

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        k_bench(rand(128, 512))
    text = buf.getvalue()
    assert "B  NC  NC-USED  WEIGHTS  MODE  INF/S  IRES/S  L(1)" in text, text
    assert "k_bench on trn1: 5 iterations after 2 warm-up, values computed" in text, text
    p50 = k_bench.benchmark_result.nc_latency.get_latency_percentile(50)
    assert p50 > 0
    assert k_bench.benchmark_result.nc_latency.get_latency_percentile(99) == p50
    for f in (neff, ntff):
        assert os.path.getsize(f) > 0
    r = subprocess.run([f"{BUILD}/nklab", "summary", ntff], capture_output=True, text=True)
    assert r.returncode == 0 and "k_bench" in r.stdout, r.stdout + r.stderr
    # the functional form, with a placeholder: timing only
    bf = nki.benchmark(k_exp, warmup=1, iters=3)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        bf(nt.tensor[[250, 512], nl.float32])
    assert "model" in buf.getvalue(), buf.getvalue()


@test
def profiles_map_instructions_to_python_lines():
    ntff = os.path.join(TMP, "exp.ntff")
    f = nki.profile(k_exp, working_directory=TMP, save_trace_name="exp.ntff")
    with contextlib.redirect_stdout(io.StringIO()):
        f(rand(250, 512))
    r = subprocess.run([f"{BUILD}/nklab", "insights", ntff], capture_output=True, text=True)
    want = f"test_frontend.py:{line_of('tile = nl.load(in_tensor[i_p, i_f], mask=(i_p < rows))')}"
    assert want in r.stdout, r.stdout
    html = os.path.join(TMP, "exp.html")
    subprocess.run([f"{BUILD}/nklab", "view", ntff, "-o", html], check=True, capture_output=True)
    with open(html) as h:
        assert "def k_exp(in_tensor):" in h.read(), "the viewer's source pane lacks the .py file"


@nki.jit
def k_named(a_tensor,
            b_tensor):
    """loads a_tensor once per 128-row tile of b_tensor: a reloaded input"""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        t = nl.load(a_tensor) + nl.load(b_tensor[i * 128:(i + 1) * 128, :])
        nl.store(out, value=t)
    return out


@test
def profiles_name_inputs_after_the_kernels_parameters():
    ntff = os.path.join(TMP, "named.ntff")
    f = nki.profile(k_named, working_directory=TMP, save_trace_name="named.ntff")
    with contextlib.redirect_stdout(io.StringIO()):
        f(rand(128, 512), rand(512, 512))
    r = subprocess.run([f"{BUILD}/nklab", "insights", ntff], capture_output=True, text=True)
    # the finding names the parameter and its def line, not "input 0" from "k_named:0"
    def_line = line_of("def k_named(a_tensor,")
    assert "input a_tensor is loaded 4.0 times from HBM" in r.stdout, r.stdout
    assert f"(256.0 KiB, from test_frontend.py:{def_line})" in r.stdout, r.stdout
    for fmt in ("csv", "json", "perfetto"):
        e = subprocess.run([f"{BUILD}/nklab", "export", ntff, "--format", fmt], capture_output=True, text=True)
        assert "src=a_tensor[128, 512] float32 +0" in e.stdout, fmt + e.stdout[:2000]
        assert "src=b_tensor[128, 512] float32" in e.stdout and "in0[" not in e.stdout, fmt
        assert "nl.load" in e.stdout, fmt
    listing = nklab.listing(k_named, rand(128, 512), rand(512, 512))[1]
    assert "<- b_tensor[128, 512] float32 +65536" in listing, listing


@nki.jit
def k_more_isa(x, y):
    P, F = x.shape
    out = nl.ndarray((5, P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    sums = nl.ndarray((3, P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    a, b = nl.load(x), nl.load(y)
    r = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nl.store(out[0], value=nisa.activation_reduce(op=nl.exp, data=a, reduce_op=nl.add, reduce_res=r))
    nl.store(sums[0], value=r)
    nl.store(out[1], value=nisa.tensor_tensor_scan(a, b, 0.0, np.multiply, np.add))
    nl.store(out[2], value=nisa.scalar_tensor_tensor(data=a, op0=np.multiply, operand0=2.0, op1=np.add,
                                                     operand1=b))
    r2 = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nl.store(out[3], value=nisa.tensor_scalar_reduce(data=a, op0=np.add, operand0=1.0, reduce_op=np.add,
                                                     reduce_res=r2))
    nl.store(sums[1], value=r2)
    nl.store(out[4], value=nl.where(a > b, a, 0.0))
    return out, sums


@test
def scans_fused_alu_ops_and_where():
    x, y = rand(128, 32), rand(128, 32)
    out, sums = k_more_isa(x, y)
    close(out[0], np.exp(x), rtol=1e-6)
    close(sums[0][:, 0], np.exp(x).sum(axis=1), rtol=1e-5)
    scan = np.zeros_like(x)
    prev = np.zeros(128, np.float32)
    for i in range(32):
        prev = x[:, i] * prev + y[:, i]
        scan[:, i] = prev
    close(out[1], scan, rtol=1e-5, atol=1e-6)
    close(out[2], 2 * x + y, rtol=1e-6)
    close(out[3], x + 1, rtol=1e-6)
    close(sums[1][:, 0], (x + 1).sum(axis=1), rtol=1e-5)
    close(out[4], np.where(x > y, x, 0))



@nki.jit
def k_into_arg(a, b, out):
    nl.store(out, value=nl.load(a) + nl.load(b))


@test
def older_style_kernel_writes_into_its_argument_and_returns_none():
    a, b = rand(128, 64), rand(128, 64)
    out = np.zeros((128, 64), np.float32)
    assert k_into_arg(a, b, out) is None
    close(out, a + b, rtol=0, atol=0)


# ---------------------------------------------------------------- subscripts mixing slices and index expressions

@nki.jit
def k_mixed(x, y):
    """x [128, 1024], y [128, 4, 256]"""
    out = nl.ndarray((128, 1024), dtype=x.dtype, buffer=nl.shared_hbm)
    out3 = nl.ndarray((128, 4, 128), dtype=y.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    for k in nl.affine_range(2):  # the halves swapped
        t = nl.load(x[i_p, k * 512 + nl.arange(512)[None, :]])
        nl.store(out[i_p, 512 * (1 - k):512 * (2 - k)], value=t)
    i_f = nl.arange(128)[None, :]
    t3 = nl.load(y[i_p, :, 2 * i_f + 1])  # a slice between two 2-d expressions: an axis of its own
    u = nl.load(y[0:128, 1, nl.ds(64, 128)])  # slices, an integer and nl.ds: no expression at all
    v = nl.load(y[:, 2, i_f])  # ':' takes the unit axis of i_f
    nl.store(out3, value=t3)
    nl.store(out3[:, 0, :], value=u + v)
    return out3, out


@test
def subscripts_mix_slices_with_index_expressions():
    x, y = rand(128, 1024), rand(128, 4, 256)
    out3, out = k_mixed(x, y)
    close(out, np.concatenate([x[:, 512:], x[:, :512]], axis=1), rtol=0, atol=0)
    want = y[:, :, 1::2].copy()
    want[:, 0, :] = y[:, 1, 64:192] + y[:, 2, 0:128]
    close(out3, want, rtol=0, atol=0)


@nki.jit
def k_mixed_nki(x):
    import nki.language as nl2  # the newer namespace spells it alike
    out = nl2.ndarray((128, 256), dtype=x.dtype, buffer=nl2.shared_hbm)
    i_p = nl2.arange(128)[:, None]
    nl2.store(out[i_p, 0:256], value=nl2.load(x[i_p, nl2.ds(100, 256)]) * 2.0)
    return out


@test
def mixed_subscripts_in_the_nki_namespace():
    x = rand(128, 512)
    close(k_mixed_nki(x), x[:, 100:356] * 2, rtol=0, atol=0)


# ---------------------------------------------------------------- masks bounding an index from below

@nki.jit
def k_mask_below(x, o):
    """writes o's rows 4..99 and its columns 0..63 (exp) and 64 (row sums)"""
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    m = (i_p >= 4) & (i_p < 100)
    t = nl.load(x[i_p, i_f], mask=m)
    s = nl.sum(t, axis=1, mask=m, keepdims=True)
    nl.store(o[i_p, i_f], value=nl.exp(t, mask=m) * 2.0, mask=m)
    nl.store(o[i_p, 64], value=s, mask=m)


@test
def masks_bound_rows_from_below_and_above():
    x = rand(128, 64)
    o = np.full((128, 65), -7.0, np.float32)
    assert k_mask_below(x, o) is None
    close(o[4:100, :64], 2 * np.exp(x[4:100]), rtol=1e-6)
    close(o[4:100, 64], x[4:100].sum(axis=1), rtol=1e-5, atol=1e-5)
    assert (o[:4] == -7).all() and (o[100:] == -7).all(), "rows outside the mask were written"
    # the loaded tile starts at partition 0: 96 rows, read from row 4
    listing = nklab.listing(k_mask_below, x, o)[1]
    assert "load          sbuf[0:96]@0 [96, 64] float32 <- x[96, 64] float32 +256" in listing, listing


@nki.jit
def k_pad(x):
    """x [128, W] padded with 2 zero columns either side (a convolution's input)"""
    W = x.shape[1]
    out = nl.ndarray((128, W + 4), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(W + 4)[None, :]
    t = nl.zeros((128, W + 4), dtype=x.dtype)
    t[i_p, i_f] = nl.load(x[i_p, i_f - 2], mask=(i_f >= 2) & (i_f < W + 2))
    big = nl.ndarray((128, W + 4), dtype=nl.float32)
    big[i_p, i_f] = nisa.iota(i_p * 1000 + i_f, nl.float32, mask=(i_f >= W))  # columns W.. only
    big[i_p, i_f] = nisa.memset((128, W + 4), 5.0, nl.float32, mask=(i_f < W))
    nl.store(out, value=t + big)
    return out


@test
def item_assignment_under_a_mask_writes_the_masked_part():
    x = rand(128, 60)
    want = np.pad(x, ((0, 0), (2, 2))) + 5.0
    want[:, 60:] = np.pad(x, ((0, 0), (2, 2)))[:, 60:] + (np.arange(128)[:, None] * 1000 + np.arange(60, 64))
    close(k_pad(x), want, rtol=0, atol=0)
    listing = nklab.listing(k_pad, x)[1]
    # the load writes the padded tile's middle directly (no copy)
    assert "load          sbuf[0:128]@8 [128, 60] float32 <- x[128, 60] float32" in listing, listing
    assert "tensor_copy" not in listing, listing


@nki.jit
def k_mask_below_free(x):
    out = nl.ndarray((128, 2), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    nl.store(out[:, 0:1], value=nl.max(x_t := nl.load(x), axis=1, keepdims=True))
    nl.store(out[:, 1:2], value=nl.sum(x_t[i_p, i_f], axis=1, mask=(i_f >= 100) & (i_f <= 299), keepdims=True))
    return out


@test
def a_reduction_under_a_mask_from_below():
    x = rand(128, 512)
    out = k_mask_below_free(x)
    close(out[:, 0], x.max(axis=1), rtol=0, atol=0)
    close(out[:, 1], x[:, 100:300].sum(axis=1), rtol=1e-5, atol=1e-5)


@nki.jit
def k_mask_errors(x, which):
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    t = nl.load(x[i_p, i_f], mask=(i_f >= 4))
    if which == 0:
        u = t[i_p, i_f]  # MASK-INDEX-LINE
    elif which == 1:
        u = t + nl.load(x[i_p, i_f], mask=(i_f >= 8))  # MASK-CLASH-LINE
    elif which == 2:
        u = nl.transpose(nl.load(x), mask=(i_f >= 4))  # MASK-OTHER-LINE
    elif which == 3:
        u = nl.load(x[i_p, i_f], mask=(i_f != 4))  # MASK-NE-LINE
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=t)  # MASK-STORE-LINE
    return out


@test
def masks_from_below_refuse_what_they_cannot_mean():
    cases = [(0, NotImplementedError, "MASK-INDEX-LINE", "indexing a tile made under a mask that bounds an index "
              "from below is not implemented"),
             (1, ValueError, "MASK-CLASH-LINE", "+: the operands start at different indices (4 and 8)"),
             (2, NotImplementedError, "MASK-OTHER-LINE", "nl.transpose under a mask that bounds an index from below "
              "is not implemented"),
             (3, NotImplementedError, "MASK-NE-LINE", "this mask is not implemented"),
             (4, ValueError, "MASK-STORE-LINE", "nl.store: the operands start at different indices (0 and 4)")]
    for which, exc, tag, text in cases:
        try:
            k_mask_errors(rand(128, 64), which)
        except exc as e:
            assert f"{HERE}:{line_of(tag)}: {text}" in str(e), str(e)
        else:
            raise AssertionError(f"case {which}: no {exc.__name__}")


# ---------------------------------------------------------------- keyword arguments of nisa ops

@nki.jit
def k_isa_keywords(a, ident):
    out = nl.ndarray((3, 128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    t = nisa.nc_matmul(x, nl.load(ident), is_transpose=True)  # a PE transpose: stationary.T @ identity
    nl.store(out[0], value=nl.copy(t))
    nl.store(out[1, :, 0:1], value=nisa.tensor_reduce(np.max, x, axis=(1,), negate=True, keepdims=True))
    nl.store(out[1, :, 2:3], value=nisa.tensor_reduce(nl.add, x, axis=1, negate=False, keepdims=True))
    s = nl.ndarray((128, 1), dtype=nl.float32)
    e = nisa.activation(op=nl.exp, data=x, reduce_op=nl.add, reduce_res=s, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nl.store(out[2], value=nisa.activation(op=nl.exp, data=e, reduce_cmd=nisa.reduce_cmd.idle))
    nl.store(out[1, :, 1:2], value=s)
    return out


@test
def nisa_is_transpose_negate_and_reduce_cmd():
    a = rand(128, 128)
    out = k_isa_keywords(a, np.eye(128, dtype=np.float32))
    close(out[0], a.T, rtol=0, atol=0)
    close(out[1][:, 0], -a.max(axis=1), rtol=0, atol=0)
    close(out[1][:, 2], a.sum(axis=1), rtol=1e-5, atol=1e-5)
    close(out[1][:, 1], np.exp(a).sum(axis=1), rtol=1e-5)
    close(out[2], np.exp(np.exp(a)), rtol=1e-5)
    assert nisa.reduce_cmd.reset_reduce == 3 and nisa.reduce_cmd.idle == 0


@nki.jit
def k_isa_keyword_errors(a, which):
    x = nl.load(a)
    s = nl.ndarray((128, 1), dtype=nl.float32)
    if which == 0:
        nisa.activation(op=nl.exp, data=x, reduce_op=nl.add, reduce_res=s, reduce_cmd=nisa.reduce_cmd.reduce)  # RC-LINE
    elif which == 1:
        nisa.tensor_reduce(nl.bitwise_or, nl.copy(x, dtype=nl.int32), axis=1, negate=True)  # NEG-LINE
    else:
        d = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.psum)
        b = nl.copy(x, dtype=nl.bfloat16)
        nisa.nc_matmul(d, b, b, is_transpose=True)  # TRANSPOSE-LINE
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=x)
    return out


@test
def nisa_keywords_nklab_cannot_honour_name_the_line():
    cases = [(0, "RC-LINE", "nisa.activation(reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=...) is not implemented"),
             (1, "NEG-LINE", "nisa.tensor_reduce(negate=True) with a bitwise operator is not implemented"),
             (2, "TRANSPOSE-LINE", "nisa.nc_matmul(is_transpose=True) into a 16-bit dst is not implemented")]
    for which, tag, text in cases:
        try:
            k_isa_keyword_errors(rand(128, 128), which)
        except NotImplementedError as e:
            assert f"{HERE}:{line_of(tag)}: {text}" in str(e), str(e)
        else:
            raise AssertionError(f"case {which}: no NotImplementedError")


def main():
    global TMP
    TMP = tempfile.mkdtemp(prefix="nklab-py-")
    passed = failed = skipped = 0
    only = sys.argv[1:]
    for fn in TESTS:
        if only and fn.__name__ not in only:
            continue
        try:
            r = fn()
        except Exception:
            failed += 1
            print(f"FAIL {fn.__name__}")
            traceback.print_exc(file=sys.stdout)
            continue
        if isinstance(r, str) and r.startswith("skip"):
            skipped += 1
            print(f"skip {fn.__name__}: {r[5:].strip()}")
        else:
            passed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


TMP = None
if __name__ == "__main__":
    sys.exit(main())
