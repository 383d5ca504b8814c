"""A whole-region native body from a `cut_call` recipe: the outliner's callee (the region
with the recipe's ABI already applied: parameters loaded into the registers the region
reads, shared symbols through the passed bases, results stored where the call text reads
them back -- scratch, own scratch, lane-major slots or a `.param` return) lifted to C++,
with a commented section per phase and gap of the original function.

Staging: `registers` lifts every mma as it is (A from lifted locals); `image` stages each
phase's A fragments into the per-warp row-major e4m3 image once they are final and the
phase's mma read A from it (rr_mma.h's `rr_stage_a` / `rr_mma_e4m3_f16`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..ptx.parser import parse
from . import names
from .function import lift_function
from .header import header_text
from .lower import LiftError, assign, value

STAGINGS = ("registers", "image")


@dataclass
class RegionBody:
    callee: str
    text: str                  # the body source
    header: str                # rr_lift.h
    mma_header: str | None  # rr_mma.h (image staging)
    staging: str
    region: tuple
    phases: list               # (index, first, last, geometry)
    rows: list
    notes: list = field(default_factory=list)
    outlined_ptx: bytes = b""
    unset: list = field(default_factory=list)   # registers the body does not compute (the
    #                                             WMMA phases' intermediate D)
    wmma: list = field(default_factory=list)    # the phases lowered to WMMA (WmmaPhase)


def original(rec, corpus):
    """The recipe's module (parsed), the function it cuts, and the module's path."""
    from ..outline.from_recipe import recipe_function
    from ..workflow.recipe import resolve_module
    path, _ = resolve_module(rec, corpus)
    module = parse(path)
    return module, recipe_function(module, rec), path


def _outline(recipe_path, corpus):
    """The outliner's callee for the recipe, and the original module and function (parsed
    once for both)."""
    from ..outline.body import build_outline
    from ..outline.common import OutlineError
    from ..ptx.select import lines_to_range
    from ..rewrite import rules_for_recipe
    from ..workflow.recipe import load_recipe
    rec = load_recipe(recipe_path)
    if rec.cut_call is None or rec.call is None or rec.extern is None:
        raise OutlineError("`body new --staging` needs a cut_call recipe (cut_call, "
                           f"call, extern); this one is a {rec.form!r} recipe", path=rec.path)
    module, fn, path = original(rec, corpus)
    first, end = rec.cut_call
    rng = lines_to_range(fn, first, end - 1)
    out = build_outline(module, fn, rng, rec.call, rec.extern, lines=(first, end),
                        rules=rules_for_recipe(rec))
    return out, path, rec, module, fn


def _region_offset(bfn, body_text: str, first: int) -> int:
    """Statement index in the body of the region's first statement."""
    marker = body_text.find("// ---- region ")
    line = body_text.count("\n", 0, marker) + 1
    for st in bfn.statements:
        if st.line > line:
            return st.index
    raise LiftError("the outlined body has no region statements")


def _sections(ofn, fa, region, offset, phases) -> tuple:
    """{body statement index: comment lines} for each phase and gap inside the region."""
    from ..fragments.descriptor import classify_gap
    first, last = region
    to_body = offset - first
    out: dict = {}
    listed = []
    stmts = ofn.statements
    inside = [p for p in phases if first <= p.first and p.last <= last]
    if inside and inside[0].first > first:
        a = stmts[first - 1]
        out.setdefault(first + to_body, []).append(
            f"/* ---- before phase {inside[0].index}: s{first}-s{inside[0].first - 1} "
            f"(lines {a.line}-{stmts[inside[0].first - 2].end_line}) ---- */")
    for p in inside:
        listed.append((p.index, p.first, p.last, p.geometry))
        out.setdefault(p.first + to_body, []).append(
            f"/* ==== phase {p.index}: s{p.first}-s{p.last} (lines {p.first_line}-"
            f"{p.last_line}), {p.geometry} {p.shape}, {len(p.mmas)} mma in {p.chain_count} "
            f"chains ==== */")
        if p.gap_first is not None and p.gap_last is not None and p.gap_first <= last:
            g1, g2 = p.gap_first, min(p.gap_last, last)
            gap = [s for s in stmts[g1 - 1:g2] if not s.is_label]
            kind = classify_gap(gap)["kind"].value if gap else "empty"
            out.setdefault(g1 + to_body, []).append(
                f"/* ---- gap after phase {p.index}: s{g1}-s{g2} (lines {stmts[g1 - 1].line}-"
                f"{stmts[g2 - 1].end_line}), epilogue: {kind} ---- */")
    return out, listed


