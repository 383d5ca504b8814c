"""Liveness on real inputs: hand-computed facts, whole-corpus consistency, the seed modules,
the large real-compiler module, the `rrsplice liveness` command and the cache."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rrsplice import parse
from rrsplice.analysis.dataflow import FunctionAnalysis, analyze
from rrsplice.analysis.semantics import register_sort_key
from rrsplice.ptx.errors import ParseError
from rrsplice.ptx.select import StatementRange, lines_to_range

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "corpus_fixtures"
DEC2 = FIX / "0021-PREPASS_ENTRYPOINT_NAME.ptx"
DEC1 = FIX / "0022-PREPASS_ENTRYPOINT_NAME.ptx"
BIG = FIX / "swin_big_sm89.ptx"
RECIPE = ROOT / "recipes" / "seed" / "swin_dec2_recipe.py"

_modules: dict = {}


def module(path):
    path = Path(path)
    if not path.is_file():
        pytest.fail(f"{path.name} is missing")
    if path not in _modules:
        _modules[path] = parse(path)
    return _modules[path]


def body_fn(m):
    return next(f for f in m.functions if f.has_body)


# ---------------------------------------------------------------- cfg_loops.ptx

def expectations(path) -> dict:
    out = {}
    for line in Path(path).read_text().splitlines():
        mm = re.match(r"^// EXPECT (\w+): (.*)$", line)
        if mm:
            out[mm.group(1)] = mm.group(2).split()
    return out


def test_cfg_loops_hand_computed_region():
    path = FIX / "small" / "cfg_loops.ptx"
    exp = expectations(path)
    assert len(exp) >= 10
    fn = parse(path).functions[0]
    fa = analyze(fn)
    l1, l2 = map(int, exp["region_lines"])
    rng = lines_to_range(fn, l1, l2)
    assert [rng.first, rng.last] == list(map(int, exp["region_statements"]))
    assert fa.range_entries(rng) == list(map(int, exp["entries"]))
    assert sorted(t for _, t in fa.range_exits(rng)) == list(map(int, exp["exits"]))
    live_in = fa.range_live_in(rng)
    live_out = fa.range_live_out(rng)
    assert live_in == exp["live_in"]
    assert live_out == exp["live_out"]
    assert fa.range_pass_in_for_out(rng) == exp["live_out_not_always_written"]
    touched = set(fa.range_defs(rng))
    for i in range(rng.first, rng.last + 1):
        touched.update(fa.du[i - 1].uses)
    through = [r for r in fa.range_live_through(rng) if r not in touched]
    assert through == exp["live_through"]
    assert not set(exp["not_live_in"]) & set(live_in)
    assert not set(exp["not_live_out"]) & set(live_out)


def test_cfg_loops_reaching_definitions_and_first_uses():
    fn = parse(FIX / "small" / "cfg_loops.ptx").functions[0]
    fa = analyze(fn)
    rng = StatementRange(15, 35)
    # %r6 reaches the side entry s24 both from the prologue (s8) and from s16
    assert fa.reaching_defs(24, "%r6") == [8, 16]
    assert fa.reaching_defs(15, "%r6") == [8]
    # the guarded mov (s23) and the prologue's s10 both reach the join
    assert fa.reaching_defs(33, "%r8") == [10, 23]
    assert fa.reaching_defs(1, "%r1") == [] and fa.reaches_from_entry(1, "%r1")
    assert not fa.reaches_from_entry(15, "%r1")
    # %r8 is read only on the early-exit path; %r12 is redefined before any read
    assert fa.first_uses_after(rng, "%r8") == [46]
    assert fa.first_uses_after(rng, "%r12") == []
    assert fa.first_uses_after(rng, "%r10") == [36]
    assert "%r12" in fa.range_defs(rng) and "%r12" not in fa.range_live_out(rng)


# ---------------------------------------------------------------- whole corpus

MAY_BE_UNDEFINED = {"tabs_spaces": {"%r2"}}


def corpus_files():
    # conformance/ and its big/ module are walked by tests/test_conformance.py
    return sorted(p for p in FIX.rglob("*.ptx")
                  if not {"bad", "out", "conformance"} & set(p.relative_to(FIX).parts))


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: str(p.relative_to(FIX)))
@pytest.mark.slow
def test_every_use_is_live_in_or_defined_earlier(path):
    """The solver's fixpoint on every corpus function: the dataflow equations hold over
    rrsplice's own def/use. This is a self-consistency check of the solver, not an oracle
    for the def/use table; the oracles are the path-search property tests
    (tests/test_liveness_property.py, each instruction's ground truth written beside it) and
    the seed modules' independent scanner (tests/test_seed_modules_check.py)."""
    try:
        m = parse(path)
    except ParseError as exc:
        pytest.fail(f"{path} does not parse: {exc.render()}")
    for fn in m.functions:
        if not fn.has_body:
            continue
        fa = FunctionAnalysis(fn)
        for b in fa.cfg.blocks:
            live_in = fa.block_live_in(b.id)
            live_out = fa.block_live_out(b.id)
            succ_in = set()
            for s in b.succs:
                succ_in |= fa.block_live_in(s)
            assert live_out <= succ_in, (fn.name, b)
            assert live_out == succ_in, (fn.name, b)
            defined = set()
            for i in range(b.first, b.last + 1):
                d = fa.du[i - 1]
                for r in d.uses:
                    assert r in live_in or r in defined, (fn.name, f"s{i}", r)
                defined.update(d.defs)
            # block live-in recomputed from the block's live-out, statement by statement
            live = set(live_out)
            for i in range(b.last, b.first - 1, -1):
                d = fa.du[i - 1]
                live.difference_update(d.kills)
                live.update(d.uses)
            assert live == live_in, (fn.name, b)
        # registers live at the function's entry are read on some path before any write.
        # The only fixture that does so is tabs_spaces.ptx, on purpose: %r2 is written
        # under @%p1 and under @!%p2, which do not cover every path.
        if fa.cfg.blocks:
            undefined = set(fa.block_live_in(0))
            assert undefined == MAY_BE_UNDEFINED.get(fn.name, set()), (fn.name, undefined)


@pytest.mark.slow
def test_statement_sets_match_a_plain_backward_scan_on_the_large_module():
    """Checkpointed per-statement queries equal a scan from the block's end (the fast
    query path against the plain one, both over rrsplice's def/use: self-consistency)."""
    fn = body_fn(module(BIG))
    fa = FunctionAnalysis(fn)
    b = max(fa.cfg.blocks, key=len)
    picks = set(range(b.last, max(b.first, b.last - 70) - 1, -1))
    picks |= {b.first, b.first + 1, (b.first + b.last) // 2, b.first + 4000}
    picks = {i for i in picks if b.first <= i <= b.last}
    live = set(fa.block_live_out(b.id))
    for i in range(b.last, b.first - 1, -1):
        if i in picks:
            assert fa.live_out_at(i) == live, i
        d = fa.du[i - 1]
        live.difference_update(d.kills)
        live.update(d.uses)
        if i in picks:
            assert fa.live_in_at(i) == live, i


# ---------------------------------------------------------------- the seed modules

def recipe_constants():
    ns: dict = {}
    exec(compile(RECIPE.read_text(), str(RECIPE), "exec"), ns)
    return ns


@pytest.mark.slow
def test_dec2_live_out_is_exactly_the_return_registers():
    fa = analyze(body_fn(module(DEC2)))
    assert fa.range_live_out(StatementRange(452, 15510)) == [
        "%r19360", "%r19361", "%r19370", "%r19371"]


def test_dec2_live_in_is_a_c_pointers_and_weight_fragment_loads():
    fa = analyze(body_fn(module(DEC2)))
    fn = fa.fn
    rng = StatementRange(452, 15510)
    consts = recipe_constants()
    live_in = fa.range_live_in(rng)
    expected_named = set(consts["A_REGS"]) | set(consts["C_REGS"]) | {"%rd32", "%rd7"}
    assert len(consts["A_REGS"]) == 48 and len(consts["C_REGS"]) == 12
    assert expected_named <= set(live_in)
    rest = [r for r in live_in if r not in expected_named]
    # everything else is a B-fragment register loaded from the weight image at a constant
    # offset: 24 `ld.global.nc.v4.u32 {...}, [%rd32+OFF]` of four registers each
    loads = set()
    for r in rest:
        (d,) = fa.reaching_defs(rng.first, r)
        st = fn.statements[d - 1]
        assert st.base == "ld" and "nc" in st.modifiers, (r, st.text)
        addr = st.operands[1]
        assert addr.base.name == "%rd32", (r, st.text)
        loads.add(d)
    assert len(rest) == 96 and len(loads) == 24
    offsets = sorted(fn.statements[d - 1].operands[1].offset for d in loads)
    assert offsets == list(range(0, 47104 + 1, 2048))
    # reaching definitions of the named pointers
    assert [fn.statements[d - 1].opcode for d in fa.reaching_defs(rng.first, "%rd32")] == [
        "cvta.to.global.u64"]
    assert fa.reaching_defs(rng.first, "%rd7") == [1]


def test_dec1_live_out_is_exactly_the_ten_stated_registers():
    fa = analyze(body_fn(module(DEC1)))
    assert fa.range_live_out(StatementRange(403, 15988)) == [
        "%r18794", "%r18795", "%r18804", "%r18805", "%r18834", "%r18835", "%r18844",
        "%r18845", "%r18991", "%r18993"]


# ---------------------------------------------------------------- large real-compiler module

@pytest.mark.slow
def test_large_module_epilogue_region_checked_by_hand():
    """The last two texture reads, the integer-coordinate arithmetic and the bounds test of
    swin_big_sm89.ptx (nvcc output), from `tex ... [%rd8, {...}]` to `@%pN bra $L__BB0_2`
    (16 statements). Worked out by reading the text:

        s0  tex   {T0..T3}, [%rd8, {X, Y}]      reads %rd8 X Y
        s1  cvt   a, T0          s2  add b, a, %r1         reads %r1
        s3  cvt   c, T1          s4  add d, c, %r2         reads %r2
        s5  cvt   e, b           s6  cvt f, d
        s7  tex   {U0..U3}, [%rd9, {e, f}]      reads %rd9
        s8  fma   %f1, W, A1, U0                reads W A1
        s9  fma   %f2, W, A2, U1                reads A2
        s10 fma   %f3, W, A3, U2                reads A3
        s11 fma   %f4, U3, V, A4                reads V A4
        s12 setp  p, %r1, WIDTH                 reads WIDTH
        s13 setp  q, %r2, HEIGHT                reads HEIGHT
        s14 or    r, p, q        s15 @r bra $L__BB0_2

    live-in: %rd8 X Y %r1 %r2 %rd9 W A1 A2 A3 V A4 WIDTH HEIGHT (14 registers).
    live-out: %f1..%f4 only (converted to f16 on the fall-through path); the predicate is
    consumed by the branch inside the region, and the branch target is just `ret`.
    The register numbers change whenever the fixture is regenerated, so the test names
    the operands by position, as above.
    """
    m = module(BIG)
    fn = body_fn(m)
    lines = m.text.split("\n")
    first = next(i for i, t in enumerate(lines, 1) if "tex.2d" in t and "[%rd8, {" in t)
    last = next(i for i, t in enumerate(lines, 1) if re.search(r"@%p\d+ bra \t?\$L__BB0_2", t))
    rng = lines_to_range(fn, first, last)
    assert len(rng) == 16
    s = [fn.statements[i - 1] for i in range(rng.first, rng.last + 1)]
    assert [x.base for x in s] == ["tex", "cvt", "add", "cvt", "add", "cvt", "cvt", "tex",
                                   "fma", "fma", "fma", "fma", "setp", "setp", "or", "bra"]
    ops = lambda k: [o.name if hasattr(o, "name") else o for o in s[k].operands]  # noqa: E731
    tex_a, tex_b = s[0].operands[1], s[7].operands[1]
    x, y = (r.name for r in tex_a.coords.items)
    expected = {"%rd8", x, y, "%r1", "%r2", tex_b.base.name,
                ops(8)[1], ops(8)[2], ops(9)[2], ops(10)[2], ops(11)[2], ops(11)[3],
                ops(12)[2], ops(13)[2]}
    assert len(expected) == 14
    fa = analyze(fn)
    live_in = fa.range_live_in(rng)
    assert set(live_in) == expected
    assert live_in == sorted(live_in, key=register_sort_key)
    assert fa.range_live_out(rng) == ["%f1", "%f2", "%f3", "%f4"]
    ret = fn.statements[-1]
    assert sorted(t for _, t in fa.range_exits(rng)) == [rng.last + 1, ret.index - 1]
    (use,) = fa.first_uses_after(rng, "%f1")
    assert re.search(r"cvt\.rn\.f16\.f32 %rs\d+, %f1;", fn.statements[use - 1].text)
    (d,) = fa.reaching_defs(rng.first, "%rd8")
    assert "ld.param.u64" in fn.statements[d - 1].text
    assert "_param_0+48]" in fn.statements[d - 1].text


# ---------------------------------------------------------------- the command

def run_cli(*args, env=None, cwd=ROOT):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", "from rrsplice.cli import main; main()",
                           *args], capture_output=True, text=True, cwd=cwd, env=e)


