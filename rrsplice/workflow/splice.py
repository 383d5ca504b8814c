"""Recipe -> edits -> patched PTX, written atomically.

Edits are byte spans of the original file (rrsplice.emit), so everything outside the
replaced lines and the inserted ``.extern`` declaration is the input, byte for byte. Inserted
text is converted to the file's own line ending (CRLF files stay CRLF).

Where the output goes (``apply`` without ``-o``): ``out/`` next to the PTX module, named
``<module stem>.<recipe stem>.ptx`` (``.<stage>.debug.ptx`` for a debug stage), e.g.
``corpus_fixtures/out/0021-PREPASS_ENTRYPOINT_NAME.swin_dec2.ptx``. ``-o`` may name a file or
an existing directory. The input is never overwritten.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..check import CheckFailed, Report, Target, check_recipe, debug_block_text
from ..infra.arch import arch_number, check_buildable, module_arch
from ..infra.cache import load_module
from ..infra.fsutil import same_file, write_atomic  # noqa: F401  (write_atomic: re-exported)
from ..ptx.emit import Edit, emit, line_byte_offsets, newline_of
from ..ptx.errors import ParseError, RRSpliceError
from ..ptx.parser import parse_bytes
from .recipe import Recipe, load_recipe, resolve_module

if TYPE_CHECKING:
    from ..rewrite.rules import RewritePlan


class ApplyError(RRSpliceError):
    """The recipe could not be applied (bad output path, output that does not parse)."""


@dataclass
class ApplyResult:
    recipe: Recipe
    report: Report
    input: Path
    output: Path | None
    edits: list = field(default_factory=list)
    assembled: list = field(default_factory=list)   # tools.AssembleResult per arch
    seconds: float = 0.0
    bytes_in: int = 0
    bytes_out: int = 0

    @property
    def ok(self) -> bool:
        return self.report.ok and all(a.ok for a in self.assembled)

    def to_json(self) -> dict:
        f = self.report.facts.to_json()
        return {"ok": self.ok, "recipe": str(self.recipe.path), "form": self.recipe.form,
                "input": str(self.input), "output": str(self.output) if self.output else None,
                "note": self.report.target.note if self.report.target else None,
                "function": f.get("function"), "lines": f.get("lines"),
                "statements": f.get("statements"), "statement_count": f.get("statement_count"),
                "mma": f.get("mma"), "phases": f.get("phases"),
                "passed": f.get("passed", []), "returned": f.get("returned", []),
                "live_in": f.get("live_in"), "live_out": f.get("live_out"),
                "stage": f.get("stage"), "scratch": f.get("scratch"),
                "rewrites": f.get("rewrites"),
                "edits": [{"start": e.start, "end": e.end, "bytes": len(e.text), "why": e.why}
                          for e in self.edits],
                "bytes_in": self.bytes_in, "bytes_out": self.bytes_out,
                "ptxas": [{"arch": a.arch, "ok": a.ok, "log": a.log[-4000:]}
                          for a in self.assembled],
                "warnings": len(self.report.warnings),
                "findings": [x.to_json() for x in self.report.findings],
                "seconds": round(self.seconds, 4)}


def _nl(text: str, nl: bytes) -> bytes:
    b = text.encode("utf-8")
    if nl != b"\n":
        b = b.replace(b"\r\n", b"\n").replace(b"\n", nl)
    return b


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


class _Ctx:
    """What every edit builder needs: the module's bytes, line ending and line offsets."""

    def __init__(self, target: Target):
        self.t = target
        self.m = target.module
        self.data = self.m.data
        self.nl = newline_of(self.data)
        self.offs = line_byte_offsets(self.data)

    def line_start(self, line: int) -> int:     # byte offset where physical line `line` starts
        return self.offs[line - 1] if line - 1 < len(self.offs) else len(self.data)

    def after(self, line: int) -> tuple[int, bytes]:
        """Where text inserted after `line` goes, and the newline it needs first."""
        pos = self.line_start(line + 1)
        prefix = b"" if pos == 0 or self.data[pos - 1:pos] == b"\n" else self.nl
        return pos, prefix


def _edits_region(c: _Ctx) -> list[Edit]:
    t = c.t
    a, last = t.first_line, t.last_line
    assert a is not None and last is not None and t.text is not None  # set for a region
    return [Edit(c.line_start(a), c.line_start(last + 1),
                 _nl(_with_newline(t.text), c.nl), f"lines {a}-{last}")]


def _edits_point(c: _Ctx) -> list[Edit]:
    t = c.t
    assert t.fn is not None and t.first_line is not None  # set for a point
    text = debug_block_text(t.recipe, t, t.fn)
    pos, prefix = c.after(t.first_line)
    return [Edit(pos, pos, prefix + _nl(_with_newline(text), c.nl),
                 f"debug stage after line {t.first_line}")]


