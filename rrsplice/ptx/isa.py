"""The opcode registry: every per-opcode fact rrsplice uses, for every instruction of the PTX
ISA's instruction index (ISA 9.0, chapter "Instructions"), as data.

Each row of `_TABLE` is one opcode family -- a base opcode (`add`) or a base with leading
modifiers where the forms differ (`bar.red` writes a register, `bar.sync` does not):

    key   section   roles   flags

*roles* is the operand-role pattern rrsplice.analysis.semantics expands (one letter per operand;
`*` repeats the letter for the rest):

    D  written (every register of a `{...}` list; both halves of `%r|%p`; `_` nothing)
    U  read            M  read and written (an accumulator updated in place)
    A? all read when the first operand is an address (a memory destination), else `D U*`

Registers inside an address (`[%rd9+16]`, `[tex, {%f1, %f2}]`) are always reads.

*flags*:

    term       ends a basic block (no fall-through when unguarded)
    pure       the result depends on the operands alone: the outliner may recompute it
    int        integer evaluation (`_EVAL`): provenance and the race check compute it
    addr       a symbol's address flows through it (provenance.symbol_uses)
    read write atomic copy prefetch   its memory effect (`copy`: the first address is
               written, the others read); the state space comes from the modifiers
               (`state_space`)
    carry      reads the carry flag (`addc`); any opcode with `.cc` writes it
    barrier=K  a barrier or fence of kind K: block, warp, cluster, fence, async (waits for
               asynchronous operations), warpgroup
    async      starts an asynchronous operation (completes later, behind a barrier/wait)

Lookup (`family_key`) takes the longest dotted prefix of the opcode found in the table, so
`cp.async.bulk.tensor.2d.shared::cluster.global.tile` is `cp.async.bulk.tensor`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import overload

# ---------------------------------------------------------------- the table

_TABLE = """
# integer arithmetic
add          integer           D U*     pure int addr
sub          integer           D U*     pure int addr
mul          integer           D U*     pure int
mad          integer           D U*     pure int addr
mul24        integer           D U*     pure
mad24        integer           D U*     pure
sad          integer           D U*     pure
div          integer           D U*     pure
rem          integer           D U*     pure
abs          integer           D U*     pure
neg          integer           D U*     pure int
min          integer           D U*     pure
max          integer           D U*     pure
popc         integer           D U*     pure
clz          integer           D U*     pure
bfind        integer           D U*     pure
fns          integer           D U*     pure
brev         integer           D U*     pure
bfe          integer           D U*     pure
bfi          integer           D U*     pure
szext        integer           D U*     pure
bmsk         integer           D U*     pure
dp4a         integer           D U*     pure
dp2a         integer           D U*     pure
# extended precision (add.cc / sub.cc / mad.cc write the carry: any `.cc` does)
addc         extended          D U*     carry
subc         extended          D U*     carry
madc         extended          D U*     carry
# floating point, half precision, mixed precision
testp        floating          D U*     pure
copysign     floating          D U*     pure
fma          floating          D U*     pure
rcp          floating          D U*     pure
sqrt         floating          D U*     pure
rsqrt        floating          D U*     pure
sin          floating          D U*     pure
cos          floating          D U*     pure
lg2          floating          D U*     pure
ex2          floating          D U*     pure
tanh         floating          D U*     pure
# comparison and selection (setp/set may write `%p|%q`)
set          comparison        D U*     pure
setp         comparison        D U*     pure
selp         comparison        D U*     pure addr
slct         comparison        D U*     pure
# logic and shift
and          logic             D U*     pure int addr
or           logic             D U*     pure int addr
xor          logic             D U*     pure int addr
not          logic             D U*     pure
cnot         logic             D U*     pure
lop3         logic             D U*     pure
shf          logic             D U*     pure
shl          logic             D U*     pure int
shr          logic             D U*     pure int
# data movement and conversion
mov          data              D U*     pure int addr
shfl         data              D U*
prmt         data              D U*     pure
ld           data              D U*     read
ldu          data              D U*     read
st           data              U*       write
st.async     data              U*       write async
st.bulk      data              U*       write
multimem.ld_reduce data        D U*     read
multimem.st  data              U*       write
multimem.red data              U*       atomic
multimem.cp  data              U*       copy async
prefetch     data              U*       prefetch
prefetchu    data              U*       prefetch
applypriority data             U*
discard      data              U*       write
createpolicy data              D U*     pure
isspacep     data              D U*     pure
cvta         data              D U*     pure int addr
cvt          data              D U*     pure int addr
cvt.pack     data              D U*     pure
mapa         data              D U*     pure
getctarank   data              D U*     pure
cp.async     data              U*       copy async
cp.async.commit_group data     U*       barrier=async
cp.async.wait_group data       U*       barrier=async
cp.async.wait_all data         U*       barrier=async
cp.async.mbarrier data         U*       barrier=async
cp.async.bulk data             U*       copy async
cp.async.bulk.prefetch data    U*       prefetch async
cp.async.bulk.tensor data      U*       copy async
cp.async.bulk.prefetch.tensor data U*   prefetch async
cp.async.bulk.commit_group data U*      barrier=async
cp.async.bulk.wait_group data  U*       barrier=async
cp.reduce.async.bulk data      U*       atomic async
cp.reduce.async.bulk.tensor data U*     atomic async
tensormap    data              U*       write
tensormap.cp_fenceproxy data   U*       copy barrier=fence
ldmatrix     data              D U*     read
stmatrix     data              U*       write
movmatrix    data              D U*
clusterlaunchcontrol data      U*       write async
clusterlaunchcontrol.query_cancel data D U* pure
# textures and surfaces
tex          texture           D U*     read
tld4         texture           D U*     read
txq          texture           D U*
istypep      texture           D U*     pure
suld         surface           D U*     read
sust         surface           U*       write
sured        surface           U*       atomic
suq          surface           D U*
# control flow
bra          control           U*       term
brx          control           U*       term
call         control           U*
ret          control           U*       term
exit         control           U*       term
# parallel synchronization and communication
bar          sync              U*       barrier=block
barrier      sync              U*       barrier=block
bar.sync     sync              U*       barrier=block
bar.arrive   sync              U*       barrier=block
bar.red      sync              D U*     barrier=block
barrier.red  sync              D U*     barrier=block
bar.warp     sync              U*       barrier=warp
barrier.cluster sync           U*       barrier=cluster
membar       sync              U*       barrier=fence
fence        sync              U*       barrier=fence
atom         sync              D U*     atomic
red          sync              U*       atomic
red.async    sync              U*       atomic async
vote         sync              D U*
match        sync              D U*
activemask   sync              D U*
redux        sync              D U*
griddepcontrol sync            U*
elect        sync              D U*
mbarrier     sync              A?       atomic barrier=async
setmaxnreg   sync              U*
# warp-level matrix multiply-accumulate
wmma.load    warp-matrix       D U*     read
wmma.store   warp-matrix       U*       write
wmma.mma     warp-matrix       D U*
mma          warp-matrix       D U*
# asynchronous warpgroup matrix multiply-accumulate
wgmma.mma_async warpgroup-matrix M U*   read async
wgmma.fence  warpgroup-matrix  U*       barrier=warpgroup
wgmma.commit_group warpgroup-matrix U*  barrier=async
wgmma.wait_group warpgroup-matrix U*    barrier=async
# tensor core 5th generation (tcgen05)
tcgen05.alloc tcgen05          U*       write
tcgen05.dealloc tcgen05        U*
tcgen05.relinquish_alloc_permit tcgen05 U*
tcgen05.ld   tcgen05           D U*     read
tcgen05.st   tcgen05           U*       write
tcgen05.wait tcgen05           U*       barrier=async
tcgen05.cp   tcgen05           U*       copy async
tcgen05.shift tcgen05          U*       write async
tcgen05.mma  tcgen05           U*       write async
tcgen05.fence tcgen05          U*       barrier=fence
tcgen05.commit tcgen05         U*       barrier=async
# stack manipulation
stacksave    stack             D U*
stackrestore stack             U*
alloca       stack             D U*
# video (scalar and SIMD)
vadd         video             D U*     pure
vsub         video             D U*     pure
vabsdiff     video             D U*     pure
vmin         video             D U*     pure
vmax         video             D U*     pure
vshl         video             D U*     pure
vshr         video             D U*     pure
vmad         video             D U*     pure
vset         video             D U*     pure
vadd2        video             D U*     pure
vsub2        video             D U*     pure
vavrg2       video             D U*     pure
vabsdiff2    video             D U*     pure
vmin2        video             D U*     pure
vmax2        video             D U*     pure
vset2        video             D U*     pure
vadd4        video             D U*     pure
vsub4        video             D U*     pure
vavrg4       video             D U*     pure
vabsdiff4    video             D U*     pure
vmin4        video             D U*     pure
vmax4        video             D U*     pure
vset4        video             D U*     pure
# miscellaneous
brkpt        misc              U*
nanosleep    misc              U*
pmevent      misc              U*
trap         misc              U*       term
"""


def _shr(x: int, y: int) -> int:
    if y < 0 or x < 0:
        raise ValueError("shift of a negative value or by a negative count")
    return x >> y


def _shl(x: int, y: int) -> int:
    if y < 0:
        raise ValueError("shift by a negative count")
    return x << y


#: integer evaluation of the `int` rows: opcode -> function of the source values (the
#: callers decline `.hi` products, carries and floating-point types first)
_EVAL: dict = {
    "mov": lambda a: a, "cvt": lambda a: a, "cvta": lambda a: a,
    "neg": lambda a: -a,
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "mad": lambda a, b, c: a * b + c,
    "shl": _shl, "shr": _shr,
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
}


@dataclass(frozen=True)
class OpInfo:
    """Everything rrsplice knows about one opcode family."""
    key: str
    section: str
    roles: str
    terminator: bool = False
    pure: bool = False
    evaluate: Callable | None = None
    address_arith: bool = False
    memory: str = ""            # read | write | atomic | copy | prefetch | ""
    carry_in: bool = False
    barrier: str = ""           # block | warp | cluster | fence | async | warpgroup | ""
    is_async: bool = False


def _parse_table(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, section, *rest = line.split()
        roles = []
        while rest and (rest[0][0] in "DUMA" and rest[0].rstrip("*?") in "DUMA"
                        and len(rest[0].rstrip("*?")) == 1):
            roles.append(rest.pop(0))
        flags = set(rest)
        memory = next((f for f in ("read", "write", "atomic", "copy", "prefetch")
                       if f in flags), "")
        barrier = next((f.split("=", 1)[1] for f in flags if f.startswith("barrier=")), "")
        base = key.split(".", 1)[0]
        if "int" in flags and base not in _EVAL:
            raise ValueError(f"{key}: marked int but has no evaluation")
        out[key] = OpInfo(key=key, section=section, roles=" ".join(roles),
                          terminator="term" in flags, pure="pure" in flags,
                          evaluate=_EVAL[base] if "int" in flags else None,
                          address_arith="addr" in flags, memory=memory,
                          carry_in="carry" in flags, barrier=barrier,
                          is_async="async" in flags)
    return out


REGISTRY: dict = _parse_table(_TABLE)

# ---------------------------------------------------------------- derived views

#: opcode family -> role pattern (rrsplice.analysis.semantics)
ROLES: dict = {k: v.roles for k, v in REGISTRY.items()}
#: base opcodes that end a basic block
TERMINATORS = frozenset(k for k, v in REGISTRY.items() if v.terminator)
#: base opcodes the outliner may recompute from their operands (per thread: no
#: warp-collective or carry-reading opcode)
PURE = frozenset(k for k, v in REGISTRY.items() if v.pure and "." not in k)
#: base opcodes with an integer evaluation (provenance, race check)
INT_EVAL = {k: v.evaluate for k, v in REGISTRY.items() if v.evaluate is not None}
#: base opcodes through which a symbol's address flows (symbol_uses)
ADDRESS_ARITH = frozenset(k for k, v in REGISTRY.items() if v.address_arith)
#: base opcodes that read the carry flag
CARRY_READERS = frozenset(k for k, v in REGISTRY.items() if v.carry_in)
#: opcode families by memory effect
MEMORY: dict = {k: v.memory for k, v in REGISTRY.items() if v.memory}

#: opcodes of a whole-block barrier (a thread-count operand makes it a partial one)
BLOCK_BARRIERS = ("bar.sync", "barrier.sync", "bar.cta.sync", "barrier.cta.sync")

_STATE_SPACES = ("global", "shared", "local", "param", "const", "tex")

_FAMILY_CACHE: dict = {}


def family_key(opcode: str | None) -> str | None:
    """The registry key covering `opcode` (longest dotted prefix), or None."""
    if opcode is None:
        return None
    try:
        return _FAMILY_CACHE[opcode]
    except KeyError:
        pass
    parts = opcode.replace("::", ".").split(".")
    fam = None
    for n in range(min(len(parts), 5), 0, -1):
        key = ".".join(parts[:n])
        if key in REGISTRY:
            fam = key
            break
    _FAMILY_CACHE[opcode] = fam
    return fam


def info(opcode: str | None) -> OpInfo | None:
    """The registry row of `opcode`, or None when the ISA index has no such instruction."""
    key = family_key(opcode)
    return REGISTRY[key] if key is not None else None


def memory_effect(opcode: str | None) -> str:
    """read | write | atomic | copy | prefetch, or "" for no memory access."""
    row = info(opcode)
    return row.memory if row is not None else ""


def state_space(opcode: str) -> str | None:
    """The state space an access names (`ld.shared::cta.u32` -> "shared"); "generic" for a
    memory access that names none; None for an opcode without memory effect."""
    if not memory_effect(opcode):
        return None
    for part in opcode.replace("::", ".").split(".")[1:]:
        if part in _STATE_SPACES:
            return part
    return "generic"


# ---------------------------------------------------------------- the type table

# Every fundamental and packed type of the PTX ISA (9.0, 5.2 "Types", 5.2.1 "Fundamental
# Types", 5.2.2 "Restricted Use of Sub-Word Sizes", 5.2.3 "Alternate Floating-Point Data
# Formats", 5.2.4 "Packed Data Types"), one row each:
#
#     name   kind   bits   [lanes]
#
# *kind* is signed | unsigned | bits | float | pred; *bits* the width of the whole value
# (a packed type's two or four elements together); *lanes* the element count of a packed
# type (1 when absent). `.pred` is one bit of state: it has no memory size (`bytes` 0; a
# `.pred` passed through memory is widened by whoever stores it).
_TYPES = """
pred     pred      1
b8       bits      8
b16      bits      16
b32      bits      32
b64      bits      64
b128     bits      128
u8       unsigned  8
u16      unsigned  16
u32      unsigned  32
u64      unsigned  64
s8       signed    8
s16      signed    16
s32      signed    32
s64      signed    64
f16      float     16
f32      float     32
f64      float     64
bf16     float     16
tf32     float     32
f16x2    float     32    2
bf16x2   float     32    2
e4m3     float     8
e5m2     float     8
e4m3x2   float     16    2
e5m2x2   float     16    2
e4m3x4   float     32    4
e5m2x4   float     32    4
e2m3x2   float     16    2
e3m2x2   float     16    2
e2m1x2   float     8     2
e2m1x4   float     16    4
ue8m0x2  unsigned  16    2
s2f6x2   signed    16    2
"""


@dataclass(frozen=True)
class PtxType:
    """One PTX type: `.f16x2` is PtxType("f16x2", "float", 32, 2)."""
    name: str           # without the dot
    kind: str           # signed | unsigned | bits | float | pred
    bits: int           # the whole value
    lanes: int = 1      # elements of a packed type

    @property
    def bytes(self) -> int:
        """Bytes in memory (0 for `.pred`, which has no memory form)."""
        return 0 if self.kind == "pred" else self.bits // 8

    @property
    def element_bits(self) -> int:
        return self.bits // self.lanes

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_signed(self) -> bool:
        return self.kind == "signed"


def _parse_types(text: str) -> dict:
    out = {}
    for line in text.split("\n"):
        if line.strip():
            name, kind, bits, *lanes = line.split()
            out[name] = PtxType(name, kind, int(bits), int(lanes[0]) if lanes else 1)
    return out


#: type name (no dot) -> PtxType
TYPES: dict = _parse_types(_TYPES)


def ptx_type(name: str | None) -> PtxType | None:
    """The row of `name` (`.b32` or `b32`), or None when it is not a PTX type."""
    if not name:
        return None
    return TYPES.get(name[1:] if name.startswith(".") else name)


@overload
def type_bytes(name: str | None) -> int | None: ...
@overload
def type_bytes(name: str | None, default: int) -> int: ...


def type_bytes(name: str | None, default: int | None = None) -> int | None:
    """Bytes in memory of the PTX type `name` (`.b32` or `b32`; 0 for `.pred`), or `default`
    when it is not a PTX type."""
    row = ptx_type(name)
    return row.bytes if row is not None else default


def element_bytes(modifiers, default: int = 4) -> int:
    """Bytes of one element an opcode moves: the last type among its split `modifiers` that
    has a memory size (`ld.global.v2.u16` -> 2), `default` when none has."""
    for m in reversed(modifiers):
        row = TYPES.get(m)
        if row is not None and row.bytes:
            return row.bytes
    return default
