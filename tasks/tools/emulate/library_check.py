#!/usr/bin/env python3
"""Checks the emulator's library steps against PyTorch: runs library_check (built as
tasks/tools/README.md says) into DIR, recomputes each step it wrote with torch in fp64 (matmul with
alpha, beta * C, bias and the epilogue; F.conv*d / F.conv_transpose*d) and compares, element by
element, within one unit in the last place of the output's dtype (the emulator rounds its fp64 sum
once; bf16 rounds through fp32, so up to one ulp there).

usage: library_check.py [--binary /tmp/library_check] DIR
Exit status 0 when every step matches.
"""
import argparse
import pathlib
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

ulp = {"f32": 2.0**-23, "bf16": 2.0**-8, "f16": 2.0**-10}


def matmul_reference(load, f):
    m, n, k, batch, ta, tb = map(int, f[:6])
    alpha, beta = float(f[6]), float(f[7])
    has_c, has_bias, epilogue, out = int(f[8]), int(f[9]), f[10], f[12]
    sa, sb, sc, sd = map(int, f[13:17])
    a, b, d = load("a"), load("b"), load("d")
    worst = 0.0
    for i in range(batch):
        A = a[i * sa:i * sa + m * k]
        A = A.view(k, m).T if ta else A.view(m, k)
        B = b[i * sb:i * sb + k * n]
        B = B.view(n, k).T if tb else B.view(k, n)
        ref = alpha * (A @ B)
        if has_c and beta != 0:
            ref = ref + beta * load("c")[i * sc:i * sc + m * n].view(m, n)
        if has_bias:
            ref = ref + load("bias")
        if epilogue == "relu":
            ref = ref.clamp(min=0)
        elif epilogue == "gelu_tanh":
            ref = F.gelu(ref, approximate="tanh")
        worst = max(worst, error(d[i * sd:i * sd + m * n].view(m, n), ref, out))
    return worst


def conv_reference(load, f):
    dims, n, c, k, groups, transposed, channels_last = map(int, f[:7])
    dtype = f[7]
    values = list(map(int, f[8:]))
    size, kernel, stride, padding, dilation, output_padding = [values[j * dims:(j + 1) * dims] for j in range(6)]

    def nchw(t, channels, spatial):
        if channels_last:
            return t.view(n, *spatial, channels).permute(0, dims + 1, *range(1, dims + 1))
        return t.view(n, channels, *spatial)

    x = nchw(load("x"), c, size)
    if transposed:
        w = load("w").view(c, k // groups, *kernel)
        ref = [F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][dims - 1](
            x, w, stride=stride, padding=padding, output_padding=output_padding, groups=groups, dilation=dilation)
    else:
        w = load("w").view(k, c // groups, *kernel)
        ref = [F.conv1d, F.conv2d, F.conv3d][dims - 1](x, w, stride=stride, padding=padding, dilation=dilation,
                                                       groups=groups)
    return error(nchw(load("y"), k, list(ref.shape[2:])), ref, dtype)


def error(got, ref, dtype):
    """The largest |got - ref| in units of the last place of ref in `dtype` (NaN: infinite)."""
    if not torch.isfinite(got).all():
        return float("inf")
    floor = 1e-12 * max(ref.abs().max().item(), 1e-300)  # values that cancel to ~0 (gelu far below 0)
    return ((got - ref).abs() / (ulp[dtype] * ref.abs() + floor)).max().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="/tmp/library_check")
    parser.add_argument("dir")
    args = parser.parse_args()
    folder = pathlib.Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([args.binary, str(folder)], check=True)
    failures = 0
    for line in (folder / "manifest.txt").read_text().splitlines():
        case, op, *fields = line.split()

        def load(role):
            return torch.from_numpy(np.fromfile(folder / f"{case}_{role}.bin", dtype=np.float64))

        worst = matmul_reference(load, fields) if op == "matmul" else conv_reference(load, fields)
        ok = worst <= 1.0
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {case} {op:<6} {' '.join(fields):<60} worst {worst:.3g} ulp")
    print("every step matches PyTorch" if not failures else f"{failures} step(s) differ from PyTorch")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
