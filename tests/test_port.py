"""`rrsplice recipe port` and families: the swin_tiny variant fixtures (same source, other
flags) -- every pair of aligned variants, refusal on the one whose region differs, and
`apply --all` over a corpus."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrsplice.check import check_recipe
from rrsplice.cli import main
from rrsplice.workflow.port import PortError, port_recipe
from rrsplice.workflow.recipe import BUNDLED_CORPUS, load_recipe

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from make_fixtures import analyse  # noqa: E402  (the generator's own regex statement count)

FAMILY = ROOT / "recipes" / "tiny_family.py"
ALIGNED = ["mvhi_hdr", "mvhi_ldr", "mvlo_hdr", "mvlo_ldr"]


def ptx(v: str) -> Path:
    return BUNDLED_CORPUS / f"swin_tiny_{v}_sm89.ptx"


def entry(v: str) -> str:
    return f"rrswin_tiny_{v}_kernel"


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    """The family recipe ported to every aligned variant (the reference is mvhi_hdr)."""
    d = tmp_path_factory.mktemp("ported")
    out = {"mvhi_hdr": FAMILY}
    for v in ALIGNED[1:]:
        out[v] = port_recipe(FAMILY, f"{ptx(v)}:{entry(v)}", out=d / f"tiny_{v}.py").output
    return out


@pytest.mark.parametrize("src,dst", list(itertools.permutations(ALIGNED, 2)),
                         ids=lambda v: v)
@pytest.mark.slow
def test_port_every_pair(src, dst, ported, tmp_path):
    res = port_recipe(ported[src], f"{ptx(dst)}:{entry(dst)}", out=tmp_path / "p.py")
    # oracle: the generator's own statement count puts the mma region here
    a = analyse(ptx(dst))
    assert res.region[1] == tuple(a["region_statements"])
    rec = load_recipe(res.output)
    assert rec.entry == entry(dst) and rec.file == ptx(dst).name
    assert rec.cut_call[0] == a["region_lines"][0] and rec.cut_call[1] == a["region_lines"][1] + 1
    # the re-check ran and passes: live-in/live-out of the ported region are exactly what
    # the rewritten call text passes and reads back
    rep = check_recipe(res.output)
    assert rep.ok, [f.render() for f in rep.errors]
    # the call text names the target's own .shared array, never the reference's
    assert entry(src) not in rec.call and entry(dst) in rec.call
    if src[-3:] != dst[-3:]:          # hdr <-> ldr: the prologue differs, registers move
        assert len(res.registers) > 100
        assert set(res.registers) <= set(re.findall(r"%\w+", ported[src].read_text()))


def test_port_refuses_the_folded_variant(tmp_path):
    v = "mvhi_ldr_folded"
    with pytest.raises(PortError) as ei:
        port_recipe(FAMILY, f"{ptx(v)}:{entry(v)}", out=tmp_path / "p.py")
    msg = str(ei.value)
    assert "the region does not align" in msg
    # the first point of disagreement: where the folded epilogue scale is missing
    assert re.search(r"20 statement\(s\) s1245-s1264 of the reference stand against 0", msg)
    assert "s1245 (line 3221)" in msg and not (tmp_path / "p.py").exists()


def test_port_refuses_another_kernel(tmp_path):
    with pytest.raises(PortError, match="does not align"):
        port_recipe(FAMILY, str(BUNDLED_CORPUS / "swin_small_sm89.ptx"), out=tmp_path / "p.py")


def test_cli_port_and_refusal(tmp_path):
    r = CliRunner().invoke(main, ["recipe", "port", str(FAMILY), "--to",
                                  f"{ptx('mvlo_ldr')}:{entry('mvlo_ldr')}", "-o",
                                  str(tmp_path / "p.py"), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["region"] == {"reference": "s353-s2667", "target": "s344-s2658"}
    r = CliRunner().invoke(main, ["recipe", "port", str(FAMILY), "--to",
                                  str(ptx("mvhi_ldr_folded")), "-o", str(tmp_path / "q.py")])
    assert r.exit_code == 1 and "does not align" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "q.py").exists()


@pytest.mark.slow
def test_apply_all_over_a_corpus(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for v in ALIGNED + ["mvhi_ldr_folded"]:
        shutil.copy(ptx(v), corpus)
    shutil.copy(BUNDLED_CORPUS / "surface_round_sm89.ptx", corpus)   # not in the family
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["apply", str(FAMILY), "--all", str(corpus), "-o", str(out),
                                  "-j", "2", "--json"])
    assert r.exit_code == 1, r.output          # one refused
    rows = json.loads(r.output)["kernels"]
    assert [(x["entry"], x["status"], x["how"]) for x in rows] == [
        (entry("mvhi_hdr"), "ok", "as written"),
        (entry("mvhi_ldr_folded"), "refused", ""),
        (entry("mvhi_ldr"), "ok", "ported"),
        (entry("mvlo_hdr"), "ok", "ported"),
        (entry("mvlo_ldr"), "ok", "ported")]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"swin_tiny_{v}_sm89.tiny_family.ptx" for v in ALIGNED)
    for v in ALIGNED:
        text = (out / f"swin_tiny_{v}_sm89.tiny_family.ptx").read_text()
        assert text.count("call.uni d4r_tiny_family") == 1 and "mma.sync" not in text


def test_family_rewrite_only_recipe_is_repointed(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for v in ALIGNED:
        shutil.copy(ptx(v), corpus)
    p = tmp_path / "fam.py"
    p.write_text("def recipe():\n    return dict(file='swin_tiny_mvhi_hdr_sm89.ptx', "
                 "sust=True, entries=r'rrswin_tiny_mv(hi|lo)_hdr_kernel')\n")
    from rrsplice.workflow.family import apply_family
    rows = apply_family(p, corpus, out=tmp_path / "o", jobs=1)
    assert [(r.entry, r.status, r.how, r.rewrites) for r in rows] == [
        (entry("mvhi_hdr"), "ok", "as written", {"sust.v4b16": 1}),
        (entry("mvlo_hdr"), "ok", "re-pointed", {"sust.v4b16": 1})]


@pytest.mark.slow
def test_hook_applies_a_family_and_reports_the_refused(tmp_path):
    from rrsplice.workflow.hook import HookError, apply_family_recipe
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for v in ("mvhi_hdr", "mvlo_ldr"):
        shutil.copy(ptx(v), corpus)
    outs = apply_family_recipe(FAMILY, corpus, tmp_path / "o", jobs=1)
    assert [p.name for p in outs] == ["swin_tiny_mvhi_hdr_sm89.tiny_family.ptx",
                                      "swin_tiny_mvlo_ldr_sm89.tiny_family.ptx"]
    shutil.copy(ptx("mvhi_ldr_folded"), corpus)
    with pytest.raises(HookError) as ei:
        apply_family_recipe(FAMILY, corpus, tmp_path / "o2", jobs=1)
    assert ei.value.kind == "family" and "1 of 3 kernel(s) not applied" in str(ei.value)
    assert "mvhi_ldr_folded" in str(ei.value) and len(list((tmp_path / "o2").iterdir())) == 2
