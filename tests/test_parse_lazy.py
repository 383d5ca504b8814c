"""Lazy decoding of instructions (rrsplice.ptx.parser.LAZY, PendingStatement).

An instruction that SAFE_INSTRUCTION matches is left undecoded by the parse and decoded,
with every other pending one of its module, on the first read of a guard, opcode or
operands. These tests hold it to the eager parse: the same operands (register keys
included) on every corpus fixture and on scoped and shadowing declarations, the same errors
at the same places, nothing that SAFE_INSTRUCTION accepts that could fail to decode, and
the single-pass splitting of nested `{ }` blocks to the block structure of the text.
"""

from __future__ import annotations

import copy
import pickle
import random
import re
from pathlib import Path

import pytest

from rrsplice.ptx import parser as ptx_parser
from rrsplice.ptx.errors import ParseError
from rrsplice.ptx.lexicon import INSTRUCTION, SAFE_INSTRUCTION, SPLIT, TRIVIA, TRIVIA_RUN
from rrsplice.ptx.model import Block, PendingStatement, Statement
from rrsplice.ptx.operands import parse_instruction

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "corpus_fixtures").rglob("*.ptx"))


def _parse(data: bytes, lazy: bool):
    old = ptx_parser.LAZY
    ptx_parser.LAZY = lazy
    try:
        return ptx_parser.parse_bytes(data, "m.ptx")
    finally:
        ptx_parser.LAZY = old


def _facts(module) -> list:
    """Everything the decoding gives, register keys included (a Reg compares by name)."""
    out = []
    for fn in module.functions:
        for st in fn.statements:
            g = st.guard
            out.append((st.index, st.opcode, g, g.reg.key if g is not None else None,
                        st.operands, tuple(r.key for op in st.operands for r in op.registers())))
    return out


def _pending(module) -> int:
    return sum(type(st) is PendingStatement for fn in module.functions for st in fn.statements)


def test_lazy_operands_equal_eager_on_every_corpus_fixture():
    seen = scoped = 0
    for path in FIXTURES:
        data = path.read_bytes()
        try:
            eager = _parse(data, lazy=False)
        except ParseError as exc:           # the error cases: the same error either way
            with pytest.raises(ParseError) as got:
                _parse(data, lazy=True)
            assert str(got.value) == str(exc), path
            continue
        assert _pending(eager) == 0
        lazy = _parse(data, lazy=True)
        n = _pending(lazy)
        seen += n
        scoped += sum(len(items) for fn in lazy.functions[:1] for st in fn.statements[:1]
                      if type(st) is PendingStatement
                      for _s, keys, _sh, items in st._lazy.groups if keys)
        assert _facts(lazy) == _facts(eager), path
        assert _pending(lazy) == 0, path        # one read decoded the whole module
    assert seen > 100_000           # most of the corpus's instructions were left pending
    assert scoped > 1_000           # many of them inside blocks that declare registers


SCOPED = b""".version 8.0
.target sm_89
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<9>;
    .reg .pred %p<3>;
    mov.u32 %r1, %smid;
    mov.u32 %r2, %tid.x;
    {
        .reg .b32 %smid;
        .reg .v4 .b32 %tid;
        .reg .b32 %r1;
        .reg .pred %p1;
        mov.u32 %smid, 5;
        mov.u32 %r1, %tid.y;
        add.s32 %r1, %r1, %smid;
        setp.eq.s32 %p1, %r1, 7;
        @%p1 mov.u32 %r3, %r1;
        {
            .reg .b32 low, high;
            mov.b32 {low, high}, 9;
            add.s32 low, low, %r1;
            mov.u32 %r4, low;
            ld.param.u64 %rd1, [p+8];
        }
        mov.u32 %r5, %smid;
    }
    mov.u32 %r6, %smid;
    mov.u32 %r7, %r1;
    ret;
}
"""


def test_scoped_and_shadowed_registers_decode_as_eagerly():
    eager, lazy = _parse(SCOPED, lazy=False), _parse(SCOPED, lazy=True)
    assert _pending(lazy) >= 12
    assert _facts(lazy) == _facts(eager)
    keys = {st.text.strip(): [r.key for op in st.operands for r in op.registers()]
            for st in lazy.functions[0].statements if not st.is_label}
    assert keys["add.s32 %r1, %r1, %smid;"] == ["%r1@B1", "%r1@B1", "%smid@B1"]
    assert keys["mov.u32 %r6, %smid;"] == ["%r6", "%smid"]
    assert keys["add.s32 low, low, %r1;"] == ["low@B2", "low@B2", "%r1@B1"]


