"""Recipe modules: load by path, call `recipe()`, normalise the result, find the PTX module.

A recipe is the users' own, self-contained Python module (it imports nothing from rrsplice).
It runs in a process of its own (:mod:`rrsplice.workflow.recipe_process`); only plain data comes
back, so nothing a recipe does can change rrsplice's verdict or exit code.
`recipe()` returns one of these dicts, all accepted unchanged:

=================  =========================================================================
form               keys (besides ``file``, the PTX module's name)
=================  =========================================================================
``cut_call``       ``cut_call=(first, end)`` half-open physical lines, ``call=TEXT`` that
                   replaces them, ``extern=TEXT`` the callee's ``.extern .func`` declaration
``debug``          ``debug=(line, [regs])``, ``debug_block=FN`` (``FN(regs) -> TEXT``, or the
                   text itself): keep the body, insert the block after ``line``
``baseline``       nothing else: the unedited module
``cut_after``      ``cut_after=LINE``, ``cut_check=TEXT`` (must occur in line LINE),
                   ``tail=TEXT``: the module is truncated after LINE and TEXT appended
``delete``         ``delete=(first, end)`` half-open like ``cut_call``, ``delete_check=(A, B)``
                   (texts that must occur in lines ``first`` and ``end-1``), ``insert=TEXT``
``replace_body``   ``replace_body=ENTRY`` (a name, or True for the module's only entry),
                   ``stub=TEXT``: everything between the body's braces is replaced
=================  =========================================================================

``extern`` is also accepted with ``cut_after``, ``delete`` and ``replace_body``; ``entry=NAME``
with every form. Anything else is a :class:`RecipeError` naming the recipe file and the key.

Options combinable with every form (and with each other), see :mod:`rrsplice.rewrite`:
``sust=True`` or ``sust=[kinds]`` (surface stores -> helper calls), ``rz_round=True`` (the
``roundf`` idiom without ``.rz``), ``rewrites=[dict(opcode=..., replace=..., extern=...)]``
(the recipe's own rules), ``entries=REGEX`` (the family of entry names the recipe applies to:
``apply --all`` and the hook apply it to every matching kernel of a corpus).

Module constants (``MODULE``, ``CALLEE``, ``A_REGS``, ``C_REGS``, ``RET_REGS``, ``SCRATCH``,
``W_REG``, ``V_REG``, ``RET_STRIDE``, ``ENTRY``, ``ANY_MODULE``, and the parameter roles
``W_PARAM``, ``BIAS_PARAM``, ``DEBUG_PARAM`` -- ``"NAME+OFFSET"``, ``"+OFFSET"`` (in the first
parameter) or a parameter number ``"1"``, see :mod:`rrsplice.analysis.paramroles`) are read when present,
never required.

The PTX module is resolved by :func:`resolve_module`: ``--corpus DIR``, ``$RRSPLICE_CORPUS``,
``[tool.rrsplice] corpus``, ``~/.cache/d4r-rr-corpus``, the bundled ``corpus_fixtures/``; a
module that is missing or lacks the entry is an error unless ``ANY_MODULE = True`` (or
``--any-module``) allows another corpus module that defines the entry.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..ptx.diagnostic import register_codes
from ..ptx.errors import RRSpliceError
from ..ptx.model import Function, Module
from ..ptx.select import named_function
from .forms import FORMS as FORM_TABLE
from .forms import line_regs as _line_regs
from .forms import text as _text

DEBUG_ENV = "D4R_RRSWIN_DEBUG"
CORPUS_ENV = "RRSPLICE_CORPUS"
USER_CORPUS = Path("~/.cache/d4r-rr-corpus")
BUNDLED_CORPUS = Path(__file__).resolve().parents[2] / "corpus_fixtures"

CONSTANTS = ("MODULE", "CALLEE", "ENTRY", "CUT_CALL", "A_REGS", "C_REGS", "RET_REGS",
             "RET_STRIDE", "SCRATCH", "W_REG", "V_REG", "PASSED", "ABI", "BODY", "TARGET",
             "OWN_SCRATCH", "ANY_MODULE", "W_PARAM", "BIAS_PARAM", "DEBUG_PARAM",
             "DEBUG_PARAM_OFFSET", "DEBUG_ALIAS_OK")

# form -> (required keys, optional keys), from the registry (rrsplice.workflow.forms); `file` and
# `entry` are common to all
FORMS = {name: (set(f.required), set(f.optional)) for name, f in FORM_TABLE.items()}
COMMON = {"file", "entry"}
# options every form accepts: statement rewrites and the family pattern
OPTIONS = {"sust", "rz_round", "rewrites", "entries"}


# The rewrite options' vocabulary: rrsplice.rewrite implements the rewrites, the recipe names
# them, so it is defined here, where a recipe is validated without importing the rewrites.
@dataclass(frozen=True)
class SustKind:
    """A surface store ``sust=[kinds]`` can name, and the native helper that replaces it."""
    opcode: str          # the exact opcode matched
    helper: str          # the native helper called instead
    value_type: str      # .param type of each value (".b16" / ".b32")
    count: int           # values stored


SUST_KINDS = {
    "v2b16": SustKind("sust.b.2d.v2.b16.zero", "d4r_sust_v2b16", ".b16", 2),
    "v4b16": SustKind("sust.b.2d.v4.b16.zero", "d4r_sust_v4b16", ".b16", 4),
    "b32": SustKind("sust.b.2d.b32.zero", "d4r_sust_b32", ".b32", 1),
    "p_v4b32": SustKind("sust.p.2d.v4.b32.zero", "d4r_sust_p_v4b32", ".b32", 4),
}
#: the keys of one of the recipe's own rules, ``rewrites=[dict(...)]``
RULE_KEYS = {"opcode", "replace", "extern", "name"}
KNOWN_KEYS = set(COMMON | OPTIONS).union(*(r | o for r, o in FORMS.values()))


class RecipeError(RRSpliceError):
    """A recipe that cannot be imported, whose `recipe()` fails, or whose result is malformed;
    names the recipe file and, where there is one, the offending key."""

    def __init__(self, path, message: str, key: str | None = None):
        self.path = str(path)
        self.key = key
        self.message = message
        super().__init__((f"key {key!r}: " if key else "") + message, path=path)

    def to_json(self) -> dict:
        return {"recipe": self.path, "key": self.key, "message": self.message}


class ModuleNotFound(RecipeError):
    """The recipe's PTX module is in none of the corpus directories."""


