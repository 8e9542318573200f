#!/usr/bin/env bash
# check: the hack fixtures' verdicts and the hostile-input cases that need a GPU
# claim: bench/results/nvidia-h200-2026-11-28-hostile.md
# device time: about 6 min
#
# Hostile input on a GPU machine, with a build carried by scripts/pack-gpu.sh: the screen
# changed (RE2, the macro-expansion bound, the plan's arguments checked against the CUBIN), so the
# hack fixtures must keep their verdicts. Runs
#   1. the [gpu][evaluator] tests (every fixture of tests/fixtures/kernels/softmax_f32 against the
#      verdict it must get),
#   2. the [hostile] tests, whose resume case takes its GPU branch there (an archive of the previous
#      schema is upgraded once the session has started),
#   3. `kforge eval --quick --held-out` on every fixture, one verdict per row,
# and prints a table last. Proof: both test lines say rc=0, and the table's verdicts are those the
# test lists (good_block_row correct; bad_held_out_only held_out_failed; bad_compile_error,
# bad_device_launch, bad_half_precision compile_error; bad_illegal_address, bad_out_of_bounds,
# bad_writes_input runtime_error; bad_infinite_loop timeout; every other bad_* incorrect) and
# never plan_error.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp}"
cd "$here"

start=$(date +%s)
timeout 900 "$here/.gpu/kforge_tests" "[gpu][evaluator]" >"$out/hostile-gpu-verdicts.log" 2>&1
verdict_tests=$?
timeout 900 "$here/.gpu/kforge_tests" "[hostile]" >"$out/hostile-tests.log" 2>&1
hostile_tests=$?

rows=()
for file in tests/fixtures/kernels/softmax_f32/*.cu; do
    json=$(timeout 300 "$KF" eval tasks/softmax_f32.json "$file" --quick --held-out --json 2>"$out/hostile-eval.err")
    verdict=$(printf '%s' "$json" | grep -m1 -o '"verdict": *"[a-z_]*"' | sed 's/.*"\([a-z_]*\)"$/\1/')
    rows+=("$(printf '%-28s %s' "$(basename "$file")" "${verdict:-? (see $out/hostile-eval.err)}")")
done

echo
echo "[gpu][evaluator] tests rc=$verdict_tests ($(grep -E 'test cases|All tests passed' "$out/hostile-gpu-verdicts.log" | tail -1))"
echo "[hostile] tests rc=$hostile_tests ($(grep -E 'test cases|All tests passed' "$out/hostile-tests.log" | tail -1))"
printf '%-28s %s\n' fixture "verdict (kforge eval --quick --held-out)"
for row in "${rows[@]}"; do
    echo "$row"
done
echo "in $(( $(date +%s) - start ))s; logs in $out/hostile-*.log"
