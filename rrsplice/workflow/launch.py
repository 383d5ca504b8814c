"""Launch descriptions (`format: rrsplice-launch/1`): how a kernel is launched -- grid,
block, dynamic shared memory and its parameters -- read from JSON and checked, so that the
occupancy report (`recipe new --launch`) and the GPU differential harness
(`scripts/gpu_diff.py`) read one format the same way.

Parameters come in one of two forms:

* ``param_block``: ONE by-value struct parameter (the bundled swin kernels'), ``size``,
  ``align`` and ``fields`` at byte offsets inside it;
* ``params``: one entry per kernel parameter, in the entry's order (nvcc's plain
  signatures, Triton's kernels): ``{"name", "kind", ...}``.

A field or parameter's ``kind`` is a pointer to device memory (``buffer``: ``bytes``,
``fill``, ``role`` input|output|inout), a texture or surface object (64-bit handles), or a
scalar with a ``value`` (the SCALARS table). Only the format is checked here; the fills are
the harness's (it owns the random inputs).
"""

from __future__ import annotations

import builtins
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ..ptx.diagnostic import location, register_codes
from ..ptx.errors import RRSpliceError

FORMAT = "rrsplice-launch/1"

# scalar kind -> struct format (little-endian), as the driver API passes kernel arguments
SCALARS = {"u8": "<B", "i8": "<b", "u16": "<H", "i16": "<h", "u32": "<I", "i32": "<i",
           "u64": "<Q", "i64": "<q", "f32": "<f", "f64": "<d"}
# object kinds: a 64-bit device address or handle
OBJECTS = ("buffer", "texture", "surface")
ROLES = ("input", "output", "inout")


register_codes(__name__, "error", {
    "launch": "a launch description that cannot be read or used (not JSON, a bad key or "
              "value, overlapping parameters)"})


class LaunchError(RRSpliceError):
    """A launch description that cannot be used; names the file and the key."""

    code = "launch"

    def __init__(self, path, message: str, *, line: int | None = None,
                 column: int | None = None):
        self.path = str(path)
        super().__init__(message, path=path, line=line, column=column)

    def _text(self) -> str:
        d = self.diag
        return f"{location(d.path, d.line, d.column)}: {d.message}"


@dataclass
class Param:
    name: str
    kind: str                 # a SCALARS key or one of OBJECTS
    offset: int               # inside the by-value block (param_block form), else 0
    size: int                 # bytes the parameter takes
    raw: dict = field(default_factory=dict, repr=False)

    @property
    def is_buffer(self) -> bool:
        return self.kind == "buffer"

    @property
    def bytes(self) -> int:
        return int(self.raw.get("bytes", 0))

    @property
    def fill(self) -> str:
        return self.raw.get("fill", "zero")

    @property
    def role(self) -> str:
        return self.raw.get("role", "input")

    @property
    def bytes_before(self) -> int:
        """Bytes the kernel reads below the pointer it is given (allocated and filled too)."""
        return int(self.raw.get("bytes_before", 0))

    def scalar_bytes(self) -> builtins.bytes:
        """A scalar's value as the kernel receives it."""
        return struct.pack(SCALARS[self.kind], self.raw["value"])


@dataclass
class Launch:
    path: Path
    kernel: str | None
    grid: tuple
    block: tuple
    dynamic_shared_bytes: int
    params: list               # Param, in kernel-argument order (or block-offset order)
    block_size: int | None  # the by-value struct's size (param_block form), else None
    raw: dict = field(default_factory=dict, repr=False)

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def by_value_block(self) -> bool:
        return self.block_size is not None


