"""`rrsplice body new`: the generated native body's signature, staging, mma program and
return slots, checked against the recipe's `.extern`, the ISA's fragment placement (written
out here independently), the PTX's mma statements, and real compilers (nvcc/nvlink, and
clang-19 for the HIP side)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, RECIPES, ROOT

from rrsplice.body import BodyError, new_body
from rrsplice.check.text import parse_splice_text
from rrsplice.cli import main
from rrsplice.workflow.recipe import load_recipe
from rrsplice.workflow.scaffold import new_recipe

TINY = FIXTURES / "swin_tiny_sm89.ptx"
sys.path.insert(0, str(ROOT / "scripts" / "mma_probe"))
import models  # noqa: E402  (the scalar models of the mma experiment)

_WRAP = '''"""Phase-1 cut of tiny, passing one more (unused) .b64 pointer: the signature test."""
import importlib.util as _u
import pathlib as _p
_s = _u.spec_from_file_location("_base_p1", _p.Path(__file__).with_name("p1.py"))
base = _u.module_from_spec(_s)
_s.loader.exec_module(base)
base.OTHER_REGS = base.OTHER_REGS + ["%rd156"]
base.REG_TYPES = dict(base.REG_TYPES, **{"%rd156": ".b64"})
MODULE = base.MODULE
CALLEE = base.CALLEE
SCRATCH = base.SCRATCH
OWN_SCRATCH = base.OWN_SCRATCH
RET_STRIDE = base.RET_STRIDE
BODY = "d4r_p1.cu"


def recipe():
    return base.recipe()
'''


@pytest.fixture(scope="module")
def p1(tmp_path_factory):
    """tiny's phase 1 (s342-s405) as a scratch recipe (its own array), plus a variant that
    passes one more .b64 argument."""
    d = tmp_path_factory.mktemp("p1")
    new_recipe("p1", TINY, "s342-s405", abi="scratch", out=d / "p1.py", occupancy=False)
    (d / "p1_b64.py").write_text(_WRAP)
    return d


def _signature(text: str) -> list:
    """[(C type, name)] of the body's extern "C" function, in order."""
    m = re.search(r'extern "C" __device__ void (\w+)\((.*?)\)\n\{', text, re.S)
    params = re.findall(r"^\s+(rr_u32|rr_u64) (\w+)", m.group(2), re.M)
    return m.group(1), params


def _extern(recipe_path) -> tuple:
    rec = load_recipe(recipe_path)
    sp = parse_splice_text(rec.call, rec.extern)
    (name, f), = sp.externs.items()
    return name, [(p.name, p.type) for p in f.params]


@pytest.mark.parametrize("lang", ["cuda", "hip"])
def test_signature_is_the_extern_argument_for_argument(p1, tmp_path, lang):
    res = new_body(p1 / "p1_b64.py", lang, tmp_path / f"b.{lang}")
    name, params = _signature(res.body.read_text())
    ename, eparams = _extern(p1 / "p1_b64.py")
    assert name == ename == "d4r_p1"
    assert [n for _, n in params] == [n for n, _ in eparams]
    assert [t for t, _ in params] == [{".b32": "rr_u32", ".b64": "rr_u64"}[t]
                                      for _, t in eparams]
    assert params[-2] == ("rr_u64", "d4r_p1_p104")          # the extra pointer
    assert params[-1] == ("rr_u32", "d4r_p1_scratch")
    assert (tmp_path / "rr_mma.h").exists()


def _isa_a(lane: int, reg: int, e: int) -> tuple:
    """PTX ISA m16n8k32 8-bit A fragment, written out here: (row, k)."""
    g, t = lane >> 2, lane & 3
    return g + 8 * (reg & 1), 4 * t + 16 * (reg >> 1) + e


