"""The gfx12 WMMA body (`body new --lang hip --mma wmma`): the RDNA4 layout table, the WMMA
program's pairing, a host emulation of one wave running the generated body (every WMMA
operand register checked against the matrices the test fed in), and the gfx1201 compile
(clang-19 + llc-19: v_wmma present, no cross-lane permutes, no spills)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, ROOT, require_clang19

from rrsplice.body import BodyError, new_body, plan_body
from rrsplice.body.wmma import wmma_program
from rrsplice.cli import main
from rrsplice.fragments import rdna4_layout as rl
from rrsplice.workflow.scaffold import new_recipe

TINY = FIXTURES / "swin_tiny_sm89.ptx"
sys.path.insert(0, str(ROOT / "scripts"))


# ------------------------------------------------------------------ the layout table

@pytest.mark.parametrize("matrix", ["A", "B", "C", "D"])
def test_rdna4_every_element_exactly_once(matrix):
    lay = rl.layout(matrix)
    slots = lay.slots
    assert len(slots) == 32 * lay.regs * lay.per_reg == 256
    seen = [(s.row, s.col) for s in slots]
    assert len(set(seen)) == len(seen), "some element is held twice"
    assert set(seen) == {(r, c) for r in range(16) for c in range(16)}
    for s in slots[::5]:
        assert lay.owner(s.row, s.col) == (s.lane, s.reg, s.elem)


def _bits_a(lane, reg, byte):
    """A second transcription, bit by bit: the lane's low four bits are the row, lane bit 4
    is k bit 3, the register k bit 2, the byte k bits 0-1."""
    return lane & 0xF, ((lane >> 4) & 1) << 3 | reg << 2 | byte


def _bits_c(lane, vgpr, _elem):
    """Accumulators: lane bits 0-3 the column, lane bit 4 row bit 3, the VGPR row bits 0-2."""
    return ((lane >> 4) & 1) << 3 | vgpr, lane & 0xF


def test_rdna4_table_matches_an_independent_transcription():
    a, b, c = rl.layout("A"), rl.layout("B"), rl.layout("C")
    for s in a.slots:
        assert (s.row, s.col) == _bits_a(s.lane, s.reg, s.elem)
    for s in b.slots:                          # B is K x N: (k, n) = A's (row, k) swapped
        row, k = _bits_a(s.lane, s.reg, s.elem)
        assert (s.row, s.col) == (k, row)
    for s in c.slots:
        assert (s.row, s.col) == _bits_c(s.lane, s.reg, s.elem)
    # literal facts: lane 17's second register, byte 2 is A row 1, k 8 + 4 + 2
    assert a.coord(17, 1, 2) == (1, 14) and b.coord(17, 1, 2) == (14, 1)
    assert c.coord(16, 0, 0) == (8, 0) and c.coord(31, 7, 0) == (15, 15)
    assert c.coord(5, 3, 0) == (3, 5)


# ------------------------------------------------------------------ the WMMA program

@pytest.fixture(scope="module")
def tiny_p1(tmp_path_factory):
    d = tmp_path_factory.mktemp("wp1")
    new_recipe("p1", TINY, "s342-s405", abi="scratch", out=d / "p1.py", occupancy=False)
    return d / "p1.py"


def test_pairs_are_n8_halves_of_one_wmma_tile_and_cover_every_mma_once(tiny_p1, tmp_path):
    res = new_body(tiny_p1, "hip", tmp_path / "b.hip")
    assert res.mma == "wmma"
    text = res.body.read_text()
    pairs = re.findall(r"\*   m (\d+)\.\.\d+, k (\d+)\.\.\d+: (s\d+) \(n (\d+)\.\.\d+\) \+ "
                       r"(s\d+) \(n (\d+)\.\.\d+\)", text)
    assert len(pairs) == 32                       # 64 mma, two per WMMA pair
    named = [x for p in pairs for x in (p[2], p[4])]
    assert sorted(named) == sorted(f"s{m.index}" for m in res.plan.phase.mmas)
    # each mma's own tile, from its statement and the fragment map (A rows, B columns, k)
    from rrsplice.fragments.fragmap import phase_map
    from rrsplice.infra.cache import load_analysis, load_module
    from rrsplice.ptx.select import select_function
    m = load_module(TINY)
    fn, _ = select_function(m, None)
    pm = phase_map(fn, load_analysis(m, fn), res.plan.phase)
    a_of = {f.reg: f for f in pm.a}
    b_of = {f.reg: f for f in pm.b}
    rows = {f"s{x.index}": a_of[x.a[0]].row_base for x in res.plan.phase.mmas}
    cols = {f"s{x.index}": b_of[x.b[0]].col_base for x in res.plan.phase.mmas}
    ks = {f"s{x.index}": b_of[x.b[0]].row_base for x in res.plan.phase.mmas}
    for m0, k0, lo, n_lo, hi, n_hi in pairs:
        assert rows[lo] == rows[hi] == int(m0) and ks[lo] == ks[hi] == int(k0)
        assert (cols[lo], cols[hi]) == (int(n_lo), int(n_hi)) and int(n_lo) % 16 == 0
        assert int(n_hi) == int(n_lo) + 8
    assert text.count("rr_wmma_tile(") == 4       # one loop per n16 block, not unrolled


def test_a_chain_the_program_cannot_express_is_refused(tiny_p1):
    plan = plan_body(tiny_p1)
    s = plan.steps[1]                              # the second step of chain 1 ...
    s.c = plan.steps[5].c                          # ... now accumulates another chain's D
    with pytest.raises(BodyError, match=f"{s.sid} accumulates .* not .*D.*--mma scalar"):
        wmma_program(plan)


def test_cli_mma_choice(tiny_p1, tmp_path):
    r = CliRunner().invoke(main, ["body", "new", str(tiny_p1), "--lang", "hip", "--mma",
                                  "scalar", "-o", str(tmp_path / "s.hip")])
    assert r.exit_code == 0, r.output
    scalar = (tmp_path / "s.hip").read_text()
    assert "rr_mma_e4m3_f16(" in scalar and "rr_wmma_tile(" not in scalar
    assert "rr_wmma" not in (tmp_path / "rr_mma.h").read_text()
    r = CliRunner().invoke(main, ["body", "new", str(tiny_p1), "--lang", "hip", "-o",
                                  str(tmp_path / "w.hip"), "--json"])
    assert r.exit_code == 0 and '"mma_mode": "wmma"' in r.output
    assert "rr_mma_e4m3_f16(" not in (tmp_path / "w.hip").read_text()
    r = CliRunner().invoke(main, ["body", "new", str(tiny_p1), "--mma", "wmma", "-o",
                                  str(tmp_path / "c.cu")])
    assert r.exit_code == 2 and "--lang hip" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "c.cu").exists()


@pytest.mark.slow
def test_a_region_with_its_own_b_loads_is_a_wmma_body_only(tmp_path):
    """0021 phase 19: one `ld.global.nc` of B inside the cut, one before it that `recipe new`
    leaves for the body to repeat from the passed %rd32; `--mma wmma` reads both itself, B
    straight from the weight image; CUDA and the scalar fallback still refuse the region."""
    fx = FIXTURES / "0021-PREPASS_ENTRYPOINT_NAME.ptx"
    new_recipe("p19", fx, "s12326-s12332", abi="scratch", out=tmp_path / "p19.py",
               occupancy=False)
    with pytest.raises(BodyError, match="that are not mma"):
        plan_body(tmp_path / "p19.py")
    with pytest.raises(BodyError, match="that are not mma"):
        new_body(tmp_path / "p19.py", "hip", tmp_path / "s.hip", mma="scalar")
    plan = plan_body(tmp_path / "p19.py", loads=True)
    assert [ld.index < 12326 for ld in plan.loads] == [True, False]
    assert {a.role for a in plan.args} >= {"global", "A", "C", "scratch"}
    assert all(plan.loaded[b].matrix == "B" for s in plan.steps for b in s.b)
    prog = wmma_program(plan)
    assert prog.direct is not None and prog.direct.base == plan.args[14].name
    text = new_body(tmp_path / "p19.py", "hip", tmp_path / "w.hip").body.read_text()
    assert "rr_stage_b(" not in text and "rr_wmma_load_b_global(wb, " in text


def test_direct_b_reads_every_wmma_b_word_where_its_nvidia_owner_loaded_it(tiny_p1):
    """B straight from the weight image, with per-lane addresses (tiny's B loads: 16 bytes a
    lane, `W + 16 tid.x + 8192 tid.z + c`): every WMMA B register word of every lane, block
    and k16 tile is addressed at the bytes the PTX load of its NVIDIA owner lane reads, the
    owner by the ISA layout written out here (`_nv_b`)."""
    from types import SimpleNamespace

    from rrsplice.body.plan import Load
    from rrsplice.body.wmma_b import direct_b
    from rrsplice.infra.cache import load_module
    from rrsplice.ptx.select import select_function
    plan = plan_body(tiny_p1)
    fn, _ = select_function(load_module(plan.module), None)
    loads, loaded, frag_at = {}, {}, {}
    for a in plan.args:
        if a.role != "B":
            continue
        f, src = a.frag, a.frag.source
        st = fn.statements[src.load - 1]
        regs = tuple(r.name for r in st.operands[0].items)
        pos = regs.index(f.reg)
        # one base for all: R(l) = W + 16 l (+ warp term); each load at its own constant
        loads.setdefault(src.load, Load(st.sid, st.line, src.load, "w",
                                        src.offset(0) - 4 * pos, regs, regs, st.text))
        loaded[f.reg] = f
        frag_at[(f.row_base, f.col_base, f.index)] = f
    steps = [SimpleNamespace(b=tuple(plan.frag(b).reg for b in s.b)) for s in plan.steps]
    fake = SimpleNamespace(steps=steps, loads=sorted(loads.values(), key=lambda x: x.index),
                           loaded=loaded)
    d = direct_b(fake, range(0, plan.n, 16), plan.k)
    assert d.why is None and any(d.lane_bits)
    checked = 0
    for n0 in range(0, plan.n, 16):
        for kb in range(plan.k // 16):
            for r in range(2):
                for lane in range(32):
                    k, n = 16 * kb + 8 * (lane >> 4) + 4 * r, n0 + (lane & 15)
                    owner = next(x for x in range(32) for j in range(2)
                                 if _nv_b(x, j, 0) == (k % 32, n % 8))
                    j = next(j for j in range(2) if _nv_b(owner, j, 0) == (k % 32, n % 8))
                    f = frag_at[(32 * (k // 32), 8 * (n // 8), j)]
                    want = f.source.offset(owner)           # W-relative, byte e = 0
                    got = 16 * lane + d.lane_offset(lane) + d.words[(n0, kb)][r]
                    assert got == want, (n0, kb, r, lane)
                    checked += 1
    assert checked == (plan.n // 16) * (plan.k // 16) * 2 * 32


# ------------------------------------------------------------------ one wave on the host

def _nv_a(lane, reg, e):
    """PTX ISA m16n8k32 8-bit A fragment, written out here: (row, k) in the tile."""
    g, t = lane >> 2, lane & 3
    return g + 8 * (reg & 1), 4 * t + 16 * (reg >> 1) + e


def _nv_b(lane, reg, e):
    g, t = lane >> 2, lane & 3
    return 4 * t + 16 * reg + e, g                # (k, n)


def _nv_cd(lane, reg, e):
    g, t = lane >> 2, lane & 3
    return g + 8 * reg, 2 * t + e                 # (row, n), f16 element e of f16x2 reg


def _e4m3(b):
    b = np.asarray(b, dtype=np.int64)
    s = np.where(b & 0x80, -1.0, 1.0)
    e, m = (b >> 3) & 0xF, b & 7
    return s * np.where(e == 0, m * 2.0 ** -9, (8 + m) * 2.0 ** (e - 10.0))


_STANDIN = r"""
#include <pthread.h>
#include <stdio.h>
static pthread_barrier_t rr_bar;
static __thread int rr_lane;
static rr_u8 rr_window[1 << 16];
rr_u32 rr_host_tid(void) { return (rr_u32)rr_lane; }
void rr_host_syncwarp(void) { pthread_barrier_wait(&rr_bar); }
rr_u8 *rr_host_shared(rr_u32 addr) { return rr_window + addr; }
static rr_u64 rr_wa[32], rr_wb[32];
static rr_acc8 rr_wc[32];
/* the stand-in for the WMMA builtin: every lane's operands seen at once, D = A B + C exactly,
 * A[m][k] = byte (k & 7) of lane m + 16 (k >> 3)'s operand, B[k][n] likewise with n,
 * accumulator v of lane l = (row v + 8 (l >> 4), column l & 15) */
