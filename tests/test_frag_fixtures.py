"""Fragment identity, maps and parameter roles on nvcc kernels of the shapes that broke them
(corpus_fixtures/frag, written by scripts/make_frag_fixtures.py), against the ground truth the
generator writes from the sources' own indexing: B reloaded per m-tile, A reloaded per n-tile,
weights in a struct parameter at +24, and a Triton-style kernel whose fragments come from
ldmatrix / ld.shared of dynamic shared memory."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, ROOT

from rrsplice.analysis.fragvalue import _origin
from rrsplice.analysis.laneaddr import loaded_from
from rrsplice.analysis.mma import phases
from rrsplice.analysis.paramroles import weight_param
from rrsplice.analysis.threadaddr import load_address
from rrsplice.fragments.descriptor import describe, plain
from rrsplice.fragments.fragmap import phase_map
from rrsplice.infra import cache
from rrsplice.ptx.select import select_function

STEMS = ["frag_breload", "frag_areload", "frag_struct", "frag_triton"]
FRAG = FIXTURES / "frag"


@pytest.fixture(scope="module", params=STEMS)
def case(request):
    stem = request.param
    truth = json.loads((FRAG / f"{stem}.truth.json").read_text())
    m = cache.load_module(FRAG / f"{stem}.ptx")
    fn, _ = select_function(m, None)
    fa = cache.load_analysis(m, fn)
    ph = phases(fn, fa)
    return truth, fn, fa, ph


def test_geometry_and_density_match_the_generator(case):
    truth, _fn, _fa, ph = case
    assert len(ph) == truth["phases"]
    p = ph[0]
    assert (p.m, p.n, p.k) == (truth["M"], truth["N"], truth["K"])
    assert (p.m_tiles, p.n_tiles, p.k_slices) == (truth["m_tiles"], truth["n_tiles"],
                                                    truth["k_slices"])
    assert p.dense is truth["dense"]
    assert len(p.mmas) == len(truth["mma_order"])


def _one(frags, reg):
    got = [f for f in frags if f.reg == reg]
    assert len(got) == 1, (reg, [f.tile for f in got])
    return got[0]


def test_every_mma_reads_the_tiles_the_source_gives_it(case):
    """mma number i (program order) multiplies the source's (m-tile, n-tile, k-slice) number
    i: its A registers are placed at (mt, ks), its B at (ks, nt), its chain's D at (mt, nt)."""
    truth, fn, fa, ph = case
    pm = phase_map(fn, fa, ph[0])
    assert not pm.notes
    tails = {c[-1] for c in ph[0].chains}
    for mma, (mt, nt, ks) in zip(ph[0].mmas, truth["mma_order"], strict=False):
        for r in mma.a:
            assert _one(pm.a, r).tile == (mt, ks), (mma.sid, r)
        for r in mma.b:
            assert _one(pm.b, r).tile == (ks, nt), (mma.sid, r)
        if mma.index in tails:
            for r in mma.d:
                assert _one(pm.d, r).tile == (mt, nt), (mma.sid, r)


def _root_name(t: dict) -> str:
    if t["space"] == "shared":
        return f"shared:{t['symbol']}"
    return f"{t['param']}+{t['offset']}"


def _truth_byte(t: dict, row: int, col: int) -> int:
    return t["base"] + row * t["row_stride"] + col * t["col_stride"]


def _check_loaded(fa, frag, t: dict, weight) -> int:
    """Every element of `frag` comes from the byte of its (row, col) in the generator's
    layout; returns the number of elements checked."""
    ld = loaded_from(fa, frag.mma, frag.reg)
    assert ld is not None, frag.reg
    root = [a for a, _ in ld.addr.terms if not a.startswith("%")]
    want = _root_name(t)
    if weight is not None and want == f"{weight['param']}+{weight['offset']}":
        want = "W"
    assert root == [want], (frag.reg, root)
    n = 0
    for lane, e, row, col, _wb in frag.elements():
        assert ld.offset(lane) + e * t["elem_bytes"] == _truth_byte(t, row, col), \
            (frag.matrix, frag.reg, lane, e, row, col)
        n += 1
    return n


