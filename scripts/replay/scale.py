#!/usr/bin/env python3
"""Writes tests/fixtures/replay/softmax_f32_scale.jsonl: fixed work for `kforge_bench scale`.

The replay provider serves these replies in order (`--model replay:FILE`), so a scale run evaluates
the same candidates whatever the number of GPUs. Every reply is a correct softmax kernel with 6 to 8
param points (so compiles and GPU time both count), built from the four softmax kernel families in
tasks/softmax_f32 in turn. Each carries a variant number in a test that is never true
(`if (M == -K) return;`, M >= 1): the sources differ, so the search never rejects one as a
duplicate, and so do the compiled binaries, so no measurement is reused from another candidate.
There are no faults, hangs or wrong kernels: the work is the same on every run.

    python3 scripts/replay/scale.py [COUNT]     # default 96 replies
"""
import json
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parents[2]  # scripts/replay/ -> the repository
families = [root / "tasks/softmax_f32" / name for name in
            ("seed_warp_row.cu", "seed_block_row.cu", "seed_row_regs.cu", "seed_split_row.cu")]
signature = re.compile(r"(int M, int N\)\n\{\n)")


def variant(path, k):
    text = path.read_text()
    marked, count = signature.subn(
        lambda m: m.group(1) + f"    if (M == -{k}) // scale-fixture variant {k}: never true (M >= 1), a distinct binary\n"
                               "        return;\n", text)
    if count == 0:
        raise SystemExit(f"{path}: no kernel taking (..., int M, int N) to mark")
    return marked


count = int(sys.argv[1]) if len(sys.argv) > 1 else 96
out = root / "tests/fixtures/replay/softmax_f32_scale.jsonl"
with out.open("w") as f:
    for k in range(1, count + 1):
        family = families[(k - 1) % len(families)]
        text = f"Variant {k} of {family.stem}.\n\n```cuda\n{variant(family, k)}```\n"
        f.write(json.dumps({"schema": "kforge.llm_call/1", "provider": "openai", "model": "recorded-model",
                            "purpose": "propose", "reply": text, "input_tokens": 2000,
                            "output_tokens": len(text) // 4, "cost_usd": 0.0, "latency_s": 0.0,
                            "status": "ok", "started_at": 1795000000.0 + k}) + "\n")
print(f"wrote {count} replies to {out}")