def _host_build(tmp_path, header_dir, source: str) -> Path:
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    src = tmp_path / "t.cpp"
    src.write_text(source)
    exe = tmp_path / "t"
    subprocess.run([cxx, "-O1", "-std=c++17", "-I", str(header_dir), str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    return exe


@pytest.mark.slow
def test_staging_round_trips_a_known_image(p1, tmp_path):
    res = new_body(p1 / "p1.py", "cuda", tmp_path / "b.cu")
    text = res.body.read_text()
    plan = res.plan
    stagings = re.findall(r"rr_stage_a\(img, \w+, lane, (\d+), (\d+), (\d+), (\w+)\);", text)
    assert len(stagings) == 32                       # 8 A fragments x 4 registers
    m, k = plan.m, plan.k
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, (m, k), dtype=np.uint8)
    # each staged register's value per lane, taken from the image by the ISA rule above
    vals = []
    for m0, k0, reg, _ in stagings:
        m0, k0, reg = int(m0), int(k0), int(reg)
        vals.append([sum(int(image[m0 + _isa_a(l, reg, e)[0], k0 + _isa_a(l, reg, e)[1]])
                         << (8 * e) for e in range(4)) for l in range(32)])
    prog = ['#define RR_HOST_TEST 1', '#include "rr_mma.h"', "#include <stdio.h>",
            f"static rr_u8 img[{m * k}];", "int main(void) {"]
    for (m0, k0, reg, _), v in zip(stagings, vals, strict=False):
        prog.append(f"  {{ const rr_u32 v[32] = {{{', '.join(map(str, v))}}};")
        prog.append(f"    for (int l = 0; l < 32; ++l) rr_stage_a(img, {k}, l, {m0}, {k0}, "
                    f"{reg}, v[l]); }}")
    prog.append(f"  for (int i = 0; i < {m * k}; ++i) printf(\"%u\\n\", img[i]);")
    for m0, k0, reg, _ in stagings:
        prog.append(f"  for (int l = 0; l < 32; ++l) printf(\"%u\\n\", "
                    f"rr_load_a(img, {k}, l, {m0}, {k0}, {reg}));")
    prog += ["  return 0;", "}"]
    exe = _host_build(tmp_path, res.header.parent, "\n".join(prog) + "\n")
    out = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True,
                                          check=True).stdout.split()]
    staged = np.array(out[:m * k], dtype=np.uint8).reshape(m, k)
    assert (staged == image).all()                   # every byte, exactly once
    loaded = out[m * k:]
    assert loaded == [x for v in vals for x in v]    # image -> operands: the same registers


def test_mma_steps_read_the_tiles_their_registers_were_staged_to(p1, tmp_path):
    from rrsplice.ptx.parser import parse
    res = new_body(p1 / "p1.py", "cuda", tmp_path / "b.cu")
    text = res.body.read_text()
    arg_reg = {a.name: a.reg for a in res.plan.args}
    staged = {arg_reg[n]: (int(m0), int(k0), int(r)) for m0, k0, r, n in
              re.findall(r"rr_stage_a\(img, \w+, lane, (\d+), (\d+), (\d+), (\w+)\);", text)}
    steps = re.findall(r"/\* (s\d+), line \d+: .*?\n\s+rr_mma_e4m3_f16\(img, \w+, (\d+), (\d+), "
                       r"(\w+(?:\[\d\])?), (\w+(?:\[\d\])?), (\w+(?:\[\d\])?), "
                       r"(\w+(?:\[\d\])?), lane", text)
    fn = next(f for f in parse(TINY).functions if f.has_body)
    assert len(steps) == 64
    for sid, m0, k0, b0, b1, c0, c1 in steps:
        st = fn.statement(sid)
        d, a, b, c = [[r.name for r in op.registers()] for op in st.operands]
        for j, r in enumerate(a):                    # A: the tile and register it was staged to
            assert staged[r] == (int(m0), int(k0), j)
        assert [arg_reg.get(x) for x in (b0, b1)] == b
        for x, r in zip((c0, c1), c, strict=False):                # C: a seed argument, or an earlier D
            assert arg_reg.get(x) == r or re.fullmatch(r"d_s\d+\[\d\]", x)


