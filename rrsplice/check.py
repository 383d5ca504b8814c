"""`rrsplice check`: verify a recipe against its module before anything is written.

Every finding has a severity (``error`` fails the check, ``warning`` is suspicious but legal,
``info`` states a fact), a stable code, a message, and where possible the statement, physical
line and registers involved. Codes:

==================  ==========================================================================
code                what
==================  ==========================================================================
cut-range           the cut's lines lie in one function body, on statement boundaries; the
                    ``sA-sB`` range they map to (info)
cut-block           the cut opens or closes a ``{ }`` block it does not also close/open
cut-decl            the cut removes a declaration (warning)
cut-text            ``cut_check`` / ``delete_check`` text not found on the line it names
live-in             a register live into the region that is neither passed to the call nor
                    derivable from a passed value (error); derivable ones are listed (info)
passed-unused       a register the call text passes that is not live into the region (warning)
live-out            a register live out of the region that the splice text does not write back
mma-pair            the classic half pair: only one register of an mma ``{d0, d1}`` D list is
                    written back
clobber             the splice text writes a register whose value is live across the region
call-parse          the call (or ``extern``) text does not parse
call-args           argument count or types differ from the callee's declaration; more than
                    one return parameter
callee-order        the callee is not declared before the call
empty-args          an empty ``()`` argument list (ZLUDA rejects it)
undeclared          a register the splice text uses is declared neither by it nor the function
special-operand     a special register (``%laneid``) as an operand of an instruction other than
                    ``mov``: ptxas rejects it, ZLUDA accepts it (warning)
label-entry         a label inside the region is targeted from outside it
branch-exit         a branch inside the region leaves it (other than falling through)
control             ``bar``/``ret``/``exit``/``trap`` inside the region (warning)
scratch-size        ``stride x 32`` bytes do not fit in the scratch array, or returns overlap
scratch-live        the scratch array holds a value live across the region
scratch-race        the block may run several warps, the kernel also uses the scratch array,
                    and the call text has no block barrier after its scratch reads: an error
                    when the return slots provably overlap bytes other warps access (for every
                    block shape the entry allows), a warning when that cannot be proven or the
                    slots are per lane (the seed's convention)
shared-base         the region names a .shared array whose address the call does not pass
                    (a separate .func cannot name the entry's array)
scratch             facts about the scratch array: last access before, first after (info)
applied             the callee is already declared or called: applying twice is refused
entry               the recipe names another entry than the one its lines fall into
stage-line          a debug stage's line does not end a statement of a function body
stage-undefined     a debug-stage register is not defined on every path to its line
stage-name          a stage name is not qualified by this recipe's layer
==================  ==========================================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .errors import ParseError, RRSpliceError
from .model import Address, Function, Module, ParenList, Reg, Statement, Symbol
from .parser import parse_bytes
from .recipe import Recipe, RecipeError, load_recipe, resolve_module
from .select import SelectionError, StatementRange, lines_to_range

SEVERITIES = ("error", "warning", "info")


class CheckFailed(RRSpliceError):
    """`apply` refused to write: the recipe has errors."""

    def __init__(self, report: "Report"):
        self.report = report
        errs = report.errors
        lines = [f"{report.recipe.path}: {len(errs)} error(s); nothing written"]
        lines += ["  " + f.render() for f in errs[:20]]
        if len(errs) > 20:
            lines.append(f"  ... and {len(errs) - 20} more")
        super().__init__("\n".join(lines))

    def to_json(self) -> dict:
        return {"message": "check failed; nothing written", "report": self.report.to_json()}


@dataclass
class Finding:
    severity: str
    code: str
    message: str
    statement: Optional[str] = None
    line: Optional[int] = None
    registers: list = field(default_factory=list)

    def render(self) -> str:
        where = ", ".join(x for x in (self.statement, f"line {self.line}" if self.line else None)
                          if x)
        regs = (" [" + " ".join(self.registers[:12])
                + (f" +{len(self.registers) - 12}" if len(self.registers) > 12 else "") + "]"
                ) if self.registers else ""
        return f"{self.severity}: {self.code}: " + (f"{where}: " if where else "") \
            + self.message + regs

    def to_json(self) -> dict:
        return {"severity": self.severity, "code": self.code, "message": self.message,
                "statement": self.statement, "line": self.line,
                "registers": list(self.registers)}


# ------------------------------------------------------------------ the splice text

PROBE = "__rrsplice_probe"
_HEADER = ".version 8.7\n.target sm_89\n.address_size 64\n"


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


@dataclass
class SpliceText:
    """Splice text (a call, a debug block, ...) parsed inside a minimal module:
    ``.version``, the ``extern`` text, then one entry whose body is the text."""
    text: str
    extern: Optional[str]
    module: Optional[Module] = None
    fn: Optional[Function] = None
    externs: dict = field(default_factory=dict)     # name -> Function (declaration)
    error: Optional[str] = None
    error_line: Optional[int] = None

    @property
    def statements(self) -> list:
        return self.fn.statements if self.fn is not None else []

    @property
    def calls(self) -> list:
        return [st for st in self.statements if st.base == "call"]

    def local_decl(self, name: str):
        if self.fn is None:
            return None
        for d in self.fn.decls():
            if d.declares(name):
                return d
        return None


def parse_splice_text(text: str, extern: Optional[str] = None, *, what: str = "call text",
                      closes: int = 0) -> SpliceText:
    """Parse `text` (and `extern`) with rrsplice.parse in a wrapper module. `closes` is how
    many enclosing braces the text itself closes (a legacy tail that ends the function)."""
    st = SpliceText(text=text, extern=extern)
    ext = (extern or "")
    if ext and not ext.endswith("\n"):
        ext += "\n"
    head = _HEADER + ext
    if ext:
        try:
            em = parse_bytes((head).encode("utf-8"), "<extern>")
        except ParseError as exc:
            st.error = f"extern text does not parse: line {exc.line - 3}: {exc.message}"
            st.error_line = exc.line - 3
            return st
        for f in em.functions:
            st.externs[f.name] = f
    opener = f".visible .entry {PROBE}(\n\t.param .u64 {PROBE}_param_0\n)\n{{\n"
    body_first = head.count("\n") + opener.count("\n") + 1
    closing = "\n" + "}\n" * max(0, 1 - closes)
    src = head + opener + text + closing
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
    return st


def empty_arg_lists(text: str) -> list[int]:
    """1-based lines of `text` holding an empty `()` (ZLUDA rejects it)."""
    clean = _strip_comments(text)
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


# ------------------------------------------------------------------ reports

@dataclass
class Target:
    """What a recipe does to which function, resolved against the module."""
    recipe: Recipe
    path: Path
    module: Module
    note: Optional[str] = None
    fn: Optional[Function] = None
    kind: str = "none"          # region | point | truncate | body | none
    first_line: Optional[int] = None
    last_line: Optional[int] = None   # inclusive
    rng: Optional[StatementRange] = None
    text: Optional[str] = None  # the splice text (call / insert / tail / stub / debug block)
    extern: Optional[str] = None
    stage: Optional[str] = None
    point_regs: list = field(default_factory=list)


@dataclass
class Report:
    recipe: Recipe
    target: Optional[Target]
    findings: list = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    splice: Optional[SpliceText] = None
    analysis: object = None

    @property
    def errors(self) -> list:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def add(self, severity, code, message, st=None, line=None, registers=()):
        if st is not None and line is None:
            line = st.line
        self.findings.append(Finding(severity, code, message,
                                     st.sid if st is not None else None, line,
                                     list(registers)))

    def to_json(self) -> dict:
        t = self.target
        return {"ok": self.ok, "recipe": str(self.recipe.path), "form": self.recipe.form,
                "module": str(t.path) if t else None, "note": t.note if t else None,
                "function": t.fn.name if t and t.fn else None,
                "errors": len(self.errors), "warnings": len(self.warnings),
                "findings": [f.to_json() for f in self.findings], "facts": self.facts}


# ------------------------------------------------------------------ loading the module

def load_module(path: Path) -> Module:
    """The parsed module (through the model cache when it is available)."""
    try:
        from .cache import load_module as cached
    except ImportError:
        cached = None
    if cached is not None:
        return cached(path)
    from .parser import parse
    return parse(path)


def _function_at(module: Module, line: int) -> Optional[Function]:
    for f in module.functions:
        if f.has_body and f.line <= line <= f.end_line:
            return f
    return None


def _entry_function(module: Module, rec: Recipe) -> Optional[Function]:
    names = [n for n, _ in rec.entry_candidates()]
    for n in names:
        for f in module.functions:
            if f.name == n and f.has_body:
                return f
    bodies = [f for f in module.functions if f.has_body and f.is_entry]
    return bodies[0] if len(bodies) == 1 else None


def qualify_stage(rec: Recipe, name: str) -> str:
    """`p1_out` -> `dec2.p1_out` for a dec2 recipe; qualified names are kept."""
    return name if "." in name else f"{rec.layer}.{name}"


def find_stage(rec: Recipe, name: str) -> tuple[str, tuple]:
    """The recipe's stage `name` (qualified or not) -> (qualified name, (line, regs))."""
    layer = rec.layer
    want = qualify_stage(rec, name)
    if want.split(".", 1)[0] != layer:
        raise RecipeError(rec.path, f"stage {name!r} belongs to layer "
                          f"{want.split('.', 1)[0]!r}, not to this recipe's layer {layer!r}",
                          "stages")
    table = rec.stages()
    for k, v in table.items():
        if qualify_stage(rec, k) == want:
            return want, v
    known = ", ".join(qualify_stage(rec, k) for k in table) or "none"
    raise RecipeError(rec.path, f"no debug stage {want!r} (stages: {known})", "stages")


