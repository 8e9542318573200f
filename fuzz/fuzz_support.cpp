// The fuzz targets' shared task (see fuzz_support.hpp).
#include "fuzz_support.hpp"

#ifndef KFORGE_SOURCE_DIR
#error "fuzz/CMakeLists.txt defines KFORGE_SOURCE_DIR"
#endif

namespace kforge::fuzz {

std::string tasks_dir() { return std::string(KFORGE_SOURCE_DIR) + "/tasks"; }

std::string torch_fixtures_dir() { return std::string(KFORGE_SOURCE_DIR) + "/tests/fixtures/torch"; }

const Task& softmax_task()
{
    static const Task task = load_task(tasks_dir() + "/softmax_f32.json");
    return task;
}

} // namespace kforge::fuzz
