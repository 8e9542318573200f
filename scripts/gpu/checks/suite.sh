#!/usr/bin/env bash
# check: the whole test suite on the GPU (the [gpu] tests and the GPU branches of the others), then the search end to end
# claim: README 'Why you can trust its numbers' (every hack fixture gets its verdict on a GPU); ./kf test's GPU half
# device time: about 9 min
#
# The whole test suite on a GPU machine (the [gpu] tests and the CPU tests' GPU branches), then the
# search end to end (scripts/gpu/checks/search.sh; KF_SKIP_SEARCH=1 leaves it out). Logs go to $OUT; a
# short summary is printed last.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
start=$(date +%s)
# As ctest runs them: the [gpu] tests in a process of their own (tests that fork a child to use CUDA
# need a parent that has not touched CUDA), the rest without [gpu], [browser] and [slurm] (the GPU
# image has no chromium, and no munge or SLURM daemons for the one-node cluster those tests start).
timeout "${KF_TEST_TIMEOUT:-420}" "$here/.gpu/kforge_tests" "[gpu]" >"$out/tests-gpu.log" 2>&1
echo "[gpu] tests rc=$? in $(( $(date +%s) - start ))s"
grep -E "FAILED|passed|SKIPPED|test cases" "$out/tests-gpu.log" | tail -8
[ -n "${KF_GPU_ONLY:-}" ] && exit 0
# The rest in KF_TEST_SHARDS processes at once (default 6), test cases dealt round-robin by name:
# one process would take most of a device call. Catch2 reads a comma in a name as "or", so such a
# name is given up to its first comma as a prefix (which may run a case twice, never skip one).
start=$(date +%s)
shards="${KF_TEST_SHARDS:-6}"
"$here/.gpu/kforge_tests" "~[gpu]~[browser]~[slurm]" --list-test-names-only | grep -v '^ *$' |
    sed 's/,.*/*/; s/\\/\\\\/g; s/\[/\\[/g; s/^/"/; s/$/"/' |
    awk -v n="$shards" -v dir="$out" '{ print > (dir "/shard-" (NR % n) ".txt") }'
pids=()
for list in "$out"/shard-*.txt; do
    name=$(basename "$list" .txt)
    XDG_CACHE_HOME="/tmp/kforge-cache-$name" timeout "${KF_TEST_TIMEOUT:-420}" "$here/.gpu/kforge_tests" -f "$list" \
        >"$out/tests-$name.log" 2>&1 &
    pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
echo "other tests ($shards processes) rc=$rc in $(( $(date +%s) - start ))s"
for log in "$out"/tests-shard-*.log; do
    grep -E "FAILED|test cases|All tests passed|SKIPPED" "$log" | sed "s|^|$(basename "$log" .log): |" | tail -6
done
if [ -z "${KF_SKIP_SEARCH:-}" ]; then
    start=$(date +%s)
    "$here/scripts/gpu/checks/search.sh"
    echo "search script in $(( $(date +%s) - start ))s"
fi
# The device tool brings back a handful of files: everything travels as one archive.
(cd "$out" && tar czf gpu-suite.tgz --remove-files --exclude gpu-suite.tgz -- * 2>/dev/null)