def recipe_for_stage(rec: Recipe, stage: str) -> tuple[Recipe, Optional[str]]:
    """The recipe and stage name to build debug stage `stage` with: the recipe's own
    `stages()` entry when it has one; else the recipe re-run with `$D4R_RRSWIN_DEBUG` set
    to the stage, for recipes that read the variable and return the `debug` form."""
    table = rec.stages()
    want = qualify_stage(rec, stage)
    if any(qualify_stage(rec, k) == want for k in table) or table:
        return rec, stage
    again = load_recipe(rec.path, debug=stage)
    if again.form == "debug":
        return again, None
    return rec, stage


def build_target(rec: Recipe, path: Path, module: Module, note: Optional[str] = None,
                 stage: Optional[str] = None) -> Target:
    """Where the recipe (or the debug stage `stage`) acts on `module`."""
    t = Target(recipe=rec, path=path, module=module, note=note, extern=rec.extern)
    if stage is not None:
        qname, (line, regs) = find_stage(rec, stage)
        t.kind, t.stage, t.first_line, t.point_regs = "point", qname, line, list(regs)
        t.fn = _function_at(module, line)
        t.extern = None
        return t
    form = rec.form
    if form == "cut_call" or form == "delete":
        a, b = rec.cut_call if form == "cut_call" else rec.delete
        t.kind, t.first_line, t.last_line = "region", a, b - 1
        t.text = rec.call if form == "cut_call" else rec.insert
        t.fn = _function_at(module, a)
    elif form == "debug":
        line, regs = rec.debug
        t.kind, t.first_line, t.point_regs = "point", line, list(regs)
        t.stage = rec.debug_env or "debug"
        t.fn = _function_at(module, line)
    elif form == "cut_after":
        t.kind, t.first_line, t.text = "truncate", rec.cut_after, rec.tail
        t.fn = _function_at(module, rec.cut_after)
    elif form == "replace_body":
        t.kind, t.text = "body", rec.stub
        if rec.replace_body is True:
            ents = [f for f in module.functions if f.has_body and f.is_entry]
            t.fn = ents[0] if len(ents) == 1 else None
        else:
            t.fn = next((f for f in module.functions
                         if f.name == rec.replace_body and f.has_body), None)
    else:
        t.fn = _entry_function(module, rec)
    return t


# ------------------------------------------------------------------ the checks

def check_recipe(recipe, corpus=None, *, stage: Optional[str] = None,
                 module_path: Optional[Path] = None, module: Optional[Module] = None,
                 analyse: bool = True) -> Report:
    """Run every check of `recipe` (a Recipe or a path) against its module."""
    rec = recipe if isinstance(recipe, Recipe) else load_recipe(recipe)
    if stage is not None:
        rec, stage = recipe_for_stage(rec, stage)
    note = None
    if module_path is None:
        module_path, note = resolve_module(rec, corpus)
    if module is None:
        module = load_module(module_path)
    t = build_target(rec, Path(module_path), module, note, stage)
    rep = Report(recipe=rec, target=t)
    rep.facts["module"] = str(module_path)
    if note:
        rep.add("info", "module", note)
    if t.fn is not None:
        rep.facts["function"] = t.fn.name
    _check_entry(rep)
    if t.kind in ("region", "truncate", "body"):
        _check_applied(rep)
    if t.kind == "region":
        _check_region(rep)
    elif t.kind == "point":
        _check_point(rep)
    elif t.kind == "truncate":
        _check_truncate(rep)
    elif t.kind == "body":
        _check_body(rep)
    return rep


def _check_entry(rep: Report) -> None:
    t = rep.target
    rec = t.recipe
    if t.kind != "none" and t.fn is None:
        if t.kind == "body":
            rep.add("error", "cut-range", f"no function {rec.replace_body!r} with a body in "
                    f"{t.path.name}" if rec.replace_body is not True
                    else f"{t.path.name} has no single entry to replace")
        else:
            rep.add("error", "cut-range", f"line {t.first_line} lies in no function body of "
                    f"{t.path.name} (it has {t.module.line_count} lines)", line=t.first_line)
        return
    ent = rec.entry
    if ent and t.fn is not None and t.fn.name != ent and t.kind != "none":
        rep.add("warning", "entry", f"the recipe is for {ent}, but its lines fall in "
                f"{t.fn.name}", line=t.first_line)


def _line_text(module: Module, line: int) -> str:
    starts = _line_starts(module)
    if not 1 <= line <= len(starts):
        return ""
    s = starts[line - 1]
    e = starts[line] if line < len(starts) else len(module.text)
    return module.text[s:e].rstrip("\r\n")


def _line_starts(module: Module) -> list:
    cache = getattr(module, "_rrsplice_line_starts", None)
    if cache is None:
        cache = module.line_starts()
        try:
            object.__setattr__(module, "_rrsplice_line_starts", cache)
        except (AttributeError, TypeError):
            pass
    return cache


def _region_text(module: Module, first: int, last: int) -> str:
    starts = _line_starts(module)
    s = starts[first - 1]
    e = starts[last] if last < len(starts) else len(module.text)
    return module.text[s:e]


def _check_region(rep: Report) -> None:
    t = rep.target
    rec, fn, m = t.recipe, t.fn, t.module
    if fn is None:
        return
    first, last = t.first_line, t.last_line
    nlines = m.line_count
    if last > nlines:
        rep.add("error", "cut-range", f"the cut ends at line {last}, past the end of "
                f"{t.path.name} ({nlines} lines)", line=last)
        return
    body = fn.body
    if not (body.line < first and last < body.end_line):
        rep.add("error", "cut-range", f"lines {first}-{last} are not inside {fn.name}'s body "
                f"(lines {body.line}-{body.end_line})", line=first)
        return
    try:
        rng = lines_to_range(fn, first, last)
    except SelectionError as exc:
        rep.add("error", "cut-range", str(exc), line=first)
        return
    t.rng = rng
    fs, ls = fn.statements[rng.first - 1], fn.statements[rng.last - 1]
    rep.facts.update(lines=[first, last], statements=str(rng), statement_count=len(rng))
    rep.add("info", "cut-range", f"lines {first}-{last} are statements {rng} of {fn.name} "
            f"({len(rng)} statements, {fs.sid} at line {fs.line} to {ls.sid} ending at line "
            f"{ls.end_line})", st=fs)
    ccut = rec.const("CUT_CALL")
    if rec.form == "cut_call" and isinstance(ccut, (tuple, list)) and tuple(ccut) != rec.cut_call:
        rep.add("warning", "cut-range", f"recipe() cuts {rec.cut_call} but CUT_CALL is "
                f"{tuple(ccut)}")
    # braces: the cut must not open or close a block it does not also close/open
    clean = _strip_comments(_region_text(m, first, last))
    depth, low = 0, 0
    for mt in re.finditer(r"[{}]", clean):
        if mt.group(0) == "{":
            depth += 1
        else:
            depth -= 1
            low = min(low, depth)
    if depth != 0 or low < 0:
        rep.add("error", "cut-block", f"lines {first}-{last} cut a {{ }} block in the middle "
                f"(brace balance {depth:+d}, lowest {low})", line=first)
    for d in fn.body.decls:
        if first <= d.line <= last:
            rep.add("warning", "cut-decl", f"the cut removes the declaration of {d.name}",
                    line=d.line)
    if rec.form == "delete" and rec.delete_check:
        for ln, want in ((first, rec.delete_check[0]), (last, rec.delete_check[1])):
            if want is not None and want.strip() not in _line_text(m, ln):
                rep.add("error", "cut-text", f"delete_check expects {want.strip()!r} on line "
                        f"{ln}, which reads {_line_text(m, ln).strip()!r}", line=ln)
    _check_control(rep, fn, rng)
    sp = _check_splice_text(rep, t.text, t.extern, fn, "call text" if rec.form == "cut_call"
                            else "insert text", rng=rng)
    if sp is not None and sp.fn is not None:
        _check_dataflow(rep, fn, rng, sp)


