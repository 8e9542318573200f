// The end-to-end table of `kforge model assemble` and `report`: assembled.json's times, read
// leniently (a way that did not build has an error instead of a time; an older folder has four
// plain keys), and the time between kernels that the issue of region wins not adding up is about.
#include "model/end_to_end.hpp"

#include <fmt/format.h>

#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

struct Way {
    const char* key;
    const char* label;
    bool assembled;
};

constexpr Way k_ways[] = {
    {"eager", "torch eager", false},
    {"eager_graph", "eager as a CUDA graph", false},
    {"compile", "torch.compile", false},
    {"compile_max_autotune", "torch.compile max-autotune", false},
    {"assembled", "assembled", true},
    {"assembled_graph", "assembled as a CUDA graph", true},
    {"assembled_compile", "assembled under torch.compile", true},
    {"assembled_compile_max_autotune", "assembled under torch.compile max-autotune", true},
};

std::optional<double> number_at(const Json& doc, const std::string& key)
{
    if (!doc.is_object() || !doc.contains(key) || !doc[key].is_number())
        return std::nullopt;
    double v = doc[key].get<double>();
    return v > 0 ? std::optional<double>(v) : std::nullopt;
}

std::string ms_text(const std::optional<double>& s)
{
    return s ? format_duration_ns(*s * 1e9) : "-";
}

std::string ratio_text(const std::optional<double>& base, const std::optional<double>& s)
{
    return base && s ? fmt::format("{:.2f}x", *base / *s) : "-";
}

std::optional<double> seconds_of(const std::vector<ForwardTime>& ways, const char* key)
{
    for (const auto& w : ways)
        if (w.key == key)
            return w.seconds;
    return std::nullopt;
}

std::optional<BetweenKernels> between(const Json& assembled, const std::vector<ForwardTime>& ways, const char* key,
                                      std::optional<double> regions_after_s, bool with_profile)
{
    auto seconds = seconds_of(ways, key);
    if (!seconds)
        return std::nullopt;
    BetweenKernels b{*seconds, regions_after_s, std::nullopt};
    const Json kernels = assembled.value("kernels_s", Json());
    if (kernels.is_object())
        b.kernels_s = number_at(kernels, key);
    else if (with_profile) // folders of the first side-by-side table
        b.kernels_s = number_at(assembled, "assembled_kernels_s");
    if (!b.kernels_s && !regions_after_s)
        return std::nullopt;
    return b;
}

} // namespace

std::vector<ForwardTime> forward_times(const Json& assembled)
{
    std::vector<ForwardTime> out;
    const Json times = assembled.is_object() ? assembled.value("times", Json()) : Json();
    const Json errors = assembled.is_object() ? assembled.value("build_errors", Json()) : Json();
    const Json matches = assembled.is_object() ? assembled.value("matches_by_way", Json()) : Json();
    for (const auto& way : k_ways) {
        ForwardTime t{way.key, way.label, std::nullopt, std::nullopt, ""};
        t.seconds = times.is_object() ? number_at(times, way.key) : number_at(assembled, std::string(way.key) + "_s");
        if (errors.is_object() && errors.contains(way.key) && errors[way.key].is_string())
            t.error = errors[way.key].get<std::string>();
        if (way.key == std::string("assembled") && assembled.is_object() && assembled.contains("matches") &&
            assembled["matches"].is_boolean())
            t.matches = assembled["matches"].get<bool>();
        else if (matches.is_object() && matches.contains(way.key) && matches[way.key].is_boolean())
            t.matches = matches[way.key].get<bool>();
        out.push_back(t);
    }
    return out;
}

