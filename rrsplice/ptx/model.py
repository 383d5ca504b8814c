"""The statement model: Module -> Function -> Block -> Statement -> Operand.

Every node keeps exact source positions (character offsets into Module.text, 1-based
physical lines). Nothing here re-prints PTX: the emitter rewrites source spans, so an
unchanged module is reproduced byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .isa import ptx_type

# Special registers are read-only machine state, not variables (PTX ISA "Special Registers").
_SPECIAL = re.compile(
    r"%(?:(?:tid|ntid|ctaid|nctaid|clusterid|nclusterid|cluster_ctaid|cluster_nctaid)(?:\.[xyzw])?"
    r"|laneid|warpid|nwarpid|smid|nsmid|gridid|clock|clock64|clock_hi|globaltimer(?:_lo|_hi)?"
    r"|lanemask_(?:eq|le|lt|ge|gt)|total_smem_size|dynamic_smem_size|aggr_smem_size"
    r"|reserved_smem_offset_(?:begin|end|cap|\d+)|is_explicit_cluster|cluster_ctarank"
    r"|cluster_nctarank|current_graph_exec|pm[0-7](?:_64)?|envreg\d+)$")


def is_special_register(name: str) -> bool:
    """True for `%tid.x`, `%laneid`, ...: readable machine state, never a variable."""
    return _SPECIAL.match(name) is not None


# ---------------------------------------------------------------- operands

@dataclass(frozen=True, slots=True)
class Reg:
    """A register operand (`%r5`, `%p1`, a scoped `low`, or a special `%tid.x`).

    `ident` is set when the name refers to a register declared in a nested `{ }` block
    (see rrsplice.ptx.scopes); `key` is the register's identity for every analysis."""
    name: str
    special: bool = False
    # not part of equality: an operand compares by its text; identity is `key`
    ident: str | None = field(default=None, compare=False)
    kind = "reg"

    @property
    def key(self) -> str:
        """The register's identity: its name, or `NAME@B<k>` for one declared in a nested block."""
        return self.ident or self.name

    def registers(self) -> Iterator[Reg]:
        yield self

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Negated:
    """`!%p` as an operand (e.g. a predicate source of `vote`/`selp`)."""
    reg: Reg
    kind = "neg"

    def registers(self) -> Iterator[Reg]:
        yield self.reg

    def __str__(self) -> str:
        return "!" + self.reg.name


@dataclass(frozen=True, slots=True)
class Imm:
    """An immediate: integer (decimal/hex, optional U), float, or hex float `0f3F800000`."""
    text: str
    value: int | float
    kind_name: str  # "int" | "float" | "hexfloat"
    kind = "imm"

    def registers(self) -> Iterator[Reg]:
        return iter(())

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class Symbol:
    """A bare identifier that is not a register: label, variable, parameter, function."""
    name: str
    kind = "sym"

    def registers(self) -> Iterator[Reg]:
        return iter(())

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Vector:
    """`{a, b, c, d}`: a brace list (vector, mma fragment, pack/unpack)."""
    items: tuple
    kind = "vec"

    def registers(self) -> Iterator[Reg]:
        for item in self.items:
            yield from item.registers()

    def __str__(self) -> str:
        return "{" + ", ".join(str(i) for i in self.items) + "}"


@dataclass(frozen=True, slots=True)
class Address:
    """`[base+offset]`, `[sym]`, `[%rd]`, `[imm]`; texture/surface forms keep their further
    items (`[tex, {%f1, %f2}]`, `[tex, sampler, {...}]`) in `extra`."""
    base: Reg | Symbol | None
    offset: int = 0
    extra: tuple = ()
    kind = "addr"

    def registers(self) -> Iterator[Reg]:
        if isinstance(self.base, Reg):
            yield self.base
        for item in self.extra:
            yield from item.registers()

    @property
    def coords(self) -> Vector | None:
        for item in self.extra:
            if isinstance(item, Vector):
                return item
        return None

    def __str__(self) -> str:
        inner = str(self.base) if self.base is not None else ""
        if self.offset:
            inner += (f"+{self.offset}" if self.offset > 0 else f"{self.offset}") if inner else str(self.offset)
        elif not inner:
            inner = "0"
        for item in self.extra:
            inner += ", " + str(item)
        return "[" + inner + "]"


@dataclass(frozen=True, slots=True)
class Element:
    """`%v.x`, `quad.w`: one element of a vector register (`.reg .v4 .b32 quad;`).
    Its register is the whole vector (`registers()` yields it); `elem` is the selector
    letter (x y z w, or r g b a)."""
    reg: Reg
    elem: str
    kind = "elem"

    def registers(self) -> Iterator[Reg]:
        yield self.reg

    def __str__(self) -> str:
        return f"{self.reg.name}.{self.elem}"