static double rr_byte(rr_u64 v, int k) { return rr_e4m3_to_f64((rr_u32)(v >> (8 * (k & 7))) & 0xff); }
rr_acc8 rr_host_wmma_fp8(rr_u64 a, rr_u64 b, rr_acc8 c, int lane)
{
    rr_wa[lane] = a; rr_wb[lane] = b; rr_wc[lane] = c;
    pthread_barrier_wait(&rr_bar);
    if (lane == 0) {
        printf("W");
        for (int l = 0; l < 32; ++l) printf(" %llu", (unsigned long long)rr_wa[l]);
        for (int l = 0; l < 32; ++l) printf(" %llu", (unsigned long long)rr_wb[l]);
        printf("\n");
    }
    rr_acc8 d;
    for (int v = 0; v < 8; ++v) {
        const int m = v + 8 * (lane >> 4), n = lane & 15;
        double s = rr_wc[lane][v];
        for (int k = 0; k < 16; ++k)
            s += rr_byte(rr_wa[m + 16 * (k >> 3)], k) * rr_byte(rr_wb[n + 16 * (k >> 3)], k);
        d[v] = s;
    }
    pthread_barrier_wait(&rr_bar);
    return d;
}
"""


def _wave_program(res, values, base: int) -> str:
    """The host program: 32 threads call the body; an address argument of the region's loads
    is the weight buffer (read from argv[1]) plus the lane's offset in `values`."""
    p = res.plan
    nargs = len(p.args)
    lines = ["#define RR_HOST_TEST 1", "#define RR_HOST_WAVE 1", '#include "rr_mma.h"', _STANDIN,
             f'#include "{res.body.name}"', "static rr_u8 rr_weights[1 << 20];",
             f"static const unsigned long long rr_args[{nargs}][32] = {{"]
    for a in p.args:
        lines.append("  {" + ", ".join(str(v) for v in values[a.name]) + "},")

    def arg(i, a):
        if a.role == "global":
            return f"(rr_u64)(__SIZE_TYPE__)rr_weights + rr_args[{i}][rr_lane]"
        return f"({a.c_type})rr_args[{i}][rr_lane]"
    lines += ["};", "static void *rr_run(void *x)", "{",
              "    rr_lane = (int)(long)x;",
              f"    {p.callee}(" + ", ".join(arg(i, a) for i, a in enumerate(p.args)) + ");",
              "    return 0;", "}", "int main(int argc, char **argv)", "{",
              "    FILE *w = argc > 1 ? fopen(argv[1], \"rb\") : 0;",
              "    if (w) { if (fread(rr_weights, 1, sizeof rr_weights, w) == 0) return 2; "
              "fclose(w); }",
              "    pthread_t th[32];", "    pthread_barrier_init(&rr_bar, 0, 32);",
              "    for (long l = 0; l < 32; ++l) pthread_create(&th[l], 0, rr_run, (void *)l);",
              "    for (int l = 0; l < 32; ++l) pthread_join(th[l], 0);",
              "    for (int l = 0; l < 32; ++l) {"]
    for r in p.rets:
        lines.append(f'        {{ rr_u32 v; __builtin_memcpy(&v, rr_window + {base} + l * '
                     f'{p.stride} + {r.offset}, 4); printf("R {r.reg} %d %u\\n", l, v); }}')
    lines += ["    }", "    return 0;", "}", ""]
    return "\n".join(lines)


