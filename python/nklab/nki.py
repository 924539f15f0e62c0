"""The nki namespace on nklab: nki.jit, nki.benchmark, nki.profile,
nki.baremetal, nki.simulate_kernel, nki.simulate, and nki.language / isa /
typing. Each decorator makes an nklab.Kernel (C): traced once per signature,
replayed afterwards."""
import warnings

from . import _nklab, language, isa, typing, compiler  # noqa: F401
from .language import tile_size  # noqa: F401

_warned = set()


def _ignore(option, value):
    """One warning per option nklab has no use for."""
    if option not in _warned:
        _warned.add(option)
        warnings.warn(f"nklab ignores {option}={value!r}: it has no meaning for nklab's compile step",
                      stacklevel=4)


def _func(kernel):
    return kernel.func if isinstance(kernel, _nklab.Kernel) else kernel


def _target(kernel, platform_target):
    if platform_target is None and isinstance(kernel, _nklab.Kernel):
        return kernel.platform_target
    return platform_target


_MODES = {"auto": "jit", "jax": "jit", "torch": "jit", "numpy": "jit", "baremetal": "baremetal",
          "benchmark": "benchmark", "simulation": "eager", "simulate": "eager"}


def _decorator(make):
    """A decorator usable bare (@d) and with arguments (@d(...))."""
    def d(func=None, **options):
        if func is None:
            return lambda f: make(f, **options)
        return make(func, **options)
    d.__doc__ = make.__doc__
    d.__name__ = make.__name__
    return d


def _jit(func, mode="auto", platform_target=None, additional_compile_opt=None, **options):
    """@nki.jit: the kernel traced once per signature (argument shapes, dtypes,
    scalar values, target) and replayed from the cache afterwards."""
    if additional_compile_opt:
        _ignore("additional_compile_opt", additional_compile_opt)
    for k, v in options.items():
        _ignore(k, v)
    if mode not in _MODES:
        _ignore("mode", mode)
    return _nklab.Kernel(_func(func), mode=_MODES.get(mode, "jit"), platform_target=platform_target)


def _benchmark(func, warmup=10, iters=100, save_neff_name=None, save_trace_name=None, platform_target=None,
               additional_compile_opt=None, **options):
    """@nki.benchmark: compiles once, runs warm-up and timed iterations, prints
    the latency table as `nklab bench` does and writes the compiled program
    (save_neff_name) and the profile (save_trace_name) in nklab's formats;
    afterwards func.benchmark_result.nc_latency.get_latency_percentile(p)."""
    if additional_compile_opt:
        _ignore("additional_compile_opt", additional_compile_opt)
    for k, v in options.items():
        _ignore(k, v)
    return _nklab.Kernel(_func(func), mode="benchmark", platform_target=platform_target, warmup=warmup,
                         iters=iters, save_neff_name=save_neff_name, save_trace_name=save_trace_name)


def _profile(func, working_directory=None, save_neff_name=None, save_trace_name=None, platform_target=None,
             overwrite=True, profile_nth=None, additional_compile_opt=None, **options):
    """@nki.profile: runs the kernel and writes its profile (default
    profile.ntff) and compiled program in working_directory."""
    if additional_compile_opt:
        _ignore("additional_compile_opt", additional_compile_opt)
    if profile_nth is not None:
        _ignore("profile_nth", profile_nth)
    for k, v in options.items():
        _ignore(k, v)
    return _nklab.Kernel(_func(func), mode="profile", platform_target=platform_target,
                         save_neff_name=save_neff_name, save_trace_name=save_trace_name,
                         working_directory=working_directory)


def _baremetal(func, save_neff_name=None, save_trace_name=None, platform_target=None, additional_compile_opt=None,
               artifacts_dir=None, **options):
    """@nki.baremetal: runs the kernel on numpy arrays (as @nki.jit)."""
    if additional_compile_opt:
        _ignore("additional_compile_opt", additional_compile_opt)
    for k, v in options.items():
        _ignore(k, v)
    if save_neff_name or save_trace_name:
        return _nklab.Kernel(_func(func), mode="profile", platform_target=platform_target,
                             save_neff_name=save_neff_name, save_trace_name=save_trace_name,
                             working_directory=artifacts_dir)
    return _nklab.Kernel(_func(func), mode="baremetal", platform_target=platform_target)


jit = _decorator(_jit)
benchmark = _decorator(_benchmark)
profile = _decorator(_profile)
baremetal = _decorator(_baremetal)


def simulate(kernel, platform_target=None):
    """nki.simulate(kernel)(*args): runs the kernel tracing it on every call,
    so print(tile) shows the tile's values at that line."""
    k = _nklab.Kernel(_func(kernel), mode="eager", platform_target=_target(kernel, platform_target))
    grid = kernel.grid if isinstance(kernel, _nklab.Kernel) else None
    return k if grid is None else k[grid]  # kernel[grid]: simulated on its grid


def simulate_kernel(kernel, *args, **kwargs):
    """nki.simulate_kernel(kernel, *args): simulate(kernel)(*args)."""
    return simulate(kernel)(*args, **kwargs)