@pytest.fixture
def cache_env(tmp_path):
    return {"RRSPLICE_CACHE_DIR": str(tmp_path / "cache")}


def test_cli_liveness_json_on_cfg_loops(cache_env):
    r = run_cli("liveness", "corpus_fixtures/small/cfg_loops.ptx", "--lines", "93-113",
                "--json", env=cache_env)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["range"] == "s15-s35"
    assert [x["register"] for x in data["live_in"]] == ["%p2", "%r1", "%r3", "%r4", "%r5",
                                                        "%r6", "%r8"]
    assert [x["register"] for x in data["live_out"]] == ["%r5", "%r8", "%r10", "%r11"]
    r6 = next(x for x in data["live_in"] if x["register"] == "%r6")
    assert [d["sid"] for d in r6["reaching_defs"]] == ["s8"]
    r8 = next(x for x in data["live_out"] if x["register"] == "%r8")
    assert [u["sid"] for u in r8["first_uses_after"]] == ["s46"]
    assert data["live_out_also_passed_in"] == ["%r5", "%r8", "%r11"]
    assert data["entries"] == ["s15", "s24"]
    for x in data["live_in"]:
        assert x["class"] in ("passed", "derivable", "special", "other")


@pytest.mark.slow
def test_cli_liveness_default_module_and_recipe_agree(cache_env, tmp_path):
    r1 = run_cli("liveness", "--range", "s452-s15510", "--json", env=cache_env)
    assert r1.returncode == 0, r1.stderr
    a = json.loads(r1.stdout)
    assert [x["register"] for x in a["live_out"]] == ["%r19360", "%r19361", "%r19370",
                                                      "%r19371"]
    r2 = run_cli("liveness", str(RECIPE), "--json", env=cache_env)   # the recipe's cut
    assert r2.returncode == 0, r2.stderr
    b = json.loads(r2.stdout)
    assert b["range"] == "s452-s15510"
    assert [x["register"] for x in a["live_in"]] == [x["register"] for x in b["live_in"]]
    assert a["live_out"] == b["live_out"]
    # a bare range counts the least a call must pass; the recipe counts what its call passes
    assert (a["passed_means"], b["passed_means"]) == ("minimal", "recipe")
    by_class = {}
    for x in b["live_in"]:
        by_class.setdefault(x["class"], []).append(x["register"])
    r4 = run_cli("check", str(RECIPE), "--json", env=cache_env)
    assert r4.returncode == 0, r4.stderr
    assert by_class == json.loads(r4.stdout)["facts"]["live_in_classes"]
    r5 = run_cli("outline", str(RECIPE), "-o", str(tmp_path / "body.ptx"), "--json",
                 env=cache_env)
    assert r5.returncode == 0, r5.stderr
    outline = json.loads(r5.stdout)
    assert outline["live_in_classes"] == by_class
    # the body recomputes exactly the derivable registers and loads the passed ones (plus
    # the scratch array's address, which is not live-in)
    assert sorted(outline["recomputed"]) == sorted(by_class["derivable"])
    assert set(by_class["passed"]) <= set(outline["passed"])
    assert len(outline["passed"]) == len(by_class["passed"]) + 1
    classes = {}
    for x in a["live_in"]:
        classes.setdefault(x["class"], []).append(x["register"])
    consts = recipe_constants()
    named = set(consts["A_REGS"]) | set(consts["C_REGS"]) | {"%rd32", "%rd7"}
    # the 24 weight-fragment loads (96 registers) are derivable from the weight image
    # pointer; the bias seeds are weight-image loads too, so they may be either
    derivable = set(classes.get("derivable", []))
    passed = set(classes.get("passed", []))
    assert len(derivable - named) == 96
    assert set(consts["A_REGS"]) | {"%rd32", "%rd7"} <= passed <= named
    assert set(consts["C_REGS"]) <= passed | derivable
    assert set(classes) <= {"passed", "derivable"}
    r3 = run_cli("liveness", str(RECIPE), env=cache_env)              # tables
    assert r3.returncode == 0 and "live-out: 4 registers" in r3.stdout


