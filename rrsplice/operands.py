"""The instruction-level parser: guard, opcode and typed operands of one instruction.

The Lark grammar hands over each instruction as one token; this small recursive-descent
parser over a single compiled tokenizer turns its text into typed operands. It is the
"second small grammar" of the statement-level design:

    instruction := guard? OPCODE operand_list? ';'
    guard       := '@' '!'? REG
    operand     := '{' items? '}' | '[' address ']' | '(' items? ')'
                 | REG ('|' REG)? | '!' REG | '-'? NUMBER | IDENT | '_'
    address     := (REG | IDENT | NUMBER)? (('+'|'-') NUMBER)* (',' operand)*
"""

from __future__ import annotations

import re

from .model import (Address, Guard, Imm, Negated, ParenList, PredPair, Reg, Sink, Symbol,
                    Vector, is_special_register)

_TOKEN = re.compile(r"""
  (?P<ws>\s+)
| (?P<comment>//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)
| (?P<reg>%[A-Za-z_$][\w$]*(?:\.[xyzw](?![\w$]))?)
| (?P<hexf>0[fFdD][0-9a-fA-F]{8}(?:[0-9a-fA-F]{8})?(?![\w$]))
| (?P<float>\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
| (?P<int>(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)U?(?![\w$]))
| (?P<id>[A-Za-z_$][\w$]*)
| (?P<p>[{}\[\](),|+\-!;])
""", re.VERBOSE)

_OPCODE = re.compile(r"\s*(?:@(!?)\s*([%A-Za-z_$][\w$]*)\s+)?([a-z][\w$]*(?:(?:\.|::)[\w$]+)*)")

_SPECIAL_CACHE: dict = {}


class OperandSyntaxError(Exception):
    """Raised with the character offset (relative to the instruction text) of the problem."""

    def __init__(self, message: str, offset: int, expected: list | None = None):
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.expected = expected or []


def _int_value(text: str) -> int:
    t = text.rstrip("U")
    if t[:2] in ("0x", "0X"):
        return int(t, 16)
    if t[:2] in ("0b", "0B"):
        return int(t, 2)
    return int(t, 10)


def _reg(name: str) -> Reg:
    r = _SPECIAL_CACHE.get(name)
    if r is None:
        r = Reg(name, is_special_register(name))
        _SPECIAL_CACHE[name] = r
    return r


# One operand of an instruction without comments: a brace list, an address, a paren list,
# or a plain token run, followed by ',' or ';'. Used by the cached fast path.
_PIECE = re.compile(r"\s*(\{[^{}]*\}|\[[^\[\]]*\]|\([^()]*\)|[^,;{}\[\]()/]+?)\s*([,;])")

_PIECE_CACHES: dict = {}


def clear_caches() -> None:
    """Forget cached operand pieces (parse() calls this per module to bound memory)."""
    _PIECE_CACHES.clear()


def parse_instruction(text: str, scoped_regs: frozenset = frozenset()):
    """Parse one instruction's text (ending in ';').

    Returns (guard, opcode, operands). `scoped_regs` names bare identifiers declared as
    `.reg` in an enclosing scope (`low`, `high`), which become Reg operands.

    Fast path: split the operand text into pieces and reuse the (immutable) operand of a
    piece seen before; anything unusual goes through the full parser, which also produces
    the precise error position.
    """
    m = _OPCODE.match(text)
    if m is None:
        raise OperandSyntaxError("expected an instruction opcode", 0, ["opcode"])
    guard = None
    g = m.group(2)
    if g is not None:
        guard = Guard(_reg(g) if g[0] == "%" or g in scoped_regs else Reg(g),
                      negated=bool(m.group(1)))
    opcode = m.group(3)
    pos = m.end()
    if "/" not in text:
        cache = _PIECE_CACHES.get(scoped_regs)
        if cache is None:
            cache = _PIECE_CACHES[scoped_regs] = {}
        ops = []
        p = pos
        end = len(text)
        if text[p:].strip() == ";":
            return guard, opcode, ()
        while True:
            pm = _PIECE.match(text, p)
            if pm is None:
                break
            piece = pm.group(1)
            op = cache.get(piece)
            if op is None:
                try:
                    one = _slow_operands(piece + ";", 0, scoped_regs)
                except OperandSyntaxError:
                    break
                if len(one) != 1:
                    break
                op = cache[piece] = one[0]
            ops.append(op)
            p = pm.end()
            if pm.group(2) == ";":
                if p == end:
                    return guard, opcode, tuple(ops)
                break
    return guard, opcode, _slow_operands(text, pos, scoped_regs)


def _slow_operands(text: str, pos: int, scoped_regs) -> tuple:
    """Tokenize text[pos:] and parse the operand list up to the final ';'."""
    toks = []  # (kind, text, offset)
    append = toks.append
    covered = pos
    for tm in _TOKEN.finditer(text, pos):
        start = tm.start()
        if start != covered:  # finditer skips what it cannot match: that is an error
            raise OperandSyntaxError(f"unexpected character {text[covered]!r}", covered,
                                     ["operand"])
        covered = tm.end()
        kind = tm.lastgroup
        if kind == "ws" or kind == "comment":
            continue
        append((kind, tm.group(), start))
    if covered != len(text):
        raise OperandSyntaxError(f"unexpected character {text[covered]!r}", covered, ["operand"])
    return _OperandParser(toks, text, scoped_regs).operand_list()


