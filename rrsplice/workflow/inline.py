"""Put a native body's PTX into the patched module in place of its call.

A spliced kernel calls its native body through `call.uni` into another module, and that
call cannot be inlined by the linker: the body becomes a separate function whose ABI saves
and restores callee-saved registers at entry and exit, and the kernel keeps its own live
values across the call. When the body is available as PTX (`nvcc -rdc=true -ptx` of the
body rrsplice lifted), `inline_call` writes one module in which the call statement is
replaced by the body itself: its registers, labels and `.local` arrays renamed so they
cannot meet the kernel's, each argument read (`ld.param` of a parameter) a `mov` from the
value the caller stored, each result parameter a `.local` array of its size and alignment
(the body's `st.param` and the caller's `ld.param` of it become `st.local`/`ld.local` at the
same offsets, whatever widths each side uses: ptxas keeps such an array, indexed only by
constants, in registers), every `ret` a branch to the end. ptxas then sees one function,
as it saw the original kernel.

The rewrite is refused, by name and line, wherever it would have to guess: a parameter
used other than by a whole-width `ld.param` at offset 0, a result read at an offset the
body does not write, a name defined by both modules, several calls of the body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..ptx.diagnostic import register_codes
from ..ptx.emit import apply_spans
from ..ptx.errors import RRSpliceError
from ..ptx.model import Address, Function, Module, Statement, Symbol

__all__ = ["InlineError", "Inlined", "inline_call"]


register_codes(__name__, "error", {
    "cannot-inline": "`body inline` cannot put the body in place of its call without "
                     "guessing (several calls, a parameter used other than by ld.param/"
                     "st.param, a name both modules define, no such function)",
})


class InlineError(RRSpliceError):
    """A body that cannot be put in place of its call without guessing."""

    code = "cannot-inline"


@dataclass(frozen=True)
class Inlined:
    text: str              # the new module
    callee: str
    kernel: str            # the function the call was in
    line: int              # the call's line in the patched module
    statements: int        # the body's statements now in the kernel


_TOKEN = re.compile(r"[%$]?[A-Za-z_$][\w$]*")
_HEADER = re.compile(r"^[ \t]*\.(version|target|address_size)\b[^\n]*\n?", re.M)


def _where(module: Module | None, st) -> dict:
    return {"path": module.path if module is not None else None, "line": st.line,
            "column": getattr(st, "column", 1) or 1}


def _body_function(body: Module, callee: str | None, patched: Module) -> Function:
    defined = {f.name: f for f in body.functions if f.has_body and f.kind == ".func"}
    if callee is None:
        declared = [f.name for f in patched.functions if not f.has_body and f.name in defined]
        if len(declared) != 1:
            raise InlineError(
                f"the patched module declares {len(declared)} functions the body module "
                f"defines ({', '.join(sorted(declared)) or 'none'}); name one with --callee",
                path=patched.path)
        callee = declared[0]
    if callee not in defined:
        raise InlineError(f"the body module defines no .func {callee}", path=body.path)
    return defined[callee]


def _the_call(patched: Module, callee: str) -> tuple[Function, Statement]:
    calls = [(f, st) for f in patched.functions if f.has_body for st in f.statements
             if st.base == "call" and st.view.callee == callee]
    if len(calls) != 1:
        raise InlineError(f"{callee} is called {len(calls)} times in the patched module; "
                          "inlining takes exactly one call", path=patched.path)
    fn, st = calls[0]
    if st.guard is not None:
        raise InlineError(f"the call of {callee} is guarded ({st.text.strip()}); inlining "
                          "takes an unconditional call", **_where(patched, st))
    return fn, st


def _param_stores(fn: Function, call: Statement, names: set) -> dict:
    """name -> (statement, stored operand text, bits) of each `st.param [name+0], x` before
    the call in its block (the call's `.param` variables are that block's)."""
    found: dict = {}
    for st in fn.statements:
        if st is call:
            break
        if st.block is not call.block:
            continue
        if st.base == "st" and st.view.space == "param" and st.operands:
            addr = st.operands[0]
            if isinstance(addr, Address) and isinstance(addr.base, Symbol) \
                    and addr.base.name in names:
                if addr.offset != 0 or st.view.vector != 1 or addr.base.name in found:
                    raise InlineError(f"argument {addr.base.name} is stored other than once, "
                                      f"whole, at offset 0 ({st.text.strip()})",
                                      **_where(fn.module, st))
                found[addr.base.name] = (st, str(st.operands[1]), st.view.bits)
    return found


def _result_loads(fn: Function, call: Statement, names: set) -> list:
    """(statement, name, offset, bytes) of each `ld.param d, [name+off]` after the call."""
    found: list = []
    after = False
    for st in fn.statements:
        if st is call:
            after = True
            continue
        if after and st.block is call.block and st.base == "ld" and st.view.space == "param" and len(st.operands) == 2:
            addr = st.operands[1]
            if isinstance(addr, Address) and isinstance(addr.base, Symbol) \
                    and addr.base.name in names:
                found.append((st, addr.base.name, addr.offset,
                              st.view.vector * (st.view.bits or 8) // 8))
    return found


def _line_span(text: str, a: int, b: int) -> tuple[int, int]:
    """A statement's or declaration's text with its line's indentation and newline, to
    delete it without leaving a blank line."""
    while a > 0 and text[a - 1] in " \t":
        a -= 1
    if b < len(text) and text[b] == ";":
        b += 1
    while b < len(text) and text[b] in " \t":
        b += 1
    if b < len(text) and text[b] == "\n":
        b += 1
    return a, b


def _renamer(fn: Function, prefix: str):
    """A function renaming the body's own top-scope registers, `.local` arrays and labels."""
    top = fn.body.decls if fn.body is not None else []
    ranges = [d for d in top if d.space in (".reg", ".local") and d.count is not None]
    single = {d.name for d in top if d.space in (".reg", ".local")}    # with `%r` of %r<N>
    single |= {st.label for st in fn.statements if st.is_label}

    def rename(tok: str) -> str:
        if tok in single or any(d.declares(tok) for d in ranges if tok.startswith(d.name)):
            sigil = tok[0] if tok[0] in "%$" else ""
            return sigil + prefix + tok[len(sigil):]
        return tok

    def apply(text: str) -> str:
        return _TOKEN.sub(lambda m: rename(m.group(0)), text)
    return apply


