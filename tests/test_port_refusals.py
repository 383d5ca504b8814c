"""`recipe port` on hand-written kernel pairs whose right answer is read off the target's
text: which predicate a guard maps to, which physical lines the ported cut and debug
insertion name, and the refusals (a register mapping two ways, a ported recipe failing its
checks). Each target differs from the reference in one controlled way."""

from __future__ import annotations

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
"""
# %p1 is set twice before the region (two meanings); the region's guard reads the second
PRE = ["setp.lt.s32 {pa}, %r1, 1;", "@{pa} st.global.u32 [%rd2+4], %r2;",
       "setp.gt.s32 {pb}, %r1, 3;"]
REGION = ["add.s32 %r4, %r2, %r1;", "@{pb} mul.lo.s32 %r4, %r4, 3;", "sub.s32 %r6, %r4, %r2;"]
TAIL = ["st.global.u32 [%rd2+8], %r6;", "ret;"]


def kernel(pa="%p1", pb="%p1", split_last=False, extra_tail=()) -> str:
    region = list(REGION)
    if split_last:                       # the last region statement over two lines
        region[-1] = "sub.s32 %r6,\n\t\t%r4, %r2;"
    body = [s.format(pa=pa, pb=pb) for s in PRE + region] + list(extra_tail) + TAIL
    return HEAD + "".join(f"\t{s}\n" for s in body) + "}\n"


def line_of(text: str, needle: str) -> int:
    """1-based physical line of the first line containing `needle` (the oracle)."""
    (n,) = [i for i, ln in enumerate(text.split("\n"), 1) if needle in ln]
    return n


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    ptx = d / "ref.ptx"
    ptx.write_text(kernel())
    rec = d / "cut.py"
    # s8-s10: the add, the guarded mul, the sub
    new_recipe("cut", ptx, "s8-s10", abi="scratch", out=rec, occupancy=False)
    return ptx, rec


def test_the_guard_predicate_maps_through_the_region(ref, tmp_path):
    """In the target the region's guard is %p2 and the other, earlier, predicate %p3: the
    reference's %p1 maps two ways over the whole kernel, one way inside the region (the
    guard), and the cut reads it, so the port must use the region's answer, %p2."""
    _, rec = ref
    target = tmp_path / "t.ptx"
    target.write_text(kernel(pa="%p3", pb="%p2"))
    res = port_recipe(rec, str(target), out=tmp_path / "p.py")
    assert res.registers.get("%p1") == "%p2"
    assert res.report.ok
    assert "%p2" in (tmp_path / "p.py").read_text()


def test_the_ported_cut_names_the_targets_physical_lines(ref, tmp_path):
    """The target writes the region's last statement over two lines: the cut (half-open)
    must end after the second, and start at the add's line."""
    _, rec = ref
    text = kernel(split_last=True)
    target = tmp_path / "t.ptx"
    target.write_text(text)
    res = port_recipe(rec, str(target), out=tmp_path / "p.py")
    first = line_of(text, "add.s32 %r4, %r2, %r1;")
    last = line_of(text, "%r4, %r2;")
    assert last == line_of(text, "sub.s32 %r6,") + 1
    assert res.lines == (first, last + 1)
    assert res.report.ok


def test_a_port_that_fails_its_checks_is_refused_and_writes_nothing(ref, tmp_path):
    """The target also stores %r4 after the region: the cut's result %r4 is live out there
    and the ported call does not return it, so the ported recipe is wrong for this kernel."""
    _, rec = ref
    target = tmp_path / "t.ptx"
    target.write_text(kernel(extra_tail=["st.global.u32 [%rd2+12], %r4;"]))
    out = tmp_path / "p.py"
    with pytest.raises(PortError) as e:
        port_recipe(rec, str(target), out=out)
    assert "fails its checks" in str(e.value)
    assert not out.exists()


def _debug_recipe(tmp_path, ptx, line: int, regs) -> object:
    p = tmp_path / "dbg.py"
    p.write_text(f"F = {str(ptx)!r}\n\ndef recipe():\n    return dict(file=F, debug=({line}, "
                 f"{list(regs)!r}), debug_block='\\t// probe\\n')\n")
    return p


def test_a_debug_line_ports_to_the_end_of_the_targets_statement(ref, tmp_path):
    """`debug=(LINE, regs)` inserts after LINE, the end of a statement: in a target that
    writes that statement over two lines the insertion must follow the second line."""
    ptx, _ = ref
    rtext = ptx.read_text()
    rec = _debug_recipe(tmp_path, ptx, line_of(rtext, "sub.s32 %r6, %r4, %r2;"), ["%r6"])
    text = kernel(split_last=True)
    target = tmp_path / "t.ptx"
    target.write_text(text)
    res = port_recipe(rec, str(target), out=tmp_path / "p.py")
    assert res.lines == (line_of(text, "%r4, %r2;"),)


def test_a_register_mapping_two_ways_is_refused(ref, tmp_path):
    """A debug recipe naming %p1, which maps to %p3 at one statement and %p2 at another:
    no one answer, so the port must refuse rather than pick one."""
    ptx, _ = ref
    rtext = ptx.read_text()
    rec = _debug_recipe(tmp_path, ptx, line_of(rtext, "sub.s32 %r6, %r4, %r2;"), ["%p1"])
    target = tmp_path / "t.ptx"
    target.write_text(kernel(pa="%p3", pb="%p2"))
    out = tmp_path / "p.py"
    with pytest.raises(PortError) as e:
        port_recipe(rec, str(target), out=out)
    msg = " ".join(str(e.value).split())
    # refused by the port itself (not only by the re-check, which a target that happens to
    # define %p1 would pass): `%p<4>` declares %p1, and no one name stands for it
    assert "names %p1 which the alignment does not map" in msg, msg
    assert not out.exists()
