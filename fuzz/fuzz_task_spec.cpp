// Fuzz target: the task-spec reader on any text, with kernel files resolved in the bundled tasks
// folder (so references to the real kernels load). Every refusal must be an Error (bad input or an
// interrupt), never a crash, a hang or a read outside the folder.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace kforge;
    static const std::string folder = fuzz::tasks_dir();
    try {
        Task task = parse_task(std::string(fuzz::as_text(data, size)), "fuzz.json", folder);
        for (const auto* shapes : {&task.tests, &task.bench})
            for (const auto& shape : *shapes)
                (void)check_shape(task, shape);
    } catch (const Error&) {
    }
    return 0;
}
