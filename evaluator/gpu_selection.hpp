// What --gpus asks for: all of a host's GPUs, the first N, or a list of indices. Part of the
// evaluator's interface (its options name it); evaluator/gpu/devices.hpp applies it to the GPUs a
// host has.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kforge {

// What --gpus asked for.
struct GpuSelection {
    enum class Kind { all, first, indices };
    Kind kind = Kind::all;
    size_t first = 0;              // Kind::first: this many, from index 0
    std::vector<int> indices;      // Kind::indices: these, in this order, no repeats
    std::string text = "all";      // as given, for messages and the run config
};

// "all", "N" (N >= 1: the first N) or a comma-separated list of indices ("0,2,5"; "2," is the list
// of device 2 alone). Throws Error(usage) naming the flag and what was expected.
GpuSelection parse_gpu_selection(const std::string& text);

} // namespace kforge
