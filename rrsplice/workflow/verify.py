"""`rrsplice verify`: apply a recipe, outline its region into the callee's body, assemble
both with `ptxas -c`, link them with `nvlink` into one cubin, and report resources.

The body is the cut region itself (see rrsplice.outline), so a recipe that verifies has a
consistent ABI: everything the region needs is passed or recomputable, every value the splice
reads back is delivered, and the two objects link. What `verify` reports, per architecture:

* acceptance of the original module, the patched module and the body (`ptxas -O0 -c`; with
  `--optimize`, `ptxas -O3`), and of the link (`nvlink`);
* resources, each row labelled with the tool that reported it. The comparison that matters
  -- the original kernel against the linked one -- comes from ONE tool, `nvlink -v`: the
  original's relocatable object is linked alone for it. (`ptxas -v` and `nvlink -v` account
  differently: on sm_90 nvlink counts 1 KiB of shared memory per block that ptxas -v does
  not, 9216 against 8192 bytes for swin_tiny, so mixing them showed shared memory the
  splice never added.) The patched kernel's own frame (the callee's registers are not
  included: a relocatable object does not know them) and the outlined callee come from
  `ptxas -v`, which alone reports spills. `call_cost()` is the difference the call ABI makes:
  linked minus original registers and stack, and the body's spill stores and loads.

A statement ptxas rejects (the seed recipe's `mad.lo.s32 %rswin1, %laneid, ...`) is reported
with the statement and the ptxas message, not as a crash.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..check import CheckFailed, check_recipe
from ..infra.arch import arch_number, check_buildable, module_arch
from ..infra.tools import AssembleResult, nvlink, ptxas, tool_provenance
from ..outline import Outline, OutlineError, build_outline
from ..ptx.errors import RRSpliceError


class VerifyError(RRSpliceError):
    """verify could not get as far as assembling (bad recipe, failed check, outline error)."""


@dataclass
class Step:
    """One tool run: what, whether it passed, the resources it reported, its log."""
    name: str
    ok: bool
    seconds: float
    log: str = ""
    resources: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)   # [{"line", "statement", "message"}]

    def to_json(self) -> dict:
        return {"name": self.name, "ok": self.ok, "seconds": round(self.seconds, 3),
                "resources": self.resources, "problems": self.problems,
                "log": self.log[-3000:] if not self.ok else ""}


@dataclass
class VerifyResult:
    recipe: str
    module: str
    arch: str
    optimize: bool
    kernel: str
    callee: str
    region: str
    lines: tuple
    outline: Outline | None
    steps: list = field(default_factory=list)
    files: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    seconds: float = 0.0
    tools: dict = field(default_factory=dict)    # ptxas/nvlink: path, version, found_via
    live_in_classes: dict = field(default_factory=dict)   # as `check` reports them

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)

    def step(self, name: str) -> Step | None:
        for s in self.steps:
            if s.name == name:
                return s
        return None

    def resource_table(self) -> list:
        """Rows (what, function, source, registers, stack, spill stores, spill loads,
        shared): the original and the linked kernel from nvlink -v, then the two objects'
        own figures from ptxas -v."""
        rows = []
        for label, step, fn, source in (
                ("original kernel", "nvlink original", self.kernel, "nvlink -v"),
                ("linked kernel", "nvlink", self.kernel, "nvlink -v"),
                ("patched kernel", "ptxas patched", self.kernel, "ptxas -v (own frame)"),
                ("outlined body", "ptxas body", self.callee, "ptxas -v")):
            s = self.step(step)
            r = (s.resources.get(fn) if s else None) or {}
            rows.append({"what": label, "function": fn, "source": source, **r})
        return rows

    def call_cost(self) -> dict | None:
        """What the call ABI costs per thread: linked minus original registers, stack and
        shared memory (both from nvlink -v), and the outlined body's spills (ptxas -v);
        None unless both kernels were linked."""
        rows = {r["what"]: r for r in self.resource_table()}
        a, b = rows["original kernel"], rows["linked kernel"]
        if a.get("registers") is None or b.get("registers") is None:
            return None
        body = rows["outlined body"]
        return {"registers": b["registers"] - a["registers"], "stack": b["stack"] - a["stack"],
                "shared": b["shared"] - a["shared"], "linked_stack": b["stack"],
                "body_spill_stores": body.get("spill_stores"),
                "body_spill_loads": body.get("spill_loads"), "source": "nvlink -v"}

    def to_json(self) -> dict:
        return {"ok": self.ok, "recipe": self.recipe, "module": self.module, "arch": self.arch,
                "optimize": self.optimize, "kernel": self.kernel, "callee": self.callee,
                "region": self.region, "lines": list(self.lines),
                "outline": self.outline.to_json() if self.outline else None,
                "steps": [s.to_json() for s in self.steps], "resources": self.resource_table(),
                "call_cost": self.call_cost(),
                "files": self.files, "notes": self.notes, "seconds": round(self.seconds, 3),
                "tools": self.tools, "live_in_classes": self.live_in_classes}


def _resources(res: AssembleResult) -> dict:
    out = {}
    for r in res.resources:
        out[r.function] = {"registers": r.registers, "stack": r.stack,
                           "spill_stores": r.spill_stores, "spill_loads": r.spill_loads,
                           "shared": r.shared}
    return out


_PTXAS_MSG = re.compile(r"ptxas[^,]*,\s*line (\d+); (error|warning)\s*:\s*(.*)")


def ptxas_problems(log: str, ptx_text: str, errors_only: bool = True) -> list:
    """ptxas messages with the offending line's statement text."""
    lines = ptx_text.splitlines()
    out = []
    for m in _PTXAS_MSG.finditer(log):
        if errors_only and m.group(2) != "error":
            continue
        n = int(m.group(1))
        text = lines[n - 1].strip() if 0 < n <= len(lines) else ""
        out.append({"line": n, "severity": m.group(2), "statement": text,
                    "message": m.group(3).strip()})
    return out


