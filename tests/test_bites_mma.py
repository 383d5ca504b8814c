"""The mma view of single instructions and gap summaries, read off the PTX ISA's syntax:
which operand is D, A, B and C, which type belongs to which, the shape, the guard, and the
state space a memory operation names."""

from __future__ import annotations

import pytest

from rrsplice.analysis.mma import mma_of, opcode_family
from rrsplice.ptx.parser import parse

HEAD = (".version 8.7\n.target sm_89\n.address_size 64\n.visible .entry k()\n{\n"
        "\t.reg .pred %p<4>;\n\t.reg .b32 %r<40>;\n\t.reg .f32 %f<40>;\n\t.reg .b64 %rd<4>;\n"
        "\t.shared .b8 smem[64];\n")


def st_of(line: str):
    return parse(HEAD + f"\t{line}\n\tret;\n}}\n").functions[0].statements[0]


def test_four_type_mma_operands_and_types():
    m = mma_of(st_of("@%p1 mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f16 "
                     "{%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, "
                     "{%r7, %r8};"))
    assert (m.shape, m.m, m.n, m.k) == ("m16n8k16", 16, 8, 16)
    assert m.layouts == ("row", "col")
    assert (m.d_type, m.a_type, m.b_type, m.c_type) == ("f32", "bf16", "bf16", "f16")
    assert list(m.d) == ["%f1", "%f2", "%f3", "%f4"]
    assert list(m.a) == ["%r1", "%r2", "%r3", "%r4"]
    assert list(m.b) == ["%r5", "%r6"]
    assert list(m.c) == ["%r7", "%r8"]
    assert m.guarded


def test_two_type_mma_pairs_d_with_c_and_a_with_b():
    m = mma_of(st_of("mma.sync.aligned.m16n8k8.row.col.f32.f16 {%f1, %f2, %f3, %f4}, "
                     "{%r1, %r2}, {%r3}, {%f5, %f6, %f7, %f8};"))
    assert (m.d_type, m.a_type, m.b_type, m.c_type) == ("f32", "f16", "f16", "f32")
    assert not m.guarded


@pytest.mark.parametrize("line,family", [
    ("ld.shared.u32 %r1, [smem];", "ld.shared"),
    ("ld.global.nc.u32 %r1, [%rd1];", "ld.global"),
    ("st.shared::cta.u32 [smem], %r1;", "st.shared"),
    ("ld.u32 %r1, [%rd1];", "ld"),
    ("bar.warp.sync -1;", "bar.warp.sync"),
    ("add.s32 %r1, %r1, 1;", "add"),
])
def test_gap_families_keep_the_state_space(line, family):
    assert opcode_family(st_of(line)) == family


MMA = "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16"
PHASES = [
    f"{MMA} {{%r1, %r2}}, {{%r10, %r11}}, {{%r12}}, {{%r20, %r21}};",   # s1 chain A, bias C
    f"{MMA} {{%r1, %r2}}, {{%r13, %r14}}, {{%r15}}, {{%r1, %r2}};",     # s2 chain A, k-slice 2
    f"{MMA} {{%r3, %r4}}, {{%r10, %r11}}, {{%r16}}, {{%r22, %r23}};",   # s3 chain B (length 1)
    "add.s32 %r30, %r1, %r3;",                                          # s4 epilogue: one stmt
    f"{MMA} {{%r5, %r6}}, {{%r10, %r11}}, {{%r12}}, {{%r1, %r2}};",     # s5 new phase, reads D
]


@pytest.mark.parametrize("with_analysis", [False, True])
def test_phases_chains_gap_and_k_slices(with_analysis):
    from rrsplice.analysis.dataflow import analyze
    from rrsplice.analysis.mma import phases
    fn = parse(HEAD + "".join(f"\t{x}\n" for x in PHASES) + "\tret;\n}\n").functions[0]
    ps = phases(fn, analyze(fn) if with_analysis else None)
    assert [[m.index for m in p.mmas] for p in ps] == [[1, 2, 3], [5]]
    p0, p1 = ps
    assert sorted(p0.chains) == [(1, 2), (3,)]
    assert p0.chain_length is None and p0.chain_lengths == [1, 2]
    assert p0.k_slices == 2 and p0.k == 16
    assert (p0.gap_first, p0.gap_last) == (4, 4)
    assert p0.gap_counts == [("add", 1)]
    assert p1.chains == [(5,)]
    assert any("continue an accumulator of an earlier phase" in n for n in p1.notes)
