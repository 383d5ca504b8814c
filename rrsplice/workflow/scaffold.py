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
"""

from __future__ import annotations

import keyword
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..infra.words import count
from ..ptx.errors import RRSpliceError
from ..ptx.select import parse_statement_range, select_function

TYPE_SIZE = {".b16": 2, ".b32": 4, ".b64": 8, ".pred": 4, ".v2.b16": 4, ".v4.b16": 8,
             ".v2.b32": 8, ".v4.b32": 16, ".v2.b64": 16, ".v4.b64": 32}


class ScaffoldError(RRSpliceError):
    """The recipe cannot be scaffolded (bad name, existing file, no usable scratch, ...)."""


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


def reg_ptx_type(fn, reg: str) -> str:
    """`.b16`/`.b32`/`.b64`/`.pred`, or `.v2.b32`-style for a vector register: how a
    register crosses the call (by its declared size)."""
    from ..check import _TYPE_SIZE, _function_decl
    d = _function_decl(fn, fn.module, reg)
    ty = (d.type or ".b32") if d is not None else ".b32"
    if ty == ".pred":
        return ".pred"
    n = _TYPE_SIZE.get(ty.lstrip("."), 4)
    elem = {2: ".b16", 4: ".b32", 8: ".b64"}.get(n, ".b32")
    vec = d.vector if d is not None else None
    return f"{vec}{elem}" if vec in (".v2", ".v4") else elem


def _cut_lines(m, fn, rng) -> tuple:
    """CUT_CALL for statements `rng`: their lines, widened to the braces of each `{ }` block
    whose statements the range holds all of (a cut ending inside such a block's braces is
    one `check` refuses, cut-scope), unless a statement outside the range shares a line."""
    from ..outline.common import OutlineError
    from ..outline.region import region_span
    stmts = fn.statements
    own = (stmts[rng.first - 1].line, stmts[rng.last - 1].end_line + 1)
    first, end = own
    for at in (stmts[rng.first - 1], stmts[rng.last - 1]):
        blk = at.block
        while blk is not None and blk is not fn.body:
            held = [st.index for st in stmts if blk.start <= st.start < blk.end]
            if not held or held[0] < rng.first or held[-1] > rng.last:
                break
            first, end = min(first, blk.line), max(end, blk.end_line + 1)
            blk = blk.parent
    if (first, end) == own:
        return own
    try:
        region_span(m, fn, rng, (first, end))
    except OutlineError:
        return own
    return first, end


def _pylist(regs: list, per_line: int = 4, indent: str = "    ") -> str:
    if not regs:
        return "[]"
    rows = []
    for i in range(0, len(regs), per_line):
        rows.append(indent + " ".join(f'"{r}",' for r in regs[i:i + per_line]))
    return "[\n" + "\n".join(rows) + "\n]"


def _choose_scratch(fn, fa, rng, need: int, wanted: str | None):
    """(symbol, bytes, why) of an entry-scoped .shared array that fits `need` bytes and
    holds nothing live across the region."""
    from ..check import _symbol_accesses
    cands = []
    for d in fn.decls():
        if d.space == ".shared" and d.byte_size:
            cands.append(d)
    for d in fn.module.decls:
        if d.space == ".shared" and d.byte_size:
            cands.append(d)
    if wanted is not None:
        cands = [d for d in cands if d.name == wanted]
        if not cands:
            raise ScaffoldError(f"--scratch {wanted}: no .shared array of that name with a "
                                f"known size in {fn.name} or at module scope")
    best, why_not = None, []
    for d in sorted(cands, key=lambda d: -d.byte_size):
        if d.byte_size < need:
            why_not.append(f"{d.name} holds {d.byte_size} bytes, {need} needed")
            continue
        acc = _symbol_accesses(fn, d.name)
        before = [k for i, k in acc if i < rng.first and k != "read"]
        after = [(i, k) for i, k in acc if i > rng.last]
        if before and after and after[0][1] != "write":
            why_not.append(f"{d.name} holds a value live across the region")
            continue
        best = d
        break
    if best is None:
        raise ScaffoldError("no .shared array can carry the returns ("
                            + ("; ".join(why_not) or "the function declares none")
                            + "); use --abi param")
    return best


def new_recipe(name: str, module, rng_text: str, *, abi: str = "scratch",
               scratch: str | None = None, entry: str | None = None,
               callee: str | None = None, out=None, force: bool = False,
               occupancy: bool = True, progress=lambda _step: None,
               dynamic_smem: int | None = None, launch=None) -> Scaffold:
    """Scaffold the recipe and write it to `out` only when it checks clean (CheckFailed,
    nothing written, otherwise). `progress(step)` is told each slow step's name.
    `dynamic_smem` (bytes) or `launch` (a launch description: its dynamic_shared_bytes and
    block) say how the kernel is launched, for the occupancy report (ptxas sees neither)."""
    from ..analysis.mma import phases
    from ..analysis.provenance import classify_live_in
    from ..analysis.semantics import sort_registers
    from ..infra.cache import load_analysis, load_module
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or keyword.iskeyword(name):
        raise ScaffoldError(f"recipe name {name!r} must be a Python identifier "
                            "(e.g. swin_dec2)")
    if abi not in ("scratch", "param"):
        raise ScaffoldError(f"--abi must be scratch or param, not {abi!r}")
    module = Path(module)
    m = load_module(module)
    fn, _why = select_function(m, entry)
    rng = parse_statement_range(rng_text, fn)
    dynamic_smem, launch_threads = _launch_facts(fn, launch, dynamic_smem)
    fa = load_analysis(m, fn)
    stmts = fn.statements
    first_line, end_line = _cut_lines(m, fn, rng)
    callee = callee or f"d4r_{name}"
    if not re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", callee):
        raise ScaffoldError(f"callee {callee!r} is not a PTX identifier")

    live_in = list(fa.range_live_in(rng))
    live_out = sort_registers(fa.range_live_out(rng))
    pass_out = list(fa.range_pass_in_for_out(rng))
    classes = classify_live_in(fa, rng)
    ph = [p for p in phases(fn, fa) if rng.first <= p.first and p.last <= rng.last]
    p1 = ph[0] if ph else None
    first_phase = p1.index if p1 is not None else 1
    live_set = set(live_in)
    a_regs, c_regs = [], []
    if p1 is not None:
        for frag in p1.a_fragments:
            for r in frag:
                if r in live_set and r not in a_regs:
                    a_regs.append(r)
        seeds = list(p1.bias_seeds_by_offset or []) + [r for r in p1.bias_seeds
                                                        if r not in (p1.bias_seeds_by_offset
                                                                     or [])]
        for r in seeds:
            if r in live_set and r not in c_regs and r not in a_regs:
                c_regs.append(r)
    taken = set(a_regs) | set(c_regs)
    notes = []
    w_reg = v_reg = None
    others, derivable, preds = [], [], []
    for li in classes:
        r = li.reg
        if r in taken:
            continue
        if li.klass == "derivable":
            derivable.append(li)
            continue
        if li.klass == "other":
            if "predicate" in li.detail:
                preds.append(r)
                notes.append(f"{r} is a live-in predicate: passed as a 0/1 .b32 and "
                             "re-made with setp in the body")
            else:
                notes.append(f"{r}: {li.detail}")
            continue
        if "weight image pointer" in li.detail and w_reg is None:
            w_reg = r
        elif "parameter block pointer" in li.detail and v_reg is None:
            v_reg = r
        else:
            others.append(r)
    other_regs = [r for r in (w_reg, v_reg) if r] + sort_registers(others) + preds
    for r in pass_out:
        if r not in taken and r not in other_regs:
            other_regs.append(r)
    # derivable registers whose pointer is not passed must be passed themselves
    passed_now = set(a_regs) | set(c_regs) | set(other_regs)
    re_classes = classify_live_in(fa, rng, passed=sorted(passed_now))
    for li in re_classes:
        if li.klass == "other" and li.reg not in passed_now and "predicate" not in li.detail:
            other_regs.append(li.reg)
    ret_regs = list(live_out)
    exits = dispatched_exits(fn, rng)
    head = entered_head(fn, rng)
    types = {}
    for r in a_regs + c_regs + other_regs + ret_regs:
        t = reg_ptx_type(fn, r)
        if t != ".b32":
            types[r] = t

    # the return layout: offsets within a lane's slot / the return array
    layout, size = _layout(ret_regs + ([EXIT_REG] if exits else []), types)
    sym = None
    sym_bytes = None
    from ..check import block_threads
    threads = block_threads(fn)
    slots = "lane"
    own: dict | None = None
    if abi == "scratch" and (ret_regs or exits):
        try:
            if threads is not None and threads > 32:
                try:
                    d = _choose_scratch(fn, fa, rng, size * threads, scratch)
                    slots = "thread"
                except ScaffoldError:
                    if scratch is None:
                        raise      # per-thread slots in an array of our own, below
                    d = _choose_scratch(fn, fa, rng, size * 32, scratch)
                    notes.append(f"no scratch array holds {size} x {threads} threads: "
                                 "indexed by %laneid, so the block's warps share the slots")
            else:
                d = _choose_scratch(fn, fa, rng, size * 32, scratch)
            sym, sym_bytes = d.name, d.byte_size
        except ScaffoldError as exc:
            if scratch is not None:
                raise
            # no dead array fits: the recipe declares its own (one slot per thread, so no
            # warp can touch another's slot and nothing else uses the array: no barrier)
            slots = "thread"
            sym = f"{callee}_scratch"
            sym_bytes = size * (threads or 1024)
            why = str(exc).split(" (", 1)[-1].replace("; use --abi param", "")
            own = {"symbol": sym, "bytes": sym_bytes, "why": why[:-1] if why.endswith(")")
                   else why}
            notes.append(f"no .shared array of {fn.name} can carry the returns ("
                         f"{own['why']}): the recipe declares its own, {sym} ({sym_bytes} "
                         f"bytes = {size} x {threads or 1024} threads"
                         + ("" if threads else ", the most a block may have: the entry "
                            "declares no .maxntid/.reqntid") + ")")
    elif abi == "scratch" and scratch:
        sym = scratch

    # .shared arrays the region names: their addresses must be passed (a .func cannot name
    # them); the scratch array travels as the call's last argument already
    shared_names = {d.name for d in fn.decls() if d.space == ".shared"}
    assert fn.module is not None  # a parsed function knows its module
    shared_names |= {d.name for d in fn.module.decls if d.space == ".shared"}
    shared = []
    for i in range(rng.first, rng.last + 1):
        for n in _named_symbols(stmts[i - 1]):
            if n in shared_names and n not in shared and not (
                    abi == "scratch" and ret_regs and n == sym):
                shared.append(n)
    # a block barrier after the scratch reads: several warps, and the kernel uses the array
    barrier = False
    if abi == "scratch" and ret_regs and own is None and (threads is None or threads > 32):
        from ..analysis.provenance import symbol_uses
        assert sym is not None  # the scratch ABI with returns chose an array above
        barrier = any(a.kind != "address" for a in symbol_uses(fa, sym).accesses)

    # call.uni only where the warp arrives together (check's divergent-call rule)
    from ..analysis.uniformity import uniformity
    divergent = uniformity(fa).divergence_at(rng.first, outside=rng, exits=False)
    call_op = "call.uni" if divergent is None else "call"
    if divergent is not None:
        br = stmts[divergent[0] - 1]
        notes.append(f"the cut lies under the per-lane branch {br.sid} (line {br.line}): "
                     "the call is a plain `call`, not `call.uni`")
    # the docstring's facts
    n_mma = sum(1 for i in range(rng.first, rng.last + 1) if stmts[i - 1].base == "mma")
    doc = [f"Splice recipe for {fn.name} (scaffolded by `rrsplice recipe new {name} "
           f"--module {module.name} --range {rng} --abi {abi}`).", "",
           f"The cut replaces statements {rng} ({len(rng)} statements) -- physical lines "
           f"{first_line}-{end_line - 1} of {module.name} -- with one `{call_op} {callee}`.",
           f"It holds {n_mma} mma in {count(len(ph), 'phase')}"
           + (f" ({ph[0].index}-{ph[-1].index} as `rrsplice phases` numbers them)."
              if len(ph) > 1 else f" (phase {ph[0].index} of `rrsplice phases`)." if ph
              else ".")]
    if p1 is not None:
        doc.append(f"Phase {p1.index} (s{p1.first}-s{p1.last}, lines {p1.first_line}-{p1.last_line}) "
                   f"is a {p1.geometry} {p1.shape} GEMM: {len(p1.mmas)} mma in "
                   f"{p1.chain_count} chains, {p1.m_tiles} m-tiles x {p1.n_tiles} n-tiles x "
                   f"{p1.k_slices} k-slices, {len(p1.a_fragments)} A fragments.")
        found = [p1.bias_seed_offsets.get(r) for r in c_regs]
        offs = [o for o in found if o is not None]
        if offs:
            doc.append(f"Its {len(c_regs)} bias seeds are loaded from the weight image at "
                       f"+{min(offs)}..+{max(offs)}.")
        if p1.b_weight_range:
            doc.append(f"Its B fragments come from weight image bytes "
                       f"[{p1.b_weight_range[0]}, {p1.b_weight_range[1]}).")
    doc += ["", f"Live into the region: {len(live_in)} registers. Passed to the callee, in "
            "this order:",
            f"  * A_REGS: {len(a_regs)} registers of phase {first_phase}'s A fragments, "
            "first-use order,",
            f"  * C_REGS: {len(c_regs)} phase-{first_phase} bias seeds, weight-image offset "
            "order,",
            f"  * OTHER_REGS: {len(other_regs)} more (pointers, special values, values some "
            "path leaves unwritten)" + (f": {' '.join(other_regs[:8])}"
                                        + (" ..." if len(other_regs) > 8 else "")
                                        if other_regs else "") + ","]
    for n in shared:
        doc.append(f"  * the address of the .shared array {n}, which the region uses (SHARED),")
    if abi == "scratch" and ret_regs:
        doc.append("  * the address of the scratch array.")
    if derivable:
        ex = derivable[0]
        doc.append(f"Not passed: {len(derivable)} registers the body can reload from a "
                   f"passed pointer, e.g. {ex.reg} = {ex.detail}.")
    doc += ["", f"Live out of the region (RET_REGS): {len(ret_regs)} registers"
            + (f": {' '.join(ret_regs[:12])}" + (" ..." if len(ret_regs) > 12 else "")
               if ret_regs else "") + "."]
    if own is not None:
        doc.append(f"No .shared array of {fn.name} can carry them ({own['why']}), so the "
                   f"recipe declares its own, {sym} ({sym_bytes} bytes, at module scope in "
                   "the extern text; OWN_SCRATCH).")
    if abi == "scratch" and ret_regs:
        if slots == "thread":
            doc.append(f"They come back through {sym} ({sym_bytes} bytes), {size} bytes per "
                       f"thread at t * {size}, t = the thread's linear index in its block "
                       f"(tid.x + ntid.x * (tid.y + ntid.y * tid.z); {threads} threads).")
        else:
            doc.append(f"They come back through {sym} ({sym_bytes} bytes), {size} bytes per "
                       f"lane at %laneid * {size}.")
    elif ret_regs:
        doc.append(f"They come back as the call's return value, one {size}-byte .param "
                   "array read with ld.param.")
    from ..fragments.report import cut_lines
    maps = cut_lines(fn, fa, rng, [("A_REGS", a_regs, "in"), ("C_REGS", c_regs, "in"),
                                   ("RET_REGS", ret_regs, "out")])
    if maps:
        doc += ["", "Fragment maps (`rrsplice fragments` on this recipe; layouts from PTX ISA "
                "9.7.14.5): what each passed and returned register holds in its phase's "
                "matrices A[row][k] and C/D[row][n], per lane (g, t) and element e; bias "
                "seeds with their weight-image bytes."] + maps
    if barrier:
        who = (f"{threads} threads ({(threads + 31) // 32} warps)" if threads
               else "more than one warp (no .maxntid/.reqntid)")
        doc += ["", f"Block barrier: the block may run {who}, and the kernel itself uses "
                f"{sym} (staging in and around the region), so the slots are guarded on both "
                "sides. The native body MUST execute a block barrier (`bar.sync 0` / "
                "`__syncthreads()`) after the region's work and before it stores its "
                "returns (no warp may store a slot while another still uses those bytes), "
                "and the call text executes `bar.sync 0` after its scratch reads (no warp "
                "may reuse the array before every warp has read its slot). No barrier is "
                "needed between the body's stores and the reads: a slot is stored and read "
                "by the same thread. `rrsplice outline` mirrors the call text's barrier "
                "before the outlined body's stores."]
    if exits:
        doc += ["", f"The region leaves to {len(exits)} label(s) besides the statement after "
                "it: the callee returns an exit index after RET_REGS (0: go on after the "
                "call), and the call text branches on it: "
                + ", ".join(f"{k} -> {lab}" for k, lab in enumerate(exits, 1)) + "."]
    for n in notes:
        doc.append("Note: " + n)
    path = Path(out) if out else Path("recipes") / f"{name}.py"
    if path.exists() and not force:
        raise ScaffoldError(f"{path} exists; pass --force to overwrite it")

    def render(at: Path) -> str:
        return _render(name=name, doc=doc, module=_module_reference(module, at), entry=fn.name,
                       callee=callee, cut=(first_line, end_line), abi=abi, a_regs=a_regs,
                       c_regs=c_regs, other_regs=other_regs, ret_regs=ret_regs, types=types,
                       scratch=sym, w_reg=w_reg, v_reg=v_reg, layout_size=size, slots=slots,
                       shared=shared, barrier=barrier, own=sym_bytes if own else None,
                       exits=exits, head=head, roles=_param_roles(fa), call_opcode=call_op)

    def measure(recipe_path: Path) -> None:
        if own is not None and occupancy:
            progress(f"recipe new {name}: ptxas -v on the original and the patched module")
            own.update(own_scratch_effect(recipe_path, module, fn,
                                          launch_threads or threads or 1024, dynamic_smem))
            if own.get("note"):
                notes.append(own["note"])

    progress(f"recipe new {name}: checking the recipe")
    write_checked(path, render, module, measure, implicit=not out)
    return Scaffold(own_scratch=own, path=path, name=name, module=module, function=fn.name, range=str(rng),
                    lines=(first_line, end_line - 1), abi=abi, a_regs=a_regs, c_regs=c_regs,
                    other_regs=other_regs, ret_regs=ret_regs, scratch=sym,
                    derivable=[li.reg for li in derivable], notes=notes, shared=shared,
                    barrier=barrier)


EXIT_REG = "%rrsx"      # the call text's register for the callee's exit index


def _launch_facts(fn, launch, dynamic_smem) -> tuple:
    """(dynamic shared bytes, threads per block or None) from `--launch` / `--dynamic-smem`
    (not both); a launch description for another kernel is an error."""
    if launch is not None and dynamic_smem is not None:
        raise ScaffoldError("give --launch or --dynamic-smem, not both")
    if dynamic_smem is not None:
        if dynamic_smem < 0:
            raise ScaffoldError(f"--dynamic-smem must be a byte count, not {dynamic_smem}")
        return dynamic_smem, None
    if launch is None:
        return 0, None
    from .launch import LaunchError, load_launch
    desc = load_launch(launch)
    if desc.kernel is not None and desc.kernel != fn.name:
        raise LaunchError(launch, f"describes the launch of {desc.kernel}, not {fn.name}")
    return desc.dynamic_shared_bytes, desc.threads


def write_checked(path: Path, render, module: Path, measure, *, implicit: bool = False) -> None:
    """Check the recipe `render(where)` produces before writing it to `path`: the check
    (and `measure`, which may apply it) runs on a copy in a private temporary directory,
    rendered for that place (its MODULE reference is relative to where it lies), and
    `path` is written atomically only when the check is clean. On a CheckFailed nothing
    is written, and the errors name `path`. `implicit`: `path` is the default output, not
    one the user named (see `fsutil.check_output`)."""
    import tempfile

    from ..check import CheckFailed, check_recipe
    from ..infra.fsutil import WriteError, same_file
    from .splice import write_atomic
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


def entered_head(fn, rng) -> list:
    """[the region's first statement's label] when code outside the region branches to it
    (the splice text must keep it), else []."""
    from ..analysis.exits import branch_labels
    from ..ptx.scopes import Labels
    first = fn.statements[rng.first - 1]
    if not first.is_label:
        return []
    labels = Labels(fn)
    for st in fn.statements:
        if st.index in rng:
            continue
        for name in branch_labels(st):
            if name == first.label and labels.resolve(st, name) is first:
                return [name]  # == first.label
    return []


def dispatched_exits(fn, rng) -> list:
    """Labels outside the region that it branches to, other than the statement right after
    it, in first-branch order: the call text dispatches to EXITS[index - 1]."""
    from ..analysis.exits import region_exits, return_labels
    back = return_labels(fn, rng)
    out = []
    for ex in region_exits(fn, rng):
        if ex.label not in back and ex.label not in out:
            out.append(ex.label)
    return out


def own_scratch_effect(recipe_path: Path, module: Path, fn, threads: int,
                       dynamic: int = 0) -> dict:
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
    arch = _module_arch(fn.module)
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
    static = [next((r.shared or 0 for r in x.resources if r.function == fn.name), 0)
              for x in (before, after)]
    smem = [s + dynamic for s in static]
    occ = [blocks_per_sm(arch, s, threads) for s in smem]
    lim = [shared_limits(arch, s, dynamic) for s in static]
    out.update(shared_before=smem[0], shared_after=smem[1], static_before=static[0],
               static_after=static[1], dynamic=dynamic, opt_in_before=lim[0]["opt_in"],
               opt_in_after=lim[1]["opt_in"], fits_after=lim[1]["fits"])
    per_block = (f"{smem[0]} bytes of shared memory per block, {smem[1]} with the recipe's "
                 f"scratch (+{smem[1] - smem[0]})")
    if dynamic:
        per_block += (f"; static {static[0]} -> {static[1]} (ptxas -v) + {dynamic} dynamic "
                      "(the launch's)")
    if occ[0] and occ[1]:
        out.update(blocks_before=occ[0].blocks, blocks_after=occ[1].blocks,
                   limited_by=occ[1].limited_by)
        out["note"] = (f"ptxas -v -arch={arch}: {fn.name} uses {per_block}; resident blocks "
                       f"per SM of {threads} threads: {occ[0].blocks} -> {occ[1].blocks} "
                       f"(limited by {occ[1].limited_by})")
    else:
        out["note"] = f"ptxas -v -arch={arch}: {per_block} (no occupancy table for {arch})"
    opt = ("cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, "
           f"{dynamic})")
    if lim[1]["fits"] is False:
        out["note"] += (f"; {smem[1]} bytes exceed the {lim[1]['max_per_block']} a block may "
                        f"use on {arch}: the spliced kernel cannot be launched this way")
    elif lim[1]["opt_in"] and not lim[0]["opt_in"]:
        out["note"] += (f"; over 48 KiB per block: the launch now needs the large-shared-memory "
                        f"opt-in, {opt} before launching" if dynamic else
                        "; over 48 KiB of static shared memory per block")
    elif lim[1]["opt_in"]:
        out["note"] += f"; over 48 KiB per block before and after: the launch's {opt} stays"
    return out


def _stub_callees(ptx: str) -> str:
    """`ptx` with every `.extern .func` declaration turned into an empty definition."""
    def repl(m):
        return m.group(1).replace(".extern ", "", 1) + "\n{\n\tret;\n}"
    return re.sub(r"(\.extern\s+\.func\b[^;{]*);", repl, ptx)


def _module_arch(module) -> str:
    """The module's `.target` sm_XX (sm_90 when it names none)."""
    m = re.search(rb"\.target\s+(sm_\d+)", module.data[:4096])
    return m.group(1).decode() if m else "sm_90"


