"""The byte-level edit layer: edits that touch (but do not overlap) apply, a single byte of
overlap is refused, reversed or out-of-range spans are refused, edits given out of order
apply by position, and line offsets / line endings are what the bytes say."""

from __future__ import annotations

import pytest

from rrsplice import parse
from rrsplice.ptx.emit import Edit, emit, line_byte_offsets, newline_of
from rrsplice.ptx.errors import RRSpliceError

SRC = b".version 8.7\n.target sm_89\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"


@pytest.fixture(scope="module")
def mod():
    return parse(SRC)


def test_no_edits_is_the_original(mod):
    assert emit(mod) == SRC


def test_adjacent_edits_apply(mod):
    # [0, 4) and [4, 8) touch without overlapping
    out = emit(mod, [Edit(4, 8, b"XXXX"), Edit(0, 4, b"YY")])
    assert out == b"YY" + b"XXXX" + SRC[8:]


def test_insertion_at_an_edit_boundary(mod):
    out = emit(mod, [Edit(0, 4, b"A"), Edit(4, 4, b"B")])
    assert out == b"AB" + SRC[4:]


@pytest.mark.parametrize("a,b", [((0, 5), (4, 8)), ((2, 6), (5, 5)), ((0, 10), (3, 4))])
def test_one_byte_of_overlap_is_refused(mod, a, b):
    with pytest.raises(RRSpliceError, match="overlapping"):
        emit(mod, [Edit(a[0], a[1], b"x"), Edit(b[0], b[1], b"y")])


def test_reversed_span_is_refused(mod):
    with pytest.raises(RRSpliceError, match="out of range"):
        emit(mod, [Edit(6, 5, b"x")])


def test_span_past_the_end_is_refused(mod):
    with pytest.raises(RRSpliceError, match="out of range"):
        emit(mod, [Edit(len(SRC) - 1, len(SRC) + 1, b"x")])
    assert emit(mod, [Edit(len(SRC), len(SRC), b"// end\n")]) == SRC + b"// end\n"


def test_edits_apply_by_position_whatever_their_order(mod):
    e1, e2, e3 = Edit(0, 1, b"<"), Edit(20, 21, b"|"), Edit(len(SRC) - 1, len(SRC), b">")
    want = b"<" + SRC[1:20] + b"|" + SRC[21:-1] + b">"
    assert emit(mod, [e3, e1, e2]) == want
    assert emit(mod, [e2, e3, e1]) == want


def test_line_byte_offsets():
    assert line_byte_offsets(b"ab\ncd\n") == [0, 3, 6]
    assert line_byte_offsets(b"ab\ncd") == [0, 3, 5]
    assert line_byte_offsets(b"") == [0]


def test_newline_of():
    assert newline_of(b"a\r\nb\r\n") == b"\r\n"
    assert newline_of(b"a\nb\r\n") == b"\n"
    assert newline_of(b"abc") == b"\n"
