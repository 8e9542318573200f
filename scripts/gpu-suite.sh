#!/usr/bin/env bash
# The whole test suite on a GPU machine (the [gpu] tests and the CPU tests' GPU branches), then the
# search end to end (scripts/gpu-search.sh). Logs go to $OUT; a short summary is printed last.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
out="${OUT:-/tmp}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
start=$(date +%s)
timeout "${KF_TEST_TIMEOUT:-420}" "$here/.gpu/kforge_tests" ${KF_TEST_ARGS:-} >"$out/tests.log" 2>&1
echo "tests rc=$? in $(( $(date +%s) - start ))s"
grep -E "FAILED|failed|passed|SKIPPED|test cases" "$out/tests.log" | grep -v "^ *$" | tail -15
start=$(date +%s)
"$here/scripts/gpu-search.sh"
echo "search script in $(( $(date +%s) - start ))s"
# The device tool brings back a handful of files: everything travels as one archive.
(cd "$out" && tar czf gpu-suite.tgz --remove-files --exclude gpu-suite.tgz -- * 2>/dev/null)
