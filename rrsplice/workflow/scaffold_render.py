"""`recipe new`, step two: the recipe module's text from a `RecipePlan`, with no I/O.

The module is `templates/recipe_template.py` filled in (see that file's opening comment):
its docstring replaced by the recipe's own, written here from the plan's facts, and each of
its annotated constants by the plan's value. The same plan and module reference give the
same bytes.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from ..infra.words import count
from .scaffold_plan import RecipePlan

TEMPLATE = Path(__file__).resolve().parent / "templates" / "recipe_template.py"
LAYER_MARK = "<layer>"          # in the template's comments: the recipe's layer


def render_recipe(plan: RecipePlan, module_ref: str) -> str:
    """The recipe module for `plan`, naming its module as `module_ref` (how the recipe
    finds it from where it is written: scaffold._module_reference)."""
    return fill_template(_docstring(recipe_doc(plan)), constants(plan, module_ref), plan.layer)


def constants(plan: RecipePlan, module_ref: str) -> dict[str, str]:
    """The template's constants as the recipe writes them (Python source of each value)."""
    p = plan
    roles = dict(p.roles)
    values = {"MODULE": module_ref, "ENTRY": p.function, "LAYER": p.layer, "CALLEE": p.callee,
              "CALL_OPCODE": p.call_opcode, "CUT_CALL": p.cut, "ABI": p.abi,
              "SCRATCH": p.scratch, "OWN_SCRATCH": p.scratch_bytes if p.own else None,
              "SLOTS": p.slots, "W_REG": p.w_reg, "V_REG": p.v_reg,
              "W_PARAM": roles["w_param"], "BIAS_PARAM": roles["bias_param"],
              "DEBUG_PARAM": roles["debug_param"], "BLOCK_BARRIER": p.barrier}
    out = {k: repr(v) for k, v in values.items()}
    out.update(A_REGS=_pylist(p.a_regs), C_REGS=_pylist(p.c_regs),
               OTHER_REGS=_pylist(p.other_regs), RET_REGS=_pylist(p.ret_regs),
               HEAD_LABELS=_pylist(p.head, per_line=1), EXITS=_pylist(p.exits, per_line=1),
               SHARED=_pylist(p.shared, per_line=1), REG_TYPES=_types_literal(p.types))
    return out


def fill_template(doc: str, values: dict[str, str], layer: str) -> str:
    """The template from its docstring on, the docstring replaced by `doc` (its source
    text, quotes included), each annotated constant NAME by `NAME = values[NAME]` (every
    one must be given, and only those) and `<layer>` in a comment by `layer`."""
    lines, doc_span, slots = _template()
    if set(values) != set(slots):
        raise ValueError(f"template constants {sorted(slots)} != given {sorted(values)}")
    out = [doc + "\n"]
    at = doc_span[1] + 1
    for name, (first, last) in sorted(slots.items(), key=lambda kv: kv[1]):
        out += [_comment_marks(x, layer) for x in lines[at:first]]
        out.append(f"{name} = {values[name]}\n")
        at = last + 1
    out += [_comment_marks(x, layer) for x in lines[at:]]
    return "".join(out)


def _comment_marks(line: str, layer: str) -> str:
    return line.replace(LAYER_MARK, layer) if line.lstrip().startswith("#") else line


@cache
def _template() -> tuple[list[str], tuple[int, int], dict[str, tuple[int, int]]]:
    """The template's lines, its docstring's (first, last) line index, and each annotated
    top-level constant's (first, last) line index (0-based, inclusive)."""
    text = TEMPLATE.read_text(encoding="utf-8")
    tree = ast.parse(text)
    first = tree.body[0]
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    assert first.end_lineno is not None
    slots = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            assert node.end_lineno is not None
            slots[node.target.id] = (node.lineno - 1, node.end_lineno - 1)
    return text.splitlines(keepends=True), (first.lineno - 1, first.end_lineno - 1), slots


