"""What a native body must do, read off a recipe: its signature (the recipe's `.extern`),
what each argument holds (the fragment maps), the phase's mma program, and where the call
text reads each result back.

Supported: a cut that is exactly one GEMM phase (every statement of the region an `mma`, the
region one phase of `rrsplice phases`), with returns through a `.shared` scratch array (the
ABI ZLUDA can link). With `loads=True` (the gfx12 WMMA program) the region may also hold the
phase's own fragment loads (`ld.global[.nc]` of 32-bit words at `[passed address + offset]`,
as nvcc interleaves the weight loads with the mma): the body reads those words itself.
Anything else is a BodyError that says what is not supported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis.occupancy import block_threads
from ..check import check_recipe, scratch_stride
from ..ptx.errors import RRSpliceError
from ..ptx.model import Address, ParenList, Reg, Symbol, Vector

if TYPE_CHECKING:
    from ..analysis.mma import Phase
    from ..fragments.fragmap import FragReg


class BodyError(RRSpliceError):
    """The recipe's cut cannot be given a generated native body (names the reason)."""


@dataclass
class Arg:
    """One parameter of the callee, in the `.extern`'s order."""
    index: int
    name: str                 # the C++ name (the .extern's own unless C++ cannot use it)
    ptx_type: str             # ".b32" / ".b64"
    reg: str | None        # the register the call text passes (None: an address)
    symbol: str | None = None      # the .shared array whose address is passed
    role: str = "other"       # "A" | "B" | "C" | "scratch" | "shared" | "other"
    frag: FragReg | None = None  # for A/B/C
    ptx_name: str = ""        # the .extern's parameter name

    @property
    def c_type(self) -> str:
        return "rr_u64" if self.ptx_type == ".b64" else "rr_u32"


@dataclass
class Step:
    """One mma of the phase: D = mma(A tile from the image, B registers, C)."""
    sid: str
    line: int
    m0: int                   # A tile's first row / first k in the staged image
    k0: int
    b: tuple                  # the two B operands: argument names (or D halves)
    c: tuple                  # the two C operands: argument names or earlier D halves
    d: tuple                  # the two D registers
    var: str                  # the C++ array holding D


@dataclass
class Load:
    """A fragment load inside the region: `ld.global[.nc].b32 {dsts}, [base + offset]`, the
    words the body reads itself from the address the call passes (argument `base`)."""
    sid: str
    line: int
    index: int                # statement number
    base: str                 # the C++ name of the argument holding the address
    offset: int
    dsts: tuple               # the registers written, in vector order
    names: tuple              # the C++ locals the body gives them
    text: str


@dataclass
class Ret:
    reg: str
    offset: int               # byte offset in the thread's slot
    expr: str                 # the C++ value: var[j]


@dataclass
class BodyPlan:
    recipe: Path
    module: Path
    function: str
    callee: str
    region: str
    phase: Phase
    args: list
    steps: list
    rets: list
    m: int                    # the staged image: m rows x k columns of e4m3, per warp
    k: int
    n: int
    slots: str                # "thread" | "lane"
    stride: int
    barrier: bool
    warps: int                # warps per block the image array is sized for
    threads: int | None
    layouts: dict             # "A".."D" -> rrsplice.fragments.layout.Layout
    image_in_scratch: bool = False    # the image overlays the warp's own return slots
    notes: list = field(default_factory=list)
    loads: list = field(default_factory=list)    # Load: the region's own fragment loads
    loaded: dict = field(default_factory=dict)   # C++ local -> FragReg (what a load holds)

    def arg(self, name: str) -> Arg:
        return next(a for a in self.args if a.name == name)

    def frag(self, name: str):
        """The fragment register a value name (an argument or a loaded local) holds, or None."""
        if name in self.loaded:
            return self.loaded[name]
        a = next((a for a in self.args if a.name == name), None)
        return a.frag if a is not None else None


