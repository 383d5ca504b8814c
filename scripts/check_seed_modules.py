#!/usr/bin/env python3
"""Independent check of the seed stand-in modules (0021 = dec2, 0022 = dec1).

Re-reads a generated module with a small line-based statement scanner that follows
rrsplice's counting conventions (statements = instructions and labels, numbered per body,
located at their first physical line; declarations, directives, comments, blank lines and
braces are not statements) and asserts every fact the seed recipe states about it: the
mma region's first/last lines and statements, mma and phase counts (by the phase rule),
phase 1's geometry, A order, bias seeds and their offsets, and straight-line live-in /
live-out of the region.  It imports nothing from rrsplice or from the generator.

usage: python scripts/check_seed_modules.py [--ptxas] [FILE ...]
"""

from __future__ import annotations

import argparse
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _r(*nums):
    return [f"%r{n}" for n in nums]


def _frags(bases):
    return [f"%r{b + i}" for b in bases for i in range(4)]


EXPECT = {
    "0021-PREPASS_ENTRYPOINT_NAME.ptx": dict(
        entry="cuda_dldn_engine_swin_dec2_kernel",
        scratch=("_ZZ33cuda_dldn_engine_swin_dec2_kernel33DldnEngineSwinEncParams"
                 "StructBaseE4smem", 9600),
        first_line=1535, first_stmt=452, end_line=36892, last_stmt=15510,
        mma=726, phases=38, phase1=(48, 96, 128, 144, 36),
        a_regs=_frags([1040, 1060, 1080, 1100, 1520, 1540, 1560, 1580,
                       2000, 2020, 2040, 2060]),
        c_regs=_r(1597, 1607, 1677, 1687, 1757, 1767, 1837, 1847, 1917, 1927, 1997, 2007),
        seed_base=49152, w_reg="%rd32", v_reg="%rd7", w_stmt=8, v_stmt=1,
        live_out=_r(19360, 19361, 19370, 19371), last_chains=2, r_decl=19372,
    ),
    "0022-PREPASS_ENTRYPOINT_NAME.ptx": dict(
        entry="cuda_dldn_engine_swin_dec1_kernel",
        scratch=("_ZZ33cuda_dldn_engine_swin_dec1_kernel33DldnEngineSwinEncParams"
                 "StructBaseE4smem", 6400),
        first_line=1486, first_stmt=403, end_line=38472, last_stmt=15988,
        mma=None, phases=26, phase1=(48, 128, 96, 144, 48),
        a_regs=_frags([1084, 1104, 1124, 1564, 1584, 1604, 2044, 2064, 2084]),
        c_regs=_r(1621, 1631, 1681, 1691, 1741, 1751, 1801, 1811,
                  1861, 1871, 1921, 1931, 1981, 1991, 2041, 2051),
        seed_base=24576, w_reg="%rd3", v_reg="%rd8", w_stmt=None, v_stmt=None,
        live_out=_r(18794, 18795, 18804, 18805, 18834, 18835, 18844, 18845, 18991, 18993),
        last_chains=4, r_decl=None,
    ),
}

REG = re.compile(r"%(?:rd|rs|r|fd|f|p)\d+\b")
NO_DEF = ("st.", "sust.", "bar.", "bra", "ret", "red.", "membar", "fence", "call")


class Stmt:
    __slots__ = ("num", "line", "end", "text", "op", "defs", "uses", "label")

    def __init__(self, num, line, end, text):
        self.num, self.line, self.end, self.text = num, line, end, text.strip()
        self.label = self.text.endswith(":") and ";" not in self.text
        self.defs, self.uses = [], []
        if self.label:
            self.op = "<label>"
            return
        body = self.text.rstrip(";").strip()
        guard = None
        if body.startswith("@"):
            guard, body = body.split(None, 1)
        parts = body.split(None, 1)
        self.op = parts[0]
        ops = split_operands(parts[1]) if len(parts) > 1 else []
        if guard:
            self.uses += REG.findall(guard)
        if ops and not self.op.startswith(NO_DEF):
            self.defs = REG.findall(ops[0])
            rest = ops[1:]
        else:
            rest = ops
        for o in rest:
            self.uses += REG.findall(o)

    @property
    def is_mma(self):
        return self.op.startswith("mma.sync")

    def operand_lists(self):
        body = self.text.rstrip(";").split(None, 1)[1]
        return [REG.findall(o) for o in split_operands(body)]


