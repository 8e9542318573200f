// Shared by the fuzz targets (fuzz/README.md): the fuzzer's bytes as text, and the task the plan
// and spec targets check against, loaded once from the source tree's tasks/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/task.hpp"

namespace kforge::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size)
{
    return {reinterpret_cast<const char*>(data), size};
}

// tasks/softmax_f32.json of the tree the target was built from.
const Task& softmax_task();
// The folder of the bundled tasks (a spec's kernel files are read relative to it).
std::string tasks_dir();
// The folder of the PyTorch fixture programs (tests/fixtures/torch), for specs made of a program.
std::string torch_fixtures_dir();

} // namespace kforge::fuzz