def _check_control(rep: Report, fn: Function, rng: StatementRange) -> None:
    from .cfg import build_cfg
    fa = rep.analysis
    cfg = getattr(fa, "cfg", None) if fa is not None else None
    if cfg is None:
        cfg = build_cfg(fn)
    stmts = fn.statements
    seen_entry = set()
    for b in cfg.blocks:
        src = b.last
        for s in b.succs:
            dst = cfg.blocks[s].first
            inside_src, inside_dst = src in rng, dst in rng
            if not inside_src and inside_dst and dst != rng.first:
                st, lab = stmts[src - 1], stmts[dst - 1]
                key = (src, dst)
                if key not in seen_entry:
                    seen_entry.add(key)
                    rep.add("error", "label-entry", f"{lab.sid} ({lab.label or lab.opcode}, "
                            f"line {lab.line}) inside the region is targeted from outside it "
                            f"by {st.sid}: `{st.text.strip()}`", st=st)
            if inside_src and not inside_dst and dst != rng.last + 1:
                st, to = stmts[src - 1], stmts[dst - 1]
                rep.add("error", "branch-exit", f"{st.sid} `{st.text.strip()}` leaves the "
                        f"region to {to.sid} ({to.label or to.opcode}, line {to.line})", st=st)
    counts: dict = {}
    for i in range(rng.first, rng.last + 1):
        st = stmts[i - 1]
        if st.base in ("bar", "barrier", "ret", "exit", "trap"):
            counts.setdefault(st.base, []).append(st)
    for base, sts in counts.items():
        rep.add("warning", "control", f"{len(sts)} `{base}` inside the region (first "
                f"{sts[0].sid}: `{sts[0].text.strip()}`); the native body must reproduce it",
                st=sts[0])


_DECLS: dict = {}


def _function_decl(fn: Function, module: Module, reg: str):
    """The `.reg` declaration of `reg` visible at function scope (body-level, then nested
    blocks), memoised per function."""
    ent = _DECLS.get(id(fn))
    if ent is None or ent[0] is not fn:
        body = [d for d in (fn.body.decls if fn.body else ()) if d.space == ".reg"]
        ent = (fn, body, {})
        _DECLS.clear()
        _DECLS[id(fn)] = ent
    _, body, memo = ent
    if reg in memo:
        return memo[reg]
    found = next((d for d in body if d.declares(reg)), None)
    if found is None:
        found = next((d for d in fn.decls() if d.space == ".reg" and d.declares(reg)), None)
    memo[reg] = found
    return found


def _check_splice_text(rep: Report, text: Optional[str], extern: Optional[str],
                       fn: Function, what: str, rng=None, closes: int = 0,
                       need_call: bool = True) -> Optional[SpliceText]:
    if text is None:
        return None
    m = rep.target.module
    for ln in empty_arg_lists(text):
        rep.add("error", "empty-args", f"{what} line {ln} has an empty `()` argument list: "
                "ZLUDA rejects it (write the call without it)")
    if extern:
        for ln in empty_arg_lists(extern):
            rep.add("error", "empty-args", f"extern line {ln} has an empty `()` parameter "
                    "list: ZLUDA rejects it (declare the function without it)")
    sp = parse_splice_text(text, extern, what=what, closes=closes)
    rep.splice = sp
    if sp.error:
        rep.add("error", "call-parse", sp.error)
        return sp
    # registers: declared by the text itself, or by the function; special ones are fine
    passed, returned, undeclared = [], [], []
    from .semantics import def_use, is_pseudo
    for st in sp.statements:
        du = def_use(st)
        for r in du.uses:
            if is_pseudo(r) or sp.local_decl(r) is not None:
                continue
            if _function_decl(fn, m, r) is None:
                undeclared.append((st, r))
            elif r not in returned and r not in passed:
                passed.append(r)
        for r in du.defs:
            if is_pseudo(r) or sp.local_decl(r) is not None:
                continue
            if _function_decl(fn, m, r) is None:
                undeclared.append((st, r))
            elif r not in returned:
                returned.append(r)
        for r in st.registers():
            if (not r.special and sp.local_decl(r.name) is None
                    and _function_decl(fn, m, r.name) is None
                    and (st, r.name) not in undeclared):
                undeclared.append((st, r.name))
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
    rep.facts["passed"] = passed
    rep.facts["returned"] = returned
    calls = sp.calls
    if not calls and need_call:
        rep.add("warning", "call-args", f"{what} holds no call")
    callees = []
    for st in calls:
        _check_call(rep, st, sp, fn, what)
        callee = _callee(st)
        if callee:
            callees.append(callee)
    rep.facts["callees"] = callees
    for name, f in sp.externs.items():
        if len(f.ret_params) > 1:
            rep.add("error", "call-args", f"extern {name} declares {len(f.ret_params)} return "
                    "parameters: ptxas accepts one (return several values as one "
                    "`.param .align 8 .b8 ret[N]` array)")
        if f.has_body:
            rep.add("warning", "call-args", f"the extern text defines {name} with a body")
    callee_const = rep.recipe.const("CALLEE")
    if isinstance(callee_const, str) and callees and callee_const not in callees:
        rep.add("warning", "call-args", f"CALLEE is {callee_const} but the call text calls "
                + ", ".join(callees))
    return sp


def _callee(st: Statement) -> Optional[str]:
    ops = st.operands
    i = 1 if len(ops) > 1 and isinstance(ops[0], ParenList) else 0
    if i < len(ops) and isinstance(ops[i], Symbol):
        return ops[i].name
    return None


_TYPE_SIZE = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
              "b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8,
              "f16x2": 4, "pred": 0}


def _size(decl_or_param) -> Optional[int]:
    n = decl_or_param.byte_size
    if n is not None:
        return n
    ty = (decl_or_param.type or "").lstrip(".")
    return _TYPE_SIZE.get(ty)


def _check_call(rep: Report, st: Statement, sp: SpliceText, fn: Function, what: str) -> None:
    m = rep.target.module
    callee = _callee(st)
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
    for k, (a, p) in enumerate(zip(args.items if args else (), params)):
        _check_arg(rep, sp, fn, m, callee, k, a, p, what)
    n_rets = len(rets.items) if rets is not None else 0
    if n_rets != len(decl.ret_params):
        rep.add("error", "call-args", f"{what} takes {n_rets} return value(s) from {callee}, "
                f"whose declaration ({where}) returns {len(decl.ret_params)}")
    for k, (a, p) in enumerate(zip(rets.items if rets else (), decl.ret_params)):
        _check_arg(rep, sp, fn, m, callee, k, a, p, what, ret=True)


def _short(text: str, n: int = 120) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[:n - 3] + "..."


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
        d = sp.local_decl(a.name) or _function_decl(fn, m, a.name)
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
    declared = set(_EXTERN_NAME.findall(_strip_comments(t.extern or "")))
    called = set(_CALL_NAME.findall(_strip_comments(t.text or "")))
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
            if st.base == "call" and _callee(st) in names:
                rep.add("error", "applied", f"{f.name} already calls {_callee(st)}: the recipe "
                        "was applied already (applying twice is refused)", st=st)
                break


# ------------------------------------------------------------------ dataflow checks

def _analyze(rep: Report, fn: Function):
    if rep.analysis is None:
        try:
            from .cache import load_analysis
        except ImportError:
            load_analysis = None
        if load_analysis is not None and rep.target is not None:
            rep.analysis = load_analysis(rep.target.module, fn)
        else:
            from .dataflow import analyze
            rep.analysis = analyze(fn)
    return rep.analysis


