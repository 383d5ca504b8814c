#!/usr/bin/env bash
# The whole-region lifted bodies of docs/proof.md section 12, rebuilt and compared in one go
# on a machine with an NVIDIA GPU, nvcc and CuPy (sm_89 PTX run as sm_90):
#
#     bash scripts/gpu_lift_all.sh OUTDIR
#
# builds every body with scripts/gpu_prepare_lift.py (both staging modes and their negative
# controls, and the registers body inlined into its kernel with `rrsplice body inline`
# instead of called), the same regions outlined as PTX (scripts/gpu_prepare.py: the cost of the call
# itself), the loop cuts with scripts/gpu_loops.py, then compares each against the
# original kernel with scripts/gpu_diff.py (3 random inputs, 50 timed launches). The JSON
# and Markdown results land in OUTDIR; the exit status is non-zero if any cut that must match
# mismatched or any control failed to differ.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu_lift_all.sh OUTDIR}
mkdir -p "$out" && out=$(cd "$out" && pwd)
status=0
prep() { python3 scripts/gpu_prepare_lift.py "$@" >>"$out/prepare.log" 2>&1 || { echo "prepare failed: $*"; status=1; }; }
diff_() { python3 scripts/gpu_diff.py "build/gl_$1/manifest.json" --isolate --trials 3 --timing 50 \
              --out "$out/lift_$1.json" >>"$out/diff.log" 2>&1 || { echo "mismatch or control: $1"; status=1; }; }

prep --out build/gl_swin --inline &
# the same regions outlined as PTX (section 2): what the call alone costs, beside the lift
python3 scripts/gpu_prepare.py --out build/gl_outline >>"$out/prepare.log" 2>&1 || { echo "outline prepare failed"; status=1; } &
prep --out build/gl_layer --inline --fixtures recipes/layer_epi_sm89.py recipes/layer_epi_fast_sm89.py &
prep --out build/gl_frag --inline --recipes recipes/frag_*.py recipes/tiny_family.py &
prep --out build/gl_dec_r --inline --recipes recipes/swin_dec2.py recipes/swin_dec1.py --staging registers \
     --control-at last --registers-control b-swapped &
prep --out build/gl_dec_i --recipes recipes/swin_dec2.py recipes/swin_dec1.py --staging image \
     --control-at last &
python3 scripts/gpu_loops.py prepare --out build/gpu_loops >>"$out/prepare.log" 2>&1 || { echo "loops prepare failed"; status=1; }
wait
for m in swin outline layer frag dec_r dec_i; do diff_ "$m"; done
(cd build/gpu_loops && python3 ../../scripts/gpu_loops.py run manifest.json --trials 3 \
     --out "$out/loops.json") >>"$out/diff.log" 2>&1 || { echo "loops mismatch"; status=1; }
grep -h "^| " "$out"/lift_*.md 2>/dev/null
exit $status
