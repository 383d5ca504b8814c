"""Shared test fixtures: paths to the bundled corpus and the ptxas requirement.

Tests that need ptxas/nvlink use the `ptxas_path` / `nvlink_path` fixtures: they skip on a
machine without the tools, but FAIL when RRSPLICE_REQUIRE_PTXAS=1 (as CI sets it), so a
missing assembler can never turn a red check into a skipped one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rrsplice.tools import find_tool

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
def _private_cache_dir(tmp_path_factory):
    """Tests never read or write the user's real model cache."""
    if "RRSPLICE_CACHE_DIR" not in os.environ:
        os.environ["RRSPLICE_CACHE_DIR"] = str(tmp_path_factory.mktemp("rrsplice-cache"))
    yield
