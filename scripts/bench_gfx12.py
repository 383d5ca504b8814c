#!/usr/bin/env python3
"""The gfx1201 instruction mix of `rrsplice body new --lang hip` bodies, per phase.

For every GEMM phase of every fixture: a one-phase cut recipe (`recipe new --abi scratch`),
its HIP body (`body new --lang hip --mma wmma`, or `--mma scalar`), compiled for gfx1201 the
way a user links it (clang-19 -x hip --offload-arch=gfx1201 -O2 -fgpu-rdc -emit-llvm, then
llc-19 -mtriple=amdgcn-amd-amdhsa -mcpu=gfx1201), and counted in the assembly of the body's
function: instructions, v_wmma, ds_bpermute, v_cndmask, v_perm, LDS reads/writes, global
loads, scratch loads (the call's stack-passed arguments: the ABI passes the first VGPR
arguments in registers) and stores (spills), VGPRs, ScratchSize.

The body is measured in a module with a small kernel that calls it (its arguments loaded from
a buffer), compiled with the call kept (`-fno-inline-functions`), as the user's link has it:
compiled alone, a device function has no kernel to allocate its `__shared__` images in, and
llc replaces every access to them with a trap (`s_trap 2`) and placeholder addresses, which
is neither the body's code nor its size; a body whose measured function still holds an
`s_trap` is an error. The same kernel with the body inlined gives the LDS bytes and waves
per SIMD from its descriptor (`.amdhsa_group_segment_fixed_size`, llc's `Occupancy`).

With `--regions`: the whole-region image-mode HIP body of each recipe (`body new --staging
image --lang hip`: every phase through WMMA where it can be, the lifted epilogues between
them), compiled the same way in a kernel that calls it, and counted over every device
function of the module (the body and the out-of-line helpers it calls). The phase code is
measured as a difference: the same body with each WMMA phase's emitted code replaced by
empty `asm volatile` statements that read its inputs and define its outputs (no
instructions: the lifted epilogues keep their values) is compiled too; what the full body
has more is the phase code (A/B/C staging, operand loads, v_wmma, rounding, D back). With
`--per-phase`, each phase alone is stubbed as well, to see its own v_wmma.

Usage: python scripts/bench_gfx12.py [FIXTURE.ptx ...] [--mma wmma|scalar] [--json FILE]
       [--keep DIR]
       python scripts/bench_gfx12.py --regions [RECIPE.py ...] [--per-phase] [--json FILE]
Default fixtures: corpus_fixtures/swin_{tiny,small,big}_sm89.ptx; default recipes:
recipes/swin_{tiny,small,big}_sm89.py. Needs clang-19, llc-19.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT = ["corpus_fixtures/swin_tiny_sm89.ptx", "corpus_fixtures/swin_small_sm89.ptx",
           "corpus_fixtures/swin_big_sm89.ptx"]
CLANG = ["-x", "hip", "--offload-arch=gfx1201", "--cuda-device-only", "-nogpulib", "-nogpuinc",
         "-fgpu-rdc", "-O2", "-emit-llvm", "-c"]
INLINE = ["-mllvm", "-inline-threshold=100000"]
CALL = ["-fno-inline-functions"]      # the body stays a called function, as it is linked
LLC = ["-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx1201", "-O2"]

# what each counter counts: a mnemonic pattern (anchored at the mnemonic's start)
COUNTERS = {
    "v_wmma": r"v_wmma_", "ds_bpermute": r"ds_bpermute", "v_cndmask": r"v_cndmask",
    "v_perm": r"v_perm_", "lds_reads": r"ds_(load|read)", "lds_writes": r"ds_(store|write)",
    "global_loads": r"global_load", "scratch_loads": r"scratch_load",
    "scratch_stores": r"scratch_store", "cvt_f16": r"v_cvt_(f16_f32|f32_f16)",
    "waits": r"s_(wait|delay_alu|clause|nop)", "traps": r"s_trap",
}
_INSN = re.compile(r"^\s+([a-z][a-z0-9_]*)\b")


def tool(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        raise SystemExit(f"{name} not found (Debian: apt-get install {name.split('-')[0]}-19"
                         f"{'' if name.startswith('clang') else ' (package llvm-19)'})")
    return exe


def function_asm(asm: str, name: str) -> str:
    """The lines of function `name` in llc's output (label to .Lfunc_end), with its info."""
    start = asm.index(f"\n{name}:")
    end = asm.index(".Lfunc_end", start)
    info = min(i for i in (asm.find("; Function info:", end), asm.find("; Kernel info:", end),
                           len(asm)) if i >= 0)
    stop = asm.find("\t.text", info)
    tail = asm[info:stop if stop > 0 else None]
    return asm[start:end] + "\n" + tail


