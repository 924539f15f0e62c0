"""nki.typing (nt): nt.tensor[shape, dtype], an argument without values."""
from ._nklab import tensor, TensorPlaceholder  # noqa: F401
from ._unimplemented import module_getattr

__getattr__ = module_getattr("nki.typing", {"scalar", "mutable_tensor"})