def _pick_prefix(patched: Module, callee: str) -> str:
    base = f"rri_{re.sub(r'[^A-Za-z0-9_]', '_', callee)}_"
    n = 0
    prefix = base
    while prefix in patched.text:
        n += 1
        prefix = f"{base}{n}_"
    return prefix


def inline_call(patched: Module, body: Module, callee: str | None = None) -> Inlined:
    """The patched module with the one call of `callee` (default: the function the patched
    module declares and the body module defines) replaced by the body's PTX."""
    fn = _body_function(body, callee, patched)
    callee = fn.name
    kernel, call = _the_call(patched, callee)
    view = call.view
    args = [str(a) for a in view.call_args]
    rets = [str(r) for r in view.call_returns]
    if len(args) != len(fn.params) or len(rets) != len(fn.ret_params):
        raise InlineError(f"the call passes {len(args)} arguments and {len(rets)} results; "
                          f"{callee} takes {len(fn.params)} and returns {len(fn.ret_params)}",
                          **_where(patched, call))
    stores = _param_stores(kernel, call, set(args))
    missing = [a for a in args if a not in stores]
    if missing:
        raise InlineError(f"no st.param of argument {missing[0]} before the call",
                          **_where(patched, call))
    loads = _result_loads(kernel, call, set(rets))
    formal_arg = {p.name: stores[a] for p, a in zip(fn.params, args, strict=True)}
    formal_ret = {p.name: r for p, r in zip(fn.ret_params, rets, strict=True)}
    prefix = _pick_prefix(patched, callee)
    end_label = f"{prefix}end"
    result_array = {r: f"{prefix}ret_{r}" for r in rets}
    sizes = {formal_ret[p.name]: (p.byte_size, p.align or 1) for p in fn.ret_params}
    for st, name, off, n in loads:
        size = sizes[name][0]
        if size is None or off < 0 or off + n > size:
            raise InlineError(f"the caller reads {name}+{off} ({n} bytes) outside the "
                              f"{size}-byte result", **_where(patched, st))

    rename = _renamer(fn, prefix)
    # statement-level edits of the body: parameter reads, result writes, returns
    btext = body.text
    edits: list = []
    keep: dict = {}

    def hold(text: str) -> str:            # caller names that the renamer must not touch
        key = f"\x00{len(keep)}\x00"
        keep[key] = text
        return key
    for st in fn.statements:
        if st.is_label:
            continue
        guard = "" if st.guard is None else f"{st.guard} "
        mentioned = {o.base.name for o in st.operands if isinstance(o, Address)
                     and isinstance(o.base, Symbol)} | {o.name for o in st.operands
                                                       if isinstance(o, Symbol)}
        if st.base == "ret":
            edits.append((st.start, st.end, f"{guard}bra.uni {end_label};"))
        elif st.base == "ld" and st.view.space == "param" and mentioned & set(formal_arg):
            addr = st.operands[1]
            name = addr.base.name
            _, src, bits = formal_arg[name]
            if addr.offset != 0 or st.view.vector != 1 or st.view.bits != bits:
                raise InlineError(f"{callee} reads parameter {name} other than whole at "
                                  f"offset 0 ({st.text.strip()})", **_where(body, st))
            edits.append((st.start, st.end,
                          f"{guard}mov.b{bits} {st.operands[0]}, {hold(src)};"))
        elif st.base == "st" and st.view.space == "param" and mentioned & set(formal_ret):
            addr = st.operands[0]
            size = sizes[formal_ret[addr.base.name]][0]
            n = st.view.vector * (st.view.bits or 8) // 8
            if size is None or addr.offset < 0 or addr.offset + n > size:
                raise InlineError(f"{callee} writes {addr.base.name}+{addr.offset} outside "
                                  f"its result ({st.text.strip()})", **_where(body, st))
            edits.append((st.start, st.end, _to_local(
                st, body.text, addr.base.name, hold(result_array[formal_ret[addr.base.name]]))))
        elif mentioned & (set(formal_arg) | set(formal_ret)):
            raise InlineError(f"{callee} uses a parameter other than by ld.param/st.param "
                              f"({st.text.strip()})", **_where(body, st))
    assert fn.body is not None          # _body_function takes only defined functions
    inner = rename(apply_spans(btext, edits, fn.body.start + 1, fn.body.end - 1))
    for key, text in keep.items():
        inner = inner.replace(key, text)
    arrays = "".join(f".local .align {sizes[r][1]} .b8 {result_array[r]}[{sizes[r][0]}];\n\t"
                     for r in rets)
    block = (f"{arrays}{{\t// {callee} inlined from {body.path or 'the body module'}\n"
             f"{inner}\n}}\n{end_label}:\n")

    # the rest of the body module (its other functions and declarations), minus headers
    rest = _HEADER.sub("", btext[:fn.start] + btext[fn.end:]).strip("\n")
    _refuse_clashes(patched, body, fn)

    # caller edits: the call, its argument stores and declarations, the result loads and
    # declarations, the .extern declaration of the callee
    ptext = patched.text
    cut: list = [(call.start, call.end, block)]
    for st, _, _ in stores.values():
        cut.append((*_line_span(ptext, st.start, st.end), ""))
    for st, name, _, _ in loads:
        cut.append((st.start, st.end, _to_local(st, ptext, name, result_array[name])))
    for d in _param_decls(call, set(args) | set(rets)):
        cut.append((*_line_span(ptext, d.start, d.end), ""))
    decl = next(f for f in patched.functions if f.name == callee and not f.has_body)
    cut.append((*_line_span(ptext, decl.start, decl.end), ""))
    if rest:
        cut.append((kernel.start, kernel.start, rest + "\n\n"))
    text = _newer_version(apply_spans(ptext, cut), patched, body)
    return Inlined(text, callee, kernel.name, call.line, len(fn.statements))


