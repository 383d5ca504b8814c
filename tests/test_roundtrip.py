"""Every bundled fixture parses and round-trips byte for byte; the model holds the facts
each small fixture was written to exercise (corpus_fixtures/README_small.md)."""

from __future__ import annotations

import bisect
from pathlib import Path

import pytest

import rrsplice
from rrsplice import Address, Imm, LabelledDirective, ParenList, PredPair, Reg, Sink, Symbol, Vector, emit, parse
from rrsplice.ptx.operands import _OPCODE, _slow_operands

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "corpus_fixtures"
SMALL = FIXTURES / "small"

# every bundled module: all *.ptx below corpus_fixtures/ except the deliberately broken ones
# (bad/) and build outputs (out/, and conformance/big/'s benchmark modules, git-ignored)
ALL_GOOD = sorted(p for p in FIXTURES.rglob("*.ptx")
                  if not {"bad", "out", "big"} & set(p.relative_to(FIXTURES).parts))


def _id(p: Path) -> str:
    return str(p.relative_to(FIXTURES))


_cache: dict = {}


def small(name: str):
    if name not in _cache:
        _cache[name] = parse(SMALL / name)
    return _cache[name]


def at(fn, line):
    st = fn.statement_at_line(line)
    assert st is not None, f"no statement at line {line}"
    return st


# ---------------------------------------------------------------- whole corpus

def test_fixture_set_is_not_empty():
    assert len([p for p in ALL_GOOD if p.parent == SMALL]) >= 13


@pytest.mark.parametrize("path", ALL_GOOD, ids=_id)
@pytest.mark.slow
def test_fixture_round_trips_with_sane_statements(path):
    """One parse per file (the large ones are 35-45k lines): byte-identical emit, then
    statement numbering, spans and locations checked against the text itself, then the
    fast operand path checked against the full operand parser."""
    data = path.read_bytes()
    m = parse(path)
    assert emit(m) == data
    assert m.data == data
    _check_statements(m)
    _check_operands(m, every=1 if len(data) < 100_000 else 7)


def test_parse_accepts_path_bytes_and_text_alike():
    path = SMALL / "shapes_multiline.ptx"
    texts = [[s.text for f in m.functions for s in f.statements]
             for m in (parse(path), parse(str(path)), parse(path.read_bytes()),
                       parse(path.read_text()))]
    assert texts[0] == texts[1] == texts[2] == texts[3]


def _check_statements(m):
    text = m.text
    assert m.version is not None and m.target is not None
    starts = m.line_starts()
    lines = m.line_count
    assert lines == len(text.splitlines())
    total = 0
    for fn in m.functions:
        if not fn.has_body:
            assert fn.statements == []
            continue
        assert fn.line <= fn.body.line <= fn.end_line <= lines
        prev_end = -1
        for i, st in enumerate(fn.statements, 1):
            assert st.index == i and st.sid == f"s{i}"
            assert st.function is fn
            assert fn.body.start < st.start < st.end <= fn.body.end
            assert st.start >= prev_end, "statements overlap or are out of order"
            prev_end = st.end
            assert text[st.start:st.end] == st.text
            assert st.line == bisect.bisect_right(starts, st.start)
            assert st.end_line == bisect.bisect_right(starts, st.end - 1)
            assert fn.line <= st.line <= st.end_line <= fn.end_line
            assert st.column == st.start - starts[st.line - 1] + 1
            if st.is_label:
                assert st.text.rstrip().endswith(":") and st.opcode is None
            else:
                assert st.text.endswith(";") and st.opcode and st.base
        assert fn.statement(f"s{len(fn.statements)}") is fn.statements[-1] if fn.statements else True
        total += len(fn.statements)
    # a statement is at most a few physical lines; compiler output has about one per line
    # of code (directives such as `-G`'s `.loc` and debug sections, comments, braces and
    # blank lines are not statements)
    assert total <= lines
    code_lines = sum(1 for ln in text.splitlines()
                     if ln.strip() and not ln.strip().startswith((".", "//", "{", "}")))
    if code_lines > 1000:
        assert total > code_lines / 4