@dataclass
class Recipe:
    """A loaded, normalised recipe."""
    path: Path
    module: Any                      # a RecipeModule: the recipe module's data
    raw: dict                        # what recipe() returned
    form: str                        # a key of FORMS
    file: str                        # the PTX module's name (as the recipe gave it)
    cut_call: tuple | None = None
    call: str | None = None
    extern: str | None = None
    debug: tuple | None = None    # (line, [regs])
    debug_block: Any = None          # callable(regs) -> str, or str
    cut_after: int | None = None
    cut_check: str | None = None
    tail: str | None = None
    delete: tuple | None = None
    delete_check: tuple | None = None
    insert: str | None = None
    replace_body: Any = None
    stub: str | None = None
    entry_key: str | None = None
    constants: dict = field(default_factory=dict)
    sust: Any = False                # False, True, or a list of kind names
    rz_round: bool = False
    rewrites: list = field(default_factory=list)   # the recipe's own rules (dicts)
    entries: str | None = None    # family pattern: entry names the recipe applies to
    debug_env: str | None = None  # the D4R_RRSWIN_DEBUG value recipe() was called with
    runner: Any = field(default=None, repr=False, compare=False)  # the recipe's process

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def doc(self) -> str:
        return getattr(self.module, "__doc__", None) or ""

    def const(self, name: str, default=None):
        return self.constants.get(name, default)

    @property
    def layer(self) -> str:
        """The layer a recipe is for (`dec2` of `swin_dec2_recipe.py`), used to qualify its
        debug-stage names."""
        return recipe_layer(self)

    def entry_candidates(self) -> list[tuple[str, str]]:
        return entry_candidates(self)

    def entry_function(self, module: Module) -> Function | None:
        """The function of `module` this recipe is for: the first of its entry candidates
        with a body, else the module's only `.entry` with a body (None: neither)."""
        return named_function(module, [n for n, _ in entry_candidates(self)])

    @property
    def entry(self) -> str | None:
        c = entry_candidates(self)
        return c[0][0] if c else None

    def stages(self) -> dict:
        """The recipe's `stages()` table (name -> (line, [regs])), names as written."""
        fn = getattr(self.module, "stages", None)
        if fn is None:
            table = getattr(self.module, "STAGES", None)
            if table is None:
                return {}
        else:
            if not callable(fn):
                raise RecipeError(self.path, "`stages` must be a function returning "
                                  "{name: (line, [regs])}", "stages")
            table = call_user(self.path, "stages", "stages()", fn)
        if not isinstance(table, dict):
            raise RecipeError(self.path, f"stages() returned {type(table).__name__}, "
                              "expected a dict {name: (line, [regs])}", "stages")
        out = {}
        for name, val in table.items():
            if not isinstance(name, str):
                raise RecipeError(self.path, f"stage name {name!r} is not a string", "stages")
            check_stage_name(self.path, name)
            out[name] = _line_regs(self.path, f"stages[{name!r}]", val)
        return out