def count(fn_asm: str) -> dict:
    """The counters of one function's assembly."""
    mnems = [m.group(1) for line in fn_asm.splitlines() if (m := _INSN.match(line))]
    out = {"instructions": len(mnems),
           "spills": sum(1 for line in fn_asm.splitlines() if "Folded Spill" in line)}
    for key, pat in COUNTERS.items():
        rx = re.compile(pat)
        out[key] = sum(1 for x in mnems if rx.match(x))
    for key, pat in (("vgprs", r"; NumVgprs: (\d+)"), ("scratch_bytes", r"; ScratchSize: (\d+)"),
                     ("occupancy", r"; Occupancy: (\d+)")):
        m = re.search(pat, fn_asm)
        out[key] = int(m.group(1)) if m else None
    return out


def kernel_source(plan, body_name: str) -> str:
    """A kernel that calls the body once per thread, its arguments loaded from a buffer,
    with a scratch array of the recipe's stride: what the descriptor is read from."""
    args = []
    for i, a in enumerate(plan.args):
        if a.role == "scratch":
            args.append("rr_bench_slot_addr()")
        elif a.c_type == "rr_u64":
            args.append(f"((const rr_u64 *)in)[{i} * 1024 + t]")
        else:
            args.append(f"in[{i} * 2048 + t]")
    threads = plan.threads or 1024
    return bench_kernel(body_name, max(plan.stride, 4) * threads, threads, "rr_linear_tid",
                        plan.callee, args)


def bench_kernel(body_name: str, scratch_bytes: int, threads: int, tid: str, callee: str,
                 args: list) -> str:
    """The kernel source: a .shared scratch array of `scratch_bytes`, one call of `callee`
    per thread with `args` (C expressions of `in`, `t` and `rr_bench_slot_addr()`)."""
    return "\n".join([
        f'#include "{body_name}"',
        f"static __shared__ __attribute__((aligned(16))) rr_u8 rr_bench_scratch"
        f"[{scratch_bytes}];",
        "__device__ static inline rr_u32 rr_bench_slot_addr(void)",
        "{",
        "    return (rr_u32)(__SIZE_TYPE__)(__attribute__((address_space(3))) rr_u8 *)"
        "rr_bench_scratch;",
        "}",
        f'extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, '
        f'{threads}))) void rr_bench(const rr_u32 *in)',
        "{",
        f"    const rr_u32 t = {tid}();",
        f"    {callee}(" + ", ".join(args) + ");",
        "}", ""])


def compile_asm(src: Path, tmp: Path, extra=(), tag: str = "") -> str:
    bc, s = tmp / (src.stem + tag + ".bc"), tmp / (src.stem + tag + ".s")
    for cmd in ([tool("clang-19"), *CLANG, *extra, str(src), "-o", str(bc)],
                [tool("llc-19"), *LLC, str(bc), "-o", str(s)]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:2])}...: {p.stderr[-2000:]}")
    return s.read_text()


def body_counts(kernel: Path, tmp: Path, callee: str) -> dict:
    """The counters of the body function, compiled in `kernel`'s module with the call kept."""
    c = count(function_asm(compile_asm(kernel, tmp, CALL, "_call"), callee))
    if c["traps"]:
        raise RuntimeError(f"{kernel}: {callee} compiles to {c['traps']} s_trap: an access "
                           "llc could not lower (an LDS image without its kernel?)")
    return c


