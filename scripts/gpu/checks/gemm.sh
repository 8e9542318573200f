#!/usr/bin/env bash
# check: the GEMM seeds' correctness, param points, profiles and times against cuBLAS
# claim: bench/results/nvidia-h200-2026-11-26-gemm.md, nvidia-h100-80gb-hbm3-2026-11-26-gemm.txt; docs/gemm.md
# device time: about 8 min
#
# On one H100 (or H200): are the new GEMM seeds correct, how fast are they against cuBLAS,
# and what do the profiles say. One call of about 7-8 minutes with the defaults; binaries carried
# in .gpu/ by scripts/pack-gpu.sh. The work is scripts/gpu/checks/gemm.py (its docstring lists the phases):
#   compile  NVRTC verdict, registers and spills of every param point of every GEMM seed;
#   points   every param point of hgemm_bf16/seed_ws_tma and seed_ws_persistent and of
#            sgemm_f32/seed_frag_pipeline (duplicates after STAGES clamping left out),
#            pinned one by one, plus one point of each older seed as a same-run baseline, through
#            `kforge eval --held-out` (tests and held-out shapes, confirmation timing against the
#            reference and cuBLAS), best guesses first, until POINTS_BUDGET_S (default 200);
#   profile  `kforge eval --profile` of each task's best correct point;
#   bench    `kforge_bench tasks` for the two GEMM tasks (BENCH_TIME each, default 60s): the rows
#            of the bench table (reference, cuBLAS, torch eager, torch.compile, best, % roofline).
# Failures never stop the script: each point reports its verdict and the first lines of its
# message (compile log, mismatch, fault or timeout; a deadlocked mbarrier pipeline shows as a
# timeout). PHASES picks phases ("compile points profile" then "bench" in a second call when one
# call must stay short). Everything (JSON, logs, pinned sources, the table) is packed into
# $OUT/gemm.tar.gz; the table is printed last and also written to $OUT/gemm-table.txt.
# usage: [PHASES="compile points profile bench"] [POINTS_BUDGET_S=200] [BENCH_TIME=60s] scripts/gpu/checks/gemm.sh
set -uo pipefail
source "$(dirname "$0")/../env.sh"
work="${GEMM_DIR:-/tmp/kforge-gemm}/gemm"
rm -rf "$work" && mkdir -p "$work"
mkdir -p "${OUT:-/tmp}"
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$work/device.txt"
python3 "$here/scripts/gpu/checks/gemm.py" "$here" "$KF" "$here/.gpu/kforge_bench" "$work"
rc=$?
cp "$work/table.txt" "${OUT:-/tmp}/gemm-table.txt" 2>/dev/null
tar -czf "${OUT:-/tmp}/gemm.tar.gz" -C "$(dirname "$work")" gemm
exit $rc
