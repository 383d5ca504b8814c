"""The live-out registers "some path through the range leaves unwritten": a register the
range reads and then writes on every path is not one of them (it used to be listed, because
the footnote was live-through, which includes live-in, intersected with live-out)."""

from __future__ import annotations

from click.testing import CliRunner
from conftest import FIXTURES

import rrsplice
from rrsplice.analysis.dataflow import analyze
from rrsplice.cli import main
from rrsplice.ptx.select import lines_to_range

PTX = """.version 8.7
.target sm_89
.address_size 64

.visible .entry u(.param .u64 u_param_0, .param .u32 u_param_1)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<6>;
\t.reg .b64 %rd<3>;

\tld.param.u64 %rd1, [u_param_0];
\tld.param.u32 %r1, [u_param_1];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.global.u32 %r2, [%rd2];
\tld.global.u32 %r3, [%rd2+4];
\tsetp.eq.u32 %p1, %r1, 0;
\tadd.u32 %r2, %r2, 1;
\t@%p1 mov.u32 %r3, 5;
\tst.global.u32 [%rd2+8], %r2;
\tst.global.u32 [%rd2+12], %r3;
\tret;
}
"""


def test_read_then_written_on_every_path_is_not_left_unwritten(tmp_path):
    # lines 17-18: `add %r2, %r2, 1` reads and writes %r2 on the only path; the guarded
    # `mov %r3` may not happen, so %r3's incoming value can reach the store
    p = tmp_path / "u.ptx"
    p.write_text(PTX)
    fn = rrsplice.parse(p).function("u")
    fa = analyze(fn)
    rng = lines_to_range(fn, 17, 18)
    assert set(fa.range_live_in(rng)) == {"%r2", "%r3", "%p1"}
    assert set(fa.range_live_out(rng)) == {"%r2", "%r3"}
    assert fa.range_pass_in_for_out(rng) == ["%r3"]
    r = CliRunner().invoke(main, ["liveness", str(p), "--lines", "17-18"])
    assert r.exit_code == 0, r.output
    (line,) = [x for x in r.output.splitlines() if "leaves unwritten" in x]
    assert line.endswith(": %r3")


def test_nvcc_loop_cut_keeps_only_the_registers_a_path_skips():
    # loops_nested (lines 97-215): %r91 is live in and out and the xor at line 211 writes
    # it on every path; loops_early_break (44-56): the early break skips the writes of
    # %r21 and %r22
    m = rrsplice.parse(FIXTURES / "loops" / "loops_sm90.ptx")
    nested = m.function("nested")
    fa = analyze(nested)
    rng = lines_to_range(nested, 97, 215)
    assert "%r91" in fa.range_live_in(rng) and "%r91" in fa.range_live_out(rng)
    assert fa.range_pass_in_for_out(rng) == []
    early = m.function("early_break")
    fa = analyze(early)
    assert fa.range_pass_in_for_out(lines_to_range(early, 44, 56)) == ["%r21", "%r22"]
