"""Declarations as ptxas reads them: a `.reg` with a special register's name is an ordinary
variable (it shadows the special register), and a declaration scopes from its point on
(`{ mov.u32 %r2, 5; .reg .b32 %r2; ... }` writes the outer %r2 first).

Ground truth is ptxas: it rejects a load into an undeclared `%smid` ("Special register
argument not allowed") and accepts it once declared; it rejects a `mov.u32` into a `.b64`
register, which tells which `%x` a write before the inner declaration binds to."""

from __future__ import annotations

import subprocess

import pytest

from rrsplice.analysis.dataflow import FunctionAnalysis
from rrsplice.check import check_recipe
from rrsplice.ptx.parser import parse
from rrsplice.ptx.select import StatementRange
from rrsplice.workflow.scaffold import new_recipe
from rrsplice.workflow.splice import apply

SPECIAL_NAMES = ["%smid", "%warpid", "%nsmid", "%envreg32", "%lanemask_eq", "%clock_hi",
                 "%pm7_64", "%reserved_smem_offset_9", "%laneid", "%clock64"]

HEAD = """.version 8.7
.target sm_89
.address_size 64

.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<3>;
"""


def special_kernel(name: str, decl: str = None) -> str:
    """s3 loads NAME, s4-s5 the cut, s6 stores NAME: NAME crosses s3-s5 as live-out."""
    decl = f"\t.reg .b32 {name};\n" if decl is None else decl
    return HEAD + decl + f"""
\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.global.u32 {name}, [%rd2];
\tadd.u32 %r1, {name}, 1;
\tmov.u32 %r2, %tid.x;
\tst.global.u32 [%rd2+4], {name};
\tst.global.u32 [%rd2+8], %r1;
\tst.global.u32 [%rd2+12], %r2;
\tret;
}}
"""


