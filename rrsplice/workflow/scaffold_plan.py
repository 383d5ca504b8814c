"""`recipe new`, step one: every decision about the recipe, made before any text is written.

`plan_recipe` reads the module and its analyses and returns a frozen `RecipePlan`: what is
passed (A fragments, bias seeds, the other live-in values), what comes back and how (the
return layout, the scratch array and its slots, or the `.param` array), the `.shared`
arrays the region names, whether the call text ends in a block barrier, `call` or
`call.uni`, the facts the docstring states, and where the recipe goes. Every user-facing
refusal (`ScaffoldError`, a bad range or launch description) is raised here, so nothing
has been written when one is. `rrsplice.workflow.scaffold_render` turns the plan into text.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ptx.errors import RRSpliceError
from ..ptx.select import parse_statement_range, select_function

TYPE_SIZE = {".b16": 2, ".b32": 4, ".b64": 8, ".pred": 4, ".v2.b16": 4, ".v4.b16": 8,
             ".v2.b32": 8, ".v4.b32": 16, ".v2.b64": 16, ".v4.b64": 32}
EXIT_REG = "%rrsx"      # the call text's register for the callee's exit index


class ScaffoldError(RRSpliceError):
    """The recipe cannot be scaffolded (bad name, existing file, no usable scratch, ...)."""


@dataclass(frozen=True)
class OwnScratch:
    """The recipe's own `.shared` array, declared when no array of the kernel fits."""
    symbol: str
    bytes: int
    why: str                  # why no array of the kernel can carry the returns


@dataclass(frozen=True)
class PhaseFacts:
    """What the docstring says of the region's first GEMM phase (`rrsplice phases`)."""
    index: int
    first: int
    last: int
    first_line: int
    last_line: int
    geometry: str
    shape: str
    mmas: int
    chains: int
    m_tiles: int
    n_tiles: int
    k_slices: int
    a_fragments: int
    seed_offsets: tuple[int, ...]          # weight-image offsets of the C_REGS it knows
    b_weight_range: tuple[int, int] | None


@dataclass(frozen=True)
class Passed:
    """What the call passes (`_passed_registers`)."""
    a_regs: tuple[str, ...]
    c_regs: tuple[str, ...]
    other_regs: tuple[str, ...]
    w_reg: str | None
    v_reg: str | None
    derivable: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ReturnPath:
    """How the returns come back with `--abi scratch` (`_return_path`)."""
    scratch: str | None = None
    bytes: int | None = None
    slots: str = "lane"
    own: OwnScratch | None = None


@dataclass(frozen=True)
class RecipePlan:
    """Every decision `recipe new` makes; `scaffold_render.render_recipe` writes it out."""
    name: str
    layer: str
    module: Path
    function: str
    range: str
    range_len: int
    cut: tuple[int, int]           # CUT_CALL: first line, the line after the last (half-open)
    abi: str
    callee: str
    call_opcode: str
    a_regs: tuple[str, ...]
    c_regs: tuple[str, ...]
    other_regs: tuple[str, ...]
    ret_regs: tuple[str, ...]
    types: tuple[tuple[str, str], ...]     # (register, type) where not .b32, sorted
    exits: tuple[str, ...]
    head: tuple[str, ...]
    shared: tuple[str, ...]
    scratch: str | None
    scratch_bytes: int | None
    slots: str                     # "thread" | "lane"
    slot_size: int                 # bytes per thread's (lane's) slot / the return array
    threads: int | None            # the block's threads, when the entry declares them
    own: OwnScratch | None
    barrier: bool
    w_reg: str | None
    v_reg: str | None
    roles: tuple[tuple[str, str | None], ...]    # W_PARAM, BIAS_PARAM, DEBUG_PARAM
    live_in: int
    derivable: tuple[tuple[str, str], ...]       # (register, how the body reloads it)
    n_mma: int
    phases: tuple[int, ...]        # the indexes of the phases the region holds
    phase: PhaseFacts | None
    fragment_maps: tuple[str, ...]
    notes: tuple[str, ...]
    path: Path                     # where the recipe is written
    implicit: bool                 # `path` is the default output, not one the user named
    launch_threads: int | None
    dynamic_smem: int
    arch: str                      # the module's .target, for the occupancy report

    @property
    def first_phase(self) -> int:
        return self.phase.index if self.phase is not None else 1


