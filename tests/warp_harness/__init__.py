"""The warp harness: a generated native body (CUDA or HIP C++, with its `rr_mma.h`) built
for the host with g++ and run as one block of host threads, so generated code is executed in
CI, not only compiled.

API (README.md beside this file has the details):

* `Body(source, callee, params, lang)`: a body source file, the callee's name, its parameter
  types in order ("u32" / "u64"), and which branch of its headers to compile: "cuda" or
  "hip" (with rr_warp_shim.h), or "lift" (a lifted body of rrsplice.lift: its rr_lift.h's
  host branch, -DRR_HOST_TEST, whose machine primitives the runtime defines). A callee may
  return a value (a lifted `.param` return): its bytes per thread are `Harness.returns`.
* `build(bodies, workdir)` -> `Harness`: one binary for all the bodies (one g++ run per
  language, one link).
* `Harness` (a context manager): `shared_base` / `global_base` (the window address of the
  shared arena's byte 0 and the host address of the global arena), and
  `call(index, block, args, shared, global_=None, pattern=0xA5)` -> `(shared, global)`: run
  body `index` once for a block of `block = (x, y, z)` threads, thread i getting `args[i]`
  (a [threads, nparams] array; thread order = x + bx * (y + by * z)), the arenas starting
  as the given bytes and every static `__shared__` array of the bodies filled with
  `pattern`; returns the arenas after every thread returned (and sets `returns`: what each
  thread's callee returned, bytes, empty for a void callee).
* `rewrite_asm(text)`: the C++ text with each inline `asm` statement replaced by a call of
  the shim function for its opcode (rr_warp_shim.h lists them; `AsmError` for one the shim
  does not model).

`splice.check_splice` (the region oracle) builds on this: it runs the recipe's region in the
reference PTX interpreter and the call text with the body, and compares what comes back.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHIM = HERE / "rr_warp_shim.h"
RUNTIME = HERE / "rr_warp_runtime.cpp"
MAGIC = 0x52524331
# where the runtime maps its arenas (rr_warp_runtime.cpp): the same in every binary, so a
# test lays out window addresses before it builds (`Harness` checks it got them)
SHARED_ADDR = 0x40000000
GLOBAL_ADDR = 0x80000000
# the inline-asm opcodes the shim models (rr_warp_shim.h declares their functions)
SHIM_ASM = {"st.shared.b32", "st.shared.b64", "ld.shared.b32",
            "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16"}


class AsmError(ValueError):
    """An inline asm statement the shim cannot run."""


class HarnessError(RuntimeError):
    """The body faulted, hung or did not build (the message has the compiler's or the
    runtime's own words)."""


@dataclass
class Body:
    source: Path
    callee: str
    params: Sequence[str]          # "u32" | "u64", the callee's parameters in order
    lang: str = "cuda"             # "cuda" | "hip" | "lift": the header branch compiled

    def __post_init__(self):
        self.source = Path(self.source)
        if self.lang not in ("cuda", "hip", "lift"):
            raise ValueError(f"lang must be cuda, hip or lift, not {self.lang!r}")
        bad = [p for p in self.params if p not in ("u32", "u64")]
        if bad:
            raise ValueError(f"parameter types must be u32/u64, not {bad}")


# ------------------------------------------------------------------ inline asm
_ASM = re.compile(r"\basm\s*(?:volatile\s*|__volatile__\s*)?\((.*?)\)\s*;", re.DOTALL)


def _split(text: str, sep: str) -> list:
    """`text` split at `sep` outside string literals and parentheses."""
    out, depth, cur, quote = [], 0, [], False
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\":
                cur.append(text[i + 1])
                i += 1
            elif ch == '"':
                quote = False
        elif ch == '"':
            quote = True
            cur.append(ch)
        elif ch in "([":
            depth += 1
            cur.append(ch)
        elif ch in ")]":
            depth -= 1
            cur.append(ch)
        elif ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


def _constraint_exprs(part: str) -> list:
    out = []
    for item in _split(part, ","):
        item = item.strip()
        if not item:
            continue
        m = re.fullmatch(r'"([^"]*)"\s*\((.*)\)', item, re.DOTALL)
        if not m:
            raise AsmError(f"asm operand `{item}` is not \"constraint\"(expression)")
        out.append(m.group(2).strip())
    return out


def _asm_call(inner: str) -> str:
    parts = _split(inner, ":")
    template = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', parts[0]))
    outs = _constraint_exprs(parts[1]) if len(parts) > 1 else []
    ins = _constraint_exprs(parts[2]) if len(parts) > 2 else []
    body = template.strip().rstrip(";").strip()
    opcode, _, rest = body.partition(" ")
    if opcode not in SHIM_ASM:
        raise AsmError(f"inline asm `{template}`: the warp shim has no model of {opcode} "
                       f"(it models {', '.join(sorted(SHIM_ASM))})")
    exprs = [f"&({e})" for e in outs] + [f"({e})" for e in ins]
    args = []
    for op in rest.replace("{", "").replace("}", "").split(","):
        op = op.strip()
        m = re.fullmatch(r"\[?\s*%(\d+)\s*(?:\+\s*(\d+))?\s*\]?", op)
        if not m:
            raise AsmError(f"inline asm `{template}`: operand `{op}` is not %N or [%N+k]")
        e = exprs[int(m.group(1))]
        args.append(f"{e} + {m.group(2)}" if m.group(2) else e)
    return f"rr_shim_asm_{opcode.replace('.', '_')}({', '.join(args)});"


def rewrite_asm(text: str) -> str:
    """`text` with each inline asm statement replaced by its shim call."""
    return _ASM.sub(lambda m: _asm_call(m.group(1)), text)


# ------------------------------------------------------------------ build
def _cxx() -> str:
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        raise HarnessError("no host C++ compiler (g++) on PATH")
    return cxx


def _copy_rewritten(src: Path, dst_dir: Path, seen: set, asm: bool = True) -> Path:
    """`src` and every file it includes with "quotes" (from its own directory), into
    `dst_dir` with their inline asm rewritten (`asm`: a lifted body's host branch has none;
    its CUDA branch's asm is left as it is)."""
    text = src.read_text()
    text = rewrite_asm(text) if asm else text
    dst = dst_dir / src.name
    dst.write_text(text)
    seen.add(src.name)
    for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.MULTILINE):
        p = src.parent / inc
        if inc not in seen and p.is_file():
            _copy_rewritten(p, dst_dir, seen, asm)
    return dst


