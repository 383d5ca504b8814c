#!/usr/bin/env python3
"""Runtime differential check: the original kernel against the spliced one (patched kernel +
outlined body, linked with nvlink), bit for bit, on an NVIDIA GPU.

Reads the manifest `scripts/gpu_prepare.py` writes (cubins built on a machine without a GPU)
and, for every (fixture, cut):

* builds the inputs the fixture's `<kernel>.launch.json` describes -- the parameter block,
  global buffers, RGBA32F textures and the RGBA16F output surface -- from a fresh random
  seed per trial (recorded in the result);
* poisons every output (plane buffer and surface) before each launch, with a different
  byte for the original and the spliced kernel, so a byte either kernel leaves unwritten
  shows as a mismatch;
* launches the original and the spliced kernel on the same inputs and compares every output
  byte;
* times both (CUDA events, mean of --timing launches after warm-up).

Memory, textures, surfaces and events go through CuPy; modules are loaded and kernels
launched through the CUDA driver API (libcuda, via ctypes), because the kernels take their
96-byte parameter block by value.

    python3 scripts/gpu_diff.py build/gpu/manifest.json --out results.json [--trials 2]

Any other kernel: `--pair ORIGINAL.cubin SPLICED.cubin KERNEL LAUNCH.json`, where the launch
description (rrsplice.workflow.launch) gives the grid, block, dynamic shared memory and every
parameter (buffers with a fill and a role, scalars with a value).

Exit status: 0 when every run that should match matches and every negative control differs.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import struct
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GUARD = 4096        # bytes of seeded input after each buffer (second line of defence)


# ---------------------------------------------------------------- the driver API

class Driver:
    """The few driver calls needed, through ctypes."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(rc, ctypes.byref(name))
            raise RuntimeError(f"{what}: CUDA error {rc} ({(name.value or b'?').decode()})")

    def ensure_context(self) -> None:
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            dev = ctypes.c_int()
            self.check(self.lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
            self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                       "cuDevicePrimaryCtxRetain")
            self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def set_stack(self, nbytes: int) -> int:
        """cuCtxSetLimit(CU_LIMIT_STACK_SIZE); returns the limit in force afterwards."""
        self.lib.cuCtxSetLimit.argtypes = [ctypes.c_int, ctypes.c_size_t]
        self.lib.cuCtxGetLimit.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]
        if nbytes:
            self.check(self.lib.cuCtxSetLimit(0, nbytes), "cuCtxSetLimit")
        got = ctypes.c_size_t()
        self.check(self.lib.cuCtxGetLimit(ctypes.byref(got), 0), "cuCtxGetLimit")
        return got.value

    def load(self, path: Path, kernel: str):
        mod = ctypes.c_void_p()
        self.check(self.lib.cuModuleLoad(ctypes.byref(mod), str(path).encode()),
                   f"cuModuleLoad {path}")
        fn = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), mod, kernel.encode()),
                   f"cuModuleGetFunction {kernel}")
        return mod, fn

    def unload(self, mod) -> None:
        self.lib.cuModuleUnload(mod)

    def launch(self, fn, grid, block, params, smem: int = 0) -> None:
        """`params`: the by-value parameter block (bytes), or one bytes per kernel
        parameter (a list, as pack_args gives it)."""
        args = [params] if isinstance(params, (bytes, bytearray)) else list(params)
        bufs = [ctypes.create_string_buffer(bytes(a), len(a)) for a in args]
        argv = (ctypes.c_void_p * len(bufs))(*[ctypes.cast(b, ctypes.c_void_p) for b in bufs])
        rc = self.lib.cuLaunchKernel(fn, ctypes.c_uint(grid[0]), ctypes.c_uint(grid[1]),
                                     ctypes.c_uint(grid[2]), ctypes.c_uint(block[0]),
                                     ctypes.c_uint(block[1]), ctypes.c_uint(block[2]),
                                     ctypes.c_uint(smem), ctypes.c_void_p(0), argv,
                                     ctypes.c_void_p(0))
        self.check(rc, "cuLaunchKernel")

    def sync(self) -> None:
        self.check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")


