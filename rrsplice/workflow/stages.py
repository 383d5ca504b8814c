"""`rrsplice stages new`: add a debug stage to a recipe's `stages()` table.

A stage is a point (the physical line after which to insert) plus the registers to store
there, so the same values can be compared with the native body's. Stage names are
qualified by the recipe's layer (``dec2.p1_out``), so two layers' stages never collide and a
``--debug dec1.x`` given to the dec2 recipe is refused instead of silently resolving.

The table lives in the recipe module between two marker comments, which this command
rewrites (everything else in the file is left alone)::

    # --- debug stages (rrsplice stages new) ---
    STAGES = {
        "dec2.p1_out": (2396, ["%r2083", "%r2084"]),
    }


    def stages():
        return dict(STAGES)
    # --- end debug stages ---

`rrsplice apply RECIPE --debug dec2.p1_out` then keeps the whole body and inserts the
recipe's `debug_block(regs)` (or the built-in block, see rrsplice.check.builtin_debug_block)
after that line.

In three steps, as `rrsplice.body` is: `plan_stage` decides the stage (its point, registers
and qualified name) and checks it as `check --debug` does; `render_table` /
`render_recipe_text` write the table into the recipe's text, without I/O; `write_stage`
merges the stage into the table the file holds, under a lock on the recipe, and writes it
atomically.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..check import Report, Target, check_point, qualify_stage
from ..ptx.errors import RRSpliceError
from ..ptx.select import function_at
from .recipe import Recipe, RecipeError, load_recipe, resolve_module

BEGIN = "# --- debug stages (rrsplice stages new) ---"
END = "# --- end debug stages ---"


class StageError(RRSpliceError):
    """The stage cannot be added (bad point, undefined registers, name clash, ...)."""


@dataclass(frozen=True)
class StagePlan:
    """One stage to add, checked: where it goes and what it stores."""
    path: Path                 # the recipe file
    recipe: Recipe             # as loaded when the stage was planned
    module: Path               # the module it was checked against
    function: str
    name: str                  # qualified by the recipe's layer
    line: int                  # the physical line after which the registers are stored
    registers: tuple[str, ...]
    after: str | None          # the statement that line ends (`check --debug`'s reading)

    def to_json(self) -> dict:
        return {"recipe": str(self.path), "name": self.name, "line": self.line,
                "after": self.after, "registers": list(self.registers),
                "function": self.function}


def render_table(table: dict) -> str:
    """The marked block holding `table` (name -> (line, [registers])) and `stages()`."""
    rows = []
    for name, (line, regs) in table.items():
        regs_txt = ", ".join(f'"{r}"' for r in regs)
        row = f'    "{name}": ({line}, [{regs_txt}]),'
        if len(row) > 92:
            chunks = [", ".join(f'"{r}"' for r in regs[i:i + 6]) for i in range(0, len(regs), 6)]
            row = (f'    "{name}": ({line}, [\n        ' + ",\n        ".join(chunks)
                   + ",\n    ]),")
        rows.append(row)
    body = "\n".join(rows)
    return (f"{BEGIN}\n# name -> (physical line after which the registers are stored, "
            f"[registers]); names are\n# qualified by layer. Build one with: "
            f"rrsplice apply RECIPE --debug NAME\nSTAGES = {{\n{body}\n}}\n\n\n"
            f"def stages():\n    \"\"\"Debug stages: name -> (line, [registers]).\"\"\"\n"
            f"    return dict(STAGES)\n{END}\n")


def _split_regs(text: str) -> list:
    regs = [r for r in re.split(r"[\s,]+", text.strip()) if r]
    for r in regs:
        if not re.fullmatch(r"%?[A-Za-z_$][A-Za-z0-9_$.]*", r):
            raise StageError(f"{r!r} is not a register name")
    return regs


def _table_in(path: Path, text: str, rec) -> dict:
    """The stages table as the file holds it now: the literal between the markers (what
    this command writes), else what the recipe's `stages()` returned when it was loaded."""
    import ast
    block = text[text.index(BEGIN):text.index(END)]
    m = re.search(r"^STAGES = (\{.*?^\})", block, re.S | re.M)
    if m is not None:
        try:
            table = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            table = None
        if isinstance(table, dict):
            return table
    return rec.stages()


def add_stage(recipe, *, at: str | None = None, line: int | None = None,
              regs=None, phase: int | None = None, name: str | None = None,
              corpus=None, any_module: bool = False) -> dict:
    """Add (or replace nothing: a clash is an error) one stage; returns what was added."""
    plan = plan_stage(recipe, at=at, line=line, regs=regs, phase=phase, name=name,
                      corpus=corpus, any_module=any_module)
    write_stage(plan)
    return plan.to_json()


def plan_stage(recipe, *, at: str | None = None, line: int | None = None,
               regs=None, phase: int | None = None, name: str | None = None,
               corpus=None, any_module: bool = False) -> StagePlan:
    """The stage `add_stage` adds, validated like `check --debug` validates a point; every
    refusal but a name clash (which `write_stage` finds in the file) is raised here."""
    from ..infra.cache import load_module
    path = Path(recipe)
    rec = load_recipe(path)
    if sum(x is not None for x in (at, line, phase)) != 1:
        raise StageError("give exactly one of --at sN, --line L, --phase P")
    if phase is None and not regs:
        raise StageError("--regs is required with --at/--line (--phase picks its own)")
    mpath, _note = resolve_module(rec, corpus, any_module=any_module)
    m = load_module(mpath)
    fn = rec.entry_function(m)
    if fn is None:
        raise StageError(f"cannot tell which function {path.name} is for", path=mpath)
    reg_list = _split_regs(regs) if isinstance(regs, str) else list(regs or [])
    line, default = _stage_point(m, fn, rec.layer, at=at, line=line, phase=phase,
                                 reg_list=reg_list)
    qname = _stage_name(rec, name, default)
    after = _check_stage(rec, Path(mpath), m, line, qname, reg_list)
    return StagePlan(path=path, recipe=rec, module=Path(mpath), function=fn.name, name=qname,
                     line=line, registers=tuple(reg_list), after=after)