@pytest.mark.parametrize("args,needle", [
    (["corpus_fixtures/small/cfg_loops.ptx", "--range", "s40-s99"], "outside"),
    (["corpus_fixtures/small/cfg_loops.ptx", "--range", "s1-s3", "--lines", "80-90"],
     "not both"),
    (["corpus_fixtures/small/cfg_loops.ptx"], "--range"),
    (["corpus_fixtures/small/cfg_loops.ptx", "--lines", "79-79x"], "bad line range"),
    (["corpus_fixtures/small/no_such.ptx", "--range", "s1-s2"], "no_such"),
])
def test_cli_liveness_errors_exit_2_without_traceback(args, needle, cache_env):
    r = run_cli("liveness", *args, env=cache_env)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert needle in (r.stderr + r.stdout)


# ---------------------------------------------------------------- the cache

def test_cache_round_trip_corruption_and_opt_out(tmp_path, monkeypatch):
    from rrsplice.infra import cache
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("RRSPLICE_NO_CACHE", raising=False)
    src = tmp_path / "m.ptx"
    src.write_bytes((FIX / "small" / "cfg_loops.ptx").read_bytes())
    m1 = cache.load_module(src)
    entry = cache.entry_path(src)
    assert entry.is_file()
    assert cache.load_module(src) is m1        # this process keeps the model it loaded
    cache.forget_loaded()                      # from here on: the cache on disk
    m2 = cache.load_module(src)
    assert m2 is not m1 and m2.data == m1.data and m2.path == str(src)
    f1, f2 = m1.functions[0], m2.functions[0]
    assert [s.text for s in f1.statements] == [s.text for s in f2.statements]
    assert [(s.opcode, s.operands, s.guard, s.line) for s in f1.statements] == \
        [(s.opcode, s.operands, s.guard, s.line) for s in f2.statements]
    assert f2.statements[3].function is f2 and f2.statements[3].block is not None
    fa = cache.load_analysis(m2, f2)
    assert fa.fn is f2
    fa2 = cache.load_analysis(cache.load_module(src), cache.load_module(src).functions[0])
    rng = StatementRange(15, 35)
    assert fa2.range_live_out(rng) == ["%r5", "%r8", "%r10", "%r11"]
    assert fa2.range_live_in(rng) == analyze(f1).range_live_in(rng)

    # a corrupted entry is a miss: parsed again, and the entry rewritten whole
    entry.write_bytes(b"\x80\x05garbage")
    cache.forget_loaded()
    m3 = cache.load_module(src)
    assert len(m3.functions[0].statements) == 47
    assert entry.read_bytes()[:2] != b"\x80\x05g"
    for p in (tmp_path / "c" / "analysis").iterdir():
        p.write_bytes(b"")
    fa3 = cache.load_analysis(m3, m3.functions[0])
    assert fa3.range_live_out(rng) == ["%r5", "%r8", "%r10", "%r11"]
    # another object pickled under the key is not trusted either
    import pickle
    entry.write_bytes(pickle.dumps({"not": "a module"}))
    cache.forget_loaded()
    assert cache.load_module(src).functions[0].name == "cfg_loops"

    # changed content: a different key, never the stale entry
    src.write_bytes(src.read_bytes().replace(b"mov.u32 \t%r7, 9;", b"mov.u32 \t%r7, 8;"))
    assert cache.entry_path(src) != entry
    assert b"%r7, 8" in cache.load_module(src).data

    # opting out writes nothing
    monkeypatch.setenv("RRSPLICE_NO_CACHE", "1")
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "off"))
    cache.load_module(src)
    assert not (tmp_path / "off").exists()
    assert cache.entry_path(src) is None