@dataclass(frozen=True, slots=True)
class Offset:
    """`sym+8`, `%rd2+4`, `arr-4`: a register or symbol plus a constant, outside brackets
    (`mov.u64 %rd1, table+8;`): a value, not a memory access."""
    base: Reg | Symbol
    offset: int
    text: str
    kind = "offset"

    def registers(self) -> Iterator[Reg]:
        if isinstance(self.base, Reg):
            yield self.base

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class PredPair:
    """`%p|%q`, `r|p`, `_|%p`, `{%f1, %f2, %f3, %f4}|p`: a destination and the predicate
    written beside it (`setp`/`set`, `shfl`, `elect`, a texture fetch's residency bit).
    Either half may be the sink `_`; the first may be a vector."""
    first: Reg | Vector | Sink
    second: Reg | Sink
    kind = "predpair"

    def registers(self) -> Iterator[Reg]:
        yield from self.first.registers()
        yield from self.second.registers()

    def __str__(self) -> str:
        return f"{self.first}|{self.second}"


@dataclass(frozen=True, slots=True)
class ParenList:
    """`(a, b)`: a call's return or argument list."""
    items: tuple
    kind = "list"

    def registers(self) -> Iterator[Reg]:
        for item in self.items:
            yield from item.registers()

    def __str__(self) -> str:
        return "(" + ", ".join(str(i) for i in self.items) + ")"


@dataclass(frozen=True, slots=True)
class Sink:
    """`_`: a discarded destination."""
    kind = "sink"

    def registers(self) -> Iterator[Reg]:
        return iter(())

    def __str__(self) -> str:
        return "_"


Operand = (Reg | Negated | Imm | Symbol | Vector | Address | PredPair | ParenList | Sink | Element
           | Offset)


# ---------------------------------------------------------------- declarations

@dataclass(slots=True)
class Decl:
    """A variable declaration (`.reg .b32 %r<19372>;`, `.shared .align 16 .b8 x[9600];`).
    One Decl per declared name; `count` is the N of a `%r<N>` range."""
    space: str | None          # ".reg", ".shared", ".param", ... (None if absent)
    type: str | None           # ".b32", ".f16", ... (None if absent)
    name: str
    attrs: tuple                  # every attribute in order, e.g. (".shared", ".align 16", ".b8")
    align: int | None = None
    vector: str | None = None  # ".v2" / ".v4"
    count: int | None = None   # %r<N>
    dims: tuple = ()              # array sizes; None for `[]`
    init: str | None = None    # initializer text after '='
    line: int = 0
    start: int = 0
    end: int = 0
    depth: int = 0

    def names(self) -> Iterator[str]:
        """The register names a `%r<N>` range declares (%r0..%r{N-1}); else the name."""
        if self.count is None:
            yield self.name
        else:
            for i in range(self.count):
                yield f"{self.name}{i}"

    def declares(self, reg: str) -> bool:
        if self.count is None:
            return reg == self.name
        if not reg.startswith(self.name):
            return False
        tail = reg[len(self.name):]
        return tail.isdigit() and int(tail) < self.count and (tail == "0" or tail[0] != "0")

    @property
    def byte_size(self) -> int | None:
        row = ptx_type(self.type)
        if row is None or row.kind == "pred" or any(d is None for d in self.dims):
            return None
        n = row.bytes
        for d in self.dims:
            n *= d
        if self.vector:
            n *= int(self.vector[2:])
        return n


# ---------------------------------------------------------------- statements

@dataclass(frozen=True, slots=True)
class Guard:
    reg: Reg
    negated: bool = False

    def __str__(self) -> str:
        return ("@!" if self.negated else "@") + self.reg.name


