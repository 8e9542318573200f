#!/usr/bin/env bash
# check: imported PyTorch programs end to end: import, task check, recorded replies, eval against eager and torch.compile
# claim: docs/torch-tasks.md's figures
# device time: about 8 min
#
# Imported PyTorch programs end to end on a GPU machine, with the carried build
# (scripts/gpu/env.sh, .gpu/). For each torch fixture problem (tests/fixtures/torch/*.py):
#   1. kforge task import (timed)                                    all problems at once, on the CPU
#   2. kforge task check, and one torch.compile of the program       KF_TORCH_JOBS at a time
#      at its bench shape (warms the inductor caches so the compiles timed below do not dominate)
#   3. kforge optimize --model replay:tests/fixtures/torch/replies/<problem>.jsonl (budget: the
#      replies + 1), every candidate's verdict checked against replies/expected.json;  one problem
#      kforge eval --json of the run's fastest correct reply against torch eager and   at a time
#      torch.compile, timed in the same worker;                                         (timing)
#      kforge export --best --torch, and its extension built in the background
#   4. the exported ModelNew against Model (fp64) at the bench shape, within the task's tolerance
#   5. the reference process's `prepare expected` per bench shape, against PyTorch alone
# Progress lines carry the seconds since the start; logs and JSON go to $OUT/<problem>/ (packed into
# $OUT/gpu-torch.tgz at the end); the table is printed last and kept in $OUT/table.md.
#   PROBLEMS        the problems to run (default: every problem in replies/expected.json)
#   KF_TORCH_JOBS   imports, checks, warm-ups and ModelNew checks at once (default 4)
#   KF_TORCH_BUDGET seconds the script may take (default 540, under a 10-minute device call): a
#                   problem whose step 3 would start after budget - 100 s, and step 5 after
#                   budget - 60 s, are skipped and say so, so the table still comes out
# Exit status 0 when every problem's import, check, eval, verdicts and ModelNew passed.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
cd "$here"
out="${OUT:-/tmp/kforge-gpu-torch}"
mkdir -p "$out"
export out KF
export PYTHON="${KFORGE_PYTHON:-python3}"
export TORCH_EXTENSIONS_DIR="${TORCH_EXTENSIONS_DIR:-/tmp/kforge-torch-extensions}" # builds stay out of $OUT
jobs="${KF_TORCH_JOBS:-4}"
budget="${KF_TORCH_BUDGET:-540}"
elapsed() { echo $(( $(date +%s) - start )); }
problems="${PROBLEMS:-$(python3 -c 'import json; print(" ".join(json.load(open("tests/fixtures/torch/replies/expected.json"))["problems"]))')}"
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start ))s] $*"; }
export -f say
export start
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
"$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())'

# Runs function $1 for every problem, $jobs at a time.
each() { printf '%s\n' $problems | xargs -P "$jobs" -I{} bash -c "$1 {}"; }

import_one() {
    local p=$1 dir="$out/$1" begin
    mkdir -p "$dir/spec"
    begin=$(date +%s.%N)
    OMP_NUM_THREADS=2 timeout 600 "$KF" task import "tests/fixtures/torch/$p.py" -o "$dir/spec/$p.json" --force \
        >"$dir/import.log" 2>&1
    echo $? >"$dir/import.rc"
    awk -v a="$begin" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' >"$dir/import.seconds"
    say "$p: imported rc=$(cat "$dir/import.rc") in $(cat "$dir/import.seconds") s"
}
check_one() {
    local p=$1 dir="$out/$1"
    [ "$(cat "$dir/import.rc")" = 0 ] || return 0
    timeout 600 "$KF" task check "$dir/spec/$p.json" >"$dir/check.log" 2>&1
    echo $? >"$dir/check.rc"
    say "$p: task check rc=$(cat "$dir/check.rc")"
    timeout 600 "$PYTHON" scripts/gpu/checks/torch_check.py prewarm "$dir/spec/$p.json" >"$dir/prewarm.log" 2>&1
    say "$(tail -1 "$dir/prewarm.log")"
}
modelnew_one() {
    local p=$1 dir="$out/$1"
    [ -f "$dir/export/$p.cu" ] || return 0
    wait_for "$dir/build.done"
    timeout 300 "$PYTHON" scripts/gpu/checks/torch_check.py modelnew "$dir/spec/$p.json" "$dir/export/$p.cu" \
        "$dir/modelnew.json" >"$dir/modelnew.log" 2>&1
    say "$p: ModelNew check rc=$? ($(tail -1 "$dir/modelnew.log"))"
}
wait_for() { while [ ! -f "$1" ]; do sleep 1; done; }
export -f import_one check_one modelnew_one wait_for

