#!/usr/bin/env bash
# check: kforge suite run over the torch fixtures and bundled tasks, shared and alone
# claim: bench/results/nvidia-h200-2026-11-26-suite-sharing.md, -suite.md; docs/suite.md
# device time: about 8 min
#
# `kforge suite run` on a GPU machine, with the carried build (scripts/gpu/env.sh, .gpu/):
# the eight torch fixture problems (tests/fixtures/torch/*.py, imported on the fly) with their
# recorded replies (--model replay:tests/fixtures/torch/replies/: each problem its <stem>.jsonl) and
# four bundled tasks, which have no replies there and so run the builtin proposer, every problem
# with --time 20s, on every GPU of the machine.
#
# Two suites of the same problems, each in a fresh folder:
#   1. shared:   --per-gpu KF_SUITE_PER_GPU (default 5) runs at once on each GPU, all searching
#                while others start up (torch import, compiles, baselines); every piece of GPU work
#                holds the GPU's measuring lock (docs/suite.md, "Several runs per GPU")
#   2. alone:    --per-gpu 1, as before sharing existed (skip with KF_SUITE_COMPARE=0)
# Printed last, for each: the suite table (`kforge suite report`), then per GPU its shares of the
# time from the start until it found no problem left to start: busy (the union of its runs' holds
# of the measuring lock: verifying, timing, profiling, baselines), waited (seconds runs spent
# waiting for the lock, not busy), searching (their searches running) and held (some run had the
# GPU). Then how far the shared suite's measured times are from the alone suite's: every baseline
# (torch eager, torch.compile, each task's reference) per problem and bench shape, and the best
# kernel's time where both suites chose the same candidate.
#
# What shows the target: in the "GPU shares" table, the shared run's busy >= 85% on every
# GPU; and in the "times, shared over alone" table, the baselines within run-to-run noise (median
# |ratio - 1| about 1%, none past 2-3%): sharing must not change what is measured.
#   PROBLEMS          torch problems (default: those of tests/fixtures/torch/replies/expected.json)
#   BUNDLED           bundled tasks (default: softmax_f32 layernorm_f32 transpose_f32 reduce_sum_f32)
#   KF_SUITE_TIME     --time per problem (default 20s)
#   KF_SUITE_PER_GPU  --per-gpu of the shared run (default 5)
#   KF_SUITE_COMPARE  1 (default): also the --per-gpu 1 run and the comparison; 0: the shared run only
#   KF_SUITE_BUDGET   seconds each suite may run (default 200): then it is interrupted (SIGINT, as
#                     Ctrl-C) and a second `suite run` on its folder resumes it for KF_SUITE_RESUME
#                     seconds (default 30), which also shows resume on the GPU machine
# $OUT gets run-shared.log / run-alone.log (the suites' progress lines), their report.json, suite
# pages, manifests, logs and measuring logs, packed into gpu-suite-run.tgz.
# Exit status: the shared `suite run`'s (0 every problem finished or was skipped, 1 some failed,
# 130 interrupted).
set -uo pipefail
source "$(dirname "$0")/../env.sh"
cd "$here"
out="${OUT:-/tmp/kforge-gpu-suite-run}"
mkdir -p "$out"
export KFORGE_PYTHON="${KFORGE_PYTHON:-python3}"
problems="${PROBLEMS:-$(python3 -c 'import json; print(" ".join(json.load(open("tests/fixtures/torch/replies/expected.json"))["problems"]))')}"
bundled="${BUNDLED:-softmax_f32 layernorm_f32 transpose_f32 reduce_sum_f32}"
budget="${KF_SUITE_BUDGET:-200}"
resume_budget="${KF_SUITE_RESUME:-30}"
per_gpu="${KF_SUITE_PER_GPU:-5}"
compare="${KF_SUITE_COMPARE:-1}"
work="/tmp/kforge-gpu-suite-run"
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start ))s] $*"; }

nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
"$KFORGE_PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.device_count(), "GPUs")'
paths=()
for p in $problems; do paths+=("tests/fixtures/torch/$p.py"); done
for t in $bundled; do paths+=("tasks/$t.json"); done

