"""Target profiles (`check --target ptxas|zluda`): the lint table, defaults, severities."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrsplice.check import check_recipe, profiles
from rrsplice.cli import main
from rrsplice.ptx import diagnostic
from rrsplice.ptx.diagnostic import Diagnostic

BAD = Path(__file__).resolve().parent / "recipes_bad"


def _codes(rep, sev):
    return {f.code for f in rep.findings if f.severity == sev}


@pytest.mark.slow
def test_param_return_is_an_error_for_zluda_only():
    rep = check_recipe(BAD / "param_return.py")          # BODY declared: zluda by default
    assert rep.facts.target == "zluda"
    assert _codes(rep, "error") == {"param-return"}
    msgs = [f.message for f in rep.errors]
    assert any("extern d4r_swin_dec2 declares 1 `.param` return" in m for m in msgs)
    assert any("the call takes 1 return value" in m for m in msgs)
    ok = check_recipe(BAD / "param_return.py", target="ptxas")
    assert ok.ok and ok.facts.target == "ptxas"
    assert "param-return" not in _codes(ok, "warning")


@pytest.mark.slow
def test_empty_args_severity_per_profile():
    z = check_recipe(BAD / "empty_args.py")              # TARGET = "zluda"
    assert "empty-args" in _codes(z, "error")
    p = check_recipe(BAD / "empty_args.py", target="ptxas")
    assert "empty-args" not in _codes(p, "error")
    assert "empty-args" in _codes(p, "warning")


@pytest.mark.slow
def test_default_profile_is_ptxas_without_a_body():
    rep = check_recipe(BAD / "good_dec2.py")
    assert rep.ok and rep.facts.target == "ptxas"
    assert check_recipe(BAD / "good_dec2.py", target="zluda").ok


@pytest.mark.slow
def test_adding_a_lint_is_one_entry(monkeypatch):
    monkeypatch.setattr(profiles, "LINTS", list(profiles.lints()))
    monkeypatch.setattr(diagnostic, "CODES", dict(diagnostic.CODES))

    @profiles.lint("no-call-uni", zluda="warning")
    def _no_uni(rep):
        """A test lint. It fires on `call.uni`."""
        if rep.target.text and "call.uni" in rep.target.text:
            yield Diagnostic(message="test lint: call.uni present")

    z = check_recipe(BAD / "good_dec2.py", target="zluda")
    assert "no-call-uni" in _codes(z, "warning")
    p = check_recipe(BAD / "good_dec2.py", target="ptxas")
    assert "no-call-uni" not in _codes(p, "warning")
    assert diagnostic.CODES["no-call-uni"].description == "A test lint."


def test_unknown_profile_in_a_lint_is_refused():
    with pytest.raises(ValueError):
        profiles.lint("x", amdgpu="error")


@pytest.mark.slow
def test_cli_target_option():
    r = CliRunner().invoke(main, ["check", str(BAD / "param_return.py"), "--json"])
    assert r.exit_code == 1
    data = json.loads(r.output)
    assert data["facts"]["target"] == "zluda"
    assert {f["code"] for f in data["findings"] if f["severity"] == "error"} == {"param-return"}
    r = CliRunner().invoke(main, ["check", str(BAD / "param_return.py"), "--target", "ptxas"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["check", str(BAD / "param_return.py"), "--target", "amd"])
    assert r.exit_code == 2 and "amd" in r.output