def _mma_pairs(fn: Function, rng: StatementRange) -> dict:
    """reg -> (mma statement, its D list) for D registers of mma inside the range."""
    out = {}
    for i in range(rng.first, rng.last + 1):
        st = fn.statements[i - 1]
        if st.base == "mma" and st.operands:
            d = [r.name for r in st.operands[0].registers()]
            if len(d) > 1:
                for r in d:
                    out[r] = (st, d)
    return out


def _check_dataflow(rep: Report, fn: Function, rng: StatementRange, sp: SpliceText) -> None:
    from .provenance import classify_live_in
    from .semantics import sort_registers
    fa = _analyze(rep, fn)
    stmts = fn.statements
    passed = list(rep.facts.get("passed", []))
    returned = list(rep.facts.get("returned", []))
    live_in = list(fa.range_live_in(rng))
    live_out = list(fa.range_live_out(rng))
    rep.facts["live_in"] = live_in
    rep.facts["live_out"] = live_out
    classes = classify_live_in(fa, rng, passed=passed)
    groups: dict = {}
    other = []
    passed_set = set(passed)
    for li in classes:
        if li.klass == "other" and li.reg in passed_set:
            # a predicate the splice text passes (converted to an integer): accepted
            li = type(li)(li.reg, "passed", f"passed ({li.detail.split(':')[0]})",
                          li.reaching_defs)
        groups.setdefault(li.klass, []).append(li)
        if li.klass == "other":
            other.append(li)
    rep.facts["live_in_classes"] = {k: [li.reg for li in v] for k, v in groups.items()}
    # a legacy delete+insert need not be a call: its unread live-ins are only suspicious
    sev = "error" if rep.recipe.form == "cut_call" else "warning"
    for li in other:
        defs = list(li.reaching_defs or [])
        where = stmts[defs[0] - 1] if defs and 0 < defs[0] <= len(stmts) else None
        rep.add(sev, "live-in", f"{li.reg} is live into the region but neither passed to "
                "the call nor derivable from a passed value"
                + (f" (defined at {', '.join('s%d' % d for d in defs[:4])})" if defs else "")
                + (f": {li.detail}" if li.detail else ""), st=where, registers=[li.reg])
    der = groups.get("derivable", [])
    if der:
        by_detail: dict = {}
        for li in der:
            key = re.sub(r"[+-]?\d+", "N", str(li.detail or ""))
            by_detail.setdefault(key, []).append(li)
        for _key, lis in by_detail.items():
            rep.add("info", "live-in", f"{len(lis)} live-in register(s) derivable from passed "
                    f"values, e.g. {lis[0].reg}: {lis[0].detail}",
                    registers=[li.reg for li in lis])
    spec = groups.get("special", [])
    if spec:
        rep.add("info", "live-in", f"{len(spec)} live-in register(s) hold special values the "
                "body can read itself: " + "; ".join(f"{li.reg}: {li.detail}"
                                                      for li in spec[:4]),
                registers=[li.reg for li in spec])
    live_in_set = set(live_in)
    unused = [r for r in passed if r not in live_in_set]
    if unused:
        rep.add("warning", "passed-unused", f"{len(unused)} passed register(s) are not live "
                "into the region (the body gets values it does not need)", registers=unused)
    # live-out: every one must be written back by the splice text
    ret_set = set(returned)
    pairs = _mma_pairs(fn, rng)
    for r in live_out:
        if r in ret_set:
            continue
        uses = list(fa.first_uses_after(rng, r)) if hasattr(fa, "first_uses_after") else []
        use_st = stmts[uses[0] - 1] if uses else None
        at = f" (read at {use_st.sid}, line {use_st.line})" if use_st else ""
        if r in pairs:
            mst, d = pairs[r]
            got = [x for x in d if x in ret_set]
            if got:
                rep.add("error", "mma-pair", f"only {', '.join(got)} of mma {mst.sid}'s "
                        f"{{{', '.join(d)}}} D list is written back; {r} is live out of the "
                        f"region too{at} and would be undefined after the call", st=use_st,
                        registers=[r])
                continue
        rep.add("error", "live-out", f"{r} is live out of the region{at} but the splice "
                "text does not write it back", st=use_st, registers=[r])
    live_out_set = set(live_out)
    extra = [r for r in returned if r not in live_out_set]
    if extra:
        after = set(fa.live_out_at(rng.last))
        clob = [r for r in extra if r in after]
        if clob:
            rep.add("error", "clobber", f"the splice text writes {len(clob)} register(s) whose "
                    "values from before the region are still needed after it",
                    registers=sort_registers(clob))
        rest = [r for r in extra if r not in after]
        if rest:
            rep.add("warning", "live-out", f"the splice text writes {len(rest)} register(s) "
                    "not live after the region", registers=sort_registers(rest))
    _check_scratch(rep, fn, rng, sp)
    _check_shared_base(rep, fn, rng, sp)
    _mma_facts(rep, fn, rng, fa)


def _memo(module: Module, fn: Function, what: str, compute):
    """`compute()` (JSON data), remembered in the model cache next to the module's entry
    so that the daily re-apply of one recipe skips it; computed when the cache is off."""
    import hashlib
    import json
    try:
        from . import cache
        if not cache.enabled():
            return compute()
        key = hashlib.sha256(f"{cache._key_of(module)}|{fn.name}|{what}|"
                             f"{cache._sources_hash(('check.py', 'mma.py'))}".encode()
                             ).hexdigest()
        path = cache.cache_dir() / "facts" / f"{key}.json"
    except Exception:  # noqa: BLE001 - the memo is an optimisation only
        return compute()
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    data = compute()
    try:
        from .splice import write_atomic
        write_atomic(path, json.dumps(data).encode("utf-8"))
    except OSError:
        pass
    return data


def _mma_facts(rep: Report, fn: Function, rng: StatementRange, fa) -> None:
    n = sum(1 for i in range(rng.first, rng.last + 1) if fn.statements[i - 1].base == "mma")
    rep.facts["mma"] = n
    if not n:
        return

    def compute():
        from .mma import phases
        # the summary needs counts and geometry only: the name-tracking mode is exact for
        # straight-line code and twice as fast as confirming chains with reaching defs
        return [p.geometry for p in phases(fn)
                if rng.first <= p.first and p.last <= rng.last]
    try:
        geo = _memo(rep.target.module, fn, f"phases {rng}", compute)
    except Exception as exc:  # noqa: BLE001 - a fact, never a reason to fail a check
        rep.facts["phases_error"] = str(exc)
        return
    rep.facts["phases"] = len(geo)
    if geo:
        rep.facts["phase_geometry"] = geo


# ------------------------------------------------------------------ scratch

def scratch_symbol(rep: Report, fn: Function, sp: SpliceText) -> Optional[str]:
    """The .shared array the splice returns through: SCRATCH, or a .shared symbol the text
    names."""
    sym = rep.recipe.const("SCRATCH")
    if isinstance(sym, str) and sym:
        return sym
    shared = {d.name for d in fn.decls() if d.space == ".shared"}
    shared |= {d.name for d in rep.target.module.decls if d.space == ".shared"}
    for st in sp.statements:
        for op in st.operands:
            name = op.name if isinstance(op, Symbol) else (
                op.base.name if isinstance(op, Address) and isinstance(op.base, Symbol)
                else None)
            if name in shared:
                return name
    return None


def block_threads(fn: Function) -> Optional[int]:
    """Threads per block from `.maxntid`/`.reqntid` (None when the entry does not say)."""
    for d, v in fn.perf:
        if d in (".maxntid", ".reqntid"):
            nums = [int(x) for x in re.findall(r"\d+", str(v))]
            if nums:
                n = 1
                for x in nums:
                    n *= x
                return n
    return None


def _scratch_decl(fn: Function, module: Module, sym: str):
    for d in fn.decls():
        if d.name == sym:
            return d
    for d in module.decls:
        if d.name == sym:
            return d
    return None


def _scratch_stride(rep: Report, sp: SpliceText) -> tuple[Optional[int], str]:
    rec = rep.recipe
    v = rec.const("RET_STRIDE")
    if isinstance(v, int) and not isinstance(v, bool):
        return v, "RET_STRIDE"
    index_regs = {"%laneid"}
    for st in sp.statements:
        if st.base == "mov" and len(st.operands) == 2 and isinstance(st.operands[1], Reg) \
                and st.operands[1].special and isinstance(st.operands[0], Reg):
            index_regs.add(st.operands[0].name)
        elif st.base in ("mad", "mul") and any(isinstance(op, Reg) and op.name in index_regs
                                               for op in st.operands[1:3]):
            for op in st.operands[1:3]:
                if op.kind == "imm" and isinstance(op.value, int):
                    return op.value, f"`{st.text.strip()}`"
            if isinstance(st.operands[0], Reg):
                index_regs.add(st.operands[0].name)
    regs = rec.const("RET_REGS")
    if isinstance(regs, (list, tuple)) and regs:
        return 4 * len(regs), "4 x len(RET_REGS)"
    return None, ""


