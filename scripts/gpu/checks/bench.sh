#!/usr/bin/env bash
# check: kforge_bench all: evaluation throughput and timing fidelity against Nsight Compute
# claim: README 'A reported time is reproducible'; bench/results/nvidia-*-2026-11-22.md, -2026-11-25.md
# device time: about 10 min
#
# The benchmark command on a GPU machine: throughput and timing fidelity (needs ncu with counter
# access), written to $OUT (or bench/results) as <gpu>-<date>.md/.json; the table is printed last.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-$here/bench/results}"
"$here/.gpu/kforge_bench" --kforge "$KF" all --out "$out" "$@" 2>"$out/bench-stderr.log"
