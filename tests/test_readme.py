"""The README's two set-up commands are the ones CI runs: keep them true."""

import re

from conftest import ROOT


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```sh\n(.+?)\n```", text)


def test_readme_opens_with_exactly_two_commands():
    text = (ROOT / "README.md").read_text()
    head = text.split("\n## ", 1)[0]
    assert len(re.findall(r"```sh\n", head)) == 2


def test_ci_runs_the_readme_test_command():
    install_and_test = _readme_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert install_and_test in ci.splitlines()
    assert "RRSPLICE_REQUIRE_PTXAS=1" in ci


def test_main_command_uses_bundled_paths_that_exist():
    main = _readme_commands()[0]
    for path in re.findall(r"(recipes/\S+\.py|corpus_fixtures/\S*)", main):
        if "*" in path:
            assert list(ROOT.glob(path)), path
        else:
            assert (ROOT / path).exists(), path


def test_make_ptx_table_names_existing_tests():
    """Every row of "Coming from make_ptx" names a recipe form/option and tests that exist."""
    import re as _re
    from pathlib import Path as _P
    root = _P(__file__).resolve().parent.parent
    text = (root / "README.md").read_text()
    section = text.split("### Coming from make_ptx", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| ") and "---" not in r][1:]
    kinds = " ".join(r.split("|")[1] for r in rows)
    for kind in ("cut_after", "delete", "replace_body", "debug", "sust", "rz_round",
                 "families", "cut the region"):
        assert kind in kinds, kind
    seen = 0
    for r in rows:
        current = None
        for ref in _re.findall(r"`((?:tests/\w+\.py)?::\w+|tests/\w+\.py::\w+)`", r):
            path, name = ref.split("::")
            current = path or current
            assert current, r
            assert _re.search(rf"^def {name}\(", (root / current).read_text(), _re.M), ref
            seen += 1
    assert seen >= 14
