"""The portable shfl.sync of a lifted body (the HIP and host path of rr_shfl, no hardware
shuffle) on the host warp harness, against the PTX ISA's pseudo-code for shfl.sync
(9.7.9.6) written out here: every mode, the in-range predicate, segmented and clamped `c`
operands, `b` with bits above the lane field, and the immediate forms a compiler folds;
then the warp-wide butterflies by a constant (rrsplice.lift.lanes), whose HIP path is a
DPP or v_permlanex16 move, through the host's emulation of those lane maps."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest
from warp_harness import Body, build

from rrsplice import parse
from rrsplice.lift import names
from rrsplice.lift.function import lift_function
from rrsplice.lift.header import header_text

HEAD = ".version 8.7\n.target sm_90\n.address_size 64\n"
#: each lane shuffles its own lane id, five ways; the result packs (lane, in range) of each
#: shuffle into six bits: up, down, bfly, idx by the arguments, then up by immediates
PTX = HEAD + textwrap.dedent("""\
    .visible .func (.param .b32 out) shf(.param .b32 b, .param .b32 c)
    {
        .reg .b32 %r<40>;
        .reg .pred %p<6>;
        ld.param.u32 %r1, [b];
        ld.param.u32 %r2, [c];
        mov.u32 %r3, %laneid;
        shfl.sync.up.b32 %r4|%p1, %r3, %r1, %r2, -1;
        shfl.sync.down.b32 %r5|%p2, %r3, %r1, %r2, -1;
        shfl.sync.bfly.b32 %r6|%p3, %r3, %r1, %r2, -1;
        shfl.sync.idx.b32 %r7|%p4, %r3, %r1, %r2, -1;
        shfl.sync.up.b32 %r8|%p5, %r3, 3, 0x1802, -1;
        selp.u32 %r10, 32, 0, %p1;
        selp.u32 %r11, 32, 0, %p2;
        selp.u32 %r12, 32, 0, %p3;
        selp.u32 %r13, 32, 0, %p4;
        selp.u32 %r14, 32, 0, %p5;
        or.b32 %r20, %r4, %r10;
        or.b32 %r21, %r5, %r11;
        or.b32 %r22, %r6, %r12;
        or.b32 %r23, %r7, %r13;
        or.b32 %r24, %r8, %r14;
        shl.b32 %r21, %r21, 6;
        shl.b32 %r22, %r22, 12;
        shl.b32 %r23, %r23, 18;
        shl.b32 %r24, %r24, 24;
        or.b32 %r30, %r20, %r21;
        or.b32 %r30, %r30, %r22;
        or.b32 %r30, %r30, %r23;
        or.b32 %r30, %r30, %r24;
        st.param.b32 [out], %r30;
        ret;
    }
    """)


def _isa_shfl(mode: str, lane: int, b: int, c: int) -> tuple:
    """(source lane, pval) by the PTX ISA's shfl.sync pseudo-code"""
    bval, cval, segmask = b & 31, c & 31, (c >> 8) & 31
    max_lane = (lane & segmask) | (cval & ~segmask)
    min_lane = lane & segmask
    if mode == "up":
        j = lane - bval
        pval = j >= max_lane
    elif mode == "down":
        j = lane + bval
        pval = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bval
        pval = j <= max_lane
    else:
        j = min_lane | (bval & ~segmask)
        pval = j <= max_lane
    return (j if pval else lane), pval


def _expected(lane: int, b: int, c: int) -> int:
    word = 0
    for k, (mode, bb, cc) in enumerate([("up", b, c), ("down", b, c), ("bfly", b, c),
                                        ("idx", b, c), ("up", 3, 0x1802)]):
        src, ok = _isa_shfl(mode, lane, bb, cc)
        word |= (src | (32 if ok else 0)) << (6 * k)
    return word


def _cases() -> list:
    rng = random.Random(5)
    segs = [0x00, 0x10, 0x18, 0x1C, 0x1E, 0x1F, 0x0A]
    clamps = [0x00, 0x03, 0x07, 0x1F, 0x11]
    out = [(b, (s << 8) | cl) for b in (0, 1, 5, 16, 31) for s in segs for cl in clamps]
    # bits outside the fields: b above bit 4, c above bit 12 and bits 5-7
    out += [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(40)]
    return out


def _write_body(tmp_path: Path, lifted) -> None:
    """the lifted function as body.cu, beside its rr_lift.h"""
    (tmp_path / "body.cu").write_text('#include "rr_lift.h"\n' + (lifted.ret_struct or "")
                                      + "\n" + lifted.text)
    (tmp_path / "rr_lift.h").write_text(header_text(lifted.rows))


@pytest.mark.slow
def test_portable_shfl_follows_the_isa(tmp_path: Path):
    fn = next(iter(parse(PTX.encode(), filename="shf.ptx").functions))
    lifted = lift_function(fn, "shf.ptx")
    _write_body(tmp_path, lifted)
    cases = _cases()
    # the cases tell the bounds apart: in range and out of range both occur for every mode
    for k, mode in enumerate(("up", "down", "bfly", "idx")):
        oks = {(_expected(ln, b, c) >> (6 * k + 5)) & 1 for b, c in cases for ln in range(32)}
        assert oks == {0, 1}, mode
    bad = []
    with build([Body(tmp_path / "body.cu", names.callee("shf"), ["u32", "u32"], "lift")],
               tmp_path / "harness", opt="-O1") as h:
        for b, c in cases:
            h.call(0, (32, 1, 1), [[b, c]] * 32, bytes(h.shared_bytes))
            for lane, ret in enumerate(h.returns):
                got, want = int.from_bytes(ret, "little"), _expected(lane, b, c)
                if got != want:
                    bad.append((hex(b), hex(c), lane, hex(got), hex(want)))
    assert not bad, (len(bad), bad[:6])


