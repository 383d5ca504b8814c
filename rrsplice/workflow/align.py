"""Align two variants of one kernel statement by statement, and map their registers.

DLSS ships each kernel in flag combinations compiled from one source: the same statements,
with different register numbers (nvcc numbers registers in order of creation, so one extra
statement before a region renumbers everything after it) and different symbol names (the
parameter block and local statics carry the entry's name). Two statements correspond when
their *shapes* agree: opcode, guard, operand structure, immediates, register classes
(``%r``, ``%rd``, ``%f``...) and symbols with the entry's own name abstracted away. The
alignment is the longest matching of shapes (difflib's matcher, no junk heuristic); a region
ports only if every statement of it lies in one matched run and its registers map one to one.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from ..ptx.model import Address, Function, Imm, Negated, ParenList, PredPair, Reg, Sink, Symbol, Vector

_REG_CLASS = re.compile(r"^(%[A-Za-z_]*?)(\d+)$")
_LABEL = re.compile(r"^\$?L__BB\d+_\d+$")


def reg_class(name: str) -> str:
    m = _REG_CLASS.match(name)
    return m.group(1) if m else name


def _sym(name: str, fn: Function) -> str:
    if _LABEL.match(name):
        return "LABEL"
    # `_ZZ27<entry>E4smem`: a mangled name spells the entry's length before it
    return re.sub(r"\d*" + re.escape(fn.name), "@ENTRY", name)


def _shape(op, fn: Function) -> str:
    if isinstance(op, Reg):
        return op.name if op.special else reg_class(op.name)
    if isinstance(op, Negated):
        return "!" + _shape(op.reg, fn)
    if isinstance(op, Imm):
        return op.text
    if isinstance(op, Symbol):
        return _sym(op.name, fn)
    if isinstance(op, Vector):
        return "{" + ",".join(_shape(i, fn) for i in op.items) + "}"
    if isinstance(op, ParenList):
        return "(" + ",".join(_shape(i, fn) for i in op.items) + ")"
    if isinstance(op, Address):
        base = _shape(op.base, fn) if op.base is not None else ""
        return f"[{base}+{op.offset}" + "".join("," + _shape(i, fn) for i in op.extra) + "]"
    if isinstance(op, PredPair):
        return _shape(op.first, fn) + "|" + _shape(op.second, fn)
    if isinstance(op, Sink):
        return "_"
    return str(op)


def shape(st, fn: Function) -> str:
    """A statement's shape: what must agree for two statements to correspond."""
    if st.is_label:
        return "LABEL:"
    g = ""
    if st.guard is not None:
        g = ("@!" if st.guard.negated else "@") + _shape(st.guard.reg, fn) + " "
    return g + st.opcode + " " + " ".join(_shape(o, fn) for o in st.operands)


def _names(op, fn: Function, regs: list, syms: list) -> None:
    if isinstance(op, Reg):
        if not op.special:
            regs.append(op.name)
    elif isinstance(op, Negated):
        _names(op.reg, fn, regs, syms)
    elif isinstance(op, Symbol):
        syms.append(op.name)
    elif isinstance(op, (Vector, ParenList)):
        for i in op.items:
            _names(i, fn, regs, syms)
    elif isinstance(op, Address):
        if op.base is not None:
            _names(op.base, fn, regs, syms)
        for i in op.extra:
            _names(i, fn, regs, syms)
    elif isinstance(op, PredPair):
        _names(op.first, fn, regs, syms)
        _names(op.second, fn, regs, syms)


def names(st, fn: Function) -> tuple[list, list]:
    """Registers and symbols a statement names, in operand order (guard first)."""
    regs: list = []
    syms: list = []
    if st.guard is not None and not st.guard.reg.special:
        regs.append(st.guard.reg.name)
    if st.is_label:
        syms.append(st.label)
    for op in st.operands:
        _names(op, fn, regs, syms)
    return regs, syms


@dataclass
class Disagreement:
    """The first point where two functions do not correspond."""
    a: object | None          # statement of the reference, or None
    b: object | None          # statement of the target, or None
    why: str

    def render(self, fa: Function, fb: Function) -> str:
        def q(st, fn):
            if st is None:
                return "(nothing)"
            return f"{st.sid} (line {st.line}) `{' '.join(st.text.split())}`"
        return (f"{self.why}: {fa.name} {q(self.a, fa)} vs {fb.name} {q(self.b, fb)}")


