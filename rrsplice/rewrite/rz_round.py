"""CUDA's `roundf` without an explicit rounding mode (one `.rz` forces ZLUDA into a slow
strict floating-point mode).

nvcc compiles ``roundf(x)`` to ``copysign.f32 S, X, 0.5``, ``add.rz[.ftz].f32 D, X, S`` and,
possibly after other statements, ``cvt.rzi.f32.f32 R, D``. The add is removed and the
cvt becomes, on its own line, a scoped block computing round-half-away-from-zero in the
default rounding mode::

    t = cvt.rzi(X);  u = |X - t|;  R = u >= 0.5 ? t + (S + S) : t

(exact: `X - t` is the fraction, `S + S` is +-1). The rule checks what this needs: S is
`copysign(0.5, X)`, D is read only by the cvt, X and S are not redefined in between; an
`add.rz` without its `cvt.rzi` is an error, like in the users' script.
"""

from __future__ import annotations

from ..analysis.semantics import def_use
from ..ptx.diagnostic import Diagnostic, at
from ..ptx.model import Function, Reg
from .operand_facts import HALF, float_bits
from .rules import Replacement, RewritePlan, Rule

SEQUENCE = ("{{ .reg .f32 %rzr_t, %rzr_u; .reg .pred %rzr_p; "
            "cvt.rzi.f32.f32 %rzr_t, {x}; sub.f32 %rzr_u, {x}, %rzr_t; "
            "abs.f32 %rzr_u, %rzr_u; setp.ge.f32 %rzr_p, %rzr_u, 0f3F000000; "
            "add.f32 %rzr_u, {s}, {s}; add.f32 %rzr_u, %rzr_t, %rzr_u; "
            "selp.f32 {r}, %rzr_u, %rzr_t, %rzr_p; }}")


def is_rz_add(st) -> bool:
    return (not st.is_label and st.base == "add" and "rz" in st.modifiers
            and st.modifiers[-1] == "f32")


def is_rzi_cvt(st) -> bool:
    return (not st.is_label and st.base == "cvt" and "rzi" in st.modifiers
            and st.modifiers[-2:] == ("f32", "f32"))


class RzRoundRule(Rule):
    name = "rz_round"

    def run(self, fn: Function, plan: RewritePlan, skip) -> None:
        stmts = fn.statements
        for i, st in enumerate(stmts):
            if not is_rz_add(st):
                continue
            why = skip(st)
            if why:
                plan.skipped.append(("rz_round", st, why))
                continue
            r = self._pair(fn, i, plan, skip)
            if r is not None:
                plan.replacements.append(r)

    def _pair(self, fn, i, plan, skip):
        stmts = fn.statements
        add = stmts[i]
        where = f"{add.sid} `{' '.join(add.text.split())}`"

        def bad(msg, st=add):
            plan.issues.append(Diagnostic("error", "rewrite-round", f"{where}: {msg}", **at(st)))
            return None
        ops = add.operands
        if add.guard is not None or len(ops) != 3 or not all(isinstance(o, Reg) for o in ops):
            return bad("expected an unguarded `add.rz.f32 D, X, S` on registers")
        d, x, s = (o.name for o in ops)
        if not self._is_half_copysign(stmts, i, x, s):
            return bad(f"{s} is not shown to be copysign(0.5, {x}) (its definition is not "
                       f"`copysign.f32 {s}, {x}, 0.5` earlier in the same straight-line code, with "
                       f"{x} not redefined in between)")
        cvt = None
        for j in range(i + 1, len(stmts)):
            st = stmts[j]
            if st.is_label or st.base in ("bra", "ret", "exit", "call"):
                break
            du = def_use(st)
            if d in du.uses:
                if is_rzi_cvt(st) and st.guard is None and len(st.operands) == 2 \
                        and isinstance(st.operands[1], Reg) and st.operands[1].name == d:
                    cvt = st
                break
            if x in du.defs or s in du.defs or d in du.defs:
                return bad(f"{x}, {s} or {d} is redefined by {st.sid} before the "
                           "`cvt.rzi` that reads the sum", st)
        if cvt is None:
            return bad("a lone `add.rz`: its sum is not read by a `cvt.rzi.f32.f32` in the "
                       "same straight-line code (the round idiom is add.rz + cvt.rzi)")
        why = skip(cvt)
        if why:
            return bad(f"its `cvt.rzi` {cvt.sid} is {why} while the add is not: the idiom "
                       "straddles the edge of the cut", cvt)
        others = [st for st in stmts if st is not cvt and st is not add
                  and d in def_use(st).uses]
        if others:
            return bad(f"the sum {d} is also read by {others[0].sid}, so the add cannot be "
                       "removed", others[0])
        r = cvt.operands[0]
        if not isinstance(r, Reg):
            return bad("the cvt.rzi destination is not a register", cvt)
        lead = cvt.text[:len(cvt.text) - len(cvt.text.lstrip())]
        return Replacement("rz_round", cvt, lead + SEQUENCE.format(x=x, s=s, r=r.name),
                           fn, folded=(add,))

    @staticmethod
    def _is_half_copysign(stmts, i, x, s) -> bool:
        """The last definition of S before statement i is `copysign.f32 S, X, K`, K = 0.5,
        and X is not redefined between it and statement i."""
        for j in range(i - 1, -1, -1):
            st = stmts[j]
            if st.is_label:
                return False
            du = def_use(st)
            if s not in du.defs:
                if x in du.defs:        # S would be copysign(0.5, an older X)
                    return False
                continue
            ops = st.operands
            if (st.opcode != "copysign.f32" or st.guard is not None or len(ops) != 3
                    or not isinstance(ops[1], Reg) or ops[1].name != x):
                return False
            k = ops[2]
            if float_bits(k) == HALF:
                return True
            if isinstance(k, Reg):
                defs = [t for t in stmts if k.name in def_use(t).defs]
                return (len(defs) == 1 and defs[0].opcode in ("mov.f32", "mov.b32")
                        and defs[0].guard is None
                        and float_bits(defs[0].operands[1]) == HALF)
            return False
        return False
