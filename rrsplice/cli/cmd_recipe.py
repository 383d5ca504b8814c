"""`rrsplice check`, `apply`, `recipe new`, `stages new`: the recipe workflow."""

from __future__ import annotations

import sys

import click
from rich.table import Table

from .app import console, json_option, main, note, print_json

_SEV_STYLE = {"error": "red", "warning": "yellow", "info": "dim"}


def _corpus_option(f):
    return click.option("--corpus", "corpus", metavar="DIR", default=None,
                        type=click.Path(file_okay=False),
                        help="Corpus directory to resolve the recipe's module in (before "
                             "$RRSPLICE_CORPUS, [tool.rrsplice] corpus, "
                             "~/.cache/d4r-rr-corpus and the bundled fixtures).")(f)


def _regs(regs, n=10) -> str:
    regs = list(regs or [])
    return " ".join(regs[:n]) + (f" … (+{len(regs) - n})" if len(regs) > n else "")


def _print_findings(report, verbose: bool) -> None:
    c = console()
    shown = [f for f in report.findings if verbose or f.severity != "info"]
    # collapse repeated warnings of one code (e.g. many removed declarations)
    by_code: dict = {}
    for f in shown:
        by_code.setdefault((f.severity, f.code), []).append(f)
    for (sev, code), fs in by_code.items():
        limit = len(fs) if verbose or sev == "error" else 3
        for f in fs[:limit]:
            where = ", ".join(x for x in (f.statement, f"line {f.line}" if f.line else None) if x)
            c.print(f"[{_SEV_STYLE[sev]}]{sev}[/{_SEV_STYLE[sev]}] [bold]{code}[/bold]"
                    + (f" {where}" if where else "") + ": ", end="")
            c.print(f.message + (f"  [{_regs(f.registers)}]" if f.registers else ""),
                    markup=False, highlight=False)
        if len(fs) > limit:
            c.print(f"[dim]  … {len(fs) - limit} more {sev}(s) {code} (--verbose shows "
                    "them)[/dim]")


def _facts_table(facts: dict, title: str | None = None) -> Table:
    t = Table(show_header=False, title=title, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column()

    def row(k, v):
        if v not in (None, [], ""):
            t.add_row(k, str(v))

    row("module", facts.get("module"))
    row("function", facts.get("function"))
    if facts.get("lines"):
        a, b = facts["lines"]
        row("cut", f"lines {a}-{b} ({b - a + 1} lines), statements {facts.get('statements')} "
            f"({facts.get('statement_count')})")
    if facts.get("mma") is not None:
        row("mma", f"{facts['mma']} in {facts.get('phases', '?')} phase(s)")
    if facts.get("passed") is not None:
        row("passed", f"{len(facts['passed'])}: {_regs(facts['passed'], 8)}")
    if facts.get("returned") is not None:
        row("returned", f"{len(facts['returned'])}: {_regs(facts['returned'], 8)}")
    if facts.get("live_in") is not None:
        cls = facts.get("live_in_classes", {})
        row("live-in", f"{len(facts['live_in'])} ("
            + ", ".join(f"{k} {len(v)}" for k, v in sorted(cls.items())) + ")")
    if facts.get("live_out") is not None:
        row("live-out", f"{len(facts['live_out'])}: {_regs(facts['live_out'], 10)}")
    sc = facts.get("scratch")
    if sc:
        row("scratch", f"{sc.get('symbol')} ({sc.get('bytes')} bytes, stride "
            f"{sc.get('stride')})")
    st = facts.get("stage")
    if st:
        row("stage", f"{st['name']} after line {st['line']} ({st['after']}): "
            f"{_regs(st['registers'])}")
    return t


@main.command("check")
@click.argument("recipe", type=click.Path(dir_okay=False))
@_corpus_option
@click.option("--debug", "stage", metavar="STAGE", default=None,
              help="Check this debug stage of the recipe instead of its cut.")
@click.option("-v", "--verbose", is_flag=True, help="Show every finding, info included.")
@json_option
def check_cmd(recipe, corpus, stage, verbose, as_json):
    """Check RECIPE against its module; exit 1 on any error, without writing anything."""
    from ..check import check_recipe
    report = check_recipe(recipe, corpus, stage=stage)
    if as_json:
        print_json(report.to_json())
        sys.exit(0 if report.ok else 1)
    if report.target and report.target.note:
        note(report.target.note)
    c = console()
    c.print(f"[bold]{recipe}[/bold] ({report.recipe.form} recipe)")
    c.print(_facts_table(report.facts))
    _print_findings(report, verbose)
    e, w = len(report.errors), len(report.warnings)
    c.print(("[green]ok[/green]" if not e else f"[red]{e} error(s)[/red]")
            + f", {w} warning(s)")
    sys.exit(0 if report.ok else 1)


@main.command("apply")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out", metavar="OUT", default=None, type=click.Path(),
              help="Output file or existing directory (default: out/<module>.<recipe>.ptx "
                   "next to the module).")