def plan_body(recipe, corpus=None, loads: bool = False) -> BodyPlan:
    """Read everything `body new` needs from `recipe` (a path or Recipe); `loads`: the region
    may hold the phase's own fragment loads (the WMMA program reads them itself)."""
    from ..analysis.mma import phases
    from ..fragments.fragmap import phase_map
    from ..infra.cache import load_analysis
    rep = check_recipe(recipe, corpus, target="zluda")
    rec = rep.recipe
    if rep.errors:
        raise BodyError("the recipe fails `rrsplice check --target zluda` ("
                        + "; ".join(f"{f.code}: {f.message}" for f in rep.errors[:3])
                        + "); a native body needs a recipe that passes it", path=rec.path)
    t = rep.target
    if t.kind != "region" or t.rng is None:
        raise BodyError("`body new` needs a cut_call recipe (this one is "
                        f"{rec.form})", path=rec.path)
    sp, fn, rng = rep.splice, t.fn, t.rng
    # check sets the range only once it found the function, and then parses the call text
    assert fn is not None and sp is not None
    assert fn.module is not None  # a function of the parsed module
    stmts = fn.statements
    other = [stmts[i - 1] for i in range(rng.first, rng.last + 1) if stmts[i - 1].base != "mma"
             and not (loads and _fragment_load(stmts[i - 1]))]
    if other:
        st = other[0]
        raise BodyError(f"the region {rng} holds {len(other)} statement(s) that "
                        f"are not mma (first {st.sid}, line {st.line}: `{st.text.strip()}`); "
                        "`body new` generates bodies for cuts of one GEMM phase", path=rec.path)
    fa = load_analysis(fn.module, fn)
    ph = [p for p in phases(fn, fa) if p.first == rng.first and p.last == rng.last]
    if not ph:
        inside = [p.index for p in phases(fn, fa) if rng.first <= p.first and p.last <= rng.last]
        raise BodyError(f"the region {rng} is not exactly one phase (phases "
                        f"inside it: {inside or 'none'}); `body new` supports single-phase "
                        "cuts", path=rec.path)
    phase = ph[0]
    pm = phase_map(fn, fa, phase)
    if pm.notes:
        raise BodyError(f"phase {phase.index}: " + "; ".join(pm.notes), path=rec.path)
    callee, call = _the_call(rec, sp)
    from .names import body_locals, parameter_names, unusable
    why = unusable(callee)
    if why is not None:
        raise BodyError(f"the callee {callee!r} {why}: a C++ body cannot define "
                        "it under that link name; rename the callee (the recipe's CALLEE)", path=rec.path)
    args = _args(sp, callee, call, rep)
    taken = body_locals(callee, (f"d_s{mma.index}" for mma in phase.mmas))
    for a, c_name in zip(args, parameter_names([a.name for a in args], taken), strict=False):
        a.ptx_name, a.name = a.name, c_name
    by_reg: dict = {}
    for f in pm.a + pm.b + pm.c:
        by_reg.setdefault(f.reg, f)
    scratch = rep.facts.scratch.symbol if rep.facts.scratch else None
    for a in args:
        if a.symbol is not None:
            a.role = "scratch" if a.symbol == scratch else "shared"
        elif a.reg in by_reg:
            a.frag = by_reg[a.reg]
            a.role = a.frag.matrix
    reg_arg = {a.reg: a.name for a in args if a.reg is not None}
    a_tile = {f.reg: (f.row_base, f.col_base) for f in pm.a}
    steps: list = []
    d_of: dict = {}
    region_loads, loaded = _region_loads(rec, stmts, rng, reg_arg, args, pm.b + pm.c, taken) \
        if loads else ([], {})
    live_loaded: dict = {}        # register -> the local holding its loaded value, so far
    load_at = {ld.index: ld for ld in region_loads}
    for mma in phase.mmas:
        for i in sorted(load_at):
            if i < mma.index:
                ld = load_at.pop(i)
                live_loaded.update(zip(ld.dsts, ld.names, strict=True))
                for r in ld.dsts:          # a D overwritten by a load is no longer that D
                    d_of.pop(r, None)
        tiles = {a_tile.get(r) for r in mma.a}
        if None in tiles or len(tiles) != 1:
            raise BodyError(f"s{mma.index}: its A registers {list(mma.a)} are not "
                            "one A tile of passed fragments", path=rec.path)
        missing = [r for r in mma.a if r not in reg_arg]
        if missing:
            raise BodyError(f"s{mma.index} reads A register(s) {missing}, which the "
                            "call does not pass", path=rec.path)
        tile = tiles.pop()
        assert tile is not None  # refused above
        m0, k0 = tile
        var = f"d_s{mma.index}"

        def src(r, what, mma=mma):
            if r in d_of:
                return d_of[r]
            if r in live_loaded:
                return live_loaded[r]
            if r in reg_arg:
                return reg_arg[r]
            if loads:
                got = _reload(rec, fa, stmts, rng, reg_arg, args, pm.b + pm.c, taken, mma.index,
                              r, region_loads, loaded)
                if got is not None:
                    return got
            raise BodyError(f"s{mma.index} reads {what} register {r}, which is "
                            "neither passed nor written by an earlier mma of the region", path=rec.path)
        steps.append(Step(f"s{mma.index}", mma.line, m0, k0,
                          tuple(src(r, "B") for r in mma.b), tuple(src(r, "C") for r in mma.c),
                          tuple(mma.d), var))
        for j, r in enumerate(mma.d):
            d_of[r] = f"{var}[{j}]"
            live_loaded.pop(r, None)
    rets = _returns(sp, scratch, d_of, rec)
    stride, _why = scratch_stride(rep, sp)
    specials = {r.name for st in sp.statements for r in st.registers() if r.special}
    slots = "thread" if any(x.startswith("%tid.") for x in specials) else "lane"
    threads = block_threads(fn)
    warps = (threads + 31) // 32 if threads else 32
    notes = []
    if threads is None:
        notes.append(f"{fn.name} declares no .maxntid/.reqntid: the staged image is sized for "
                     "32 warps (1024 threads)")
    # the image: in the warp's own slots of the recipe's own scratch array when they are
    # large enough (nothing else uses that array, and static .shared is capped at 48 KiB per
    # block); else an array of the body's own
    own = rec.const("OWN_SCRATCH")
    in_scratch = bool(own) and slots == "thread" and scratch == rec.const("SCRATCH") \
        and 32 * (stride or 0) >= phase.m * phase.k
    notes.append(f"staged image: {phase.m} x {phase.k} bytes per warp, "
                 + (f"in the warp's own slots of {scratch} (32 x {stride} bytes)"
                    if in_scratch else f"a .shared array of the body ({warps} warps, "
                    f"{warps * phase.m * phase.k} bytes)"))
    first = phase.mmas[0]
    return BodyPlan(image_in_scratch=in_scratch, recipe=Path(rec.path), module=Path(t.path), function=fn.name,
                    callee=callee, region=str(rng), phase=phase, args=args, steps=steps,
                    rets=rets, m=phase.m, k=phase.k, n=phase.n, slots=slots,
                    stride=stride or 0, barrier=bool(rec.const("BLOCK_BARRIER")),
                    warps=warps, threads=threads, layouts=pm.layouts, notes=notes,
                    loads=region_loads, loaded=loaded) \
        if first.shape == "m16n8k32" and first.a_type == "e4m3" and first.b_type == "e4m3" \
        and first.c_type == "f16" and first.d_type == "f16" else _unsupported(rec, first)


