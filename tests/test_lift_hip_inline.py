"""What the HIP build of a lifted function compiles to on gfx1201 (clang-19 -O2, llc-19):
prmt and min/max are the hardware instructions inline, not calls (one v_perm_b32 per
immediate prmt, the v_min/max_num instructions, one call for a register-selector prmt);
warp-wide butterflies are DPP or v_permlanex16 moves, not ds_bpermute; b16 packs and
cvt.rn.f16x2.f32 carry no masks or shifts. What the instructions compute is checked on the
host (tests/test_lift_helpers.py, tests/test_lift_shfl.py)."""

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


def _write_lifted(tmp_path: Path, ptx: str, name: str, source: str) -> None:
    """lift function `name` of `ptx` into tmp_path/source, beside its rr_lift.h"""
    fn = next(iter(parse(ptx.encode(), filename=f"{name}.ptx").functions))
    lifted = lift_function(fn, f"{name}.ptx")
    (tmp_path / "rr_lift.h").write_text(header_text(lifted.rows))
    (tmp_path / source).write_text('#include "rr_lift.h"\n' + (lifted.ret_struct or "")
                                   + "\n" + lifted.text)


def _compile_hip(tmp_path: Path, ptx: str, name: str) -> list:
    """(mnemonic, operands) of each instruction of the lifted function `name`, compiled
    for gfx1201"""
    require_clang19()
    clang, llc = shutil.which("clang-19"), shutil.which("llc-19")
    _write_lifted(tmp_path, ptx, name, "body.hip")
    for cmd in ([clang, *HIP, "body.hip", "-o", "body.bc"], [llc, *LLC, "body.bc", "-o", "body.s"]):
        subprocess.run(cmd, cwd=tmp_path, check=True, capture_output=True, text=True)
    asm = (tmp_path / "body.s").read_text()
    caller = next(n for n in re.findall(r"^([A-Za-z_][\w.]*):", asm, re.M) if name in n)
    return re.findall(r"^\s+([sv]_\w+|ds_\w+)(.*)$", _function_asm(asm, caller), re.M)


def test_prmt_and_min_max_are_inline_instructions(tmp_path: Path):
    ops = [op for op, _ in _compile_hip(tmp_path, PTX, "mix")]
    assert ops.count("v_perm_b32") == 3, ops
    assert ops.count("s_swappc_b64") == 1, ops         # the register selector's prmt only
    assert "v_pk_max_num_f16" in ops and "v_pk_min_num_f16" in ops, ops
    # llc may fuse the f32 max and min into one v_maxmin_num_f32
    assert any(re.match(r"v_(max|min|maxmin|minmax)_num_f32", o) for o in ops), ops


def test_butterflies_are_lane_moves_not_lds_permutes(tmp_path: Path):
    """Every warp-wide butterfly of tests/test_lift_shfl.py is one DPP row_xmask move (K <
    16) or one v_permlanex16 (K >= 16); only the look-alikes go through ds_bpermute."""
    from test_lift_shfl import _XOR_CASES, _xor_ptx
    ops = _compile_hip(tmp_path, _xor_ptx(), "bfx")
    masks = {int(m) for op, rest in ops if op == "v_mov_b32_dpp"
             for m in re.findall(r"row_xmask:(\d+)", rest)}
    assert masks == set(range(1, 16)), ops
    assert sum(op.startswith("v_permlanex16") for op, _ in ops) == 16, ops
    general = sum(how == "general" for *_, how in _XOR_CASES)
    assert sum(op == "ds_bpermute_b32" for op, _ in ops) == general, ops


PACKS = ".version 8.7\n.target sm_90\n.address_size 64\n" + textwrap.dedent("""\
    .visible .func (.param .b32 out) packs(.param .b32 a, .param .b32 b)
    {
        .reg .b32 %r<9>;
        .reg .b16 %h<3>;
        .reg .f32 %f<3>;
        ld.param.u32 %r1, [a];
        ld.param.u32 %r2, [b];
        cvt.rn.satfinite.e4m3x2.f16x2 %h1, %r1;
        cvt.rn.satfinite.relu.e4m3x2.f16x2 %h2, %r2;
        mov.b32 %r3, {%h1, %h2};
        mov.b32 %f1, %r1;
        mov.b32 %f2, %r3;
        cvt.rn.f16x2.f32 %r4, %f1, %f2;
        xor.b32 %r5, %r4, %r3;
        st.param.b32 [out], %r5;
        ret;
    }
    """)


def test_conversions_pass_one_register_and_pack_without_masks(tmp_path: Path):
    """The two e4m3x2 conversions are calls whose 16-bit results pack with one v_perm_b32
    and no mask, and cvt.rn.f16x2.f32 is two conversions and a v_pack_b32_f16 (no shift,
    mask or or)."""
    ops = [op for op, _ in _compile_hip(tmp_path, PACKS, "packs")]
    assert ops.count("s_swappc_b64") == 2, ops
    assert ops.count("v_perm_b32") == 1, ops
    assert ops.count("v_pack_b32_f16") == 1, ops
    assert not {"v_and_b32_e32", "v_lshl_or_b32", "v_or_b32_e32", "v_lshlrev_b32_e32"} & set(ops), ops


def test_packs_and_conversions_compute_the_isa_values_on_the_host(tmp_path: Path):
    """The same function run on the host warp (the host build runs the C of the HIP path
    for the b16 pack): e4m3x2 of a, relu e4m3x2 of b, packed low then high, and
    cvt.rn.f16x2.f32 of (a, that word) as f32, against references written from the ISA."""
    import numpy as np
    from test_lift_helpers import _ref_e4m3
    from warp_harness import Body, build

    from rrsplice.lift import names
    _write_lifted(tmp_path, PACKS, "packs", "body.cu")
    rng = np.random.default_rng(7)
    # a: two finite f16 halves whose f32 reading is finite too (exponent field below 0xff)
    lanes = [(int(rng.integers(0, 0x7B00)) | int(rng.integers(0, 0x7B00)) << 16
              | (0x80000000 if i & 1 else 0), int(rng.integers(0, 2 ** 32)) & 0xFBFFFBFF)
             for i in range(32)]

    def want(a: int, b: int) -> int:
        e = lambda h, relu: _ref_e4m3(h, relu)  # noqa: E731
        r3 = (e(a & 0xFFFF, False) | e(a >> 16, False) << 8
              | (e(b & 0xFFFF, True) | e(b >> 16, True) << 8) << 16)
        f16 = lambda bits: int(np.array([bits], np.uint32).view(np.float32)  # noqa: E731
                               .astype(np.float16).view(np.uint16)[0])
        return (f16(r3) | f16(a) << 16) ^ r3
    with build([Body(tmp_path / "body.cu", names.callee("packs"), ["u32", "u32"], "lift")],
               tmp_path / "harness", opt="-O1") as h:
        h.call(0, (32, 1, 1), [list(x) for x in lanes], bytes(h.shared_bytes))
        got = [int.from_bytes(r, "little") for r in h.returns]
    assert got == [want(a, b) for a, b in lanes]
