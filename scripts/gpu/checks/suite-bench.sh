#!/usr/bin/env bash
# check: kforge_bench suite: problems per hour with 1 and 2 GPUs, modes 1, old and auto
# claim: bench/results/nvidia-h200-2026-11-26-suite.md; docs/suite.md
# device time: about 12 min on 2 GPUs
#
# The suite's bench figures: `kforge_bench suite` on a GPU machine (carried build, scripts/pack-gpu.sh):
# problems per hour of `kforge suite run` over the twelve bundled tasks (builtin proposer) with 1 and
# 2 GPUs (every count up to what nvidia-smi lists, KF_SUITE_GPUS to choose) and the modes --per-gpu 1, old (5 runs,
# one searching) and auto,
# --time KF_SUITE_TIME (default 10s) per problem. About 12 minutes on 2 GPUs with the defaults.
# $OUT/suite-bench.tgz holds the bench's .md/.json (bench/results format: commit them) and every
# suite folder's logs; the table is printed last.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp/kforge-suite-bench}"
work=/tmp/kforge-suite-bench-work
rm -rf "$work" && mkdir -p "$work/results" "$out"
counts=$(suite_gpu_counts)
nvidia-smi --query-gpu=index,name --format=csv,noheader
echo "gpu-suite-bench: GPU counts $counts, modes 1, old and auto, --time ${KF_SUITE_TIME:-10s} per problem"
cd "$here"
# shellcheck disable=SC2086
timeout -k 10 "${KF_SUITE_DEADLINE:-540}" "$here/.gpu/kforge_bench" --kforge "$KF" suite --gpu-counts $counts \
    --modes 1 old auto --suite-time "${KF_SUITE_TIME:-10s}" --archives "$work/archives" \
    >"$work/results/suite.md" 2>"$work/results/bench.log"
echo "kforge_bench suite rc=$?"
(cd "$work" && tar czf "$out/suite-bench.tgz" results archives/*/suite.json archives/*/logs 2>/dev/null)
cat "$work/results/suite.md"
