"""Whole regions of more fixtures, lifted, run on the host (the warp harness) against the
warp interpreter on every register of every lane (tests/lift_region_run.py), in both
staging modes: the layer fixtures (corpus_fixtures/layer/: residual add + layer norm, tanh
GELU, an f32 softmax over shfl.bfly, requantisation from f32; plain and --use_fast_math),
swin_small and swin_big, the dec1/dec2 stand-ins (the DLSS layers' shape: 38 and 45 phases,
prmt, ex2, rcp, generic loads from the parameter block), the fragment fixtures
(corpus_fixtures/frag/: B reloaded per m-tile, A reloaded per n-tile, weights behind a
struct parameter, a Triton-style ldmatrix kernel) and tiny_family with the variants it is
ported to. Each fixture's test runs both modes against one interpreter run. The layer
fixtures also carry the GPU proof's two negative controls, which must change what the host
computes."""

from __future__ import annotations

import json
import random
import sys

import pytest
from conftest import ROOT
from lift_region_run import host_loop_run, run_region
from ptx_interp import Machine
from ptx_interp import run as interp_run

from rrsplice.analysis.mma import phases as find_phases
from rrsplice.infra.cache import load_analysis
from rrsplice.lift import LiftError, lift_region
from rrsplice.ptx.parser import parse
from rrsplice.workflow.recipe import load_recipe

LAYER = ROOT / "corpus_fixtures" / "layer"
FRAG = ROOT / "corpus_fixtures" / "frag"

# recipe, launch description, the fewest (register, lane) values the run must compare
CASES = {
    "layer_epi": ("layer_epi_sm89.py", LAYER / "layer_epi.launch.json", 100_000),
    "layer_epi_fast": ("layer_epi_fast_sm89.py", LAYER / "layer_epi_fast.launch.json", 65_000),
    "swin_small": ("swin_small_sm89.py", ROOT / "corpus_fixtures" / "swin_small.launch.json",
                   160_000),
    "swin_big": ("swin_big_sm89.py", ROOT / "corpus_fixtures" / "swin_big.launch.json",
                 450_000),
    "swin_dec2": ("swin_dec2.py", ROOT / "corpus_fixtures" / "0021-PREPASS_ENTRYPOINT_NAME"
                  ".launch.json", 515_168),
    "swin_dec1": ("swin_dec1.py", ROOT / "corpus_fixtures" / "0022-PREPASS_ENTRYPOINT_NAME"
                  ".launch.json", 544_800),
    "frag_breload": ("frag_breload.py", FRAG / "frag_breload.launch.json", 28_224),
    "frag_areload": ("frag_areload.py", FRAG / "frag_areload.launch.json", 7_744),
    "frag_struct": ("frag_struct.py", FRAG / "frag_struct.launch.json", 1_408),
    "frag_triton": ("frag_triton.py", FRAG / "frag_triton.launch.json", 4_608),
    "tiny_family": ("tiny_family.py", ROOT / "corpus_fixtures" / "swin_tiny.launch.json",
                    68_736),
}


def _controls():
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_prepare_lift as g
    return g


def _both_stagings(tmp_path, name, controls: bool = False):
    """Both staging modes match the interpreter on every register of every lane; with
    `controls`, scripts/gpu_prepare_lift.py's two negative controls (one e4m3
    requantisation's operands exchanged in the registers body, two staged A entries
    swapped in the image body) change what the call returns. One interpreter run serves
    all four."""
    recipe, launch, least = CASES[name]
    recipe = ROOT / "recipes" / recipe if isinstance(recipe, str) else recipe
    for staging in ("registers", "image"):
        d = tmp_path / staging
        d.mkdir()
        out = run_region(d, recipe, staging, launch)
        assert out.checked >= least, (staging, out.checked)
        assert not out.bad, (staging, len(out.bad), out.bad[:6])
    if not controls:
        return
    g = _controls()
    rets = set(load_recipe(ROOT / "recipes" / recipe).const("RET_REGS"))
    for staging, control in (("registers", "registers_control"), ("image", "swap")):
        seen = {}

        def edit(body, header, control=control, seen=seen):
            if control == "swap":
                body, seen["why"] = g.swap_stagings(body)
            else:
                seen["name"], body, header, seen["why"] = g.registers_control(body, header)
            return body, header
        d = tmp_path / control
        d.mkdir()
        out = run_region(d, ROOT / "recipes" / recipe, staging, launch, edit=edit)
        assert control == "swap" or seen["name"] == "requant", seen
        # what the GPU compares: the values the call returns, here on every lane
        assert {r for r, *_ in out.bad} & rets, seen


@pytest.mark.slow
@pytest.mark.parametrize("name", ["layer_epi", "layer_epi_fast"])
def test_layer_whole_region_both_stagings_and_the_gpu_proofs_negative_controls(tmp_path, name):
    _both_stagings(tmp_path, name, controls=True)


@pytest.mark.slow
def test_swin_small_whole_region_every_register_of_every_lane_both_stagings(tmp_path):
    _both_stagings(tmp_path, "swin_small")


