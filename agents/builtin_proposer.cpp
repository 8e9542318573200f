// The offline proposer; see builtin_proposer.hpp.
#include "agents/builtin_proposer.hpp"

#include <chrono>

#include <fmt/format.h>

#include "agents/model_spec.hpp"
#include "agents/plan_variation.hpp"
#include "core/source.hpp"
#include "util/hash.hpp"

namespace kforge {
namespace {

struct Base {
    std::string label; // "the parent" or "seed row_softmax.cu"
    const std::string* source;
    Plan plan;
};

// The plan a source runs with: its own block, else the task's default plan. nullopt when its block
// is malformed.
std::optional<Plan> plan_of(const Task& task, const std::string& source)
{
    try {
        if (auto json = extract_plan_json(source))
            return parse_plan(*json, "plan");
        return task.default_plan;
    } catch (const PlanError&) {
        return std::nullopt;
    }
}

std::string dedup_key(const std::string& source, const std::optional<Plan>& plan)
{
    Hasher hasher;
    hasher.add(normalized_source_hash(source));
    hasher.add(plan ? plan->json.dump(-1, ' ', false, Json::error_handler_t::replace) : std::string("-"));
    return hasher.hex();
}

} // namespace

BuiltinProposer::BuiltinProposer(CallRecorder recorder, BuiltinOptions options)
    : m_recorder(std::move(recorder)), m_options(options)
{
}

void BuiltinProposer::remember(const std::string& source)
{
    std::optional<Plan> plan;
    try {
        if (auto json = extract_plan_json(source))
            plan = parse_plan(*json, "plan");
    } catch (const PlanError&) {
    }
    std::lock_guard lock(m_mutex);
    m_seen.insert(dedup_key(source, plan));
}

Proposal BuiltinProposer::propose(const ProposalContext& context, Rng& rng)
{
    using namespace std::chrono;
    auto start = steady_clock::now();
    double started_at = duration<double>(system_clock::now().time_since_epoch()).count();
    const Task& task = context.task;
    Proposal proposal;
    proposal.origin = Origin::builtin;

    std::optional<Base> parent_base;
    if (context.parent)
        if (auto plan = plan_of(task, context.parent->source); plan && !plan->params.empty())
            parent_base = Base{"the parent", &context.parent->source, *plan};
    std::vector<Base> seeds;
    for (const auto& seed : task.seeds)
        if (!seed.plan.params.empty())
            seeds.push_back({"seed " + seed.path.filename().string(), &seed.source, seed.plan});

    std::string base_label;
    std::string variation;
    if (!parent_base && seeds.empty()) {
        proposal.failure = {VerdictKind::no_code,
                            context.parent ? "The builtin proposer can only vary declared params, and neither the parent "
                                             "nor any seed kernel of the task declares any. Use --model with a "
                                             "language model, or add seed kernels with params to the task."
                                           : "The builtin proposer can only vary the task's seed kernels, and the task "
                                             "has no seed kernel that declares params. Use --model with a language "
                                             "model, or add seed kernels with params to the task."};
    } else {
        for (int attempt = 0; attempt < m_options.attempts && !proposal.source; ++attempt) {
            bool from_seed = !parent_base || (!seeds.empty() && rng.uniform() < m_options.seed_probability);
            const Base& base = from_seed ? seeds[rng.below(seeds.size())] : *parent_base;
            auto variant = vary_plan_params(task, base.plan, find_kernel_names(*base.source), rng);
            if (!variant)
                continue;
            std::string source = replace_plan_block(*base.source, variant->plan.json);
            std::string key = dedup_key(source, variant->plan);
            {
                std::lock_guard lock(m_mutex);
                if (!m_seen.insert(key).second)
                    continue;
            }
            proposal.outcome = ProposalOutcome::source;
            proposal.source = std::move(source);
            base_label = base.label;
            variation = variant->description;
            proposal.note = fmt::format("builtin: {} (from {})", variation, base_label);
        }
        if (!proposal.source)
            proposal.failure = {VerdictKind::no_code,
                                fmt::format("The builtin proposer found no new param variant in {} draws: the param "
                                            "space of these kernels is exhausted or blocked by the task's limits.",
                                            m_options.attempts)};
    }

    LlmCallRecord record;
    record.provider = k_provider_builtin;
    record.model = k_provider_builtin;
    record.purpose = context.round == RoundKind::repair ? CallPurpose::repair : CallPurpose::propose;
    record.request = Json{{"base", base_label}, {"variation", variation}};
    record.reply = proposal.source ? proposal.note : "";
    record.started_at = started_at;
    record.latency_s = duration<double>(steady_clock::now() - start).count();
    if (m_recorder)
        m_recorder(record);
    proposal.calls.push_back(std::move(record));
    return proposal;
}

} // namespace kforge
