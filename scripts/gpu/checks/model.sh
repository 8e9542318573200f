#!/usr/bin/env bash
# check: kforge model optimize end to end on the model fixtures: the side-by-side table, the time between kernels, one region's call cost
# claim: bench/results/nvidia-h100-2026-12-06-model.md, nvidia-h200-2026-11-29-model.md; docs/model.md 'Measured'
# device time: about 4 min a model
#
# `kforge model optimize` end to end on a GPU machine, with the carried build (scripts/pack-gpu.sh,
# .gpu/) and the recorded replies of tests/fixtures/model/replies/: for each model, extract (each
# region timed alone), the suite over the regions (torch eager and torch.compile timed beside every
# candidate), assemble (each region that beat both exported as a C++ operator, MODEL_kforge.py
# checked against the model on fresh inputs, then eager, eager as a CUDA graph, torch.compile and
# max-autotune, and the assembled model eager, as a CUDA graph and under torch.compile, timed side
# by side in one process), and the report. Then what one replaced region's call costs beyond its
# kernels (bench/model_call_cost.py), on the first model's smallest replaced region.
#
#   KF_MODELS        fixtures to optimize (default: llama_block gpt_block gpt2_block; gpt2_block
#                    needs transformers)
#   KF_MODEL_BUDGET  seconds each model's optimize may take (default 400; KF_MODEL_BUDGET_<model> for one)
#   KF_MIN_SHARE     extract's --min-share (default 0.005: every region worth a problem)
# Everything lands in $OUT/model.tgz; printed last: the call cost and each model's report.
set -uo pipefail
source "$(dirname "$0")/../env.sh"
cd "$here"
out=/tmp/kforge-model
rm -rf "$out"
mkdir -p "$out"
export KFORGE_PYTHON="${KFORGE_PYTHON:-python3}" PYTHONUNBUFFERED=1
replies=tests/fixtures/model/replies
budget="${KF_MODEL_BUDGET:-400}"
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start ))s] $*"; }
pack() { [ -n "${OUT:-}" ] && tar -czf "$OUT/model.tgz" --exclude='*.so' -C /tmp kforge-model 2>/dev/null; }
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__)'
hf=$(python3 -c 'import transformers; print(transformers.__version__)' 2>/dev/null || echo "none")
echo "transformers $hf"

optimize() {  # model name
    local model="tests/fixtures/model/$1.py"
    say "model optimize $model"
    local limit_var="KF_MODEL_BUDGET_$1"
    timeout -s INT -k 30 "${!limit_var:-$budget}" "$KF" model optimize "$model" -o "$out/$1" --model "replay:$replies/" \
        --import-jobs 8 --no-knowledge --progress lines --device cuda --min-share "${KF_MIN_SHARE:-0.005}" \
        >"$out/$1.out" 2>"$out/$1.log"
    echo "$1 optimize rc=$?" | tee "$out/$1.rc"
    grep -E '^\[[0-9]+/[0-9]+\]|error|failed|Error' "$out/$1.log" | cut -c1-300 | tail -12
    "$KF" model report "$out/$1" >"$out/$1.report.txt" 2>>"$out/$1.log"
    "$KF" model report "$out/$1" --json >"$out/$1.report.json" 2>>"$out/$1.log"
    "$KF" model report "$out/$1" -o "$out/$1.html" >/dev/null 2>>"$out/$1.log"
    pack
}

models=()
for m in ${KF_MODELS:-llama_block gpt_block gpt2_block}; do
    if [ "$m" = gpt2_block ] && [ "$hf" = none ]; then say "gpt2_block: no transformers here"; continue; fi
    optimize "$m"
    models+=("$m")
done

# The call cost: the first model with a replaced region, its region of fewest FLOPs, every size 1.
for m in "${models[@]}"; do
    region=$(python3 - "$out/$m" <<'EOF'
import json, os, sys
folder = sys.argv[1]
try:
    winners = [w["problem"] for w in json.load(open(os.path.join(folder, "winners.json")))["winners"]]
    rows = {r["id"]: r for r in json.load(open(os.path.join(folder, "model.json")))["regions"]}
except (OSError, ValueError, KeyError):
    sys.exit(0)
if winners:
    print(min(winners, key=lambda w: rows[w].get("flops") or 0))
EOF
)
    [ -n "$region" ] || continue
    sizes=$(python3 -c 'import json,sys; print(",".join(f"{k}=1" for k in json.load(open(sys.argv[1]))["size_symbols"]))' "$out/$m/model.json")
    say "call cost: $m $region at $sizes"
    timeout 180 python3 bench/model_call_cost.py "$out/$m" "$region" --sizes "$sizes" --json "$out/call_cost.json" \
        >"$out/call_cost.txt" 2>"$out/call_cost.log" || tail -5 "$out/call_cost.log"
    break
done
pack
say "done"
[ -f "$out/call_cost.txt" ] && cat "$out/call_cost.txt"
for m in "${models[@]}"; do
    echo "== $m"
    head -16 "$out/$m.report.txt"
done
