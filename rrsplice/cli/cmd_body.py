"""`rrsplice body new`: a native C++ body (CUDA or HIP) for a recipe's cut."""

from __future__ import annotations

import click

from ..infra.words import count
from .app import corpus_option, examples, json_option, main, note, print_json
from .output import say


@main.group("body")
def body_group():
    """Native bodies for a recipe's call."""


@body_group.command("new", epilog=examples(
    "rrsplice recipe new p1 --module corpus_fixtures/swin_tiny_sm89.ptx --range s342-s405 "
    "-o /tmp/p1.py",
    "rrsplice body new /tmp/p1.py -o /tmp/p1_body.cu"))
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("--lang", type=click.Choice(["cuda", "hip"]), default="cuda", show_default=True,
              help="CUDA (mma.sync through inline assembly) or HIP (gfx12 WMMA, or the scalar "
                   "fallback with --mma scalar).")
@click.option("--mma", type=click.Choice(["wmma", "scalar"]), default=None,
              help="HIP only: how the mma are computed: wmma (the default: gfx12 "
                   "v_wmma_f32_16x16x16_fp8_fp8, operands loaded from LDS images) or scalar "
                   "(exact sums, portable). With --staging image: each phase through WMMA "
                   "where it can be (the rest, and --mma scalar, the per-mma fallback).")
@click.option("-o", "--output", "out", default=None, type=click.Path(dir_okay=False),
              help="The body's source (default: <callee>.cu / .hip beside the recipe); "
                   "rr_mma.h is written beside it.")
@click.option("--staging", type=click.Choice(["registers", "image"]), default=None,
              help="Lift the whole region to C++ (any opcode mix, every ABI): `registers` "
                   "takes each mma's fragments from lifted locals, `image` stages each "
                   "phase's A fragments into the per-warp e4m3 image first. Without it: the "
                   "generated GEMM body of a one-phase, mma-only cut.")
@corpus_option
@json_option
def body_new_cmd(recipe, lang, mma, out, staging, corpus, as_json):
    """Write RECIPE's native body: the .extern's exact signature, the fragments staged into a
    row-major e4m3 image per warp, the phase's mma, the results in the scratch slots; or,
    with --staging, the whole region lifted statement by statement."""
    if staging is not None:
        from ..lift.write import write_region_body
        body, path = write_region_body(recipe, staging, lang, out, corpus, mma)
        if as_json:
            print_json({"body": str(path), "callee": body.callee, "staging": staging,
                        "region": f"s{body.region[0]}-s{body.region[1]}",
                        "phases": [{"index": i, "first": f"s{a}", "last": f"s{b}",
                                    "geometry": g} for i, a, b, g in body.phases],
                        "helpers": [r.form for r in body.rows], "notes": body.notes,
                        "wmma_phases": [{"index": w.index, "wmma": w.wmmas} for w in body.wmma]})
            return
        say(f"wrote {path} and {path.with_name('rr_lift.h')}: {body.callee}, "
            f"s{body.region[0]}-s{body.region[1]} lifted ({staging} staging), "
            f"{count(len(body.phases), 'phase')}, {count(len(body.rows), 'instruction helper')}")
        for n in body.notes:
            note(n)
        return
    from ..body import new_body
    res = new_body(recipe, lang, out, corpus, mma)
    if as_json:
        print_json(res.to_json())
        return
    p = res.plan
    say(f"wrote {res.body} and {res.header}: {p.callee} for {p.function} {p.region} (phase "
        f"{p.phase.index}, {p.phase.geometry}, {len(p.steps)} mma, {res.mma}), {len(p.args)} arguments, "
        f"{len(p.rets)} results, image {p.m}x{p.k} per warp")
    for n in p.notes:
        note(n)


@body_group.command("coverage", epilog=examples(
    "rrsplice body coverage recipes/swin_tiny_sm89.py",
    "rrsplice body coverage corpus_fixtures/loops/loops_sm90.ptx --json"))
@click.argument("target", type=click.Path(dir_okay=False))
@corpus_option
@json_option
def body_coverage_cmd(target, corpus, as_json):
    """Every opcode form in TARGET (a recipe's cut, or a whole module) and whether the
    lifter lowers it; exit status 1 when some form does not lift."""
    from ..lift.write import coverage
    from ..ptx.parser import parse
    if str(target).endswith(".py"):
        from ..lift.region import original
        from ..ptx.select import lines_to_range
        from ..workflow.recipe import load_recipe
        rec = load_recipe(target)
        if rec.cut_call is None:
            from ..ptx.errors import RRSpliceError
            raise RRSpliceError("coverage needs a cut_call recipe", path=rec.path)
        mod, fn, path = original(rec, corpus)
        rng = lines_to_range(fn, rec.cut_call[0], rec.cut_call[1] - 1)
        stmts = fn.statements[rng.first - 1:rng.last]
    else:
        mod = parse(target)
        path = target
        stmts = [st for f in mod.functions for st in f.statements]
    rows = coverage(stmts)
    if as_json:
        print_json({"target": str(target), "forms": [
            {"form": f, "count": n, "first": f"{path}:{st.line}:{st.column}",
             "lifts": why is None, "why": why} for f, n, st, why in rows]})
    else:
        for f, n, st, why in rows:
            say(f"{'lifts' if why is None else 'NO   '}  {n:6d}  {f}"
                + ("" if why is None else f"  ({why}; first at {path}:{st.line}:{st.column})"))
        bad = sum(1 for r in rows if r[3] is not None)
        say(f"{len(rows)} forms, {len(rows) - bad} lift, {bad} do not", err=True)
    if any(r[3] is not None for r in rows):
        raise SystemExit(1)


from . import cmd_inline  # noqa: E402,F401  (registers `body inline` on this group)
