#!/usr/bin/env bash
# The benchmark command on a GPU machine: throughput and timing fidelity (needs ncu with counter
# access), written to $OUT (or bench/results) as <gpu>-<date>.md/.json; the table is printed last.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
out="${OUT:-$here/bench/results}"
"$here/.gpu/kforge_bench" --kforge "$KF" all --out "$out" "$@" 2>"$out/bench-stderr.log"
