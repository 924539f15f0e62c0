"""NKI names nklab knows of but does not implement: using one raises
NotImplementedError naming it and the line that used it."""
import sys


def module_getattr(prefix, names):
    def __getattr__(name):
        if name in names:
            f = sys._getframe(1)
            raise NotImplementedError(f"{f.f_code.co_filename}:{f.f_lineno}: {prefix}.{name} is not implemented "
                                      f"by nklab")
        raise AttributeError(f"module {prefix!r} has no attribute {name!r}")
    return __getattr__