def _weight_image(p, b_mat, rng) -> tuple:
    """The weight buffer for the body's own loads (random bytes): lane l of a load reads its
    words at R(l) + offset + 4 pos, R(l) the lane's address argument (its offset in the
    buffer: the load's per-lane address, rrsplice.analysis.laneaddr, less the load's own
    offset). The B elements those words hold are written into `b_mat` by the ISA layout
    written out here (`_nv_b`), so the matrix the WMMAs must see is what the PTX's own loads
    deliver. Returns ({address argument: [offset per lane], "image": bytearray},
    {FragReg: [word per lane]} of the loaded fragments)."""
    # e4m3 bytes without NaN, magnitudes <= 7.5 (as the matrices); as f16 (C seeds), < 32
    pick = np.array([b for b in range(256) if ((b >> 3) & 0xF) <= 9], dtype=np.uint8)
    image = bytearray(rng.choice(pick, 1 << 20).tobytes())
    out: dict = {"image": image}
    frag_val: dict = {}
    for ld in p.loads:
        rlin = None
        for pos, name in enumerate(ld.names):
            f = p.loaded.get(name)
            if f is not None:
                got = [f.source.offset(lane) - ld.offset - 4 * pos for lane in range(32)]
                assert rlin in (None, got), "the loads of one address disagree on it"
                rlin = got
        if rlin is None:                      # no word of it is a fragment of the phase
            continue
        assert min(rlin) >= 0 and max(rlin) + ld.offset + 16 < len(image)
        assert out.setdefault(ld.base, rlin) == rlin
        for pos, name in enumerate(ld.names):
            f = p.loaded.get(name)
            if f is None:
                continue
            words = []
            for lane in range(32):
                at = rlin[lane] + ld.offset + 4 * pos
                words.append(int.from_bytes(image[at:at + 4], "little"))
                if f.matrix == "B":
                    for e in range(4):
                        k, n = _nv_b(lane, f.index, e)
                        b_mat[f.row_base + k, f.col_base + n] = (words[-1] >> (8 * e)) & 0xFF
            frag_val[f] = words
    return out, frag_val


