"""Lark front end: PTX text -> Module.

The LALR parser runs with the transformer passed to its constructor, so no parse tree is
built; instruction operands are parsed per instruction by rrsplice.ptx.operands with the
block scopes known (so block-scoped `.reg` names without `%` resolve to registers).
"""

from __future__ import annotations

import gc
import os
import re
import sys
from itertools import accumulate
from pathlib import Path
from typing import cast

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .errors import ParseError
from .isa import TYPES
from .lexicon import DECL_ATTR, DECL_NAME, ITEM, SCOPE, SPLIT, grammar_text
from .model import Block, Decl, Function, LabelledDirective, Module, Param, PendingStatement, Statement
from .operands import OperandSyntaxError, _int_value, clear_caches, instruction_cache, parse_instruction
from .scopes import block_tag, declare, rebind, state_key
from .scopes import clear_caches as clear_scope_caches

_GRAMMAR = Path(__file__).with_name("grammar") / "ptx.lark"

_TERMINAL_NAMES = {
    "FUNC_KIND": "'.entry' or '.func'", "HEADER": "'.version'/'.target'/'.address_size'",
    "DOTWORD": "directive", "NAME": "identifier", "INT": "integer", "SEMI": "';'",
    "LBRACE": "'{'", "RBRACE": "'}'", "INSTRUCTION": "instruction", "LABEL": "label",
    "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "LESSTHAN": "'<'", "MORETHAN": "'>'",
    "LSQB": "'['", "RSQB": "']'", "INIT": "'= initializer'", "ATTRIBUTE": "'.attribute(...)'", "LOC": "'.loc'",
    "PRAGMA": "'.pragma'", "ALIAS": "'.alias'", "SECTION": "'.section'", "FILE_DIR": "'.file'", "$END": "end of file",
}


def _int_lit(tok) -> int:
    """A PTX integer literal with an optional sign (the digits are read by the operand
    parser's one reader of decimal, 0x hex, 0b binary, 0-prefixed octal, U suffix)."""
    t = str(tok)
    return -_int_value(t[1:]) if t.startswith("-") else _int_value(t)


