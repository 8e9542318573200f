#!/usr/bin/env bash
# check: a search on a large imported problem whose model answers late and out of order finishes its budget
# claim: bench/results/nvidia-h200-2026-11-28-hostile.md (the stall)
# device time: about 4 min
#
# On a GPU machine: a search on a large imported problem, its model an endpoint
# that thinks (scripts/slow-openai-server.py: every request answered after DELAY s, with jitter,
# with the same correct kernel, so parallel replies arrive late and out of order). Before the fix
# this stalled for good ("waiting for: screening item 0"); now it must finish its budget.
#
#   scripts/gpu/checks/stall.sh PROBLEM.py REPLY.md [BUDGET] [DELAY]
#
# PROBLEM.py: a KernelBench-form program (level 1 problem 19, ReLU, bench shape 4096 x 393216, is the case
# of the issue: 6.4 GB per tensor); REPLY.md: the assistant message the endpoint sends. Carries a
# build made by scripts/pack-gpu.sh. Logs go to $OUT; a short table is printed last.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp/kforge-stall}"
mkdir -p "$out"
problem="$1"
reply="$2"
budget="${3:-4}"
delay="${4:-10}"
name=$(basename "$problem" .py)
spec="$out/$name/$name.json"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader

start=$(date +%s)
"$KF" task import "$problem" -o "$spec" --device cuda --time-limit 600 >"$out/import.log" 2>&1
import_rc=$?
import_s=$(( $(date +%s) - start ))
tail -3 "$out/import.log"

python3 "$here/scripts/slow-openai-server.py" --reply "$reply" --delay "$delay" --jitter 3 \
    --port-file "$out/port.txt" >/dev/null 2>"$out/server.log" &
server=$!
for _ in $(seq 50); do [ -s "$out/port.txt" ] && break; sleep 0.1; done
port=$(cat "$out/port.txt")

start=$(date +%s)
OPENAI_API_KEY=sk-local-endpoint-placeholder timeout 480 "$KF" --log-level debug optimize "$spec" \
    --model "openai:slow@http://127.0.0.1:$port/v1" --budget "$budget" --no-knowledge --progress lines \
    -o "$out/$name.kforge" >"$out/optimize.out" 2>"$out/optimize.log"
optimize_rc=$?
optimize_s=$(( $(date +%s) - start ))
kill "$server" 2>/dev/null
"$KF" inspect "$out/$name.kforge" >"$out/inspect.txt" 2>&1

echo
grep -E "^\[[0-9]+/[0-9]+\]|waiting for" "$out/optimize.log" | tail -12
echo
printf '%-34s %s\n' "import rc / seconds" "$import_rc / ${import_s}s"
printf '%-34s %s\n' "optimize rc / seconds" "$optimize_rc / ${optimize_s}s (124 = killed at 480 s: a stall)"
printf '%-34s %s\n' "model requests answered" "$(grep -c answered "$out/server.log")"
printf '%-34s %s\n' "best" "$(grep -m1 '^best' "$out/optimize.out")"
printf '%-34s %s\n' "candidates" "$(grep -m1 '^candidates' "$out/optimize.out")"
printf '%-34s %s\n' "GPU busy" "$(grep -m1 -o 'GPU busy [^;]*' "$out/optimize.out")"
grep -A3 "^  shape" "$out/optimize.out"
(cd "$out" && tar czf stall-check.tgz --remove-files --exclude stall-check.tgz -- *.log *.out *.txt 2>/dev/null)
