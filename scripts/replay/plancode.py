#!/usr/bin/env python3
"""Writes tests/fixtures/replay/plancode_<task>.jsonl: recorded two-phase replies (plans, then code).

The replies were written the way a strong model answers kforge's prompts (`kforge propose TASK
--strategy plan --parent FILE --print-prompt` for the planner, `--plan FILE --print-prompt` for the
coder): each plan picks techniques from the task's menu for the kernel it is shown, and each code
reply implements the plan before it, as one whole file. The kernels are in
tests/fixtures/replay/plancode/<task>/ and pass the task's checks (tasks/tools/emulate on the tests
shapes). Deliberately among them, per task: a plan that cannot be read (asked again, the second
reply is read), a plan with trailing commas and a comment (read after a local fix), a plan naming a
technique that is not on the menu (kept as new:...), code that ignores its plan, and for softmax a
planner that twice gives no plan at all (a failed plan: a no_code candidate).

The records have no prompts, so the replay provider serves them in order, plans to planner calls and
code to coder calls: run with --parallel 1 (one call at a time, so the k-th code reply answers the
k-th plan), --no-repair and --no-tune (no other kernel-writing calls, a fixed number of candidates),
--max-lessons 0 and a large --meta-every (no lesson or strategy calls). The CPU test
(tests/search/test_plan_code.cpp) replays them in a first, sequential run, records the exact prompts
that run sent, and replays those in parallel runs that are stopped and killed between the phases.
"""
import json
import pathlib

root = pathlib.Path(__file__).resolve().parents[2]  # scripts/replay/ -> the repository
fixtures = root / "tests/fixtures/replay/plancode"


def plan(obj):
    return "```json\n" + json.dumps(obj, indent=1) + "\n```\n"


def code(task, file, change):
    return f"CHANGE: {change}\n\n```cuda\n{(fixtures / task / file).read_text()}```\n"


