"""`rrsplice recipe port`: retarget a recipe to another variant of its kernel.

The reference function (where the recipe's lines fall) and the target are aligned statement
by statement (:mod:`rrsplice.workflow.align`); the recipe's region must align one to one, and its
registers and symbols must map one to one. The ported recipe is a new self-contained module:
the cut's lines, the register lists (``A_REGS``, ``RET_REGS``...), the call/insert/tail text
and the constants are rewritten through the maps, then the new recipe is checked against the
target with every check of ``rrsplice check``; nothing is written when the region does not
align (the message names the first point of disagreement) or the check finds errors.

In three steps, as `rrsplice.body` is: `plan_port` aligns, maps every value and decides the
output (raising every refusal but a failed check), `port_render.render_port` writes the
module's text without I/O, and `write_port` checks that text against the target and writes
it atomically.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..infra.cache import load_module
from ..infra.fsutil import write_atomic
from ..ptx.errors import RRSpliceError
from ..ptx.model import Function, Module
from ..ptx.select import SelectionError, function_at, lines_to_range
from .align import Disagreement, align
from .port_render import render_port
from .recipe import Recipe, load_recipe, resolve_module

if TYPE_CHECKING:
    from ..check import Report

PORTABLE_FORMS = ("cut_call", "delete", "cut_after", "debug", "baseline", "replace_body")
_TOKEN = re.compile(r"%[A-Za-z_$][\w$]*|[A-Za-z_$][\w$]*")
_CONST = re.compile(r"^[A-Z][A-Z0-9_]*$")


class PortError(RRSpliceError):
    """The recipe cannot be ported: regions that do not align, or a ported recipe that
    fails its checks (exit 1: a finding about the inputs, not a usage error)."""
    exit_code = 1


@dataclass
class PortResult:
    source: Path
    output: Path | None
    reference: str                   # function names
    target: str
    module: Path
    region: tuple | None = None   # ((a_first, a_last), (b_first, b_last)) statement numbers
    lines: tuple | None = None    # the new (first, end) of a line-based form
    registers: dict = field(default_factory=dict)   # used registers A -> B that changed
    symbols: dict = field(default_factory=dict)
    report: Report | None = None
    text: str = ""

    @property
    def inclusive_lines(self) -> tuple | None:
        """The new lines as messages give them: first..last, inclusive."""
        if not self.lines:
            return None
        if len(self.lines) == 2:
            return (self.lines[0], self.lines[1] - 1)
        return tuple(self.lines)

    def to_json(self) -> dict:
        r = self.region
        return {"ok": True, "recipe": str(self.source),
                "output": str(self.output) if self.output else None,
                "reference": self.reference, "target": self.target, "module": str(self.module),
                "region": ({"reference": f"s{r[0][0]}-s{r[0][1]}",
                            "target": f"s{r[1][0]}-s{r[1][1]}"} if r else None),
                # physical lines, inclusive (the recipe's own CUT_CALL/DELETE are
                # half-open: `cut`)
                "lines": list(self.inclusive_lines or ()) if self.lines else None,
                "cut": list(self.lines) if self.lines else None,
                "registers": self.registers, "symbols": self.symbols,
                "warnings": len(self.report.warnings) if self.report else 0}


def _split_to(to: str) -> tuple[Path, str | None]:
    """`MODULE[:ENTRY]` (a Windows drive letter is not an entry)."""
    m = re.match(r"^(.*\.ptx):([A-Za-z_$][\w$]*)$", to)
    if m:
        return Path(m.group(1)), m.group(2)
    return Path(to), None


def _target_function(module: Module, entry: str | None, rec: Recipe, path: Path) -> Function:
    bodies = [f for f in module.functions if f.has_body]
    if entry:
        for f in bodies:
            if f.name == entry:
                return f
        raise PortError(f"{path} defines no function {entry!r} with a body (it has: "
                        + ", ".join(f.name for f in bodies) + ")")
    if rec.entries:
        from .recipe import matches_family
        fam = [f for f in bodies if matches_family(rec, f.name)]
        if len(fam) == 1:
            return fam[0]
    ents = [f for f in bodies if f.is_entry]
    if len(ents) == 1:
        return ents[0]
    raise PortError(f"{path} has several entries; name one: --to {path}:ENTRY ("
                    + ", ".join(f.name for f in ents) + ")")


def _reference_lines(rec: Recipe) -> tuple[int, int] | None:
    """The physical lines (first, last inclusive) a line-based form acts on."""
    # a recipe's form is the one of its fields that is set (rrsplice.workflow.recipe)
    if rec.form == "cut_call":
        assert rec.cut_call is not None
        return rec.cut_call[0], rec.cut_call[1] - 1
    if rec.form == "delete":
        assert rec.delete is not None
        return rec.delete[0], rec.delete[1] - 1
    if rec.form == "cut_after":
        assert rec.cut_after is not None
        return rec.cut_after, rec.cut_after
    if rec.form == "debug":
        assert rec.debug is not None
        return rec.debug[0], rec.debug[0]
    return None


class _RegDecls:
    """`name in decls`: whether the function's `.reg` declarations declare `name`, ranges
    (`%r<60>`) included -- Function.register_names() lists only the unranged ones."""

    def __init__(self, fn: Function):
        self.decls = [d for d in fn.decls() if d.space == ".reg"]

    def __contains__(self, name: str) -> bool:
        return any(d.declares(name) for d in self.decls)


class _Names(Protocol):
    """What _Mapper asks of the declared registers: `name in declared` (a set, or _RegDecls)."""

    def __contains__(self, name: str) -> bool: ...


class _Mapper:
    """Rewrites names in text and values through the register and symbol maps."""

    def __init__(self, rmap: dict, smap: dict, declared: _Names):
        self.rmap, self.smap, self.declared = rmap, smap, declared
        self.used: dict = {}
        self.unmapped: list = []

    def name(self, tok: str) -> str:
        if tok.startswith("%"):
            if tok in self.rmap:
                if self.rmap[tok] != tok:
                    self.used[tok] = self.rmap[tok]
                return self.rmap[tok]
            if tok in self.declared and tok not in self.unmapped:
                self.unmapped.append(tok)
            return tok
        new = self.smap.get(tok, tok)
        if new != tok:
            self.used[tok] = new
        return new

    def text(self, s: str) -> str:
        return _TOKEN.sub(lambda m: self.name(m.group(0)), s)

    def value(self, v):
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, (list, tuple)):
            out = [self.value(x) for x in v]
            return tuple(out) if isinstance(v, tuple) else out
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        return v


def _plain(v) -> bool:
    if isinstance(v, (str, int, float, bool)) or v is None:
        return True
    if isinstance(v, (list, tuple)):
        return all(_plain(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x) for k, x in v.items())
    return False


def _line_shift(fa, fb, al, line: int, *, at_end: bool) -> int:
    """Map a physical line of the reference that ends (or starts) an aligned statement."""
    for st in fa.statements:
        edge = st.end_line if at_end else st.line
        if edge == line and st.index in al.pairs:
            sb = fb.statements[al.pairs[st.index] - 1]
            return sb.end_line if at_end else sb.line
    raise PortError(f"line {line} of {fa.name} {'ends' if at_end else 'starts'} no aligned "
                    "statement")


@dataclass(frozen=True)
class PortPlan:
    """Every decision of a port: the functions, the aligned region and lines, the ported
    values (constants, texts, `recipe()`'s fields and options, in the order they are
    written), the names that changed, and where the result goes."""
    source: Path                     # the reference recipe
    reference: str                   # function names
    target: str
    reference_module: Path
    module: Path                     # the target module
    target_module: Module
    region: tuple | None             # ((a_first, a_last), (b_first, b_last))
    lines: tuple | None              # the new (first, end) of a line-based form
    consts: tuple[tuple[str, Any], ...]
    texts: tuple[tuple[str, Any], ...]
    body: tuple[tuple[str, str], ...]
    opts: tuple[tuple[str, Any], ...]
    reference_doc: str | None
    fragment_maps: tuple[str, ...]
    registers: dict                  # used registers A -> B that changed
    symbols: dict
    dest: Path
    implicit: bool                   # `dest` is the default output, not one the user named


def port_recipe(recipe, to: str, *, out=None, corpus=None, force: bool = False,
                write: bool = True) -> PortResult:
    """Port `recipe` (a Recipe or path) to `to` (``MODULE[:ENTRY]``); see the module doc."""
    plan = plan_port(recipe, to, out=out, corpus=corpus, force=force, write=write)
    return write_port(plan, render_port(plan), corpus, write=write)


def plan_port(recipe, to: str, *, out=None, corpus=None, force: bool = False,
              write: bool = True) -> PortPlan:
    """Align the reference with the target and map the recipe through the alignment; every
    refusal but the ported recipe's own check is raised here."""
    rec = recipe if isinstance(recipe, Recipe) else load_recipe(recipe)
    _check_portable(rec)
    ref_path, _note = resolve_module(rec, corpus)
    ma = load_module(ref_path)
    mod_path, entry = _split_to(to)
    if not mod_path.is_file():
        raise PortError("no such module", path=mod_path)
    mb = load_module(mod_path)
    fb = _target_function(mb, entry, rec, mod_path)
    fa = _reference_function(rec, ma, ref_path)
    al = align(fa, fb)
    rmap, smap = al.global_maps()
    region, new_lines, maps = _aligned_region(rec, fa, fb, al)
    if maps is not None:
        rmap = {**rmap, **maps[0]}
        smap = {**smap, **maps[1]}
    mp = _Mapper(rmap, smap, _RegDecls(fa))
    dest = Path(out) if out is not None else default_port_output(rec, fb.name)
    if dest.is_dir():
        dest = dest / default_port_output(rec, fb.name).name
    values = _ported_values(rec, mp, fb, new_lines, _file_value(mod_path, rec, corpus, dest))
    fragment_maps = _fragment_maps(fb, values["consts"], region)
    if mp.unmapped:
        raise PortError(f"cannot port {rec.path.name} to {fb.name}: the recipe names "
                        + ", ".join(mp.unmapped[:8]) + " which the alignment does not map "
                        "(no aligned statement uses them)")
    _check_dest(dest, rec, force=force, write=write)
    return PortPlan(
        source=rec.path, reference=fa.name, target=fb.name, reference_module=ref_path,
        module=mod_path, target_module=mb, region=region, lines=new_lines,
        consts=tuple(values["consts"].items()), texts=tuple(values["texts"].items()),
        body=tuple(values["body"].items()), opts=tuple(values["opts"].items()),
        reference_doc=rec.doc, fragment_maps=fragment_maps,
        registers={k: v for k, v in mp.used.items() if k.startswith("%")},
        symbols={k: v for k, v in mp.used.items() if not k.startswith("%")},
        dest=dest, implicit=out is None)


