"""`rrsplice outline` and `rrsplice verify`: the identity body of a cut, and the proof that
the splice's ABI is consistent (apply + outline + ptxas -c + nvlink)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from .app import console, json_option, main, note, print_json


def _corpus_option(f):
    return click.option("--corpus", "corpus", metavar="DIR", default=None,
                        help="Directory to look for the recipe's module in first.")(f)


def _no_check_option(f):
    return click.option("--no-check", "no_check", is_flag=True,
                        help="Do not stop on `rrsplice check` errors (for negative controls: "
                             "a recipe that drops a returned register).")(f)


def _check_failed(exc, as_json: bool):
    if as_json:
        print_json({"ok": False, "error": exc.to_json()})
    else:
        c = console()
        for f in exc.report.errors[:30]:
            c.print(f.render(), markup=False, highlight=False)
        c.print(f"[red]{len(exc.report.errors)} check error(s): nothing outlined[/red]")
    sys.exit(1)


@main.command("outline")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out", metavar="BODY.ptx", default=None, type=click.Path(),
              help="Where to write the body (default: out/<module>.<recipe>.body.ptx next to "
                   "the module).")
@_corpus_option
@_no_check_option
@json_option
def outline_cmd(recipe, out, corpus, no_check, as_json):
    """Write the callee of RECIPE's call as a PTX module whose body is the cut region itself.

    Parameters are loaded into the registers the region reads, registers the call does not
    pass are recomputed from passed values, `.shared` symbols become the passed base, and
    the values the call text reads back are stored where it reads them.
    """
    from ..check import CheckFailed
    from ..splice import default_output, write_atomic
    from ..verify import prepare
    try:
        rec, path, _patched, body, report = prepare(recipe, corpus, check=not no_check)
    except CheckFailed as exc:
        _check_failed(exc, as_json)
    if out is None:
        dest = default_output(path, rec).with_suffix(".body.ptx")
    else:
        dest = Path(out)
        if dest.is_dir():
            dest = dest / default_output(path, rec).with_suffix(".body.ptx").name
    write_atomic(dest, body.ptx, protect=(path, rec.path))
    data = body.to_json()
    data.update({"ok": True, "recipe": str(rec.path), "module": str(path),
                 "output": str(dest), "function": report.target.fn.name})
    if as_json:
        print_json(data)
        return
    for n in body.notes:
        note(n)
    c = console()
    t = Table(show_header=False)
    t.add_column("what")
    t.add_column("value")
    t.add_row("callee", body.callee)
    t.add_row("region", f"{data['region']} of {data['function']} (lines "
                        f"{body.lines[0]}-{body.lines[1]})")
    t.add_row("return convention", body.abi)
    t.add_row("loaded from parameters", f"{len(body.passed)}: " + " ".join(body.passed[:16])
              + (" ..." if len(body.passed) > 16 else ""))
    t.add_row("recomputed", f"{len(body.recomputed)}: " + " ".join(body.recomputed[:16])
              + (" ..." if len(body.recomputed) > 16 else "")
              + (f" (from {len(body.recompute_statements)} kernel statements)"
                 if body.recomputed else ""))
    t.add_row("delivered back", f"{len(body.returned)}: " + " ".join(body.returned[:16])
              + (" ..." if len(body.returned) > 16 else ""))
    if body.symbols:
        t.add_row(".shared symbols", ", ".join(f"{k} -> {v}" for k, v in body.symbols.items()))
    if body.kernel_params:
        t.add_row("kernel-parameter reads", " ".join(f"s{i}" for i in body.kernel_params))
    c.print(t)
    c.print(f"wrote [bold]{dest}[/bold] ({len(body.ptx)} bytes)")


def _fmt(v):
    return "-" if v is None else str(v)


@main.command("verify")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("--arch", "arch", type=click.Choice(["sm_89", "sm_90", "sm_120"]),
              default="sm_90", show_default=True, help="Target architecture.")
@click.option("--optimize", is_flag=True,
              help="Assemble with ptxas -O3 (slow on big modules) instead of -O0, so the "
                   "resource report shows optimised figures.")
@click.option("--keep", "keep", metavar="DIR", default=None, type=click.Path(file_okay=False),
              help="Leave the patched module, the body and the cubins in DIR.")
@_corpus_option
@_no_check_option
@json_option
def verify_cmd(recipe, arch, optimize, keep, corpus, no_check, as_json):
    """Apply RECIPE, outline its region, assemble both with ptxas -c, link with nvlink, and
    report resources of the original and the linked kernel side by side."""
    from ..check import CheckFailed
    from ..verify import verify
    try:
        res = verify(recipe, arch, corpus=corpus, optimize=optimize,
                     keep=Path(keep) if keep else None, check=not no_check)
    except CheckFailed as exc:
        _check_failed(exc, as_json)
    if as_json:
        print_json(res.to_json())
        sys.exit(0 if res.ok else 1)
    for n in res.notes:
        note(n)
    c = console()
    level = "-O3" if optimize else "-O0"
    c.print(f"[bold]{res.kernel}[/bold] {res.region} (lines {res.lines[0]}-{res.lines[1]}) -> "
            f"call {res.callee}; {arch}, ptxas {level}")
    steps = Table("step", "result", "seconds")
    for s in res.steps:
        steps.add_row(s.name, "[green]ok[/green]" if s.ok else "[red]FAILED[/red]",
                      f"{s.seconds:.2f}")
    c.print(steps)
    for s in res.steps:
        for p in s.problems:
            c.print(f"[red]{s.name}[/red]: line {p['line']}: {p['statement']!s}", markup=True,
                    highlight=False)
            c.print(f"    {p['message']}", markup=False, highlight=False)
            if "Special register" in p["message"]:
                c.print("    (ZLUDA accepts a special register there, ptxas does not: read "
                        "it with `mov.u32 %r, %laneid` first)", markup=False)
        if not s.ok and not s.problems:
            c.print(s.log.strip()[-2000:], markup=False, highlight=False)
    res_t = Table("", "function", "registers", "stack", "spill st", "spill ld", "smem",
                  title=f"resources ({arch}, {level}; linked: nvlink -v)")
    for row in res.resource_table():
        res_t.add_row(row["what"], row["function"], _fmt(row.get("registers")),
                      _fmt(row.get("stack")), _fmt(row.get("spill_stores")),
                      _fmt(row.get("spill_loads")), _fmt(row.get("shared")))
    c.print(res_t)
    o = res.outline
    c.print(f"body: {len(o.passed)} loaded from parameters, {len(o.recomputed)} recomputed, "
            f"{len(o.returned)} delivered back ({o.abi})")
    c.print("[green]verified[/green]" if res.ok else "[red]NOT verified[/red]")
    if keep:
        c.print(f"files in {keep}")
    sys.exit(0 if res.ok else 1)
