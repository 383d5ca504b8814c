"""rrsplice: parse NVIDIA PTX, model statements and register liveness, and splice regions
of huge compiler-generated kernels into calls to native bodies.

The public names below are imported on first use (PEP 562): `import rrsplice` stays cheap,
and a command answered from the cache never loads Lark or the model classes it does not
need.
"""

__version__ = "0.1.0"

# `emit` is both a submodule and a function: bind the function now, or the first import of
# the submodule (by any other module) would leave the package attribute naming the module.
from .ptx.emit import Edit, emit  # noqa: E402

# public name -> the submodule that defines it
_EXPORTS = {
    "parse": "ptx.parser",
    "emit": "ptx.emit", "Edit": "ptx.emit",
    "ParseError": "ptx.errors", "RRSpliceError": "ptx.errors",
    **{name: "ptx.model" for name in (
        "Address", "Block", "Decl", "Element", "Function", "Guard", "Imm", "LabelledDirective", "Module",
        "Negated", "Offset", "Param", "ParenList", "PredPair", "Reg", "Sink", "Statement", "Symbol",
        "Vector")},
}

__all__ = sorted(_EXPORTS) + ["__version__"]
_EAGER = (Edit, emit)  # bound above on purpose (see the comment on the import)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
