"""Splice recipe for cuda_dldn_engine_swin_dec1_kernel, written to the seed's conventions.

The cut replaces the whole 26-phase mma region of the entry -- physical lines 1486-38472
of 0022-PREPASS_ENTRYPOINT_NAME.ptx, statements s403-s15988, 904 mma -- with one
`call.uni d4r_swin_dec1`. Phase 1 is a 48x128x96 GEMM (3 m-tiles x 16 n-tiles x 3 k-slices,
144 mma in 48 chains of three, s403-s546).

The callee is handed, in this order:

  * phase 1's 36 A registers (nine fragments of four b32, first-use order),
  * its sixteen bias seeds, loaded from the weight image at +24576..+24816,
  * the weight image pointer (%rd3, the `cvta.to.global` of param_0+40),
  * the parameter block pointer (%rd8, param_0 itself),
  * the address of the entry's 6400-byte .shared array.

The 96 phase-1 B registers (+0..+23552) are reloaded by the body from %rd3.

Unlike dec2, ten registers cross back into PTX -- read them all, a missing one leaves the
epilogue reading garbage:

  * the last phase's four D pairs %r18794 %r18795 %r18804 %r18805 %r18834 %r18835
    %r18844 %r18845 (the epilogue reads both halves of every pair);
  * %r18991 = 32 x %tid.z, computed inside the region;
  * %r18993, the per-warp shared base (SCRATCH + 48 x %r18991), also computed inside.

They come back through the scratch array, 40 bytes per thread at t * 40, t the thread's
linear index in the block (tid.x + ntid.x * (tid.y + ntid.y * tid.z); 5120 of its 6400
bytes), and the call text ends with `bar.sync 0` after its scratch reads. The kernel stages
per-warp values in the same array (at SCRATCH + 48 x %r18991, inside the region and after
it), so without the barrier one warp could overwrite another warp's slot before that warp
has read it; the native body must likewise execute a block barrier (`bar.sync 0` /
`__syncthreads()`) before it stores its returns (`rrsplice outline` mirrors the call's
barrier there). No barrier is needed before the reads: a slot is stored and read by the
same thread. (The seed's own convention, per-lane slots, would let the block's four warps
share every slot.) Special registers are read with `mov.u32` (ptxas rejects them as
arithmetic operands).
"""

MODULE = "0022-PREPASS_ENTRYPOINT_NAME.ptx"
CALLEE = "d4r_swin_dec1"

# the mma region: the first mma's first physical line, and the line after the last
# mma's last physical line
CUT_CALL = (1486, 38473)

# phase 1's A fragments, in the order the 144 mma first use them
A_REGS = [
    "%r1084", "%r1085", "%r1086", "%r1087",
    "%r1104", "%r1105", "%r1106", "%r1107",
    "%r1124", "%r1125", "%r1126", "%r1127",
    "%r1564", "%r1565", "%r1566", "%r1567",
    "%r1584", "%r1585", "%r1586", "%r1587",
    "%r1604", "%r1605", "%r1606", "%r1607",
    "%r2044", "%r2045", "%r2046", "%r2047",
    "%r2064", "%r2065", "%r2066", "%r2067",
    "%r2084", "%r2085", "%r2086", "%r2087",
]

# phase 1's sixteen bias seeds, in weight-image offset order (+24576, +24592, ...)
C_REGS = [
    "%r1621", "%r1631", "%r1681", "%r1691",
    "%r1741", "%r1751", "%r1801", "%r1811",
    "%r1861", "%r1871", "%r1921", "%r1931",
    "%r1981", "%r1991", "%r2041", "%r2051",
]

# the region's whole live-out: four D pairs, 32 x tid.z and the per-warp shared base
RET_REGS = [
    "%r18794", "%r18795", "%r18804", "%r18805",
    "%r18834", "%r18835", "%r18844", "%r18845",
    "%r18991", "%r18993",
]
RET_STRIDE = 4 * len(RET_REGS)

SCRATCH = "_ZZ33cuda_dldn_engine_swin_dec1_kernel33DldnEngineSwinEncParamsStructBaseE4smem"

# %rd3 is the globalised weight image (s3), %rd8 is param_0 itself (s8)
W_REG = "%rd3"
V_REG = "%rd8"


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
