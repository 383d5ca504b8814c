"""The bundled corpus: every fixture assembles with ptxas, and the seed stand-ins hold the
facts the seed recipe states about the users' real modules (checked through rrsplice's own
model, independently of the generator's checker)."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import FIXTURES

import rrsplice

# conformance/ has its own walk (tests/test_conformance.py)
GOOD = sorted(p for p in FIXTURES.rglob("*.ptx")
              if not {"bad", "out", "conformance"} & set(p.relative_to(FIXTURES).parts))
SEED = ["0021-PREPASS_ENTRYPOINT_NAME.ptx", "0022-PREPASS_ENTRYPOINT_NAME.ptx"]


def _jobs():
    """(fixture, arch) pairs: each fixture for its own .target, the sm_89 ones also for
    sm_90 (the GPU proof runs them on an H200), the seed stand-ins also for sm_120."""
    jobs = []
    for path in GOOD:
        target = rrsplice.parse(path).target.split(",")[0].strip()
        archs = {target}
        if target == "sm_89" and (path.name.startswith("swin_") or path.name in SEED):
            archs.add("sm_90")
        if path.name in SEED:
            archs.add("sm_120")
        jobs += [(path, arch) for arch in sorted(archs)]
    return jobs


@pytest.mark.slow
def test_corpus_is_complete():
    names = {p.name for p in GOOD}
    assert set(SEED) <= names
    real = [n for n in names if n.startswith("swin_")]
    assert len({n.rsplit("_", 1)[0] for n in real}) >= 3
    assert any(rrsplice.parse(FIXTURES / n).line_count >= 35000
               and sum(1 for _ in rrsplice.parse(FIXTURES / n).mma_statements()) >= 700
               for n in real)


@pytest.mark.slow
def test_every_fixture_assembles(ptxas_path):
    def run(job):
        path, arch = job
        proc = subprocess.run([str(ptxas_path), "-O0", f"-arch={arch}", "-c", str(path),
                               "-o", "/dev/null"], capture_output=True, text=True)
        return path.name, arch, proc.returncode, proc.stderr.strip()[:500]

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(run, _jobs()))
    failures = [r for r in results if r[2] != 0]
    assert not failures, failures
    assert len(results) >= len(GOOD)


@pytest.fixture(scope="module")
def dec2():
    m = rrsplice.parse(FIXTURES / SEED[0])
    return m, m.function("cuda_dldn_engine_swin_dec2_kernel")


@pytest.fixture(scope="module")
def dec1():
    m = rrsplice.parse(FIXTURES / SEED[1])
    return m, m.function("cuda_dldn_engine_swin_dec1_kernel")


def _mma(fn):
    return [st for st in fn.statements if st.base == "mma"]


def test_dec2_positions(dec2):
    m, fn = dec2
    mma = _mma(fn)
    assert len(mma) == 726
    assert (mma[0].sid, mma[0].line) == ("s452", 1535)
    assert (mma[-1].sid, mma[-1].line, mma[-1].end_line) == ("s15510", 36889, 36892)
    # CUT_CALL = (1535, 36893) holds exactly s452..s15510
    inside = [st.index for st in fn.statements if 1535 <= st.line and st.end_line < 36893]
    assert (inside[0], inside[-1]) == (452, 15510)
    assert [p.name for p in fn.params] == ["cuda_dldn_engine_swin_dec2_kernel_param_0"]
    assert fn.params[0].dims == (136,)
    assert (".maxntid", (32, 1, 4)) in fn.perf


def test_dec2_pointers_and_scratch(dec2):
    m, fn = dec2
    s1, s8 = fn.statement("s1"), fn.statement("s8")
    assert s1.operands[0].name == "%rd7"
    assert str(s1.operands[1]) == "cuda_dldn_engine_swin_dec2_kernel_param_0"
    assert s8.opcode == "cvta.to.global.u64" and s8.operands[0].name == "%rd32"
    loader = [st for st in fn.statements[:8] if st.opcode == "ld.param.u64"
              and st.operands[0].name == s8.operands[1].name]
    assert str(loader[-1].operands[1]) == "[cuda_dldn_engine_swin_dec2_kernel_param_0+40]"
    decls = {d.name: d for d in fn.decls()}
    smem = decls["_ZZ33cuda_dldn_engine_swin_dec2_kernel33DldnEngineSwinEncParamsStructBaseE4smem"]
    assert smem.space == ".shared" and smem.byte_size == 9600
    assert decls["%r"].count == 19372


def test_dec2_phase1_operands(dec2):
    _m, fn = dec2
    mma = _mma(fn)[:144]
    assert [st.index for st in mma] == list(range(452, 596))
    a_order = []
    for st in mma:
        for r in st.operands[1].items:
            if r.name not in a_order:
                a_order.append(r.name)
    expected_a = [f"%r{b + i}" for b in (1040, 1060, 1080, 1100, 1520, 1540, 1560, 1580,
                                         2000, 2020, 2040, 2060) for i in range(4)]
    assert a_order == expected_a
    assert [r.name for r in mma[-1].operands[1].items] == expected_a[-4:]
    seeds = {st.operands[3].items[0].name for st in mma[::4]}
    seed_loads = {st.operands[0].name: st.operands[1] for st in fn.statements[:451]
                  if st.opcode and st.opcode.startswith("ld.global") and
                  st.operands[0].kind == "reg" and st.operands[0].name in seeds}
    offsets = sorted((a.offset, r) for r, a in seed_loads.items())
    assert [o for o, _ in offsets] == list(range(49152, 49329, 16))
    assert [r for _, r in offsets] == ["%r1597", "%r1607", "%r1677", "%r1687", "%r1757",
                                       "%r1767", "%r1837", "%r1847", "%r1917", "%r1927",
                                       "%r1997", "%r2007"]
    assert {a.base.name for a in seed_loads.values()} == {"%rd32"}


def test_dec2_epilogue_reads_only_ret_regs(dec2):
    _m, fn = dec2
    written = set()
    for st in fn.statements[451:15510]:
        if st.is_instruction and st.operands and st.operands[0].kind in ("reg", "vec"):
            written |= {r.name for r in st.operands[0].registers()}
    last = _mma(fn)[-1]
    assert [r.name for r in last.operands[0].items] == ["%r19370", "%r19371"]
    # the epilogue's operands (sources) never name a region-only register but RET_REGS
    read_after = set()
    for st in fn.statements[15510:]:
        for op in st.operands[1:]:
            read_after |= {r.name for r in op.registers()}
        if st.guard:
            read_after.add(st.guard.reg.name)
    prologue_defs = set()
    for st in fn.statements[:451]:
        if st.operands and st.operands[0].kind in ("reg", "vec"):
            prologue_defs |= {r.name for r in st.operands[0].registers()}
    from_region = {r for r in read_after & written if r not in prologue_defs}
    assert {"%r19360", "%r19361", "%r19370", "%r19371"} <= from_region
    epilogue_texts = [st.opcode for st in fn.statements[15510:] if st.opcode]
    assert any(o.startswith("sust.b.2d") for o in epilogue_texts)
    assert sum(o.startswith("tex.2d") for o in epilogue_texts) == 2
    assert any(o.startswith("ex2.approx") for o in epilogue_texts)


def test_dec1_positions_and_registers(dec1):
    _m, fn = dec1
    mma = _mma(fn)
    assert (mma[0].sid, mma[0].line) == ("s403", 1486)
    assert (mma[-1].sid, mma[-1].end_line) == ("s15988", 38472)
    a_order = []
    for st in mma[:144]:
        for r in st.operands[1].items:
            if r.name not in a_order:
                a_order.append(r.name)
    assert a_order == [f"%r{b + i}" for b in (1084, 1104, 1124, 1564, 1584, 1604, 2044, 2064,
                                              2084) for i in range(4)]
    seeds = []
    for st in mma[:144]:
        c = st.operands[3].items[0].name
        if c not in seeds and not any(c in {r.name for r in o.operands[0].items} for o in mma[:144]):
            seeds.append(c)
    assert sorted(seeds) == sorted("%r1621 %r1631 %r1681 %r1691 %r1741 %r1751 %r1801 %r1811 "
                                   "%r1861 %r1871 %r1921 %r1931 %r1981 %r1991 %r2041 %r2051".split())
    decls = {d.name: d for d in fn.decls()}
    smem = decls["_ZZ33cuda_dldn_engine_swin_dec1_kernel33DldnEngineSwinEncParamsStructBaseE4smem"]
    assert smem.byte_size == 6400