def _shared_reads(sp: SpliceText) -> list:
    return [st for st in sp.statements if st.base == "ld" and "shared" in st.modifiers]


def _check_scratch(rep: Report, fn: Function, rng: StatementRange, sp: SpliceText) -> None:
    loads = _shared_reads(sp)
    sym = scratch_symbol(rep, fn, sp)
    if sym is None or (not loads and rep.recipe.const("SCRATCH") is None):
        return
    decl = _scratch_decl(fn, rep.target.module, sym)
    if decl is None:
        rep.add("error", "scratch-size", f"scratch array {sym} is not declared in "
                f"{fn.name} or at module scope")
        return
    size = decl.byte_size
    stride, why = _scratch_stride(rep, sp)
    offs = []
    for st in loads:
        for op in st.operands:
            if isinstance(op, Address):
                n = 1
                for mod in st.modifiers:
                    if mod in ("v2", "v4"):
                        n = int(mod[1:])
                w = next((_TYPE_SIZE[x] for x in st.modifiers if x in _TYPE_SIZE), 4)
                offs.append((op.offset, op.offset + w * n))
    specials = {r.name for st in sp.statements for r in st.registers() if r.special}
    per_thread = any(x.startswith("%tid.") for x in specials)
    threads = block_threads(fn)
    slots = (threads or 1024) if per_thread else 32
    rep.facts["scratch"] = {"symbol": sym, "bytes": size, "stride": stride,
                            "stride_from": why, "line": decl.line,
                            "slots": slots, "indexed_by": "thread" if per_thread else "lane"}
    if stride is not None and size is not None:
        need = stride * slots
        unit = "threads" if per_thread else "lanes"
        if need > size:
            rep.add("error", "scratch-size", f"returns need {stride} bytes per "
                    f"{unit[:-1]} x {slots} {unit} = {need} bytes, but {sym} holds {size} "
                    f"(stride from {why})", line=decl.line)
    if not per_thread and "%laneid" in specials and (threads is None or threads > 32):
        rep.add("warning", "scratch-warps", f"the scratch address depends on %laneid only, "
                f"but {fn.name} may run " + (f"{threads}" if threads else "more than 32")
                + " threads per block: its warps share every lane's slot, so the body must "
                "keep them apart (or index the scratch by the thread's linear index)",
                line=decl.line)
    if stride is not None and offs:
        hi = max(e for _, e in offs)
        if hi > stride:
            rep.add("error", "scratch-size", f"the call text reads {sym} up to byte {hi} of a "
                    f"lane's slot, but lanes are {stride} bytes apart: lanes overlap")
    _check_scratch_live(rep, fn, rng, sym, decl)
    _check_scratch_race(rep, fn, rng, sp, sym, decl, loads, per_thread, threads)


def _symbol_accesses(fn: Function, sym: str) -> list:
    """(index, 'read'|'write'|'both') of every memory access through `sym` or a register
    derived from its address, in statement order."""
    from .semantics import def_use
    derived = set()
    out = []
    for st in fn.statements:
        base = st.base
        if st.is_label or base == "mma":
            continue
        addr = next((op for op in st.operands if isinstance(op, Address)), None)
        via = False
        if addr is not None:
            b = addr.base
            via = (isinstance(b, Symbol) and b.name == sym) or (
                isinstance(b, Reg) and b.name in derived)
        if via and base in ("ld", "st", "atom", "red", "cp", "ldmatrix", "stmatrix", "wmma"):
            kind = ("read" if base in ("ld", "ldmatrix") else
                    "write" if base in ("st", "stmatrix", "red") else "both")
            if base == "wmma":
                kind = "read" if "load" in st.modifiers else "write"
            out.append((st.index, kind))
            continue
        # address arithmetic: a register computed from the symbol or a derived register
        srcs = [op for op in st.operands[1:]]
        uses_sym = any((isinstance(op, Symbol) and op.name == sym)
                       or (isinstance(op, Reg) and op.name in derived) for op in srcs)
        if uses_sym and base in ("mov", "add", "sub", "cvta", "mad", "cvt", "or", "and",
                                 "shl", "mul"):
            derived.update(def_use(st).defs)
    return out


def _check_scratch_live(rep: Report, fn: Function, rng: StatementRange, sym: str,
                        decl) -> None:
    acc = [tuple(x) for x in _memo(rep.target.module, fn, f"symbol {sym}",
                                   lambda: _symbol_accesses(fn, sym))]
    before = [(i, k) for i, k in acc if i < rng.first]
    after = [(i, k) for i, k in acc if i > rng.last]
    stmts = fn.statements
    lb = stmts[before[-1][0] - 1] if before else None
    fa_ = stmts[after[0][0] - 1] if after else None
    desc = ("last access before the region: " + (f"{lb.sid} line {lb.line} `{_short(lb.text, 70)}`"
                                                  if lb else "none")
            + "; first after it: " + (f"{fa_.sid} line {fa_.line} `{_short(fa_.text, 70)}`"
                                       if fa_ else "none"))
    facts = rep.facts.setdefault("scratch", {"symbol": sym})
    facts["last_before"] = {"statement": lb.sid, "line": lb.line} if lb else None
    facts["first_after"] = {"statement": fa_.sid, "line": fa_.line} if fa_ else None
    written_before = [i for i, k in before if k != "read"]
    read_after = [i for i, k in after if k != "write"]
    if written_before and read_after:
        first_after_kind = after[0][1]
        wb = stmts[written_before[-1] - 1]
        ra = stmts[read_after[0] - 1]
        if first_after_kind != "write":
            rep.add("error", "scratch-live", f"{sym} holds a value live across the region: "
                    f"written at {wb.sid} (line {wb.line}) before it and read at {ra.sid} (line "
                    f"{ra.line}) after it, with no write in between; the returns would "
                    f"overwrite it. {desc}", st=ra)
            return
        rep.add("warning", "scratch-live", f"{sym} is written before the region ({wb.sid}, "
                f"line {wb.line}) and read after it ({ra.sid}, line {ra.line}); the first "
                f"access after the region is a write, assumed to overwrite it. {desc}",
                st=fa_)
        return
    rep.add("info", "scratch", f"{sym} ({decl.byte_size} bytes) carries the returns; {desc}",
            line=decl.line)


# ------------------------------------------------------------------ scratch race
#
# A return slot is written by the body and read by the call text of ONE thread, so the body's
# stores and that thread's reads need no barrier between them (program order). What needs
# one is everything OTHER warps do with the same array: the region and the code before it
# (staging, reductions) must be done in every warp before any body stores its returns, and
# every warp must have read its slot before the code after the call reuses the array. Both
# are one block barrier each: `bar.sync 0` at the start of the body's stores (the native
# body's job; `rrsplice outline` mirrors it) and `bar.sync 0` after the call text's reads.
# The check sees the call text only, so the barrier it looks for is the second one.

_SPECIAL_INDEX = {"%tid.x": 0, "%tid.y": 1, "%tid.z": 2, "%laneid": 3,
                  "%ntid.x": 4, "%ntid.y": 5, "%ntid.z": 6}
_INT_OPS = ("mov", "cvt", "cvta", "add", "sub", "mul", "mad", "shl", "shr", "and", "or",
            "xor")


