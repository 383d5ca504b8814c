"""A small reference interpreter for the integer / predicate / move / load / store / branch
subset of PTX that the outliner oracle's generator emits (tests/test_outline_oracle.py).

It runs one thread of a parsed function: registers hold Python ints masked to their
opcode's width, predicates hold bools, memory is a dict per state space keyed by byte
address (4-byte words; `.param` keyed by (name, offset)). Its semantics are written from
the PTX ISA, independently of rrsplice's def/use tables: it is the ground truth the
outlined body is compared against. Anything outside the subset raises `Unsupported`, so
the oracle never silently compares a program the interpreter does not understand.
A vector register (`.reg .v2 .b32 %v`) is its elements, `%v.x`, `%v.y`, ...: an element
operand names one, and a `.v2`/`.v4` load or store of the whole register moves them all.

Generic addressing: a machine with `windows` ({space: (first address, bytes)}, the state
spaces' windows in the generic address space, disjoint) sends a load or store without a
state space to the space whose window holds the address, and `cvta` checks that the
address it converts lies in the window of the space it names (the generic address of a
byte is its window address: the windows are where the host harness maps the spaces). An
address in no window, or a cvta outside its space's window, is an error, never a guess.
Without windows, generic is global (the outliner oracle's programs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rrsplice.ptx.model import Address, Element, Imm, Negated, Reg, Symbol, Vector


class Unsupported(Exception):
    pass


class Returned(Exception):
    """The thread executed `ret`."""


_W = {"u32": 32, "s32": 32, "b32": 32, "u64": 64, "s64": 64, "b64": 64, "pred": 1,
      "u16": 16, "s16": 16, "b16": 16, "u8": 8, "s8": 8, "b8": 8}
_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
        "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b, "hi": lambda a, b: a > b,
        "hs": lambda a, b: a >= b}
# two-source integer operations: (a, b, width) -> result before masking
_BIN = {"add": lambda a, b, w: a + b, "sub": lambda a, b, w: a - b,
        "mul": lambda a, b, w: a * b, "and": lambda a, b, w: a & b,
        "or": lambda a, b, w: a | b, "xor": lambda a, b, w: a ^ b,
        "shl": lambda a, b, w: a << min(b, w), "shr": lambda a, b, w: a >> min(b, w),
        "min": lambda a, b, w: min(a, b), "max": lambda a, b, w: max(a, b),
        # rem/div truncate toward zero (PTX ISA 9.7.1.8/9): the sign of the dividend
        "rem": lambda a, b, w: (abs(a) % abs(b)) * (-1 if a < 0 else 1),
        "div": lambda a, b, w: (abs(a) // abs(b)) * (-1 if (a < 0) != (b < 0) else 1)}


def _signed(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


@dataclass
class Machine:
    """One thread's state: registers, memory by state space, special registers, and the
    addresses of module/entry symbols (`smem`, `ctab`) and kernel parameter values."""
    regs: dict = field(default_factory=dict)
    mem: dict = field(default_factory=lambda: {"global": {}, "shared": {}, "const": {},
                                               "param": {}, "local": {}})
    special: dict = field(default_factory=lambda: {"%tid.x": 5, "%laneid": 5, "%ntid.x": 32})
    symbols: dict = field(default_factory=dict)      # name -> (space, address)
    windows: dict = field(default_factory=dict)      # space -> (first address, bytes)
    steps: int = 0

    def window_of(self, a: int) -> str:
        """The state space whose generic window holds address `a`."""
        for sp, (first, n) in self.windows.items():
            if first <= a < first + n:
                return sp
        raise Unsupported(f"generic address {a:#x} is in no state space's window")

    def in_window(self, space: str, a: int, what: str) -> None:
        if self.windows and self.window_of(a) != space:
            raise Unsupported(f"{what}: {a:#x} is not in the .{space} window")

    # ---------------------------------------------------------------- operands
    def value(self, op, width: int, signed: bool = False) -> int:
        if isinstance(op, Imm):
            if op.kind_name != "int":
                raise Unsupported(f"immediate {op}")
            v = op.value
        elif isinstance(op, Reg):
            if op.special:
                if op.name not in self.special:
                    raise Unsupported(f"special register {op.name}")
                v = self.special[op.name]
            else:
                if op.name not in self.regs:
                    raise KeyError(f"{op.name} read before any write")
                v = self.regs[op.name]
        elif isinstance(op, Element) and not op.reg.special:
            name = f"{op.reg.name}.{op.elem}"
            if name not in self.regs:
                raise KeyError(f"{name} read before any write")
            v = self.regs[name]
        elif isinstance(op, Symbol):
            if op.name not in self.symbols:
                raise Unsupported(f"symbol {op.name}")
            v = self.symbols[op.name][1]
        elif isinstance(op, Negated):
            return int(not self.pred(op.reg))
        else:
            raise Unsupported(f"operand {op!r}")
        v &= (1 << width) - 1
        return _signed(v, width) if signed else v

    def pred(self, reg) -> bool:
        if reg.name not in self.regs:
            raise KeyError(f"{reg.name} read before any write")
        return bool(self.regs[reg.name])

    def write(self, op, v: int, width: int) -> None:
        if isinstance(op, Element) and not op.reg.special:
            self.regs[f"{op.reg.name}.{op.elem}"] = v & ((1 << width) - 1)
            return
        if not isinstance(op, Reg) or op.special:
            raise Unsupported(f"destination {op!r}")
        self.regs[op.name] = v & ((1 << width) - 1)

    def address(self, op: Address, space: str) -> tuple:
        """(space, key) of an address operand."""
        base = op.base
        if isinstance(base, Symbol):
            sp, a = self.symbols.get(base.name, (None, None))
            if sp is None:
                raise Unsupported(f"address of {base.name}")
            if sp == "param":
                return "param", (base.name, op.offset)
            return sp, a + op.offset
        if isinstance(base, Reg):
            a = self.value(base, 64)
        elif base is None:
            a = 0
        else:
            raise Unsupported(f"address {op}")
        return space, a + op.offset

    def load(self, space: str, key, width: int) -> int:
        m = self.mem[space]
        if isinstance(m, ByteMemory):
            return m.read(key, width)
        if key not in m:
            raise KeyError(f"{space} memory at {key} never written")
        return m[key] & ((1 << width) - 1)

    def store(self, space: str, key, v: int, width: int) -> None:
        m = self.mem[space]
        if isinstance(m, ByteMemory):
            m.write(key, v, width)
            return
        m[key] = v & ((1 << width) - 1)


class ByteMemory:
    """A state space as bytes (the host harness's arena: `data` from address `base`): an
    access of any width reads or writes its bytes, little-endian; outside is an error."""

    def __init__(self, data, base: int):
        self.data, self.base = bytearray(data), base

    def _at(self, a: int, width: int) -> int:
        n = max(width // 8, 1)
        off = a - self.base
        if off < 0 or off + n > len(self.data) or off % n:
            raise Unsupported(f"a {n}-byte access at {a:#x} outside the memory or unaligned")
        return off

    def read(self, a: int, width: int) -> int:
        off = self._at(a, width)
        return int.from_bytes(self.data[off:off + max(width // 8, 1)], "little")

    def write(self, a: int, v: int, width: int) -> None:
        off = self._at(a, width)
        n = max(width // 8, 1)
        self.data[off:off + n] = (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")


def _type(mods) -> tuple:
    for m in reversed(mods):
        if m in _W:
            return _W[m], m[0] == "s", m
    raise Unsupported(f"no type in .{'.'.join(mods)}")


def _space(mods) -> str | None:
    """The state space an ld/st names; None: generic."""
    for m in mods:
        m = m.split("::")[0]
        if m in ("global", "shared", "const", "param", "local"):
            return m
    return None


def _resolve(m: Machine, space: str | None, sp: str, key):
    """(space, key) of an access: a generic one goes to the window holding its address
    (global without windows); a named space must hold the address when windows are set."""
    if space is None:
        return (m.window_of(key), key) if m.windows else ("global", key)
    if sp == space and space in m.windows:
        m.in_window(space, key, f".{space} access")
    return sp, key


def run(fn, machine: Machine, first: int = 1, last: int = None, max_steps: int = 10000,
        branch_out: bool = False) -> str:
    """Execute statements `first`..`last` of `fn` (1-based, inclusive) from `first`.
    Returns "exit" when control leaves `last` by falling through, "ret" when the thread
    executes `ret`. A branch to a label outside first..last is an error (Unsupported),
    unless `branch_out`: then it returns "exit:LABEL" (a region's early exit)."""
    stmts = fn.statements
    last = len(stmts) if last is None else last
    labels = {st.label: st.index for st in stmts if st.is_label}
    i = first
    while i <= last:
        machine.steps += 1
        if machine.steps > max_steps:
            raise Unsupported("too many steps")
        st = stmts[i - 1]
        i += 1
        if st.is_label:
            continue
        if st.guard is not None:
            p = machine.pred(st.guard.reg)
            if p == st.guard.negated:
                continue
        base = st.base
        mods = st.modifiers
        ops = st.operands
        if base == "ret":
            return "ret"
        if base == "bra":
            target = labels[ops[0].name]
            if not first <= target <= last:
                if branch_out:
                    return f"exit:{ops[0].name}"
                raise Unsupported(f"branch to {ops[0].name} outside s{first}-s{last}")
            i = target
            continue
        _execute(st, base, mods, ops, machine)
    return "exit"


def _parts(op, mods):
    """The element operands a vector load/store moves (`{%a, %b}`, or a vector register's
    `%v.x`, `%v.y`, ...), or None for a scalar one."""
    if isinstance(op, Vector):
        return list(op.items)
    n = 2 if "v2" in mods else 4 if "v4" in mods else 0
    if n and isinstance(op, Reg) and not op.special:
        return [Element(op, "xyzw"[k]) for k in range(n)]
    return None


def _execute(st, base, mods, ops, m: Machine) -> None:
    if base in ("ld", "ldu"):
        w, _, _ = _type(mods)
        space = _space(mods)
        sp, key = _resolve(m, space, *m.address(ops[1], space or "global"))
        step = 8 if w == 64 else 4
        parts = _parts(ops[0], mods)
        if parts is not None:
            for k, r in enumerate(parts):
                kk = (key[0], key[1] + step * k) if sp == "param" else key + step * k
                m.write(r, m.load(sp, kk, w), w)
        else:
            m.write(ops[0], m.load(sp, key, w), w)
        return
    if base == "st":
        w, _, _ = _type(mods)
        space = _space(mods)
        sp, key = _resolve(m, space, *m.address(ops[0], space or "global"))
        step = 8 if w == 64 else 4
        parts = _parts(ops[1], mods)
        if parts is not None:
            for k, r in enumerate(parts):
                kk = (key[0], key[1] + step * k) if sp == "param" else key + step * k
                m.store(sp, kk, m.value(r, w), w)
        else:
            m.store(sp, key, m.value(ops[1], w), w)
        return
    if base == "setp":
        w, signed, _ = _type(mods)
        cmp = next((c for c in mods if c in _CMP), None)
        if cmp is None or len(ops) != 3:
            raise Unsupported(st.text)
        a, b = m.value(ops[1], w, signed), m.value(ops[2], w, signed)
        m.write(ops[0], int(_CMP[cmp](a, b)), 1)
        return
    if base == "selp":
        w, _, _ = _type(mods)
        m.write(ops[0], m.value(ops[1], w) if m.value(ops[3], 1) else m.value(ops[2], w), w)
        return
    if base == "mov":
        w, _, _ = _type(mods)
        if isinstance(ops[0], Reg) and w == 1:
            m.write(ops[0], m.value(ops[1], 1), 1)
        else:
            m.write(ops[0], m.value(ops[1], w), w)
        return
    if base == "cvta":
        w, _, _ = _type(mods)
        v = m.value(ops[1], w)
        space = _space(mods)
        if space is None:
            raise Unsupported(st.text)
        # a generic address is its window address: the conversion checks the window (the
        # parameter block lies in the global window, where the harness put it)
        m.in_window("global" if space == "param" else space, v, st.text.strip())
        m.write(ops[0], v, w)
        return
    if base == "cvt":
        dw, ds, _ = _type(mods[:-1]) if len([x for x in mods if x in _W]) == 2 else _type(mods)
        types = [x for x in mods if x in _W]
        if len(types) != 2:
            raise Unsupported(st.text)
        sw, ss = _W[types[1]], types[1][0] == "s"
        m.write(ops[0], m.value(ops[1], sw, ss), _W[types[0]])
        return
    if base == "not":
        w, _, _ = _type(mods)
        if w == 1:
            m.write(ops[0], int(not m.value(ops[1], 1)), 1)
        else:
            m.write(ops[0], ~m.value(ops[1], w), w)
        return
    if base == "mad":
        w, signed, _ = _type(mods)
        if "lo" not in mods:
            raise Unsupported(st.text)
        a, b, c = (m.value(o, w, signed) for o in ops[1:4])
        m.write(ops[0], a * b + c, w)
        return
    if base == "mul" and "wide" in mods:
        # the full product of two w-bit sources, written 2w bits wide (PTX ISA 9.7.1.4)
        w, signed, _ = _type(mods)
        m.write(ops[0], m.value(ops[1], w, signed) * m.value(ops[2], w, signed), 2 * w)
        return
    if base in _BIN:
        w, signed, _ = _type(mods)
        if base == "mul" and "lo" not in mods:
            raise Unsupported(st.text)
        if base in ("and", "or", "xor") and w == 1:
            a, b = m.value(ops[1], 1), m.value(ops[2], 1)
        else:
            sg = signed and base in ("min", "max", "shr", "rem", "div")
            a = m.value(ops[1], w, sg)
            b = m.value(ops[2], 32 if base in ("shl", "shr") else w, sg and base != "shr")
        m.write(ops[0], _BIN[base](a, b, w), w)
        return
    raise Unsupported(st.text)
