// The "gpu" section of `kforge inspect`: how the run's GPU time went, and how much of it measured a
// point (binary, plan, params) again that an earlier run had already measured to the same standard.
//
// Every GPU run of a candidate's evaluation jobs is in its private metrics ("runs", written by the
// evaluator with the measurement memo's key, what was asked, the worker's seconds and what was
// reused). A measured run is a repeat when the runs before it in the archive had already covered
// its ask, by the memo's own rules (PointCoverage, failure_stands_in), so the figure is what reuse
// could still save. Archives written before "runs" existed are reconstructed from what they kept:
// the sweep list, the compile report, and the marks a confirmation and a held-out check leave. Their
// points are keyed by the source less its plan's param lists (the builtin proposer edits only those),
// and their seconds are each candidate's eval seconds, which include waiting for the GPU, split
// evenly over its runs: an estimate of shares, labelled as such.
#include <map>

#include <fmt/format.h>

#include "core/plan.hpp"
#include "evaluator/measurement_memo.hpp"
#include "report/inspect_report.hpp"
#include "util/hash.hpp"

namespace kforge {
namespace {

struct RunRecord {
    std::string key;
    VariantAsk ask;
    bool correct = false;
    double gpu_s = 0;
    bool reused = false;
};

VariantAsk ask_of(bool tests, TimingStandard timing, bool held_out, bool profile)
{
    return VariantAsk{tests, timing, held_out, profile};
}

std::string params_text(const Json& params)
{
    return params.is_object() ? params.dump() : std::string("{}");
}

// A point key for archives without "runs": the source with its plan's param lists left out.
std::string legacy_source_key(const std::string& source)
{
    try {
        if (std::optional<Json> plan = extract_plan_json(source)) {
            plan->erase("params");
            return hash_hex(replace_plan_block(source, *plan));
        }
    } catch (const PlanError&) {
        // a malformed plan block: the whole text decides
    }
    return hash_hex(source);
}

std::vector<RunRecord> recorded_runs(const Json& runs)
{
    std::vector<RunRecord> out;
    for (const auto& run : runs) {
        RunRecord r;
        r.key = run.value("key", "") + params_text(run.value("params", Json::object()));
        r.ask = ask_of(run.value("tests", true), parse_timing_standard(run.value("timing", "quick")).value_or(TimingStandard::quick),
                       run.value("held_out", false), run.value("profile", false));
        r.correct = run.value("verdict", "") == "correct";
        r.gpu_s = run.value("gpu_s", 0.0);
        r.reused = run.contains("reused");
        out.push_back(r);
    }
    return out;
}

// The runs an archive from before per-run records implies (see the comment atop this file).
std::vector<RunRecord> reconstructed_runs(const Candidate& c)
{
    const Json& metrics = c.evaluation.metrics;
    std::string base = legacy_source_key(c.source);
    int64_t compiled = 0;
    for (const auto& variant : c.evaluation.compile_info.value("variants", Json::array()))
        compiled += variant.value("ok", false) ? 1 : 0;
    std::vector<RunRecord> out;
    const Json sweep = metrics.value("sweep", Json::array());
    for (size_t i = 0; i < sweep.size(); ++i) {
        RunRecord r;
        r.key = base + params_text(sweep[i].value("params", Json::object()));
        bool sweeping = compiled > 1 && static_cast<int64_t>(i) < compiled;
        r.ask = ask_of(sweeping || compiled <= 1, sweeping ? TimingStandard::sweep : TimingStandard::quick, false, false);
        r.correct = sweep[i].value("verdict", "") == "correct";
        out.push_back(r);
    }
    Json best = Json::object();
    for (const auto& [name, value] : c.evaluation.best_params)
        best[name] = value;
    if (metrics.contains("screen_fitness"))
        out.push_back({base + params_text(best), ask_of(true, TimingStandard::confirm, false, true),
                       c.evaluation.verdict.is_correct() || metrics.contains("held_out"), 0, false});
    if (metrics.contains("held_out"))
        out.push_back({base + params_text(best), ask_of(true, TimingStandard::quick, true, false),
                       metrics.value("held_out", "") == "passed", 0, false});
    double share = out.empty() ? 0 : c.evaluation.eval_seconds / static_cast<double>(out.size());
    for (auto& r : out)
        r.gpu_s = share;
    return out;
}

} // namespace

Json gpu_work_section(const Archive& archive)
{
    std::map<std::string, PointCoverage> coverage;
    std::map<std::string, std::vector<VariantAsk>> failures;
    int64_t runs = 0, measured = 0, repeats = 0, reused = 0, partly_reused = 0;
    double total_s = 0, repeat_s = 0;
    bool estimated = false;
    std::optional<double> first_recorded;
    for (const auto& point : archive.fitness_series()) {
        auto candidate = archive.candidate(point.candidate_id);
        if (!candidate)
            continue;
        if (!first_recorded)
            first_recorded = candidate->created_at;
        const Json& metrics = candidate->evaluation.metrics;
        bool recorded = metrics.is_object() && metrics.contains("runs");
        std::vector<RunRecord> candidate_runs = recorded ? recorded_runs(metrics["runs"]) : reconstructed_runs(*candidate);
        // A candidate that never reached a GPU (no code, a plan or compile error) has no "runs" in
        // any archive: only one whose runs had to be reconstructed makes the figures estimates.
        estimated = estimated || (!recorded && !candidate_runs.empty());
        for (const auto& run : candidate_runs) {
            ++runs;
            if (run.reused && run.gpu_s <= 0) {
                ++reused;
            } else {
                partly_reused += run.reused ? 1 : 0;
                ++measured;
                total_s += run.gpu_s;
                bool repeat = coverage[run.key].covers(run.ask);
                for (const auto& failed : failures[run.key])
                    repeat = repeat || failure_stands_in(failed, run.ask);
                if (repeat) {
                    ++repeats;
                    repeat_s += run.gpu_s;
                }
            }
            if (run.correct)
                coverage[run.key].credit(run.ask);
            else
                failures[run.key].push_back(run.ask);
        }
    }
    Json section{{"runs", runs},
                 {"measured_runs", measured},
                 {"repeat_runs", repeats},
                 {"reused_runs", reused},
                 {"partly_reused_runs", partly_reused},
                 {"gpu_s", total_s},
                 {"repeat_gpu_s", repeat_s},
                 {"repeat_share", total_s > 0 ? Json(repeat_s / total_s) : Json()},
                 {"estimated", estimated},
                 {"basis", estimated ? "eval seconds (queue waits included) split evenly over each candidate's runs; "
                                       "this archive predates per-run GPU times"
                                     : "the GPU worker's seconds per run"}};
    double started = archive.run_info().started_at;
    section["first_candidate_s"] = first_recorded ? Json(*first_recorded - started) : Json();
    return section;
}

std::string gpu_work_text(const Json& gpu)
{
    if (!gpu.is_object() || gpu.value("runs", int64_t{0}) == 0)
        return "no GPU runs recorded yet";
    double total = gpu["gpu_s"].get<double>(), repeat = gpu["repeat_gpu_s"].get<double>();
    std::string text = fmt::format("GPU time on repeats: {:.1f} s of {:.1f} s ({:.0f}%); {} of {} runs measured a point "
                                   "again, {} reused earlier results whole, {} in part",
                                   repeat, total, total > 0 ? 100 * repeat / total : 0.0,
                                   gpu["repeat_runs"].get<int64_t>(), gpu["runs"].get<int64_t>(),
                                   gpu["reused_runs"].get<int64_t>(), gpu["partly_reused_runs"].get<int64_t>());
    if (gpu.value("estimated", false))
        text += " (estimated: " + gpu["basis"].get<std::string>() + ")";
    if (gpu.contains("first_candidate_s") && gpu["first_candidate_s"].is_number())
        text += fmt::format("; first candidate recorded {:.1f} s after the run started", gpu["first_candidate_s"].get<double>());
    return text;
}

} // namespace kforge
