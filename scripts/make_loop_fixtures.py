#!/usr/bin/env python3
"""Generate the nvcc loop fixtures and their loop-cut recipes.

Compiles `corpus_fixtures/loops/src/loops.cu` (three kernels: an early `break`, nested
loops with a data-dependent inner bound, and a search loop with `continue` and two distinct
ways out) with `nvcc -ptx -arch=sm_90 -O3` to `corpus_fixtures/loops/loops_sm90.ptx`, and
scaffolds one recipe per kernel that cuts its (outer) loop out whole, from the loop's head
label to its last back edge, with `rrsplice recipe new --abi param`:

* `recipes/loops_early_break.py`: the loop's exits branch to the label right after it
  (the body's return);
* `recipes/loops_nested.py`: the outer loop with the inner one inside it;
* `recipes/loops_search.py`: the loop and the `bra.uni` after it; it leaves to three
  places, so the callee returns an exit index the call text dispatches on.

Deterministic: nvcc runs from the repository root on relative paths without -lineinfo.

    python scripts/make_loop_fixtures.py          # compile, check with ptxas, scaffold
    python scripts/make_loop_fixtures.py --check  # compare with the committed files
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SRC = "corpus_fixtures/loops/src/loops.cu"
PTX = "corpus_fixtures/loops/loops_sm90.ptx"
MODULE = "loops/loops_sm90.ptx"          # as recipes name it (relative to corpus_fixtures)

# recipe name -> (kernel, the loop's head label, take in a `bra.uni` right after the loop)
CUTS = {
    "loops_early_break": ("early_break", "$L__BB0_2", False),
    "loops_nested": ("nested", "$L__BB1_2", False),
    "loops_search": ("search", "$L__BB2_2", True),
}


def loop_range(fn, head: str, with_uni: bool) -> str:
    """sA-sB: from the head label to the last branch back to it (and a following
    `bra.uni`)."""
    first = fn.label_statement(head)
    if first is None:
        raise SystemExit(f"{fn.name}: no label {head}")
    back = [st.index for st in fn.statements
            if st.base == "bra" and any(getattr(op, "name", None) == head
                                        for op in st.operands)]
    last = max(back)
    if with_uni and fn.statements[last].opcode == "bra.uni":
        last += 1
    return f"s{first.index}-s{last}"


def build(out_ptx: Path, recipes: Path) -> list:
    from rrsplice.ptx.parser import parse
    from rrsplice.workflow.scaffold import new_recipe
    subprocess.run(["nvcc", "-ptx", "-arch=sm_90", "-O3", SRC, "-o", str(out_ptx)],
                   cwd=ROOT, check=True)
    subprocess.run(["ptxas", "-arch=sm_90", "-c", str(out_ptx), "-o", "/dev/null"],
                   cwd=ROOT, check=True)
    module = parse(out_ptx)
    written = []
    for name, (kernel, head, uni) in CUTS.items():
        fn = module.function(kernel)
        rng = loop_range(fn, head, uni)
        dest = recipes / f"{name}.py"
        new_recipe(name, out_ptx, rng, abi="param", entry=kernel, out=dest, force=True)
        # name the module the way the repository's recipes do, wherever it was built
        text = dest.read_text()
        text = re.sub(r"^MODULE = .*$", f"MODULE = {MODULE!r}", text, count=1, flags=re.M)
        text = re.sub(r"--module\s+\S+", f"--module {PTX}", text, count=1)
        dest.write_text(text)
        written.append(dest)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="Build into a temporary directory and compare with the committed "
                         "files.")
    args = ap.parse_args()
    if not args.check:
        for p in build(ROOT / PTX, ROOT / "recipes"):
            print(f"wrote {p.relative_to(ROOT)}")
        print(f"wrote {PTX}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "loops_sm90.ptx").parent.mkdir(exist_ok=True)
        written = build(t / "loops_sm90.ptx", t)
        bad = []
        if (t / "loops_sm90.ptx").read_bytes() != (ROOT / PTX).read_bytes():
            bad.append(PTX)
        for p in written:
            if p.read_bytes() != (ROOT / "recipes" / p.name).read_bytes():
                bad.append(f"recipes/{p.name}")
        for b in bad:
            print(f"differs: {b}")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
