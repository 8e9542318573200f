#!/usr/bin/env bash
# `kforge_bench scale` on SIMULATED GPUs (evaluator/worker/simulator.hpp), for finding what
# keeps GPUs idle without a GPU machine: the same fixed work and rows as scripts/gpu/checks/scale.sh
# (1 GPU, N GPUs in one process, mpirun -n N), with the real controller, scheduler, search and MPI
# relay, and a stand-in worker that sleeps as an H200 would.
#
#   scripts/sim-scale.sh [GPU COUNTS...]        # default: 1 2
#   KFORGE_BIN=/path/to/kforge scripts/sim-scale.sh 1 2   # another build (its libkforge_mpi.so beside it)
#
# Calibration (2 x H200, bench/results/nvidia-h200-2026-11-26-scale.md and its logs): a screened
# softmax variant ~0.17 s, the baselines 2.1 s, a confirmation about 4 s; so a unit of 170 ms,
# confirm=24, profile=4, held_out=1, baselines=12 units. Timings are noisy (1%), and the fixed-work
# candidates, near-copies of four kernels, tie as they do on GPUs (landscape "plan"). One CUBIN
# cache serves every row, warmed first: on a machine of two cores NVRTC, not the GPUs, would set the
# pace. KF_SIM_UNIT_MS, KF_SIM_COSTS, KF_SIM_NOISE override the calibration; KF_SCALE_CANDIDATES
# (fixed work: 16 up to 2 GPUs, 24 on 4, 32 beyond) and KF_SCALE_BUDGET (builtin rows: 24) the
# work, as in scripts/gpu/checks/scale.sh (whose GPU defaults are larger). Writes $OUT (default
# /tmp/kforge-sim-scale): the bench's md/json, scale.json, each row's optimize.log (with the
# timeline: python3 scripts/timeline.py FILE), and prints the short table last.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$here/build/dev"
kforge="${KFORGE_BIN:-$build/src/cli/kforge}"
bench="$build/bench/kforge_bench"
out="${OUT:-/tmp/kforge-sim-scale}"
counts=("$@")
[ ${#counts[@]} -eq 0 ] && counts=(1 2)
max=1
for n in "${counts[@]}"; do [ "$n" -gt "$max" ] && max=$n; done
# As scripts/gpu/checks/scale.sh: more work for more GPUs, so that the run is not all start and end.
if [ "$max" -le 2 ]; then candidates=16; elif [ "$max" -le 4 ]; then candidates=24; else candidates=32; fi
candidates="${KF_SCALE_CANDIDATES:-$candidates}"
budget="${KF_SCALE_BUDGET:-24}"
for f in "$kforge" "$bench"; do
    [ -x "$f" ] || { echo "sim-scale: $f is missing; build first (cmake --build --preset dev)"; exit 1; }
done

export KFORGE_SIMULATE_GPUS="$max"
export KFORGE_SIMULATE_GPU_MS="${KF_SIM_UNIT_MS:-170}"
export KFORGE_SIMULATE_GPU_COSTS="${KF_SIM_COSTS:-confirm=24,profile=4,held_out=1,baselines=12}"
export KFORGE_SIMULATE_GPU_NOISE="${KF_SIM_NOISE:-0.01}"
export KFORGE_SIMULATE_GPU_LANDSCAPE=plan
export OMPI_MCA_rmaps_base_oversubscribe=1 # more ranks than cores is fine: the GPUs sleep
export KFORGE_HOME="$here"
unset OPENAI_API_KEY ANTHROPIC_API_KEY

rm -rf "$out" && mkdir -p "$out"
mpirun_arg=()
command -v mpirun >/dev/null || mpirun_arg=(--mpirun "")
echo "sim-scale: ${counts[*]} simulated GPUs, $KFORGE_SIMULATE_GPU_MS ms a unit, costs $KFORGE_SIMULATE_GPU_COSTS," \
     "noise $KFORGE_SIMULATE_GPU_NOISE; kforge: $kforge"
"$bench" --kforge "$kforge" all --section scale --out "$out" --gpu-counts "${counts[@]}" --scale-candidates "$candidates" \
    --scale-budget "$budget" --scale-shared-cache "$out/cache" "${mpirun_arg[@]}" >"$out/bench.md" 2>"$out/bench.log"
rc=$?
echo "kforge_bench rc=$rc"
cp "$out"/archives/scale/scale.json "$out/" 2>/dev/null
for log in "$out"/archives/scale/*/optimize.log; do
    [ -f "$log" ] && cp "$log" "$out/$(basename "$(dirname "$log")").log"
done
python3 "$here/scripts/scale-summary.py" "$out/scale.json"
