#!/usr/bin/env bash
# Do imported tolerances survive unlucky run secrets? cross_entropy (tests/fixtures/torch) is
# imported, then its correct recorded kernel (warp_rows_online.cu) is evaluated under SECRETS run
# secrets (default 8), each drawing other inputs, with the importer's tolerance and with the same
# tolerance minus its absolute floor (the rule before 2026-11-26). Prints a count of exit codes per
# spec: rc=0 correct, rc=1 a verdict other than correct (its first line is kept in $OUT).
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
cd "$here"
out="${OUT:-/tmp}"
export KFORGE_PYTHON="${KFORGE_PYTHON:-python3}"
work=/tmp/kforge-tolerance && rm -rf "$work" && mkdir -p "$work"
"$KF" task import tests/fixtures/torch/cross_entropy.py -o "$work/new/cross_entropy.json" 2>&1 | grep "check out"
mkdir -p "$work/old" && cp "$work"/new/* "$work/old/"
python3 - "$work/old/cross_entropy.json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
for arg in spec["args"]:
    if "check" in arg and " + " in str(arg["check"].get("atol", "")):
        arg["check"]["atol"] = arg["check"]["atol"].split(" + ")[0]
json.dump(spec, open(sys.argv[1], "w"), indent=1)
PY
for spec in new old; do
    for s in $(seq 1 "${SECRETS:-8}"); do
        "$KF" eval "$work/$spec/cross_entropy.json" tests/fixtures/torch/replies/cross_entropy/warp_rows_online.cu \
            --quick --secret "$s" >/dev/null 2>"$work/$spec-$s.err"
        rc=$?
        echo "rc=$rc"
        [ "$rc" != 0 ] && grep -m1 -o "output .\{0,300\}" "$work/$spec-$s.err" >>"$out/tolerance-failures.txt"
    done | sort | uniq -c | sed "s/^/cross_entropy, $spec tolerance: /"
done
