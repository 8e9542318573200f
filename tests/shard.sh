#!/usr/bin/env bash
# One ctest entry's share of a Catch2 selection: `shard.sh BINARY INDEX COUNT FILTER [ARGS...]` runs
# every COUNT-th test case (from the INDEX-th, 0-based) of those FILTER selects, so one long entry
# becomes COUNT entries ctest runs side by side (Catch2 2.x cannot shard). Most long tests wait on
# child processes and simulated GPUs, so shards keep a 2-core machine busy where one entry would not.
# A selection whose needs are unmet here (main.cpp's gates) exits 77, as the binary itself does.
set -uo pipefail
bin="$1" index="$2" count="$3" filter="$4"
shift 4
names=$("$bin" "$filter" --list-test-names-only)
rc=$?
if [ "$rc" -eq 77 ]; then
    echo "$names"
    exit 77
fi
# (Catch2 2.x exits with the number of cases it listed.)
list=$(mktemp)
trap 'rm -f "$list"' EXIT
# A line per test case, ANDed with the filter. Catch2 reads a comma in a name as "or" and [ as a tag:
# a name is given up to its first comma, as a prefix, with \ and [ escaped (a prefix may also match
# a case of another shard, which then runs twice; none is ever left out).
printf '%s\n' "$names" | grep -v '^ *$' | awk -v n="$count" -v i="$index" '(NR - 1) % n == i' |
    sed 's/,.*/*/; s/\\/\\\\/g; s/\[/\\[/g; s/^/"/; s/$/"/' | sed "s/\$/$(printf '%s' "$filter" | sed 's/[&/\]/\\&/g')/" >"$list"
if [ ! -s "$list" ]; then
    echo "shard $index of $count of '$filter': no test cases"
    exit 0
fi
"$bin" -f "$list" "$@"
