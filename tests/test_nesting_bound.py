"""The brace-nesting pre-check (rrsplice.ptx.parser._check_nesting) against a plain scanner.

The pre-check bounds the depth in C (bytes reduced to braces and comment/string
delimiters, comments dropped, rounds of `{}` pairs deleted) and walks the text only when
the bound says it may be too deep. Its decision must be the one of the straightforward
definition: the depth of the braces outside comments and strings, first in the reduced
text (what decides whether the text is walked), then in the text itself (what is raised).
"""

from __future__ import annotations

import random

import pytest

from rrsplice.ptx import parser
from rrsplice.ptx.errors import ParseError

LIMIT = 3


def _depth(text: str) -> int:
    """The deepest prefix count of `{` minus `}` outside `//`, `/* */` and `"` runs,
    scanned one character at a time (a `/*` or `"` left open runs to its end / line end)."""
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif c == "}":
            depth -= 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        elif c == '"':
            j = i + 1
            while j < n and text[j] not in '"\n':
                j += 1
            i = j + 1 if j < n and text[j] == '"' else j
            continue
        i += 1
    return deepest


def _reduced(text: str) -> str:
    return "".join(c for c in text if c in '{}/*"\n')


def _raises(text: str) -> bool:
    try:
        parser._check_nesting(text, text.encode(), "t.ptx")
    except ParseError as exc:
        assert "nested more than" in exc.message
        return True
    return False


def test_the_bound_decides_as_the_plain_definition(monkeypatch):
    monkeypatch.setattr(parser, "MAX_NESTING", LIMIT)
    rng = random.Random(19)
    alphabet = list('{{{}}}/*"\n xé')
    checked = deep = 0
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        expected = _depth(_reduced(text)) > LIMIT and _depth(text) > LIMIT
        assert _raises(text) == expected, repr(text)
        checked += 1
        deep += expected
    assert checked == 20_000 and deep > 500       # both outcomes well represented


@pytest.mark.parametrize("text, raises", [
    ("{" * 4 + "}" * 4, True),
    ("{}" * 50, False),                             # many blocks, none deep
    ("{{{" + "}}}" + "{{{" + "}}}", False),
    ("}}}}" + "{{{{", False),                       # closes first: never above 0
    ("}" + "{" * 5, True),
    ("{{{ // {\n }}}", False),                      # a brace in a comment
    ("{{{ /* { */ {}}}}", True),
    ('{{{ "{" }}}', False),                         # a brace in a string
])
def test_the_bound_on_written_cases(monkeypatch, text, raises):
    monkeypatch.setattr(parser, "MAX_NESTING", LIMIT)
    assert _raises(text) is raises