softmax = [
    ("plan", plan({
        "techniques": ["warp-per-row", "vectorize-16b"],
        "expected_speedup": 1.08,
        "steps": [
            "Map one warp to each row, WARPS rows per block with WARPS a param in {4, 8}, so a row's "
            "reductions are shuffles only: no shared memory and no __syncthreads.",
            "Keep an online (max, sum) pair per lane while reading the row once as float4 when N % 4 == 0 "
            "(rows are then 16-byte aligned), element by element otherwise.",
            "Merge the lanes' pairs with __shfl_xor_sync, then write exp(x - max) / sum in a second pass, "
            "again with float4 loads and stores when N % 4 == 0."],
        "why": "On M=65536,N=1024 a row is 4 KB: two block barriers per row cost more than moving it; a warp "
               "per row needs none and keeps 16-byte accesses."})),
    ("code", code("softmax_f32", "warp_online_vec4.cu",
                  "one warp per row, float4 loads, an online (max, sum) per lane merged by shuffles")),
    ("plan", plan({
        "techniques": ["block-per-long-row"],
        "expected_speedup": 1.15,
        "steps": [
            "Give each row a whole block of BLOCK threads (a param in {256, 512, 1024}); each thread keeps an "
            "online (max, sum) over its strided part of the row, with float4 loads when N % 4 == 0.",
            "Merge within warps by shuffles, write one pair per warp to shared memory, merge those in the "
            "first warp's lanes (every warp can do it redundantly, no second barrier).",
            "Write exp(x - max) / sum in a second pass over the row."],
        "why": "512 x 262144 has only 512 rows: a warp per row occupies 512 warps, a few per SM, and its "
               "time is far above the copy floor; a block per row puts 16x more threads on each row."})),
    ("code", code("softmax_f32", "block_online.cu",
                  "a block per row: online pairs per thread, warp shuffles, one shared-memory merge")),
    ("plan", "The two shapes want different kernels, so dispatch on the row length.\n\n" + plan({
        "techniques": ["length-dispatched-kernels", "warp-per-row"],
        "expected_speedup": 1.2,
        "steps": [
            "Write two kernels: softmax_warp_online (a warp per row, WARPS rows per block) and "
            "softmax_block_online (a block of BLOCK threads per row).",
            "In the launch plan, launch the warp kernel with \"repeat\": \"N <= 2048\" and the block kernel "
            "with \"repeat\": \"N > 2048\", so each shape runs exactly one of them.",
            "Both keep an online (max, sum) per thread with float4 loads when N % 4 == 0 and write "
            "exp(x - max) / sum in a second pass."],
        "why": "A warp per row is best when rows are short and many, a block per row when they are long "
               "and few; the bench shapes have both."})),
    ("code", code("softmax_f32", "dispatch_by_length.cu",
                  "two kernels chosen by row length in the plan: a warp per row up to 2048, a block above")),
    ("plan", plan({
        "techniques": ["cache-hints"],
        "expected_speedup": 1.04,
        "steps": [
            "In pass 1 read the row with __ldg so it stays in L2 for pass 2.",
            "In pass 2 read it with __ldcs (last use) and write the output with __stcs, so the output "
            "stream does not evict the rows other blocks are about to re-read."],
        "why": "The second pass re-reads each row; on the 1 MiB rows of 512 x 262144 part of that re-read "
               "misses L2 because the output pushes it out."})),
    ("code", code("softmax_f32", "block_cache_hints.cu",
                  "cache hints: __ldg in pass 1, __ldcs and __stcs in pass 2")),
    ("plan", plan({
        "techniques": ["vectorize-16b", "fast-math-intrinsics"],
        "expected_speedup": 1.1,
        "steps": [
            "Read and write the row as float4 when N % 4 == 0 (scalar tail otherwise).",
            "Use __expf instead of expf in both passes: the arguments are x - max <= 0 and the check's "
            "tolerance (2e-5 relative) is far above __expf's error for the values that matter."],
        "why": "The element loop issues one 4-byte load per element and a full-precision expf; both show "
               "as instruction-bound time on the short-row shape."})),
    ("code", code("softmax_f32", "block_scalar_unrolled.cu",
                  "unrolled the element loop by two so each thread has two loads in flight")),
    ("plan", plan({
        "techniques": ["fast-math-intrinsics"],
        "expected_speedup": 1.03,
        "steps": [
            "Replace expf by __expf in the online update, the merge and the output pass.",
            "Keep one reciprocal of the sum per row and multiply, rather than dividing per element."],
        "why": "On M=65536,N=1024 the kernel is close to the copy floor but not at it; the exponentials "
               "are most of the remaining instructions."})),
    ("code", code("softmax_f32", "warp_fast_exp.cu",
                  "the fast exponential (__expf) everywhere and one reciprocal per row")),
    ("plan", "Plan: keep the row in registers.\n\n```json\n{techniques: ['single-pass-rows'], "
             "expected_speedup: 1.2, steps: ['hold the row in float4 registers', 'write from registers']}\n"
             "```\n"),
    ("plan", plan({
        "techniques": ["single-pass-rows"],
        "expected_speedup": 1.15,
        "steps": [
            "For rows of at most 1024 elements with N % 4 == 0, let each lane of a warp load its (at most 8) "
            "float4 chunks of the row into registers, all loads before any use.",
            "Take the lane's max, replace the registers by exp(x - max) and sum them; merge the lanes' "
            "(max, sum) with shuffles; scale the registers by exp(m_lane - max) / sum and store them.",
            "Keep the two-pass loop for all other rows."],
        "why": "The second pass re-reads every row from L2 or DRAM: 12 bytes per element instead of 8. On "
               "M=65536,N=1024 a row fits in a warp's registers, so it can be read once."})),
    ("code", code("softmax_f32", "warp_row_registers.cu",
                  "rows of up to 1024 elements held in registers: read once, written once")),
    ("plan", "```json\n{\n  \"techniques\": [\"grid-stride-persistent\"],  // fewer, longer-lived blocks\n"
             "  \"expected_speedup\": 1.05,\n  \"steps\": [\n"
             "    \"Launch min(M, 1024) blocks and let each loop over rows blockIdx.x, blockIdx.x + gridDim.x, "
             "...\",\n"
             "    \"Put a __syncthreads() after the shared-memory merge of each row, before the next row "
             "writes the arrays again.\",\n  ],\n"
             "  \"why\": \"65536 rows are 65536 short-lived blocks; a persistent grid pays the block setup "
             "once.\",\n}\n```\n"),
    ("code", code("softmax_f32", "block_persistent.cu",
                  "a persistent grid of at most 1024 blocks looping over rows")),
    ("plan", "I need the profile counters of the current kernel (dram_throughput_pct, achieved occupancy) "
             "before I can choose; the report above does not include them."),
    ("plan", "Without the profile I cannot pick a technique responsibly, so I will not write a plan."),
]

