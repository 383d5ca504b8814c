"""`recipe port`, step two: the ported recipe module's text from a `PortPlan`, with no I/O.

The module is data only: a docstring (the reference's summary, how it was ported, the
target's fragment maps, the reference's own description), the ported constants and texts,
and a `recipe()` that names them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .scaffold_render import wrap

if TYPE_CHECKING:
    from .port import PortPlan


def render_port(plan: PortPlan) -> str:
    """The ported recipe module's text (self-contained, data only)."""
    lines = port_doc(plan)
    out = ['"""' + lines[0]] + lines[1:] + ['"""', ""]
    for k, v in plan.consts:
        out.append(f"{k} = {v!r}")
    for k, v in plan.texts:
        out.append(f"{k} = {v!r}")
    out += ["", "", "def recipe():",
            "    return dict(" + ", ".join(f"{k}={v}" for k, v in plan.body)
            + "".join(f", {k}={v!r}" for k, v in plan.opts) + ")", ""]
    return "\n".join(out)


def port_doc(plan: PortPlan) -> list[str]:
    """The ported recipe's docstring lines, escaped: the reference's first paragraph as one
    sentence, how it was ported, the fragment maps of the TARGET's registers (recomputed,
    as `recipe new` writes them), then the reference's own description, marked as such."""
    p = plan
    paras = [x for x in re.split(r"\n\s*\n", (p.reference_doc or "").strip()) if x.strip()]
    head = " ".join(paras[0].split()) if paras else f"Recipe {p.source.name}."
    out = wrap(f"{head.rstrip('.')} -- ported to {p.target}.")
    out += [""] + wrap(f"Written by `rrsplice recipe port {p.source.name} --to "
                       f"{p.module.name}:{p.target}` from {p.source.name}: the statements "
                       "were aligned with the reference and every register, symbol and "
                       "line below was rewritten through that alignment, then checked "
                       "against the target.")
    if p.fragment_maps:
        out += [""] + wrap("Fragment maps of the target (`rrsplice fragments` on this "
                           "recipe; layouts from PTX ISA 9.7.14.5): what each passed "
                           "and returned register holds in its phase's matrices, per "
                           "lane (g, t) and element e.") + list(p.fragment_maps)
    rest = [x for x in paras[1:] if not x.lstrip().startswith("Fragment maps")]
    if rest:
        out += [""] + wrap(f"The reference recipe's description (its statements, lines "
                           f"and registers are those of {p.reference} in "
                           f"{p.reference_module.name}):")
        for x in rest:
            out += [""] + ["    " + y if y.strip() else "" for y in x.splitlines()]
    return [x.replace("\\", "\\\\").replace('"""', '\\"\\"\\"') for x in out]
