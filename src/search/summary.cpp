// The run summary document; see summary.hpp.
#include "search/summary.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/task.hpp"
#include "search/budget.hpp"

namespace kforge {
namespace {

// The candidate's own median on a bench shape, confirmed timings preferred.
const Measurement* own_time(const std::vector<Measurement>& ms, const std::string& shape)
{
    const Measurement* found = nullptr;
    for (const auto& m : ms)
        if (m.subject == "candidate" && m.shape_set == "bench" && m.shape_label == shape && m.median_ns > 0 &&
            (!found || (m.confirmed && !found->confirmed)))
            found = &m;
    return found;
}

// A baseline's median on a shape: timed beside the candidate in its confirmation if so, else the
// session's baseline timings.
const Measurement* baseline_time(const std::vector<Measurement>& own, const std::vector<Measurement>& session,
                                 const std::string& subject, const std::string& shape)
{
    for (const auto* list : {&own, &session})
        for (const auto& m : *list)
            if (m.subject == subject && m.shape_set == "bench" && m.shape_label == shape && m.median_ns > 0 &&
                (list == &session || m.confirmed))
                return &m;
    return nullptr;
}

Json best_section(const Archive& archive, const SearchOutcome& outcome)
{
    if (!outcome.best_id)
        return Json();
    auto best = archive.candidate(*outcome.best_id);
    if (!best)
        return Json();
    std::vector<Measurement> session = archive.baselines();
    std::vector<std::string> subjects, shapes;
    for (const auto& m : session) {
        if (m.shape_set != "bench")
            continue;
        if (std::find(subjects.begin(), subjects.end(), m.subject) == subjects.end())
            subjects.push_back(m.subject);
    }
    for (const auto& m : best->evaluation.measurements)
        if (m.subject == "candidate" && m.shape_set == "bench" &&
            std::find(shapes.begin(), shapes.end(), m.shape_label) == shapes.end())
            shapes.push_back(m.shape_label);
    Json shape_rows = Json::array();
    for (const auto& shape : shapes) {
        const Measurement* own = own_time(best->evaluation.measurements, shape);
        Json baselines = Json::object();
        for (const auto& subject : subjects)
            if (const Measurement* b = baseline_time(best->evaluation.measurements, session, subject, shape))
                baselines[subject] = Json{{"time_ns", b->median_ns}, {"speedup", own ? b->median_ns / own->median_ns : 0}};
        shape_rows.push_back(Json{{"shape", shape},
                                  {"time_ns", own ? own->median_ns : 0},
                                  {"confirmed", own && own->confirmed},
                                  {"baselines", baselines}});
    }
    Json params = Json::object();
    for (const auto& [name, value] : best->evaluation.best_params)
        params[name] = value;
    return Json{{"id", best->id},
                {"fitness", outcome.best_fitness.value_or(best->evaluation.fitness.value_or(0))},
                {"origin", origin_name(best->origin)},
                {"island", best->island},
                {"params", params},
                {"note", best->note},
                {"held_out", outcome.best_held_out.empty() ? "not checked" : outcome.best_held_out},
                {"shapes", shape_rows}};
}

// Per GPU of this session; a one-GPU session lists its one GPU too.
Json gpus_section(const SearchOutcome& outcome)
{
    Json gpus = Json::array();
    for (const auto& share : outcome.gpus) {
        Json gpu = share.usage.to_json();
        gpu["candidates"] = share.candidates;
        gpus.push_back(gpu);
    }
    return gpus;
}

} // namespace

Json build_run_summary(const Archive& archive, const SearchOutcome& outcome)
{
    RunInfo run = archive.run_info();
    Json verdicts = Json::object();
    int64_t total = 0;
    for (const auto& [kind, count] : archive.verdict_counts()) {
        verdicts[std::string(verdict_name(kind))] = count;
        total += count;
    }
    LlmUsage usage = archive.llm_usage_total();
    std::string path = archive.path().string();
    return Json{{"archive", path},
                {"run_id", run.run_id},
                {"task", run.task_name},
                {"reference_kind", reference_kind_name(spec_reference_kind(run.task_spec))},
                {"state", run.state},
                {"stop", {{"reason", stop_reason_name(outcome.reason)}, {"text", outcome.reason_text}}},
                {"candidates",
                 {{"this_session", outcome.recorded},
                  {"total", total},
                  {"verdicts", verdicts},
                  {"duplicates_this_session", outcome.duplicates},
                  {"flagged", archive.flagged_count()},
                  {"dropped", outcome.dropped}}},
                {"best", best_section(archive, outcome)},
                {"llm",
                 {{"calls", outcome.calls},
                  {"cost_usd", usage.cost_usd},
                  {"calls_without_price", usage.calls_without_price}}},
                {"elapsed_s", outcome.seconds},
                {"search_s", outcome.search_seconds},
                {"gpu_busy", outcome.gpu_busy},
                {"gpus", gpus_section(outcome)},
                {"commands",
                 {{"export", fmt::format("kforge export {} --best -o {}_best.cu", path, run.task_name)},
                  {"inspect", fmt::format("kforge inspect {} --grid", path)},
                  {"resume", fmt::format("kforge resume {} --budget +100", path)}}}};
}

} // namespace kforge
