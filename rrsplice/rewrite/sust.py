"""Surface stores -> calls to native helpers (ZLUDA's generic formatted store is slow).

``sust.b.2d.v2.b16.zero [S, {X, Y}], {A, B}`` becomes, on the same line::

    { .param .b64 sust_s; .param .b32 sust_x; .param .b32 sust_y; .param .b16 sust_v0;
      .param .b16 sust_v1; st.param.b64 [sust_s], S; ...; call d4r_sust_v2b16,
      (sust_s, sust_x, sust_y, sust_v0, sust_v1); }

and the helper's ``.extern .func`` declaration is added once. The helper names are the
users' (the native side defines them); the shapes are a table, not code
(`SUST_KINDS`, kept with the recipe's options, which `sust=[kinds]` names).
"""

from __future__ import annotations

from ..ptx.diagnostic import Diagnostic, at
from ..ptx.isa import TYPES
from ..ptx.model import Address, Function, Reg, Vector
from ..workflow.recipe import SUST_KINDS, SustKind
from .operand_facts import fits
from .rules import Replacement, RewritePlan, Rule

_BY_OPCODE = {k.opcode: name for name, k in SUST_KINDS.items()}


def signature(kind: SustKind) -> list[tuple[str, str]]:
    """(param type, role) of the helper's parameters, in order."""
    return ([(".b64", "s"), (".b32", "x"), (".b32", "y")]
            + [(kind.value_type, f"v{i}") for i in range(kind.count)])


def declaration(kind: SustKind) -> str:
    params = ", ".join(f".param {t} {kind.helper}_{r}" for t, r in signature(kind))
    return f".extern .func {kind.helper}({params});"


def call_block(kind: SustKind, args: list, guard: str = "") -> str:
    sig = signature(kind)
    decls = " ".join(f".param {t} sust_{r};" for t, r in sig)
    stores = " ".join(f"st.param{t} [sust_{r}], {a};" for (t, r), a in zip(sig, args, strict=False))
    names = ", ".join(f"sust_{r}" for _, r in sig)
    return f"{{ {decls} {stores} {guard}call {kind.helper}, ({names}); }}"


class SustRule(Rule):
    """The four surface-store shapes; `kinds` is True (all) or a list of kind names."""

    name = "sust"

    def __init__(self, kinds=True):
        self.kinds = list(SUST_KINDS) if kinds is True else list(kinds)

    def run(self, fn: Function, plan: RewritePlan, skip) -> None:
        for st in fn.statements:
            if st.is_label or st.base != "sust":
                continue
            kname = _BY_OPCODE.get(st.opcode)
            if kname is None:
                plan.skipped.append(("sust", st, f"`{st.opcode}` is not one of the "
                                     "rewritten shapes"))
                continue
            if kname not in self.kinds:
                plan.skipped.append((f"sust.{kname}", st, "kind not selected"))
                continue
            why = skip(st)
            if why:
                plan.skipped.append((f"sust.{kname}", st, why))
                continue
            kind = SUST_KINDS[kname]
            args = self._arguments(fn, st, kind, plan)
            if args is None:
                continue
            guard = ""
            if st.guard is not None:
                guard = f"@{'!' if st.guard.negated else ''}{st.guard.reg.name} "
            text = call_block(kind, args, guard)
            lead = st.text[:len(st.text) - len(st.text.lstrip())]
            plan.replacements.append(Replacement(f"sust.{kname}", st, lead + text, fn))
            plan.declarations[kind.helper] = declaration(kind)

    def _arguments(self, fn, st, kind: SustKind, plan: RewritePlan):
        """[S, X, Y, values...] as text, or None after recording why not."""
        def bad(msg):
            plan.issues.append(Diagnostic("error", "rewrite-operand",
                                          f"{st.sid} `{' '.join(st.text.split())}`: {msg}; "
                                          f"{kind.helper} takes (" + ", ".join(
                                              t for t, _ in signature(kind)) + ")", **at(st)))
            return None
        ops = st.operands
        if len(ops) != 2 or not isinstance(ops[0], Address) or not isinstance(ops[1], Vector):
            return bad("expected [surface, {x, y}], {values}")
        addr, vals = ops
        coords = addr.coords
        if not isinstance(addr.base, Reg) or addr.offset:
            return bad(f"the surface `{addr.base}` is not a 64-bit register (a surface "
                       "reference cannot be passed as .b64)")
        if not fits(fn, addr.base, 8):
            return bad(f"the surface {addr.base} is not declared 64-bit")
        if coords is None or len(coords.items) != 2:
            return bad("expected two coordinates {x, y}")
        for c in coords.items:
            if not fits(fn, c, 4):
                return bad(f"coordinate {c} is not a 32-bit register or an integer")
        if len(vals.items) != kind.count:
            return bad(f"{len(vals.items)} values, the shape stores {kind.count}")
        for v in vals.items:
            size = TYPES[kind.value_type[1:]].bytes
            if not fits(fn, v, size):
                return bad(f"value {v} is not {size} bytes wide")
        return [str(addr.base)] + [str(c) for c in coords.items] + [str(v) for v in vals.items]


_REG = {".b16": ("%rs", ".b16"), ".b32": ("%r", ".b32"), ".b64": ("%rd", ".b64")}
_PREFIX_TYPE = {prefix: t for prefix, t in _REG.values()}


def reference_bodies(version: str = "8.0", target: str = "sm_90", kinds=None) -> str:
    """A PTX module defining every helper as the surface store it replaces: linked with a
    rewritten module (``ptxas -c`` + ``nvlink``) it must behave exactly like the original,
    which is how the rewrite is checked on NVIDIA hardware."""
    out = [f".version {version}", f".target {target}", ".address_size 64", ""]
    for name in kinds or SUST_KINDS:
        kind = SUST_KINDS[name]
        sig = signature(kind)
        params = ", ".join(f".param {t} {kind.helper}_{r}" for t, r in sig)
        out.append(f".visible .func {kind.helper}({params})")
        out.append("{")
        counts: dict = {}
        regs = []
        for t, _r in sig:
            prefix, rt = _REG[t]
            counts[prefix] = counts.get(prefix, 0) + 1
            regs.append(f"{prefix}{counts[prefix]}")
        for prefix, n in counts.items():
            out.append(f"\t.reg {_PREFIX_TYPE[prefix]} {prefix}<{n + 1}>;")
        for (t, r), reg in zip(sig, regs, strict=False):
            out.append(f"\tld.param{t} \t{reg}, [{kind.helper}_{r}];")
        s, x, y, *vals = regs
        vec = "{" + ", ".join(vals) + "}"
        out.append(f"\t{kind.opcode} \t[{s}, {{{x}, {y}}}], {vec};")
        out.append("\tret;")
        out.append("}")
        out.append("")
    return "\n".join(out)