def _edits_truncate(c: _Ctx) -> list[Edit]:
    t = c.t
    assert t.first_line is not None and t.text is not None  # set for a truncation
    pos, prefix = c.after(t.first_line)
    return [Edit(pos, len(c.data), prefix + _nl(t.text, c.nl),
                 f"truncate after line {t.first_line}")]


def _edits_body(c: _Ctx) -> list[Edit]:
    t = c.t
    assert t.fn is not None and t.text is not None  # set for a body target
    b = t.fn.body
    assert b is not None  # a body target is a function with a body
    s, e = c.m.byte_offset(b.start) + 1, c.m.byte_offset(b.end) - 1
    return [Edit(s, e, c.nl + _nl(_with_newline(t.text.strip("\r\n")), c.nl),
                 f"body of {t.fn.name}")]


# target kind -> the edits that realise it (rrsplice.workflow.forms says which form targets what)
KIND_EDITS = {"region": _edits_region, "point": _edits_point, "truncate": _edits_truncate,
              "body": _edits_body, "none": lambda c: []}


def build_edits(target: Target) -> list[Edit]:
    """The byte edits that realise the recipe (or debug stage) on the target module: the
    form's own edit, the statement rewrites, the extern declaration."""
    c = _Ctx(target)
    edits = KIND_EDITS[target.kind](c)
    if target.rewrites is not None:
        edits += cast("RewritePlan", target.rewrites).edits(c.m)
    fn = target.fn
    if target.extern and fn is not None and target.kind != "point":
        pos = c.line_start(fn.line)
        edits.append(Edit(pos, pos, _nl(_with_newline(target.extern), c.nl) + c.nl,
                          f"extern before {fn.name}"))
    return edits


def default_output(input_path: Path, rec: Recipe, stage: str | None = None) -> Path:
    """`out/<module stem>.<recipe stem>[.<stage>.debug].ptx` next to the module."""
    name = f"{input_path.stem}.{rec.path.stem}"
    if stage:
        from .recipe import check_stage_name
        name += f".{check_stage_name(rec.path, stage)}.debug"
    return input_path.parent / "out" / (name + ".ptx")


def apply(recipe, *, corpus=None, out=None, stage: str | None = None,
          ptxas: list | None = None, write: bool = True, check: bool = True,
          any_module: bool = False) -> ApplyResult:
    """Check the recipe, build the edits, re-parse the output and write it atomically.

    `recipe` is a Recipe or a path. `out` a file or an existing directory (default:
    :func:`default_output`). `stage` a debug-stage name (the recipe's `stages()` table; the
    recipe's cut is not applied then). `ptxas` a list of architectures ("sm_89") to assemble
    the output for with `ptxas -c`. Raises CheckFailed when the check finds errors.
    """
    t0 = time.perf_counter()
    rec = recipe if isinstance(recipe, Recipe) else load_recipe(recipe)
    if stage is not None:
        from ..check import recipe_for_stage
        rec, stage = recipe_for_stage(rec, stage)
    if ptxas:
        # before anything is written: an unknown architecture or a missing assembler is an
        # error, not a failure after the output exists
        from ..infra.tools import require_tool
        for arch in ptxas:
            arch_number(arch)
        require_tool("ptxas")
    path, note = resolve_module(rec, corpus, any_module=any_module)
    module = load_module(path)
    for arch in ptxas or ():
        check_buildable(arch, module_arch(module), path, option="--ptxas")
    report = check_recipe(rec, module_path=path, module=module, stage=stage)
    if report.target is not None and note:
        report.target.note = note
    if check and not report.ok:
        raise CheckFailed(report)
    edits = build_edits(report.target)
    data = emit(module, edits)
    res = ApplyResult(recipe=rec, report=report, input=Path(path), output=None, edits=edits,
                      bytes_in=len(module.data), bytes_out=len(data))
    if out is None:
        dest = default_output(Path(path), rec, report.target.stage
                              if report.target.kind == "point" else None)
    else:
        dest = Path(out)
        if dest.is_dir():
            dest = dest / default_output(Path(path), rec, stage).name
    if same_file(Path(path), dest):
        raise ApplyError(f"refusing to write over the input module {path}; choose another -o",
                         path=dest, code="output-is-input")
    if same_file(rec.path, dest):
        raise ApplyError(f"refusing to write over the recipe {rec.path}; choose another -o",
                         path=dest, code="output-is-input")
    try:
        parse_bytes(data, str(dest))
    except ParseError as exc:
        raise ApplyError("the patched module does not parse; nothing written:\n"
                         + exc.render()) from None
    if write:
        write_atomic(dest, data, protect=(path, rec.path), implicit=out is None)
        res.output = dest
    res.seconds = time.perf_counter() - t0
    if ptxas and write:
        from ..infra.tools import ptxas as run_ptxas
        with tempfile.TemporaryDirectory(prefix="rrsplice-ptxas-") as tmp:
            for arch in ptxas:
                r = run_ptxas(dest, arch, out=Path(tmp) / f"{arch}.cubin", verbose=False)
                r.output = None
                res.assembled.append(r)
    return res
