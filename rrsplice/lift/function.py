"""One PTX function -> one C++ function: the signature from its parameters, every register
it uses as a typed local, its statements lowered in order (rrsplice.lift.lower), optional
section comments before given statements."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.semantics import def_use
from ..ptx.isa import ptx_type
from . import names
from .flush import never_subnormal
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


def lift_function(fn, path: str, sections: dict | None = None, mma_hook=None,
                  module=None, extra_top: tuple = (), locate=None, on_defs=None) -> Lifted:
    """Lift `fn`; `sections` maps a statement index to comment lines written before it."""
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
    ctx = Context(regs=regs, params=params, ret_param=rname, path=path,
                  module=module or fn.module, mma_hook=mma_hook, locate=locate,
                  never_subnormal=never_subnormal(fn))
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
    # the definition is compiled in the device pass only (the host pass of nvcc or
    # clang's HIP sees the declaration: a kernel in the same file may call it)
    out = [f'extern "C" __device__ {rtype} {names.callee(fn.name)}(' +
           (",\n    ".join(sig) if sig else "void") + ")", "#if RR_LIFT_DEVICE_PASS", "{"]
    out += [f"    /* {len(used)} registers of {fn.name}, as their bits */"] + decls
    if tname:
        out.append(f"    struct {tname} rr_ret = {{}};")
    out += ["    " + x for x in extra_top]
    out += ["    " + x if x else "" for x in body]
    if tname:
        out.append("    return rr_ret;")
    out += ["}", "#else", ";", "#endif"]
    return Lifted(fn.name, "\n".join(out) + "\n", list(ctx.used.values()),
                  sorted(ctx.calls.values()), len(fn.statements),
                  ret_struct=struct)