def test_results_are_stored_where_the_call_text_reads_them(p1, tmp_path):
    res = new_body(p1 / "p1.py", "cuda", tmp_path / "b.cu")
    text = res.body.read_text()
    rec = load_recipe(p1 / "p1.py")
    reads = dict((r, int(o)) for r, o in
                 re.findall(r"ld\.shared\.b32 (%r\d+), \[%rrs2\+(\d+)\];", rec.call))
    stores = dict((r, int(o)) for o, r in
                  re.findall(r"rr_st_shared_b32\(slot \+ (\d+)u, \w+\[\d\]\);   /\* (%r\d+)",
                             text))
    assert stores == reads and len(reads) == 32
    assert "const rr_u32 slot = d4r_p1_scratch + tid * 128u;" in text
    assert "mad.lo.s32 %rrs2, %rrs1, 128, %rrs0;" in rec.call


def _host_fallback(tmp_path, header_dir, a, b, c) -> np.ndarray:
    """The HIP scalar fallback built for the host: one 32-lane warp per tile, emulated."""
    tiles = a.shape[0]
    prog = ['#define RR_HOST_TEST 1', '#include "rr_mma.h"', "#include <stdio.h>",
            "int main(void) {", "  static rr_u8 img[512];"]
    for t in range(tiles):
        prog.append("  {")
        prog.append("    const rr_u8 a[512] = {" + ", ".join(map(str, a[t].ravel())) + "};")
        prog.append("    for (int i = 0; i < 512; ++i) img[i] = a[i];")
        # B fragments by the ISA rule: reg j holds k = 4t + 16j + e, column g
        bregs = [[sum(int(b[t, 4 * (l & 3) + 16 * j + e, l >> 2]) << (8 * e) for e in range(4))
                  for l in range(32)] for j in range(2)]
        cregs = [[int(c[t, (l >> 2) + 8 * j, 2 * (l & 3)]) | (int(c[t, (l >> 2) + 8 * j,
                                                                 2 * (l & 3) + 1]) << 16)
                  for l in range(32)] for j in range(2)]
        for j in range(2):
            prog.append(f"    {{ const rr_u32 v[32] = {{{', '.join(map(str, bregs[j]))}}}; "
                        f"for (int l = 0; l < 32; ++l) rr_host_b[{j}][l] = v[l]; }}")
        prog.append(f"    const rr_u32 c0[32] = {{{', '.join(map(str, cregs[0]))}}};")
        prog.append(f"    const rr_u32 c1[32] = {{{', '.join(map(str, cregs[1]))}}};")
        prog.append("    for (int l = 0; l < 32; ++l) { rr_u32 d[2]; rr_mma_e4m3_f16(img, 32, 0, "
                    "0, rr_host_b[0][l], rr_host_b[1][l], c0[l], c1[l], l, d); "
                    "printf(\"%u %u\\n\", d[0], d[1]); }")
        prog.append("  }")
    prog += ["  return 0;", "}"]
    exe = _host_build(tmp_path, header_dir, "\n".join(prog) + "\n")
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    vals = np.array([int(x) for x in out], dtype=np.uint64).reshape(tiles, 32, 2)
    d = np.zeros((tiles, 16, 8), np.uint16)
    for l in range(32):
        g, t_ = l >> 2, l & 3
        for j in range(2):
            d[:, g + 8 * j, 2 * t_] = vals[:, l, j] & 0xffff
            d[:, g + 8 * j, 2 * t_ + 1] = vals[:, l, j] >> 16
    return d


@pytest.mark.slow
def test_hip_fallback_is_the_exact_sum_model(p1, tmp_path):
    res = new_body(p1 / "p1.py", "hip", tmp_path / "b.hip")
    rng = np.random.default_rng(11)
    for cls in ("wide", "subnormal", "overflow", "cancel"):
        a, b, c = models.make_inputs(cls, 3, rng)
        d = _host_fallback(tmp_path, res.header.parent, a, b, c)
        want = models.model(models.products(a, b), c.view(np.float16).astype(np.float64))
        m, _, n = models.compare(d, want)
        assert m == n, (cls, n - m)


