"""`rrsplice mma`, `phases`, `uses`: the tensor-core structure of a function and the
accesses of a `.shared` array."""

from __future__ import annotations

import click

from ..infra.words import count
from ..ptx.errors import RRSpliceError
from ..ptx.select import select_function
from .app import entry_option, examples, json_option, main, note, print_json
from .output import Grid, bold, say


def _load(file: str, entry, as_json: bool):
    from ..infra import cache
    module = cache.load_module(file)
    fn, why = select_function(module, entry)
    if why:
        note(why, as_json)
    return module, fn


def _analysis(module, fn):
    from ..infra import cache
    return cache.load_analysis(module, fn)


def _frag(regs) -> str:
    return "{" + ", ".join(regs) + "}"


def _off_range(r) -> str:
    return f"+{r[0]}..+{r[1]}" if r else "-"


@main.command("mma", epilog=examples(
    "rrsplice mma corpus_fixtures/swin_tiny_sm89.ptx",
    "rrsplice mma corpus_fixtures/0021-PREPASS_ENTRYPOINT_NAME.ptx | grep m16n8k32"))
@click.argument("file", type=click.Path(dir_okay=False))
@entry_option
@json_option
def mma_cmd(file, entry, as_json):
    """List every mma of FILE: statement, line, shape, types and D/A/B/C registers."""
    from ..analysis.mma import find_mma
    module, fn = _load(file, entry, as_json)
    mmas = find_mma(fn)
    if as_json:
        print_json({"file": file, "function": fn.name, "count": len(mmas),
                    "mma": [m.to_json() for m in mmas]})
        return
    table = Grid("stmt", "line", "shape", "types d.a.b.c", "D", "A", "B", "C",
                 title=f"{fn.name}: {len(mmas)} mma", right=("line",))
    for m in mmas:
        table.add_row(m.sid, str(m.line), f"{m.shape} {'.'.join(m.layouts)}",
                      ".".join(t or "?" for t in (m.d_type, m.a_type, m.b_type, m.c_type)),
                      _frag(m.d), _frag(m.a), _frag(m.b), _frag(m.c))
    table.print()


@main.command("phases", epilog=examples(
    "rrsplice phases corpus_fixtures/swin_tiny_sm89.ptx",
    "rrsplice phases corpus_fixtures/0021-PREPASS_ENTRYPOINT_NAME.ptx --json",
    "rrsplice phases --all corpus_fixtures"))
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--all", "all_dir", type=click.Path(exists=True), default=None, metavar="DIR",
              help="Survey every .ptx under DIR in parallel workers (as `descriptor --all`).")
@click.option("--workers", type=int, default=None, help="Worker processes for --all.")
@entry_option
@json_option
def phases_cmd(file, all_dir, workers, entry, as_json):
    """The phases (GEMMs) of FILE's mma: ranges, geometry, chains, weight-image offsets and
    what the gap before the next phase does. docs/phases.md says how phases are delimited."""
    if all_dir is not None or file is None:
        if file is not None or all_dir is None:
            raise RRSpliceError("give FILE, or --all DIR (not both)")
        from .cmd_descriptor import corpus_table
        corpus_table(all_dir, as_json, workers)
        return
    from ..analysis.mma import phases
    module, fn = _load(file, entry, as_json)
    fa = _analysis(module, fn)
    ps = phases(fn, fa)
    if as_json:
        print_json({"file": file, "function": fn.name, "mma": sum(len(p.mmas) for p in ps),
                    "phases": [p.to_json() for p in ps]})
        return
    table = Grid("#", "statements\nlines", "mma", "MxNxK", "chains\ngrid", "B weight\nbytes",
                 "bias seeds", right=("#", "mma"),
                 title=f"{fn.name}: {sum(len(p.mmas) for p in ps)} mma in "
                       f"{count(len(ps), 'phase')}")
    for p in ps:
        chains = f"{p.chain_count}x{p.chain_length}" if p.chain_length else \
            f"{p.chain_count}x" + "/".join(map(str, p.chain_lengths))
        b = _off_range(p.b_weight_range)
        if p.b_weight_range and p.b_unresolved:
            b += f"\n({p.b_unresolved} regs not)"
        elif not p.b_weight_range:
            b = "-"
        sr = p.bias_offset_range
        seed_text = f"{len(p.bias_seeds)}" + (f"\n{_off_range(sr)}" if sr else "")
        table.add_row(str(p.index), f"s{p.first}-s{p.last}\n{p.first_line}-{p.last_line}",
                      str(len(p.mmas)), p.geometry,
                      chains + ("\ndense" if p.dense else "\nnot dense"), b, seed_text)
    table.print()
    if len(ps) > 1:
        say(bold("between phases"), " (statement families in the gap before the next "
            "phase's first mma):")
    for p in ps:
        if p.gap_first is not None:
            say(f"  {p.index}->{p.index + 1} s{p.gap_first}-s{p.gap_last}: {p.gap}")
    for p in ps:
        for n in p.notes:
            say(f"  note: phase {p.index}: {n}")


@main.command("uses", epilog=examples(
    "rrsplice uses corpus_fixtures/swin_tiny_sm89.ptx "
    "_ZZ18rrswin_tiny_kernelE4smem"))
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("symbol")
@entry_option
@json_option
def uses_cmd(file, symbol, entry, as_json):
    """Accesses of SYMBOL in FILE (directly and through registers derived from its
    address), the derived registers, and its last access."""
    from ..analysis.provenance import symbol_uses
    module, fn = _load(file, entry, as_json)
    known = {d.name for d in fn.decls()} | {d.name for d in module.decls} \
        | {p.name for p in fn.params}
    if symbol not in known:
        raise RRSpliceError(f"{fn.name} declares no symbol {symbol!r} "
                            "(give a .shared/.global/.param variable name)", path=file)
    fa = _analysis(module, fn)
    su = symbol_uses(fa, symbol)
    if as_json:
        data = su.to_json()
        data.update({"file": file, "function": fn.name})
        print_json(data)
        return
    table = Grid("stmt", "line", "kind", "via", "statement", right=("line",),
                 title=f"{symbol} in {fn.name}: {len(su.accesses)} uses")
    for a in su.accesses:
        table.add_row(a.sid, str(a.line), a.kind, a.via or "(symbol)", a.text)
    table.print()
    regs = su.derived_registers
    say(f"derived registers ({len(regs)}): " + (" ".join(regs) if regs else "none"))
    for label, a in (("last access", su.last_access), ("last read", su.last_read),
                     ("last write", su.last_write)):
        say(f"{label}: " + (f"{a.sid} (line {a.line}, {a.kind} via {a.via or 'symbol'})"
                            if a else "none"))
