"""C++ identifiers for PTX names: registers `v_...`, labels `L_...`, parameters `a_...`,
callees as they are when they are already plain C identifiers.

The mapping is injective (every character outside [A-Za-z0-9_] is written `_x<hex>_`, and
so is a `_` that a literal `x` follows, so `_x` always starts an escape), and the prefixes keep
every generated name apart from C++ keywords and from the header's `rr_` names, so no PTX name
can collide with or inject into the generated C++.
"""

from __future__ import annotations

import re
from functools import cache

_PLAIN = re.compile(r"[A-Za-z0-9]")
_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# words a callee name must not be (it is written as it is)
_RESERVED = frozenset("""alignas alignof and asm auto bool break case catch char class const
constexpr continue decltype default delete do double else enum explicit export extern false
float for friend goto if inline int long mutable namespace new noexcept not nullptr operator
or private protected public register return short signed sizeof static struct switch
template this throw true try typedef typeid typename union unsigned using virtual void
volatile while xor""".split())


@cache
def _escape(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if _PLAIN.match(ch) or (ch == "_" and name[i + 1:i + 2] != "x"):
            out.append(ch)
        else:
            out.append(f"_x{ord(ch):x}_")
    return "".join(out)


@cache
def register(key: str) -> str:
    """`%r5` -> `v_r5`; a scoped register's key `low@B3` -> `v_low_x40_B3`."""
    return "v_" + _escape(key.lstrip("%"))


def label(name: str) -> str:
    """`$L__BB1_2` -> `L__x24_L__BB1_2`."""
    return "L_" + _escape(name)


def param(name: str) -> str:
    return "a_" + _escape(name)


def callee(name: str) -> str:
    """A function name as C++ sees it: it must already be a plain identifier (it is the
    symbol the PTX links against), and not a keyword or a header name."""
    if not _C_IDENT.match(name) or name in _RESERVED or name.startswith("rr_"):
        raise ValueError(f"function name {name!r} is not a C identifier the body can define")
    return name
