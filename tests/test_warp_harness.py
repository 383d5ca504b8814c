"""Generated bodies executed: every single-phase body of every bundled fixture (CUDA and HIP
branches of its `rr_mma.h`) built for the host and run as a block of fibers by the warp
harness (tests/warp_harness), compared bit for bit with the region run by the reference PTX
interpreter on the same inputs; and the harness's own primitives checked on hand-written
bodies."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, ROOT

sys.path.insert(0, str(Path(__file__).resolve().parent / "warp_harness"))
from warp_harness import AsmError, Body, HarnessError, build, rewrite_asm
from warp_harness.fixture_bodies import check_fixture

sys.path.insert(0, str(ROOT / "scripts" / "mma_probe"))
import models

# swin_tiny_sm89's phases run in test_tiny_bodies_on_every_geometry_and_input_class (five
# cases per body, a superset of the one case here): not built and run twice
MMA_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.ptx")
                      if p.name not in ("surface_round_sm89.ptx", "swin_tiny_sm89.ptx"))


# ------------------------------------------------------------------ inline asm rewriting
def test_rewrite_asm_binds_operands_in_template_order():
    text = ('asm("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%0, %1}, {%2, %3, %4, '
            '%5}, {%6, %7}, {%8, %9};"\n : "=r"(d[0]), "=r"(d[1])\n : "r"(a[0]), "r"(a[1]), '
            '"r"(a[2]), "r"(a[3]), "r"(b1), "r"(b0), "r"(c0), "r"(c1));')
    out = rewrite_asm("x; " + text + " y;")
    assert out == ("x; rr_shim_asm_mma_sync_aligned_m16n8k32_row_col_f16_e4m3_e4m3_f16(&(d[0]), "
                   "&(d[1]), (a[0]), (a[1]), (a[2]), (a[3]), (b1), (b0), (c0), (c1)); y;")
    st = rewrite_asm('asm volatile("st.shared.b32 [%0+8], %1;" :: "r"(addr), "r"(v) : "memory");')
    assert st == "rr_shim_asm_st_shared_b32((addr) + 8, (v));"


def test_rewrite_asm_refuses_an_opcode_the_shim_does_not_model():
    with pytest.raises(AsmError, match="no model of cp.async"):
        rewrite_asm('asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" :: "r"(a), "l"(p));')


# ------------------------------------------------------------------ the interpreter's mma
def _isa_pack(A, B, C):
    """Lane registers of A (16x32 e4m3), B (32x8), C (16x8 f16) by the PTX ISA's
    m16n8k32 fragment figures, written out here (row/k of A: g + 8(j&1), 4t + e + 16(j>>1);
    B: k 4t + e + 16j, n g; C: row g + 8j, n 2t + e)."""
    regs = []
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        a = [sum(int(A[g + 8 * (j & 1), 4 * t + e + 16 * (j >> 1)]) << 8 * e for e in range(4))
             for j in range(4)]
        b = [sum(int(B[4 * t + e + 16 * j, g]) << 8 * e for e in range(4)) for j in range(2)]
        c = [int(C[g + 8 * j, 2 * t]) | int(C[g + 8 * j, 2 * t + 1]) << 16 for j in range(2)]
        regs.append(a + b + c)
    return regs


def test_interpreter_mma_is_the_exact_model_in_isa_placement():
    from block_interp import block_machines, run_block

    from rrsplice.ptx.parser import parse_bytes
    src = (".version 8.7\n.target sm_89\n.address_size 64\n.visible .entry k()\n{\n"
           ".reg .b32 %r<12>;\nmma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%r10, %r11}, "
           "{%r0, %r1, %r2, %r3}, {%r4, %r5}, {%r6, %r7};\nret;\n}\n")
    fn = parse_bytes(src.encode(), "t.ptx").functions[0]
    rng = np.random.default_rng(3)
    a, b, c = models.make_inputs("normal", 1, rng)
    regs = _isa_pack(a[0], b[0], c[0])
    ms = block_machines((32, 1, 1), [{f"%r{i}": v for i, v in enumerate(r)} for r in regs],
                        {}, {})
    run_block([st for st in fn.statements if st.base == "mma"], ms)
    want = models.model(models.products(a, b), c.view(np.float16).astype(np.float64))[0]
    want = want.astype(np.float16).view(np.uint16)
    for lane, m in enumerate(ms):
        g, t = lane >> 2, lane & 3
        for j in range(2):
            v = m.regs[f"%r{10 + j}"]
            assert (v & 0xFFFF, v >> 16) == (want[g + 8 * j, 2 * t], want[g + 8 * j, 2 * t + 1])


# ------------------------------------------------------------------ harness primitives
_PROBE_CUDA = r'''
extern "C" __device__ void probe(unsigned out, unsigned v)
{
    const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned lane = tid & 31;
    const unsigned n = __shfl_sync(0xffffffffu, v, (lane + 1) & 31);
    asm volatile("st.shared.b32 [%0], %1;" :: "r"(out + 8 * tid), "r"(n) : "memory");
    __syncthreads();
    /* after the block barrier: the next warp's first slot */
    const unsigned other = (tid + 32) % (blockDim.x * blockDim.y * blockDim.z);
    unsigned w;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(w) : "r"(out + 8 * other));
    *(unsigned *)__cvta_shared_to_generic(out + 8 * tid + 4) = w;
}
'''
_PROBE_HIP = r'''
extern "C" __device__ void probe(unsigned out, unsigned v)
{
    const unsigned tid = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_size_x() *
        (__builtin_amdgcn_workitem_id_y() + __builtin_amdgcn_workgroup_size_y() *
         __builtin_amdgcn_workitem_id_z());
    const unsigned lane = tid & 31;
    const unsigned n = (unsigned)__builtin_amdgcn_ds_bpermute((int)(((lane + 1) & 31) << 2), (int)v);
    *(unsigned *)(unsigned long)(out + 8 * tid) = n;
    __builtin_amdgcn_s_barrier();
    const unsigned other = (tid + 32) % (__builtin_amdgcn_workgroup_size_x() *
        __builtin_amdgcn_workgroup_size_y() * __builtin_amdgcn_workgroup_size_z());
    *(unsigned *)(unsigned long)(out + 8 * tid + 4) = *(unsigned *)(unsigned long)(out + 8 * other);
}
'''
_HANG = r'''
extern "C" __device__ void probe(unsigned out, unsigned v)
{
    if ((threadIdx.x & 31) != 5)
        __syncwarp();
    (void)out; (void)v;
}
'''


@pytest.mark.slow
def test_harness_lanes_exchange_and_barriers(tmp_path):
    (tmp_path / "p.cu").write_text(_PROBE_CUDA)
    (tmp_path / "p.hip").write_text(_PROBE_HIP)
    (tmp_path / "hang.cu").write_text(_HANG)
    bodies = [Body(tmp_path / "p.cu", "probe", ["u32", "u32"], "cuda"),
              Body(tmp_path / "p.hip", "probe", ["u32", "u32"], "hip"),
              Body(tmp_path / "hang.cu", "probe", ["u32", "u32"], "cuda")]
    with build(bodies, tmp_path / "h", shared_bytes=4096) as h:
        for index in (0, 1):
            for block in ((32, 1, 4), (16, 2, 4), (64, 1, 1)):
                n = block[0] * block[1] * block[2]
                vals = np.arange(n, dtype=np.uint64) * 7 + 100
                args = np.stack([np.full(n, h.shared_base + 64, np.uint64), vals], axis=1)
                out, _ = h.call(index, block, args, bytes(4096))
                words = np.frombuffer(out, "<u4")[16:16 + 2 * n].reshape(n, 2)
                for tid in range(n):
                    nb = (tid & ~31) + ((tid + 1) & 31)
                    assert words[tid, 0] == vals[nb], (index, block, tid)
                    assert words[tid, 1] == vals[(((tid + 32) % n) & ~31) + ((tid + 1) & 31)]
        with pytest.raises(HarnessError, match="deadlock"):
            h.call(2, (32, 1, 1), np.zeros((32, 2)), bytes(4096))
    with build(bodies[:1], tmp_path / "h2", shared_bytes=4096) as h:
        with pytest.raises(HarnessError, match="outside the arena"):
            h.call(0, (32, 1, 1), np.zeros((32, 2)), bytes(4096))   # out = address 0


# ------------------------------------------------------------------ every generated body
@pytest.mark.slow
@pytest.mark.parametrize("fixture", MMA_FIXTURES)
def test_every_phase_body_matches_the_region(fixture, tmp_path):
    refused = {}
    res = check_fixture(FIXTURES / fixture, tmp_path, cases_per_body=1,
                        seed=len(fixture), refused=refused)
    assert res, f"{fixture}: no single-phase body"
    # `body new` refuses only phases whose region interleaves other statements with the mma
    assert all("that are not mma" in m for m in refused.values())
    assert len(res) + len(refused) == len(set(res) | set(refused))
    bad = {ph: v[:3] for ph, v in res.items() if v}
    assert not bad, bad


@pytest.mark.slow
def test_tiny_bodies_on_every_geometry_and_input_class(tmp_path):
    """swin_tiny's seven phases, five launch shapes and three input classes each (this is
    also swin_tiny_sm89's case of test_every_phase_body_matches_the_region)."""
    refused = {}
    res = check_fixture(FIXTURES / "swin_tiny_sm89.ptx", tmp_path, cases_per_body=5, seed=9,
                        refused=refused)
    assert len(res) == 7 and not refused
    bad = {ph: v[:3] for ph, v in res.items() if v}
    assert not bad, bad
