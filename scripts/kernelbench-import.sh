#!/usr/bin/env bash
# `scripts/kernelbench-import.sh KERNELBENCH_DIR [LEVEL...]`: runs `kforge task import` over every
# problem of the chosen KernelBench levels, one at a time, and prints a table of what came of each.
#
# KERNELBENCH_DIR holds level1/, level2/, ... (or KernelBench/level1/, ... as in the benchmark's own
# repository); LEVELs are 1, 2, 3 or level1, ... (default: every levelN folder found). Problems run
# in the order of their number. Each import gets --time-limit KF_IMPORT_LIMIT, and the whole kforge
# call a hard limit 30 s above it (a hang in kforge itself is "timed out" too). What each import
# printed goes to $OUT/levelN/<problem>.log, its spec to $OUT/levelN/<problem>.json; the table is
# printed last and kept in $OUT/table.md, with one summary line per level ("imported N of M").
#
# Outcomes: imported; refused (kforge said why: the message's first line); timed out; crashed (no
# result and no message from the importer, an internal error, or a signal).
#   KFORGE            the kforge binary (default: build/dev/src/cli/kforge, then build/release/src/cli/kforge)
#   KFORGE_PYTHON     the python3 that has torch (kforge's own default otherwise)
#   KF_IMPORT_LIMIT   seconds per problem (default 120)
#   KF_IMPORT_DEVICE  where the checking forwards run: cpu (default) or cuda
#   KF_IMPORT_NICE    niceness of the imports (default 10: the machine is shared)
#   KF_IMPORT_JOBS    imports at once (default 1)
#   OUT               where logs, specs and the table go (default /tmp/kforge-kernelbench-import)
# Exit status: 0 when the sweep ran (whatever the outcomes), 2 on a usage error.
set -uo pipefail

usage() { echo "usage: $0 KERNELBENCH_DIR [LEVEL...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
root="$1"; shift
[ -d "$root/KernelBench" ] && root="$root/KernelBench"
[ -d "$root" ] || { echo "$0: $root: no such folder" >&2; exit 2; }
here="$(cd "$(dirname "$0")/.." && pwd)"
kf="${KFORGE:-}"
if [ -z "$kf" ]; then
    for candidate in "$here/build/dev/src/cli/kforge" "$here/build/release/src/cli/kforge"; do
        [ -x "$candidate" ] && { kf="$candidate"; break; }
    done
fi
[ -n "$kf" ] && [ -x "$kf" ] || { echo "$0: no kforge binary (build one, or set KFORGE)" >&2; exit 2; }
limit="${KF_IMPORT_LIMIT:-120}"
device="${KF_IMPORT_DEVICE:-cpu}"
niceness="${KF_IMPORT_NICE:-10}"
jobs="${KF_IMPORT_JOBS:-1}"
out="${OUT:-/tmp/kforge-kernelbench-import}"
mkdir -p "$out"

levels=()
if [ $# -eq 0 ]; then
    for d in "$root"/level*/; do [ -d "$d" ] && levels+=("$(basename "$d")"); done
else
    for l in "$@"; do
        case "$l" in level*) levels+=("$l") ;; *) levels+=("level$l") ;; esac
    done
