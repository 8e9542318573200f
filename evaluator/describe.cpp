// Descriptor extraction; see the header for the axes and bins.
#include "evaluator/describe.hpp"

#include <regex>

#include "core/source.hpp"

namespace kforge {
namespace {

bool contains(const std::string& code, const std::regex& pattern) { return std::regex_search(code, pattern); }

std::string memory_strategy(const std::string& code, const ResolvedPlan& plan)
{
    static const std::regex async(R"(cp\.async|memcpy_async|__pipeline_memcpy_async|cp\.async\.bulk|cuda::pipeline)");
    static const std::regex shared(R"(__shared__)");
    static const std::regex vector(R"(\b(float4|float2|int4|int2|uint4|uint2|double2|longlong2|half2|__half2|)"
                                   R"(__nv_bfloat162)\b|ld\.global(\.[a-z]+)*\.v[24]|st\.global(\.[a-z]+)*\.v[24])");
    if (contains(code, async))
        return "async";
    bool dynamic_smem = false;
    for (const auto& launch : plan.launches)
        dynamic_smem = dynamic_smem || launch.smem > 0;
    if (contains(code, shared) || dynamic_smem)
        return "smem";
    if (contains(code, vector))
        return "vector";
    return "plain";
}

std::string compute_strategy(const std::string& code)
{
    static const std::regex wgmma(R"(wgmma)");
    static const std::regex mma(R"(mma\.sync|wmma::|mma_sync|\bmma\b)");
    static const std::regex shuffle(R"(__shfl|__reduce_(add|min|max|and|or|xor)_sync|redux\.sync|shfl\.sync)");
    if (contains(code, wgmma))
        return "wgmma";
    if (contains(code, mma))
        return "mma";
    if (contains(code, shuffle))
        return "shuffle";
    return "scalar";
}

std::string work_bin(const DescriptorInputs& inputs)
{
    double threads = 0;
    for (const auto& launch : inputs.plan.launches) {
        double t = 1.0 * launch.grid[0] * launch.grid[1] * launch.grid[2] * launch.block[0] * launch.block[1] *
                   launch.block[2];
        threads = std::max(threads, t);
    }
    double per_thread = threads > 0 ? static_cast<double>(inputs.output_elements) / threads : 0;
    if (per_thread <= 1.0)
        return "w1";
    if (per_thread <= 4.0)
        return "w4";
    if (per_thread <= 16.0)
        return "w16";
    return "w64";
}

std::string occupancy_bin(double occupancy)
{
    if (occupancy <= 0.25)
        return "o25";
    if (occupancy <= 0.5)
        return "o50";
    if (occupancy <= 0.75)
        return "o75";
    return "o100";
}

} // namespace

const std::vector<std::pair<std::string, std::vector<std::string>>>& descriptor_axes()
{
    static const std::vector<std::pair<std::string, std::vector<std::string>>> k_axes = {
        {"memory", {"plain", "vector", "smem", "async"}},
        {"compute", {"scalar", "shuffle", "mma", "wgmma"}},
        {"work", {"w1", "w4", "w16", "w64"}},
        {"occupancy", {"o25", "o50", "o75", "o100"}},
    };
    return k_axes;
}

Json describe_candidate(const DescriptorInputs& inputs)
{
    std::string code = strip_comments(inputs.source);
    return Json{{"memory", memory_strategy(code, inputs.plan)},
                {"compute", compute_strategy(code)},
                {"work", work_bin(inputs)},
                {"occupancy", occupancy_bin(inputs.occupancy)}};
}

std::string descriptor_cell(const Json& descriptors)
{
    std::string cell;
    for (const auto& [axis, bins] : descriptor_axes()) {
        if (!cell.empty())
            cell += '/';
        cell += descriptors.value(axis, "?");
    }
    return cell;
}

} // namespace kforge
