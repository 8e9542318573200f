#!/usr/bin/env bash
# One device call on a machine of 4 or more GPUs that runs three GPU scripts side by side, each on
# GPUs of its own (CUDA_VISIBLE_DEVICES), so that one call of about 9 minutes does the work of three:
#   GPUs 0,1  scripts/gpu-suite-run.sh  (issue 19: suite shared --per-gpu 3 against alone)
#   GPU 2     scripts/gpu-suite.sh with KF_GPU_ONLY=1 (the [gpu] tests)
#   GPU 3     scripts/gpu-gemm.sh (issue 25: seeds' points, profiles, the bench rows)
# The jobs share the host (its cores, memory and PCIe root) but no GPU; each has its own kforge
# cache. Each job's files are packed into $OUT/<job>.tgz (the device tool brings back few files);
# each job's printed output follows, in that order, once all have ended.
# usage: scripts/gpu-batch.sh [JOB...]   (JOB: suite-run tests gemm; default all three)
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-/tmp/kforge-gpu-batch}"
mkdir -p "$out"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${gpus:-0}" -lt 4 ]; then
    echo "gpu-batch: needs 4 GPUs, nvidia-smi -L lists ${gpus:-0}; run the scripts one by one instead"
    exit 1
fi
jobs_wanted="${*:-suite-run tests gemm}"
start=$(date +%s)

run_job() { # NAME DEVICES COMMAND...
    local name="$1" devices="$2"
    shift 2
    local dir="$out/$name.d"
    mkdir -p "$dir"
    (
        export CUDA_VISIBLE_DEVICES="$devices" OUT="$dir" XDG_CACHE_HOME="/tmp/kforge-cache-$name"
        local t0
        t0=$(date +%s)
        "$@"
        echo "[$name] rc=$? after $(( $(date +%s) - t0 )) s on GPU(s) $devices"
    ) >"$out/$name.txt" 2>&1
}

pids=()
for job in $jobs_wanted; do
    case "$job" in
    suite-run) run_job suite-run 0,1 "$here/scripts/gpu-suite-run.sh" & ;;
    tests) run_job tests 2 env KF_GPU_ONLY=1 "$here/scripts/gpu-suite.sh" & ;;
    gemm) run_job gemm 3 env PHASES="${GEMM_PHASES:-compile points profile bench}" \
        POINTS_BUDGET_S="${POINTS_BUDGET_S:-150}" BENCH_TIME="${BENCH_TIME:-45s}" "$here/scripts/gpu-gemm.sh" & ;;
    *) echo "gpu-batch: unknown job '$job'"; exit 2 ;;
    esac
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
echo "gpu-batch: all jobs ended after $(( $(date +%s) - start )) s"
for job in $jobs_wanted; do
    (cd "$out" && tar czf "$job.tgz" "$job.d" "$job.txt" && rm -rf "$job.d")
    echo
    echo "===== $job ====="
    # The tail of each job's output: the device tool returns only the last 12,000 characters.
    tail -c "${BATCH_TAIL_CHARS:-3800}" "$out/$job.txt"
    rm -f "$out/$job.txt"
done
