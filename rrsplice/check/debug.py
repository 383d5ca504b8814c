"""Debug stages: checks of a stage's line and registers, and the block it inserts."""

from __future__ import annotations

import re

from ..ptx.isa import type_bytes
from ..ptx.model import Function
from ..ptx.scopes import register_decl
from ..workflow.recipe import Recipe, RecipeError, call_user, check_text
from .analysis import _analyze
from .calls import _check_splice_text
from .facts import StageFacts
from .report import Report, Target
from .source import _line_text

# ------------------------------------------------------------------ debug points

def check_point(rep: Report) -> None:
    """The checks of a debug stage (a `point` target): its name, its line, its registers
    declared and defined there, and the debug block it inserts."""
    t = rep.target
    fn, m, line = t.fn, t.module, t.first_line
    rec = t.recipe
    if t.stage and rec.form != "debug":
        layer = rec.layer
        for name in rec.stages():
            if "." in name and name.split(".", 1)[0] != layer:
                rep.add("error", "stage-name", f"stage {name!r} is qualified by layer "
                        f"{name.split('.', 1)[0]!r}, but this recipe is for {layer!r}")
    if fn is None:
        return
    # point targets always set the line and stage, and pick a function with a body
    assert line is not None and t.stage is not None and fn.body is not None
    body = fn.body
    if not (body.line <= line < body.end_line):
        rep.add("error", "stage-line", f"line {line} is not inside {fn.name}'s body "
                f"(lines {body.line}-{body.end_line})", line=line)
        return
    on_line = [st for st in fn.statements if st.line <= line <= st.end_line]
    if not on_line:
        rep.add("error", "stage-line", f"line {line} holds no statement (it reads "
                f"{_line_text(m, line).strip()!r}); a stage goes after the line that ends a "
                "statement", line=line)
        return
    last = on_line[-1]
    if last.end_line != line:
        rep.add("error", "stage-line", f"line {line} is inside {last.sid} (lines "
                f"{last.line}-{last.end_line}); use its last line {last.end_line}", st=last)
        return
    if last.depth > 1 or _inside_nested_block(fn, line):
        rep.add("warning", "stage-line", f"line {line} lies inside a nested {{ }} block",
                st=last)
    rep.facts.stage = StageFacts(name=t.stage, line=line, after=last.sid,
                                 registers=t.point_regs)
    regs = t.point_regs
    bad = {r for r in regs if register_decl(fn, r) is None}
    for r in regs:
        if r in bad:
            rep.add("error", "undeclared", f"stage register {r} is not declared in {fn.name}",
                    registers=[r])
    good = [r for r in regs if r not in bad]
    if good:
        undefined = _not_always_defined(rep, fn, last.index, good)
        for r, why in undefined.items():
            rep.add("error", "stage-undefined", f"{r} is not defined on every path to line "
                    f"{line} ({why})", st=last, registers=[r])
    if not _own_debug_block(rec):
        _check_debug_param(rep, rec, fn)
        if any(f.severity == "error" and f.code in ("debug-param", "debug-alias")
               for f in rep.findings):
            return
    blk = debug_block_text(rec, t, fn)
    sp = _check_splice_text(rep, blk, None, fn, "debug block", need_call=False)
    del sp


def _inside_nested_block(fn: Function, line: int) -> bool:
    assert fn.body is not None  # only asked about a stage line inside the body
    stack = [fn.body]
    while stack:
        b = stack.pop()
        for it in b.items:
            if hasattr(it, "items") and hasattr(it, "end_line"):
                if it.line <= line < it.end_line:
                    return True
                stack.append(it)
    return False


def _not_always_defined(rep: Report, fn: Function, index: int, regs: list) -> dict:
    """reg -> reason, for registers that some path from the entry reaches statement
    `index` (inclusive) without an unguarded definition of."""
    from ..analysis.semantics import def_use
    fa = _analyze(rep, fn)
    cfg = fa.cfg
    blocks = cfg.blocks
    want = set(regs)
    kills: list[set[str]] = []
    for b in blocks:
        k: set[str] = set()
        for i in range(b.first, b.last + 1):
            k.update(x for x in def_use(fn.statements[i - 1]).kills if x in want)
        kills.append(k)
    full = frozenset(want)
    out = [full] * len(blocks)
    inn = [full] * len(blocks)
    changed = True
    order = cfg.reverse_postorder() if hasattr(cfg, "reverse_postorder") else range(len(blocks))
    while changed:
        changed = False
        for bid in order:
            b = blocks[bid]
            i_set: frozenset[str]
            if bid == 0:
                i_set = frozenset()
            elif not b.preds:
                i_set = frozenset()
            else:
                i_set = full
                for p in b.preds:
                    i_set = i_set & out[p]
            o_set = i_set | kills[bid]
            if i_set != inn[bid] or o_set != out[bid]:
                inn[bid], out[bid] = i_set, frozenset(o_set)
                changed = True
    b = cfg.block(index)
    have = set(inn[b.id])
    for i in range(b.first, index + 1):
        have.update(x for x in def_use(fn.statements[i - 1]).kills if x in want)
    res = {}
    missing = {r for r in regs if r not in have}
    found: dict = {r: [] for r in missing}
    if missing:                     # one pass for all of them, not one per register
        for st in fn.statements[:index]:
            for x in def_use(st).defs:
                if x in missing and len(found[x]) < 4:
                    found[x].append(st.index)
    for r in regs:
        if r in have:
            continue
        defs = found[r]
        res[r] = ("never defined before it" if not defs else
                  "defined at " + ", ".join(f"s{d}" for d in defs[:4])
                  + (" only under a guard or" if defs else "") + " not on every path")
    return res