# run_suite NAME PER_GPU: one suite in $work/NAME; its exit status in $out/NAME.rc.
run_suite() {
    local name="$1" n="$2" suite="$work/$1"
    rm -rf "$suite"
    say "suite '$name': ${#paths[@]} problems, --time ${KF_SUITE_TIME:-20s}, --per-gpu $n, every GPU (budget ${budget}s)"
    timeout -s INT -k 60 "$budget" "$KF" suite run "${paths[@]}" -o "$suite" \
        --model "replay:tests/fixtures/torch/replies/" --time "${KF_SUITE_TIME:-20s}" --no-knowledge \
        --per-gpu "$n" --progress lines >"$out/run-$name.out" 2>"$out/run-$name.log"
    local rc=$?
    say "suite '$name' rc=$rc"
    if [ "$rc" = 130 ] || [ "$rc" = 124 ]; then
        say "interrupted at the budget: resuming for ${resume_budget}s (finished problems are skipped)"
        timeout -s INT -k 30 "$resume_budget" "$KF" suite run -o "$suite" --per-gpu "$n" --progress lines \
            >"$out/resume-$name.out" 2>>"$out/run-$name.log"
        rc=$?
        say "resumed suite '$name' rc=$rc"
    fi
    grep -E '^\[[0-9]+/[0-9]+\]|failed|error' "$out/run-$name.log" | tail -20
    "$KF" suite report "$suite" --json >"$out/report-$name.json" 2>>"$out/run-$name.log"
    "$KF" suite report "$suite" -o "$out/suite-$name.html" >/dev/null 2>>"$out/run-$name.log"
    mkdir -p "$out/$name"
    cp "$suite/suite.json" "$out/$name/suite.json"
    cp -r "$suite/logs" "$out/$name/logs"
    cp -r "$suite/gpus" "$out/$name/gpus" 2>/dev/null
    for id in $(python3 -c 'import json,sys; print(" ".join(p["id"] for p in json.load(open(sys.argv[1]))["problems"]))' "$suite/suite.json"); do
        [ -f "$suite/runs/$id.kforge" ] && "$KF" inspect "$suite/runs/$id.kforge" --json >"$out/$name/$id.inspect.json" 2>/dev/null
    done
    echo "$rc" >"$out/$name.rc"
}

run_suite shared "$per_gpu"
[ "$compare" = 1 ] && run_suite alone 1

for name in shared alone; do
    [ -d "$work/$name" ] || continue
    echo
    echo "== suite table: $name ($(( $(date +%s) - start ))s) =="
    "$KF" suite report "$work/$name"
done
echo
echo "== GPU shares while problems remained, per suite run process (target: shared busy >= 85% on every GPU) =="
python3 - "$work" <<'EOF'
import json, os, sys
work = sys.argv[1]
print(f"{'suite':<7} {'run':<4} {'gpu':<5} {'per gpu':>7} {'problems':>8} {'window':>7} {'busy':>6} {'waited':>7} "
      f"{'searching':>9} {'held':>6}")
for name in ("shared", "alone"):
    path = os.path.join(work, name, "suite.json")
    if not os.path.exists(path):
        continue
    for i, run in enumerate(json.load(open(path)).get("runs", [])):
        for g in run.get("gpus", []):
            print(f"{name:<7} {i:<4} {g['label']:<5} {run.get('per_gpu', 1):>7} {g['problems']:>8} {g['window_s']:>6.0f}s "
                  f"{100 * g['busy']:>5.1f}% {g.get('lock_wait_s', 0):>6.0f}s {100 * g.get('search', 0):>8.1f}% "
                  f"{100 * g['held']:>5.1f}%" + ("  (interrupted)" if run.get("interrupted") else ""))
EOF
if [ "$compare" = 1 ]; then
    echo
    echo "== times, shared over alone (sharing must not move a measured time) =="
    python3 - "$out" <<'EOF'
import glob, json, os, statistics, sys
cmp = sys.argv[1]
def load(name):
    out = {}
    for path in glob.glob(os.path.join(cmp, name, "*.inspect.json")):
        try:
            out[os.path.basename(path)[:-len(".inspect.json")]] = json.load(open(path))
        except ValueError:
            pass
    return out
shared, alone = load("shared"), load("alone")
ratios = []
print(f"{'problem':<20} {'subject':<14} {'shape':<28} {'alone':>12} {'shared':>12} {'ratio':>7}")
for pid in sorted(set(shared) & set(alone)):
    a = {(b["subject"], b["shape_label"]): b["median_ns"] for b in alone[pid].get("baselines") or []}
    s = {(b["subject"], b["shape_label"]): b["median_ns"] for b in shared[pid].get("baselines") or []}
    for key in sorted(set(a) & set(s)):
        r = s[key] / a[key]
        ratios.append(r)
        print(f"{pid:<20} {key[0]:<14} {key[1][:28]:<28} {a[key] / 1e3:>10.2f}us {s[key] / 1e3:>10.2f}us {r:>7.3f}")
    ba, bs = alone[pid].get("best") or {}, shared[pid].get("best") or {}
    if ba.get("id") and ba.get("id") == bs.get("id") and ba.get("fitness") and bs.get("fitness"):
        print(f"{pid:<20} {'best #' + str(ba['id']):<14} {'fitness (speedup)':<28} {ba['fitness']:>11.3f}x {bs['fitness']:>11.3f}x "
              f"{bs['fitness'] / ba['fitness']:>7.3f}")
if ratios:
    dev = sorted(abs(r - 1) for r in ratios)
    print(f"baselines compared: {len(ratios)}; |shared/alone - 1|: median {100 * statistics.median(dev):.2f}%, "
          f"largest {100 * dev[-1]:.2f}%")
else:
    print("no baseline present in both suites")
EOF
fi
(cd "$out" && tar czf gpu-suite-run.tgz --remove-files shared alone suite-*.html report-*.json 2>/dev/null)
exit "$(cat "$out/shared.rc" 2>/dev/null || echo 1)"