def _ptxas(ptxas_path, text: str, tmp_path) -> subprocess.CompletedProcess:
    src = tmp_path / "t.ptx"
    src.write_text(text)
    return subprocess.run([str(ptxas_path), "-arch=sm_89", "-c", str(src), "-o",
                           str(tmp_path / "t.cubin")], capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", SPECIAL_NAMES[:3] + ["%pm7_64"])
def test_ptxas_takes_a_declared_special_name_as_a_variable(name, ptxas_path, tmp_path):
    assert _ptxas(ptxas_path, special_kernel(name), tmp_path).returncode == 0
    undeclared = _ptxas(ptxas_path, special_kernel(name, decl=""), tmp_path)
    assert undeclared.returncode != 0 and "Special register" in undeclared.stderr


@pytest.mark.parametrize("name", SPECIAL_NAMES)
def test_a_declared_special_name_is_a_register_of_liveness(name):
    fa = FunctionAnalysis(parse(special_kernel(name)).functions[0])
    assert fa.range_live_out(StatementRange(3, 5)) == sorted(["%r1", "%r2", name],
                                                            key=lambda r: (r[:2], r))
    assert name in fa.range_live_in(StatementRange(4, 6))
    assert fa.reaching_defs(6, name) == [3]


def test_a_range_declaration_shadows_the_special_names_it_covers():
    text = special_kernel("%envreg7", decl="\t.reg .b32 %envreg<8>;\n")
    fa = FunctionAnalysis(parse(text).functions[0])
    assert "%envreg7" in fa.range_live_out(StatementRange(3, 5))
    # %envreg<7> declares %envreg0..6 only: %envreg7 stays the special register
    text = special_kernel("%envreg7", decl="\t.reg .b32 %envreg<7>;\n")
    fn = parse(text).functions[0]
    assert [r.special for r in fn.statement(3).registers()][0] is True


def test_the_special_register_before_the_declaration_stays_machine_state():
    text = HEAD + """
\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r1, %smid;
\t.reg .b32 %smid;
\tld.global.u32 %smid, [%rd2];
\tst.global.u32 [%rd2+4], %r1;
\tst.global.u32 [%rd2+8], %smid;
\tret;
}
"""
    fn = parse(text).functions[0]
    assert [r.special for r in fn.statement(3).registers()] == [False, True]
    assert [r.special for r in fn.statement(4).registers()][0] is False
    fa = FunctionAnalysis(fn)
    assert fa.reaching_defs(6, "%smid") == [4]


def _drop_returned(recipe_text: str, name: str) -> str:
    """The scaffolded recipe, with `name` left out of RET_REGS (the cut's call then does
    not give it back)."""
    head, tail = recipe_text.split("\nRET_REGS = [", 1)
    lst, rest = tail.split("]\n", 1)
    return head + "\nRET_REGS = [" + lst + "]\n" + \
        f"RET_REGS = [r for r in RET_REGS if r != {name!r}]\n" + rest


@pytest.mark.parametrize("name", ["%smid", "%envreg32", "%pm7_64"])
def test_check_refuses_a_cut_that_drops_a_declared_special_name(name, tmp_path):
    mod = tmp_path / "m.ptx"
    mod.write_text(special_kernel(name))
    rec = tmp_path / "r.py"
    sc = new_recipe("r", mod, "s3-s5", abi="param", out=rec)
    assert name in sc.ret_regs
    assert check_recipe(rec).ok
    # the same recipe, returning everything but NAME: the value at s6 would be lost
    rec.write_text(_drop_returned(rec.read_text(), name))
    rep = check_recipe(rec)
    assert not rep.ok
    assert any(name in f.message and f.code == "live-out" for f in rep.errors), \
        [f.render() for f in rep.errors]


@pytest.mark.slow
def test_a_cut_across_a_declared_special_name_applies_to_a_module_ptxas_accepts(
        ptxas_path, tmp_path):
    mod = tmp_path / "m.ptx"
    mod.write_text(special_kernel("%smid"))
    rec = tmp_path / "r.py"
    new_recipe("r", mod, "s3-s5", abi="param", out=rec)
    res = apply(rec, out=tmp_path / "o.ptx")
    r = subprocess.run([str(ptxas_path), "-arch=sm_89", "-c", str(res.output), "-o",
                        str(tmp_path / "o.cubin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------- declaration point

SCOPED = HEAD.replace("\t.reg .b32 %r<8>;\n", "\t.reg .b32 %r<8>;\n\t.reg .b64 %x;\n") + """
\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\t{
\tmov.u64 %x, 5;
\t.reg .b32 %x;
\tmov.u32 %x, 6;
\tst.global.u32 [%rd2], %x;
\t}
\tst.global.u64 [%rd2+8], %x;
\tret;
}
"""


@pytest.mark.slow
def test_ptxas_binds_a_write_before_the_inner_declaration_to_the_outer_register(
        ptxas_path, tmp_path):
    # the outer %x is .b64, the inner .b32: mov.u64 fits only the outer one
    assert _ptxas(ptxas_path, SCOPED, tmp_path).returncode == 0
    bad = _ptxas(ptxas_path, SCOPED.replace("mov.u64 %x, 5;", "mov.u32 %x, 5;"), tmp_path)
    assert bad.returncode != 0 and "mismatch" in bad.stderr


def test_a_write_before_the_inner_declaration_is_the_outer_register():
    fn = parse(SCOPED).functions[0]
    keys = [[r.key for r in fn.statement(i).registers()] for i in range(3, 7)]
    assert keys == [["%x"], ["%x@B1"], ["%rd2", "%x@B1"], ["%rd2", "%x"]]
    fa = FunctionAnalysis(fn)
    # the 5 reaches the store after the block; a cut of the block must return it
    assert fa.reaching_defs(6, "%x") == [3]
    assert fa.range_live_out(StatementRange(3, 5)) == ["%x"]


def test_check_refuses_a_cut_of_the_block_that_drops_the_outer_write(tmp_path):
    text = SCOPED.replace("\t.reg .b64 %x;\n", "\t.reg .b32 %x;\n").replace(
        "mov.u64 %x, 5;", "mov.u32 %x, 5;").replace("st.global.u64 [%rd2+8]",
                                                     "st.global.u32 [%rd2+8]")
    mod = tmp_path / "m.ptx"
    mod.write_text(text)
    rec = tmp_path / "r.py"
    sc = new_recipe("r", mod, "s3-s5", abi="param", out=rec)
    assert sc.ret_regs == ["%x"]
    # the cut takes in the block's braces (lines 15-20)
    assert "CUT_CALL = (15, 21)" in rec.read_text()
    assert check_recipe(rec).ok, [f.render() for f in check_recipe(rec).errors]
    rec.write_text(_drop_returned(rec.read_text(), "%x"))
    rep = check_recipe(rec)
    assert any(f.code == "live-out" and "%x" in f.message for f in rep.errors), \
        [f.render() for f in rep.errors]
