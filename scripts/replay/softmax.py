#!/usr/bin/env python3
"""Writes tests/fixtures/replay/softmax_f32.jsonl: recorded "model replies" for the softmax task.

The replay provider (`--model replay:FILE`) serves them in order, so a search on a GPU runs the
language-model path (prompt, reply parsing, repair, archive) with the real evaluator and no network.
The replies mix good kernels (the task's seeds) with the deliberately bad fixture kernels (faults,
hangs, out-of-bounds writes, wrong results) and replies with no code: the run must survive them all.
"""
import json, pathlib

root = pathlib.Path(__file__).resolve().parents[2]  # scripts/replay/ -> the repository
fixtures = root / "tests/fixtures/kernels/softmax_f32"
seeds = root / "tasks/softmax_f32"

def reply_with(path, words):
    return f"{words}\n\n```cuda\n{path.read_text()}```\n"

replies = [
    reply_with(seeds / "seed_warp_row.cu", "One warp per row keeps the reductions in registers."),
    reply_with(fixtures / "bad_compile_error.cu", "A block-per-row version."),
    reply_with(fixtures / "bad_illegal_address.cu", "Indexing rows directly."),
    "I would try vectorised loads next, but I am not sure how.",
    reply_with(fixtures / "bad_infinite_loop.cu", "A grid-stride loop over rows."),
    reply_with(seeds / "seed_block_row.cu", "A block per row for long rows."),
    reply_with(fixtures / "bad_out_of_bounds.cu", "Unrolled tail handling."),
    reply_with(fixtures / "bad_writes_input.cu", "Reusing the input as scratch saves a pass."),
    reply_with(fixtures / "bad_all_zeros.cu", "A simpler kernel."),
    reply_with(fixtures / "good_block_row.cu", "Block reduction through shared memory."),
    reply_with(fixtures / "bad_data_race.cu", "One fewer __syncthreads."),
    reply_with(fixtures / "bad_device_state_cache.cu", "Caching the row maxima between launches."),
    reply_with(fixtures / "bad_half_precision.cu", "Half precision halves the traffic."),
    reply_with(fixtures / "bad_partial_output.cu", "Skipping the last warp's tail."),
]
out = root / "tests/fixtures/replay/softmax_f32.jsonl"
with out.open("w") as f:
    for i, text in enumerate(replies):
        f.write(json.dumps({"schema": "kforge.llm_call/1", "provider": "openai", "model": "recorded-model",
                            "purpose": "propose", "reply": text, "input_tokens": 1800 + 10 * i,
                            "output_tokens": len(text) // 4, "cost_usd": 0.0, "latency_s": 1.5,
                            "status": "ok", "started_at": 1795000000.0 + i}) + "\n")
print(f"wrote {len(replies)} replies to {out}")
