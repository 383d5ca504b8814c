"""The conformance corpus (corpus_fixtures/conformance/): real nvcc and Triton output and
hand-written ISA syntax files. Every file is accepted by ptxas for its own target, parses,
round-trips byte for byte, and leaves no source text outside the model: every non-trivia
character of a body belongs to a statement, declaration, nested block or labelled
directive, and every identifier that a `.reg` declares is read as a register."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import FIXTURES, ROOT, _tool

import rrsplice
from rrsplice.ptx.model import Block, Symbol

CORPUS = FIXTURES / "conformance"


def _manifest():
    rows = (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:]
    return [dict(zip(("path", "target", "lines", "sha256", "origin"), r.split("\t"), strict=False))
            for r in rows]


MANIFEST = _manifest()
FILES = [CORPUS / row["path"] for row in MANIFEST]

# what may sit between the items of a body or of the module: whitespace, comments, and
# the directives the model keeps as text (.loc, .pragma; module headers and sections)
_BODY_TRIVIA = re.compile(r"(?:\s|//[^\n]*|/\*.*?\*/|\.loc[ \t][^\n]*|\.pragma[ \t][^;]*;)*",
                          re.S)
_MODULE_TRIVIA = re.compile(
    r"(?:\s|//[^\n]*|/\*.*?\*/|\.(?:version|target|address_size|file)[ \t][^\n]*"
    r"|\.section[ \t]+[\w.$]+\s*\{[^}]*\}|\.(?:pragma|alias)[ \t][^;]*;)*", re.S)


def test_manifest_lists_every_file_with_its_digest():
    on_disk = {p.relative_to(CORPUS).as_posix() for p in CORPUS.glob("*/*.ptx")
               if p.parent.name != "big"}
    assert on_disk == {row["path"] for row in MANIFEST}
    for row in MANIFEST:
        data = (CORPUS / row["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest()[:16] == row["sha256"], row["path"]
        assert data.count(b"\n") == int(row["lines"]), row["path"]


def test_corpus_covers_what_the_issue_asks_for():
    origins = {row["path"].split("/")[0] for row in MANIFEST}
    assert origins == {"nvcc", "triton", "hand"}
    nvcc = [row["path"] for row in MANIFEST if row["path"].startswith("nvcc/")]
    for mode in ("_G.ptx", "_lineinfo.ptx"):
        assert sum(p.endswith(mode) for p in nvcc) * 3 == len(nvcc)
    targets = {row["target"] for row in MANIFEST}
    assert {"sm_80", "sm_90a", "sm_100a", "sm_120a"} <= targets
    text = "".join((CORPUS / p).read_text() for p in nvcc if not p.endswith("_G.ptx"))
    for needle in ("shfl.sync.up.b32 r0|p", "elect.sync _|P", "vote.sync", "match.any.sync",
                   "redux.sync", "ldmatrix.sync", "stmatrix.sync", "cp.async.cg",
                   "mbarrier.try_wait", "wgmma.mma_async", "cp.async.bulk.tensor", "tcgen05.mma",
                   "tex.2d", "sust.b", "atom.", "bar.sync", ".callprototype", "vprintf",
                   "call.uni", "setmaxnreg", ".reqnctapercluster", "barrier.cluster"):
        assert needle in text, needle


def _ptxas(ptxas_path, path, target):
    proc = subprocess.run([str(ptxas_path), f"-arch={target}", "-c", str(path), "-o",
                           "/dev/null"], capture_output=True, text=True)
    return path.name, proc.returncode, proc.stderr.strip()[:400]


@pytest.mark.slow
def test_ptxas_accepts_every_file(ptxas_path):
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda row: _ptxas(ptxas_path, CORPUS / row["path"],
                                                   row["target"]), MANIFEST))
    assert [r for r in results if r[1] != 0] == []
    assert len(results) == len(MANIFEST) >= 60


def _body_gaps(blk: Block, text: str, out: list) -> None:
    pos = blk.start + 1 if text[blk.start] == "{" else blk.start
    for item in blk.items:
        if item.start < pos:        # the names of one declaration share its span
            continue
        gap = text[pos:item.start]
        if _BODY_TRIVIA.fullmatch(gap) is None:
            out.append(gap)
        if isinstance(item, Block):
            _body_gaps(item, text, out)
        pos = item.end
    gap = text[pos:blk.end - 1]
    if _BODY_TRIVIA.fullmatch(gap) is None:
        out.append(gap)


def unmodelled_text(module) -> list:
    """Source text that no model node accounts for (empty when the parse is complete)."""
    out = []
    spans = sorted([(f.start, f.end) for f in module.functions]
                   + [(d.start, d.end) for d in module.decls])
    pos = 0
    for start, end in spans:
        if start >= pos:
            if _MODULE_TRIVIA.fullmatch(module.text, pos, start) is None:
                out.append(module.text[pos:start])
            pos = end
    if _MODULE_TRIVIA.fullmatch(module.text, pos) is None:
        out.append(module.text[pos:])
    for fn in module.functions:
        if fn.body is not None:
            _body_gaps(fn.body, module.text, out)
    return out


def unresolved_registers(module) -> list:
    """Operands spelled like a declared register but read as a symbol."""
    out = []
    for fn in module.functions:
        regs = {d.name for d in fn.decls() if d.space == ".reg"}
        regs |= {p.name for p in fn.params if p.space == ".reg"}
        for st in fn.statements:
            for op in st.operands:
                if isinstance(op, Symbol) and op.name in regs:
                    out.append((st.sid, st.text))
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(CORPUS).as_posix())
def test_parses_round_trips_and_models_everything(path):
    data = path.read_bytes()
    module = rrsplice.parse(path)
    assert rrsplice.emit(module) == data
    assert module.data == data and module.text.encode() == data
    assert unmodelled_text(module) == []
    assert unresolved_registers(module) == []
    assert any(fn.statements for fn in module.functions)


def test_the_completeness_check_sees_a_dropped_directive():
    """The gap check is not vacuous: text the model does not hold is reported."""
    module = rrsplice.parse(CORPUS / "hand" / "registers.ptx")
    first = module.functions[0].statements[3]
    module.functions[0].body.items = [i for i in module.functions[0].body.items
                                      if i is not first]
    assert unmodelled_text(module) == [module.text[first.start - 2:first.end + 2]]


def test_generator_reproduces_a_committed_file(tmp_path):
    """make_conformance.py builds from a fixed directory, so the `.file` paths of a
    -lineinfo build, and the bytes, do not depend on the checkout."""
    _tool("nvcc")
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_conformance as gen
    made = gen.build_nvcc(tmp_path, only=("warp.cu", "sm_80", "lineinfo"))
    assert [p.name for p, _arch, _origin in made] == ["warp_sm_80_lineinfo.ptx"]
    assert made[0][0].read_bytes() == (CORPUS / "nvcc" / "warp_sm_80_lineinfo.ptx").read_bytes()
