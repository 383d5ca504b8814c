"""Operand and declaration forms of PTX ISA 9.x that compilers emit through inline
assembly or that only hand-written PTX uses, including the examples that failed before
(registers declared without '%', predicate pairs, sink destinations)."""

from __future__ import annotations

import pytest

import rrsplice
from rrsplice.ptx.errors import ParseError
from rrsplice.ptx.model import Address, Element, Imm, Negated, Offset, PredPair, Reg, Sink, Symbol, Vector

HEAD = ".version 9.0\n.target sm_90\n.address_size 64\n"


def _module(body: str, decls: str = "", params: str = "") -> rrsplice.Module:
    return rrsplice.parse(f"{HEAD}{decls}\n.visible .entry k({params})\n{{\n"
                          f"\t.reg .b32 %r<8>;\n\t.reg .pred %p<4>;\n\t.reg .b64 %rd<4>;\n"
                          f"{body}\n\tret;\n}}\n")


def _ops(body: str, **kw):
    fn = _module(body, **kw).functions[0]
    return [st.operands for st in fn.statements if not st.is_label and st.base != "ret"]


def test_issue_example_scoped_names_pair_and_sink():
    m = _module("{ .reg .pred p; .reg .b32 t;\n"
                "  shfl.sync.down.b32 t|p, %r3, 1, 31, -1;\n"
                "  @p add.u32 %r3, %r3, t; }\n"
                "elect.sync _|%p1, -1;")
    shfl, add, elect = [st for st in m.functions[0].statements if st.base != "ret"]
    pair = shfl.operands[0]
    assert isinstance(pair, PredPair)
    assert (pair.first.name, pair.second.name) == ("t", "p")
    # the block's own t and p: keys other than the names, shared by every use in the block
    assert pair.first.key not in ("t", "p") and pair.second.key not in ("t", "p")
    assert add.guard.reg.key == pair.second.key and add.operands[2].key == pair.first.key
    assert elect.operands == (PredPair(Sink(), Reg("%p1")), Imm("-1", -1, "int"))
    assert [r.name for r in shfl.operands[0].registers()] == ["t", "p"]
    assert list(elect.operands[0].registers()) == [Reg("%p1")]


def test_issue_example_shadowing_parses_in_blocks():
    m = _module("mov.u32 %r2, 7;\n{ .reg .b32 %r2; mov.u32 %r2, 5; add.u32 %r3, %r1, %r2; }\n"
                "add.u32 %r4, %r3, %r2;")
    fn = m.functions[0]
    inner = [st for st in fn.statements if st.depth == 1]
    assert [st.opcode for st in inner] == ["mov.u32", "add.u32"]
    assert inner[0].block.decls[0].name == "%r2"
    assert inner[0].block is not fn.body and inner[0].block.parent is fn.body


def test_bare_names_resolve_only_inside_their_scope():
    inner, outer = _ops("{ .reg .b32 t; mov.u32 t, 1; }\nmov.u64 %rd1, t;",
                          decls=".global .u32 t;")
    assert isinstance(inner[0], Reg) and inner[0].name == "t" and inner[0].key != "t"
    assert outer[1] == Symbol("t")       # outside the block, `t` is the global variable


def test_pair_and_sink_positions():
    ops = _ops("{ .reg .pred p; .reg .b32 r;\n"
               "setp.lt.u32 _|%p2, %r1, 3;\n"
               "setp.lt.u32 %p1|_, %r1, 3;\n"
               "shfl.sync.idx.b32 r|p, %r1, 0, 31, -1;\n"
               "tex.2d.v4.f32.f32 {%r1, %r2, %r3, %r4}|p, [%rd1, {%r5, %r6}];\n"
               "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 16; }")
    assert ops[0][0] == PredPair(Sink(), Reg("%p2"))
    assert ops[1][0] == PredPair(Reg("%p1"), Sink())
    assert isinstance(ops[2][0], PredPair) and str(ops[2][0]) == "r|p"
    assert isinstance(ops[3][0].first, Vector) and ops[3][0].second.name == "p"
    assert len(list(ops[3][0].registers())) == 5
    assert ops[4][0] == Sink() and isinstance(ops[4][1], Address)


def test_vector_element_selectors():
    ops = _ops(".reg .v4 .b32 quad;\n.reg .v2 .f32 %vf;\n"
               "mov.b32 quad.x, %r1;\nadd.f32 %r2, %vf.x, %vf.y;\n"
               "mov.v4.b32 quad, {quad.w, quad.z, quad.y, quad.x};\nmov.u32 %r3, %tid.x;")
    assert ops[0][0] == Element(Reg("quad"), "x")
    assert ops[1][1:] == (Element(Reg("%vf"), "x"), Element(Reg("%vf"), "y"))
    assert list(ops[1][1].registers()) == [Reg("%vf")]
    assert ops[2][1].items[0] == Element(Reg("quad"), "w")
    assert ops[3][1] == Reg("%tid.x", True)      # a special register keeps its selector


