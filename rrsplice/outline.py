"""Outline a cut region into the body of the callee its splice calls.

`outline(module, fn, rng, call_text, extern_text)` writes a PTX module that defines the
callee named by `extern_text`, with exactly that signature, whose body is the region's own
statements copied verbatim by source span (labels, nested blocks, comments and all). Around
that copy the body

* loads every parameter into the register the call text stored into it (the region then
  finds its live-in values under their usual names);
* recomputes registers live into the region that the call does not pass but that follow
  from passed values (B fragments loaded from the passed weight image at constant
  offsets, lane and thread indices): the defining statements are copied from the kernel;
* rewrites what a `.func` cannot see: a reference to an entry-scoped `.shared` array
  becomes the passed register holding that array's address; a read of a kernel parameter
  becomes a copy of the passed register that holds the same value (else it is refused);
* delivers the values the call text reads back the way it reads them: a
  `ld.shared [addr+off]` after the call becomes a `st.shared [addr+off]` at the end of the
  body, with `addr` computed from the same passed values (special registers are read with
  `mov` first, since ptxas accepts them only there); a `ld.param [retval+off]` becomes a
  `st.param [func_retval+off]`.

Everything the body cannot be given is an `OutlineError` that names the register, the
statement and the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from .errors import ParseError, RRSpliceError
from .model import Address, Block, Function, Module, ParenList, Reg, Statement, Symbol, Vector
from .parser import parse
from .select import StatementRange
from .semantics import TERMINATORS, def_use, is_block_barrier, is_pseudo, sort_registers


class OutlineError(RRSpliceError):
    """The region cannot be outlined into a body matching the call text."""


# ---------------------------------------------------------------- small helpers

_WIDTH = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
          "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32,
          "b64": 64, "u64": 64, "s64": 64, "f64": 64, "pred": 1}

_SPECIAL64 = {"%clock64", "%globaltimer", "%gridid"}


def _type_width(st: Statement) -> Optional[int]:
    for m in reversed(st.modifiers):
        if m in _WIDTH:
            return _WIDTH[m]
    return None


def _reg_types(fn: Function) -> Callable[[str], Optional[str]]:
    """register name -> its declared `.bN`-style type (any scope of `fn`)."""
    ranges = []
    single = {}
    for d in fn.decls():
        if d.space != ".reg":
            continue
        if d.count is None:
            single.setdefault(d.name, d.type)
        else:
            ranges.append(d)

    def lookup(name: str) -> Optional[str]:
        if name in single:
            return single[name]
        for d in ranges:
            if d.declares(name):
                return d.type
        return None
    return lookup


def _decl_text(d) -> str:
    name = d.name + (f"<{d.count}>" if d.count is not None else "")
    dims = "".join(f"[{x}]" if x is not None else "[]" for x in d.dims)
    return "\t" + " ".join(d.attrs) + " " + name + dims + ";"


def _iter_blocks(blk: Block):
    for item in blk.items:
        if isinstance(item, Block):
            yield item
            yield from _iter_blocks(item)


def _parse_snippet(text: str, what: str) -> Module:
    try:
        return parse(text, filename=f"<{what}>")
    except ParseError as exc:
        raise OutlineError(f"the {what} does not parse: {exc.message} "
                           f"(line {exc.line - 3} of the {what}: {exc.line_text.strip()!r})"
                           ) from None


# ---------------------------------------------------------------- the call text

@dataclass
class ParamValue:
    """One `st.param.T [P+off], value` of the call text: the extern parameter it fills."""
    index: int                 # position in the extern's parameter list
    name: str                  # the extern's parameter name
    offset: int
    opcode: str                # "st.param.b32"
    value: object              # Reg | Imm | Vector
    statement: Statement

    @property
    def registers(self) -> list:
        return [r.name for r in getattr(self.value, "registers", lambda: iter(()))()
                if not r.special]


@dataclass
class ReadBack:
    """A value the splice reads after the call: `ld.shared.b32 %rX, [%a+8]` (scratch) or
    `ld.param.b32 %rX, [retval0+4]` (a `.param` return)."""
    kind: str                  # "scratch" | "param" | "memory"
    registers: list            # destination registers, in order
    statement: Statement
    ret_name: Optional[str] = None   # the extern's return parameter (param kind)
    offset: int = 0


@dataclass
class CallSite:
    """What a splice's call text says about the callee's ABI."""
    callee: str
    extern: Function
    call: Statement
    function: Function          # the dummy function wrapping the call text
    params: list                # [ParamValue]
    readbacks: list             # [ReadBack]
    pre: list                   # call-text statements before the call (not param stores)
    post: list                  # call-text statements after the call (not read-backs)
    local_decls: list           # the call text's own `.reg` declarations
    notes: list = field(default_factory=list)

    @property
    def abi(self) -> str:
        kinds = {r.kind for r in self.readbacks}
        if not kinds:
            return "none"
        return "param" if kinds == {"param"} else ("scratch" if kinds == {"scratch"}
                                                    else "+".join(sorted(kinds)))

    def passed_registers(self) -> dict:
        """register -> the ParamValue carrying it."""
        out = {}
        for pv in self.params:
            if isinstance(pv.value, Reg) and not pv.value.special:
                out.setdefault(pv.value.name, pv)
        return out

    def returned_registers(self) -> list:
        out = []
        for rb in self.readbacks:
            out.extend(rb.registers)
        return out


def parse_call(call_text: str, extern_text: str, header: str = "") -> CallSite:
    """Read the call text (wrapped in a dummy function) against the extern declaration."""
    header = header or ".version 8.7\n.target sm_89\n.address_size 64\n"
    ext_mod = _parse_snippet(header + extern_text.rstrip() + "\n", "extern declaration")
    externs = [f for f in ext_mod.functions if f.kind == ".func" and not f.has_body]
    if len(externs) != 1:
        raise OutlineError(f"the extern text must declare exactly one .func "
                           f"(found {len(externs)})")
    ext = externs[0]
    wrapped = (header + extern_text.rstrip() + "\n.func __rrsplice_call_site()\n{\n"
               + call_text.rstrip() + "\n}\n")
    mod = _parse_snippet(wrapped, "call text")
    fn = mod.functions[-1]
    calls = [st for st in fn.statements if st.base == "call"]
    mine = [st for st in calls if _callee(st) == ext.name]
    if len(mine) != 1:
        raise OutlineError(f"the call text must call {ext.name} exactly once "
                           f"(found {len(mine)} call(s) of it, {len(calls)} call(s) in all)")
    call = mine[0]
    rets, args = _call_lists(call)
    if len(args) != len(ext.params):
        raise OutlineError(f"the call passes {len(args)} argument(s) but {ext.name} declares "
                           f"{len(ext.params)} parameter(s)")
    if len(rets) != len(ext.ret_params):
        raise OutlineError(f"the call takes {len(rets)} return value(s) but {ext.name} "
                           f"declares {len(ext.ret_params)}")
    arg_pos = {}
    for i, a in enumerate(args):
        if isinstance(a, Symbol):
            arg_pos[a.name] = i
    ret_pos = {a.name: i for i, a in enumerate(rets) if isinstance(a, Symbol)}

    site = CallSite(callee=ext.name, extern=ext, call=call, function=fn, params=[],
                    readbacks=[], pre=[], post=[],
                    local_decls=[d for d in fn.decls() if d.space == ".reg"])
    for i, a in enumerate(args):
        if not isinstance(a, Symbol):       # a register or immediate passed directly
            site.params.append(ParamValue(i, ext.params[i].name, 0, "st.param", a, call))
    for st in fn.statements:
        if st.is_label:
            continue
        if st.index < call.index:
            if st.base == "st" and "param" in st.modifiers and st.operands \
                    and isinstance(st.operands[0], Address) \
                    and isinstance(st.operands[0].base, Symbol) \
                    and st.operands[0].base.name in arg_pos:
                i = arg_pos[st.operands[0].base.name]
                site.params.append(ParamValue(i, ext.params[i].name, st.operands[0].offset,
                                              st.opcode, st.operands[1], st))
            else:
                site.pre.append(st)
        elif st.index > call.index:
            rb = _readback(st, ret_pos, ext)
            if rb is not None:
                site.readbacks.append(rb)
            else:
                site.post.append(st)
    filled = {pv.index for pv in site.params}
    for i, p in enumerate(ext.params):
        if i not in filled:
            site.notes.append(f"parameter {p.name} is never stored by the call text")
    return site


def _callee(st: Statement) -> Optional[str]:
    ops = st.operands
    if not ops:
        return None
    target = ops[1] if len(ops) > 1 and isinstance(ops[0], ParenList) else ops[0]
    return target.name if isinstance(target, Symbol) else None


def _call_lists(st: Statement) -> tuple:
    ops = st.operands
    rets: tuple = ()
    i = 0
    if len(ops) > 1 and isinstance(ops[0], ParenList):
        rets = ops[0].items
        i = 1
    i += 1
    args = ops[i].items if i < len(ops) and isinstance(ops[i], ParenList) else ()
    return rets, args


def _dest_regs(op) -> list:
    return [r.name for r in op.registers() if not r.special]


def _readback(st: Statement, ret_pos: dict, ext: Function) -> Optional[ReadBack]:
    if st.base != "ld" or len(st.operands) < 2 or not isinstance(st.operands[1], Address):
        return None
    addr = st.operands[1]
    dst = _dest_regs(st.operands[0])
    if isinstance(addr.base, Symbol) and addr.base.name in ret_pos and "param" in st.modifiers:
        j = ret_pos[addr.base.name]
        return ReadBack("param", dst, st, ret_name=ext.ret_params[j].name, offset=addr.offset)
    if isinstance(addr.base, Reg):
        kind = "scratch" if any(m.startswith("shared") for m in st.modifiers) else "memory"
        return ReadBack(kind, dst, st, offset=addr.offset)
    return None


# ---------------------------------------------------------------- region analysis

def region_span(module: Module, fn: Function, rng: StatementRange,
                lines: Optional[tuple] = None) -> tuple:
    """(start, end) character offsets of the region's text: whole physical lines, either the
    recipe's `lines = (first, end)` half-open interval or the statements' own lines."""
    starts = module.line_starts()
    first_st, last_st = fn.statement(rng.first), fn.statement(rng.last)
    a_line, b_line = (lines[0], lines[1] - 1) if lines else (first_st.line, last_st.end_line)
    start = starts[a_line - 1]
    end = starts[b_line] if b_line < len(starts) else len(module.text)
    for st in fn.statements:
        if st.index in rng:
            continue
        if start <= st.start < end or start < st.end <= end:
            raise OutlineError(f"{st.sid} (line {st.line}) shares a line with the region "
                               f"s{rng.first}-s{rng.last} but lies outside it")
    if not lines:
        start, end = _widen(module, fn, rng, start, end, starts)
    for blk in _iter_blocks(fn.body):
        inside = start <= blk.start and blk.end <= end
        outside = blk.end <= start or blk.start >= end
        encloses = blk.start < start and end <= blk.end
        if not (inside or outside or encloses):
            raise OutlineError(f"the region s{rng.first}-s{rng.last} (lines {a_line}-{b_line}) "
                               f"cuts the {{ }} block of lines {blk.line}-{blk.end_line}")
        if encloses:
            raise OutlineError(f"the region s{rng.first}-s{rng.last} lies inside the {{ }} "
                               f"block of lines {blk.line}-{blk.end_line}; cut the whole block")
    return start, end


def _widen(module: Module, fn: Function, rng: StatementRange, start: int, end: int,
           starts: list) -> tuple:
    """A statement range given without lines takes in the braces of blocks it opens or
    closes when nothing else lies between (`{` before its first statement, `}` after its
    last)."""
    def line_end(off):
        nl = module.text.find("\n", off)
        return len(module.text) if nl < 0 else nl + 1

    def line_start(off):
        return module.text.rfind("\n", 0, off) + 1

    others = [st for st in fn.statements if st.index not in rng]
    changed = True
    while changed:
        changed = False
        for blk in _iter_blocks(fn.body):
            if start <= blk.start < end < blk.end:
                if not any(end <= st.start < blk.end for st in others):
                    end = line_end(blk.end - 1)
                    changed = True
            if blk.start < start < blk.end <= end:
                if not any(blk.start <= st.start < start for st in others):
                    start = line_start(blk.start)
                    changed = True
    return start, end


def _branch_targets(st: Statement) -> list:
    if st.base not in ("bra", "brx"):
        return []
    out = []
    for op in st.operands:
        if isinstance(op, Symbol):
            out.append(op.name)
    return out


def region_needs(fn: Function, rng: StatementRange, live_at_exit: set) -> dict:
    """Registers the region reads before writing them on some path from its first statement
    (with `live_at_exit` read after its last): name -> index of a first such read."""
    idx = list(range(rng.first, rng.last + 1))
    sts = {i: fn.statement(i) for i in idx}
    succ = {}
    for i in idx:
        st = sts[i]
        nxt = [i + 1] if i < rng.last else ["exit"]
        if st.is_label:
            succ[i] = nxt
            continue
        if st.base in TERMINATORS:
            targets = []
            for name in _branch_targets(st):
                lab = fn.label_statement(name)
                if lab is None:
                    raise OutlineError(f"{st.sid} (line {st.line}) branches to {name}, which "
                                       f"is not a label of {fn.name}")
                if lab.index not in rng:
                    raise OutlineError(f"{st.sid} (line {st.line}) branches to {name} (line "
                                       f"{lab.line}), outside the region: a body cannot jump "
                                       f"back into the kernel")
                targets.append(lab.index)
            if st.base == "brx" and not targets:
                raise OutlineError(f"{st.sid} (line {st.line}): indirect branch in the region")
            succ[i] = targets + (nxt if st.guard is not None else [])
        else:
            succ[i] = nxt
    labels = {sts[i].label: i for i in idx if sts[i].is_label}
    if labels:
        for st in fn.statements:
            if st.index in rng or st.is_label:
                continue
            for name in _branch_targets(st):
                if name in labels:
                    raise OutlineError(f"{st.sid} (line {st.line}), outside the region, branches "
                                       f"to {name} (line {sts[labels[name]].line}) inside it: "
                                       f"the region has a second entry")
    # basic blocks of the region, gen/kill as bitsets over the region's registers
    du = {i: def_use(sts[i]) for i in idx}
    number: dict = {}
    names: list = []

    def bit(reg: str) -> int:
        n = number.get(reg)
        if n is None:
            n = number[reg] = len(names)
            names.append(reg)
        return 1 << n

    leaders = {rng.first}
    for i in idx:
        if sts[i].is_label:
            leaders.add(i)
        elif sts[i].base in TERMINATORS and i < rng.last:
            leaders.add(i + 1)
    starts = sorted(leaders)
    block_of = {}
    blocks = []
    for k, a in enumerate(starts):
        b = (starts[k + 1] - 1) if k + 1 < len(starts) else rng.last
        blocks.append((a, b))
        for i in range(a, b + 1):
            block_of[i] = k
    gen = []
    kill = []
    for a, b in blocks:
        g = 0
        kl = 0
        for i in range(b, a - 1, -1):
            k_i = 0
            for d in du[i].kills:
                k_i |= bit(d)
            u_i = 0
            for u in du[i].uses:
                if not is_pseudo(u):
                    u_i |= bit(u)
            g = (g & ~k_i) | u_i
            kl |= k_i
        gen.append(g)
        kill.append(kl)
    exit_mask = 0
    for r in live_at_exit:
        exit_mask |= bit(r)
    bsucc = [[block_of[s] if s != "exit" else "exit" for s in succ[b]] for _a, b in blocks]
    bpreds: list = [[] for _ in blocks]
    for k, ss in enumerate(bsucc):
        for s in ss:
            if s != "exit":
                bpreds[s].append(k)
    live = [0] * len(blocks)
    work = list(range(len(blocks)))
    in_work = set(work)
    while work:
        k = work.pop()
        in_work.discard(k)
        out = 0
        for s in bsucc[k]:
            out |= exit_mask if s == "exit" else live[s]
        new = gen[k] | (out & ~kill[k])
        if new != live[k]:
            live[k] = new
            for p in bpreds[k]:
                if p not in in_work:
                    work.append(p)
                    in_work.add(p)
    entry = live[0]
    needs = {names[n] for n in range(len(names)) if entry >> n & 1}
    gen = {i: [u for u in du[i].uses if not is_pseudo(u)] for i in idx}
    first_read = {}
    for i in idx:
        for u in gen[i]:
            if u in needs and u not in first_read:
                first_read[u] = i
    for u in needs:
        first_read.setdefault(u, None)
    return first_read


# ---------------------------------------------------------------- reaching definitions

class _Reaching:
    """Reaching definitions at a statement: the dataflow analysis when it is available,
    else each register's definitions before that point (exact for the straight-line,
    mostly single-assignment prologues compilers emit)."""

    def __init__(self, fn: Function, analysis=None):
        self.fn = fn
        self.fa = analysis
        self._defs: Optional[dict] = None

    def _all_defs(self) -> dict:
        if self._defs is None:
            table: dict = {}
            for st in self.fn.statements:
                if st.is_label:
                    continue
                for d in def_use(st).defs:
                    table.setdefault(d, []).append(st.index)
            self._defs = table
        return self._defs

    def at(self, index: int, reg: str) -> tuple:
        if self.fa is not None:
            try:
                got = self.fa.reaching_defs(index, reg)
                return tuple(sorted(getattr(d, "index", d) for d in got))
            except Exception:  # noqa: BLE001 - fall back to the simple rule
                pass
        before = [i for i in self._all_defs().get(reg, []) if i < index]
        if not before:
            return ()
        last = before[-1]
        if self.fn.statement(last).guard is None:
            tail = [i for i in before if i >= last]
            return tuple(tail)
        return tuple(before)


def _load_analysis(fn: Function):
    try:
        from . import dataflow  # noqa: WPS433 - optional until it lands
    except ImportError:
        return None
    try:
        return dataflow.analyze(fn)
    except Exception:  # noqa: BLE001
        return None


_PURE = frozenset({
    "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min",
    "max", "popc", "clz", "bfind", "brev", "bfe", "bfi", "and", "or", "xor", "not", "cnot",
    "lop3", "shf", "shl", "shr", "mov", "cvt", "cvta", "setp", "selp", "set", "prmt", "fma",
    "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "testp", "copysign", "slct"})


def _is_reloadable(st: Statement) -> bool:
    """A load whose memory the kernel never writes: `ld.global.nc`, `ld.const`, `ldu`."""
    mods = set(st.modifiers)
    if st.base == "ldu":
        return True
    return st.base == "ld" and ("nc" in mods or "const" in mods)


# ---------------------------------------------------------------- the outliner

@dataclass
class Outline:
    """The outlined body and what went into it."""
    ptx: bytes
    callee: str
    abi: str
    passed: list                 # registers loaded from parameters
    returned: list               # registers delivered back (scratch or .param)
    recomputed: list             # registers recomputed from their provenance
    recompute_statements: list   # kernel statement indices copied before the region
    symbols: dict                # shared symbol -> register carrying its address
    kernel_params: list          # region statements whose kernel-parameter read was rewritten
    needs: list                  # registers live into the body's copy of the region
    region: tuple                # (first, last) statement indices
    lines: tuple                 # (first, last) physical lines copied
    notes: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"callee": self.callee, "abi": self.abi, "passed": self.passed,
                "returned": self.returned, "recomputed": self.recomputed,
                "recompute_statements": [f"s{i}" for i in self.recompute_statements],
                "shared_symbols": self.symbols,
                "kernel_parameter_reads": [f"s{i}" for i in self.kernel_params],
                "live_in": self.needs, "region": f"s{self.region[0]}-s{self.region[1]}",
                "lines": list(self.lines), "notes": self.notes,
                "bytes": len(self.ptx)}


class _Names:
    """Fresh private register names that collide with nothing in the kernel or call text."""

    def __init__(self, taken_prefixes: set):
        base = "%rrso"
        while any(p.startswith(base) for p in taken_prefixes):
            base += "x"
        self.base = base
        self.counts: dict = {}

    def new(self, width: int) -> str:
        key = {1: "p", 16: "h", 32: "r", 64: "d"}[width]
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        return f"{self.base}{key}{n}"

    def decls(self) -> list:
        types = {"p": ".pred", "h": ".b16", "r": ".b32", "d": ".b64"}
        return [f"\t.reg {types[k]} {self.base}{k}<{n}>;" for k, n in sorted(self.counts.items())]


def _header(module: Module) -> str:
    out = []
    for d, v, _ in module.headers:
        out.append(f"{d} {v}")
    return "\n".join(out) + "\n"


def outline(module: Module, fn: Function, rng: StatementRange, call_text: str,
            extern_text: str, *, lines: Optional[tuple] = None) -> bytes:
    """The PTX module (bytes) defining the callee of `extern_text` as region `rng` of `fn`."""
    return build_outline(module, fn, rng, call_text, extern_text, lines=lines).ptx


def build_outline(module: Module, fn: Function, rng: StatementRange, call_text: str,
                  extern_text: str, *, lines: Optional[tuple] = None,
                  analysis=None) -> Outline:
    """Like `outline`, returning the body together with what went into it."""
    header = _header(module)
    site = parse_call(call_text, extern_text, header)
    text = module.text
    start, end = region_span(module, fn, rng, lines)
    a_line = text.count("\n", 0, start) + 1
    b_line = text.count("\n", 0, end) + (0 if text[end - 1:end] == "\n" else 1)
    region_sts = [fn.statement(i) for i in range(rng.first, rng.last + 1)]
    notes = list(site.notes)

    params_by_reg = site.passed_registers()
    kernel_types = _reg_types(fn)
    call_types = _reg_types(site.function)
    scoped_names = {d.name for blk in _iter_blocks(fn.body) for d in blk.decls}
    prefixes = {d.name for d in fn.decls() if d.space == ".reg"} | \
               {d.name for d in site.local_decls}
    names = _Names(prefixes)

    def width_of(reg: str) -> int:
        t = kernel_types(reg) or call_types(reg)
        if t is None:
            raise OutlineError(f"register {reg} is not declared in {fn.name} nor in the "
                               f"call text")
        return _WIDTH.get(t.lstrip("."), 32)

    # ---- symbols the call passes: `mov.u32 %x, SYM` ... `st.param [pN], %x`
    shared_syms = {d.name: d for d in fn.decls() if d.space == ".shared"}
    shared_syms.update({d.name: d for d in module.decls if d.space == ".shared"})
    sym_regs: dict = {}
    for st in site.pre:
        if st.base in ("mov", "cvta") and len(st.operands) == 2 \
                and isinstance(st.operands[1], Symbol) and isinstance(st.operands[0], Reg) \
                and not (st.base == "cvta" and "to" not in st.modifiers and st.base == "cvta"):
            reg = st.operands[0].name
            if reg in params_by_reg and st.operands[1].name in shared_syms and st.base == "mov":
                sym_regs.setdefault(st.operands[1].name, reg)

    # ---- the body's pieces
    body_pre: list = []      # after the parameter loads
    body_post: list = []     # after the region
    edits: list = []         # (start, end, text) relative to module.text, inside the region

    # the region's references to things a .func cannot see
    kernel_params = {p.name for p in fn.params}
    module_syms = {d.name: d for d in module.decls}
    local_syms = {d.name: d for d in fn.decls() if d.space in (".local", ".param")}
    sym64: dict = {}
    rewritten_params = []
    reach = None
    snapshots: dict = {}

    def snapshot(reg: str) -> str:
        """A private copy, taken before the region runs, of passed register `reg`."""
        if reg not in snapshots:
            w = width_of(reg)
            snap = names.new(w)
            snapshots[reg] = snap
            body_pre.append(f"\tmov.b{w if w > 1 else 32} {snap}, {reg};" if w != 1 else
                            f"\tmov.pred {snap}, {reg};")
        return snapshots[reg]

    def stable(reg: str) -> str:
        """`reg` itself when only the call text declares it (the region cannot change it),
        else a snapshot taken before the region."""
        return reg if not _kernel_side(site, reg) or not kernel_types(reg) and \
            call_types(reg) else snapshot(reg)

    def sym_base(sym: str, width: int) -> str:
        reg = sym_regs[sym]
        w = width_of(reg)
        if w == width:
            return stable(reg)
        key = (sym, width)
        if key not in sym64:
            r = names.new(width)
            src = stable(reg)
            body_pre.append(f"\tcvt.u{width}.u{w} {r}, {src};")
            sym64[key] = r
        return sym64[key]

    for st in region_sts:
        if st.is_label:
            continue
        syms = _symbols(st)
        if not syms:
            continue
        if st.base == "ld" and "param" in st.modifiers and syms & kernel_params:
            reach = reach or _Reaching(fn, analysis if analysis is not None
                                       else _load_analysis(fn))
            edits.append((st.start, st.end, _rewrite_param_read(st, fn, rng, site, reach,
                                                                snapshot, width_of)))
            rewritten_params.append(st.index)
            continue
        st_text = st.text
        local_edits = []
        for sym in sorted(syms):
            if sym in kernel_params:
                raise OutlineError(f"{st.sid} (line {st.line}) takes the address of kernel "
                                   f"parameter {sym} ({st.text.strip()!r}): a .func cannot "
                                   f"see the entry's parameters; pass the value instead")
            if sym in shared_syms:
                if sym not in sym_regs:
                    raise OutlineError(
                        f"{st.sid} (line {st.line}) uses the .shared array {sym}, which a "
                        f"separate .func cannot name; the call must pass its address "
                        f"(`mov.u32 %x, {sym};` then `st.param.b32 [pN+0], %x;`)")
                width = 64 if (_type_width(st) == 64 and not _in_address(st, sym)) else 32
                rep = sym_base(sym, width)
                for m in re.finditer(r"(?<![\w$%])" + re.escape(sym) + r"(?![\w$])", st_text):
                    local_edits.append((st.start + m.start(), st.start + m.end(), rep))
                continue
            if fn.label_statement(sym) is not None or sym == site.callee:
                continue
            if sym in module_syms:
                d = module_syms[sym]
                if d.space in (".const", ".global") and d.init is not None:
                    continue      # copied into the body module below
                raise OutlineError(f"{st.sid} (line {st.line}) uses module-scope {d.space} "
                                   f"{sym}, which the body module cannot share; pass its "
                                   f"address")
            if sym in local_syms:
                raise OutlineError(f"{st.sid} (line {st.line}) uses the entry's "
                                   f"{local_syms[sym].space} {sym}, which a .func cannot see")
        edits.extend(local_edits)

    # ---- what the body must deliver back, and how
    live_at_exit: set = set()
    for rb in site.readbacks:
        live_at_exit.update(rb.registers)
    for reg in sorted(live_at_exit):
        width_of(reg)
    post_lines, post_inputs = _readback_code(site, names, width_of, snapshot)

    # ---- what the body's copy of the region needs on entry
    needs = region_needs(fn, rng, live_at_exit)
    missing = [r for r in sort_registers(needs) if r not in params_by_reg]
    recomputed: list = []
    recompute_idx: set = set()
    if missing:
        reach = reach or _Reaching(fn, analysis if analysis is not None
                                   else _load_analysis(fn))
        for reg in missing:
            if reg in scoped_names and not kernel_types(reg):
                continue      # a block-scoped name: its block comes with the region
            chain = _recompute(fn, rng.first, reg, params_by_reg, reach, needs)
            recompute_idx.update(chain)
            recomputed.append(reg)
    recompute_sts = [fn.statement(i) for i in sorted(recompute_idx)]

    # parameter loads
    param_lines = []
    ext_params = site.extern.params
    loaded = []
    for pv in site.params:
        regs = pv.registers
        if not regs or pv.statement is site.call:
            continue
        p = ext_params[pv.index]
        op = pv.statement.opcode.replace("st.param", "ld.param", 1)
        param_lines.append(f"\t{op} {pv.value}, [{p.name}+{pv.offset}];")
        loaded.extend(regs)
    # registers a recompute statement overwrites are loaded again afterwards
    reload_lines = []
    redefined = set()
    for st in recompute_sts:
        redefined.update(def_use(st).defs)
    for line, pv in zip(param_lines, [pv for pv in site.params
                                      if pv.registers and pv.statement is not site.call]):
        if set(pv.registers) & redefined:
            reload_lines.append(line)

    # ---- assemble the module
    region_text = _apply(text, start, end, edits)
    decls = []
    top_inside = {id(d) for d in fn.body.decls if start <= d.start < end}
    seen = set()
    for d in fn.body.decls:
        if d.space != ".reg" or id(d) in top_inside:
            continue
        key = (d.name, d.count)
        if key in seen:
            continue
        seen.add(key)
        decls.append(_decl_text(d))
    kernel_reg_names = {d.name for d in fn.body.decls if d.space == ".reg"}
    for d in site.local_decls:
        if d.name in kernel_reg_names:
            continue
        decls.append(_decl_text(d))
    sig = _signature(site.extern)
    mod_decls = []
    for sym, d in module_syms.items():
        if d.init is not None and d.space in (".const", ".global") \
                and re.search(r"(?<![\w$%])" + re.escape(sym) + r"(?![\w$])", region_text):
            mod_decls.append(module.text[d.start:d.end].strip())
    out = [f"//\n// {site.callee}: statements s{rng.first}-s{rng.last} (lines {a_line}-{b_line})"
           f" of {fn.name}",
           f"// from {module.path or '<text>'}, outlined by rrsplice outline.",
           "//", "", header.rstrip("\n"), ""]
    out.extend(mod_decls)
    if mod_decls:
        out.append("")
    out.append(sig)
    out.append("{")
    out.extend(decls)
    out.extend(names.decls())
    out.append("")
    out.append("\t// parameters, into the registers the region reads")
    out.extend(param_lines)
    if recompute_sts:
        out.append("\t// registers the call does not pass, recomputed from passed values")
        for st in recompute_sts:
            out.append("\t" + _one_line(st.text))
        if reload_lines:
            out.append("\t// parameters the recomputation overwrote")
            out.extend(reload_lines)
    if body_pre:
        out.append("\t// values taken before the region runs")
        out.extend(body_pre)
    out.append(f"\t// ---- region s{rng.first}-s{rng.last}, lines {a_line}-{b_line}, verbatim ----")
    nl = "\r\n" if "\r\n" in region_text[:2000] else "\n"
    out.append(region_text.rstrip("\r\n").replace(nl, "\n"))
    out.append("\t// ---- end of region ----")
    if post_lines:
        out.append("\t// the values the call text reads back")
        out.extend(post_lines)
    out.append("\tret;")
    out.append("}")
    ptx = ("\n".join(out) + "\n").encode("utf-8")
    if names.counts:
        pass
    return Outline(ptx=ptx, callee=site.callee, abi=site.abi,
                   passed=sort_registers(set(loaded)),
                   returned=site.returned_registers(), recomputed=recomputed,
                   recompute_statements=[st.index for st in recompute_sts],
                   symbols=dict(sym_regs), kernel_params=rewritten_params,
                   needs=sort_registers(needs), region=(rng.first, rng.last),
                   lines=(a_line, b_line), notes=notes)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _apply(text: str, start: int, end: int, edits: list) -> str:
    out = []
    pos = start
    for a, b, rep in sorted(edits):
        if a < pos:
            raise OutlineError(f"overlapping rewrites at offset {a}")
        out.append(text[pos:a])
        out.append(rep)
        pos = b
    out.append(text[pos:end])
    return "".join(out)


def _symbols(st: Statement) -> set:
    out = set()

    def visit(op):
        if isinstance(op, Symbol):
            out.add(op.name)
        elif isinstance(op, Address):
            if isinstance(op.base, Symbol):
                out.add(op.base.name)
            for x in op.extra:
                visit(x)
        elif isinstance(op, (Vector, ParenList)):
            for x in op.items:
                visit(x)
    for op in st.operands:
        visit(op)
    return out


def _in_address(st: Statement, sym: str) -> bool:
    for op in st.operands:
        if isinstance(op, Address) and isinstance(op.base, Symbol) and op.base.name == sym:
            return True
    return False


def _signature(ext: Function) -> str:
    rets = ""
    if ext.ret_params:
        rets = " (" + ", ".join(str(p) for p in ext.ret_params) + ")"
    params = ",\n".join("\t" + str(p) for p in ext.params)
    return f".visible .func{rets} {ext.name}" + (f"(\n{params}\n)" if ext.params else "")


# ---------------------------------------------------------------- kernel parameter reads

def _value_key(st: Statement, reg: str):
    """What a definition computes, independent of where its result goes: (opcode, sources,
    position of `reg` among the destinations)."""
    dst = _dest_regs(st.operands[0])
    pos = dst.index(reg) if reg in dst else -1
    return (str(st.guard) if st.guard else "", st.opcode,
            tuple(str(o) for o in st.operands[1:]), pos)


def _rewrite_param_read(st: Statement, fn: Function, rng: StatementRange, site: CallSite,
                        reach: _Reaching, snapshot, width_of) -> str:
    """`ld.param.u64 %rd5, [K_param_0+40]` inside the region -> `mov.b64 %rd5, <the passed
    register that holds the same value>`, or an OutlineError."""
    passed = site.passed_registers()
    keys = {}
    for reg in passed:
        defs = reach.at(rng.first, reg)
        if len(defs) == 1:
            d = fn.statement(defs[0])
            if d.base == "ld" and "param" in d.modifiers and d.guard is None:
                keys.setdefault(_value_key(d, reg)[1:], reg)
    out = []
    for reg in _dest_regs(st.operands[0]):
        src = keys.get(_value_key(st, reg)[1:])
        if src is None:
            raise OutlineError(
                f"{st.sid} (line {st.line}) reads a kernel parameter inside the region "
                f"({_one_line(st.text)!r}); a .func cannot read the entry's parameters and "
                f"the call passes no register holding {reg}'s value: pass it, or cut after "
                f"this read")
        w = width_of(reg)
        out.append(f"mov.b{w} {reg}, {snapshot(src)};")
    guard = f"{st.guard} " if st.guard else ""
    return " ".join(guard + x for x in out)


# ---------------------------------------------------------------- recomputation

def _recompute(fn: Function, at: int, reg: str, passed: dict, reach: _Reaching,
               needs: dict, depth: int = 0) -> list:
    """Kernel statement indices that recompute `reg`'s value at statement `at` from passed
    values, or an OutlineError saying why not."""
    first = needs.get(reg)
    where = (f" (first read at s{first}, line {fn.statement(first).line})"
             if isinstance(first, int) else "")
    if depth > 64:
        raise OutlineError(f"{reg}{where}: provenance chain too deep to recompute")
    defs = reach.at(at, reg)
    why = None
    if not defs:
        why = "no definition reaches the region"
    elif len(defs) > 1:
        why = (f"{len(defs)} definitions reach the region "
               f"({', '.join('s%d' % d for d in defs[:6])})")
    else:
        d = fn.statement(defs[0])
        if d.guard is not None:
            why = f"its definition {d.sid} (line {d.line}) is guarded"
        elif not (d.base in _PURE or _is_reloadable(d)):
            why = (f"its definition {d.sid} (line {d.line}, {d.opcode}) is not a pure "
                   f"computation or a read-only load")
        elif _symbols(d) - {lab for lab in _symbols(d) if fn.label_statement(lab)}:
            why = (f"its definition {d.sid} (line {d.line}) names "
                   f"{', '.join(sorted(_symbols(d)))}, which the body cannot see")
        else:
            out = [d.index]
            for u in def_use(d).uses:
                if is_pseudo(u):
                    why = f"its definition {d.sid} reads {u}"
                    break
                if reach.at(d.index, u) != reach.at(at, u):
                    why = (f"its definition {d.sid} (line {d.line}) reads {u}, which is "
                           f"redefined before the region")
                    break
                if u in passed:
                    continue
                try:
                    out.extend(_recompute(fn, d.index, u, passed, reach, {}, depth + 1))
                except _NotDerivable as exc:
                    why = f"its definition {d.sid} (line {d.line}) reads {u}: {exc.why}"
                    break
            if why is None:
                for other in def_use(d).defs:
                    if other != reg and other in needs and reach.at(at, other) != (d.index,):
                        why = (f"recomputing {d.sid} would also overwrite {other}, which the "
                               f"region reads with a later value")
                        break
            if why is None:
                return out
    if depth:
        raise _NotDerivable(why)
    raise OutlineError(f"{reg} is live into the region{where} but the call does not pass it, "
                       f"and it cannot be recomputed from passed values: {why}")


class _NotDerivable(Exception):
    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


# ---------------------------------------------------------------- read-backs

def _readback_code(site: CallSite, names: _Names, width_of, snapshot) -> tuple:
    """The body's epilogue: the call text's address computations (after the call) and one
    store per read-back, in the call text's order."""
    fn = site.function
    post_defs: dict = {}
    for st in site.post:
        for d in def_use(st).defs:
            post_defs.setdefault(d, []).append(st)
    pre_defs: dict = {}
    for st in site.pre:
        for d in def_use(st).defs:
            pre_defs.setdefault(d, []).append(st)

    def last_def(table: dict, reg: str, before: int):
        found = [st for st in table.get(reg, ()) if st.index < before]
        return found[-1] if found else None
    passed = site.passed_registers()
    needed: list = []           # call-text statements to replicate, in order
    inputs: set = set()
    seen: set = set()

    def want(reg: str, before: int):
        st = last_def(post_defs, reg, before)
        if st is not None:
            if st.index not in seen:
                seen.add(st.index)
                for u in def_use(st).uses:
                    want(u, st.index)
                needed.append(st)
            return
        if reg in passed:
            inputs.add(reg)
            return
        st = last_def(pre_defs, reg, min(before, site.call.index))
        if st is not None:
            if st.index not in seen:
                seen.add(st.index)
                for u in def_use(st).uses:
                    want(u, st.index)
                needed.append(st)
            return
        raise OutlineError(f"the call text reads back through {reg}, which it neither "
                           f"computes nor passes to {site.callee}")

    for rb in site.readbacks:
        if rb.kind == "param":
            continue
        addr = rb.statement.operands[1]
        if isinstance(addr.base, Reg) and not addr.base.special:
            want(addr.base.name, rb.statement.index)
    lines = []
    rename = {reg: snapshot(reg) for reg in sorted(inputs) if reg in _kernel_side(site, reg)}
    for st in sorted(needed, key=lambda s: s.index):
        lines.extend(_replicate(st, names, rename))
    # A block barrier the call text places after its scratch reads (so that no warp reuses
    # the array before every warp has read its slot) is mirrored before the body's stores
    # (so that no warp writes its slot while another still uses the array in the region).
    last_read = max((rb.statement.index for rb in site.readbacks if rb.kind != "param"),
                    default=None)
    if last_read is not None:
        for st in site.post:
            if st.index > last_read and is_block_barrier(st):
                lines.append("\t" + _one_line(st.text))
                break
    for rb in site.readbacks:
        st = rb.statement
        mods = [m for m in st.modifiers if m not in ("nc", "ca", "cg", "cs", "lu", "cv",
                                                        "L1::no_allocate", "L1::evict_last")]
        opcode = ".".join(["st"] + mods)
        if rb.kind == "param":
            lines.append(f"\t{opcode} [{rb.ret_name}+{rb.offset}], {st.operands[0]};")
        else:
            addr = st.operands[1]
            base = rename.get(addr.base.name, addr.base.name)
            off = f"+{addr.offset}" if addr.offset > 0 else (str(addr.offset) if addr.offset else "+0")
            lines.append(f"\t{opcode} [{base}{off}], {st.operands[0]};")
    return lines, inputs


