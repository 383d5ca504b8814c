"""Checks of the splice text itself: it parses, declares what it uses, calls a declared
callee with matching arguments, and has not been applied already."""

from __future__ import annotations

import re

from ..ptx.isa import type_bytes
from ..ptx.model import Function, ParenList, Reg, Statement, Symbol
from ..ptx.parser import blank_comments
from ..ptx.scopes import bind_outer, register_decl, shadows_at
from .report import Report
from .source import _short
from .text import SpliceText, parse_splice_text, special_operand_uses


def _check_splice_text(rep: Report, text: str | None, extern: str | None,
                       fn: Function, what: str, rng=None, closes: int = 0,
                       need_call: bool = True, record: bool = True) -> SpliceText | None:
    """The checks of one splice text and its extern. `record=False` (a rewrite rule's
    replacement) leaves the report's splice facts alone: they describe the form's own text."""
    if text is None:
        return None
    sp = parse_splice_text(text, extern, what=what, closes=closes)
    if record:
        rep.splice = sp
    if sp.error:
        rep.add("error", "call-parse", sp.error)
        return sp
    if sp.fn is not None and rng is not None:
        bind_outer(sp.fn, shadows_at(fn, fn.statement(rng.first)))
    for why in sp.extern_problems:
        rep.add("error", "extern-text", why)
    if sp.escape:
        rep.add("error", "splice-escapes", sp.escape)
    # registers: declared by the text itself, or by the function; special ones are fine
    passed, returned, undeclared = [], [], []
    # membership in sets beside the ordered lists: linear in the text's registers
    in_passed, in_returned, in_undeclared = set(), set(), set()
    from ..analysis.semantics import def_use, is_pseudo
    for st in sp.statements:
        du = def_use(st)
        for r in du.uses:
            if is_pseudo(r) or sp.local_decl(r) is not None:
                continue
            if register_decl(fn, r) is None:
                undeclared.append((st, r))
                in_undeclared.add((id(st), r))
            elif r not in in_returned and r not in in_passed:
                passed.append(r)
                in_passed.add(r)
        for r in du.defs:
            if is_pseudo(r) or sp.local_decl(r) is not None:
                continue
            if register_decl(fn, r) is None:
                undeclared.append((st, r))
                in_undeclared.add((id(st), r))
            elif r not in in_returned:
                returned.append(r)
                in_returned.add(r)
        for r in st.registers():
            if (not r.special and sp.local_decl(r.name) is None
                    and register_decl(fn, r.name) is None
                    and (id(st), r.name) not in in_undeclared):
                undeclared.append((st, r.name))
                in_undeclared.add((id(st), r.name))
    seen = set()
    for st, r in undeclared:
        if r in seen:
            continue
        seen.add(r)
        rep.add("error", "undeclared", f"{what} uses {r}, declared neither in the text nor "
                f"in {fn.name}: `{st.text.strip()}`", line=None, registers=[r])
    for st, r in special_operand_uses(sp.statements):
        rep.add("warning", "special-operand", f"{what} reads special register {r} as an "
                f"operand of `{st.opcode}`: ptxas rejects this (\"Special register argument "
                f"not allowed\"), ZLUDA accepts it; read it with `mov.u32 %r, {r}` first: "
                f"`{st.text.strip()}`", registers=[r])
    _check_vector_moves(rep, sp, fn, what)
    if record:
        rep.facts.passed = passed
        rep.facts.returned = returned
    calls = sp.calls
    if not calls and need_call:
        rep.add("warning", "call-args", f"{what} holds no call")
    callees = []
    for st in calls:
        _check_call(rep, st, sp, fn, what)
        callee = st.view.callee
        if callee:
            callees.append(callee)
    for name, f in sp.externs.items():
        if len(f.ret_params) > 1:
            rep.add("error", "call-args", f"extern {name} declares {len(f.ret_params)} return "
                    "parameters: ptxas accepts one (return several values as one "
                    "`.param .align 8 .b8 ret[N]` array)")
        if f.has_body:
            rep.add("warning", "call-args", f"the extern text defines {name} with a body")
    if not record:
        return sp
    rep.facts.callees = callees
    callee_const = rep.recipe.const("CALLEE")
    if isinstance(callee_const, str) and callees and callee_const not in callees:
        rep.add("warning", "call-args", f"CALLEE is {callee_const} but the call text calls "
                + ", ".join(callees))
    return sp


def _check_vector_moves(rep: Report, sp: SpliceText, fn: Function, what: str) -> None:
    """A load or store of a whole vector register (`.reg .v2 .b32 %v`) must say its width
    (`st.param.v2.b32 [p], %v`): ptxas rejects `st.param.b32 [p], %v` ("Argument vector
    size mismatch")."""
    for st in sp.statements:
        if st.base not in ("ld", "ldu", "st") or len(st.operands) < 2:
            continue
        data = st.operands[1] if st.base == "st" else st.operands[0]
        if type(data) is not Reg or data.special:
            continue
        d = sp.local_decl(data.name) or register_decl(fn, data.name)
        want = d.vector.lstrip(".") if d is not None and d.vector else None
        have = next((x for x in st.modifiers if x in ("v2", "v4", "v8")), None)
        if want != have:
            rep.add("error", "call-types", f"{what} moves {data.name}, "
                    + (f"a .{want} vector register, " if want else "a scalar register, ")
                    + f"with `{st.opcode}`"
                    + (f": ptxas rejects it (\"Argument vector size mismatch\"); write "
                       f"`.{want}` into the opcode or move its elements" if want else
                       f": ptxas rejects a .{have} move of one register"),
                    registers=[data.name])