def load_launch(path) -> Launch:
    """Read and check the launch description at `path`; LaunchError (naming the file, the
    line and column of a JSON error, or the key) otherwise."""
    from ..infra.fsutil import InputError, read_input
    try:
        data = read_input(path, what="launch description")
    except InputError as exc:
        raise LaunchError(exc.path, exc.message) from None
    try:
        desc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise LaunchError(path, f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise LaunchError(path, f"not JSON: {exc.msg}", line=exc.lineno,
                          column=exc.colno) from None
    return parse_launch(desc, path)


def parse_launch(desc, path="<launch>") -> Launch:
    """Check a decoded launch description (see the module docstring)."""
    def bad(msg):
        raise LaunchError(path, msg)

    if not isinstance(desc, dict):
        bad(f"expected a JSON object, got {type(desc).__name__}")
    if desc.get("format", FORMAT) != FORMAT:
        bad(f"format {desc.get('format')!r} is not {FORMAT!r}")
    dims = {}
    for key in ("grid", "block"):
        v = desc.get(key)
        if not (isinstance(v, list) and len(v) == 3
                and all(type(x) is int and x > 0 for x in v)):
            bad(f"{key!r} must be three positive integers, got {v!r}")
        dims[key] = tuple(v)
    dyn = desc.get("dynamic_shared_bytes", 0)
    if type(dyn) is not int or dyn < 0:
        bad(f"'dynamic_shared_bytes' must be a non-negative integer, got {dyn!r}")
    kernel = desc.get("kernel")
    if kernel is not None and not isinstance(kernel, str):
        bad(f"'kernel' must be a string, got {kernel!r}")
    if ("param_block" in desc) == ("params" in desc):
        bad("give exactly one of 'param_block' (one by-value struct) and 'params' (one "
            "entry per kernel parameter)")
    if "param_block" in desc:
        pb = desc["param_block"]
        if not isinstance(pb, dict) or type(pb.get("size")) is not int or pb["size"] <= 0:
            bad("'param_block' needs a positive integer 'size'")
        params = _params(pb.get("fields"), "param_block.fields", path, by_offset=pb["size"])
        size = pb["size"]
    else:
        params = _params(desc["params"], "params", path, by_offset=None)
        size = None
    return Launch(Path(str(path)), kernel, dims["grid"], dims["block"], dyn, params, size, desc)


def _params(items, where: str, path, by_offset: int | None) -> list:
    def bad(i, msg):
        raise LaunchError(path, f"{where}[{i}]: {msg}")

    if not isinstance(items, list):
        raise LaunchError(path, f"{where!r} must be a list")
    out, names = [], set()
    for i, f in enumerate(items):
        if not isinstance(f, dict):
            bad(i, "must be an object")
        name, kind = f.get("name"), f.get("kind")
        if not isinstance(name, str) or not name:
            bad(i, "needs a 'name'")
        if name in names:
            bad(i, f"{name!r} appears twice")
        names.add(name)
        if kind in OBJECTS:
            size = 8
        elif kind in SCALARS:
            size = struct.calcsize(SCALARS[kind])
            v = f.get("value")
            if kind.startswith("f"):
                ok = type(v) in (int, float)
            else:
                ok = type(v) is int
            if not ok:
                bad(i, f"{name}: a {kind} needs a numeric 'value', got {v!r}")
            try:
                struct.pack(SCALARS[kind], v)
            except struct.error:
                bad(i, f"{name}: {v!r} does not fit a {kind}")
        else:
            bad(i, f"{name}: unknown kind {kind!r} (one of "
                   + ", ".join(OBJECTS + tuple(SCALARS)) + ")")
        if kind == "buffer":
            b = f.get("bytes")
            if type(b) is not int or b <= 0:
                bad(i, f"{name}: a buffer needs a positive integer 'bytes', got {b!r}")
            if f.get("role", "input") not in ROLES:
                bad(i, f"{name}: role {f.get('role')!r} is not one of {', '.join(ROLES)}")
            if not isinstance(f.get("fill", "zero"), str):
                bad(i, f"{name}: 'fill' must be a name")
            before = f.get("bytes_before", 0)
            if type(before) is not int or before < 0 or before % 16:
                bad(i, f"{name}: 'bytes_before' (bytes read below the pointer) must be a "
                       f"non-negative multiple of 16, got {before!r}")
        off = 0
        if by_offset is not None:
            off = f.get("offset")
            if type(off) is not int or off < 0 or off % size or off + size > by_offset:
                bad(i, f"{name} at offset {off!r} does not fit the {by_offset}-byte "
                       f"parameter block with {size}-byte alignment")
        out.append(Param(name, kind, off, size, f))
    if by_offset is not None:
        spans = sorted(out, key=lambda p: p.offset)
        for a, b in zip(spans, spans[1:], strict=False):
            if a.offset + a.size > b.offset:
                raise LaunchError(path, f"{where}: {a.name} (offset {a.offset}) overlaps "
                                        f"{b.name} (offset {b.offset})")
    return out