def test_cache_dir_defaults_to_the_user_cache(monkeypatch):
    from rrsplice.infra import cache
    monkeypatch.delenv("RRSPLICE_CACHE_DIR", raising=False)
    import platformdirs
    assert cache.cache_dir() == Path(platformdirs.user_cache_dir("rrsplice"))


# ---------------------------------------------------------------- call blocks

def test_call_block_values_flow_through_param_slots(cache_env):
    m = parse(FIX / "small" / "calls.ptx")
    fn = m.function("calls_entry")
    fa = analyze(fn)
    text = [s.text for s in fn.statements]
    call = next(i for i, t in enumerate(text, 1) if t.startswith("call.uni (retval0),\n"))
    first_st = next(i for i, t in enumerate(text, 1) if t.startswith("st.param.b32 \t[param0]"))
    # cutting between the argument stores and the call: the slots cross the cut
    rng = StatementRange(first_st + 1, call)
    assert fa.range_live_in(rng) == ["%r2"]
    assert fa.range_live_in(rng, pseudo=True) == ["%r2", "param:param0"]
    # the returned value is read from the return slot after the call
    assert fa.reaching_defs(call + 1, "param:retval0") == [call]
    assert "%r1" in fa.live_in_at(first_st) and "%r1" not in fa.live_out_at(first_st)
    r = run_cli("liveness", "corpus_fixtures/small/calls.ptx", "--entry", "calls_entry",
                "--range", f"s{rng.first}-s{rng.last}", "--pseudo", "--json", env=cache_env)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [(x["register"], x["class"]) for x in data["live_in"]] == [
        ("%r2", "passed"), ("param:param0", "other")]