def reg_ptx_type(fn, reg: str) -> str:
    """`.b16`/`.b32`/`.b64`/`.pred`, or `.v2.b32`-style for a vector register: how a
    register crosses the call (by its declared size)."""
    from ..ptx.isa import type_bytes
    from ..ptx.scopes import register_decl
    d = register_decl(fn, reg)
    ty = (d.type or ".b32") if d is not None else ".b32"
    if ty == ".pred":
        return ".pred"
    n = type_bytes(ty, 4)
    elem = {2: ".b16", 4: ".b32", 8: ".b64"}.get(n, ".b32")
    vec = d.vector if d is not None else None
    return f"{vec}{elem}" if vec in (".v2", ".v4") else elem


def plan_recipe(name: str, module, rng_text: str, *, abi: str = "scratch",
                scratch: str | None = None, entry: str | None = None,
                callee: str | None = None, out=None, force: bool = False,
                dynamic_smem: int | None = None, launch=None) -> RecipePlan:
    """Decide everything about recipe `name` for statements `rng_text` of `module`; raises
    the user-facing errors, writes nothing (see the module doc)."""
    from ..infra.cache import load_analysis, load_module
    _check_options(name, abi)
    module = Path(module)
    m = load_module(module)
    fn, _why = select_function(m, entry)
    rng = parse_statement_range(rng_text, fn)
    smem, launch_threads = _launch_facts(fn, launch, dynamic_smem)
    fa = load_analysis(m, fn)
    cut = _cut_lines(m, fn, rng)
    callee = callee or f"d4r_{name}"
    if not re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", callee):
        raise ScaffoldError(f"callee {callee!r} is not a PTX identifier")
    return _decide(name, module, fn, fa, rng, abi=abi, scratch=scratch, callee=callee,
                   cut=cut, launch=(launch_threads, smem), out=out, force=force)


def _check_options(name: str, abi: str) -> None:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or keyword.iskeyword(name):
        raise ScaffoldError(f"recipe name {name!r} must be a Python identifier "
                            "(e.g. swin_dec2)")
    if abi not in ("scratch", "param"):
        raise ScaffoldError(f"--abi must be scratch or param, not {abi!r}")


