#!/usr/bin/env bash
# Issue 20, part 2, on a machine with two GPUs (kind nvidia-h100-x2; about 7 minutes, one call):
# `kforge_bench all --section scale`, i.e. the fixed-work table (the same 16 recorded softmax
# candidates, 6 to 8 param points each, on 1 GPU, on 2 GPUs in one process and under
# `mpirun -n 2`, each row with a fresh CUBIN cache), then the builtin table (a budget of 40
# candidates, the same launches). The targets: 2 GPUs at least 1.8x the one-GPU row's search wall
# time, in one process and under mpirun, with each GPU at least 90% busy.
#
# The results (bench/results format: <gpu>-<date>.md and .json) and each row's optimize log go to
# $OUT/results; the archives and CUBIN caches stay in /tmp. The Markdown tables are printed last.
#   KF_SCALE_GPUS ("1 2")  KF_SCALE_CANDIDATES (16)  KF_SCALE_BUDGET (40)
# On 4 or 8 GPUs: KF_SCALE_GPUS="1 2 4" or "1 2 4 8" (targets 3.5x and 6.5x), and more candidates
# (KF_SCALE_CANDIDATES=32) so that every GPU has work.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
out="${OUT:-/tmp/kforge-scale}"
mkdir -p "$out/results"
work=/tmp/kforge-scale-work
rm -rf "$work" && mkdir -p "$work"
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_arg=()
if command -v mpirun >/dev/null && [ -f "$here/.gpu/libkforge_mpi.so" ]; then
    mpirun --version | head -1
else
    echo "gpu-scale: no mpirun or no .gpu/libkforge_mpi.so: the MPI rows are left out"
    mpirun_arg=(--mpirun "")
fi
nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader
nproc
cd "$here"
# shellcheck disable=SC2086
time "$here/.gpu/kforge_bench" all --section scale --out "$work/results" --gpu-counts ${KF_SCALE_GPUS:-1 2} \
    --scale-candidates "${KF_SCALE_CANDIDATES:-16}" --scale-budget "${KF_SCALE_BUDGET:-40}" "${mpirun_arg[@]}" \
    >"$out/results/bench.md" 2>"$out/results/bench.log"
echo "kforge_bench rc=$?"
cp "$work"/results/*.md "$work"/results/*.json "$out/results/" 2>/dev/null
for log in "$work"/results/archives/scale/*/optimize.log; do
    [ -f "$log" ] && cp "$log" "$out/results/$(basename "$(dirname "$log")").log"
done
grep -E "warn|error" "$out/results/bench.log" | head -10
cat "$out/results/bench.md"
