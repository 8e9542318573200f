"""kforge's PyTorch side: KernelBench-format problems as kforge tasks (docs/torch-tasks.md).

- `importer`: `python3 -m kforge_torch.importer PROBLEM.py` prints the facts a spec is built from.
- `reference`: `python3 -m kforge_torch.reference`, the reference process of a GPU worker.
- `selfcheck`: `python3 -m kforge_torch.selfcheck FIXTURES_DIR`, the CPU check of both.
"""
