"""Whether a model can be captured here, asked before any real tensor is made.

Extract runs the model on the capture device more than once (the capture, a recording that keeps
every region's live-ins, a timing run on a GPU), so a model too large for the machine would grow
until the allocator or the kernel's OOM killer ends it, minutes later and with the host thrashing.
Instead the model is first captured on the meta device (shapes only, nothing allocated) and what the
real capture will hold is added up: the parameters and buffers twice (the model and the copies the
capture runs on), the inputs, every region live-in the recording keeps, and the largest set of
activations alive at once along the forward. That is compared with the memory free where the
capture runs (the GPU's free memory, or the host's available memory within its cgroup's limit), less
a margin; a model that does not fit is refused with the figures and the way out (--sizes).
"""
import os

import torch

# Of the free memory, the share a capture may plan to fill (the rest is for the allocator's
# fragmentation, torch's own workspace and the other runs a machine carries).
USABLE = 0.8


class TooLarge(Exception):
    pass


def _bytes(node):
    meta = node.meta.get("kforge_meta") if hasattr(node, "meta") else None
    if not meta:
        return 0
    shape, dtype, _ = meta
    count = 1
    for d in shape:
        count *= d
    return count * torch.empty((), dtype=dtype).element_size()


def peak_activation_bytes(captured):
    """The largest total of activations alive at once, walking the graph in order (a value lives
    from its node to its last reader; views and tuple access allocate nothing)."""
    nodes = list(captured.gm.graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    last_use = {n: max((order[u] for u in n.users), default=order[n]) for n in nodes}
    alive, peak, frees = 0, 0, {}
    for i, node in enumerate(nodes):
        if node.op != "call_function":
            continue
        size = 0 if _is_view(node) else _bytes(node)
        alive += size
        frees.setdefault(last_use[node], []).append(size)
        peak = max(peak, alive)
        alive -= sum(frees.pop(i, []))
    return peak


def _is_view(node):
    from .regions import VIEWS, op_name
    import operator
    return node.target is operator.getitem or op_name(node) in VIEWS


def available_bytes(device):
    """(bytes free where the capture runs, what that is) or (None, why) when it cannot be told."""
    if str(device).startswith("cuda"):
        free, _ = torch.cuda.mem_get_info()
        return free, "free on the GPU"
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f if line.split()[1:2]}
        free = info["MemAvailable"]
    except (OSError, KeyError, ValueError, IndexError):
        return None, "/proc/meminfo does not say"
    try:  # cgroup v2: the limit a container sets, less what it already uses
        with open("/sys/fs/cgroup/memory.max", encoding="utf-8") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current", encoding="utf-8") as f:
            used = int(f.read().strip())
        if limit != "max":
            free = min(free, int(limit) - used)
    except (OSError, ValueError):
        pass
    return free, "available on this host"


def needed_bytes(captured, state, inputs, keep_nodes):
    params = sum(t.numel() * t.element_size() for t in state)
    given = sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor))
    kept = sum(_bytes(n) for n in keep_nodes)
    return {"parameters": 2 * params, "inputs": given, "kept live-ins": kept,
            "activations at the peak": peak_activation_bytes(captured)}


def _gib(n):
    return f"{n / 2**30:.2f} GiB"


def check_capture_memory(problem_file, sizes, device, log):
    """Refuses (TooLarge) a model whose capture on `device` would not fit; logs the estimate."""
    from .capture import record
    from .regions import partition
    from .sizes import capture_point
    if os.environ.get("KFORGE_MODEL_SKIP_MEMORY_CHECK") == "1":
        return
    try:
        _, _, inputs, captured, state = capture_point(problem_file, sizes, "meta")
        record(captured, state + inputs)
    except Exception as e:  # an operator without a meta kernel: the real capture will tell
        log(f"could not estimate the capture's memory on the meta device ({type(e).__name__}); capturing anyway")
        return
    part = partition(captured)
    parts = needed_bytes(captured, state, inputs, {n for r in part.regions for n in r.inputs})
    need = sum(parts.values())
    free, where = available_bytes(device)
    if free is None:
        log(f"the capture needs about {_gib(need)}; how much memory is free here is unknown ({where})")
        return
    log(f"the capture needs about {_gib(need)} of {_gib(free)} {where}")
    if need > USABLE * free:
        detail = ", ".join(f"{k} {_gib(v)}" for k, v in parts.items())
        raise TooLarge(f"the model needs about {_gib(need)} to be captured at these sizes ({detail}), more than "
                       f"{int(USABLE * 100)}% of the {_gib(free)} {where}: cut it at smaller sizes with --sizes "
                       "(e.g. --sizes batch_size=1,seq_len=128), which keep its structure")
