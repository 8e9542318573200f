#!/usr/bin/env bash
# check: KernelBench level-2 problems with library-step replies: verdicts, speedups, the exported ModelNew against Model
# claim: bench/results/nvidia-h200-2026-11-29-level2.md; docs/library-steps.md
# device time: about 9 min
#
# On a GPU machine: library steps (cuBLASLt / cuDNN inside a launch plan) on level-2
# problems, with the carried build (scripts/pack-gpu.sh, .gpu/) and the benchmark's programs in
# .kb/ (KernelBench's repository, fetched as test input and never committed: see
# tests/fixtures/level2/replies/expected.json for which files).
#
#   1. the vendor library's step tests and the library-step defences ([vendor], [library] tags)
#   2. `kforge suite run` over every problem of tests/fixtures/level2/replies/expected.json with its
#      recorded replies (--model replay:tests/fixtures/level2/replies/), torch eager and
#      torch.compile measured beside every candidate in the same run
#   3. each reply's verdict against the expected one
#   4. per problem, the time eager PyTorch spends in the library's own kernels (GEMM, convolution:
#      torch.profiler, TF32 off as in kforge's baselines): the floor a fused tail can reach
#
#   KF_L2_PROBLEMS   problems (default: all of expected.json)
#   KF_L2_BUDGET     seconds the suite may run (default 420): then it is interrupted and a second
#                    call resumes it (the suite folder is $OUT/suite, carried back as .kb/l2-suite)
#   KF_L2_SKIP_TESTS 1: skip step 1
#   KF_L2_AFTER      0: skip the export check and the floor (a first call that only runs the suite)
#   KF_L2_EXPORT     a regex: export only the problems whose id matches; KF_L2_FLOOR=0 skips the floor
# Printed last: the suite table, the verdict check and the floor table.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
cd "$here"
# Work in /tmp, packed into $OUT/level2.tgz at the end (the device returns only a few files).
out=/tmp/kforge-level2
rm -rf "$out"
mkdir -p "$out"
export KFORGE_PYTHON="${KFORGE_PYTHON:-python3}"
replies=tests/fixtures/level2/replies
budget="${KF_L2_BUDGET:-420}"
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start ))s] $*"; }
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader

if [ "${KF_L2_SKIP_TESTS:-0}" != 1 ]; then
    say "tests [vendor],[library] on the GPU"
    timeout 240 "$here/.gpu/kforge_tests" "${KF_L2_TESTS:-[vendor],[library]}" --reporter compact >"$out/tests.log" 2>&1
    echo "tests rc=$?" | tee "$out/tests.rc"
    grep -E "failed|Failed|FAILED|passed" "$out/tests.log" | cut -c1-600 | tail -30
fi

problems="${KF_L2_PROBLEMS:-$(python3 -c 'import json; print(" ".join(json.load(open("tests/fixtures/level2/replies/expected.json"))["problems"]))')}"
paths=()
for p in $problems; do
    kb=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["problems"][sys.argv[2]].get("kernelbench", ""))' "$replies/expected.json" "$p")
    if [ -n "$kb" ]; then
        f=".kb/level2/$(basename "$kb")"
        [ -f "$f" ] || { echo "missing $f: copy KernelBench's $kb there (scripts/gpu/checks/level2.sh header)"; exit 2; }
        paths+=("$f")
    else
        paths+=("tests/fixtures/level2/$p.py")
    fi
done

suite="$out/suite"
if [ -d .kb/l2-suite ]; then
    say "resuming the suite carried in .kb/l2-suite"
    cp -r .kb/l2-suite "$suite"
    timeout -s INT -k 60 "$budget" "$KF" suite run -o "$suite" --progress lines >"$out/suite.out" 2>"$out/suite.log"
else
    say "suite: ${#paths[@]} problems, replies from $replies/ (budget ${budget}s)"
    timeout -s INT -k 60 "$budget" "$KF" suite run "${paths[@]}" -o "$suite" --model "replay:$replies/" \
        --no-knowledge --per-gpu "${KF_L2_PER_GPU:-5}" --progress lines >"$out/suite.out" 2>"$out/suite.log"