# ------------------------------------------------------------------ debug blocks

DEBUG_PARAM_OFFSET = 8      # legacy default of a recipe's DEBUG_PARAM_OFFSET (in param_0)


def _const(rec, name: str):
    """A recipe constant (set by the recipe module, or by the command line)."""
    got = (getattr(rec, "constants", None) or {}).get(name)
    return got if got is not None else getattr(rec.module, name, None)


def debug_param(rec: Recipe, fn: Function, fa=None) -> tuple:
    """(ParamRef or None, how it was chosen) of the pointer the built-in debug block stores
    through: the recipe's (or `--debug-param`'s) ``DEBUG_PARAM`` ("NAME+OFFSET", "+OFFSET",
    a parameter number); else a recipe's ``DEBUG_PARAM_OFFSET`` inside the first parameter;
    else the first pointer the kernel writes through and never reads
    (rrsplice.analysis.paramroles.write_only_pointer). None when there is none: the recipe must name
    one."""
    from ..analysis.paramroles import ParamRef, parse_ref, write_only_pointer
    named = _const(rec, "DEBUG_PARAM")
    if named is not None:
        try:
            return parse_ref(fn, str(named)), f"DEBUG_PARAM = {named!r}"
        except ValueError as exc:
            raise RecipeError(rec.path, f"DEBUG_PARAM: {exc}", "DEBUG_PARAM") from None
    off = _const(rec, "DEBUG_PARAM_OFFSET")
    if off is not None:
        if not fn.params:
            return None, f"DEBUG_PARAM_OFFSET = {off}, but {fn.name} has no parameter"
        p0 = fn.params[0]
        return ParamRef(p0.name, int(off), p0.byte_size), f"DEBUG_PARAM_OFFSET = {off}"
    if fa is None:
        from ..infra.cache import load_analysis
        fa = load_analysis(fn.module, fn) if fn.module is not None else None
    ref = write_only_pointer(fa) if fa is not None else None
    return ref, ("the first pointer the kernel writes through and never reads"
                 if ref is not None else "no pointer parameter the kernel only writes through")


def _check_debug_param(rep: Report, rec: Recipe, fn: Function) -> None:
    """The built-in debug block stores through a parameter's pointer: refuse one past the
    parameter's end, or one the kernel reads through (the debug build would change its own
    inputs)."""
    from ..analysis.paramroles import pointer_uses
    fa = _analyze(rep, fn)
    ref, why = debug_param(rec, fn, fa)
    if ref is None:
        rep.add("error", "debug-param", f"no debug pointer: {why}; name one with "
                "DEBUG_PARAM = 'NAME+OFFSET' in the recipe or --debug-param")
        return
    if ref.param_size is not None and ref.offset + 8 > ref.param_size:
        rep.add("error", "debug-param", f"debug pointer {ref} ({why}) reads 8 bytes at "
                f"+{ref.offset} of {ref.name}, which is {ref.param_size} bytes: past its end")
        return
    use = pointer_uses(fa).get(ref)
    if use is not None and use["read"] is not None:
        st = fn.statements[use["read"] - 1]
        ok = _const(rec, "DEBUG_ALIAS_OK")
        where = (f"debug pointer {ref} ({why}) is memory the kernel reads ({st.sid} line "
                 f"{st.line}: {' '.join(st.text.split())})")
        if ok:
            rep.add("warning", "debug-alias", f"{where}; accepted because the recipe says: "
                    f"{ok}", st=st)
        else:
            rep.add("error", "debug-alias", f"{where}; the debug stage would overwrite the "
                    "kernel's own input. Name a pointer it only writes with DEBUG_PARAM or "
                    "--debug-param, or, when the window at DEBUG_BASE provably lies outside "
                    "what the kernel reads, say why in DEBUG_ALIAS_OK", st=st)


def _own_debug_block(rec: Recipe) -> bool:
    blk = rec.debug_block if rec.form == "debug" else None
    return blk is not None or getattr(rec.module, "debug_block", None) is not None


def debug_block_text(rec: Recipe, t: Target, fn: Function) -> str:
    """The text a debug stage inserts: the recipe's `debug_block(regs)` (a dict key or a
    module function), else the built-in block (see :func:`builtin_debug_block`)."""
    blk = rec.debug_block if rec.form == "debug" else None
    if blk is None:
        blk = getattr(rec.module, "debug_block", None)
    regs = list(t.point_regs)
    if blk is not None:
        if isinstance(blk, str):
            return check_text(rec.path, "debug_block", blk)
        text = call_user(rec.path, "debug_block", f"debug_block({regs!r})", blk, regs)
        if not isinstance(text, str):
            raise RecipeError(rec.path, f"debug_block() returned {type(text).__name__}, "
                              "expected the PTX text", "debug_block")
        return check_text(rec.path, "debug_block", text)
    return builtin_debug_block(rec, fn, regs, t.stage)


