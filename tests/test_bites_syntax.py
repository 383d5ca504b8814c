"""Operand and declaration syntax whose misreading changes what a program means: octal,
hex and binary literals, `!%p` sources, `@!%p` guards, `%p|%q` pairs, sinks, addresses with
offsets and scoped bases, and the module-level diagnoses. Each value below is worked out
from the PTX ISA's literal rules by hand, never by the parser under test."""

from __future__ import annotations

import pytest

from rrsplice.ptx.errors import ParseError
from rrsplice.ptx.model import Address, Imm, Negated, PredPair, Reg, Sink, Symbol, Vector
from rrsplice.ptx.parser import parse

HEAD = ".version 8.7\n.target sm_89\n.address_size 64\n"


def body(*lines: str, decls: str = "") -> str:
    return (HEAD + decls + ".visible .entry k()\n{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<20>;\n"
            "\t.reg .b64 %rd<4>;\n" + "".join(f"\t{ln}\n" for ln in lines) + "\tret;\n}\n")


def ops(line: str):
    st = parse(body(line)).functions[0].statements[0]
    return st.operands


# (literal, value) by the ISA: a leading 0 means octal, 0x hex, 0b binary; U is unsigned
LITERALS = [("010", 8), ("017", 15), ("0777", 511), ("07U", 7), ("0", 0), ("10", 10),
            ("0x1f", 31), ("0X10", 16), ("0b101", 5), ("0B11U", 3), ("-7", -7), ("-010", -8),
            ("-0x10", -16), ("123U", 123)]


@pytest.mark.parametrize("lit,value", LITERALS)
def test_integer_literal_values(lit, value):
    src = ops(f"add.s32 %r1, %r2, {lit};")[2]
    assert isinstance(src, Imm)
    assert src.value == value
    assert str(src) == lit          # the text is kept as written


def test_octal_in_a_declaration_size():
    m = parse(body(decls=".global .align 4 .b8 tab[010] = {1,2,3,4,5,6,7,8};\n"))
    d = [d for d in m.decls if d.name == "tab"][0]
    assert d.dims == (8,)


@pytest.mark.parametrize("dim,size", [("16", 16), ("010", 8)])
def test_array_sizes_in_a_scoped_block(dim, size):
    src = body("{", f".local .align 4 .b8 buf[{dim}];", "mov.u32 %r1, 1;", "}")
    fn = parse(src).functions[0]
    d = [d for d in fn.decls() if d.name == "buf"][0]
    assert d.dims == (size,)


def test_octal_literal_in_a_vector_of_sources():
    src = ops("mad.lo.s32 %r1, %r2, 020, 0x20;")
    assert [o.value for o in src[2:]] == [16, 32]


def test_negated_predicate_source_keeps_its_negation():
    sel = ops("selp.b32 %r1, 1, 0, !%p2;")
    assert isinstance(sel[3], Negated) and sel[3].reg.name == "%p2"
    assert str(sel[3]) == "!%p2"
    vote = ops("vote.sync.all.pred %p1, !%p3, -1;")
    assert isinstance(vote[1], Negated) and vote[1].reg.name == "%p3"
    plain = ops("selp.b32 %r1, 1, 0, %p2;")
    assert isinstance(plain[3], Reg) and not isinstance(plain[3], Negated)


@pytest.mark.parametrize("text,negated", [("@!%p1 bra $L;", True), ("@%p1 bra $L;", False),
                                          ("@!%p1 add.s32 %r1, %r1, 1;", True),
                                          ("@ !%p1 add.s32 %r1, %r1, 1 /* c */;", True),
                                          ("@%p1 add.s32 %r1, %r1, 1 /* c */;", False)])
def test_guard_negation(text, negated):
    src = body(text, "$L:") if "bra" in text else body(text)
    st = parse(src).functions[0].statements[0]
    assert st.guard is not None and st.guard.reg.name == "%p1"
    assert st.guard.negated is negated
    assert str(st.guard) == ("@!%p1" if negated else "@%p1")


def test_predicate_pair_and_sink():
    pair = ops("setp.lt.s32 %p1|%p2, %r1, 3;")[0]
    assert isinstance(pair, PredPair)
    assert (pair.first.name, pair.second.name) == ("%p1", "%p2")
    mov = ops("mov.b64 {_, %r1}, %rd1;")[0]
    assert isinstance(mov, Vector) and isinstance(mov.items[0], Sink)


def test_addresses_keep_base_and_offset():
    a = ops("ld.global.u32 %r1, [%rd1+16];")[1]
    assert isinstance(a, Address) and a.base.name == "%rd1" and a.offset == 16
    b = ops("ld.global.u32 %r1, [%rd1+-4];")[1]
    assert b.offset == -4
    c = ops("ld.global.u32 %r1, [%rd1];")[1]
    assert c.offset == 0


def test_brace_list_keeps_every_register():
    v = ops("ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];")[0]
    assert [r.name for r in v.items] == ["%r1", "%r2", "%r3", "%r4"]


def test_scoped_register_as_address_base_is_a_register():
    src = body("{", ".reg .b64 base;", "mov.b64 base, %rd1;", "ld.global.u32 %r1, [base+8];",
               "}")
    st = [s for s in parse(src).functions[0].statements if s.opcode == "ld.global.u32"][0]
    a = st.operands[1]
    assert isinstance(a.base, Reg) and not isinstance(a.base, Symbol)
    assert a.base.name == "base" and a.offset == 8


def test_symbol_address_is_a_symbol():
    src = body("ld.shared.u32 %r1, [smem+4];", decls="")
    src = src.replace("\t.reg .pred", "\t.shared .b8 smem[64];\n\t.reg .pred", 1)
    a = parse(src).functions[0].statements[0].operands[1]
    assert isinstance(a.base, Symbol) and a.base.name == "smem" and a.offset == 4


def test_nested_block_depth():
    src = body("{", "add.s32 %r1, %r1, 1;", "{", "add.s32 %r2, %r2, 1;", "}", "}")
    fn = parse(src).functions[0]
    depths = {st.opcode + " " + st.operands[0].name: st.block.depth for st in fn.statements
              if st.opcode == "add.s32"}
    assert depths == {"add.s32 %r1": 1, "add.s32 %r2": 2}


def test_branchtargets_and_callprototype_are_told_apart():
    src = body("$L1:", "ts: .branchtargets $L1, $L2;", "brx.idx %r1, ts;", "$L2:",
               "proto: .callprototype _ (.param .b32 _);")
    fn = parse(src).functions[0]
    assert set(fn.branch_targets) == {"ts"}
    assert list(fn.branch_targets["ts"].targets) == ["$L1", "$L2"]


@pytest.mark.parametrize("text,where,needle", [
    ("mov.u32 %r1, %r2\n\t%r3;", "2", "missing ';' at the end of the previous line"),
    ("add.s32 %r1, %r2, 1; %r3;", "1", "unexpected '%r3'"),
    ("add.s32 %r1, %r2, 1\n\tadd.s32 %r3, %r2, 1;", "1", "missing ';'"),
])
def test_operand_syntax_errors_name_the_line(text, where, needle):
    with pytest.raises(ParseError) as ei:
        parse(body(text))
    assert needle in ei.value.message
    assert ei.value.line == 9 + int(where) - 1


def test_module_must_start_with_version():
    with pytest.raises(ParseError) as ei:
        parse(".target sm_89\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n")
    assert ".version" in ei.value.message
    with pytest.raises(ParseError) as ei:
        parse("   \n\n")
    assert "empty module" in ei.value.message
