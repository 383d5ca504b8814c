"""Small message defects: counted nouns (`1 phase`, never `1 phases` or `? phase(s)`),
and `apply --ptxas` naming its own option when the architecture is too old."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import RECIPES

from rrsplice.check.facts import Facts
from rrsplice.cli import main
from rrsplice.cli.findings import facts_grid
from rrsplice.infra.words import count


def test_count():
    assert [count(n, "phase") for n in (0, 1, 2)] == ["0 phases", "1 phase", "2 phases"]
    assert count(1, "entry", "entries") == "1 entry" and count(3, "entry", "entries") == \
        "3 entries"


def _mma_row(facts) -> str:
    (row,) = [r for r in facts_grid(facts).rows if r[0] == "mma"]
    return str(row[1])


def test_check_facts_count_phases_and_say_why_they_are_unknown():
    assert _mma_row(Facts(mma=64, phases=1)) == "64 in 1 phase"
    assert _mma_row(Facts(mma=162, phases=7)) == "162 in 7 phases"
    assert _mma_row(Facts(mma=3, phases=None, phases_error="no mma chain")) == \
        "3; phases not found (no mma chain)"


@pytest.mark.parametrize("args, option", [(["apply", "--ptxas", "sm_80"], "--ptxas sm_89"),
                                          (["verify", "--arch", "sm_80"], "leave --arch out")])
def test_too_old_an_architecture_names_the_option_given(tmp_path, args, option):
    r = CliRunner().invoke(main, [args[0], str(RECIPES / "swin_tiny_sm89.py"), *args[1:],
                                  "-o" if args[0] == "apply" else "--keep", str(tmp_path / "o")])
    assert r.exit_code == 2, r.output
    assert "ptxas cannot assemble it for sm_80" in r.output and option in r.output
    if args[0] == "apply":
        assert "--arch" not in r.output