def builtin_debug_block(rec: Recipe, fn: Function, regs: list, stage: str | None) -> str:
    """Store `regs` (u32 each) to a window of a parameter buffer.

    The buffer is the u64 pointer :func:`debug_param` names (``DEBUG_PARAM``, else
    ``param_0 + DEBUG_PARAM_OFFSET``, else the first pointer the kernel only writes); each
    thread stores its registers at
    ``base + block*slot + lane*len(regs)*4`` where ``block`` is the linear block index,
    ``lane`` the thread's linear index in its block, ``base`` = ``DEBUG_BASE`` (default 0)
    and ``slot`` = ``DEBUG_SLOT`` (default: threads per block from ``.maxntid``, else 1024,
    times ``len(regs)*4``). Special registers are read with ``mov`` only, so ptxas accepts
    the block. 16/64-bit registers are converted to u32 and predicates to 0/1.
    """
    mod = rec.module
    ref, why = debug_param(rec, fn)
    if ref is None:
        raise RecipeError(rec.path, f"{fn.name}: no debug pointer ({why}); name one with "
                          "DEBUG_PARAM = 'NAME+OFFSET'", "debug")
    base = getattr(mod, "DEBUG_BASE", 0)
    per = 4 * len(regs)
    threads = 1024
    for d, v in fn.perf:
        if d in (".maxntid", ".reqntid"):
            try:
                nums = [int(x) for x in re.findall(r"\d+", str(v))]
                threads = 1
                for x in nums:
                    threads *= x
            except ValueError:
                pass
    slot = getattr(mod, "DEBUG_SLOT", threads * per)
    m = fn.module
    at = f"[{ref.name}+{ref.offset}]" if ref.offset else f"[{ref.name}]"
    lines = ["{", f"// rrsplice debug stage {stage or ''}: {' '.join(regs)}".rstrip(),
             ".reg .b32 %rrdbg<10>;", ".reg .b64 %rrdbgd<4>;", ".reg .pred %rrdbgp;",
             f"ld.param.u64 %rrdbgd0, {at};",
             "cvta.to.global.u64 %rrdbgd0, %rrdbgd0;",
             "mov.u32 %rrdbg0, %ctaid.x;", "mov.u32 %rrdbg1, %ctaid.y;",
             "mov.u32 %rrdbg2, %ctaid.z;", "mov.u32 %rrdbg3, %nctaid.x;",
             "mov.u32 %rrdbg4, %nctaid.y;",
             "mad.lo.u32 %rrdbg1, %rrdbg2, %rrdbg4, %rrdbg1;",
             "mad.lo.u32 %rrdbg0, %rrdbg1, %rrdbg3, %rrdbg0;",
             "mov.u32 %rrdbg1, %tid.x;", "mov.u32 %rrdbg2, %tid.y;", "mov.u32 %rrdbg3, %tid.z;",
             "mov.u32 %rrdbg4, %ntid.x;", "mov.u32 %rrdbg5, %ntid.y;",
             "mad.lo.u32 %rrdbg2, %rrdbg3, %rrdbg5, %rrdbg2;",
             "mad.lo.u32 %rrdbg1, %rrdbg2, %rrdbg4, %rrdbg1;",
             f"mul.wide.u32 %rrdbgd1, %rrdbg0, {slot};",
             f"mul.wide.u32 %rrdbgd2, %rrdbg1, {per};",
             "add.s64 %rrdbgd0, %rrdbgd0, %rrdbgd1;",
             "add.s64 %rrdbgd0, %rrdbgd0, %rrdbgd2;"]
    for i, r in enumerate(regs):
        d = register_decl(fn, r) if m is not None else None
        ty = (d.type or ".b32") if d is not None else ".b32"
        at = f"[%rrdbgd0+{base + 4 * i}]"
        size = type_bytes(ty, 4)
        if ty == ".pred":
            lines.append(f"selp.u32 %rrdbg6, 1, 0, {r};")
            lines.append(f"st.global.u32 {at}, %rrdbg6;")
        elif size == 4:
            lines.append(f"st.global.b32 {at}, {r};")
        elif size == 2:
            lines.append(f"cvt.u32.u16 %rrdbg6, {r};")
            lines.append(f"st.global.u32 {at}, %rrdbg6;")
        elif size == 8:
            lines.append(f"cvt.u32.u64 %rrdbg6, {r};")
            lines.append(f"st.global.u32 {at}, %rrdbg6;")
        else:
            lines.append(f"mov.b32 %rrdbg6, {r};")
            lines.append(f"st.global.u32 {at}, %rrdbg6;")
    lines.append("}")
    return "\n".join(lines)