def _expr_builder(lookup, sym: str):
    """A function (statement, operand) -> closure(env) -> int | None that computes an
    integer operand per thread: immediates, %tid/%ntid/%laneid (env = (tid.x, tid.y, tid.z,
    laneid, ntid.x, ntid.y, ntid.z)), `sym` as 0 (offsets are relative to the array) and
    registers through `lookup(statement, reg)` (None: unknown)."""
    from .model import Imm

    def operand(st, op):
        if isinstance(op, Reg):
            if op.special:
                k = _SPECIAL_INDEX.get(op.name)
                return None if k is None else (lambda e, k=k: e[k])
            return lookup(st, op.name)
        if isinstance(op, Imm) and isinstance(op.value, int):
            v = op.value
            return lambda e, v=v: v
        if isinstance(op, Symbol) and op.name == sym:
            return lambda e: 0
        return None

    def build(st):
        """The closure of the value `st` defines (None when unknown)."""
        ops = st.operands
        base = st.base
        if st.guard or base not in _INT_OPS or len(ops) < 2 or not isinstance(ops[0], Reg):
            return None
        if base in ("mul", "mad") and "hi" in st.modifiers:
            return None
        srcs = [operand(st, o) for o in ops[1:]]
        if any(f is None for f in srcs):
            return None

        def lift(fn2):
            a, b = srcs[0], srcs[1]

            def f(e):
                x, y = a(e), b(e)
                return None if x is None or y is None else fn2(x, y)
            return f
        if base in ("mov", "cvt", "cvta") and len(srcs) == 1:
            return srcs[0]
        if len(srcs) == 2:
            table = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y,
                     "mul": lambda x, y: x * y, "shl": lambda x, y: x << y if y >= 0 else None,
                     "shr": lambda x, y: x >> y if y >= 0 and x >= 0 else None,
                     "and": lambda x, y: x & y, "or": lambda x, y: x | y,
                     "xor": lambda x, y: x ^ y}
            if base in table:
                return lift(table[base])
        if base == "mad" and len(srcs) == 3:
            a, b, c = srcs

            def f(e):
                x, y, z = a(e), b(e), c(e)
                return None if x is None or y is None or z is None else x * y + z
            return f
        return None
    return operand, build


def _mem_width(st: Statement) -> int:
    n = 1
    for mod in st.modifiers:
        if mod in ("v2", "v4", "v8"):
            n = int(mod[1:])
    w = next((_TYPE_SIZE[x] for x in st.modifiers if x in _TYPE_SIZE and _TYPE_SIZE[x]), 4)
    return w * n


