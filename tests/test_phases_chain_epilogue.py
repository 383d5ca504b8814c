"""Phases when an epilogue reads a finished chain early (docs/phases.md, "Finished chains"):
nvcc may convert a finished tile's accumulators right after its last mma, between the mma
of the GEMM's other tiles. That read does not end the phase; what depends on it does.

The nvcc fixture corpus_fixtures/layer/layer_epi_cvt_sm89.ptx (src/layer_epi.cu with
-DRRLAYER_CVT_EARLY) against its generator's ground truth, and small synthetic programs for
each part of the rule: the next GEMM reads the epilogue's values (through registers, through
memory, as a guard), continues a chain the epilogue read, or draws on other operands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rrsplice.analysis.dataflow import analyze
from rrsplice.analysis.mma import phases
from rrsplice.infra.cache import load_analysis
from rrsplice.ptx.parser import parse

ROOT = Path(__file__).resolve().parent.parent
LAYER = ROOT / "corpus_fixtures" / "layer"
MMA = "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16"


# ---------------------------------------------------------------- the nvcc fixture

@pytest.fixture(scope="module")
def cvt_fixture():
    truth = json.loads((LAYER / "layer_epi_cvt.truth.json").read_text())
    mod = parse(LAYER / "layer_epi_cvt_sm89.ptx")
    fn = mod.function(truth["entry"])
    return truth, fn, load_analysis(mod, fn)


@pytest.mark.slow
def test_the_fixture_converts_finished_tiles_between_the_phases_mma(cvt_fixture):
    """The PTX has what the fixture is for, read off the statements without rrsplice's
    phases: within each early-converting phase (the truth's mma counts, in program order),
    the conversions of all tiles but the last lie between the phase's first and last mma."""
    truth, fn, _fa = cvt_fixture
    stmts = [st for st in fn.statements if not st.is_label]
    mma_pos = [k for k, st in enumerate(stmts) if st.opcode == MMA]
    assert len(mma_pos) == truth["mma"]
    early = truth["early_cvt"]
    at = 0
    for t in truth["phases"]:
        first, last = mma_pos[at], mma_pos[at + t["mma"] - 1]
        at += t["mma"]
        cvts = sum(1 for st in stmts[first:last] if st.opcode == "cvt.f32.f16")
        tiles = early["tiles_converted_before_the_phase_ends"].get(str(t["phase"]), 0)
        assert cvts == 4 * tiles          # two f16x2 registers, two halves each, per tile
        assert (cvts > 0) == (t["phase"] in early["phases"])


@pytest.mark.slow
def test_the_fixture_has_the_four_phases_of_its_source(cvt_fixture):
    """41 phases without the rule (one per converted tile, plus phase 4); 4 with it, each
    with the geometry, mma, chains, B bytes and bias seeds the generator wrote."""
    truth, fn, fa = cvt_fixture
    got = phases(fn, fa)
    assert len(got) == len(truth["phases"]) == 4
    for p, t in zip(got, truth["phases"], strict=True):
        assert p.geometry == t["geometry"]
        assert (p.m_tiles, p.n_tiles, p.k_slices) == (t["m_tiles"], t["n_tiles"], t["k_slices"])
        assert len(p.mmas) == t["mma"] and p.chain_count == t["chains"] and p.dense
        assert p.b_weight_range == (t["b_offset"], t["b_offset"] + t["b_bytes"] - 256 + 8)
        assert sorted(p.bias_seed_offsets.values()) == t["bias_offsets"]
        tiles = truth["early_cvt"]["tiles_converted_before_the_phase_ends"].get(str(t["phase"]))
        early = [n for n in p.notes if "finished before the phase's last mma" in n]
        assert early == ([f"{tiles} chain(s) finished before the phase's last mma: an "
                          f"epilogue reads their accumulators between its mma "
                          f"(s{p.first + 4}..s{p.last - 5})"] if tiles else [])
    for a, b in zip(got, got[1:], strict=False):
        assert b.start_reason == "epilogue reads an accumulator" and b.start_at == a.last + 1
    mma = [st.index for st in fn.statements if st.opcode == MMA]
    assert truth["region"]["statements"] == f"s{mma[0]}-s{mma[-1]}"
    assert (got[0].first, got[-1].last) == (mma[0], mma[-1])
    # without an analysis too (names in straight-line code): the same four phases
    assert [len(p.mmas) for p in phases(fn)] == [t["mma"] for t in truth["phases"]]


@pytest.mark.slow
def test_the_cli_lists_the_fixtures_four_phases():
    from click.testing import CliRunner

    from rrsplice.cli import main
    r = CliRunner().invoke(main, ["phases", str(LAYER / "layer_epi_cvt_sm89.ptx"), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    truth = json.loads((LAYER / "layer_epi_cvt.truth.json").read_text())
    assert [(p["geometry"], p["mma"]) for p in got["phases"]] == \
        [(t["geometry"], t["mma"]) for t in truth["phases"]]


# ---------------------------------------------------------------- synthetic programs

def _module(text: str) -> str:
    return (".version 8.7\n.target sm_89\n.address_size 64\n"
            ".visible .entry k(\n\t.param .align 8 .b8 k_param_0[48]\n)\n{\n"
            "\t.reg .pred %p<8>;\n\t.reg .b16 %rs<200>;\n\t.reg .b32 %r<400>;\n"
            "\t.reg .f32 %f<200>;\n\t.reg .b64 %rd<40>;\n"
            "\t.shared .align 16 .b8 smem[1024];\n"
            "\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd2, [k_param_0+8];\n"
            "\tld.param.u64 %rd3, [k_param_0+16];\n\tcvta.to.global.u64 %rd4, %rd1;\n"
            "\tcvta.to.global.u64 %rd5, %rd2;\n\tcvta.to.global.u64 %rd6, %rd3;\n"
            + text + "\tret;\n}\n")


def _regs(xs) -> str:
    return "{" + ", ".join(f"%r{x}" for x in xs) + "}"


class _Prog:
    """Straight-line PTX built a statement at a time; registers handed out in order."""

    def __init__(self):
        self.lines: list = []
        self.next_r, self.next_f, self.next_rs = 100, 1, 1

    def r(self, n: int) -> list:
        out = list(range(self.next_r, self.next_r + n))
        self.next_r += n
        return out

    def load(self, ptr: str, off: int, n: int, nc: bool = True) -> list:
        regs = self.r(n)
        op = "ld.global.nc" if nc else "ld.global"
        for k, x in enumerate(regs):
            self.lines.append(f"\t{op}.u32 %r{x}, [{ptr}+{off + 4 * k}];")
        return regs

    def mma(self, a, b, c, guard: str | None = None) -> list:
        d = self.r(2)
        g = f"@{guard} " if guard else ""
        self.lines.append(f"\t{g}{MMA} {_regs(d)}, {_regs(a)}, {_regs(b)}, {_regs(c)};")
        return d

    def to_f32(self, d) -> list:
        """The fixture's conversion of one tile: each f16x2 register unpacked and widened."""
        out = []
        for x in d:
            lo, hi = self.next_rs, self.next_rs + 1
            self.next_rs += 2
            self.lines.append(f"\tmov.b32 {{%rs{lo}, %rs{hi}}}, %r{x};")
            for h in (lo, hi):
                self.lines.append(f"\tcvt.f32.f16 %f{self.next_f}, %rs{h};")
                out.append(self.next_f)
                self.next_f += 1
        return out

    def requant(self, fs) -> list:
        """f32 values to e4m3 pairs packed into A registers (4 f32 per register)."""
        a = []
        for k in range(0, len(fs) - 3, 4):
            lo, hi = self.next_rs, self.next_rs + 1
            self.next_rs += 2
            self.lines.append(f"\tcvt.rn.satfinite.e4m3x2.f32 %rs{lo}, %f{fs[k + 1]}, %f{fs[k]};")
            self.lines.append(f"\tcvt.rn.satfinite.e4m3x2.f32 %rs{hi}, %f{fs[k + 3]}, %f{fs[k + 2]};")
            (x,) = self.r(1)
            self.lines.append(f"\tmov.b32 %r{x}, {{%rs{lo}, %rs{hi}}};")
            a.append(x)
        return a

    def gemm(self, a_tiles, b_tiles, seeds, early: bool = True):
        """m-tile, n-tile, k-slice order; each tile converted right after its last mma
        (`early`), else all after the GEMM. a_tiles[m][k], b_tiles[n][k]: register lists."""
        out = {}
        for m, a_row in enumerate(a_tiles):
            for n, b_col in enumerate(b_tiles):
                c = seeds[n]
                for a, b in zip(a_row, b_col, strict=True):
                    c = self.mma(a, b, c)
                out[m, n] = c
                if early:
                    out[m, n] = self.to_f32(c)
        if not early:
            out = {k: self.to_f32(v) for k, v in out.items()}
        return out

    def fn(self):
        text = "\n".join(self.lines) + "\n"
        return parse(_module(text).encode(), filename="t.ptx").functions[0]


def _layer_start(p: _Prog, mt: int = 2, nt: int = 2, ks: int = 2):
    """A from %rd4 (x), B from %rd5 (W), bias seeds from %rd5 + 4096."""
    a = [[p.load("%rd4", 16 * (m * ks + k), 4) for k in range(ks)] for m in range(mt)]
    b = [[p.load("%rd5", 8 * (n * ks + k), 2) for k in range(ks)] for n in range(nt)]
    seeds = [2 * p.load("%rd5", 4096 + 4 * n, 1) for n in range(nt)]
    return a, b, seeds


def _both(fn):
    """Phase sizes (mma per phase) with and without an analysis; they must agree."""
    with_fa = [len(p.mmas) for p in phases(fn, analyze(fn))]
    assert [len(p.mmas) for p in phases(fn)] == with_fa
    return with_fa


def test_early_conversions_stay_inside_the_phase():
    p = _Prog()
    a, b, seeds = _layer_start(p)
    p.gemm(a, b, seeds)
    fn = p.fn()
    (ph,) = phases(fn, analyze(fn))
    assert (ph.geometry, ph.chain_count, ph.dense) == ("32x16x64", 4, True)
    assert ph.notes == [f"3 chain(s) finished before the phase's last mma: an epilogue reads "
                        f"their accumulators between its mma (s{ph.first + 2}..s{ph.last - 4})"]
    assert _both(fn) == [8]


def test_the_next_gemm_reading_the_epilogue_is_a_new_phase():
    """Same B fragments (registers and values) as the phase, A made from its results two
    statements away from the accumulators: a new phase, started where the last tile's
    epilogue first reads an accumulator."""
    p = _Prog()
    a, b, seeds = _layer_start(p)
    x = p.gemm(a, b, seeds)
    a2 = [[p.requant(x[m, 0] + x[m, 1])] + [p.requant(x[m, 1] + x[m, 0])]
          for m in range(2)]
    p.gemm(a2, b, seeds)
    fn = p.fn()
    ps = phases(fn, analyze(fn))
    assert [len(q.mmas) for q in ps] == [8, 8]
    assert ps[1].start_reason == "epilogue reads an accumulator"
    assert (ps[1].start_at, ps[1].start_register) == (ps[0].last + 1, ps[0].mmas[-1].d[0])
    assert _both(fn) == [8, 8]


def _shared_a(p: _Prog, base: int = 0) -> list:
    """A fragments a[m][k] of two m-tiles loaded from the shared staging area (smem)."""
    a = [[[] for _ in range(2)] for _ in range(2)]
    for m in range(2):
        for k in range(2):
            a[m][k] = regs = p.r(4)
            for j, r in enumerate(regs):
                p.lines.append(f"\tld.shared.u32 %r{r}, [smem+{base + 64 * m + 16 * k + 4 * j}];")
    return a


def test_the_next_gemm_reading_the_epilogue_through_memory_is_a_new_phase():
    """Both GEMMs load A from the shared staging area, with the same B: the epilogue stores
    its results there and the second GEMM loads from there (what the Swin kernels do). Any
    load of writable memory after such a store may read it (no alias analysis)."""
    p = _Prog()
    _a, b, seeds = _layer_start(p)
    x = p.gemm(_shared_a(p), b, seeds)
    q = p.requant(x[0, 0] + x[0, 1] + x[1, 0] + x[1, 1])
    for k, r in enumerate(q):
        p.lines.append(f"\tst.shared.u32 [smem+{512 + 4 * k}], %r{r};")
    p.lines.append("\tbar.sync 0;")
    p.gemm(_shared_a(p, 128), b, seeds)
    assert _both(p.fn()) == [8, 8]
    # without the store, m-tiles 2 and 3 of the same GEMM: one 64x16x64 phase
    p = _Prog()
    _a, b, seeds = _layer_start(p)
    p.gemm(_shared_a(p), b, seeds)
    p.lines.append("\tbar.sync 0;")
    p.gemm(_shared_a(p, 128), b, seeds)
    fn = p.fn()
    (ph,) = phases(fn, analyze(fn))
    assert (ph.geometry, ph.dense) == ("64x16x64", True)
    assert _both(fn) == [16]


def test_an_mma_guarded_by_the_epilogue_is_a_new_phase():
    p = _Prog()
    a, b, seeds = _layer_start(p, mt=1)
    x = p.gemm(a, b, seeds)
    p.lines.append(f"\tsetp.gt.f32 %p1, %f{x[0, 0][0]}, 0f00000000;")
    p.mma(a[0][0], b[0][0], seeds[0], guard="%p1")
    assert _both(p.fn()) == [4, 1]


def test_continuing_a_chain_the_epilogue_read_is_a_new_phase():
    """The epilogue looked at a partial sum (k-slice 0 of tile (0, 0)) and the chain goes on:
    the rest may depend on what the epilogue did with it."""
    p = _Prog()
    a, b, seeds = _layer_start(p, mt=1, nt=1)
    d = p.mma(a[0][0], b[0][0], seeds[0])
    p.to_f32(d)
    p.mma(a[0][1], b[0][1], d)
    assert _both(p.fn()) == [1, 1]


def test_another_gemm_on_other_weights_is_a_new_phase():
    """Same A fragments (the same x), B from another pointer (%rd6): another GEMM, though it
    reads nothing of the first one's epilogue (with an analysis, which knows the roots)."""
    p = _Prog()
    a, b, seeds = _layer_start(p, mt=1)
    p.gemm(a, b, seeds)
    b2 = [[p.load("%rd6", 8 * (n * 2 + k), 2) for k in range(2)] for n in range(2)]
    seeds2 = [2 * p.load("%rd6", 4096 + 4 * n, 1) for n in range(2)]
    p.gemm(a, b2, seeds2)
    fn = p.fn()
    assert [len(q.mmas) for q in phases(fn, analyze(fn))] == [4, 4]


def test_a_gemm_sharing_no_operand_is_a_new_phase():
    """A and B from the same pointers as the phase's, but no fragment or seed in common."""
    p = _Prog()
    a, b, seeds = _layer_start(p, mt=1)
    p.gemm(a, b, seeds)
    a2 = [[p.load("%rd4", 512 + 16 * k, 4) for k in range(2)]]
    b2 = [[p.load("%rd5", 1024 + 8 * (n * 2 + k), 2) for k in range(2)] for n in range(2)]
    seeds2 = [2 * p.load("%rd5", 8192 + 4 * n, 1) for n in range(2)]
    p.gemm(a2, b2, seeds2)
    assert _both(p.fn()) == [4, 4]


def test_without_an_epilogue_read_nothing_changes():
    """The rule only ever keeps together what an epilogue read would have split: with the
    conversions after the GEMM, one phase, and the second GEMM after them a new one."""
    p = _Prog()
    a, b, seeds = _layer_start(p)
    x = p.gemm(a, b, seeds, early=False)
    a2 = [[p.requant(x[m, 0] + x[m, 1])] * 2 for m in range(2)]
    p.gemm(a2, b, seeds, early=False)
    fn = p.fn()
    ps = phases(fn, analyze(fn))
    assert [len(q.mmas) for q in ps] == [8, 8] and not ps[0].notes
