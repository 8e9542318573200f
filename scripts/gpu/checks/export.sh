#!/usr/bin/env bash
# check: exported kernels built outside kforge (launcher and PyTorch operator), checked against PyTorch and timed
# claim: README 'Using the result'; docs/library-steps.md (export)
# device time: about 6 min
#
# The shipped kernel, end to end on a GPU machine: short builtin-proposer runs of softmax, layernorm
# and hgemm (kept in $OUT and reused when present), then scripts/gpu/checks/export_check.py exports each best
# with --launcher (a C++ driver built with nvcc calls kforge_<task>()) and --torch (the extension
# built with its loader, compared with PyTorch and timed against kforge's recorded median).
#   KF_EXPORT_TASKS   tasks to run (default: softmax_f32 layernorm_f32 hgemm_bf16)
#   KF_EXPORT_BUDGET  candidates per optimize run (default 16)
#   KF_EXPORT_SAMPLES timing samples per shape (default 200)
set -uo pipefail
source "$(dirname "$0")/../env.sh"
cd "$here"
out="${OUT:-/tmp/kforge-export-check}"
mkdir -p "$out"
budget="${KF_EXPORT_BUDGET:-16}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
archives=()
for task in ${KF_EXPORT_TASKS:-softmax_f32 layernorm_f32 hgemm_bf16}; do
    archive="$out/$task.kforge"
    if [ ! -f "$archive" ]; then
        start=$(date +%s)
        "$KF" optimize "tasks/$task.json" --model builtin --budget "$budget" --seed 7 --no-knowledge \
            --progress lines -o "$archive" >"$out/$task-optimize.log" 2>&1
        echo "optimize $task rc=$? in $(( $(date +%s) - start ))s"
    fi
    archives+=("$archive")
done
start=$(date +%s)
python3 scripts/gpu/checks/export_check.py --kforge "$KF" --out "$out" --samples "${KF_EXPORT_SAMPLES:-200}" \
    "${archives[@]}" 2>&1 | tee "$out/export-check.log"
echo "export check rc=${PIPESTATUS[0]} in $(( $(date +%s) - start ))s"
