#!/usr/bin/env bash
# `kforge suite run` on a GPU machine (issue 19), with the carried build (scripts/gpu-env.sh, .gpu/):
# the eight torch fixture problems (tests/fixtures/torch/*.py, imported on the fly) with their
# recorded replies (--model replay:tests/fixtures/torch/replies/: each problem its <stem>.jsonl) and
# four bundled tasks, which have no replies there and so run the builtin proposer, every problem
# with --time 20s, on every GPU of the machine (one problem per GPU at a time).
#
# Printed last: the suite table (`kforge suite report`), then per GPU its shares of the time from
# the start until it found no problem left: busy (its runs verifying, timing or profiling, as
# `optimize` counts it), searching (their searches running, i.e. after each run's startup and
# baselines) and held (a problem's run had the GPU, startup included). Target: busy >= 85% per GPU.
#   PROBLEMS          torch problems (default: those of tests/fixtures/torch/replies/expected.json)
#   BUNDLED           bundled tasks (default: softmax_f32 layernorm_f32 transpose_f32 reduce_sum_f32)
#   KF_SUITE_TIME     --time per problem (default 20s)
#   KF_SUITE_BUDGET   seconds the suite may run (default 290): then it is interrupted (SIGINT, as
#                     Ctrl-C) and a second `suite run` on the folder resumes it for KF_SUITE_RESUME
#                     seconds (default 40), which also shows resume on the GPU machine
# $OUT gets run.log (the suite's progress lines), report.json, suite.html with each problem's page,
# and the suite folder's manifest and logs, packed into gpu-suite-run.tgz.
# Exit status: the last `suite run`'s (0 every problem finished or was skipped, 1 some failed,
# 130 interrupted).
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
cd "$here"
out="${OUT:-/tmp/kforge-gpu-suite-run}"
mkdir -p "$out"
export KFORGE_PYTHON="${KFORGE_PYTHON:-python3}"
problems="${PROBLEMS:-$(python3 -c 'import json; print(" ".join(json.load(open("tests/fixtures/torch/replies/expected.json"))["problems"]))')}"
bundled="${BUNDLED:-softmax_f32 layernorm_f32 transpose_f32 reduce_sum_f32}"
budget="${KF_SUITE_BUDGET:-290}"
resume_budget="${KF_SUITE_RESUME:-40}"
suite="/tmp/kforge-gpu-suite-run/suite"
rm -rf "$suite"
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start ))s] $*"; }

nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
"$KFORGE_PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.device_count(), "GPUs")'
paths=()
for p in $problems; do paths+=("tests/fixtures/torch/$p.py"); done
for t in $bundled; do paths+=("tasks/$t.json"); done
say "suite run: ${#paths[@]} problems, --time ${KF_SUITE_TIME:-20s}, on every GPU (budget ${budget}s)"
timeout -s INT -k 60 "$budget" "$KF" suite run "${paths[@]}" -o "$suite" \
    --model "replay:tests/fixtures/torch/replies/" --time "${KF_SUITE_TIME:-20s}" --no-knowledge \
    --progress lines >"$out/run.out" 2>"$out/run.log"
rc=$?
say "suite run rc=$rc"
if [ "$rc" = 130 ] || [ "$rc" = 124 ]; then
    say "interrupted at the budget: resuming for ${resume_budget}s (finished problems are skipped)"
    timeout -s INT -k 30 "$resume_budget" "$KF" suite run -o "$suite" --progress lines \
        >"$out/resume.out" 2>>"$out/run.log"
    rc=$?
    say "resumed suite run rc=$rc"
fi
grep -E '^\[[0-9]+/[0-9]+\]|failed|error' "$out/run.log" | tail -20

"$KF" suite report "$suite" --json >"$out/report.json" 2>>"$out/run.log"
"$KF" suite report "$suite" -o "$out/suite.html" >/dev/null 2>>"$out/run.log"
cp "$suite/suite.json" "$out/suite.json"
cp -r "$suite/logs" "$out/logs"
(cd "$out" && tar czf gpu-suite-run.tgz --remove-files suite.json logs suite.html report.json 2>/dev/null)

echo
echo "== suite table ($(( $(date +%s) - start ))s) =="
"$KF" suite report "$suite"
echo
echo "== GPU shares while problems remained, per suite run process (target: busy >= 85% each) =="
python3 - "$suite/suite.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"{'run':<4} {'gpu':<6} {'problems':>8} {'window':>8} {'busy':>6} {'searching':>9} {'held':>6}")
for i, run in enumerate(m.get("runs", [])):
    for g in run.get("gpus", []):
        print(f"{i:<4} {g['label']:<6} {g['problems']:>8} {g['window_s']:>7.0f}s {100 * g['busy']:>5.1f}% "
              f"{100 * g.get('search', 0):>8.1f}% {100 * g['held']:>5.1f}%"
              + ("  (interrupted)" if run.get("interrupted") else ""))
EOF
exit "$rc"
