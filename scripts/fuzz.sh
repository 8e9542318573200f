#!/usr/bin/env bash
# Builds kforge's libFuzzer targets (preset `fuzz`: clang, AddressSanitizer, UndefinedBehaviorSanitizer)
# and runs each for a bounded time, then prints one table: executions, executions per second, inputs
# the fuzzer added, peak memory and the result. fuzz/README.md says what each target covers.
#
#   scripts/fuzz.sh                   every target, 60 s each
#   scripts/fuzz.sh -t 600 expr plan  10 minutes each for two targets
#   scripts/fuzz.sh -t 8              what `./kf test` (ctest entry `fuzz`) runs
#   scripts/fuzz.sh -n -t 600 reply   no build (one is there): two instances may run side by side
#
# Each run starts from the seed corpus in fuzz/corpus/TARGET (never changed) plus what earlier runs
# found (build/fuzz/corpus/TARGET). A finding (crash, sanitizer report, leak, an input taking more
# than 10 s or 2 GB) is saved as build/fuzz/findings/TARGET/crash-* (or timeout-*, oom-*, leak-*);
# reproduce it with build/fuzz/fuzz/fuzz_TARGET FILE. Exit: 0 clean, 1 a finding or a failed build,
# 77 no clang or libFuzzer here (ctest counts that as skipped).
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

seconds=60
build=1
while getopts "t:n" option; do
    case $option in
    t) seconds=$OPTARG ;;
    n) build=0 ;;
    *) echo "usage: scripts/fuzz.sh [-n] [-t SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
all_targets=(expr plan task_spec reply frame archive lessons)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

if ! command -v clang++ >/dev/null; then
    echo "fuzz: skipped: no clang++ (Debian: apt-get install clang libclang-rt-14-dev)" >&2
    exit 77
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
    echo "fuzz: skipped: clang++ cannot link libFuzzer (Debian: apt-get install libclang-rt-14-dev)" >&2
    exit 77
fi

mkdir -p build
log=build/fuzz-build.log
if command -v ccache >/dev/null; then
    export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
    export CMAKE_C_COMPILER_LAUNCHER=${CMAKE_C_COMPILER_LAUNCHER:-ccache}
fi
jobs=$(nproc)
if [ $build = 1 ] && ! { cmake --preset fuzz && cmake --build --preset fuzz -j "$jobs"; } >"$log" 2>&1; then
    grep -E 'error|Error' "$log" | head -20 >&2
    echo "fuzz: the build failed (log: $log)" >&2
    exit 1
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
rows=()
for target in "${targets[@]}"; do
    binary=build/fuzz/fuzz/fuzz_$target
    if [ ! -x "$binary" ]; then
        echo "fuzz: no target '$target' (targets: ${all_targets[*]})" >&2
        exit 2
    fi
    if [ -z "$(ls -A "fuzz/corpus/$target" 2>/dev/null)" ]; then
        # A seed file ignored by git (an archive is a *.kforge) once went missing from a clone.
        echo "fuzz: the seed corpus fuzz/corpus/$target is missing or empty (is a seed ignored by .gitignore?)" >&2
        exit 2
    fi
    work=build/fuzz/corpus/$target
    findings=build/fuzz/findings/$target
    mkdir -p "$work" "$findings"
    before=$(find "$work" -type f | wc -l)
    out=build/fuzz/$target.log
    # One process: libFuzzer reports the totals of its run in -print_final_stats.
    "$binary" "$work" "fuzz/corpus/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=262144 -print_final_stats=1 -artifact_prefix="$findings/" >"$out" 2>&1
    code=$?
    final_stat() { sed -n "s/^stat::$1: *//p" "$out" | tail -1; }
    runs=$(final_stat number_of_executed_units)
    rate=$(final_stat average_exec_per_sec)
    added=$(( $(find "$work" -type f | wc -l) - before ))
    rss=$(final_stat peak_rss_mb)
    result=clean
    if [ $code -ne 0 ]; then
        status=1
        artifact=$(grep -o "Test unit written to [^ ]*" "$out" | tail -1 | sed 's/Test unit written to //')
        kind=$(grep -m1 -oE "ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|libFuzzer): [a-z-]+" "$out" |
               sed 's/ERROR: //')
        [ -z "$kind" ] && kind=$(grep -m1 -oE "runtime error: .*" "$out" | cut -c1-60)
        result="FINDING: ${kind:-exit $code} ${artifact:-(see $out)}"
    fi
    rows+=("$(printf '%-10s %8s %10s %10s %8s %8s  %s' "$target" "${seconds}s" "${runs:-?}" "${rate:-?}" \
        "$added" "${rss:-?}" "$result")")
done

printf '%-10s %8s %10s %10s %8s %8s  %s\n' target time runs exec/s new rss_mb result
for row in "${rows[@]}"; do
    echo "$row"
done
exit $status