def _clang() -> str:
    exe = shutil.which("clang-19")
    if exe is None:
        msg = "clang-19 not found (apt-get install clang-19)"
        if os.environ.get("RRSPLICE_REQUIRE_CLANG") == "1":
            pytest.fail(msg + " and RRSPLICE_REQUIRE_CLANG=1")
        pytest.skip(msg)
    return exe


@pytest.mark.slow
def test_hip_body_compiles_for_gfx1201_with_the_extern_signature(p1, tmp_path):
    clang = _clang()
    res = new_body(p1 / "p1_b64.py", "hip", tmp_path / "b.hip")
    ll = tmp_path / "b.ll"
    p = subprocess.run([clang, "-x", "hip", "--offload-arch=gfx1201", "--cuda-device-only",
                        "-nogpulib", "-nogpuinc", "-fgpu-rdc", "-emit-llvm", "-S", "-O0",
                        str(res.body), "-o", str(ll)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    text = ll.read_text()
    m = re.search(r"^define (?!internal)[^@\n]*@(\w+)\(([^)]*)\)", text, re.M)
    assert m, "no exported function in the bitcode"
    name, args = m.group(1), [x.split()[0] for x in m.group(2).split(",")]
    ename, eparams = _extern(p1 / "p1_b64.py")
    assert name == ename
    assert args == [{".b32": "i32", ".b64": "i64"}[t] for _, t in eparams]


@pytest.mark.slow
def test_cuda_body_links_with_the_patched_module(p1, tmp_path, ptxas_path, nvlink_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        if os.environ.get("RRSPLICE_REQUIRE_PTXAS") == "1":
            pytest.fail("nvcc not found and RRSPLICE_REQUIRE_PTXAS=1")
        pytest.skip("nvcc not found")
    from rrsplice.workflow.splice import apply
    res = new_body(p1 / "p1.py", "cuda", tmp_path / "b.cu")
    patched = apply(p1 / "p1.py", out=tmp_path / "patched.ptx").output
    run = lambda *c: subprocess.run([str(x) for x in c], capture_output=True, text=True)  # noqa
    assert run(ptxas_path, "-c", "-arch=sm_90", patched, "-o", tmp_path / "p.o").returncode == 0
    p = run(nvcc, "-rdc=true", "-c", "-arch=sm_90", res.body, "-o", tmp_path / "b.o")
    assert p.returncode == 0, p.stderr[-2000:]
    p = run(nvlink_path, "-arch=sm_90", tmp_path / "p.o", tmp_path / "b.o", "-o",
            tmp_path / "linked.cubin")
    assert p.returncode == 0, p.stdout + p.stderr


def test_refuses_a_cut_that_is_not_one_phase(tmp_path):
    with pytest.raises(BodyError, match="not mma"):
        new_body(RECIPES / "swin_tiny_sm89.py", "cuda", tmp_path / "x.cu")
    assert not (tmp_path / "x.cu").exists() and not (tmp_path / "rr_mma.h").exists()


def test_cli(p1, tmp_path):
    r = CliRunner().invoke(main, ["body", "new", str(p1 / "p1.py"), "--lang", "hip", "-o",
                                  str(tmp_path / "b.hip"), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["mma"] == 64 and d["phase"] == 1 and len(d["returns"]) == 32
    assert d["args"][0]["map"] == "A[0..7][0..15]: row = g, k = 4t + e"
    r = CliRunner().invoke(main, ["body", "new", str(RECIPES / "swin_tiny_sm89.py"), "-o",
                                  str(tmp_path / "x.cu")])
    assert r.exit_code == 2 and "not mma" in r.output and "Traceback" not in r.output
