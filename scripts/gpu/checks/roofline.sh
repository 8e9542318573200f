#!/usr/bin/env bash
# check: a correct fast kernel is never thrown away: the floor's L2 allowance and the accept path
# claim: README 'Faster than the roofline'
# device time: about 4 min
#
# On an H100 (about 4 minutes): a correct fast kernel is never thrown away.
#
# 1. `kforge eval` of the bf16 GELU seed with 16-byte accesses (tasks/gelu_bf16/seed_vec16.cu): at
#    n = 2^24 its 32 MiB of output stay in the 50 MB L2, so it may beat the 20.0 us roofline; it must
#    not be flagged, since the floor (roofline.hpp) grants the bytes the L2 absorbs.
# 2. A search on gelu_bf16 with the builtin proposer: its best is confirmed, checked on the held-out
#    shape and made best, and nothing is flagged.
# 3. The same search on a copy of the task whose roofline overstates the bytes (12 n instead of
#    4 n): correct kernels are now below the floor and flagged. They are listed by inspect, one is
#    re-measured and accepted with `kforge eval RUN --candidate ID --held-out --accept`, and a
#    resume makes it the run's best.
# 4. The hack fixtures keep their verdicts (the [gpu] tests "bad softmax kernels get the right
#    verdicts ..." and "bad kernels on an imported PyTorch program ...", the second skipped where
#    python3 lacks torch): what catches the kernels that cheat on time is not the roofline.
# Logs and archives go to $OUT; the table printed last is the result.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp/kforge-roofline}"
mkdir -p "$out"
log="$out/roofline.log"
cd "$here"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee "$log"
{
    echo "== 1. eval of seed_vec16"
    "$KF" eval tasks/gelu_bf16.json tasks/gelu_bf16/seed_vec16.cu --held-out --json >"$out/eval-vec16.json"
    echo "eval rc=$?"
    "$KF" eval tasks/gelu_bf16.json tasks/gelu_bf16/seed_vec16.cu --held-out
    echo "== 2. optimize gelu_bf16 (builtin)"
    rm -f "$out/gelu.kforge"*
    "$KF" optimize tasks/gelu_bf16.json --model builtin --time "${KF_ROOFLINE_TIME:-75s}" --budget 40 --seed 1 \
        --no-knowledge --progress lines --json -o "$out/gelu.kforge" >"$out/optimize.json"
    echo "optimize rc=$?"
    "$KF" inspect "$out/gelu.kforge" --json >"$out/inspect.json"
    "$KF" inspect "$out/gelu.kforge"
    echo "== 3. a task whose roofline overstates the bytes: flagged, accepted, made best on resume"
    # A copy, not a symbolic link: a spec's files must lie in its own folder (task.cpp refuses links out).
    rm -rf "$out/specs" && mkdir -p "$out/specs" && cp -r "$here/tasks/gelu_bf16" "$out/specs/gelu_bf16"
    python3 -c 'import json, sys
s = json.load(open("tasks/gelu_bf16.json"))
s["roofline"]["bytes"] = "12 * n"
json.dump(s, open(sys.argv[1], "w"), indent=1)' "$out/specs/gelu_overstated.json"
    rm -f "$out/overstated.kforge"*
    "$KF" optimize "$out/specs/gelu_overstated.json" --model builtin --budget 6 --seed 1 --no-knowledge \
        --progress lines -o "$out/overstated.kforge"
    echo "overstated optimize rc=$?"
    "$KF" inspect "$out/overstated.kforge" --json >"$out/overstated-before.json"
    "$KF" inspect "$out/overstated.kforge"
    flagged=$(python3 -c 'import json, sys
f = json.load(open(sys.argv[1]))["flagged"]
print(max(f, key=lambda e: e["measured_fitness"])["id"] if f else "")' "$out/overstated-before.json")
    echo "fittest flagged candidate: #$flagged"
    if [ -n "$flagged" ]; then
        "$KF" eval "$out/overstated.kforge" --candidate "$flagged" --held-out --accept --json >"$out/accept.json"
        echo "accept rc=$?"
        "$KF" resume "$out/overstated.kforge" --budget +1 --progress lines --json >"$out/resume.json"
        echo "resume rc=$?"
        "$KF" inspect "$out/overstated.kforge" --json >"$out/overstated-after.json"
        "$KF" inspect "$out/overstated.kforge"
    fi
    echo "== 4. the hack fixtures"
    "$here/.gpu/kforge_tests" "bad softmax kernels get the right verdicts*,bad kernels on an imported PyTorch program*" \
        >"$out/fixtures.log" 2>&1
    echo "fixtures rc=$?"
    tail -4 "$out/fixtures.log"
} >>"$log" 2>&1
grep -E "rc=|FLAGGED|flagged|accepted|NEW BEST" "$log" | head -40
python3 - "$out" <<'EOF'
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception as e:
        return {"error": f"{name}: {e}"}
rows = []
ev = load("eval-vec16.json")
for s in ev.get("shapes", []):
    rows.append(("eval seed_vec16 " + s["shape"], "%.2f us" % (s["median_ns"] / 1e3),
                 "roofline %.2f us, floor %.2f us, %.0f%% of roofline" % (s["roofline_ns"] / 1e3, s["floor_ns"] / 1e3,
                                                                           100 * s["roofline_fraction"]),
                 "FLAGGED" if s["below_roofline"] else "not flagged"))
rows.append(("eval seed_vec16 verdict", ev.get("verdict", ev.get("error")), "fitness %s" % ev.get("fitness"), ""))
ins = load("inspect.json")
best = (ins.get("top") or [{}])[0]
rows.append(("search best", "#%s %s" % (best.get("id"), best.get("fitness")),
             ", ".join("%s %.2f us" % (k, v / 1e3) for k, v in best.get("times_ns", {}).items()),
             "flagged in run: %d" % len(ins.get("flagged", []))))
opt = load("optimize.json")
b = opt.get("best") or {}
rows.append(("search best held-out / confirmed", str(b.get("held_out")),
             ", ".join("%s %s" % (r["shape"], "confirmed" if r.get("confirmed") else "quick") for r in b.get("shapes", [])), ""))
before = load("overstated-before.json")
acc = load("accept.json")
after = load("overstated-after.json")
rows.append(("overstated task: flagged", str(len(before.get("flagged", []))),
             "best before accept: %s" % (before.get("best") or {}).get("id"), ""))
a = acc.get("acceptance", {})
rows.append(("accept", "accepted" if a.get("accepted") else "NOT accepted", a.get("message", acc.get("error", ""))[:90], ""))
rows.append(("after resume: best", str((after.get("best") or {}).get("id")), "fitness %s" % (after.get("best") or {}).get("fitness"),
             "accepted flagged: %d" % sum(1 for e in after.get("flagged", []) if e.get("accepted"))))
fx = open(os.path.join(out, "fixtures.log")).read() if os.path.exists(os.path.join(out, "fixtures.log")) else ""
import re
summary = re.findall(r"(All tests passed.*|test cases:.*)", fx)
rows.append(("hack fixtures", "passed" if "All tests passed" in fx else "FAILED or skipped", summary[-1] if summary else "", ""))
w = [max(len(str(r[i])) for r in rows) for i in range(4)]
print("\n| check | value | detail | flag |\n|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(str(c) for c in r) + " |")
EOF