def test_one_process_loads_each_model_once_and_never_a_stale_one(tmp_path, monkeypatch):
    """`load_module` keeps the last few models: a hook or `apply --all` checking many
    recipes of one kernel unpickles it once, and its analyses stay with it."""
    from rrsplice.infra import cache
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("RRSPLICE_NO_CACHE", raising=False)
    text = (FIX / "small" / "cfg_loops.ptx").read_bytes()
    a, b = tmp_path / "a.ptx", tmp_path / "b.ptx"
    a.write_bytes(text)
    b.write_bytes(text)
    m = cache.load_module(a)
    assert cache.load_module(a) is m
    fa = cache.load_analysis(m, m.functions[0])
    assert cache.load_analysis(m, m.functions[0]) is fa
    # the same bytes under another name: its own model, naming its own file
    mb = cache.load_module(b)
    assert mb is not m and mb.path == str(b) and m.path == str(a)
    # an edited file is never served from memory
    a.write_bytes(text.replace(b"mov.u32 \t%r7, 9;", b"mov.u32 \t%r7, 8;"))
    edited = cache.load_module(a)
    assert edited is not m and b"%r7, 8" in edited.data
    # another cache directory, or no cache at all: not this process's model either
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "other"))
    assert cache.load_module(b) is not mb
    monkeypatch.setenv("RRSPLICE_NO_CACHE", "1")
    assert cache.load_module(b) is not cache.load_module(b)
    # a bounded number of models: the oldest is dropped
    monkeypatch.delenv("RRSPLICE_NO_CACHE")
    first = cache.load_module(b)
    for i in range(cache._LOADED_SIZE):
        p = tmp_path / f"n{i}.ptx"
        p.write_bytes(text + b"\n" * (i + 1))
        cache.load_module(p)
    assert cache.load_module(b) is not first
    # `rrsplice cache clear` forgets this process's models too
    kept = cache.load_module(b)
    cache.clear()
    assert cache.load_module(b) is not kept
