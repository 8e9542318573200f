#!/usr/bin/env bash
# Issue 11's evaluator checks on a GPU machine, with a build carried in .gpu/ (scripts/pack-gpu.sh):
#   1. a builtin softmax run with budget 64, twice: as kforge runs (measurements reused) and with
#      --no-reuse (the "before"); for each, the GPU time spent measuring a point again (`kforge
#      inspect`'s gpu work) and the seconds from the command's start to the first recorded
#      candidate (the archive polled every 0.2 s) — targets: under 20% and under 10 s;
#   2. the PyTorch eager / torch.compile baselines of every task (bench/torch_baselines.py; skipped
#      with KF_TORCH=0, compile cap per shape KF_TORCH_CAP seconds, default 120).
# Logs and archives go to $OUT; a summary is printed last.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
out="${OUT:-/tmp}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

# Milliseconds since `start` (ns) at which the archive first holds a candidate ("" if never).
watch_first_candidate() {
    local archive=$1 pid=$2 start=$3
    while kill -0 "$pid" 2>/dev/null; do
        if [ -f "$archive" ] && python3 - "$archive" <<'EOF' 2>/dev/null; then
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=1)
sys.exit(0 if db.execute("select count(*) from candidate").fetchone()[0] > 0 else 1)
EOF
            echo $(( ($(date +%s%N) - start) / 1000000 ))
            return
        fi
        sleep 0.2
    done
}

softmax_run() { # name, extra optimize flags...
    local name=$1; shift
    local archive="$out/$name.kforge"
    rm -f "$archive"*
    local start; start=$(date +%s%N)
    "$KF" optimize "$here/tasks/softmax_f32.json" --model builtin --budget 64 --seed 7 --no-knowledge \
        --progress lines -o "$archive" "$@" >"$out/$name.log" 2>&1 &
    local pid=$!
    local first; first=$(watch_first_candidate "$archive" "$pid" "$start")
    wait "$pid"; local rc=$?
    local total_ms=$(( ($(date +%s%N) - start) / 1000000 ))
    "$KF" inspect "$archive" --json >"$out/$name-inspect.json" 2>>"$out/$name.log"
    python3 - "$out/$name-inspect.json" "$name" "$rc" "${first:-never}" "$total_ms" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
gpu, name, rc, first, total = report["gpu"], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]) / 1e3
share = gpu.get("repeat_share") or 0
first_text = first if first == "never" else f"{float(first) / 1e3:.1f} s"
print(f"{name}: exit {rc}, {report['budget']['candidates']} candidates in {total:.0f} s, best "
      f"{report['best']['fitness'] if report['best'] else '-'}x")
print(f"  GPU time on repeats: {gpu['repeat_gpu_s']:.1f} s of {gpu['gpu_s']:.1f} s ({100 * share:.0f}%; target < 20%); "
      f"{gpu['repeat_runs']} of {gpu['runs']} runs measured a point again, {gpu['reused_runs']} reused whole, "
      f"{gpu['partly_reused_runs']} in part")
print(f"  first candidate recorded {first_text} after the command started (target < 10 s); "
      f"{gpu['first_candidate_s']:.1f} s after the archive was created")
EOF
    grep -E "waiting for|timing the baselines" "$out/$name.log" | head -5 | sed 's/^/  log: /'
}

softmax_run softmax-reuse
softmax_run softmax-no-reuse --no-reuse

if [ "${KF_TORCH:-1}" != "0" ]; then
    start=$(date +%s)
    python3 "$here/bench/torch_baselines.py" --all --compile-cap "${KF_TORCH_CAP:-120}" >"$out/torch-baselines.md" \
        2>"$out/torch-baselines.log"
    echo "torch baselines (rc $?, $(( $(date +%s) - start )) s):"
    cat "$out/torch-baselines.md"
fi
