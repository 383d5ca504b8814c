"""Fuzz: hostile recipes (wrong types, exits, exceptions, prints, escaping stage names,
outputs over inputs) through `check` and `apply`. Every outcome is exit 0, 1 or 2 with a
message, never a traceback; nothing outside the intended output changes, and the module
and recipe keep their bytes."""

from __future__ import annotations

import random
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# each example is a seed: the mutations come from random.Random(seed), so every seed
# explores the full range of edits (hypothesis' own random leans to the first choices)
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)

from fuzzing import (
    MODULE_TEXT,
    check_cli_outcome,
    noisy_recipe_pair,
    recipe_args,
    recipe_source,
    run_cli,
    snapshot,
    unintended_writes,
)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(SEEDS)
@pytest.mark.slow
def test_hostile_recipes_end_cleanly_and_write_only_their_output(tmp_path_factory, seed):
    rnd = random.Random(seed)
    root = tmp_path_factory.mktemp("fuzzrecipe")
    work = root / "w"
    work.mkdir()
    (work / "m.ptx").write_bytes(MODULE_TEXT)
    (work / "r.py").write_text(recipe_source(rnd))
    args = recipe_args(rnd, work)
    before = snapshot(root)
    check_cli_outcome(*run_cli(args, work), args)
    after = snapshot(root)
    assert unintended_writes(before, after, (work / "out",)) == []
    shutil.rmtree(root, ignore_errors=True)


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(SEEDS)
@pytest.mark.slow
def test_hostile_recipe_processes_cannot_change_the_answer(tmp_path_factory, seed):
    """Recipe code that prints to fd 1, starts subprocesses or threads, forks, changes
    directory, registers exits or patches rrsplice gives exactly the outcome (exit code,
    stdout, output bytes) of the same recipe without that code."""
    rnd = random.Random(seed)
    hostile, benign = noisy_recipe_pair(rnd)
    args = rnd.choice([["check", "r.py", "--corpus", "."],
                       ["check", "r.py", "--corpus", ".", "--json"],
                       ["apply", "r.py", "--corpus", ".", "-o", "o.ptx"]])
    outcomes = []
    for src in (hostile, benign):
        work = tmp_path_factory.mktemp("noisy")
        (work / "m.ptx").write_bytes(MODULE_TEXT)
        (work / "r.py").write_text(src)
        code, out, err, exc = run_cli(args, work)
        check_cli_outcome(code, out, err, exc, args)
        written = (work / "o.ptx").read_bytes() if (work / "o.ptx").exists() else None
        if args[0] == "apply":           # its summary line holds the time taken
            out = "\n".join(ln for ln in out.splitlines() if not ln.startswith("wrote "))
        outcomes.append((code, out.replace(str(work), "WORK"), written))
        assert (work / "m.ptx").read_bytes() == MODULE_TEXT
        shutil.rmtree(work, ignore_errors=True)
    assert outcomes[0] == outcomes[1], hostile
