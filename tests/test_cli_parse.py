"""`rrsplice parse`, `functions` and `show`, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrsplice.cli import main

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "corpus_fixtures" / "small"
MULTI = str(SMALL / "multi_entry.ptx")
MULTILINE = str(SMALL / "shapes_multiline.ptx")
CALLS = str(SMALL / "calls.ptx")


def run(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in r.stdout + r.stderr
    return r


def run_json(*args):
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    return json.loads(r.stdout)   # only JSON on stdout


# ---------------------------------------------------------------- parse

def test_parse_table(monkeypatch):
    monkeypatch.chdir(SMALL)
    files = sorted(SMALL.glob("*.ptx"))
    r = run("parse", *[f.name for f in files])
    assert r.exit_code == 0
    assert "calls.ptx" in r.stdout and "crlf.ptx" in r.stdout
    assert r.stdout.count("identical") == len(files)
    assert r.stdout.count(" ok ") == len(files)


def test_parse_json_facts():
    data = run_json("parse", SMALL / "nvcc_small_mma.ptx", MULTILINE, SMALL / "no_final_newline.ptx")
    assert data["ok"] is True
    a, b, c = data["files"]
    assert (a["ok"], a["lines"], a["mma"], a["functions"], a["round_trip"]) == (True, 139, 4, 1, True)
    assert a["statements"] == 61 and a["seconds"] >= 0
    assert (b["mma"], b["statements"]) == (2, 27)
    assert c["lines"] == 33 and c["round_trip"] is True


def test_parse_failure_in_a_list_is_reported_and_fails(monkeypatch):
    monkeypatch.chdir(ROOT / "corpus_fixtures")
    r = run("parse", "small/shapes_multiline.ptx", "bad/unknown_char.ptx")
    assert r.exit_code == 2
    assert "16:21" in r.stdout
    assert "unknown_char.ptx:16:21: error" in r.stderr


# ---------------------------------------------------------------- functions

def test_functions_json():
    data = run_json("functions", CALLS)
    rows = {f["name"]: f for f in data["functions"]}
    assert list(rows) == ["ext_body", "ext_sync", "add3", "pair", "noargs", "calls_entry"]
    assert rows["ext_body"]["has_body"] is False and rows["ext_body"]["linkage"] == [".extern"]
    assert rows["add3"]["params"] == [".param .b32 add3_param_0", ".param .b32 add3_param_1",
                                      ".param .b32 add3_param_2"]
    assert rows["add3"]["return_params"] == [".param .b32 func_retval0"]
    assert rows["pair"]["return_params"] == [".param .align 8 .b8 func_retval0[8]"]
    assert rows["add3"]["lines"] == [24, 40] and rows["add3"]["statements"] == 7
    assert rows["calls_entry"]["kind"] == ".entry"


def test_functions_perf_and_table():
    data = run_json("functions", SMALL / "shapes_header.ptx")
    entry = next(f for f in data["functions"] if f["kind"] == ".entry")
    assert [".maxntid", [32, 1, 4]] in entry["performance"]
    r = run("functions", MULTI)
    assert r.exit_code == 0
    for name in ("clamp255", "entry_a", "entry_b", "_Z7entry_c6Params"):
        assert name in r.stdout


# ---------------------------------------------------------------- show

def test_show_by_sid_json():
    data = run_json("show", MULTILINE, "s1")
    assert data["sid"] == "s1" and data["lines"] == [25, 25]
    assert data["opcode"] == "ld.param.u64" and data["base"] == "ld"
    assert data["modifiers"] == ["param", "u64"]
    assert data["function"] == "shapes_multiline"
    assert [o["kind"] for o in data["operands"]] == ["reg", "addr"]


@pytest.mark.parametrize("line", [32, 33, 34, 35, 36])
def test_show_line_anywhere_inside_a_multiline_statement(line):
    data = run_json("show", MULTILINE, "--line", line)
    assert data["lines"] == [32, 36]
    assert data["opcode"].startswith("mma.sync.aligned.m16n8k32")
    assert [o["kind"] for o in data["operands"]] == ["vec"] * 4
    assert data["operands"][0]["registers"] == ["%r1", "%r2"]
    same = run_json("show", MULTILINE, data["sid"])
    assert same == data


def test_show_guard_and_table_output():
    r = run("show", SMALL / "shapes_operands.ptx", "--line", "54")
    assert r.exit_code == 0
    assert "sub" in r.stdout and "@!%p1" in r.stdout and "lines 54-54" in r.stdout
    data = run_json("show", SMALL / "shapes_operands.ptx", "--line", "54")
    assert data["guard"] == "@!%p1"


def test_show_line_without_statement_and_bad_sid():
    r = run("show", MULTILINE, "--line", "37")         # a comment line
    assert r.exit_code == 2 and "holds no statement" in r.stderr
    r = run("show", MULTILINE, "s999")
    assert r.exit_code == 2 and "s999" in r.stderr
    r = run("show", MULTILINE)
    assert r.exit_code == 2


def test_implicit_choice_note():
    """calls.ptx has four bodies but one .entry: that one is used, and the user is told."""
    r = run("show", CALLS, "s1")
    assert r.exit_code == 0
    assert "using calls_entry, the only .entry with a body" in r.stderr
    data = run_json("show", CALLS, "s1")   # the note never pollutes JSON
    assert data["function"] == "calls_entry"


def test_ambiguous_entry_lists_candidates():
    r = run("show", MULTI, "s1")
    assert r.exit_code == 2
    assert "--entry" in r.stderr
    for name in ("entry_a", "entry_b", "_Z7entry_c6Params"):
        assert name in r.stderr
    r = run("show", MULTI, "s1", "--json")
    assert r.exit_code == 2
    err = json.loads(r.stdout)
    assert err["ok"] is False and "entry_b" in err["error"]["message"]


def test_entry_option_selects_and_numbering_restarts():
    a = run_json("show", MULTI, "s1", "--entry", "entry_a")
    b = run_json("show", MULTI, "s1", "--entry", "entry_b")
    assert a["function"] == "entry_a" and b["function"] == "entry_b"
    assert a["lines"] == [38, 38] and b["lines"] == [64, 64]
    f = run_json("show", MULTI, "s1", "--entry", "clamp255")
    assert f["function"] == "clamp255"
    r = run("show", MULTI, "s1", "--entry", "nope")
    assert r.exit_code == 2 and "nope" in r.stderr and "entry_a" in r.stderr
