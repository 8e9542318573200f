// The "flagged" section of `kforge inspect` and `kforge report`: correct candidates whose times were
// below the roofline floor (evaluator/worker/roofline.hpp). The search never counts them, so without
// this section they would be invisible: not in the top table (no fitness), not among the failures
// (their verdict is correct). Each entry says what it measured, the fitness it would have, why each
// flagged shape is impossible by kforge's model, and either the command that accepts it or, once
// accepted, the evidence it was accepted on.
#include <fmt/format.h>

#include "report/inspect_report.hpp"
#include "report/page.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

Json flagged_entry(const Candidate& candidate, const std::string& archive_path)
{
    const Evaluation& e = candidate.evaluation;
    Json reasons = Json::array();
    for (const auto& note : e.metrics.value("notes", Json::object()).value("below_roofline", Json::array()))
        reasons.push_back(Json{{"shape", note.value("shape", "")},
                               {"median_ns", note.value("median_ns", 0.0)},
                               {"floor_ns", note.value("floor_ns", 0.0)},
                               {"roofline_ns", note.value("roofline_ns", 0.0)},
                               {"why", note.value("why", "faster than the roofline floor")}});
    Json times = Json::object();
    for (const auto& m : e.measurements)
        if (m.subject == "candidate" && m.shape_set == "bench" && !times.contains(m.shape_label))
            times[m.shape_label] = m.median_ns;
    bool accepted = e.metrics.contains("accepted");
    Json entry{{"id", candidate.id},
               {"island", candidate.island},
               {"origin", origin_name(candidate.origin)},
               {"measured_fitness", e.metrics.value("suspicious_fitness", Json())},
               {"fitness", e.fitness ? Json(*e.fitness) : Json()},
               {"times_ns", times},
               {"below_floor", reasons},
               {"accepted", accepted}};
    if (accepted)
        entry["acceptance"] = e.metrics["accepted"];
    else
        entry["accept_with"] =
            fmt::format("kforge eval {} --candidate {} --held-out --accept", archive_path, candidate.id);
    return entry;
}

std::string reasons_text(const Json& entry)
{
    std::vector<std::string> parts;
    for (const auto& reason : entry["below_floor"])
        parts.push_back(fmt::format("{}: {}", reason["shape"].get<std::string>(), reason["why"].get<std::string>()));
    return parts.empty() ? "faster than the roofline floor" : join(parts, "; ");
}

std::string status_text(const Json& entry)
{
    if (!entry["accepted"].get<bool>())
        return "not counted";
    return fmt::format("accepted at {} on {}", format_fitness(entry["fitness"]),
                       entry["acceptance"].value("gpu", std::string("?")));
}

} // namespace

Json flagged_section(const Archive& archive)
{
    Json entries = Json::array();
    for (const auto& candidate : archive.flagged_candidates())
        entries.push_back(flagged_entry(candidate, archive.path().string()));
    return entries;
}

std::string render_flagged_text(const Json& flagged)
{
    if (flagged.empty())
        return "";
    std::string out = fmt::format("Flagged: {} correct candidate{} timed below the roofline floor (the search does not "
                                  "count them)\n",
                                  flagged.size(), flagged.size() == 1 ? "" : "s");
    TextTable table({{"id", TextTable::Align::right}, {"measured", TextTable::Align::right}, {"status"}});
    for (const auto& entry : flagged)
        table.add_row({fmt::format("#{}", entry["id"].get<int64_t>()), format_fitness(entry["measured_fitness"]),
                       status_text(entry)});
    out += table.render();
    for (const auto& entry : flagged) {
        out += fmt::format("  #{}: {}\n", entry["id"].get<int64_t>(), reasons_text(entry));
        if (!entry["accepted"].get<bool>())
            out += fmt::format("    accept it after re-measuring: {}\n", entry["accept_with"].get<std::string>());
    }
    return out;
}

std::string render_flagged_html(const Json& flagged)
{
    if (flagged.empty())
        return R"(<p class="empty-note">No candidate was timed below the roofline floor.</p>)";
    std::vector<TextTable::Column> columns{{"id", TextTable::Align::right},
                                           {"measured", TextTable::Align::right},
                                           {"bench medians"},
                                           {"why it is flagged"},
                                           {"status"}};
    std::vector<std::vector<std::string>> rows;
    for (const auto& entry : flagged) {
        std::vector<std::string> times;
        for (const auto& [label, ns] : entry["times_ns"].items())
            times.push_back(fmt::format("{} {}", label, format_duration_ns(ns.get<double>())));
        std::string status = entry["accepted"].get<bool>()
                                 ? html_escape(status_text(entry))
                                 : fmt::format("not counted; accept with <code>{}</code>",
                                               html_escape(entry["accept_with"].get<std::string>()));
        rows.push_back({fmt::format("#{}", entry["id"].get<int64_t>()), format_fitness(entry["measured_fitness"]),
                        html_escape(join(times, ", ")), html_escape(reasons_text(entry)), status});
    }
    return html_table(columns, rows, "data") +
           R"(<p class="caption">Correct candidates whose median beat the floor: the time the task's bytes take )"
           R"(at the theoretical DRAM bandwidth, less the output bytes the L2 can absorb, or its FLOP at the )"
           R"(peak rate. The search does not count them until a user re-measures and accepts one.</p>)";
}

} // namespace kforge
