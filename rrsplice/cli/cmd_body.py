"""`rrsplice body new`: a native C++ body (CUDA or HIP) for a recipe's cut."""

from __future__ import annotations

import click

from .app import corpus_option, examples, json_option, main, note, print_json
from .render import say


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
                   "(exact sums, portable).")
@click.option("-o", "--output", "out", default=None, type=click.Path(dir_okay=False),
              help="The body's source (default: <callee>.cu / .hip beside the recipe); "
                   "rr_mma.h is written beside it.")
@corpus_option
@json_option
def body_new_cmd(recipe, lang, mma, out, corpus, as_json):
    """Write RECIPE's native body: the .extern's exact signature, the fragments staged into a
    row-major e4m3 image per warp, the phase's mma, the results in the scratch slots."""
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