def bench_phase(fixture: Path, phase, tmp: Path, mma: str) -> dict:
    from rrsplice.body import BodyError, new_body
    from rrsplice.workflow.scaffold import new_recipe
    name = "f" + re.sub(r"\W", "_", fixture.stem) + f"_p{phase.index}"
    row = {"fixture": fixture.name, "phase": phase.index, "geometry": phase.geometry,
           "mma": len(phase.mmas)}
    rec = tmp / f"{name}.py"
    new_recipe(name, fixture, f"s{phase.first}-s{phase.last}", abi="scratch", out=rec,
               occupancy=False, force=True)
    try:
        res = new_body(rec, "hip", tmp / f"{name}.hip", mma=mma)
    except BodyError as e:
        row["error"] = str(e)
        return row
    kern = tmp / f"{name}_kernel.hip"
    kern.write_text(kernel_source(res.plan, res.body.name))
    t0 = time.perf_counter()
    body = body_counts(kern, tmp, res.plan.callee)
    row["compile_s"] = round(time.perf_counter() - t0, 2)
    # the body inlined into the kernel (as a linked call site would not be, but so that the
    # descriptor describes the body, not the stack-passed arguments of a call)
    kasm = compile_asm(kern, tmp, INLINE)
    k = count(function_asm(kasm, "rr_bench"))
    m = re.search(r"\.amdhsa_group_segment_fixed_size (\d+)", kasm)
    scratch = max(res.plan.stride, 4) * (res.plan.threads or 1024)
    row.update(body)
    row["lds_bytes_kernel"] = int(m.group(1)) if m else None
    row["lds_bytes_body"] = (row["lds_bytes_kernel"] - scratch) if m else None
    row["waves_per_simd"] = k["occupancy"]
    row["kernel_vgprs"] = k["vgprs"]
    row["kernel_scratch_bytes"] = k["scratch_bytes"]
    return row


def per_wmma(row: dict) -> str:
    w = row.get("v_wmma") or 0
    return f"{(row['instructions'] - w) / w:.1f}" if w else "-"


def per_wmma_net(row: dict) -> str:
    """Other instructions per WMMA without the f16 rounding of the accumulators (v_cvt, the
    bit-exact sequence's own cost) and the stack-passed argument loads of the call ABI."""
    w = row.get("v_wmma") or 0
    net = row["instructions"] - w - row["cvt_f16"] - row["scratch_loads"]
    return f"{net / w:.1f}" if w else "-"


def table(rows: list) -> str:
    cols = ["fixture", "phase", "geometry", "mma", "instructions", "v_wmma", "other/WMMA",
            "net/WMMA",
            "ds_bpermute", "v_cndmask", "v_perm", "cvt_f16", "lds_reads", "lds_writes",
            "global_loads", "scratch_loads", "scratch_stores", "vgprs", "scratch_bytes",
            "kernel_scratch_bytes", "lds_bytes_body", "waves_per_simd"]
    out = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['fixture']} | {r['phase']} | {r['geometry']} | {r['mma']} | "
                       f"not generated: {r['error'][:120]} |")
            continue
        special = {"other/WMMA": per_wmma, "net/WMMA": per_wmma_net}
        vals = [special[c](r) if c in special else r.get(c) for c in cols]
        out.append("| " + " | ".join("-" if v is None else str(v) for v in vals) + " |")
    return "\n".join(out)


