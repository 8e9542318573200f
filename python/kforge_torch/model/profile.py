"""Where a model's time goes on the GPU: each region timed alone, the whole model eager and under
torch.compile, and torch.profiler's operator table.

A region is timed as the graph of its own operators (regions.region_graph) on the activations the
model handed it, with CUDA events (median of ITERATIONS after WARMUP), so a region's time is what
its kernels cost, launch overhead included. The model's eager time is its forward's median; what
no region accounts for (the operators between regions, Python's own time) is the difference.
"""
import statistics

import torch

from .regions import region_graph

WARMUP = 3
ITERATIONS = 20


def time_forward(fn, iterations=ITERATIONS):
    """Median seconds of `fn` (CUDA events, after WARMUP calls)."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    return statistics.median(times)


def measure(captured, partition, model, inputs, state, device):
    """{"model_s", "compile_s", "regions": [seconds per region index], "operators": [...]}: needs CUDA."""
    if not str(device).startswith("cuda"):
        return None
    index_of = {n: i for i, n in enumerate(captured.placeholders())}
    safe = {n: "s" + str(i) for i, n in enumerate(captured.state_names)}
    regions = []
    with torch.no_grad():
        for region in partition.regions:
            gm = region_graph(partition, region, safe, state_as="placeholder")
            args = [n.meta["kforge_value"] for n in region.inputs]
            args += [state[index_of[n]].clone() for n in region.state]
            regions.append(time_forward(lambda: gm(*args)))
        model_s = time_forward(lambda: model(*inputs))
        compile_s = None
        try:
            compiled = torch.compile(model)
            compile_s = time_forward(lambda: compiled(*inputs))
        except Exception as e:  # a model torch.compile cannot take is timed eager only
            compile_s = None
            print(f"kforge model: torch.compile failed on the model ({type(e).__name__}: {e})")
        operators = _operator_table(model, inputs)
    return {"model_s": model_s, "compile_s": compile_s, "regions": regions, "operators": operators}


def _operator_table(model, inputs, top=15):
    from torch.profiler import ProfilerActivity, profile as run_profile
    with run_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for _ in range(5):
            model(*inputs)
        torch.cuda.synchronize()
    rows = []
    # The operators (host-side events: aten::addmm) with the device time of the kernels each launched;
    # the kernels' own events are left out, or every kernel would count twice.
    events = [e for e in prof.key_averages(group_by_input_shape=True)
              if str(getattr(e, "device_type", "CPU")).endswith("CPU")]
    if not events:
        return []
    key = "device_time_total" if hasattr(events[0], "device_time_total") else "cuda_time_total"
    total = sum(getattr(e, "self_" + key, 0) for e in events) or 1
    for e in sorted(events, key=lambda e: -getattr(e, "self_" + key, 0))[:top]:
        rows.append({"op": e.key, "calls": e.count // 5, "device_us": getattr(e, "self_" + key, 0) / 5,
                     "share": getattr(e, "self_" + key, 0) / total, "shapes": str(e.input_shapes)[:160]})
    return rows
