#!/usr/bin/env bash
# check: kforge_bench suite with replies served at a model's latency: problems per hour and GPU busy share
# claim: bench/results/nvidia-h200-2026-11-29-suite-latency.md; docs/suite.md 'Several runs per GPU'
# device time: about 10 min
#
# The suite's figures at a model's latency: `kforge_bench suite` with replies served at a model's latency, on a GPU
# machine (carried build, scripts/pack-gpu.sh). The problems are the recorded PyTorch fixtures (the
# eight torch fixtures, the seven extra ones with replies, the level-2 bmm fixture: sixteen), each
# KF_COPIES times (default 1), replies served after KF_LATENCY (default 30s). Two invocations, one
# row each per GPU count (KF_SUITE_GPUS, default: every count up to what nvidia-smi lists):
#   auto: suite run's default (every run on a GPU searches; runs per GPU from the latency and the
#         GPU time per candidate);
#   old:  --per-gpu 5 --searches-per-gpu 1 (one search per GPU at a time), on the first
#         KF_OLD_PROBLEMS problems (default 5).
# KF_SKIP_OLD=1 leaves the old mode out. Each invocation is stopped by SIGINT to its suite after KF_AUTO_S / KF_OLD_S seconds (defaults 300
# and 200), which still prints its table. $OUT/suite-latency.tgz holds the results (.md, .json, logs).
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp/kforge-suite-latency}"
work=/tmp/kforge-suite-latency-work
rm -rf "$work" && mkdir -p "$work/results" "$out"
counts=$(suite_gpu_counts)
nvidia-smi --query-gpu=index,name --format=csv,noheader
cd "$here"
fx=tests/fixtures
problems=("$fx"/torch/*.py "$fx"/torch/extra/*.py "$fx"/level2/bmm_scale_softmax.py)
replies=("$fx/torch/replies" "$fx/torch/extra/replies" "$fx/level2/replies")

# Runs one mode; stops its suite (not the bench) with SIGINT at the deadline so the row still comes.
bench() {
    local mode="$1" limit="$2"; shift 2
    ( sleep "$limit"; pkill -INT -f "kforge suite run .*suite-latency-work/archives-$mode" ) &
    local watchdog=$!
    # shellcheck disable=SC2086
    "$here/.gpu/kforge_bench" --kforge "$KF" suite --gpu-counts $counts --modes "$mode" \
        --problems "${problems[@]}" --replies "${replies[@]}" --copies "${KF_COPIES:-1}" \
        --latency "${KF_LATENCY:-30s}" --archives "$work/archives-$mode" "$@" \
        >"$work/results/suite-$mode.md" 2>"$work/results/bench-$mode.log"
    echo "kforge_bench suite --modes $mode rc=$? in $SECONDS s"
    kill "$watchdog" 2>/dev/null
}
SECONDS=0
bench auto "${KF_AUTO_S:-300}"
[ -n "${KF_SKIP_OLD:-}" ] || bench old "${KF_OLD_S:-200}" --old-problems "${KF_OLD_PROBLEMS:-5}"
cp "$work"/archives-*/suite-bench.json "$work/results/" 2>/dev/null
for m in auto old; do cp "$work/archives-$m/suite-bench.json" "$work/results/suite-$m.json" 2>/dev/null; done
(cd "$work" && tar czf "$out/suite-latency.tgz" results archives-*/*/suite.json archives-*/*/logs archives-*/*.log \
    archives-*/*/gpus 2>/dev/null)
cat "$work/results/suite-auto.md" "$work/results/suite-old.md" 2>/dev/null
