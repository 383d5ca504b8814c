"""Splice text (call, insert, tail, stub, debug block) parsed in a wrapper module, so
the checks can read its statements, registers and extern declarations."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ptx.errors import ParseError
from ..ptx.model import Function, Module
from ..ptx.parser import blank_comments, parse_bytes
from ..ptx.scopes import source_name

PROBE = "__rrsplice_probe"
# the module header a recipe's snippets (call text, extern) are parsed under
SNIPPET_HEADER = ".version 8.7\n.target sm_89\n.address_size 64\n"


@dataclass
class SpliceText:
    """Splice text (a call, a debug block, ...) parsed inside a minimal module:
    ``.version``, the ``extern`` text, then one entry whose body is the text."""
    text: str
    extern: str | None
    module: Module | None = None
    fn: Function | None = None
    externs: dict = field(default_factory=dict)     # name -> Function (declaration)
    error: str | None = None
    error_line: int | None = None
    escape: str | None = None    # why the text does not stay inside its function
    # the text's declarations, listed once: walking the body per register looked up was
    # quadratic in a debug block storing thousands of registers
    _decls: list | None = field(default=None, repr=False, compare=False)
    _decl_of: dict = field(default_factory=dict, repr=False, compare=False)
    extern_problems: list = field(default_factory=list)  # what the extern may not hold
    body_first: int = field(default=0, repr=False, compare=False)  # module line of text's line 1

    @property
    def statements(self) -> list:
        return self.fn.statements if self.fn is not None else []

    @property
    def calls(self) -> list:
        return [st for st in self.statements if st.base == "call"]

    def local_decl(self, name: str):
        """The text's own declaration of register `name` (a name or a scoped key)."""
        if self.fn is None:
            return None
        name = source_name(name)
        if name in self._decl_of:
            return self._decl_of[name]
        if self._decls is None:
            self._decls = list(self.fn.decls())
        found = next((d for d in self._decls if d.declares(name)), None)
        self._decl_of[name] = found
        return found


def wrap_snippet(text: str, extern: str | None = None, *, header: str = SNIPPET_HEADER,
                 opener: str | None = None, closes: int = 0) -> tuple:
    """(source, head, body_first): `text` made a whole module, so that the one parser reads
    recipe snippets exactly as it reads kernels: `header`, the `extern` declarations
    (`head` is these two), then a function (`opener`: by default the probe entry) whose body
    is `text`, closed unless the text closes it itself. `body_first` is the module line of
    the text's first line, to turn parse positions back into the snippet's own lines."""
    ext = extern or ""
    if ext and not ext.endswith("\n"):
        ext += "\n"
    head = header + ext
    if opener is None:
        opener = f".visible .entry {PROBE}(\n\t.param .u64 {PROBE}_param_0\n)\n{{\n"
    body_first = head.count("\n") + opener.count("\n") + 1
    closing = "\n" + "}\n" * max(0, 1 - closes)
    return head + opener + text + closing, head, body_first


def parse_splice_text(text: str, extern: str | None = None, *, what: str = "call text",
                      closes: int = 0) -> SpliceText:
    """Parse `text` (and `extern`) with rrsplice.parse in a wrapper module. `closes` is how
    many enclosing braces the text itself closes (a legacy tail that ends the function)."""
    st = SpliceText(text=text, extern=extern)
    for part, label in ((text, what), (extern or "", "extern text")):
        try:
            part.encode("utf-8")
        except UnicodeEncodeError as exc:
            st.error = (f"{label} is not valid text: character {exc.start} is "
                        f"{ascii(part[exc.start])} ({exc.reason})")
            st.error_line = part.count("\n", 0, exc.start) + 1
            return st
    src, head, body_first = wrap_snippet(text, extern, closes=closes)
    if extern:
        try:
            em = parse_bytes((head).encode("utf-8"), "<extern>")
        except ParseError as exc:
            ln = exc.line - SNIPPET_HEADER.count("\n")
            st.error = f"extern text does not parse: line {ln}: {exc.message}"
            st.error_line = ln
            return st
        for f in em.functions:
            st.externs[f.name] = f
        st.extern_problems = _extern_problems(em)
    try:
        m = parse_bytes(src.encode("utf-8"), f"<{what}>")
    except ParseError as exc:
        ln = exc.line - body_first + 1
        st.error = f"{what} does not parse: line {ln}: {exc.message}"
        if exc.expected:
            st.error += " (expected " + ", ".join(exc.expected[:6]) + ")"
        st.error_line = ln
        return st
    st.module = m
    for f in m.functions:
        if f.name == PROBE:
            st.fn = f
    st.body_first = body_first
    if closes == 0:
        st.escape = _escape(m, src, head, what)
    return st


def _extern_problems(em: Module) -> list:
    """What an extern text (declarations added at the module's top level) may not hold:
    module headers (a second `.version`/`.target` changes how ptxas reads the rest of the
    module) and kernels (`.entry`: a new kernel is not a declaration)."""
    own = SNIPPET_HEADER.count("\n")
    out = [f"extern text line {line - own}: `{d} {v}` is a module header; an extern holds "
           "declarations only" for d, v, line in em.headers if line > own]
    out += [f"extern text line {f.line - own}: `.entry {f.name}` is a kernel; an extern "
            "holds declarations only" for f in em.functions if f.is_entry]
    return out


def _escape(m: Module, src: str, head: str, what: str) -> str | None:
    """Why text parsed as the body of the probe entry does not stay inside it (it closes
    the function's brace, or opens a new function or declaration at top level), or None.
    Spliced in, such text would move the rest of the kernel into another function."""
    opener_line = head.count("\n") + 1
    own = [f for f in m.functions if f.line >= opener_line]
    extra_decls = [d for d in m.decls if getattr(d, "line", opener_line) >= opener_line]
    probe = own[0] if own else None
    if (len(own) == 1 and probe is not None and probe.name == PROBE and probe.body is not None
            and probe.body.end == len(src) - 1 and not extra_decls
            and not any(line >= opener_line for _k, _t, line in m.directives)):
        return None
    body = probe.body if probe is not None else None
    ln = (m.text.count("\n", 0, body.end) - opener_line - 2) if body is not None else 1
    names = [f.name for f in own[1:]]
    return (f"{what} closes the function's body (line {max(ln, 1)})"
            + (f" and opens {', '.join(names)} at top level" if names else "")
            + ": spliced in, it would move the rest of the function out of it; keep the "
            "text inside the function")


def empty_arg_lists(text: str) -> list[int]:
    """1-based lines of `text` holding an empty `()` (ZLUDA rejects it)."""
    clean = blank_comments(text)
    out = []
    for m in re.finditer(r"\(\s*\)", clean):
        out.append(clean.count("\n", 0, m.start()) + 1)
    return out


def special_operand_uses(statements) -> list:
    """(statement, special register) for special registers read by anything but `mov`."""
    out = []
    for st in statements:
        if st.is_label or st.base == "mov":
            continue
        for r in st.registers():
            if r.special:
                out.append((st, r.name))
    return out