_NVLINK_FN = re.compile(r"Function properties for '?([^':\s]+)'?:\s*\n.*?used (\d+) registers"
                        r"(?:, used \d+ barriers)?, (\d+) stack, (\d+) bytes smem")


def _nvlink_resources(log: str) -> dict:
    """`nvlink -v`'s per-kernel figures of the linked cubin (callee frames included)."""
    out = {}
    for m in _NVLINK_FN.finditer(log):
        out[m.group(1)] = {"registers": int(m.group(2)), "stack": int(m.group(3)),
                           "shared": int(m.group(4)), "spill_stores": None,
                           "spill_loads": None}
    return out


def _assemble(name: str, path: Path, arch: str, out: Path, optimize: bool,
              relocatable: bool = True) -> Step:
    t0 = time.perf_counter()
    res = ptxas(path, arch, out=out, relocatable=relocatable, optimize=optimize)
    step = Step(name, res.ok, time.perf_counter() - t0, res.log, _resources(res))
    if not res.ok:
        step.problems = ptxas_problems(res.log, path.read_text(errors="replace"))
    return step


def prepare(recipe, corpus=None, *, check: bool = True, any_module: bool = False):
    """(patched bytes, Outline, report) for a cut_call recipe."""
    from ..infra.cache import load_module
    from ..ptx.emit import emit
    from .recipe import Recipe, load_recipe, resolve_module
    from .splice import build_edits

    rec = recipe if isinstance(recipe, Recipe) else load_recipe(recipe)
    if rec.form not in ("cut_call",) and rec.cut_call is None:
        raise VerifyError("verify needs a recipe that cuts a region into a call "
                          f"(cut_call, call, extern); this one is a {rec.form!r} recipe", path=rec.path)
    path, note = resolve_module(rec, corpus, any_module=any_module)
    module = load_module(path)
    report = check_recipe(rec, module_path=path, module=module)
    if note and report.target is not None:
        report.target.note = note
    t = report.target
    incomplete = t is None or t.fn is None or t.rng is None or not t.text or not t.extern
    if (check or incomplete) and not report.ok:
        # --no-check goes on past findings, never past a cut without statements, call text
        # or extern declaration: there would be nothing to outline
        raise CheckFailed(report)
    # a cut that is incomplete always carries an error finding, so it was refused above
    assert t.fn is not None and t.rng is not None and t.text and t.extern
    assert t.last_line is not None
    data = emit(module, build_edits(t))
    from ..rewrite import rules_for_recipe
    out = build_outline(t.module, t.fn, t.rng, t.text, t.extern,
                        lines=(t.first_line, t.last_line + 1), analysis=report.analysis,
                        rules=rules_for_recipe(rec))
    if note:
        out.notes.insert(0, note)
    return rec, Path(path), data, out, report


