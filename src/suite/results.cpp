// A suite's rows and summary from its manifest and archives; see results.hpp for the
// arithmetic. Each archive is opened read-only and read in one transaction, so a row describes one
// moment of a run that may still be writing; nothing here starts a process.
#include "suite/results.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "core/task.hpp"
#include "report/inspect_report.hpp"
#include "search/progress.hpp"
#include "util/error.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const char* const k_baselines[] = {"torch_eager", "torch_compile", "reference"};

// The candidate's own bench timings, one per shape, a confirmed one preferred over a quick screen.
std::vector<const Measurement*> own_bench_times(const std::vector<Measurement>& ms)
{
    std::vector<const Measurement*> out;
    for (const auto& m : ms) {
        if (m.subject != "candidate" || m.shape_set != "bench" || m.median_ns <= 0)
            continue;
        auto same = std::find_if(out.begin(), out.end(), [&](const Measurement* o) { return o->shape_label == m.shape_label; });
        if (same == out.end())
            out.push_back(&m);
        else if (m.confirmed || !(*same)->confirmed)
            *same = &m;
    }
    return out;
}

std::optional<double> geomean_of(const std::vector<double>& values)
{
    if (values.empty())
        return std::nullopt;
    double log_sum = 0;
    for (double v : values) {
        if (!(v > 0))
            return std::nullopt;
        log_sum += std::log(v);
    }
    return std::exp(log_sum / static_cast<double>(values.size()));
}

// Geometric mean over the best's bench shapes of `subject`'s time over the best's: the timing beside
// the best where there is one, else the run's baseline timing. nullopt when a shape lacks one.
std::optional<double> speedup_over(const Candidate& best, const std::vector<Measurement>& run_baselines,
                                   const std::string& subject)
{
    std::vector<double> ratios;
    for (const Measurement* own : own_bench_times(best.evaluation.measurements)) {
        const Measurement* base = find_timing(best.evaluation.measurements, subject, *own);
        if (!base || base->median_ns <= 0)
            base = find_timing(run_baselines, subject, *own);
        if (!base || base->median_ns <= 0)
            return std::nullopt;
        ratios.push_back(base->median_ns / own->median_ns);
    }
    return geomean_of(ratios);
}

// Seconds the problem's sessions held a GPU; a session without an end ends `now` while the problem
// runs, else at the archive's last update (a suite that was killed never wrote the end down).
double held_seconds(const SuiteProblem& problem, double now, double archive_updated_at)
{
    double total = 0;
    for (size_t i = 0; i < problem.sessions.size(); ++i) {
        const ProblemSession& s = problem.sessions[i];
        double end = s.ended_at.value_or(0);
        if (!s.ended_at)
            end = problem.running_now() && i + 1 == problem.sessions.size() ? now : archive_updated_at;
        total += std::max(0.0, end - s.started_at);
    }
    return total;
}

bool spec_is_torch(const SuiteFolder& folder, const SuiteProblem& problem)
{
    if (problem.kind == ProblemKind::python)
        return true;
    try {
        return spec_reference_kind(read_file(folder.resolve(problem.spec))) == ReferenceKind::torch;
    } catch (const Error&) {
        return false;
    }
}

