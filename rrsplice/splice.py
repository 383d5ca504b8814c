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
from typing import Optional

from .cache import load_module
from .check import CheckFailed, Report, Target, check_recipe, debug_block_text
from .emit import Edit, emit, line_byte_offsets, newline_of
from .errors import ParseError, RRSpliceError
from .parser import parse_bytes
from .arch import arch_number, check_buildable, module_arch
from .recipe import Recipe, load_recipe, resolve_module
from .fsutil import write_atomic  # noqa: F401  (re-exported for callers of splice)


class ApplyError(RRSpliceError):
    """The recipe could not be applied (bad output path, output that does not parse)."""


@dataclass
class ApplyResult:
    recipe: Recipe
    report: Report
    input: Path
    output: Optional[Path]
    edits: list = field(default_factory=list)
    assembled: list = field(default_factory=list)   # tools.AssembleResult per arch
    seconds: float = 0.0
    bytes_in: int = 0
    bytes_out: int = 0

    @property
    def ok(self) -> bool:
        return self.report.ok and all(a.ok for a in self.assembled)

    def to_json(self) -> dict:
        f = self.report.facts
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


def build_edits(target: Target) -> list[Edit]:
    """The byte edits that realise the recipe (or debug stage) on the target module."""
    m = target.module
    data = m.data
    nl = newline_of(data)
    offs = line_byte_offsets(data)
    rec = target.recipe
    fn = target.fn
    edits: list[Edit] = []

    def line_start(line: int) -> int:      # byte offset where physical line `line` starts
        return offs[line - 1] if line - 1 < len(offs) else len(data)

    if target.kind == "region":
        a, last = target.first_line, target.last_line
        edits.append(Edit(line_start(a), line_start(last + 1),
                          _nl(_with_newline(target.text), nl), f"lines {a}-{last}"))
    elif target.kind == "point":
        text = debug_block_text(rec, target, fn)
        pos = line_start(target.first_line + 1)
        prefix = b"" if pos == 0 or data[pos - 1:pos] == b"\n" else nl
        edits.append(Edit(pos, pos, prefix + _nl(_with_newline(text), nl),
                          f"debug stage after line {target.first_line}"))
    elif target.kind == "truncate":
        pos = line_start(target.first_line + 1)
        prefix = b"" if pos == 0 or data[pos - 1:pos] == b"\n" else nl
        edits.append(Edit(pos, len(data), prefix + _nl(target.text, nl),
                          f"truncate after line {target.first_line}"))
    elif target.kind == "body":
        b = fn.body
        s, e = m.byte_offset(b.start) + 1, m.byte_offset(b.end) - 1
        edits.append(Edit(s, e, nl + _nl(_with_newline(target.text.strip("\r\n")), nl),
                          f"body of {fn.name}"))
    if target.rewrites is not None:
        edits += target.rewrites.edits(m)
    if target.extern and fn is not None and target.kind != "point":
        pos = line_start(fn.line)
        edits.append(Edit(pos, pos, _nl(_with_newline(target.extern), nl) + nl,
                          f"extern before {fn.name}"))
    return edits


def default_output(input_path: Path, rec: Recipe, stage: Optional[str] = None) -> Path:
    """`out/<module stem>.<recipe stem>[.<stage>.debug].ptx` next to the module."""
    name = f"{input_path.stem}.{rec.path.stem}"
    if stage:
        name += f".{stage}.debug"
    return input_path.parent / "out" / (name + ".ptx")


def _same_file(a: Path, b: Path) -> bool:
    from .fsutil import same_file
    return same_file(a, b)


def apply(recipe, *, corpus=None, out=None, stage: Optional[str] = None,
          ptxas: Optional[list] = None, write: bool = True, check: bool = True,
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
        from .check import recipe_for_stage
        rec, stage = recipe_for_stage(rec, stage)
    if ptxas:
        # before anything is written: an unknown architecture or a missing assembler is an
        # error, not a failure after the output exists
        from .tools import require_tool
        for arch in ptxas:
            arch_number(arch)
        require_tool("ptxas")
    path, note = resolve_module(rec, corpus, any_module=any_module)
    module = load_module(path)
    for arch in ptxas or ():
        check_buildable(arch, module_arch(module), path)
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
    if _same_file(Path(path), dest):
        raise ApplyError(f"refusing to write over the input module {path}; choose another -o")
    if _same_file(rec.path, dest):
        raise ApplyError(f"refusing to write over the recipe {rec.path}; choose another -o")
    try:
        parse_bytes(data, str(dest))
    except ParseError as exc:
        raise ApplyError("the patched module does not parse; nothing written:\n"
                         + exc.render()) from None
    if write:
        write_atomic(dest, data, protect=(path, rec.path))
        res.output = dest
    res.seconds = time.perf_counter() - t0
    if ptxas and write:
        from .tools import ptxas as run_ptxas
        with tempfile.TemporaryDirectory(prefix="rrsplice-ptxas-") as tmp:
            for arch in ptxas:
                r = run_ptxas(dest, arch, out=Path(tmp) / f"{arch}.cubin", verbose=False)
                r.output = None
                res.assembled.append(r)
    return res
