#!/usr/bin/env python3
"""What a replaced region's call costs beyond its kernels, in an assembled model folder.

A region that kforge replaced is called as its exported C++ operator (torch.ops.kforge.<problem>)
from the assembled model's staged fx graph. At a tiny size the region's kernels take a few
microseconds, so a forward made of many such calls is bound by what each call costs the host. This
measures it for one replaced region of a folder `kforge model assemble` wrote:

- kernel: the GPU time of one call's kernels (torch.profiler, the mean over the timed calls);
- per call: the wall time of N back-to-back calls through the staged graph (one call node, as the
  assembled model has it), the host waiting once at the end; the same under torch.compile; and the
  operator called directly from Python;
- for scale, the same wall time for torch's own eager operators of the region (what the model ran
  there before).

The cost beyond the kernels is the per-call time minus the kernel time (when the host is the
bottleneck the GPU idles between calls; when it is not, the difference is ~0).

    python3 bench/model_call_cost.py DIR PROBLEM [--sizes batch_size=1,seq_len=1] [--calls 5000] [--json OUT]
"""
import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def per_call(fn, calls):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls


def kernel_time(fn, calls=200):
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total = sum(e.time_range.end - e.time_range.start for e in prof.events()
                if str(getattr(e, "device_type", "")).endswith("CUDA"))
    return total / calls / 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("problem")
    parser.add_argument("--sizes", default="batch_size=1,seq_len=1")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--json")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
    sys.path.insert(0, os.path.abspath(args.folder))
    from kforge_runtime.runtime import ExportedOperator  # the runtime the assembled model runs
    from kforge_torch.problem import ProblemFile

    document = json.load(open(os.path.join(args.folder, "model.json"), encoding="utf-8"))
    row = next(r for r in document["regions"] if r["id"] == args.problem)
    sizes = {k: int(v) for k, v in (item.split("=") for item in args.sizes.split(",") if item)}
    program = ProblemFile(os.path.join(args.folder, row["problem"])).load(sizes)
    model = program.build_model(0, "cuda")
    inputs = program.make_inputs(1, "cuda")
    state = [getattr(model, attr) for attr in row["attrs"]]
    exported = ExportedOperator(os.path.join(args.folder, "kernels", args.problem + "_load.py"), row["attrs"])
    with torch.no_grad():
        exported.learn(inputs, state)
        if not exported.order:
            sys.exit(f"{args.problem}: the operator's argument order could not be learnt")
        operands = [inputs[k] if kind == "input" else state[k] if kind == "state" else k
                    for kind, k in exported.order]

        graph = torch.fx.Graph()
        placeholders = [graph.placeholder(f"a{i}") if isinstance(a, torch.Tensor) else a for i, a in enumerate(operands)]
        graph.output(graph.call_function(exported.overload, tuple(placeholders)))
        staged = torch.fx.GraphModule(torch.nn.Module(), graph)
        tensors = [a for a in operands if isinstance(a, torch.Tensor)]
        compiled = torch.compile(staged)

        ways = {
            "operator, from Python": lambda: exported.overload(*operands),
            "staged graph (as assembled)": lambda: staged(*tensors),
            "staged graph under torch.compile": lambda: compiled(*tensors),
            "torch eager (the region's own operators)": lambda: model(*inputs),
        }
        kernels = {k: kernel_time(fn) for k, fn in ways.items()}
        calls = {k: per_call(fn, args.calls) for k, fn in ways.items()}
    rows = [{"way": k, "per_call_us": calls[k] * 1e6, "kernels_us": kernels[k] * 1e6,
             "beyond_kernels_us": (calls[k] - kernels[k]) * 1e6} for k in ways]
    result = {"problem": args.problem, "sizes": sizes, "calls": args.calls, "device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "rows": rows}
    print(f"{args.problem} at {args.sizes}, {args.calls} calls back to back ({result['device']}, torch {torch.__version__})")
    print(f"  {'way':44s} {'per call':>10s} {'kernels':>10s} {'beyond':>10s}")
    for r in rows:
        print(f"  {r['way']:44s} {r['per_call_us']:8.2f}us {r['kernels_us']:8.2f}us {r['beyond_kernels_us']:8.2f}us")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