def summary(rows: list) -> str:
    """One line per fixture and one for all: sums, and the per-WMMA figures."""
    out = ["| fixture | bodies / not generated | mma = v_wmma | instructions | other/WMMA | "
           "of which v_cvt | net/WMMA | ds_bpermute | v_cndmask | v_perm | LDS reads | "
           "LDS writes | global loads | ABI stack loads | scratch stores | max VGPRs | "
           "max body LDS | min waves/SIMD | compile s (sum, max) |", "|" + " --- |" * 19]
    groups = {}
    for r in rows:
        groups.setdefault(r["fixture"], []).append(r)
    for name, rs in list(groups.items()) + [("all", rows)]:
        ok = [r for r in rs if "error" not in r]
        if not ok:
            continue

        def tot(k, ok=ok):
            return sum(r[k] for r in ok)
        w, ins, cvt, abi = tot("v_wmma"), tot("instructions"), tot("cvt_f16"), \
            tot("scratch_loads")
        out.append(
            f"| {name} | {len(ok)} / {len(rs) - len(ok)} | {tot('mma')} = {w} | {ins:,} | "
            f"{(ins - w) / w:.1f} | {cvt / w:.1f} | {(ins - w - cvt - abi) / w:.1f} | "
            f"{tot('ds_bpermute')} | {tot('v_cndmask')} | {tot('v_perm')} | "
            f"{tot('lds_reads')} | {tot('lds_writes')} | {tot('global_loads')} | {abi} | "
            f"{tot('scratch_stores')} | {max(r['vgprs'] for r in ok)} | "
            f"{max(r['lds_bytes_body'] for r in ok)} | "
            f"{min(r['waves_per_simd'] for r in ok)} | {tot('compile_s'):.1f}, "
            f"{max(r['compile_s'] for r in ok):.2f} |")
    return "\n".join(out)


def totals(rows: list) -> dict:
    ok = [r for r in rows if "error" not in r]
    keys = ["mma", "instructions", "v_wmma", "ds_bpermute", "v_cndmask", "v_perm", "cvt_f16",
            "lds_reads", "lds_writes", "global_loads", "scratch_loads", "scratch_stores"]
    t = {k: sum(r[k] for r in ok) for k in keys}
    t["bodies"], t["not_generated"] = len(ok), len(rows) - len(ok)
    t["max_vgprs"] = max((r["vgprs"] for r in ok), default=None)
    t["min_waves_per_simd"] = min((r["waves_per_simd"] for r in ok
                                   if r["waves_per_simd"] is not None), default=None)
    t["max_compile_s"] = max((r["compile_s"] for r in ok), default=None)
    return t


# ------------------------------------------------------------------ whole regions

REGIONS = ["recipes/swin_tiny_sm89.py", "recipes/swin_small_sm89.py",
           "recipes/swin_big_sm89.py"]
_SIG = re.compile(r'extern "C" __device__ (?:void|struct \w+) (\w+)\(([^)]*)\)')


def region_kernel_source(text: str, body_name: str, stride: int) -> tuple:
    """A kernel that calls the lifted body once per thread, its arguments loaded from a
    buffer; the scratch parameter (named `..._scratch`) gets a .shared array's address,
    `stride` bytes per thread of the block the body's image is sized for. Returns (source,
    callee, scratch bytes)."""
    threads = 32 * int(re.search(r"rr_img_\w+\[(\d+)\]", text).group(1))
    scratch_bytes = stride * threads
    m = _SIG.search(text)
    callee, params = m.group(1), [x.strip() for x in m.group(2).split(",") if x.strip()]
    args = []
    for i, prm in enumerate(params):
        ty, name = prm.rsplit(" ", 1)
        if name.endswith("_scratch"):
            args.append("rr_bench_slot_addr()")
        elif ty == "rr_u64":
            args.append(f"((const rr_u64 *)in)[{i} * 1024 + t]")
        elif ty == "float":
            args.append(f"((const float *)in)[{i} * 2048 + t]")
        else:
            args.append(f"({ty})in[{i} * 2048 + t]")
    return bench_kernel(body_name, scratch_bytes, threads, "rr_lift_linear_tid", callee,
                        args), callee, scratch_bytes


