"""The README's HIP compile lines ("Compiling a native body") work as written: the body
compiled with -fgpu-rdc holds the extern's function, and the llc-19 line turns such bitcode into gfx1201 assembly."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess

import pytest
from conftest import FIXTURES, ROOT

from rrsplice.body import new_body
from rrsplice.workflow.scaffold import new_recipe


def _tool(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        msg = f"{name} not found (apt-get install clang-19 llvm-19)"
        if os.environ.get("RRSPLICE_REQUIRE_CLANG") == "1":
            pytest.fail(msg + " and RRSPLICE_REQUIRE_CLANG=1")
        pytest.skip(msg)
    return exe


def _readme_lines() -> list:
    text = (ROOT / "README.md").read_text()
    sec = text.split("### Compiling a native body", 1)[1]
    block = re.search(r"```sh\n(.*?)\n```", sec, re.S).group(1)
    return [shlex.split(line) for line in block.splitlines()]


def _run(argv, cwd):
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_readme_has_the_two_lines():
    clang, llc = _readme_lines()
    assert clang[0] == "clang-19" and "-fgpu-rdc" in clang and "--offload-arch=gfx1201" in clang
    assert llc[0] == "llc-19" and "-mcpu=gfx1201" in llc and "-mtriple=amdgcn-amd-amdhsa" in llc


@pytest.mark.slow
def test_readme_clang_line_compiles_a_body(tmp_path):
    _tool("clang-19")
    clang, _llc = _readme_lines()
    new_recipe("p1", FIXTURES / "swin_tiny_sm89.ptx", "s342-s405", abi="scratch",
               out=tmp_path / "p1.py", occupancy=False)
    new_body(tmp_path / "p1.py", "hip", tmp_path / "BODY.hip")
    p = _run(clang, tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert b"d4r_p1" in (tmp_path / "BODY.bc").read_bytes()


@pytest.mark.slow
def test_readme_llc_line_makes_gfx1201_assembly(tmp_path):
    # a whole body takes llc minutes: the line itself is checked on a small device function
    # compiled by the README's clang line
    _tool("clang-19")
    _tool("llc-19")
    clang, llc = _readme_lines()
    (tmp_path / "BODY.hip").write_text(
        'extern "C" __attribute__((device)) void rr_add(unsigned *p, unsigned a)\n'
        "{ p[0] += a; }\n")
    assert _run(clang, tmp_path).returncode == 0
    p = _run(llc, tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    s = (tmp_path / "BODY.s").read_text()
    assert re.search(r"^rr_add:", s, re.M) and 'amdgcn-amd-amdhsa--gfx1201' in s