def _phase_map(res):
    from rrsplice.fragments.fragmap import phase_map
    from rrsplice.infra.cache import load_analysis, load_module
    from rrsplice.ptx.select import select_function
    m = load_module(res.plan.module)
    fn, _ = select_function(m, None)
    return phase_map(fn, load_analysis(m, fn), res.plan.phase)


def emulate_phase(recipe: Path, tmp: Path, seed: int = 0):
    """Run the phase's generated body for one wave on the host; check every WMMA operand and
    every returned register. Returns the number of WMMAs."""
    res = new_body(recipe, "hip", tmp / (recipe.stem + ".hip"))
    p, pm = res.plan, _phase_map(res)
    rng = np.random.default_rng(seed)
    # e4m3 without NaN, magnitudes <= 7.5 (exponent field <= 9): no f16 overflow in a chain
    pick = np.array([b for b in range(256) if ((b >> 3) & 0xF) <= 9])
    a_mat = rng.choice(pick, (p.m, p.k)).astype(np.uint8)
    b_mat = rng.choice(pick, (p.k, p.n)).astype(np.uint8)
    base = 0x400
    values = {}

    weights, frag_val = _weight_image(p, b_mat, rng)
    for a in p.args:
        f = a.frag
        if a.role == "global":
            values[a.name] = weights[a.name]
        elif a.role == "A":
            values[a.name] = [sum(int(a_mat[f.row_base + _nv_a(l, f.index, e)[0],
                                            f.col_base + _nv_a(l, f.index, e)[1]]) << (8 * e)
                                  for e in range(4)) for l in range(32)]
        elif a.role == "B":
            values[a.name] = [sum(int(b_mat[f.row_base + _nv_b(l, f.index, e)[0],
                                            f.col_base + _nv_b(l, f.index, e)[1]]) << (8 * e)
                                  for e in range(4)) for l in range(32)]
        elif a.role == "C":                       # f16 seeds in [-4, 4), one value per lane
            h = (rng.integers(-4096, 4096, 64) / 1024).astype(np.float16).view(np.uint16)
            values[a.name] = [int(h[2 * l]) | int(h[2 * l + 1]) << 16 for l in range(32)]
        elif a.role == "scratch":
            values[a.name] = [base] * 32
        else:
            values[a.name] = [0] * 32
    # the C seed matrix, from the registers the chains start from
    c_mat = np.full((p.m, p.n), np.nan)
    reg_val = {a.reg: values[a.name] for a in p.args if a.reg}
    for f in pm.c:
        held = frag_val.get(f) or next(      # loaded by the body (either C operand) ...
            (v for g, v in frag_val.items() if (g.reg, g.source) == (f.reg, f.source)),
            None) or reg_val[f.reg]          # ... or passed
        for l in range(32):
            for e in range(2):
                r, n = _nv_cd(l, f.index, e)
                c_mat[f.row_base + r, f.col_base + n] = np.uint16(
                    (held[l] >> (16 * e)) & 0xFFFF).view(np.float16)
    assert not np.isnan(c_mat).any()
    src = tmp / (recipe.stem + "_wave.cpp")
    src.write_text(_wave_program(res, values, base))
    exe = tmp / (recipe.stem + "_wave")
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    subprocess.run([cxx, "-O1", "-std=c++17", "-pthread", "-I", str(tmp), str(src), "-o",
                    str(exe)], check=True, capture_output=True, text=True)
    wfile = tmp / (recipe.stem + "_weights.bin")
    wfile.write_bytes(bytes(weights["image"]))
    out = subprocess.run([str(exe), str(wfile)], check=True, capture_output=True,
                         text=True).stdout
    calls, rets = [], {}
    for line in out.splitlines():
        w = line.split()
        if w[0] == "W":
            v = [int(x) for x in w[1:]]
            calls.append((v[:32], v[32:]))
        else:
            rets[(w[1], int(w[2]))] = int(w[3])
    # every WMMA operand register: exactly a 16x16 block of B^T and of A^T (the body computes
    # each tile transposed, D^T = B^T A^T + C^T), in the RDNA4 layout (first operand X[r][k]
    # = byte k & 7 of lane r + 16 (k >> 3); the second Y[k][c] likewise with c), read off
    # the lanes
    seen = []
    for x_regs, y_regs in calls:
        wx = np.array([[(x_regs[r + 16 * (k >> 3)] >> (8 * (k & 7))) & 0xFF for k in range(16)]
                       for r in range(16)], dtype=np.uint8)
        wy = np.array([[(y_regs[c + 16 * (k >> 3)] >> (8 * (k & 7))) & 0xFF for c in range(16)]
                       for k in range(16)], dtype=np.uint8)
        at = [(m0, k0) for m0 in range(0, p.m, 16) for k0 in range(0, p.k, 16)
              if (a_mat[m0:m0 + 16, k0:k0 + 16].T == wy).all()]
        bt = [(k0, n0) for k0 in range(0, p.k, 16) for n0 in range(0, p.n, 16)
              if (b_mat[k0:k0 + 16, n0:n0 + 16].T == wx).all()]
        assert len(at) == 1 and len(bt) == 1, "an operand is not one block of the matrix"
        assert at[0][1] == bt[0][0], "A and B of one WMMA at different k"
        seen.append((at[0][0], bt[0][1], at[0][1]))
    want = [(m0, n0, k0) for m0 in range(0, p.m, 16) for n0 in range(0, p.n, 16)
            for k0 in range(0, p.k, 16)]
    assert sorted(seen) == sorted(want), "every (m, n, k) WMMA tile exactly once"
    for m0, n0 in {(m, n) for m, n, _ in seen}:
        assert [k for m, n, k in seen if (m, n) == (m0, n0)] == list(range(0, p.k, 16))
    # the results: each returned register holds its D elements, the chain computed exactly
    # per m16n8k32 step and rounded to f16 once per step (float64 stands in for the hardware)
    d = c_mat.copy()
    prod = _e4m3(a_mat)[:, :, None] * _e4m3(b_mat)[None, :, :]     # m x k x n, exact
    for k0 in range(0, p.k, 32):
        d = (d + prod[:, k0:k0 + 32, :].sum(axis=1)).astype(np.float16).astype(np.float64)
    dh = d.astype(np.float16).view(np.uint16)
    final = {f.reg: f for f in pm.d}
    assert len(rets) == 32 * len(p.rets)
    for r in p.rets:
        f = final[r.reg]
        for l in range(32):
            want_v = 0
            for e in range(2):
                row, n = _nv_cd(l, f.index, e)
                want_v |= int(dh[f.row_base + row, f.col_base + n]) << (16 * e)
            assert rets[(r.reg, l)] == want_v, (r.reg, l)
    return len(calls)


