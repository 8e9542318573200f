# Sourced by the GPU scripts: run kforge binaries built elsewhere and carried in .gpu/ (see
# scripts/pack-gpu.sh). Sets where kforge finds its data, its tests' sources, and carried libraries.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export KFORGE_HOME="$here"
export KFORGE_TEST_SOURCE_DIR="$here"
export KFORGE_TEST_BINARY="$here/.gpu/kforge"
export LD_LIBRARY_PATH="$here/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-/tmp/kforge-cache}"
export XDG_DATA_HOME="${XDG_DATA_HOME:-/tmp/kforge-data}"
[ -d /usr/local/cuda/include ] || export CUDA_HOME="$(dirname "$(dirname "$(command -v nvcc)")")"
KF="$here/.gpu/kforge"
# The GPU counts a suite bench measures: 1, 2, 4, 8 up to what nvidia-smi lists, or KF_SUITE_GPUS.
suite_gpu_counts() {
    local gpus counts="" n
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    for n in 1 2 4 8; do [ "$n" -le "${gpus:-0}" ] && counts="$counts $n"; done
    echo "${KF_SUITE_GPUS:-${counts# }}"
}
