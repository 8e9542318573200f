#!/usr/bin/env bash
# check: a softmax search killed with SIGKILL, resumed, inspected, exported and re-timed; a run of recorded model replies
# claim: README Quick start and 'A crash never ends a run'
# device time: about 4 min
#
# The search end to end on a GPU machine, as a user would run it: an optimize run on the softmax
# task with the builtin proposer is killed with SIGKILL part-way, resumed to its budget, then read
# back by inspect (summary, grid, lineage), export (compiled with nvcc) and report; the exported
# best kernel is re-timed by `kforge eval` on its own, to check the archive's time reproduces.
# A second run serves recorded model replies (tests/fixtures/replay) through the LLM path: good
# kernels among faulting, hanging and wrong ones. Both archives are written as a `kforge dataset`
# and checked against inspect (scripts/check-dataset.py). Everything goes to $OUT (the archive too, as a test fixture candidate); a summary is printed last.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp/kforge-search}"
mkdir -p "$out"
archive="$out/softmax-builtin.kforge"
log="$out/search.log"
budget="${KF_SEARCH_BUDGET:-64}"
kill_after="${KF_SEARCH_KILL_AFTER:-20}"
rm -f "$archive"*
{
    echo "== optimize (SIGKILL after ${kill_after}s)"
    "$KF" optimize tasks/softmax_f32.json --model builtin --budget "$budget" --seed 7 --no-knowledge \
        --progress lines -o "$archive" &
    pid=$!
    sleep "$kill_after"
    kill -9 "$pid" 2>/dev/null && echo "killed optimize after ${kill_after}s"
    wait "$pid"; echo "optimize rc=$?"
    "$KF" inspect "$archive" | head -12
    echo "== resume"
    time "$KF" resume "$archive" --progress lines; echo "resume rc=$?"
    echo "== inspect"; "$KF" inspect "$archive"; echo "inspect rc=$?"
    echo "== inspect --grid"; "$KF" inspect "$archive" --grid; echo "grid rc=$?"
    best=$("$KF" inspect "$archive" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["best"]["id"])')
    echo "== lineage of $best"; "$KF" inspect "$archive" --lineage "$best"; echo "lineage rc=$?"
    echo "== export"; "$KF" export "$archive" --best -o "$out/best.cu"; echo "export rc=$?"
    nvcc -c -gencode arch=compute_90a,code=sm_90a -o "$out/best.o" "$out/best.cu"; echo "nvcc rc=$?"
    echo "== report"; time "$KF" report "$archive" -o "$out/report.html"; echo "report rc=$?"
    echo "== eval of the exported best (a fresh process, fresh inputs)"
    "$KF" eval tasks/softmax_f32.json "$out/best.cu" --held-out; echo "eval rc=$?"
    echo "== optimize with recorded model replies (faults, hangs, wrong results among them)"
    replayed="$out/softmax-replay.kforge"; rm -f "$replayed"*
    time "$KF" optimize tasks/softmax_f32.json --model replay:tests/fixtures/replay/softmax_f32.jsonl \
        --budget 30 --seed 3 --no-knowledge --progress lines -o "$replayed"; echo "replay optimize rc=$?"
    "$KF" inspect "$replayed"; echo "replay inspect rc=$?"
    echo "== dataset of both runs, checked against inspect"
    "$KF" dataset "$archive" "$replayed" -o "$out/dataset.jsonl" --force; echo "dataset rc=$?"
    python3 "$here/scripts/check-dataset.py" "$KF" "$out/dataset.jsonl" "$archive" "$replayed"
} >"$log" 2>&1
grep -E "rc=|killed|best|fitness|speedup|candidates|verdict|held|real|dataset" "$log" | head -60
