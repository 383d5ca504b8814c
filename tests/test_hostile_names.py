"""Names a recipe or a module brings in, pasted into what rrsplice writes (issue 23.14):
`.extern` parameters named like C++ keywords or the body's own variables, a callee C++
cannot define, a module name holding a backslash in `recipe new`, a file name holding a
line break in `outline`'s comments, and `recipe port -o` errors that named a temporary
file."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rrsplice.workflow.scaffold import new_recipe

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "corpus_fixtures" / "swin_tiny_sm89.ptx"

# tiny's phase-1 recipe with its callee's parameters renamed (the call text and the
# .extern both): C++ keywords, the body's own locals and array, its row-size macro, the
# header's type, `main`, a `$` name, and a name the renaming itself would produce
_HOSTILE = '''"""p1 with parameter names C++ cannot take as they are."""
import importlib.util as _u
import pathlib as _p
import re as _re
_s = _u.spec_from_file_location("_base_p1", _p.Path(__file__).with_name("p1.py"))
base = _u.module_from_spec(_s)
_s.loader.exec_module(base)
MODULE = base.MODULE
CALLEE = base.CALLEE
SCRATCH = base.SCRATCH
OWN_SCRATCH = base.OWN_SCRATCH
RET_STRIDE = base.RET_STRIDE
# (p0-p31 carry A fragments, p32-p39 C, p40-p103 B)
NAMES = {"d4r_p1_p32": "lane", "d4r_p1_p40": "tid", "d4r_p1_p2": "img", "d4r_p1_p41": "slot",
         "d4r_p1_p4": "int", "d4r_p1_p33": "new", "d4r_p1_p6": "d_s342",
         "d4r_p1_p7": "rr_u32", "d4r_p1_p8": "D4R_P1_LDA", "d4r_p1_p9": "arg0_lane",
         "d4r_p1_p10": "main", "d4r_p1_p11": "$x", "d4r_p1_p12": "d4r_p1_a_image",
         "d4r_p1_p13": "__z", "d4r_p1_p14": "class"}
CALLEE_AS = None


def _rename(text):
    text = _re.sub(r"\\bd4r_p1_p\\d+\\b", lambda m: NAMES.get(m.group(0), m.group(0)),
                   text)
    return text if CALLEE_AS is None else _re.sub(r"\\bd4r_p1\\b", CALLEE_AS, text)


def recipe():
    d = base.recipe()
    return dict(d, call=_rename(d["call"]), extern=_rename(d["extern"]))
'''

# 32 host threads run the body as one warp: barriers for rr_syncwarp/rr_syncthreads, a
# byte array for .shared, and each mma step publishing its lane's B registers first (the
# header's host build reads the warp's B from rr_host_b)
_HARNESS = r'''
#define RR_HOST_TEST 1
#define __device__
#define __shared__
#include "rr_mma.h"
#include <barrier>
#include <cstdio>
#include <cstring>
#include <thread>
static thread_local rr_u32 host_tid;
static std::barrier<> warp_barrier(32);
static rr_u8 host_smem[65536];
static rr_u32 rr_linear_tid(void) { return host_tid; }
static void rr_syncwarp(void) { warp_barrier.arrive_and_wait(); }
static void rr_syncthreads(void) { warp_barrier.arrive_and_wait(); }
static void rr_st_shared_b32(rr_u32 addr, rr_u32 v) { std::memcpy(host_smem + addr, &v, 4); }
static rr_u8 *rr_shared_ptr(rr_u32 addr) { return host_smem + addr; }
static void host_mma(const rr_u8 *a, int lda, int m0, int k0, rr_u32 b0, rr_u32 b1,
                     rr_u32 c0, rr_u32 c1, int lane, rr_u32 *d)
{
    warp_barrier.arrive_and_wait();
    rr_host_b[0][lane] = b0;
    rr_host_b[1][lane] = b1;
    warp_barrier.arrive_and_wait();
    rr_mma_e4m3_f16(a, lda, m0, k0, b0, b1, c0, c1, lane, d);
}
#define rr_mma_e4m3_f16 host_mma
#include "@BODY@"
static const rr_u64 V[@NARGS@][32] = {@VALUES@};
static void lane_main(rr_u32 l) { host_tid = l; @CALLEE@(@CALL@); }
int main(void)
{
    std::thread t[32];
    for (rr_u32 l = 0; l < 32; ++l) t[l] = std::thread(lane_main, l);
    for (rr_u32 l = 0; l < 32; ++l) t[l].join();
    for (int i = 0; i < @BYTES@; ++i) std::printf("%u\n", host_smem[i]);
    return 0;
}
'''


@pytest.fixture(scope="module")
def p1(tmp_path_factory):
    d = tmp_path_factory.mktemp("names")
    shutil.copy(TINY, d / "tiny.ptx")
    new_recipe("p1", d / "tiny.ptx", "s342-s405", abi="scratch", out=d / "p1.py",
               occupancy=False)
    (d / "hostile.py").write_text(_HOSTILE)
    return d


def _run_on_host(res, tmp_path) -> list:
    """The body run by a 32-thread host warp on fixed per-lane argument values; the bytes
    of .shared it leaves (the results' slots)."""
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no g++")
    rnd = random.Random(5)
    args = res.plan.args
    vals = [[0] * 32 if a.role == "scratch" else [rnd.getrandbits(32) for _ in range(32)]
            for a in args]
    src = (_HARNESS.replace("@BODY@", str(res.body)).replace("@NARGS@", str(len(args)))
           .replace("@VALUES@", ",".join("{" + ",".join(f"{v}u" for v in row) + "}"
                                         for row in vals))
           .replace("@CALLEE@", res.plan.callee)
           .replace("@CALL@", ", ".join(f"(rr_u32)V[{i}][l]" for i in range(len(args))))
           .replace("@BYTES@", str(32 * res.plan.stride)))
    (tmp_path / "h.cpp").write_text(src)
    exe = tmp_path / "h"
    build = subprocess.run([cxx, "-std=c++20", "-O1", "-pthread", "-I", str(res.header.parent),
                            str(tmp_path / "h.cpp"), "-o", str(exe)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=60)
    return [int(x) for x in out.stdout.split()]


@pytest.mark.slow
def test_parameters_named_like_cpp_keywords_or_body_locals_compile_and_compute_the_same(
        p1, tmp_path):
    from rrsplice.body import new_body
    base = new_body(p1 / "p1.py", "cuda", tmp_path / "base" / "b.cu")
    hostile = new_body(p1 / "hostile.py", "cuda", tmp_path / "hostile" / "h.cu")
    names = [a.name for a in hostile.plan.args]
    assert len(set(names)) == len(names)
    for bad in ("lane", "tid", "img", "slot", "int", "new", "d_s342", "rr_u32", "D4R_P1_LDA",
                "main", "$x", "d4r_p1_a_image", "__z", "class"):
        assert bad not in names
    assert "arg0_lane" in names                  # the recipe's own name, and not reused
    ptx = [a.ptx_name for a in hostile.plan.args]
    assert (ptx[32], ptx[40], ptx[2]) == ("lane", "tid", "img")
    # the same computation, argument for argument: the result slots agree byte for byte
    want = _run_on_host(base, tmp_path / "base")
    got = _run_on_host(hostile, tmp_path / "hostile")
    assert len(got) == 32 * 128 and any(got)
    assert got == want


@pytest.mark.slow
def test_the_renamed_body_is_accepted_by_nvcc(p1, tmp_path):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not Path(nvcc).exists():
        pytest.skip("no nvcc")
    from rrsplice.body import new_body
    res = new_body(p1 / "hostile.py", "cuda", tmp_path / "h.cu")
    r = subprocess.run([nvcc, "-rdc=true", "-c", "-arch=sm_90", str(res.body), "-o",
                        str(tmp_path / "h.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("callee", ["main", "int", "rr_mma_e4m3_f16"])
def test_a_callee_cpp_cannot_define_is_a_clear_error(p1, tmp_path, callee):
    d = tmp_path / "w"
    shutil.copytree(p1, d)
    text = (d / "hostile.py").read_text().replace("CALLEE_AS = None", f"CALLEE_AS = {callee!r}")
    (d / "hostile.py").write_text(text)
    env = dict(os.environ, PYTHONPATH=str(ROOT), RRSPLICE_NO_CACHE="1")
    r = subprocess.run([sys.executable, "-m", "rrsplice", "body", "new", str(d / "hostile.py"),
                        "-o", str(d / "x.cu")], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"the callee {callee!r}" in r.stderr and "Traceback" not in r.stderr
    assert not (d / "x.cu").exists() and not (d / "rr_mma.h").exists()


def _cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), RRSPLICE_NO_CACHE="1")
    return subprocess.run([sys.executable, "-m", "rrsplice", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_recipe_new_for_a_module_whose_name_holds_backslashes_writes_a_recipe_that_imports(
        tmp_path):
    from rrsplice.workflow.recipe import load_recipe, resolve_module
    d = tmp_path / "a\\b"
    d.mkdir()
    module = d / 'm\\x"""\\N{q}.ptx'
    shutil.copy(ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx", module)
    out = tmp_path / "q.py"
    r = _cli("recipe", "new", "q", "--module", module, "--range", "s36-s40", "-o", out)
    assert r.returncode == 0, r.stderr
    rec = load_recipe(out)                       # imports: no escape in its docstring
    assert module.name.replace('"""', "'''") in rec.module.__doc__   # as the docstring shows it
    assert resolve_module(rec)[0].resolve() == module.resolve()


def test_outline_escapes_a_line_break_in_the_module_name(tmp_path):
    from rrsplice.ptx.parser import parse
    name = "x\n.visible .entry injected() { ret; }\n.ptx"
    shutil.copy(ROOT / "corpus_fixtures" / "loops" / "loops_sm90.ptx", tmp_path / name)
    text = (ROOT / "recipes" / "loops_nested.py").read_text()
    text = text.replace("MODULE = 'loops/loops_sm90.ptx'", f"MODULE = {name!r}")
    (tmp_path / "r.py").write_text(text)
    r = _cli("outline", tmp_path / "r.py", "--corpus", tmp_path, "-o", tmp_path / "o.ptx")
    assert r.returncode == 0, r.stderr
    body = (tmp_path / "o.ptx").read_text()
    assert "// from x\\u000a.visible .entry injected() { ret; }\\u000a.ptx, outlined" in body
    m = parse(tmp_path / "o.ptx")
    assert [f.name for f in m.functions] == [m.functions[0].name] != ["injected"]
    assert all(ln.startswith("//") for ln in body.splitlines()[:4] if ln)


@pytest.mark.slow
def test_recipe_port_errors_name_the_output_not_a_temporary_file(tmp_path):
    out = tmp_path / "ported.txt"
    r = _cli("recipe", "port", ROOT / "recipes" / "swin_tiny_sm89.py", "--to",
             ROOT / "corpus_fixtures" / "swin_tiny_mvhi_ldr_sm89.ptx", "-o", out)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{out}: error:" in r.stderr and "rrsplice-port-" not in r.stderr
    assert not out.exists()
