"""`rrsplice check`, `apply`, `recipe new`, `stages new`: the recipe workflow."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, cast

import click

from .app import any_module_option, corpus_option, examples, json_option, main, note, print_json
from .findings import facts_grid, print_findings, regs_text
from .output import Grid, bold, print_diagnostic, progress_step, say, say_text, styled

if TYPE_CHECKING:
    from ..check.report import Report  # port_recipe stores the check's Report


def print_summary(report) -> None:
    e, w = len(report.errors), len(report.warnings)
    say(styled("ok", "green") if not e else styled(f"{e} error(s)", "red"),
        f", {w} warning(s)")


def _with_debug_param(recipe, debug_param):
    """The recipe path, or (with --debug-param) the loaded recipe with DEBUG_PARAM set."""
    if debug_param is None:
        return recipe
    from ..workflow.recipe import load_recipe
    rec = load_recipe(recipe)
    rec.constants["DEBUG_PARAM"] = debug_param
    return rec


@main.command("check", epilog=examples(
    "rrsplice check recipes/swin_dec2.py",
    "rrsplice check recipes/swin_dec2.py --json | python3 -m json.tool"))
@click.argument("recipe", type=click.Path(dir_okay=False))
@corpus_option
@any_module_option
@click.option("--debug", "stage", metavar="STAGE", default=None,
              help="Check this debug stage of the recipe instead of its cut.")
@click.option("--debug-param", "debug_param", metavar="PARAM+OFFSET", default=None,
              help="The pointer parameter the built-in debug block stores through "
                   "(`NAME+OFFSET`, `+OFFSET` in the first parameter, or a parameter "
                   "number); overrides the recipe's DEBUG_PARAM.")
@click.option("--target", "target", type=click.Choice(["ptxas", "zluda"]), default=None,
              help="The profile of the target that consumes the splice (default: the "
                   "recipe's TARGET; zluda when it declares a native BODY; else ptxas).")
@click.option("-v", "--verbose", is_flag=True, help="Show every finding, info included.")
@json_option
def check_cmd(recipe, corpus, any_module, stage, debug_param, target, verbose, as_json):
    """Check RECIPE against its module; exit 1 on any error, without writing anything.

    Findings go to stderr as `path:line:col: error|warning|note: message [code]`; the facts
    of the cut and the summary go to stdout."""
    from ..check import check_recipe
    recipe_arg = _with_debug_param(recipe, debug_param)
    report = check_recipe(recipe_arg, corpus, stage=stage, any_module=any_module,
                          target=target)
    if as_json:
        print_json(report.to_json())
        sys.exit(0 if report.ok else 1)
    if report.target and report.target.note:
        note(report.target.note)
    say(bold(recipe), f" ({report.recipe.form} recipe)")
    facts_grid(report.facts).print()
    print_findings(report, verbose)
    print_summary(report)
    sys.exit(0 if report.ok else 1)


@main.command("apply", epilog=examples(
    "rrsplice apply recipes/swin_dec2.py --ptxas sm_89",
    "rrsplice apply recipes/swin_dec2.py -o /tmp/dec2.ptx --debug dec2.p1_out",
    "rrsplice apply recipes/tiny_family.py --all corpus_fixtures -o /tmp/family"))
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out", metavar="OUT", default=None, type=click.Path(),
              help="Output file or existing directory (default: out/<module>.<recipe>.ptx "
                   "next to the module).")
@corpus_option
@any_module_option
@click.option("--debug", "stage", metavar="STAGE", default=None,
              help="Keep the body and insert this debug stage of the recipe's stages().")
@click.option("--debug-param", "debug_param", metavar="PARAM+OFFSET", default=None,
              help="The pointer parameter the built-in debug block stores through "
                   "(`NAME+OFFSET`, `+OFFSET` in the first parameter, or a parameter "
                   "number); overrides the recipe's DEBUG_PARAM.")
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
def apply_cmd(recipe, out, corpus, any_module, stage, debug_param, archs, all_dir, jobs,
              verbose, as_json):
    """Check RECIPE, then write the patched module atomically (never over the input).

    Exits 0 when written (and assembled, with --ptxas), 1 when the check finds errors
    (nothing written) or ptxas rejects the output (written, and said so), 2 on bad input."""
    from ..check import CheckFailed
    from ..workflow.splice import apply
    if all_dir is not None:
        _apply_all(recipe, all_dir, out, jobs, stage, as_json)
        return
    step = "apply" + (f" and ptxas -c for {', '.join(archs)}" if archs else "")
    try:
        with progress_step(step):
            res = apply(_with_debug_param(recipe, debug_param), corpus=corpus, out=out,
                        stage=stage,
                        ptxas=list(archs) or None, any_module=any_module)
    except CheckFailed as exc:
        if as_json:
            print_json({"ok": False, "error": exc.to_json()})
        else:
            print_findings(exc.report, verbose)
            say(styled(f"{len(exc.report.errors)} error(s): nothing written", "red"))
        sys.exit(1)
    if as_json:
        print_json(res.to_json())
        sys.exit(0 if res.ok else 1)
    if res.report.target and res.report.target.note:
        note(res.report.target.note)
    facts_grid(res.report.facts).print()
    print_findings(res.report, verbose)
    say("wrote ", bold(res.output), f" ({res.bytes_out} bytes from {res.bytes_in}; "
        f"{len(res.edits)} edit(s)) in {res.seconds:.2f}s")
    for a in res.assembled:
        if a.ok:
            say(f"ptxas -c -arch={a.arch}: ", styled("ok", "green"))
        else:
            say(f"ptxas -c -arch={a.arch}: ", styled("FAILED", "red"),
                f" ({res.output} was written)")
            say_text(a.log.strip(), err=True)
            if "Special register argument" in a.log:
                note("the splice text reads a special register as an arithmetic operand: "
                     "ZLUDA accepts that, ptxas does not (see the special-operand warning)")
    sys.exit(0 if res.ok else 1)


def _apply_all(recipe, directory, out, jobs, stage, as_json) -> None:
    """`apply --all DIR`: the family, in parallel, with a progress bar and one table."""
    from ..workflow.family import apply_family, family_targets
    from ..workflow.recipe import load_recipe
    from .output import stderr_is_terminal
    rec = load_recipe(recipe, debug=stage)
    n = len(family_targets(rec, directory))
    progress = None
    bar = None
    if not as_json and stderr_is_terminal():
        from rich.progress import Progress

        from .output import _console
        bar = Progress(console=_console(True), transient=True)
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
    g = Grid("module", "entry", "status", "how", "region", "rewrites", "output", title=title)
    for r in rows:
        style = {"ok": "green", "refused": "yellow"}.get(r.status, "red")
        g.add_row(r.module, r.entry, styled(r.status, style), r.how, r.statements or "-",
                  " ".join(f"{k}={v}" for k, v in r.rewrites.items()) or "-", r.output or "-")
    g.print()
    for r in bad:
        print_diagnostic(r.module, None, None, "error", f"{r.entry}: {r.status}: {r.message}")
    if not rows:
        note(f"no kernel of {directory} matches the recipe's family "
             f"({rec.entries or rec.entry})")
    sys.exit(1 if bad else 0)


@main.group("recipe")
def recipe_group():
    """Recipe scaffolding and porting."""


@recipe_group.command("port", epilog=examples(
    "rrsplice recipe port recipes/swin_tiny_sm89.py --to "
    "corpus_fixtures/swin_tiny_mvhi_ldr_sm89.ptx -o /tmp/tiny_mvhi.py"))
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("--to", "to", required=True, metavar="MODULE[:ENTRY]",
              help="The variant to port to: a PTX module, and the entry when it has several.")
@click.option("-o", "--output", "out", default=None, type=click.Path(),
              help="Where to write the ported recipe (default: <recipe>.<entry>.py beside "
                   "RECIPE).")
@corpus_option
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@json_option
def recipe_port_cmd(recipe, to, out, corpus, force, as_json):
    """Retarget RECIPE to another variant of its kernel: align the two functions statement
    by statement, map registers and symbols, rewrite the cut, register lists and call text,
    re-check; refuse (exit 1, nothing written) at the first point of disagreement."""
    from ..workflow.port import port_recipe
    res = port_recipe(recipe, to, out=out, corpus=corpus, force=force)
    if as_json:
        print_json(res.to_json())
        return
    r = res.region
    say("wrote ", bold(res.output), f": {res.reference} -> {res.target}"
        + (f", statements s{r[0][0]}-s{r[0][1]} -> s{r[1][0]}-s{r[1][1]}" if r else "")
        + (f", lines {res.inclusive_lines[0]}-{res.inclusive_lines[-1]}" if res.inclusive_lines
           else "")
        + f", {len(res.registers)} register(s) and {len(res.symbols)} symbol(s) renamed; "
        f"check: ok, {len(cast('Report', res.report).warnings)} warning(s)")


@recipe_group.command("new", epilog=examples(
    "rrsplice recipe new swin_tiny --module corpus_fixtures/swin_tiny_sm89.ptx "
    "--range s342-s2656 -o /tmp/swin_tiny.py",
    "rrsplice recipe new dec2 --module corpus_fixtures/0021-PREPASS_ENTRYPOINT_NAME.ptx "
    "--range s452-s15510 --abi param -o /tmp/dec2.py"))
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
@click.option("--launch", "launch", default=None, type=click.Path(dir_okay=False),
              help="The kernel's launch description (.launch.json): its dynamic shared memory "
                   "and block size go into the occupancy report.")
@click.option("--dynamic-smem", "dynamic_smem", type=click.IntRange(0), default=None,
              metavar="BYTES", help="The dynamic shared memory the kernel is launched with "
                                    "(for `.extern .shared`), for the occupancy report.")
@json_option
def recipe_new_cmd(name, module, rng, abi, scratch, entry, callee, out, force, launch,
                   dynamic_smem, as_json):
    """Scaffold a self-contained recipe NAME for the mma region sA-sB of a module.

    The recipe is checked before it is written: with errors, they are printed, nothing is
    written and the exit status is 1."""
    from ..check import CheckFailed
    from ..workflow.scaffold import new_recipe
    try:
        with progress_step(f"recipe new {name}: analysing {module}") as step:
            res = new_recipe(name, module, rng, abi=abi, scratch=scratch, entry=entry,
                             callee=callee, out=out, force=force, progress=step,
                             launch=launch, dynamic_smem=dynamic_smem)
    except CheckFailed as exc:
        if as_json:
            print_json({"ok": False, "error": exc.to_json()})
        else:
            print_findings(exc.report, False)
            say(styled(f"{len(exc.report.errors)} error(s): nothing written", "red"))
        sys.exit(1)
    if as_json:
        print_json(res.to_json())
        return
    say("wrote ", bold(res.path), f": {res.summary}")
    for n in res.notes:
        note(n)


@main.group("stages")
def stages_group():
    """Debug stages of a recipe."""


@stages_group.command("new", epilog=examples(
    "rrsplice stages new /tmp/swin_tiny.py --phase 2",
    "rrsplice stages new /tmp/swin_tiny.py --at s400 --regs '%f1,%f2' --name swin_tiny.probe"))
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
@corpus_option
@any_module_option
@json_option
def stages_new_cmd(recipe, at, line, regs, phase, name, corpus, any_module, as_json):
    """Add a debug stage to RECIPE's stages() table (the file is edited in place)."""
    from ..workflow.stages import add_stage
    res = add_stage(recipe, at=at, line=line, regs=regs, phase=phase, name=name,
                    corpus=corpus, any_module=any_module)
    if as_json:
        print_json(res)
        return
    say("stage ", bold(res["name"]), f": after line {res['line']} ({res['after']}), "
        f"{len(res['registers'])} register(s): {regs_text(res['registers'])}")
    say(f"written to {res['recipe']}; build it with: rrsplice apply {res['recipe']} "
        f"--debug {res['name']}")