def _size(decl_or_param) -> int | None:
    n = decl_or_param.byte_size
    if n is not None:
        return n
    ty = (decl_or_param.type or "").lstrip(".")
    return type_bytes(ty)


def _check_call(rep: Report, st: Statement, sp: SpliceText, fn: Function, what: str) -> None:
    m = rep.target.module
    callee = st.view.callee
    if callee is None:
        rep.add("warning", "call-args", f"{what}: indirect call `{st.text.strip()}` cannot be "
                "checked against a declaration")
        return
    ops = st.operands
    rets = ops[0] if len(ops) > 1 and isinstance(ops[0], ParenList) else None
    args = None
    i = 2 if rets is not None else 1
    if i < len(ops) and isinstance(ops[i], ParenList):
        args = ops[i]
    decl = sp.externs.get(callee)
    where = "the extern text"
    if decl is None:
        mod_decls = [f for f in m.functions if f.name == callee]
        if not mod_decls:
            rep.add("error", "callee-order", f"{what} calls {callee}, which neither the "
                    f"recipe's extern text nor {rep.target.path.name} declares")
            return
        decl = mod_decls[0]
        where = f"line {decl.line}"
        if decl.line > fn.line:
            rep.add("error", "callee-order", f"{callee} is declared at line {decl.line}, after "
                    f"its call in {fn.name} (line {fn.line}); declare it before the first "
                    "function that calls it")
    params = decl.params
    n_args = len(args.items) if args is not None else 0
    if n_args != len(params):
        rep.add("error", "call-args", f"{what} passes {n_args} argument(s) to {callee}, whose "
                f"declaration ({where}) has {len(params)}: `{_short(st.text)}`")
    for k, (a, p) in enumerate(zip(args.items if args else (), params, strict=False)):
        _check_arg(rep, sp, fn, m, callee, k, a, p, what)
    n_rets = len(rets.items) if rets is not None else 0
    if n_rets != len(decl.ret_params):
        rep.add("error", "call-args", f"{what} takes {n_rets} return value(s) from {callee}, "
                f"whose declaration ({where}) returns {len(decl.ret_params)}")
    for k, (a, p) in enumerate(zip(rets.items if rets else (), decl.ret_params, strict=False)):
        _check_arg(rep, sp, fn, m, callee, k, a, p, what, ret=True)


def _check_arg(rep, sp, fn, m, callee, k, a, p, what, ret=False) -> None:
    kind = "return value" if ret else "argument"
    if isinstance(a, Symbol):
        d = sp.local_decl(a.name)
        if d is None or d.space != ".param":
            rep.add("error", "call-args", f"{what}: {kind} {k} of {callee} is {a.name}, "
                    "which the text does not declare as a .param")
            return
        got = _size(d)
    elif isinstance(a, Reg):
        d = sp.local_decl(a.name) or register_decl(fn, a.name)
        got = _size(d) if d is not None else None
    else:
        return
    want = _size(p)
    if got is not None and want is not None and got != want:
        rep.add("error", "call-args", f"{what}: {kind} {k} of {callee} ({a}) is {got} bytes, "
                f"the declaration's {p.name} is {want} bytes")
    elif (isinstance(a, Symbol) and d.type and p.type and d.type != p.type
          and not (d.type[1] in "bus" and p.type[1] in "bus")):
        rep.add("warning", "call-args", f"{what}: {kind} {k} of {callee} ({a}) is {d.type}, "
                f"the declaration's {p.name} is {p.type}")


_EXTERN_NAME = re.compile(r"\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$%][\w$]*)")
_CALL_NAME = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([A-Za-z_$][\w$]*)")


def _check_applied(rep: Report) -> None:
    """Refuse a second application: the module already declares the recipe's extern
    function, or already calls its callee."""
    t = rep.target
    m = t.module
    declared = set(_EXTERN_NAME.findall(blank_comments(t.extern or "")))
    called = set(_CALL_NAME.findall(blank_comments(t.text or "")))
    callee = t.recipe.const("CALLEE")
    if isinstance(callee, str):
        called.add(callee)
    for f in m.functions:
        if f.name in declared:
            rep.add("error", "applied", f"{t.path.name} already declares {f.name} (line "
                    f"{f.line}): the recipe was applied already (applying twice is "
                    "refused)", line=f.line)
    names = called | declared
    if not names:
        return
    for f in m.functions:
        if not f.has_body:
            continue
        for st in f.statements:
            if st.base == "call" and st.view.callee in names:
                rep.add("error", "applied", f"{f.name} already calls {st.view.callee}: the recipe "
                        "was applied already (applying twice is refused)", st=st)
                break