@dataclass
class Alignment:
    fa: Function
    fb: Function
    pairs: dict = field(default_factory=dict)       # statement index a -> b (1-based)
    blocks: list = field(default_factory=list)      # difflib opcodes

    def region(self, first: int, last: int):
        """(b_first, b_last) for statements first..last of A, or a Disagreement."""
        fa, fb = self.fa, self.fb
        for i in range(first, last + 1):
            if i not in self.pairs:
                return self._unaligned(i)
        bf, bl = self.pairs[first], self.pairs[last]
        if bl - bf != last - first:
            for i in range(first, last):
                if self.pairs[i + 1] != self.pairs[i] + 1:
                    return Disagreement(fa.statements[i], fb.statements[self.pairs[i + 1] - 1],
                                        "the region is split in the target (statements "
                                        "inserted between these)")
        return bf, bl

    def _unaligned(self, i: int) -> Disagreement:
        """The unmatched run holding A's statement i, described from its first statement."""
        fa, fb = self.fa, self.fb
        for tag, a1, a2, b1, b2 in self.blocks:
            if tag != "equal" and a1 < i <= a2:
                sa = fa.statements[a1]
                sb = fb.statements[b1] if b1 < len(fb.statements) else None
                what = (f"the region does not align: {a2 - a1} statement(s) s{a1 + 1}-s{a2} "
                        f"of the reference stand against {b2 - b1} of the target"
                        + (f" (s{b1 + 1}-s{b2})" if b2 > b1 else ""))
                return Disagreement(sa, sb, what)
        return Disagreement(fa.statements[i - 1], None, "the region does not align")

    def map_names(self, first: int, last: int):
        """Register and symbol maps A -> B over statements first..last (which must be
        aligned), checked one to one; a Disagreement at the first conflict."""
        rmap: dict = {}
        rback: dict = {}
        smap: dict = {}
        fa, fb = self.fa, self.fb
        for i in range(first, last + 1):
            sa, sb = fa.statements[i - 1], fb.statements[self.pairs[i] - 1]
            ra, ya = names(sa, fa)
            rb, yb = names(sb, fb)
            for x, y in zip(ra, rb, strict=False):
                if rmap.setdefault(x, y) != y or rback.setdefault(y, x) != x:
                    return Disagreement(sa, sb, f"register {x} maps to both {rmap[x]} and {y}"
                                        if rmap[x] != y else
                                        f"registers {rback[y]} and {x} both map to {y}")
            for x, y in zip(ya, yb, strict=False):
                if smap.setdefault(x, y) != y:
                    return Disagreement(sa, sb, f"symbol {x} maps to both {smap[x]} and {y}")
        return rmap, smap

    def global_maps(self) -> tuple[dict, dict]:
        """Register and symbol maps over every aligned statement, keeping only names that map
        one way (for names a recipe uses outside its region, e.g. recomputed values)."""
        cand: dict = {}
        scand: dict = {}
        for i, j in self.pairs.items():
            sa, sb = self.fa.statements[i - 1], self.fb.statements[j - 1]
            ra, ya = names(sa, self.fa)
            rb, yb = names(sb, self.fb)
            for x, y in zip(ra, rb, strict=False):
                cand.setdefault(x, set()).add(y)
            for x, y in zip(ya, yb, strict=False):
                scand.setdefault(x, set()).add(y)
        rmap = {k: next(iter(v)) for k, v in cand.items() if len(v) == 1}
        smap = {k: next(iter(v)) for k, v in scand.items() if len(v) == 1}
        for pa, pb in zip(self.fa.params, self.fb.params, strict=False):
            smap.setdefault(pa.name, pb.name)
        smap[self.fa.name] = self.fb.name
        return rmap, smap


def align(fa: Function, fb: Function) -> Alignment:
    """Statement-by-statement alignment of fa (the reference) with fb."""
    sa = [shape(s, fa) for s in fa.statements]
    sb = [shape(s, fb) for s in fb.statements]
    sm = difflib.SequenceMatcher(None, sa, sb, autojunk=False)
    al = Alignment(fa, fb, blocks=sm.get_opcodes())
    for tag, a1, a2, b1, _b2 in al.blocks:
        if tag == "equal":
            for k in range(a2 - a1):
                al.pairs[a1 + k + 1] = b1 + k + 1
    return al
