"""The builders' plan step (`recipe new`, `stages new`, `recipe port`): frozen records of
every decision, checked against the fixtures' own text (the generator's regex statement
reader, scripts/make_fixtures.py, not rrsplice's parser), every refusal raised before a byte
is written; and the recipe template, a real module whose code each generated recipe carries
byte for byte."""

from __future__ import annotations

import ast
import dataclasses
import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, RECIPES

from rrsplice.workflow import scaffold_render
from rrsplice.workflow.launch import LaunchError
from rrsplice.workflow.port import PortError, plan_port, write_port
from rrsplice.workflow.port_render import render_port
from rrsplice.workflow.recipe import BUNDLED_CORPUS, load_recipe
from rrsplice.workflow.scaffold import ScaffoldError, new_recipe
from rrsplice.workflow.scaffold_plan import RecipePlan, plan_recipe
from rrsplice.workflow.scaffold_render import TEMPLATE, fill_template, render_recipe
from rrsplice.workflow.stages import (
    StageError,
    plan_stage,
    render_recipe_text,
    render_table,
    write_stage,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from make_fixtures import MMA_OPCODE, statements  # noqa: E402  (the generator's reader)

TINY = FIXTURES / "swin_tiny_sm89.ptx"
SCOPES = FIXTURES / "small" / "scopes.ptx"


def _stmts(ptx: Path, entry: str | None = None) -> dict[int, tuple[int, int, str]]:
    """statement number -> (first line, last line, text), by the generator's reader."""
    funcs = statements(ptx.read_text())
    rows = funcs[entry] if entry else next(iter(funcs.values()))
    return {n: (a, b, t) for n, a, b, t in rows}


def _operands(text: str) -> list[list[str]]:
    """An mma's D, A, B, C register lists."""
    return [re.findall(r"%\w+", g) for g in re.findall(r"\{([^}]*)\}", text)]


@pytest.fixture(scope="module")
def tiny_p1(tmp_path_factory) -> RecipePlan:
    out = tmp_path_factory.mktemp("plan") / "t_p1.py"
    return plan_recipe("t_p1", TINY, "s342-s405", abi="scratch", out=out)


@pytest.mark.slow
def test_the_plan_of_an_mma_phase_matches_the_fixture_text(tiny_p1):
    p = tiny_p1
    st = _stmts(TINY)
    region = [st[n] for n in range(342, 406)]
    assert all(t.startswith(MMA_OPCODE) for _a, _b, t in region)     # one GEMM phase
    assert p.cut == (region[0][0], region[-1][1] + 1) and p.range_len == 64
    assert p.n_mma == 64 and p.phases == (p.phase.index,) and p.phase.mmas == 64
    ops = [_operands(t) for _a, _b, t in region]
    # A_REGS: the A operands in first-use order (an mma writes only D, never an A)
    a_first_use = list(dict.fromkeys(r for _d, a, _b, _c in ops for r in a))
    assert list(p.a_regs) == a_first_use
    # C_REGS: the C lists that no earlier mma of the region produced (the chain starts)
    produced: set = set()
    starts, chains = [], 0
    for d, _a, _b, c in ops:
        if not set(c) & produced:
            chains += 1
            starts += [r for r in c if r not in starts]
        produced |= set(d)
    assert set(p.c_regs) == set(starts) and p.phase.chains == chains == 16
    # what comes back is written by the region's mma
    assert p.ret_regs and set(p.ret_regs) <= produced
    # no array of the kernel is free: the recipe's own, one slot per thread
    assert p.own is not None and p.scratch == p.own.symbol == "d4r_t_p1_scratch"
    assert p.slots == "thread" and p.scratch_bytes == p.own.bytes == p.slot_size * p.threads
    assert p.call_opcode == "call.uni" and not p.barrier


@pytest.mark.slow
def test_the_plan_is_frozen_and_planning_writes_nothing(tiny_p1):
    with pytest.raises(dataclasses.FrozenInstanceError):
        tiny_p1.abi = "param"          # type: ignore[misc]
    assert not tiny_p1.path.exists() and list(tiny_p1.path.parent.iterdir()) == []


def test_the_plan_of_a_scoped_cut(tmp_path):
    """scopes.ptx (its comment says it): s4-s7 read %r1 from before the cut, and only %r4,
    stored at line 26, is read after it; the outer %r2 is written inside."""
    p = plan_recipe("sc", SCOPES, "s4-s7", abi="param", out=tmp_path / "sc.py")
    st = _stmts(SCOPES)
    assert p.cut == (st[4][0], st[7][1] + 1) == (19, 26)
    assert p.other_regs == ("%r1",) and p.ret_regs == ("%r4",)
    assert p.a_regs == p.c_regs == () and p.phase is None and p.scratch is None
    assert "st.global.u32 \t[%rd2+4], %r4;" in SCOPES.read_text().splitlines()[25]
    assert p.path == tmp_path / "sc.py" and not p.implicit


@pytest.mark.parametrize("args,kw,error,match", [
    (("not-a-name", TINY, "s342-s405"), {}, ScaffoldError, "must be a Python identifier"),
    (("t", TINY, "s342-s405"), {"abi": "shared"}, ScaffoldError, "--abi must be"),
    (("t", TINY, "s342-s405"), {"callee": "a-b"}, ScaffoldError, "not a PTX identifier"),
    (("t", TINY, "s342-s405"), {"scratch": "nope"}, ScaffoldError, "--scratch nope"),
    (("t", TINY, "s342-s405"), {"dynamic_smem": 1, "launch": "x.launch.json"},
     ScaffoldError, "not both"),
    (("t", TINY, "s342-s405"), {"dynamic_smem": -1}, ScaffoldError, "byte count"),
    (("d", FIXTURES / "edge" / "dynamic_smem_sm89.ptx", "s117-s180"),
     {"launch": FIXTURES / "swin_tiny.launch.json"}, LaunchError, "describes the launch of"),
])
def test_refusals_come_from_the_plan_before_anything_is_written(tmp_path, args, kw, error,
                                                                match):
    out = tmp_path / "r.py"
    with pytest.raises(error, match=match):
        plan_recipe(*args, out=out, **kw)
    with pytest.raises(error, match=match):
        new_recipe(*args, out=out, occupancy=False, **kw)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_output_is_refused_by_the_plan(tmp_path):
    out = tmp_path / "sc.py"
    out.write_text("keep me\n")
    with pytest.raises(ScaffoldError, match="exists; pass --force"):
        plan_recipe("sc", SCOPES, "s4-s7", abi="param", out=out)
    assert out.read_text() == "keep me\n"
    assert plan_recipe("sc", SCOPES, "s4-s7", abi="param", out=out, force=True).path == out


@pytest.mark.slow
def test_render_is_deterministic_and_carries_the_template_code(tiny_p1):
    text = render_recipe(tiny_p1, "swin_tiny_sm89.ptx")
    assert text == render_recipe(tiny_p1, "swin_tiny_sm89.ptx")
    template = TEMPLATE.read_text()
    code = template[template.index("\n_SIZE = ") + 1:]
    assert text.endswith(code)                     # the checked code, byte for byte
    tree = ast.parse(text)
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert "# qualifies this recipe's debug-stage names (t_p1.NAME)" in text
    assert "<layer>" not in text and "ruff: noqa" not in text and ": str = " not in text
    ns: dict = {}
    exec(compile(text, "t_p1.py", "exec"), ns)
    assert ns["A_REGS"] == list(tiny_p1.a_regs) and ns["CUT_CALL"] == tiny_p1.cut
    assert ns["OWN_SCRATCH"] == tiny_p1.own.bytes and ns["MODULE"] == "swin_tiny_sm89.ptx"
    rec = ns["recipe"]()
    assert rec["call"].count(f"call.uni {tiny_p1.callee}, (") == 1
    assert f".shared .align 16 .b8 {tiny_p1.scratch}[{tiny_p1.own.bytes}];" in rec["extern"]


def test_the_template_is_a_module_and_its_constants_are_the_renderers():
    import rrsplice.workflow.templates.recipe_template as t
    # its own sample values run through the same code a generated recipe runs
    assert t.RET_STRIDE == 24 and t._ret_layout()[0][-1] == ("%rrsx", 20)
    rec = t.recipe()
    assert rec["cut_call"] == t.CUT_CALL and "@%rrsq bra $L__BB0_9;" in rec["call"]
    assert rec["call"].rstrip().endswith("}") and "\tbar.sync 0;" in rec["call"]
    names = {n.target.id for n in ast.parse(TEMPLATE.read_text()).body
             if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    plan = plan_recipe("sc", SCOPES, "s4-s7", abi="param", out=Path("unused.py"))
    assert set(scaffold_render.constants(plan, "m.ptx")) == names
    with pytest.raises(ValueError, match="template constants"):
        fill_template('"""x\n"""', {"MODULE": "'m'"}, "sc")


# --- stages new ---

@pytest.fixture
def tiny_recipe(tmp_path) -> Path:
    p = tmp_path / "t.py"
    shutil.copyfile(RECIPES / "swin_tiny_sm89.py", p)
    return p


def test_stage_plan_of_a_phase_and_nothing_written(tiny_recipe):
    before = tiny_recipe.read_bytes()
    plan = plan_stage(tiny_recipe, phase=2)
    assert tiny_recipe.read_bytes() == before
    assert plan.name == "tiny_sm89.p2_out" and plan.function == "rrswin_tiny_kernel"
    st = _stmts(TINY)
    last = [t for a, b, t in st.values() if b == plan.line]
    assert len(last) == 1 and last[0].startswith(MMA_OPCODE)      # after the phase's last mma
    assert plan.after == f"s{next(n for n, (a, b, t) in st.items() if b == plan.line)}"
    # the registers its chains end in: D pairs of mma at or before that line
    d_regs = {r for a, b, t in st.values() if t.startswith(MMA_OPCODE) and b <= plan.line
              for r in _operands(t)[0]}
    assert plan.registers and len(plan.registers) % 2 == 0 and set(plan.registers) <= d_regs
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.line = 1                  # type: ignore[misc]


@pytest.mark.parametrize("kw,match", [
    ({"line": 1, "regs": "%r5"}, "lies in no function body"),
    ({"line": 1200, "regs": "%r5"}, "holds no statement"),
    ({"at": "s400", "regs": "%f1"}, "not defined on every path"),
    ({"phase": 2, "name": "other.x"}, "another layer"),
    ({"regs": "%r5"}, "exactly one of"),
    ({"at": "s400"}, "--regs is required"),
    ({"at": "s400", "regs": "%r1018 r-x"}, "not a register name"),
    ({"phase": 99}, "has phases 1-"),
])
def test_stage_refusals_come_from_the_plan(tiny_recipe, kw, match):
    before = tiny_recipe.read_bytes()
    with pytest.raises(StageError, match=match):
        plan_stage(tiny_recipe, **kw)
    assert tiny_recipe.read_bytes() == before


def test_a_clash_is_refused_before_the_file_is_written(tiny_recipe):
    write_stage(plan_stage(tiny_recipe, at="s400", regs="%r1018"))
    once = tiny_recipe.read_bytes()
    again = plan_stage(tiny_recipe, at="s400", regs="%r1019")      # plans fine ...
    with pytest.raises(StageError, match="already has a stage 'tiny_sm89.s400'"):
        write_stage(again)                                          # ... the table refuses
    assert tiny_recipe.read_bytes() == once
    assert load_recipe(tiny_recipe).stages() == {"tiny_sm89.s400": (1198, ["%r1018"])}


def test_the_stages_block_renders_without_io():
    regs = [f"%r{i}" for i in range(1000, 1020)]
    table = {"l.a": (10, ["%r1"]), "l.b": (20, regs)}
    block = render_table(table)
    assert max(len(x) for x in block.splitlines()) <= 92           # long lists wrap
    text = render_recipe_text("X = 1", table)
    ns: dict = {}
    exec(text, ns)
    assert ns["stages"]() == table and ns["X"] == 1
    assert render_recipe_text(text, table) == text                 # replaced, not appended
    assert render_recipe_text(text, {"l.a": (11, [])}).count("STAGES = {") == 1


# --- recipe port ---

def _variant(v: str) -> str:
    return f"{BUNDLED_CORPUS / f'swin_tiny_{v}_sm89.ptx'}:rrswin_tiny_{v}_kernel"


@pytest.mark.slow
def test_port_plan_aligns_the_region_and_writes_nothing(tmp_path):
    out = tmp_path / "p.py"
    plan = plan_port(RECIPES / "tiny_family.py", _variant("mvhi_ldr"), out=out)
    assert not out.exists() and plan.dest == out and not plan.implicit
    (a1, a2), (b1, b2) = plan.region
    ref = _stmts(BUNDLED_CORPUS / "swin_tiny_mvhi_hdr_sm89.ptx")
    tgt = _stmts(BUNDLED_CORPUS / "swin_tiny_mvhi_ldr_sm89.ptx")
    # statement for statement the same opcodes, and the cut's lines are the target's
    ops = [ref[n][2].split()[0] for n in range(a1, a2 + 1)]
    assert ops == [tgt[n][2].split()[0] for n in range(b1, b2 + 1)]
    assert plan.lines == (tgt[b1][0], tgt[b2][1] + 1)
    assert dict(plan.consts)["CUT_CALL"] == plan.lines and plan.target == "rrswin_tiny_mvhi_ldr_kernel"
    # the call text names only the target's registers, renamed where they differ
    call = dict(plan.texts)["CALL"]
    assert all(old not in re.findall(r"%\w+", call) or old in plan.registers.values()
               for old in plan.registers)
    text = render_port(plan)
    assert text == render_port(plan) and text.startswith('"""')
    res = write_port(plan, text)
    assert res.output == out and out.read_text() == text and res.report.ok


@pytest.mark.slow
def test_port_refusals_come_from_the_plan(tmp_path):
    out = tmp_path / "p.py"
    with pytest.raises(PortError, match="the region does not align"):
        plan_port(RECIPES / "tiny_family.py", _variant("mvhi_ldr_folded"), out=out)
    out.write_text("keep\n")
    with pytest.raises(PortError, match="exists; use --force"):
        plan_port(RECIPES / "tiny_family.py", _variant("mvhi_ldr"), out=out)
    with pytest.raises(PortError, match="no such module"):
        plan_port(RECIPES / "tiny_family.py", str(tmp_path / "none.ptx"), out=tmp_path / "q.py")
    assert out.read_text() == "keep\n" and sorted(x.name for x in tmp_path.iterdir()) == ["p.py"]