std::vector<std::string> forward_time_lines(const Json& assembled, std::optional<double> regions_after_s)
{
    std::vector<ForwardTime> ways = forward_times(assembled);
    auto eager = seconds_of(ways, "eager"), compile = seconds_of(ways, "compile"),
         autotune = seconds_of(ways, "compile_max_autotune");
    TextTable table({{"one forward"},
                     {"time", TextTable::Align::right},
                     {"vs eager", TextTable::Align::right},
                     {"vs compile", TextTable::Align::right},
                     {"vs max-autotune", TextTable::Align::right},
                     {"matches"}});
    std::vector<std::string> failures;
    for (const auto& w : ways) {
        if (!w.seconds && w.error.empty())
            continue;
        std::string matches = w.matches ? (*w.matches ? "yes" : "NO") : "";
        if (!w.error.empty()) {
            table.add_row({w.label, "failed"});
            failures.push_back(fmt::format("{} failed: {}", w.label, first_line(w.error, 200)));
        } else {
            table.add_row({w.label, ms_text(w.seconds), ratio_text(eager, w.seconds), ratio_text(compile, w.seconds),
                           ratio_text(autotune, w.seconds), matches});
        }
    }
    std::vector<std::string> lines;
    if (table.empty())
        return lines;
    if (assembled.contains("rounds") && assembled.contains("iterations"))
        lines.push_back(fmt::format("timed side by side in one process: median of {} rounds of {} forwards each",
                                    assembled.value("rounds", 0), assembled.value("iterations", 0)));
    for (const auto& line : split(table.render(""), '\n'))
        if (!line.empty())
            lines.push_back(line);
    lines.insert(lines.end(), failures.begin(), failures.end());
    const Json under = assembled.value("under_compile", Json());
    if (under.is_object() && under.contains("kept") && under["kept"].is_array() && under.contains("trials") &&
        under["trials"].is_array() && !under["trials"].empty())
        lines.push_back(fmt::format("under torch.compile, {} of {} replaced regions stay kforge's operators: each was "
                                    "added only where the compiled model got faster (assembled.json, under_compile)",
                                    under["kept"].size(), under["trials"].size() - 1));
    else if (under.is_object() && under.contains("error") && under["error"].is_string())
        lines.push_back("the choice of operators under torch.compile failed: " + under["error"].get<std::string>());
    for (const char* key : {"assembled", "assembled_graph"}) {
        auto b = between(assembled, ways, key, regions_after_s, key == std::string("assembled"));
        if (!b)
            continue;
        std::string way = key == std::string("assembled") ? "assembled" : "assembled as a CUDA graph";
        std::string line;
        if (b->kernels_s)
            line = fmt::format("between kernels, {}: {} of {} ({:.1f}%): the GPU idle in a forward (torch.profiler: "
                               "its kernels, copies and fills ran {})",
                               way, ms_text(b->assembled_s - *b->kernels_s), ms_text(b->assembled_s),
                               100 * (b->assembled_s - *b->kernels_s) / b->assembled_s, ms_text(b->kernels_s));
        if (b->regions_s) {
            std::string against = b->overhead_s() >= 0
                ? fmt::format("the forward less the regions' {} = {} ({:.1f}%)", ms_text(b->regions_s),
                              ms_text(b->overhead_s()), 100 * b->overhead_s() / b->assembled_s)
                : fmt::format("the regions timed one by one take {}, more than the forward (each paid its own "
                              "launches)", ms_text(b->regions_s));
            line = line.empty() ? fmt::format("between kernels, {}: {}", way, against) : line + "; " + against;
        }
        lines.push_back(line);
    }
    return lines;
}

Json forward_times_json(const Json& assembled, std::optional<double> regions_after_s)
{
    Json ways = Json::array();
    for (const auto& w : forward_times(assembled)) {
        Json row = {{"key", w.key}, {"label", w.label}, {"seconds", w.seconds ? Json(*w.seconds) : Json()}};
        if (w.matches)
            row["matches"] = *w.matches;
        if (!w.error.empty())
            row["error"] = w.error;
        ways.push_back(row);
    }
    Json out = {{"ways", ways}};
    std::vector<ForwardTime> times = forward_times(assembled);
    for (const char* key : {"assembled", "assembled_graph"})
        if (auto b = between(assembled, times, key, regions_after_s, key == std::string("assembled")))
            out[std::string("between_kernels_") + key] = {
                {"assembled_s", b->assembled_s},
                {"regions_s", b->regions_s ? Json(*b->regions_s) : Json()},
                {"overhead_s", b->regions_s ? Json(b->overhead_s()) : Json()},
                {"share", b->regions_s ? Json(b->overhead_s() / b->assembled_s) : Json()},
                {"kernels_s", b->kernels_s ? Json(*b->kernels_s) : Json()}};
    return out;
}

} // namespace kforge
