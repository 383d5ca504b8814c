"""Opcode-registry rows checked through the analyses that read them, against PTX ISA facts
written here (PTX ISA 9.0, chapter "Instructions"): what `tld4` writes, what `red`, `atom`
and `cp.async` do to memory, which barriers wait for the whole block. Each case is a small
hand-written kernel whose right answer is derived by hand in its docstring."""

from __future__ import annotations

from rrsplice import parse
from rrsplice.analysis.dataflow import analyze
from rrsplice.analysis.provenance import symbol_uses
from rrsplice.analysis.semantics import def_use, is_block_barrier
from rrsplice.ptx.isa import info

HEAD = """.version 8.7
.target sm_89
.address_size 64
.global .texref tex;
.shared .align 4 .b8 sh[256];
.global .align 4 .b8 gsrc[256];
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .pred \t%p<8>;
\t.reg .b32 \t%r<40>;
\t.reg .f32 \t%f<16>;
\t.reg .b64 \t%rd<8>;
"""


def fn_of(body: str):
    return parse(HEAD + body + "\n\tret;\n}\n").functions[0]


def test_tld4_writes_its_four_destinations_and_reads_only_the_coordinates():
    """ISA: `tld4.comp.2d.v4.dtype.f32 d, [a, c]` gathers four texels into the vector `d`
    (written) from the coordinates `c` (read). So before the tld4 only the coordinates are
    live; %f1..%f4 are not (they are defined by it and read after)."""
    fn = fn_of("\tmov.f32 %f5, 0f00000000;\n\tmov.f32 %f6, 0f00000000;\n"
               "\ttld4.r.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex, {%f5, %f6}];\n"
               "\tadd.f32 %f7, %f1, %f4;\n\tadd.f32 %f8, %f2, %f3;\n"
               "\tadd.f32 %f9, %f7, %f8;")
    st = next(s for s in fn.statements if s.base == "tld4")
    d = def_use(st)
    assert set(d.defs) == {"%f1", "%f2", "%f3", "%f4"}
    assert set(d.uses) == {"%f5", "%f6"}
    fa = analyze(fn)
    assert set(fa.live_in_at(st.index)) == {"%f5", "%f6"}
    # nothing is live into the kernel: every register read is written first
    assert not [r for r in fa.live_in_at(1) if not r.startswith(("param:", "cc:"))]
    # the add reads the tld4's %f1, not some value from before it
    add = next(s for s in fn.statements if s.base == "add")
    assert fa.reaching_defs(add.index, "%f1") == [st.index]


def _kinds(fn, sym):
    return [(a.opcode.split(".")[0], a.kind) for a in symbol_uses(analyze(fn), sym).accesses
            if a.kind in ("read", "write", "atomic")]


def test_red_both_reads_and_writes_memory():
    """ISA: `red.op [a], b` performs `*a = *a op b` atomically: it reads the old value and
    writes the new one (without returning it). A later reader of the array must see the red
    as its last write, and the red is also a read of what came before it."""
    fn = fn_of("\tmov.u32 %r1, 1;\n\tst.shared.u32 [sh], %r1;\n"
               "\tred.shared.add.u32 [sh], %r1;\n\tld.shared.u32 %r2, [sh+4];")
    uses = symbol_uses(analyze(fn), "sh")
    red = next(a for a in uses.accesses if a.opcode.startswith("red"))
    assert red.kind == "atomic"
    # the red is the last write and, being a read-modify-write, a read after the store
    assert uses.last_write is not None and uses.last_write.opcode.startswith("red")
    reads = [a for a in uses.accesses if a.kind in ("read", "atomic")]
    assert red in reads


def test_atom_writes_memory_as_well_as_reading_it():
    """ISA: `atom.op d, [a], b` returns the old `*a` in `d` and stores `*a op b`: a write
    to the array, even though it has a destination register like a load."""
    fn = fn_of("\tmov.u32 %r1, 1;\n\tld.shared.u32 %r3, [sh];\n"
               "\tatom.shared.add.u32 %r2, [sh], %r1;\n\tadd.u32 %r4, %r2, %r3;")
    uses = symbol_uses(analyze(fn), "sh")
    atom = next(a for a in uses.accesses if a.opcode.startswith("atom"))
    assert atom.kind == "atomic"
    assert uses.last_write is not None and uses.last_write.index == atom.index
    assert uses.last_read is not None and uses.last_read.index == atom.index
    # and it defines its destination register (the old value)
    st = fn.statements[atom.index - 1]
    assert set(def_use(st).defs) == {"%r2"}


def test_cp_async_writes_its_shared_destination_and_reads_its_global_source():
    """ISA: `cp.async.ca.shared.global [dst], [src], cp-size` copies from global `src` into
    shared `dst`: the first address is written, the second read."""
    fn = fn_of("\tcp.async.ca.shared.global [sh], [gsrc], 16;\n"
               "\tcp.async.wait_all;\n\tld.shared.u32 %r1, [sh];")
    sh = symbol_uses(analyze(fn), "sh")
    cp = next(a for a in sh.accesses if a.opcode.startswith("cp.async"))
    assert cp.kind == "write"
    assert sh.last_write is not None and sh.last_write.index == cp.index
    src = symbol_uses(analyze(fn), "gsrc")
    (acc,) = [a for a in src.accesses if a.kind in ("read", "write", "atomic")]
    assert acc.kind == "read"
    assert src.last_write is None


def test_block_barriers_are_the_isa_list():
    """ISA: `bar{.cta}.sync a` and `barrier{.cta}.sync{.aligned} a` without a thread count wait
    for every thread of the CTA; `bar.warp.sync` waits only for the lanes of `membermask`,
    `bar.arrive` does not wait, and `bar.sync a, b` waits for `b` threads only."""
    fn = fn_of("\tbar.sync 0;\n\tbar.cta.sync 0;\n\tbarrier.sync 0;\n"
               "\tbarrier.cta.sync 0;\n\tbarrier.sync.aligned 0;\n"
               "\tbar.warp.sync -1;\n\tbar.arrive 1, 64;\n\tbar.sync 1, 64;\n"
               "\tbar.cta.sync 1, 64;")
    got = {s.text.strip().rstrip(";"): is_block_barrier(s) for s in fn.statements
           if s.base in ("bar", "barrier")}
    assert got == {"bar.sync 0": True, "bar.cta.sync 0": True, "barrier.sync 0": True,
                   "barrier.cta.sync 0": True, "barrier.sync.aligned 0": True,
                   "bar.warp.sync -1": False, "bar.arrive 1, 64": False,
                   "bar.sync 1, 64": False, "bar.cta.sync 1, 64": False}


def test_barrier_kinds_in_the_registry():
    """ISA: `bar.warp.sync` synchronises the threads of one warp (named by a member mask),
    `bar.sync`/`barrier.sync` the CTA, `barrier.cluster` the cluster, `membar`/`fence` order
    memory without waiting. The registry's barrier kind is what a caller asks for."""
    want = {"bar.warp.sync": "warp", "bar.sync": "block", "bar.cta.sync": "block",
            "barrier.sync": "block", "barrier.cluster.arrive": "cluster",
            "membar.gl": "fence", "fence.sc.cta": "fence"}
    assert {op: info(op).barrier for op in want} == want
