"""`rrsplice fragments`: what every fragment register holds, in the phase's matrices."""

from __future__ import annotations

from pathlib import Path

import click

from ..ptx.errors import RRSpliceError
from ..ptx.select import lines_to_range, select_function
from .app import entry_option, examples, json_option, main, note, print_json


def _recipe_lists(rec, fa, rng) -> tuple:
    """(passed, returned) registers of a recipe's cut: its A_REGS/C_REGS/OTHER_REGS and
    RET_REGS when it has them (scaffolded recipes), else the cut's live-in / live-out."""
    mod = rec.module
    if hasattr(mod, "A_REGS") or hasattr(mod, "RET_REGS"):
        passed = [r for name in ("A_REGS", "C_REGS", "OTHER_REGS")
                  for r in getattr(mod, name, [])]
        return passed, list(getattr(mod, "RET_REGS", []))
    return list(fa.range_live_in(rng)), list(fa.range_live_out(rng))


def _print_phase(pm) -> None:
    p = pm.phase
    lay = pm.layouts
    click.echo(f"phase {p.index}: s{p.first}-s{p.last} (lines {p.first_line}-{p.last_line}), "
               f"{p.geometry} {p.shape}, {p.m_tiles} m-tiles x {p.n_tiles} n-tiles x "
               f"{p.k_slices} k-slices")
    for k in ("A", "B", "C", "D"):
        click.echo(f"  {k} layout: {lay[k].rule}")
    for label, frags in (("A", pm.a), ("B", pm.b), ("C (bias seeds)", pm.c), ("D", pm.d)):
        click.echo(f"  {label}: {len(frags)} registers")
        for f in frags:
            click.echo(f"    {f.reg} s{f.mma} tile {tuple(f.tile)} reg {f.index}: {f.rule()}")
    for n in pm.notes:
        click.echo(f"  note: {n}")


@main.command("fragments", epilog=examples(
    "rrsplice fragments corpus_fixtures/swin_tiny_sm89.ptx --phase 1",
    "rrsplice fragments recipes/swin_tiny_sm89.py --json"))
@click.argument("target", type=click.Path(dir_okay=False))
@click.option("--phase", type=int, default=None, metavar="P",
              help="Only phase P (1-based); default every phase (or, for a recipe, its cut).")
@click.option("--elements", is_flag=True,
              help="With --json: every (lane, element, row, col, weight byte) of each register.")
@click.option("--png", "png", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Draw the phase's tiles (lane and register of each element) as a PNG.")
@click.option("--svg", "svg", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="The same picture as SVG.")
@click.option("--matrix", "matrices", type=click.Choice(["A", "B", "C", "D"]), multiple=True,
              help="Draw only this matrix (repeatable; default all four).")
@click.option("--tile", "tile", default=None, metavar="I,J",
              help="Draw only tile (I, J) of each matrix drawn: one mma's A (m-tile, k-slice), "
                   "B (k-slice, n-tile), C/D (m-tile, n-tile). Default: the whole phase when "
                   "it is small enough to read, else tile 0,0.")
@entry_option
@json_option
def fragments_cmd(target, phase, elements, png, svg, matrices, tile, entry, as_json):
    """Every fragment register of each phase of TARGET (a .ptx, or a recipe: the registers
    its cut passes and returns) resolved to matrix coordinates: A[row][k], B[k][n], C and
    D[row][n] of the phase, with the weight-image byte of every B and bias-seed element."""
    from ..fragments.report import cut_report, module_maps
    from ..infra import cache
    p = Path(target)
    rec = None
    rng = None
    if p.suffix == ".py":
        from ..workflow.recipe import load_recipe, resolve_module
        rec = load_recipe(p)
        path, why = resolve_module(rec)
        if why:
            note(why, as_json)
        module = cache.load_module(path)
        fn, why = select_function(module, entry or rec.entry)
        if rec.cut_call is None:
            raise RRSpliceError("the recipe has no cut (CUT_CALL); give --phase "
                                "with the module instead", path=target)
        rng = lines_to_range(fn, rec.cut_call[0], rec.cut_call[1] - 1)
    else:
        module = cache.load_module(p)
        fn, why = select_function(module, entry)
    if why:
        note(why, as_json)
    fa = cache.load_analysis(module, fn)
    if rec is not None:
        from ..analysis.paramroles import apply_recipe_roles
        try:
            apply_recipe_roles(fa, rec)
        except ValueError as exc:
            raise RRSpliceError(str(exc), path=target) from None
    if (png or svg) and phase is None and rng is None:
        phase = 1
    if rec is not None and phase is None:
        passed, returned = _recipe_lists(rec, fa, rng)
        data = cut_report(fn, fa, rng, passed, returned, elements)
        data["recipe"] = str(p)
        if png or svg:
            raise RRSpliceError("--png/--svg draw one phase: give --phase P")
        if as_json:
            print_json(data)
            return
        click.echo(f"{target}: cut {data['range']} of {fn.name}, phases "
                   f"{', '.join(map(str, data['phases'])) or 'none'}")
        for label, rows in (("passed", data["passed"]), ("returned", data["returned"])):
            frag = [r for r in rows if r["fragment"]]
            click.echo(f"{label}: {len(rows)} registers, {len(frag)} of them mma fragments")
            for r in frag:
                f = r["fragment"]
                click.echo(f"  {r['reg']}: phase {f['phase']} {f['matrix']} tile "
                           f"{tuple(f['tile'])} reg {f['index']}: {f['rule']}")
            rest = [r["reg"] for r in rows if not r["fragment"]]
            if rest:
                click.echo(f"  not fragments: {' '.join(rest)}")
        return
    if (matrices or tile) and not (png or svg):
        raise RRSpliceError("--matrix/--tile choose what --png/--svg draw: give one of them")
    if tile is not None:
        import re as _re
        m = _re.fullmatch(r"\s*(\d+)\s*,\s*(\d+)\s*", tile)
        if m is None:
            raise RRSpliceError(f"--tile {tile!r}: expected two tile indices I,J (e.g. 0,1)")
        tile = (int(m.group(1)), int(m.group(2)))
    maps = module_maps(fn, fa, phase)
    if png or svg:
        from ..fragments.picture import choose, write_png, write_svg
        matrices, tile, why = choose(maps[0], matrices or None, tile)
        if why:
            note(why, as_json)
        if svg:
            write_svg(maps[0], svg, matrices, tile)
            note(f"wrote {svg}", as_json)
        if png:
            write_png(maps[0], png, matrices, tile)
            note(f"wrote {png}", as_json)
    if as_json:
        print_json({"file": str(p), "function": fn.name,
                    "phases": [pm.to_json(elements) for pm in maps]})
        return
    for pm in maps:
        _print_phase(pm)