class _Build(Transformer):
    """Callbacks that build model objects while the LALR parser reduces."""

    def header(self, c):
        tok = c[0]
        parts = str(tok).split("//", 1)[0].split(None, 1)
        return ("header", parts[0], parts[1].strip() if len(parts) > 1 else "", tok)

    def file_dir(self, c):
        return ("file", str(c[0]), c[0])

    def section(self, c):
        return ("section", str(c[0]), c[0])

    def pragma(self, c):
        return ("pragma", str(c[0]), c[0])

    def alias(self, c):
        return ("alias", str(c[0]), c[0])

    def attr(self, c):
        return (str(c[0]), _int_lit(c[1]) if len(c) > 1 else None, c[0])

    def range(self, c):
        return ("range", _int_lit(c[0]))

    def dims(self, c):
        return ("dims", _int_lit(c[0]) if c else None)

    def var_item(self, c):
        name = str(c[0])
        count = None
        dims = []
        init = None
        for x in c[1:]:
            if isinstance(x, Token):  # INIT
                init = str(x)[1:].strip()
            elif x[0] == "range":
                count = x[1]
            else:
                dims.append(x[1])
        return (name, count, tuple(dims), init, c[0])

    def decl(self, c):
        attrs = [x for x in c if isinstance(x, tuple) and len(x) == 3]
        items = [x for x in c if isinstance(x, tuple) and len(x) == 5]
        semi = c[-1]
        space, typ, align, vector, texts = _classify_attrs(attrs)
        first = attrs[0][2]
        out = []
        for name, count, dims, init, _tok in items:
            out.append(Decl(space=space, type=typ, name=name, attrs=texts, align=align,
                            vector=vector, count=count, dims=dims, init=init, line=first.line,
                            start=first.start_pos, end=semi.end_pos))
        return ("decl", out)

    def param(self, c):
        attrs = [x for x in c if isinstance(x, tuple) and len(x) == 3]
        name_tok = next(x for x in c if isinstance(x, Token))
        dims = tuple(x[1] for x in c if isinstance(x, tuple) and len(x) == 2)
        space, typ, align, _vector, texts = _classify_attrs(attrs)
        return Param(name=str(name_tok), attrs=texts, space=space, type=typ, align=align,
                     dims=dims, line=attrs[0][2].line)

    def param_list(self, c):
        return list(c)

    def params(self, c):
        return ("params", c[0] if c else [])

    def ret_params(self, c):
        return ("ret_params", c[0] if c else [])

    def perf_args(self, c):
        return tuple(_int_lit(x) for x in c)

    def perf(self, c):
        tok = c[0]
        if tok.type == "PRAGMA":
            return ("perf", ".pragma", str(tok)[len(".pragma"):].strip().rstrip(";").strip(), tok)
        return ("perf", str(tok), c[1] if len(c) > 1 else (), tok)

    def body(self, c):
        if len(c) == 1:
            return _scope_block(c[0])
        lbrace, rbrace = c[0], c[-1]
        blk = Block(start=lbrace.start_pos, end=rbrace.end_pos, line=lbrace.line,
                    end_line=rbrace.end_line)
        items = blk.items
        for x in c[1:-1]:
            if isinstance(x, Token):
                if x.type == "STATEMENTS":
                    # tokens of the lexer always carry their positions
                    assert x.start_pos is not None and x.line is not None and x.column is not None
                    _split_items(str(x), x.start_pos, x.line, x.column, blk)
                # LOC / PRAGMA inside a body are directives, not statements
            elif isinstance(x, Block):
                x.parent = blk
                items.append(x)
            elif x[0] == "decl":
                blk.decls.extend(x[1])
                items.extend(x[1])
        return blk

    def function(self, c):
        attrs = [x for x in c if isinstance(x, tuple) and len(x) == 3 and isinstance(x[2], Token)
                 and x[2].type == "DOTWORD"]
        kind_tok = next(x for x in c if isinstance(x, Token) and x.type == "FUNC_KIND")
        name_tok = next(x for x in c if isinstance(x, Token) and x.type == "NAME")
        params, ret_params, perf = [], [], []
        body = None
        end_tok = None
        for x in c:
            if isinstance(x, Block):
                body = x
            elif isinstance(x, Token) and x.type == "SEMI":
                end_tok = x
            elif isinstance(x, tuple) and x[0] == "params":
                params = x[1]
            elif isinstance(x, tuple) and x[0] == "ret_params":
                ret_params = x[1]
            elif isinstance(x, tuple) and x[0] == "perf":
                perf.append((x[1], x[2]))
        first = attrs[0][2] if attrs else kind_tok
        assert first.start_pos is not None and first.line is not None  # lexer tokens
        if body is not None:
            end, end_line = body.end, body.end_line
        else:
            # without a body the grammar ends the function at ';'; lexer tokens carry positions
            assert end_tok is not None and end_tok.end_pos is not None
            assert end_tok.end_line is not None
            end, end_line = end_tok.end_pos, end_tok.end_line
        fn = Function(kind=str(kind_tok), name=str(name_tok), linkage=tuple(a[0] for a in attrs),
                      params=params, ret_params=ret_params, perf=perf, body=body, statements=[],
                      start=first.start_pos, end=end, line=first.line, end_line=end_line)
        return ("function", fn)

    def start(self, c):
        return list(c)


# Whether instructions whose decoding cannot fail are decoded after the parse, on the
# first read of any instruction's guard, opcode or operands (tests turn it off to compare)
LAZY = True