void read_archive(const fs::path& path, ProblemResult& r, double& updated_at)
{
    Archive archive = Archive::open(path, OpenMode::read_only);
    archive.atomically([&] {
        RunInfo run = archive.run_info();
        r.task = run.task_name;
        r.torch = spec_reference_kind(run.task_spec) == ReferenceKind::torch;
        updated_at = run.updated_at;
        r.candidates = archive.candidate_count();
        int furthest = -1;
        for (const auto& [kind, count] : archive.verdict_counts()) {
            r.verdicts[std::string(verdict_name(kind))] = count;
            if (count > 0 && static_cast<int>(kind) > furthest)
                furthest = static_cast<int>(kind);
        }
        if (furthest >= 0)
            r.verdict = verdict_name(static_cast<VerdictKind>(furthest));
        std::vector<Measurement> baselines = archive.baselines();
        bool timed = false, compiled = false;
        for (const auto& b : baselines) {
            timed = timed || b.subject == "reference";
            compiled = compiled || b.subject == "torch_compile";
        }
        r.compile_missing = r.torch && timed && !compiled;
        if (auto best = archive.best_candidate()) {
            r.best_id = best->id;
            r.verdict = "correct";
            r.vs_reference = best->evaluation.fitness;
            if (r.torch)
                r.vs_compile = speedup_over(*best, baselines, "torch_compile");
            std::vector<double> times, fractions;
            for (const Measurement* m : own_bench_times(best->evaluation.measurements)) {
                times.push_back(m->median_ns);
                if (m->roofline_ns > 0)
                    fractions.push_back(m->roofline_ns / m->median_ns);
            }
            r.bench_shapes = static_cast<int>(times.size());
            r.best_time_ns = geomean_of(times);
            if (fractions.size() == times.size())
                r.roofline = geomean_of(fractions);
        }
        r.cost_usd = archive.llm_usage_total().cost_usd;
        for (const auto& gpu : archive.gpu_totals())
            r.busy_s += gpu.usage.busy_s;
    });
}

std::string percent_of(int64_t part, int64_t whole)
{
    return whole ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

std::string level_name(double p)
{
    return fmt::format("fast_{}", p == std::floor(p) ? fmt::format("{:.0f}", p) : fmt::format("{:g}", p));
}

} // namespace

std::string format_speedup(const std::optional<double>& speedup)
{
    return speedup ? fmt::format("{:.2f}x", *speedup) : "-";
}

Json ProblemResult::to_json() const
{
    auto optional = [](const auto& value) { return value ? Json(*value) : Json(); };
    return Json{{"id", id},
                {"kind", problem_kind_name(kind)},
                {"state", problem_state_name(state)},
                {"reason", reason},
                {"model", model},
                {"task", task},
                {"archive", archive},
                {"reference", torch ? "torch" : "cuda"},
                {"archive_error", error.empty() ? Json() : Json(error)},
                {"candidates", candidates},
                {"verdicts", verdicts},
                {"verdict", verdict.empty() ? Json() : Json(verdict)},
                {"correct", correct()},
                {"best", optional(best_id)},
                {"best_time_ns", optional(best_time_ns)},
                {"bench_shapes", bench_shapes},
                {"speedup",
                 {{"torch_eager", torch ? optional(vs_reference) : Json()},
                  {"torch_compile", optional(vs_compile)},
                  {"reference", torch ? Json() : optional(vs_reference)}}},
                {"torch_compile_missing", compile_missing},
                {"roofline", optional(roofline)},
                {"cost_usd", cost_usd},
                {"gpu_busy_s", busy_s},
                {"gpu_held_s", held_s},
                {"sessions", sessions}};
}

ProblemResult read_problem_result(const SuiteFolder& folder, const SuiteProblem& problem, double now)
{
    ProblemResult r;
    r.id = problem.id;
    r.kind = problem.kind;
    r.state = problem.state;
    r.reason = problem.reason;
    r.model = problem.model;
    r.archive = problem.archive;
    r.sessions = static_cast<int>(problem.sessions.size());
    r.cost_usd = problem.cost_usd;
    for (int kind = 0; kind <= static_cast<int>(VerdictKind::correct); ++kind)
        r.verdicts[std::string(verdict_name(static_cast<VerdictKind>(kind)))] = 0;
    r.torch = spec_is_torch(folder, problem);
    double updated_at = 0;
    fs::path path = folder.resolve(problem.archive);
    std::error_code ec;
    if (fs::exists(path, ec)) {
        try {
            read_archive(path, r, updated_at);
            r.has_archive = true;
        } catch (const Error& e) {
            r.error = e.what();
        }
    } else if (!problem.sessions.empty()) {
        // It ran, so it had an archive: removed or moved since, its results are gone with it.
        r.error = fmt::format("{}: no such archive, though the problem ran {} time{} (removed or moved since?)",
                              path.string(), problem.sessions.size(), problem.sessions.size() == 1 ? "" : "s");
    }
    r.held_s = held_seconds(problem, now, updated_at);
    return r;
}

