"""`rrsplice body new`: a native C++ (CUDA or HIP) body for a recipe's cut.

`plan` reads what the body must do off the recipe (signature, fragment maps, mma program,
return slots), `header` writes the portable mma interface (`rr_mma.h`), `render` the body.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .header import HEADER_NAME, header_text
from .plan import Arg, BodyError, BodyPlan, Ret, Step, plan_body
from .render import render_body

__all__ = ["Arg", "BodyError", "BodyPlan", "BodyResult", "HEADER_NAME", "Ret", "Step",
           "header_text", "new_body", "plan_body", "render_body"]


@dataclass
class BodyResult:
    plan: BodyPlan
    body: Path
    header: Path
    lang: str
    mma: str = "scalar"

    def to_json(self) -> dict:
        p = self.plan
        return {"body": str(self.body), "header": str(self.header), "lang": self.lang,
                "mma_mode": self.mma,
                "callee": p.callee, "function": p.function, "region": p.region,
                "phase": p.phase.index, "geometry": p.phase.geometry, "mma": len(p.steps),
                "image": {"rows": p.m, "k": p.k, "warps": p.warps,
                          "bytes": p.warps * p.m * p.k},
                "args": [{"name": a.ptx_name or a.name, "c_name": a.name, "type": a.ptx_type, "register": a.reg,
                          "symbol": a.symbol, "role": a.role,
                          "map": a.frag.rule() if a.frag is not None else None}
                         for a in p.args],
                "returns": [{"register": r.reg, "offset": r.offset} for r in p.rets],
                "slots": p.slots, "stride": p.stride, "barrier": p.barrier,
                "notes": p.notes}


def new_body(recipe, lang: str = "cuda", out=None, corpus=None,
             mma: str | None = None) -> BodyResult:
    """Write the body for `recipe` (default `<callee>.cu` / `.hip` beside the recipe) and
    `rr_mma.h` beside it, atomically; nothing is written when planning fails. `mma` (HIP
    only): "wmma" (the default, the gfx12 WMMA program) or "scalar" (the portable fallback);
    CUDA always uses mma.sync."""
    from ..infra.fsutil import check_output, write_atomic
    mma = mma_mode(lang, mma)
    plan = plan_body(recipe, corpus, loads=mma == "wmma")
    body = Path(out) if out else Path(plan.recipe).with_name(
        plan.callee + (".cu" if lang == "cuda" else ".hip"))
    text = render_body(plan, lang, mma)
    head = header_text(plan.layouts, mma)
    header = body.with_name(HEADER_NAME)
    if body.name == HEADER_NAME:
        raise BodyError(f"the body cannot be named {HEADER_NAME}, which is written "
                        "beside it; choose another -o", path=body)
    # the recipe and its module are inputs; rr_mma.h is never named by the user: never
    # written through a link, and held to the rules of an implicit output when the body's
    # own path is the default one
    inputs = (plan.recipe, plan.module)
    check_output(body, protect=inputs, implicit=not out)
    check_output(header, protect=inputs, implicit=not out, no_link=True)
    write_atomic(header, head.encode(), protect=inputs, implicit=not out, no_link=True)
    write_atomic(body, text.encode(), protect=inputs, implicit=not out)
    return BodyResult(plan, body, header, lang, mma)


def mma_mode(lang: str, mma: str | None) -> str:
    """How the body computes its mma: CUDA "mma.sync"; HIP "wmma" unless "scalar" is asked."""
    if lang == "cuda":
        if mma not in (None, "mma.sync"):
            raise BodyError(f"--mma {mma} is for --lang hip (CUDA bodies use mma.sync)")
        return "mma.sync"
    if mma not in (None, "wmma", "scalar"):
        raise BodyError(f"--mma must be wmma or scalar, not {mma!r}")
    return mma or "wmma"
