"""The lifter (rrsplice.lift): a whole region lifted to C++ runs on the host (the warp
harness, tests/warp_harness) and computes what the PTX interpreter (tests/ptx_interp.py) computes on the
same inputs; whole-region bodies of the real-compiler fixtures compile warning-free with
nvcc (sm_89, sm_90) and clang-19 for gfx1201; a form without a semantics row is refused
by name and place; generated names cannot collide."""

from __future__ import annotations

import random
import shutil
import subprocess
import textwrap

import pytest
from conftest import ROOT
from lift_region_run import host_loop_run
from ptx_interp import Machine
from ptx_interp import run as interp_run

from rrsplice import parse
from rrsplice.lift import LiftError, lift_region, names
from rrsplice.lift.function import lift_function

LOOPS = ROOT / "recipes" / "loops_nested.py"


def _param_regs(ptx: bytes) -> list:
    """[(param, register, C type)] of the outlined callee's parameter loads, in order."""
    mod = parse(ptx, filename="body.ptx")
    fn = next(f for f in mod.functions if f.has_body)
    loads = {st.operands[1].base.name: st.operands[0].name for st in fn.statements
             if st.opcode and st.opcode.startswith("ld.param")}
    return [(p.name, loads[p.name], "rr_u64" if p.type == ".b64" else "rr_u32")
            for p in fn.params]


def test_loops_nested_region_runs_on_the_host_as_the_interpreter_runs_it(tmp_path):
    """nested's whole loop nest (s16-s125: two loops, rem, global loads, early exits of
    the inner loop) against the interpreter, 25 random inputs."""
    body = lift_region(LOOPS, "registers")
    params = _param_regs(body.outlined_ptx)
    words_n = 64
    mod = parse(ROOT / "corpus_fixtures" / "loops" / "loops_sm90.ptx")
    fn = mod.function("nested")
    first, last = body.region
    rng = random.Random(7)
    cases = []
    for _ in range(25):
        words = [rng.getrandbits(32) for _ in range(words_n)]
        cases.append((words, {"%r26": rng.randint(1, 6), "%r83": rng.randint(0, 3),
                              "%r91": rng.getrandbits(32), "%rd2": rng.randint(0, 40)}))
    with host_loop_run(tmp_path, body, [t for _, _, t in params]) as run:
        for words, live in cases:
            m = Machine()
            live = dict(live, **{"%rd1": run.base})
            m.regs.update(live)
            for i, w in enumerate(words):
                m.mem["global"][run.base + 4 * i] = w
            assert interp_run(fn, m, first, last) == "exit"
            rets, after = run(words, [live[r] for _, r, _ in params])
            got = int.from_bytes(rets, "little")
            assert got == m.regs["%r91"], (live, got, m.regs["%r91"])
            assert after == words          # the region only reads memory


_BAD = textwrap.dedent("""\
    .version 8.7
    .target sm_90
    .address_size 64
    .visible .func f(.param .b32 a)
    {
        .reg .b32 %r<4>;
        ld.param.b32 %r1, [a];
        popc.b64 %r2, %r1;
        ret;
    }
    """)


def test_a_form_without_a_row_is_refused_by_name_and_place():
    mod = parse(_BAD.encode(), filename="bad.ptx")
    with pytest.raises(LiftError) as e:
        lift_function(mod.function("f"), "bad.ptx")
    msg = str(e.value)
    assert msg.startswith("bad.ptx:8:5: error: cannot lift `popc.b64 %r2, %r1;`")
    assert "(popc.b64)" in msg and "[lift-unsupported]" in msg


def test_refusal_inside_a_recipe_points_at_the_original_statement(tmp_path):
    """tex in swin_big's region is a form the table does not cover: the error names the
    fixture's own line."""
    from rrsplice.lift.lower import covers
    mod = parse(ROOT / "corpus_fixtures" / "swin_big_sm89.ptx")
    st = next(s for f in mod.functions for s in f.statements if s.opcode and
              s.opcode.startswith("tex."))
    assert covers(st) == "no semantics row"


@pytest.mark.parametrize("raw", ["%r5", "%rd12", "low@B3", "$L__BB1_2", "_x41_", "A", "if",
                                 "rr_mma", "%p_x1", "%p$x1"])
def test_generated_names_are_plain_identifiers_and_injective(raw):
    import re
    others = ["%r5", "%rd12", "low@B3", "$L__BB1_2", "_x41_", "A", "if", "rr_mma", "%p_x1",
              "%p$x1", "%p_x24_x1"]
    for fn in (names.register, names.label, names.param):
        out = fn(raw)
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", out)
        assert not out.startswith("rr_")
        assert len({fn(o) for o in others}) == len(set(o.lstrip("%") if fn is names.register
                                                       else o for o in others))


def test_callee_names_must_be_plain():
    with pytest.raises(ValueError):
        names.callee("while")
    with pytest.raises(ValueError):
        names.callee("f$x")
    assert names.callee("d4r_swin") == "d4r_swin"


def _compilers():
    return shutil.which("nvcc"), shutil.which("clang-19")


@pytest.mark.slow
@pytest.mark.parametrize("staging", ["registers", "image"])
def test_tiny_whole_region_compiles_warning_free(tmp_path, staging):
    nvcc, clang = _compilers()
    assert nvcc and clang, "nvcc and clang-19 are needed"
    body = lift_region(ROOT / "recipes" / "swin_tiny_sm89.py", staging)
    (tmp_path / "body.cu").write_text(body.text)
    (tmp_path / "rr_lift.h").write_text(body.header)
    if body.mma_header:
        (tmp_path / "rr_mma.h").write_text(body.mma_header)
    assert len(body.phases) == 7
    assert body.text.count("/* ==== phase ") == 7
    assert "epilogue: " in body.text
    for arch in ("sm_89", "sm_90"):
        r = subprocess.run([nvcc, "-O3", f"-arch={arch}", "-rdc=true", "-c", "body.cu",
                            "-o", f"b_{arch}.o"], cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0 and "warning" not in r.stderr, r.stderr[:2000]
    r = subprocess.run([clang, "-x", "hip", "--offload-arch=gfx1201", "-nogpuinc", "-nogpulib",
                        "-fgpu-rdc", "-O2", "-c", "body.cu", "-o", "b_hip.o"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr[:2000]
