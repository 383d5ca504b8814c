"""Fuzz: mutated real fixtures through the parser API and the CLI. Every outcome is a
success that round-trips byte-exactly, or a typed error at path:line:col; never a
traceback. The budget here is small (CI); scripts/fuzz.py runs the long campaign."""

from __future__ import annotations

import random
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# each example is a seed: the mutations come from random.Random(seed), so every seed
# explores the full range of edits (hypothesis' own random leans to the first choices)
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)

from fuzzing import check_cli_outcome, check_parse, fixture, mutate, run_cli, snapshot

BUDGET = settings(max_examples=600, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow])


@BUDGET
@given(SEEDS)
@pytest.mark.slow
def test_mutated_fixtures_parse_or_fail_with_a_position(seed):
    rnd = random.Random(seed)
    name, data = fixture(rnd)
    mutated, _ops = mutate(data, rnd)
    check_parse(mutated, name)


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(SEEDS)
def test_mutated_fixtures_through_the_cli(tmp_path_factory, seed):
    rnd = random.Random(seed)
    work = tmp_path_factory.mktemp("fuzzcli")
    name, data = fixture(rnd)
    mutated, _ops = mutate(data, rnd)
    src = work / "x.ptx"
    src.write_bytes(mutated)
    before = snapshot(work)
    cmd = rnd.choice([["parse", "x.ptx"], ["parse", "--json", "x.ptx"], ["functions", "x.ptx"],
                      ["liveness", "x.ptx", "--range", "s2-s5"], ["mma", "x.ptx", "--json"]])
    outcome = check_cli_outcome(*run_cli(cmd, work), cmd)
    assert snapshot(work) == before, "the CLI wrote into the input's directory"
    assert outcome in ("ok", "findings", "error")
    shutil.rmtree(work, ignore_errors=True)
