"""Lints of the ``zluda`` profile: constructs ZLUDA rejects or cannot link to a native body.

One function per construct, registered with :func:`profiles.lint`; a severity for
``ptxas`` is given only where the construct also matters to NVIDIA's tools.
"""

from __future__ import annotations

from .profiles import Hit, lint
from .text import empty_arg_lists


def _texts(rep):
    """(label, text) of the splice text and the extern text the recipe adds."""
    t = rep.target
    if t is None:
        return []
    out = []
    if t.text:
        out.append(("call text" if rep.recipe.form == "cut_call" else "splice text", t.text))
    if t.extern:
        out.append(("extern", t.extern))
    return out


@lint("empty-args", zluda="error", ptxas="warning")
def _empty_args(rep):
    """ZLUDA rejects an empty `()` argument or parameter list (ptxas accepts it)."""
    for label, text in _texts(rep):
        for ln in empty_arg_lists(text):
            what = "parameter" if label == "extern" else "argument"
            yield Hit(f"{label} line {ln} has an empty `()` {what} list: ZLUDA rejects it "
                      "(write it without the `()`)")


@lint("param-return", zluda="error")
def _param_return(rep):
    """ZLUDA lowers a call's return parameters to the callee's LLVM return value, which a
    C++/HIP body cannot produce (a large struct return becomes an sret pointer: another
    signature); results must come back through memory (`recipe new --abi scratch`)."""
    sp = rep.splice
    if sp is None or sp.error:
        return
    for name, f in sorted(sp.externs.items()):
        if f.ret_params:
            yield Hit(f"extern {name} declares {len(f.ret_params)} `.param` return "
                      f"parameter(s) ({', '.join(p.name for p in f.ret_params)}): ZLUDA lowers "
                      "them to the LLVM return value, which a native C++/HIP body cannot "
                      "produce; return through a .shared scratch array instead "
                      "(`rrsplice recipe new --abi scratch`)")
    from .calls import _callee
    from .source import _short
    from ..model import ParenList
    for st in sp.calls:
        ops = st.operands
        if len(ops) > 1 and isinstance(ops[0], ParenList) and ops[0].items:
            yield Hit(f"the call takes {len(ops[0].items)} return value(s) from "
                      f"{_callee(st) or 'its callee'}: `{_short(st.text)}`; ZLUDA cannot "
                      "link that to a native body (return through memory)")
