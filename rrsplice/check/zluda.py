"""Lints of the ``zluda`` profile: constructs ZLUDA rejects or cannot link to a native body.

One function per construct, registered with :func:`profiles.lint`; a severity for
``ptxas`` is given only where the construct also matters to NVIDIA's tools.
"""

from __future__ import annotations

import re

from ..ptx.diagnostic import Diagnostic, at
from .profiles import lint
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
            yield Diagnostic(message=f"{label} line {ln} has an empty `()` {what} list: ZLUDA "
                             "rejects it (write it without the `()`)")


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
            yield Diagnostic(message=f"extern {name} declares {len(f.ret_params)} `.param` "
                             f"return parameter(s) ({', '.join(p.name for p in f.ret_params)}): "
                             "ZLUDA lowers them to the LLVM return value, which a native C++/HIP "
                             "body cannot produce; return through a .shared scratch array "
                             "instead (`rrsplice recipe new --abi scratch`)")
    from ..ptx.model import ParenList
    from .source import _short
    for st in sp.calls:
        ops = st.operands
        if len(ops) > 1 and isinstance(ops[0], ParenList) and ops[0].items:
            yield Diagnostic(message=f"the call takes {len(ops[0].items)} return value(s) "
                             f"from {st.view.callee or 'its callee'}: `{_short(st.text)}`; ZLUDA "
                             "cannot link that to a native body (return through memory)")


# ---------------------------------------------------------------- statement rewrites

_ROUNDING = {"rz", "rm", "rp"}
_FLOAT_TYPES = {"f16", "f16x2", "bf16", "bf16x2", "f32", "f64"}
_FLOAT_ARITH = {"add", "sub", "mul", "fma", "mad", "div", "sqrt", "rcp", "cvt"}


def _rewritten(rep) -> set:
    """ids of the statements the recipe's rewrites replace or remove."""
    plan = rep.target.rewrites if rep.target is not None else None
    out = set()
    for r in (plan.replacements if plan is not None else ()):
        out.add(id(r.statement))
        out.update(id(s) for s in r.folded)
    return out


def _output_functions(rep) -> list:
    """The functions whose statements the output keeps: the rewrites' functions, else the
    recipe's own function."""
    t = rep.target
    if t is None:
        return []
    if t.rewrites is not None:
        return list(t.rewrites.functions)
    return [t.fn] if t.fn is not None and t.fn.has_body else []


def _kept(rep, st) -> bool:
    """Does the output keep `st` (not inside the cut, not after a truncation)?"""
    t = rep.target
    if t.kind == "region" and t.first_line is not None:
        return not (t.first_line <= st.line <= t.last_line)
    if t.kind == "truncate" and t.first_line is not None:
        return st.end_line <= t.first_line
    if t.kind == "body":
        return st.function is not t.fn
    return True


@lint("sust-left", zluda="warning")
def _sust_left(rep):
    """The recipe asks for surface-store rewrites (`sust=`), yet surface stores stay: a kind
    not selected, or a shape the rewrite does not know. ZLUDA's generic formatted surface
    store is what the rewrite exists to avoid."""
    t = rep.target
    if t is None or t.rewrites is None or not t.recipe.sust:
        return
    for kind, st, why in t.rewrites.skipped:
        if kind.startswith("sust") and _kept(rep, st):
            yield Diagnostic(message=f"{st.sid} `{' '.join(st.text.split())}` stays a surface "
                             f"store ({why}); ZLUDA's generic surface store is slow", **at(st))


@lint("explicit-rounding", zluda="warning")
def _explicit_rounding(rep):
    """An explicit `.rz`/`.rm`/`.rp` on float arithmetic forces ZLUDA into a slow strict
    floating-point mode for the whole kernel (`rz_round=True` removes roundf's)."""
    if rep.target is None:
        return
    gone = _rewritten(rep)
    for fn in _output_functions(rep):
        for st in fn.statements:
            if st.is_label or id(st) in gone or st.base not in _FLOAT_ARITH:
                continue
            mods = set(st.modifiers)
            if mods & _ROUNDING and mods & _FLOAT_TYPES and _kept(rep, st):
                mode = sorted(mods & _ROUNDING)[0]
                hint = (" (the roundf idiom: rz_round=True rewrites it)"
                        if st.base == "add" and mode == "rz" else "")
                yield Diagnostic(message=f"{fn.name} {st.sid} `{' '.join(st.text.split())}` has "
                                 f"an explicit .{mode} rounding mode{hint}", **at(st))


_CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([A-Za-z_$][\w$]*)")


@lint("undeclared-call", zluda="error", ptxas="error")
def _undeclared_call(rep):
    """A call to a function the module does not declare before the calling function: ZLUDA
    drops the whole kernel (ptxas rejects it). Checked for the module's own calls and the
    calls a statement rewrite writes (a recipe rule without its `extern=`)."""
    t = rep.target
    if t is None:
        return
    m = t.module
    first_line: dict[str, int] = {}
    for f in m.functions:
        first_line.setdefault(f.name, f.line)
    for fn in _output_functions(rep):
        for st in fn.statements:
            if st.is_label or st.base != "call" or not _kept(rep, st):
                continue
            callee = st.view.callee
            if callee is not None and first_line.get(callee, fn.line + 1) > fn.line:
                yield Diagnostic(message=f"{fn.name} {st.sid} calls {callee}, which the module "
                                 "does not declare before it", **at(st))
    plan = t.rewrites
    if plan is None:
        return
    declared = set(first_line)
    for text in plan.declarations.values():
        declared.update(re.findall(r"\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)", text))
    for r in plan.replacements:
        for callee in _CALL.findall(r.text):
            if callee not in declared:
                yield Diagnostic(message=f"the {r.kind} rewrite of {r.statement.sid} calls "
                                 f"{callee}, which neither the module nor the rule's extern= "
                                 "declares", **at(r.statement))
