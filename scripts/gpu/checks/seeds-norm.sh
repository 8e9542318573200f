#!/usr/bin/env bash
# check: the softmax, layernorm, rmsnorm and scan seeds verified and timed, against the reference, the vendor routine and torch
# claim: README Quick start's softmax speedups (2.0x H100, 2.27x H200)
# device time: about 5 min
#
# Verifies and times the softmax_f32, layernorm_f32, rmsnorm_bf16 and scan_u32 seeds on a GPU machine:
# `kforge eval --held-out --json` per seed (param sweep, correctness on the tests and held-out
# shapes, confirmation timing of the best point against the reference and the vendor routine); with
# POINTS=1 also every param point on its own (a copy of the seed with its params pinned), so the
# per-shape winner of each point is visible; then torch eager (and torch.compile with
# TORCH_COMPILE=1) on the same bench shapes, L2 flushed before each sample, when torch imports.
# Prints one compact table; JSON and logs per run in $OUT/seeds-norm.
# usage: [POINTS=1] [TORCH_COMPILE=1] scripts/gpu/checks/seeds-norm.sh [TASK...]
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp}/seeds-norm"
mkdir -p "$out/points"
tasks=("$@")
[ ${#tasks[@]} -eq 0 ] && tasks=(softmax_f32 layernorm_f32 rmsnorm_bf16 scan_u32)
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader

run_eval() {   # run_eval LABEL SPEC FILE [FLAGS...]
    local label=$1 spec=$2 file=$3 start=$(date +%s)
    shift 3
    timeout "${SEED_TIMEOUT:-900}" "$KF" eval "$spec" "$file" --json "$@" >"$out/$label.json" 2>"$out/$label.log"
    echo "$label rc=$? in $(( $(date +%s) - start ))s" | tee -a "$out/runs.txt"
}

for task in "${tasks[@]}"; do
    spec="$here/tasks/$task.json"
    for seed in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["seeds"]))' "$spec"); do
        name=$(basename "$seed" .cu)
        run_eval "$task--$name" "$spec" "$here/tasks/$seed" --held-out
        [ "${POINTS:-0}" = 1 ] || continue
        # One copy of the seed per param point, its params pinned to that point.
        for point in $(python3 - "$here/tasks/$seed" "$out/points" "$task--$name" <<'EOF'
import itertools, json, re, sys
src, folder, label = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(src).read()
m = re.search(r"/\* kforge:plan(.*?)\*/", text, re.S)
plan = json.loads(m.group(1))
params = plan.get("params", {})
for values in itertools.product(*params.values()):
    pinned = dict(zip(params, values))
    tag = "-".join(f"{k}{v}" for k, v in pinned.items())
    plan["params"] = {k: [v] for k, v in pinned.items()}
    with open(f"{folder}/{label}--{tag}.cu", "w") as f:
        f.write(text[:m.start()] + "/* kforge:plan\n" + json.dumps(plan, indent=1) + "\n*/" + text[m.end():])
    print(tag)
EOF
        ); do
            run_eval "points/$task--$name--$point" "$spec" "$out/points/$task--$name--$point.cu"
        done
    done
done

# torch on the bench shapes (median of 30 samples, CUDA events, a 256 MiB write before each).
python3 - "$here" "$out" "${tasks[@]}" <<'EOF' 2>"$out/torch.log" || echo "torch timing skipped: $(tail -n 1 "$out/torch.log")"
import json, os, sys
import torch
here, out, tasks = sys.argv[1], sys.argv[2], sys.argv[3:]
flush = torch.empty(64 * 2**20, dtype=torch.float32, device="cuda")
def median_us(fn, reps=30):
    fn(); torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return sorted(times)[len(times) // 2]
def ops(task, s):
    g = torch.Generator(device="cuda").manual_seed(1)
    if task == "softmax_f32":
        x = torch.randn(s["M"], s["N"], device="cuda", generator=g) * 4
        return lambda: torch.softmax(x, dim=-1)
    if task == "layernorm_f32":
        x = torch.randn(s["M"], s["N"], device="cuda", generator=g) + 128
        w = torch.rand(s["N"], device="cuda") + 0.5; b = torch.rand(s["N"], device="cuda") - 0.5
        return lambda: torch.nn.functional.layer_norm(x, (s["N"],), w, b, 1e-5)
    if task == "rmsnorm_bf16":
        x = (torch.randn(s["M"], s["N"], device="cuda", generator=g) * 2).bfloat16()
        w = (torch.rand(s["N"], device="cuda") + 0.5).bfloat16()
        if hasattr(torch.nn.functional, "rms_norm"):
            return lambda: torch.nn.functional.rms_norm(x, (s["N"],), w, 1e-6)
        return lambda: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).bfloat16() * w
    if task == "scan_u32":
        x = torch.randint(0, 2**31 - 1, (s["n"],), dtype=torch.int32, device="cuda", generator=g)
        return lambda: torch.cumsum(x, 0, dtype=torch.int32)
    return None