def _check_portable(rec: Recipe) -> None:
    if rec.form not in PORTABLE_FORMS:
        raise PortError(f"the {rec.form} form cannot be ported", path=rec.path)
    if rec.form == "debug" and callable(rec.debug_block):
        raise PortError("debug_block is a function; its text cannot be "
                        "rewritten (port the cut form, or give the block as text)", path=rec.path)
    if any(callable(r["replace"]) for r in rec.rewrites):
        raise PortError("a rewrite rule's replace= is a function; only "
                        "templates can be ported", path=rec.path)


def _reference_function(rec: Recipe, ma: Module, ref_path: Path) -> Function:
    """The function of the reference module the recipe acts on."""
    lines = _reference_lines(rec)
    if lines is not None:
        fa = function_at(ma, lines[0])
    elif rec.form == "replace_body" and isinstance(rec.replace_body, str):
        fa = next((f for f in ma.functions if f.name == rec.replace_body), None)
    else:
        fa = rec.entry_function(ma)
    if fa is None:
        raise PortError(f"cannot tell which function of {ref_path.name} the "
                        "recipe acts on", path=rec.path)
    return fa


def _aligned_region(rec: Recipe, fa: Function, fb: Function, al) -> tuple:
    """(the region's statements in both functions or None, the form's new lines or None,
    the region's own register and symbol maps or None) for a line-based form; a region
    that does not align one to one is refused at its first disagreement."""
    lines = _reference_lines(rec)
    if rec.form in ("cut_after", "debug"):
        assert lines is not None  # a line-based form
        return None, (_line_shift(fa, fb, al, lines[0], at_end=True),), None
    if rec.form not in ("cut_call", "delete"):
        return None, None, None
    assert lines is not None  # a line-based form
    try:
        rng = lines_to_range(fa, *lines)
    except SelectionError as exc:
        raise PortError(str(exc), path=rec.path) from None
    got = al.region(rng.first, rng.last)
    if isinstance(got, Disagreement):
        raise PortError(f"cannot port {rec.path.name} to {fb.name}: " + got.render(fa, fb))
    maps = al.map_names(rng.first, rng.last)
    if isinstance(maps, Disagreement):
        raise PortError(f"cannot port {rec.path.name} to {fb.name}: " + maps.render(fa, fb))
    sa1, sa2 = fa.statements[rng.first - 1], fa.statements[rng.last - 1]
    sb1, sb2 = fb.statements[got[0] - 1], fb.statements[got[1] - 1]
    span = rec.cut_call if rec.form == "cut_call" else rec.delete
    assert span is not None  # the form's own field
    first, end = span
    new_lines = (first + sb1.line - sa1.line, end + sb2.end_line - sa2.end_line)
    return ((rng.first, rng.last), got), new_lines, maps


