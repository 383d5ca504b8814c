"""Fuzz: declarations as ptxas scopes them, and values crossing scaffolded cuts.

* Random nested blocks that use a name before and after their own `.reg` of it, and
  `.reg`s with special registers' names: every operand binds to the declaration the
  generator recorded (tests/fuzz_cuts.py), not to a later one, and distinct blocks give
  distinct keys.
* Random straight-line kernels with predicates, a `.v2` register and declared special
  names, cut at random and scaffolded by `recipe new` (either return convention): `check`
  passes, `outline` accepts (check passes => outline accepts), and the reference
  interpreter computes the same global memory for the original kernel and for the
  applied kernel running the outlined body.
"""

from __future__ import annotations

import random

import pytest
from fuzz_cuts import cut_program, scoped_program
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cut_values import G, _original, _spliced

from rrsplice.check import check_recipe
from rrsplice.outline import outline_recipe
from rrsplice.ptx.parser import parse
from rrsplice.ptx.scopes import SEP, is_scoped
from rrsplice.workflow.scaffold import new_recipe
from rrsplice.workflow.splice import apply

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def _binding(reg) -> object:
    if reg.special:
        return "special"
    return ("block", int(reg.key.split(SEP + "B")[1])) if is_scoped(reg.key) else "outer"


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(SEEDS)
def test_every_operand_binds_to_the_declaration_in_force_where_it_stands(seed):
    text, truth = scoped_program(random.Random(seed))
    fn = parse(text).functions[0]
    got = [[(r.name, _binding(r)) for r in st.registers()] for st in fn.statements]
    assert got == truth, text


def _inputs(rnd) -> dict:
    """The words the kernels load (byte offsets 0-47), with values around the compare
    immediates so that the predicates go both ways."""
    return {4 * k: rnd.choice([0, 2, 3, 9, 10, 11, 49, 50, 51, 1 << 31, 0xFFFFFFFF])
            for k in range(12)}


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(SEEDS)
@pytest.mark.slow
def test_scaffolded_cuts_of_predicates_vectors_and_special_names_deliver_every_value(
        tmp_path_factory, seed):
    rnd = random.Random(seed)
    text, rng, stores = cut_program(rnd)
    abi = rnd.choice(["param", "scratch"])
    work = tmp_path_factory.mktemp("fuzzcut")
    (work / "m.ptx").write_text(text)
    rec = work / "r.py"
    new_recipe("r", work / "m.ptx", rng, abi=abi, out=rec, occupancy=False)
    rep = check_recipe(rec)
    assert rep.ok, (text, rng, abi, [f.render() for f in rep.errors])
    body, _path, _rec = outline_recipe(rec)          # check passed: outline must accept
    applied = apply(rec, out=work / "o.ptx").output.read_text()
    for _ in range(3):
        inputs = _inputs(rnd)
        want = _original(text, 0, inputs)
        got = _spliced(applied, body.ptx.decode(), 0, inputs)
        assert got == want, (text, rng, abi, inputs, body.ptx.decode())
        assert all(G + off in want for off in stores)
