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