def _check_ldmatrix(fa, frag, t: dict) -> int:
    """ldmatrix .x4 .b16: lane l's register q holds row l >> 2 of matrix q, whose row address
    lane 8q + (l >> 2) supplies: the two 16-bit elements 2(l & 3), 2(l & 3) + 1 of that row,
    so bytes 4(l & 3) .. 4(l & 3) + 3, low byte first (PTX ISA, ldmatrix)."""
    d, _ = _origin(fa, frag.mma, frag.reg)
    st = fa.fn.statements[d - 1]
    assert st.base == "ldmatrix" and "x4" in st.modifiers
    q = frag.index
    n = 0
    for lane, e, row, col, _wb in frag.elements():
        root, addr = load_address(fa, d, 8 * q + (lane >> 2))
        assert root == _root_name(t)
        assert addr + 4 * (lane & 3) + e == _truth_byte(t, row, col), (frag.reg, lane, e)
        n += 1
    return n


def test_every_fragment_element_comes_from_its_matrix_element(case):
    truth, fn, fa, ph = case
    pm = phase_map(fn, fa, ph[0])
    ops, w = truth["operands"], truth["weight_param"]
    checked = 0
    for frags, t in ((pm.a, ops["A"]), (pm.b, ops["B"]), (pm.c, ops["C"])):
        for f in frags:
            if t.get("load") == "ldmatrix.x4":
                checked += _check_ldmatrix(fa, f, t)
            else:
                checked += _check_loaded(fa, f, t, w)
    # every register of every distinct fragment: A 16, B 8, C 4 elements per lane (32 lanes)
    p = ph[0]
    assert checked >= 32 * (16 * p.m_tiles * p.k_slices + 8 * p.k_slices * p.n_tiles)


def test_weight_parameter_is_the_one_b_loads_from(case):
    truth, fn, fa, ph = case
    w = weight_param(fa)
    want = truth["weight_param"]
    assert (None if w is None else {"param": w.name, "offset": w.offset}) == want
    pm = phase_map(fn, fa, ph[0])
    sourced = [f for f in pm.b if f.source is not None]
    assert len(sourced) == (len(pm.b) if want is not None else 0)


def test_descriptor_names_the_parameters_and_weight_bytes(case):
    truth, fn, fa, _ph = case
    d = plain(describe(fn, fa))
    w, b = truth["weight_param"], truth["bias_param"]
    assert d["layer"]["weight_param"] == (f"{w['param']}+{w['offset']}" if w else None)
    assert d["layer"]["bias_param"] == f"{b['param']}+{b['offset']}"
    ph = d["phases"][0]
    assert (ph["M"], ph["N"], ph["K"]) == (truth["M"], truth["N"], truth["K"])
    if w is not None:
        # lane 0 of warp 0 reads n = 8*nt, k = 32*ks + 16*j: the lowest byte is 0, the
        # highest register starts at 8*(NT-1)*K + 32*(KS-1) + 16
        K, nt, ks = truth["K"], truth["n_tiles"], truth["k_slices"]
        assert tuple(ph["b_weight_bytes"]) == (0, 8 * (nt - 1) * K + 32 * (ks - 1) + 16 + 4)
    else:
        assert ph["b_weight_bytes"] is None


_RELOAD = """.version 8.7
.target sm_89
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
.reg .b32 %r<8>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [k_param_0];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, %tid.x;
and.b32 %r2, %r1, 3;
mul.wide.u32 %rd3, %r2, 4;
add.s64 %rd3, %rd2, %rd3;
ld.global.u32 %r3, [%rd3];
ld.global.u32 %r4, [%rd3];
STORE
ld.global.u32 %r5, [%rd3];
ld.global.nc.u32 %r6, [%rd3];
ld.global.nc.u32 %r7, [%rd3+4];
st.global.u32 [%rd3], %r3;
st.global.u32 [%rd3], %r4;
st.global.u32 [%rd3], %r5;
st.global.u32 [%rd3], %r6;
st.global.u32 [%rd3], %r7;
ret;
}
"""


@pytest.mark.parametrize("store", ["", "st.global.u32 [%rd2+64], %r1;", "$L__mid:"])
def test_same_address_is_the_same_value_only_without_a_store_between(tmp_path, store):
    from rrsplice.analysis.fragvalue import value_key
    p = tmp_path / "k.ptx"
    p.write_text(_RELOAD.replace("STORE", store))
    m = cache.load_module(p)
    fn, _ = select_function(m, None)
    fa = cache.load_analysis(m, fn)
    end = len(fn.statements)
    key = {r: value_key(fa, end, r) for r in ("%r3", "%r4", "%r5", "%r6", "%r7")}
    assert key["%r3"] == key["%r4"]                       # reloaded, nothing between
    assert (key["%r5"] == key["%r3"]) is (store == "")    # a store or a label between
    assert key["%r6"] != key["%r3"]                       # .nc: another kind of load
    assert key["%r7"] != key["%r6"]                       # another address


