"""Splice recipe for cuda_dldn_engine_swin_dec2_kernel (rrsplice's copy of the seed recipe).

Same cut, same callee and the same arguments as the users' own `swin_dec2_recipe.py`
(kept verbatim in recipes/seed/), with two fixes to how the returns come back:

* the seed indexes the scratch by %laneid, so the block's four warps (.maxntid 32, 1, 4)
  share every slot, and the kernel stages per-warp values in the same array (warp w at
  SCRATCH + 2048 w, inside the region and after it), which overlaps warp 0's area with
  every slot: warps can clobber each other's returns. Here a thread's slot is at its
  linear index in the block (tid.x + ntid.x * (tid.y + ntid.y * tid.z)) x 16, and the call
  text ends with `bar.sync 0` after its scratch reads; the native body must execute a block
  barrier (`bar.sync 0` / `__syncthreads()`) before it stores its returns (`rrsplice
  outline` mirrors the call's barrier there). No barrier is needed before the reads: a slot
  is stored and read by the same thread;
* the seed computes the address with `mad.lo.s32 %rswin1, %laneid, 16, %rswin0`, which
  ZLUDA accepts and ptxas rejects ("Special register argument not allowed"); here every
  special register is read with `mov.u32` first, so the patched module also assembles with
  ptxas.

The cut replaces the whole 38-phase mma region of the entry -- physical lines 1535-36892 of
0021-PREPASS_ENTRYPOINT_NAME.ptx, statements s452-s15510, 726 mma -- with one
`call.uni d4r_swin_dec2`. Phase 1 is a 48x96x128 GEMM (3 m-tiles x 12 n-tiles x 4 k-slices,
144 mma in 36 chains of four).

Passed, in this order: phase 1's 48 A registers (first-use order), its twelve bias seeds
(weight image +49152..+49328), the weight image pointer %rd32, the parameter block %rd7,
and the address of the entry's 9600-byte .shared array. The 96 phase-1 B registers are
not passed: the body reloads them from %rd32 (+0..+47120).

Returned through the scratch array, 16 bytes per thread at t * 16 (2048 of its 9600
bytes, t the thread's linear index): phase 38's four D halves %r19360 %r19361 %r19370
%r19371, the region's whole live-out.
"""

MODULE = "0021-PREPASS_ENTRYPOINT_NAME.ptx"
CALLEE = "d4r_swin_dec2"

# the mma region: the first mma's first physical line, and the line after the last
# mma's last physical line
CUT_CALL = (1535, 36893)

# phase 1's A fragments, in the order the 144 mma first use them
A_REGS = [
    "%r1040", "%r1041", "%r1042", "%r1043",
    "%r1060", "%r1061", "%r1062", "%r1063",
    "%r1080", "%r1081", "%r1082", "%r1083",
    "%r1100", "%r1101", "%r1102", "%r1103",
    "%r1520", "%r1521", "%r1522", "%r1523",
    "%r1540", "%r1541", "%r1542", "%r1543",
    "%r1560", "%r1561", "%r1562", "%r1563",
    "%r1580", "%r1581", "%r1582", "%r1583",
    "%r2000", "%r2001", "%r2002", "%r2003",
    "%r2020", "%r2021", "%r2022", "%r2023",
    "%r2040", "%r2041", "%r2042", "%r2043",
    "%r2060", "%r2061", "%r2062", "%r2063",
]

# phase 1's twelve bias seeds, in weight-image offset order (+49152, +49168, ...)
C_REGS = [
    "%r1597", "%r1607", "%r1677", "%r1687",
    "%r1757", "%r1767", "%r1837", "%r1847",
    "%r1917", "%r1927", "%r1997", "%r2007",
]

# what the epilogue reads back out of the deleted region: phase 38's four D halves
RET_REGS = ["%r19360", "%r19361", "%r19370", "%r19371"]
RET_STRIDE = 4 * len(RET_REGS)

SCRATCH = "_ZZ33cuda_dldn_engine_swin_dec2_kernel33DldnEngineSwinEncParamsStructBaseE4smem"

# %rd32 is the globalised weight image (s8), %rd7 is param_0 itself (s1)
W_REG = "%rd32"
V_REG = "%rd7"


def cut_call():
    """The PTX that replaces the mma region."""
    args = A_REGS + C_REGS
    decl = "\n".join("\t.param .b32 p%d;" % i for i in range(len(args)))
    store = "\n".join("\tst.param.b32 [p%d+0], %s;" % (i, r) for i, r in enumerate(args))
    decl += "\n\t.param .b64 pw;\n\t.param .b64 pv;\n\t.param .b32 ps;"
    store += (f"\n\tst.param.b64 [pw+0], {W_REG};"
              f"\n\tst.param.b64 [pv+0], {V_REG};"
              f"\n\tmov.u32 %rswin0, {SCRATCH};"
              "\n\tst.param.b32 [ps+0], %rswin0;")
    hel = ", ".join(["p%d" % i for i in range(len(args))] + ["pw", "pv", "ps"])
    gets = "\n".join("\tld.shared.b32 %s, [%%rswin1+%d];" % (r, 4 * i)
                     for i, r in enumerate(RET_REGS))
    return f"""{{
.reg .b32 %rswin<5>;
{decl}
{store}
\tcall.uni {CALLEE}, ({hel});
\tmov.u32 %rswin2, %tid.z;
\tmov.u32 %rswin3, %ntid.y;
\tmov.u32 %rswin4, %tid.y;
\tmad.lo.s32 %rswin2, %rswin2, %rswin3, %rswin4;
\tmov.u32 %rswin3, %ntid.x;
\tmov.u32 %rswin4, %tid.x;
\tmad.lo.s32 %rswin2, %rswin2, %rswin3, %rswin4;
\tmad.lo.s32 %rswin1, %rswin2, {RET_STRIDE}, %rswin0;
{gets}
\tbar.sync 0;
}}"""


def extern():
    """The .extern .func declaration of the callee, matching cut_call()'s arguments."""
    args = ", ".join([".param .b32 d4r_a%d" % i for i in range(len(A_REGS) + len(C_REGS))]
                     + [".param .b64 d4r_w", ".param .b64 d4r_v", ".param .b32 d4r_s"])
    return f".extern .func {CALLEE}\n(\n\t{args}\n)\n;\n"


def recipe():
    """make_ptx.py's recipe for this kernel."""
    return dict(file=MODULE, cut_call=CUT_CALL, call=cut_call(), extern=extern())
