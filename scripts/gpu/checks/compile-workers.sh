#!/usr/bin/env bash
# check: one confirmation's time beside a four-GPU search's compiles: what sets the compile workers per GPU
# claim: bench/results/nvidia-h200-2026-11-26-scale-4gpu-workers.md
# device time: about 3 min, four GPUs
#
# The open question: on 4 x H100 one confirmation took 20-28% longer in a four-GPU search than
# in a one-GPU search (bench/results/nvidia-h100-80gb-hbm3-2026-11-26-scale-4gpu.md), with no GPU
# idle. Is it the host's CPU load (compiles on every core), or the other GPUs working at once?
# One device call (about 3 minutes; kind nvidia-h100-x4 for all three cases, any kind for the
# first two), with the carried build (scripts/gpu/env.sh, .gpu/).
#
# The same confirmation each time: `kforge eval tasks/softmax_f32.json <seed>` (the confirmation
# standard) on GPU 0, its confirm job's span read from the debug log's timeline, REPEATS times:
#   idle      nothing else on the host
#   cpu       one busy loop per core but one (CPU clock and scheduling, no memory traffic)
#   compile   NVRTC compiles on about every core but one (fresh caches: what a search's compile pool does)
#   gpus      the same confirmation looping on every other GPU at once, the CPU otherwise idle
# CASES picks some ("idle compile"); COMPILES sets how many compiles run at once in `compile` (about
# one per core but one by default; 16 is what kforge's pool runs on such a host, compile.hpp).
# Prints a table of the spans (median, min, max); $OUT/confirm-load.tgz holds the logs.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
cd "$here" || exit 1
out="${OUT:-/tmp/kforge-confirm-load}"
work=/tmp/kforge-confirm-load
rm -rf "$work" && mkdir -p "$work/logs" "$out"
seed="${SEED_FILE:-tasks/softmax_f32/seed_split_row.cu}"
repeats="${REPEATS:-3}"
cores=$(nproc)
cases="${CASES:-idle cpu compile gpus}"
compiles="${COMPILES:-$((cores - 1))}"
wanted() { case " $cases " in *" $1 "*) return 0 ;; esac; return 1; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
echo "confirm-load: $cores cores, $gpus GPU(s); $seed, $repeats repeats per case; cases: $cases; $compiles compiles at once in 'compile'"

# The confirm job's span, in seconds, from a debug log.
span() { awk '/timeline .* begin job [0-9]+ confirm/ { b = $3 } /timeline .* end job [0-9]+ confirm/ { if (b != "") printf "%.3f\n", $3 - b }' "$1" | tail -1; }

confirm_once() { # $1: case, $2: repeat, $3: GPU index
    local log="$work/logs/$1-$2-gpu$3.log"
    CUDA_VISIBLE_DEVICES=$3 XDG_CACHE_HOME="$work/cache-gpu$3" timeout 300 "$KF" --log-level debug eval \
        tasks/softmax_f32.json "$seed" >"$log.json" 2>"$log"
    span "$log"
}

measure() { # $1: case
    # The host's mean core clock a few seconds in (a busy host may run its cores slower).
    (sleep 3; awk '/^cpu MHz/ { s += $4; n++ } END { if (n) printf "%.0f\n", s / n }' /proc/cpuinfo >"$work/$1.mhz") &
    for r in $(seq 1 "$repeats"); do confirm_once "$1" "$r" 0; done >"$work/$1.spans"
}

stop_load() { for pid in "${load[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null; done; wait 2>/dev/null; load=(); }
trap stop_load EXIT
load=()

confirm_once warmup 0 0 >/dev/null # the CUBIN cache and the first CUDA start
wanted idle && measure idle

if wanted cpu; then
    for i in $(seq 2 "$cores"); do (while :; do :; done) & load+=($!); done
    measure cpu
    stop_load
fi

# Each `eval --compile-only` of seed_row_regs compiles its 6 param points at once: one loop per 6
# compiles wanted.
wanted compile && for i in $(seq 1 $(( (compiles + 5) / 6 ))); do
    (n=0; while :; do n=$((n + 1))
        XDG_CACHE_HOME="$work/load-cache-$i-$n" "$KF" eval tasks/softmax_f32.json tasks/softmax_f32/seed_row_regs.cu \
            --compile-only >/dev/null 2>&1
        rm -rf "$work/load-cache-$i-$n"; done) & load+=($!)
done
if wanted compile; then
    sleep 2
    measure compile
    stop_load
fi

if wanted gpus && [ "$gpus" -gt 1 ]; then
    for g in $(seq 1 $((gpus - 1))); do
        confirm_once warmup 0 "$g" >/dev/null
        (n=0; while :; do n=$((n + 1)); confirm_once other "$n" "$g" >/dev/null; done) & load+=($!)
    done
    sleep 5
    measure gpus
    stop_load
fi

echo "| case | confirm spans s | median | host MHz |"
echo "|---|---|---:|---:|"
for c in idle cpu compile gpus; do
    [ -f "$work/$c.spans" ] || continue
    echo "| $c | $(tr '\n' ' ' <"$work/$c.spans") | $(sort -n "$work/$c.spans" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }') | $(cat "$work/$c.mhz" 2>/dev/null) |"
done
(cd "$work" && tar czf "$out/confirm-load.tgz" logs ./*.spans)