results = {}
for task in tasks:
    for s in json.load(open(f"{here}/tasks/{task}.json"))["shapes"]["bench"]:
        fn = ops(task, s)
        if fn is None:
            continue
        label = ",".join(f"{k}={v}" for k, v in sorted(s.items()) if k not in ("seed", "label"))
        row = {"eager_us": median_us(fn)}
        if os.environ.get("TORCH_COMPILE") == "1":
            row["compile_us"] = median_us(torch.compile(fn))
        results[f"{task}|{label}"] = row
        del fn
        torch.cuda.empty_cache()
json.dump(results, open(f"{out}/torch.json", "w"), indent=1)
EOF

python3 - "$out" "${tasks[@]}" <<'EOF'
import glob, json, os, sys
out, tasks = sys.argv[1], sys.argv[2:]
try:
    torch_times = json.load(open(f"{out}/torch.json"))
except (OSError, ValueError):
    torch_times = {}
def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None
print(f"\n{'task/seed':40} {'shape':22} {'median':>9} {'%BW':>5} {'vs ref':>7} {'vendor':>9} {'vs vend':>7} "
      f"{'torch':>9} {'vs torch':>8} {'compile':>9}")
for task in tasks:
    for path in sorted(glob.glob(f"{out}/{task}--*.json")):
        label = task + "/" + os.path.basename(path)[len(task) + 2:-5]
        r = load(path)
        if not r or not r.get("shapes"):
            msg = (r or {}).get("message", f"no result, see {path[:-5]}.log")
            print(f"{label:40} {(r or {}).get('verdict', '?'):9} {msg[:150]}")
            continue
        for i, s in enumerate(r["shapes"]):
            t = torch_times.get(f"{task}|{s['shape']}", {})
            eager, comp = t.get("eager_us"), t.get("compile_us")
            med = s["median_ns"] / 1e3
            print(f"{label if i == 0 else '':40} {s['shape'][:22]:22} {med:8.1f}u "
                  f"{100 * s['measured_roofline_fraction']:4.0f}% {s['speedup']:6.2f}x "
                  f"{s['vendor_ns'] / 1e3 if s['vendor_ns'] else 0:8.1f}u {s['vendor_speedup']:6.2f}x "
                  f"{eager or 0:8.1f}u {(eager or 0) / med:7.2f}x {comp or 0:8.1f}u")
        ptxas = r.get("metrics", {}).get("ptxas", [])
        regs = ", ".join(f"{k['kernel']} {k['registers']}r/{k['spill_store_bytes']}B" for k in ptxas)
        print(f"{'':40} {r.get('verdict')} with {r.get('params')}  {regs}")
        for p in sorted(glob.glob(f"{out}/points/{task}--{os.path.basename(path)[len(task) + 2:-5]}--*.json")):
            q = load(p)
            tag = p.rsplit("--", 1)[1][:-5]
            if not q or not q.get("shapes"):
                print(f"{'':40}   {tag:20} {(q or {}).get('verdict', '?')} {(q or {}).get('message', '')[:100]}")
                continue
            cells = "  ".join(f"{s['median_ns'] / 1e3:7.1f}u {100 * s['measured_roofline_fraction']:3.0f}%" for s in q["shapes"])
            print(f"{'':40}   {tag:20} {cells}")
EOF