# ------------------------------------------------------------------ loading

class RecipeModule:
    """What rrsplice knows of a recipe's module: its docstring, its constants (upper-case
    names) and ``debug_block``, decoded from the recipe's own process, plus ``stages`` when
    it defines one (the table ``stages()`` returned there, or the error it raised). Plain
    data only: nothing here runs the recipe's code except a :class:`RemoteFunction`, which
    runs it in that process."""

    def __init__(self, path, doc: str | None, attrs: dict, bad: dict, stages=None):
        self.__dict__.update(attrs)
        self.__doc__ = doc
        self._bad = bad
        if stages is not None:
            self.stages = stages

    def __getattr__(self, name):
        bad = self.__dict__.get("_bad", {})
        if name in bad:
            raise bad[name]
        raise AttributeError(name)


def _exc_summary(exc: BaseException, path: Path) -> str:
    """`TypeError: ...` plus the last line of the recipe file involved, if any."""
    where = ""
    for fr in reversed(traceback.extract_tb(exc.__traceback__)):
        try:
            same = Path(fr.filename).resolve() == Path(path).resolve()
        except OSError:
            same = False
        if same:
            where = f" (line {fr.lineno}" + (f": {fr.line.strip()}" if fr.line else "") + ")"
            break
    return f"{type(exc).__name__}: {exc}{where}"


_SAFE_NAME = re.compile(r"[^/\\\x00]+")


def check_stage_name(path, name: str, key: str = "stages") -> str:
    """A debug-stage (or layer) name becomes part of an output file name: no path
    separators, no `..`, no NUL, so no output lands outside `out/`."""
    check_text(path, key, name)
    if not _SAFE_NAME.fullmatch(name) or ".." in name or name.strip(". ") == "":
        raise RecipeError(path, f"stage name {name!r} may not contain '/', '\\', '..' or "
                          "NUL (it names an output file)", key)
    return name


def call_user(path, key: str, what: str, fn, *args):
    """Call the recipe's function `fn(*args)` (a RemoteFunction: it runs in the recipe's
    own process) and return its plain-data result; whatever goes wrong there (an exception,
    an exit, the process ending) becomes a RecipeError naming the recipe."""
    from .recipe_process import ProcessFailure, RemoteFunction
    try:
        if isinstance(fn, RemoteFunction):
            return fn.call(what, *args)
        with contextlib.redirect_stdout(sys.stderr):
            return fn(*args)
    except RecipeError:
        raise
    except ProcessFailure as exc:
        raise RecipeError(path, exc.message, key) from None
    except BaseException as exc:  # noqa: BLE001 - users' code, any exit included
        raise RecipeError(path, f"{what} raised {_exc_summary(exc, path)}", key) from None


def _bad_text(v, depth: int = 0) -> str | None:
    """Why plain data `v` holds a string that is not text (a lone surrogate), or None."""
    if isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (f"not valid text: character {exc.start} is {ascii(v[exc.start])} "
                    f"({exc.reason})")
        return None
    if depth > 80:
        return None
    if isinstance(v, (list, tuple)):
        items = v
    elif isinstance(v, dict):
        items = [x for kv in v.items() for x in kv]
    else:
        return None
    for x in items:
        why = _bad_text(x, depth + 1)
        if why:
            return why
    return None