def split_operands(s):
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def scan(lines):
    """Statements of the (single) entry body: list of Stmt, and the body's line range."""
    start = next(i for i, ln in enumerate(lines) if ln.startswith(".visible .entry"))
    open_ = next(i for i in range(start, len(lines)) if lines[i].strip() == "{")
    stmts, cur, cur_line, depth = [], None, None, 0
    for i in range(open_, len(lines)):
        ln = lines[i].split("//", 1)[0]
        j = 0
        while j < len(ln):
            c = ln[j]
            if cur is not None:
                k = ln.find(";", j)
                if k < 0:
                    cur.append(ln[j:])
                    j = len(ln)
                else:
                    cur.append(ln[j:k + 1])
                    stmts.append(Stmt(len(stmts) + 1, cur_line, i + 1, " ".join(cur)))
                    cur = None
                    j = k + 1
                continue
            if c.isspace():
                j += 1
            elif c == "{":
                depth += 1
                j += 1
            elif c == "}":
                depth -= 1
                j += 1
                if depth == 0:
                    return stmts, (open_ + 1, i + 1)
            elif c == ".":
                k = ln.find(";", j)
                assert k >= 0, f"line {i + 1}: unterminated directive"
                j = k + 1
            else:
                m = re.match(r"[$A-Za-z_][$\w]*:", ln[j:])
                if m and not ln[j:].startswith(("mov", "ld")):
                    stmts.append(Stmt(len(stmts) + 1, i + 1, i + 1, m.group(0)))
                    j += m.end()
                    continue
                cur, cur_line = [], i + 1
    raise AssertionError("body not closed")


def phases_of(stmts):
    """Group mma into phases by the rule: a new phase starts at an mma when, since the
    previous mma, a non-mma statement read a register holding a D result of the phase."""
    phases, cur, dregs, consumed = [], [], set(), False
    for s in stmts:
        if s.is_mma:
            if consumed and cur:
                phases.append(cur)
                cur, dregs = [], set()
            consumed = False
            cur.append(s)
            dregs |= set(s.operand_lists()[0])
        elif cur and dregs.intersection(s.uses):
            consumed = True
    if cur:
        phases.append(cur)
    return phases


def geometry(phase):
    """(M, N, K, mma, chains) of one phase, from its chains' fragment sequences."""
    chains = []
    by_d = {}
    for s in phase:
        d, a, b, c = s.operand_lists()
        key = tuple(c)
        if key in by_d:
            ch = by_d.pop(key)
        else:
            ch = []
            chains.append(ch)
        ch.append((tuple(a), tuple(b)))
        by_d[tuple(d)] = ch
    lens = {len(ch) for ch in chains}
    assert len(lens) == 1, f"ragged chains {lens}"
    aseq = {tuple(x[0] for x in ch) for ch in chains}
    bseq = {tuple(x[1] for x in ch) for ch in chains}
    return 16 * len(aseq), 8 * len(bseq), 32 * lens.pop(), len(phase), len(chains)


