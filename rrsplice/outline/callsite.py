"""Reading the call text: what a splice's call says about the callee's ABI (the
parameters it fills, the values it reads back, the statements around the call)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..check.text import SNIPPET_HEADER, wrap_snippet
from ..ptx.errors import ParseError
from ..ptx.model import Address, Function, Module, ParenList, Reg, Statement, Symbol
from ..ptx.parser import parse
from ..ptx.scopes import bind_outer
from .common import OutlineError


def _parse_snippet(text: str, what: str, body_first: int) -> Module:
    try:
        return parse(text, filename=f"<{what}>")
    except ParseError as exc:
        raise OutlineError(f"the {what} does not parse: {exc.message} "
                           f"(line {exc.line - body_first + 1} of the {what}: "
                           f"{exc.line_text.strip()!r})") from None


@dataclass
class ParamValue:
    """One `st.param.T [P+off], value` of the call text: the extern parameter it fills."""
    index: int                 # position in the extern's parameter list
    name: str                  # the extern's parameter name
    offset: int
    opcode: str                # "st.param.b32"
    value: object              # Reg | Imm | Vector
    statement: Statement
    pred: bool = False         # `value` is a predicate the text passed as 1/0 (selp)

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
    ret_name: str | None = None   # the extern's return parameter (param kind)
    offset: int = 0
    pred: bool = False         # `registers` is a predicate read back as 1/0 (setp.ne)


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
        out: dict[str, ParamValue] = {}
        for pv in self.params:
            if isinstance(pv.value, Reg) and not pv.value.special:
                out.setdefault(pv.value.name, pv)
        return out

    def returned_registers(self) -> list:
        out = []
        for rb in self.readbacks:
            out.extend(rb.registers)
        return out

    def passed_symbols(self, shared: set) -> dict:
        """.shared symbol -> the passed register the call text moved its address into
        (`mov.u32 %x, SYM;` before `st.param.b32 [pN], %x;`); the first such move wins."""
        passed = self.passed_registers()
        out: dict = {}
        for st in self.pre:
            ops = st.operands
            if st.base == "mov" and len(ops) == 2 and isinstance(ops[1], Symbol) \
                    and isinstance(ops[0], Reg) and ops[0].name in passed \
                    and ops[1].name in shared:
                out.setdefault(ops[1].name, ops[0].name)
        return out


def parse_call(call_text: str, extern_text: str, header: str = "",
               outer: tuple = ()) -> CallSite:
    """Read the call text (wrapped in a dummy function) against the extern declaration;
    `outer`: the kernel's declarations of special registers' names in force at the cut
    (rrsplice.ptx.scopes.shadows_at), which make those names the kernel's registers."""
    header = header or SNIPPET_HEADER
    extern_text = extern_text.rstrip() + "\n"
    ext_mod = _parse_snippet(header + extern_text, "extern declaration",
                             header.count("\n") + 1)
    externs = [f for f in ext_mod.functions if f.kind == ".func" and not f.has_body]
    if len(externs) != 1:
        raise OutlineError(f"the extern text must declare exactly one .func "
                           f"(found {len(externs)})")
    ext = externs[0]
    wrapped, _, body_first = wrap_snippet(call_text.rstrip(), extern_text, header=header,
                                          opener=".func __rrsplice_call_site()\n{\n")
    mod = _parse_snippet(wrapped, "call text", body_first)
    fn = mod.functions[-1]
    bind_outer(fn, outer)
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
    _predicates(site)
    filled = {pv.index for pv in site.params}
    for i, p in enumerate(ext.params):
        if i not in filled:
            site.notes.append(f"parameter {p.name} is never stored by the call text")
    return site


def _predicates(site: CallSite) -> None:
    """A predicate crosses a call as a 32-bit 1/0 (`rrsplice recipe new` writes this): the
    text passes `selp.u32 %t, 1, 0, %p; st.param.b32 [a], %t;` and reads back with
    `ld.param.b32 %t, [rv]; setp.ne.u32 %p, %t, 0;` through its own temporary %t. The
    value that crosses is %p: the ParamValue and ReadBack name it (and say `pred`)."""
    for pv in site.params:
        v = pv.value
        if pv.statement is site.call or type(v) is not Reg or v.special \
                or _kernel_side(site, v.name):
            continue
        defs = [st for st in site.pre if st.index < pv.statement.index
                and _writes(st, v.name)]
        p = _pred_source(defs[-1]) if defs else None
        if p is not None:
            pv.value, pv.pred = p, True
    for rb in site.readbacks:
        if len(rb.registers) != 1 or _kernel_side(site, rb.registers[0]):
            continue
        t = rb.registers[0]
        for st in site.post:
            if st.index <= rb.statement.index or not _reads(st, t):
                continue
            p = _pred_target(st, t)
            if p is not None and _kernel_side(site, p.name):
                rb.registers, rb.pred = [p.name], True
            break


_ONE_ZERO = ("1", "0")


def _pred_source(st: Statement) -> Reg | None:
    """%p of `selp.{b,u,s}32 %t, 1, 0, %p` (None for anything else)."""
    ops = st.operands
    if st.base == "selp" and st.guard is None and len(ops) == 4 and \
            (str(ops[1]), str(ops[2])) == _ONE_ZERO and type(ops[3]) is Reg \
            and not ops[3].special and st.modifiers in (("b32",), ("u32",), ("s32",)):
        return ops[3]
    return None


def _pred_target(st: Statement, t: str) -> Reg | None:
    """%p of `setp.ne.{b,u,s}32 %p, %t, 0` (None for anything else)."""
    ops = st.operands
    if st.base == "setp" and st.guard is None and len(ops) == 3 and \
            st.modifiers in (("ne", "b32"), ("ne", "u32"), ("ne", "s32")) and \
            type(ops[0]) is Reg and type(ops[1]) is Reg and ops[1].name == t and \
            str(ops[2]) == "0":
        return ops[0]
    return None


def _writes(st: Statement, reg: str) -> bool:
    from ..analysis.semantics import def_use
    from ..ptx.scopes import source_name
    return any(source_name(d) == reg for d in def_use(st).defs)


def _reads(st: Statement, reg: str) -> bool:
    from ..analysis.semantics import def_use
    from ..ptx.scopes import source_name
    return any(source_name(u) == reg for u in def_use(st).uses)


def _callee(st: Statement) -> str | None:
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


def _readback(st: Statement, ret_pos: dict, ext: Function) -> ReadBack | None:
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


def _kernel_side(site: CallSite, reg: str) -> set:
    """{reg} if `reg` is a kernel register (not declared by the call text itself), else {}."""
    local = {d.name for d in site.local_decls if d.count is None}
    for d in site.local_decls:
        if d.count is not None and d.declares(reg):
            return set()
    return set() if reg in local else {reg}