def _decide(name, module: Path, fn, fa, rng, *, abi, scratch, callee, cut, launch, out,
            force) -> RecipePlan:
    """The plan for an analysed region (`plan_recipe` after its loads and checks)."""
    from ..analysis.occupancy import block_threads
    from ..fragments.report import cut_lines
    p1, ph = _first_phase(fn, fa, rng)
    notes: list[str] = []
    passed = _passed_registers(fa, rng, p1, notes)
    ret_regs = _ret_registers(fa, rng)
    exits, head = dispatched_exits(fn, rng), entered_head(fn, rng)
    types = _register_types(fn, [*passed.a_regs, *passed.c_regs, *passed.other_regs,
                                 *ret_regs])
    _, size = _layout(ret_regs + ([EXIT_REG] if exits else []), types)
    threads = block_threads(fn)
    ret = _return_path(fn, fa, rng, abi=abi, wanted=scratch, callee=callee, size=size,
                       threads=threads, returns=bool(ret_regs or exits), notes=notes)
    sym, own = ret.scratch, ret.own
    with_returns = abi == "scratch" and bool(ret_regs)
    call_opcode = _call_opcode(fn, fa, rng, notes)
    maps = cut_lines(fn, fa, rng, [("A_REGS", list(passed.a_regs), "in"),
                                   ("C_REGS", list(passed.c_regs), "in"),
                                   ("RET_REGS", ret_regs, "out")])
    path = _output_path(out, name, force)
    return RecipePlan(
        name=name, layer=name[5:] if name.startswith("swin_") and len(name) > 5 else name,
        module=module, function=fn.name, range=str(rng), range_len=len(rng), cut=cut,
        abi=abi, callee=callee, call_opcode=call_opcode, a_regs=passed.a_regs,
        c_regs=passed.c_regs, other_regs=passed.other_regs, ret_regs=tuple(ret_regs),
        types=tuple(sorted(types.items())), exits=tuple(exits), head=tuple(head),
        shared=tuple(_shared_arrays(fn, rng, skip=sym if with_returns else None)),
        scratch=sym, scratch_bytes=ret.bytes, slots=ret.slots, slot_size=size,
        threads=threads, own=own,
        barrier=with_returns and own is None and _kernel_uses(fa, sym, threads),
        w_reg=passed.w_reg, v_reg=passed.v_reg, roles=_param_roles(fa),
        live_in=len(list(fa.range_live_in(rng))), derivable=passed.derivable,
        n_mma=sum(1 for i in range(rng.first, rng.last + 1)
                  if fn.statements[i - 1].base == "mma"),
        phases=tuple(p.index for p in ph), phase=_phase_facts(p1, passed.c_regs),
        fragment_maps=tuple(maps), notes=tuple(notes), path=path, implicit=not out,
        launch_threads=launch[0], dynamic_smem=launch[1], arch=_module_arch(fn.module))


def _first_phase(fn, fa, rng) -> tuple:
    """(the region's first GEMM phase or None, all the phases it holds)."""
    from ..analysis.mma import phases
    ph = [p for p in phases(fn, fa) if rng.first <= p.first and p.last <= rng.last]
    return (ph[0] if ph else None), ph


def _phase_facts(p1, c_regs: tuple[str, ...]) -> PhaseFacts | None:
    if p1 is None:
        return None
    found = [p1.bias_seed_offsets.get(r) for r in c_regs]
    return PhaseFacts(
        index=p1.index, first=p1.first, last=p1.last, first_line=p1.first_line,
        last_line=p1.last_line, geometry=p1.geometry, shape=p1.shape, mmas=len(p1.mmas),
        chains=p1.chain_count, m_tiles=p1.m_tiles, n_tiles=p1.n_tiles, k_slices=p1.k_slices,
        a_fragments=len(p1.a_fragments), seed_offsets=tuple(o for o in found if o is not None),
        b_weight_range=tuple(p1.b_weight_range) if p1.b_weight_range else None)


def _passed_registers(fa, rng, p1, notes: list) -> Passed:
    """What the call passes: the first phase's A fragments (first-use order) and bias seeds
    (offset order), then the other live-in values the body cannot reload (the weight-image
    and parameter-block pointers first, live-in predicates last), then the live-outs some
    path leaves unwritten; the registers the body can reload are `derivable`."""
    from ..analysis.provenance import classify_live_in
    from ..analysis.semantics import sort_registers
    a_regs, c_regs = _phase_registers(p1, set(fa.range_live_in(rng)))
    taken = set(a_regs) | set(c_regs)
    got = _classify_others(classify_live_in(fa, rng), taken, notes)
    other_regs = ([r for r in (got["w_reg"], got["v_reg"]) if r]
                  + sort_registers(got["others"]) + got["preds"])
    for r in fa.range_pass_in_for_out(rng):
        if r not in taken and r not in other_regs:
            other_regs.append(r)
    # derivable registers whose pointer is not passed must be passed themselves
    passed_now = set(a_regs) | set(c_regs) | set(other_regs)
    for li in classify_live_in(fa, rng, passed=sorted(passed_now)):
        if li.klass == "other" and li.reg not in passed_now and "predicate" not in li.detail:
            other_regs.append(li.reg)
    return Passed(a_regs=tuple(a_regs), c_regs=tuple(c_regs), other_regs=tuple(other_regs),
                  w_reg=got["w_reg"], v_reg=got["v_reg"],
                  derivable=tuple((li.reg, li.detail) for li in got["derivable"]))