def _fixture_phases():
    """(fixture, phase) for every GEMM phase of every fixture whose mma are m16n8k32 e4m3."""
    out = []
    for fx in sorted(FIXTURES.glob("*.ptx")):
        if fx.stat().st_size < 10000:
            continue
        out.append(fx.name)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("fixture", _fixture_phases())
def test_host_wave_emulation_every_phase(fixture, tmp_path):
    from rrsplice.analysis.mma import phases
    from rrsplice.infra.cache import load_analysis, load_module
    from rrsplice.ptx.select import select_function
    fx = FIXTURES / fixture
    m = load_module(fx)
    fn, _ = select_function(m, None)
    done, refused = 0, []
    for ph in phases(fn, load_analysis(m, fn)):
        name = "f" + re.sub(r"\W", "_", fx.stem) + f"_p{ph.index}"
        rec = tmp_path / f"{name}.py"
        new_recipe(name, fx, f"s{ph.first}-s{ph.last}", abi="scratch", out=rec,
                   occupancy=False)
        try:
            plan_body(rec, loads=True)
        except BodyError as e:                   # `body new` itself cannot cut this phase
            refused.append((ph.index, str(e)))
            continue
        n = emulate_phase(rec, tmp_path, seed=ph.index)
        assert n == len(ph.mmas)                 # two k16 WMMAs per pair of n8 mma
        done += 1
    assert done > 0, refused
    # what `body new --mma wmma` still refuses: regions with statements other than the mma
    # and their own fragment loads
    assert all("that are not mma" in why for _, why in refused), refused