def _split_items(s: str, base: int, line: int, column0: int, blk: Block) -> None:
    """Split the text of a STATEMENTS token (or a SCOPE's inside) into Statements, simple
    Decls, LabelledDirectives and nested Blocks appended to `blk`. `base`/`line`/`column0`
    locate s[0] in the source. The text is scanned once: SPLIT yields the `{` and `}` of a
    nested scope as items of their own, and the blocks open at this point are a stack."""
    items = blk.items
    append = items.append
    count = s.count
    rfind = s.rfind
    pending = PendingStatement if LAZY else Statement
    outer: list = []        # (block, its append) of the blocks around the open one
    prev = 0
    nl = -column0           # so that column = st - nl on the first line too
    # SPLIT's matches over `s`, one after another from its start. The text is a run of
    # items and trivia, so when it ends with an item (its last non-blank character a `;`,
    # `:` or `}` on a line without a comment) one `finditer` up to that end yields every
    # item, in C. Otherwise the items are matched one by one, each where the previous
    # ended, and the first position with no match holds only trailing trivia (`finditer`
    # would retry at every later character: quadratic in a long trailing comment).
    end = len(s.rstrip())
    if end and s[end - 1] in ";:}" and s.find("/", rfind("\n", 0, end) + 1, end) < 0:
        matches = SPLIT.finditer(s, 0, end)
    else:
        matches = _one_by_one(s)
    for m in matches:
        kind = m.lastgroup
        en = m.end()
        if kind == "lazy" or kind == "instr":   # most items: one group gives text and start
            text = m.group(kind)
            st = en - len(text)
            k = count("\n", prev, st)
            if k:
                line += k
                nl = rfind("\n", prev, st)
            prev = st
            # an instruction SAFE_INSTRUCTION matches may be decoded after the parse
            append((pending if kind == "lazy" else Statement)(
                False, base + st, base + en, line, line + text.count("\n"), st - nl, text,
                None, blk))
            continue
        st = en - 1 if kind == "open" or kind == "close" else \
            m.start(cast(str, "label" if kind == "ldir" else kind))   # a group matched
        k = count("\n", prev, st)
        if k:
            line += k
            nl = rfind("\n", prev, st)
        prev = st
        if kind == "open":
            child = Block(base + st, base + st, line, line)   # its end is set at its '}'
            child.parent = blk
            append(child)
            outer.append((blk, append))
            blk = child
            append = child.items.append
        elif kind == "close":
            blk.end = base + en
            blk.end_line = line
            blk, append = outer.pop()
        elif kind == "label":
            text = s[st:en]
            append(Statement(True, base + st, base + en, line, line, st - nl, text,
                             text[:-1].rstrip(), blk))
        elif kind == "ldir":
            append(_labelled_directive(m, s[st:en], base + st, base + en, line))
        else:
            decls = _simple_decls(s[st:en], base + st, base + en, line)
            blk.decls.extend(decls)
            blk.items.extend(decls)


def _one_by_one(s: str):
    match = SPLIT.match
    pos = 0
    while True:
        m = match(s, pos)
        if m is None or m.end() == pos:
            return
        pos = m.end()
        yield m


def _labelled_directive(m, text: str, start: int, end: int, line: int) -> LabelledDirective:
    label = m.group("label")[:-1].rstrip()
    body = m.group("ldir").strip()[:-1]           # `.branchtargets $L1, $L2`
    w = re.match(r"\.\w+", body)
    assert w is not None  # lexicon.LABELLED_DIRECTIVE starts with a .word
    word = w.group()
    rest = body[len(word):].strip()
    targets = ()
    if word != ".callprototype":
        targets = tuple(t.strip() for t in rest.split(",") if t.strip())
    return LabelledDirective(label=label, directive=word, targets=targets, signature=rest,
                             text=text, start=start, end=end, line=line,
                             end_line=line + text.count("\n"))


_DECL_CACHE: dict = {}


def _simple_decls(text: str, start: int, end: int, line: int) -> list:
    """`.reg .f16 low, high;` -> Decls (the SCOPE fast path's declaration parser). The
    same declaration text recurs thousands of times in a module: its fields are cached."""
    fields = _DECL_CACHE.get(text)
    if fields is None:
        fields = _DECL_CACHE[text] = _decl_fields(text, start)
    return [Decl(space, typ, name, texts, align, vector, count, dims, None, line, start, end)
            for space, typ, name, texts, align, vector, count, dims in fields]


def _decl_fields(text: str, start: int) -> list:
    attrs = []
    pos = 0
    while True:
        m = DECL_ATTR.match(text, pos)
        if m is None:
            break
        attrs.append((m.group(1), int(m.group(2)) if m.group(2) else None, None))
        pos = m.end()
    space, typ, align, vector, texts = _classify_attrs(attrs)
    out = []
    while pos < len(text):
        m = DECL_NAME.match(text, pos)
        if m is None:
            raise _OperandFailure(start + pos, "malformed declaration", ["identifier"])
        dims = tuple(_int_lit(d) if d else None
                     for d in re.findall(r"\[\s*(\w*)\s*\]", m.group(3)))
        out.append((space, typ, m.group(1), texts, align, vector,
                    int(m.group(2)) if m.group(2) else None, dims))
        pos = m.end()
        if m.group(4) == ";":
            break
    return out


def _scope_block(tok: Token) -> Block:
    s = str(tok)
    # tokens of the lexer always carry their positions
    assert tok.start_pos is not None and tok.end_pos is not None and tok.column is not None
    assert tok.line is not None and tok.end_line is not None
    blk = Block(start=tok.start_pos, end=tok.end_pos, line=tok.line, end_line=tok.end_line)
    _split_items(s[1:-1], tok.start_pos + 1, tok.line, tok.column + 1, blk)
    return blk


