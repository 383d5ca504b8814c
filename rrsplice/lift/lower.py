"""PTX statements -> C++ statements, one (or a few) per PTX statement, in order.

Registers become typed locals (rrsplice.lift.regs), guards `if`, `bra` a `goto` to the
label's C++ name, and every computing opcode a call of its semantics row's helper
(rrsplice.lift.semantics). The few opcodes that move data rather than compute (ld/st, mov,
setp's two destinations, shfl, barriers, mma, movmatrix, ldmatrix, call, ret) have a lowering each
here. A statement neither covers is a LiftError naming it, never approximated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from ..ptx.diagnostic import register_codes
from ..ptx.errors import RRSpliceError
from ..ptx.isa import TYPES
from ..ptx.model import Address, Imm, Negated, ParenList, PredPair, Reg, Sink, Symbol, Vector
from . import names
from .denorm import keeps_software_flush
from .flush import register_key
from .lanes import butterfly_distance
from .regs import RegTypes, convert
from .semantics import C_TYPES, lookup, row_form, with_software_flush, without_input_flush

_SHFL_MODES = {"up": 0, "down": 1, "bfly": 2, "idx": 3}
_MMA_FORM = "mma.sync.m16n8k32.row.col.f16.e4m3.e4m3.f16"


register_codes(__name__, "error", {
    "lift-unsupported": "a statement (or parameter) of the region has no C++ lowering"})


class LiftError(RRSpliceError):
    """A statement of the region has no lowering (names its form, file:line:col)."""


@dataclass
class Context:
    """What lowering a function needs besides the statement: register types, the
    function's parameters (name -> C expression), where `st.param` of the return goes,
    and the rows the body uses (collected for the header)."""
    regs: RegTypes
    params: dict                              # PTX param name -> (C name, class)
    ret_param: str | None = None           # the return parameter's PTX name
    path: str = "?"
    used: dict = field(default_factory=dict)  # form -> Sem
    targets: set = field(default_factory=set)
    calls: dict = field(default_factory=dict)  # callee -> prototype
    module: object = None
    never_subnormal: frozenset = frozenset()   # registers no statement leaves subnormal
    flush_by_mode: bool = False            # .ftz through the mode register (lift.denorm)
    constants: dict = field(default_factory=dict)  # registers only set to immediates
    lane_xor: dict = field(default_factory=dict)   # registers holding laneid ^ K (lift.lanes)
    mma_hook: Callable | None = None       # staging: replaces the mma lowering
    locate: Callable | None = None         # statement -> (path, line, column, context)


def where(ctx: Context, st) -> tuple:
    """(path, line, column, context) of `st` in the file the user reads; `context` says
    where that is when not in the module (`" in the outlined callee"`), else ""."""
    if ctx.locate is not None:
        return ctx.locate(st)
    return ctx.path, st.line, st.column, ""


def refuse(ctx: Context, st, why: str) -> NoReturn:
    path, line, column, context = where(ctx, st)
    raise LiftError(f"cannot lift `{st.text.strip()}` ({st.view.form}){context}: {why}",
                    path=path, line=line, column=column, code="lift-unsupported")


# ---------------------------------------------------------------- operands

def value(ctx: Context, st, op, want: str) -> str:
    """C expression of source operand `op` as operand class `want`."""
    if isinstance(op, Reg):
        if op.special:
            sreg = op.name[1:].replace(".", "_")
            if sreg not in _SREGS:
                refuse(ctx, st, f"special register {op.name}")
            return convert(f"rr_sreg_{sreg}()", "u32", want)
        cls = ctx.regs.cls(op)
        if cls is None:
            refuse(ctx, st, f"register {op.name} is not declared")
        return convert(names.register(op.key), cls, want)
    if isinstance(op, Negated):
        return "!" + value(ctx, st, op.reg, "pred")
    if isinstance(op, Imm):
        return _imm(ctx, st, op, want)
    if isinstance(op, Symbol) and op.name == "WARP_SZ":      # the ISA's constant (32)
        return convert("32u", "u32", want)
    if isinstance(op, Symbol) and op.name in ctx.params:
        cname, cls = ctx.params[op.name]
        return convert(cname, cls, want)
    refuse(ctx, st, f"operand `{op}`")


_SREGS = {"tid_x", "tid_y", "tid_z", "ntid_x", "ntid_y", "ntid_z", "ctaid_x", "ctaid_y",
          "ctaid_z", "laneid"}


def _imm(ctx, st, op: Imm, want: str) -> str:
    if op.kind_name == "hexfloat":
        t = op.text
        if t[:2] in ("0f", "0F"):
            return convert(f"0x{t[2:]}u", "u32", want)
        return convert(f"0x{t[2:]}ull", "u64", want)
    if op.kind_name == "int":
        v = int(op.value)
        if want == "pred":
            return "true" if v else "false"
        if want in ("f32", "f64"):
            refuse(ctx, st, f"integer immediate {op.text} as a {want} operand")
        bits = TYPES[want].bits
        v &= (1 << bits) - 1
        return f"({C_TYPES[want]})0x{v:x}ull" if bits == 64 else f"({C_TYPES[want]})0x{v:x}u"
    refuse(ctx, st, f"immediate {op.text}")


def assign(ctx: Context, st, op, expr: str, cls: str) -> str:
    """`dst = expr;` for destination operand `op` given `expr` of class `cls`."""
    if isinstance(op, Sink):
        return f"(void)({expr});"
    if not isinstance(op, Reg) or op.special:
        refuse(ctx, st, f"destination `{op}`")
    dcls = ctx.regs.cls(op)
    if dcls is None:
        refuse(ctx, st, f"register {op.name} is not declared")
    return f"{names.register(op.key)} = {convert(expr, cls, dcls)};"


# ---------------------------------------------------------------- statements

def lower(ctx: Context, st) -> list:
    """The C++ lines of one statement (guard applied)."""
    if st.is_label:
        name = names.label(st.label)
        return [f"{name}:;"] if st.label in ctx.targets else \
            [f"/* {st.label}: (no branch in the body targets it) */"]
    body = _lower_instruction(ctx, st)
    if st.guard is not None:
        cond = ("!" if st.guard.negated else "") + value(ctx, st, st.guard.reg, "pred")
        if len(body) == 1:
            return [f"if ({cond}) {body[0]}"]
        return [f"if ({cond}) {{"] + ["    " + x for x in body] + ["}"]
    return body


def _lower_instruction(ctx: Context, st) -> list:
    v = st.view
    base = v.base
    special = _SPECIAL.get(base)
    if special is not None:
        return special(ctx, st)
    row = lookup(v.form)
    if row is None:
        refuse(ctx, st, "no semantics row for this form")
    ops = st.operands
    if len(ops) != 1 + len(row.srcs):
        refuse(ctx, st, f"{len(ops)} operands, the form takes {1 + len(row.srcs)}")
    row = _known_flushed(ctx, st, row, ops[1:])
    ctx.used.setdefault(row.helper, row)
    args = ", ".join(value(ctx, st, o, c) for o, c in zip(ops[1:], row.srcs, strict=False))
    return [assign(ctx, st, ops[0], f"{row.helper}({args})", row.dst)]


def _known_flushed(ctx: Context, st, row, srcs):
    """`row`, or its variant without the flush of the operands that are registers known
    never to hold a subnormal (rrsplice.lift.flush); in a body that flushes through the
    mode register, the variant flushing in software where the mode may not reach
    (rrsplice.lift.denorm)."""
    if ctx.flush_by_mode and "rr_ftz(" in row.portable \
            and keeps_software_flush(st, ctx.constants):
        row = with_software_flush(row)
    flushed = row.input_flushes()
    if not flushed or not ctx.never_subnormal:
        return row
    skip = [x for x, op in zip("abcd", srcs, strict=False)
            if x in flushed and isinstance(op, Reg) and not op.special
            and register_key(op) in ctx.never_subnormal]
    return without_input_flush(row, skip) if skip else row


def _mem_class(ctx, st) -> str:
    t = st.view.type
    if t is None:
        refuse(ctx, st, "no type")
    if t.kind == "float" and t.bits == 32 and t.lanes == 1:
        return "f32"
    if t.kind == "float" and t.bits == 64:
        return "f64"
    return {8: "u8", 16: "u16", 32: "u32", 64: "u64"}.get(t.bits) or refuse(ctx, st, "width")


def _address(ctx, st, addr: Address) -> str:
    base = addr.base
    if isinstance(base, Reg):
        cls = ctx.regs.cls(base) if not base.special else "u32"
        b = value(ctx, st, base, cls if cls in ("u32", "u64") else "u64")
    elif base is None:
        b = "0ull"
    else:
        refuse(ctx, st, f"address of symbol {base.name}")
    return f"({b} + {addr.offset})" if addr.offset else b


_SPACES = {"global": "GLOBAL", "generic": "GENERIC", "shared": "SHARED"}
#: the C type of one access of n bytes (a `.v2`/`.v4` access is one access of its width)
_ACCESS = {1: "rr_u8", 2: "rr_u16", 4: "rr_u32", 8: "rr_u64", 16: "rr_w16"}
#: the cache operator of a .global access -> the suffix of its CUDA intrinsic (`__ldg` is
#: ld.global.nc, `__ldca` ld.global.ca, ...); an access with none has the ISA's default
_LD_CACHE = {"nc": "g", "ca": "ca", "cg": "cg", "cs": "cs", "lu": "lu", "cv": "cv", None: "ca"}
_ST_CACHE = {"wb": "wb", "cg": "cg", "cs": "cs", "wt": "wt", None: "wb"}
#: qualifiers whose ordering a cache-operator intrinsic does not promise: kept as plain
#: accesses
_ORDERED = frozenset({"volatile", "relaxed", "acquire", "release", "mmio"})


def _global_op(st, table: dict) -> str | None:
    """The intrinsic suffix of a .global access, or None where it must stay a plain access
    (a memory-order qualifier, or a cache operator the table does not know)."""
    flat = {p for m in st.modifiers for p in m.split("::")}
    if flat & _ORDERED:
        return None
    ops = [m for m in flat if m in _LD_CACHE or m in _ST_CACHE]
    if len(ops) > 1:
        return None
    return table.get(ops[0] if ops else None)


def _access(st, space: str, cls: str, n: int, table: dict):
    """One access for the whole statement: (the .global intrinsic's suffix or None, the
    access type), or None where it stays one plain access per element (a scalar outside
    .global, or a vector width with no access type). A scalar's access type is its own C
    type, so a float loads as a float."""
    q = _global_op(st, table) if space == "GLOBAL" else None
    if n == 1:
        return None if q is None else (q, C_TYPES[cls])
    width = _ACCESS.get(TYPES[cls].bytes * n)
    return None if width is None else (q, width)


def _plain(space: str) -> str:
    """The space macro of a plain access: a .global one the intrinsics cannot take (a
    memory-order qualifier) is a generic access of the same address."""
    return "GENERIC" if space == "GLOBAL" else space


def _ld(ctx, st) -> list:
    v = st.view
    dst, addr = st.operands[0], st.operands[1]
    if not isinstance(addr, Address):
        refuse(ctx, st, "the source is not an address")
    cls = _mem_class(ctx, st)
    if v.space == "param":
        base = addr.base
        if isinstance(base, Symbol) and base.name in ctx.params and not addr.offset \
                and not isinstance(dst, Vector):
            cname, pcls = ctx.params[base.name]
            return [assign(ctx, st, dst, convert(cname, pcls, cls), cls)]
        refuse(ctx, st, "a .param read other than one of the function's own parameters")
    space = _SPACES.get(v.space)
    if space is None:
        refuse(ctx, st, f"loads from .{v.space}")
    a = _address(ctx, st, addr)
    c = C_TYPES[cls]
    items = dst.items if isinstance(dst, Vector) else (dst,)
    one = _access(st, space, cls, len(items), _LD_CACHE)
    if one is not None:
        q, w = one
        load = f"RR_LDG({q}, {w}, {a})" if q is not None else f"RR_LD({_plain(space)}, {w}, {a})"
        if len(items) == 1:
            return [assign(ctx, st, items[0], load, cls)]
        body = [f"const {w} rr_w = {load};", f"{c} rr_e[{len(items)}];",
                "__builtin_memcpy(rr_e, &rr_w, sizeof rr_e);"]
        body += [assign(ctx, st, r, f"rr_e[{k}]", cls) for k, r in enumerate(items)]
        return ["{"] + ["    " + x for x in body] + ["}"]
    size = TYPES[cls].bytes
    out = []
    for k, r in enumerate(items):
        ak = f"{a} + {k * size}" if k else a
        out.append(assign(ctx, st, r, f"RR_LD({_plain(space)}, {c}, {ak})", cls))
    return out if len(out) == 1 else ["{"] + ["    " + x for x in out] + ["}"]


def _st(ctx, st) -> list:
    v = st.view
    addr, src = st.operands[0], st.operands[1]
    if not isinstance(addr, Address):
        refuse(ctx, st, "the destination is not an address")
    cls = _mem_class(ctx, st)
    c = C_TYPES[cls]
    if v.space == "param":
        base = addr.base
        if isinstance(base, Symbol) and base.name == ctx.ret_param and \
                not isinstance(src, Vector):
            val = value(ctx, st, src, cls)
            return [f"{{ const {c} rr_t = {val}; __builtin_memcpy(rr_ret.b + {addr.offset}, "
                    f"&rr_t, sizeof rr_t); }}"]
        refuse(ctx, st, "a .param store other than to the function's return value")
    space = _SPACES.get(v.space)
    if space is None:
        refuse(ctx, st, f"stores to .{v.space}")
    a = _address(ctx, st, addr)
    items = src.items if isinstance(src, Vector) else (src,)
    one = _access(st, space, cls, len(items), _ST_CACHE)
    if one is not None:
        q, w = one
        vals = [value(ctx, st, r, cls) for r in items]
        if len(items) == 1:
            return [f"RR_STG({q}, {w}, {a}, {vals[0]});"]
        store = (f"RR_STG({q}, {w}, {a}, rr_w);" if q is not None
                 else f"RR_ST({_plain(space)}, {w}, {a}, rr_w);")
        return ["{", f"    const {c} rr_e[{len(items)}] = {{{', '.join(vals)}}};",
                f"    {w} rr_w;", "    __builtin_memcpy(&rr_w, rr_e, sizeof rr_w);",
                f"    {store}", "}"]
    size = TYPES[cls].bytes
    out = []
    for k, r in enumerate(items):
        ak = f"{a} + {k * size}" if k else a
        out.append(f"RR_ST({_plain(space)}, {c}, {ak}, {value(ctx, st, r, cls)});")
    return out


def _mov(ctx, st) -> list:
    dst, src = st.operands
    cls = _mem_class(ctx, st) if st.view.type.kind != "pred" else "pred"
    if isinstance(src, Vector):          # pack: mov.b32 %r, {%h0, %h1}
        part = {2: {"u32": "u16", "u64": "u32"}, 4: {"u32": "u8", "u64": "u16"}}
        pcls = part.get(len(src.items), {}).get(cls) or refuse(ctx, st, "packing")
        bits = TYPES[pcls].bits
        if (cls, pcls) == ("u32", "u16"):
            lo, hi = (value(ctx, st, x, pcls) for x in src.items)
            return [assign(ctx, st, dst, f"rr_pack_b16x2({lo}, {hi})", cls)]
        terms = [f"(({C_TYPES[cls]}){value(ctx, st, x, pcls)} << {bits * i})" if i else
                 f"({C_TYPES[cls]}){value(ctx, st, x, pcls)}" for i, x in enumerate(src.items)]
        return [assign(ctx, st, dst, " | ".join(terms), cls)]
    if isinstance(dst, Vector):          # unpack: mov.b32 {%h0, %h1}, %r
        part = {2: {"u32": "u16", "u64": "u32"}, 4: {"u32": "u8"}}
        pcls = part.get(len(dst.items), {}).get(cls) or refuse(ctx, st, "unpacking")
        bits = TYPES[pcls].bits
        w = value(ctx, st, src, cls)
        return [assign(ctx, st, x, f"({C_TYPES[pcls]})({w} >> {bits * i})", pcls)
                for i, x in enumerate(dst.items) if not isinstance(x, Sink)]
    return [assign(ctx, st, dst, value(ctx, st, src, cls), cls)]


def _setp(ctx, st) -> list:
    v = st.view
    ops = st.operands
    form = row_form(v)
    row = lookup(form)
    if row is None:
        refuse(ctx, st, f"no semantics row for {form}")
    row = _known_flushed(ctx, st, row, ops[1:3])
    ctx.used.setdefault(row.helper, row)
    cmp = f"{row.helper}({value(ctx, st, ops[1], row.srcs[0])}, " \
          f"{value(ctx, st, ops[2], row.srcs[1])})"
    first, second = (ops[0].first, ops[0].second) if isinstance(ops[0], PredPair) \
        else (ops[0], None)
    bop = {"and": "&&", "or": "||", "xor": "!="}
    if v.bool_op:
        c = value(ctx, st, ops[3], "pred")
        p = f"(rr_t {bop[v.bool_op]} {c})"
        q = f"(!rr_t {bop[v.bool_op]} {c})"
    else:
        p, q = "rr_t", "!rr_t"
    out = [f"const bool rr_t = {cmp};", assign(ctx, st, first, p, "pred")]
    if second is not None and not isinstance(second, Sink):
        out.append(assign(ctx, st, second, q, "pred"))
    return ["{"] + ["    " + x for x in out] + ["}"]


def _shfl(ctx, st) -> list:
    mods = st.modifiers
    mode = next((m for m in mods if m in _SHFL_MODES), None)
    if "sync" not in mods or mode is None or st.view.type is None or st.view.type.bits != 32:
        refuse(ctx, st, "only shfl.sync.{up,down,bfly,idx}.b32")
    ops = st.operands
    if len(ops) != 5:
        refuse(ctx, st, "shfl.sync takes d, a, b, c, membermask")
    d, p = (ops[0].first, ops[0].second) if isinstance(ops[0], PredPair) else (ops[0], None)
    a, b, c, m = (value(ctx, st, o, "u32") for o in ops[1:])
    k = butterfly_distance(mode, ops[2], ops[3], ops[4], ctx.lane_xor)
    if k is not None and (p is None or isinstance(p, Sink)):
        return [assign(ctx, st, d, f"rr_shfl_xor({k}, {_SHFL_MODES[mode]}, {a}, {b}, {c}, {m})",
                       "u32")]
    if p is None or isinstance(p, Sink):
        return [assign(ctx, st, d, f"rr_shfl({_SHFL_MODES[mode]}, {a}, {b}, {c}, {m}, 0)",
                       "u32")]
    return ["{", "    bool rr_p;",
            "    " + assign(ctx, st, d, f"rr_shfl({_SHFL_MODES[mode]}, {a}, {b}, {c}, {m}, "
                                        "&rr_p)", "u32"),
            "    " + assign(ctx, st, p, "rr_p", "pred"), "}"]


def _bar(ctx, st) -> list:
    op = st.opcode
    ops = st.operands
    if op == "bar.warp.sync" and len(ops) == 1:
        return [f"rr_bar_warp_sync({value(ctx, st, ops[0], 'u32')});"]
    if op in ("bar.sync", "barrier.sync", "bar.cta.sync", "barrier.cta.sync") and len(ops) == 1:
        return [f"rr_bar_sync({value(ctx, st, ops[0], 'u32')});"]
    refuse(ctx, st, "only bar.warp.sync and the whole-block bar.sync")


def _vec(ctx, st, op, n) -> list:
    if not isinstance(op, Vector) or len(op.items) != n:
        refuse(ctx, st, f"a fragment of {n} registers expected, not `{op}`")
    return [value(ctx, st, x, "u32") for x in op.items]


def _mma(ctx, st) -> list:
    if st.view.form != _MMA_FORM:
        refuse(ctx, st, "the only mma form lifted is m16n8k32 e4m3 x e4m3 + f16")
    if ctx.mma_hook is not None:
        hooked = ctx.mma_hook(ctx, st)
        if hooked is not None:
            return hooked
    d, a, b, c = st.operands
    a_, b_, c_ = _vec(ctx, st, a, 4), _vec(ctx, st, b, 2), _vec(ctx, st, c, 2)
    if not isinstance(d, Vector) or len(d.items) != 2:
        refuse(ctx, st, "two D registers expected")
    return ["{",
            f"    const struct rr_u32x2 rr_d = rr_mma_m16n8k32_f16_e4m3({', '.join(a_ + b_ + c_)});",
            "    " + assign(ctx, st, d.items[0], "rr_d.x", "u32"),
            "    " + assign(ctx, st, d.items[1], "rr_d.y", "u32"), "}"]


def _movmatrix(ctx, st) -> list:
    if st.view.form != "movmatrix.sync.m8n8.trans.b16":
        refuse(ctx, st, "only movmatrix.sync.aligned.m8n8.trans.b16")
    d, a = st.operands
    return [assign(ctx, st, d, f"rr_movmatrix_trans({value(ctx, st, a, 'u32')})", "u32")]


_LDMATRIX = {f"ldmatrix.sync.m8n8.x{n}{t}.shared.b16": (n, bool(t)) for n in (1, 2, 4)
             for t in ("", ".trans")}


def _ldmatrix(ctx, st) -> list:
    form = st.view.form.replace(".shared::cta.", ".shared.")
    if form not in _LDMATRIX:
        refuse(ctx, st, "only ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16")
    count, trans = _LDMATRIX[form]
    d, addr = st.operands
    items = d.items if isinstance(d, Vector) else (d,)
    if len(items) != count or not isinstance(addr, Address):
        refuse(ctx, st, f"{count} destination register(s) and a .shared address expected")
    a = _address(ctx, st, addr)
    return ["{", f"    rr_u32 rr_m[{count}];",
            f"    rr_ldmatrix({count}, {'true' if trans else 'false'}, (rr_u32)({a}), rr_m);"] \
        + ["    " + assign(ctx, st, r, f"rr_m[{k}]", "u32") for k, r in enumerate(items)] + ["}"]


def _bra(ctx, st) -> list:
    if st.view.targets and len(st.operands) == 1:
        return [f"goto {names.label(st.view.targets[0])};"]
    refuse(ctx, st, "an indirect branch")


def _ret(ctx, st) -> list:
    return ["return rr_ret;"] if ctx.ret_param else ["return;"]


def _call(ctx, st) -> list:
    v = st.view
    if v.callee is None:
        refuse(ctx, st, "an indirect call")
    fn = None
    if ctx.module is not None:
        fn = next((f for f in ctx.module.functions if f.name == v.callee), None)
    if fn is None or len(fn.ret_params) > 1:
        refuse(ctx, st, f"the callee {v.callee} is not a function of the module with at most "
                        "one return value")
    cname = names.callee(v.callee)
    pcls = [_param_class(ctx, st, p) for p in fn.params]
    rcls = _param_class(ctx, st, fn.ret_params[0]) if fn.ret_params else None
    if len(v.call_args) != len(pcls) or len(v.call_returns) != (1 if rcls else 0):
        refuse(ctx, st, "the call's operands do not match the callee's parameters")
    ctx.calls[v.callee] = (f'extern "C" __device__ {C_TYPES[rcls] if rcls else "void"} '
                           f"{cname}({', '.join(C_TYPES[c] for c in pcls) or 'void'});")
    args = ", ".join(value(ctx, st, a, c) for a, c in zip(v.call_args, pcls, strict=False))
    if rcls:
        return [assign(ctx, st, v.call_returns[0], f"{cname}({args})", rcls)]
    return [f"{cname}({args});"]


def _param_class(ctx, st, p) -> str:
    from ..ptx.isa import ptx_type
    t = ptx_type(p.type)
    if t is None or p.dims:
        refuse(ctx, st, f"parameter {p.name} of the callee is not a scalar")
    return "f32" if t.name == "f32" else "f64" if t.name == "f64" else \
        {16: "u16", 32: "u32", 64: "u64"}.get(t.bits) or refuse(ctx, st, "parameter width")


_SPECIAL = {"ld": _ld, "ldu": _ld, "st": _st, "mov": _mov, "setp": _setp, "shfl": _shfl,
            "bar": _bar, "barrier": _bar, "mma": _mma, "movmatrix": _movmatrix,
            "ldmatrix": _ldmatrix, "bra": _bra,
            "ret": _ret, "call": _call}


def covers(st) -> str | None:
    """None when the statement's form has a lowering, else why not (coverage reports;
    checks what can be known from the form alone)."""
    v = st.view
    if st.is_label:
        return None
    if v.base in _SPECIAL:
        if v.base == "mma" and v.form != _MMA_FORM:
            return "only the m16n8k32 e4m3 x e4m3 + f16 mma"
        if v.base == "movmatrix" and v.form != "movmatrix.sync.m8n8.trans.b16":
            return "only movmatrix m8n8.trans.b16"
        if v.base == "ldmatrix" and v.form.replace(".shared::cta.", ".shared.") not in _LDMATRIX:
            return "only ldmatrix m8n8.x{1,2,4}[.trans].shared.b16"
        if v.base in ("ld", "ldu", "st") and v.space not in ("global", "generic", "shared",
                                                             "param"):
            return f".{v.space} memory"
        if v.base == "setp":
            return None if lookup(row_form(v)) else "no semantics row"
        return None
    return None if lookup(v.form) else "no semantics row"


__all__ = ["Context", "LiftError", "covers", "lower", "ParenList"]