def module_counts(asm: str, kernel: str = "rr_bench") -> dict:
    """The counters summed over every function of the module but `kernel` (instructions,
    v_wmma, ...), and the largest VGPR count and scratch size among them."""
    names = re.findall(r"^([A-Za-z_.$][\w.$]*):\s*(?:;.*)?$", asm, flags=re.M)
    fns = [n for n in names if n != kernel and not n.startswith(".")
           and re.search(rf"\.type\s+{re.escape(n)},@function", asm)]
    tot: dict = {}
    for n in fns:
        c = count(function_asm(asm, n))
        for k, v in c.items():
            if k in ("vgprs", "scratch_bytes", "occupancy"):
                if v is not None:
                    tot[k] = max(tot.get(k) or 0, v)
            else:
                tot[k] = tot.get(k, 0) + v
    tot["functions"] = len(fns)
    return tot


def _phase_block(w) -> str:
    """A WMMA phase's program as the body's text holds it (indented one level)."""
    return "\n".join("    " + x if x else "" for x in w.lines)


def stub(text: str, phases, keep=()) -> str:
    """`text` with the code of every WMMA phase (but those in `keep`) replaced by empty
    `asm volatile` statements reading its inputs and defining its outputs."""
    for w in phases:
        if w.index in keep:
            continue
        block = _phase_block(w)
        assert block in text, w.index
        rep = [f"    /* phase {w.index}'s WMMA program, stubbed (bench_gfx12.py) */"]
        rep += [f'    asm volatile("" :: "v"({x}));' for x in w.inputs]
        rep += [f'    asm volatile("" : "=v"({x}));' for x in w.outputs]
        text = text.replace(block, "\n".join(rep))
    return text


def phase_lines(text: str, phases) -> list:
    """(first, last) 1-based line numbers of each WMMA phase's program in the body `text`."""
    out = []
    for w in phases:
        block = _phase_block(w)
        at = text.index(block)
        first = text.count("\n", 0, at) + 1
        out.append((first, first + block.count("\n")))
    return out


def by_line(asm: str, body_file: str, ranges: list, kernel: str = "rr_bench") -> dict:
    """The counters of the instructions llc's line table places in the phase code (a line
    of rr_mma.h, or of `body_file` inside one of `ranges`), over every function but
    `kernel`: the phase code counted directly, not as a difference of two builds (needs
    `-gline-tables-only`, which does not change the code)."""
    # `.file N "DIR" "NAME"`: NAME may be a path relative to DIR, depending on where the
    # compiler ran; the basename is what identifies the file here
    files = {m.group(1): Path(m.group(2)).name for m in
             re.finditer(r'^\s*\.file\s+(\d+)\s+"[^"]*"\s+"([^"]+)"', asm, flags=re.M)}
    picked, in_kernel, here = [], False, None
    for line in asm.splitlines():
        if re.match(r"^[A-Za-z_.$][\w.$]*:", line) and not line.startswith("."):
            in_kernel = line.startswith(kernel + ":")
            here = None
            continue
        m = re.match(r"^\s*\.loc\s+(\d+)\s+(\d+)", line)
        if m:
            name, ln = files.get(m.group(1), ""), int(m.group(2))
            here = name == "rr_mma.h" or (name == body_file and ln > 0 and
                                          any(a <= ln <= b for a, b in ranges))
            continue
        if not in_kernel and here and _INSN.match(line):
            picked.append(line)
    return count("\n".join(picked))


def _cpu_compile(src: Path, tmp: Path, tag: str, extra=()) -> tuple:
    import resource
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    asm = compile_asm(src, tmp, [*CALL, *extra], tag)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return asm, round((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), 1)


