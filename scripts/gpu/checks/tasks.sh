#!/usr/bin/env bash
# check: kforge task check with the GPU self-tests on every bundled task
# claim: README: kforge task check fails a task whose checks accept a wrong kernel
# device time: about 3 min
#
# Runs `kforge task check` (NVRTC compiles + GPU self-tests) on every bundled task; prints one
# summary line per task and keeps the full output in $OUT/task-check.log.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
log="${OUT:-/tmp}/task-check.log"
: >"$log"
for spec in "$here"/tasks/*.json; do
    name=$(basename "$spec" .json)
    start=$(date +%s%N)
    timeout "${TASK_TIMEOUT:-150}" "$KF" task check "$spec" >>"$log" 2>&1
    rc=$?
    printf '%-16s rc=%-3s %8.3f s  %s\n' "$name" "$rc" "$(( ($(date +%s%N) - start) / 1000000 ))e-3" \
        "$(tail -n 1 "$log" | cut -c1-100)"
done
