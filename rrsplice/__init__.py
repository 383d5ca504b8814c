"""rrsplice: parse NVIDIA PTX, model statements and register liveness, and splice regions
of huge compiler-generated kernels into calls to native bodies."""

from .emit import Edit, emit
from .errors import ParseError, RRSpliceError
from .model import (Address, Block, Decl, Function, Guard, Imm, LabelledDirective, Module,
                    Negated, Param, ParenList, PredPair, Reg, Sink, Statement, Symbol, Vector)
from .parse import parse

__version__ = "0.1.0"

__all__ = [
    "parse", "emit", "Edit", "ParseError", "RRSpliceError", "Module", "Function", "Block",
    "Statement", "LabelledDirective", "Decl", "Param", "Guard", "Reg", "Negated", "Imm", "Symbol", "Vector",
    "Address", "PredPair", "ParenList", "Sink", "__version__",
]