def check_file(path, ptxas=False, verbose=True) -> int:
    path = pathlib.Path(path)
    exp = EXPECT[path.name]
    text = path.read_text()
    lines = text.split("\n")
    stmts, (body0, body1) = scan(lines)
    errors = []

    def want(cond, msg):
        if not cond:
            errors.append(msg)

    want(f".visible .entry {exp['entry']}(" in text, "entry name")
    want(".maxntid 32, 1, 4" in text, ".maxntid")
    sym, size = exp["scratch"]
    want(f".shared .align 16 .b8 {sym}[{size}];" in text, "scratch array")
    mmas = [s for s in stmts if s.is_mma]
    first, last = mmas[0], mmas[-1]
    want((first.line, first.num) == (exp["first_line"], exp["first_stmt"]),
         f"first mma at line {first.line} s{first.num}")
    want((last.end, last.num) == (exp["end_line"], exp["last_stmt"]),
         f"last mma ends at line {last.end} s{last.num}")
    want(last.end - last.line == 3 and all(s.end - s.line == 3 for s in mmas), "four-line mma")
    if exp["mma"] is not None:
        want(len(mmas) == exp["mma"], f"{len(mmas)} mma")
    phases = phases_of(stmts)
    want(len(phases) == exp["phases"], f"{len(phases)} phases")
    geo = [geometry(p) for p in phases]
    want(geo[0] == exp["phase1"], f"phase 1 geometry {geo[0]}")
    want(geo[-1][4] == exp["last_chains"], f"last phase chains {geo[-1]}")
    p1 = phases[0]
    want([s.num for s in p1] == list(range(exp["first_stmt"], exp["first_stmt"] + len(p1))),
         "phase 1 mma are consecutive statements")
    order = []
    for s in p1:
        for r in s.operand_lists()[1]:
            if r not in order:
                order.append(r)
    want(order == exp["a_regs"], "phase 1 A first-use order")
    seeds = []
    for s in p1:
        c = s.operand_lists()[3]
        if c[0] == c[1] and c[0] not in seeds:
            seeds.append(c[0])
    want(seeds == exp["c_regs"], f"phase 1 bias seeds {seeds[:4]}...")
    # the bias seeds' loads and offsets
    defs = {}
    for s in stmts:
        for d in s.defs:
            defs.setdefault(d, s)
    for i, c in enumerate(exp["c_regs"]):
        s = defs.get(c)
        want(s is not None and s.text == f"ld.global.nc.u32 {c}, [{exp['w_reg']}+"
             f"{exp['seed_base'] + 16 * i}];", f"seed load of {c}: {s and s.text}")
    w = defs[exp["w_reg"]]
    want(w.op == "cvta.to.global.u64", "weight image is a cvta.to.global")
    src = defs[w.uses[0]]
    want(src.text.startswith("ld.param.u64") and src.text.endswith("_param_0+40];"),
         "weight image comes from param_0+40")
    v = defs[exp["v_reg"]]
    want(v.text == f"cvta.param.u64 {exp['v_reg']}, {exp['entry']}_param_0;",
         "parameter block register")
    if exp["w_stmt"]:
        want(w.num == exp["w_stmt"], f"weight image at s{w.num}")
    if exp["v_stmt"]:
        want(v.num == exp["v_stmt"], f"param block at s{v.num}")

    # phase 1 chains: each chain's k-slices are consecutive mma (C = the previous D)
    kt = exp["phase1"][2] // 32
    for i, st in enumerate(p1):
        c = st.operand_lists()[3]
        if i % kt:
            want(c == p1[i - 1].operand_lists()[0], f"phase 1 chain broken at s{st.num}")
        else:
            want(c[0] == c[1], f"phase 1 chain start s{st.num} has no bias seed")
    # prologue: plane-arena loads (5 per A fragment) and the weight-fragment loads
    pro = [s for s in stmts if s.num < first.num]
    arena = [s for s in pro if s.op.startswith("ld.global") and exp["w_reg"] not in s.text]
    want(len(arena) == 5 * len(exp["a_regs"]) // 4, f"{len(arena)} plane-arena loads")
    wl = [s for s in pro if s.op == "ld.global.nc.v4.u32" and f"[{exp['w_reg']}+" in s.text]
    offs = [int(re.search(r"\+(\d+)\]", s.text).group(1)) for s in wl]
    want(len(wl) == (exp["phase1"][1] // 8) * kt // 2 and max(offs) < exp["seed_base"],
         f"{len(wl)} weight-fragment loads, offsets up to {max(offs)}")

    # straight-line liveness of the region
    lo, hi = first.num, last.num
    region = [s for s in stmts if lo <= s.num <= hi]
    written, live_in = set(), []
    for s in region:
        for u in s.uses:
            if u not in written and u not in live_in:
                live_in.append(u)
        written |= set(s.defs)
    b_regs = set()
    for s in p1:
        b_regs |= set(s.operand_lists()[2])
    want(len(b_regs) == 2 * (geo[0][1] // 8) * (geo[0][2] // 32), "phase 1 B registers")
    expect_in = set(exp["a_regs"]) | set(exp["c_regs"]) | b_regs | {exp["w_reg"], exp["v_reg"]}
    want(set(live_in) == expect_in,
         f"live-in: extra {sorted(set(live_in) - expect_in)} missing {sorted(expect_in - set(live_in))}")
    for r in b_regs:
        s = defs[r]
        want(s.num < lo and s.op == "ld.global.nc.v4.u32" and f"[{exp['w_reg']}+" in s.text,
             f"B register {r} loaded in the prologue from the weight image")
    after = [s for s in stmts if s.num > hi]
    live_out = []
    for s in after:
        for u in s.uses:
            if u in written and u not in live_out:
                live_out.append(u)
    want(sorted(live_out) == sorted(exp["live_out"]), f"live-out {sorted(live_out)}")
    want(all(sym not in s.text for s in pro), "prologue touches the scratch array")
    want(any(exp["v_reg"] in s.uses for s in region), "region reads the parameter block")
    want(not any(s.op.startswith("ld.param") and "%" in s.text.split("[", 1)[1]
                 for s in region), "ld.param through a register in the region")
    # the epilogue's texture reads and surface store
    ops = [s.op for s in after]
    want(ops.count("tex.2d.v4.f32.s32") == 2, "two texture reads")
    want("sust.b.2d.v2.b16.zero" in ops and "ex2.approx.f32" in ops, "softmax and surface store")
    want(ops[-1] == "ret", "ret at the end")
    # declarations cover every register
    for kind, pre in (("pred", "p"), ("b16", "rs"), ("b32", "r"), ("f32", "f"), ("b64", "rd")):
        m = re.search(rf"\.reg \.{kind} %{pre}<(\d+)>;", text)
        top = max((int(x) for x in re.findall(rf"%{pre}(\d+)\b", text)), default=-1)
        want(m and int(m.group(1)) == top + 1, f".reg %{pre}<{m and m.group(1)}> vs top {top}")
    if exp["r_decl"]:
        want(f".reg .b32 %r<{exp['r_decl']}>;" in text, "r declaration")
    # no register is defined twice (the generator writes SSA-like code)
    seen = {}
    for s in stmts:
        for d in s.defs:
            want(d not in seen, f"{d} defined at s{seen.get(d)} and s{s.num}")
            seen[d] = s.num
    if ptxas:
        exe = shutil.which("ptxas")
        for arch in ("sm_89", "sm_90", "sm_120"):
            if not exe:
                print("ptxas not found; skipped")
                break
            r = subprocess.run([exe, f"-arch={arch}", "-O0", "-c", str(path), "-o", "/dev/null"],
                               capture_output=True, text=True)
            want(r.returncode == 0, f"ptxas {arch}: {r.stderr[-400:]}")
            if verbose:
                print(f"  ptxas -arch={arch} -O0: rc={r.returncode} {r.stderr.strip()[:200]}")
    if verbose:
        print(f"{path.name}: {len(stmts)} statements, {len(mmas)} mma in {len(phases)} phases, "
              f"region s{lo}-s{hi} lines {first.line}-{last.end}, "
              f"{len(live_in)} live-in, live-out {live_out}")
        print("  geometries: " + " ".join(f"{m}x{n}x{k}" for m, n, k, _, _ in geo))
    for e in errors:
        print(f"  FAIL {path.name}: {e}")
    return 1 if errors else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--ptxas", action="store_true")
    args = ap.parse_args(argv)
    files = args.files or [ROOT / "corpus_fixtures" / n for n in EXPECT]
    rc = 0
    for f in files:
        rc |= check_file(f, ptxas=args.ptxas)
    return rc


if __name__ == "__main__":
    sys.exit(main())
