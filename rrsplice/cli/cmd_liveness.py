"""`rrsplice liveness`: what a statement range needs from before it and hands to after it."""

from __future__ import annotations

from pathlib import Path

import click

from ..infra.cache import load_analysis, load_module, load_report
from ..infra.config import default_module
from ..infra.fsutil import read_input
from ..ptx.errors import RRSpliceError
from ..ptx.select import SelectionError, lines_to_range, parse_line_range, parse_statement_range, select_function
from .app import any_module_option, corpus_option, entry_option, examples, json_option, main, note, print_json
from .output import Grid, bold, say, styled, warn


class TargetError(RRSpliceError):
    """The TARGET is neither a readable .ptx file nor a usable recipe module."""


def resolve_target(target: str | None, corpus=None, any_module: bool = False):
    """TARGET -> (module path, note, the recipe or None)."""
    if target is None:
        return default_module(), None, None
    p = Path(target)
    if p.suffix != ".py":
        return p, None, None
    from ..workflow.recipe import load_recipe, resolve_module
    rec = load_recipe(p)
    path, why = resolve_module(rec, corpus, any_module=any_module)
    return Path(path), why, rec


def _classify(fa, rng, passed=None) -> list:
    """(register, class, detail, reaching definitions) for the live-in registers of rng."""
    from ..analysis.provenance import classify_live_in
    return [(c.reg, c.klass, c.detail, list(c.reaching_defs))
            for c in classify_live_in(fa, rng, passed=passed)]


def _recipe_passed(rec, path, module) -> list | None:
    """What a cut_call recipe's call passes, as `check` counts it (None for other forms)."""
    if rec is None or rec.call is None:
        return None
    from ..check import check_recipe
    return check_recipe(rec, module_path=path, module=module).facts.passed


PASSED_MEANS = {
    "minimal": "passed = the least a call must pass (no recipe given; `check`, `outline` and "
               "`verify` count what a recipe's call passes, which may be more)",
    "recipe": "passed = what the recipe's call passes, as `check`, `outline` and `verify` "
              "count it",
}


def liveness_report(fa, rng, *, pseudo: bool = False, passed: list | None = None) -> dict:
    """The data `rrsplice liveness` prints (also its --json form). With `pseudo`, the
    `.param` slots and carry flag crossing the range are listed as well. With `passed` (a
    recipe's call arguments) the live-in classes are those `check` reports for the cut."""
    fn = fa.fn

    def where(i: int) -> dict:
        st = fn.statements[i - 1]
        return {"sid": f"s{i}", "line": st.line, "text": " ".join(st.text.split())[:120]}

    rows = _classify(fa, rng, passed)
    if pseudo:
        rows += [(r, "other", "pseudo-register (a call block's .param slot or the carry "
                              "flag): cut the range elsewhere", fa.reaching_defs(rng.first, r))
                 for r in fa.range_live_in(rng, pseudo=True) if ":" in r]
    first, last = fn.statements[rng.first - 1], fn.statements[rng.last - 1]
    live_out = fa.range_live_out(rng, pseudo=pseudo)
    report = {
        "function": fn.name,
        "range": str(rng),
        "lines": [first.line, last.end_line],
        "statements": len(rng),
        "entries": [f"s{i}" for i in fa.range_entries(rng)],
        "exits": [[f"s{a}", f"s{b}"] for a, b in fa.range_exits(rng)],
        "live_in": [{"register": r, "class": k, "detail": d,
                     "reaching_defs": [where(i) for i in defs]} for r, k, d, defs in rows],
        "live_out": [{"register": r,
                      "first_uses_after": [where(i) for i in fa.first_uses_after(rng, r)]}
                     for r in live_out],
        "live_out_also_passed_in": fa.range_pass_in_for_out(rng, pseudo=pseudo),
        "passed_means": "minimal" if passed is None else "recipe",
        "warnings": [],
    }
    from ..analysis.semantics import uncovered
    unc = uncovered(fn)
    if unc:
        report["warnings"].append(
            "opcodes not in the semantics table (treated conservatively): "
            + ", ".join(f"{op} at " + " ".join(f"s{i}" for i in idx[:5])
                        + (" ..." if len(idx) > 5 else "") for op, idx in sorted(unc.items())))
    if fa.cfg.unresolved:
        report["warnings"].append(
            "branch targets not found (those paths are missing from the CFG): "
            + ", ".join(f"s{i} -> {lab}" for i, lab in fa.cfg.unresolved))
    return report


def _defs_text(items: list) -> str:
    if not items:
        return "none (undefined at entry)"
    return ", ".join(f"{d['sid']} (L{d['line']})" for d in items)


