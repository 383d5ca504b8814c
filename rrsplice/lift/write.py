"""Writing a lifted body: the source and its headers beside each other, atomically, never
onto an input; and the coverage report of a module's or recipe's statements."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..infra.fsutil import write_atomic
from .header import HEADER_NAME
from .lower import covers
from .region import lift_region


def region_mma(staging: str, lang: str, mma: str | None) -> str | None:
    """How a lifted body computes its mma: "wmma" (gfx12 WMMA phases: HIP image bodies by
    default), or None (each mma where the PTX has it: CUDA mma.sync, HIP `--mma scalar`)."""
    from ..body.plan import BodyError
    if mma not in (None, "wmma", "scalar"):
        raise BodyError(f"--mma must be wmma or scalar, not {mma!r}")
    if mma == "wmma" and (lang != "hip" or staging != "image"):
        raise BodyError("--mma wmma is for `--lang hip --staging image` (the WMMA phases read "
                        "A from the staged image)")
    if mma == "scalar" and lang != "hip":
        raise BodyError("--mma scalar is for --lang hip (CUDA bodies use mma.sync)")
    return "wmma" if lang == "hip" and staging == "image" and mma != "scalar" else None


def write_region_body(recipe, staging: str, lang: str = "cuda", out=None, corpus=None,
                      mma: str | None = None):
    """Lift `recipe`'s region and write `<callee>.cu` / `.hip` (or `out`), `rr_lift.h`
    and, for image staging, `rr_mma.h` beside it. A HIP image body computes its phases
    through gfx12 WMMA unless `mma` is "scalar". Returns (RegionBody, body path)."""
    body = lift_region(recipe, staging, corpus, mma=region_mma(staging, lang, mma))
    path = Path(out) if out else Path(recipe).with_name(
        body.callee + (".cu" if lang == "cuda" else ".hip"))
    protect = [Path(recipe)]
    write_atomic(path.with_name(HEADER_NAME), body.header.encode(), protect=protect)
    if body.mma_header is not None:
        write_atomic(path.with_name("rr_mma.h"), body.mma_header.encode(), protect=protect)
    write_atomic(path, body.text.encode(), protect=protect)
    return body, path


def coverage(statements) -> list:
    """[(form, count, first statement, None or why it does not lift)] in first-seen order."""
    counts: Counter = Counter()
    first: dict = {}
    for st in statements:
        if st.is_label:
            continue
        f = st.view.form
        counts[f] += 1
        first.setdefault(f, st)
    return [(f, counts[f], first[f], covers(first[f])) for f in first]
