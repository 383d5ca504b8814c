"""Every single-phase body of a fixture: one recipe per GEMM phase (`recipe new --abi
scratch`), its CUDA and HIP bodies (`body new`), one harness binary for all of them, and
cases run through the region oracle (splice.run_case)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from warp_harness import Body, build
from warp_harness.splice import CLASSES, run_case, splice_plan

# launch shapes of 128 threads: thread order within a warp depends on x alone for the first
# two, on x and y (and z) for the others
GEOMETRIES = ((32, 1, 4), (128, 1, 1), (64, 2, 1), (16, 2, 4), (32, 4, 1))


class Bodies(list):
    def __init__(self):
        super().__init__()
        self.refused = {}


def fixture_bodies(ptx: Path, workdir: Path, langs=("cuda", "hip")) -> list:
    """[(phase index, SplicePlan, {lang: Body})] for every GEMM phase of `ptx` that `body
    new` supports (a region of mma only); the phases it refuses as interleaved with other
    statements are in `refused` (index -> message) of the returned list."""
    from rrsplice.analysis.mma import phases
    from rrsplice.body import (
        HEADER_NAME,
        BodyError,
        header_text,
        plan_body,
        render_body,
    )
    from rrsplice.infra.cache import load_analysis, load_module
    from rrsplice.workflow.scaffold import new_recipe
    m = load_module(ptx)
    fn = next(f for f in m.functions if f.has_body)
    out = Bodies()
    for p in phases(fn, load_analysis(m, fn)):
        d = workdir / f"p{p.index}"
        d.mkdir(parents=True, exist_ok=True)
        rec = d / f"p{p.index}.py"
        new_recipe(f"p{p.index}", ptx, f"s{p.first}-s{p.last}", abi="scratch", out=rec,
                   occupancy=False)
        plan = splice_plan(rec)
        try:
            bplan = plan_body(rec)               # what `body new` writes, both languages
        except BodyError as e:
            if "that are not mma" not in str(e):
                raise
            out.refused[p.index] = str(e)
            continue
        (d / HEADER_NAME).write_text(header_text(bplan.layouts))
        bodies = {}
        for lang in langs:
            src = d / f"p{p.index}.{'cu' if lang == 'cuda' else 'hip'}"
            src.write_text(render_body(bplan, lang))
            bodies[lang] = Body(src, plan.callee, plan.params, lang)
        out.append((p.index, plan, bodies))
    return out


def check_fixture(ptx: Path, workdir: Path, cases_per_body: int = 1, seed: int = 0,
                  langs=("cuda", "hip"), only=None, refused=None) -> dict:
    """{phase: [mismatches]} over `cases_per_body` cases of each body; geometries
    and input classes rotate over phases and cases."""
    items = fixture_bodies(Path(ptx), Path(workdir), langs)
    out_refused = {} if refused is None else refused
    if only is not None:
        keep = [x for x in items if x[0] in only]
        items[:] = keep
    flat = [(ph, plan, lang, b) for ph, plan, bodies in items for lang, b in bodies.items()]
    arena = max(plan.arena_bytes for _, plan, _, _ in flat)
    h = build([b for *_, b in flat], Path(workdir) / "harness", shared_bytes=arena)
    rng = np.random.default_rng(seed)
    out = {}
    with h:
        i = 0
        for ph, plan, bodies in items:
            idx = list(range(i, i + len(bodies)))
            i += len(bodies)
            bad = []
            for c in range(cases_per_body):
                k = ph + c
                bad += run_case(plan, h, idx, GEOMETRIES[k % len(GEOMETRIES)], rng,
                                CLASSES[k % len(CLASSES)])
            out[ph] = bad
    out_refused.update(items.refused)
    return out