@_corpus_option
@click.option("--debug", "stage", metavar="STAGE", default=None,
              help="Keep the body and insert this debug stage of the recipe's stages().")
@click.option("--ptxas", "archs", metavar="sm_XX", multiple=True,
              help="Assemble the output with `ptxas -c` for this architecture (repeatable).")
@click.option("--all", "all_dir", metavar="DIR", default=None,
              type=click.Path(file_okay=False, exists=True),
              help="Apply RECIPE to every kernel of DIR its family pattern (entries=) names, "
                   "porting its cut to each variant; one summary table.")
@click.option("-j", "--jobs", type=click.IntRange(1), default=None,
              help="Worker processes for --all (default: the CPU count).")
@click.option("-v", "--verbose", is_flag=True, help="Show every finding, info included.")
@json_option
def apply_cmd(recipe, out, corpus, stage, archs, all_dir, jobs, verbose, as_json):
    """Check RECIPE, then write the patched module atomically (never over the input)."""
    from ..check import CheckFailed
    from ..splice import apply
    if all_dir is not None:
        _apply_all(recipe, all_dir, out, jobs, stage, as_json)
        return
    try:
        res = apply(recipe, corpus=corpus, out=out, stage=stage, ptxas=list(archs) or None)
    except CheckFailed as exc:
        if as_json:
            print_json({"ok": False, "error": exc.to_json()})
        else:
            _print_findings(exc.report, verbose)
            console().print(f"[red]{len(exc.report.errors)} error(s): nothing written[/red]")
        sys.exit(1)
    if as_json:
        print_json(res.to_json())
        sys.exit(0 if res.ok else 1)
    if res.report.target and res.report.target.note:
        note(res.report.target.note)
    c = console()
    facts = dict(res.report.facts)
    c.print(_facts_table(facts, title=None))
    _print_findings(res.report, verbose)
    c.print(f"wrote [bold]{res.output}[/bold] ({res.bytes_out} bytes from {res.bytes_in}; "
            f"{len(res.edits)} edit(s)) in {res.seconds:.2f}s")
    for a in res.assembled:
        if a.ok:
            c.print(f"ptxas -c -arch={a.arch}: [green]ok[/green]")
        else:
            c.print(f"ptxas -c -arch={a.arch}: [red]FAILED[/red]")
            c.print(a.log.strip()[-3000:], markup=False, highlight=False)
            if "Special register argument" in a.log:
                c.print("[yellow]the splice text reads a special register as an arithmetic "
                        "operand: ZLUDA accepts that, ptxas does not (see the "
                        "special-operand warning)[/yellow]")
    sys.exit(0 if res.ok else 1)


def _apply_all(recipe, directory, out, jobs, stage, as_json) -> None:
    """`apply --all DIR`: the family, in parallel, with a progress bar and one table."""
    from ..family import apply_family, family_targets
    from ..recipe import load_recipe
    from .app import err_console
    rec = load_recipe(recipe, debug=stage)
    n = len(family_targets(rec, directory))
    progress = None
    bar = None
    if not as_json and err_console().is_terminal:
        from rich.progress import Progress
        bar = Progress(console=err_console(), transient=True)
        task = bar.add_task(f"applying {rec.path.name}", total=n)
        bar.start()

        def progress(row):
            bar.advance(task)
    try:
        rows = apply_family(recipe, directory, out=out, jobs=jobs, debug=stage,
                            progress=progress)
    finally:
        if bar is not None:
            bar.stop()
    bad = [r for r in rows if r.status != "ok"]
    if as_json:
        print_json({"ok": not bad, "recipe": str(recipe), "corpus": str(directory),
                    "kernels": [r.to_json() for r in rows]})
        sys.exit(1 if bad else 0)
    title = (f"{rec.path.name} over {directory}: {len(rows) - len(bad)} of {len(rows)} "
             "kernel(s) applied")
    if not console().is_terminal:          # piped: whole lines, never wrapped or cut
        click.echo(title)
        click.echo("\t".join(("module", "entry", "status", "how", "region", "rewrites",
                              "output")))
        for r in rows:
            click.echo("\t".join((r.module, r.entry, r.status, r.how, r.statements or "-",
                                  " ".join(f"{k}={v}" for k, v in r.rewrites.items()) or "-",
                                  r.output or "-")))
        for r in bad:
            click.echo(f"{r.module}:{r.entry}: {r.status}: {r.message}")
        sys.exit(1 if bad else 0)
    t = Table(title=title)
    for col in ("module", "entry", "status", "how", "region", "rewrites", "output"):
        t.add_column(col, overflow="fold")
    for r in rows:
        style = {"ok": "green", "refused": "yellow"}.get(r.status, "red")
        t.add_row(r.module, r.entry, f"[{style}]{r.status}[/{style}]", r.how,
                  r.statements or "", " ".join(f"{k} {v}" for k, v in r.rewrites.items()),
                  r.output or "")
    console().print(t)
    for r in bad:
        console().print(f"[bold]{r.module}:{r.entry}[/bold] {r.status}: ", end="")
        console().print(r.message, markup=False, highlight=False, soft_wrap=True)
    if not rows:
        note(f"no kernel of {directory} matches the recipe's family "
             f"({rec.entries or rec.entry})")
    sys.exit(1 if bad else 0)


