#!/usr/bin/env python3
"""Writes tests/fixtures/torch/replies/<problem>.jsonl: recorded "model replies" for the torch fixtures.

The replies and what each must get are listed in tests/fixtures/torch/replies/expected.json; the
kernels are the .cu files in replies/<problem>/. Each reply is what a model answers to kforge's
prompt (prompts/reply_whole_file.txt): a `CHANGE:` line, then the whole source in one ```cuda block
(a reply without code carries its words instead). The replay provider (`--model replay:FILE`)
serves them in order, so `kforge optimize` on an imported problem runs the language-model path
(prompt, reply parsing, archive) with the real evaluator and no network.

usage: scripts/replay/torch.py [--check] [REPLIES_DIR]
  --check       fail when a .jsonl is not up to date
  REPLIES_DIR   another folder of the same form (default tests/fixtures/torch/replies; the level-2
                problems' replies, library steps included, are in tests/fixtures/level2/replies)
"""
import json
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parents[2]  # scripts/replay/ -> the repository
replies_dir = root / "tests/fixtures/torch/replies"


def reply_text(problem, reply):
    if reply["file"] is None:
        return reply["text"]
    source = (replies_dir / problem / reply["file"]).read_text()
    return f"{reply['change']}\n\n```cuda\n{source}```\n"


def records(problem, spec):
    lines = []
    for i, reply in enumerate(spec["replies"]):
        text = reply_text(problem, reply)
        lines.append(json.dumps({"schema": "kforge.llm_call/1", "provider": "openai", "model": "recorded-model",
                                 "purpose": "propose", "reply": text, "input_tokens": 2400 + 10 * i,
                                 "output_tokens": len(text) // 4, "cost_usd": 0.0, "latency_s": 2.0,
                                 "status": "ok", "started_at": 1795000000.0 + i}) + "\n")
    return "".join(lines)


def main():
    global replies_dir
    check = "--check" in sys.argv[1:]
    folders = [a for a in sys.argv[1:] if not a.startswith("--")]
    if folders:
        replies_dir = pathlib.Path(folders[0]).resolve()
    expected = json.loads((replies_dir / "expected.json").read_text())
    stale = []
    for problem, spec in expected["problems"].items():
        for reply in spec["replies"]:
            if reply["file"] is not None and not (replies_dir / problem / reply["file"]).is_file():
                sys.exit(f"{problem}: no file {reply['file']} in {replies_dir / problem}")
        if spec["best"] not in [r["file"] for r in spec["replies"] if r["verdict"] == "correct"]:
            sys.exit(f"{problem}: best {spec['best']} is not one of its correct replies")
        text = records(problem, spec)
        out = replies_dir / f"{problem}.jsonl"
        if check:
            if not out.is_file() or out.read_text() != text:
                stale.append(str(out))
            continue
        out.write_text(text)
        print(f"wrote {len(spec['replies'])} replies to {out.relative_to(root)}")
    if stale:
        sys.exit("out of date (run scripts/replay/torch.py): " + ", ".join(stale))


if __name__ == "__main__":
    main()
