// The techniques section of `kforge report`: inspect's techniques table (techniques.cpp)
// as HTML, with a bar per technique showing how many of its tries were correct and how many improved
// on their parent, and the predicted beside the measured speedup.
#include <fmt/format.h>

#include "report/inspect_report.hpp"
#include "report/page.hpp"

namespace kforge {
namespace {

std::string ratio(const Json& value)
{
    return value.is_null() ? "-" : fmt::format("{:.2f}x", value.get<double>());
}

// Tried as a bar: improved (dark), correct but not faster (light), failed (empty).
std::string tries_bar(int64_t tried, int64_t correct, int64_t improved, int64_t most)
{
    if (tried == 0 || most == 0)
        return "";
    double scale = 100.0 / static_cast<double>(most);
    return fmt::format(R"(<div class="bar" title="{} improved, {} correct, {} tried">)"
                       R"(<div class="v-correct" style="width:{:.1f}%;display:inline-block"></div>)"
                       R"(<div class="v-incorrect" style="width:{:.1f}%;display:inline-block;opacity:.35"></div>)"
                       R"(</div>)",
                       improved, correct, tried, scale * static_cast<double>(improved),
                       scale * static_cast<double>(correct - improved));
}

} // namespace

std::string render_techniques(const ReportData& data)
{
    if (!data.inspect.contains("techniques"))
        return "";
    const Json& section = data.inspect["techniques"];
    if (section["plans"].get<int64_t>() == 0)
        return "";
    int64_t most = 0;
    for (const auto& row : section["rows"])
        most = std::max(most, row["tried"].get<int64_t>());
    std::vector<std::vector<std::string>> rows;
    for (const auto& row : section["rows"]) {
        std::string name = "<code>" + html_escape(row["technique"].get<std::string>()) + "</code>";
        if (!row["on_menu"].get<bool>())
            name += R"( <span class="muted">(new)</span>)";
        int64_t tried = row["tried"].get<int64_t>(), correct = row["correct"].get<int64_t>();
        int64_t improved = row["improved"].get<int64_t>();
        rows.push_back({name, html_escape(row["title"].get<std::string>()), std::to_string(tried),
                        std::to_string(correct), std::to_string(improved), tries_bar(tried, correct, improved, most),
                        ratio(row["mean_gain"]), ratio(row["predicted"]), ratio(row["measured"]),
                        std::to_string(row["missing"].get<int64_t>())});
    }
    using Align = TextTable::Align;
    std::string menus;
    for (const auto& menu : section["menus"])
        menus += (menus.empty() ? "" : ", ") + html_escape(menu.get<std::string>());
    return "<p>" + html_escape(techniques_heading(section)) + ". Menu: " + menus + ".</p>" +
           html_table({{"technique"},
                       {"what"},
                       {"tried", Align::right},
                       {"correct", Align::right},
                       {"improved", Align::right},
                       {""},
                       {"mean gain", Align::right},
                       {"predicted", Align::right},
                       {"measured", Align::right},
                       {"left out", Align::right}},
                      rows, "data techniques") +
           R"(<p class="caption">A try is a two-phase candidate whose code shows the technique its plan )"
           R"(claimed. Mean gain: the geometric mean speedup over the parent of the correct tries. Predicted )"
           R"(and measured compare the plans' expected speedups with what those same tries measured. Left )"
           R"(out: plans that claimed the technique whose code does not show it (not counted as tries).</p>)";
}

} // namespace kforge