double BaselineSummary::fast_share(size_t level) const
{
    return problems ? static_cast<double>(fast.at(level)) / static_cast<double>(problems) : 0;
}

bool has_baseline(const ProblemResult& result, const std::string& baseline)
{
    if (baseline == "torch_eager")
        return result.torch;
    if (baseline == "torch_compile")
        return result.torch && !result.compile_missing;
    return !result.torch;
}

std::optional<double> speedup_against(const ProblemResult& result, const std::string& baseline)
{
    if (!result.correct() || !has_baseline(result, baseline))
        return std::nullopt;
    return baseline == "torch_compile" ? result.vs_compile : result.vs_reference;
}

SuiteSummary summarize_suite(const std::vector<ProblemResult>& results)
{
    SuiteSummary s;
    for (ProblemState state : {ProblemState::waiting, ProblemState::running, ProblemState::finished,
                               ProblemState::failed, ProblemState::skipped})
        s.states[std::string(problem_state_name(state))] = 0;
    for (const auto& r : results) {
        ++s.problems;
        ++s.states[std::string(problem_state_name(r.state))];
        s.correct += r.correct();
        s.candidates += r.candidates;
        s.cost_usd += r.cost_usd;
        s.gpu_hours += r.held_s / 3600;
        s.busy_gpu_hours += r.busy_s / 3600;
    }
    for (const char* baseline : k_baselines) {
        BaselineSummary b;
        b.baseline = baseline;
        b.label = b.baseline == "torch_eager"     ? baseline_label(ReferenceKind::torch, "reference")
                  : b.baseline == "torch_compile" ? baseline_label(ReferenceKind::torch, "torch_compile")
                                                  : std::string("own reference");
        b.fast.assign(std::size(k_fast_p_levels), 0);
        std::vector<double> speedups;
        for (const auto& r : results) {
            if (!has_baseline(r, baseline))
                continue;
            ++b.problems;
            if (!r.correct())
                continue;
            ++b.correct;
            std::optional<double> speedup = speedup_against(r, baseline);
            for (size_t level = 0; level < std::size(k_fast_p_levels); ++level)
                if (level == 0 || (speedup && *speedup > k_fast_p_levels[level]))
                    ++b.fast[level];
            if (speedup)
                speedups.push_back(*speedup);
        }
        b.geomean = geomean_of(speedups);
        b.geomean_over = static_cast<int64_t>(speedups.size());
        s.baselines.push_back(std::move(b));
    }
    return s;
}

Json suite_report_json(const std::string& folder, const std::vector<ProblemResult>& results, const SuiteSummary& s)
{
    Json rows = Json::array();
    for (const auto& r : results)
        rows.push_back(r.to_json());
    Json baselines = Json::object();
    for (const auto& b : s.baselines) {
        Json fast = Json::object(), counts = Json::object();
        for (size_t level = 0; level < std::size(k_fast_p_levels); ++level) {
            fast[level_name(k_fast_p_levels[level])] = b.fast_share(level);
            counts[level_name(k_fast_p_levels[level])] = b.fast[level];
        }
        baselines[b.baseline] = Json{{"label", b.label},
                                     {"problems", b.problems},
                                     {"correct", b.correct},
                                     {"fast", fast},
                                     {"fast_counts", counts},
                                     {"geomean_speedup", b.geomean ? Json(*b.geomean) : Json()},
                                     {"geomean_over", b.geomean_over}};
    }
    return Json{{"suite", folder},
                {"problems", rows},
                {"summary",
                 {{"problems", s.problems},
                  {"states", s.states},
                  {"correct", s.correct},
                  {"correctness_rate", s.correctness_rate()},
                  {"candidates", s.candidates},
                  {"against", baselines},
                  {"cost_usd", s.cost_usd},
                  {"gpu_hours", s.gpu_hours},
                  {"busy_gpu_hours", s.busy_gpu_hours}}}};
}

