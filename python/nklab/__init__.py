"""nklab: NeuronCore kernels written in NKI's language, run, timed and profiled
without the hardware.

``import nklab`` is nklab's own API; NKI kernel files import ``neuronxcc.nki``
or ``nki``, which ``nklab python FILE.py`` resolves to :mod:`nklab.nki`.
Everything that traces, checks, runs and times a kernel is C (the _nklab
extension over the nklab library); these files only lay out the package.
"""
import os as _os

# numpy first: its BLAS (libopenblas.so.0, the threaded build) must be the
# one loaded; the extension, linked against the serial build of the same
# soname, then shares it instead of loading a second, clashing copy
import numpy as _np  # noqa: F401

from . import _nklab

# frames in these files are not kernel source lines
_nklab._set_glue_dir(_os.path.dirname(_os.path.abspath(__file__)) + _os.sep)

from ._nklab import (  # noqa: E402
    KernelError,
    Kernel,
    cast,
    cache_info,
    listing,
    set_low_precision_bits,
    timing,
    __version__,
)
from . import language, isa, typing, nki  # noqa: E402


def sequence(func=None, *, mode="jit", platform_target=None, **options):
    """@nklab.sequence: the function's calls of NKI kernels run as one device
    program, one kernel launch after another, instead of one program per
    call. A kernel may return an SBUF tile, and the next kernel, given it,
    reads it on chip (its nl.load of the tile is the tile): no store to HBM
    and load back. mode="benchmark" or "profile" (with nki.benchmark's and
    nki.profile's options) times the whole sequence."""
    if func is None:
        return lambda f: sequence(f, mode=mode, platform_target=platform_target, **options)
    return Kernel(func, mode=mode, platform_target=platform_target, sequence=True, **options)

__all__ = ["KernelError", "Kernel", "cast", "cache_info", "listing", "sequence", "timing", "set_low_precision_bits",
           "language", "isa", "typing", "nki", "__version__"]
