"""Malformed input raises ParseError with file, line, column, the offending line, a caret
and what was expected; the CLI prints that without a traceback and exits 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrsplice import ParseError, parse
from rrsplice.cli import main

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "corpus_fixtures" / "bad"

HEAD = (".version 8.7\n.target sm_89\n.address_size 64\n\n"
        ".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\t.reg .b32 \t%r<9>;\n")
HEAD_LINES = HEAD.count("\n")   # the body's first free line is HEAD_LINES + 1


def err_of(source, **kw) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(source, **kw)
    e = info.value
    # every error renders: location header, the line, a caret under the column
    text = e.render()
    assert text.startswith(f"{e.file}:{e.line}:{e.column}: error: ")
    if e.line_text and len(e.line_text) <= 200:
        src, caret = text.split("\n")[1:3]
        bar = src.index("|")
        assert caret.index("|") == bar
        assert src[bar + 2:] == e.line_text.rstrip("\r\n").replace("\t", " ")
        assert caret.index("^") == bar + 2 + e.column - 1
    json.dumps(e.to_json())
    return e


# ---------------------------------------------------------------- the bad fixtures
# (line, column, a piece of the offending line, message words); positions from
# corpus_fixtures/README_small.md ("Bad fixtures")

BAD_EXPECTED = {
    "empty.ptx": (1, 1, "", "version"),
    "truncated.ptx": (16, 20, "add.s32 \t%r3, %r1,", "end of file"),
    "unbalanced_braces.ptx": (24, 1, "", "line 15, column 2"),
    "missing_semicolon.ptx": (15, 22, "add.s32 \t%r2, %r1, 1", "missing ';'"),
    "unknown_char.ptx": (16, 21, "`%r1;", "'`'"),
    "invalid_utf8.ptx": (16, 20, "%r2,\ufffd %r1;", "UTF-8"),
    "nul_bytes.ptx": (16, 15, "%r3,\x00 %r2", "NUL"),
}


def test_every_bad_fixture_is_covered():
    assert {p.name for p in BAD.glob("*.ptx")} == set(BAD_EXPECTED)


@pytest.mark.parametrize("name", sorted(BAD_EXPECTED))
def test_bad_fixture_position(name):
    line, column, piece, words = BAD_EXPECTED[name]
    e = err_of(BAD / name)
    assert (e.line, e.column) == (line, column), e.render()
    assert e.file == str(BAD / name)
    assert piece in e.line_text
    assert words in e.message
    assert e.expected


# ---------------------------------------------------------------- generated cases

def test_empty_and_blank_files():
    for src in ("", "\n\n", "   \t\n", "// only a comment\n"):
        e = err_of(src)
        assert (e.line, e.column) == (1, 1)
        assert "'.version'" in e.expected


def test_no_version_directive():
    e = err_of(".target sm_89\n.address_size 64\n")
    assert (e.line, e.column) == (1, 1) and "version" in e.message


@pytest.mark.parametrize("cut", ["add.s32 %r1, %r2,", "add.s32 %r1", "add", "@%p1 bra"])
def test_truncated_inside_an_instruction(cut):
    src = HEAD + "\tmov.u32 %r2, 1;\n\t" + cut
    e = err_of(src)
    assert e.line == HEAD_LINES + 2
    assert e.column == len(cut) + 2          # just past the end of the input
    assert e.line_text == "\t" + cut
    assert "end of file" in e.message


def test_truncated_between_statements():
    e = err_of(HEAD + "\tmov.u32 %r2, 1;\n")
    assert (e.line, e.column) == (HEAD_LINES + 2, 1)
    assert "'{' at line 8, column 1 is never closed" in e.message
    e = err_of(".version 8.7\n.target sm_89\n.visible .entry k(\n")
    assert (e.line, e.column) == (4, 1) and "end of file" in e.message


def test_unclosed_nested_block_is_named():
    src = HEAD + "\tmov.u32 %r2, 1;\n\t{\n\tadd.s32 %r3, %r2, 1;\n\tret;\n}\n"
    e = err_of(src)
    assert (e.line, e.column) == (HEAD_LINES + 6, 1)
    assert f"line {HEAD_LINES + 2}, column 2" in e.message


def test_stray_closing_brace():
    src = HEAD + "\tmov.u32 %r2, 1;\n\t}\n\tadd.s32 %r3, %r2, 1;\n\tret;\n}\n"
    e = err_of(src)
    assert (e.line, e.column) == (HEAD_LINES + 2, 2)
    assert e.line_text == "\t}" and "stray '}'" in e.message
    e = err_of(HEAD + "\tret;\n}\n}\n")
    assert (e.line, e.column) == (HEAD_LINES + 3, 1) and "unmatched '}'" in e.message


@pytest.mark.parametrize("follow", ["\tadd.s32 %r3, %r2, 1;", "$L__BB0_1:", "}", "\t{ mov.u32 %r4, 1; }",
                                    "\t.reg .b32 %t;", "\t@%p1 bra $L;"])
def test_missing_semicolon_points_at_end_of_its_line(follow):
    src = HEAD + "\tmov.u32 %r2, 1   \n" + follow + "\n\tret;\n}\n"
    e = err_of(src)
    assert (e.line, e.column) == (HEAD_LINES + 1, len("\tmov.u32 %r2, 1") + 1), e.render()
    assert "missing ';'" in e.message and e.expected == ["';'"]


def test_missing_semicolon_after_multiline_mma():
    mma = ("\tmma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16\n\t{%r1, %r2},\n"
           "\t{%r3, %r4, %r5, %r6},\n\t{%r7, %r8},\n\t{%r1, %r2}\n\tret;\n}\n")
    e = err_of(HEAD + mma)
    assert (e.line, e.column) == (HEAD_LINES + 5, len("\t{%r1, %r2}") + 1)


def test_unknown_characters():
    for ch in "`#\\?":
        e = err_of(HEAD + f"\tadd.s32 %r3, %r2, {ch}%r1;\n\tret;\n}}\n")
        assert (e.line, e.column) == (HEAD_LINES + 1, len("\tadd.s32 %r3, %r2, ") + 1)
        assert repr(ch) in e.message


def test_bad_operand_syntax():
    e = err_of(HEAD + "\tadd.s32 %r3, %r2 %r1;\n\tret;\n}\n")
    assert (e.line, e.column) == (HEAD_LINES + 1, len("\tadd.s32 %r3, %r2 ") + 1)
    assert "','" in e.expected
    e = err_of(HEAD + "\tld.global.u32 %r3, [%rd1+;\n\tret;\n}\n")
    assert e.line == HEAD_LINES + 1


def test_invalid_utf8_reports_the_byte():
    data = HEAD.encode() + b"\tmov.u32 %r1, \xc3\x28;\n\tret;\n}\n"
    e = err_of(data)
    assert (e.line, e.column) == (HEAD_LINES + 1, len("\tmov.u32 %r1, ") + 1)
    assert "0xC3" in e.message
    # a column counts characters: valid multi-byte characters before it count once
    data = HEAD.encode() + "\t// é\n".encode() + b"\tmov.u32 %r1, 1; // \xe9\xff\n}\n"
    e = err_of(data)
    assert (e.line, e.column) == (HEAD_LINES + 2, len("\tmov.u32 %r1, 1; // ") + 1)


def test_nul_byte():
    e = err_of(HEAD.encode() + b"\tmov.u32 %r1,\x00 1;\n\tret;\n}\n")
    assert (e.line, e.column) == (HEAD_LINES + 1, len("\tmov.u32 %r1,") + 1)
    assert "\x00" in e.line_text


ONE_MB = "add.s32 %r1, %r1, 1; " * 50_000          # 1,050,000 characters on one line


def test_one_megabyte_line_parses():
    m = parse(HEAD + "\t" + ONE_MB + "\n\tret;\n}\n")
    sts = m.functions[0].statements
    assert len(sts) == 50_001
    assert sts[-2].line == HEAD_LINES + 1 and sts[-2].column == 2 + len(ONE_MB) - 21


@pytest.mark.parametrize("bad, offset", [("`", 0), ("add.s32 %r1, %r1", len("add.s32 %r1, %r1")),
                                         ("add.s32 %r1, [%r2;", len("add.s32 %r1, [%r2"))])
def test_one_megabyte_line_error(bad, offset):
    line = "\t" + ONE_MB + bad
    e = err_of(HEAD + line + "\n\tret;\n}\n")
    assert e.line == HEAD_LINES + 1
    assert e.column == len("\t" + ONE_MB) + offset + 1
    assert e.line_text == line
    shown = e.render().split("\n")
    assert len(shown[1]) < 300 and shown[2].index("^") > 0  # a window, not a megabyte


def test_one_megabyte_of_garbage():
    e = err_of(HEAD + "?" * 1_000_000 + "\n}\n")
    assert (e.line, e.column) == (HEAD_LINES + 1, 1)


def test_filename_override_and_path_names():
    e = err_of(HEAD, filename="layer.ptx")
    assert e.file == "layer.ptx"
    e = err_of(HEAD)
    assert e.file == "<text>"


# ---------------------------------------------------------------- through the CLI

@pytest.mark.parametrize("name", sorted(BAD_EXPECTED))
@pytest.mark.parametrize("command", [["parse"], ["parse", "--json"], ["functions"],
                                     ["show", "--line", "16"], ["show", "s1", "--json"]])
def test_cli_exits_2_without_traceback(name, command):
    path = str(BAD / name)
    args = command[:1] + [path] + command[1:]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    out = r.stdout + r.stderr
    assert "Traceback" not in out
    line, column = BAD_EXPECTED[name][:2]
    if "--json" in command:
        data = json.loads(r.stdout)
        assert data["ok"] is False
        err = data["files"][0]["error"] if command[0] == "parse" else data["error"]
        assert (err["line"], err["column"]) == (line, column)
    else:
        assert f"{path}:{line}:{column}: error:" in out


def test_cli_parse_several_files_reports_each_and_fails():
    good = str(ROOT / "corpus_fixtures" / "small" / "crlf.ptx")
    bad = str(BAD / "truncated.ptx")
    r = CliRunner().invoke(main, ["parse", good, bad, "--json"])
    assert r.exit_code != 0
    data = json.loads(r.stdout)
    assert [f["ok"] for f in data["files"]] == [True, False]
    assert data["files"][1]["error"]["line"] == 16


@pytest.mark.slow
def test_python_dash_m_subprocess():
    """The real process: exit status 2, the message and caret on stderr, no traceback."""
    env = dict(os.environ, COLUMNS="60")
    for name in ("missing_semicolon.ptx", "invalid_utf8.ptx", "nul_bytes.ptx"):
        p = subprocess.run([sys.executable, "-m", "rrsplice", "show", str(BAD / name), "s1"],
                           capture_output=True, text=True, cwd=ROOT, env=env,
                           errors="replace")
        assert p.returncode == 2
        assert "Traceback" not in p.stderr + p.stdout
        line, column = BAD_EXPECTED[name][:2]
        lines = p.stderr.splitlines()
        assert lines[0].startswith(f"{BAD / name}:{line}:{column}: error:")
        assert lines[2].rstrip().endswith("^")   # never re-wrapped to the terminal width
