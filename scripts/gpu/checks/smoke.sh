#!/usr/bin/env bash
# check: first contact with a GPU machine: environment, doctor, a task check with self-tests, one eval, the [gpu] tests
# claim: README Quick start (kforge runs on this GPU)
# device time: about 5 min
#
# First contact with a GPU machine: environment, doctor, task check with self-tests, one eval, and
# the [gpu] tests. Writes everything to $OUT/smoke.log and prints a short summary last.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
log="${OUT:-/tmp}/smoke.log"
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
    ldd "$KF" | grep -i "not found" || echo "ldd: all libraries found"
    echo "== doctor"; "$KF" doctor; echo "rc=$?"
    echo "== task check"; time "$KF" task check tasks/softmax_f32.json; echo "rc=$?"
    echo "== eval"; time "$KF" eval tasks/softmax_f32.json tests/fixtures/kernels/softmax_f32/good_block_row.cu --held-out; echo "rc=$?"
    echo "== gpu tests"; time "$here/.gpu/kforge_tests" "[gpu]" ${KF_TEST_ARGS:-}; echo "rc=$?"
} >"$log" 2>&1
grep -E "^(ok|warn|fail) |rc=|self-tests|fitness|test cases|assertions|real|FAILED|error" "$log" | head -60
