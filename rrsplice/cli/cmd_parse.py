"""`rrsplice parse`, `functions`, `show`: the model, as a user sees it."""

from __future__ import annotations

import sys
import time

import click

from ..infra.fsutil import read_input
from ..ptx.emit import emit
from ..ptx.errors import ParseError
from ..ptx.parser import parse_bytes
from ..ptx.select import SelectionError, parse_statement_id, select_function
from .app import entry_option, examples, json_option, main, note, print_json
from .output import Grid, bold, progress_iter, say, styled


def _json_errors(as_json: bool) -> None:
    """Errors raised later in this command print as JSON when --json was given (the group
    reads this flag from the root context)."""
    if as_json:
        click.get_current_context().find_root().meta["rrsplice.json"] = True


def _parse_file(path: str):
    """The module in the file at `path`: a missing file is an error, never PTX text."""
    return parse_bytes(read_input(path, what="PTX file"), path, path=path)


def _parse_one(path: str) -> dict:
    t0 = time.perf_counter()
    try:
        m = _parse_file(path)
    except ParseError as exc:
        return {"file": path, "ok": False, "error": exc.to_json(), "rendered": exc.render(),
                "seconds": round(time.perf_counter() - t0, 4)}
    seconds = time.perf_counter() - t0
    return {"file": path, "ok": True, "lines": m.line_count,
            "statements": sum(len(f.statements) for f in m.functions),
            "functions": len(m.functions), "mma": sum(1 for _ in m.mma_statements()),
            "round_trip": emit(m) == m.data, "seconds": round(seconds, 4)}


@main.command("parse", epilog=examples(
    "rrsplice parse corpus_fixtures/*.ptx",
    "rrsplice parse --json corpus_fixtures/swin_tiny_sm89.ptx"))
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@json_option
def parse_cmd(files, as_json):
    """Parse FILES; report lines, statements, functions, mma, round trip, seconds.

    Exits 2 when a file does not parse, 1 when a round trip is not byte-identical."""
    results = [_parse_one(f) for f in progress_iter(list(files), "parsing")] \
        if not as_json else [_parse_one(f) for f in files]
    failed = [r for r in results if not r["ok"] or not r["round_trip"]]
    if as_json:
        print_json({"ok": not failed, "files": [{k: v for k, v in r.items() if k != "rendered"}
                                                for r in results]})
    else:
        table = Grid("file", "result", "lines", "stmts", "funcs", "mma", "round trip",
                     "seconds", right=("lines", "stmts", "funcs", "mma", "seconds"))
        for r in results:
            if r["ok"]:
                table.add_row(r["file"], styled("ok", "green"), str(r["lines"]),
                              str(r["statements"]), str(r["functions"]), str(r["mma"]),
                              "identical" if r["round_trip"] else styled("DIFFERS", "red"),
                              f"{r['seconds']:.3f}")
            else:
                e = r["error"]
                table.add_row(r["file"], styled(f"error {e['line']}:{e['column']}", "red"),
                              "", "", "", "", "", f"{r['seconds']:.3f}")
        table.print()
        for r in results:
            if not r["ok"]:
                click.echo(r["rendered"], err=True)
    # 2: a file is malformed (as for every other command); 1: a round trip differs
    sys.exit(2 if any(not r["ok"] for r in results) else 1 if failed else 0)


@main.command("functions", epilog=examples(
    "rrsplice functions corpus_fixtures/swin_tiny_sm89.ptx"))
@click.argument("file", type=click.Path(dir_okay=False))
@json_option
def functions_cmd(file, as_json):
    """List FILE's functions: kind, parameters, statement count, line span."""
    _json_errors(as_json)
    m = _parse_file(file)
    rows = []
    for f in m.functions:
        rows.append({"name": f.name, "kind": f.kind, "linkage": list(f.linkage),
                     "params": [str(p) for p in f.params],
                     "return_params": [str(p) for p in f.ret_params],
                     "performance": [[d, v] for d, v in f.perf],
                     "has_body": f.has_body, "statements": len(f.statements),
                     "lines": [f.line, f.end_line]})
    if as_json:
        print_json({"file": file, "functions": rows})
        return
    table = Grid("name", "kind", "params", "statements", "lines", right=("statements",))
    for r in rows:
        kind = " ".join(r["linkage"] + [r["kind"]]) + ("" if r["has_body"] else " (declaration)")
        table.add_row(r["name"], kind, ", ".join(r["params"]) or "-", str(r["statements"]),
                      f"{r['lines'][0]}-{r['lines'][1]}")
    table.print()


def statement_json(st) -> dict:
    """A statement as data (shared by `show` and other commands)."""
    return {"sid": st.sid, "lines": [st.line, st.end_line], "column": st.column,
            "depth": st.depth, "kind": "label" if st.is_label else "instruction",
            "label": st.label, "text": st.text,
            "guard": str(st.guard) if st.guard else None, "opcode": st.opcode,
            "base": st.base, "modifiers": list(st.modifiers),
            "operands": [{"kind": op.kind, "text": str(op),
                          "registers": [r.name for r in op.registers()]} for op in st.operands]}


@main.command("show", epilog=examples(
    "rrsplice show corpus_fixtures/0021-PREPASS_ENTRYPOINT_NAME.ptx s452",
    "rrsplice show corpus_fixtures/0021-PREPASS_ENTRYPOINT_NAME.ptx --line 1535 --json"))
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("sid", required=False)
@click.option("--line", "line", type=int, default=None, help="Any physical line inside a statement.")
@entry_option
@json_option
def show_cmd(file, sid, line, entry, as_json):
    """Show one statement of FILE by its sN number or by a physical --line."""
    _json_errors(as_json)
    if (sid is None) == (line is None):
        raise SelectionError("give either a statement (e.g. s452) or --line L")
    m = _parse_file(file)
    fn, why = select_function(m, entry)
    if why:
        note(why, as_json)
    if line is not None:
        st = fn.statement_at_line(line)
        if st is None:
            raise SelectionError(f"line {line} holds no statement of {fn.name}", path=file)
    else:
        try:
            st = parse_statement_id(sid, fn)
        except SelectionError as exc:
            raise SelectionError(str(exc), path=file) from None
    data = statement_json(st)
    data["function"] = fn.name
    if as_json:
        print_json(data)
        return
    say(bold(st.sid), f" of {fn.name}, lines {st.line}-{st.end_line}, depth {st.depth}")
    say(st.text)
    if not st.is_label:
        say("opcode ", bold(st.base), "  modifiers "
            + (" ".join("." + x for x in st.modifiers) or "-")
            + (f"  guard {st.guard}" if st.guard else ""))
        table = Grid("#", "kind", "operand", "registers", right=("#",))
        for i, op in enumerate(data["operands"]):
            table.add_row(str(i), op["kind"], op["text"], " ".join(op["registers"]))
        table.print()
