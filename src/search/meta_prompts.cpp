// Starting strategies and meta-prompt scores; see meta_prompts.hpp.
#include "search/meta_prompts.hpp"

#include <array>

namespace kforge {
namespace {

// Four directions a GPU performance engineer would try first, one per island.
constexpr std::array<const char*, 4> k_strategies = {
    "Minimise memory traffic first. Read every input byte once and write every output byte once, with "
    "coalesced, vectorised (16-byte) accesses; fuse passes so intermediate values stay in registers or "
    "shared memory instead of global memory. Compare the time with the roofline floor to see how much "
    "bandwidth is left on the table.",
    "Get the parallel decomposition right. Choose how work maps to threads, warps and blocks so every SM "
    "is busy for every shape (including the skinny and the huge ones); use warp shuffles and warp-level "
    "reductions instead of shared-memory round trips; avoid divergence and tail effects.",
    "Increase work per thread and instruction-level parallelism. Give each thread several independent "
    "elements, unroll loops with compile-time trip counts, keep several loads in flight, and use "
    "declared params to let kforge sweep block sizes and unroll factors. Watch registers and spills.",
    "Use the hardware's special paths. Stage tiles through shared memory with asynchronous copies "
    "(cp.async) and double buffering, use tensor cores where the arithmetic allows, and tune occupancy "
    "against per-thread resources. Keep correctness exact: fp32 tasks stay fp32.",
};

} // namespace

std::string initial_strategy(int island)
{
    return k_strategies[static_cast<size_t>(island) % k_strategies.size()];
}

double meta_prompt_score(const MetaPrompt& prompt)
{
    return (prompt.improvements + 1.0) / (prompt.uses + 2.0);
}

std::optional<int> weakest_island(const std::vector<MetaPrompt>& active, int min_uses)
{
    std::optional<int> weakest;
    double lowest = 0;
    for (const auto& prompt : active) {
        if (!prompt.active || prompt.uses < min_uses)
            continue;
        double score = meta_prompt_score(prompt);
        if (!weakest || score < lowest || (score == lowest && prompt.island < *weakest)) {
            weakest = prompt.island;
            lowest = score;
        }
    }
    return weakest;
}

Json meta_prompt_to_json(const MetaPrompt& prompt)
{
    return Json{{"id", prompt.id},
                {"island", prompt.island},
                {"text", prompt.text},
                {"generation", prompt.generation},
                {"uses", prompt.uses},
                {"improvements", prompt.improvements},
                {"active", prompt.active}};
}

MetaPrompt meta_prompt_from_json(const JsonReader& json)
{
    MetaPrompt prompt;
    prompt.id = json.get_int("id", 0);
    prompt.island = static_cast<int>(json.get_int("island", 0));
    prompt.text = json.get_string("text", "");
    prompt.generation = static_cast<int>(json.get_int("generation", 0));
    prompt.uses = static_cast<int>(json.get_int("uses", 0));
    prompt.improvements = static_cast<int>(json.get_int("improvements", 0));
    prompt.active = json.get_bool("active", true);
    return prompt;
}

} // namespace kforge