def bench_region(recipe: Path, tmp: Path, per_phase: bool = False) -> dict:
    from rrsplice.lift import lift_region
    from rrsplice.workflow.recipe import load_recipe
    body = lift_region(recipe, "image", mma="wmma")
    rec = load_recipe(recipe)
    d = tmp / recipe.stem
    d.mkdir(parents=True, exist_ok=True)
    (d / "rr_lift.h").write_text(body.header)
    (d / "rr_mma.h").write_text(body.mma_header or "")
    stride = rec.const("RET_STRIDE") or 128
    row: dict = {"recipe": recipe.name, "phases": len(body.phases),
                 "wmma_phases": len(body.wmma),
                 "fallback": [n for n in body.notes if "scalar fallback" in n],
                 "expected_wmma": sum(w.wmmas for w in body.wmma)}
    variants = {"full": body.text, "stub": stub(body.text, body.wmma)}
    if per_phase:
        for w in body.wmma:
            variants[f"p{w.index}"] = stub(body.text, body.wmma, keep=(w.index,))
    out = {}
    for tag, text in variants.items():
        (d / f"{tag}.hip").write_text(text)
        ksrc, callee, scratch = region_kernel_source(text, f"{tag}.hip", stride)
        (d / f"{tag}_kernel.hip").write_text(ksrc)
        asm, cpu = _cpu_compile(d / f"{tag}_kernel.hip", d, "",
                                ("-gline-tables-only",) if tag == "full" else ())
        c = module_counts(asm)
        if tag == "full":
            row["phase_by_line"] = by_line(asm, f"{tag}.hip", phase_lines(text, body.wmma))
        body_fn = count(function_asm(asm, callee))
        if c.get("traps"):
            raise RuntimeError(f"{recipe}: {tag}: s_trap in the body")
        c["body_vgprs"], c["body_scratch_bytes"] = body_fn["vgprs"], body_fn["scratch_bytes"]
        c["body_spills"] = body_fn["spills"]
        c["compile_cpu_s"] = cpu
        out[tag] = c
        if tag == "full":
            # the kernel's descriptor (the call kept below the inlining threshold too, the
            # body being large): LDS bytes and waves per SIMD
            kasm = compile_asm(d / f"{tag}_kernel.hip", d, INLINE, "_inline")
            k = count(function_asm(kasm, "rr_bench"))
            m = re.search(r"\.amdhsa_group_segment_fixed_size (\d+)", kasm)
            row.update(kernel_scratch_bytes=k["scratch_bytes"], kernel_vgprs=k["vgprs"],
                       waves_per_simd=k["occupancy"], kernel_v_wmma=k["v_wmma"],
                       lds_bytes_body=(int(m.group(1)) - scratch) if m else None)
    full, st = out["full"], out["stub"]
    w = full["v_wmma"]
    row.update(full=full, stub=st)
    row["phase"] = {k: full[k] - st[k] for k in full
                    if isinstance(full[k], int) and k in st and k not in
                    ("vgprs", "scratch_bytes", "occupancy", "functions", "body_vgprs",
                     "body_scratch_bytes", "body_spills")}
    row["per_wmma_whole"] = round(full["instructions"] / w, 1) if w else None
    row["phase_per_wmma"] = round(row["phase"]["instructions"] / w, 1) if w else None
    row["phase_other_per_wmma"] = round((row["phase"]["instructions"] - w) / w, 1) if w else None
    # the f16 round trip of the accumulators (each k32 step rounds its 8 sums per lane to
    # f16 and widens them for the next: the bit-exact sequence's own v_cvt) apart
    row["phase_cvt_per_wmma"] = round(row["phase"]["cvt_f16"] / w, 1) if w else None
    row["phase_net_per_wmma"] = round((row["phase"]["instructions"] - w - row["phase"]["cvt_f16"])
                                      / w, 1) if w else None
    if per_phase:
        row["per_phase_wmma"] = {f"p{x.index}": (x.wmmas, out[f"p{x.index}"]["v_wmma"])
                                 for x in body.wmma}
    return row


