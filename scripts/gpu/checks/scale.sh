#!/usr/bin/env bash
# check: the same fixed work on 1, 2, 4, 8 GPUs: search wall time and each GPU's busy share
# claim: bench/results/*-scale*.md; README 'Several GPUs'
# device time: about 8 min, several GPUs
#
# does the search do N times the work on N GPUs? One device call of at most ~8
# minutes on a machine with several GPUs (kinds nvidia-h100-x2 or nvidia-h100-x4; binaries carried
# in .gpu/ by scripts/pack-gpu.sh).
#
# The GPU count comes from the machine (`nvidia-smi -L`): rows for 1 GPU, 2, 4, 8 ... up to what is
# there (and the count itself when it is not a power of two), each in one process (`--gpus N`) and,
# from 2 up, under `mpirun -n N` (one rank per GPU). `kforge_bench all --section scale` runs them:
#  - fixed work: the same recorded softmax candidates on every row (distinct, correct, 6 to 8 param
#    points each; tests/fixtures/replay/softmax_f32_scale.jsonl), a fresh CUBIN cache per row;
#  - builtin: the builtin proposer with a fixed budget of candidates, fresh caches too.
# Rows that would end past the time budget (KF_SCALE_DEADLINE, 430 s of rows) are left out and say
# so: the fixed-work table comes first, it is the one the targets are about.
# Targets (fixed work): >= 1.8x on 2 GPUs, >= 3.5x on 4, >= 6.5x on 8, each GPU >= 90% busy.
#
# Settings: KF_SCALE_GPUS (the counts, e.g. "1 2"), KF_SCALE_CANDIDATES (48 up to 2 GPUs, 64 on 4,
# 96 on more), KF_SCALE_BUDGET (builtin candidates per row: 32 up to 2 GPUs, 24 beyond),
# KF_SCALE_DEADLINE (seconds), KF_SCALE_OPTIMIZE_ARGS (words added to every row's kforge optimize,
# for experiments: "--compile-workers 16").
# $OUT/scale-results.tgz holds results/ with bench/results-format files (<gpu>-<date>.md and .json: the lead commits them),
# scale.json (every row in full), bench.log and each row's optimize log, which is at debug level:
# `python3 scripts/timeline.py $OUT/results/fixed-mpi-2gpu.log` shows what each GPU ran when and
# where it idled. The short table printed last (scripts/scale-summary.py) is the result: GPUs,
# mode, wall s (the search's, first candidate to last record), speedup over the one-GPU row, GPU
# evaluations (equal on every row when the work is the same), and each GPU's busy share.
# scripts/sim-scale.sh runs the same rows on simulated GPUs calibrated to this machine's H200 run.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp/kforge-scale}"
mkdir -p "$out/results"
work=/tmp/kforge-scale-work
rm -rf "$work" && mkdir -p "$work"
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${gpus:-0}" -lt 1 ]; then
    echo "gpu-scale: nvidia-smi -L lists no GPU; nothing to measure"
    exit 1
fi
counts=""
for n in 1 2 4 8 16; do [ "$n" -le "$gpus" ] && counts="$counts $n"; done
case " $counts " in *" $gpus "*) ;; *) counts="$counts $gpus" ;; esac
counts="${KF_SCALE_GPUS:-${counts# }}"
# The fixed work is sized so that the seeding phase (the reference and the seeds, recorded with a
# confirmation each: ~17 s on one H200, ~9 s on several, since one confirmation cannot be split) is
# a minor part of every row, as it is of a real run of hours: with 24 candidates it was a third of
# the one-GPU row (H200 x4, 2026-11-26). Proposals start once the reference is recorded, from the
# seeds' sources while the seeds are confirmed, and the seeds compile while the GPUs time their
# baselines (before, GPUs idled behind the seeds' compiles and confirmations).
if [ "$gpus" -le 2 ]; then candidates=48 budget=32
elif [ "$gpus" -le 4 ]; then candidates=64 budget=24
else candidates=96 budget=24; fi
candidates="${KF_SCALE_CANDIDATES:-$candidates}"
budget="${KF_SCALE_BUDGET:-$budget}"
deadline="${KF_SCALE_DEADLINE:-430}"
echo "gpu-scale: $gpus GPU(s) listed; rows for: $counts; $candidates recorded candidates, builtin budget $budget, rows within ${deadline} s"
nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader
echo "cores: $(nproc)"

extra_args=()
for word in ${KF_SCALE_OPTIMIZE_ARGS:-}; do extra_args+=("--scale-optimize-arg=$word"); done
mpirun_arg=()
if command -v mpirun >/dev/null && [ -f "$here/.gpu/libkforge_mpi.so" ]; then
    mpirun --version | head -1
else
    echo "gpu-scale: no mpirun or no .gpu/libkforge_mpi.so: the MPI rows are left out"
    mpirun_arg=(--mpirun "")
fi

cd "$here"
start=$(date +%s)
# The deadline leaves out rows that would not fit; the timeout is the backstop for a row that hangs
# (scale.json keeps the rows finished before it).
# shellcheck disable=SC2086
timeout -k 10 $((deadline + 90)) "$here/.gpu/kforge_bench" all --section scale --out "$work/results" \
    --gpu-counts $counts --scale-candidates "$candidates" --scale-budget "$budget" --scale-deadline "$deadline" \
    "${mpirun_arg[@]}" "${extra_args[@]}" >"$out/results/bench.md" 2>"$out/results/bench.log"
rc=$?
echo "kforge_bench rc=$rc after $(($(date +%s) - start)) s$([ $rc -eq 124 ] && echo ' (timed out: the table has the rows done before)')"
cp "$work"/results/*.md "$work"/results/*.json "$work"/results/archives/scale/scale.json "$out/results/" 2>/dev/null
for log in "$work"/results/archives/scale/*/optimize.log; do
    [ -f "$log" ] && cp "$log" "$out/results/$(basename "$(dirname "$log")").log"
done
grep -E "warn|error" "$out/results/bench.log" | head -10
# What each row waited for (per GPU, from its debug log), then everything in one archive: the device
# tool brings back at most 8 files.
for log in "$out"/results/fixed-*.log; do
    [ -f "$log" ] && { echo "== $(basename "$log" .log)"; python3 "$here/scripts/timeline.py" "$log" | grep -E "^gpu|busy" | head -8; }
done >"$out/results/timelines.txt" 2>&1
cp "$out/results/scale.json" "$out/scale.json" 2>/dev/null
(cd "$out" && tar czf scale-results.tgz results && rm -rf results)

python3 "$here/scripts/scale-summary.py" "$out/scale.json"
