"""`rrsplice doctor`: is this environment ready for every command, and if not, what to
install. Each check says what it found and, when something is missing, how to get it."""

from __future__ import annotations

import os
import sys
from importlib.metadata import PackageNotFoundError, version

from ..ptx.errors import RRSpliceError
from .app import examples, json_option, main, print_json
from .output import Grid, say, styled

PYTHON_MIN = (3, 11)
LIBRARIES = ("lark", "click", "rich", "platformdirs")


def _check(name: str, ok: bool, found: str, fix: str = "", needed_for: str = "") -> dict:
    return {"check": name, "ok": ok, "found": found, "fix": "" if ok else fix,
            "needed_for": needed_for}


def _python() -> dict:
    v = sys.version_info
    return _check("python", v[:2] >= PYTHON_MIN, f"{v.major}.{v.minor}.{v.micro} "
                  f"({sys.executable})", f"install Python {PYTHON_MIN[0]}.{PYTHON_MIN[1]} or "
                  "newer", "everything")


def _library(name: str) -> dict:
    try:
        return _check(name, True, version(name), needed_for="everything")
    except PackageNotFoundError:
        return _check(name, False, "not installed", f"python3 -m pip install {name}",
                      "everything")


def _tool(name: str) -> dict:
    from ..infra.tools import tool_provenance
    t = tool_provenance(name)
    what = "apply --ptxas, verify" if name == "ptxas" else "verify"
    if t["path"] is None:
        return _check(name, False, t["found_via"],
                      "python3 -m pip install 'rrsplice[ptxas]' (PyPI's nvidia-cuda-nvcc), "
                      f"put CUDA's bin on PATH, or set RRSPLICE_{name.upper()}", what)
    return _check(name, True, f"{t['path']} ({t['version']}; via {t['found_via']})",
                  needed_for=what)


def _cache() -> dict:
    from ..infra import cache
    if not cache.enabled():
        return _check("cache", True, "off (RRSPLICE_NO_CACHE is set)",
                      needed_for="speed only")
    d = cache.cache_dir()
    probe = d if d.exists() else next((p for p in d.parents if p.exists()), d)
    writable = os.access(probe, os.W_OK)
    return _check("cache", writable, f"{d}" + ("" if d.exists() else " (created on first use)"),
                  f"make {probe} writable, point RRSPLICE_CACHE_DIR elsewhere, or set "
                  "RRSPLICE_NO_CACHE=1", "speed only")


def _default_module() -> dict:
    from ..infra.config import load_config
    try:
        cfg = load_config()
    except RRSpliceError as exc:
        return _check("default module", False, str(exc), "fix the pyproject.toml",
                      "commands without a TARGET")
    if cfg.default_module is None:
        return _check("default module", True, "none configured (commands need a TARGET)",
                      needed_for="commands without a TARGET")
    ok = cfg.default_module.is_file()
    return _check("default module", ok, str(cfg.default_module),
                  "fix [tool.rrsplice] default_module in " + str(cfg.root / "pyproject.toml")
                  if cfg.root else "", "commands without a TARGET")


def run_checks() -> list:
    return [_python(), *(_library(n) for n in LIBRARIES), _tool("ptxas"), _tool("nvlink"),
            _cache(), _default_module()]


@main.command("doctor", epilog=examples("rrsplice doctor", "rrsplice doctor --json"))
@json_option
def doctor_cmd(as_json):
    """Check the environment: Python, Lark and the other libraries, ptxas, nvlink, the cache
    directory and the default module; say what is missing and how to get it.

    Exits 0 when everything is there, 1 when something is missing."""
    checks = run_checks()
    ok = all(c["ok"] for c in checks)
    if as_json:
        print_json({"ok": ok, "checks": checks})
        sys.exit(0 if ok else 1)
    g = Grid("check", "status", "found", "needed for")
    for c in checks:
        g.add_row(c["check"], styled("ok", "green") if c["ok"] else styled("MISSING", "red"),
                  c["found"], c["needed_for"])
    g.print()
    for c in checks:
        if not c["ok"]:
            say(styled(f"{c['check']}: ", "bold"), c["fix"])
    sys.exit(0 if ok else 1)