def _phase_registers(p1, live_set: set) -> tuple[list, list]:
    """(A_REGS, C_REGS): the live-in registers of the first phase's A fragments in
    first-use order, and of its bias seeds in weight-image offset order."""
    a_regs: list[str] = []
    c_regs: list[str] = []
    if p1 is None:
        return a_regs, c_regs
    for frag in p1.a_fragments:
        for r in frag:
            if r in live_set and r not in a_regs:
                a_regs.append(r)
    by_offset = list(p1.bias_seeds_by_offset or [])
    seeds = by_offset + [r for r in p1.bias_seeds if r not in by_offset]
    for r in seeds:
        if r in live_set and r not in c_regs and r not in a_regs:
            c_regs.append(r)
    return a_regs, c_regs


def _classify_others(classes, taken: set, notes: list) -> dict[str, Any]:
    """The live-ins outside A/C by class: the weight-image (W_REG) and parameter-block
    (V_REG) pointers, other passed values, live-in predicates, and the derivable ones."""
    got: dict[str, Any] = {"w_reg": None, "v_reg": None, "others": [], "derivable": [],
                           "preds": []}
    for li in classes:
        r = li.reg
        if r in taken:
            continue
        if li.klass == "derivable":
            got["derivable"].append(li)
        elif li.klass == "other":
            if "predicate" in li.detail:
                got["preds"].append(r)
                notes.append(f"{r} is a live-in predicate: passed as a 0/1 .b32 and "
                             "re-made with setp in the body")
            else:
                notes.append(f"{r}: {li.detail}")
        elif "weight image pointer" in li.detail and got["w_reg"] is None:
            got["w_reg"] = r
        elif "parameter block pointer" in li.detail and got["v_reg"] is None:
            got["v_reg"] = r
        else:
            got["others"].append(r)
    return got


def _ret_registers(fa, rng) -> list:
    from ..analysis.semantics import sort_registers
    return list(sort_registers(fa.range_live_out(rng)))


def _register_types(fn, regs: list) -> dict:
    """register -> how it crosses the call, for those that are not a `.b32`."""
    types = {}
    for r in regs:
        t = reg_ptx_type(fn, r)
        if t != ".b32":
            types[r] = t
    return types


def _layout(ret_regs: list, types: dict) -> tuple[list, int]:
    """(register, byte offset) of each returned value in a slot, and the slot's size: each
    value aligned to its own size (at least 4), the slot to the largest."""
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


def _return_path(fn, fa, rng, *, abi, wanted, callee, size, threads, returns,
                 notes) -> ReturnPath:
    """How the returns come back with `--abi scratch`: per-thread slots in a dead array of
    the kernel that holds the whole block, else per-lane ones, else (no `--scratch` named)
    an array of the recipe's own."""
    if abi != "scratch":
        return ReturnPath()
    if not returns:
        return ReturnPath(scratch=wanted or None)
    try:
        d, slots = _kernel_scratch(fn, fa, rng, size, threads, wanted, notes)
    except ScaffoldError as exc:
        if wanted is not None:
            raise
        return _own_scratch(fn, callee, size, threads, exc, notes)
    return ReturnPath(scratch=d.name, bytes=d.byte_size, slots=slots)


def _kernel_scratch(fn, fa, rng, size: int, threads, wanted, notes: list) -> tuple:
    """(the kernel's .shared array the returns cross through, "thread" | "lane")."""
    if threads is None or threads <= 32:
        return _choose_scratch(fn, fa, rng, size * 32, wanted), "lane"
    try:
        return _choose_scratch(fn, fa, rng, size * threads, wanted), "thread"
    except ScaffoldError:
        if wanted is None:
            raise      # per-thread slots in an array of our own, below
    d = _choose_scratch(fn, fa, rng, size * 32, wanted)
    notes.append(f"no scratch array holds {size} x {threads} threads: "
                 "indexed by %laneid, so the block's warps share the slots")
    return d, "lane"