@pytest.mark.slow
def test_swin_big_whole_region_every_register_of_every_lane_both_stagings(tmp_path):
    """swin_big's whole region (22 phases, 916 mma): ~460,000 values per staging mode; about two
    minutes of CPU, most of it the interpreter's one run."""
    _both_stagings(tmp_path, "swin_big")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["swin_dec2", "swin_dec1"])
def test_dec_stand_in_whole_region_every_register_of_every_lane_both_stagings(tmp_path, name):
    """The dec stand-ins' whole regions (dec2: s452-s15510, 726 mma in 38 phases; dec1:
    904 mma), from their launch descriptions: 515,168 and 544,800 values per mode."""
    _both_stagings(tmp_path, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["frag_breload", "frag_areload", "frag_struct",
                                  "frag_triton"])
def test_fragment_fixture_whole_region_every_register_of_every_lane_both_stagings(tmp_path,
                                                                                   name):
    """Kernels shaped as nvcc and Triton emit them: B reloaded for every m-tile, A reloaded
    for every n-tile, the weights behind a struct parameter, and ldmatrix A fragments from
    dynamic .shared written by the kernel's prologue (run on the interpreter first)."""
    _both_stagings(tmp_path, name)


TINY_PORTS = ["mvhi_ldr", "mvlo_hdr", "mvlo_ldr"]


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["mvhi_hdr"] + TINY_PORTS)
def test_tiny_family_and_its_ports_whole_region_both_stagings(tmp_path, variant):
    """recipes/tiny_family.py (the mvhi_hdr variant) and the recipe ported from it to each
    aligned variant (`recipe port`): each port's whole region, lifted, against its own
    kernel on the interpreter, from the family's launch description."""
    from rrsplice.workflow.port import port_recipe
    from rrsplice.workflow.recipe import BUNDLED_CORPUS
    recipe, launch, least = CASES["tiny_family"]
    if variant != "mvhi_hdr":
        ptx = BUNDLED_CORPUS / f"swin_tiny_{variant}_sm89.ptx"
        recipe = port_recipe(ROOT / "recipes" / recipe, f"{ptx}:rrswin_tiny_{variant}_kernel",
                             out=tmp_path / f"tiny_{variant}.py").output
    CASES[f"tiny_{variant}"] = (recipe, launch, least)
    _both_stagings(tmp_path, f"tiny_{variant}")


@pytest.mark.slow
@pytest.mark.parametrize("stem", ["layer_epi", "layer_epi_fast"])
def test_the_layer_fixtures_phases_are_their_ground_truths(stem):
    """`rrsplice phases`' view of the layer kernels (B loaded beside each mma, the f16
    accumulators unpacked only after the phase) against the generator's ground truth:
    four phases, their geometry, mma, chains and the weight-image bytes of B and the bias
    seeds; the recipe's cut is the whole layer, first to last mma."""
    truth = json.loads((LAYER / f"{stem}.truth.json").read_text())
    mod = parse(LAYER / f"{stem}_sm89.ptx")
    fn = mod.function(truth["entry"])
    got = find_phases(fn, load_analysis(mod, fn))
    assert len(got) == len(truth["phases"]) == 4
    for p, t in zip(got, truth["phases"], strict=True):
        assert p.geometry == t["geometry"]
        assert len(p.mmas) == t["mma"] and p.chain_count == t["chains"]
        # lane 0's B bytes: the first fragment's first byte to the last one's end
        assert p.b_weight_range == (t["b_offset"], t["b_offset"] + t["b_bytes"] - 256 + 8)
        assert sorted(p.bias_seed_offsets.values()) == t["bias_offsets"]
    mma = [st.index for st in fn.statements if st.opcode and st.opcode.startswith("mma.")]
    assert truth["region"]["statements"] == f"s{mma[0]}-s{mma[-1]}"
    assert (got[0].first, got[-1].last) == (mma[0], mma[-1])


# recipe -> (kernel, the ways out of its region the inputs must take)
LOOPS = {"loops_early_break": ("early_break", 2), "loops_nested": ("nested", 1),
         "loops_search": ("search", 3)}


def _row(rng, n: int) -> list:
    """A row of a loop kernel's input: small and large values, negatives (early_break's
    exit), odd values (search's `continue`) and now and then search's sentinel."""
    out = []
    for _ in range(n):
        k = rng.randrange(8)
        out.append(0x7777 if k == 0 and rng.random() < 0.3 else
                   rng.randrange(-50, 0) & 0xFFFFFFFF if k == 1 else
                   rng.randrange(1000, 1 << 27) if k == 2 else rng.randrange(0, 1000))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LOOPS))