# the types a declaration may name besides .bN/.uN/.sN/.fN: every row of the type table, and
# those it has no size for (PTX ISA "Fundamental Types", "Alternate Floating Point Data
# Formats", "Packed Data Types")
_TYPES = frozenset({"." + name for name in TYPES}
                   | {".f32x2", ".e2m3", ".e3m2", ".e2m1", ".ue8m0", ".s16x2", ".u16x2",
                      ".s8x4", ".u8x4"})


def _classify_attrs(attrs):
    """Split `.shared .align 16 .b8` into (space, type, align, vector, texts)."""
    spaces = {".reg", ".sreg", ".const", ".global", ".local", ".param", ".shared", ".tex",
              ".surfref", ".texref", ".samplerref"}
    space = typ = vector = None
    align = None
    texts = []
    # `.param .u64 .ptr .global .align 16 p`: after `.ptr`, the space and alignment are
    # those of the memory the parameter points to, not the parameter's own
    pointee = False
    for word, num, _tok in attrs:
        texts.append(word if num is None else f"{word} {num}")
        if word == ".ptr":
            pointee = True
        elif pointee:
            continue
        elif word in spaces:
            space = word
        elif word == ".align":
            align = num
        elif word in (".v2", ".v4", ".v8"):
            vector = word
        elif word in _TYPES or (word[1:2] in ("b", "u", "s", "f") and word[2:].isdigit()):
            typ = word
    return space, typ, align, vector, tuple(texts)


_parser = None


def _lark() -> Lark:
    """The parser, built in-process (about 60 ms). Never Lark's `cache=True`: that loads a
    pickle from a predictable name in the shared temp directory, which any local user could
    plant."""
    global _parser
    if _parser is None:
        _parser = Lark(grammar_text(_GRAMMAR.read_text()), parser="lalr", lexer="contextual",
                       transformer=_Build(), cache=False, maybe_placeholders=False)
    return _parser


def parse(source: str | bytes | os.PathLike, *, filename: str | None = None) -> Module:
    """Parse a PTX module from a path, a `str` of PTX text, or raw bytes.

    A `str` is a path unless it looks like PTX text (it holds a line break, or starts with
    a directive or a comment): `parse("nope.ptx")` is "no such file", never a syntax error
    in the name. A path that is missing, a directory, a FIFO or device, a symlink loop or
    too long is an InputError (exit code 2).
    """
    path = None
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _is_path_like(source)):
        from ..infra.fsutil import read_input
        path = os.fspath(source)
        data = read_input(path, what="PTX file")
    elif isinstance(source, bytes):
        data = source
    else:
        data = source.encode("utf-8")
    name = filename or path or "<text>"
    return parse_bytes(data, name, path=path)


def _is_path_like(s: str) -> bool:
    head = s.lstrip()
    return ("\n" not in s and head != "" and not head.startswith((".version", ".target",
            ".address_size", "//", "/*")))


def parse_bytes(data: bytes, name: str, path: str | None = None) -> Module:
    text = _decode(data, name)
    nul = text.find("\x00")
    if nul >= 0:
        _raise_at(text, nul, name, "NUL byte in source", ["printable text"])
    if not text.strip():
        raise ParseError("empty module: expected a '.version' directive", file=name, line=1,
                         column=1, line_text=text.split("\n", 1)[0] if text else "",
                         expected=["'.version'"])
    # the parse allocates ~10 objects per line and frees none: collections would only
    # traverse them again and again
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _build(text, data, name, path)
    finally:
        clear_caches()
        clear_scope_caches()
        _DECL_CACHE.clear()
        if was_enabled:
            gc.enable()


_NEST = re.compile(r'[{}]|//[^\n]*+|/\*(?:[^*]|\*(?!/))*+(?:\*/)?|"[^"\n]*+"?')


# what decides nesting: braces, and the characters that open and close comments and
# strings (the bytes of every other character, UTF-8 continuation bytes included, dropped)
_NEST_DROP = bytes(b for b in range(256) if b not in b'{}/*"\n')
_NEST_TRIVIA = re.compile(rb'//[^\n]*+|/\*(?:[^*]|\*(?!/))*+(?:\*/)?|"[^"\n]*+"?')
_NOT_BRACE = bytes(b for b in range(256) if b not in b"{}")
_BRACE_STEP = {ord("{"): 1, ord("}"): -1}.__getitem__