def _decode_module(path: Path, reply: dict, runner) -> tuple:
    """(module data, recipe() result, $D4R_RRSWIN_DEBUG after recipe()), from the
    runner's reply."""
    from .recipe_process import ProcessFailure, decode
    try:
        raw = decode(reply.get("raw"), runner)
        attrs, bad = {}, {}
        pairs = reply.get("attrs")
        if not isinstance(pairs, list):
            raise ProcessFailure("the recipe process sent a malformed reply")
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                raise ProcessFailure("the recipe process sent a malformed reply")
            name, value = pair[0], decode(pair[1], runner)
            why = _bad_text(name) or _bad_text(value)
            if why:
                bad[name] = RecipeError(path, why, name)
            else:
                attrs[name] = value
        doc = reply.get("doc")
        doc = doc if isinstance(doc, str) and not _bad_text(doc) else None
        stages = None
        st = reply.get("stages")
        if isinstance(st, dict):
            if st.get("ok"):
                table = decode(st.get("value"), runner)

                def stages(table=table):
                    return table
            else:
                error_text = st.get("error")
                err = RecipeError(path, error_text if isinstance(error_text, str)
                                  else "stages() failed", "stages")

                def stages(err=err):
                    raise err
        env = reply.get("debug_env")
    except ProcessFailure as exc:
        raise RecipeError(path, exc.message) from None
    return RecipeModule(path, doc, attrs, bad, stages), raw, (env if isinstance(env, str)
                                                             else None)