class _OperandParser:
    __slots__ = ("toks", "i", "text", "scoped")

    def __init__(self, toks, text, scoped):
        self.toks = toks
        self.i = 0
        self.text = text
        self.scoped = scoped

    def _peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else ("eof", "", len(self.text))

    def _fail(self, expected):
        kind, tok, off = self._peek()
        shown = repr(tok) if tok else "end of instruction"
        prev_end = self.toks[self.i - 1][2] + len(self.toks[self.i - 1][1]) if self.i else 0
        if tok and "\n" in self.text[prev_end:off]:
            raise OperandSyntaxError(
                f"unexpected {shown}: missing ';' at the end of the previous line?", off,
                ["';'"])
        raise OperandSyntaxError(f"unexpected {shown}", off, expected)

    def _expect(self, punct):
        kind, tok, off = self._peek()
        if kind != "p" or tok != punct:
            self._fail([repr(punct)])
        self.i += 1

    def operand_list(self):
        ops = []
        kind, tok, _ = self._peek()
        if kind == "p" and tok == ";":
            self.i += 1
            self._end()
            return ()
        while True:
            ops.append(self.operand())
            kind, tok, _ = self._peek()
            if kind == "p" and tok == ",":
                self.i += 1
                continue
            if kind == "p" and tok == ";":
                self.i += 1
                self._end()
                return tuple(ops)
            self._fail(["','", "';'"])

    def _end(self):
        if self.i != len(self.toks):
            kind, tok, off = self.toks[self.i]
            raise OperandSyntaxError(f"unexpected {tok!r} after ';'", off, ["end of instruction"])

    def operand(self):
        kind, tok, off = self._peek()
        if kind == "reg":
            self.i += 1
            reg = _reg(tok)
            k2, t2, _ = self._peek()
            if k2 == "p" and t2 == "|":
                self.i += 1
                k3, t3, _ = self._peek()
                if k3 != "reg" and not (k3 == "id" and t3 in self.scoped):
                    self._fail(["predicate register"])
                self.i += 1
                return PredPair(reg, _reg(t3))
            return reg
        if kind == "id":
            self.i += 1
            if tok == "_":
                return Sink()
            if tok in self.scoped:
                return Reg(tok)
            return Symbol(tok)
        if kind in ("int", "float", "hexf"):
            self.i += 1
            return _imm(kind, tok)
        if kind == "p":
            if tok == "{":
                self.i += 1
                return Vector(self._items("}"))
            if tok == "[":
                self.i += 1
                return self._address()
            if tok == "(":
                self.i += 1
                return ParenList(self._items(")"))
            if tok == "-":
                self.i += 1
                k2, t2, _ = self._peek()
                if k2 in ("int", "float"):
                    self.i += 1
                    imm = _imm(k2, t2)
                    return Imm("-" + t2, -imm.value, imm.kind_name)
                self._fail(["number"])
            if tok == "!":
                self.i += 1
                k2, t2, _ = self._peek()
                if k2 == "reg" or (k2 == "id" and t2 in self.scoped):
                    self.i += 1
                    return Negated(_reg(t2))
                self._fail(["predicate register"])
        self._fail(["operand"])

    def _items(self, close):
        items = []
        kind, tok, _ = self._peek()
        if kind == "p" and tok == close:
            self.i += 1
            return ()
        while True:
            items.append(self.operand())
            kind, tok, _ = self._peek()
            if kind == "p" and tok == ",":
                self.i += 1
                continue
            if kind == "p" and tok == close:
                self.i += 1
                return tuple(items)
            self._fail(["','", repr(close)])

    def _address(self):
        base = None
        offset = 0
        kind, tok, _ = self._peek()
        if kind == "reg":
            base = _reg(tok)
            self.i += 1
        elif kind == "id":
            base = Reg(tok) if tok in self.scoped else Symbol(tok)
            self.i += 1
        elif kind == "int":
            offset = _int_value(tok)
            self.i += 1
        elif kind == "p" and tok == "-":
            pass
        else:
            self._fail(["register", "symbol", "number"])
        while True:
            kind, tok, _ = self._peek()
            if kind == "p" and tok in "+-" and tok:
                sign = 1
                while kind == "p" and tok in ("+", "-"):
                    if tok == "-":
                        sign = -sign
                    self.i += 1
                    kind, tok, _ = self._peek()
                if kind != "int":
                    self._fail(["integer offset"])
                offset += sign * _int_value(tok)
                self.i += 1
                continue
            break
        extra = []
        while True:
            kind, tok, _ = self._peek()
            if kind == "p" and tok == "]":
                self.i += 1
                return Address(base, offset, tuple(extra))
            if kind == "p" and tok == ",":
                self.i += 1
                extra.append(self.operand())
                continue
            self._fail(["']'", "'+'", "','"])


def _imm(kind: str, tok: str) -> Imm:
    if kind == "int":
        return Imm(tok, _int_value(tok), "int")
    if kind == "float":
        return Imm(tok, float(tok), "float")
    return Imm(tok, int(tok[2:], 16), "hexfloat")