def test_the_first_read_decodes_the_whole_module_and_leaves_the_view_unbuilt():
    m = _parse(SCOPED, lazy=True)
    sts = m.functions[0].statements
    assert all(st._view is None for st in sts)
    assert _pending(m) > 0
    assert sts[-1].opcode == "ret"          # one read ...
    assert _pending(m) == 0                 # ... decodes every pending one
    assert all(type(st) is Statement for st in sts)
    assert all(st._view is None for st in sts)      # the typed view is still not built
    assert not any(hasattr(st, "_lazy") for st in sts if not st.is_label)


@pytest.mark.parametrize("read", ["guard", "opcode", "operands", "view", "copy", "pickle"])
def test_any_read_or_copy_of_a_pending_statement_decodes(read):
    m = _parse(SCOPED, lazy=True)
    st = next(s for s in m.functions[0].statements if type(s) is PendingStatement)
    if read == "copy":
        got = copy.copy(st)
        assert type(got) is Statement and got.operands == st.operands
    elif read == "pickle":
        back = pickle.loads(pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL))
        assert _facts(back) == _facts(_parse(SCOPED, lazy=False))
        assert all(type(s) is Statement for s in back.functions[0].statements)
    else:
        getattr(st, read)
    assert _pending(m) == 0
    with pytest.raises(AttributeError):
        st.no_such_attribute  # noqa: B018


# ------------------------------------------------------------------ errors at parse time

def _module(body: str) -> bytes:
    lines = [".version 8.0", ".target sm_89", ".address_size 64", ".visible .entry k()", "{",
             "    .reg .b32 %r<9>;", "    .reg .b64 %rd<9>;"]
    lines += ["    add.s32 %r1, %r2, %r3;"] * 50          # pending instructions before ...
    lines += ["    " + body]
    lines += ["    mov.u32 %r4, %r5;"] * 50               # ... and after the bad one
    lines += ["    ret;", "}", ""]
    return "\n".join(lines).encode()


@pytest.mark.parametrize("bad", [
    "add.s32 %r1, %r2, 12abc;",
    "ld.global.u32 %r1, [%rd1;",
    "mov.u32 %r1, %r2 %r3;",
    "add.s32 %r1, %r2,, %r3;",
    "mov.u32 %r1, 0x;",
    "mov.u32 %r1, #5;",
    "add.s32 %r1, %r2\n    mov.u32 %r3, %r4;",
    "mov.u32 %r1, " + "9" * 5000 + ";",
    "st.global.u32 [%rd1+" + "1" * 5000 + "], %r1;",
    "mov.b32 {%r1, }, %r2;",
], ids=lambda bad: bad[:24])
def test_an_error_among_pending_instructions_is_reported_at_parse_time(bad):
    data = _module(bad)
    with pytest.raises(ParseError) as eager:
        _parse(data, lazy=False)
    with pytest.raises(ParseError) as lazy:
        _parse(data, lazy=True)
    assert str(lazy.value) == str(eager.value)
    assert lazy.value.line == 58 or "missing ';'" in str(lazy.value)   # file:line:col kept
    assert lazy.value.file == "m.ptx"
    assert not re.fullmatch(SAFE_INSTRUCTION, bad)


def test_an_error_is_located_exactly():
    with pytest.raises(ParseError) as got:
        _parse(_module("add.s32 %r1, %r2, 12abc;"), lazy=True)
    e = got.value
    assert (e.file, e.line, e.column) == ("m.ptx", 58, 23)


# ------------------------------------------------------------------ SAFE_INSTRUCTION

_PIECES = ["%r1", "%rd12", "%tid.x", "%r1.y", "%r1.xy", "%p", "low", "$L__BB0_1", "_", "param_0",
           "0", "7", "-3", "12", "007", "0x1F", "0b101", "1.5", "0f3F800000", "0d3FF0000000000000",
           "0f3F80", "9" * 19, "9" * 18, "-" + "9" * 18, "{%r1, %r2}", "{%r1,%r2,%r3,%r4}", "{}",
           "{low, high}", "{%r1, 5}", "[%rd1]", "[%rd1+8]", "[%rd1 + -16]", "[p+4]", "[%rd1+" +
           "1" * 19 + "]", "[%rd1+0x10]", "[%r1.x]", "[%rd1, {%f1, %f2}]", "(%r1)", "%r1|%p1",
           "!%p1", "%r1+4", "sym-2", "a.b", "#", "%", "", "0x33800000U", "0x" + "F" * 17, "0xZZ",
           "0x", "5U", "-5U", "0U7", "{_, %r1}", "{low, 5}", "{lo.x, hi}", "{%r1 %r2}",
           "%r1|%p1", "%r1|_", "low|%p1", "%r1|", "%r1.x|%p2", "%r1||%p"]