class Statement:
    """One instruction or label in a function body. `index` is the 1-based `sN` number."""

    __slots__ = ("index", "is_label", "label", "start", "end", "line", "end_line", "column",
                 "depth", "block", "guard", "opcode", "operands", "function", "_text",
                 "_base", "_mods", "_view", "_lazy")
    index: int              # set by the parser's numbering walk (not in __init__)
    depth: int
    function: Function | None
    # an instruction's guard, opcode and operands are set by the parser's walk, or decoded
    # on first read (PendingStatement); a label has None, None, ()
    guard: Guard | None
    opcode: Any             # str, or None for a label
    operands: tuple

    def __init__(self, is_label, start, end, line, end_line, column, text, label=None,
                 block=None):
        # `index`, `depth` and `function` are set by the parser's numbering walk, which
        # every statement of a body goes through before the model is returned, and so are
        # an instruction's `guard`, `opcode` and `operands` (or they are decoded later)
        self.is_label = is_label
        self.label = label
        self.start = start
        self.end = end
        self.line = line
        self.end_line = end_line
        self.column = column
        self.block = block
        if is_label:
            self.guard = None
            self.opcode = None
            self.operands = ()
        self._text = text
        self._base = None     # base and modifiers are split off the opcode once, on first
        self._mods = None     # use: analyses ask for them hundreds of thousands of times
        self._view = None     # the typed opcode view, built on first use (rrsplice.ptx.opview)

    @property
    def sid(self) -> str:
        return f"s{self.index}"

    @property
    def text(self) -> str:
        return self._text

    @property
    def lines(self) -> tuple[int, int]:
        return (self.line, self.end_line)

    @property
    def base(self) -> str | None:
        """The opcode's base name: `mma` of `mma.sync.aligned...`."""
        base = self._base
        if base is None and self.opcode:
            base = self._base = self.opcode.split(".", 1)[0]
        return base

    @property
    def modifiers(self) -> tuple[str, ...]:
        """The opcode's dot-separated modifiers, without dots: ("sync", "aligned", ...)."""
        mods = self._mods
        if mods is None:
            mods = self._mods = tuple(self.opcode.split(".")[1:]) if self.opcode else ()
        return mods

    @property
    def view(self):
        """The typed opcode view (rrsplice.ptx.opview.OpView), decoded once, on first use."""
        v = self._view
        if v is None:
            from .opview import build_view
            v = self._view = build_view(self)
        return v

    @property
    def is_instruction(self) -> bool:
        return not self.is_label

    def registers(self) -> Iterator[Reg]:
        """Every register the statement mentions (guard first, then operands in order)."""
        if self.guard is not None:
            yield self.guard.reg
        for op in self.operands:
            yield from op.registers()

    def __repr__(self) -> str:
        return f"<{self.sid} L{self.line} {self.label + ':' if self.is_label else self.opcode}>"


class PendingStatement(Statement):
    """An instruction whose guard, opcode and operands are not decoded yet: the parser
    found that decoding it cannot fail (rrsplice.ptx.lexicon.SAFE_INSTRUCTION) and left it
    for later. The first read of any of the three decodes every pending instruction of the
    module at once (`_lazy`, the parser's batch), and each becomes a plain `Statement`
    again (same slots), so the attribute reads of the analyses stay plain slot reads.
    Copying or pickling one decodes first."""

    __slots__ = ()

    def __getattr__(self, name):
        # called only when a slot is unset: `guard`, `opcode`, `operands` until decoded
        if name in ("guard", "opcode", "operands"):
            self._lazy.decode()             # makes this a Statement, its slots set
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __reduce_ex__(self, protocol):
        self._lazy.decode()
        return object.__reduce_ex__(self, protocol)     # of the Statement it now is


@dataclass(slots=True)
class LabelledDirective:
    """A label that names a directive instead of code, inside a function body:

        $L__BRX_0: .branchtargets $L__BB0_1, $L__BB0_2;      (the targets of a `brx.idx`)
        prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
        $L__CT: .calltargets f1, f2;

    It is not a statement (it is never executed and is not a branch target), so it takes no
    `sN` number. `targets` holds the label or function names of `.branchtargets` /
    `.calltargets`; `.callprototype` keeps its signature text in `signature`. The function
    also maps the label to these records (`Function.branch_targets`,
    `Function.call_targets`, `Function.prototypes`), so `brx.idx %r, $L__BRX_0` resolves
    through `fn.branch_targets["$L__BRX_0"]`."""
    label: str
    directive: str                 # ".branchtargets" | ".calltargets" | ".callprototype"
    targets: tuple                 # names, in order (empty for .callprototype)
    signature: str                 # the text after the directive, up to ';' (stripped)
    text: str                      # the whole source text, label to ';'
    start: int
    end: int
    line: int
    end_line: int
    depth: int = 0


@dataclass(slots=True)
class Block:
    """A `{ ... }` scope: the function body (depth 0) or a nested block."""
    start: int
    end: int
    line: int
    end_line: int
    depth: int = 0
    decls: list = field(default_factory=list)
    items: list = field(default_factory=list)   # Statement | Block | Decl | LabelledDirective,
                                                # in source order
    parent: Block | None = None


@dataclass(slots=True)
class Param:
    name: str
    attrs: tuple
    space: str | None
    type: str | None
    align: int | None
    dims: tuple
    line: int

    @property
    def byte_size(self) -> int | None:
        d = Decl(space=self.space, type=self.type, name=self.name, attrs=self.attrs,
                 dims=self.dims)
        return d.byte_size

    def __str__(self) -> str:
        dims = "".join(f"[{d}]" if d is not None else "[]" for d in self.dims)
        return " ".join(self.attrs) + f" {self.name}{dims}"