class _ImageStaging:
    """The mma lowering of `--staging image`: before an mma, each A register of its phase
    that was (re)written since it was last staged is staged into the image; the mma reads
    A from the image. Region code with branches stages at every mma (always exact)."""

    def __init__(self, frag_of: dict, mma_phase: dict, lda: int, has_branches: bool,
                 wmma: dict | None = None):
        self.frag_of = frag_of          # (phase, reg) -> (row_base, col_base, index)
        self.mma_phase = mma_phase      # body statement index -> phase index
        self.lda = lda
        self.staged: set = set()
        self.always = has_branches
        self.wmma = wmma or {}          # phase index -> WmmaPhase (rrsplice.lift.wmma_phase)
        self.said: set = set()          # phases whose fallback comment is written

    def defined(self, regs) -> None:
        self.staged.difference_update(regs)

    def __call__(self, ctx, st):
        ph = self.mma_phase.get(st.index)
        if ph is None:
            return None
        w = self.wmma.get(ph)
        if w is not None and w.why is None:
            if st.index != w.emit_at:
                return [f"/* {w.mmas[st.index]}: computed by phase {ph}'s WMMA program at its "
                        "last mma */"]
            self.staged.clear()          # the phase's A is in the image where it put it
            return list(w.lines)
        why = []
        if w is not None and ph not in self.said:
            self.said.add(ph)
            why = [f"/* phase {ph}: not WMMA, each mma through the scalar fallback: "
                   + (w.why or "").replace("*/", "* /") + " */"]
        lines = self._step(ctx, st, ph)
        return None if lines is None else why + lines

    def _step(self, ctx, st, ph):
        d, a, b, c = st.operands
        tiles = set()
        out = []
        for r in a.items:
            f = self.frag_of.get((ph, r.name))
            if f is None:
                return None
            tiles.add((f[0], f[1]))
            if self.always or r.key not in self.staged:
                out.append(f"rr_stage_a(rr_img, {self.lda}, rr_lane, {f[0]}, {f[1]}, {f[2]}, "
                           f"{value(ctx, st, r, 'u32')});   /* {r.name}: A reg {f[2]} */")
                self.staged.add(r.key)
        if len(tiles) != 1:
            return None
        (m0, k0), = tiles
        if out:
            out.append("rr_bar_warp_sync(0xffffffffu);")
        bs = [value(ctx, st, x, "u32") for x in b.items]
        cs = [value(ctx, st, x, "u32") for x in c.items]
        out += ["{",
                f"    const struct rr_u32x2 rr_d = rr_lift_mma_image(rr_img, {self.lda}, {m0}, "
                f"{k0}, {bs[0]}, {bs[1]}, {cs[0]}, {cs[1]}, rr_lane);"
                f"   /* A tile ({m0}, {k0}) from the image */",
                "    " + assign(ctx, st, d.items[0], "rr_d.x", "u32"),
                "    " + assign(ctx, st, d.items[1], "rr_d.y", "u32"), "}",
                "rr_bar_warp_sync(0xffffffffu);   /* the image is read before it is restaged */"]
        return out