def _stage_point(m, fn, layer: str, *, at, line, phase, reg_list: list) -> tuple[int, str]:
    """(the line after which to store, the stage's default name) for `--at`, `--phase`
    or `--line`; `--phase` without `--regs` fills `reg_list` with the registers its
    chains end in."""
    if at is not None:
        try:
            st = fn.statement(at)
        except (KeyError, ValueError):
            raise StageError(f"{fn.name} has no statement {at!r} (s1-s{len(fn.statements)})"
                             ) from None
        return st.end_line, f"{layer}.{st.sid}"
    if phase is None:
        assert line is not None  # each of --at / --line / --phase gives one
        return line, f"{layer}.L{line}"
    from ..analysis.mma import phases
    from ..infra.cache import load_analysis
    ph = phases(fn, load_analysis(m, fn))
    if not 1 <= phase <= len(ph):
        raise StageError(f"{fn.name} has phases 1-{len(ph)}, not {phase}")
    p = ph[phase - 1]
    if not reg_list:
        by_index = {mm.index: mm for mm in p.mmas}
        for chain in p.chains:
            last = by_index.get(chain[-1])
            if last is not None:
                reg_list.extend(r for r in last.d if r not in reg_list)
    return p.last_line, f"{layer}.p{phase}_out"


def _stage_name(rec: Recipe, name: str | None, default: str) -> str:
    layer = rec.layer
    qname = qualify_stage(rec, name) if name else default
    if qname.split(".", 1)[0] != layer:
        raise StageError(f"stage name {qname!r} is qualified by another layer than this "
                         f"recipe's {layer!r}")
    if not re.fullmatch(r"[A-Za-z0-9_]+\.[A-Za-z0-9_.]+", qname):
        raise StageError(f"stage name {qname!r}: use letters, digits and _ (e.g. {layer}.p1_out)")
    return qname


def _check_stage(rec: Recipe, mpath: Path, m, line: int, qname: str,
                 reg_list: list) -> str | None:
    """Check the point like `check --debug` does, before touching the file; the statement
    the line ends."""
    t = Target(recipe=rec, path=mpath, module=m, kind="point", first_line=line,
               stage=qname, point_regs=reg_list)
    t.fn = function_at(m, line)
    rep = Report(recipe=rec, target=t)
    if t.fn is None:
        raise StageError(f"line {line} lies in no function body of {mpath.name}")
    check_point(rep)
    if rep.errors:
        raise StageError("the stage does not check:\n" + "\n".join("  " + f.render()
                                                                   for f in rep.errors))
    stage = rep.facts.stage
    return stage.after if stage else None


def merged_table(plan: StagePlan, text: str) -> dict:
    """The recipe's stages table, as `text` (the file now) holds it, with `plan`'s stage
    added; refuses a table without the markers and a name the table already has."""
    rec, path = plan.recipe, plan.path
    table = {}
    if BEGIN in text and END in text:
        table = {qualify_stage(rec, k): v for k, v in _table_in(path, text, rec).items()}
    elif hasattr(rec.module, "stages") or hasattr(rec.module, "STAGES"):
        raise StageError(f"{path} defines its own stages table without rrsplice's markers; "
                         "add the stage there by hand (or wrap the table in the "
                         f"`{BEGIN}` / `{END}` markers)")
    if plan.name in table:
        raise StageError(f"{path} already has a stage {plan.name!r}; pick another --name")
    table[plan.name] = (plan.line, list(plan.registers))
    return table


def render_recipe_text(text: str, table: dict) -> str:
    """`text` with its marked stages block replaced by `table`'s (appended when it has
    none)."""
    block = render_table(table)
    if BEGIN in text and END in text:
        a = text.index(BEGIN)
        b = text.index(END) + len(END)
        if b < len(text) and text[b] == "\n":
            b += 1
        return text[:a] + block + text[b:]
    return text + ("" if text.endswith("\n") else "\n") + "\n\n" + block


def write_stage(plan: StagePlan) -> None:
    """Add `plan`'s stage to the recipe file: the read-modify-write under a lock on the
    recipe, re-reading the table there (several `stages new` on one recipe at once each add
    their stage), written atomically; a recipe that no longer loads is restored."""
    from ..infra.fsutil import locked, write_atomic
    path = plan.path
    with locked(path):
        text = path.read_text(encoding="utf-8")
        new = render_recipe_text(text, merged_table(plan, text))
        write_atomic(path, new.encode("utf-8"), protect=(plan.module,))
        # make sure the edited recipe still loads
        try:
            load_recipe(path).stages()
        except RecipeError as exc:
            write_atomic(path, text.encode("utf-8"), protect=(plan.module,))
            raise StageError(f"the edited recipe no longer loads; restored it: {exc}") from None
