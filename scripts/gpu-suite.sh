#!/usr/bin/env bash
# The whole test suite on a GPU machine (the [gpu] tests and the CPU tests' GPU branches), then the
# search end to end (scripts/gpu-search.sh). Logs go to $OUT; a short summary is printed last.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
out="${OUT:-/tmp}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
start=$(date +%s)
# As ctest runs them: the [gpu] tests in a process of their own (tests that fork a child to use CUDA
# need a parent that has not touched CUDA), the rest without [gpu] and [browser] (no chromium there).
timeout "${KF_TEST_TIMEOUT:-420}" "$here/.gpu/kforge_tests" "[gpu]" >"$out/tests-gpu.log" 2>&1
echo "[gpu] tests rc=$? in $(( $(date +%s) - start ))s"
grep -E "FAILED|passed|SKIPPED|test cases" "$out/tests-gpu.log" | tail -8
[ -n "${KF_GPU_ONLY:-}" ] && exit 0
start=$(date +%s)
timeout "${KF_TEST_TIMEOUT:-420}" "$here/.gpu/kforge_tests" "~[gpu]~[browser]" >"$out/tests.log" 2>&1
echo "other tests rc=$? in $(( $(date +%s) - start ))s"
grep -E "FAILED|failed|passed|SKIPPED|test cases" "$out/tests.log" | grep -v "^ *$" | tail -15
start=$(date +%s)
"$here/scripts/gpu-search.sh"
echo "search script in $(( $(date +%s) - start ))s"
# The device tool brings back a handful of files: everything travels as one archive.
(cd "$out" && tar czf gpu-suite.tgz --remove-files --exclude gpu-suite.tgz -- * 2>/dev/null)
