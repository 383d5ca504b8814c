"""The recipe forms, one registry entry each: the keys, how the values are validated, and
where the form acts (its target). A new form is one :func:`form` entry here; the checks and
the edits of what it targets are registered per target kind (``check.core.KIND_CHECKS``,
``splice.KIND_EDITS``), statement rewrites are options of every form (:mod:`rrsplice.rewrite`).

Target kinds: ``region`` (replace lines first..last), ``point`` (insert after a line),
``truncate`` (drop everything after a line), ``body`` (replace a function's body), ``none``
(the module as it is).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..ptx.select import function_at


def _err(path, message: str, key: str):
    from .recipe import RecipeError
    return RecipeError(path, message, key)


# ------------------------------------------------------------------ value validators

def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def line_pair(path, key, v) -> tuple:
    if not isinstance(v, (tuple, list)) or len(v) != 2 or not all(is_int(x) for x in v):
        raise _err(path, f"expected (first, end), two line numbers; got {v!r}"[:300], key)
    a, b = v
    if a < 1 or b <= a:
        raise _err(path, f"({a}, {b}) is not a half-open line interval first < end, "
                   "first >= 1", key)
    return (a, b)


def text(path, key, v) -> str:
    if not isinstance(v, str):
        raise _err(path, f"expected text (str), got {type(v).__name__}", key)
    from .recipe import check_text
    return check_text(path, key, v)


def line_regs(path, key, v) -> tuple:
    if (not isinstance(v, (tuple, list)) or len(v) != 2 or not is_int(v[0])
            or not isinstance(v[1], (list, tuple))
            or not all(isinstance(r, str) for r in v[1])):
        raise _err(path, f"expected (line, [registers]); got {v!r}"[:300], key)
    if v[0] < 1:
        raise _err(path, f"line {v[0]} is not a line number", key)
    return (v[0], list(v[1]))


# ------------------------------------------------------------------ the registry

@dataclass(frozen=True)
class Form:
    name: str
    required: frozenset
    optional: frozenset
    kind: str                                   # the target kind it produces
    normalise: Callable                         # (path, raw, rec) -> None: sets rec fields
    target: Callable                            # (t, rec, module) -> None: sets t fields


FORMS: dict = {}


def form(name: str, required=(), optional=(), kind: str = "none"):
    """Register the decorated `normalise` function; `target=` is attached by :func:`targets`."""
    def deco(normalise):
        FORMS[name] = Form(name, frozenset(required), frozenset(optional), kind, normalise,
                           _TARGETS.get(name, _target_none))
        return normalise
    return deco


_TARGETS: dict = {}


def targets(name: str):
    def deco(fn):
        _TARGETS[name] = fn
        if name in FORMS:
            f = FORMS[name]
            FORMS[name] = Form(f.name, f.required, f.optional, f.kind, f.normalise, fn)
        return fn
    return deco


def _target_none(t, rec, module) -> None:
    t.fn = rec.entry_function(module)


# --- cut_call: replace lines first..end-1 with the call text

@form("cut_call", required=("cut_call", "call"), optional=("extern",), kind="region")
def _cut_call(path, raw, rec):
    rec.cut_call = line_pair(path, "cut_call", raw["cut_call"])
    rec.call = text(path, "call", raw["call"])


@targets("cut_call")
def _cut_call_target(t, rec, module):
    a, b = rec.cut_call
    t.first_line, t.last_line, t.text = a, b - 1, rec.call
    t.fn = function_at(module, a)


# --- debug: keep the body, insert the block after a line

@form("debug", required=("debug",), optional=("debug_block",), kind="point")
def _debug(path, raw, rec):
    rec.debug = line_regs(path, "debug", raw["debug"])
    blk = raw.get("debug_block")
    if blk is not None and not (callable(blk) or isinstance(blk, str)):
        raise _err(path, f"expected a function FN(regs) -> text (or the text), got "
                   f"{type(blk).__name__}", "debug_block")
    rec.debug_block = blk


@targets("debug")
def _debug_target(t, rec, module):
    line, regs = rec.debug
    t.first_line, t.point_regs = line, list(regs)
    t.stage = rec.debug_env or "debug"
    t.fn = function_at(module, line)


# --- cut_after: truncate after a line (checked against cut_check), append the tail

@form("cut_after", required=("cut_after", "tail"), optional=("cut_check", "extern"),
      kind="truncate")
def _cut_after(path, raw, rec):
    v = raw["cut_after"]
    if not is_int(v) or v < 1:
        raise _err(path, f"expected a line number, got {v!r}", "cut_after")
    rec.cut_after = v
    if "cut_check" in raw:
        rec.cut_check = text(path, "cut_check", raw["cut_check"])
    rec.tail = text(path, "tail", raw["tail"])


@targets("cut_after")
def _cut_after_target(t, rec, module):
    t.first_line, t.text = rec.cut_after, rec.tail
    t.fn = function_at(module, rec.cut_after)


# --- delete: replace a line range (both ends checked) with the insert text

@form("delete", required=("delete", "insert"), optional=("delete_check", "extern"),
      kind="region")
def _delete(path, raw, rec):
    rec.delete = line_pair(path, "delete", raw["delete"])
    if "delete_check" in raw:
        v = raw["delete_check"]
        if isinstance(v, str):
            v = (v, None)
        if (not isinstance(v, (tuple, list)) or len(v) != 2
                or not all(x is None or isinstance(x, str) for x in v)):
            raise _err(path, "expected (first line's text, last line's text)", "delete_check")
        rec.delete_check = tuple(v)
    rec.insert = text(path, "insert", raw["insert"])


@targets("delete")
def _delete_target(t, rec, module):
    a, b = rec.delete
    t.first_line, t.last_line, t.text = a, b - 1, rec.insert
    t.fn = function_at(module, a)


# --- replace_body: a whole body becomes the stub

@form("replace_body", required=("replace_body", "stub"), optional=("extern",), kind="body")
def _replace_body(path, raw, rec):
    v = raw["replace_body"]
    if not (isinstance(v, str) or v is True):
        raise _err(path, f"expected the entry's name (or True), got {v!r}", "replace_body")
    rec.replace_body = v
    rec.stub = text(path, "stub", raw["stub"])


@targets("replace_body")
def _replace_body_target(t, rec, module):
    t.text = rec.stub
    if rec.replace_body is True:
        ents = [f for f in module.functions if f.has_body and f.is_entry]
        t.fn = ents[0] if len(ents) == 1 else None
    else:
        t.fn = next((f for f in module.functions
                     if f.name == rec.replace_body and f.has_body), None)


# --- baseline: the module as it is (rewrite options still apply)

@form("baseline", kind="none")
def _baseline(path, raw, rec):
    pass


def build_form_target(t, rec, module) -> None:
    """Set the target's kind and fields for the recipe's form."""
    f = FORMS[rec.form]
    t.kind = f.kind
    f.target(t, rec, module)