say "step 1: task import of $(echo $problems | wc -w) problems"
each import_one
say "step 2: task check and a torch.compile warm-up, $jobs at a time"
each check_one

say "step 3: eval, optimize with the recorded replies, export (one problem at a time)"
for p in $problems; do
    dir="$out/$p" spec="$out/$p/spec/$p.json"
    [ "$(cat "$dir/import.rc")" = 0 ] || { say "$p: not imported, skipped"; continue; }
    [ "$(elapsed)" -lt $((budget - 100)) ] || { say "$p: skipped, the time budget (KF_TORCH_BUDGET=$budget) is spent"; continue; }
    replies=$(wc -l <"tests/fixtures/torch/replies/$p.jsonl")
    timeout 900 "$KF" optimize "$spec" --model "replay:tests/fixtures/torch/replies/$p.jsonl" --budget $((replies + 1)) \
        --parallel 1 --no-repair --no-tune --edit-form whole --seed 7 --no-knowledge --progress lines \
        -o "$dir/run.kforge" >"$dir/optimize.log" 2>&1
    echo $? >"$dir/optimize.rc"
    "$KF" dataset "$dir/run.kforge" -o "$dir/dataset.jsonl" --force >/dev/null 2>>"$dir/optimize.log"
    "$PYTHON" scripts/gpu/checks/torch_check.py verdicts "$p" "$dir/dataset.jsonl" "$dir/verdicts.json" >"$dir/verdicts.log" 2>&1
    say "$p: optimize rc=$(cat "$dir/optimize.rc"), verdicts $(grep -c '^  ok ' "$dir/verdicts.log")/$(grep -cE '^  (ok |BAD)' "$dir/verdicts.log") as expected"
    grep -E '^  (BAD|fastest)' "$dir/verdicts.log"
    if [ -f "$dir/best.cu" ]; then
        timeout 600 "$KF" eval "$spec" "$dir/best.cu" --held-out --json >"$dir/eval.json" 2>"$dir/eval.log"
        echo $? >"$dir/eval.rc"
        say "$p: eval of the best rc=$(cat "$dir/eval.rc"): $(python3 -c "
import json
s = json.load(open('$dir/eval.json'))['shapes'][0]
print(f\"{s['median_ns'] / 1e3:.1f} us; torch eager {s['reference_ns'] / 1e3:.1f} us; torch.compile \" +
      (f\"{s['vendor_ns'] / 1e3:.1f} us\" if s.get('vendor_subject') == 'torch_compile' else 'not timed'))" 2>&1 | tail -1)"
    else
        say "$p: no correct candidate to eval"
    fi
    mkdir -p "$dir/export"
    if "$KF" export "$dir/run.kforge" --best --torch -o "$dir/export/$p.cu" >"$dir/export.log" 2>&1; then
        ( timeout 400 "$PYTHON" scripts/gpu/checks/torch_check.py modelnew "$spec" "$dir/export/$p.cu" "$dir/build.json" --build-only \
              >"$dir/build.log" 2>&1; touch "$dir/build.done" ) &
    else
        say "$p: export failed: $(tail -1 "$dir/export.log")"
    fi
done

say "step 4: ModelNew against Model at the bench shapes"
each modelnew_one
wait

specs=()
for p in $problems; do [ -f "$out/$p/spec/$p.json" ] && specs+=("$out/$p/spec/$p.json"); done
if [ "$(elapsed)" -lt $((budget - 60)) ]; then
    say "step 5: reference preparation per bench shape"
    timeout $((budget - $(elapsed))) "$PYTHON" scripts/gpu/checks/torch_check.py prepare "$out/prepare.json" "${specs[@]}" 2>&1 |
        tee "$out/prepare.log" | grep '^prepare'
else
    say "step 5 skipped: the time budget (KF_TORCH_BUDGET=$budget) is spent"
fi

say "done"
"$PYTHON" scripts/gpu/checks/torch_check.py table "$out" | tee "$out/table.md"
rc=${PIPESTATUS[0]}
(cd "$out" && tar czf gpu-torch.tgz --exclude gpu-torch.tgz --exclude table.md -- * 2>/dev/null &&
     find . -mindepth 1 -maxdepth 1 ! -name gpu-torch.tgz ! -name table.md -exec rm -rf {} +)
exit $rc
