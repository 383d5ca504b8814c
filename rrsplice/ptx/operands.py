"""The instruction-level parser: guard, opcode and typed operands of one instruction.

The Lark grammar hands over each instruction as one token; this small recursive-descent
parser over a single compiled tokenizer turns its text into typed operands. It is the
"second small grammar" of the statement-level design:

    instruction := guard? OPCODE operand_list? ';'
    guard       := '@' '!'? REG
    operand     := value ('|' pred)?            pair destination: `r|p`, `_|%p`, `{..}|p`
                 | '[' address ']' | '(' items? ')' | '!' REG | '-'? NUMBER
    value       := '{' items? '}' | REG (('+'|'-') NUMBER)? | IDENT (('+'|'-') NUMBER)? | '_'
    pred        := REG | '_'
    address     := (REG | IDENT | NUMBER)? (('+'|'-') NUMBER)* (',' operand)*

REG is `%name` or any bare identifier declared by `.reg` in scope, optionally with a
vector element selector (`%v.x`, `quad.w`); a selector on a special register (`%tid.x`)
is part of its name.
"""

from __future__ import annotations

import re

from .model import (
    Address,
    Element,
    Guard,
    Imm,
    Negated,
    Offset,
    ParenList,
    PredPair,
    Reg,
    Sink,
    Symbol,
    Vector,
    is_special_register,
)

_TOKEN = re.compile(r"""
  (?P<ws>\s+)
| (?P<comment>//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)
| (?P<reg>%[A-Za-z_$][\w$]*(?:\.[xyzwrgba](?![\w$]))?)
| (?P<hexf>0[fFdD][0-9a-fA-F]{8}(?:[0-9a-fA-F]{8})?(?![\w$]))
| (?P<float>\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
| (?P<int>(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)U?(?![\w$]))
| (?P<id>[A-Za-z_$][\w$]*(?:\.[xyzwrgba](?![\w$]))?)
| (?P<p>[{}\[\](),|+\-!;])
""", re.VERBOSE)

_OPCODE = re.compile(r"\s*(?:@\s*(!?)\s*([%A-Za-z_$][\w$]*)\s+)?([a-z][\w$]*(?:(?:\.|::)[\w$]+)*)")

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
    if len(t) > 1 and t[0] == "0" and t.isdigit() and "8" not in t and "9" not in t:
        return int(t, 8)   # PTX octal
    return int(t, 10)


def _reg(name: str):
    """`%r5` -> Reg; `%tid.x` -> special Reg; `%v.x` -> Element of the vector `%v`."""
    r = _SPECIAL_CACHE.get(name)
    if r is None:
        if is_special_register(name):
            r = Reg(name, True)
        elif "." in name:
            base, elem = name.rsplit(".", 1)
            r = Element(Reg(base, is_special_register(base)), elem)
        else:
            r = Reg(name)
        _SPECIAL_CACHE[name] = r
    return r


def _named(tok: str, scoped):
    """A bare identifier: a register when `.reg` declares it in scope (with or without an
    element selector), else a symbol."""
    if tok in scoped:
        return Reg(tok)
    if "." in tok:
        base, elem = tok.rsplit(".", 1)
        if base in scoped:
            return Element(Reg(base), elem)
    return Symbol(tok)


# The fast path. An operand list without comments, checked whole by one match, then cut
# into its pieces by one findall: a brace list, an address, a paren list, or a plain run
# (register, `%p|%q`, immediate, symbol, `!%p`). Each piece maps to an immutable operand
# through a per-module cache and a few direct recognisers; anything unusual goes through
# the full tokenizer + recursive-descent parser, which also gives the precise error.
_P = r"(?:\{[^{}]*\}|\[[^\[\]]*\]|\([^()]*\)|[^\s,;{}\[\]()/](?:[^,;{}\[\]()/]*[^\s,;{}\[\]()/])?)"
_FAST = re.compile(rf"\s*+(?:@\s*+(!?)\s*+([%A-Za-z_$][\w$]*+)\s++)?"
                   rf"([a-z][\w$]*+(?:(?:\.|::)[\w$]++)*+)\s*+(?:({_P}\s*(?:,\s*{_P}\s*)*+))?;")
_PIECES = re.compile(_P)
_REG_FULL = re.compile(r"%[A-Za-z_$][\w$]*(?:\.[xyzwrgba])?")
_ADDR_FULL = re.compile(r"\[\s*(%?[A-Za-z_$][\w$]*)\s*(?:\+\s*(-?\d+)\s*)?\]")
_INT_FULL = re.compile(r"-?(?:0|[1-9]\d*)")
_HEXF_FULL = re.compile(r"0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}")

_PIECE_CACHES: dict = {}


_INSTRUCTION_CACHES: dict = {}


def clear_caches() -> None:
    """Forget cached operand pieces and instructions (parse() calls this per module to
    bound memory)."""
    _PIECE_CACHES.clear()
    _INSTRUCTION_CACHES.clear()


