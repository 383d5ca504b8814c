"""The same inputs give the same bytes out: generators, apply, outline, scaffold, reports."""

from __future__ import annotations

import filecmp
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, RECIPES, ROOT

from rrsplice.cli import main


def _run(args, env=None):
    r = CliRunner().invoke(main, args, env=env)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.slow
def test_seed_generator_reproduces_the_committed_modules(tmp_path):
    # the generator's own run of the independent checker (scripts/check_seed_modules.py)
    # must pass on what it wrote, and what it wrote must be the committed modules
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_seed_modules.py"),
                        "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("0021-PREPASS_ENTRYPOINT_NAME.ptx", "0022-PREPASS_ENTRYPOINT_NAME.ptx"):
        assert (tmp_path / name).read_bytes() == (FIXTURES / name).read_bytes(), name


def test_small_fixture_generator_matches_the_files_on_disk():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_small_fixtures.py"),
                        "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow
def test_apply_twice_gives_identical_bytes(tmp_path):
    a, b = tmp_path / "a.ptx", tmp_path / "b.ptx"
    _run(["apply", str(RECIPES / "swin_dec1.py"), "-o", str(a)])
    _run(["apply", str(RECIPES / "swin_dec1.py"), "-o", str(b)],
         env={"RRSPLICE_CACHE_DIR": str(tmp_path / "other-cache")})
    assert filecmp.cmp(a, b, shallow=False)


def test_outline_twice_gives_identical_bytes(tmp_path):
    a, b = tmp_path / "a.ptx", tmp_path / "b.ptx"
    _run(["outline", str(RECIPES / "swin_tiny_sm89.py"), "-o", str(a)])
    _run(["outline", str(RECIPES / "swin_tiny_sm89.py"), "-o", str(b)])
    assert a.read_bytes() == b.read_bytes()


def test_scaffold_twice_gives_identical_text(tmp_path):
    outs = []
    for sub in ("a", "b"):
        d = tmp_path / sub
        d.mkdir()
        _run(["recipe", "new", "swin_tiny_det", "--module",
              str(FIXTURES / "swin_tiny_sm89.ptx"), "--range", "s342-s2656",
              "-o", str(d / "swin_tiny_det.py")])
        outs.append((d / "swin_tiny_det.py").read_text())
    assert outs[0] == outs[1]


@pytest.mark.slow
def test_liveness_report_is_the_same_from_the_cache_and_without_it(tmp_path):
    args = ["liveness", str(FIXTURES / "0022-PREPASS_ENTRYPOINT_NAME.ptx"),
            "--range", "s403-s15988", "--json"]
    cache = {"RRSPLICE_CACHE_DIR": str(tmp_path / "c")}
    first = _run(args, env=cache)
    again = _run(args, env=cache)
    fresh = _run(args, env={**cache, "RRSPLICE_NO_CACHE": "1"})
    assert first == again == fresh
