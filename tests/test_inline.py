"""`rrsplice body inline`: the lifted body's PTX in place of the spliced call.

The loop recipes (param ABI: arguments in, results back through a .param array, loops and
early exits inside the region) are applied, their regions lifted to C++ and compiled with
`nvcc -rdc=true -ptx`, and the body inlined into the patched kernel. The inlined kernel is
then run on the PTX interpreter (tests/ptx_interp.py) beside the original kernel, thread
by thread, from the same random inputs: every word each writes must agree. The interpreter
reads neither the inliner nor the lifter, so this is the inliner checked against the
kernel it replaces. The H200 runs of the swin kernels are in docs/proof.md.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import sys

import pytest
from conftest import FIXTURES, RECIPES, ROOT
from ptx_interp import ByteMemory, Machine
from ptx_interp import run as interp_run

from rrsplice.ptx.parser import parse
from rrsplice.workflow.inline import InlineError, inline_call

LOOPS = FIXTURES / "loops" / "loops_sm90.ptx"
KERNELS = {"early_break": "loops_early_break", "nested": "loops_nested",
           "search": "loops_search"}
IN, OUT, LOCAL = 0x1000, 0x8000, 0x100


def _rr(*args):
    r = subprocess.run([sys.executable, "-m", "rrsplice", *map(str, args)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def built(tmp_path_factory, ptxas_path):
    """kernel -> (patched path, body PTX path, inlined path), built once."""
    nvcc = shutil.which("nvcc")
    assert nvcc, "nvcc is needed"
    out = {}
    for kernel, recipe in KERNELS.items():
        d = tmp_path_factory.mktemp(kernel)
        _rr("apply", RECIPES / f"{recipe}.py", "-o", d / "patched.ptx")
        _rr("body", "new", RECIPES / f"{recipe}.py", "--staging", "registers",
            "-o", d / "body.cu")
        subprocess.run([nvcc, "-rdc=true", "-ptx", "-arch=sm_90", "-O3", "body.cu",
                        "-o", "body.ptx"], cwd=d, check=True, capture_output=True)
        _rr("body", "inline", d / "patched.ptx", d / "body.ptx", "-o", d / "inlined.ptx")
        r = subprocess.run([str(ptxas_path), "-arch=sm_90", str(d / "inlined.ptx"), "-o",
                            str(d / "inlined.cubin")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        out[kernel] = (d / "patched.ptx", d / "body.ptx", d / "inlined.ptx")
    return out


def _machine(fn, words, n, tid):
    m = Machine()
    m.special.update({"%tid.x": tid, "%ctaid.x": 1, "%ntid.x": 4})
    values = (IN, OUT, n)
    for p, v in zip(fn.params, values, strict=True):
        m.symbols[p.name] = ("param", 0)
        m.mem["param"][(p.name, 0)] = v
    for i, w in enumerate(words):
        m.mem["global"][IN + 4 * i] = w
    m.mem["local"] = ByteMemory(bytes(256), LOCAL)
    at = LOCAL
    for d in fn.decls():
        if d.space == ".local":
            m.symbols[d.name] = ("local", at)
            at += 64
    return m


def _words(rng, count):
    # mostly non-negative words, some negative ones: the early exits test the sign
    return [rng.getrandbits(31) if rng.random() > 0.2 else (1 << 32) - rng.randint(1, 9)
            for _ in range(count)]


def _outputs(fn, words, n, tid):
    m = _machine(fn, words, n, tid)
    assert interp_run(fn, m, max_steps=200_000) == "ret"
    return {a: v for a, v in m.mem["global"].items() if a >= OUT}


def _compare(original, inlined, seed, cases=12):
    rng = random.Random(seed)
    compared = differ = 0
    for _ in range(cases):
        n = rng.randint(1, 7)
        words = _words(rng, 8 * (n + 2) * 8)
        for tid in range(4):
            want = _outputs(original, words, n, tid)
            got = _outputs(inlined, words, n, tid)
            assert want, "the kernel wrote nothing"
            compared += len(want)
            differ += sum(got.get(a) != v for a, v in want.items()) + len(set(got) - set(want))
    return compared, differ


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_inlined_kernel_computes_what_the_original_computes(built, kernel):
    _, _, inlined = built[kernel]
    original = parse(LOOPS).function(kernel)
    fn = parse(inlined).function(kernel)
    assert not any(st.base == "call" for st in fn.statements)
    compared, differ = _compare(original, fn, seed=len(kernel))
    assert compared >= 48 and differ == 0, (compared, differ)


def test_the_comparison_sees_an_argument_passed_wrong(built):
    """Negative control: the inlined early_break with the values of its first two
    arguments exchanged must disagree with the original somewhere."""
    _, _, inlined = built["early_break"]
    text = inlined.read_text()
    movs = re.findall(r"mov\.b32 (%rri_\w+), (%r\d+);", text)
    assert len(movs) >= 2
    (d0, s0), (d1, s1) = movs[:2]
    bad = text.replace(f"mov.b32 {d0}, {s0};", "@@0").replace(f"mov.b32 {d1}, {s1};", "@@1")
    bad = bad.replace("@@0", f"mov.b32 {d0}, {s1};").replace("@@1", f"mov.b32 {d1}, {s0};")
    fn = parse(bad, filename="bad.ptx").function("early_break")
    _, differ = _compare(parse(LOOPS).function("early_break"), fn, seed=5)
    assert differ > 0


def test_results_come_back_through_a_local_array_the_caller_reads(built):
    _, _, inlined = built["early_break"]
    text = inlined.read_text()
    assert re.search(r"\.local \.align \d+ \.b8 rri_\w+_ret_\w+\[8\];", text)
    assert re.search(r"ld\.local\.b32\s+%r\d+, \[rri_\w+_ret_\w+\+4\];", text)
    assert ".extern .func" not in text and "st.param" not in text.split(".entry early_break")[1]


def test_refusals_name_the_reason(built, tmp_path):
    patched, body, _ = built["early_break"]
    other = built["nested"][1]
    with pytest.raises(InlineError, match="declares 0 functions the body module defines"):
        inline_call(parse(patched), parse(other))
    twice = patched.read_text()
    call = re.search(r"^\s*call\.uni[^\n]*\n", twice, re.M).group(0)
    twice = twice.replace(call, call + call)
    with pytest.raises(InlineError, match="called 2 times"):
        inline_call(parse(twice, filename="twice.ptx"), parse(body))


def test_cli_refusal_is_a_diagnostic_and_writes_nothing(built, tmp_path):
    patched, _, _ = built["early_break"]
    out = tmp_path / "never.ptx"
    r = subprocess.run([sys.executable, "-m", "rrsplice", "body", "inline", str(patched),
                        str(built["nested"][1]), "-o", str(out)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "error:" in r.stderr and "[cannot-inline]" in r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists()
