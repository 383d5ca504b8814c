"""mma list, D->C chains and phases: synthetic programs, the nvcc fixture, the seed
stand-ins (dec2 0021, dec1 0022) and the large real-compiler fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrsplice.analysis.dataflow import analyze
from rrsplice.analysis.mma import chains, find_mma, opcode_family, phases
from rrsplice.cli import main
from rrsplice.ptx.parser import parse

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "corpus_fixtures"
SMALL = FIX / "small" / "nvcc_small_mma.ptx"
DEC2 = FIX / "0021-PREPASS_ENTRYPOINT_NAME.ptx"
DEC1 = FIX / "0022-PREPASS_ENTRYPOINT_NAME.ptx"
BIG = FIX / "swin_big_sm89.ptx"

MMA = "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16"

# the seed recipe (swin_dec2_recipe.py): phase 1's A fragments and bias seeds
A_REGS = [
    "%r1040", "%r1041", "%r1042", "%r1043", "%r1060", "%r1061", "%r1062", "%r1063",
    "%r1080", "%r1081", "%r1082", "%r1083", "%r1100", "%r1101", "%r1102", "%r1103",
    "%r1520", "%r1521", "%r1522", "%r1523", "%r1540", "%r1541", "%r1542", "%r1543",
    "%r1560", "%r1561", "%r1562", "%r1563", "%r1580", "%r1581", "%r1582", "%r1583",
    "%r2000", "%r2001", "%r2002", "%r2003", "%r2020", "%r2021", "%r2022", "%r2023",
    "%r2040", "%r2041", "%r2042", "%r2043", "%r2060", "%r2061", "%r2062", "%r2063"]
C_REGS = ["%r1597", "%r1607", "%r1677", "%r1687", "%r1757", "%r1767", "%r1837", "%r1847",
          "%r1917", "%r1927", "%r1997", "%r2007"]
DEC1_A = [f"%r{b + i}" for b in (1084, 1104, 1124, 1564, 1584, 1604, 2044, 2064, 2084)
          for i in range(4)]
DEC1_SEEDS = ["%r1621", "%r1631", "%r1681", "%r1691", "%r1741", "%r1751", "%r1801", "%r1811",
              "%r1861", "%r1871", "%r1921", "%r1931", "%r1981", "%r1991", "%r2041", "%r2051"]


def need(path: Path) -> Path:
    if not path.is_file():
        pytest.fail(f"fixture {path.name} is missing from this checkout")
    return path


def body(text: str, regs: int = 200) -> str:
    """A one-entry module around `text` (instructions, one per line)."""
    return (".version 8.7\n.target sm_89\n.address_size 64\n"
            ".visible .entry k(\n\t.param .align 8 .b8 k_param_0[136]\n)\n{\n"
            f"\t.reg .pred %p<8>;\n\t.reg .b32 %r<{regs}>;\n\t.reg .b64 %rd<40>;\n"
            "\t.shared .align 16 .b8 smem[1024];\n" + text + "\tret;\n}\n")


def mma(d, a, b, c) -> str:
    f = lambda regs: "{" + ", ".join(f"%r{x}" for x in regs) + "}"  # noqa: E731
    return f"\t{MMA} {f(d)}, {f(a)}, {f(b)}, {f(c)};\n"


def fn_of(text: str):
    return parse(body(text).encode(), filename="t.ptx").functions[0]


# ---------------------------------------------------------------- synthetic programs

def _gemm(m_tiles, n_tiles, k_slices, base=100, seed_base=10, epilogue=""):
    """Straight-line code of one GEMM in m-tile x n-tile x k-slice order, A fragments at
    base.., B fragments at base+40.., D registers from base+100 on."""
    out = []
    d = base + 100
    for mt in range(m_tiles):
        for nt in range(n_tiles):
            c = (seed_base + nt, seed_base + nt)
            for ks in range(k_slices):
                a0 = base + 4 * (mt * k_slices + ks)
                b0 = base + 40 + 2 * (nt * k_slices + ks)
                out.append(mma((d, d + 1), range(a0, a0 + 4), (b0, b0 + 1), c))
                c = (d, d + 1)
                d += 2
    return "".join(out) + epilogue, d


def test_k_slices_are_not_tiles():
    text, _ = _gemm(2, 3, 4)
    fn = fn_of(text)
    (ph,) = phases(fn)
    assert (ph.m_tiles, ph.n_tiles, ph.k_slices) == (2, 3, 4)
    assert (ph.m, ph.n, ph.k) == (32, 24, 128)
    assert ph.geometry == "32x24x128"
    assert len(ph.a_fragments) == 8          # 2 m-tiles x 4 k-slices, NOT 8 m-tiles
    assert len(ph.b_fragments) == 12         # 3 n-tiles x 4 k-slices
    assert ph.chain_count == 6 and ph.chain_length == 4 and ph.dense
    assert ph.bias_seeds == ["%r10", "%r11", "%r12"]


def test_epilogue_read_starts_a_new_phase():
    p1, d = _gemm(1, 2, 2)
    last = d - 2
    epi = f"\tcvt.rn.f32.f16 %r199, %r{last};\n"      # reads phase 1's last accumulator
    p2, _ = _gemm(1, 1, 1, base=60, seed_base=20)
    fn = fn_of(p1 + "\tadd.s32 %r198, %r30, 1;\n" + epi + p2)
    ps = phases(fn)
    assert [p.geometry for p in ps] == ["16x16x64", "16x8x32"]
    assert ps[1].start_reason == "epilogue reads an accumulator"
    assert ps[1].start_register == f"%r{last}"
    assert ps[0].gap == "add x1, cvt x1"


def test_unrelated_statements_do_not_split_a_phase():
    # loads of B fragments and writes (not reads) of accumulator names stay inside
    text, d = _gemm(1, 1, 2)
    lines = text.splitlines(keepends=True)
    fn = fn_of(lines[0] + "\tld.global.nc.u32 %r30, [%rd1+64];\n\tmov.u32 %r31, 7;\n" + lines[1])
    (ph,) = phases(fn)
    assert ph.chain_count == 1 and ph.chain_length == 2


def test_label_or_branch_starts_a_new_phase():
    text = (mma((200, 201), (100, 101, 102, 103), (140, 141), (10, 10))
            + "$L__BB0_1:\n"
            + mma((202, 203), (104, 105, 106, 107), (142, 143), (11, 11)))
    ps = phases(fn_of(text))
    assert len(ps) == 2 and ps[1].start_reason == "control flow"
    text = (mma((200, 201), (100, 101, 102, 103), (140, 141), (10, 10))
            + "\t@%p1 bra $L__BB0_1;\n$L__BB0_1:\n"
            + mma((202, 203), (104, 105, 106, 107), (142, 143), (11, 11)))
    assert len(phases(fn_of(text))) == 2


def test_accumulator_as_a_fragment_starts_a_new_phase():
    text = (mma((200, 201), (100, 101, 102, 103), (140, 141), (10, 10))
            + mma((202, 203), (200, 201, 102, 103), (142, 143), (11, 11)))
    ps = phases(fn_of(text))
    assert len(ps) == 2 and ps[1].start_reason == "A/B reads an accumulator"


def test_redefined_d_register_is_no_chain():
    # the second mma's C names the first's D, but %r200 is redefined in between
    text = (mma((200, 201), (100, 101, 102, 103), (140, 141), (10, 10))
            + "\tmov.u32 %r200, 0;\n"
            + mma((202, 203), (100, 101, 102, 103), (142, 143), (200, 201)))
    fn = fn_of(text)
    assert chains(fn) == [(s1 := fn.statements[0].index,), (fn.statements[2].index,)]
    assert chains(fn, analyze(fn)) == [(s1,), (fn.statements[2].index,)]


def test_non_dense_phase():
    # two chains sharing both the A and the B sequence: 1 m-tile x 1 n-tile, 2 chains
    text = (mma((200, 201), (100, 101, 102, 103), (140, 141), (10, 10))
            + mma((202, 203), (100, 101, 102, 103), (140, 141), (11, 11)))
    (ph,) = phases(fn_of(text))
    assert ph.chain_count == 2 and (ph.m_tiles, ph.n_tiles) == (1, 1) and not ph.dense


def test_mma_fields_and_families():
    fn = fn_of(mma((200, 201), (100, 101, 102, 103), (140, 141), (10, 11))
               + "\tst.shared.u32 [%r5], %r6;\n\tbar.warp.sync -1;\n\tld.global.nc.u32 %r7, [%rd1];\n")
    (m,) = find_mma(fn)
    assert (m.shape, m.m, m.n, m.k) == ("m16n8k32", 16, 8, 32)
    assert m.layouts == ("row", "col")
    assert (m.d_type, m.a_type, m.b_type, m.c_type) == ("f16", "e4m3", "e4m3", "f16")
    assert m.d == ("%r200", "%r201") and m.c == ("%r10", "%r11")
    fams = [opcode_family(st) for st in fn.statements[1:4]]
    assert fams == ["st.shared", "bar.warp.sync", "ld.global"]


# ---------------------------------------------------------------- the nvcc fixture

def test_nvcc_small_mma():
    fn = parse(SMALL).functions[0]
    ms = find_mma(fn)
    assert [m.line for m in ms] == [48, 57, 68, 77]
    assert ms[0].d == ("%r1", "%r2") and ms[0].a == ("%r3", "%r4", "%r5", "%r6")
    assert ms[0].b == ("%r7", "%r8") and ms[0].c == ("%r9", "%r10")
    assert ms[1].c == ("%r1", "%r2")
    fa = analyze(fn)
    assert chains(fn) == chains(fn, fa) == [(ms[0].index, ms[1].index),
                                           (ms[2].index, ms[3].index)]
    for ph_list in (phases(fn), phases(fn, fa)):
        (ph,) = ph_list
        assert (ph.m, ph.n, ph.k) == (16, 16, 64)
        assert ph.chain_count == 2 and ph.chain_length == 2 and ph.dense
        assert ph.a_fragments == [("%r3", "%r4", "%r5", "%r6"), ("%r13", "%r14", "%r15", "%r16")]
        assert ph.bias_seeds == ["%r9", "%r10", "%r29", "%r30"]
    ph = phases(fn, fa)[0]
    assert ph.bias_seed_offsets == {"%r9": 8192, "%r10": 8320, "%r29": 8448, "%r30": 8576}
    assert ph.bias_offset_range == (8192, 8576)
    # B fragments at +2048/+2176, +2304/+2432, +4096/+4224, +4352/+4480 (4-byte words)
    assert ph.b_weight_range == (2048, 4484) and ph.b_unresolved == 0
    assert ph.gap is None           # the only phase


# ---------------------------------------------------------------- seed stand-ins

DEC2_GEOMETRY = (["48x96x128"] + ["48x48x32", "48x32x64"] * 3 + ["48x96x96", "48x64x96", "48x96x64"]
                 + ["48x48x32", "48x16x64"] * 4 + ["48x16x32"] * 9 + ["16x16x64"] * 4
                 + ["16x16x32"] * 7)
DEC1_GEOMETRY = (["48x128x96"] + ["48x48x32", "48x32x64"] * 4
                 + ["48x128x128", "48x64x128", "48x128x64"] + ["48x32x64"] * 6
                 + ["16x32x64"] * 7 + ["32x16x64"])


@pytest.fixture(scope="module")
def dec2():
    fn = parse(need(DEC2)).functions[0]
    fa = analyze(fn)
    return fn, fa, phases(fn, fa)


@pytest.fixture(scope="module")
def dec1():
    fn = parse(need(DEC1)).functions[0]
    fa = analyze(fn)
    return fn, fa, phases(fn, fa)


@pytest.mark.slow
def test_dec2_phases(dec2):
    fn, fa, ps = dec2
    assert len(find_mma(fn)) == 726
    assert sum(len(p.mmas) for p in ps) == 726
    assert len(ps) == 38
    assert [p.geometry for p in ps] == DEC2_GEOMETRY
    assert all(p.dense for p in ps)
    assert ps[-1].chain_count == 2 and (ps[-1].first, ps[-1].last) == (15508, 15510)
    # without an analysis the same phases come out (names are exact in straight code)
    assert [(p.first, p.last, p.geometry) for p in phases(fn)] == \
        [(p.first, p.last, p.geometry) for p in ps]


def test_dec2_phase1(dec2):
    fn, fa, ps = dec2
    p = ps[0]
    assert (p.first, p.last, p.first_line) == (452, 595, 1535)
    assert len(p.mmas) == 144 and p.chain_count == 36 and p.chain_length == 4
    assert (p.m, p.n, p.k) == (48, 96, 128) and (p.m_tiles, p.n_tiles, p.k_slices) == (3, 12, 4)
    assert len(p.a_fragments) == 12 and len(p.b_fragments) == 48
    assert [r for frag in p.a_fragments for r in frag] == A_REGS
    assert p.bias_seeds == C_REGS
    assert p.bias_seeds_by_offset == C_REGS
    assert [p.bias_seed_offsets[r] for r in C_REGS] == list(range(49152, 49329, 16))
    # 24 v4 loads at 0, 2048, ..., 47104: 96 words
    assert p.b_weight_range == (0, 47104 + 16) and p.b_unresolved == 0
    assert "ld.global x72" in p.gap and "st.shared" in p.gap


@pytest.mark.slow
def test_dec1_phases(dec1):
    fn, fa, ps = dec1
    assert len(ps) == 26 and sum(len(p.mmas) for p in ps) == 904
    assert [p.geometry for p in ps] == DEC1_GEOMETRY
    p = ps[0]
    assert (p.first, p.last) == (403, 546) and p.chain_count == 48 and p.chain_length == 3
    assert [r for frag in p.a_fragments for r in frag] == DEC1_A      # 36 A registers
    assert p.bias_seeds == DEC1_SEEDS
    assert [p.bias_seed_offsets[r] for r in DEC1_SEEDS] == list(range(24576, 24817, 16))
    assert p.bias_offset_range == (24576, 24816)
    assert ps[-1].chain_count == 4


# ---------------------------------------------------------------- the real-compiler fixture

# corpus_fixtures/src/swin_big.cu's phase table (m-tiles, n-tiles, k-slices)
BIG_TABLE = [(3, 12, 4), (3, 6, 1), (3, 4, 2), (3, 6, 1), (3, 4, 2), (3, 6, 1), (3, 4, 2),
             (3, 8, 3), (3, 16, 2), (3, 8, 4), (3, 8, 2), (3, 6, 2), (3, 4, 2), (3, 6, 1),
             (3, 4, 2), (3, 6, 1), (3, 4, 2), (3, 8, 3), (3, 12, 2), (3, 4, 3), (2, 4, 1),
             (1, 2, 1)]


def _woff(table, p):
    """Weight-image offset of phase p (0-based): swin_common.cuh's rr_woff, where each phase
    takes 4 warps x nt*ks fragments x 256 bytes of B, then 4 warps x nt seeds x 16 bytes."""
    return sum(4 * nt * ks * 256 + 4 * nt * 16 for _, nt, ks in table[:p])


@pytest.mark.slow
def test_swin_big_phases_match_its_source_table():
    fn = parse(need(BIG)).functions[0]
    fa = analyze(fn)
    ps = phases(fn, fa)
    assert len(find_mma(fn)) == 916
    assert [(p.m_tiles, p.n_tiles, p.k_slices) for p in ps] == BIG_TABLE
    assert [p.geometry for p in ps][:3] == ["48x96x128", "48x48x32", "48x32x64"]
    assert all(p.dense for p in ps)
    for i, p in enumerate(ps):
        _, nt, ks = BIG_TABLE[i]
        bias = _woff(BIG_TABLE, i) + 4 * nt * ks * 256
        # the bias block of lane 0 / warp 0: one 16-byte seed slot per n-tile
        assert p.bias_offset_range == (bias, bias + 16 * (nt - 1)), i
        assert p.b_weight_range[0] == _woff(BIG_TABLE, i), i


@pytest.mark.slow
def test_swin_big_phase1_by_hand():
    """Checked by reading the PTX: s486 (line 1223) is the first mma,
    `{%r650, %r651}, {%r32, %r35, %r54, %r57}, {%r542, %r543}, {%r638, %r638}`.
    %r542/%r543 come from `ld.global.nc.v4.u32 {%r542,...}, [%rd36]` (line 1008) with
    %rd36 = %rd7 + (tid.x << 4) + tid.z * 12288 and %rd7 = ld.param [param_0+40]: the weight
    image at +0 (+4) for lane 0 of warp 0. %r638 comes from `ld.global.nc.u32 %r638, [%rd60]`
    (line 1176), %rd60 = %rd7 + tid.z * 192 + 49152: the first bias seed at +49152.
    Phase 1 ends at the 144th mma; the next mma reads none of its D registers as C, and
    between them the epilogue reads %r680 (an accumulator of phase 1)."""
    fn = parse(need(BIG)).functions[0]
    fa = analyze(fn)
    ps = phases(fn, fa)
    p = ps[0]
    first = p.mmas[0]
    assert (first.index, first.line) == (486, 1223)
    assert first.b == ("%r542", "%r543") and first.c == ("%r638", "%r638")
    assert p.bias_seeds[0] == "%r638" and p.bias_seed_offsets["%r638"] == 49152
    assert len(p.bias_seeds) == 12
    assert p.b_weight_range[0] == 0
    assert (p.first, p.last) == (486, 629)
    assert ps[1].start_register == "%r680"


# ---------------------------------------------------------------- CLI

def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_cli_mma_json():
    r = run("mma", str(SMALL), "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["count"] == 4
    first = data["mma"][0]
    assert first["sid"] == "s20" and first["lines"] == [48, 52] and first["shape"] == "m16n8k32"
    assert first["d"] == ["%r1", "%r2"] and first["c"] == ["%r9", "%r10"]
    assert first["types"] == {"d": "f16", "a": "e4m3", "b": "e4m3", "c": "f16"}


def test_cli_phases_json_and_table():
    r = run("phases", str(SMALL), "--json")
    assert r.exit_code == 0, r.output
    (p,) = json.loads(r.output)["phases"]
    assert p["geometry"] == "16x16x64" and p["chains"] == 2 and p["chain_length"] == 2
    assert p["dense"] is True and p["bias_offset_range"] == [8192, 8576]
    assert p["b_weight_range"] == [2048, 4484]
    r = run("phases", str(SMALL))
    assert r.exit_code == 0 and "16x16x64" in r.output and "+8192..+8576" in r.output


def test_cli_phases_dec2_table():
    r = run("phases", str(need(DEC2)))
    assert r.exit_code == 0
    assert "726 mma in 38 phases" in r.output
    assert "48x96x128" in r.output and "+49152..+49328" in r.output


def test_cli_errors_exit_2(tmp_path):
    r = run("phases", str(tmp_path / "missing.ptx"))
    assert r.exit_code == 2
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.7\n.target sm_89\n.entry k()\n{\n\tmov.u32 %r1 1;\n")
    r = run("mma", str(bad), "--json")
    assert r.exit_code == 2 and "never closed" in r.output
    r = run("mma", str(SMALL), "--entry", "nope")
    assert r.exit_code == 2


# ---------------------------------------------------------------- README_real.md, every fixture

def _readme_real():
    """{kernel: [(geometry, (m, n, k tiles), mma, chains)]} and {file: (first, last)} as
    corpus_fixtures/README_real.md states them."""
    path = FIX / "README_real.md"
    if not path.is_file():
        pytest.fail("corpus_fixtures/README_real.md is missing from this checkout")
    kernels, regions, cur = {}, {}, None
    for line in path.read_text().splitlines():
        if line.startswith("### "):
            cur = line.split()[1]
            kernels[cur] = []
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 10:
            first, last = cells[9].split("-")
            regions[cells[0].strip("`")] = (int(first[1:]), int(last[1:]), int(cells[5]))
        elif cur and line.startswith("| ") and cells[0].isdigit():
            tiles = tuple(int(x) for x in cells[3].split(" x "))
            kernels[cur].append((cells[2], tiles, int(cells[4]), int(cells[5])))
    return kernels, regions


@pytest.mark.slow
def test_every_real_fixture_matches_its_readme():
    kernels, regions = _readme_real()
    assert regions, "README_real.md lists no fixtures"
    for name, (first, last, nmma) in sorted(regions.items()):
        path = FIX / name
        assert path.is_file(), f"README_real.md lists {name}, which is not in {FIX}"
        fn = parse(path).functions[0]
        ps = phases(fn)
        stated = kernels[name.rsplit("_", 1)[0]]
        got = [(p.geometry, (p.m_tiles, p.n_tiles, p.k_slices), len(p.mmas), p.chain_count)
               for p in ps]
        assert got == stated, name
        assert (ps[0].first, ps[-1].last) == (first, last), name
        assert sum(len(p.mmas) for p in ps) == nmma, name
        assert all(p.dense for p in ps), name