def _block_shapes(fn: Function) -> list:
    """Block shapes (x, y, z) to analyse: `.reqntid` exactly; for `.maxntid`, the declared
    extents and the two one-warp-per-row shapes with the same thread count (a `.maxntid`
    bounds the product only: the fixtures declare 128, 1, 1 and launch 32 x 1 x 4)."""
    for d, v in fn.perf:
        if d == ".reqntid":
            nums = ([int(x) for x in re.findall(r"\d+", str(v))] + [1, 1])[:3]
            return [tuple(nums)]
    for d, v in fn.perf:
        if d == ".maxntid":
            nums = ([int(x) for x in re.findall(r"\d+", str(v))] + [1, 1])[:3]
            t = nums[0] * nums[1] * nums[2]
            out = [tuple(nums)]
            if t % 32 == 0:
                for sh in ((32, 1, t // 32), (32, t // 32, 1)):
                    if sh not in out:
                        out.append(sh)
            return out
    return []


def _scratch_overlap(fa, fn: Function, sp: SpliceText, sym: str, size: int, loads: list,
                     accesses: list, shape: tuple):
    """('overlap', witness) / ('clear', None) / ('unknown', why) for one block shape: does
    any access of `sym` by a thread touch bytes of a return slot that belongs to a thread of
    another warp? Slots are the bytes the call text's scratch reads cover, computed per
    thread from the call text's own address arithmetic."""
    # the call text is straight-line: its registers' closures, defined in order
    table: dict = {}
    _, build_sp = _expr_builder(lambda st, r: table.get(r), sym)
    slot_reads = []
    for st in sp.statements:
        if st.base == "ld" and "shared" in st.modifiers:
            addr = next((op for op in st.operands if isinstance(op, Address)), None)
            if addr is None:
                return "unknown", f"`{st.text.strip()}` has no address"
            b = addr.base
            f = (lambda e: 0) if isinstance(b, Symbol) and b.name == sym else (
                table.get(b.name) if isinstance(b, Reg) else None)
            if f is None:
                return "unknown", f"the address of `{st.text.strip()}` is not computed " \
                                  "from the thread index in the call text"
            slot_reads.append((f, addr.offset, _mem_width(st)))
        for r in (def_use_defs(st)):
            table[r] = build_sp(st) if len(def_use_defs(st)) == 1 else None
    nx, ny, nz = shape
    threads = nx * ny * nz
    envs = []
    for t in range(threads):
        x, y, z = t % nx, (t // nx) % ny, t // (nx * ny)
        envs.append((x, y, z, t % 32, nx, ny, nz))
    owner = [0] * size            # bit w: a slot byte of warp w
    owner_t = [-1] * size
    for t, e in enumerate(envs):
        bit = 1 << (t // 32)
        for f, off, w in slot_reads:
            a = f(e)
            if a is None:
                return "unknown", "a slot address is not computable"
            for byte in range(a + off, a + off + w):
                if 0 <= byte < size:
                    owner[byte] |= bit
                    owner_t[byte] = t
    # the kernel's accesses, grouped by address closure
    memo: dict = {}
    stmts = fn.statements

    def lookup(st, reg):
        defs = fa.reaching_defs(st.index, reg)
        if len(defs) != 1:
            return None
        key = (defs[0], reg)
        if key not in memo:
            memo[key] = None           # a cycle reads as unknown
            memo[key] = build(stmts[defs[0] - 1])
        return memo[key]
    _, build = _expr_builder(lookup, sym)
    unresolved = []
    for acc in accesses:
        st = stmts[acc.index - 1]
        if acc.kind not in ("read", "write", "atomic") or st.guard or \
                st.base not in ("ld", "st", "atom", "red"):
            unresolved.append(acc)
            continue
        addr = next((op for op in st.operands if isinstance(op, Address) and (
            (isinstance(op.base, Symbol) and op.base.name == sym)
            or (isinstance(op.base, Reg) and op.base.name == acc.via))), None)
        if addr is None:
            unresolved.append(acc)
            continue
        f = (lambda e: 0) if isinstance(addr.base, Symbol) else lookup(st, addr.base.name)
        if f is None:
            unresolved.append(acc)
            continue
        w = _mem_width(st)
        for t, e in enumerate(envs):
            a = f(e)
            if a is None:
                unresolved.append(acc)
                break
            mine = ~(1 << (t // 32))
            for byte in range(a + addr.offset, a + addr.offset + w):
                if 0 <= byte < size and owner[byte] & mine:
                    return "overlap", (acc, t, owner_t[byte], byte)
    if unresolved:
        a = unresolved[0]
        return "unknown", (f"{len(unresolved)} access(es) with an address rrsplice cannot "
                           f"compute per thread, e.g. {a.sid} (line {a.line}) "
                           f"`{_short(a.text, 60)}`")
    return "clear", None


def def_use_defs(st: Statement) -> tuple:
    from .semantics import def_use
    return tuple(def_use(st).defs)


def _check_scratch_race(rep: Report, fn: Function, rng: StatementRange, sp: SpliceText,
                        sym: str, decl, loads: list, per_thread: bool,
                        threads: Optional[int]) -> None:
    from .provenance import symbol_uses
    from .semantics import is_block_barrier
    if not loads or (threads is not None and threads <= 32):
        return
    fa = _analyze(rep, fn)
    uses = symbol_uses(fa, sym)
    accesses = [a for a in uses.accesses if a.kind != "address"]
    facts = rep.facts.setdefault("scratch", {"symbol": sym})
    if not accesses:
        facts["race"] = "none: the kernel does not use the array"
        return
    last_read = max(sp.statements.index(st) for st in loads)
    barrier = next((st for st in sp.statements[last_read + 1:] if is_block_barrier(st)), None)
    if barrier is not None:
        facts["race"] = "guarded: " + barrier.text.strip()
        rep.add("info", "scratch-race", f"`{barrier.text.strip()}` after the scratch reads "
                f"keeps the warps apart in {sym} (the native body must execute a block "
                "barrier before it stores its returns; `rrsplice outline` mirrors this one)")
        return
    inside = [a for a in accesses if rng.first <= a.index <= rng.last]
    after = [a for a in accesses if a.index > rng.last]
    before = [a for a in accesses if a.index < rng.first]
    where = ", ".join(f"{n} {w}" for n, w in ((len(before), "before the region"),
                                              (len(inside), "inside it"),
                                              (len(after), "after it")) if n)
    who = f"{fn.name} may run " + (f"{threads} threads" if threads else "more than one warp") \
        + " per block"
    fix = ("add `bar.sync 0;` after the scratch reads (the native body must then execute a "
           "block barrier, `bar.sync 0` / `__syncthreads()`, before it stores its returns; "
           "`rrsplice outline` mirrors the barrier there), or return through `.param` "
           "(`rrsplice recipe new --abi param`)")
    if not per_thread:
        facts["race"] = "per-lane slots, no barrier"
        rep.add("warning", "scratch-race", f"{who} and uses {sym} itself ({where} "
                f"accesses); the return slots are per lane, so every warp's body stores to "
                f"the same 32 slots and the call text has no block barrier after its reads: "
                f"whether warps clobber each other's returns depends on what the native body "
                f"does, which rrsplice cannot see. Warning, not error: this is the seed "
                f"recipe's convention, which the users' build applies today. To make it safe: "
                f"index the slots by the thread's linear index and {fix}", line=decl.line)
        return
    shapes = _block_shapes(fn)
    size = decl.byte_size
    results = []
    if shapes and size:
        for shape in shapes:
            results.append((shape, *_scratch_overlap(fa, fn, sp, sym, size, loads, accesses,
                                                     shape)))
    over = [r for r in results if r[1] == "overlap"]
    base_msg = (f"{who}, the return slots in {sym} are per thread, the kernel also uses the "
                f"array ({where} accesses), and the call text has no block barrier after its "
                f"scratch reads")
    if over:
        shape, _, (acc, t, owner, byte) = over[0]
        kind = {"read": "reads", "write": "writes", "atomic": "updates"}.get(acc.kind, "uses")
        side = ("before the region" if acc.index < rng.first else
                "inside the region" if acc.index <= rng.last else "after the region")
        shp = "x".join(str(n) for n in shape)
        wit = (f"with a {shp} block, {acc.sid} (line {acc.line}, {side}) `{_short(acc.text, 60)}` "
               f"of thread {t} (warp {t // 32}) {kind} byte {byte}, which is in the return slot "
               f"of thread {owner} (warp {owner // 32})")
        facts["race"] = f"overlap ({shp})"
        if len(over) == len(results):
            rep.add("error", "scratch-race", f"{base_msg}: the slots overlap what other warps "
                    f"access in the array, so one warp's body can overwrite bytes another warp "
                    f"still uses, and another warp's code can overwrite a slot before its "
                    f"owner has read it back ({wit}); {fix}", st=fn.statements[acc.index - 1])
            return
        clear = ", ".join("x".join(map(str, r[0])) for r in results if r[1] != "overlap")
        rep.add("warning", "scratch-race", f"{base_msg}: {wit}; not for every block shape the "
                f"entry allows ({clear}: no overlap proven); {fix}",
                st=fn.statements[acc.index - 1])
        return
    if results and all(r[1] == "clear" for r in results):
        facts["race"] = "slots disjoint from every other access"
        rep.add("info", "scratch-race", f"{sym}: no warp's accesses touch another warp's "
                f"return slots (block shapes " + ", ".join("x".join(map(str, r[0]))
                                                          for r in results) + ")")
        return
    why = next((r[2] for r in results if r[1] == "unknown"), None) or (
        "the entry declares no .maxntid/.reqntid" if not shapes else
        f"the size of {sym} is not known")
    facts["race"] = "unknown"
    rep.add("warning", "scratch-race", f"{base_msg}; rrsplice cannot prove whether the slots "
            f"overlap other warps' accesses ({why}); {fix}", line=decl.line)


def _check_shared_base(rep: Report, fn: Function, rng: StatementRange,
                       sp: SpliceText) -> None:
    """A region that names a .shared array needs its address passed: the body is a separate
    .func, which cannot name the entry's (or the kernel module's) array."""
    from .semantics import def_use
    shared = {d.name for d in fn.decls() if d.space == ".shared"}
    shared |= {d.name for d in rep.target.module.decls if d.space == ".shared"}
    if not shared:
        return
    named: dict = {}
    for i in range(rng.first, rng.last + 1):
        st = fn.statements[i - 1]
        if st.is_label:
            continue
        for op in st.operands:
            name = op.name if isinstance(op, Symbol) else (
                op.base.name if isinstance(op, Address) and isinstance(op.base, Symbol)
                else None)
            if name in shared and name not in named:
                named[name] = st
    if not named:
        return
    # passed: `mov.u32 %x, SYM` in the call text before the call, %x stored to a .param
    calls = sp.calls
    first_call = sp.statements.index(calls[0]) if calls else len(sp.statements)
    pre = sp.statements[:first_call]
    stored = set()
    for st in pre:
        if st.base == "st" and "param" in st.modifiers:
            stored.update(def_use(st).uses)
    passed = set()
    for st in pre:
        if st.base == "mov" and len(st.operands) == 2 and isinstance(st.operands[1], Symbol) \
                and isinstance(st.operands[0], Reg) and st.operands[0].name in stored:
            passed.add(st.operands[1].name)
    for sym, st in sorted(named.items()):
        if sym in passed:
            continue
        rep.add("error", "shared-base", f"{st.sid} (line {st.line}) inside the region names the "
                f".shared array {sym} (`{_short(st.text, 60)}`), but the call does not pass "
                f"its address: the body, a separate .func, cannot name the entry's array; pass "
                f"it (`mov.u32 %r, {_short(sym, 40)};` then a `.param .b32` argument)", st=st)


# ------------------------------------------------------------------ debug points

def _check_point(rep: Report) -> None:
    t = rep.target
    fn, m, line = t.fn, t.module, t.first_line
    rec = t.recipe
    if t.stage and rec.form != "debug":
        layer = rec.layer
        for name in rec.stages():
            if "." in name and name.split(".", 1)[0] != layer:
                rep.add("error", "stage-name", f"stage {name!r} is qualified by layer "
                        f"{name.split('.', 1)[0]!r}, but this recipe is for {layer!r}")
    if fn is None:
        return
    body = fn.body
    if not (body.line <= line < body.end_line):
        rep.add("error", "stage-line", f"line {line} is not inside {fn.name}'s body "
                f"(lines {body.line}-{body.end_line})", line=line)
        return
    on_line = [st for st in fn.statements if st.line <= line <= st.end_line]
    if not on_line:
        rep.add("error", "stage-line", f"line {line} holds no statement (it reads "
                f"{_line_text(m, line).strip()!r}); a stage goes after the line that ends a "
                "statement", line=line)
        return
    last = on_line[-1]
    if last.end_line != line:
        rep.add("error", "stage-line", f"line {line} is inside {last.sid} (lines "
                f"{last.line}-{last.end_line}); use its last line {last.end_line}", st=last)
        return
    if last.depth > 1 or _inside_nested_block(fn, line):
        rep.add("warning", "stage-line", f"line {line} lies inside a nested {{ }} block",
                st=last)
    rep.facts["stage"] = {"name": t.stage, "line": line, "after": last.sid,
                          "registers": t.point_regs}
    regs = t.point_regs
    bad = [r for r in regs if _function_decl(fn, m, r) is None]
    for r in bad:
        rep.add("error", "undeclared", f"stage register {r} is not declared in {fn.name}",
                registers=[r])
    good = [r for r in regs if r not in bad]
    if good:
        undefined = _not_always_defined(rep, fn, last.index, good)
        for r, why in undefined.items():
            rep.add("error", "stage-undefined", f"{r} is not defined on every path to line "
                    f"{line} ({why})", st=last, registers=[r])
    blk = debug_block_text(rec, t, fn)
    sp = _check_splice_text(rep, blk, None, fn, "debug block", need_call=False)
    del sp


def _inside_nested_block(fn: Function, line: int) -> bool:
    stack = [fn.body]
    while stack:
        b = stack.pop()
        for it in b.items:
            if hasattr(it, "items") and hasattr(it, "end_line"):
                if it.line <= line < it.end_line:
                    return True
                stack.append(it)
    return False


def _not_always_defined(rep: Report, fn: Function, index: int, regs: list) -> dict:
    """reg -> reason, for registers that some path from the entry reaches statement
    `index` (inclusive) without an unguarded definition of."""
    from .semantics import def_use
    fa = _analyze(rep, fn)
    cfg = fa.cfg
    blocks = cfg.blocks
    want = set(regs)
    kills = [set()] * len(blocks)
    kills = []
    for b in blocks:
        k = set()
        for i in range(b.first, b.last + 1):
            k.update(x for x in def_use(fn.statements[i - 1]).kills if x in want)
        kills.append(k)
    full = frozenset(want)
    out = [full] * len(blocks)
    inn = [full] * len(blocks)
    changed = True
    order = cfg.reverse_postorder() if hasattr(cfg, "reverse_postorder") else range(len(blocks))
    while changed:
        changed = False
        for bid in order:
            b = blocks[bid]
            if bid == 0:
                i_set = frozenset()
            elif not b.preds:
                i_set = frozenset()
            else:
                i_set = full
                for p in b.preds:
                    i_set = i_set & out[p]
            o_set = i_set | kills[bid]
            if i_set != inn[bid] or o_set != out[bid]:
                inn[bid], out[bid] = i_set, frozenset(o_set)
                changed = True
    b = cfg.block(index)
    have = set(inn[b.id])
    for i in range(b.first, index + 1):
        have.update(x for x in def_use(fn.statements[i - 1]).kills if x in want)
    res = {}
    for r in regs:
        if r in have:
            continue
        defs = [st.index for st in fn.statements[:index]
                if r in def_use(st).defs]
        res[r] = ("never defined before it" if not defs else
                  "defined at " + ", ".join(f"s{d}" for d in defs[:4])
                  + (" only under a guard or" if defs else "") + " not on every path")
    return res


# ------------------------------------------------------------------ debug blocks

DEBUG_PARAM_OFFSET = 8      # the plane arena pointer in param_0, as the seed project stores


def debug_block_text(rec: Recipe, t: Target, fn: Function) -> str:
    """The text a debug stage inserts: the recipe's `debug_block(regs)` (a dict key or a
    module function), else the built-in block (see :func:`builtin_debug_block`)."""
    blk = rec.debug_block if rec.form == "debug" else None
    if blk is None:
        blk = getattr(rec.module, "debug_block", None)
    regs = list(t.point_regs)
    if blk is not None:
        if isinstance(blk, str):
            return blk
        try:
            text = blk(regs)
        except Exception as exc:  # noqa: BLE001 - users' code
            raise RecipeError(rec.path, f"debug_block({regs!r}) raised "
                              f"{type(exc).__name__}: {exc}", "debug_block") from None
        if not isinstance(text, str):
            raise RecipeError(rec.path, f"debug_block() returned {type(text).__name__}, "
                              "expected the PTX text", "debug_block")
        return text
    return builtin_debug_block(rec, fn, regs, t.stage)


def builtin_debug_block(rec: Recipe, fn: Function, regs: list, stage: Optional[str]) -> str:
    """Store `regs` (u32 each) to a window of a parameter buffer.

    The buffer is the u64 pointer at ``param_0 + DEBUG_PARAM_OFFSET`` (recipe constant,
    default 8: the plane arena); each thread stores its registers at
    ``base + block*slot + lane*len(regs)*4`` where ``block`` is the linear block index,
    ``lane`` the thread's linear index in its block, ``base`` = ``DEBUG_BASE`` (default 0)
    and ``slot`` = ``DEBUG_SLOT`` (default: threads per block from ``.maxntid``, else 1024,
    times ``len(regs)*4``). Special registers are read with ``mov`` only, so ptxas accepts
    the block. 16/64-bit registers are converted to u32 and predicates to 0/1.
    """
    mod = rec.module
    off = getattr(mod, "DEBUG_PARAM_OFFSET", DEBUG_PARAM_OFFSET)
    base = getattr(mod, "DEBUG_BASE", 0)
    per = 4 * len(regs)
    threads = 1024
    for d, v in fn.perf:
        if d in (".maxntid", ".reqntid"):
            try:
                nums = [int(x) for x in re.findall(r"\d+", str(v))]
                threads = 1
                for x in nums:
                    threads *= x
            except ValueError:
                pass
    slot = getattr(mod, "DEBUG_SLOT", threads * per)
    p0 = fn.params[0].name if fn.params else None
    if p0 is None:
        raise RecipeError(rec.path, f"{fn.name} has no parameter to find a debug buffer in",
                          "debug")
    m = fn.module
    lines = ["{", f"// rrsplice debug stage {stage or ''}: {' '.join(regs)}".rstrip(),
             ".reg .b32 %rrdbg<10>;", ".reg .b64 %rrdbgd<4>;", ".reg .pred %rrdbgp;",
             f"ld.param.u64 %rrdbgd0, [{p0}+{off}];",
             "cvta.to.global.u64 %rrdbgd0, %rrdbgd0;",
             "mov.u32 %rrdbg0, %ctaid.x;", "mov.u32 %rrdbg1, %ctaid.y;",
             "mov.u32 %rrdbg2, %ctaid.z;", "mov.u32 %rrdbg3, %nctaid.x;",
             "mov.u32 %rrdbg4, %nctaid.y;",
             "mad.lo.u32 %rrdbg1, %rrdbg2, %rrdbg4, %rrdbg1;",
             "mad.lo.u32 %rrdbg0, %rrdbg1, %rrdbg3, %rrdbg0;",
             "mov.u32 %rrdbg1, %tid.x;", "mov.u32 %rrdbg2, %tid.y;", "mov.u32 %rrdbg3, %tid.z;",
             "mov.u32 %rrdbg4, %ntid.x;", "mov.u32 %rrdbg5, %ntid.y;",
             "mad.lo.u32 %rrdbg2, %rrdbg3, %rrdbg5, %rrdbg2;",
             "mad.lo.u32 %rrdbg1, %rrdbg2, %rrdbg4, %rrdbg1;",
             f"mul.wide.u32 %rrdbgd1, %rrdbg0, {slot};",
             f"mul.wide.u32 %rrdbgd2, %rrdbg1, {per};",
             "add.s64 %rrdbgd0, %rrdbgd0, %rrdbgd1;",
             "add.s64 %rrdbgd0, %rrdbgd0, %rrdbgd2;"]
    for i, r in enumerate(regs):
        d = _function_decl(fn, m, r) if m is not None else None
        ty = (d.type or ".b32") if d is not None else ".b32"
        at = f"[%rrdbgd0+{base + 4 * i}]"
        size = _TYPE_SIZE.get(ty.lstrip("."), 4)
        if ty == ".pred":
            lines.append(f"selp.u32 %rrdbg6, 1, 0, {r};")
            lines.append(f"st.global.u32 {at}, %rrdbg6;")
        elif size == 4:
            lines.append(f"st.global.b32 {at}, {r};")
        elif size == 2:
            lines.append(f"cvt.u32.u16 %rrdbg6, {r};")
            lines.append(f"st.global.u32 {at}, %rrdbg6;")
        elif size == 8:
            lines.append(f"cvt.u32.u64 %rrdbg6, {r};")
            lines.append(f"st.global.u32 {at}, %rrdbg6;")
        else:
            lines.append(f"mov.b32 %rrdbg6, {r};")
            lines.append(f"st.global.u32 {at}, %rrdbg6;")
    lines.append("}")
    return "\n".join(lines)


# ------------------------------------------------------------------ legacy forms

def _check_truncate(rep: Report) -> None:
    t = rep.target
    rec, m = t.recipe, t.module
    line = t.first_line
    if line > m.line_count:
        rep.add("error", "cut-range", f"cut_after line {line} is past the end of "
                f"{t.path.name} ({m.line_count} lines)", line=line)
        return
    if rec.cut_check is not None and rec.cut_check.strip() not in _line_text(m, line):
        rep.add("error", "cut-text", f"cut_check expects {rec.cut_check.strip()!r} on line "
                f"{line}, which reads {_line_text(m, line).strip()!r}", line=line)
    elif rec.cut_check is None:
        rep.add("warning", "cut-text", "no cut_check: the line cut after is not verified")
    fn = t.fn
    if fn is not None:
        st = fn.statement_at_line(line)
        if st is not None and st.end_line != line:
            rep.add("error", "cut-range", f"line {line} is inside {st.sid} (lines "
                    f"{st.line}-{st.end_line})", st=st)
        # how many braces the tail must close: the function's, plus any open block
        prefix = _strip_comments(_region_text(m, fn.line, line))
        opened = prefix.count("{") - prefix.count("}")
        tail = _strip_comments(t.text or "")
        closes = tail.count("}") - tail.count("{")
        if closes != opened:
            rep.add("warning", "cut-block", f"the tail closes {closes} brace(s); {opened} are "
                    f"open after line {line}")
        _check_splice_text(rep, t.text, t.extern, fn, "tail", closes=max(0, closes))


def _check_body(rep: Report) -> None:
    t = rep.target
    if t.fn is None:
        return
    _check_splice_text(rep, t.text, t.extern, t.fn, "stub", need_call=False)