# ------------------------------------------------------------------ gfx1201

def _tools():
    require_clang19()


@pytest.mark.slow
def test_wmma_body_compiles_for_gfx1201_without_permutes(tiny_p1, tmp_path):
    _tools()
    import bench_gfx12 as bench
    res = new_body(tiny_p1, "hip", tmp_path / "b.hip")
    kern = tmp_path / "k.hip"
    kern.write_text(bench.kernel_source(res.plan, res.body.name))
    # compiled alone the body has no kernel to place its LDS images in: llc traps them
    alone = bench.count(bench.function_asm(bench.compile_asm(res.body, tmp_path),
                                           res.plan.callee))
    assert alone["traps"] > 0
    c = bench.body_counts(kern, tmp_path, res.plan.callee)     # the call kept, as linked
    assert c["traps"] == 0 and c["ds_bpermute"] == 0 and c["v_cndmask"] == 0
    assert c["v_wmma"] == 64                     # 32 pairs of n8 mma, two k16 WMMAs each
    assert c["scratch_stores"] == 0              # no spills
    # C seeds: one 32-byte load per tile (two ds_load_b128), not one 16-bit load per VGPR
    assert "ds_load_u16" not in bench.function_asm(
        (tmp_path / "k_call.s").read_text(), res.plan.callee)
    kasm = bench.compile_asm(kern, tmp_path, bench.INLINE)
    k = bench.count(bench.function_asm(kasm, "rr_bench"))
    assert k["v_wmma"] == 64 and k["scratch_bytes"] == 0 and k["occupancy"] >= 1
    # the kernel descriptor's LDS: the test kernel's scratch array plus the body's images
    from rrsplice.body.wmma import lds_bytes
    lds = int(re.search(r"\.amdhsa_group_segment_fixed_size (\d+)", kasm).group(1))
    assert lds == 128 * res.plan.threads + lds_bytes(res.plan)


