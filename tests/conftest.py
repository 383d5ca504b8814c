"""Shared test fixtures: paths to the bundled corpus and the ptxas requirement.

Tests that need ptxas/nvlink use the `ptxas_path` / `nvlink_path` fixtures: they skip on a
machine without the tools, but FAIL when RRSPLICE_REQUIRE_PTXAS=1 (as CI sets it), so a
missing assembler can never turn a red check into a skipped one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rrsplice.infra.tools import find_tool

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "corpus_fixtures"
RECIPES = ROOT / "recipes"


def _tool(name: str) -> Path:
    path = find_tool(name)
    if path is None:
        message = (f"{name} not found (set RRSPLICE_{name.upper()}, put CUDA on PATH, or "
                   f"pip install nvidia-cuda-nvcc)")
        if os.environ.get("RRSPLICE_REQUIRE_PTXAS") == "1":
            pytest.fail(message + " and RRSPLICE_REQUIRE_PTXAS=1")
        pytest.skip(message)
    return path



def require_clang19() -> None:
    """Skip (fail with RRSPLICE_REQUIRE_CLANG=1) when clang-19 or llc-19 is missing."""
    import shutil
    missing = [t for t in ("clang-19", "llc-19") if shutil.which(t) is None]
    if missing:
        msg = f"{', '.join(missing)} not found (apt-get install clang-19 llvm-19)"
        if os.environ.get("RRSPLICE_REQUIRE_CLANG") == "1":
            pytest.fail(msg + " and RRSPLICE_REQUIRE_CLANG=1")
        pytest.skip(msg)

@pytest.fixture(scope="session")
def ptxas_path() -> Path:
    return _tool("ptxas")


@pytest.fixture(scope="session")
def nvlink_path() -> Path:
    return _tool("nvlink")


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory, worker_id):
    """Tests never read or write the user's real model cache. The cache lives in this
    run's temp directory, shared by the xdist workers (entries are written atomically), so
    each big fixture is parsed and analysed once per run, not once per worker."""
    if "RRSPLICE_CACHE_DIR" not in os.environ:
        base = tmp_path_factory.getbasetemp()
        run_dir = base.parent if worker_id != "master" else base
        cache = run_dir / "rrsplice-cache"
        cache.mkdir(parents=True, exist_ok=True)
        os.environ["RRSPLICE_CACHE_DIR"] = str(cache)
    yield


@pytest.fixture(scope="session")
def model():
    """`model(path)`: the parsed module of a fixture file, shared by every test of the
    session (through the cache, so a worker parses each file at most once). Tests must not
    modify what they get."""
    from rrsplice.infra.cache import load_module
    seen: dict = {}

    def get(path):
        key = str(path)
        if key not in seen:
            seen[key] = load_module(path)
        return seen[key]
    return get


def pytest_runtest_logfinish(nodeid, location):
    """With RRSPLICE_TEST_RSS_LOG=FILE, append `pid rss_mb test` after every test (how
    scripts/bench_tests.py --rss-log finds the tests that grow a worker's memory)."""
    log = os.environ.get("RRSPLICE_TEST_RSS_LOG")
    if log:
        with open("/proc/self/status") as f:
            rss = int(f.read().split("VmRSS:")[1].split()[0]) // 1024
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {rss} {nodeid}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With RRSPLICE_TEST_CPU_LOG=FILE, append `cpu_seconds test` after every test: the CPU
    time of the test's process and of the tools it ran (setup and teardown included), which
    other load on the machine distorts far less than wall time."""
    log = os.environ.get("RRSPLICE_TEST_CPU_LOG")
    if not log:
        yield
        return
    import resource

    def cpu() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    t0 = cpu()
    yield
    with open(log, "a") as f:
        f.write(f"{cpu() - t0:.3f} {item.nodeid}\n")
