// parse_gpu_selection(): --gpus as a user writes it; see gpu_selection.hpp.
#include "evaluator/gpu_selection.hpp"

#include <algorithm>

#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

int parse_index(const std::string& text, const std::string& whole)
{
    std::string body = trim(text);
    bool digits = !body.empty() && body.size() <= 4 &&
                  std::all_of(body.begin(), body.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits)
        fail(ErrorKind::usage, "--gpus '{}': expected all, a count such as 4, or device indices such as 0,2,5 (one device: 2,)", whole);
    return std::stoi(body);
}

} // namespace

GpuSelection parse_gpu_selection(const std::string& text)
{
    GpuSelection selection;
    selection.text = trim(text);
    if (selection.text.empty() || selection.text == "all")
        return selection;
    if (selection.text.find(',') == std::string::npos) {
        int count = parse_index(selection.text, text);
        if (count < 1)
            fail(ErrorKind::usage, "--gpus '{}': a count must be at least 1 (or use all)", text);
        selection.kind = GpuSelection::Kind::first;
        selection.first = static_cast<size_t>(count);
        return selection;
    }
    selection.kind = GpuSelection::Kind::indices;
    // A trailing comma makes a list of one ("2," is device 2, where "2" is the first two devices).
    std::string list = selection.text;
    if (list.back() == ',' && list.size() > 1)
        list.pop_back();
    for (const auto& part : split(list, ',')) {
        int index = parse_index(part, text);
        if (std::find(selection.indices.begin(), selection.indices.end(), index) != selection.indices.end())
            fail(ErrorKind::usage, "--gpus '{}': device {} is listed twice", text, index);
        selection.indices.push_back(index);
    }
    return selection;
}

} // namespace kforge