def _symbol(i: int, b: Body) -> str:
    return f"rr_body{i}_{b.callee}"


_CTYPE = {"u32": "unsigned", "u64": "unsigned long long"}


def _wrapper(i: int, b: Body) -> str:
    """Appended to body i's translation unit: its entry, which calls the callee with the
    thread's arguments and hands a returned value's bytes to the runtime."""
    call = f"{b.callee}(" + ", ".join(f"({_CTYPE[p]})a[{j}]" for j, p in
                                      enumerate(b.params)) + ")"
    return "\n".join([
        "", "/* the warp harness's entry of this body (tests/warp_harness/__init__.py) */",
        "#include <type_traits>",
        'extern "C" void rr_shim_ret_store(const void *p, unsigned n);',
        "template <class F> static void rr_entry_call(F f)",
        "{",
        "    if constexpr (std::is_void_v<decltype(f())>) {",
        "        f();",
        "    } else {",
        "        const auto r = f();",
        "        rr_shim_ret_store(&r, sizeof r);",
        "    }",
        "}",
        f'extern "C" void rr_entry_{i}(const unsigned long long *a)',
        "{",
        f"    rr_entry_call([&] {{ return {call}; }});",
        "}", ""])


def _entries(bodies) -> str:
    lines = ["/* generated by tests/warp_harness: one entry per body */"]
    for i, _b in enumerate(bodies):
        lines.append(f'extern "C" void rr_entry_{i}(const unsigned long long *a);')
    lines.append('typedef void (*rr_entry_fn)(const unsigned long long *);')
    lines.append('extern "C" const rr_entry_fn rr_entries[] = {'
                 + ", ".join(f"rr_entry_{i}" for i in range(len(bodies))) + "};")
    lines.append('extern "C" const int rr_entry_nargs[] = {'
                 + ", ".join(str(len(b.params)) for b in bodies) + "};")
    lines.append(f'extern "C" const int rr_entry_count = {len(bodies)};')
    return "\n".join(lines) + "\n"


def _run(cmd) -> None:
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode != 0:
        raise HarnessError(f"`{' '.join(map(str, cmd))}` failed:\n{p.stderr[-4000:]}")


def _runtime_object(cxx: str, flags: list) -> Path:
    """The runtime's object file, compiled once per compiler, flags and source (kept in the
    system temp directory, written by rename)."""
    key = hashlib.sha256("\0".join([cxx, *flags, RUNTIME.read_text()]).encode()).hexdigest()
    obj = Path(tempfile.gettempdir()) / f"rr-warp-runtime-{key[:16]}.o"
    if not obj.is_file():
        tmp = obj.with_name(f"{obj.name}.{os.getpid()}.tmp")
        _run([cxx, *flags, "-c", "-x", "c++", RUNTIME, "-o", tmp])
        os.replace(tmp, obj)
    return obj