def _to_local(st, text: str, name: str, array: str) -> str:
    """`st.param`/`ld.param` of the result parameter `name` as the same access of the
    `.local` array standing in for it."""
    t = text[st.start:st.end]
    t = re.sub(r"\b(ld|st)\.param\b", r"\1.local", t, count=1)
    return re.sub(r"\[\s*" + re.escape(name) + r"\b", "[" + array, t, count=1)


def _param_decls(call: Statement, names: set) -> list:
    """The call's argument and result `.param` declarations, in the call's block."""
    return [d for d in (call.block.decls if call.block is not None else [])
            if d.space == ".param" and d.name in names]


def _refuse_clashes(patched: Module, body: Module, fn: Function) -> None:
    ours = {d.name for d in patched.decls} | {f.name for f in patched.functions if f.has_body}
    theirs = {d.name for d in body.decls} | {f.name for f in body.functions
                                             if f.has_body and f is not fn}
    both = sorted(ours & theirs)
    if both:
        raise InlineError(f"both modules define {both[0]}; rename it in one of them",
                          path=body.path)


def _newer_version(text: str, patched: Module, body: Module) -> str:
    """The output's `.version` is the newer of the two: the body's PTX may use either."""
    def key(v):
        return tuple(int(x) for x in v.split(".")) if v else (0,)
    if key(body.version) > key(patched.version):
        text = re.sub(r"^\.version\s+\S+", f".version {body.version}", text, count=1, flags=re.M)
    return text