def _named_symbols(st) -> list:
    """Symbols a statement names as an operand or an address base."""
    from ..ptx.model import Address, Symbol
    out = []
    for op in st.operands:
        if isinstance(op, Symbol):
            out.append(op.name)
        elif isinstance(op, Address) and isinstance(op.base, Symbol):
            out.append(op.base.name)
    return out


def _layout(ret_regs: list, types: dict) -> tuple[list, int]:
    off = 0
    out = []
    align = 4
    for r in ret_regs:
        n = TYPE_SIZE[types.get(r, ".b32")]
        n = max(n, 4)
        align = max(align, n)
        off = (off + n - 1) // n * n
        out.append((r, off))
        off += n
    size = (off + align - 1) // align * align if off else 0
    return out, size


_TEMPLATE = '''"""{doc}
"""

MODULE = {module!r}
ENTRY = {entry!r}
# qualifies this recipe's debug-stage names ({layer}.NAME)
LAYER = {layer!r}
CALLEE = {callee!r}
# "call.uni" where every lane of the warp reaches the cut together; "call" where a per-lane
# branch decides who does (PTX defines call.uni only for a non-divergent call)
CALL_OPCODE = {call_opcode!r}

# the region: its first statement's first physical line, and the line after its last
# statement's last physical line (half-open)
CUT_CALL = ({cut0}, {cut1})

# "scratch": returns cross back through the .shared array SCRATCH (lane * RET_STRIDE);
# "param": they come back as the call's return value (one .param .b8 array)
ABI = {abi!r}

# the region's first phase's A fragments, in the order its mma first use them
A_REGS = {a_regs}

# the region's first phase's bias seeds, in weight-image offset order
C_REGS = {c_regs}

# other values the body needs: pointers, special values, values not always overwritten
OTHER_REGS = {other_regs}

# what the code after the region reads back out of it
RET_REGS = {ret_regs}

# the region's first statement, a label that code outside the region branches to: the
# splice text begins with it (the cut removes it from the kernel)
HEAD_LABELS = {head}

# labels outside the region it branches to, besides the statement right after it: the
# callee returns an exit index (after RET_REGS; 0 = go on after the call) and the call
# text branches to EXITS[index - 1]
EXITS = {exits}
_RETURNS = RET_REGS + (["%rrsx"] if EXITS else [])

# how each register crosses the call when it is not a .b32
REG_TYPES = {types}

# .shared arrays the region names: their shared-window addresses are passed (after
# OTHER_REGS), since the body, a separate .func, cannot name the entry's arrays
SHARED = {shared}

SCRATCH = {scratch!r}
# bytes of the recipe's own .shared array SCRATCH (declared by extern()), when no array of
# the kernel could carry the returns; None when SCRATCH is the kernel's own
OWN_SCRATCH = {own!r}
# "thread": a thread's slot is at its linear index in the block x RET_STRIDE;
# "lane": at %laneid x RET_STRIDE (every warp of the block uses the same 32 slots)
SLOTS = {slots!r}
W_REG = {w_reg!r}
V_REG = {v_reg!r}
# kernel parameters by role ("NAME+OFFSET"; rrsplice.analysis.paramroles): the pointer the B fragments
# load from, the one the bias seeds load from, and the one a debug stage's built-in block
# stores through -- one the kernel only writes (`check --debug` refuses a pointer the kernel
# reads through, or an offset past the parameter's end; `--debug-param` overrides it)
W_PARAM = {w_param!r}
BIAS_PARAM = {bias_param!r}
DEBUG_PARAM = {debug_param!r}
# `bar.sync 0` after the scratch reads: the block may run several warps and the kernel uses
# the scratch array itself; the native body must execute a block barrier before its stores
BLOCK_BARRIER = {barrier!r}

_SIZE = {{".b16": 2, ".b32": 4, ".b64": 8, ".pred": 4, ".v2.b16": 4, ".v4.b16": 8,
         ".v2.b32": 8, ".v4.b32": 16, ".v2.b64": 16, ".v4.b64": 32}}


def _type(reg):
    return REG_TYPES.get(reg, ".b32")


def _ret_layout():
    """(register, byte offset) of each returned value in a lane's slot, and the slot size."""
    off, out, align = 0, [], 4
    for r in _RETURNS:
        n = max(_SIZE[_type(r)], 4)
        align = max(align, n)
        off = (off + n - 1) // n * n
        out.append((r, off))
        off += n
    return out, ((off + align - 1) // align * align if off else 0)


RET_STRIDE = _ret_layout()[1]
# the .param return array's alignment: a vector register is read back whole from it
RET_ALIGN = max([8] + [_SIZE[_type(r)] for r in _RETURNS if _type(r).startswith(".v")])


def _param_type(reg):
    """How `reg` is stored into its parameter: a predicate as a .b32 1/0, a vector
    register whole (`st.param.v2.b32`)."""
    t = _type(reg)
    return ".b32" if t == ".pred" else t


def _param_decl(reg, name):
    """The .param declaration carrying `reg`: a vector register's is an aligned byte array."""
    t = _param_type(reg)
    if t.startswith(".v"):
        return ".align %d .b8 %s[%d]" % (_SIZE[t], name, _SIZE[t])
    return "%s %s" % (t, name)


def _elements(reg):
    """(operand, type, byte offset) of each part a returned `reg` is read back as: from a
    scratch slot (whose address is aligned only to 4) a vector register element by element
    (`%v.x`, `%v.y`, ...), anything else whole."""
    t = _type(reg)
    if not t.startswith(".v") or ABI == "param":
        return [(reg, t, 0)]
    n, et = int(t[2]), t[3:]
    return [("%s.%s" % (reg, "xyzw"[k]), et, k * _SIZE[et]) for k in range(n)]


def cut_call():
    """The PTX that replaces the region. Special registers are read with mov only."""
    args = A_REGS + C_REGS + OTHER_REGS
    lines = ["%s:" % lab for lab in HEAD_LABELS] + ["{{", "\\t.reg .b32 %rrs<4>;"]
    if EXITS:
        lines += ["\\t.reg .b32 %rrsx;", "\\t.reg .pred %rrsq;"]
    if SHARED:
        lines.append("\\t.reg .b32 %%rrsb<%d>;" % len(SHARED))
    names = []
    for i, r in enumerate(args):
        lines.append("\\t.param %s;" % _param_decl(r, "p%d" % i))
        if _type(r) == ".pred":
            lines.append("\\tselp.u32 %%rrs3, 1, 0, %s;" % r)
            lines.append("\\tst.param.b32 [p%d+0], %%rrs3;" % i)
        else:
            lines.append("\\tst.param%s [p%d+0], %s;" % (_param_type(r), i, r))
        names.append("p%d" % i)
    for i, sym in enumerate(SHARED):
        lines.append("\\t.param .b32 pb%d;" % i)
        lines.append("\\tmov.u32 %%rrsb%d, %s;" % (i, sym))
        lines.append("\\tst.param.b32 [pb%d+0], %%rrsb%d;" % (i, i))
        names.append("pb%d" % i)
    layout, size = _ret_layout()
    if ABI == "scratch" and _RETURNS:
        lines.append("\\t.param .b32 ps;")
        lines.append("\\tmov.u32 %%rrs0, %s;" % SCRATCH)
        lines.append("\\tst.param.b32 [ps+0], %rrs0;")
        names.append("ps")
    if ABI == "param" and _RETURNS:
        lines.append("\\t.param .align %d .b8 rv[%d];" % (RET_ALIGN, size))
    call = "\\t%s " % CALL_OPCODE
    if ABI == "param" and _RETURNS:
        call += "(rv), "
    call += CALLEE
    if names:
        call += ", (" + ", ".join(names) + ")"
    lines.append(call + ";")
    if ABI == "scratch" and _RETURNS:
        if SLOTS == "thread":
            lines += ["\\tmov.u32 %rrs1, %tid.z;", "\\tmov.u32 %rrs2, %ntid.y;",
                      "\\tmov.u32 %rrs3, %tid.y;", "\\tmad.lo.s32 %rrs1, %rrs1, %rrs2, %rrs3;",
                      "\\tmov.u32 %rrs2, %ntid.x;", "\\tmov.u32 %rrs3, %tid.x;",
                      "\\tmad.lo.s32 %rrs1, %rrs1, %rrs2, %rrs3;"]
        else:
            lines.append("\\tmov.u32 %rrs1, %laneid;")
        lines.append("\\tmad.lo.s32 %%rrs2, %%rrs1, %d, %%rrs0;" % size)
    for r, off in layout:
        src = "[%%rrs2+%d]" % off if ABI == "scratch" else "[rv+%d]" % off
        space = "shared" if ABI == "scratch" else "param"
        if _type(r) == ".pred":
            lines.append("\\tld.%s.b32 %%rrs3, %s;" % (space, src))
            lines.append("\\tsetp.ne.u32 %s, %%rrs3, 0;" % r)
            continue
        for part, t, k in _elements(r):
            src = "[%%rrs2+%d]" % (off + k) if ABI == "scratch" else "[rv+%d]" % (off + k)
            lines.append("\\tld.%s%s %s, %s;" % (space, t, part, src))
    if ABI == "scratch" and _RETURNS and BLOCK_BARRIER:
        # every warp has read its slot before any warp reuses the array
        lines.append("\\tbar.sync 0;")
    for k, label in enumerate(EXITS, 1):
        lines.append("\\tsetp.eq.u32 %%rrsq, %%rrsx, %d;" % k)
        lines.append("\\t@%%rrsq bra %s;" % label)
    lines.append("}}")
    return "\\n".join(lines)


def extern():
    """The .extern .func declaration of the callee, matching cut_call()'s arguments."""
    args = A_REGS + C_REGS + OTHER_REGS
    params = [".param %s" % _param_decl(r, "%s_p%d" % (CALLEE, i)) for i, r in enumerate(args)]
    params += [".param .b32 %s_shared%d" % (CALLEE, i) for i in range(len(SHARED))]
    if ABI == "scratch" and _RETURNS:
        params.append(".param .b32 %s_scratch" % CALLEE)
    own = ""
    if OWN_SCRATCH:
        own = ".shared .align 16 .b8 %s[%d];\\n" % (SCRATCH, OWN_SCRATCH)
    ret = ""
    if ABI == "param" and _RETURNS:
        ret = "(.param .align %d .b8 %s_ret[%d]) " % (RET_ALIGN, CALLEE, _ret_layout()[1])
    text = own + ".extern .func %s%s" % (ret, CALLEE)
    if params:
        text += "\\n(\\n\\t" + ",\\n\\t".join(params) + "\\n)"
    return text + "\\n;\\n"


def recipe():
    """make_ptx.py's recipe for this kernel."""
    return dict(file=MODULE, cut_call=CUT_CALL, call=cut_call(), extern=extern())
'''


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