_LOAD_TYPES = ("u32", "b32", "s32")


def _fragment_load(st) -> bool:
    """`ld.global[.nc][.v2|.v4].{u32,b32,s32} dst, [reg + imm]`, unguarded: the form of a
    fragment load the body can read itself."""
    if st.base != "ld" or "global" not in st.modifiers or st.guard is not None:
        return False
    if not any(m in _LOAD_TYPES for m in st.modifiers) or len(st.operands) != 2:
        return False
    dst, addr = st.operands
    items = list(dst.items) if isinstance(dst, Vector) else [dst]
    return isinstance(addr, Address) and isinstance(addr.base, Reg) and \
        all(isinstance(x, Reg) for x in items)


def _region_loads(rec, stmts, rng, reg_arg, args, frags, taken) -> tuple:
    """The region's fragment loads ([Load]) and {local: FragReg} of the words they load (the
    fragment whose value is that load's word). The address must be a passed argument."""
    loads, loaded = [], {}
    by_load = {(f.reg, f.source.load): f for f in frags if f.source is not None}
    written = set()
    for i in (rng if isinstance(rng, range) else range(rng.first, rng.last + 1)):
        st = stmts[i - 1]
        if st.base != "ld":
            continue
        dst, addr = st.operands
        base = addr.base.name
        if base not in reg_arg or base in written:
            raise BodyError(f"{st.sid}, line {st.line}: `{st.text.strip()}` loads "
                            f"from {base}, which the call does not pass unchanged; the body "
                            "reads a region's loads only from a passed address", path=rec.path)
        arg = next(a for a in args if a.name == reg_arg[base])
        if arg.ptx_type != ".b64":
            raise BodyError(f"{st.sid}: the address {base} is passed as "
                            f"{arg.ptx_type}, not .b64", path=rec.path)
        arg.role = "global"
        items = list(dst.items) if isinstance(dst, Vector) else [dst]
        names = []
        for r in items:
            name = "ld_" + r.name.lstrip("%").replace("%", "_")
            while name in taken or any(a.name == name for a in args):
                name += "_"
            taken.add(name)
            names.append(name)
            written.add(r.name)
            if (r.name, i) in by_load:
                loaded[name] = by_load[(r.name, i)]
        loads.append(Load(st.sid, st.line, i, arg.name, addr.offset or 0,
                          tuple(r.name for r in items), tuple(names), st.text.strip()))
    return loads, loaded