def _check_dest(dest: Path, rec: Recipe, *, force: bool, write: bool) -> None:
    if dest.exists() and not force and write:
        raise PortError(f"{dest} exists; use --force to overwrite it")
    if dest.resolve() == rec.path.resolve():
        raise PortError(f"refusing to write over the recipe {rec.path}")
    if dest.suffix != ".py":
        from ..infra.fsutil import WriteError
        raise WriteError(dest, "a recipe is imported as Python, so its file name must end in "
                         ".py; choose another -o", "bad-output")


def write_port(plan: PortPlan, text: str, corpus=None, *, write: bool = True) -> PortResult:
    """Check `text` (the ported recipe) against the target, before anything is written --
    what the check says about the temporary copy is said about the output -- and write it
    atomically to `plan.dest` when it is clean (and `write`)."""
    from ..check import check_recipe
    dest, target = plan.dest, plan.target
    with tempfile.TemporaryDirectory(prefix="rrsplice-port-") as tmp:
        probe = Path(tmp) / dest.name

        def named(text: str) -> str:
            return text.replace(str(probe), str(dest)).replace(str(tmp), str(dest.parent))
        probe.write_text(text)
        try:
            ported = load_recipe(probe)
            rep = check_recipe(ported, corpus, module_path=plan.module, module=plan.target_module)
        except RRSpliceError as exc:
            raise PortError(named(f"the recipe ported to {target} does not load; nothing "
                                  f"written: {exc.diagnostic()}")) from None
        errors = [named(f.render()) for f in rep.errors[:12]]
    if not rep.ok:
        raise PortError(f"the recipe ported to {target} fails its checks; nothing written:\n"
                        + "\n".join("  " + e for e in errors))
    res = PortResult(source=plan.source, output=None, reference=plan.reference, target=target,
                     module=plan.module, region=plan.region, lines=plan.lines,
                     registers=plan.registers, symbols=plan.symbols, report=rep, text=text)
    if write:
        write_atomic(dest, text.encode("utf-8"), protect=(plan.source, plan.module),
                     implicit=plan.implicit)
        res.output = dest
    return res


