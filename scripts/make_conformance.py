#!/usr/bin/env python3
"""Generate the conformance corpus: corpus_fixtures/conformance/.

Real compiler output from sources kept beside it, so that the parser and the analyses are
tested on the PTX that users' modules actually contain, not on shapes written to match:

  nvcc/    nvcc -ptx of every src/*.cu for its architectures, each built three ways
           (plain, -lineinfo, -G)
  triton/  Triton (PyPI) kernels of src/triton_kernels.py compiled to PTX for several
           architectures (Triton compiles ahead of time without a GPU)
  hand/    one small hand-written file per ISA syntax block the compilers do not emit
           (never touched by this script)
  big/     (--big or --big-only, not committed) many_kernels.cu: a ≥150k-line module and a
           >500k-line one (-DGROUPS=38) for the benchmarks

Every source is compiled from a fixed build directory, so the `.file` paths that -lineinfo
and -G record are the same on every machine and a re-run gives the same bytes.
MANIFEST.tsv lists every generated and hand-written file with its target, origin and size.

    python scripts/make_conformance.py                 # nvcc + triton (if importable)
    python scripts/make_conformance.py --triton-python /path/to/python   # triton elsewhere
    python scripts/make_conformance.py --big           # also the scale module
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus_fixtures" / "conformance"
SRC = CORPUS / "src"
BUILD_DIR = Path(tempfile.gettempdir()) / "rrsplice-conformance-src"

# source -> architectures it is built for (the -arch value nvcc takes)
NVCC_SOURCES = {
    "warp.cu": ["sm_80", "sm_90"],
    "tensorcore.cu": ["sm_80", "sm_90"],
    "hopper.cu": ["sm_90a"],
    "blackwell.cu": ["sm_100a"],
    "texsurf.cu": ["sm_75", "sm_89"],
    "calls.cu": ["sm_80", "sm_120"],
    "atomics.cu": ["sm_75", "sm_90"],
}
MODES = {"plain": [], "lineinfo": ["-lineinfo"], "G": ["-G"]}
BIG_SOURCE, BIG_ARCH = "many_kernels.cu", "sm_89"
TRITON_ARCHS = [80, 90, 100, 120]

_TRITON_DRIVER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import triton_kernels
out, ptx_version = sys.argv[2], int(sys.argv[3])
for cap in json.loads(sys.argv[4]):
    for fn, sig, consts in triton_kernels.KERNELS:
        src = ASTSource(fn=fn, signature=sig, constexprs=consts)
        k = triton.compile(src, target=GPUTarget("cuda", cap, 32),
                           options={"ptx_version": ptx_version})
        path = f"{out}/{fn.__name__}_sm_{cap}.ptx"
        open(path, "w").write(k.asm["ptx"])
print(triton.__version__)
"""


def _run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{proc.stderr}")
    return proc.stdout