def _check_operands(m, every):
    """The cached fast path and the recursive-descent parser build equal operands."""
    n = 0
    for fn in m.functions:
        for st in fn.statements:
            if st.is_label:
                continue
            n += 1
            if n % every:
                continue
            scoped = set()
            blk = st.block
            while blk is not None:
                scoped |= {d.name for d in blk.decls if d.space == ".reg" and d.count is None
                           and not d.name.startswith("%")}
                blk = blk.parent
            om = _OPCODE.match(st.text)
            assert om.group(3) == st.opcode
            slow = _slow_operands(st.text, om.end(), frozenset(scoped))
            assert _without_scope_identity(slow) == _without_scope_identity(st.operands), st


def _without_scope_identity(value):
    """Operands with every register's scope identity (`Reg.ident`, filled in by the scope
    pass after parsing) cleared: the two parsers are compared on syntax alone."""
    import dataclasses
    if isinstance(value, (list, tuple)):
        return type(value)(_without_scope_identity(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _without_scope_identity(getattr(value, f.name))
                   for f in dataclasses.fields(value) if f.init}
        if "ident" in changes:
            changes["ident"] = None
        return dataclasses.replace(value, **changes)
    return value


def test_byte_spans_map_to_original_bytes():
    m = small("crlf.ptx")
    for st in m.functions[0].statements:
        b0, b1 = m.byte_span(st)
        assert m.data[b0:b1].decode() == st.text


# ---------------------------------------------------------------- shapes_operands

def test_guards_both_ways():
    fn = small("shapes_operands.ptx").functions[0]
    st = at(fn, 53)
    assert str(st.guard) == "@%p1" and not st.guard.negated and st.guard.reg == Reg("%p1")
    st = at(fn, 54)
    assert st.guard.negated and st.guard.reg.name == "%p1" and st.opcode == "sub.s32"
    assert at(fn, 52).guard is None


def test_opcode_base_and_modifiers():
    fn = small("shapes_operands.ptx").functions[0]
    st = at(fn, 64)
    assert st.base == "shfl" and st.modifiers == ("sync", "bfly", "b32")
    st = at(fn, 43)
    assert st.opcode == "ld.shared::cta.u32"
    assert st.base == "ld" and st.modifiers == ("shared::cta", "u32")
    ret = at(fn, 97)
    assert ret.base == "ret" and ret.modifiers == () and ret.operands == ()


def test_addresses():
    fn = small("shapes_operands.ptx").functions[0]
    assert at(fn, 38).operands[1] == Address(Reg("%rd1"), 0)
    assert at(fn, 39).operands[1] == Address(Reg("%rd1"), 1024)
    a = at(fn, 40).operands[1]
    assert a == Address(Symbol("sym"), 16) and a.kind == "addr" and list(a.registers()) == []
    assert at(fn, 41).operands[1] == Address(Reg("%r5"), 0)        # `[ %r5 + 0 ]`
    assert at(fn, 42).operands[1] == Address(Reg("%rd1"), -4)      # `[%rd1+-4]`
    assert at(fn, 96).operands[0] == Address(Reg("%r5"), -8)
    assert at(fn, 30).operands[1] == Address(Symbol("shapes_operands_param_0"), 0)


def test_vectors_and_kinds():
    fn = small("shapes_operands.ptx").functions[0]
    st = at(fn, 44)
    v = st.operands[0]
    assert isinstance(v, Vector) and v.kind == "vec"
    assert [r.name for r in v.registers()] == ["%f1", "%f2", "%f3", "%f4"]
    assert [op.kind for op in st.operands] == ["vec", "addr"]
    st = at(fn, 95)
    assert st.operands[1] == Vector((Reg("%r24"), Reg("%r25")))


def test_immediates():
    fn = small("shapes_operands.ptx").functions[0]
    f = at(fn, 46).operands[1]
    assert f == Imm("0f3F800000", 0x3F800000, "hexfloat") and f.kind == "imm"
    d = at(fn, 47).operands[1]
    assert d.kind_name == "hexfloat" and d.value == 0x3FF0000000000000
    assert at(fn, 48).operands[2] == Imm("0xFF", 255, "int")
    assert at(fn, 49).operands[2] == Imm("-17", -17, "int")
    assert at(fn, 50).operands[1].value == 0x7FFFFFFF
    assert at(fn, 63).operands[0].value == -1


def test_special_registers():
    fn = small("shapes_operands.ptx").functions[0]
    tid = at(fn, 33).operands[1]
    assert tid == Reg("%tid.x", True) and tid.special
    assert at(fn, 34).operands[1].special and at(fn, 35).operands[1].name == "%ctaid.y"
    assert not at(fn, 33).operands[0].special


def test_predicate_pairs():
    fn = small("shapes_operands.ptx").functions[0]
    pp = at(fn, 52).operands[0]
    assert isinstance(pp, PredPair) and pp.kind == "predpair" and str(pp) == "%p1|%p2"
    assert [r.name for r in pp.registers()] == ["%p1", "%p2"]
    assert at(fn, 64).operands[0] == PredPair(Reg("%r18"), Reg("%p3"))


def test_texture_and_surface_operands():
    fn = small("shapes_operands.ptx").functions[0]
    tex = at(fn, 69)
    assert tex.opcode == "tex.2d.v4.f32.f32"
    addr = tex.operands[1]
    assert addr.base == Symbol("texref")
    assert addr.coords == Vector((Reg("%f1"), Reg("%f2")))
    assert [r.name for r in tex.registers()] == ["%f6", "%f7", "%f8", "%f9", "%f1", "%f2"]
    sust = at(fn, 72)
    assert sust.opcode == "sust.b.2d.v2.b16.zero"
    a = sust.operands[0]
    assert a.base == Reg("%rd2") and a.coords == Vector((Reg("%r2"), Reg("%r4")))
    assert sust.operands[1] == Vector((Reg("%rs1"), Reg("%rs2")))


def test_branchtargets_is_a_labelled_directive_not_a_statement():
    fn = small("shapes_operands.ptx").functions[0]
    table = fn.branch_targets["$L__BRX_0"]
    assert isinstance(table, LabelledDirective)
    assert table.directive == ".branchtargets"
    assert table.targets == ("$L__BB0_1", "$L__BB0_2")
    assert (table.line, table.end_line) == (76, 77)
    assert fn.label_statement("$L__BRX_0") is None
    assert fn.statement_at_line(76) is None and fn.statement_at_line(77) is None
    brx = at(fn, 78)
    assert brx.opcode == "brx.idx" and brx.operands[1] == Symbol("$L__BRX_0")
    for target in table.targets:
        assert fn.label_statement(target) is not None
    assert table in fn.body.items
    assert rrsplice.emit(small("shapes_operands.ptx")) == (SMALL / "shapes_operands.ptx").read_bytes()


def test_labels():
    fn = small("shapes_operands.ptx").functions[0]
    lab = at(fn, 79)
    assert lab.is_label and lab.label == "$L__BB0_1" and lab.operands == ()
    assert fn.label_statement("$L__BB0_3").line == 84
    assert at(fn, 81).operands == (Symbol("$L__BB0_3"),)


# ---------------------------------------------------------------- shapes_multiline

def test_four_line_mma_is_one_statement():
    fn = small("shapes_multiline.ptx").functions[0]
    for first in (32, 39):
        st = at(fn, first)
        assert st.lines == (first, first + 4)
        for ln in range(first, first + 5):
            assert fn.statement_at_line(ln) is st
        assert st.opcode == "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16"
        assert [len(op.items) for op in st.operands] == [2, 4, 2, 2]
        assert all(op.kind == "vec" for op in st.operands)
    st = at(fn, 32)
    assert st.operands[0] == Vector((Reg("%r1"), Reg("%r2")))
    assert st.operands[3] == Vector((Reg("%r11"), Reg("%r12")))
    mma = list(small("shapes_multiline.ptx").mma_statements())
    assert len(mma) == 2


def test_wrapped_tex_and_store():
    fn = small("shapes_multiline.ptx").functions[0]
    tex = at(fn, 49)
    assert tex.lines == (48, 49)
    assert tex.operands[1].base == Symbol("tex_in")
    st = at(fn, 85)
    assert st.lines == (84, 86) and st.opcode == "st.global.v4.u32"
    assert len(st.operands[1].items) == 4


def test_scoped_blocks_and_scoped_register_names():
    fn = small("shapes_multiline.ptx").functions[0]
    one = at(fn, 51)
    assert one.opcode == "cvt.rn.f16.f32" and one.depth == 1
    assert one.block is not fn.body and one.block.parent is fn.body
    unpack = at(fn, 61)
    assert unpack.lines == (61, 61)
    # a scoped name carries the key of its declaring block (NAME@B<k>, k counting the
    # function's register-declaring blocks in source order)
    assert unpack.operands[0] == Vector((Reg("low"), Reg("high")))
    assert [r.key for r in unpack.operands[0].items] == ["low@B1", "high@B1"]
    use = at(fn, 62)
    assert use.operands[1].key == "low@B1"
    assert "low" in {d.name for d in use.block.decls}
    inline = [s for s in fn.statements if s.line == 65]
    assert [s.opcode for s in inline] == ["mov.b32", "mov.b16"]
    # the same names redeclared in a second scope are other registers
    assert inline[1].operands[1] == Reg("high") and inline[1].operands[1].key == "high@B2"
    # nested scope: depth 2, its own .reg declared there
    inner = at(fn, 79)
    assert inner.depth == 2 and inner.operands[0] == Reg("%inner")
    assert inner.operands[0].key == "%inner@B4" and inner.operands[3].key == "%tp@B3"
    assert inner.operands[1].key == "%r16"          # an outer register keeps its name
    assert {d.name for d in inner.block.decls} == {"%inner"}
    # outside any scope a bare name is a symbol
    assert at(fn, 58).operands[1] == Vector((Reg("%rs1"), Reg("%rs2")))


def test_sink_operand():
    fn = small("shapes_multiline.ptx").functions[0]
    st = at(fn, 71)
    assert st.operands[0] == Vector((Reg("%rs6"), Sink()))
    assert [r.name for r in st.registers()] == ["%rs6", "%r15"]


# ---------------------------------------------------------------- calls

def test_call_lists():
    m = small("calls.ptx")
    fn = m.function("calls_entry")
    wrapped = at(fn, 81)
    assert wrapped.lines == (81, 87) and wrapped.base == "call" and wrapped.modifiers == ("uni",)
    ret, callee, args = wrapped.operands
    assert ret == ParenList((Symbol("retval0"),)) and ret.kind == "list"
    assert callee == Symbol("add3")
    assert args == ParenList((Symbol("param0"), Symbol("param1"), Symbol("param2")))
    pair = at(fn, 94)
    assert [op.kind for op in pair.operands] == ["list", "sym", "list"]
    noargs = [s for s in fn.statements if s.opcode == "call.uni" and len(s.operands) == 1]
    assert {s.operands[0].name for s in noargs} == {"ext_sync", "noargs"}
    ind = at(fn, 118)
    assert ind.opcode == "call" and ind.operands[1] == Reg("%rd3")
    assert ind.operands[3] == Symbol("prototype_0")
    proto = fn.prototypes["prototype_0"]
    assert proto.directive == ".callprototype" and proto.line == 117
    assert proto.signature.startswith("(.param .b32 _) _ (")
    # call blocks are scopes with their own .param declarations
    st_param = at(fn, 79)
    assert st_param.depth == 1 and st_param.operands[1] == Imm("7", 7, "int")
    assert any(d.space == ".param" and d.name == "param2" for d in st_param.block.decls)


def test_functions_kind_linkage_params_returns():
    m = small("calls.ptx")
    names = [(f.name, f.kind, f.linkage, f.has_body) for f in m.functions]
    assert names == [("ext_body", ".func", (".extern",), False),
                     ("ext_sync", ".func", (".extern",), False),
                     ("add3", ".func", (), True), ("pair", ".func", (), True),
                     ("noargs", ".func", (), True),
                     ("calls_entry", ".entry", (".visible",), True)]
    add3 = m.function("add3")
    assert [p.name for p in add3.params] == ["add3_param_0", "add3_param_1", "add3_param_2"]
    assert [(p.name, p.space, p.type) for p in add3.ret_params] == [("func_retval0", ".param", ".b32")]
    pair = m.function("pair")
    r = pair.ret_params[0]
    assert (r.align, r.type, r.dims, r.byte_size) == (8, ".b8", (8,), 8)
    assert m.function("noargs").params == [] and m.function("ext_sync").params == []
    ext = m.function("ext_body")
    assert [p.type for p in ext.params] == [".b32", ".b64"] and ext.line == 15


# ---------------------------------------------------------------- shapes_header

def test_header_and_module_declarations():
    m = small("shapes_header.ptx")
    assert (m.version, m.target) == ("8.7", "sm_89")
    assert [h[0] for h in m.headers] == [".version", ".target", ".address_size"]
    decls = {d.name: d for d in m.decls}
    t = decls["g_table"]
    assert (t.space, t.type, t.align, t.dims, t.byte_size) == (".global", ".b8", 4, (16,), 16)
    assert t.init.startswith("{1, 2, 3")
    assert decls["c_weights"].init.startswith("{0f3F800000")
    assert decls["g_ptr_to_table"].init == "generic(g_table)"
    assert decls["g_counter"].dims == () and decls["g_counter"].type == ".u32"
    kinds = [d[0] for d in m.directives]
    assert kinds.count("file") == 2 and "section" in kinds


def test_entry_params_perf_and_body_declarations():
    m = small("shapes_header.ptx")
    fn = m.function("_Z13shapes_header6Params")
    assert fn.is_entry and fn.linkage == (".visible",)
    p = fn.params[0]
    assert (p.name, p.space, p.align, p.type, p.dims, p.byte_size) == \
        ("_Z13shapes_header6Params_param_0", ".param", 8, ".b8", (136,), 136)
    assert fn.perf[:2] == [(".maxntid", (32, 1, 4)), (".minnctapersm", (1,))]
    decls = {d.name: d for d in fn.decls()}
    r = decls["%r"]
    assert (r.space, r.type, r.count) == (".reg", ".b32", 19)
    assert r.declares("%r18") and not r.declares("%r19") and not r.declares("%r01")
    assert decls["%hh"].type == ".f16x2" and decls["%p"].type == ".pred"
    assert decls["%ru"].count is None and decls["%ru"].declares("%ru")
    depot = decls["__local_depot0"]
    assert (depot.space, depot.align, depot.dims) == (".local", 4, (16,))
    smem = decls["_ZZ13shapes_header6ParamsE4smem"]
    assert (smem.space, smem.align, smem.type, smem.dims, smem.byte_size) == \
        (".shared", 16, ".b8", (9600,), 9600)
    assert smem.attrs == (".shared", ".align 16", ".b8")
    # comments after instructions are part of neither statement text nor operands
    st = at(fn, 56)
    assert st.text == "mov.u32 \t%r1, %tid.x;" and len(st.operands) == 2
    assert at(fn, 65).operands[0] == Address(Reg("%rd3"), 4)
    # .loc is not a statement
    assert fn.statement_at_line(53) is None and fn.statement_at_line(61) is None
    assert fn.statements[0].line == 54


def test_sm90_shapes_and_reqntid():
    m = small("shapes_sm90.ptx")
    fn = m.functions[0]
    assert m.target == "sm_90"
    assert (".reqntid", (128, 1, 1)) in fn.perf and (".reqnctapercluster", (2, 1, 1)) in fn.perf
    assert fn.params[0].attrs == (".param", ".u64", ".ptr", ".global", ".align 16")
    ops = {s.opcode for s in fn.statements if not s.is_label}
    assert "fence.proxy.async.shared::cta" in ops
    assert any(o.startswith("mbarrier.try_wait.parity.shared::cta") for o in ops)
    elect = next(s for s in fn.statements if s.base == "elect")
    assert elect.operands[0].kind == "predpair"
    assert len(list(m.mma_statements())) == 1


# ---------------------------------------------------------------- byte-exact files

def test_crlf():
    m = small("crlf.ptx")
    assert m.data.count(b"\r\n") == 49 and m.line_count == 49
    fn = m.functions[0]
    mma = next(m.mma_statements())
    assert mma.end_line - mma.line == 4
    assert all(not op.kind == "sym" for op in mma.operands)
    for st in fn.statements:
        assert "\r" not in str(st.opcode) and not st.text.endswith("\r")
    scoped = [s for s in fn.statements if s.depth == 1]
    assert scoped and any(r.name in ("low", "high") for s in scoped for r in s.registers())


def test_missing_final_newline():
    m = small("no_final_newline.ptx")
    assert not m.data.endswith(b"\n") and m.data.endswith(b"}")
    assert m.line_count == 33
    assert m.functions[0].end_line == 33
    assert emit(m) == m.data


def test_tabs_spaces_guards_and_shared_lines():
    m = small("tabs_spaces.ptx")
    fn = m.functions[0]
    g1 = at(fn, 28)
    assert str(g1.guard) == "@%p1" and g1.opcode == "add.s32"
    line29 = [s for s in fn.statements if s.line == 29]
    assert len(line29) == 2
    assert str(line29[0].guard) == "@!%p2" and line29[1].guard is None
    assert line29[1].index == line29[0].index + 1
    assert fn.statement_at_line(29) is line29[0]
    lab = [s for s in fn.statements if s.line == 32]
    assert lab[0].is_label and lab[0].label == "$L__BB0_1" and lab[1].opcode == "add.s32"
    assert at(fn, 33).label == "$L__BB0_2"
    assert at(fn, 27).operands[0] == PredPair(Reg("%p1"), Reg("%p2"))
    assert at(fn, 37).operands[0] == Address(Reg("%rd2"), 4)
    assert at(fn, 38).operands[1] == Vector((Reg("%r2"), Reg("%r3")))
    assert at(fn, 39).text == "ret ;"
    p = next(d for d in fn.decls() if d.name == "%p")
    assert p.count == 4


# ---------------------------------------------------------------- other producers

def test_triton_and_llvm_styles():
    tri = small("triton_style.ptx")
    fn = tri.functions[0]
    smem = next(d for d in tri.decls if d.name == "global_smem")
    assert smem.dims == (None,) and ".extern" in smem.attrs
    assert len(fn.params) == 5 and all(".ptr" in p.attrs for p in fn.params[:4])
    mma = next(tri.mma_statements())
    assert mma.line == mma.end_line == 72
    one = at(fn, 92)
    assert str(one.guard) == "@%p1" and one.operands[-1] == Vector((Reg("%r21"),))
    assert any(s.label == "$L__func_begin0" for s in fn.statements if s.is_label)
    llvm = small("llvm_style.ptx")
    assert [f.kind for f in llvm.functions].count(".func") == 1
    f = next(f for f in llvm.functions if f.kind == ".func")
    assert len(f.ret_params) == 1
    lab = next(s for s in llvm.functions[-1].statements if s.label == "$L__BB1_2")
    assert lab.text == "$L__BB1_2:"


def test_nvcc_mma_fixture():
    m = small("nvcc_small_mma.ptx")
    mmas = list(m.mma_statements())
    assert [s.line for s in mmas] == [48, 57, 68, 77]
    assert all(s.end_line == s.line + 4 for s in mmas)
    assert mmas[1].operands[3] == mmas[0].operands[0]
    fn = m.functions[0]
    assert (".maxntid", (128, 1, 1)) in fn.perf
    w = next(s for s in fn.statements if s.base == "ld" and s.operands[1].kind == "addr"
             and s.operands[1].offset == 40)
    assert w.opcode == "ld.param.u64"


def test_multi_entry_numbering_restarts():
    m = small("multi_entry.ptx")
    bodies = [f for f in m.functions if f.has_body]
    assert [f.name for f in bodies] == ["clamp255", "entry_a", "entry_b", "_Z7entry_c6Params"]
    for f in bodies:
        assert f.statements[0].sid == "s1"
    assert [f.kind for f in bodies].count(".entry") == 3
    assert m.function("entry_b").linkage == ()