# ---------------------------------------------------------------- butterflies by a constant

#: (mode, b, c, how the lifter must lower it): every K as an immediate bfly and as an idx by
#: laneid ^ K, then shuffles that look alike but are not a warp-wide butterfly
_XOR_CASES = ([("bfly", k, 0x1F, "xor") for k in range(32)]
              + [("idx", f"x{k}", 0x1F, "xor") for k in range(32)]
              + [("idx", "x8", 0x181F, "general"),      # a segment mask: j stays in the segment
                 ("bfly", 3, 0x07, "general"),          # a clamp below 31
                 ("bfly", 3, 0x1F07, "general"),        # every lane its own segment
                 ("idx", "guarded", 0x1F, "general"),   # laneid ^ 5 on odd lanes only
                 ("idx", "rewritten", 0x1F, "general")])  # laneid ^ 3, then + 1


def _xor_ptx() -> str:
    """one byte per case: the lane whose %laneid each lane received"""
    lines = ["mov.u32 %r1, %laneid;", "mov.u32 %r2, %laneid;"]
    for k in range(32):      # both orders of the xor's operands; %r2 is a second laneid copy
        lines.append(f"xor.b32 %x{k}, %r{1 + k % 2}, {k};" if k % 3 else
                     f"xor.b32 %x{k}, {k + 96}, %r1;")
    lines += ["and.b32 %r3, %r1, 1;", "setp.ne.u32 %p1, %r3, 0;",
              "mov.u32 %guarded, 7;", "@%p1 xor.b32 %guarded, %r1, 5;",
              "xor.b32 %rewritten, %r1, 3;", "add.u32 %rewritten, %rewritten, 1;"]
    for i, (mode, b, c, _) in enumerate(_XOR_CASES):
        src = f"%{b}" if isinstance(b, str) else str(b)
        lines += [f"shfl.sync.{mode}.b32 %s{i}, %r1, {src}, {c:#x}, -1;",
                  f"cvt.u16.u32 %h{i}, %s{i};", f"st.param.b8 [out+{i}], %h{i};"]
    regs = (".reg .b32 %r<4>;\n.reg .b32 %x<32>;\n.reg .b32 %s<80>;\n.reg .b16 %h<80>;\n"
            ".reg .b32 %guarded, %rewritten;\n.reg .pred %p<2>;")
    body = textwrap.indent(regs + "\n" + "\n".join(lines) + "\nret;", "    ")
    return HEAD + (f".visible .func (.param .align 4 .b8 out[{len(_XOR_CASES)}]) bfx()\n"
                   f"{{\n{body}\n}}\n")


def _xor_expected(lane: int) -> list:
    out = []
    for mode, b, c, _ in _XOR_CASES:
        if isinstance(b, int):
            bv = b
        elif b == "guarded":
            bv = lane ^ 5 if lane & 1 else 7
        elif b == "rewritten":
            bv = (lane ^ 3) + 1
        else:
            k = int(b[1:])
            bv = lane ^ (k if k % 3 else k + 96)
        out.append(_isa_shfl(mode, lane, bv, c)[0])
    return out


def lifted_butterflies():
    fn = next(iter(parse(_xor_ptx().encode(), filename="bfx.ptx").functions))
    return lift_function(fn, "bfx.ptx")


def test_only_warp_wide_butterflies_take_the_lane_move():
    text = lifted_butterflies().text
    calls = [ln for ln in text.splitlines() if "rr_shfl" in ln]
    assert len(calls) == len(_XOR_CASES)
    for line, (mode, b, c, how) in zip(calls, _XOR_CASES, strict=True):
        assert ("rr_shfl_xor(" in line) == (how == "xor"), (mode, b, c, line)


@pytest.mark.slow
def test_lane_moves_follow_the_isa_for_every_distance(tmp_path: Path):
    """The HIP path's lane maps (DPP row_xmask, v_permlanex16 with the generated selectors),
    emulated on the host as the RDNA4 ISA defines them, give what shfl.sync gives."""
    lifted = lifted_butterflies()
    _write_body(tmp_path, lifted)
    with build([Body(tmp_path / "body.cu", names.callee("bfx"), [], "lift")],
               tmp_path / "harness", opt="-O1") as h:
        h.call(0, (32, 1, 1), [[]] * 32, bytes(h.shared_bytes))
        got = [list(r) for r in h.returns]
    bad = [(lane, _XOR_CASES[i][:3], g, w) for lane in range(32)
           for i, (g, w) in enumerate(zip(got[lane], _xor_expected(lane), strict=True)) if g != w]
    assert not bad, (len(bad), bad[:8])


def test_lane_xor_registers_need_every_write_unguarded():
    """A guarded write leaves lanes whose value is whatever the register held: not laneid ^ K
    (undefined in PTX where it is the only write, so the host run above cannot see it)."""
    from rrsplice.lift.lanes import lane_xor_registers
    ptx = HEAD + textwrap.dedent("""\
        .visible .func g(.param .b32 a)
        {
            .reg .b32 %r<9>;
            .reg .pred %p<2>;
            mov.u32 %r1, %laneid;
            ld.param.u32 %r2, [a];
            setp.ne.u32 %p1, %r2, 0;
            xor.b32 %r3, %r1, 6;
            @%p1 xor.b32 %r4, %r1, 6;
            @%p1 mov.u32 %r5, %laneid;
            xor.b32 %r6, %r5, 2;
            xor.b32 %r7, %r2, 2;
            xor.b32 %r8, 9, %r1;
            ret;
        }
        """)
    fn = next(iter(parse(ptx.encode(), filename="g.ptx").functions))
    assert lane_xor_registers(fn) == {"%r1": 0, "%r3": 6, "%r8": 9}