_SEPS = [", ", ",", " , ", ",\n\t", " ", ",,", "\n"]


def _random_instruction(rng: random.Random) -> str:
    guard = rng.choice(["", "", "@%p1 ", "@!%p2 ", "@ p ", "@%p1\n"])
    opcode = rng.choice(["mov.u32", "ld.global.nc.v4.u32", "bra.uni", "ret", "st.shared::cta.b32",
                         "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16", "Add", "x"])
    n = rng.randrange(0, 5)
    ops = ""
    for i in range(n):
        ops += (rng.choice([" ", "  ", "\t", "\n    ", ""]) if i == 0 else rng.choice(_SEPS))
        ops += rng.choice(_PIECES)
    return guard + opcode + ops + rng.choice([";", " ;", "\n;", ""])


def test_whatever_safe_instruction_accepts_decodes_and_splits_as_an_instruction():
    rng = random.Random(19)
    safe_re, instr_re = re.compile(SAFE_INSTRUCTION), re.compile(INSTRUCTION)
    accepted = 0
    for _ in range(20_000):
        text = _random_instruction(rng)
        m = safe_re.match(text)
        if m is None:
            continue
        accepted += 1
        # the same extent as INSTRUCTION's match, so SPLIT's items do not move
        im = instr_re.match(text)
        assert im is not None and im.end() == m.end(), text
        split = SPLIT.match(text)
        assert split is not None and split.lastgroup == "lazy" and split.end() == m.end()
        for scoped in (frozenset(), frozenset({"low", "high", "p"})):
            parse_instruction(m.group(), scoped)       # never raises
    assert accepted > 2_000


# ------------------------------------------------------------------ nested blocks, one pass

def _blocks(blk: Block):
    yield blk
    for it in blk.items:
        if isinstance(it, Block):
            yield from _blocks(it)


NESTED = b""".version 8.0
.target sm_89
.address_size 64
.visible .entry k()
{
  .reg .b32 %r<9>;
  { .reg .b32 a; mov.u32 a, 1; { .reg .b32 b;
      mov.u32 b, a; {
        mov.u32 %r1, b; } }
    add.s32 %r2, a, a; }   // after
  {mov.u32 %r3, 3;}{ mov.u32 %r4, 4; }
  ret;
}
"""


@pytest.mark.parametrize("path", [None] + [p for p in FIXTURES if p.stat().st_size < 400_000][:40],
                         ids=lambda p: "nested" if p is None else p.name)
def test_nested_blocks_cover_exactly_their_braces(path):
    data = NESTED if path is None else path.read_bytes()
    try:
        m = _parse(data, lazy=True)
    except ParseError:
        return
    text = m.text
    for fn in m.functions:
        if fn.body is None:
            continue
        for blk in _blocks(fn.body):
            assert text[blk.start] == "{" and text[blk.end - 1] == "}"
            assert blk.line == text.count("\n", 0, blk.start) + 1
            assert blk.end_line == text.count("\n", 0, blk.end - 1) + 1
            for it in blk.items:
                assert blk.start < it.start < it.end <= blk.end
                if isinstance(it, Block):
                    assert it.parent is blk and it.depth == blk.depth + 1
                elif isinstance(it, Statement):
                    assert it.block is blk and it.depth == blk.depth
                    assert it.column == it.start - text.rfind("\n", 0, it.start)
                    assert text[it.start:it.end] == it.text
    if path is None:
        depths = [st.depth for st in m.functions[0].statements]
        assert depths == [1, 2, 3, 1, 1, 1, 0]


def test_the_splitters_trivia_run_is_trivia_repeated():
    rng = random.Random(5)
    parts = [" ", "\t", "\n", "\r\n", "// c\n", "//", "/* x */", "/**/", "/* a\n*b */", "/*", "*/",
             "/", "*", "x", ";", "/* ** / */", "//x/*\n"]
    many, run = re.compile(f"{TRIVIA}*+"), re.compile(TRIVIA_RUN)
    for _ in range(5_000):
        text = "".join(rng.choice(parts) for _ in range(rng.randrange(0, 8)))
        assert many.match(text).end() == run.match(text).end(), repr(text)
