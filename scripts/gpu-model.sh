#!/usr/bin/env bash
# Issue 33 on a GPU machine: `kforge model optimize` end to end on the model fixtures, with the carried
# build (scripts/pack-gpu.sh, .gpu/) and the recorded replies of tests/fixtures/model/replies/:
# extract (each region timed alone), the suite over the regions (torch eager and torch.compile timed
# beside every candidate), assemble (export of each region that beat both, MODEL_kforge.py checked
# against the model on fresh inputs and timed eager, torch.compile, assembled, assembled + compile),
# and the report. Then the transformers GPT-2 block (tests/fixtures/model/gpt2_block.py) where
# transformers imports: profile and extract, and optimize when replies for its regions exist.
#
#   KF_MODELS      fixtures to optimize (default: gpt_block mlp_stack)
#   KF_MODEL_HF    0: leave the transformers block out (default 1)
#   KF_MODEL_BUDGET seconds each model's optimize may take (default 400)
# Everything lands in $OUT/model.tgz; printed last: each model's report.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
cd "$here"
out=/tmp/kforge-model
rm -rf "$out"
mkdir -p "$out"
export KFORGE_PYTHON="${KFORGE_PYTHON:-python3}"
replies=tests/fixtures/model/replies
budget="${KF_MODEL_BUDGET:-400}"
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start ))s] $*"; }
pack() { [ -n "${OUT:-}" ] && tar -czf "$OUT/model.tgz" -C /tmp kforge-model 2>/dev/null; }
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__)'
hf=$(python3 -c 'import transformers; print(transformers.__version__)' 2>/dev/null || echo "none")
echo "transformers $hf"

optimize() {  # model file, folder name
    say "model optimize $1"
    timeout -s INT -k 30 "$budget" "$KF" model optimize "$1" -o "$out/$2" --model "replay:$replies/" --import-jobs 8 \
        --no-knowledge --progress lines --device cuda >"$out/$2.out" 2>"$out/$2.log"
    echo "$2 optimize rc=$?" | tee "$out/$2.rc"
    grep -E '^\[[0-9]+/[0-9]+\]|error|failed' "$out/$2.log" | cut -c1-300 | tail -20
    "$KF" model report "$out/$2" >"$out/$2.report.txt" 2>>"$out/$2.log"
    "$KF" model report "$out/$2" --json >"$out/$2.report.json" 2>>"$out/$2.log"
    "$KF" model report "$out/$2" -o "$out/$2.html" >/dev/null 2>>"$out/$2.log"
    pack
}

for m in ${KF_MODELS:-gpt_block mlp_stack}; do
    optimize "tests/fixtures/model/$m.py" "$m"
done

if [ "${KF_MODEL_HF:-1}" = 1 ] && [ "$hf" != none ]; then
    if ls "$replies"/gpt2_block_*.jsonl >/dev/null 2>&1; then
        budget="${KF_MODEL_HF_BUDGET:-$budget}" optimize tests/fixtures/model/gpt2_block.py gpt2_block
    else
        say "transformers GPT-2 block: extract (no recorded replies for its regions yet)"
        timeout -k 10 "${KF_MODEL_HF_LIMIT:-150}" "$KF" model extract tests/fixtures/model/gpt2_block.py \
            -o "$out/gpt2_block" --device cuda >"$out/gpt2_block.extract.txt" 2>"$out/gpt2_block.extract.log"
        echo "gpt2_block extract rc=$?"
        head -30 "$out/gpt2_block.extract.txt"
    fi
fi
pack
say "done"
for f in "$out"/*.report.txt; do
    [ -f "$f" ] && { echo "== $(basename "$f" .report.txt)"; cat "$f"; }
done
if [ -d .kb/level3 ] && [ "${KF_MODEL_KB3:-1}" = 1 ]; then
    say "KernelBench level 3: extract every program (.kb/level3, fetched as test input)"
    python3 scripts/model-extract-kb.py .kb/level3 "$out/kb3" --kforge "$KF" --device cuda \
        --time-limit "${KF_MODEL_KB3_LIMIT:-60}" >"$out/kb3.txt" 2>&1
    pack
    tail -58 "$out/kb3.txt"
fi
