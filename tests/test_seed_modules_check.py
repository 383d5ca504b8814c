"""`scripts/check_seed_modules.py`, the independent checker of the seed stand-in modules (it
imports nothing from rrsplice), runs in the suite: it accepts the committed modules and
rejects a copy with one mma removed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT

SCRIPT = ROOT / "scripts" / "check_seed_modules.py"
MODULES = ("0021-PREPASS_ENTRYPOINT_NAME.ptx", "0022-PREPASS_ENTRYPOINT_NAME.ptx")


def _check(*paths):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, paths)],
                          capture_output=True, text=True)


@pytest.mark.slow
def test_committed_seed_modules_pass_the_independent_check():
    r = _check(*(FIXTURES / m for m in MODULES))
    assert r.returncode == 0, r.stdout + r.stderr
    for m in MODULES:
        assert m in r.stdout
    assert "904 mma in 26 phases" in r.stdout      # 0022 (dec1), as the seed recipe states


def test_a_module_with_one_mma_dropped_fails(tmp_path):
    text = (FIXTURES / MODULES[1]).read_text()
    lines = text.split("\n")
    k = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("mma."))
    bad = tmp_path / MODULES[1]
    bad.write_text("\n".join(lines[:k] + ["\t// removed"] + lines[k + 1:]))
    r = _check(bad)
    assert r.returncode != 0, r.stdout
