"""Per-lane load addresses as linear forms in the thread ids (rrsplice.analysis.laneaddr)."""

from __future__ import annotations

from rrsplice import parse
from rrsplice.analysis.dataflow import analyze
from rrsplice.analysis.laneaddr import loaded_from, weight_load
from rrsplice.analysis.paramroles import ParamRef, name_weight, weight_param

SRC = """.version 8.7
.target sm_89
.address_size 64
.visible .entry k(.param .align 8 .b8 k_param_0[96])
{
  .reg .b32 %r<20>;
  .reg .b64 %rd<20>;
  ld.param.u64 %rd1, [k_param_0+40];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %tid.z;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd4, %rd2, %rd3;
  mad.lo.s32 %r3, %r2, 4096, 512;
  cvt.u64.u32 %rd5, %r3;
  add.s64 %rd6, %rd4, %rd5;
  ld.global.nc.v2.u32 {%r4, %r5}, [%rd6+8];
  mov.b32 %r6, %r5;
  and.b32 %r7, %r1, 3;
  cvt.u64.u32 %rd7, %r7;
  add.s64 %rd8, %rd2, %rd7;
  ld.global.u32 %r8, [%rd8];
  ld.param.u64 %rd9, [k_param_0+8];
  ld.global.u32 %r9, [%rd9];
  add.s32 %r10, %r6, %r8;
  add.s32 %r11, %r10, %r9;
  ret;
}
"""


def _fa():
    """The kernel has no mma, so no weight pointer is found by provenance; it is named here
    as a recipe's W_PARAM = "+40" would."""
    fn = parse(SRC, filename="k.ptx").functions[0]
    fa = analyze(fn)
    assert weight_param(fa) is None
    name_weight(fa, ParamRef("k_param_0", 40, 96))
    return fn, fa


def test_without_a_named_weight_pointer_nothing_is_a_weight_load():
    fn = parse(SRC, filename="k.ptx").functions[0]
    fa = analyze(fn)
    use = next(st.index for st in fn.statements if st.text.startswith("add.s32 %r10"))
    assert weight_param(fa) is None and weight_load(fa, use, "%r6") is None


def test_vector_element_through_a_copy_has_lane_and_warp_strides():
    fn, fa = _fa()
    use = next(st.index for st in fn.statements if st.text.startswith("add.s32 %r10"))
    got = weight_load(fa, use, "%r6")
    assert got is not None and got.vector == 2 and got.width == 4
    assert got.offset(0) == 512 + 8 + 4            # element 1 of the v2 load at +8
    assert got.offset(3) == got.offset(0) + 3 * 16
    assert got.offset(0, warp_z=2) == got.offset(0) + 2 * 4096


def test_non_linear_address_and_other_roots_are_not_weight_loads():
    fn, fa = _fa()
    use = next(st.index for st in fn.statements if st.text.startswith("add.s32 %r10"))
    # and.b32 of %tid.x: no linear form, so the offsets are evaluated lane by lane
    lanes = loaded_from(fa, use, "%r8")
    assert lanes is not None and lanes.lanes is not None and lanes.lane_stride is None
    assert [lanes.offset(i) for i in range(6)] == [0, 1, 2, 3, 0, 1]
    last = next(st.index for st in fn.statements if st.text.startswith("add.s32 %r11"))
    other = loaded_from(fa, last, "%r9")
    assert other is not None and weight_load(fa, last, "%r9") is None
