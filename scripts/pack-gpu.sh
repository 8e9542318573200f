#!/usr/bin/env bash
# Packs the dev build into .gpu/ for a machine without SQLite/curl headers: stripped kforge and
# kforge_tests, plus the shared libraries kforge needs beyond glibc, libstdc++ and the CUDA toolkit.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu && mkdir -p .gpu/lib
strip -o .gpu/kforge build/dev/src/cli/kforge
strip -o .gpu/kforge_tests build/dev/tests/kforge_tests
strip -o .gpu/kforge_bench build/dev/bench/kforge_bench
for lib in $(ldd build/dev/src/cli/kforge build/dev/tests/kforge_tests | awk '{print $3}' | sort -u |
             grep -v -E 'cuda|/libc\.so|/libm\.so|libpthread|librt\.so|libdl\.so|libutil|libresolv|libstdc\+\+|libgcc_s'); do
    cp -L "$lib" .gpu/lib/
done
du -sh .gpu
