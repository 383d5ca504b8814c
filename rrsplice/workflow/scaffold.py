"""`rrsplice recipe new`: scaffold a self-contained recipe module from the analyses.

The generated module follows the seed recipe's conventions (``MODULE``, ``CALLEE``,
``CUT_CALL``, ``A_REGS``, ``C_REGS``, ``RET_REGS``, ``SCRATCH``, ``cut_call()``, ``extern()``,
``recipe()``) and imports nothing. Its call text is written so that ptxas accepts it as
well as ZLUDA: special registers are read with ``mov`` first, there is never an empty
``()``, and with ``--abi param`` every returned value comes back in ONE
``.param .align 8 .b8 ret[N]`` array (ptxas allows a single return parameter).

What is passed: the first phase's A fragments (first-use order), its bias seeds (weight-image
offset order), every other value live into the region that the body cannot reload (the
weight-image and parameter-block pointers first), copies of special registers, and the
live-out registers that some path through the region leaves unwritten. Registers the body
can reload from a passed pointer (B fragments, ...) are listed in the docstring, not passed.
Every `.shared` array the region names is passed as its `.b32` shared-window address
(``mov.u32 %r, SYM;``): the body is a separate ``.func``, which cannot name the entry's
arrays (``SHARED``; with ``--abi scratch`` the scratch array itself travels as the last
argument).

Block barrier (``--abi scratch``). A thread's return slot is written by the body and read back
by the call text of the SAME thread, so no barrier is needed between the body's stores and
the call text's reads: program order already orders them. The other warps are the problem.
When the block may hold more than one warp (``.maxntid``/``.reqntid`` above 32, or not
declared) and the kernel itself uses the scratch array (staging in the region, reductions
after it, which is the normal case), two orderings must hold:

* no warp's body may store its returns while another warp still uses those bytes in the
  region (or before it): the native body executes a block barrier (``bar.sync 0`` /
  ``__syncthreads()``) before its stores;
* no warp may reuse the array after the call while another warp has not yet read its slot:
  the call text ends with ``bar.sync 0;`` after its scratch reads.

The scaffold emits the second barrier (``BLOCK_BARRIER``), and the recipe's docstring states
the first as the body's contract; ``rrsplice outline`` mirrors the call text's barrier before
the outlined body's stores. ``rrsplice check`` reports a scratch recipe without it
(``scratch-race``). A barrier is reached by every thread of the block: the call is
``call.uni`` in uniform control flow, as the whole region is.

Built in three steps, as `rrsplice.body` is: `scaffold_plan.plan_recipe` decides everything
(and raises every refusal), `scaffold_render.render_recipe` turns the plan into the module's
text (the template `templates/recipe_template.py` filled in), and `write_recipe` here checks
that text and writes it atomically.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .scaffold_plan import (
    EXIT_REG,
    TYPE_SIZE,
    RecipePlan,
    ScaffoldError,
    dispatched_exits,
    entered_head,
    plan_recipe,
    reg_ptx_type,
)
from .scaffold_render import render_recipe

__all__ = ["EXIT_REG", "TYPE_SIZE", "RecipePlan", "Scaffold", "ScaffoldError",
           "dispatched_exits", "entered_head", "new_recipe", "own_scratch_effect",
           "plan_recipe", "reg_ptx_type", "render_recipe", "write_checked", "write_recipe"]


@dataclass
class Scaffold:
    path: Path
    name: str
    module: Path
    function: str
    range: str
    lines: tuple
    abi: str
    a_regs: list
    c_regs: list
    other_regs: list
    ret_regs: list
    scratch: str | None
    derivable: list
    notes: list = field(default_factory=list)
    shared: list = field(default_factory=list)
    barrier: bool = False
    own_scratch: dict | None = None   # the recipe's own .shared array and its cost

    @property
    def summary(self) -> str:
        return (f"{self.function} {self.range} (lines {self.lines[0]}-{self.lines[1]}), "
                f"{len(self.a_regs) + len(self.c_regs) + len(self.other_regs)} passed, "
                f"{len(self.ret_regs)} returned, abi {self.abi}"
                + (f", scratch {self.scratch}" if self.scratch else ""))

    def to_json(self) -> dict:
        return {"recipe": str(self.path), "name": self.name, "module": str(self.module),
                "function": self.function, "range": self.range, "lines": list(self.lines),
                "abi": self.abi, "a_regs": self.a_regs, "c_regs": self.c_regs,
                "other_regs": self.other_regs, "ret_regs": self.ret_regs,
                "scratch": self.scratch, "derivable": self.derivable, "notes": self.notes,
                "shared": self.shared, "block_barrier": self.barrier,
                "own_scratch": self.own_scratch}


def new_recipe(name: str, module, rng_text: str, *, abi: str = "scratch",
               scratch: str | None = None, entry: str | None = None,
               callee: str | None = None, out=None, force: bool = False,
               occupancy: bool = True, progress=lambda _step: None,
               dynamic_smem: int | None = None, launch=None) -> Scaffold:
    """Scaffold the recipe and write it to `out` only when it checks clean (CheckFailed,
    nothing written, otherwise). `progress(step)` is told each slow step's name.
    `dynamic_smem` (bytes) or `launch` (a launch description: its dynamic_shared_bytes and
    block) say how the kernel is launched, for the occupancy report (ptxas sees neither)."""
    plan = plan_recipe(name, module, rng_text, abi=abi, scratch=scratch, entry=entry,
                       callee=callee, out=out, force=force, dynamic_smem=dynamic_smem,
                       launch=launch)
    return write_recipe(plan, occupancy=occupancy, progress=progress)


def write_recipe(plan: RecipePlan, *, occupancy: bool = True,
                 progress=lambda _step: None) -> Scaffold:
    """Step three: render `plan` for a trial place, check it there (and, for a recipe with
    its own scratch array, measure its occupancy cost with ptxas when `occupancy`), then
    write it to `plan.path` atomically, rendered for that place."""
    notes = list(plan.notes)
    own: dict | None = ({"symbol": plan.own.symbol, "bytes": plan.own.bytes,
                         "why": plan.own.why} if plan.own is not None else None)

    def render(at: Path) -> str:
        return render_recipe(plan, _module_reference(plan.module, at))

    def measure(recipe_path: Path) -> None:
        if own is not None and occupancy:
            progress(f"recipe new {plan.name}: ptxas -v on the original and the patched module")
            own.update(own_scratch_effect(recipe_path, plan.module, plan.function, plan.arch,
                                          plan.launch_threads or plan.threads or 1024,
                                          plan.dynamic_smem))
            if own.get("note"):
                notes.append(own["note"])

    progress(f"recipe new {plan.name}: checking the recipe")
    write_checked(plan.path, render, plan.module, measure, implicit=plan.implicit)
    return Scaffold(own_scratch=own, path=plan.path, name=plan.name, module=plan.module,
                    function=plan.function, range=plan.range,
                    lines=(plan.cut[0], plan.cut[1] - 1), abi=plan.abi,
                    a_regs=list(plan.a_regs), c_regs=list(plan.c_regs),
                    other_regs=list(plan.other_regs), ret_regs=list(plan.ret_regs),
                    scratch=plan.scratch, derivable=[reg for reg, _ in plan.derivable],
                    notes=notes, shared=list(plan.shared), barrier=plan.barrier)


def write_checked(path: Path, render, module: Path, measure, *, implicit: bool = False) -> None:
    """Check the recipe `render(where)` produces before writing it to `path`: the check
    (and `measure`, which may apply it) runs on a copy in a private temporary directory,
    rendered for that place (its MODULE reference is relative to where it lies), and
    `path` is written atomically only when the check is clean. On a CheckFailed nothing
    is written, and the errors name `path`. `implicit`: `path` is the default output, not
    one the user named (see `fsutil.check_output`)."""
    import tempfile

    from ..check import CheckFailed, check_recipe
    from ..infra.fsutil import WriteError, same_file, write_atomic
    if same_file(module, path):
        raise WriteError(str(path), f"refusing to write over the input {module}; choose "
                         "another output", code="output-is-input")
    with tempfile.TemporaryDirectory(prefix="rrsplice-new-") as tmp:
        trial = Path(tmp) / path.name
        trial.write_text(render(trial), encoding="utf-8")
        report = check_recipe(trial)
        report.recipe.path = path            # name the user's files, not the trial's
        report.facts.module = str(module)
        if report.target is not None:
            report.target.path = module
        if not report.ok:
            raise CheckFailed(report)
        measure(trial)
    write_atomic(path, render(path).encode("utf-8"), protect=(module,), implicit=implicit)


def own_scratch_effect(recipe_path: Path, module: Path, function: str, arch: str,
                       threads: int, dynamic: int = 0) -> dict:
    """What the recipe's own scratch array costs, from `ptxas -v` on the original module and
    on the patched one (both -O0: shared memory does not depend on optimisation): bytes of
    shared memory per block before and after -- the static arrays ptxas counts plus the
    `dynamic` bytes the launch gives (`.extern .shared`), which ptxas cannot see -- resident
    blocks per SM, and whether the launch needs (or newly needs) the large-shared-memory
    opt-in."""
    import tempfile

    from ..analysis.occupancy import blocks_per_sm, shared_limits
    from ..infra.tools import ToolNotFound, ptxas
    from .splice import apply
    out: dict = {"arch": arch}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            before = ptxas(module, arch, out=Path(tmp) / "orig.cubin")
            res = apply(recipe_path, out=Path(tmp) / "patched.ptx")
            # whole-program with an empty body: `ptxas -c` leaves module-scope .shared
            # arrays to the linker and would not count them
            stub = Path(tmp) / "stubbed.ptx"
            assert res.output is not None  # apply() was given `out`
            stub.write_text(_stub_callees(res.output.read_text()))
            after = ptxas(stub, arch, out=Path(tmp) / "stubbed.cubin", relocatable=False)
    except ToolNotFound as exc:
        out["note"] = f"occupancy not reported: {exc}"
        return out
    if not (before.ok and after.ok):
        bad = before if not before.ok else after
        out["note"] = ("occupancy not reported: ptxas failed on the "
                       + ("original" if bad is before else "patched") + " module: "
                       + bad.log.strip().splitlines()[-1][:200])
        return out
    static = [next((r.shared or 0 for r in x.resources if r.function == function), 0)
              for x in (before, after)]
    smem = [s + dynamic for s in static]
    occ = [blocks_per_sm(arch, s, threads) for s in smem]
    lim = [shared_limits(arch, s, dynamic) for s in static]
    out.update(shared_before=smem[0], shared_after=smem[1], static_before=static[0],
               static_after=static[1], dynamic=dynamic, opt_in_before=lim[0]["opt_in"],
               opt_in_after=lim[1]["opt_in"], fits_after=lim[1]["fits"])
    if occ[0] and occ[1]:
        out.update(blocks_before=occ[0].blocks, blocks_after=occ[1].blocks,
                   limited_by=occ[1].limited_by)
    out["note"] = _occupancy_note(arch, function, threads, dynamic, static, occ, lim)
    return out


def _occupancy_note(arch: str, function: str, threads: int, dynamic: int, static: list,
                    occ: list, lim: list) -> str:
    """What `own_scratch_effect` found, as the note `recipe new` prints."""
    smem = [s + dynamic for s in static]
    per_block = (f"{smem[0]} bytes of shared memory per block, {smem[1]} with the recipe's "
                 f"scratch (+{smem[1] - smem[0]})")
    if dynamic:
        per_block += (f"; static {static[0]} -> {static[1]} (ptxas -v) + {dynamic} dynamic "
                      "(the launch's)")
    if occ[0] and occ[1]:
        note = (f"ptxas -v -arch={arch}: {function} uses {per_block}; resident blocks "
                f"per SM of {threads} threads: {occ[0].blocks} -> {occ[1].blocks} "
                f"(limited by {occ[1].limited_by})")
    else:
        note = f"ptxas -v -arch={arch}: {per_block} (no occupancy table for {arch})"
    opt = ("cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, "
           f"{dynamic})")
    if lim[1]["fits"] is False:
        note += (f"; {smem[1]} bytes exceed the {lim[1]['max_per_block']} a block may "
                 f"use on {arch}: the spliced kernel cannot be launched this way")
    elif lim[1]["opt_in"] and not lim[0]["opt_in"]:
        note += (f"; over 48 KiB per block: the launch now needs the large-shared-memory "
                 f"opt-in, {opt} before launching" if dynamic else
                 "; over 48 KiB of static shared memory per block")
    elif lim[1]["opt_in"]:
        note += f"; over 48 KiB per block before and after: the launch's {opt} stays"
    return note


def _stub_callees(ptx: str) -> str:
    """`ptx` with every `.extern .func` declaration turned into an empty definition."""
    def repl(m):
        return m.group(1).replace(".extern ", "", 1) + "\n{\n\tret;\n}"
    return re.sub(r"(\.extern\s+\.func\b[^;{]*);", repl, ptx)


def _module_reference(module: Path, recipe_path: Path) -> str:
    """How the recipe names its module: the bare file name when the corpus lookup finds
    this very file from the recipe's directory, else its path relative to the recipe (so
    `check` and `apply` find it without --corpus)."""
    from .recipe import corpus_dirs
    recipe_dir = recipe_path.resolve().parent
    for d, _why in corpus_dirs(None, recipe_dir):
        cand = d / module.name
        if cand.is_file():
            if cand.resolve() == module.resolve():
                return module.name
            break
    rel = os.path.relpath(module.resolve(), recipe_dir)
    return rel if os.sep in rel else f"./{rel}"
