#!/usr/bin/env python3
"""Generate the real-compiler Swin fixtures under corpus_fixtures/.

Compiles every kernel in corpus_fixtures/src/ with `nvcc -ptx` for each target
architecture, writes the PTX next to the sources' parent directory, writes one
`<kernel>.launch.json` per kernel (parameter block layout, buffers, textures,
surface, grid/block, outputs) and `README_real.md` (the fixture table).

The generated files are committed, so tests never need nvcc.  Generation is
deterministic: the same sources and the same nvcc give the same bytes (nvcc is
run from the repository root on relative paths, without -lineinfo, so no
machine-specific path ends up in the PTX).

    python scripts/make_fixtures.py            # compile, check with ptxas, write
    python scripts/make_fixtures.py --no-ptxas # skip the ptxas acceptance checks
    python scripts/make_fixtures.py --check    # compile to a temp dir, compare bytes
    python scripts/make_fixtures.py --launch-only  # rewrite only the .launch.json files

Requires nvcc and ptxas (CUDA 12.8+; the committed files come from CUDA 13.0).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = Path("corpus_fixtures")
SRC = FIX / "src"

NVCC_FLAGS = ["-O3", "--use_fast_math", "-std=c++17"]

# (fixture stem, source, entry, launch width, launch height, physical lines per mma)
KERNELS = [
    ("swin_big", "swin_big.cu", "rrswin_big_kernel", 128, 64, 5),
    ("swin_small", "swin_small.cu", "rrswin_small_kernel", 128, 64, 5),
    ("swin_tiny", "swin_tiny.cu", "rrswin_tiny_kernel", 128, 64, 4),
]
ARCHS = ["sm_89", "sm_120"]

# The variant family: swin_tiny.cu compiled again under the flags DLSS-style variants differ
# in (motion-vector scale _mvhi/_mvlo, HDR tone-map or LDR clamp before the mma region, and
# _folded: one epilogue scale inside the region folded away). Same source, different
# statements before and after the region, so the region's registers are renumbered;
# the _folded one differs inside the region (porting a cut to it must be refused).
# (fixture stem, entry, extra nvcc flags)
VARIANT_SOURCE = "swin_tiny.cu"
VARIANT_ARCH = "sm_89"
VARIANTS = [
    ("swin_tiny_mvhi_hdr", "rrswin_tiny_mvhi_hdr_kernel", ["-DRRSWIN_MV_SCALE=2.0f", "-DRRSWIN_HDR"]),
    ("swin_tiny_mvhi_ldr", "rrswin_tiny_mvhi_ldr_kernel", ["-DRRSWIN_MV_SCALE=2.0f", "-DRRSWIN_LDR"]),
    ("swin_tiny_mvlo_hdr", "rrswin_tiny_mvlo_hdr_kernel", ["-DRRSWIN_MV_SCALE=0.5f", "-DRRSWIN_HDR"]),
    ("swin_tiny_mvlo_ldr", "rrswin_tiny_mvlo_ldr_kernel", ["-DRRSWIN_MV_SCALE=0.5f", "-DRRSWIN_LDR"]),
    ("swin_tiny_mvhi_ldr_folded", "rrswin_tiny_mvhi_ldr_folded_kernel",
     ["-DRRSWIN_MV_SCALE=2.0f", "-DRRSWIN_LDR", "-DRRSWIN_FOLDED"]),
]
# The statements the users' build rewrites for ZLUDA: four surface-store shapes and roundf.
SURFACE_SOURCE = "surface_round.cu"
SURFACE_STEM = "surface_round"
SURFACE_ENTRIES = ["rrsurf_round_kernel", "rrround_all_kernel"]
SUST_SHAPES = ["sust.b.2d.v2.b16.zero", "sust.b.2d.v4.b16.zero", "sust.b.2d.b32.zero",
               "sust.p.2d.v4.b32.zero"]
# ptxas acceptance: PTX arch -> the -arch values it must assemble for
PTXAS_TARGETS = {"sm_89": ["sm_89", "sm_90"], "sm_120": ["sm_120"]}

EPI_NAMES = {
    "EPI_SCALE": "scale+bias (f16x2 fma), requantise",
    "EPI_RELU": "scale, requantise with cvt...satfinite.relu",
    "EPI_GELU": "sigmoid-GELU in f32 (ex2.approx), requantise",
    "EPI_SOFTMAX": "row softmax (quad shfl max/sum, h2exp2), requantise",
    "EPI_SHARED": "stage through shared memory (bar.warp.sync), permuted read-back",
    "EPI_MOVMATRIX": "movmatrix.trans of every accumulator, requantise",
    "EPI_NORM": "row layer-norm in f32 (quad shfl, rsqrt), requantise",
}

MMA_OPCODE = "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16"


@dataclass
class Phase:
    mt: int
    nt: int
    ks: int
    epi: str
    label: str

    @property
    def mma(self) -> int:
        return self.mt * self.nt * self.ks

    @property
    def geometry(self) -> str:
        return f"{16 * self.mt}x{8 * self.nt}x{32 * self.ks}"


def phase_table(src: Path) -> list[Phase]:
    """Read the constexpr RrPhase table of a fixture source (one row per line)."""
    rows = re.findall(
        r"^\s*\{\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(EPI_\w+)\s*\}\s*,\s*//\s*\d+\s+(.*?)\s{2,}",
        src.read_text(), re.M)
    if not rows:
        raise SystemExit(f"no phase table in {src}")
    return [Phase(int(a), int(b), int(c), e, lab.strip()) for a, b, c, e, lab in rows]


# ---------------------------------------------------------------------------
# Layout facts mirrored from src/swin_common.cuh.

def phase_bytes(p: Phase) -> int:
    return 4 * p.nt * p.ks * 256 + 4 * p.nt * 16


# The epilogue kinds `rrsplice descriptor` names (docs/descriptor.md), per source epilogue.
EPI_KINDS = {
    "EPI_SCALE": "scale", "EPI_RELU": "relu", "EPI_GELU": "gelu", "EPI_SOFTMAX": "softmax",
    "EPI_SHARED": "shared staging", "EPI_MOVMATRIX": "transpose", "EPI_NORM": "norm",
}


def fragment_truth(phases: list[Phase]) -> list[dict]:
    """What rr_gemm/rr_swin_body load where, per phase (mirrors src/swin_common.cuh):
    the weight-image byte of B fragment (k-slice, n-tile) register 0 for lane 0 of warp 0
    (register 1 is 4 bytes on), the lane and warp strides of those loads, each n-tile's bias
    seed (one f16x2, the same for every lane and both C registers of the chain), where the
    A fragments come from, and the epilogue's kind."""
    out = []
    for i, (p, w) in enumerate(zip(phases, weight_layout(phases), strict=False), 1):
        if p.ks % 2 == 0:   # [n][k/2][lane][16 bytes]: k-slice pairs share a 16-byte load
            b = [[w["b_offset"] + ((n * (p.ks // 2) + k // 2) * 32) * 16 + (k % 2) * 8
                  for n in range(p.nt)] for k in range(p.ks)]
            lane_stride = 16
        else:               # [n][k][lane][8 bytes]
            b = [[w["b_offset"] + ((n * p.ks + k) * 32) * 8 for n in range(p.nt)]
                 for k in range(p.ks)]
            lane_stride = 8
        out.append(dict(
            phase=i, b_reg0_offset_by_kslice_ntile=b, b_reg_bytes=4, b_lane_stride=lane_stride,
            b_warp_stride=p.nt * p.ks * 256,
            bias_seed_offset_by_ntile=[w["bias_offset"] + n * 16 for n in range(p.nt)],
            bias_warp_stride=p.nt * 16, bias_lane_stride=0,
            a_source="prologue: plane arena" if i == 1 else f"requantised D of phase {i - 1}",
            epilogue_kind=None if i == len(phases) else EPI_KINDS[p.epi]))
    return out


def weight_layout(phases: list[Phase]) -> list[dict]:
    out, off = [], 0
    for i, p in enumerate(phases, 1):
        b_bytes = 4 * p.nt * p.ks * 256
        out.append(dict(phase=i, b_offset=off, b_bytes=b_bytes,
                        b_load="v4 (two k-slices per 16-byte load)" if p.ks % 2 == 0
                        else "v2 (one k-slice per 8-byte load)",
                        bias_offset=off + b_bytes, bias_bytes=4 * p.nt * 16))
        off += phase_bytes(p)
    return out


# ---------------------------------------------------------------------------
# Statement counting (independent of rrsplice's parser, for the README).

_LABEL = re.compile(r"^([A-Za-z_$%][\w$]*)\s*:(?!:)")


def _strip_comments(lines: list[str]) -> list[str]:
    out, in_block = [], False
    for line in lines:
        res, i = "", 0
        while i < len(line):
            if in_block:
                j = line.find("*/", i)
                if j < 0:
                    i = len(line)
                else:
                    in_block, i = False, j + 2
            elif line.startswith("//", i):
                break
            elif line.startswith("/*", i):
                in_block, i = True, i + 2
            elif line[i] == '"':
                j = line.find('"', i + 1)
                j = len(line) if j < 0 else j + 1
                res, i = res + line[i:j], j
            else:
                res, i = res + line[i], i + 1
        out.append(res)
    return out


def statements(text: str) -> dict[str, list[tuple[int, int, int, str]]]:
    """Per function: [(statement number, first line, last line, text)].

    An instruction is text ending in ';' that is not a directive ('.xxx'); a label
    is 'NAME:'.  Braces that open or close a scope (at a statement start) are not
    statements; braces inside an operand list are part of the instruction.
    """
    lines = _strip_comments(text.splitlines())
    funcs: dict[str, list] = {}
    cur, depth, pending_name = None, 0, None
    buf, buf_line = "", 0
    for ln, line in enumerate(lines, 1):
        if cur is None:
            m = re.search(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", line)
            if m:
                pending_name = m.group(1)
            if pending_name and line.strip().startswith("{"):
                cur, depth, buf = pending_name, 0, ""
                funcs[cur] = []
                pending_name = None
                # fall through: the '{' is processed below
            else:
                continue
        i = 0
        while i < len(line):
            ch = line[i]
            if not buf.strip():
                rest = line[i:].lstrip()
                skip = len(line[i:]) - len(rest)
                if not rest:
                    break
                if rest[0] == "{":
                    depth += 1
                    i += skip + 1
                    buf = ""
                    continue
                if rest[0] == "}":
                    depth -= 1
                    i += skip + 1
                    buf = ""
                    if depth == 0:
                        cur = None
                        break
                    continue
                m = _LABEL.match(rest)
                if m:
                    funcs[cur].append((len(funcs[cur]) + 1, ln, ln, m.group(1) + ":"))
                    i += skip + m.end()
                    continue
                buf, buf_line = "", ln
                i += skip
                ch = line[i]
            if ch == ";":
                stmt = buf.strip()
                if not stmt.startswith("."):
                    funcs[cur].append((len(funcs[cur]) + 1, buf_line, ln, " ".join(stmt.split())))
                buf = ""
                i += 1
                continue
            buf += ch
            i += 1
        if cur is None:
            continue
        if buf.strip():
            buf += "\n"
    return funcs


def analyse(ptx: Path) -> dict:
    text = ptx.read_text()
    lines = text.splitlines()
    funcs = statements(text)
    (entry, stmts), = funcs.items()
    mma = [s for s in stmts if s[3].startswith(MMA_OPCODE)]
    spans = sorted({s[2] - s[1] + 1 for s in mma})
    first, last = mma[0], mma[-1]
    region = [s for s in stmts if first[0] <= s[0] <= last[0]]
    branches = [s for s in region if re.match(r"(@!?%\w+\s+)?bra", s[3])]
    labels = [s for s in region if s[3].endswith(":")]
    # chains: an mma whose C list is not the D list of an earlier mma starts one
    ops = [re.findall(r"\{([^}]*)\}", s[3]) for s in mma]
    produced = set()
    chains = 0
    for d, _a, _b, c in ops:
        if c not in produced:
            chains += 1
        produced.add(d)
    return dict(
        entry=entry,
        physical_lines=len(lines),
        statements=len(stmts),
        mma=len(mma),
        mma_line_spans=spans,
        chains=chains,
        region_lines=(first[1], last[2]),
        region_statements=(first[0], last[0]),
        region_branches=len(branches),
        region_labels=len(labels),
        tex=sum(1 for s in stmts if s[3].startswith("tex.")),
        sust=sum(1 for s in stmts if s[3].startswith("sust.")),
        tex_before=sum(1 for s in stmts if s[3].startswith("tex.") and s[0] < first[0]),
        sust_after=sum(1 for s in stmts if s[3].startswith("sust.") and s[0] > last[0]),
        bytes=len(text.encode()),
    )


# ---------------------------------------------------------------------------

def run(cmd: list[str], cwd: Path = ROOT) -> None:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(f"$ {' '.join(cmd)}\n{r.stdout}{r.stderr}")
        raise SystemExit(r.returncode)


def nvcc_cmd(src: Path, arch: str, out: Path, extra: list[str] = ()) -> list[str]:
    return ["nvcc", "-ptx", f"-arch={arch}", *NVCC_FLAGS, *extra, "-o", str(out), str(src)]


def variant_flags(entry: str, flags: list[str]) -> list[str]:
    return [f"-DRRSWIN_TINY_NAME={entry}", *flags]


def fixture_name(stem: str, arch: str) -> str:
    return f"{stem}_{arch.replace('_', '')}.ptx"


def launch_description(stem: str, src: str, entry: str, width: int, height: int,
                       phases: list[Phase]) -> dict:
    gx, gy = width // 32, height // 4
    p0 = phases[0]
    a0 = p0.mt * p0.ks * 4
    blocks = gx * gy
    wbytes = sum(phase_bytes(p) for p in phases)
    tex = dict(kind="texture", width=width, height=height, format="float32x4",
               channel_desc=[32, 32, 32, 32, "float"], address_mode="clamp",
               filter_mode="point", read_mode="element", normalized_coords=False)
    # the arena: lanes are 2*A0 halves (A0*4 bytes) apart, but each lane reads A0/2 16-byte
    # vectors (A0*8 bytes: its own slice and the next lane's), so the last lane of the last
    # warp of the last block reads one lane stride past [blocks][4][32] slices
    lane_stride, lane_read = a0 * 4, (a0 // 2) * 16
    arena_bytes = (blocks * 4 * 32 - 1) * lane_stride + lane_read
    fields = [
        dict(name="arena", offset=0, kind="buffer", bytes=arena_bytes,
             role="input", fill="f16_unit",
             layout=f"[blockIdx.y*gridDim.x+blockIdx.x][tid.z 4][lane 32][{2 * a0} f16]",
             extent=f"every byte the kernel reads: lanes are {lane_stride} bytes apart and "
                    f"each reads {lane_read} (A0/2 x 16), so the last lane reads "
                    f"{lane_read - lane_stride} bytes past the {blocks * 4 * 32 * lane_stride}"
                    f"-byte [block][tid.z][lane] slices"),
        dict(name="plane_in", offset=8, kind="buffer", bytes=width * height * 16,
             role="input", fill="f32_unit", layout="[y][x] float4",
             extent="every byte the kernel reads: one float4 per pixel"),
        dict(name="plane_out", offset=16, kind="buffer", bytes=width * height * 16,
             role="output", fill="zero",
             layout="[y][x] uint4: the last phase's accumulator registers (raw f16x2 bits)"),
        dict(name="tex_color", offset=24, role="input", fill="f32_unit", **tex),
        dict(name="tex_guide", offset=32, role="input", fill="f32_unit", **tex),
        dict(name="weights", offset=40, kind="buffer", bytes=wbytes, role="input",
             fill="e4m3_small",
             extent="every byte the kernel reads: warp tid.z reads B block bytes "
                    "[tid.z*nt*ks*256, (tid.z+1)*nt*ks*256) and bias bytes "
                    "[tid.z*nt*16, (tid.z+1)*nt*16) of each phase (weight_layout)",
             layout="per phase: B block [tid.z 4][nt][ks][lane 32][8 bytes] "
                    "(pairs of k-slices interleaved per 16 bytes when ks is even), "
                    "then bias block [tid.z 4][nt][16 bytes] (first 4 bytes: f16x2 seed)"),
        dict(name="tex_motion", offset=48, role="input", fill="f32_signed2", **tex),
        dict(name="tex_depth", offset=56, role="input", fill="f32_unit", **tex),
        dict(name="surf_out", offset=64, kind="surface", width=width, height=height,
             format="float16x4", channel_desc=[16, 16, 16, 16, "float"],
             texel_bytes=8, role="output", fill="zero"),
        dict(name="width", offset=72, kind="i32", value=width),
        dict(name="height", offset=76, kind="i32", value=height),
        dict(name="in_scale", offset=80, kind="f32", value=0.5),
        dict(name="out_scale", offset=84, kind="f32", value=1.0),
        dict(name="frame", offset=88, kind="i32", value=0),
        dict(name="flags", offset=92, kind="i32", value=0),
    ]
    return dict(
        format="rrsplice-launch/1",
        kernel=entry,
        source=str(SRC / src),
        ptx={arch: fixture_name(stem, arch) for arch in ARCHS},
        ptx_runs_on={"sm_89": ["sm_89", "sm_90"], "sm_120": ["sm_120"]},
        block=[32, 1, 4],
        grid=[gx, gy, 1],
        dynamic_shared_bytes=0,
        param_block=dict(size=96, align=8, fields=fields),
        outputs=["plane_out", "surf_out"],
        fills={
            "zero": "all bytes 0",
            "f16_unit": "IEEE half values uniform in [-1, 1)",
            "f32_unit": "float32 values uniform in [0, 1)",
            "f32_signed2": "float32 values uniform in [-2, 2)",
            "e4m3_small": "random bytes with bit 6 cleared (finite e4m3, |v| < 2; "
                          "read as f16x2 bias seeds they are finite too)",
        },
        phases=[dict(index=i, label=p.label, m=16 * p.mt, n=8 * p.nt, k=32 * p.ks,
                     m_tiles=p.mt, n_tiles=p.nt, k_slices=p.ks, mma=p.mma,
                     chains=p.mt * p.nt, epilogue=p.epi)
                for i, p in enumerate(phases, 1)],
        weight_layout=weight_layout(phases),
        fragment_truth=fragment_truth(phases),
        notes=[
            "width must be a multiple of 32 and height a multiple of 4; "
            "thread (lane, 0, z) of block (bx, by) owns pixel (32*bx+lane, 4*by+z)",
            "deterministic: no atomics; shared memory is per warp and fenced by __syncwarp",
            "every output pixel depends on the last phase's accumulators of its lane, "
            "which depend on every mma of the kernel",
        ],
    )


def readme(results: list[tuple[str, str, str, list[Phase], dict[str, dict]]]) -> str:
    out = ["## Real-compiler Swin fixtures (nvcc)", "",
           "Generated by `python scripts/make_fixtures.py` from the CUDA C++ sources in",
           "`corpus_fixtures/src/` (do not edit the `.ptx`, `.launch.json` or this section by",
           "hand; change the sources or the script and regenerate).  Compiler: CUDA 13.0",
           "(`nvcc -ptx`, `.version 9.0`).  Each kernel is one `.visible .entry` with a 96-byte",
           "parameter block (`param_0`; weight image pointer at `+40`), blockDim (32, 1, 4),",
           "a texture/plane-arena prologue, a straight-line mma region (every",
           f"`{MMA_OPCODE}` is written by",
           "inline asm with one operand list per line: five physical lines with the opcode on",
           "a line of its own, or four with the D list on the opcode's line -- column",
           "`lines/mma`) with requantising",
           "epilogues between phases, and a final epilogue (shared staging, softmax, 3x3",
           "texture gather, two integer-coordinate texture reads, `sust.b.2d` store, aux-plane",
           "store).  `<kernel>.launch.json` describes how to launch each kernel.", "",
           "Statements are counted per function as in the design notes (instructions and",
           "labels, a multi-line instruction located at its first line).  The mma region runs",
           "from the first mma's first line to the last mma's last line; its statement range",
           "is first mma .. last mma.", "",
           "| fixture | source | entry | lines | statements | mma | lines/mma | chains "
           "| mma region (lines) | mma region (statements) | bytes |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for stem, src, entry, _phases, per_arch in results:
        for arch, a in per_arch.items():
            out.append(f"| `{fixture_name(stem, arch)}` | `src/{src}` | `{entry}` | {a['physical_lines']} "
                       f"| {a['statements']} | {a['mma']} "
                       f"| {'/'.join(map(str, a['mma_line_spans']))} | {a['chains']} "
                       f"| {a['region_lines'][0]}-{a['region_lines'][1]} "
                       f"| s{a['region_statements'][0]}-s{a['region_statements'][1]} "
                       f"| {a['bytes']} |")
    out += ["", "Commands (run from the repository root):", "", "```"]
    for stem, src, _entry, _phases, per_arch in results:
        for arch in per_arch:
            out.append(" ".join(nvcc_cmd(SRC / src, arch, FIX / fixture_name(stem, arch))))
    out += ["```", "", "Every file is checked with `ptxas -O0 -c` for: " +
            "; ".join(f"{a} PTX -> {', '.join(t)}" for a, t in PTXAS_TARGETS.items()) + ".", "",
            "Launching: `src/launch_check.cu` is a host program that JIT-loads a fixture's PTX,",
            "builds the parameter block, buffers, textures and surface its `launch.json` describes",
            "(fills from a fixed-seed generator), launches twice and prints a digest of both",
            "outputs and the count of non-finite output halves.  Build it with",
            "`nvcc -O2 -std=c++17 -o build/launch_check corpus_fixtures/src/launch_check.cu` and run",
            "`build/launch_check PTX KERNEL WIDTH HEIGHT ARENA_BYTES WEIGHT_BYTES` (the numbers are",
            "the `width`/`height` values and the `arena`/`weights` byte sizes of the launch.json).",
            "On an H200 (sm_90, e4m3 mma emulated) the three sm_89 fixtures ran deterministically",
            "(identical digests across runs) with every output half finite.",
            "",
            "`launch.json` (`format: rrsplice-launch/1`): `kernel`, `ptx` (arch -> file),",
            "`ptx_runs_on`, `block`, `grid`, `dynamic_shared_bytes`, `param_block` (`size`,",
            "`align`, `fields`: each with `name`, byte `offset`, `kind` = `buffer` (`bytes`,",
            "`role` input/output, `fill`, `layout`, `extent`: why `bytes` covers every byte the",
            "kernel reads), `texture` (`width`, `height`, `format`,",
            "`channel_desc`, address/filter/read mode, `normalized_coords`), `surface` (`width`,",
            "`height`, `format`, `texel_bytes`), `i32` or `f32` (`value`)), `outputs`, `fills`",
            "(what each fill name means), `phases` and `weight_layout` (byte offsets of each",
            "phase's B block and bias seeds in the weight image), and `fragment_truth` (per",
            "phase: the weight-image byte of every B fragment and bias seed for lane 0 of warp",
            "0, the lane and warp strides, where A comes from and the epilogue's kind; the",
            "ground truth `rrsplice fragments` and `rrsplice descriptor` are tested against).",
            ""]
    for stem, _src, entry, phases, per_arch in results:
        total = sum(p.mma for p in phases)
        out += [f"### {stem} (`{entry}`, {len(phases)} phases, {total} mma)", "",
                "| phase | role | geometry MxNxK | m x n x k tiles | mma | chains | epilogue after |",
                "|---|---|---|---|---|---|---|"]
        for i, p in enumerate(phases, 1):
            epi = "final epilogue" if i == len(phases) else EPI_NAMES[p.epi]
            out.append(f"| {i} | {p.label} | {p.geometry} | {p.mt} x {p.nt} x {p.ks} | {p.mma} "
                       f"| {p.mt * p.nt} | {epi} |")
        a = next(iter(per_arch.values()))
        out += ["", f"Branches inside the mma region: {a['region_branches']}; labels: "
                    f"{a['region_labels']}.  Texture reads before the region: {a['tex_before']} "
                    f"of {a['tex']}; surface stores after it: {a['sust_after']} of {a['sust']}.", ""]
    return "\n".join(out)


def generate(dest: Path, ptxas: bool) -> list:
    results = []
    for stem, src, entry, width, height, mma_lines in KERNELS:
        phases = phase_table(ROOT / SRC / src)
        per_arch = {}
        for arch in ARCHS:
            rel = fixture_name(stem, arch)
            out = dest / rel
            run(nvcc_cmd(SRC / src, arch, out.relative_to(ROOT) if out.is_relative_to(ROOT) else out))
            a = analyse(out)
            if a["entry"] != entry:
                raise SystemExit(f"{rel}: entry {a['entry']} != {entry}")
            if a["mma"] != sum(p.mma for p in phases):
                raise SystemExit(f"{rel}: {a['mma']} mma, table says {sum(p.mma for p in phases)}")
            if a["mma_line_spans"] != [mma_lines]:
                raise SystemExit(f"{rel}: mma statements span {a['mma_line_spans']} lines, "
                                 f"expected {mma_lines}")
            if a["chains"] != sum(p.mt * p.nt for p in phases):
                raise SystemExit(f"{rel}: {a['chains']} chains")
            if ptxas:
                for target in PTXAS_TARGETS[arch]:
                    run(["ptxas", f"-arch={target}", "-O0", "-c", str(out), "-o", "/dev/null"])
            per_arch[arch] = a
            print(f"{rel}: {a['physical_lines']} lines, {a['statements']} statements, "
                  f"{a['mma']} mma, region lines {a['region_lines']} "
                  f"statements {a['region_statements']}, {a['region_branches']} branches in region")
        desc = launch_description(stem, src, entry, width, height, phases)
        (dest / f"{stem}.launch.json").write_text(json.dumps(desc, indent=2) + "\n")
        results.append((stem, src, entry, phases, per_arch))
    variants = generate_variants(dest, ptxas)
    surface = generate_surface(dest, ptxas)
    (dest / "README_real.md").write_text(readme(results) + "\n" + readme_variants(variants)
                                         + "\n" + readme_surface(surface) + "\n")
    return results


def _ptxas_all(out: Path, arch: str, ptxas: bool) -> None:
    if ptxas:
        for target in PTXAS_TARGETS[arch]:
            run(["ptxas", f"-arch={target}", "-O0", "-c", str(out), "-o", "/dev/null"])


def _rel(out: Path) -> Path:
    return out.relative_to(ROOT) if out.is_relative_to(ROOT) else out


def generate_variants(dest: Path, ptxas: bool) -> list:
    """The swin_tiny variant family (VARIANTS), sm_89 PTX only."""
    phases = phase_table(ROOT / SRC / VARIANT_SOURCE)
    out_rows = []
    for stem, entry, flags in VARIANTS:
        rel = fixture_name(stem, VARIANT_ARCH)
        out = dest / rel
        run(nvcc_cmd(SRC / VARIANT_SOURCE, VARIANT_ARCH, _rel(out), variant_flags(entry, flags)))
        a = analyse(out)
        if a["entry"] != entry:
            raise SystemExit(f"{rel}: entry {a['entry']} != {entry}")
        if a["mma"] != sum(p.mma for p in phases):
            raise SystemExit(f"{rel}: {a['mma']} mma")
        _ptxas_all(out, VARIANT_ARCH, ptxas)
        out_rows.append((stem, entry, flags, a))
        print(f"{rel}: {a['physical_lines']} lines, {a['statements']} statements, "
              f"region statements {a['region_statements']}")
    return out_rows


def generate_surface(dest: Path, ptxas: bool) -> dict:
    """The surface-store/roundf kernel: one of each shape the sust rewrite knows, roundf."""
    rel = fixture_name(SURFACE_STEM, VARIANT_ARCH)
    out = dest / rel
    run(nvcc_cmd(SRC / SURFACE_SOURCE, VARIANT_ARCH, _rel(out)))
    text = out.read_text()
    facts = {"file": rel, "lines": len(text.splitlines()), "bytes": len(text.encode())}
    for shape in SUST_SHAPES:
        n = len(re.findall(r"^\s*" + re.escape(shape) + r"\s", text, re.M))
        if n != 1:
            raise SystemExit(f"{rel}: {n} `{shape}` statements, expected 1")
        facts[shape] = n
    facts["add.rz"] = len(re.findall(r"^\s*add\.rz\.ftz\.f32\s", text, re.M))
    facts["cvt.rzi.f32.f32"] = len(re.findall(r"^\s*cvt\.rzi\.f32\.f32\s", text, re.M))
    if facts["add.rz"] != 5 or facts["cvt.rzi.f32.f32"] != 5:
        raise SystemExit(f"{rel}: {facts['add.rz']} add.rz / {facts['cvt.rzi.f32.f32']} "
                         "cvt.rzi, expected 5 (four in rrsurf_round_kernel, one in "
                         "rrround_all_kernel)")
    _ptxas_all(out, VARIANT_ARCH, ptxas)
    print(f"{rel}: {facts['lines']} lines, one of each surface-store shape, "
          f"{facts['add.rz']} roundf idioms")
    return facts


def readme_variants(rows: list) -> str:
    out = ["## The swin_tiny variant family", "",
           f"`src/{VARIANT_SOURCE}` compiled again for {VARIANT_ARCH} under the flags DLSS's",
           "kernel variants differ in: the motion-vector scale after the mma region (`_mvhi`",
           "2.0, `_mvlo` 0.5), an HDR tone-map or an LDR clamp before it (so every register of",
           "the region is renumbered), and `_folded` (one epilogue scale inside the region",
           "folded away: porting a cut recipe to it is refused). Family pattern:",
           "`rrswin_tiny_mv(hi|lo)_(hdr|ldr)(_folded)?_kernel`. Launch them like `swin_tiny`",
           "(`swin_tiny.launch.json` with the kernel name replaced).", "",
           "| fixture | entry | flags | lines | statements | mma region (statements) |",
           "|---|---|---|---|---|---|"]
    for stem, entry, flags, a in rows:
        out.append(f"| `{fixture_name(stem, VARIANT_ARCH)}` | `{entry}` | `{' '.join(flags)}` "
                   f"| {a['physical_lines']} | {a['statements']} "
                   f"| s{a['region_statements'][0]}-s{a['region_statements'][1]} |")
    out += ["", "```"]
    for stem, entry, flags, _a in rows:
        out.append(" ".join(nvcc_cmd(SRC / VARIANT_SOURCE, VARIANT_ARCH,
                                     FIX / fixture_name(stem, VARIANT_ARCH),
                                     variant_flags(entry, flags))))
    out += ["```", ""]
    return "\n".join(out)


def readme_surface(f: dict) -> str:
    return "\n".join([
        "## Surface stores and roundf", "",
        f"`{f['file']}` ({f['lines']} lines) from `src/{SURFACE_SOURCE}`: `rrsurf_round_kernel`",
        "stores through each surface-store shape the `sust` rewrite knows (" +
        ", ".join(f"`{s}`" for s in SUST_SHAPES) + "; the last through inline asm) and rounds",
        "with `roundf` (`copysign.f32`, `add.rz.ftz.f32`, `cvt.rzi.f32.f32`; two of the four",
        "pairs are interleaved, the add and its cvt not adjacent); `rrround_all_kernel` rounds",
        "the float bit patterns `base + i` (used to compare the `rz_round` rewrite on all 2^32",
        f"inputs). {f['add.rz']} `add.rz`, {f['cvt.rzi.f32.f32']} `cvt.rzi.f32.f32`.", "",
        "```", " ".join(nvcc_cmd(SRC / SURFACE_SOURCE, VARIANT_ARCH, FIX / f["file"])), "```",
        ""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-ptxas", action="store_true", help="skip the ptxas acceptance checks")
    ap.add_argument("--launch-only", action="store_true",
                    help="rewrite only the <kernel>.launch.json files (no nvcc; the .ptx and "
                         "README_real.md are left alone)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary directory and compare with the committed files")
    args = ap.parse_args()
    if args.launch_only:
        for stem, src, entry, width, height, _ in KERNELS:
            desc = launch_description(stem, src, entry, width, height,
                                      phase_table(ROOT / SRC / src))
            (ROOT / FIX / f"{stem}.launch.json").write_text(json.dumps(desc, indent=2) + "\n")
            print(f"wrote {FIX / (stem + '.launch.json')}")
        return
    if not args.check:
        generate(ROOT / FIX, not args.no_ptxas)
        return
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp), not args.no_ptxas)
        bad = [f.name for f in sorted(Path(tmp).iterdir())
               if not (ROOT / FIX / f.name).exists()
               or (ROOT / FIX / f.name).read_bytes() != f.read_bytes()]
        if bad:
            raise SystemExit("differs from the committed fixtures: " + ", ".join(bad))
        print("committed fixtures are up to date")


if __name__ == "__main__":
    main()