def _param_roles(fa) -> dict:
    """W_PARAM, BIAS_PARAM and DEBUG_PARAM as found by rrsplice.analysis.paramroles (None: none)."""
    from ..analysis.paramroles import bias_param, weight_param, write_only_pointer
    return {k: (str(v) if v is not None else None) for k, v in (
        ("w_param", weight_param(fa)), ("bias_param", bias_param(fa)),
        ("debug_param", write_only_pointer(fa)))}


def _render(*, name, doc, module, entry, callee, cut, abi, a_regs, c_regs, other_regs,
            ret_regs, types, scratch, w_reg, v_reg, layout_size, slots, shared=(),
            barrier=False, own=None, exits=(), head=(), roles=None,
            call_opcode="call.uni") -> str:
    wrapped: list[str] = []
    for para in doc:
        wrapped.extend(_wrap(para) if para else [""])
    typ = "{" + ", ".join(f'"{k}": "{v}"' for k, v in sorted(types.items())) + "}"
    if len(typ) > 80:
        typ = "{\n" + "\n".join(f'    "{k}": "{v}",' for k, v in sorted(types.items())) + "\n}"
    # the docstring holds file names as they are: a backslash would start an escape
    # (`m\x.ptx` is a SyntaxError) and three quotes would end it
    doc_text = "\n".join(wrapped).replace("\\", "\\\\").replace('"""', "'''")
    return _TEMPLATE.format(doc=doc_text, module=module,
                            entry=entry, callee=callee, call_opcode=call_opcode, cut0=cut[0], cut1=cut[1], abi=abi,
                            a_regs=_pylist(a_regs), c_regs=_pylist(c_regs),
                            other_regs=_pylist(other_regs), ret_regs=_pylist(ret_regs),
                            types=typ, scratch=scratch, w_reg=w_reg, v_reg=v_reg, slots=slots,
                            shared=_pylist(list(shared), per_line=1), barrier=bool(barrier), own=own,
                            exits=_pylist(list(exits), per_line=1),
                            head=_pylist(list(head), per_line=1),
                            **(roles or {"w_param": None, "bias_param": None,
                                         "debug_param": None}),
                            layer=name[5:] if name.startswith("swin_") and len(name) > 5
                            else name)


def _wrap(text: str, width: int = 88) -> list:
    lead = text[:len(text) - len(text.lstrip(" "))]
    indent = lead + "  " if text.lstrip(" ").startswith("* ") else lead
    words = text.lstrip(" ").split(" ")
    out, cur = [], lead
    for w in words:
        if cur.strip() and len(cur) + 1 + len(w) > width:
            out.append(cur)
            cur = indent + w
        else:
            cur = f"{cur} {w}" if cur.strip() else cur + w
    if cur:
        out.append(cur)
    return out