def _check_nesting(text: str, data: bytes, name: str) -> None:
    """Braces nested deeper than MAX_NESTING are an error before the LALR parser sees
    them (its stack would hold every open brace: memory in proportion to the depth)."""
    # The deepest point, computed in C: the bytes reduced to what decides nesting (the
    # same comments and strings are found in them), the comments and strings dropped,
    # then only the braces kept. Each round of deleting the innermost `{}` pairs takes one
    # level off every nest, so rounds + the `{` left unmatched bound the depth; only past
    # that bound are the braces summed, and only a module that goes too deep is walked
    # again, over `text` (which `data` decodes to), to find where.
    if text.count("{") <= MAX_NESTING:
        return
    braces = _NEST_TRIVIA.sub(b"", data.translate(None, _NEST_DROP)).translate(None, _NOT_BRACE)
    rest = braces
    rounds = 0
    while b"{}" in rest and rounds <= MAX_NESTING:
        rest = rest.replace(b"{}", b"")
        rounds += 1
    if rounds + rest.count(b"{") <= MAX_NESTING:
        return
    if max(accumulate(map(_BRACE_STEP, braces)), default=0) <= MAX_NESTING:
        return
    depth = 0
    for m in _NEST.finditer(text):
        c = m.group()
        if c == "{":
            depth += 1
            if depth > MAX_NESTING:
                _raise_at(text, m.start(), name, f"blocks nested more than {MAX_NESTING} "
                          "deep", ["'}'"])
        elif c == "}":
            depth -= 1


def _build(text: str, data: bytes, name: str, path: str | None) -> Module:
    _check_nesting(text, data, name)
    try:
        items = cast(list, _lark().parse(text))  # the transformer's start() gives a list
    except UnexpectedInput as exc:
        raise _lark_error(exc, text, name) from None
    except _OperandFailure as exc:
        _raise_at(text, exc.pos, name, exc.message, exc.expected)
    except ValueError as exc:       # a directive's integer past int()'s digit limit
        _raise_at(text, _long_int_at(text), name, _too_long(exc), ["integer"])
    module = Module(path=path, text=text, data=data, headers=[], decls=[], functions=[],
                    directives=[])
    for item in items:
        kind = item[0]
        if kind == "header":
            module.headers.append((item[1], item[2], item[3].line))
        elif kind == "decl":
            module.decls.extend(item[1])
        elif kind == "function":
            fn = item[1]
            fn.module = module
            module.functions.append(fn)
        else:
            module.directives.append((kind, item[1], item[2].line))
    if not module.headers or module.headers[0][0] != ".version":
        first_line = text.split("\n", 1)[0]
        raise ParseError("a PTX module must begin with a '.version' directive", file=name,
                         line=1, column=1, line_text=first_line, expected=["'.version'"])
    batch = _Batch()
    try:
        for fn in module.functions:
            _number_statements(fn, batch)
    except _OperandFailure as exc:
        _raise_at(text, exc.pos, name, exc.message, exc.expected)
    return module


class _OperandFailure(Exception):
    def __init__(self, pos, message, expected):
        super().__init__(message)
        self.pos = pos
        self.message = message
        self.expected = expected


class _Batch:
    """The instructions of one module left undecoded (PendingStatement), grouped by the
    state they decode in: (scoped names, binding keys, shadow, statements). `decode`
    decodes them all, as the walk would have, with one set of caches for the module."""

    __slots__ = ("groups",)

    def __init__(self):
        self.groups: list = []

    def decode(self) -> None:
        groups = self.groups
        if not groups:
            return
        self.groups = []
        was_enabled = gc.isenabled()
        gc.disable()        # as in the parse: many small objects, none to collect
        try:
            parsed_in: dict = {}
            bound_in: dict = {}
            for scoped, keys, shadow, items in groups:
                parsed = parsed_in.setdefault(scoped, {})
                # registers to rebind (scoped declarations in force): one more cache
                bound = bound_in.setdefault((scoped, state_key(keys, shadow)), {}) \
                    if keys or shadow else parsed
                for st in items:
                    text = st._text
                    hit = bound.get(text)
                    if hit is None:
                        hit = parsed.get(text)
                        if hit is None:
                            hit = parsed[text] = parse_instruction(text, scoped)
                        if bound is not parsed:
                            hit = bound[text] = rebind(hit, keys, shadow)
                    st.guard, st.opcode, st.operands = hit
                    st.__class__ = Statement
                    del st._lazy
        finally:
            clear_caches()
            clear_scope_caches()
            if was_enabled:
                gc.enable()


