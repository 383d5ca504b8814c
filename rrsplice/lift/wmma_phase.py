"""The gfx12 WMMA phases of a lifted image-mode HIP body (`body new --staging image --lang
hip`, the default `--mma wmma`).

Why: the lifted region computes each mma where the PTX has it; on gfx12 that is the scalar
fallback (rr_mma.h's `rr_mma_e4m3_f16`), which costs cross-lane permutes per mma and no
`v_wmma` at all. Here each GEMM phase becomes the WMMA program of a single-phase body
(rrsplice.body.wmma: its pairing of n8 mma into 16x16 tiles, its operand loads in the
RDNA4 layout, B straight from the weight image where the region loads B itself
(rrsplice.body.wmma_b), C seeds widened to f32 in a row-major image, D back through an
f16 image in the NVIDIA D layout), emitted once, at the phase's last mma:

* A: every A fragment register of the phase, as the lifted epilogue left it, is written
  once into the per-warp row-major e4m3 image (`rr_stage_a`);
* B and C seeds: the lifted locals (or the weight image) the phase's mma read;
* D: each chain's final D register assigned from the D image once per phase boundary.

The phase's other mma statements emit nothing (a comment says where they went); their
intermediate D registers are not computed (`WmmaPhase.unset`: the host check leaves them
out). A phase whose values the program cannot take at its last mma (an operand register
rewritten inside the phase, an intermediate D read by other code, branches in the phase)
or whose chains the program cannot express keeps the per-mma scalar lowering, with a
comment in the body saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..analysis.semantics import def_use
from ..body.plan import Arg, BodyError, BodyPlan, Load, Ret, Step
from ..body.wmma import block_lines, wmma_program
from ..fragments import rdna4_layout as rl


@dataclass
class WmmaPhase:
    """One phase lowered to WMMA, or why not (`why`)."""
    index: int
    emit_at: int = 0                     # body statement index of its last mma
    mmas: dict = field(default_factory=dict)   # body statement index -> that mma's sN
    lines: list = field(default_factory=list)  # the C++ emitted at `emit_at`
    unset: list = field(default_factory=list)  # intermediate D registers (not computed)
    wmmas: int = 0
    b_image: bool = False                # the program stages B into the B image
    seed: int = 4
    inputs: list = field(default_factory=list)     # the C++ locals the program reads
    outputs: list = field(default_factory=list)    # the C++ locals it assigns (final D)
    why: str | None = None


def _load_form(st) -> bool:
    """`ld.global[.nc] {dsts}, [reg + imm]`, unguarded, 32-bit words: a load whose words
    rrsplice.body.wmma_b can address from its base register."""
    from ..ptx.model import Address, Reg, Vector
    if st.base != "ld" or "global" not in st.modifiers or st.guard is not None:
        return False
    if not any(m in ("u32", "b32", "s32") for m in st.modifiers) or len(st.operands) != 2:
        return False
    dst, addr = st.operands
    items = list(dst.items) if isinstance(dst, Vector) else [dst]
    return isinstance(addr, Address) and isinstance(addr.base, Reg) and \
        all(isinstance(x, Reg) for x in items)


def _defs_between(stmts, reg: str, lo: int, hi: int) -> bool:
    """Whether a statement lo < i <= hi (1-based) writes `reg`."""
    return any(reg in def_use(stmts[i - 1]).defs for i in range(lo + 1, hi + 1))


def _b_loads(stmts, frag: dict, b_regs: set, lo: int, last: int, cname) -> tuple:
    """([Load], {local: FragReg}) of the phase's B, when every B register is a word of an
    `ld.global` inside the region (`lo`..): every load re-based on the first one's base
    register (the loads' addresses differ by constants: the same lane and warp terms
    from the weight image's root, checked for every lane of two warps), so that
    rrsplice.body.wmma_b addresses every WMMA B word from that one register, which must
    hold until the phase's last mma (`last`). ([], {}) where that is not so: B is staged."""
    got = {frag[r].source.load if r in frag and frag[r].source is not None else None
           for r in b_regs}
    srcs: set[int] = {i for i in got if i is not None}
    if None in got or not all(lo <= i <= last for i in srcs):
        return [], {}
    loads, loaded = [], {}
    first = None              # (base register, its per-lane offsets from the root)
    for i in sorted(srcs):
        st = stmts[i - 1]
        if not _load_form(st):
            return [], {}
        dst, addr = st.operands
        items = list(getattr(dst, "items", [dst]))
        words = [(pos, frag[x.name]) for pos, x in enumerate(items)
                 if x.name in frag and frag[x.name].matrix == "B"
                 and frag[x.name].source is not None and frag[x.name].source.load == i]
        if not words:
            continue
        pos, f = words[0]
        base_off = [f.source.offset(lane, w) - (addr.offset or 0) - 4 * pos
                    for w in (0, 1) for lane in range(32)]
        if first is None:
            if _defs_between(stmts, addr.base.name, i, last):
                return [], {}
            first = (addr.base.name, base_off)
        delta = base_off[0] - first[1][0]
        if any(a - b != delta for a, b in zip(base_off, first[1], strict=True)):
            return [], {}
        loads.append(Load(st.sid, st.line, i, cname(first[0]), (addr.offset or 0) + delta,
                          tuple(x.name for x in items), tuple(cname(x.name) for x in items),
                          st.text.strip()))
        for _pos, f in words:
            loaded[cname(f.reg)] = f
    return (loads, loaded) if loads else ([], {})


def plan_phase(ofn, fa, p, region: tuple, cname, warps: int, threads,
               path="") -> tuple:
    """(BodyPlan, {name: FragReg of A}, [intermediate D]) of phase
    `p` of the original function `ofn`, or raises BodyError saying why the WMMA program
    cannot take it at its last mma. `cname(reg)` is a register's C++ local."""
    from ..fragments.fragmap import phase_map
    stmts = ofn.statements
    first, last = p.first, p.last
    for st in stmts[first - 1:last]:
        if st.is_label or st.base in ("bra", "brx", "ret", "call"):
            raise BodyError(f"s{st.index} ({st.text.strip()}) inside the phase: its mma do "
                            "not run as one straight block")
    if any(m.guarded for m in p.mmas):
        raise BodyError("a guarded mma")
    pm = phase_map(ofn, fa, p)
    if pm.notes:
        raise BodyError("; ".join(pm.notes))
    a_of = {f.reg: f for f in pm.a}
    frag: dict = {}
    for f in pm.b + pm.c:
        frag.setdefault(f.reg, f)
    steps: list = []
    d_of: dict = {}
    used_at: dict = {}
    for m in p.mmas:
        if any(r not in a_of for r in m.a) or \
                len({(a_of[r].row_base, a_of[r].col_base) for r in m.a}) != 1:
            raise BodyError(f"s{m.index}: its A registers are not one A tile")
        m0, k0 = a_of[m.a[0]].row_base, a_of[m.a[0]].col_base
        for r in (*m.a, *m.b, *(c for c in m.c if c not in d_of)):
            used_at.setdefault(r, m.index)
        src = [d_of.get(r) or cname(r) for r in m.c]
        steps.append(Step(f"s{m.index}", m.line, m0, k0, tuple(cname(r) for r in m.b),
                          tuple(src), tuple(m.d), f"d_s{m.index}"))
        for j, r in enumerate(m.d):
            d_of[r] = f"d_s{m.index}[{j}]"
    # the operands must still hold at the last mma, where the program runs
    for r, at in used_at.items():
        if _defs_between(stmts, r, at, last):
            raise BodyError(f"{r}, read by s{at}, is written again before s{last}")
    consumed = {c for s in steps for c in s.c}
    final = [(s, j, r) for s in steps for j, r in enumerate(s.d)
             if f"{s.var}[{j}]" not in consumed]
    finals = {r for _, _, r in final}
    inter = sorted({r for s in steps for r in s.d} - finals)
    mma_at = {m.index for m in p.mmas}
    lo, hi = region
    for st in stmts[lo - 1:hi]:
        if st.index in mma_at:
            continue
        uses = set(def_use(st).uses)
        if uses & set(inter):
            raise BodyError(f"s{st.index} reads an intermediate D register "
                            f"({sorted(uses & set(inter))[0]})")
        if first <= st.index <= last and uses & finals:
            raise BodyError(f"s{st.index} reads a final D inside the phase")
    loads, loaded = _b_loads(stmts, frag, {r for m in p.mmas for r in m.b}, lo, last, cname)
    args: list = []
    for r, f in frag.items():
        args.append(Arg(len(args), cname(r), ".b32", r, role=f.matrix, frag=f))
    rets = [Ret(cname(r), 0, f"{s.var}[{j}]") for s, j, r in final]
    plan = BodyPlan(recipe=Path(path), module=Path(path),
                    function=ofn.name, callee="", region=f"s{first}-s{last}", phase=p,
                    args=args, steps=steps, rets=rets, m=p.m, k=p.k, n=p.n, slots="lane",
                    stride=0, barrier=False, warps=warps, threads=threads,
                    layouts=pm.layouts, loads=loads, loaded=loaded)
    return plan, {r: a_of[r] for m in p.mmas for r in m.a}, inter


def lower_phase(ofn, fa, p, region: tuple, shift: int, lda: int, cname, warps: int,
                threads, path="") -> WmmaPhase:
    """Phase `p` as a WMMA program emitted at its last mma (body statement indices are the
    original's + `shift`), or a WmmaPhase with `why` set."""
    out = WmmaPhase(p.index)
    try:
        plan, a_regs, inter = plan_phase(ofn, fa, p, region, cname, warps, threads, path)
        prog = wmma_program(plan)
    except BodyError as e:
        why = str(e)
        out.why = why.split(": ", 1)[1] if why.startswith(f"phase {p.index}: ") else why
        return out
    out.emit_at = p.last + shift
    out.mmas = {m.index + shift: f"s{m.index}" for m in p.mmas}
    out.unset = inter
    out.wmmas = prog.wmmas
    out.b_image = any(b.b_stage for b in prog.blocks)
    # B: the staged locals, or (read from the weight image) only the loads' base
    named = {cname(r) for r in a_regs} | {c for s in plan.steps for c in s.c
                                          if not c.startswith("d_s")}
    if not prog.direct:
        named |= {b for s in plan.steps for b in s.b}
    out.inputs = sorted(named | ({prog.direct.base} if prog.direct else set()))
    out.outputs = [r.reg for r in plan.rets]
    out.seed = prog.seed
    lines = [f"/* ---- gfx12 WMMA: phase {p.index} ({p.geometry}, {len(p.mmas)} mma) as "
             f"{prog.wmmas} x {rl.INSTRUCTION}, emitted at its last mma (s{p.last}): every A "
             "register staged once into the image,",
             " * B " + ("from the weight image at the fragment map's bytes" if prog.direct
                        else "staged into the n-major B image") + ", the chains' C seeds "
             "widened to f32, each chain's final D back through the D image ---- */",
             "{", "    const int lane = rr_lane;", "    rr_u8 *img = rr_img;"]
    ctype = "rr_accf" if prog.seed == 4 else "rr_u16"
    inner = [f"{ctype} *cs = ({ctype} *)rr_cimg;",
             "rr_u16 *dimg = (rr_u16 *)rr_cimg;   /* the D image, over the seed image */"]
    if out.b_image:
        inner.append("rr_u8 *bimg = rr_bimg;")
    if prog.direct:
        from ..body.wmma import lane_offset_expr
        inner.append(f"const rr_u64 wb = {prog.direct.base} + (rr_u64)(long long)("
                     f"{lane_offset_expr(prog.direct.lane_bits)});")
    inner.append("rr_bar_warp_sync(0xffffffffu);   /* the images' last readers are done */")
    for r, f in sorted(a_regs.items(), key=lambda x: (x[1].row_base, x[1].col_base,
                                                      x[1].index)):
        inner.append(f"rr_stage_a_w(img, {lda}, lane, {f.row_base}, {f.col_base}, {f.index}, "
                     f"{cname(r)});   /* {r}: A reg {f.index} */")
    inner.append(f"rr_u64 bop[{2 * (p.k // 32)}];   /* a block's B operands, by k16 tile */")
    inner = ["    " + x for x in inner]
    inner += block_lines(plan, prog, str(lda), lambda i, m0, nl, j: (
        f"    {plan.rets[i].reg} = rr_read_d2(dimg, lane, {m0}, {nl}, {j});"))
    lines += inner + ["    rr_bar_warp_sync(0xffffffffu);   /* the D image is read */", "}"]
    out.lines = lines
    return out


__all__ = ["WmmaPhase", "lower_phase", "plan_phase"]
