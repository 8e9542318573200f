"""`kforge model`: a whole model cut into regions, each a KernelBench-form problem, and put back.

capture.py and regions.py depend on torch alone: they are copied beside an assembled model
(MODEL_kforge.py), which captures and cuts the user's model again when it is built. The rest runs
only inside kforge: extract.py (regions as problem files), sizes.py (which dims follow the model's
size variables), profile.py (where the time goes), assemble.py (the model with kforge's kernels).
"""
