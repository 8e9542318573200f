#!/usr/bin/env bash
# Packs the dev build into .gpu/ for a machine without SQLite/curl headers: stripped kforge and
# kforge_tests, plus the shared libraries kforge needs beyond glibc, libstdc++ and the CUDA toolkit.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu && mkdir -p .gpu/lib
strip -o .gpu/kforge build/dev/src/cli/kforge
strip -o .gpu/kforge_tests build/dev/tests/kforge_tests
strip -o .gpu/kforge_bench build/dev/bench/kforge_bench
# The vendor baselines (cuBLAS, CUB, cuSPARSE) beside kforge, where the GPU worker looks for them;
# cuBLAS and cuSPARSE themselves come from the CUDA toolkit on the GPU machine.
if [ -f build/dev/src/cli/libkforge_vendor.so ]; then
    strip --strip-unneeded -o .gpu/libkforge_vendor.so build/dev/src/cli/libkforge_vendor.so
else
    echo "pack-gpu: no build/dev/src/cli/libkforge_vendor.so (no nvcc at configure?): vendor baselines will be unavailable" >&2
fi
# MPI (libkforge_mpi.so) beside kforge too; the MPI library itself must be the GPU machine's own,
# matching its mpirun, so it is not carried.
if [ -f build/dev/src/cli/libkforge_mpi.so ]; then
    strip --strip-unneeded -o .gpu/libkforge_mpi.so build/dev/src/cli/libkforge_mpi.so
else
    echo "pack-gpu: no build/dev/src/cli/libkforge_mpi.so (no MPI at configure?): kforge cannot run under mpirun" >&2
fi
for lib in $(ldd build/dev/src/cli/kforge build/dev/tests/kforge_tests | awk '{print $3}' | sort -u |
             grep -v -E 'cuda|/libc\.so|/libm\.so|libpthread|librt\.so|libdl\.so|libutil|libresolv|libstdc\+\+|libgcc_s'); do
    cp -L "$lib" .gpu/lib/
done
du -sh .gpu