fi
[ ${#levels[@]} -gt 0 ] || { echo "$0: no level folders under $root" >&2; exit 2; }
for l in "${levels[@]}"; do [ -d "$root/$l" ] || { echo "$0: $root/$l: no such folder" >&2; exit 2; }; done

# One problem: imports it and writes its result as one JSON object to $out/<level>/<name>.row.
import_one() {
    local level="$1" file="$2"
    local name; name="$(basename "$file" .py)"
    local dir="$out/$level"
    local log="$dir/$name.log" spec="$dir/$name.json"
    rm -f "$spec"
    local began; began=$(date +%s.%N)
    timeout -k 5 $(( ${limit%.*} + 30 )) nice -n "$niceness" \
        "$kf" task import "$file" -o "$spec" --force --time-limit "$limit" --device "$device" >"$log.out" 2>"$log"
    local rc=$?
    python3 - "$level" "$name" "$rc" "$began" "$(date +%s.%N)" "$spec" "$log" >"$dir/$name.row" <<'PY'
import json, re, sys
level, name, rc, began, ended, spec_path, log_path = sys.argv[1:]
rc = int(rc)
log = open(log_path, errors="replace").read()
errors = [line for line in log.splitlines() if re.search(r"\berror\b", line, re.I)]
message = re.sub(r"^.*?error:\s*", "", errors[-1]) if errors else ""
message = re.sub(r"^\S*" + re.escape(name) + r"\.py:\s*", "", message)  # the problem's own path
row = {"level": level, "problem": name, "seconds": round(float(ended) - float(began), 1),
       "symbols": "", "tests": "", "held_out": "", "message": message}
if rc == 0:
    row["outcome"] = "imported"
    spec = json.load(open(spec_path))
    row["symbols"] = ",".join(k for k, v in spec["symbols"].items() if "value" not in v)
    row["tests"] = len(spec["shapes"]["tests"])
    row["held_out"] = len(spec["shapes"].get("held_out", []))
elif rc in (124, 137) or "did not finish importing within" in message:
    row["outcome"] = "timed out"
elif rc in (2, 3) and message and "internal" not in message:
    row["outcome"] = "refused"
else:
    row["outcome"] = "crashed"
    if not message:
        tail = [line for line in log.splitlines() if line.strip()]
        row["message"] = f"exit {rc}" + (f": {tail[-1]}" if tail else "")
print(json.dumps(row))
PY
    printf '[%4ds] %s/%s: %s\n' $(( $(date +%s) - started )) "$level" "$name" \
        "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["outcome"])' "$dir/$name.row")" >&2
}
export -f import_one
started=$(date +%s)
export out kf limit device niceness started
for level in "${levels[@]}"; do
    mkdir -p "$out/$level"
    rm -f "$out/$level"/*.row
    ls "$root/$level"/*.py 2>/dev/null | sort -V | while read -r file; do
        printf '%s\0%s\0' "$level" "$file"
    done
done | xargs -0 -n 2 -P "$jobs" bash -c 'import_one "$0" "$1"'

python3 - "$out" "$root" "$device" "$limit" "$("$kf" --version 2>/dev/null | head -1)" "${KFORGE_PYTHON:-default}" \
    "$(( $(date +%s) - started ))" "${levels[@]}" >"$out/table.md" <<'PY'
import collections, datetime, glob, json, os, re, sys
out, root, device, limit, version, python, wall = sys.argv[1:8]
levels = sys.argv[8:]
def number(path):
    m = re.match(r"(\d+)", os.path.basename(path))
    return (int(m.group(1)) if m else 1 << 30, os.path.basename(path))
print(f"kforge task import over KernelBench ({root}), device {device}, limit {limit} s per problem, "
      f"{datetime.date.today()}; kforge {version}, python {python}")
print()
print("| level | problem | outcome | s | symbols | tests | held-out | message (first line) |")
print("|---|---|---|---|---|---|---|---|")
rows = {level: [json.load(open(p)) for p in sorted(glob.glob(f"{out}/{level}/*.row"), key=number)]
        for level in levels}
for level in levels:
    for r in rows[level]:
        message = r["message"].splitlines()[0] if r["message"] else ""
        message = message.replace("|", "\\|")[:300]
        print(f"| {level} | {r['problem']} | {r['outcome']} | {r['seconds']} | {r['symbols']} | {r['tests']} | "
              f"{r['held_out']} | {message} |")
print()
for level in levels:
    counts = collections.Counter(r["outcome"] for r in rows[level] if r["outcome"] != "imported")
    ok = sum(r["outcome"] == "imported" for r in rows[level])
    seconds = sum(r["seconds"] for r in rows[level])
    others = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
    print(f"{level}: imported {ok} of {len(rows[level])}" + (f" ({others})" if others else "")
          + f"; {seconds:.0f} s of imports")
print(f"wall time: {wall} s")
PY
cat "$out/table.md"
