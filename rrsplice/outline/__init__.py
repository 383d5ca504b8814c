"""Outline a cut region into the body of the callee its splice calls.

`outline(module, fn, rng, call_text, extern_text)` writes a PTX module that defines the
callee named by `extern_text`, with exactly that signature, whose body is the region's own
statements copied verbatim by source span (labels, nested blocks, comments and all). Around
that copy the body

* loads every parameter into the register the call text stored into it (the region then
  finds its live-in values under their usual names);
* recomputes registers live into the region that the call does not pass but that follow
  from passed values (B fragments loaded from the passed weight image at constant
  offsets, lane and thread indices): the defining statements are copied from the kernel;
* rewrites what a `.func` cannot see: a reference to an entry-scoped `.shared` array
  becomes the passed register holding that array's address; a read of a kernel parameter
  becomes a copy of the passed register that holds the same value (else it is refused);
* delivers the values the call text reads back the way it reads them: a
  `ld.shared [addr+off]` after the call becomes a `st.shared [addr+off]` at the end of the
  body, with `addr` computed from the same passed values (special registers are read with
  `mov` first, since ptxas accepts them only there); a `ld.param [retval+off]` becomes a
  `st.param [func_retval+off]`.

Everything the body cannot be given is an `OutlineError` that names the register, the
statement and the line.

The stages live in their own modules: `callsite` reads the call text, `region` finds the
region's span and live-ins, `rewrites` holds the region's rewrites as statement rules
(rrsplice.rewrite's protocol, run by its planner together with the recipe's own rules),
`values` the copies taken before the region, `recompute` derives what the call does not
pass, `exits` and `delivery` write the exit code and the read-back stores, `assemble`
writes the module text, `body` runs these steps in order (`context` is what they all
read), `from_recipe` starts from a recipe. This package re-exports the public names.
"""

from __future__ import annotations

from ..ptx.model import Function, Module
from ..ptx.select import StatementRange
from .body import Outline, build_outline
from .callsite import CallSite, ParamValue, ReadBack, parse_call
from .common import OutlineError
from .from_recipe import outline_recipe
from .region import region_needs, region_span

__all__ = ["CallSite", "Outline", "OutlineError", "ParamValue", "ReadBack", "build_outline",
           "outline", "outline_recipe", "parse_call", "region_needs", "region_span"]


def outline(module: Module, fn: Function, rng: StatementRange, call_text: str,
            extern_text: str, *, lines: tuple | None = None) -> bytes:
    """The PTX module (bytes) defining the callee of `extern_text` as region `rng` of `fn`."""
    return build_outline(module, fn, rng, call_text, extern_text, lines=lines).ptx