std::string render_suite_text(const std::vector<ProblemResult>& results, const SuiteSummary& s)
{
    using Align = TextTable::Align;
    TextTable table({{"problem"},
                     {"kind"},
                     {"state"},
                     {"verdict"},
                     {"best time", Align::right},
                     {"vs torch eager", Align::right},
                     {"vs torch.compile", Align::right},
                     {"vs reference", Align::right},
                     {"roofline", Align::right},
                     {"candidates", Align::right},
                     {"dollars", Align::right},
                     {"GPU time", Align::right}});
    std::vector<std::string> notes;
    for (const auto& r : results) {
        table.add_row({r.id, std::string(problem_kind_name(r.kind)), std::string(problem_state_name(r.state)),
                       r.verdict.empty() ? "-" : r.verdict,
                       r.best_time_ns ? format_duration_ns(*r.best_time_ns) + (r.bench_shapes > 1 ? "*" : "") : "-",
                       r.torch ? format_speedup(r.vs_reference) : "-",
                       r.torch ? (r.compile_missing ? "n/a" : format_speedup(r.vs_compile)) : "-",
                       r.torch ? "-" : format_speedup(r.vs_reference),
                       r.roofline ? fmt::format("{:.0f}%", 100 * *r.roofline) : "-", std::to_string(r.candidates),
                       format_dollars(r.cost_usd), r.held_s > 0 ? format_elapsed(r.held_s) : "-"});
        if (!r.error.empty())
            notes.push_back(fmt::format("{}: archive unreadable: {}", r.id, first_line(r.error, 200)));
        else if ((r.state == ProblemState::failed || r.state == ProblemState::skipped) && !r.reason.empty())
            notes.push_back(fmt::format("{} {}: {}", r.id, problem_state_name(r.state), first_line(r.reason, 200)));
    }
    std::string text = table.render("");
    bool multi_shape = std::any_of(results.begin(), results.end(), [](const ProblemResult& r) { return r.bench_shapes > 1; });
    if (multi_shape)
        text += "* geometric mean over the task's bench shapes\n";
    for (const auto& note : notes)
        text += note + "\n";
    std::vector<std::string> states;
    for (const auto& [state, count] : s.states)
        if (count > 0)
            states.push_back(fmt::format("{} {}", count, state));
    text += fmt::format("\n{} problems ({}); correct: {}/{} ({})\n", s.problems, join(states, ", "), s.correct,
                        s.problems, percent_of(s.correct, s.problems));
    for (const auto& b : s.baselines) {
        if (b.problems == 0)
            continue;
        std::vector<std::string> fast;
        for (size_t level = 0; level < b.fast.size(); ++level)
            fast.push_back(fmt::format("{} {}", level_name(k_fast_p_levels[level]), percent_of(b.fast[level], b.problems)));
        text += fmt::format("vs {} ({} problem{}): {}; geometric mean {} over {} correct\n", b.label, b.problems,
                            b.problems == 1 ? "" : "s", join(fast, "  "), format_speedup(b.geomean), b.geomean_over);
    }
    text += fmt::format("candidates {}; model dollars {}; GPU hours {:.2f} held by the runs (each of runs sharing a GPU "
                        "counts), {:.2f} measuring\n",
                        s.candidates, format_dollars(s.cost_usd), s.gpu_hours, s.busy_gpu_hours);
    return text;
}

} // namespace kforge
