// Which GPUs a session uses (DESIGN.md §3: one GPU worker per GPU).
//
// The controller never initialises CUDA, so it asks a GPU worker for the list of devices the host
// shows (worker op "devices"), then applies --gpus to it: all of them (the default), the first N,
// or the listed indices. The indices are those of the list, which follows CUDA_DEVICE_ORDER=
// PCI_BUS_ID and honours an inherited CUDA_VISIBLE_DEVICES, as nvidia-smi numbers GPUs when
// nothing hides any. Timings of different GPU models are not comparable, so a selection that mixes
// models on one host is refused with the indices of each model, unless --gpus picks one.
//
// Under MPI several ranks may share a host; each drives its share of the host's selection
// (share_for_local_rank). Each chosen GPU gets its own worker, pinned by UUID, so an inherited
// CUDA_VISIBLE_DEVICES cannot send it to another device.
#pragma once

#include <string>
#include <vector>

#include "core/candidate.hpp"
#include "evaluator/gpu_selection.hpp"
#include "evaluator/worker/device_facts.hpp"

namespace kforge {

// One device as a GPU worker listed it; `index` is its position in the list.
struct VisibleGpu {
    int index = 0;
    DeviceFacts facts;
};

// Starts a `kforge __worker gpu`, asks it for the host's devices and ends it. Throws
// Error(runtime) "no NVIDIA driver/GPU found ..." when there is none, with the worker's reason.
std::vector<VisibleGpu> list_visible_gpus(const std::string& worker_executable);

// The devices `selection` names, in order. Throws Error(usage) for an index the host lacks, for N
// beyond the device count, and for a selection of several GPU models, naming each model's indices
// and `host`.
std::vector<VisibleGpu> select_gpus(const std::vector<VisibleGpu>& visible, const GpuSelection& selection,
                                    const std::string& host);

// The part of `selected` that local rank `local_rank` of `local_size` ranks on one host drives:
// every local_size-th GPU starting at its own rank, or, with fewer GPUs than ranks, GPU
// local_rank % count, shared with other ranks (which makes their timings disturb each other; the
// caller warns). One rank gets everything.
std::vector<VisibleGpu> share_for_local_rank(const std::vector<VisibleGpu>& selected, int local_rank, int local_size);

// The identity a run records for `gpu` driven by `rank` on `host`.
GpuIdentity identify_gpu(const VisibleGpu& gpu, const std::string& host, int rank);

} // namespace kforge
