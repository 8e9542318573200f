#!/usr/bin/env bash
# check: plan, then code: recorded two-phase replies on axpy then softmax, sharing a knowledge base
# claim: README 'Plan, then code'
# device time: about 4 min
#
# Plan, then code, on a GPU machine: replay runs with recorded two-phase replies
# (tests/fixtures/replay/plancode_<task>.jsonl, scripts/replay/plancode.py) on two bundled
# tasks, axpy_f32 then softmax_f32, sharing one fresh knowledge base, so the softmax planner is shown
# the axpy run's technique statistics and schedule (both are memory tasks). Each run gets inspect
# (techniques table, the best's lineage with its plans), report (HTML) and dataset (both phases,
# checked against inspect by scripts/check-dataset.py); the planner's and the coder's prompts of
# the softmax run's first plan are written out as text. Everything goes to $OUT; a table is printed
# last.
#
# TASKS="axpy_f32 softmax_f32" (default) picks the runs, in order: a bundled task's name, or the path
# of a spec (an imported PyTorch problem: `kforge task import PROGRAM.py -o DIR/NAME.json`). Each
# needs two-phase replies in $REPLIES_DIR/plancode_<task name>.jsonl (default tests/fixtures/replay;
# scripts/replay/plancode.py shows the form: plan and code records in serving order). The
# budget is the seeding items (reference and seeds) plus one per code reply plus one per plan that
# fails twice; BUDGET_<task name>=N overrides it.
#
# What proves the issue: every run "rc=0" with "plans" = the replies' plans (axpy 6, softmax 9),
# "read/repaired/failed" = 4/2/0 (axpy) and 6/2/1 (softmax), "left out" = 2 for each, and "dataset
# check: OK"; report-<task>.html has a "Techniques (plan, then code)" section.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp/kforge-plancode}"
mkdir -p "$out"
kb="$out/knowledge.sqlite"
rm -f "$kb"*
log="$out/plancode.log"
entries="${TASKS:-axpy_f32 softmax_f32}"
replies_dir="${REPLIES_DIR:-tests/fixtures/replay}"
declare -A failed_plans=([softmax_f32]=1) # plans of the bundled replies that fail twice (no code reply)
tasks=""
{
    for entry in $entries; do
        case "$entry" in *.json) spec="$entry" ;; *) spec="tasks/$entry.json" ;; esac
        task=$(python3 -c "import json; print(json.load(open('$spec'))['name'])")
        tasks="$tasks $task"
        archive="$out/$task-plan.kforge"
        rm -f "$archive"*
        replies="$replies_dir/plancode_$task.jsonl"
        # Seeding items (the reference unless it is a PyTorch program, and the seeds), then one
        # candidate per code reply and per plan that fails twice.
        n=$(python3 -c "
import json
spec = json.load(open('$spec'))
codes = [json.loads(l)['purpose'] for l in open('$replies')].count('code')
print((0 if isinstance(spec.get('reference'), dict) else 1) + len(spec.get('seeds', [])) + codes + ${failed_plans[$task]:-0})")
        budget_var="BUDGET_$task"
        n="${!budget_var:-$n}"
        echo "== optimize $task --strategy plan (budget $n)"
        time "$KF" optimize "$spec" --model "replay:$replies" --strategy plan --parallel 1 \
            --no-repair --no-tune --max-lessons 0 --meta-every 100 --islands 1 --budget "$n" --seed 5 \
            --knowledge "$kb" --progress lines -o "$archive"
        echo "optimize $task rc=$?"
        "$KF" inspect "$archive" --json > "$out/inspect-$task.json"; echo "inspect json $task rc=$?"
        best=$(python3 -c "import json; print(json.load(open('$out/inspect-$task.json'))['best']['id'])")
        "$KF" inspect "$archive" --lineage "$best" | tee "$out/inspect-$task.txt"; echo "inspect $task rc=$?"
        "$KF" report "$archive" -o "$out/report-$task.html"; echo "report $task rc=$?"
        grep -c 'Techniques (plan, then code)' "$out/report-$task.html" | sed "s/^/report $task techniques sections: /"
        "$KF" dataset "$archive" -o "$out/dataset-$task.jsonl" --force; echo "dataset $task rc=$?"
        python3 "$here/scripts/check-dataset.py" "$KF" "$out/dataset-$task.jsonl" "$archive"
    done
    echo "tasks:$tasks"
    # The prompts of one task's first plan and its code, as the models saw them.
    for task in $tasks; do
        python3 - "$out/$task-plan.kforge" "$out" "$task" <<'EOF'
import json, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for purpose in ("plan", "code"):
    row = db.execute("SELECT request FROM llm_call WHERE purpose = ? ORDER BY id LIMIT 1", (purpose,)).fetchone()
    if row:
        request = json.loads(row[0])
        path = f"{sys.argv[2]}/prompt-{sys.argv[3]}-{purpose}.txt"
        open(path, "w").write("===== system =====\n" + request["system"] + "\n===== user =====\n" + request["user"])
        print(f"wrote {path}")
EOF
    done
} >"$log" 2>&1
grep -E "rc=|dataset check|techniques sections|wrote|Error|error:" "$log"
tasks=$(sed -n 's/^tasks://p' "$log")
echo
printf '%-12s %6s %6s %8s %8s %6s %6s %8s %8s\n' task rc plans read repaired failed "left" "best" "techs"
for task in $tasks; do
    python3 - "$out/inspect-$task.json" "$task" "$log" <<'EOF'
import json, re, sys
report = json.load(open(sys.argv[1]))
t = report["techniques"]
rc = re.findall(rf"optimize {sys.argv[2]} rc=(\d+)", open(sys.argv[3]).read())
left = sum(r["missing"] for r in t["rows"])
best = report["best"]["fitness"] if report.get("best") else None
print(f"{sys.argv[2]:<12} {rc[-1] if rc else '?':>6} {t['plans']:>6} {t['parsed']:>8} {t['repaired']:>8} "
      f"{t['failed']:>6} {left:>6} {best or 0:>7.2f}x {len(t['rows']):>8}")
for r in t["rows"]:
    gain = f"{r['mean_gain']:.2f}x" if r["mean_gain"] else "-"
    print(f"    {r['technique']:<32} tried {r['tried']} correct {r['correct']} improved {r['improved']} gain {gain}")
EOF
done
