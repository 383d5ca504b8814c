"""C++ names for what the body's source declares, so a recipe's names cannot break it.

The `.extern`'s parameter names become the body's parameters; any PTX identifier is one
(`int`, `new`, `lane`, `$x`), but in C++ a keyword, a name the body declares itself (`tid`,
`lane`, `img`, `slot`, `d_s<N>`, the image array, the row-size macro), a name of
`rr_mma.h` (`rr_*`, `RR_*`), a reserved identifier (`_X...`, `__...`) or `main` does not
compile. Such a parameter is renamed (`arg<i>_<name>`; only its position matters to the
ABI). The callee is the link symbol and cannot be renamed: a callee C++ cannot name is an
error. Keywords: ISO C++20 [lex.key] and the alternative tokens [lex.digraph].
"""

from __future__ import annotations

import re

CPP_KEYWORDS = frozenset("""
alignas alignof asm auto bool break case catch char char8_t char16_t char32_t class concept
const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
default delete do double dynamic_cast else enum explicit export extern false float for friend
goto if inline int long mutable namespace new noexcept nullptr operator private protected
public register reinterpret_cast requires return short signed sizeof static static_assert
static_cast struct switch template this thread_local throw true try typedef typeid typename
union unsigned using virtual void volatile wchar_t while
and and_eq bitand bitor compl not not_eq or or_eq xor xor_eq
""".split())

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def unusable(name: str, taken=frozenset()) -> str | None:
    """Why `name` cannot be a C++ name in the body, or None."""
    if not _IDENT.match(name):
        return "is not a C++ identifier"
    if name in CPP_KEYWORDS:
        return "is a C++ keyword"
    if name == "main":
        return "is C++'s program entry point"
    if name.startswith("__") or re.match(r"_[A-Z]", name):
        return "is reserved to the C++ implementation"
    if name.lower().startswith("rr_"):
        return "is in the namespace of the body's header (rr_*)"
    if name in taken:
        return "is a name the body declares itself"
    return None


def body_locals(callee: str, step_vars) -> set:
    """The names the generated body declares besides its parameters."""
    return {"tid", "lane", "img", "slot", callee, f"{callee}_a_image",
            f"{callee.upper()}_LDA", *step_vars}


def parameter_names(names: list, taken: set) -> list:
    """A C++ name for each parameter (in order): the `.extern`'s own when it is usable,
    else `arg<i>_<name with other characters as _>`, unique among all of them."""
    used = set(taken)
    keep = {n for n in names if unusable(n, taken) is None}
    out = []
    for i, n in enumerate(names):
        if n in keep and n not in used:
            c = n
        else:
            c = f"arg{i}_" + re.sub(r"[^A-Za-z0-9_]", "_", n)
            while c in used or c in keep or unusable(c, taken) is not None:
                c += "_"
        used.add(c)
        out.append(c)
    return out
