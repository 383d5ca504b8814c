"""One PTX function -> one C++ function: the signature from its parameters, every register
it uses as a typed local, its statements lowered in order (rrsplice.lift.lower), optional
section comments before given statements."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.semantics import def_use
from ..ptx.isa import ptx_type
from . import names
from .denorm import mode_blockers, uses_ftz
from .flush import constant_registers, never_subnormal
from .lanes import lane_xor_registers
from .lower import Context, LiftError, lower
from .regs import RegTypes, class_of
from .semantics import C_TYPES


@dataclass
class Lifted:
    name: str
    text: str                       # the C++ function
    rows: list                      # semantics rows used, in first-use order
    prototypes: list                # extern declarations of called functions
    statements: int
    ret_struct: str | None = None
    notes: list = field(default_factory=list)
    flush_by_mode: bool = False     # .ftz through the mode register (rrsplice.lift.denorm)


def _ret_struct(fn) -> tuple:
    """(C type name, struct definition, PTX param name) of a `.param .b8 x[N]` return."""
    if not fn.ret_params:
        return None, None, None
    (p,) = fn.ret_params
    t = ptx_type(p.type)
    size = (t.bytes if t else 0) * (p.dims[0] if p.dims and p.dims[0] else 1)
    align = 1
    while align * 2 <= min(p.align or 1, size) and size % (align * 2) == 0:
        align *= 2
    tname = "rr_ret_" + names.callee(fn.name)
    return tname, (f"struct __attribute__((aligned({align}))) {tname} {{ rr_u8 b[{size}]; }};"
                   f"   /* {p} */"), p.name


def _has_shfl(fn) -> bool:
    """whether any statement is a shfl (only then are lane-index registers worth finding)"""
    return any(not st.is_label and st.view.base == "shfl" for st in fn.statements)


def lift_function(fn, path: str, sections: dict | None = None, mma_hook=None,
                  module=None, extra_top: tuple = (), locate=None, on_defs=None,
                  flush_mode: bool = False) -> Lifted:
    """Lift `fn`; `sections` maps a statement index to comment lines written before it.
    `flush_mode`: flush `.ftz` subnormals through the mode register where the function
    allows it (rrsplice.lift.denorm; the C++ function then sets the mode around a call of
    the lifted statements, and the body must define RR_LIFT_FTZ_BY_MODE before rr_lift.h)."""
    regs = RegTypes(fn)
    params = {}
    sig = []
    for p in fn.params:
        cls = class_of(p.type)
        if cls is None or p.dims:
            raise LiftError(f"parameter {p.name} ({p.type}) is not a scalar the body can take",
                            path=path, line=p.line, column=1, code="lift-unsupported")
        cname = names.param(p.name)
        params[p.name] = (cname, cls)
        sig.append(f"{C_TYPES[cls]} {cname}")
    tname, struct, rname = _ret_struct(fn)
    safe = never_subnormal(fn)
    by_mode = flush_mode and uses_ftz(fn) and not mode_blockers(fn, safe)
    ctx = Context(regs=regs, params=params, ret_param=rname, path=path,
                  module=module or fn.module, mma_hook=mma_hook, locate=locate,
                  never_subnormal=safe, flush_by_mode=by_mode,
                  constants=constant_registers(fn) if by_mode else {},
                  lane_xor=lane_xor_registers(fn) if _has_shfl(fn) else {})
    for st in fn.statements:
        if not st.is_label and st.view.targets:
            ctx.targets.update(st.view.targets)
    body: list = []
    for st in fn.statements:
        if sections and st.index in sections:
            body += sections[st.index]
        body += lower(ctx, st)
        if on_defs is not None:
            on_defs({d for d in def_use(st).defs})
    used: dict[str, str] = {}
    for st in fn.statements:
        for r in st.registers():
            if not r.special:
                cls = regs.cls(r)
                if cls is not None:
                    used.setdefault(names.register(r.key), cls)
    decls = []
    by_cls: dict = {}
    for n, cls in used.items():
        by_cls.setdefault(cls, []).append(n)
    for cls in ("pred", "u16", "u32", "u64", "f32", "f64"):
        vs = by_cls.get(cls, [])
        for i in range(0, len(vs), 8):
            init = "false" if cls == "pred" else "0"
            decls.append(f"    [[maybe_unused]] {C_TYPES[cls]} " + ", ".join(f"{v} = {init}" for v in vs[i:i + 8])
                         + ";")
    rtype = tname and f"struct {tname}" or "void"
    cname = names.callee(fn.name)
    params_text = ",\n    ".join(sig) if sig else "void"
    inner = [f"    /* {len(used)} registers of {fn.name}, as their bits */"] + decls
    if tname:
        inner.append(f"    struct {tname} rr_ret = {{}};")
    inner += ["    " + x for x in extra_top]
    inner += ["    " + x if x else "" for x in body]
    if tname:
        inner.append("    return rr_ret;")
    # the definition is compiled in the device pass only (the host pass of nvcc or
    # clang's HIP sees the declaration: a kernel in the same file may call it)
    out = []
    if by_mode:
        # the statements in a function of their own, called between the mode's set and
        # restore: a call is ordered with both, so no f32 operation can move outside them
        args = ", ".join(params[p.name][0] for p in fn.params)
        out += ["#if RR_LIFT_DEVICE_PASS",
                "/* the lifted statements, run with the f32 denormal mode set to flush */",
                f"RR_LIFT_NI {rtype} {cname}_flushing({params_text})", "{"] + inner + \
               ["}", "#endif"]
        inner = ["    const rr_u32 rr_fmode = rr_fmode_enter();",
                 ("    const struct " + tname + " rr_r = " if tname else "    ")
                 + f"{cname}_flushing({args});",
                 "    rr_fmode_leave(rr_fmode);"] + (["    return rr_r;"] if tname else [])
    out += [f'extern "C" __device__ {rtype} {cname}(' + params_text + ")",
            "#if RR_LIFT_DEVICE_PASS", "{"] + inner + ["}", "#else", ";", "#endif"]
    notes = ["f32 .ftz through the mode register (set on entry, restored on exit)"] \
        if by_mode else []
    return Lifted(fn.name, "\n".join(out) + "\n", list(ctx.used.values()),
                  sorted(ctx.calls.values()), len(fn.statements),
                  ret_struct=struct, notes=notes, flush_by_mode=by_mode)