@main.command("liveness", epilog=examples(
    "rrsplice liveness --range s452-s15510",
    "rrsplice liveness corpus_fixtures/swin_tiny_sm89.ptx --lines 847-6933",
    "rrsplice liveness recipes/swin_dec2.py --json"))
@click.argument("target", required=False)
@click.option("--range", "range_text", metavar="sA-sB", default=None,
              help="Statement range, e.g. s452-s15510.")
@click.option("--lines", "lines_text", metavar="L1-L2", default=None,
              help="Physical lines (inclusive); the statements lying within them.")
@click.option("--pseudo", is_flag=True,
              help="Also list .param slots and the carry flag (pseudo-registers).")
@entry_option
@corpus_option
@any_module_option
@json_option
def liveness_cmd(target, range_text, lines_text, pseudo, entry, corpus, any_module, as_json):
    """Live-in (with classification and reaching definitions) and live-out (with first
    uses after it) of a statement range of TARGET (a .ptx file or a recipe module; without
    it, [tool.rrsplice] default_module). A recipe's own cut is used when no range is given,
    and then its call's arguments count as passed, exactly as `check` counts them."""
    path, why, rec = resolve_target(target, corpus, any_module)
    rec_entry = rec.entry if rec is not None else None
    cut = rec.cut_call if rec is not None else None
    if why:
        note(why, as_json)
    if range_text is not None and lines_text is not None:
        raise SelectionError("give either --range sA-sB or --lines L1-L2, not both")
    if not Path(path).is_file():
        raise TargetError("no such module", path=path)

    def compute() -> dict:
        module = load_module(path)
        fn, fwhy = select_function(module, entry or rec_entry)
        notes = [fwhy] if fwhy else []
        if range_text is not None:
            rng = parse_statement_range(range_text, fn)
        elif lines_text is not None:
            rng = lines_to_range(fn, *parse_line_range(lines_text))
        elif cut is not None:
            rng = lines_to_range(fn, cut[0], cut[1] - 1)
            notes.append(f"using the recipe's cut_call lines {cut[0]}-{cut[1] - 1} ({rng})")
        else:
            raise SelectionError("give --range sA-sB or --lines L1-L2")
        own_cut = range_text is None and lines_text is None
        passed = _recipe_passed(rec, path, module) if own_cut else None
        result = liveness_report(load_analysis(module, fn), rng, pseudo=pseudo, passed=passed)
        result["notes"] = notes
        return result

    # a repeated query on an unchanged module is answered from the report cache without
    # loading the model at all
    query = {"entry": entry or rec_entry, "range": range_text, "lines": lines_text,
             "cut": list(cut) if cut else None, "pseudo": pseudo,
             "call": [rec.call, rec.extern] if rec is not None else None}
    rep = dict(load_report("liveness", read_input(path, what="PTX file"), query,
                           compute))
    for n in rep.pop("notes", []):
        note(n, as_json)
    rep["file"] = str(path)
    if as_json:
        print_json(rep)
        return
    say(bold(rep["function"]), f" {rep['range']} (lines {rep['lines'][0]}-{rep['lines'][1]}, "
        f"{rep['statements']} statements) of {path}")
    say(f"entries: {' '.join(rep['entries']) or 'none'}   exits: "
        + (" ".join(f"{a}->{b}" for a, b in rep["exits"]) or "none"))
    t = Grid("register", "class", "detail", "reaching definitions",
             title=f"live-in: {len(rep['live_in'])} registers "
                   f"({PASSED_MEANS[rep['passed_means']]})")
    colours = {"passed": "green", "derivable": "cyan", "special": "magenta", "other": "red"}
    for row in rep["live_in"]:
        k = row["class"]
        t.add_row(row["register"], styled(k, colours.get(k, "default")), row["detail"],
                  _defs_text(row["reaching_defs"]))
    t.print()
    t = Grid("register", "first uses after the range",
             title=f"live-out: {len(rep['live_out'])} registers")
    for row in rep["live_out"]:
        t.add_row(row["register"], ", ".join(f"{u['sid']} (L{u['line']}) {u['text']}"
                                             for u in row["first_uses_after"]))
    t.print()
    if rep["live_out_also_passed_in"]:
        say("live-out registers some path through the range leaves unwritten (their "
            "incoming values must be passed in too): " + " ".join(rep["live_out_also_passed_in"]))
    counts: dict = {}
    for row in rep["live_in"]:
        counts[row["class"]] = counts.get(row["class"], 0) + 1
    say("summary: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        + f"; {len(rep['live_out'])} live-out")
    for w in rep["warnings"]:
        warn(w, path)