def build(bodies: Sequence[Body], workdir, *, shared_bytes: int = 65536,
          global_bytes: int = 4096, opt: str = "-O0", stack_bytes: int = 256 * 1024,
          jobs_at_once: int = 2) -> Harness:
    """Compile and link `bodies` into one harness binary under `workdir`. `opt`: g++'s
    optimisation level for the bodies (-O0 compiles a whole-layer body several times
    faster than -O1, and the runs are short; IEEE results are the same: contraction is
    off). `stack_bytes`: each thread's stack (a whole-region lifted body at -O0 keeps
    every register in its frame)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    cxx = _cxx()
    flags = ["-std=c++20", opt, "-ffp-contract=off", "-pthread", "-w",
             f"-DRR_SHARED_BYTES={shared_bytes}", f"-DRR_GLOBAL_BYTES={global_bytes}",
             f"-DRR_STACK_BYTES={stack_bytes}"]
    jobs = []
    for i, b in enumerate(bodies):
        d = workdir / f"body{i}"
        d.mkdir(exist_ok=True)
        src = _copy_rewritten(b.source, d, set(), asm=b.lang != "lift")
        src.write_text(src.read_text() + _wrapper(i, b))
        # each body's callee gets a name of its own, so variants of one callee link together
        cmd = [cxx, *flags, "-c", "-x", "c++", f"-D{b.callee}={_symbol(i, b)}"]
        if b.lang == "lift":
            cmd.append("-DRR_HOST_TEST")
        else:
            cmd += ["-include", SHIM, "-I", HERE]
        if b.lang == "hip":
            cmd.append("-DRR_SHIM_HIP")
        jobs.append(cmd + [src, "-o", src.with_suffix(".o")])
    objs = [j[-1] for j in jobs]
    for k in range(0, len(jobs), jobs_at_once):      # bodies compile side by side
        procs = [subprocess.Popen([str(c) for c in j], stderr=subprocess.PIPE, text=True)
                 for j in jobs[k:k + jobs_at_once]]
        for j, p in zip(jobs[k:k + jobs_at_once], procs, strict=False):
            err = p.communicate()[1]
            if p.returncode != 0:
                raise HarnessError(f"{j[-3]} did not compile for the host:\n{err[-4000:]}")
    entries = workdir / "rr_entries.cpp"
    entries.write_text(_entries(bodies))
    exe = workdir / "harness"
    # rr_host_shared (a lifted body's .shared bytes) at address 0: its window addresses are
    # host addresses in the arena, as the shim's are (the arena is mapped below 4 GiB)
    _run([cxx, *flags, "-no-pie", "-Wl,--defsym=rr_host_shared=0",
          _runtime_object(cxx, flags), entries, *objs, "-o", exe])
    return Harness(exe, bodies)


class Harness:
    """A built harness binary, run as one long-lived process (cases are sent one by one)."""

    def __init__(self, exe: Path, bodies: Sequence[Body], timeout: float = 60.0):
        self.exe, self.bodies = Path(exe), list(bodies)
        self.proc: subprocess.Popen | None = None
        self.timeout = timeout              # seconds one case may run (a hang is killed)
        self.shared_base = self.global_base = None
        self.shared_bytes = self.global_bytes = None
        self.returns: list = []             # per thread, the bytes its callee returned

    def __enter__(self):
        self.proc = subprocess.Popen([str(self.exe)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        head = self._read(24)
        self.shared_base, self.global_base, self.shared_bytes, self.global_bytes = \
            struct.unpack("<QQII", head)
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
            self.proc.stderr.close()
            self.proc = None

    def _read(self, n: int) -> bytes:
        data = self.proc.stdout.read(n)
        if len(data) != n:
            self.proc.wait(timeout=10)
            raise HarnessError(f"the body's process ended (exit {self.proc.returncode}"
                               + (", killed: a hang?" if self.proc.returncode == -9 else "")
                               + "): "
                               + self.proc.stderr.read().decode(errors="replace")[-2000:])
        return data

    def call(self, index: int, block, args, shared: bytes, global_: bytes | None = None,
             pattern: int = 0xA5) -> tuple:
        bx, by, bz = block
        threads = bx * by * bz
        args = np.asarray(args, dtype=np.uint64).reshape(threads, -1)
        if args.shape[1] != len(self.bodies[index].params):
            raise ValueError(f"{self.bodies[index].callee} takes "
                             f"{len(self.bodies[index].params)} arguments, not {args.shape[1]}")
        if len(shared) != self.shared_bytes:
            raise ValueError(f"the shared arena is {self.shared_bytes} bytes, not {len(shared)}")
        global_ = bytes(self.global_bytes) if global_ is None else global_
        msg = struct.pack("<7I", MAGIC, index, bx, by, bz, args.shape[1], pattern) \
            + args.astype("<u8").tobytes() + bytes(shared) + bytes(global_)
        if os.environ.get("RR_HARNESS_KEEP"):       # the case, to rerun `harness < case`
            self.exe.with_suffix(".case").write_bytes(msg)
        try:
            self.proc.stdin.write(msg)
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        timer = threading.Timer(self.timeout, self.proc.kill)
        timer.start()
        try:
            status = struct.unpack("<I", self._read(4))[0]
            out = self._read(self.shared_bytes), self._read(self.global_bytes)
            n = struct.unpack("<I", self._read(4))[0]
            rets = self._read(n * threads) if n else b""
            self.returns = [rets[i * n:(i + 1) * n] for i in range(threads)]
        finally:
            timer.cancel()
        if status:
            raise HarnessError(f"case failed with status {status}")
        return out
