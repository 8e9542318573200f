// The bytes of a task's tensors per shape; see task/memory.hpp.
#include "core/task/memory.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "util/text.hpp"

namespace kforge {
namespace {

uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

TensorBytes tensor_bytes(const Task& task, const ArgSpec& arg, const Shape& shape)
{
    ExprScope scope = task.scope_for(shape);
    std::vector<std::string> dims;
    uint64_t bytes = dtype_size(arg.dtype);
    for (const auto& dim : arg.shape) {
        int64_t d = dim.eval_int(scope);
        dims.push_back(std::to_string(d));
        if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(std::max<int64_t>(d, 0)), &bytes))
            bytes = UINT64_MAX;
    }
    return {arg.name, fmt::format("[{}] {}", join(dims, ", "), dtype_name(arg.dtype)), bytes};
}

std::string bytes_text(uint64_t bytes)
{
    return bytes == UINT64_MAX ? "more than 2^64 bytes"
                               : fmt::format("{} ({} bytes)", format_bytes(static_cast<double>(bytes)), bytes);
}

} // namespace

std::string ShapeMemory::describe(size_t max_tensors) const
{
    std::vector<std::string> parts;
    for (size_t i = 0; i < tensors.size() && i < max_tensors; ++i)
        parts.push_back(fmt::format("{} {} {}", tensors[i].name, tensors[i].dims,
                                    format_bytes(static_cast<double>(tensors[i].bytes))));
    if (tensors.size() > max_tensors)
        parts.push_back(fmt::format("and {} more", tensors.size() - max_tensors));
    return fmt::format("{} shape {}: its tensors need {}: {}", list, label, bytes_text(bytes), join(parts, ", "));
}

std::vector<ShapeMemory> task_memory(const Task& task)
{
    std::vector<ShapeMemory> out;
    auto add = [&](const char* list, const std::vector<Shape>& shapes) {
        for (const auto& shape : shapes) {
            ShapeMemory memory{list, shape.label, 0, {}};
            for (const auto& arg : task.args)
                if (arg.is_tensor) {
                    memory.tensors.push_back(tensor_bytes(task, arg, shape));
                    memory.bytes = saturating_add(memory.bytes, memory.tensors.back().bytes);
                }
            std::stable_sort(memory.tensors.begin(), memory.tensors.end(),
                             [](const TensorBytes& a, const TensorBytes& b) { return a.bytes > b.bytes; });
            out.push_back(std::move(memory));
        }
    };
    add("tests", task.tests);
    add("bench", task.bench);
    add("held_out", task.held_out);
    add("stress", task.stress);
    return out;
}

std::vector<ShapeMemory> shapes_over_memory(const Task& task, uint64_t limit)
{
    std::vector<ShapeMemory> over;
    for (auto& memory : task_memory(task))
        if (memory.bytes > limit)
            over.push_back(std::move(memory));
    std::stable_sort(over.begin(), over.end(),
                     [](const ShapeMemory& a, const ShapeMemory& b) { return a.bytes > b.bytes; });
    return over;
}

} // namespace kforge
