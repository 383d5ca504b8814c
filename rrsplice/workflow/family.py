"""Families: one recipe applied to every kernel of a corpus that its `entries` pattern names.

For each ``.ptx`` of the directory (name order) and each of its entries the recipe's family
pattern matches (without a pattern: the recipe's own entry), the recipe is applied:

* to its own module and entry, as it is;
* to another kernel, a recipe that only rewrites statements (no cut) is re-pointed at it;
  a recipe with a cut is first ported (:mod:`rrsplice.workflow.port`: aligned, renamed, re-checked);
  a kernel whose code does not align is *refused* with the first point of disagreement.

Work is spread over processes (each imports the recipe itself); results come back in corpus
order, so the summary is the same whatever the parallelism.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..ptx.diagnostic import Diagnostic
from ..ptx.errors import RRSpliceError
from .recipe import Recipe, load_recipe, matches_family, resolve_module

_ENTRY = re.compile(rb"\.entry\s+([A-Za-z_$][\w$]*)\s*\(")


@dataclass
class FamilyRow:
    module: str
    entry: str
    status: str                   # ok | refused | failed
    how: str = ""                 # "as written" | "re-pointed" | "ported"
    output: str | None = None
    rewrites: dict = field(default_factory=dict)
    statements: str | None = None
    message: str = ""

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def family_targets(rec: Recipe, directory: Path, *, warn: bool = False
                   ) -> list[tuple[Path, str]]:
    """(module, entry) pairs of `directory` the recipe applies to, in name order. A
    `*.ptx` that is not a readable regular file (a FIFO, a device, a link to one, too
    large) is skipped, never opened in a way that could hang; `warn`: say so on stderr."""
    from ..infra.fsutil import InputError, read_input
    own = rec.entry
    out = []
    for ptx in sorted(Path(directory).glob("*.ptx")):
        try:
            data = read_input(ptx, what="PTX file")
        except InputError as exc:
            if warn:
                import sys
                sys.stderr.write(Diagnostic("warning", exc.code, f"{exc.message}; skipped",
                                            exc.path).format() + "\n")
            continue
        for m in _ENTRY.finditer(data):
            name = m.group(1).decode()
            if (matches_family(rec, name) if rec.entries is not None else name == own):
                out.append((ptx, name))
    return out


def _apply_one(recipe_path: str, module: str, entry: str, out: str | None,
               debug: str | None) -> FamilyRow:
    from ..check import CheckFailed
    from .port import PortError, port_recipe
    from .splice import apply
    row = FamilyRow(module=Path(module).name, entry=entry, status="failed")
    try:
        rec = load_recipe(recipe_path, debug=debug)
        own_path, _ = resolve_module(rec, Path(module).parent)
        same = (os.path.samefile(own_path, module) and rec.entry in (None, entry))
        if same:
            target, row.how = rec, "as written"
        elif rec.form in ("baseline",):
            target = dataclasses.replace(rec, file=str(Path(module).resolve()),
                                         entry_key=entry)
            row.how = "re-pointed"
        else:
            import tempfile
            with tempfile.TemporaryDirectory(prefix="rrsplice-family-") as tmp:
                pr = port_recipe(rec, f"{module}:{entry}", out=Path(tmp) / "ported.py",
                                 corpus=Path(module).parent, force=True)
                target = load_recipe(pr.output)
                target.path = rec.path          # outputs are named after the family recipe
            row.how = "ported"
            if pr.region:
                row.statements = f"s{pr.region[1][0]}-s{pr.region[1][1]}"
        res = apply(target, corpus=Path(module).parent, out=out)
        row.status = "ok" if res.ok else "failed"
        row.output = str(res.output) if res.output else None
        plan = res.report.facts.rewrites
        row.rewrites = plan.counts if plan is not None else {}
        row.statements = row.statements or res.report.facts.statements
    except PortError as exc:
        row.status, row.message = "refused", str(exc)
    except CheckFailed as exc:
        row.message = "; ".join(f.render() for f in exc.report.errors[:3])
    except RRSpliceError as exc:
        row.message = exc.render()
    return row


def apply_family(recipe_path, directory, *, out=None, jobs: int | None = None,
                 debug: str | None = None,
                 progress: Callable[[FamilyRow], None] | None = None) -> list[FamilyRow]:
    """Apply the recipe to every kernel of `directory` it names; rows in corpus order.

    `out`: an existing directory for every output (default `out/` beside each module);
    `jobs`: worker processes (default: the CPU count; 1 runs in this process)."""
    rec = load_recipe(recipe_path, debug=debug)
    directory = Path(directory)
    if not directory.is_dir():
        raise RRSpliceError("not a directory", path=directory)
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
    targets = family_targets(rec, directory, warn=True)
    args = [(str(recipe_path), str(m), e, str(out) if out else None, debug) for m, e in targets]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(args) or 1))
    rows: list = [None] * len(args)
    if jobs == 1:
        for i, a in enumerate(args):
            rows[i] = _apply_one(*a)
            if progress:
                progress(rows[i])
        return rows
    from ..infra.workers import outcome, worker_pool
    with worker_pool(jobs) as ex:
        futs = {ex.submit(_apply_one, *a): i for i, a in enumerate(args)}
        from concurrent.futures import as_completed
        for f in as_completed(futs):
            i = futs[f]
            rows[i] = outcome(f, lambda why, a=args[i]: FamilyRow(
                module=Path(a[1]).name, entry=a[2], status="failed", message=why))
            if progress:
                progress(rows[futs[f]])
    return rows
