// The kforge.dataset/1 records (docs/dataset.md is their reference; keep the two in step).
//
// A record is built from one candidate (with the call that produced it) or one model call that left
// no candidate. Keys are always present, null when a value is unknown, so a reader can rely on the
// shape; anything that may grow (the evaluator's metrics) sits under one key of its own. Times keep
// kforge's choice of what counts: a confirmed timing beats a quick screen of the same shape, and a
// baseline timed beside the candidate beats the run's own baseline timing.
#include "cli/dataset_record.hpp"

#include <algorithm>

#include "agents/call_record_json.hpp"
#include "report/inspect_report.hpp"
#include "search/budget.hpp"

namespace kforge {
namespace {

Json optional_number(const std::optional<double>& value)
{
    return value ? Json(*value) : Json();
}

Json optional_id(const std::optional<int64_t>& id)
{
    return id ? Json(*id) : Json();
}

// The fields every record starts with.
Json record_head(const DatasetRun& run, std::string_view kind)
{
    const Json& device = run.run.device;
    return {{"schema", k_dataset_schema},
            {"kind", kind},
            {"archive", run.archive},
            {"run_id", run.run.run_id},
            {"task", run.run.task_name},
            {"task_hash", run.run.task_hash},
            {"device", device.is_object() && device.contains("name") && device["name"].is_string()
                           ? device["name"]
                           : Json()},
            {"kforge_version", run.run.kforge_version}};
}

// Who wrote a candidate, from its origin.
std::string_view proposer_of(Origin origin)
{
    switch (origin) {
    case Origin::llm:
    case Origin::repair:
        return "model";
    case Origin::builtin:
        return "builtin";
    case Origin::seed:
    case Origin::reference:
        return "task";
    case Origin::tune:
        return "search";
    case Origin::user:
        break;
    }
    return "user";
}

// The prompt as chat messages, and the rest of the request (model, token limit, temperature).
void add_prompt(const LlmCallRecord& call, Json& out)
{
    Json messages = Json::array();
    Json params = call.request.is_object() ? call.request : Json::object();
    if (auto prompt = recorded_prompt(call)) {
        if (!prompt->system.empty())
            messages.push_back({{"role", "system"}, {"content", prompt->system}});
        messages.push_back({{"role", "user"}, {"content", prompt->user}});
        for (const char* key : {"messages", "system", "user"})
            params.erase(key);
    } else if (!call.request.is_object()) {
        params = {{"request", call.request}};
    }
    out["messages"] = messages;
    out["request_params"] = params;
}

Json call_json(const LlmCallRecord& call)
{
    Json out = {{"call_id", call.id},
                {"provider", call.provider},
                {"model", call.model},
                {"base_url", call.base_url},
                {"purpose", call_purpose_name(call.purpose)},
                {"status", call.status},
                {"error", call.error}};
    add_prompt(call, out);
    out["reply"] = call.reply;
    out["input_tokens"] = call.input_tokens;
    out["cached_input_tokens"] = call.cached_input_tokens;
    out["output_tokens"] = call.output_tokens;
    out["cost_usd"] = call.cost_known ? Json(call.cost_usd) : Json();
    out["latency_s"] = call.latency_s;
    out["retries"] = call.retries;
    out["started_at"] = call.started_at;
    return out;
}

bool same_shape(const Measurement& a, const Measurement& b)
{
    return a.shape_set == b.shape_set && a.shape_label == b.shape_label;
}

// One entry per (shape set, shape) the candidate was timed on, in the order first timed.
Json times_json(const Candidate& candidate, const std::vector<Measurement>& run_baselines)
{
    const auto& measured = candidate.evaluation.measurements;
    Json times = Json::array();
    for (const auto& m : measured) {
        if (m.subject != "candidate" || find_timing(measured, "candidate", m) != &m)
            continue;
        Json baselines = Json::object();
        Json speedups = Json::object();
        auto add_baseline = [&](const Measurement& b) {
            if (b.subject == "candidate" || !same_shape(b, m) || baselines.contains(b.subject))
                return;
            const Measurement* chosen = find_timing(measured, b.subject, m);
            double ns = (chosen ? *chosen : b).median_ns;
            baselines[b.subject] = ns;
            speedups[b.subject] = m.median_ns > 0 ? Json(ns / m.median_ns) : Json();
        };
        std::for_each(measured.begin(), measured.end(), add_baseline);
        std::for_each(run_baselines.begin(), run_baselines.end(), add_baseline);
        times.push_back({{"set", m.shape_set},
                         {"shape", m.shape_label},
                         {"candidate_ns", m.median_ns},
                         {"q1_ns", m.q1_ns},
                         {"q3_ns", m.q3_ns},
                         {"min_ns", m.min_ns},
                         {"samples", m.samples},
                         {"confirmed", m.confirmed},
                         {"roofline_ns", m.roofline_ns > 0 ? Json(m.roofline_ns) : Json()},
                         {"below_roofline", m.below_roofline},
                         {"baselines_ns", baselines},
                         {"speedup", speedups}});
    }
    return times;
}

// The speedup over the reference (the fitness) and over the vendor library, where the evaluator
// measured one (metrics.baseline names it).
Json speedup_json(const Evaluation& evaluation)
{
    Json speedup = {{"reference", optional_number(evaluation.fitness)},
                    {"vendor", nullptr},
                    {"vendor_subject", nullptr},
                    {"vendor_library", nullptr}};
    const Json& baseline = evaluation.metrics.value("baseline", Json::object());
    if (evaluation.fitness && baseline.is_object() &&
        baseline.value("subject", "") != "reference" && baseline.contains("speedup") &&
        baseline["speedup"].is_number() && baseline.value("subject", "") != "") {
        speedup["vendor"] = baseline["speedup"];
        speedup["vendor_subject"] = baseline["subject"];
        speedup["vendor_library"] = baseline.value("library", "");
    }
    return speedup;
}

Json improvement_json(const Improvement& improvement, const std::optional<double>& fitness)
{
    Json vs_parent;
    if (fitness && improvement.parent_fitness && *improvement.parent_fitness > 0)
        vs_parent = *fitness / *improvement.parent_fitness;
    return {{"parent_fitness", optional_number(improvement.parent_fitness)},
            {"vs_parent", vs_parent},
            {"best_before", optional_number(improvement.best_before)},
            {"new_best", improvement.new_best},
            {"improving", improvement.improving}};
}

} // namespace

Improvement judge_improvement(const Candidate& candidate, std::optional<double> parent_fitness,
                              std::optional<double> best_before)
{
    Improvement judged{parent_fitness, best_before, false, false};
    const auto& fitness = candidate.evaluation.fitness;
    if (!candidate.evaluation.verdict.is_correct() || !fitness)
        return judged;
    judged.new_best = !best_before || *fitness > *best_before;
    judged.improving = judged.new_best || (parent_fitness && *fitness > *parent_fitness);
    return judged;
}

Json plan_record(const CandidatePlan& plan, const std::vector<LlmCallRecord>& calls)
{
    Json record = plan_json(plan);
    record.erase("plan_calls");
    Json full = Json::array();
    for (const auto& call : calls)
        full.push_back(call_json(call));
    record["calls"] = full;
    return record;
}

Json candidate_record(const DatasetRun& run, const Candidate& candidate, const LlmCallRecord* call,
                      const Improvement& improvement, const Json& plan)
{
    const Evaluation& eval = candidate.evaluation;
    Json record = record_head(run, "candidate");
    record["candidate_id"] = candidate.id;
    record["parent_id"] = optional_id(candidate.parent_id);
    record["inspiration_ids"] = candidate.inspiration_ids;
    record["island"] = candidate.island;
    record["generation"] = candidate.generation;
    record["origin"] = origin_name(candidate.origin);
    record["proposed_by"] = proposer_of(candidate.origin);
    record["note"] = candidate.note;
    record["created_at"] = candidate.created_at;
    record["source"] = candidate.source;
    record["source_hash"] = candidate.source_hash;
    Json params = Json::object();
    for (const auto& [name, value] : eval.best_params)
        params[name] = value;
    record["params"] = params;
    record["verdict"] = verdict_name(eval.verdict.kind);
    record["verdict_message"] = eval.verdict.message;
    record["fitness"] = optional_number(eval.fitness);
    record["speedup"] = speedup_json(eval);
    record["improvement"] = improvement_json(improvement, eval.fitness);
    record["times"] = times_json(candidate, run.baselines);
    record["descriptors"] = eval.descriptors;
    record["metrics"] = eval.metrics;
    record["eval_seconds"] = eval.eval_seconds;
    bool model = call && is_model_call(*call);
    record["call"] = model ? call_json(*call) : Json();
    record["builtin"] = call && !model ? call->request : Json();
    record["plan"] = plan;
    return record;
}

Json call_record(const DatasetRun& run, const LlmCallRecord& call)
{
    Json record = record_head(run, "call");
    record["candidate_id"] = nullptr;
    record["call"] = call_json(call);
    return record;
}

} // namespace kforge