def test_loop_regions_on_the_host_as_the_interpreter_runs_them(tmp_path, name):
    """Each loop recipe's whole region (loops, early exits to labels past the region,
    `rem`, global loads) lifted and run on the host against tests/ptx_interp.py, from the
    kernel's own prologue on 40 random rows; every exit is taken. `--staging image` is
    refused: the region holds no mma to stage for."""
    recipe = ROOT / "recipes" / f"{name}.py"
    with pytest.raises(LiftError, match="needs a phase inside the cut"):
        lift_region(recipe, "image")
    body = lift_region(recipe, "registers")
    rec = load_recipe(recipe)
    rets = rec.const("RET_REGS")
    bmod = parse(body.outlined_ptx, filename="body.ptx")
    bfn = next(f for f in bmod.functions if f.has_body)
    loads = {st.operands[1].base.name: st.operands[0].name for st in bfn.statements
             if st.opcode and st.opcode.startswith("ld.param")}
    params = [(loads[p.name], p.type) for p in bfn.params]
    words_n = 256
    fn = parse(ROOT / "corpus_fixtures" / "loops" / "loops_sm90.ptx").function(LOOPS[name][0])
    first, last = body.region
    rng = random.Random(5)
    exits = set()
    with host_loop_run(tmp_path, body, [t for _, t in params]) as run:
        base = run.base
        for _ in range(40):
            n = rng.randint(1, 12)
            words = [w & 0xFFFFFFFF for w in _row(rng, words_n)]
            m = Machine()
            m.special = {"%tid.x": rng.randrange(4), "%ntid.x": 4, "%ctaid.x": 0}
            for i, w in enumerate(words):
                m.mem["global"][base + 4 * i] = w
            pname = fn.params[0].name[:-1]
            m.mem["param"].update({(pname + "0", 0): base, (pname + "1", 0): base + 4 * 200,
                                   (pname + "2", 0): n})
            for p in fn.params:
                m.symbols[p.name] = ("param", 0)
            assert interp_run(fn, m, 1, first - 1) == "exit"          # the kernel's prologue
            live = {r: m.regs.get(r, 0) for r, _ in params}
            exits.add(interp_run(fn, m, first, last, branch_out=True))
            got_rets, after = run(words, [live[r] for r, _ in params])
            got = [int.from_bytes(got_rets[4 * k:4 * k + 4], "little") for k in range(len(rets))]
            assert got == [m.regs[r] for r in rets], (n, live, got)
            assert after == words
    assert len(exits) == LOOPS[name][1], exits     # every way out taken, by some input


@pytest.mark.slow
@pytest.mark.parametrize("stem", ["layer_epi", "layer_epi_fast"])
def test_the_layer_bodies_compile_warning_free_for_the_gpu_and_gfx1201(tmp_path, stem):
    """The forms the layer fixtures added (tanh.approx, copysign, cvt.sat, fma.rm) in a
    whole-layer body: nvcc -O3 for sm_90 (where the GPU proof runs sm_89 PTX) and clang-19
    for gfx1201, no warning."""
    import shutil
    import subprocess
    nvcc, clang = shutil.which("nvcc"), shutil.which("clang-19")
    assert nvcc and clang, "nvcc and clang-19 are needed"
    body = lift_region(ROOT / "recipes" / f"{stem}_sm89.py", "registers")
    (tmp_path / "body.cu").write_text(body.text)
    (tmp_path / "rr_lift.h").write_text(body.header)
    assert body.text.count("/* ==== phase ") == 4
    r = subprocess.run([nvcc, "-O3", "-arch=sm_90", "-rdc=true", "-c", "body.cu", "-o", "b.o"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr[:2000]
    r = subprocess.run([clang, "-x", "hip", "--offload-arch=gfx1201", "-nogpuinc", "-nogpulib",
                        "-fgpu-rdc", "-O0", "-c", "body.cu", "-o", "b_hip.o"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr[:2000]


@pytest.mark.slow
def test_gpu_prepare_lift_finds_each_recipes_launch_description():
    """`--fixtures` items: the swin short names, a recipe path (its launch description
    found by kernel and module), RECIPE=LAUNCH; a recipe whose kernel has none is refused
    by name."""
    g = _controls()
    name, recipe, module, launch = g.resolve_fixture("recipes/layer_epi_fast_sm89.py")
    assert (name, launch) == ("layer_epi_fast_sm89", LAYER / "layer_epi_fast.launch.json")
    assert module == LAYER / "layer_epi_fast_sm89.ptx"
    assert json.loads(launch.read_text())["kernel"] == "rrlayer_fast_kernel"
    name, recipe, module, launch = g.resolve_fixture("tiny")
    assert (name, recipe.name, launch.name) == ("tiny", "swin_tiny_sm89.py",
                                                "swin_tiny.launch.json")
    pair = f"recipes/swin_small_sm89.py={ROOT / 'corpus_fixtures' / 'swin_small.launch.json'}"
    assert g.resolve_fixture(pair)[3].name == "swin_small.launch.json"
    with pytest.raises(SystemExit, match="no launch description.*for nested"):
        g.resolve_fixture("recipes/loops_nested.py")


@pytest.mark.slow
def test_the_layer_fixtures_are_what_their_generator_writes(ptxas_path):
    """scripts/make_layer_fixtures.py --check: nvcc, ptxas and the recipe scaffolding give
    the committed PTX, ground truth, launch descriptions and recipes byte for byte."""
    import shutil
    import subprocess
    assert shutil.which("nvcc"), "nvcc is needed"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_layer_fixtures.py"),
                        "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