axpy = [
    ("plan", plan({
        "techniques": ["vectorize-16b"],
        "expected_speedup": 1.05,
        "steps": [
            "Read x and y and write z as float4 (16-byte accesses: the tensors are 256-byte aligned), and give "
            "each thread UNROLL float4s of x and of y (UNROLL a param in {4, 8}), all loads issued before the "
            "first store.",
            "Let the last block handle the n % 4 tail elements with scalar accesses."],
        "why": "The kernel is bandwidth-bound at every bench shape; 16-byte accesses and more bytes in flight "
               "per thread are what close the gap to the copy floor."})),
    ("code", code("axpy_f32", "vec4_unroll8.cu", "UNROLL float4s of x and y in flight per thread")),
    ("plan", plan({
        "techniques": ["cache-hints"],
        "expected_speedup": 1.03,
        "steps": [
            "Read x and y with __ldcs and write z with __stcs: every byte is touched once.",
            "Keep the float4 accesses and the unrolled loads."],
        "why": "Nothing is reused, so keeping x, y or z in L2 only costs write-back and evictions."})),
    ("code", code("axpy_f32", "vec4_streaming.cu", "streaming hints on every access")),
    ("plan", "```json\n{\"techniques\": [\"grid-stride-persistent\"], \"expected_speedup\": 1.02,\n"
             " \"steps\": [\"Launch at most 2048 blocks and walk the float4s with a grid-stride loop, two per "
             "iteration.\", \"Block 0 handles the n % 4 tail.\",],\n"
             " \"why\": \"Fewer, longer-lived blocks avoid the tail wave on 16M elements.\",}\n```\n"),
    ("code", code("axpy_f32", "vec4_persistent.cu", "a persistent grid-stride loop over float4s")),
    ("plan", plan({
        "techniques": ["ilp-loads-in-flight"],
        "expected_speedup": 1.02,
        "steps": [
            "Give each thread four elements spaced a block apart, loading all four of x and of y before any "
            "store, with plain 4-byte accesses (no alignment assumptions at all).",
            "Guard each element against n."],
        "why": "Independent loads in flight per thread hide DRAM latency without relying on alignment."})),
    ("code", code("axpy_f32", "scalar_ilp4.cu", "four independent elements per thread")),
    ("plan", plan({
        "techniques": ["vectorize-16b", "cache-hints"],
        "expected_speedup": 1.05,
        "steps": [
            "Read x and y as float4 with __ldcs and write z as float4 with __stcs.",
            "Handle the n % 4 tail in block 0."],
        "why": "The current kernel moves 4 bytes per instruction; 16-byte streaming accesses quarter the "
               "instruction count."})),
    ("code", code("axpy_f32", "scalar_grid_stride.cu", "a grid-stride loop with a fused multiply-add")),
    ("plan", "```json\n{\"techniques\": [\"grid-stride-persistent\", \"cache-hints\"], \"expected_speedup\": "
             "1.04, \"steps\": [\"walk the float4s with a grid-stride loop\" \"stream with __ldcs and "
             "__stcs\"]}\n```\n"),
    ("plan", plan({
        "techniques": ["grid-stride-persistent", "cache-hints"],
        "expected_speedup": 1.04,
        "steps": [
            "Launch at most 2048 blocks that walk the float4s with a grid-stride loop.",
            "Read x and y with __ldcs and write z with __stcs; block 0 handles the n % 4 tail."],
        "why": "A persistent grid and streaming hints together: one wave of blocks, nothing kept in L2."})),
    ("code", code("axpy_f32", "vec4_persistent_streaming.cu", "persistent grid-stride loop with streaming hints")),
]

# An imported PyTorch program (tests/fixtures/torch/quick_gelu.py, tagged pytorch: the general menu).
# Its kernels are the torch fixture replies, checked there under the emulator against the program.
quick_gelu = [
    ("plan", plan({
        "techniques": ["coalesce-accesses"],
        "expected_speedup": 2.5,
        "steps": [
            "Fuse the program's three elementwise kernels (scale, sigmoid, multiply) into one pass over x "
            "as a flat array of batch_size * dim floats: one coalesced element per thread in a grid-stride "
            "loop, out = x / (1 + exp(-beta * x)).",
            "beta is a kernel argument (the program's input 1), not a constant."],
        "why": "Eager PyTorch moves the 512 MiB tensor through DRAM several times; one pass reads x once and "
               "writes out once."})),
    ("code", code("quick_gelu", "scalar_grid_stride.cu", "one fused grid-stride pass, one element per thread")),
    ("plan", plan({
        "techniques": ["vectorize-16b", "grid-stride-persistent"],
        "expected_speedup": 1.3,
        "steps": [
            "Read x and write out as float4 (the tensors are 256-byte aligned), UNROLL float4s per thread "
            "issued before the math, UNROLL a param in {2, 4}.",
            "Finish the n % 4 tail with scalar accesses."],
        "why": "The fused kernel is bandwidth-bound; 16-byte accesses with more bytes in flight reach the "
               "copy floor."})),
    ("code", code("quick_gelu", "vec4_streaming.cu", "float4 streaming loads, UNROLL in flight, scalar tail")),
    ("plan", plan({
        "techniques": ["vectorize-16b"],
        "expected_speedup": 1.05,
        "steps": ["Drop the scalar tail: treat the tensor as whole float4s only."],
        "why": "Fewer branches in the hot loop."})),
    ("code", code("quick_gelu", "vec4_no_tail.cu", "whole float4s only")),
]

for task, replies in (("softmax_f32", softmax), ("axpy_f32", axpy), ("quick_gelu", quick_gelu)):
    out = root / f"tests/fixtures/replay/plancode_{task}.jsonl"
    with out.open("w") as f:
        for i, (purpose, text) in enumerate(replies):
            f.write(json.dumps({"schema": "kforge.llm_call/1", "provider": "openai", "model": "recorded-model",
                                "purpose": purpose, "reply": text, "input_tokens": 6000 + 10 * i,
                                "output_tokens": len(text) // 4, "cost_usd": 0.0, "latency_s": 2.0,
                                "status": "ok", "started_at": 1795000000.0 + i}) + "\n")
    plans = sum(1 for p, _ in replies if p == "plan")
    print(f"wrote {len(replies)} replies ({plans} plans, {len(replies) - plans} code) to {out}")
