"""Fuzz: hostile corpus directories (tests/fuzzing.py::hostile_corpus) through the two
commands that walk a corpus, `rrsplice descriptor --all DIR --json` (the survey) and
`rrsplice apply RECIPE --all DIR` (fuzzing.check_hostile_corpus): each ends within the
timeout (a FIFO is never opened), exits 0, 1 or 2 without a traceback, surveys every regular
fixture, names every special entry it skips in a diagnostic with its code, and writes
nothing into the corpus."""

from __future__ import annotations

import random

import pytest
from fuzzing import check_hostile_corpus


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hostile_corpus_is_walked_without_hangs_tracebacks_or_writes(tmp_path, seed):
    assert check_hostile_corpus(random.Random(seed), tmp_path, timeout=120) >= 12