def _number_statements(fn: Function, batch: _Batch) -> None:
    """Assign sN numbers in source order and block depth, parse operands with the
    block-scoped register names in view, and bind registers to the declarations in force
    (rrsplice.ptx.scopes), all in one walk. An instruction whose decoding cannot fail
    (PendingStatement) is left to `batch`, in a group of its decoding state."""
    body = fn.body
    if body is None:
        return
    out = fn.statements
    body.depth = 0

    tables = {".branchtargets": fn.branch_targets, ".calltargets": fn.call_targets,
              ".callprototype": fn.prototypes}
    append = out.append
    declaring = [0]       # nested blocks that declare registers so far: their key numbers

    def walk(blk: Block, scoped: frozenset, keys: dict, shadow: tuple, parsed: dict,
             bound: dict | None):
        # the same instruction text recurs across the kernels of a module (register
        # numbers restart per function): its parse, immutable, is shared (`parsed`, per set
        # of scoped names), and so is its binding under one binding state (`bound`, looked
        # up at the first instruction after the state changes); a block that declares no
        # names keeps its parent's
        tag = ""
        if blk.decls:
            regs = [d for d in blk.decls if d.space == ".reg"]
            if regs:
                local = _bare_register_names(regs)
                if local:
                    scoped = scoped | local
                    parsed = instruction_cache(scoped)
                    bound = parsed if not (keys or shadow) else None
                if blk is not body:         # a nested block that declares registers
                    declaring[0] += 1
                    tag = block_tag(declaring[0])
        depth = blk.depth
        n = len(out)
        group: list | None = None       # `batch`'s group for the current decoding state
        for item in blk.items:
            kind = type(item)
            if kind is PendingStatement:
                n += 1
                item.index = n
                item.depth = depth
                item.function = fn
                item._lazy = batch
                if group is None:
                    group = []
                    batch.groups.append((scoped, keys, shadow, group))
                group.append(item)
                append(item)
            elif kind is Statement:
                n += 1
                item.index = n
                item.depth = depth
                item.function = fn
                if not item.is_label:
                    text = item._text
                    if bound is parsed:                 # nothing to bind: most statements
                        hit = parsed.get(text)
                        if hit is None:
                            try:
                                hit = parsed[text] = parse_instruction(text, scoped)
                            except (RecursionError, ValueError, OperandSyntaxError) as exc:
                                raise _operand_failure(item, exc) from None
                    else:
                        if bound is None:
                            bound = instruction_cache((scoped, state_key(keys, shadow)))
                        hit = bound.get(text)
                        if hit is None:
                            hit = parsed.get(text)      # the text recurs in other blocks
                            if hit is None:
                                try:
                                    hit = parsed[text] = parse_instruction(text, scoped)
                                except (RecursionError, ValueError, OperandSyntaxError) as exc:
                                    raise _operand_failure(item, exc) from None
                            hit = bound[text] = rebind(hit, keys, shadow)
                    item.guard, item.opcode, item.operands = hit
                append(item)
            elif kind is Block:
                item.depth = depth + 1
                if item.depth > MAX_NESTING:
                    raise _OperandFailure(item.start, f"blocks nested more than {MAX_NESTING} "
                                          "deep", ["'}'"])
                walk(item, scoped, keys, shadow, parsed, bound)
                n = len(out)
            else:
                item.depth = depth
                if kind is LabelledDirective:
                    tables[item.directive][item.label] = item
                elif kind is Decl and item.space == ".reg":
                    new_keys, new_shadow = declare(item, tag, keys, shadow)
                    if new_keys is not keys or new_shadow is not shadow:
                        keys, shadow, bound, group = new_keys, new_shadow, None, None

    scoped = _bare_register_names(fn.params + fn.ret_params)
    parsed = instruction_cache(scoped)
    walk(body, scoped, {}, (), parsed, parsed)


def _operand_failure(st: Statement, exc: Exception) -> _OperandFailure:
    """parse_instruction's failure on `st`'s text, placed in the source."""
    if isinstance(exc, OperandSyntaxError):
        missing = _missing_semicolon(st._text)
        if missing is not None:
            return _OperandFailure(st.start + missing, "missing ';' at the end of this line",
                                   ["';'"])
        return _OperandFailure(st.start + exc.offset, exc.message, exc.expected)
    if isinstance(exc, ValueError):         # past int()'s digit limit
        return _OperandFailure(st.start + _long_int_at(st._text), _too_long(exc), [])
    return _OperandFailure(st.start, "operands nested too deeply", [])   # RecursionError


