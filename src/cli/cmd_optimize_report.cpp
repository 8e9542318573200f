// The end-of-run summary of `kforge optimize` and `kforge resume`: the search's summary document
// (search/summary.hpp), printed as JSON with --json or as a short text report on stdout.
#include <fmt/format.h>

#include "cli/cmd_optimize_common.hpp"
#include "core/task.hpp"
#include "search/progress.hpp"
#include "search/summary.hpp"
#include "util/error.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

std::string render_best(const Json& best, const std::string& reference_kind)
{
    std::vector<std::string> params;
    for (const auto& [name, value] : best["params"].items())
        params.push_back(fmt::format("{}={}", name, value.dump()));
    std::string text = fmt::format("best: #{} {:.3f}x {} (geometric mean over the bench shapes), {} on island "
                                   "{}{}\n      held-out shapes: {}\n",
                                   best["id"].get<int64_t>(), best["fitness"].get<double>(),
                                   reference_kind == "torch" ? "torch eager" : "the reference",
                                   best["origin"].get<std::string>(), best["island"].get<int>(),
                                   params.empty() ? "" : ", params " + join(params, ","),
                                   best["held_out"].get<std::string>());
    if (!best["note"].get<std::string>().empty())
        text += fmt::format("      {}\n", best["note"].get<std::string>());
    std::vector<std::string> subjects;
    for (const auto& row : best["shapes"])
        for (const auto& [subject, value] : row["baselines"].items())
            if (std::find(subjects.begin(), subjects.end(), subject) == subjects.end())
                subjects.push_back(subject);
    std::vector<TextTable::Column> columns{{"shape"}, {"time", TextTable::Align::right}};
    for (const auto& subject : subjects) {
        columns.push_back({baseline_label(reference_kind, subject), TextTable::Align::right});
        columns.push_back({"speedup", TextTable::Align::right});
    }
    TextTable table(columns);
    for (const auto& row : best["shapes"]) {
        std::vector<std::string> cells{row["shape"].get<std::string>(),
                                       format_duration_ns(row["time_ns"].get<double>()) +
                                           (row["confirmed"].get<bool>() ? "" : " (quick)")};
        for (const auto& subject : subjects) {
            if (!row["baselines"].contains(subject)) {
                cells.insert(cells.end(), {"-", "-"});
                continue;
            }
            const Json& b = row["baselines"][subject];
            cells.push_back(format_duration_ns(b["time_ns"].get<double>()));
            cells.push_back(fmt::format("{:.2f}x", b["speedup"].get<double>()));
        }
        table.add_row(cells);
    }
    return text + table.render("  ");
}

std::string render_summary(const Json& s)
{
    std::string text = fmt::format("kforge: {} ({}): {}\n", s["task"].get<std::string>(), s["state"].get<std::string>(),
                                   s["stop"]["text"].get<std::string>());
    text += s["best"].is_null() ? "best: no correct candidate yet\n"
                                : render_best(s["best"], s.value("reference_kind", std::string("cuda")));
    const Json& c = s["candidates"];
    std::vector<std::string> counts;
    for (const auto& [verdict, count] : c["verdicts"].items())
        counts.push_back(fmt::format("{} {}", count.get<int64_t>(), verdict));
    text += fmt::format("candidates: {} this session, {} in the archive ({})", c["this_session"].get<int64_t>(),
                        c["total"].get<int64_t>(), counts.empty() ? "none" : join(counts, ", "));
    if (c["duplicates_this_session"].get<int64_t>() > 0)
        text += fmt::format("; {} duplicates not evaluated", c["duplicates_this_session"].get<int64_t>());
    if (c["dropped"].get<int64_t>() > 0)
        text += fmt::format("; {} in flight when stopped (resume starts them again)", c["dropped"].get<int64_t>());
    if (int64_t flagged = c.value("flagged", int64_t{0}); flagged > 0)
        text += fmt::format("; {} correct but flagged below the roofline floor, not counted (kforge inspect {} lists "
                            "them)",
                            flagged, s["archive"].get<std::string>());
    const Json& llm = s["llm"];
    text += fmt::format("\nmodel calls: {}, ${:.2f}{}; GPU busy {:.0f}% of {}\n", llm["calls"].get<int64_t>(),
                        llm["cost_usd"].get<double>(),
                        llm["calls_without_price"].get<int64_t>() > 0 ? " (some calls have no price)" : "",
                        100 * s["gpu_busy"].get<double>(), format_elapsed(s["elapsed_s"].get<double>()));
    if (s["gpus"].size() > 1)
        for (const auto& gpu : s["gpus"])
            text += fmt::format("  {:<10} {:3.0f}% busy, {} candidate{}, {} evaluation{}{}{}  {} on {}\n",
                                gpu["label"].get<std::string>(), 100 * gpu["busy"].get<double>(),
                                gpu["candidates"].get<int64_t>(), gpu["candidates"].get<int64_t>() == 1 ? "" : "s",
                                gpu["evaluations"].get<int64_t>(), gpu["evaluations"].get<int64_t>() == 1 ? "" : "s",
                                gpu["restarts"].get<int>() > 0 ? fmt::format(", {} worker restarts", gpu["restarts"].get<int>()) : "",
                                gpu["lost"].get<bool>() ? ", LOST" : "", gpu["name"].get<std::string>(),
                                gpu["host"].get<std::string>());
    text += fmt::format("archive: {}\n", s["archive"].get<std::string>());
    const Json& commands = s["commands"];
    if (!s["best"].is_null())
        text += fmt::format("  export the best:  {}\n", commands["export"].get<std::string>());
    text += fmt::format("  look inside:      {}\n", commands["inspect"].get<std::string>());
    text += fmt::format("  continue:         {}\n", commands["resume"].get<std::string>());
    return text;
}

} // namespace

int run_and_report(Archive& archive, const Task& task, const RunConfig& config, Session& session, bool json)
{
    SearchServices services = session.services();
    SearchOutcome outcome = run_search(archive, task, config.search, services);
    Json summary = build_run_summary(archive, outcome);
    if (json)
        fmt::print("{}\n", summary.dump(2, ' ', false, Json::error_handler_t::replace));
    else
        fmt::print("{}", render_summary(summary));
    std::fflush(stdout);
    switch (outcome.reason) {
    case StopReason::interrupted: return k_exit_interrupted;
    case StopReason::calls_failing: return k_exit_runtime;
    default: return k_exit_ok;
    }
}

} // namespace kforge