def instruction_cache(scope: frozenset | tuple) -> dict:
    """instruction text -> parse_instruction's result, for one set of scoped names (the
    parser fills it; results are immutable, so statements share them). `scope` is that
    frozenset, or (the set, a binding state of rrsplice.ptx.scopes) for the results with
    their registers bound."""
    cache = _INSTRUCTION_CACHES.get(scope)
    if cache is None:
        cache = _INSTRUCTION_CACHES[scope] = {}
    return cache


def _piece(piece: str, scoped_regs) -> object:
    """One operand piece -> operand, or None when the full parser must decide."""
    c = piece[0]
    if c == "%":
        if _REG_FULL.fullmatch(piece):
            return _reg(piece)
    elif c == "{":
        items = []
        for x in piece[1:-1].split(","):
            x = x.strip()
            if x[:1] == "%" and _REG_FULL.fullmatch(x):
                items.append(_reg(x))
            else:
                return None
        return Vector(tuple(items))
    elif c == "[":
        am = _ADDR_FULL.fullmatch(piece)
        if am is not None:
            b = am.group(1)
            if b[0] == "%":
                base = _reg(b)
            elif b in scoped_regs:
                base = Reg(b)
            else:
                base = Symbol(b)
            off = am.group(2)
            return Address(base, int(off) if off else 0)
    elif c == "0" and _HEXF_FULL.fullmatch(piece):
        return Imm(piece, int(piece[2:], 16), "hexfloat")
    elif (c.isdigit() or c == "-") and _INT_FULL.fullmatch(piece):
        return Imm(piece, int(piece), "int")
    return None


def parse_instruction(text: str, scoped_regs: frozenset = frozenset()):
    """Parse one instruction's text (ending in ';').

    Returns (guard, opcode, operands). `scoped_regs` names bare identifiers declared as
    `.reg` in an enclosing scope (`low`, `high`), which become Reg operands.
    """
    m = _FAST.fullmatch(text)
    if m is not None:
        guard = None
        g = m.group(2)
        if g is not None:
            guard = Guard(_reg(g) if g[0] == "%" or g in scoped_regs else Reg(g),
                          negated=bool(m.group(1)))
        oplist = m.group(4)
        if oplist is None:
            return guard, m.group(3), ()
        cache = _PIECE_CACHES.get(scoped_regs)
        if cache is None:
            cache = _PIECE_CACHES[scoped_regs] = {}
        ops = []
        for piece in _PIECES.findall(oplist):
            op = cache.get(piece)
            if op is None:
                op = _piece(piece, scoped_regs)
                if op is None:
                    try:
                        one = _slow_operands(piece + ";", 0, scoped_regs)
                    except OperandSyntaxError:
                        break
                    if len(one) != 1:
                        break
                    op = one[0]
                cache[piece] = op
            ops.append(op)
        else:
            return guard, m.group(3), tuple(ops)
    m = _OPCODE.match(text)
    if m is None:
        raise OperandSyntaxError("expected an instruction opcode", 0, ["opcode"])
    guard = None
    g = m.group(2)
    if g is not None:
        guard = Guard(_reg(g) if g[0] == "%" or g in scoped_regs else Reg(g),
                      negated=bool(m.group(1)))
    return guard, m.group(3), _slow_operands(text, m.end(), scoped_regs)


def _slow_operands(text: str, pos: int, scoped_regs) -> tuple:
    """Tokenize text[pos:] and parse the operand list up to the final ';'."""
    toks: list[tuple] = []  # (kind, text, offset)
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
        if kind == "reg" or kind == "id" or (kind == "p" and tok == "{"):
            value = self._value(kind, tok)
            k2, t2, _ = self._peek()
            if k2 == "p" and t2 == "|":
                self.i += 1
                return PredPair(value, self._pred())
            return value
        if kind in ("int", "float", "hexf"):
            self.i += 1
            return _imm(kind, tok)
        if kind == "p":
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
                    return Negated(_reg(t2) if k2 == "reg" else Reg(t2))
                self._fail(["predicate register"])
        self._fail(["operand"])

    def _value(self, kind, tok):
        """A register, identifier, sink or brace list, with a `+N`/`-N` offset on a
        register or symbol."""
        self.i += 1
        if kind == "p":
            return Vector(self._items("}"))
        if kind == "reg":
            base = _reg(tok)
        elif tok == "_":
            return Sink()
        else:
            base = _named(tok, self.scoped)
        k2, t2, off2 = self._peek()
        if k2 == "p" and (t2 == "+" or t2 == "-") and not isinstance(base, Element):
            k3, t3, off3 = self.toks[self.i + 1] if self.i + 1 < len(self.toks) else self._peek()
            if k3 == "int":
                self.i += 2
                value = _int_value(t3)
                start = self.toks[self.i - 3][2]
                return Offset(base, value if t2 == "+" else -value,
                              self.text[start:off3 + len(t3)])
        return base

    def _pred(self):
        """The predicate half of a pair destination: a register or the sink `_`."""
        kind, tok, _ = self._peek()
        if kind == "reg" or (kind == "id" and tok in self.scoped):
            self.i += 1
            return _reg(tok) if kind == "reg" else Reg(tok)
        if kind == "id" and tok == "_":
            self.i += 1
            return Sink()
        self._fail(["predicate register", "'_'"])

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
            base = _named(tok, self.scoped)
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
        extra: list = []
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