def default_port_output(rec: Recipe, entry: str) -> Path:
    """`<recipe dir>/<recipe stem>.<target entry>.py`."""
    return rec.path.parent / f"{rec.path.stem}.{entry}.py"


def _file_value(mod_path: Path, rec: Recipe, corpus, dest: Path | None = None) -> str:
    """The target module's name when the corpus lookup (from where the ported recipe is
    written) finds that very file, else its path relative to the ported recipe (as
    `recipe new` writes it: the recipe keeps working when the tree is moved)."""
    from .recipe import corpus_dirs
    where = (dest.resolve().parent if dest is not None else rec.path.parent)
    for d, _why in corpus_dirs(corpus, where):
        cand = d / mod_path.name
        if cand.is_file():
            try:
                if os.path.samefile(cand, mod_path):
                    return mod_path.name
            except OSError:
                pass
            break
    rel = os.path.relpath(mod_path.resolve(), where)
    return rel if os.sep in rel else f"./{rel}"




def _ported_values(rec: Recipe, mp: _Mapper, fb: Function, new_lines,
                   file_value: str) -> dict[str, dict]:
    """The ported recipe's values through `mp`, in the order they are written: "consts"
    (the reference's plain constants, MODULE/ENTRY/the form's lines replaced), "texts"
    (its PTX texts), "body" (`recipe()`'s fields: the names they take) and "opts"."""
    mod = rec.module
    consts = {}
    for name in sorted(vars(mod)):
        if _CONST.match(name) and _plain(getattr(mod, name)):
            consts[name] = mp.value(getattr(mod, name))
    consts["MODULE"] = file_value
    consts["ENTRY"] = fb.name
    if rec.form == "cut_call" and new_lines:
        consts["CUT_CALL"] = tuple(new_lines)
    body = {"file": "MODULE", "entry": "ENTRY"}
    texts: dict = {}
    form_values = _FORM_VALUES.get(rec.form)
    if form_values is not None:
        form_values(rec, mp, new_lines, consts, texts, body)
    if rec.extern is not None:
        texts["EXTERN"] = mp.text(rec.extern)
        body["extern"] = "EXTERN"
    for k in texts:
        consts.pop(k, None)
    return {"consts": consts, "texts": texts, "body": body, "opts": _port_options(rec, mp)}


