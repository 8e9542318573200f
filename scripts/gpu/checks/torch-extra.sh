#!/usr/bin/env bash
# check: the extra PyTorch fixtures with recorded kernels: import, check, every kernel's verdict
# claim: tests/fixtures/torch/extra/README.md
# device time: about 6 min
#
# The PyTorch problems of tests/fixtures/torch/extra/ that have a recorded kernel, on a GPU machine
# with the carried build (scripts/gpu/env.sh, .gpu/) and the machine's own PyTorch: for each one,
# `kforge task import --device cuda`, `kforge task check`, then `kforge eval --held-out` of every
# kernel in extra/replies/ written for it. A file named <problem>_*wrong*.cu must be refused, any
# other <problem>*.cu must be correct on the bench and held-out shapes. Problems run KF_EXTRA_JOBS
# at a time (default 4: verdicts only, no timing is reported). Logs go to $OUT/extra/<problem>/;
# a table (problem, import, check, kernel, verdict, as expected) is printed last.
# Exit status 0 when every import, check and verdict came out as expected.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
cd "$here"
out="${OUT:-/tmp/kforge-gpu-torch-extra}/extra"
mkdir -p "$out"
export out KF replies
export PYTHON="${KFORGE_PYTHON:-python3}"
replies=tests/fixtures/torch/extra/replies
# A problem with a kernel for it: replies/<problem>.cu, and any replies/<problem>_*.cu beside it.
problems="${PROBLEMS:-$(for f in tests/fixtures/torch/extra/*.py; do b=$(basename "$f" .py)
    [ -f "$replies/$b.cu" ] && echo "$b"; done)}"

one() {
    local p=$1 dir="$out/$1" kernel verdict expect
    mkdir -p "$dir"
    OMP_NUM_THREADS=2 timeout 600 "$KF" task import "tests/fixtures/torch/extra/$p.py" -o "$dir/$p.json" \
        --device cuda --force >"$dir/import.log" 2>&1
    local import_rc=$?
    local check_rc=-
    if [ "$import_rc" = 0 ]; then
        timeout 600 "$KF" task check "$dir/$p.json" >"$dir/check.log" 2>&1
        check_rc=$?
    fi
    for kernel in "$replies/$p.cu" "$replies/$p"_*.cu; do
        [ -f "$kernel" ] || continue
        case "$(basename "$kernel")" in *wrong*) expect=refused ;; *) expect=correct ;; esac
        verdict=not-run
        if [ "$import_rc" = 0 ]; then
            timeout 600 "$KF" eval "$dir/$p.json" "$kernel" --held-out --quick --json \
                >"$dir/eval-$(basename "$kernel" .cu).json" 2>"$dir/eval-$(basename "$kernel" .cu).log"
            verdict=$("$PYTHON" -c 'import json,sys; v=json.load(open(sys.argv[1]))["verdict"]; print(v if isinstance(v, str) else v.get("kind"))' \
                "$dir/eval-$(basename "$kernel" .cu).json" 2>/dev/null || echo "no-json")
        fi
        local ok=no
        if [ "$expect" = correct ] && [ "$verdict" = correct ]; then ok=yes; fi
        if [ "$expect" = refused ] && [ "$verdict" != correct ] && [ "$verdict" != no-json ] && [ "$verdict" != not-run ]; then ok=yes; fi
        echo "| $p | $import_rc | $check_rc | $(basename "$kernel") | $verdict | $ok |" >>"$dir/rows.md"
    done
}
export -f one
start=$(date +%s)
printf '%s\n' $problems | xargs -P "${KF_EXTRA_JOBS:-4}" -I{} bash -c 'one {}'
echo "extra problems in $(( $(date +%s) - start )) s"
echo "| problem | import rc | check rc | kernel | verdict | as expected |"
echo "|---|---|---|---|---|---|"
cat "$out"/*/rows.md
awk -F'|' '$3+0 != 0 || ($4 !~ /^ *0 *$/) || $7 !~ /yes/ { bad = 1 } END { exit bad }' "$out"/*/rows.md
