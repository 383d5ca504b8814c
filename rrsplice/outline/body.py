"""The body builder: the steps that turn a region and its call text into the callee's
module, each a function of its own (call site, region rewrites, exits, deliveries, live-ins
and recomputation, parameter loads, assembly)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.semantics import def_use, sort_registers
from ..ptx.emit import apply_spans
from ..ptx.errors import RRSpliceError
from ..ptx.model import Function, Module, Reg
from ..ptx.scopes import is_scoped, shadows_at
from ..ptx.select import StatementRange
from ..rewrite import plan_rewrites
from .assemble import BodyParts, assemble, module_header
from .callsite import parse_call
from .common import OutlineError, _iter_blocks, _Names
from .context import OutlineContext
from .delivery import _readback_code
from .exit_branches import ExitBranches
from .recompute import _recompute
from .region import region_needs, region_span
from .region_rules import KernelParamRead, region_rules
from .values import BodyValues


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


def build_outline(module: Module, fn: Function, rng: StatementRange, call_text: str,
                  extern_text: str, *, lines: tuple | None = None,
                  analysis=None, rules=()) -> Outline:
    """Like `outline`, returning the body together with what went into it. `rules`: the
    recipe's statement rewrites (rrsplice.rewrite), applied to the body's copy of the region
    as `apply` applies them to the rest of the kernel."""
    ctx = _context(module, fn, rng, call_text, extern_text, lines, analysis)
    edits, rewrite_decls, plan, exits = _region_rewrites(ctx, rules)
    exit_of, exit_lines, dispatch = exits.exit_of, exits.lines, exits.dispatch
    live_at_exit, post_lines = _deliveries(ctx, dispatch)
    needs, recomputed, recompute_sts = _live_in(ctx, live_at_exit, exit_of)
    param_lines, loaded, reloads = _parameter_loads(ctx, recompute_sts)
    start, end = ctx.span
    parts = BodyParts(region_text=_apply(module.text, start, end, edits),
                      rewrite_decls=rewrite_decls, param_lines=param_lines,
                      recompute_sts=recompute_sts, reloads=reloads, exit_lines=exit_lines,
                      post_lines=post_lines)
    kernel_params = [r.statement.index for r in plan.replacements
                     if r.kind == KernelParamRead.name]
    return Outline(ptx=assemble(ctx, parts), callee=ctx.site.callee, abi=ctx.site.abi,
                   passed=sort_registers(set(loaded)),
                   returned=ctx.site.returned_registers(), recomputed=recomputed,
                   recompute_statements=[st.index for st in recompute_sts],
                   symbols=dict(ctx.values.sym_regs), kernel_params=kernel_params,
                   needs=sort_registers(needs), region=(rng.first, rng.last),
                   lines=ctx.lines, notes=list(ctx.site.notes))


def _context(module: Module, fn: Function, rng: StatementRange, call_text: str,
             extern_text: str, lines: tuple | None, analysis) -> OutlineContext:
    """Parse the call text (in the kernel module's header, so its types read the same) and
    find the region's text; fresh names avoid every register the kernel and the call text
    declare, and the `.shared` arrays the call passes are known before any rewrite."""
    site = parse_call(call_text, extern_text, module_header(module),
                      shadows_at(fn, fn.statement(rng.first)))
    text = module.text
    start, end = region_span(module, fn, rng, lines)
    a_line = text.count("\n", 0, start) + 1
    b_line = text.count("\n", 0, end) + (0 if text[end - 1:end] == "\n" else 1)
    prefixes = {d.name for d in fn.decls() if d.space == ".reg"} | \
               {d.name for d in site.local_decls}
    shared = {d.name for d in fn.decls() if d.space == ".shared"}
    shared |= {d.name for d in module.decls if d.space == ".shared"}
    values = BodyValues(fn, site, _Names(prefixes), site.passed_symbols(shared))
    return OutlineContext(module=module, fn=fn, rng=rng, site=site, values=values,
                          span=(start, end), lines=(a_line, b_line), analysis=analysis)


def _region_rewrites(ctx: OutlineContext, rules) -> tuple:
    """The outliner's own rules (what a `.func` cannot see), the recipe's, then the exit
    branches' retargeting, over the region's statements, through the planner `apply` uses:
    (char edits, the declarations the recipe's rewrites need, the plan, the ExitPlan). A
    recipe rule's error refuses the outline, before an exit the call text cannot take."""
    rng = ctx.rng
    exit_rule = ExitBranches(ctx.fn, rng, ctx.site)
    plan = plan_rewrites(ctx.module, [region_rules(ctx), *rules, exit_rule], [ctx.fn],
                         lambda st: None if rng.first <= st.index <= rng.last
                         else "outside the region")
    bad = [i for i in plan.issues if i.severity == "error"]
    if bad:
        raise OutlineError(f"{bad[0].code}: {bad[0].message}")
    exits = exit_rule.result()
    edits = [sp for r in plan.replacements for sp in r.spans()]
    return edits, [plan.declarations[k] for k in sorted(plan.declarations)], plan, exits


def _deliveries(ctx: OutlineContext, dispatch) -> tuple:
    """The registers the call text reads back (they must hold their values when the region
    ends; the exit index is set by the exit code, not the region) and the stores that
    deliver them: (live at exit, epilogue lines)."""
    live_at_exit: set = set()
    for rb in ctx.site.readbacks:
        live_at_exit.update(rb.registers)
    live_at_exit.discard(dispatch.register)
    for reg in sorted(live_at_exit):
        ctx.values.width_of(reg)
    post_lines, _ = _readback_code(ctx.site, ctx.values.names, ctx.values.width_of,
                                   ctx.values.snapshot)
    return live_at_exit, post_lines


def _live_in(ctx: OutlineContext, live_at_exit: set, exit_of: dict) -> tuple:
    """What the body's copy of the region needs on entry, and, for each register the call
    does not pass, the kernel statements that recompute it (refused when none can):
    (needs, recomputed registers, recompute statements in kernel order)."""
    fn, rng = ctx.fn, ctx.rng
    assert fn.body is not None  # a region lies in a function's body
    params_by_reg = ctx.site.passed_registers()
    kernel_types = ctx.values.kernel_types
    scoped_names = {d.name for blk in _iter_blocks(fn.body) for d in blk.decls}
    needs = region_needs(fn, rng, live_at_exit, frozenset(exit_of), ctx.reach().fa)
    missing = [r for r in sort_registers(needs) if r not in params_by_reg]
    recomputed: list = []
    recompute_idx: set = set()
    reach = ctx.reach()
    for reg in missing:
        if is_scoped(reg) or reg in scoped_names and not kernel_types(reg):
            continue      # a block-scoped register: its block comes with the region
        chain = _recompute(fn, rng.first, reg, params_by_reg, reach, needs)
        recompute_idx.update(chain)
        recomputed.append(reg)
    recompute_sts = [fn.statement(i) for i in sorted(recompute_idx)]
    return needs, recomputed, recompute_sts


def _parameter_loads(ctx: OutlineContext, recompute_sts: list) -> tuple:
    """One load per parameter the call fills from registers, into those registers (an
    `ld.param` of what the call text stored, or, for a register the call passes directly
    as an argument, of that whole parameter); a passed register that a recompute statement
    overwrites (the other result of a pair load) is loaded again right after that
    statement, before a later one reads it:
    (load lines, registers loaded, recompute statement index -> loads to repeat)."""
    site = ctx.site
    ext_params = site.extern.params
    loads = []                 # (line, registers it sets)
    for pv in site.params:
        regs = pv.registers
        if not regs:
            continue
        p = ext_params[pv.index]
        if pv.pred:            # passed as 1/0: the predicate is `!= 0`
            tmp = ctx.values.names.new(32)
            loads.append((f"\tld.param.b32 {tmp}, [{p.name}+{pv.offset}];\n"
                          f"\tsetp.ne.b32 {pv.value}, {tmp}, 0;", regs))
        elif pv.statement is not site.call:
            op = pv.statement.opcode.replace("st.param", "ld.param", 1)
            loads.append((f"\t{op} {pv.value}, [{p.name}+{pv.offset}];", regs))
        elif isinstance(pv.value, Reg) and p.type and not p.dims:
            op = "mov" if p.space == ".reg" else "ld.param"
            src = p.name if p.space == ".reg" else f"[{p.name}]"
            loads.append((f"\t{op}{p.type} {pv.value}, {src};", regs))
    reloads: dict = {}
    for st in recompute_sts:
        defs = set(def_use(st).defs)
        reloads[st.index] = [line for line, regs in loads if set(regs) & defs]
    return [line for line, _ in loads], [r for _, regs in loads for r in regs], reloads


def _apply(text: str, start: int, end: int, edits: list) -> str:
    """The region's text with the outliner's statement rewrites applied (rrsplice.emit's
    span applier, the one `apply` uses)."""
    try:
        return apply_spans(text, edits, start, end)
    except RRSpliceError as exc:
        if isinstance(exc, OutlineError):
            raise
        raise OutlineError(f"overlapping rewrites: {exc}") from None
