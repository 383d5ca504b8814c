"""GPU architecture names (`sm_89`, `sm_90a`, ...): which ones rrsplice accepts, and
whether a module's `.target` can be assembled for one.

ptxas compiles PTX for `.target sm_XY` to any `sm_MN` with MN >= XY; asking for a lower
one fails with three fatal lines, so rrsplice says so in one line before running it.
"""

from __future__ import annotations

import re

from ..ptx.diagnostic import register_codes
from ..ptx.errors import RRSpliceError

# the SASS architectures the CUDA 12/13 assemblers generate code for (facts, not policy)
KNOWN = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110,
         120, 121)
_ARCH = re.compile(r"^sm_(\d+)([af]?)$")


register_codes(__name__, "error", {
    "arch": "an unknown architecture, or one older than the module's `.target`"})


class ArchError(RRSpliceError):
    """An architecture name rrsplice does not know, or one a module cannot be built for."""

    code = "arch"


def arch_number(arch: str) -> int:
    """`sm_90a` -> 90; an unknown name is an ArchError naming the known ones."""
    m = _ARCH.match(arch or "")
    if m is None or int(m.group(1)) not in KNOWN:
        raise ArchError(f"unknown architecture {arch!r}: use one of "
                        + ", ".join(f"sm_{n}" for n in KNOWN))
    return int(m.group(1))


def module_arch(module) -> str | None:
    """The `sm_XX` of a module's `.target` directive (None if it has none)."""
    target = module.target or ""
    m = re.search(r"\bsm_\d+[af]?\b", target)
    return m.group(0) if m else None


def check_buildable(arch: str, target: str | None, path, option: str = "--arch") -> None:
    """Raise one clear line when `target` PTX cannot be assembled for `arch`; `option` is
    the command-line option that asked for it (`--arch` for verify, `--ptxas` for apply)."""
    want = arch_number(arch)
    if target is None:
        return
    have = arch_number(target)
    if want < have:
        raise ArchError(f"the module's .target is {target}; ptxas cannot assemble it "
                        f"for {arch} (only for {target} or newer): "
                        + (f"leave --arch out to use {target}" if option == "--arch" else
                           f"use {option} {target} or newer"), path=path)
