"""neuronxcc.nki as nklab.nki (see nklab/nki.py)."""
import sys as _sys

from nklab import nki as _nki
from nklab.nki import jit, benchmark, profile, baremetal, simulate, simulate_kernel  # noqa: F401
from nklab.nki import language, isa, typing, compiler, tile_size  # noqa: F401

for _name in ("language", "isa", "typing", "compiler", "tile_size"):
    _sys.modules[__name__ + "." + _name] = getattr(_nki, _name)
