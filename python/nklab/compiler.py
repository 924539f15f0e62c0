"""nki.compiler: neuronx-cc's directives; none applies to nklab's compile step."""
from ._unimplemented import module_getattr

__getattr__ = module_getattr("nki.compiler", {
    "skip_middle_end_transformations", "enable_stack_allocator", "force_auto_alloc", "sbuf", "psum",
    "tile_position", "program_ndim",
})