def test_offsets_outside_brackets():
    ops = _ops("mov.u64 %rd1, table+8;\nmov.u64 %rd2, %rd1-4;\nld.global.u32 %r1, [table+4];"
               "\nld.global.u32 %r2, [%rd2+-8];", decls=".global .u32 table[4];")
    assert ops[0][1] == Offset(Symbol("table"), 8, "table+8")
    assert ops[1][1] == Offset(Reg("%rd1"), -4, "%rd1-4")
    assert list(ops[1][1].registers()) == [Reg("%rd1")]
    assert ops[2][1] == Address(Symbol("table"), 4)
    assert ops[3][1] == Address(Reg("%rd2"), -8)


@pytest.mark.parametrize("text,value,kind", [
    ("42", 42, "int"), ("0x2A", 42, "int"), ("0X2aU", 42, "int"), ("052", 42, "int"),
    ("0b101010", 42, "int"), ("0B101010U", 42, "int"), ("-42", -42, "int"),
    ("4294967295U", 4294967295, "int"), ("0f3F800000", 0x3F800000, "hexfloat"),
    ("0d400921FB54442D18", 0x400921FB54442D18, "hexfloat"), ("1.5", 1.5, "float"),
    ("2.5e-3", 2.5e-3, "float"), ("-0x10", -16, "int")])
def test_literal_forms(text, value, kind):
    (ops,) = _ops(f"mov.b32 %r1, {text};")
    assert ops[1] == Imm(text, value, kind)


def test_reg_parameters_of_a_func_are_registers():
    m = rrsplice.parse(HEAD + ".func (.reg .b32 out) f(.reg .b32 a, .reg .b32 b)\n{\n"
                       "\tadd.u32 out, a, b;\n\tret;\n}\n")
    st = m.functions[0].statements[0]
    assert st.operands == (Reg("out"), Reg("a"), Reg("b"))


def test_negated_bare_predicate_and_guard():
    (ops,) = _ops("{ .reg .pred q; @!q selp.b32 %r1, 1, 0, !q; }")
    assert isinstance(ops[3], Negated) and ops[3].reg.name == "q" and ops[3].reg.key != "q"


def test_alias_is_a_directive_not_a_declaration():
    m = rrsplice.parse(HEAD + ".visible .func f();\n.visible .func g()\n{\n\tret;\n}\n"
                       ".alias f, g;\n")
    assert m.decls == []
    assert ("alias", ".alias f, g;", 9) in m.directives


@pytest.mark.parametrize("body,col,message", [
    ("shfl.sync.idx.b32 %r1|, %r2, 0, 31, -1;", 23, "unexpected ','"),
    ("elect.sync _|, -1;", 14, "unexpected ','"),
])
def test_broken_pairs_are_located(body, col, message):
    with pytest.raises(ParseError) as err:
        _module(body)
    assert err.value.line == 10 and err.value.column == col
    assert message in str(err.value)


def test_declaration_attributes_pointer_params_and_alternate_types():
    m = rrsplice.parse(HEAD + ".global .attribute(.managed) .align 4 .u32 counter;\n"
                       ".global .attribute(.unified(0x1234, 0x5678)) .bf16 b;\n"
                       ".visible .entry k(.param .u64 .ptr .global .align 16 out, .param .u32 n)\n"
                       "{\n\t.reg .bf16x2 %h<2>;\n\t.reg .b128 %q<2>;\n\tret;\n}\n")
    counter, b = m.decls
    assert counter.attrs == (".global", ".attribute(.managed)", ".align 4", ".u32")
    assert (counter.space, counter.type, counter.align) == (".global", ".u32", 4)
    assert b.type == ".bf16" and b.attrs[1] == ".attribute(.unified(0x1234, 0x5678))"
    out, n = m.functions[0].params
    assert (out.space, out.type, out.align) == (".param", ".u64", None)   # .global/.align: pointee
    assert n.space == ".param"
    assert [d.type for d in m.functions[0].decls()] == [".bf16x2", ".b128"]


def test_def_use_of_elements_and_offsets():
    """A write to one element keeps the rest of the vector (a use, no kill); `%rd2+4`
    outside brackets reads %rd2."""
    from rrsplice.analysis.semantics import def_use
    fn = _module(".reg .v4 .b32 quad;\nmov.u64 %rd1, 8;\nmov.u64 %rd2, %rd1+4;\n"
                 "mov.b32 quad.x, %r1;\nadd.u32 %r2, quad.x, quad.w;\n"
                 "mov.v4.b32 quad, {%r1, %r1, %r1, %r1};").functions[0]
    offset, elem_def, elem_use, whole = [def_use(st) for st in fn.statements[1:5]]
    assert offset.uses == ("%rd1",) and offset.kills == ("%rd2",)
    assert elem_def.defs == ("quad",) and "quad" in elem_def.uses and elem_def.kills == ()
    assert elem_use.uses == ("quad",) and elem_use.defs == ("%r2",)
    assert whole.kills == ("quad",) and "quad" not in whole.uses