def _write(path: Path, data: str) -> None:
    """Atomic write: a file is either the old or the new content, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(data)
    os.replace(tmp, path)


@contextlib.contextmanager
def _staged():
    """Hold the build directory (other checkouts on this machine use the same path: the
    path is what keeps the bytes machine-independent) and copy this checkout's sources in."""
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with open(BUILD_DIR.parent / (BUILD_DIR.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for src in SRC.iterdir():
                if src.is_file():
                    shutil.copyfile(src, BUILD_DIR / src.name)
            yield BUILD_DIR
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _nvcc(source: str, args: list, dest: Path) -> None:
    with _staged(), tempfile.TemporaryDirectory() as tmp:
        tmp_out = Path(tmp) / "out.ptx"
        _run(["nvcc", *args, source, "-o", str(tmp_out)], cwd=BUILD_DIR)
        _write(dest, tmp_out.read_text())


def build_nvcc(out: Path, only: tuple | None = None) -> list:
    """Build every (source, arch, mode), or just `only` = (source, arch, mode)."""
    made = []
    for source, archs in NVCC_SOURCES.items():
        stem = source.rsplit(".", 1)[0]
        for arch in archs:
            for mode, flags in MODES.items():
                if only is not None and only != (source, arch, mode):
                    continue
                suffix = "" if mode == "plain" else f"_{mode}"
                dest = out / f"{stem}_{arch}{suffix}.ptx"
                _nvcc(source, [f"-arch={arch}", "-ptx", *flags], dest)
                made.append((dest, arch, _nvcc_command(source, arch, mode)))
                print(f"  {dest}", file=sys.stderr)
    return made


def _ptx_isa_version() -> int:
    """The PTX ISA version this CUDA's ptxas reads (CUDA 13.x -> 9.x, 12.x -> 8.x)."""
    text = _run(["ptxas", "--version"])
    m = re.search(r"release (\d+)\.(\d+)", text)
    major, minor = int(m.group(1)), int(m.group(2))
    return (major - 4) * 10 + minor if major >= 13 else 80 + minor


def build_triton(out: Path, python: str) -> tuple[list, str]:
    out.mkdir(parents=True, exist_ok=True)
    import json
    # Triton assembles what it generates with the ptxas it is told to use: this CUDA's, so
    # the PTX targets the ISA version that ptxas reads
    ptxas = shutil.which("ptxas")
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1", TRITON_CACHE_DIR=str(BUILD_DIR / "tcache"),
               TRITON_PTXAS_PATH=ptxas, TRITON_PTXAS_BLACKWELL_PATH=ptxas)
    with _staged():
        version = _run([python, "-c", _TRITON_DRIVER, str(BUILD_DIR), str(out),
                        str(_ptx_isa_version()), json.dumps(TRITON_ARCHS)], env=env).strip()
    return sorted(out.glob("*.ptx")), version


def build_big(out: Path) -> list:
    """The scale modules: many_kernels.cu as it is (~216k lines) and with GROUPS=38 (>500k)."""
    made = []
    for groups, name in ((16, f"many_kernels_{BIG_ARCH}.ptx"),
                         (38, f"many_kernels_500k_{BIG_ARCH}.ptx")):
        dest = out / name
        _nvcc(BIG_SOURCE, [f"-arch={BIG_ARCH}", "-ptx", f"-DGROUPS={groups}"], dest)
        made.append(dest)
    return made


def _target(path: Path) -> str:
    m = re.search(r"^\s*\.target\s+(\w+)", path.read_text(), re.M)
    return m.group(1) if m else "?"


def write_manifest(entries: list) -> None:
    rows = ["path\ttarget\tlines\tsha256\torigin"]
    for path, arch, origin in sorted(entries, key=lambda e: str(e[0])):
        data = path.read_bytes()
        lines = data.count(b"\n")
        digest = hashlib.sha256(data).hexdigest()[:16]
        rows.append(f"{path.relative_to(CORPUS)}\t{arch}\t{lines}\t{digest}\t{origin}")
    _write(CORPUS / "MANIFEST.tsv", "\n".join(rows) + "\n")


def _has_triton(python: str) -> bool:
    return subprocess.run([python, "-c", "import triton"], capture_output=True).returncode == 0


def _nvcc_command(source: str, arch: str, mode: str) -> str:
    return " ".join(["nvcc", f"-arch={arch}", "-ptx", *MODES[mode], f"src/{source}"])


def manifest_entries() -> list:
    """(path, target, origin) of every committed corpus file, from what is on disk."""
    entries = []
    for source, archs in NVCC_SOURCES.items():
        stem = source.rsplit(".", 1)[0]
        for arch in archs:
            for mode in MODES:
                suffix = "" if mode == "plain" else f"_{mode}"
                path = CORPUS / "nvcc" / f"{stem}_{arch}{suffix}.ptx"
                if path.exists():
                    entries.append((path, arch, _nvcc_command(source, arch, mode)))
    for path in sorted((CORPUS / "triton").glob("*.ptx")):
        entries.append((path, _target(path), "triton (triton/VERSION): src/triton_kernels.py"))
    for path in sorted((CORPUS / "hand").glob("*.ptx")):
        entries.append((path, _target(path), "hand-written"))
    return entries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--triton-python", default=sys.executable,
                    help="a Python that can `import triton` (default: this one)")
    ap.add_argument("--no-triton", action="store_true", help="keep the committed triton/ files")
    ap.add_argument("--big", action="store_true", help="also build big/ (the scale module)")
    ap.add_argument("--big-only", action="store_true", help="build only big/")
    ap.add_argument("--manifest-only", action="store_true",
                    help="only rewrite MANIFEST.tsv (after editing a hand/ file)")
    args = ap.parse_args(argv)
    if args.big_only:
        for big in build_big(CORPUS / "big"):
            print(f"  {big}", file=sys.stderr)
        return 0
    if not args.manifest_only:
        build_nvcc(CORPUS / "nvcc")
        if not args.no_triton:
            if not _has_triton(args.triton_python):
                sys.exit(f"{args.triton_python} cannot import triton: pass --triton-python or "
                         f"--no-triton")
            made, version = build_triton(CORPUS / "triton", args.triton_python)
            _write(CORPUS / "triton" / "VERSION", version + "\n")
            print(f"  triton {version}: {len(made)} files", file=sys.stderr)
        if args.big:
            for big in build_big(CORPUS / "big"):
                print(f"  {big}", file=sys.stderr)
    write_manifest(manifest_entries())
    return 0


if __name__ == "__main__":
    sys.exit(main())