def _holds_functions(v, depth: int = 0) -> bool:
    from .recipe_process import RemoteFunction
    if isinstance(v, RemoteFunction):
        return True
    if depth > 80:
        return False
    if isinstance(v, (list, tuple)):
        return any(_holds_functions(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return any(_holds_functions(x, depth + 1) for x in v.values())
    return False


def load_recipe(path, *, debug: str | None = None) -> Recipe:
    """Load the recipe at `path` in a process of its own (see :mod:`rrsplice.workflow.recipe_process`),
    call its `recipe()` there and normalise the plain data it returns.

    `debug`, when given, is put in `$D4R_RRSWIN_DEBUG` while the recipe is imported and
    `recipe()` runs (recipes that read the variable return their debug form then).
    """
    from ..infra.fsutil import InputError, read_input
    from .recipe_process import ProcessFailure, load
    path = Path(path)
    try:            # a regular file: a FIFO, a loop or a too-long name is an error here
        read_input(path, what="recipe file")
    except InputError as exc:
        raise RecipeError(path, exc.message) from None
    if debug is not None:
        check_text(path, "debug", debug)
    try:
        reply, runner = load(path, debug)
    except ProcessFailure as exc:
        raise RecipeError(path, exc.message, exc.key) from None
    try:
        mod, raw, env_value = _decode_module(path, reply, runner)
        if isinstance(raw, dict):
            for k, v in raw.items():
                why = _bad_text(k) or _bad_text(v)
                if why:
                    raise RecipeError(path, why, k if isinstance(k, str) and not _bad_text(k)
                                      else None)
        rec = normalise(path, mod, raw)
    except BaseException:
        runner.close()
        raise
    rec.debug_env = env_value
    # a runner is kept only while something can call into it
    if not (_holds_functions(raw) or _holds_functions(vars(mod))):
        runner.close()
    rec.runner = runner
    return rec


# ------------------------------------------------------------------ normalising

def check_text(path, key, v: str) -> str:
    """Text spliced into a module must encode as UTF-8 (no lone surrogates) and hold no
    NUL."""
    try:
        v.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RecipeError(path, f"not valid text: character {exc.start} is "
                          f"{ascii(v[exc.start])} ({exc.reason})", key) from None
    if "\x00" in v:
        raise RecipeError(path, f"not valid text: NUL at character {v.index(chr(0))}", key)
    return v


def normalise(path, mod, raw) -> Recipe:
    """Validate a `recipe()` result and turn it into a Recipe."""
    path = Path(path)
    if not isinstance(raw, dict):
        raise RecipeError(path, f"recipe() returned {type(raw).__name__}, expected a dict "
                          "such as dict(file=..., cut_call=(first, end), call=..., extern=...)",
                          "recipe")
    for k in raw:
        if not isinstance(k, str):
            raise RecipeError(path, f"recipe() returned a non-string key {k!r}", repr(k))
    unknown = sorted(set(raw) - KNOWN_KEYS)
    if unknown:
        raise RecipeError(path, "unknown key in recipe() result; known keys: "
                          + ", ".join(sorted(KNOWN_KEYS)), unknown[0])
    keys = set(raw) - COMMON - OPTIONS
    forms = [f for f, (req, opt) in FORMS.items() if req and req & keys]
    if len(forms) > 1:
        a, b = forms[:2]
        ka = sorted(FORMS[a][0] & keys)[0]
        kb = sorted(FORMS[b][0] & keys)[0]
        raise RecipeError(path, f"mixes two recipe forms: {ka!r} ({a}) and {kb!r} ({b})", kb)
    form = forms[0] if forms else "baseline"
    req, opt = FORMS[form]
    missing = sorted(req - keys)
    if missing:
        raise RecipeError(path, f"missing: the {form} form needs "
                          + ", ".join(sorted(req)), missing[0])
    stray = sorted(keys - req - opt)
    if stray:
        raise RecipeError(path, f"not allowed with the {form} form (allowed: "
                          + ", ".join(sorted(req | opt | COMMON | OPTIONS)) + ")", stray[0])
    if "file" not in raw:
        raise RecipeError(path, "missing: every recipe names its PTX module with file=...",
                          "file")
    f = raw["file"]
    if not isinstance(f, (str, os.PathLike)):
        raise RecipeError(path, f"expected a file name (str), got {type(f).__name__}", "file")
    f = os.fspath(f)
    if not isinstance(f, str):
        raise RecipeError(path, f"expected a file name (str), got {type(f).__name__}", "file")
    if not f.strip():
        raise RecipeError(path, "empty file name", "file")
    check_text(path, "file", f)
    if len(f.encode()) > 4000 or any(len(part.encode()) > 255 for part in Path(f).parts):
        raise RecipeError(path, f"file name too long ({len(f)} characters)", "file")

    constants = {k: getattr(mod, k) for k in CONSTANTS if hasattr(mod, k)}
    rec = Recipe(path=path, module=mod, raw=raw, form=form, file=f, constants=constants)
    if "entry" in raw:
        rec.entry_key = _text(path, "entry", raw["entry"])
    if "extern" in raw:
        rec.extern = _text(path, "extern", raw["extern"])
    _options(path, raw, rec)
    FORM_TABLE[form].normalise(path, raw, rec)
    return rec


def _options(path, raw: dict, rec: Recipe) -> None:
    """The rewrite and family options (see the module docstring)."""
    if "sust" in raw:
        v = raw["sust"]
        if isinstance(v, (list, tuple)):
            bad = [k for k in v if k not in SUST_KINDS]
            if bad or not v:
                raise RecipeError(path, f"unknown surface-store kind {bad[0]!r}; kinds: "
                                  + ", ".join(SUST_KINDS) if bad else "an empty list of kinds "
                                  "(use sust=False to rewrite none)", "sust")
            rec.sust = list(dict.fromkeys(v))
        elif isinstance(v, bool):
            rec.sust = v
        else:
            raise RecipeError(path, f"expected True, False or a list of kinds "
                              f"({', '.join(SUST_KINDS)}), got {v!r}"[:300], "sust")
    if "rz_round" in raw:
        if not isinstance(raw["rz_round"], bool):
            raise RecipeError(path, f"expected True or False, got {raw['rz_round']!r}"[:300],
                              "rz_round")
        rec.rz_round = raw["rz_round"]
    if "rewrites" in raw:
        v = raw["rewrites"]
        if not isinstance(v, (list, tuple)):
            raise RecipeError(path, "expected a list of rules dict(opcode=..., replace=...)",
                              "rewrites")
        for i, r in enumerate(v):
            key = f"rewrites[{i}]"
            if not isinstance(r, dict) or not {"opcode", "replace"} <= set(r):
                raise RecipeError(path, "a rule is dict(opcode=..., replace=TEMPLATE or FN, "
                                  "extern=..., name=...)", key)
            extra = sorted(set(r) - RULE_KEYS)
            if extra:
                raise RecipeError(path, f"unknown rule key {extra[0]!r} (known: "
                                  + ", ".join(sorted(RULE_KEYS)) + ")", key)
            ops = r["opcode"]
            ops = [ops] if isinstance(ops, str) else ops
            if not isinstance(ops, (list, tuple)) or not ops \
                    or not all(isinstance(o, str) and o for o in ops):
                raise RecipeError(path, "opcode must be an opcode or a list of them", key)
            if not (callable(r["replace"]) or isinstance(r["replace"], str)):
                raise RecipeError(path, "replace must be a template or a function", key)
            for k in ("extern", "name"):
                if r.get(k) is not None and not isinstance(r[k], str):
                    raise RecipeError(path, f"{k} must be text", key)
            rec.rewrites.append(dict(r, opcode=list(ops)))
    if "entries" in raw:
        v = _text(path, "entries", raw["entries"])
        try:
            re.compile(v)
        except re.error as exc:
            raise RecipeError(path, f"not a regular expression: {exc}", "entries") from None
        rec.entries = v


def matches_family(rec: Recipe, entry: str) -> bool:
    """Does `entry` belong to the recipe's family (its `entries` pattern, whole name)?"""
    return rec.entries is not None and re.fullmatch(rec.entries, entry) is not None


# ------------------------------------------------------------------ which entry, which layer

_KERNEL = re.compile(r"\b(cuda_dldn_engine_swin_([A-Za-z0-9]+)_kernel)\b")
_FILE_LAYER = re.compile(r"^swin_([A-Za-z0-9]+?)(?:_recipe)?(?:_.*)?$")


def _mangled_function(sym: str) -> str | None:
    """`_ZZ33cuda_..._kernel33Dldn...E4smem` -> `cuda_..._kernel` (a local static's owner)."""
    m = re.match(r"_ZZ(\d+)", sym)
    if not m:
        return None
    n = int(m.group(1))
    name = sym[m.end():m.end() + n]
    return name if len(name) == n else None


def entry_candidates(rec: Recipe) -> list[tuple[str, str]]:
    """The entry names the recipe is for, best first, each with where it came from."""
    out: list[tuple[str, str]] = []

    def add(name, why):
        if name and name not in [n for n, _ in out]:
            out.append((name, why))

    if rec.entry_key:
        add(rec.entry_key, "the recipe's entry= key")
    if isinstance(rec.replace_body, str):
        add(rec.replace_body, "the recipe's replace_body= key")
    ent = rec.constants.get("ENTRY")
    if isinstance(ent, str):
        add(ent, "the recipe's ENTRY")
    m = _KERNEL.search(rec.doc)
    if m:
        add(m.group(1), "the recipe's docstring")
    m = _FILE_LAYER.match(rec.path.stem)
    if m:
        add(f"cuda_dldn_engine_swin_{m.group(1)}_kernel", f"the recipe's file name {rec.path.name}")
    sc = rec.constants.get("SCRATCH")
    if isinstance(sc, str):
        add(_mangled_function(sc), "the recipe's SCRATCH symbol")
    callee = rec.constants.get("CALLEE")
    if isinstance(callee, str):
        m = re.match(r"^d4r_swin_([A-Za-z0-9]+)$", callee)
        if m:
            add(f"cuda_dldn_engine_swin_{m.group(1)}_kernel", "the recipe's CALLEE")
    return out


def recipe_layer(rec: Recipe) -> str:
    layer = rec.constants.get("LAYER") or getattr(rec.module, "LAYER", None)
    if isinstance(layer, str) and layer:
        return check_stage_name(rec.path, layer, "LAYER")
    m = _FILE_LAYER.match(rec.path.stem)
    if m:
        return m.group(1)
    ent = rec.entry
    if ent:
        m = _KERNEL.fullmatch(ent)
        if m:
            return m.group(2)
        return ent
    return rec.path.stem


# ------------------------------------------------------------------ module resolution

def corpus_dirs(corpus=None, start: Path | None = None) -> list[tuple[Path, str]]:
    """Corpus directories in lookup order, each with where it came from. A `--corpus` or
    `$RRSPLICE_CORPUS` that is not a directory is an error (a typo never silently falls
    through to another corpus); the configured and default ones may be absent."""
    from ..infra.config import load_config

    out: list[tuple[Path, str]] = []

    def add(p, why, must_exist=False):
        if p is None:
            return
        p = Path(os.path.expanduser(str(p)))
        if must_exist and not p.is_dir():
            raise CorpusNotFound(f"{why} {p}: no such directory")
        if all(p.resolve() != q.resolve() for q, _ in out):
            out.append((p, why))

    add(corpus, "--corpus", must_exist=True)
    add(os.environ.get(CORPUS_ENV) or None, f"${CORPUS_ENV}", must_exist=True)
    # a recipe's project is its own: the nearest pyproject.toml above the recipe, never
    # the working directory's (which may be anyone's checkout); cwd only without a recipe
    cfg = load_config(start if start is not None else Path.cwd())
    if cfg.corpus is not None:
        assert cfg.root is not None  # a configured corpus comes from a pyproject.toml
        add(cfg.corpus, f"[tool.rrsplice] corpus in {cfg.root / 'pyproject.toml'}")
    add(USER_CORPUS, str(USER_CORPUS))
    add(BUNDLED_CORPUS, "the bundled corpus_fixtures/")
    return out


register_codes(__name__, "error", {
    "corpus": "`--corpus DIR` or `$RRSPLICE_CORPUS` names no directory"})


class CorpusNotFound(RRSpliceError):
    """`--corpus DIR` or `$RRSPLICE_CORPUS` names no directory."""

    code = "corpus"


def defines_entry(ptx: Path, entry: str, *, strict: bool = False) -> bool:
    """Cheap test (no parse): does the file declare `.entry ENTRY(`?"""
    from ..infra.fsutil import InputError, read_input
    try:
        data = read_input(ptx, what="PTX file")
    except InputError:
        if strict:          # the recipe's own module: why it cannot be read is the error
            raise
        return False
    return re.search(rb"\.entry\s+" + re.escape(entry.encode()) + rb"\s*\(", data) is not None


def resolve_module(recipe, corpus=None, *, any_module: bool = False
                   ) -> tuple[Path, str | None]:
    """Where the recipe's PTX module is, and a note when it is not simply the named file.

    `recipe` is a Recipe or a recipe path. A `file` with a directory part (`../x/m.ptx`,
    as `recipe new` records for a module outside the corpus) is first taken relative to
    the recipe. Then the name is looked up (absolute paths as they are) in `--corpus`,
    `$RRSPLICE_CORPUS`, `[tool.rrsplice] corpus`, `~/.cache/d4r-rr-corpus` and the bundled
    `corpus_fixtures/`, first hit wins. A module that is missing or does not define the
    recipe's entry is an error, unless fallback was asked for (`any_module`, or
    `ANY_MODULE = True` in the recipe): then the first module of those corpora, in name
    order, that defines the entry is used and the note says so.
    """
    rec = recipe if isinstance(recipe, Recipe) else load_recipe(recipe)
    dirs = corpus_dirs(corpus, rec.path.parent)
    name = Path(os.path.expanduser(rec.file))
    entry = rec.entry
    found: Path | None = None
    if name.is_absolute():
        if name.is_file():
            found = name
    else:
        has_dir = "/" in rec.file or os.sep in rec.file
        near = [(rec.path.parent, "the recipe's directory")] if has_dir else []
        for d, why in near + dirs:
            cand = d / name
            if cand.is_file():
                found, found_why, found_in = cand, why, d
                break
    if found is not None and (entry is None or defines_entry(found, entry, strict=True)):
        if (not name.is_absolute() and found_why.startswith("[tool.rrsplice]")
                and found_in.resolve() != BUNDLED_CORPUS.resolve()):
            return found, f"{rec.file} found through {found_why}"
        return found, None
    looked = ", ".join(f"{d} ({why})" for d, why in dirs if d.is_dir()) or "no corpus directory"
    fallback = any_module or rec.const("ANY_MODULE", False) is True
    if entry is not None and fallback:
        for d, why in dirs:
            if not d.is_dir():
                continue
            for cand in sorted(d.glob("*.ptx")):
                if cand.is_file() and defines_entry(cand, entry):
                    if found is not None:
                        note = (f"{found} does not define {entry}; using {cand} "
                                f"(from {why}), which does, as --any-module allows")
                    else:
                        note = (f"{rec.file} is not in the corpus; using {cand} (from {why}), "
                                f"which defines {entry}, as --any-module allows")
                    return cand, note
    if found is not None and entry is not None:
        raise ModuleNotFound(rec.path, f"{found} does not define {entry} (the entry named "
                             f"by {dict(rec.entry_candidates()).get(entry, 'the recipe')})"
                             + ("" if fallback else "; --any-module would use another "
                                "corpus module that does"), "file")
    raise ModuleNotFound(rec.path, f"module {rec.file!r} not found; looked in {looked}"
                         + ("" if entry is None or fallback else
                            "; --any-module would use a corpus module defining " + entry),
                         "file")
