"""Finding and running NVIDIA's `ptxas` and `nvlink`.

Lookup order: `$RRSPLICE_PTXAS` / `$RRSPLICE_NVLINK`, then `PATH`, then the binaries that
PyPI's `nvidia-cuda-nvcc` wheel installs under `site-packages/nvidia/cu*/bin`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..ptx.errors import RRSpliceError


class ToolNotFound(RRSpliceError):
    """ptxas or nvlink is not installed where rrsplice looks."""


class ToolFailed(RRSpliceError):
    """ptxas or nvlink ran and rejected its input."""


def _wheel_binary(name: str) -> Path | None:
    for entry in sys.path:
        if not entry:
            continue
        base = Path(entry) / "nvidia"
        if not base.is_dir():
            continue
        for cand in sorted(base.glob(f"cu*/bin/{name}"), reverse=True):
            if cand.is_file() and os.access(cand, os.X_OK):
                return cand
        cand = base / "cuda_nvcc" / "bin" / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    return None


def locate_tool(name: str) -> tuple[Path | None, str]:
    """(path of `ptxas` or `nvlink` or None, where it was found or looked for)."""
    var = f"RRSPLICE_{name.upper()}"
    env = os.environ.get(var)
    if env:
        p = Path(env)
        return (p, f"${var}") if p.is_file() else (None, f"${var}={env} is not a file")
    found = shutil.which(name)
    if found:
        return Path(found), "PATH"
    wheel = _wheel_binary(name)
    if wheel is not None:
        return wheel, "the nvidia-cuda-nvcc wheel"
    return None, f"not on PATH, no ${var}, no nvidia-cuda-nvcc wheel"


def find_tool(name: str) -> Path | None:
    """Path of `ptxas` or `nvlink`, or None."""
    return locate_tool(name)[0]


_versions: dict = {}


def tool_version(path: Path) -> str:
    """The release line of `TOOL --version` (e.g. "Cuda compilation tools, release 13.0,
    V13.0.88"), or what went wrong running it."""
    key = str(path)
    if key not in _versions:
        try:
            proc = subprocess.run([key, "--version"], capture_output=True, text=True,
                                  timeout=30)
            lines = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines()
                     if ln.strip()]
            release = [ln for ln in lines if "release" in ln]
            _versions[key] = (release or lines or ["(no version output)"])[-1]
        except (OSError, subprocess.SubprocessError) as exc:
            _versions[key] = f"(cannot run: {exc})"
    return _versions[key]


def tool_provenance(name: str) -> dict:
    """What `--version`, `doctor` and `verify --json` say about a tool: path, version, and
    where it was found."""
    path, origin = locate_tool(name)
    return {"name": name, "path": str(path) if path else None, "found_via": origin,
            "version": tool_version(path) if path else None}


def require_tool(name: str) -> Path:
    p = find_tool(name)
    if p is None:
        raise ToolNotFound(f"{name} not found: set RRSPLICE_{name.upper()}, put CUDA's bin on "
                           f"PATH, or `pip install nvidia-cuda-nvcc`")
    return p


@dataclass
class Resources:
    """What `ptxas -v` reports for one function."""
    function: str
    arch: str
    registers: int | None = None
    stack: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    shared: int | None = None


@dataclass
class AssembleResult:
    ok: bool
    arch: str
    output: Path | None
    log: str
    resources: list


_FUNC = re.compile(r"Compiling entry function '([^']+)'|Function properties for (\S+)|"
                   r"Compiling function '([^']+)'")


def parse_resource_report(log: str, arch: str) -> list:
    """Resources per function from `ptxas -v` output."""
    out: dict = {}
    current = None
    for line in log.splitlines():
        m = re.search(r"(?:Compiling entry function|Compiling function) '([^']+)'", line)
        if m:
            current = out.setdefault(m.group(1), Resources(m.group(1), arch))
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            current = out.setdefault(m.group(1), Resources(m.group(1), arch))
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            current.stack, current.spill_stores, current.spill_loads = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            current.registers = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            current.shared = int(m.group(1))
    return list(out.values())


def ptxas(ptx: Path, arch: str, *, out: Path | None = None, relocatable: bool = True,
          optimize: bool = False, verbose: bool = True, timeout: int = 600) -> AssembleResult:
    """Assemble `ptx` for `arch` (e.g. "sm_90"); `-c` (relocatable) by default, `-O0` unless
    `optimize` (acceptance checks need no optimisation and run several times faster)."""
    exe = require_tool("ptxas")
    tmp = None
    if out is None:
        tmp = tempfile.NamedTemporaryFile(suffix=".cubin", delete=False)
        tmp.close()
        out = Path(tmp.name)
    cmd = [str(exe), f"-arch={arch}", str(ptx), "-o", str(out)]
    if relocatable:
        cmd.insert(1, "-c")
    if not optimize:
        cmd.insert(1, "-O0")
    if verbose:
        cmd.insert(1, "-v")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolFailed(f"ptxas timed out after {timeout}s on {ptx}") from None
    log = proc.stdout + proc.stderr
    ok = proc.returncode == 0
    if tmp is not None and not ok:
        out.unlink(missing_ok=True)
    return AssembleResult(ok, arch, out if ok else None, log, parse_resource_report(log, arch))


def nvlink(objects: list, arch: str, out: Path, *, verbose: bool = True,
           timeout: int = 600) -> tuple[bool, str]:
    """Link relocatable cubins into one cubin; `-v` prints each kernel's resources."""
    exe = require_tool("nvlink")
    cmd = [str(exe)] + (["-v"] if verbose else []) + [f"-arch={arch}", "-o", str(out)] \
        + [str(o) for o in objects]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolFailed(f"nvlink timed out after {timeout}s linking {out}") from None
    return proc.returncode == 0, proc.stdout + proc.stderr
