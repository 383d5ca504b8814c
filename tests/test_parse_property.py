"""Property tests: generated well-formed functions round-trip and re-parse to the same
model; random damage to real fixtures gives a model or a ParseError, nothing else."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrsplice import Address, Imm, ParenList, ParseError, PredPair, Reg, Symbol, Vector, emit, parse
from rrsplice.ptx.model import Negated

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "corpus_fixtures" / "small"

FAST = settings(max_examples=120, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ---------------------------------------------------------------- generators
# Each generator returns (source text, expected) so the model can be checked against what
# was generated, not only against a second parse.

blank = st.sampled_from([" ", "\t", "  ", " \t", "\t\t"])
opt_blank = st.sampled_from(["", " ", "\t", "  "])
regs = st.builds(lambda k, n: f"%{k}{n}", st.sampled_from(["r", "rd", "f", "rs"]),
                 st.integers(0, 99))
preds = st.builds(lambda n: f"%p{n}", st.integers(0, 7))
labels = st.builds(lambda n: f"$L__BB0_{n}", st.integers(0, 20))
ints = st.one_of(st.integers(-2**31, 2**31 - 1).map(str),
                 st.integers(0, 2**32 - 1).map(lambda v: f"0x{v:X}"))
hexfloats = st.integers(0, 2**32 - 1).map(lambda v: f"0f{v:08X}")
comments = st.sampled_from(["// note", "/* c */", "// begin inline asm", "/* a\n b */"])


@st.composite
def vector(draw):
    items = draw(st.lists(regs, min_size=1, max_size=4))
    sep = draw(st.sampled_from([", ", ",", " , ", ",\n\t"]))
    pad = draw(opt_blank)
    return "{" + pad + sep.join(items) + pad + "}", Vector(tuple(Reg(r) for r in items))


@st.composite
def address(draw):
    base = draw(st.one_of(regs, st.sampled_from(["sym", "smem", "k_param_0"])))
    off = draw(st.one_of(st.none(), st.integers(-4096, 65536)))
    pad = draw(st.sampled_from(["", " "]))
    inner = pad + base
    if off is not None:
        inner += f"{pad}+{pad}{off}"
    inner += pad
    b = Reg(base) if base.startswith("%") else Symbol(base)
    return "[" + inner + "]", Address(b, off or 0)


@st.composite
def source_operand(draw):
    kind = draw(st.sampled_from(["reg", "int", "hexf", "vec", "sym", "neg", "oct"]))
    if kind == "neg":
        p = draw(preds)
        return "!" + p, Negated(Reg(p))
    if kind == "oct":
        # a leading 0 makes an octal literal (PTX ISA); its value, worked out digit by digit
        digits = draw(st.lists(st.integers(0, 7), min_size=1, max_size=8))
        t = "0" + "".join(map(str, digits))
        value = 0
        for d in digits:
            value = value * 8 + d
        return t, Imm(t, value, "int")
    if kind == "reg":
        r = draw(regs)
        return r, Reg(r)
    if kind == "int":
        t = draw(ints)
        return t, Imm(t, int(t, 0), "int")
    if kind == "hexf":
        t = draw(hexfloats)
        return t, Imm(t, int(t[2:], 16), "hexfloat")
    if kind == "sym":
        return "sym", Symbol("sym")
    return draw(vector())


@st.composite
def instruction(draw):
    shape = draw(st.sampled_from(["alu", "ld", "st", "setp", "bra", "mma", "call", "ret",
                                  "brx"]))
    guard_text, guard = "", None
    if draw(st.booleans()):
        p = draw(preds)
        neg = draw(st.booleans())
        guard_text = "@" + ("!" if neg else "") + p + draw(blank)
        guard = ("@!" if neg else "@") + p
    b = draw(blank)
    if shape == "alu":
        op = draw(st.sampled_from(["add.s32", "mov.b32", "mad.lo.s32", "and.b32", "cvt.rn.f16.f32",
                                   "add.cc.u32", "addc.cc.u32", "addc.u32", "frobnicate.b32"]))
        ops = [draw(st.one_of(regs.map(lambda r: (r, Reg(r))), vector()))]
        ops += draw(st.lists(source_operand(), min_size=1, max_size=3))
    elif shape == "ld":
        op = draw(st.sampled_from(["ld.global.u32", "ld.shared::cta.v4.f32", "ld.param.u64"]))
        ops = [draw(st.one_of(regs.map(lambda r: (r, Reg(r))), vector())), draw(address())]
    elif shape == "st":
        op = draw(st.sampled_from(["st.global.u32", "st.shared.v2.b32", "red.global.add.u32"]))
        ops = [draw(address()), draw(source_operand())]
    elif shape == "setp":
        p, q = draw(preds), draw(preds)
        op = "setp.lt.s32"
        sep = draw(st.sampled_from(["|", " | "]))
        ops = [(p + sep + q, PredPair(Reg(p), Reg(q))), draw(source_operand()),
               draw(source_operand())]
    elif shape == "bra":
        lab = draw(labels)
        op = draw(st.sampled_from(["bra", "bra.uni"]))
        ops = [(lab, Symbol(lab))]
    elif shape == "mma":
        op = "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16"
        ops = [draw(vector()) for _ in range(4)]
        b = "\n\t"
    elif shape == "call":
        op = "call.uni"
        args = draw(st.lists(st.sampled_from(["param0", "param1", "param2"]), min_size=1,
                             max_size=3))
        ops = [("(retval0)", ParenList((Symbol("retval0"),))), ("callee", Symbol("callee")),
               ("(" + ", ".join(args) + ")", ParenList(tuple(Symbol(a) for a in args)))]
    elif shape == "brx":
        r = draw(regs)
        op = "brx.idx"
        ops = [(r, Reg(r)), ("tbl", Symbol("tbl"))]
    else:
        op, ops = "ret", []
    sep = draw(st.sampled_from([", ", ",", " , ", ",\n\t"]))
    if shape == "mma":
        sep = ",\n\t"
    text = guard_text + op + (b + sep.join(t for t, _ in ops) if ops else "") + draw(opt_blank) + ";"
    return text, ("instr", op, guard, tuple(o for _, o in ops))


@st.composite
def body_items(draw, depth=0):
    out = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["instr"] * 6 + ["label", "comment", "block"]))
        indent = draw(st.sampled_from(["\t", "    ", "", "\t "]))
        if kind == "instr":
            text, exp = draw(instruction())
            trail = draw(st.sampled_from(["", "   ", "\t// trailing", " /* x */"]))
            out.append((indent + text + trail, [exp]))
        elif kind == "label":
            lab = draw(labels)
            out.append((lab + draw(st.sampled_from([":", " :"])), [("label", lab)]))
        elif kind == "comment":
            out.append((indent + draw(comments), []))
        elif depth < 2:
            inner = draw(body_items(depth + 1))
            decl = draw(st.sampled_from(["", "\t.reg .b32 %t;", "\t.param .b32 param0;"]))
            lines = ["\t{"] + ([decl] if decl else []) + [t for t, _ in inner] + ["\t}"]
            out.append(("\n".join(lines), [e for _, es in inner for e in es]))
    return out


@st.composite
def module(draw):
    items = draw(body_items())
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    spacer = draw(st.sampled_from(["", "\n", "\n  \n"]))
    body = (newline + spacer).join(t for t, _ in items)
    text = (".version 8.7\n.target sm_89\n.address_size 64\n\n"
            ".visible .entry k(\n\t.param .u64 k_param_0\n)\n.maxntid 32, 1, 1\n{\n"
            "\t.reg .pred %p<8>;\n\t.reg .b32 %r<100>;\n\t.reg .b64 %rd<100>;\n"
            "\t.reg .f32 %f<100>;\n\t.reg .b16 %rs<100>;\n\t.shared .b8 smem[64];\n"
            + body + "\n}" + draw(st.sampled_from(["", "\n", "\n\n"])))
    if newline == "\r\n":
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return text, [e for _, es in items for e in es]


def signature(m):
    return [(s.sid, s.line, s.end_line, s.column, s.depth, s.label, s.opcode,
             str(s.guard) if s.guard else None, tuple(str(o) for o in s.operands),
             s.operands) for f in m.functions for s in f.statements]


# ---------------------------------------------------------------- properties

@FAST
@given(module())
@pytest.mark.slow
def test_generated_functions_round_trip_and_match_what_was_generated(case):
    text, expected = case
    m = parse(text)
    assert emit(m) == text.encode()
    fn = m.functions[0]
    assert (fn.name, fn.perf) == ("k", [(".maxntid", (32, 1, 1))])
    got = []
    for s in fn.statements:
        if s.is_label:
            got.append(("label", s.label))
        else:
            got.append(("instr", s.opcode, str(s.guard) if s.guard else None, s.operands))
    assert got == expected
    # every statement's text is its exact source span, and its line span is right
    for s in fn.statements:
        assert m.text[s.start:s.end] == s.text
        assert s.line == m.text.count("\n", 0, s.start) + 1
        assert s.end_line == m.text.count("\n", 0, s.end) + 1


@FAST
@given(module())
@pytest.mark.slow
def test_reparse_of_emitted_text_gives_the_same_model(case):
    text, _ = case
    m1 = parse(text)
    m2 = parse(emit(m1))
    assert signature(m1) == signature(m2)
    # operands printed back and parsed again give the same operands (str() is faithful)
    for s in m1.functions[0].statements:
        if s.operands:
            again = parse(".version 8.7\n.target sm_89\n.entry k()\n{\n"
                          + s.opcode + " " + ", ".join(str(o) for o in s.operands) + ";\n}\n")
            assert again.functions[0].statements[0].operands == s.operands


# ---------------------------------------------------------------- mutation

_FIXTURES = sorted(SMALL.glob("*.ptx"))
_DATA = {p.name: p.read_bytes() for p in _FIXTURES}
_INTERESTING = b";{}[](),|@!%.:\n\r\t x0_/*<>=\"-+\x00\xff"


def _mutate(data: bytes, rng: random.Random, n: int) -> bytes:
    buf = bytearray(data)
    for _ in range(n):
        op = rng.random()
        i = rng.randrange(len(buf) + 1)
        if op < 0.35 and buf:
            del buf[min(i, len(buf) - 1):min(i, len(buf) - 1) + rng.choice([1, 1, 1, 2, 8])]
        elif op < 0.7:
            byte = rng.randrange(256) if rng.random() < 0.3 else rng.choice(_INTERESTING)
            buf.insert(i, byte)
        elif buf:
            j = min(i, len(buf) - 1)
            buf[j] ^= 1 << rng.randrange(8)
    return bytes(buf)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(_DATA)), st.integers(0, 2**32 - 1), st.integers(1, 12))
@pytest.mark.slow
def test_mutated_fixtures_parse_or_raise_parse_error(name, seed, n):
    data = _mutate(_DATA[name], random.Random(seed), n)
    try:
        m = parse(data)
    except ParseError as e:
        _assert_error_points_into(e, data)
        return
    assert emit(m) == data
    for f in m.functions:
        for s in f.statements:
            assert m.text[s.start:s.end] == s.text


def test_every_single_byte_deletion_of_a_fixture():
    """Exhaustive over one small fixture: delete each byte in turn."""
    data = _DATA["tabs_spaces.ptx"]
    parsed = 0
    for i in range(len(data)):
        cut = data[:i] + data[i + 1:]
        try:
            m = parse(cut)
        except ParseError as e:
            _assert_error_points_into(e, cut)
            continue
        parsed += 1
        assert emit(m) == cut
        for f in m.functions:
            for s in f.statements:
                assert m.text[s.start:s.end] == s.text
    # deleting a comment or whitespace byte still parses; deleting most others does not
    assert 0 < parsed < len(data)


def _assert_error_points_into(e: ParseError, data: bytes) -> None:
    """The error names a real line and column of `data`, shows that line, and its JSON
    says the same."""
    lines = data.decode("utf-8", "replace").split("\n")
    assert 1 <= e.line <= len(lines)
    assert 1 <= e.column <= len(lines[e.line - 1].rstrip("\r")) + 1
    text = e.render()
    first = text.split("\n", 1)[0]
    assert first.startswith(f"{e.file}:{e.line}:{e.column}: error: ")
    assert e.message and e.message in first
    if e.line_text.strip():
        assert e.line_text.rstrip("\r\n")[:60].replace("\t", " ") in text
    j = e.to_json()
    assert (j["line"], j["column"], j["message"]) == (e.line, e.column, e.message)
    assert j["line_text"] == e.line_text.rstrip("\r\n")[:400]


def test_end_of_file_after_a_lone_carriage_return_points_into_its_line():
    """Found by the mutation property above: a CRLF file cut before its closing brace and
    ending in '\\r' reported column 2 of an empty last line."""
    data = (ROOT / "corpus_fixtures" / "small" / "crlf.ptx").read_bytes()
    cut = data[:data.rindex(b"}")] + b"\r"
    for tail in (cut, cut[:-3] + b"\r"):                # an empty last line; "ret;" then '\r'
        with pytest.raises(ParseError) as info:
            parse(tail)
        _assert_error_points_into(info.value, tail)