def _reload(rec, fa, stmts, rng, reg_arg, args, frags, taken, at, reg, loads, loaded):
    """The local of `reg` (read at statement `at`) when the call does not pass it but its
    value is an `ld.global.nc` fragment load before the region from an address the call
    passes unchanged (what `recipe new` leaves for the body to reload): that load becomes
    one of the body's own (added to `loads` once). None when it is not such a load."""
    from ..analysis.laneaddr import weight_load
    src = weight_load(fa, at, reg)
    if src is None or src.load >= rng.first:
        return None
    st = stmts[src.load - 1]
    if not _fragment_load(st) or "nc" not in st.modifiers:    # read-only data only: the
        return None                                            # bytes are still there
    base = st.operands[1].base.name
    if base not in reg_arg or set(fa.reaching_defs(src.load, base)) != \
            set(fa.reaching_defs(rng.first, base)):
        return None
    ld = next((x for x in loads if x.index == src.load), None)
    if ld is None:
        new, got = _region_loads(rec, stmts, range(src.load, src.load + 1), reg_arg, args,
                                 frags, taken)
        ld = new[0]
        loads.append(ld)
        loads.sort(key=lambda x: x.index)
        loaded.update(got)
    return dict(zip(ld.dsts, ld.names, strict=True)).get(reg)


def _unsupported(rec, mma):
    raise BodyError(f"s{mma.index} is {mma.opcode}: `body new` generates "
                    "m16n8k32 e4m3 x e4m3 with f16 accumulators only", path=rec.path)


def _the_call(rec, sp):
    calls = sp.calls
    if len(calls) != 1:
        raise BodyError(f"the call text holds {len(calls)} calls; `body new` needs "
                        "exactly one", path=rec.path)
    st = calls[0]
    if isinstance(st.operands[0], ParenList) and len(st.operands) > 2:
        raise BodyError("the call takes return values: a native body returns "
                        "through the scratch array (`recipe new --abi scratch`)", path=rec.path)
    callee = st.view.callee
    if callee not in sp.externs:
        raise BodyError(f"the extern text does not declare {callee}", path=rec.path)
    return callee, st


def _args(sp, callee, call, rep) -> list:
    """Each .extern parameter with what the call text stores into its argument."""
    decl = sp.externs[callee]
    ops = call.operands
    names = [x.name for x in ops[1].items] if len(ops) > 1 and isinstance(ops[1], ParenList) \
        else []
    stored: dict = {}
    moved: dict[str, str | None] = {}
    for st in sp.statements:
        if st.base == "mov" and len(st.operands) == 2 and isinstance(st.operands[1], Symbol):
            moved[st.operands[0].name] = st.operands[1].name
        if st.base == "st" and "param" in st.modifiers and isinstance(st.operands[0], Address):
            base = st.operands[0].base
            if isinstance(base, Symbol):
                stored[base.name] = st.operands[1]
        if st.base == "selp" and isinstance(st.operands[-1], Reg):
            moved.setdefault(st.operands[0].name, None)
    out = []
    for i, (pname, p) in enumerate(zip(names, decl.params, strict=False)):
        src = stored.get(pname)
        reg = src.name if isinstance(src, Reg) else None
        ty = ".b64" if (p.byte_size or 4) == 8 else ".b32"
        a = Arg(i, p.name, ty, reg)
        if reg is not None and reg in moved and moved[reg] is not None:
            a.symbol, a.reg = moved[reg], None
        out.append(a)
    return out


def _returns(sp, scratch, d_of, rec) -> list:
    """Every `ld.shared` of the call text: the register it reads and its slot offset."""
    rets = []
    for st in sp.statements:
        if st.base == "ld" and "shared" in st.modifiers:
            dst = st.operands[0]
            addr = st.operands[1]
            reg = dst.name if isinstance(dst, Reg) else str(dst)
            if reg not in d_of:
                raise BodyError(f"the call text reads {reg} back from {scratch}, "
                                "which no mma of the region writes", path=rec.path)
            if not any(m in ("b32", "u32", "s32", "f32") for m in st.modifiers):
                raise BodyError(f"`{st.text.strip()}`: only 32-bit returns", path=rec.path)
            rets.append(Ret(reg, addr.offset or 0, d_of[reg]))
    return rets
