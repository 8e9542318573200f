// Prompt views of archived candidates and of the GPU; see views.hpp.
#include "search/views.hpp"

#include <algorithm>
#include <cmath>

#include "core/plan.hpp"
#include "core/source.hpp"
#include "util/hash.hpp"

namespace kforge {
namespace {

// Metrics keys the search adds for its own bookkeeping; they mean nothing to a model.
// `param_points` is not private, but the prompt gives it a line of its own (CandidateView::sweep_note).
constexpr const char* k_private_metrics[] = {"screen_fitness", "suspicious_fitness", "held_out", "sweep", "runs",
                                             "accepted", "param_points"};

double number_at(const Json& object, const char* key)
{
    return object.is_object() && object.contains(key) && object[key].is_number() ? object[key].get<double>() : 0;
}

const Measurement* find_measurement(const std::vector<Measurement>& list, const std::string& subject,
                                    const std::string& shape, bool confirmed_only)
{
    const Measurement* found = nullptr;
    for (const auto& m : list)
        if (m.subject == subject && m.shape_set == "bench" && m.shape_label == shape && m.median_ns > 0 &&
            (!confirmed_only || m.confirmed))
            found = &m;
    return found;
}

} // namespace

std::string candidate_hash(const std::string& source)
{
    Hasher hasher;
    hasher.add(normalized_source_hash(source));
    try {
        std::optional<Json> plan = extract_plan_json(source);
        hasher.add(plan ? plan->dump(-1, ' ', false, Json::error_handler_t::replace) : std::string("-"));
    } catch (const std::exception&) {
        hasher.add(hash_hex(source)); // a malformed plan block: the exact text decides
    }
    return hasher.hex();
}

CandidateView candidate_view(const Candidate& candidate, const std::vector<Measurement>& baselines)
{
    CandidateView view;
    view.id = candidate.id;
    view.source = candidate.source;
    view.verdict = candidate.evaluation.verdict;
    view.fitness = candidate.evaluation.fitness;
    view.descriptors = candidate.evaluation.descriptors;
    view.note = candidate.note;
    Json metrics = candidate.evaluation.metrics.is_object() ? candidate.evaluation.metrics : Json::object();
    if (const Json* sweep = metrics.contains("param_points") ? &metrics["param_points"] : nullptr;
        sweep && sweep->is_object() && sweep->contains("note") && (*sweep)["note"].is_string())
        view.sweep_note = (*sweep)["note"].get<std::string>();
    for (const char* key : k_private_metrics)
        metrics.erase(key);
    if (!candidate.evaluation.best_params.empty()) {
        Json params = Json::object();
        for (const auto& [name, value] : candidate.evaluation.best_params)
            params[name] = value;
        metrics["best_params"] = params;
    }
    view.metrics = metrics;

    const auto& ms = candidate.evaluation.measurements;
    std::vector<std::string> shapes;
    for (const auto& m : ms)
        if (m.subject == "candidate" && m.shape_set == "bench" &&
            std::find(shapes.begin(), shapes.end(), m.shape_label) == shapes.end())
            shapes.push_back(m.shape_label);
    for (const auto& shape : shapes) {
        const Measurement* own = find_measurement(ms, "candidate", shape, true);
        bool confirmed = own != nullptr;
        if (!own)
            own = find_measurement(ms, "candidate", shape, false);
        const Measurement* reference = confirmed ? find_measurement(ms, "reference", shape, true) : nullptr;
        if (!reference)
            reference = find_measurement(baselines, "reference", shape, false);
        if (own)
            view.times.push_back({shape, own->median_ns, reference ? reference->median_ns : 0});
    }
    return view;
}

Json hardware_facts(const Json& environment)
{
    const Json device = environment.value("device", Json::object());
    const Json peaks = environment.value("peaks", Json::object());
    Json facts = Json::object();
    auto copy = [&](const char* from, const char* to) {
        if (device.contains(from))
            facts[to] = device[from];
    };
    copy("name", "name");
    copy("arch", "arch");
    copy("sm_count", "sm_count");
    copy("max_threads_per_sm", "max_threads_per_sm");
    copy("regs_per_sm", "registers_per_sm");
    copy("clock_mhz", "sm_clock_mhz");
    if (double l2 = number_at(device, "l2_bytes"); l2 > 0)
        facts["l2_cache_mib"] = std::round(l2 / (1 << 20) * 10) / 10;
    if (double smem = number_at(device, "max_smem_per_block_optin"); smem > 0)
        facts["max_shared_memory_per_block_kib"] = smem / 1024;
    if (double smem = number_at(device, "smem_per_sm"); smem > 0)
        facts["shared_memory_per_sm_kib"] = smem / 1024;
    if (double memory = number_at(device, "total_memory_bytes"); memory > 0)
        facts["memory_gib"] = std::round(memory / (1 << 30));
    double measured = number_at(peaks, "measured_dram_bytes_per_s");
    double theoretical = number_at(peaks, "dram_bytes_per_s");
    if (measured > 0 || theoretical > 0)
        facts["memory_bandwidth_gbps"] = std::round((measured > 0 ? measured : theoretical) / 1e9);
    if (theoretical > 0)
        facts["theoretical_memory_bandwidth_gbps"] = std::round(theoretical / 1e9);
    for (auto [from, to] : {std::pair{"fp32_flops", "peak_fp32_tflops"}, std::pair{"fp64_flops", "peak_fp64_tflops"},
                            std::pair{"tf32_tc_flops", "peak_tf32_tensor_tflops"},
                            std::pair{"fp16_tc_flops", "peak_fp16_tensor_tflops"},
                            std::pair{"bf16_tc_flops", "peak_bf16_tensor_tflops"}})
        if (double rate = number_at(peaks, from); rate > 0)
            facts[to] = std::round(rate / 1e12 * 10) / 10;
    return facts;
}

} // namespace kforge