fi
echo "suite rc=$?" | tee "$out/suite.rc"
grep -E '^\[[0-9]+/[0-9]+\]|failed|error' "$out/suite.log" | tail -20
"$KF" suite report "$suite" --json >"$out/report.json" 2>>"$out/suite.log"
for archive in "$suite"/runs/*.kforge; do
    [ -f "$archive" ] && "$KF" inspect "$archive" --json >"$out/$(basename "$archive" .kforge).inspect.json" 2>/dev/null
done

# A first copy of what there is, in case the call runs out of time in the steps below.
[ -n "${OUT:-}" ] && tar -czf "$OUT/level2.tgz" -C /tmp kforge-level2 2>/dev/null
if [ "${KF_L2_AFTER:-1}" = 1 ]; then
say "export --torch of each best candidate: ModelNew against Model at the bench shape, and its time"
mkdir -p "$out/export"
checks=()
for archive in "$suite"/runs/*.kforge; do
    [ -f "$archive" ] || continue
    id=$(basename "$archive" .kforge)
    [[ "$id" =~ ${KF_L2_EXPORT:-.} ]] || continue
    spec="$suite/$(python3 -c 'import json,sys; print(next((p.get("spec","") for p in json.load(open(sys.argv[1]))["problems"] if p["id"]==sys.argv[2]), ""))' "$suite/suite.json" "$id")"
    [ -f "$spec" ] || { echo "export $id: no spec found"; continue; }
    "$KF" export "$archive" --best --torch -o "$out/export/$id.cu" >"$out/export/$id.log" 2>&1 || { echo "export $id: $(tail -1 "$out/export/$id.log")"; continue; }
    checks+=("$id|$spec")
done
# The operators' builds (nvcc over PyTorch's headers, ~40 s each) run side by side, then each is
# checked and timed alone on the GPU.
for c in "${checks[@]}"; do
    id="${c%%|*}"; spec="${c#*|}"
    ( timeout 400 "$KFORGE_PYTHON" scripts/gpu/checks/torch_check.py modelnew "$spec" "$out/export/$id.cu" "$out/export/$id.build.json" --build-only \
        >>"$out/export/$id.log" 2>&1 ) &
done
wait
say "operators built"
for c in "${checks[@]}"; do
    id="${c%%|*}"; spec="${c#*|}"
    KF_MODELNEW_TIME=1 timeout 120 "$KFORGE_PYTHON" scripts/gpu/checks/torch_check.py modelnew "$spec" "$out/export/$id.cu" "$out/export/$id.json" \
        >>"$out/export/$id.log" 2>&1
    grep -E "^modelnew|Error|error:" "$out/export/$id.log" | tail -3 | cut -c1-300
done

say "library kernels in eager PyTorch (the floor)"
[ "${KF_L2_FLOOR:-1}" = 1 ] && "$KFORGE_PYTHON" - "${paths[@]}" >"$out/floor.txt" 2>"$out/floor.log" <<'PY'
import importlib.util, os, sys, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
library = ("gemm", "cutlass", "xmma", "conv", "winograd", "fft", "implicit", "dgrad", "cudnn", "sm90_", "sm80_", "splitk")
glue = ("elementwise", "vectorized", "reduce", "unrolled", "batch_norm", "softmax", "group_norm", "bn_", "welford")
print(f"{'problem':<46} {'eager ms':>9} {'library ms':>11} {'share':>6}")
for path in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location("p", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    torch.manual_seed(0)
    model = m.Model(*m.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in m.get_inputs()]
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                model(*inputs)
            torch.cuda.synchronize()
    total = lib = 0.0
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        us = e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
        name = e.name.lower()
        total += us
        if any(k in name for k in library) and not any(k in name for k in glue):
            lib += us
    total, lib = total / 5e3, lib / 5e3
    print(f"{os.path.basename(path)[:-3]:<46} {total:>9.3f} {lib:>11.3f} {100 * lib / max(total, 1e-9):>5.0f}%")
    del model, inputs
    torch.cuda.empty_cache()
PY
echo "floor rc=$?"
fi

echo
echo "== suite table ($(( $(date +%s) - start ))s) =="
"$KF" suite report "$suite"
echo
echo "== verdicts: each recorded reply against expected.json =="
python3 - "$suite" "$replies/expected.json" <<'PY'
import glob, json, os, sqlite3, sys
suite, expected = sys.argv[1], json.load(open(sys.argv[2]))["problems"]
bad = 0
for path in sorted(glob.glob(os.path.join(suite, "runs", "*.kforge"))):
    stem = os.path.basename(path)[:-len(".kforge")]
    problem = next((p for p in sorted(expected, key=len, reverse=True) if p in stem), None)
    if problem is None:
        continue
    rows = sqlite3.connect(path).execute(
        "SELECT c.verdict, c.message, l.reply FROM candidate c JOIN llm_call l ON c.llm_call_id = l.id ORDER BY c.id").fetchall()
    got = {}
    for verdict, message, reply in rows:
        first = (reply or "").split("\n", 1)[0]
        got[first] = (verdict, message)
    for r in expected[problem]["replies"]:
        v, msg = got.get(r["change"], (None, ""))
        ok = v == r["verdict"] and r["message"] in msg
        bad += not ok
        print(f"{problem[:40]:<40} {(r['file'] or '-'):<28} want {r['verdict']:<13} got {str(v):<13} {'ok' if ok else 'MISMATCH'}")
        if not ok and v:
            print(f"    {msg[:400]}")
print("verdict check:", "all as expected" if bad == 0 else f"{bad} problem(s) differ")
PY
echo
echo "== exported ModelNew against kforge's own figure (target: matches Model, within 5%) =="
python3 - "$out" "$suite" <<'PY'
import glob, json, os, sqlite3, sys
out, suite = sys.argv[1], sys.argv[2]
print(f"{'problem':<46} {'matches':>8} {'ModelNew ms':>12} {'kforge ms':>10} {'ratio':>6}")
for path in sorted(glob.glob(os.path.join(out, "export", "*.json"))):
    r = json.load(open(path))
    pid = os.path.basename(path)[:-5]
    db = sqlite3.connect(os.path.join(suite, "runs", pid + ".kforge"))
    row = db.execute("SELECT m.median_ns FROM measurement m JOIN candidate c ON m.candidate_id = c.id "
                     "WHERE c.fitness IS NOT NULL AND m.subject = 'candidate' AND m.shape_set = 'bench' "
                     "ORDER BY c.fitness DESC, m.confirmed DESC, m.median_ns LIMIT 1").fetchone()
    kf = row[0] / 1e6 if row else float("nan")
    mn = r.get("modelnew_ms", float("nan"))
    print(f"{pid[:46]:<46} {str(r.get('ok')):>8} {mn:>12.4f} {kf:>10.4f} {mn / kf if kf == kf and kf else float('nan'):>6.3f}")
PY
echo
echo "== library kernels in eager PyTorch, TF32 off (the floor a fused tail can reach) =="
cat "$out/floor.txt"; tail -3 "$out/floor.log"
# The device returns only a few files: everything in one archive, the summary beside it.
if [ -n "${OUT:-}" ]; then
    tar -czf "$OUT/level2.tgz" -C /tmp kforge-level2 2>/dev/null && echo "packed $OUT/level2.tgz"
fi
say "done"
