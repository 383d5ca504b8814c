"""The refusal oracle of `recipe port`: generated variant pairs of one small kernel, each with
one controlled difference inside the cut region (an immediate, an address offset, an extra or
missing statement, swapped operands, one register reused for two values). The port must refuse
each, naming the first statement that disagrees, and write nothing; variants differing only in
register numbering (and in code outside the region) must port, onto the same statements."""

from __future__ import annotations

import re

import pytest

from rrsplice.workflow.port import PortError, port_recipe
from rrsplice.workflow.scaffold import new_recipe

HEAD = """.version 8.0
.target sm_89
.address_size 64

.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<60>;
\t.reg .b64 %rd<8>;

\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r1, %tid.x;
\tld.global.u32 %r2, [%rd2+0];
\tld.global.u32 %r3, [%rd2+4];
"""
# the region: statements 6..11 of the kernel (s6-s11)
REGION = ["add.s32 %r4, %r2, %r1;",
          "mul.lo.s32 %r5, %r4, 3;",
          "sub.s32 %r6, %r5, %r3;",
          "ld.global.u32 %r7, [%rd2+16];",
          "shl.b32 %r8, %r6, 2;",
          "xor.b32 %r9, %r8, %r7;"]
TAIL = ["st.global.u32 [%rd2+8], %r9;", "st.global.u32 [%rd2+12], %r6;",
        "st.global.u32 [%rd2+20], %r4;", "ret;"]


def kernel(region, tail=TAIL, renumber=0) -> str:
    text = HEAD + "".join(f"\t{s}\n" for s in region + tail) + "}\n"
    if renumber:
        # every %rN of the kernel becomes %r(N + renumber), consistently
        text = re.sub(r"%r(\d+)\b", lambda m: f"%r{int(m.group(1)) + renumber}", text)
    return text


def one_change(i: int, new) -> list:
    r = list(REGION)
    if new is None:
        del r[i]
    elif isinstance(new, list):
        r[i:i] = new
    else:
        r[i] = new
    return r


# (name, target region, the reference statement the port must name first)
REFUSED = [
    ("immediate", one_change(1, "mul.lo.s32 %r5, %r4, 5;"), "mul.lo.s32 %r5, %r4, 3;"),
    ("address offset", one_change(3, "ld.global.u32 %r7, [%rd2+20];"),
     "ld.global.u32 %r7, [%rd2+16];"),
    ("extra statement", one_change(2, ["add.s32 %r5, %r5, 1;"]), "sub.s32 %r6, %r5, %r3;"),
    ("missing statement", one_change(4, None), "shl.b32 %r8, %r6, 2;"),
    ("swapped operands", one_change(2, "sub.s32 %r6, %r3, %r5;"), "sub.s32 %r6, %r5, %r3;"),
    ("modifier", one_change(2, "sub.u32 %r6, %r5, %r3;"), "sub.s32 %r6, %r5, %r3;"),
    # %r4 reused for the product: the reference's %r4 and %r5 would both map to it
    ("register reused", ["add.s32 %r4, %r2, %r1;", "mul.lo.s32 %r4, %r4, 3;",
                         "sub.s32 %r6, %r4, %r3;", "ld.global.u32 %r7, [%rd2+16];",
                         "shl.b32 %r8, %r6, 2;", "xor.b32 %r9, %r8, %r7;"],
     "mul.lo.s32 %r5, %r4, 3;"),
]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    ptx = d / "ref.ptx"
    ptx.write_text(kernel(REGION))
    rec = d / "cut.py"
    new_recipe("cut", ptx, "s6-s11", abi="scratch", out=rec, occupancy=False)
    return rec


@pytest.mark.parametrize("name,region,first", REFUSED, ids=[x[0] for x in REFUSED])
def test_port_refuses_one_controlled_difference(reference, tmp_path, name, region, first):
    tail = TAIL
    if name == "register reused":
        tail = [t.replace("%r4;", "%r2;") for t in TAIL]     # the old %r4 is not read after
    target = tmp_path / "t.ptx"
    target.write_text(kernel(region, tail))
    out = tmp_path / "ported.py"
    with pytest.raises(PortError) as ei:
        port_recipe(reference, str(target), out=out)
    msg = " ".join(str(ei.value).split())
    # the first disagreement, as the reference's statement text
    assert f"`{first}`" in msg, msg
    assert not out.exists()


@pytest.mark.parametrize("renumber", [0, 7, 31])
def test_port_accepts_register_renumbering(reference, tmp_path, renumber):
    target = tmp_path / "t.ptx"
    # also differ outside the region (another immediate after it): irrelevant to the cut
    tail = ["st.global.u32 [%rd2+8], %r9;", "st.global.u32 [%rd2+12], %r6;",
            "st.global.u32 [%rd2+20], %r4;", "add.s32 %r40, %r3, 99;",
            "st.global.u32 [%rd2+24], %r40;", "ret;"]
    target.write_text(kernel(REGION, tail, renumber))
    res = port_recipe(reference, str(target), out=tmp_path / "p.py")
    assert res.region[1] == (6, 11)
    assert res.report.ok
    want = {f"%r{n}": f"%r{n + renumber}" for n in (1, 2, 3, 4, 6, 9) if renumber}
    assert {k: v for k, v in res.registers.items() if k in want} == want