def _own_scratch(fn, callee: str, size: int, threads, exc: ScaffoldError,
                 notes: list) -> ReturnPath:
    """No dead array fits: the recipe declares its own (one slot per thread, so no warp can
    touch another's slot and nothing else uses the array: no barrier)."""
    sym = f"{callee}_scratch"
    sym_bytes = size * (threads or 1024)
    why = str(exc).split(" (", 1)[-1].replace("; use --abi param", "")
    own = OwnScratch(symbol=sym, bytes=sym_bytes, why=why[:-1] if why.endswith(")") else why)
    notes.append(f"no .shared array of {fn.name} can carry the returns ("
                 f"{own.why}): the recipe declares its own, {sym} ({sym_bytes} "
                 f"bytes = {size} x {threads or 1024} threads"
                 + ("" if threads else ", the most a block may have: the entry "
                    "declares no .maxntid/.reqntid") + ")")
    return ReturnPath(scratch=sym, bytes=sym_bytes, slots="thread", own=own)


def _choose_scratch(fn, fa, rng, need: int, wanted: str | None):
    """(symbol, bytes, why) of an entry-scoped .shared array that fits `need` bytes and
    holds nothing live across the region."""
    from ..analysis.provenance import symbol_accesses
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
        acc = symbol_accesses(fn, d.name)
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


def _shared_arrays(fn, rng, skip: str | None) -> list:
    """.shared arrays the region names, first-use order: their addresses must be passed (a
    .func cannot name them); `skip`, the scratch array, travels as the last argument."""
    names = {d.name for d in fn.decls() if d.space == ".shared"}
    assert fn.module is not None  # a parsed function knows its module
    names |= {d.name for d in fn.module.decls if d.space == ".shared"}
    shared: list[str] = []
    for i in range(rng.first, rng.last + 1):
        for n in _named_symbols(fn.statements[i - 1]):
            if n in names and n not in shared and n != skip:
                shared.append(n)
    return shared


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


def _kernel_uses(fa, sym: str | None, threads) -> bool:
    """A block barrier after the scratch reads: several warps, and the kernel itself uses
    the array."""
    from ..analysis.provenance import symbol_uses
    if threads is not None and threads <= 32:
        return False
    assert sym is not None  # the scratch ABI with returns chose an array
    return any(a.kind != "address" for a in symbol_uses(fa, sym).accesses)


def _call_opcode(fn, fa, rng, notes: list) -> str:
    """call.uni only where the warp arrives together (check's divergent-call rule)."""
    from ..analysis.uniformity import uniformity
    divergent = uniformity(fa).divergence_at(rng.first, outside=rng, exits=False)
    if divergent is None:
        return "call.uni"
    br = fn.statements[divergent[0] - 1]
    notes.append(f"the cut lies under the per-lane branch {br.sid} (line {br.line}): "
                 "the call is a plain `call`, not `call.uni`")
    return "call"


def _param_roles(fa) -> tuple[tuple[str, str | None], ...]:
    """W_PARAM, BIAS_PARAM and DEBUG_PARAM as found by rrsplice.analysis.paramroles (None: none)."""
    from ..analysis.paramroles import bias_param, weight_param, write_only_pointer
    return tuple((k, (str(v) if v is not None else None)) for k, v in (
        ("w_param", weight_param(fa)), ("bias_param", bias_param(fa)),
        ("debug_param", write_only_pointer(fa))))


def _output_path(out, name: str, force: bool) -> Path:
    path = Path(out) if out else Path("recipes") / f"{name}.py"
    if path.exists() and not force:
        raise ScaffoldError(f"{path} exists; pass --force to overwrite it")
    return path


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


def _module_arch(module) -> str:
    """The module's `.target` sm_XX (sm_90 when it names none)."""
    m = re.search(rb"\.target\s+(sm_\d+)", module.data[:4096])
    return m.group(1).decode() if m else "sm_90"


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
