// Generating the self-test candidates; see the header.
#include "evaluator/self_test.hpp"

#include <fmt/format.h>

#include "evaluator/worker/kernels/element.cuh"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr const char* k_helpers = R"(
extern "C" __global__ void kforge_selftest_zero(unsigned char* out, long long bytes)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += (long long)gridDim.x * blockDim.x)
        out[i] = 0;
}

extern "C" __global__ void kforge_selftest_copy(unsigned char* out, long long out_bytes, const unsigned char* in,
                                                long long in_bytes)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < out_bytes; i += (long long)gridDim.x * blockDim.x)
        out[i] = in[i % in_bytes];
}

extern "C" __global__ void kforge_selftest_set(unsigned char* out, long long index, long long width,
                                               unsigned long long bits)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (long long b = 0; b < width; ++b)
            out[index * width + b] = (unsigned char)(bits >> (8 * b));
}

extern "C" __global__ void kforge_selftest_skip(unsigned char* out, long long bytes, long long target_bytes)
{
    if (bytes != target_bytes)
        return;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += (long long)gridDim.x * blockDim.x)
        out[i] = 0;
}
)";

// "(M) * (N) * 4": the byte count of a tensor as a plan expression.
std::string bytes_expr(const ArgSpec& arg)
{
    std::vector<std::string> parts;
    for (const auto& dim : arg.shape)
        parts.push_back("(" + dim.text() + ")");
    parts.push_back(std::to_string(dtype_size(arg.dtype)));
    return join(parts, " * ");
}

std::string count_expr(const ArgSpec& arg)
{
    std::vector<std::string> parts;
    for (const auto& dim : arg.shape)
        parts.push_back("(" + dim.text() + ")");
    return join(parts, " * ");
}

Json i64(const std::string& expr) { return Json{{"value", expr}, {"dtype", "i64"}}; }

Json launch(const std::string& kernel, Json args)
{
    return Json{{"kernel", kernel}, {"grid", Json::array({1024, 1, 1})}, {"block", Json::array({256, 1, 1})}, {"args", args}};
}

std::string with_plan(const std::string& body, const Json& plan) { return replace_plan_block(body, plan); }

} // namespace

std::vector<SelfTestCandidate> make_self_tests(const Task& task)
{
    std::vector<SelfTestCandidate> out;
    const ArgSpec* first_out = nullptr;
    const ArgSpec* first_in = nullptr;
    for (const auto& arg : task.args) {
        if (!arg.is_tensor)
            continue;
        if (arg.intent != Intent::in && !first_out)
            first_out = &arg;
        if (arg.intent == Intent::in && !first_in)
            first_in = &arg;
    }
    // A PyTorch program is no kernel: it is checked by the worker (check_program) instead.
    if (!task.is_torch())
        out.push_back({"reference", task.reference.source, true});
    if (!first_out)
        return out;

    Json zeros = Json{{"launches", Json::array()}};
    Json copies = Json{{"launches", Json::array()}};
    for (const auto& arg : task.args) {
        if (!arg.is_tensor || arg.intent == Intent::in)
            continue;
        zeros["launches"].push_back(launch("kforge_selftest_zero", Json::array({arg.name, i64(bytes_expr(arg))})));
        if (first_in)
            copies["launches"].push_back(launch("kforge_selftest_copy", Json::array({arg.name, i64(bytes_expr(arg)),
                                                                                     first_in->name,
                                                                                     i64(bytes_expr(*first_in))})));
    }
    // The self-test kernels reuse the reference file so they compile under the same rules.
    std::string helpers = std::string(k_helpers);
    out.push_back({"zeros", with_plan(helpers, zeros), false});
    if (first_in)
        out.push_back({"copy_input", with_plan(helpers, copies), false});

    // Perturbed and skipped-shape candidates are the reference kernel with a flaw added.
    if (task.is_torch())
        return out;
    Json perturbed = task.reference.plan.json;
    uint64_t bits = kf_value_to_bits(12345.0, static_cast<int>(first_out->dtype));
    std::string middle = fmt::format("({}) / 2", count_expr(*first_out));
    perturbed["launches"].push_back(launch("kforge_selftest_set",
                                           Json::array({first_out->name, i64(middle),
                                                        i64(std::to_string(dtype_size(first_out->dtype))),
                                                        Json{{"value", std::to_string(bits)}, {"dtype", "u64"}}})));
    out.push_back({"perturbed", with_plan(task.reference.source + helpers, perturbed), false});

    // Zero the first output on the test shape where it is largest.
    int64_t target = 0;
    for (const auto& shape : task.tests)
        target = std::max(target, task.element_count(*first_out, shape) * static_cast<int64_t>(dtype_size(first_out->dtype)));
    Json skipped = task.reference.plan.json;
    skipped["launches"].push_back(launch("kforge_selftest_skip", Json::array({first_out->name, i64(bytes_expr(*first_out)),
                                                                              i64(std::to_string(target))})));
    out.push_back({"skipped_shape", with_plan(task.reference.source + helpers, skipped), false});
    return out;
}

} // namespace kforge