def verify(recipe, arch: str | None = None, *, corpus=None, optimize: bool = False,
           keep: Path | None = None, check: bool = True, original: bool = True,
           progress: Callable[[str], None] | None = None,
           any_module: bool = False) -> VerifyResult:
    """Apply, outline, assemble both, link. `arch` defaults to the module's `.target`.
    `keep`: a directory to leave the files in. `original=False` skips assembling the
    original module (no resource comparison; the acceptance checks are the same).
    `progress` is told the name of each step as it starts."""
    step_started = progress or (lambda _name: None)
    if arch is not None:
        arch_number(arch)
    t0 = time.perf_counter()
    step_started("check and outline")
    try:
        rec, path, patched, body, report = prepare(recipe, corpus, check=check,
                                                   any_module=any_module)
    except OutlineError as exc:
        raise VerifyError(f"cannot outline the region: {exc}", path=recipe) from None
    t = report.target
    target = module_arch(t.module)
    if arch is None:
        if target is None:
            raise VerifyError("the module has no .target sm_XX; give --arch", path=path)
        arch = target
    check_buildable(arch, target, path)
    res = VerifyResult(recipe=str(rec.path), module=str(path), arch=arch, optimize=optimize,
                       kernel=t.fn.name, callee=body.callee,
                       region=f"s{t.rng.first}-s{t.rng.last}",
                       lines=(t.first_line, t.last_line), outline=body, notes=list(body.notes),
                       tools={name: tool_provenance(name) for name in ("ptxas", "nvlink")},
                       live_in_classes=report.facts.live_in_classes or {})
    tmpdir = None
    if keep is None:
        tmpdir = tempfile.TemporaryDirectory(prefix="rrsplice-verify-")
        work = Path(tmpdir.name)
    else:
        work = Path(keep)
        work.mkdir(parents=True, exist_ok=True)
    try:
        stem = rec.path.stem
        p_orig = path
        p_patched = work / f"{stem}.patched.ptx"
        p_body = work / f"{stem}.body.ptx"
        from ..infra.fsutil import write_atomic
        write_atomic(p_patched, patched, protect=(path, rec.path))
        write_atomic(p_body, body.ptx, protect=(path, rec.path))
        o_orig = work / f"{stem}.original.{arch}.cubin"
        o_orig_obj = work / f"{stem}.original.{arch}.o"
        o_patched = work / f"{stem}.patched.{arch}.o"
        o_body = work / f"{stem}.body.{arch}.o"
        o_linked = work / f"{stem}.linked.{arch}.cubin"
        jobs = [("ptxas original", p_orig, o_orig_obj, True)] if original else []
        jobs += [("ptxas patched", p_patched, o_patched, True),
                 ("ptxas body", p_body, o_body, True)]
        step_started(f"ptxas {'-O3' if optimize else '-O0'} -c for {arch}: "
                     + ", ".join(name.split()[-1] for name, *_ in jobs))
        with ThreadPoolExecutor(max_workers=3) as pool:
            futs = [pool.submit(_assemble, name, src, arch, obj, optimize, reloc)
                    for name, src, obj, reloc in jobs]
            res.steps.extend(f.result() for f in futs)
        s_patched, s_body = res.step("ptxas patched"), res.step("ptxas body")
        assert s_patched is not None and s_body is not None  # both are in `jobs`
        if s_patched.ok and s_body.ok:
            step_started(f"nvlink for {arch}")
            t1 = time.perf_counter()
            ok, log = nvlink([o_patched, o_body], arch, o_linked)
            res.steps.append(Step("nvlink", ok, time.perf_counter() - t1, log,
                                  _nvlink_resources(log)))
        orig = res.step("ptxas original") if original else None
        if orig is not None and orig.ok:
            # the original linked alone: its figures in the linked kernel's accounting
            t1 = time.perf_counter()
            ok, log = nvlink([o_orig_obj], arch, o_orig)
            res.steps.append(Step("nvlink original", ok, time.perf_counter() - t1, log,
                                  _nvlink_resources(log)))
        res.files = {"patched": str(p_patched), "body": str(p_body),
                     "original_cubin": str(o_orig), "linked_cubin": str(o_linked)} \
            if keep is not None else {}
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()
    res.seconds = time.perf_counter() - t0
    return res
