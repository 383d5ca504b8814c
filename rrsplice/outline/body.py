"""The body builder: assembles the callee module from the region's text, its declarations,
the parameter loads, the recomputed registers, the shared-symbol rewrites and the
read-back stores."""

from __future__ import annotations

from pathlib import Path

import re
from dataclasses import dataclass, field
from typing import Optional

from ..emit import apply_spans
from ..errors import RRSpliceError
from ..model import Address, Function, Module, Reg, Statement, Symbol
from ..select import StatementRange
from ..scopes import is_scoped, source_name
from ..semantics import def_use, sort_registers
from .callsite import _kernel_side, parse_call
from .common import (_WIDTH, OutlineError, _decl_text, _iter_blocks, _Names, _one_line,
                     _reg_types, _symbols, _type_width)
from .delivery import _readback_code
from .recompute import _Reaching, _recompute, _rewrite_param_read
from .exits import _exits
from .region import region_needs, region_span


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


def _header(module: Module) -> str:
    out = []
    for d, v, _ in module.headers:
        out.append(f"{d} {v}")
    return "\n".join(out) + "\n"


def build_outline(module: Module, fn: Function, rng: StatementRange, call_text: str,
                  extern_text: str, *, lines: Optional[tuple] = None,
                  analysis=None, rules=()) -> Outline:
    """Like `outline`, returning the body together with what went into it. `rules`: the
    recipe's statement rewrites (rrsplice.rewrite), applied to the body's copy of the region
    as `apply` applies them to the rest of the kernel."""
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
        reg = source_name(reg)
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
            reach = reach or _Reaching(fn, analysis)
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

    # ---- the recipe's statement rewrites, on the region's statements
    rewrite_decls: list = []
    if rules:
        from ..rewrite import plan_rewrites
        plan = plan_rewrites(module, rules, [fn], lambda st: None if rng.first <= st.index
                             <= rng.last else "outside the region")
        bad = [i for i in plan.issues if i.severity == "error"]
        if bad:
            raise OutlineError(f"{bad[0].code}: {bad[0].message}")
        for r in plan.replacements:
            edits.append((r.statement.start, r.statement.end, r.text))
            edits.extend((f.start, f.end, "") for f in r.folded)
        rewrite_decls = [plan.declarations[k] for k in sorted(plan.declarations)]

    # ---- where the region leaves: its return, and the exits the call text dispatches on
    exit_of, exit_lines, dispatch = _exits(fn, rng, site, names, edits)

    # ---- what the body must deliver back, and how
    live_at_exit: set = set()
    for rb in site.readbacks:
        live_at_exit.update(rb.registers)
    live_at_exit.discard(dispatch.register)     # set by the exit code, not by the region
    for reg in sorted(live_at_exit):
        width_of(reg)
    post_lines, post_inputs = _readback_code(site, names, width_of, snapshot)

    # ---- what the body's copy of the region needs on entry
    needs = region_needs(fn, rng, live_at_exit, frozenset(exit_of))
    missing = [r for r in sort_registers(needs) if r not in params_by_reg]
    recomputed: list = []
    recompute_idx: set = set()
    if missing:
        reach = reach or _Reaching(fn, analysis)
        for reg in missing:
            if is_scoped(reg) or reg in scoped_names and not kernel_types(reg):
                continue      # a block-scoped register: its block comes with the region
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
    # a passed register that a recompute statement overwrites (the other result of a pair
    # load) is loaded again right after that statement, before a later one reads it
    loaded_pvs = [pv for pv in site.params if pv.registers and pv.statement is not site.call]
    reloads: dict = {}
    for st in recompute_sts:
        defs = set(def_use(st).defs)
        reloads[st.index] = [line for line, pv in zip(param_lines, loaded_pvs)
                             if set(pv.registers) & defs]

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
           f"// from {Path(module.path).name if module.path else '<text>'}, outlined by rrsplice "
           f"outline.",
           "//", "", header.rstrip("\n"), ""]
    out.extend(mod_decls)
    out.extend(rewrite_decls)
    if mod_decls or rewrite_decls:
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
            if reloads[st.index]:
                out.append("\t// parameters the statement above overwrote")
                out.extend(reloads[st.index])
    if body_pre:
        out.append("\t// values taken before the region runs")
        out.extend(body_pre)
    out.append(f"\t// ---- region s{rng.first}-s{rng.last}, lines {a_line}-{b_line}, verbatim ----")
    nl = "\r\n" if "\r\n" in region_text[:2000] else "\n"
    out.append(region_text.rstrip("\r\n").replace(nl, "\n"))
    out.append("\t// ---- end of region ----")
    out.extend(exit_lines)
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


def _apply(text: str, start: int, end: int, edits: list) -> str:
    """The region's text with the outliner's statement rewrites applied (rrsplice.emit's
    span applier, the one `apply` uses)."""
    try:
        return apply_spans(text, edits, start, end)
    except RRSpliceError as exc:
        if isinstance(exc, OutlineError):
            raise
        raise OutlineError(f"overlapping rewrites: {exc}") from None


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
