"""The HIP build of prmt and min/max is the hardware instruction inline, not a call: a
lifted function with immediate-selector prmt, a register-selector prmt and the f32/f16x2
min/max, compiled for gfx1201 (clang-19 -O2), has one v_perm_b32 per immediate prmt, the
v_min/max_num instructions, and exactly one call (the register-selector prmt's). What the
instructions compute is checked on the host (tests/test_lift_helpers.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

from conftest import require_clang19

from rrsplice import parse
from rrsplice.lift.function import lift_function
from rrsplice.lift.header import header_text

PTX = ".version 8.7\n.target sm_90\n.address_size 64\n" + textwrap.dedent("""\
    .visible .func (.param .b32 out) mix(.param .b32 a, .param .b32 b, .param .b32 s)
    {
        .reg .b32 %r<20>;
        .reg .f32 %f<6>;
        ld.param.u32 %r1, [a];
        ld.param.u32 %r2, [b];
        ld.param.u32 %r3, [s];
        prmt.b32 %r4, %r1, %r2, 0x5410;
        prmt.b32 %r5, %r2, %r4, 0x7632;
        prmt.b32 %r6, %r4, %r5, 0x9b31;
        prmt.b32 %r7, %r5, %r6, %r3;
        max.f16x2 %r8, %r6, %r7;
        min.f16x2 %r9, %r8, %r1;
        mov.b32 %f1, %r9;
        mov.b32 %f2, %r2;
        max.f32 %f3, %f1, %f2;
        min.f32 %f4, %f3, %f1;
        mov.b32 %r10, %f4;
        st.param.b32 [out], %r10;
        ret;
    }
    """)
HIP = ["-x", "hip", "--offload-arch=gfx1201", "--cuda-device-only", "-nogpulib", "-nogpuinc",
       "-fgpu-rdc", "-O2", "-c", "-emit-llvm"]
LLC = ["-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx1201", "-O2"]


def _function_asm(asm: str, name: str) -> str:
    at = asm.index(f"\n{name}:")
    return asm[at:asm.index("\n.Lfunc_end", at)]


def test_prmt_and_min_max_are_inline_instructions(tmp_path: Path):
    require_clang19()
    clang, llc = shutil.which("clang-19"), shutil.which("llc-19")
    fn = next(iter(parse(PTX.encode(), filename="mix.ptx").functions))
    lifted = lift_function(fn, "mix.ptx")
    (tmp_path / "rr_lift.h").write_text(header_text(lifted.rows))
    (tmp_path / "body.hip").write_text('#include "rr_lift.h"\n' + (lifted.ret_struct or "")
                                       + "\n" + lifted.text)
    for cmd in ([clang, *HIP, "body.hip", "-o", "body.bc"], [llc, *LLC, "body.bc", "-o", "body.s"]):
        subprocess.run(cmd, cwd=tmp_path, check=True, capture_output=True, text=True)
    asm = (tmp_path / "body.s").read_text()
    names = re.findall(r"^([A-Za-z_][\w.]*):", asm, re.M)
    caller = next(n for n in names if "mix" in n)
    body = _function_asm(asm, caller)
    ops = re.findall(r"^\s+([sv]_\w+)", body, re.M)
    assert ops.count("v_perm_b32") == 3, ops
    assert ops.count("s_swappc_b64") == 1, ops         # the register selector's prmt only
    assert "v_pk_max_num_f16" in ops and "v_pk_min_num_f16" in ops, ops
    # llc may fuse the f32 max and min into one v_maxmin_num_f32
    assert any(re.match(r"v_(max|min|maxmin|minmax)_num_f32", o) for o in ops), ops
