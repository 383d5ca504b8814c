"""The layer descriptor users write by hand, read off the kernel with evidence per number.

`describe(fn, fa, module_name)` returns {"layer": ..., "phases": [...]} in which every value
is an `Ev(value, why, verified)`: `why` names the statement (sN, physical line, text) that
proves it, and `verified=False` marks a value inferred rather than read (e.g. warps from
`.maxntid` / 32). `render(desc)` writes it as plain Python (`layer()` and `phases()`,
importing nothing) with the evidence as a comment after every number; `plain(desc)` strips
the evidence for JSON and tests.

Epilogue kinds come from a signature table over the statements between two phases
(`EPILOGUE_SIGNATURES`; the first signature whose features all occur names the kind), and
whether the gap requantises (a `cvt` to an 8-bit float pair) is reported beside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .fragmap import phase_map


@dataclass(frozen=True)
class Ev:
    """A value and the evidence for it."""
    value: Any
    why: str
    verified: bool = True


# kind -> statement features that must all occur in the gap, in priority order. Features:
# opcode bases ("movmatrix", "rsqrt", "shfl", "ex2"), memory ops with their space
# ("st.shared"), and qualified forms "cvt.relu" (a cvt with .relu) and "fma.f16x2".
EPILOGUE_SIGNATURES = [
    ("transpose", ("movmatrix",)),
    ("norm", ("rsqrt", "shfl")),
    ("softmax", ("ex2", "shfl")),
    ("gelu", ("ex2",)),
    ("shared staging", ("st.shared", "ld.shared")),
    ("relu", ("cvt.relu",)),
    ("scale", ("fma.f16x2",)),
]
_REQUANT = re.compile(r"^(e4m3x2|e5m2x2|e2m3x2|e3m2x2|e2m1x2)$")


def _features(st) -> set:
    if st.is_label:
        return set()
    base, mods = st.base, st.modifiers
    out = {base}
    for sp in ("shared", "global", "local"):
        if sp in mods:
            out.add(f"{base}.{sp}")
    if base == "cvt" and "relu" in mods:
        out.add("cvt.relu")
    if base == "cvt" and any(_REQUANT.match(m) for m in mods):
        out.add("requantise")
    if base == "fma" and "f16x2" in mods:
        out.add("fma.f16x2")
    return out


def _where(st) -> str:
    return f"s{st.index} line {st.line}: {' '.join(st.text.split()).rstrip(';')}"


def classify_gap(stmts: list) -> dict:
    """{"kind", "requantise", "evidence", "operands"} for the statements of one gap."""
    feats: dict = {}
    for st in stmts:
        for f in _features(st):
            feats.setdefault(f, st)
    used: tuple[str, ...]
    kind, used = "unrecognised", ()
    for k, need in EPILOGUE_SIGNATURES:
        if all(n in feats for n in need):
            kind, used = k, need
            break
    ev = [feats[n] for n in used]
    imms: list = []
    for st in stmts:
        if used and used[0] in _features(st):
            imms += [op.text for op in st.operands if type(op).__name__ == "Imm"]
    requant = feats.get("requantise")
    return {"kind": Ev(kind, " | ".join(_where(s) for s in ev) if ev else
                       "no signature of EPILOGUE_SIGNATURES occurs in the gap",
                       verified=bool(ev)),
            "requantise": Ev(requant is not None,
                             _where(requant) if requant else "no cvt to an 8-bit float pair"),
            "operands": sorted(set(imms), key=imms.index)[:8]}


def _directive_line(fn, name: str) -> int | None:
    text = fn.module.data.decode("utf-8", "replace").split("\n") if fn.module else []
    first_stmt = fn.statements[0].line if fn.statements else fn.end_line
    for ln in range(fn.line, min(first_stmt, len(text)) + 1):
        if re.match(rf"\s*{re.escape(name)}\b", text[ln - 1]):
            return ln
    return None


def _layer(fn, fa, maps) -> dict:
    out: dict = {"entry": Ev(fn.name, f"line {fn.line}: {fn.kind} {fn.name}")}
    threads = None
    for d, v in fn.perf:
        if d in (".maxntid", ".reqntid"):
            ln = _directive_line(fn, d)
            out[d.lstrip(".")] = Ev(tuple(v), f"line {ln}: {d} {', '.join(map(str, v))}")
            threads = 1
            for x in v:
                threads *= x
    if threads is not None:
        out["warps"] = Ev(threads // 32, f"{threads} threads (the launch bound above) / 32",
                          verified=False)
    params = {}
    for p in fn.params:
        params[p.name] = Ev(p.byte_size, f"line {p.line}: .param {p.name} "
                                         f"({p.byte_size} bytes)")
    out["params"] = params
    from ..analysis.paramroles import bias_param, weight_named, weight_param
    p0 = fn.params[0].name if fn.params else None
    names = {p.name for p in fn.params}
    b_load = next((f.source.load for pm in maps for f in pm.b if f.source is not None), None)
    w = weight_param(fa)
    reads = {}
    for st in fn.statements:
        if st.is_label or st.base != "ld" or "param" not in st.modifiers:
            continue
        a = st.operands[1] if len(st.operands) > 1 else None
        name = getattr(getattr(a, "base", None), "name", None)
        if a is None or type(a).__name__ != "Address" or name not in names:
            continue
        role = ""
        if w is not None and (name, a.offset) == (w.name, w.offset) and b_load is not None:
            role = (f" (the weight image: B fragments load through it, e.g. "
                    f"{_where(fn.statements[b_load - 1])})")
        key = f"+{a.offset}" if name == p0 else f"{name}+{a.offset}"
        if key not in reads:
            reads[key] = Ev(a.offset, _where(st) + role)
    out["param_reads"] = dict(sorted(reads.items(), key=lambda kv: (
        kv[0].startswith("+") is False, kv[0].rpartition("+")[0], kv[1].value)))
    out["weight_param"] = Ev(str(w) if w is not None else None,
                             "named by W_PARAM / --weight-param" if weight_named(fa) else
                             "the pointer the B fragments load from (rrsplice.analysis.paramroles)"
                             if w is not None else "no B fragment loads through a parameter's "
                             "pointer; a recipe can name it with W_PARAM", verified=w is not None)
    bias = bias_param(fa)
    out["bias_param"] = Ev(str(bias) if bias is not None else None,
                           "the pointer the bias seeds load from" if bias is not None
                           else "no bias seed loads through a parameter's pointer",
                           verified=bias is not None)
    if maps:
        p1 = maps[0].phase
        out["tile_rows_per_warp"] = Ev(p1.m, f"phase 1 is {p1.geometry}: M = {p1.m} rows, "
                                             f"{p1.m_tiles} m-tiles of {p1.mmas[0].m}",
                                       verified=False)
    return out


def _a_source(fn, fa, pm, prev) -> Ev:
    stmts = fn.statements
    defs = sorted({d for f in pm.a for d in fa.reaching_defs(f.mma, f.reg)})
    if not defs:
        return Ev("unknown", "no definition reaches the A fragments", verified=False)
    first_mma = pm.phase.first
    if prev is None:
        if all(d < first_mma for d in defs):
            return Ev("prologue", f"A fragments defined before the first mma, s{defs[0]}-"
                                  f"s{defs[-1]}; e.g. {_where(stmts[defs[-1] - 1])}")
        return Ev("unknown", "A fragments defined after the first mma", verified=False)
    lo, hi = prev.phase.last, first_mma
    if all(lo < d < hi for d in defs):
        req = any("requantise" in _features(stmts[d - 1]) or stmts[d - 1].base == "mov"
                  for d in defs)
        what = f"requantised D of phase {prev.phase.index}" if req else \
            f"D of phase {prev.phase.index} after its epilogue"
        return Ev(what, f"every A register is defined in the gap s{lo + 1}-s{hi - 1}; "
                        f"e.g. {_where(stmts[defs[0] - 1])}")
    return Ev("mixed", f"A definitions s{defs[0]}-s{defs[-1]} straddle the gap after phase "
                       f"{prev.phase.index}", verified=False)


def _phase(fn, fa, pm, prev, nxt) -> dict:
    p = pm.phase
    stmts = fn.statements
    first, last = stmts[p.first - 1], stmts[p.last - 1]
    mm = p.mmas[0]
    chain0 = p.chains[0] if p.chains else ()
    d: dict = {
        "index": Ev(p.index, f"phase {p.index} of {fn.name} (docs/phases.md)"),
        "statements": Ev((p.first, p.last), f"first mma {_where(first)}; last mma s{last.index}"
                                            f" line {last.line}"),
        "mma": Ev(len(p.mmas), f"{len(p.mmas)} mma statements from s{p.first} to s{p.last}"),
        "mma_shape": Ev(mm.shape, _where(first)),
        "types": Ev({"d": mm.d_type, "a": mm.a_type, "b": mm.b_type, "c": mm.c_type},
                    _where(first)),
        "M": Ev(p.m, f"{p.m_tiles} distinct A-fragment sequences x m={mm.m}"),
        "N": Ev(p.n, f"{p.n_tiles} distinct B-fragment sequences x n={mm.n}"),
        "K": Ev(p.k, f"chains of {p.k_slices} mma x k={mm.k}; first chain "
                     + "->".join(f"s{i}" for i in chain0)),
        "k_tiling": Ev({"k_slices": p.k_slices, "k_per_mma": mm.k},
                       f"chain length {p.chain_length} (every chain)" if p.chain_length
                       else "chains differ in length", verified=p.chain_length is not None),
        "chains": Ev(p.chain_count, "dense: every (m-tile, n-tile) once" if p.dense
                     else "not dense"),
        "a_source": _a_source(fn, fa, pm, prev),
    }
    bs = [f for f in pm.b if f.source is not None]
    if bs:
        s0 = bs[0].source
        lo = min(f.source.offset(0) for f in bs)
        hi = max(f.source.offset(0) + 4 for f in bs)
        lowest = min(bs, key=lambda f: f.source.offset(0))
        d["b_weight_bytes"] = Ev((lo, hi), f"{len(bs)} of {len(pm.b)} B registers load from "
                                           f"the weight image; lowest {_where(stmts[lowest.source.load - 1])}")
        d["b_layout"] = Ev({"lane_stride": s0.lane_stride,
                            "warp_stride": s0.warp_stride,
                            "load_bytes": s0.width * s0.vector},
                           f"address of {_where(stmts[s0.load - 1])}")
        d["b_fragments"] = {f"k{f.tile[0]}_n{f.tile[1]}_r{f.index}":
                            Ev(f.source.offset(0), _where(stmts[f.source.load - 1]))
                            for f in bs}
    else:
        d["b_weight_bytes"] = Ev(None, "no B register of this phase loads from the weight image")
    seeds: dict = {}
    for f in pm.c:
        if f.source is None:
            continue
        key = f"n{f.tile[1]}"
        if key not in seeds:
            seeds[key] = Ev(f.source.offset(0), _where(stmts[f.source.load - 1]))
    d["c_source"] = Ev("bias seeds from the weight image" if seeds else
                       ("bias seeds (not from the weight image)" if pm.c else "none"),
                       f"{len(pm.c)} C registers of chain heads are not an mma's D")
    d["bias_seed_offsets"] = seeds
    if nxt is not None and p.gap_first is not None:
        gap = classify_gap(stmts[p.gap_first - 1:p.gap_last])
        d["epilogue"] = gap["kind"]
        d["epilogue_requantises"] = gap["requantise"]
        d["epilogue_operands"] = Ev(gap["operands"], "immediates of the signature statements",
                                    verified=False)
        d["gap"] = Ev((p.gap_first, p.gap_last), p.gap or "")
    else:
        d["epilogue"] = Ev(None, "last phase: what follows is the kernel's final epilogue")
    return d


def describe(fn, fa, phases=None) -> dict:
    if phases is None:
        from ..analysis.mma import phases as find
        phases = find(fn, fa)
    maps = [phase_map(fn, fa, p) for p in phases]
    out = []
    for i, pm in enumerate(maps):
        out.append(_phase(fn, fa, pm, maps[i - 1] if i else None,
                          maps[i + 1] if i + 1 < len(maps) else None))
    return {"layer": _layer(fn, fa, maps), "phases": out}


def plain(x):
    """The descriptor without evidence (values only), for JSON and comparisons."""
    if isinstance(x, Ev):
        return plain(x.value)
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    return x


def with_evidence(x):
    """JSON form keeping the evidence: {"value", "evidence", "verified"} per number."""
    if isinstance(x, Ev):
        return {"value": plain(x.value), "evidence": x.why, "verified": x.verified}
    if isinstance(x, dict):
        return {k: with_evidence(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [with_evidence(v) for v in x]
    return x


def _comment(ev: Ev) -> str:
    why = " ".join(ev.why.split())
    return ("  # UNVERIFIED (inferred): " if not ev.verified else "  # ") + why


def _lines(key: str | None, x, indent: int) -> list:
    pad = " " * indent
    head = f"{pad}{key}=" if key is not None and key.isidentifier() else \
        (f"{pad}{key!r}: " if key is not None else pad)
    if isinstance(x, Ev):
        return [f"{head}{plain(x.value)!r},{_comment(x)}"]
    if isinstance(x, dict):
        ident = all(k.isidentifier() for k in x)
        out = [f"{head}dict(" if ident else f"{head}{{"]
        for k, v in x.items():
            out += _lines(k, v, indent + 4)
        out.append(pad + ("}," if not ident else "),"))
        return out
    return [f"{head}{x!r},"]


def render(desc: dict, *, module: str, source_note: str) -> str:
    """The descriptor as a Python module (imports nothing)."""
    out = [f'"""Layer descriptor for {plain(desc["layer"]["entry"])} in {module}.', "",
           f"Written by `rrsplice descriptor` ({source_note}). Every number carries the",
           "statement that proves it as a comment (sN = statement number, line = physical",
           "line of the module); a comment starting UNVERIFIED marks a value inferred rather",
           "than read. B fragment offsets are weight-image bytes of register r of the",
           "fragment (k-slice, n-tile) for lane 0 of warp 0; b_layout gives the lane and warp",
           'strides. Plain Python: it imports nothing."""', "", "",
           "def layer():", '    """Launch geometry, parameter block reads, tiling."""',
           "    return dict("]
    for k, v in desc["layer"].items():
        out += _lines(k, v, 8)
    out += ["    )", "", "", "def phases():",
            '    """One dict per GEMM phase, in program order."""', "    return ["]
    for ph in desc["phases"]:
        out.append("        dict(")
        for k, v in ph.items():
            out += _lines(k, v, 12)
        out.append("        ),")
    out += ["    ]", ""]
    return "\n".join(out)