MAX_NESTING = 128


def _long_int_at(text: str) -> int:
    """Offset of the first decimal literal too long for int() (or 0)."""
    m = re.search(rf"\d{{{sys.get_int_max_str_digits() + 1},}}", text) \
        if hasattr(sys, "get_int_max_str_digits") else None
    return m.start() if m else 0


def _too_long(exc: ValueError) -> str:
    if "digits" in str(exc) and hasattr(sys, "get_int_max_str_digits"):
        return f"integer literal longer than {sys.get_int_max_str_digits()} digits"
    return f"bad integer literal: {exc}"


def _bare_register_names(decls) -> frozenset:
    """The names that `.reg` declarations (or `.reg` parameters of a `.func`) give
    without a '%': operands spelled so are registers, not symbols. A `name<N>` range
    declares name0 .. name{N-1}."""
    names = []
    for d in decls:
        if d.space == ".reg" and not d.name.startswith("%"):
            count = getattr(d, "count", None)
            if count is None:
                names.append(d.name)
            else:
                names.extend(f"{d.name}{i}" for i in range(count))
    return frozenset(names)


def _missing_semicolon(text: str):
    """An instruction the lexer took whole but whose operands do not parse: if one of its
    continuation lines starts a new item (instruction, label, directive, block), the
    offset just past the content of the line before it, where the ';' is missing."""
    code = blank_comments(text)
    first_end = code.find("\n")
    if first_end < 0:
        return None
    last = len(code[:first_end].rstrip())
    for start, seg in _lines_after(code, first_end):
        if _starts_new_item(seg):
            return last
        last = start + len(seg.rstrip())
    return None


def _lines_after(code: str, line_end: int):
    """(offset, text) of each non-blank line after the newline at `line_end` (none when
    `line_end` is -1, i.e. there is no further line)."""
    while line_end >= 0:
        start = line_end + 1
        line_end = code.find("\n", start)
        seg = code[start:len(code) if line_end < 0 else line_end]
        if seg.strip():
            yield start, seg


def _starts_new_item(seg: str) -> bool:
    body = seg.lstrip()
    if body[:1] == "{":
        return _OPERAND_BRACE.match(body) is None
    return _STARTS_ITEM.match(seg) is not None


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        prefix = data[:exc.start]
        line = prefix.count(b"\n") + 1
        line_start = prefix.rfind(b"\n") + 1
        column = len(prefix[line_start:].decode("utf-8", "replace")) + 1
        line_end = data.find(b"\n", exc.start)
        line_text = data[line_start:line_end if line_end >= 0 else len(data)].decode(
            "utf-8", "replace")
        raise ParseError(f"invalid UTF-8 byte 0x{data[exc.start]:02X}", file=name, line=line,
                         column=column, line_text=line_text, expected=["UTF-8 text"]) from None


def _position(text: str, pos: int):
    """(line, column, line text) of offset `pos`. A '\r' ending the line is no column of
    it: a position past one (the end of a file whose last line is a lone '\r') is the
    column after the line's last character."""
    line = text.count("\n", 0, pos) + 1
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    if line_end < 0:
        line_end = len(text)
    line_text = text[line_start:line_end]
    return line, min(pos - line_start, len(line_text.rstrip("\r"))) + 1, line_text


def _raise_at(text, pos, name, message, expected):
    line, column, line_text = _position(text, pos)
    raise ParseError(message, file=name, line=line, column=column, line_text=line_text,
                     expected=expected)


_COMMENTS = re.compile(r'//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/|\Z)|"(?:[^"\\\n]|\\.)*"')
_STARTS_ITEM = re.compile(r"[ \t]*(?:[}{]|\.[A-Za-z_]|@|[A-Za-z_$%][\w$]*[ \t]*:(?!:)"
                          r"|[a-z][\w$]*(?:(?:\.|::)[\w$]+)*(?:[ \t]|;|$))")


_OPERAND_BRACE = re.compile(r"\{\s*(?:[%\d}-]|[A-Za-z_$][\w$]*\s*[,}])")