def recipe_doc(plan: RecipePlan) -> list[str]:
    """The docstring's paragraphs (unwrapped; "" between them): the cut, the phases, what
    is passed and what comes back, the fragment maps, the barrier contract, the exits and
    the notes."""
    doc = _doc_cut(plan) + _doc_passed(plan) + _doc_returns(plan)
    if plan.fragment_maps:
        doc += ["", "Fragment maps (`rrsplice fragments` on this recipe; layouts from PTX ISA "
                "9.7.14.5): what each passed and returned register holds in its phase's "
                "matrices A[row][k] and C/D[row][n], per lane (g, t) and element e; bias "
                "seeds with their weight-image bytes.", *plan.fragment_maps]
    if plan.barrier:
        doc += ["", _doc_barrier(plan)]
    if plan.exits:
        doc += ["", f"The region leaves to {len(plan.exits)} label(s) besides the statement "
                "after it: the callee returns an exit index after RET_REGS (0: go on after "
                "the call), and the call text branches on it: "
                + ", ".join(f"{k} -> {lab}" for k, lab in enumerate(plan.exits, 1)) + "."]
    return doc + ["Note: " + n for n in plan.notes]


def _doc_cut(p: RecipePlan) -> list[str]:
    mod = p.module.name
    ph = p.phases
    doc = [f"Splice recipe for {p.function} (scaffolded by `rrsplice recipe new {p.name} "
           f"--module {mod} --range {p.range} --abi {p.abi}`).", "",
           f"The cut replaces statements {p.range} ({p.range_len} statements) -- physical "
           f"lines {p.cut[0]}-{p.cut[1] - 1} of {mod} -- with one `{p.call_opcode} "
           f"{p.callee}`.",
           f"It holds {p.n_mma} mma in {count(len(ph), 'phase')}"
           + (f" ({ph[0]}-{ph[-1]} as `rrsplice phases` numbers them)." if len(ph) > 1
              else f" (phase {ph[0]} of `rrsplice phases`)." if ph else ".")]
    f = p.phase
    if f is None:
        return doc
    doc.append(f"Phase {f.index} (s{f.first}-s{f.last}, lines {f.first_line}-{f.last_line}) "
               f"is a {f.geometry} {f.shape} GEMM: {f.mmas} mma in {f.chains} chains, "
               f"{f.m_tiles} m-tiles x {f.n_tiles} n-tiles x {f.k_slices} k-slices, "
               f"{f.a_fragments} A fragments.")
    if f.seed_offsets:
        doc.append(f"Its {len(p.c_regs)} bias seeds are loaded from the weight image at "
                   f"+{min(f.seed_offsets)}..+{max(f.seed_offsets)}.")
    if f.b_weight_range:
        doc.append(f"Its B fragments come from weight image bytes "
                   f"[{f.b_weight_range[0]}, {f.b_weight_range[1]}).")
    return doc


def _doc_passed(p: RecipePlan) -> list[str]:
    other = p.other_regs
    doc = ["", f"Live into the region: {p.live_in} registers. Passed to the callee, in "
           "this order:",
           f"  * A_REGS: {len(p.a_regs)} registers of phase {p.first_phase}'s A fragments, "
           "first-use order,",
           f"  * C_REGS: {len(p.c_regs)} phase-{p.first_phase} bias seeds, weight-image "
           "offset order,",
           f"  * OTHER_REGS: {len(other)} more (pointers, special values, values some "
           "path leaves unwritten)" + (f": {' '.join(other[:8])}"
                                       + (" ..." if len(other) > 8 else "")
                                       if other else "") + ","]
    for n in p.shared:
        doc.append(f"  * the address of the .shared array {n}, which the region uses (SHARED),")
    if p.abi == "scratch" and p.ret_regs:
        doc.append("  * the address of the scratch array.")
    if p.derivable:
        reg, detail = p.derivable[0]
        doc.append(f"Not passed: {len(p.derivable)} registers the body can reload from a "
                   f"passed pointer, e.g. {reg} = {detail}.")
    return doc


