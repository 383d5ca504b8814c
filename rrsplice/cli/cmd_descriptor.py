"""`rrsplice descriptor`: a layer descriptor with evidence per number; `--all DIR`: the
corpus table (also `rrsplice phases --all DIR`)."""

from __future__ import annotations

from pathlib import Path

import click

from ..ptx.errors import RRSpliceError
from ..ptx.select import select_function
from .app import entry_option, examples, json_option, main, note, print_json
from .output import _console, stderr_is_terminal


def corpus_table(root: str, as_json: bool, workers) -> None:
    """Survey every module under `root` and print one row per entry (shared with
    `rrsplice phases --all`)."""
    from ..workflow.corpus import modules_of, survey
    paths = modules_of(root)
    if not paths:
        raise RRSpliceError("no .ptx modules found", path=root)
    show = not as_json and stderr_is_terminal()
    if show:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
        with Progress(TextColumn("modules"), BarColumn(), MofNCompleteColumn(),
                      console=_console(True), transient=True) as bar:
            task = bar.add_task("survey", total=len(paths))
            rows = survey(paths, workers, lambda done, total: bar.update(task, completed=done))
    else:
        rows = survey(paths, workers)
    if as_json:
        print_json({"root": root, "modules": len({r["module"] for r in rows}),
                    "entries": sum(1 for r in rows if r["entry"]),
                    "failed": sum(1 for r in rows if r["error"]), "rows": rows})
        return
    click.echo("module\tentry\tlines\tmma\tphases\tgeometry per phase\tepilogues\terror")
    for r in rows:
        click.echo("\t".join([r["module"], r["entry"] or "-", str(r["lines"] or "-"),
                              str(r["mma"]), str(r["phases"]),
                              "; ".join(r["geometry"]) or "-",
                              "; ".join(r["epilogues"]) or "-", r["error"] or ""]))
    failed = [r for r in rows if r["error"]]
    from ..infra.words import count
    click.echo(f"{count(len({r['module'] for r in rows}), 'module')}, "
               f"{count(sum(1 for r in rows if r['entry']), 'entry', 'entries')}, "
               f"{sum(r['mma'] for r in rows)} mma, "
               f"{count(sum(r['phases'] for r in rows), 'phase')}, {len(failed)} could not be "
               "analysed", err=True)


@main.command("descriptor", epilog=examples(
    "rrsplice descriptor corpus_fixtures/swin_tiny_sm89.ptx",
    "rrsplice descriptor recipes/swin_dec2.py -o /tmp/descriptor_dec2.py",
    "rrsplice descriptor --all corpus_fixtures"))
@click.argument("target", required=False, type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              metavar="FILE", help="Write the descriptor here (e.g. descriptor_<layer>.py) "
                                   "instead of printing it.")
@click.option("--all", "all_dir", type=click.Path(exists=True), default=None, metavar="DIR",
              help="Survey every .ptx under DIR in parallel workers: one table row each.")
@click.option("--workers", type=int, default=None, help="Worker processes for --all.")
@click.option("--weight-param", "weight_param", metavar="PARAM+OFFSET", default=None,
              help="The pointer parameter holding the weight image (`NAME+OFFSET`, "
                   "`+OFFSET` in the first parameter, or a parameter number); default: the "
                   "one the B fragments load from.")
@entry_option
@json_option
def descriptor_cmd(target, output, all_dir, workers, weight_param, entry, as_json):
    """The layer descriptor of TARGET (a .ptx or a recipe): layer() with the launch
    geometry and the parameter-block offsets the kernel reads, phases() with each GEMM's
    shape, A source, B location and layout in the weight image, bias seeds, K tiling and
    epilogue kind. Every number carries the statement that proves it."""
    if all_dir is not None:
        if target or output:
            raise RRSpliceError("--all DIR takes no TARGET and no -o")
        corpus_table(all_dir, as_json, workers)
        return
    if not target:
        raise RRSpliceError("give a TARGET (.ptx or recipe), or --all DIR")
    from ..fragments.descriptor import describe, render, with_evidence
    from ..infra import cache
    p = Path(target)
    rec = None
    if p.suffix == ".py":
        from ..workflow.recipe import load_recipe, resolve_module
        rec = load_recipe(p)
        path, why = resolve_module(rec)
        if why:
            note(why, as_json)
        entry = entry or rec.entry
    else:
        path = p
    module = cache.load_module(path)
    fn, why = select_function(module, entry)
    if why:
        note(why, as_json)
    fa = cache.load_analysis(module, fn)
    if rec is not None or weight_param is not None:
        from ..analysis.paramroles import apply_recipe_roles
        try:
            apply_recipe_roles(fa, rec, weight_param)
        except ValueError as exc:
            raise RRSpliceError(str(exc), path=target) from None
    desc = describe(fn, fa)
    if as_json:
        print_json({"file": str(path), "function": fn.name, **with_evidence(desc)})
        return
    text = render(desc, module=Path(path).name,
                  source_note=f"rrsplice descriptor {Path(path).name}")
    if output:
        from ..infra.fsutil import write_atomic
        write_atomic(Path(output), text.encode("utf-8"))
        note(f"wrote {output}")
    else:
        click.echo(text, nl=False)