def region_table(rows: list) -> str:
    out = ["| recipe | WMMA phases / phases | v_wmma (expected) | instructions | per WMMA | "
           "phase code instr. (by line) | phase code per WMMA (other) | phase f16 round "
           "trip v_cvt per WMMA | phase other per WMMA without it | phase ds_bpermute | "
           "phase v_cndmask | phase v_perm | phase LDS reads / writes | phase global loads | "
           "whole ds_bpermute / v_cndmask | body VGPRs, scratch bytes | spills (body, of "
           "which phase code) | kernel: waves/SIMD, body LDS | clang+llc CPU s |",
           "|" + " --- |" * 19]
    for r in rows:
        f, ph, pl = r["full"], r["phase"], r["phase_by_line"]
        out.append(
            f"| {r['recipe']} | {r['wmma_phases']} / {r['phases']} | {f['v_wmma']} "
            f"({r['expected_wmma']}) | {f['instructions']:,} | {r['per_wmma_whole']} | "
            f"{ph['instructions']:,} ({pl['instructions']:,}) | {r['phase_per_wmma']} "
            f"({r['phase_other_per_wmma']}) | {r['phase_cvt_per_wmma']} | "
            f"{r['phase_net_per_wmma']} | {pl['ds_bpermute']} | {pl['v_cndmask']} | {pl['v_perm']} | "
            f"{ph['lds_reads']} / {ph['lds_writes']} | {ph['global_loads']} | "
            f"{f['ds_bpermute']} / {f['v_cndmask']} | {f['body_vgprs']}, "
            f"{f['body_scratch_bytes']} | {f['body_spills']} ({f['body_spills'] - r['stub']['body_spills']}) | "
            f"{r['waves_per_simd']}, {r['lds_bytes_body']} | {f['compile_cpu_s']} |")
    return "\n".join(out)


def main(argv=None) -> int:
    from rrsplice.analysis.mma import phases
    from rrsplice.infra.cache import load_analysis, load_module
    from rrsplice.ptx.select import select_function
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("fixtures", nargs="*", default=DEFAULT)
    ap.add_argument("--mma", choices=["wmma", "scalar"], default="wmma")
    ap.add_argument("--phases", default=None, help="only these phase numbers (1,3,...)")
    ap.add_argument("--json", default=None, help="also write the rows and totals as JSON")
    ap.add_argument("--keep", default=None, help="leave recipes, bodies and assembly in DIR")
    ap.add_argument("--regions", action="store_true",
                    help="whole-region image-mode HIP bodies of recipes (the arguments)")
    ap.add_argument("--per-phase", action="store_true",
                    help="with --regions: also stub all phases but one, for each phase")
    args = ap.parse_args(argv)
    if args.regions:
        rows = []
        with tempfile.TemporaryDirectory(prefix="rrsplice-gfx12-") as t:
            tmp = Path(args.keep) if args.keep else Path(t)
            for rp in (args.fixtures if args.fixtures != DEFAULT else REGIONS):
                r = bench_region(Path(rp), tmp, args.per_phase)
                rows.append(r)
                print(f"{rp}: {r['full']['v_wmma']} v_wmma, {r['per_wmma_whole']} per WMMA, "
                      f"phase code {r['phase_per_wmma']} per WMMA ({r['phase_other_per_wmma']} "
                      f"other: {r['phase_cvt_per_wmma']} f16 round trip, "
                      f"{r['phase_net_per_wmma']} the rest)", file=sys.stderr)
        print(region_table(rows))
        if args.json:
            Path(args.json).write_text(json.dumps({"regions": rows}, indent=1) + "\n")
        return 0
    only = {int(x) for x in args.phases.split(",")} if args.phases else None
    rows = []
    with tempfile.TemporaryDirectory(prefix="rrsplice-gfx12-") as t:
        tmp = Path(args.keep) if args.keep else Path(t)
        tmp.mkdir(parents=True, exist_ok=True)
        for fx in args.fixtures:
            fx = Path(fx)
            m = load_module(fx)
            fn, _ = select_function(m, None)
            for ph in phases(fn, load_analysis(m, fn)):
                if only is None or ph.index in only:
                    rows.append(bench_phase(fx, ph, tmp, args.mma))
                    r = rows[-1]
                    print(f"{fx.name} phase {ph.index}: " + (
                        "not generated" if "error" in r else
                        f"{r['instructions']} instructions, {r['v_wmma']} v_wmma, "
                        f"{r['ds_bpermute']} ds_bpermute, {r['v_cndmask']} v_cndmask"),
                        file=sys.stderr)
    tot = totals(rows)
    print(table(rows))
    print()
    print(summary(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"mma": args.mma, "rows": rows, "totals": tot},
                                              indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