def _kernel_side(site: CallSite, reg: str) -> set:
    """{reg} if `reg` is a kernel register (not declared by the call text itself), else {}."""
    local = {d.name for d in site.local_decls if d.count is None}
    for d in site.local_decls:
        if d.count is not None and d.declares(reg):
            return set()
    return set() if reg in local else {reg}


def _replicate(st: Statement, names: _Names, rename: dict) -> list:
    """A call-text statement for the body: special registers read with `mov` first (ptxas
    accepts them only there), registers the region may have changed read from snapshots."""
    out = []
    specials = {}

    def fix(op):
        if isinstance(op, Reg):
            if op.special and st.base != "mov":
                if op.name not in specials:
                    w = 64 if op.name in _SPECIAL64 else 32
                    tmp = names.new(w)
                    out.append(f"\tmov.u{w} {tmp}, {op.name};")
                    specials[op.name] = tmp
                return specials[op.name]
            return rename.get(op.name, op.name)
        if isinstance(op, Address):
            base = op.base
            if isinstance(base, Reg):
                base = Reg(rename.get(base.name, base.name))
            return str(Address(base, op.offset, op.extra))
        if isinstance(op, Vector):
            return "{" + ", ".join(fix(x) for x in op.items) + "}"
        return str(op)
    ops = [fix(op) for op in st.operands]
    guard = f"{st.guard} " if st.guard else ""
    out.append(f"\t{guard}{st.opcode} {', '.join(ops)};")
    return out


# ---------------------------------------------------------------- recipes

def outline_recipe(recipe_path, corpus=None, analysis=None):
    """Load a `cut_call` recipe, find its module and build its body.
    Returns (Outline, module path, resolve note)."""
    from .recipe import load_recipe, resolve_module
    from .select import lines_to_range, select_function
    rec = load_recipe(recipe_path)
    if rec.cut_call is None or rec.call is None or rec.extern is None:
        raise OutlineError(f"{rec.path}: outline needs a cut_call recipe (cut_call, call, "
                           f"extern); this one is a {rec.form!r} recipe")
    path, note = resolve_module(rec, corpus)
    module = parse(path)
    fn = _recipe_function(module, rec, select_function)
    first, end = rec.cut_call
    rng = lines_to_range(fn, first, end - 1)
    out = build_outline(module, fn, rng, rec.call, rec.extern, lines=(first, end),
                        analysis=analysis)
    if note:
        out.notes.insert(0, note)
    return out, path, rec


def _recipe_function(module: Module, rec, select_function) -> Function:
    first = rec.cut_call[0]
    for f in module.functions:
        if f.has_body and f.line <= first <= f.end_line:
            return f
    fn, _ = select_function(module, rec.entry)
    return fn