def _cut_call_values(rec: Recipe, mp: _Mapper, new_lines, consts, texts, body) -> None:
    body["cut_call"] = "CUT_CALL"
    assert rec.call is not None  # a cut_call recipe has its call text
    texts["CALL"] = mp.text(rec.call)
    body["call"] = "CALL"


def _delete_values(rec: Recipe, mp: _Mapper, new_lines, consts, texts, body) -> None:
    consts["DELETE"] = tuple(new_lines)
    body["delete"] = "DELETE"
    assert rec.insert is not None  # a delete recipe has its insert text
    texts["INSERT"] = mp.text(rec.insert)
    body["insert"] = "INSERT"
    if rec.delete_check:
        texts["DELETE_CHECK"] = tuple(mp.text(x) if x is not None else None
                                      for x in rec.delete_check)
        body["delete_check"] = "DELETE_CHECK"


def _cut_after_values(rec: Recipe, mp: _Mapper, new_lines, consts, texts, body) -> None:
    consts["CUT_AFTER"] = new_lines[0]
    body["cut_after"] = "CUT_AFTER"
    assert rec.tail is not None  # a cut_after recipe has its tail
    texts["TAIL"] = mp.text(rec.tail)
    body["tail"] = "TAIL"
    if rec.cut_check is not None:
        texts["CUT_CHECK"] = mp.text(rec.cut_check)
        body["cut_check"] = "CUT_CHECK"


def _debug_values(rec: Recipe, mp: _Mapper, new_lines, consts, texts, body) -> None:
    assert rec.debug is not None  # a debug recipe has its point
    consts["DEBUG"] = (new_lines[0], [mp.text(r) for r in rec.debug[1]])
    body["debug"] = "DEBUG"
    if rec.debug_block is not None:
        texts["DEBUG_BLOCK"] = mp.text(rec.debug_block)
        body["debug_block"] = "DEBUG_BLOCK"


def _replace_body_values(rec: Recipe, mp: _Mapper, new_lines, consts, texts, body) -> None:
    assert rec.stub is not None  # a replace_body recipe has its stub
    texts["STUB"] = mp.text(rec.stub)
    body["replace_body"] = "ENTRY"
    body["stub"] = "STUB"


# form -> what it adds to the ported constants, texts and recipe() fields, in their order
_FORM_VALUES = {"cut_call": _cut_call_values, "delete": _delete_values,
                "cut_after": _cut_after_values, "debug": _debug_values,
                "replace_body": _replace_body_values}


def _port_options(rec: Recipe, mp: _Mapper) -> dict:
    """`recipe()`'s options besides the form's fields (rewrite rules through `mp`)."""
    opts: dict = {}
    if rec.sust:
        opts["sust"] = rec.sust
    if rec.rz_round:
        opts["rz_round"] = True
    if rec.rewrites:
        opts["rewrites"] = [mp.value(dict(r)) for r in rec.rewrites]
    if rec.entries:
        opts["entries"] = rec.entries
    return opts


def _fragment_maps(fb: Function, consts: dict, region) -> tuple[str, ...]:
    """The fragment maps of the TARGET's registers (A_REGS, C_REGS, RET_REGS), recomputed
    as `recipe new` writes them; () without a region or those lists."""
    groups = [(k, consts[k], way) for k, way in (("A_REGS", "in"), ("C_REGS", "in"),
                                                  ("RET_REGS", "out"))
              if isinstance(consts.get(k), list)]
    if not groups or region is None:
        return ()
    from ..fragments.report import cut_lines
    from ..infra.cache import load_analysis
    from ..ptx.select import StatementRange
    (b_first, b_last) = region[1]
    assert fb.module is not None  # a parsed function knows its module
    return tuple(cut_lines(fb, load_analysis(fb.module, fb), StatementRange(b_first, b_last),
                           groups))