def _doc_returns(p: RecipePlan) -> list[str]:
    ret, size, sym = p.ret_regs, p.slot_size, p.scratch
    doc = ["", f"Live out of the region (RET_REGS): {len(ret)} registers"
           + (f": {' '.join(ret[:12])}" + (" ..." if len(ret) > 12 else "")
              if ret else "") + "."]
    if p.own is not None:
        doc.append(f"No .shared array of {p.function} can carry them ({p.own.why}), so the "
                   f"recipe declares its own, {sym} ({p.scratch_bytes} bytes, at module "
                   "scope in the extern text; OWN_SCRATCH).")
    if p.abi == "scratch" and ret:
        if p.slots == "thread":
            doc.append(f"They come back through {sym} ({p.scratch_bytes} bytes), {size} "
                       f"bytes per thread at t * {size}, t = the thread's linear index in "
                       "its block (tid.x + ntid.x * (tid.y + ntid.y * tid.z); "
                       f"{p.threads} threads).")
        else:
            doc.append(f"They come back through {sym} ({p.scratch_bytes} bytes), {size} "
                       f"bytes per lane at %laneid * {size}.")
    elif ret:
        doc.append(f"They come back as the call's return value, one {size}-byte .param "
                   "array read with ld.param.")
    return doc


def _doc_barrier(p: RecipePlan) -> str:
    who = (f"{p.threads} threads ({(p.threads + 31) // 32} warps)" if p.threads
           else "more than one warp (no .maxntid/.reqntid)")
    return (f"Block barrier: the block may run {who}, and the kernel itself uses "
            f"{p.scratch} (staging in and around the region), so the slots are guarded on "
            "both sides. The native body MUST execute a block barrier (`bar.sync 0` / "
            "`__syncthreads()`) after the region's work and before it stores its "
            "returns (no warp may store a slot while another still uses those bytes), "
            "and the call text executes `bar.sync 0` after its scratch reads (no warp "
            "may reuse the array before every warp has read its slot). No barrier is "
            "needed between the body's stores and the reads: a slot is stored and read "
            "by the same thread. `rrsplice outline` mirrors the call text's barrier "
            "before the outlined body's stores.")


def _docstring(paragraphs: list[str]) -> str:
    """The docstring's source: the lines wrapped at 88, then the closing quotes on a line of
    their own. It holds file names as they are: a backslash would start an escape
    (`m\\x.ptx` is a SyntaxError) and three quotes would end it."""
    wrapped: list[str] = []
    for para in paragraphs:
        wrapped.extend(wrap(para) if para else [""])
    text = "\n".join(wrapped).replace("\\", "\\\\").replace('"""', "'''")
    return f'"""{text}\n"""'


def _pylist(regs, per_line: int = 4, indent: str = "    ") -> str:
    if not regs:
        return "[]"
    rows = []
    for i in range(0, len(regs), per_line):
        rows.append(indent + " ".join(f'"{r}",' for r in regs[i:i + per_line]))
    return "[\n" + "\n".join(rows) + "\n]"


def _types_literal(types) -> str:
    typ = "{" + ", ".join(f'"{k}": "{v}"' for k, v in types) + "}"
    if len(typ) > 80:
        typ = "{\n" + "\n".join(f'    "{k}": "{v}",' for k, v in types) + "\n}"
    return typ


def wrap(text: str, width: int = 88) -> list:
    """`text` as lines of at most `width` (longer words stand alone), a `* ` item's
    continuation lines indented under its text."""
    lead = text[:len(text) - len(text.lstrip(" "))]
    indent = lead + "  " if text.lstrip(" ").startswith("* ") else lead
    words = text.lstrip(" ").split(" ")
    out, cur = [], lead
    for w in words:
        if cur.strip() and len(cur) + 1 + len(w) > width:
            out.append(cur)
            cur = indent + w
        else:
            cur = f"{cur} {w}" if cur.strip() else cur + w
    if cur:
        out.append(cur)
    return out