# ---------------------------------------------------------------- inputs


FILLS = ("zero", "f16_unit", "f32_unit", "f32_signed2", "e4m3_small")


def fill(rng: np.random.Generator, kind: str, nbytes: int) -> np.ndarray:
    """Host bytes for one buffer, by the launch description's fill name."""
    if kind == "zero":
        return np.zeros(nbytes, np.uint8)
    if kind == "f16_unit":
        return rng.uniform(-1, 1, nbytes // 2).astype(np.float16).view(np.uint8)
    if kind == "f32_unit":
        return rng.uniform(0, 1, nbytes // 4).astype(np.float32).view(np.uint8)
    if kind == "f32_signed2":
        return rng.uniform(-2, 2, nbytes // 4).astype(np.float32).view(np.uint8)
    if kind == "e4m3_small":
        return (rng.integers(0, 256, nbytes, dtype=np.uint8) & 0xBF).astype(np.uint8)
    raise ValueError(f"unknown fill {kind!r}")


_FIELD_BYTES = {"buffer": 8, "texture": 8, "surface": 8, "i32": 4, "f32": 4, "u64": 8}


def check_launch(desc: dict) -> list:
    """The parameter block's fields as (offset, size, name), sorted, after checking that
    every field has a known kind and fill and lies inside the block without overlapping
    another, and that the grid and block are three positive sizes; ValueError otherwise."""
    for key in ("grid", "block"):
        v = desc.get(key)
        if not (isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) and x > 0
                                                             for x in v)):
            raise ValueError(f"{key} must be three positive sizes, got {v!r}")
    pb = desc["param_block"]
    spans = []
    for f in pb["fields"]:
        kind = f.get("kind")
        if kind not in _FIELD_BYTES:
            raise ValueError(f"unknown parameter kind {kind!r} ({f.get('name')})")
        if kind in ("buffer", "texture", "surface") and f.get("fill", "zero") not in FILLS:
            raise ValueError(f"unknown fill {f.get('fill')!r} ({f['name']})")
        off, size = f["offset"], _FIELD_BYTES[kind]
        if off % size or off < 0 or off + size > pb["size"]:
            raise ValueError(f"{f['name']} at offset {off} does not fit the {pb['size']}-byte "
                             f"parameter block with {size}-byte alignment")
        spans.append((off, size, f["name"]))
    spans.sort()
    for (a, n, x), (b, _m, y) in zip(spans, spans[1:], strict=False):
        if a + n > b:
            raise ValueError(f"{x} (offset {a}) overlaps {y} (offset {b})")
    return spans


def compare_outputs(a: dict, a2: dict, b: dict, desc: dict) -> dict:
    """Per output: bytes compared, bytes where the spliced run `b` differs from the original
    `a`, bytes where the original's repeat `a2` differs from `a` (nondeterminism), and bytes
    each kernel left unwritten (still holding its poison: 0xA5 and 0x3C for the original's
    two runs, 0x5A for the spliced run)."""
    per = {}
    for name in a:
        # a byte the original leaves unwritten in both its runs (its two poisons survive)
        # is compared as "the spliced kernel leaves it unwritten too" (its own poison): a
        # kernel that writes only part of an output (the dec stand-ins write one pixel in
        # 16 of their surface) is then compared on what it writes and on nothing else
        unwritten = (a[name] == 0xA5) & (a2[name] == 0x3C)
        mask = np.where(unwritten, b[name] != 0x5A, a[name] != b[name])
        diff = int(np.count_nonzero(mask))
        rep = int(np.count_nonzero((a[name] != a2[name]) & ~unwritten))
        per[name] = {"bytes": int(a[name].size), "mismatches": diff,
                     "written_original": int(a[name].size - np.count_nonzero(unwritten)),
                     "original_repeat_mismatches": rep,
                     "unwritten_original": int(np.count_nonzero(
                         (a[name] == 0xA5) & (a2[name] == 0x3C))),
                     "unwritten_spliced": int(np.count_nonzero(b[name] == 0x5A)
                                              - np.count_nonzero(
                                                  (b[name] == 0x5A) & (a[name] == 0x5A)))}
        if diff:
            per[name]["where"] = _where(desc, name, mask)
    return per


class Inputs:
    """Device objects for one trial: buffers, textures, the output surface, parameter block."""

    def __init__(self, cp, desc: dict, seed: int):
        from cupy.cuda import runtime as rt
        from cupy.cuda import texture as tx
        check_launch(desc)
        self.cp = cp
        rng = np.random.default_rng(seed)
        pb = desc["param_block"]
        self.block = bytearray(pb["size"])
        self.outputs = []          # (name, kind, object)
        self.keep = []
        for f in pb["fields"]:
            kind = f["kind"]
            off = f["offset"]
            if kind == "buffer":
                host = fill(rng, f.get("fill", "zero"), f["bytes"])
                # the launch descriptions declare every byte the kernels read (`extent`;
                # the arena used to be one lane stride short). The guard zone after every
                # buffer, filled from the same seed, stays as a second line of defence: a
                # kernel (or a future fixture) that reads a little past the end reads the
                # same bytes in both runs instead of whatever the allocator put there
                guard = fill(rng, "f32_unit" if f.get("role") != "output" else "zero",
                             GUARD)
                # `bytes_before`: bytes the kernel reads below the pointer it is given (a
                # plane addressed from a base past its start), filled from the same seed
                before = f.get("bytes_before", 0)
                pre = [fill(rng, f.get("fill", "zero"), before)] if before else []
                dev = cp.asarray(np.concatenate(pre + [host, guard]))
                self.keep.append(dev)
                struct.pack_into("<Q", self.block, off, dev.data.ptr + before)
                if f.get("role") == "output":
                    self.outputs.append((f["name"], "buffer", dev[before:before + f["bytes"]]))
            elif kind in ("texture", "surface"):
                w, h = f["width"], f["height"]
                bits = f["channel_desc"][:4]
                fkind = {"float": rt.cudaChannelFormatKindFloat,
                         "unsigned": rt.cudaChannelFormatKindUnsigned,
                         "signed": rt.cudaChannelFormatKindSigned}[f["channel_desc"][4]]
                ch = tx.ChannelFormatDescriptor(*bits, fkind)
                nch = sum(1 for b in bits if b)
                flags = rt.cudaArraySurfaceLoadStore if kind == "surface" else 0
                arr = tx.CUDAarray(ch, w, h, 0, flags)
                dtype = {32: np.float32, 16: np.float16}[bits[0]]
                nbytes = w * h * nch * np.dtype(dtype).itemsize
                host = fill(rng, f.get("fill", "zero"), nbytes).view(dtype).reshape(h, w * nch)
                arr.copy_from(host)
                res = tx.ResourceDescriptor(rt.cudaResourceTypeArray, cuArr=arr)
                if kind == "texture":
                    addr = {"clamp": rt.cudaAddressModeClamp, "wrap": rt.cudaAddressModeWrap,
                            "border": rt.cudaAddressModeBorder}[f.get("address_mode", "clamp")]
                    td = tx.TextureDescriptor(
                        addressModes=(addr, addr),
                        filterMode=(rt.cudaFilterModePoint
                                    if f.get("filter_mode", "point") == "point"
                                    else rt.cudaFilterModeLinear),
                        readMode=rt.cudaReadModeElementType,
                        normalizedCoords=1 if f.get("normalized_coords") else 0)
                    obj = tx.TextureObject(res, td)
                else:
                    obj = tx.SurfaceObject(res)
                    self.outputs.append((f["name"], "surface", (arr, dtype, (h, w * nch))))
                self.keep += [arr, res, obj]
                struct.pack_into("<Q", self.block, off, obj.ptr)
            elif kind == "i32":
                struct.pack_into("<i", self.block, off, int(f["value"]))
            elif kind == "f32":
                struct.pack_into("<f", self.block, off, float(f["value"]))
            elif kind == "u64":
                struct.pack_into("<Q", self.block, off, int(f["value"]))
            else:
                raise ValueError(f"unknown parameter kind {kind!r}")

    def poison(self, byte: int) -> None:
        for _name, kind, obj in self.outputs:
            if kind == "buffer":
                obj.fill(byte)
            else:
                arr, dtype, shape = obj
                arr.copy_from(np.full(shape[0] * shape[1] * np.dtype(dtype).itemsize, byte,
                                      np.uint8).view(dtype).reshape(shape))

    def read(self) -> dict:
        out = {}
        for name, kind, obj in self.outputs:
            if kind == "buffer":
                out[name] = self.cp.asnumpy(obj).view(np.uint8).copy()
            else:
                arr, dtype, shape = obj
                host = np.empty(shape, dtype)
                arr.copy_to(host)
                out[name] = host.view(np.uint8).reshape(-1).copy()
        return out


# ---------------------------------------------------------------- any kernel's launch

def load_launch_description(path):
    """The launch description at `path`, checked by rrsplice.workflow.launch (either form: one
    by-value `param_block`, or `params`, one per kernel parameter)."""
    sys.path.insert(0, str(ROOT))
    from rrsplice.workflow.launch import load_launch
    return load_launch(path)


def host_inputs(launch, seed: int) -> dict:
    """Host bytes of every buffer parameter, by name: its `fill` over `bytes`, then GUARD
    bytes filled from the same seed (zero after an output), in parameter order."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in launch.params:
        if p.kind in ("texture", "surface") and not launch.by_value_block:
            raise ValueError(f"{p.name}: textures and surfaces are supported in the "
                             "param_block form only")
        if not p.is_buffer:
            continue
        if p.fill not in FILLS:
            raise ValueError(f"unknown fill {p.fill!r} ({p.name})")
        host = fill(rng, p.fill, p.bytes)
        guard = fill(rng, "f32_unit" if p.role == "input" else "zero", GUARD)
        pre = [fill(rng, p.fill, p.bytes_before)] if p.bytes_before else []
        out[p.name] = np.concatenate(pre + [host, guard])
    return out


def pack_args(launch, handles: dict) -> list:
    """The kernel's arguments as the driver takes them: [the packed parameter block] for
    the param_block form, else one bytes per parameter. `handles`: name -> the device
    address (buffers) or object handle (textures, surfaces)."""
    def value(p) -> bytes:
        if p.kind in ("buffer", "texture", "surface"):
            return struct.pack("<Q", handles[p.name])
        return p.scalar_bytes()
    if launch.by_value_block:
        block = bytearray(launch.block_size)
        for p in launch.params:
            block[p.offset:p.offset + p.size] = value(p)
        return [bytes(block)]
    return [value(p) for p in launch.params]


class LaunchInputs:
    """Device buffers for one trial of any kernel's launch (buffers and scalars)."""

    def __init__(self, cp, launch, seed: int):
        self.cp = cp
        self.dev = {name: cp.asarray(host) for name, host in host_inputs(launch, seed).items()}
        before = {p.name: p.bytes_before for p in launch.params if p.is_buffer}
        self.args = pack_args(launch, {n: d.data.ptr + before[n] for n, d in self.dev.items()})
        self.outputs = [(p.name, self.dev[p.name][p.bytes_before:p.bytes_before + p.bytes])
                        for p in launch.params if p.is_buffer and p.role in ("output", "inout")]

    def poison(self, byte: int) -> None:
        for _name, d in self.outputs:
            d.fill(byte)

    def read(self) -> dict:
        return {name: self.cp.asnumpy(d).view(np.uint8).copy() for name, d in self.outputs}


def pair(original: str, spliced: str, kernel: str, launch_path: str, trials: int) -> int:
    """Original and spliced cubin of any kernel on the inputs its launch description
    gives: every output byte compared, unwritten bytes shown by the poison."""
    import cupy as cp
    cp.zeros(1)
    drv = Driver()
    drv.ensure_context()
    launch = load_launch_description(launch_path)
    _ma, fa = drv.load(Path(original), kernel)
    _mb, fb = drv.load(Path(spliced), kernel)
    bad = 0
    for t in range(trials):
        seed = int.from_bytes(os.urandom(8), "little")
        runs = []
        for fn, byte in ((fa, 0xA5), (fa, 0x3C), (fb, 0x5A)):
            inp = LaunchInputs(cp, launch, seed)
            inp.poison(byte)
            drv.launch(fn, launch.grid, launch.block, inp.args, launch.dynamic_shared_bytes)
            drv.sync()
            runs.append(inp.read())
        a, a2, b = runs
        per = {n: {"bytes": int(a[n].size), "mismatches": int(np.count_nonzero(a[n] != b[n])),
                   "original_repeat_mismatches": int(np.count_nonzero(a[n] != a2[n]))}
               for n in a}
        bad += sum(o["mismatches"] + o["original_repeat_mismatches"] for o in per.values())
        print(json.dumps({"trial": t, "seed": seed, "kernel": kernel, "outputs": per}),
              flush=True)
    return 0 if bad == 0 else 1


# ---------------------------------------------------------------- one comparison


def time_kernel(cp, drv: Driver, fn, desc, params: bytes, n: int) -> float:
    grid, block = desc["grid"], desc["block"]
    smem = desc.get("dynamic_shared_bytes", 0)
    for _ in range(3):
        drv.launch(fn, grid, block, params, smem)
    drv.sync()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(n):
        drv.launch(fn, grid, block, params, smem)
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / n


def _where(desc: dict, name: str, mask: np.ndarray) -> dict:
    """Mismatching bytes of an output, summarised by the warp (tid.z) and block row of the
    pixels they belong to."""
    fields = desc.get("param_block", {}).get("fields", [])
    width = next((f["value"] for f in fields if f["name"] == "width"), None)
    if width is None or name not in ("plane_out", "surf_out"):   # not a swin image output
        idx = np.nonzero(mask)[0]
        return {"first_bytes": [int(i) for i in idx[:4]]}
    field = next((f for f in fields if f["name"] == name), {})
    per_pixel = field.get("texel_bytes", 16 if name == "plane_out" else 8)
    pix = np.unique(np.nonzero(mask)[0] // per_pixel)
    ys = pix // width
    return {"pixels": int(pix.size),
            "by_warp": {str(z): int(np.count_nonzero(ys % 4 == z)) for z in range(4)},
            "first": [[int(p % width), int(p // width)] for p in pix[:4]]}


def _run(drv: Driver, inp: Inputs, fn, desc: dict, params: bytes, poison: int,
         who: str) -> dict:
    inp.poison(poison)
    try:
        drv.launch(fn, desc["grid"], desc["block"], params, desc.get("dynamic_shared_bytes", 0))
        drv.sync()
    except RuntimeError as exc:
        raise RuntimeError(f"{who} kernel: {exc}") from None
    return inp.read()


def compare(cp, drv: Driver, run: dict, fixture: dict, trials: int, timing: int) -> dict:
    desc = json.loads((ROOT / fixture["launch"]).read_text())
    kernel = fixture["kernel"]
    # the swin launches (textures, surfaces, one parameter block) take Inputs; any other
    # kernel's launch (buffers and scalars, by value or one parameter each) LaunchInputs
    generic = not any(f.get("kind") in ("texture", "surface")
                      for f in desc.get("param_block", {}).get("fields", []))
    launch = load_launch_description(ROOT / fixture["launch"]) if generic else None
    mod_a, fn_a = drv.load(ROOT / fixture["original_cubin"], kernel)
    mod_b, fn_b = drv.load(ROOT / run["cubin"], kernel)
    result = {**{k: run[k] for k in ("fixture", "cut", "what", "region", "abi", "passed",
                                     "recomputed", "returned", "expect_match", "check_exit")},
              "trials": [], "bytes_compared": 0, "mismatches": 0,
              "original_repeat_mismatches": 0}
    try:
        params = None
        for t in range(trials):
            seed = int.from_bytes(os.urandom(8), "little")
            if generic:     # buffers and scalars only, either form: fresh inputs per run
                runs = []
                for fn, byte, who in ((fn_a, 0xA5, "original"), (fn_a, 0x3C, "original (repeat)"),
                                      (fn_b, 0x5A, "spliced")):
                    inp = LaunchInputs(cp, launch, seed)
                    params = inp.args
                    runs.append(_run(drv, inp, fn, desc, params, byte, who))
                a, a2, b = runs
            else:
                inp = Inputs(cp, desc, seed)
                params = bytes(inp.block)
                a = _run(drv, inp, fn_a, desc, params, 0xA5, "original")
                a2 = _run(drv, inp, fn_a, desc, params, 0x3C, "original (repeat)")
                b = _run(drv, inp, fn_b, desc, params, 0x5A, "spliced")
            per = compare_outputs(a, a2, b, desc)
            for o in per.values():
                result["bytes_compared"] += o["bytes"]
                result["bytes_written"] = result.get("bytes_written", 0) + o["written_original"]
                result["mismatches"] += o["mismatches"]
                result["original_repeat_mismatches"] += o["original_repeat_mismatches"]
            result["trials"].append({"seed": seed, "outputs": per})
            print(json.dumps({"trial": t, "fixture": run["fixture"], "cut": run["cut"],
                              "outputs": per}), flush=True)
            if t + 1 < trials:
                del inp
        if timing and params is not None:
            result["ms_original"] = round(time_kernel(cp, drv, fn_a, desc, params, timing), 4)
            result["ms_spliced"] = round(time_kernel(cp, drv, fn_b, desc, params, timing), 4)
    except Exception as exc:  # noqa: BLE001 - keep the trials that ran
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        try:
            drv.unload(mod_a)
            drv.unload(mod_b)
        except Exception:  # noqa: BLE001
            pass
    # a comparison of outputs the original never writes would prove nothing
    result["ok"] = "error" not in result and result.get("bytes_written", 0) > 0 and \
        (result["mismatches"] == 0) == run["expect_match"] and \
        result["original_repeat_mismatches"] == 0
    return result


def markdown(results: list, info: dict) -> str:
    lines = [f"GPU: {info.get('gpu')}, CuPy {info.get('cupy')}, driver {info.get('driver')}", "",
             "| fixture | cut | region | abi | in/recomputed/out | bytes compared | mismatches "
             "| original ms | spliced ms | check | expected | result |",
             "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- | --- |"]
    for r in results:
        if "region" not in r:
            lines.append(f"| {r['fixture']} | {r['cut']} | | | | | | | | | | ERROR {r['error']} |")
            continue
        lines.append(
            f"| {r['fixture']} | {r['cut']} | {r['region']} | {r['abi']} | "
            f"{r['passed']}/{r['recomputed']}/{r['returned']} | {r['bytes_compared']:,} | "
            f"{r['mismatches']:,} | {r.get('ms_original', '-')} | {r.get('ms_spliced', '-')} | "
            f"{'passes' if r['check_exit'] == 0 else 'rejects'} | "
            f"{'match' if r['expect_match'] else 'differ'} | {'ok' if r['ok'] else 'FAIL'}"
            f"{' (' + r['error'] + ')' if 'error' in r else ''} |")
    return "\n".join(lines) + "\n"


def smoke(module: str, kernel: str, launch: str) -> int:
    import cupy as cp
    cp.zeros(1)
    drv = Driver()
    drv.ensure_context()
    desc = json.loads(Path(launch).read_text())
    try:
        mod, fn = drv.load(Path(module), kernel)
        inp = Inputs(cp, desc, 1)
        inp.poison(0xA5)
        drv.launch(fn, desc["grid"], desc["block"], bytes(inp.block),
                   desc.get("dynamic_shared_bytes", 0))
        drv.sync()
        out = inp.read()
        print(json.dumps({"smoke": module, "ok": True, "unwritten": {
            k: int(np.count_nonzero(v == 0xA5)) for k, v in out.items()}}), flush=True)
        return 0
    except Exception as exc:  # noqa: BLE001
        print(json.dumps({"smoke": module, "ok": False,
                          "error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 1


def isolated(args, man: dict) -> int:
    """Each run in a child process; the results merged."""
    import subprocess
    import tempfile
    results = []
    info = None
    t0 = time.perf_counter()
    for run in man["runs"]:
        name = f"{run['fixture']}/{run['cut']}"
        if args.only and run["fixture"] not in args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "r.json"
            proc = subprocess.run([sys.executable, __file__, args.manifest, "--only", name,
                                   "--trials", str(args.trials), "--timing", str(args.timing),
                                   "--stack", str(args.stack), "--out", str(out)],
                                  capture_output=True, text=True, timeout=540)
            for line in proc.stdout.splitlines():
                if line.startswith('{"trial"'):
                    print(line, flush=True)
            if out.exists():
                data = json.loads(out.read_text())
                info = info or data["info"]
                results.extend(data["results"])
            else:
                results.append({"fixture": run["fixture"], "cut": run["cut"], "ok": False,
                                "error": (proc.stdout + proc.stderr)[-800:]})
        print(json.dumps({k: v for k, v in results[-1].items() if k != "trials"}), flush=True)
    info = info or {}
    info["seconds"] = round(time.perf_counter() - t0, 2)
    md = markdown(results, info)
    print(md)
    if args.out:
        Path(args.out).write_text(json.dumps({"info": info, "results": results}, indent=1))
        Path(args.out).with_suffix(".md").write_text(md)
    return 0 if results and all(r["ok"] for r in results) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest", nargs="?", default=str(ROOT / "build" / "gpu" / "manifest.json"))
    ap.add_argument("--out", default=None, help="Write the results (JSON) here; a .md beside.")
    ap.add_argument("--trials", type=int, default=2, help="Random inputs per cut (fresh seeds).")
    ap.add_argument("--timing", type=int, default=20, help="Timed launches per kernel (0: none).")
    ap.add_argument("--only", nargs="*", default=None, help="fixture or fixture/cut names.")
    ap.add_argument("--isolate", action="store_true",
                    help="Run each comparison in its own process (a kernel fault cannot "
                         "poison the others' context).")
    ap.add_argument("--stack", type=int, default=0,
                    help="Set the per-thread stack limit (bytes) before loading (0: leave).")
    ap.add_argument("--smoke", nargs=3, metavar=("MODULE", "KERNEL", "LAUNCH_JSON"),
                    help="Only load MODULE (cubin or PTX) and launch KERNEL once.")
    ap.add_argument("--pair", nargs=4, metavar=("ORIGINAL", "SPLICED", "KERNEL", "LAUNCH_JSON"),
                    help="Compare two cubins of any kernel, launched as LAUNCH_JSON describes "
                         "(grid, block, dynamic shared memory, parameters as typed buffers "
                         "with fills; corpus_fixtures/edge/dynamic_smem.launch.json).")
    args = ap.parse_args()
    if args.pair:
        return pair(*args.pair, trials=args.trials)
    if args.smoke:
        return smoke(*args.smoke)
    man = json.loads(Path(args.manifest).read_text())
    if args.isolate:
        return isolated(args, man)
    import cupy as cp
    cp.zeros(1)                       # creates the primary context
    drv = Driver()
    drv.ensure_context()
    stack = drv.set_stack(args.stack)
    props = cp.cuda.runtime.getDeviceProperties(0)
    info = {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
            "cupy": cp.__version__, "driver": cp.cuda.runtime.driverGetVersion(),
            "arch": man["arch"], "optimize": man["optimize"], "stack_limit": stack}
    results = []
    t0 = time.perf_counter()
    for run in man["runs"]:
        if args.only and run["fixture"] not in args.only and \
                f"{run['fixture']}/{run['cut']}" not in args.only:
            continue
        try:
            r = compare(cp, drv, run, man["fixtures"][run["fixture"]], args.trials, args.timing)
        except Exception as exc:  # noqa: BLE001 - report and go on
            r = {"fixture": run["fixture"], "cut": run["cut"], "ok": False,
                 "error": f"{type(exc).__name__}: {exc}"}
        results.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "trials"}), flush=True)
    info["seconds"] = round(time.perf_counter() - t0, 2)
    out = {"info": info, "results": results}
    md = markdown(results, info)
    print(md)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))
        Path(args.out).with_suffix(".md").write_text(md)
    return 0 if results and all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