_HEADER_ROW = __import__("re").compile(
    r"^\s+(%\w+): phase 1 tile \((\d+), (\d+)\) r(\d): ([ACD])\[(\d+)\.\.(\d+)\]\[(\d+)\.\.(\d+)\]",
    __import__("re").M)


@pytest.mark.parametrize("stem", ["frag_breload", "frag_areload"])
def test_scaffolded_header_maps_and_roles_match_the_generator(tmp_path, stem):
    """`recipe new` over the whole mma region: every A and D register its header maps sits at
    the rows and columns the source's (m-tile, n-tile, k-slice) give it, and W_PARAM,
    BIAS_PARAM, DEBUG_PARAM name the generator's B, bias and output pointers."""
    from rrsplice.workflow.scaffold import new_recipe
    truth = json.loads((FRAG / f"{stem}.truth.json").read_text())
    m = cache.load_module(FRAG / f"{stem}.ptx")
    fn, _ = select_function(m, None)
    mmas = [st for st in fn.statements if not st.is_label and st.base == "mma"]
    out = tmp_path / "r.py"
    new_recipe("fb", FRAG / f"{stem}.ptx", f"s{mmas[0].index}-s{mmas[-1].index}", abi="param",
             out=out, occupancy=False)
    text = out.read_text()
    a_of, d_of = {}, {}
    for st, (mt, nt, ks) in zip(mmas, truth["mma_order"], strict=False):
        for j, r in enumerate(x.name for x in st.operands[1].items):
            a_of[r] = (mt, ks, j)
        for j, r in enumerate(x.name for x in st.operands[0].items):
            d_of[r] = (mt, nt, j)        # the last writer of a chain's D wins
    rows = _HEADER_ROW.findall(text)
    assert len([r for r in rows if r[4] == "D"]) == 2 * truth["m_tiles"] * truth["n_tiles"]
    for reg, a, b, j, mat, r0, r1, c0, c1 in rows:
        a, b, j, r0, r1, c0, c1 = map(int, (a, b, j, r0, r1, c0, c1))
        if mat == "A":
            mt, ks, jj = a_of[reg]
            assert (a, b, j) == (mt, ks, jj)
            assert (r0, r1) == (16 * mt + 8 * (j & 1), 16 * mt + 8 * (j & 1) + 7), reg
            assert (c0, c1) == (32 * ks + 16 * (j >> 1), 32 * ks + 16 * (j >> 1) + 15), reg
        elif mat == "D":
            mt, nt, jj = d_of[reg]
            assert (a, b, j) == (mt, nt, jj)
            assert (r0, r1, c0, c1) == (16 * mt + 8 * j, 16 * mt + 8 * j + 7, 8 * nt,
                                        8 * nt + 7), reg
    ns: dict = {}
    exec(compile(text, str(out), "exec"), ns)
    roles = {(p["name"], f["offset"]): f["role"] for p in truth["params"] for f in p["fields"]}

    def role(ref):
        name, _, off = ref.rpartition("+")
        return roles[(name, int(off))]
    assert (role(ns["W_PARAM"]), role(ns["BIAS_PARAM"]), role(ns["DEBUG_PARAM"])) == \
        ("B", "bias", "out")


def test_launch_descriptions_are_the_truth_files_own():
    """corpus_fixtures/frag/*.launch.json are what scripts/make_frag_launch.py reads off the
    truth files (kernel, launch, every parameter and its role), so a GPU run launches the
    kernel the truth describes."""
    import subprocess
    import sys
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_frag_launch.py"), "--check"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    for truth in sorted((ROOT / "corpus_fixtures" / "frag").glob("*.truth.json")):
        t = json.loads(truth.read_text())
        d = json.loads(truth.with_name(truth.name.replace(".truth.json", ".launch.json")).read_text())
        assert d["kernel"] == t["entry"] and d["block"] == t["launch"]["block"]
        roles = [f["name"] for f in d.get("param_block", {}).get("fields", [])] or \
            [p["name"] for p in d["params"]]
        assert len(roles) == sum(len(p["fields"]) for p in t["params"]) if "param_block" in d \
            else len(roles) == len(t["params"])
