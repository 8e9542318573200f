// The device memory a task's tensors take at each of its shapes.
//
// The GPU worker keeps every tensor of the task in an allocation of its own (inputs, outputs, and
// beside them the reference's expected outputs, guard bands, scratch), so the sum of the tensors'
// bytes at a shape is a lower bound of what the shape needs on the device: a shape over a GPU's
// memory cannot run there at all. `kforge task import` warns when a shape is over the largest GPU
// memory kforge knows (k_largest_gpu_memory_bytes, util/limits.hpp); `kforge task check` refuses
// one over the memory of the GPUs it checks on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/task.hpp"

namespace kforge {

struct TensorBytes {
    std::string name;            // the task argument
    std::string dims;            // at this shape: "[1000000000000] f32"
    uint64_t bytes = 0;          // saturates at UINT64_MAX
};

struct ShapeMemory {
    std::string list;            // "tests", "bench", "held_out", "stress"
    std::string label;           // the shape's label
    uint64_t bytes = 0;          // every tensor's bytes, summed (saturating)
    std::vector<TensorBytes> tensors; // largest first

    // "bench shape n=1000000000000: its tensors need 7.3 TiB (8000000000000 bytes): x [1000000000000]
    // f32 3.6 TiB, out ..." naming at most `max_tensors` tensors, the largest.
    std::string describe(size_t max_tensors = 3) const;
};

// The tensors' bytes at every shape of every list of `task` (a loaded task: every shape passed
// check_shape, so every dimension evaluates).
std::vector<ShapeMemory> task_memory(const Task& task);

// The shapes of `task` whose tensors need more than `limit` bytes, the largest first.
std::vector<ShapeMemory> shapes_over_memory(const Task& task, uint64_t limit);

} // namespace kforge