@main.group("recipe")
def recipe_group():
    """Recipe scaffolding and porting."""


@recipe_group.command("port")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("--to", "to", required=True, metavar="MODULE[:ENTRY]",
              help="The variant to port to: a PTX module, and the entry when it has several.")
@click.option("-o", "--output", "out", default=None, type=click.Path(),
              help="Where to write the ported recipe (default: <recipe>.<entry>.py beside "
                   "RECIPE).")
@_corpus_option
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@json_option
def recipe_port_cmd(recipe, to, out, corpus, force, as_json):
    """Retarget RECIPE to another variant of its kernel: align the two functions statement
    by statement, map registers and symbols, rewrite the cut, register lists and call text,
    re-check; refuse (exit 1, nothing written) at the first point of disagreement."""
    from ..port import port_recipe
    res = port_recipe(recipe, to, out=out, corpus=corpus, force=force)
    if as_json:
        print_json(res.to_json())
        return
    c = console()
    r = res.region
    c.print(f"wrote [bold]{res.output}[/bold]: {res.reference} -> {res.target}"
            + (f", statements s{r[0][0]}-s{r[0][1]} -> s{r[1][0]}-s{r[1][1]}" if r else "")
            + (f", lines {res.lines[0]}-{res.lines[-1]}" if res.lines else "")
            + f", {len(res.registers)} register(s) and {len(res.symbols)} symbol(s) renamed; "
            f"check: ok, {len(res.report.warnings)} warning(s)")


@recipe_group.command("new")
@click.argument("name")
@click.option("--module", "module", required=True, type=click.Path(dir_okay=False),
              help="The PTX module the recipe is for.")
@click.option("--range", "rng", required=True, metavar="sA-sB",
              help="The statement range to replace, e.g. s452-s15510.")
@click.option("--abi", type=click.Choice(["scratch", "param"]), default="scratch",
              show_default=True,
              help="How values come back: through a .shared scratch array (like the seed) or "
                   "as the call's return value (one .param .b8 array).")
@click.option("--scratch", "scratch", metavar="SYM", default=None,
              help="The .shared array to return through (default: the largest one that "
                   "fits and holds nothing live across the region).")
@click.option("--entry", "entry", metavar="NAME", default=None,
              help="Function to use when the module has several.")
@click.option("--callee", "callee", metavar="NAME", default=None,
              help="The native body's name (default d4r_<name>).")
@click.option("-o", "--output", "out", default=None, type=click.Path(dir_okay=False),
              help="Where to write the recipe (default: recipes/<name>.py).")
@click.option("--force", is_flag=True, help="Overwrite an existing recipe file.")
@json_option
def recipe_new_cmd(name, module, rng, abi, scratch, entry, callee, out, force, as_json):
    """Scaffold a self-contained recipe NAME for the mma region sA-sB of a module."""
    from ..scaffold import new_recipe
    res = new_recipe(name, module, rng, abi=abi, scratch=scratch, entry=entry, callee=callee,
                     out=out, force=force)
    if as_json:
        print_json(res.to_json())
        return
    c = console()
    c.print(f"wrote [bold]{res.path}[/bold]: {res.summary}")
    for n in res.notes:
        note(n)


@main.group("stages")
def stages_group():
    """Debug stages of a recipe."""


@stages_group.command("new")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("--at", "at", metavar="sN", default=None,
              help="After statement sN (its last line).")
@click.option("--line", "line", type=int, default=None, help="After physical line L.")
@click.option("--regs", "regs", metavar="REGS", default=None,
              help="Registers to store (comma or space separated).")
@click.option("--phase", "phase", type=int, default=None,
              help="Phase P's outputs after its last mma (the registers its chains end in).")
@click.option("--name", "name", default=None,
              help="Stage name (qualified by the recipe's layer, e.g. dec2.p1_out).")
@_corpus_option
@json_option
def stages_new_cmd(recipe, at, line, regs, phase, name, corpus, as_json):
    """Add a debug stage to RECIPE's stages() table (the file is edited in place)."""
    from ..stages import add_stage
    res = add_stage(recipe, at=at, line=line, regs=regs, phase=phase, name=name,
                    corpus=corpus)
    if as_json:
        print_json(res)
        return
    c = console()
    c.print(f"stage [bold]{res['name']}[/bold]: after line {res['line']} ({res['after']}), "
            f"{len(res['registers'])} register(s): {_regs(res['registers'])}")
    c.print(f"written to {res['recipe']}; build it with: rrsplice apply {res['recipe']} "
            f"--debug {res['name']}")