def blank_comments(text: str) -> str:
    """`text` with comments and strings replaced by spaces (newlines kept), so brace and
    ';' scans line up with the original offsets."""
    return _COMMENTS.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def _unterminated(text: str, pos: int):
    """An instruction starting at `pos` that the lexer could not take whole: where its ';'
    is missing. Returns (position, message) or None when it is something else.

    Its continuation lines are followed until one starts a new item (instruction, label,
    directive, brace): the ';' belongs at the end of the last line before it. Reaching the
    end of the file means the file is truncated inside the instruction."""
    code = blank_comments(text)
    line_end = code.find("\n", pos)
    seg_end = len(code) if line_end < 0 else line_end
    if ";" in code[pos:seg_end]:
        return None
    last = pos + len(code[pos:seg_end].rstrip())  # end of the instruction's content so far
    for start, seg in _lines_after(code, line_end):
        if _starts_new_item(seg):
            return last, "missing ';' at the end of this instruction"
        if ";" in seg:
            return None
        last = start + len(seg.rstrip())
    return len(text), "unexpected end of file inside an instruction (missing ';'?)"


def _unclosed_brace(text: str):
    """At an unexpected end of file: the '{' most likely left open, as a position. Braces
    are matched naively; a pair whose '}' is indented differently from its '{' line marks
    the real culprit (a nested block that was never closed, so the function's final '}'
    closed it instead)."""
    code = blank_comments(text)
    stack = []
    suspect = None
    for m in re.finditer(r"[{}]", code):
        p = m.start()
        if m.group() == "{":
            stack.append(p)
        elif stack:
            o = stack.pop()
            if _indent(code, o) != _indent(code, p) and code[code.rfind("\n", 0, p) + 1:p].strip() == "":
                suspect = o if suspect is None or o > suspect else suspect
    if not stack:
        return None
    return suspect if suspect is not None else stack[-1]


def _indent(code: str, pos: int) -> str:
    start = code.rfind("\n", 0, pos) + 1
    line = code[start:]
    return line[:len(line) - len(line.lstrip(" \t"))]


_INSTR_START = re.compile(r"(?:@[ \t]*+!?[ \t]*+[%A-Za-z_$][\w$]*+[ \t]++)?[a-z][\w$]*+"
                          r"(?:(?:\.|::)[\w$]++)*+(?:[ \t]|$)", re.M)
_ITEM_AT = re.compile(f"{ITEM}|{SCOPE}")


def _last_brace_before(text: str, pos: int):
    code = blank_comments(text[:pos])
    p = code.rfind("}")
    return p if p >= 0 else None


def _lark_error(exc: UnexpectedInput, text: str, name: str) -> ParseError:
    def err(message, pos, expected):
        line, column, line_text = _position(text, pos)
        return ParseError(message, file=name, line=line, column=column, line_text=line_text,
                          expected=expected)

    expected_terms = getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ()
    expected = [_TERMINAL_NAMES.get(t, t) for t in expected_terms]
    at_module_scope = "FUNC_KIND" in expected_terms and "RBRACE" not in expected_terms

    if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken)
                                          and exc.token.type == "$END"):
        brace = _unclosed_brace(text)
        if brace is not None:
            bl, bc, _ = _position(text, brace)
            message = (f"unexpected end of file: the '{{' at line {bl}, column {bc} is never "
                       f"closed")
            expected = ["'}'"]
        else:
            message = "unexpected end of file (truncated module?)"
        return err(message, len(text), expected)

    if isinstance(exc, UnexpectedCharacters):
        pos = cast(int, exc.pos_in_stream)  # set on every raised instance
        tok_text = text[pos]
        tok_type = None
    else:
        assert isinstance(exc, UnexpectedToken)  # Lark's third kind; EOF is handled above
        pos = cast(int, exc.token.start_pos)  # lexer tokens carry positions
        tok_text = str(exc.token)
        tok_type = exc.token.type

    ch = text[pos]
    if at_module_scope and _ITEM_AT.match(text, pos):
        brace = _last_brace_before(text, pos)
        if brace is not None:
            return err("stray '}': it closes the function body, so what follows is outside "
                       "any function", brace, ["instruction or declaration inside a body"])
    if tok_type == "RBRACE" and at_module_scope:
        return err("unmatched '}'", pos, expected)
    if _INSTR_START.match(text, pos):
        found = _unterminated(text, pos)
        if found is not None:
            where, message = found
            return err(message, where, ["';'"])
    if isinstance(exc, UnexpectedCharacters):
        return err(f"unexpected character {ch!r}", pos, expected)
    shown = tok_text.split("\n", 1)[0] + (" ..." if "\n" in tok_text else "")
    return err(f"unexpected {shown[:60]!r}", pos, expected)
