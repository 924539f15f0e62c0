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
    __version__,
)
from . import language, isa, typing, nki  # noqa: E402

__all__ = ["KernelError", "Kernel", "cast", "cache_info", "listing", "set_low_precision_bits", "language", "isa",
           "typing", "nki", "__version__"]