def test_images_that_do_not_fit_in_lds_are_refused(tiny_p1):
    from rrsplice.body.wmma import LDS_LIMIT, lds_bytes
    plan = plan_body(tiny_p1)
    # per warp: the B image (16 x 128 e4m3) and the f32 C seed image (32 x 16) that the f16
    # D image overlays; the A image in the scratch slots
    assert lds_bytes(plan) == 4 * (16 * 128 + 4 * 16 * 32) == 16384
    assert lds_bytes(plan, a_in_scratch=False) == 16384 + 4 * 32 * 128
    assert lds_bytes(plan, b_direct=True) == 4 * 4 * 16 * 32
    assert wmma_program(plan).slots is None      # A out of the slots would cost occupancy
    plan.warps = 32                              # a kernel without .maxntid: 1024 threads
    assert lds_bytes(plan) > LDS_LIMIT
    with pytest.raises(BodyError, match=r"98304 bytes of LDS for 32 warps"):   # f16 seeds
        wmma_program(plan)


def test_same_recipe_same_bytes(tiny_p1, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = new_body(tiny_p1, "hip", tmp_path / "a" / "b.hip")
    b = new_body(tiny_p1, "hip", tmp_path / "b" / "b.hip")
    assert a.body.read_bytes() == b.body.read_bytes()
    assert a.header.read_bytes() == b.header.read_bytes()
