"""Target profiles: the constructs a target rejects, as a table of lints.

A splice is consumed by a target: ``ptxas`` (NVIDIA's assembler, for outline/verify and GPU
runs of PTX bodies) or ``zluda`` (the users' translator, linking a native C++/HIP body). Some
constructs are fine for one and fatal for the other, so each lint says, per profile, how
severe it is. Adding a lint is one entry: a function decorated with :func:`lint` in a module
that :data:`LINT_MODULES` names (``rrsplice/check/zluda.py`` holds ZLUDA's)::

    @lint("param-return", zluda="error")
    def _param_return(rep):
        "ZLUDA lowers call returns to an LLVM return value a C++ body cannot produce."
        for ...:
            yield Diagnostic(message="extern declares ...", line=3)

A lint yields :class:`~rrsplice.ptx.diagnostic.Diagnostic` objects with the message and, where
known, the place (``**at(st)`` for a statement); the profile fills in code and severity. The
first sentence of the docstring is the code's description in docs/diagnostics.md.

A recipe's default profile: its ``TARGET`` constant; else ``zluda`` when it declares a native
body (a ``BODY`` constant naming the body's source); else ``ptxas``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ..ptx.diagnostic import register_codes
from ..ptx.errors import RRSpliceError

PROFILES = ("ptxas", "zluda")
DEFAULT_PROFILE = "ptxas"
# modules whose import registers lints (imported once, on first use)
LINT_MODULES = ("zluda",)


@dataclass(frozen=True)
class Lint:
    code: str
    severity: dict            # profile -> "error" | "warning" | "info"
    run: Callable             # (Report) -> Iterable[Diagnostic]
    why: str = ""


LINTS: list = []
_loaded = False


class UnknownTarget(RRSpliceError):
    """`--target` names no profile."""


def lint(code: str, **severity: str):
    """Register the decorated function as lint `code`, with a severity per profile."""
    bad = [p for p in severity if p not in PROFILES]
    if bad:
        raise ValueError(f"lint {code}: unknown profile(s) {bad}; known: {PROFILES}")

    def deco(fn):
        why = (fn.__doc__ or "").strip()
        LINTS.append(Lint(code, dict(severity), fn, why))
        register_codes(fn.__module__, "lint", {code: first_sentence(why)})
        return fn
    return deco


def first_sentence(text: str) -> str:
    """The first sentence of `text`, on one line."""
    one = " ".join(text.split())
    end = one.find(". ")
    return one if end < 0 else one[:end + 1]


def lints() -> list:
    """Every registered lint (the lint modules are imported on first call)."""
    global _loaded
    if not _loaded:
        for name in LINT_MODULES:
            importlib.import_module(f"{__package__}.{name}")
        _loaded = True
    return list(LINTS)


def profile_lints(profile: str) -> list:
    """(lint, severity) of every lint active in `profile`."""
    check_profile(profile)
    return [(x, x.severity[profile]) for x in lints() if profile in x.severity]


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise UnknownTarget(f"unknown target {profile!r} (known: "
                            + ", ".join(PROFILES) + ")")
    return profile


def default_profile(recipe) -> str:
    """The recipe's own target: TARGET, else zluda when it declares a native BODY."""
    t = recipe.const("TARGET")
    if isinstance(t, str) and t in PROFILES:
        return t
    if recipe.const("BODY"):
        return "zluda"
    return DEFAULT_PROFILE


def run_profile(rep, profile: str) -> None:
    """Add the findings of every lint of `profile` to report `rep`."""
    for x, sev in profile_lints(profile):
        hits: Iterable = x.run(rep) or ()
        for h in hits:
            rep.append(replace(h, severity=sev, code=x.code))