@dataclass(slots=True)
class Function:
    kind: str                      # ".entry" | ".func"
    name: str
    linkage: tuple                 # (".visible",), (".extern",), (".weak",), ...
    params: list
    ret_params: list
    perf: list                     # [(".maxntid", (32, 1, 4)), (".pragma", '"nounroll"')]
    body: Block | None
    statements: list
    start: int
    end: int
    line: int
    end_line: int
    module: Module | None = None
    _by_line: dict | None = None
    _labels: dict | None = None
    # label -> LabelledDirective, for `.branchtargets` (brx.idx tables), `.calltargets`
    # and `.callprototype` (indirect calls) declared in the body
    branch_targets: dict = field(default_factory=dict)
    call_targets: dict = field(default_factory=dict)
    prototypes: dict = field(default_factory=dict)

    @property
    def has_body(self) -> bool:
        return self.body is not None

    @property
    def is_entry(self) -> bool:
        return self.kind == ".entry"

    def statement(self, sid: str | int) -> Statement:
        """`s452` or 452 -> that statement (KeyError if out of range)."""
        n = int(sid[1:]) if isinstance(sid, str) and sid.startswith("s") else int(sid)
        if not 1 <= n <= len(self.statements):
            raise KeyError(f"{self.name} has statements s1..s{len(self.statements)}, not s{n}")
        return self.statements[n - 1]

    def statement_at_line(self, line: int) -> Statement | None:
        """The statement whose physical line span contains `line` (the first one there
        when several share a line), or None."""
        if self._by_line is None:
            table: dict = {}
            for st in self.statements:
                for ln in range(st.line, st.end_line + 1):
                    table.setdefault(ln, st)
            self._by_line = table
        return self._by_line.get(line)

    def label_statement(self, name: str) -> Statement | None:
        if self._labels is None:
            self._labels = {st.label: st for st in self.statements if st.is_label}
        return self._labels.get(name)

    def decls(self) -> Iterator[Decl]:
        """Every declaration in the body, outer scopes first."""
        if self.body is None:
            return
        stack = [self.body]
        while stack:
            blk = stack.pop(0)
            yield from blk.decls
            stack.extend(i for i in blk.items if isinstance(i, Block))

    def register_names(self) -> set:
        """Every register name declared in the body (`%r<N>` ranges expanded lazily by
        membership is cheaper; this is the explicit set for small scoped decls)."""
        return {d.name for d in self.decls() if d.space == ".reg" and d.count is None}


@dataclass(slots=True)
class Module:
    """One PTX file. `text` is the decoded source; `data` the original bytes."""
    path: str | None
    text: str
    data: bytes
    headers: list                  # [(directive, value, line)]
    decls: list                    # module-scope Decl
    functions: list
    directives: list               # other module-scope items: (kind, text, line)
    _byte_map: list | None = None
    _line_starts: tuple | None = None

    @property
    def version(self) -> str | None:
        for d, v, _ in self.headers:
            if d == ".version":
                return v
        return None

    @property
    def target(self) -> str | None:
        for d, v, _ in self.headers:
            if d == ".target":
                return v
        return None

    @property
    def line_count(self) -> int:
        """Physical lines (a final line without newline counts)."""
        if not self.text:
            return 0
        n = self.text.count("\n")
        return n if self.text.endswith("\n") else n + 1

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name and f.has_body:
                return f
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def byte_offset(self, char_offset: int) -> int:
        """Character offset in `text` -> byte offset in `data` (identical for ASCII)."""
        if len(self.text) == len(self.data):
            return char_offset
        if self._byte_map is None:
            table = [0] * (len(self.text) + 1)
            pos = 0
            for i, ch in enumerate(self.text):
                table[i] = pos
                pos += len(ch.encode("utf-8", "surrogatepass"))
            table[len(self.text)] = pos
            self._byte_map = table
        return self._byte_map[char_offset]

    def byte_span(self, node) -> tuple[int, int]:
        return (self.byte_offset(node.start), self.byte_offset(node.end))

    def line_starts(self) -> tuple:
        """Character offset of each physical line's start (index 0 = line 1), computed once
        per model (the text never changes)."""
        if self._line_starts is None:
            self._line_starts = tuple(self._scan_line_starts())
        return self._line_starts

    def _scan_line_starts(self) -> list:
        starts = [0]
        find = self.text.find
        pos = find("\n")
        while pos >= 0:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        if starts[-1] == len(self.text) and len(starts) > 1:
            starts.pop()
        return starts

    def mma_statements(self) -> Iterator[Statement]:
        for f in self.functions:
            for st in f.statements:
                if st.opcode is not None and st.opcode.startswith("mma."):
                    yield st