# rr_mma.h's step as one out-of-line function on every target, so the body does not hold a
# copy of it per mma (HIP: the fallback; CUDA: the A loads from the image and the mma, which
# inlined at every mma of swin_big cost cicc 90 s instead of 9)
_IMAGE_MMA = [
    "RR_LIFT_NI struct rr_u32x2 rr_lift_mma_image(const rr_u8 *img, int lda, int m0, int k0,",
    "                                            rr_u32 b0, rr_u32 b1, rr_u32 c0, rr_u32 c1,",
    "                                            int lane)",
    "{",
    "    rr_u32 d[2];",
    "    rr_mma_e4m3_f16(img, lda, m0, k0, b0, b1, c0, c1, lane, d);",
    "    const struct rr_u32x2 r = {d[0], d[1]};",
    "    return r;",
    "}"]


def lift_region(recipe_path, staging: str = "registers", corpus=None,
                mma: str | None = None) -> RegionBody:
    """The whole-region body of a `cut_call` recipe (LiftError / OutlineError / BodyError
    name what cannot be lifted). `mma` "wmma" (image staging only; the body is then HIP
    only): each phase through gfx12 WMMA (rrsplice.lift.wmma_phase) where it can be,
    else (None) every mma through rr_mma.h's step (CUDA mma.sync, HIP the fallback)."""
    if staging not in STAGINGS:
        raise ValueError(f"staging must be one of {STAGINGS}")
    if mma not in (None, "wmma"):
        raise ValueError("mma must be None or 'wmma'")
    if mma == "wmma" and staging != "image":
        raise LiftError("the WMMA phases need `--staging image`")
    from ..analysis.mma import phases as find_phases
    from ..infra.cache import load_analysis
    out, mpath, rec, omod, ofn = _outline(recipe_path, corpus)
    body_name = f"{out.callee}.body.ptx"
    bmod = parse(out.ptx, filename=body_name)
    bfn = next(f for f in bmod.functions if f.has_body and f.name == out.callee)
    names.callee(bfn.name)
    fa = load_analysis(omod, ofn)
    phases = find_phases(ofn, fa)
    offset = _region_offset(bfn, out.ptx.decode(), out.region[0])
    sections, listed = _sections(ofn, fa, out.region, offset, phases)
    hook = None
    mma_header = None
    notes = list(out.notes)
    extra_top: tuple = ()
    img_decls: list = []           # the WMMA phases' seed/D and B images
    unset: list = []
    wmma: dict = {}
    if staging == "image":
        from ..analysis.occupancy import block_threads
        from ..body.header import header_text as mma_header_text
        from ..fragments.fragmap import phase_map
        inside = [p for p in phases if out.region[0] <= p.first and p.last <= out.region[1]]
        if not inside:
            raise LiftError("`--staging image` needs a phase inside the cut "
                            "(the region holds no mma)", path=rec.path)
        frag_of, mma_phase, layouts = {}, {}, None
        shift = offset - out.region[0]
        lda = max(p.k for p in inside)
        rows = max(p.m for p in inside)
        for p in inside:
            pm = phase_map(ofn, fa, p)
            layouts = layouts or pm.layouts
            for f in pm.a:
                frag_of[(p.index, f.reg)] = (f.row_base, f.col_base, f.index)
            for m in p.mmas:
                mma_phase[m.index + shift] = p.index
        branches = any(s.base in ("bra", "brx") for s in bfn.statements)
        assert layouts is not None  # `inside` is not empty: the loop set it
        threads = block_threads(ofn)
        warps = (threads + 31) // 32 if threads else 32
        if mma == "wmma":
            from .wmma_phase import lower_phase
            for p in inside:
                wmma[p.index] = lower_phase(ofn, fa, p, out.region, shift, lda,
                                            names.register, warps, threads, rec.path)
        hook = _ImageStaging(frag_of, mma_phase, lda, branches, wmma)
        mma_header = mma_header_text(layouts, "wmma" if mma == "wmma" else "scalar")
        notes.append(f"staged image: {rows} x {lda} bytes per warp, {warps} warps")
        img = f"rr_img_{bfn.name}"
        extra_top = (f"rr_u8 *rr_img = &{img}[rr_lift_linear_tid() >> 5][0];",
                     "const int rr_lane = (int)rr_sreg_laneid();")
        lowered = [w for w in wmma.values() if w.why is None]
        for w in wmma.values():
            notes.append(f"phase {w.index}: " + (f"{w.wmmas} WMMA" if w.why is None else
                                                 f"the scalar fallback ({w.why})"))
        unset = [r for w in lowered for r in w.unset]
        if lowered:
            mmax = max(p.m for p in inside if wmma[p.index].why is None)
            img_decls.append(f"static __shared__ __attribute__((aligned(32))) rr_accf "
                             f"rr_cimg_{bfn.name}[{warps}][{16 * mmax}];")
            extra_top += (f"rr_accf *rr_cimg = &rr_cimg_{bfn.name}[rr_lift_linear_tid() >> 5][0];",)
            if any(w.b_image for w in lowered):
                img_decls.append(f"static __shared__ __attribute__((aligned(16))) rr_u8 "
                                 f"rr_bimg_{bfn.name}[{warps}][{16 * lda}];")
                extra_top += (f"rr_u8 *rr_bimg = &rr_bimg_{bfn.name}[rr_lift_linear_tid() >> 5]"
                              "[0];",)
    first, last = out.region
    shift = offset - first

    def locate(st) -> tuple:
        """A body statement's place: the original statement's for the region's."""
        i = st.index - shift
        if first <= i <= last:
            o = ofn.statements[i - 1]
            return mpath, o.line, o.column, ""
        return body_name, st.line, st.column, " in the outlined callee"
    lifted = lift_function(bfn, body_name, sections, mma_hook=hook, module=bmod,
                           extra_top=extra_top, locate=locate,
                           on_defs=hook.defined if hook is not None else None,
                           flush_mode=mma == "wmma")
    notes += lifted.notes
    head = header_text(lifted.rows)
    src = [f"/* {bfn.name}: native body of {ofn.name} s{out.region[0]}-s{out.region[1]} "
           f"(lines {out.lines[0]}-{out.lines[1]}) of {Path(mpath).name},",
           f" * generated by `rrsplice body new {Path(rec.path).name} --staging {staging}"
           + (" --lang hip` (gfx12 WMMA phases, HIP only):" if mma == "wmma" else "`:"),
           f" * the outlined callee (ABI {out.abi}) lifted statement by statement; "
           f"{len(listed)} phase(s) inside. */"]
    if lifted.flush_by_mode:
        src += ["/* every f32 instruction of the region is .ftz or cannot tell a flushing",
                " * mode from a preserving one: .ftz flushes through the mode register",
                " * (-DRR_LIFT_FTZ_SOFTWARE: in software as well) */",
                "#if !defined(RR_LIFT_FTZ_SOFTWARE)", "#  define RR_LIFT_FTZ_BY_MODE 1",
                "#endif"]
    src.append('#include "rr_lift.h"')
    if mma_header is not None:
        src.append('#include "rr_mma.h"')
        src += _IMAGE_MMA
        warps_rows = notes[-1]
        src.append(f"/* the staged A image of each warp ({warps_rows}) */")
        src.append(f"static __shared__ __attribute__((aligned(16))) rr_u8 "
                   f"rr_img_{bfn.name}[{warps}][{rows * lda}];")
        if img_decls:
            src.append("/* the WMMA phases' images, per warp: the C seeds (f32, column-major; "
                       "the f16 D image over them) and, where B is staged, the n-major B */")
            src += img_decls
    src += lifted.prototypes
    if lifted.ret_struct:
        src.append(lifted.ret_struct)
    src.append("")
    src.append(lifted.text)
    return RegionBody(bfn.name, "\n".join(src), head, mma_header, staging, out.region, listed,
                      lifted.rows, notes, out.ptx, unset,
                      [w for w in wmma.values() if w.why is None] if staging == "image" else [])
