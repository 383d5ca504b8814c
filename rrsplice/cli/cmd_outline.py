"""`rrsplice outline` and `rrsplice verify`: the identity body of a cut, and the proof that
the splice's ABI is consistent (apply + outline + ptxas -c + nvlink)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..ptx.diagnostic import register_codes
from .app import any_module_option, corpus_option, examples, json_option, main, note, print_json
from .findings import live_in_text, loaded_text, print_findings, regs_text
from .output import Grid, bold, print_diagnostic, progress_step, say, say_text, styled

register_codes(__name__, "error", {
    "ptxas": "ptxas rejected a statement of the patched module or the body (`verify`)"})


def _no_check_option(f):
    return click.option("--no-check", "no_check", is_flag=True,
                        help="Do not stop on `rrsplice check` errors (for negative controls: "
                             "a recipe that drops a returned register).")(f)


def _check_failed(exc, as_json: bool):
    if as_json:
        print_json({"ok": False, "error": exc.to_json()})
    else:
        print_findings(exc.report, errors_only=True)
        say(styled(f"{len(exc.report.errors)} check error(s): nothing outlined", "red"))
    sys.exit(1)


@main.command("outline", epilog=examples(
    "rrsplice outline recipes/swin_dec2.py -o /tmp/dec2.body.ptx",
    "rrsplice outline recipes/swin_tiny_sm89.py --json"))
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out", metavar="BODY.ptx", default=None, type=click.Path(),
              help="Where to write the body (default: out/<module>.<recipe>.body.ptx next to "
                   "the module).")
@corpus_option
@any_module_option
@_no_check_option
@json_option
def outline_cmd(recipe, out, corpus, any_module, no_check, as_json):
    """Write the callee of RECIPE's call as a PTX module whose body is the cut region itself.

    Parameters are loaded into the registers the region reads, registers the call does not
    pass are recomputed from passed values, `.shared` symbols become the passed base, and
    the values the call text reads back are stored where it reads them.
    """
    from ..check import CheckFailed
    from ..workflow.splice import default_output, write_atomic
    from ..workflow.verify import prepare
    try:
        rec, path, _patched, body, report = prepare(recipe, corpus, check=not no_check,
                                                    any_module=any_module)
    except CheckFailed as exc:
        _check_failed(exc, as_json)
    if out is None:
        dest = default_output(path, rec).with_suffix(".body.ptx")
    else:
        dest = Path(out)
        if dest.is_dir():
            dest = dest / default_output(path, rec).with_suffix(".body.ptx").name
    write_atomic(dest, body.ptx, protect=(path, rec.path), implicit=out is None)
    data = body.to_json()
    classes = report.facts.live_in_classes or {}
    data.update({"ok": True, "recipe": str(rec.path), "module": str(path),
                 "output": str(dest), "function": report.target.fn.name,
                 "live_in_classes": classes})
    if as_json:
        print_json(data)
        return
    for n in body.notes:
        note(n)
    t = Grid("what", "value", header=False)
    t.add_row("callee", body.callee)
    t.add_row("region", f"{data['region']} of {data['function']} (lines "
                        f"{body.lines[0]}-{body.lines[1]})")
    t.add_row("return convention", body.abi)
    t.add_row("live-in", live_in_text(classes))
    t.add_row("loaded from parameters", loaded_text(body.passed, classes))
    t.add_row("recomputed", f"{len(body.recomputed)}: {regs_text(body.recomputed)}"
              + (f" (from {len(body.recompute_statements)} kernel statements)"
                 if body.recomputed else ""))
    t.add_row("delivered back", f"{len(body.returned)}: {regs_text(body.returned)}")
    if body.symbols:
        t.add_row(".shared symbols", ", ".join(f"{k} -> {v}" for k, v in body.symbols.items()))
    if body.kernel_params:
        t.add_row("kernel-parameter reads", " ".join(f"s{i}" for i in body.kernel_params))
    t.print()
    say("wrote ", bold(dest), f" ({len(body.ptx)} bytes)")


def _step_input(res, step: str) -> str:
    """The file a ptxas step read (named as `--keep` would name it when not kept)."""
    if step == "ptxas original":
        return res.module
    which = "body" if step == "ptxas body" else "patched"
    return res.files.get(which) or f"{Path(res.recipe).stem}.{which}.ptx"


def _fmt(v):
    return "-" if v is None else str(v)


@main.command("verify", epilog=examples(
    "rrsplice verify recipes/swin_tiny_sm89.py",
    "rrsplice verify recipes/swin_tiny_sm89.py --arch sm_90 --keep /tmp/tiny --json"))
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("--arch", "arch", metavar="sm_XX", default=None,
              help="Target architecture (default: the module's own .target).")
@click.option("--optimize", is_flag=True,
              help="Assemble with ptxas -O3 (slow on big modules) instead of -O0, so the "
                   "resource report shows optimised figures.")
@click.option("--keep", "keep", metavar="DIR", default=None, type=click.Path(file_okay=False),
              help="Leave the patched module, the body and the cubins in DIR.")
@corpus_option
@any_module_option
@_no_check_option
@json_option
def verify_cmd(recipe, arch, optimize, keep, corpus, any_module, no_check, as_json):
    """Apply RECIPE, outline its region, assemble both with ptxas -c, link with nvlink, and
    report resources of the original and the linked kernel side by side."""
    from ..check import CheckFailed
    from ..workflow.verify import verify
    try:
        with progress_step("verify") as rename:
            res = verify(recipe, arch, corpus=corpus, optimize=optimize,
                         keep=Path(keep) if keep else None, check=not no_check,
                         progress=lambda step: rename(f"verify: {step}"),
                         any_module=any_module)
    except CheckFailed as exc:
        _check_failed(exc, as_json)
    if as_json:
        print_json(res.to_json())
        sys.exit(0 if res.ok else 1)
    for n in res.notes:
        note(n)
    arch = res.arch
    level = "-O3" if optimize else "-O0"
    say(bold(res.kernel), f" {res.region} (lines {res.lines[0]}-{res.lines[1]}) -> "
        f"call {res.callee}; {arch}, ptxas {level}")
    steps = Grid("step", "result", "seconds", right=("seconds",))
    for s in res.steps:
        steps.add_row(s.name, styled("ok", "green") if s.ok else styled("FAILED", "red"),
                      f"{s.seconds:.2f}")
    steps.print()
    for s in res.steps:
        for p in s.problems:
            print_diagnostic(_step_input(res, s.name), p["line"], 1, "error",
                             f"{p['message']}: {p['statement']}", code="ptxas")
            if "Special register" in p["message"]:
                note("ZLUDA accepts a special register there, ptxas does not: read it with "
                     "`mov.u32 %r, %laneid` first")
        if not s.ok and not s.problems:
            say_text(s.log.strip(), err=True)
    res_t = Grid("", "function", "source", "registers", "stack", "spill st", "spill ld",
                 "smem", title=f"resources ({arch}, {level})",
                 right=("registers", "stack", "spill st", "spill ld", "smem"))
    for row in res.resource_table():
        res_t.add_row(row["what"], row["function"], row["source"],
                      _fmt(row.get("registers")), _fmt(row.get("stack")),
                      _fmt(row.get("spill_stores")), _fmt(row.get("spill_loads")),
                      _fmt(row.get("shared")))
    res_t.print()
    cost = res.call_cost()
    if cost is not None:
        say(f"call ABI cost (linked - original, nvlink -v): {cost['registers']:+d} registers, "
            f"{cost['stack']:+d} bytes of stack per thread ({cost['linked_stack']} in all), "
            f"{cost['shared']:+d} bytes of shared memory; the body spills "
            f"{_fmt(cost['body_spill_stores'])} / {_fmt(cost['body_spill_loads'])} bytes "
            "(stores / loads, ptxas -v)")
    o = res.outline
    assert o is not None  # verify() always builds the outline it reports
    say(f"live-in: {live_in_text(res.live_in_classes)}")
    say(f"body: {len(o.passed)} loaded from parameters, {len(o.recomputed)} recomputed, "
        f"{len(o.returned)} delivered back ({o.abi})")
    say(styled("verified", "green") if res.ok else styled("NOT verified", "red"))
    if keep:
        say(f"files in {keep}")
    sys.exit(0 if res.ok else 1)
