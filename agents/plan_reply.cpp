// The plan reader; see plan_reply.hpp for what it accepts.
//
// The order of attempts matters for what the archive says: a reply that parses as it stands is
// "parsed"; one that needed a local fix records the fix (the search stores it as "repaired"); one
// that parses but does not say what to do (no techniques, no steps) is a problem, not something to
// guess at, since the coder would be left without a plan.
#include "agents/plan_reply.hpp"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "agents/reply_parser.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr size_t k_max_steps = 12;
constexpr size_t k_max_slug_chars = 40;
constexpr double k_max_expected_speedup = 100;

// The first balanced {...} of `text` starting at `from`, skipping braces inside strings; "" if none.
std::string_view balanced_object(std::string_view text, size_t from = 0)
{
    size_t start = text.find('{', from);
    if (start == std::string_view::npos)
        return {};
    int depth = 0;
    bool in_string = false;
    for (size_t i = start; i < text.size(); ++i) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"')
            in_string = true;
        else if (c == '{')
            ++depth;
        else if (c == '}' && --depth == 0)
            return text.substr(start, i - start + 1);
    }
    return text.substr(start); // unbalanced: the caller's parse says what is wrong
}

// Removes // and /* */ comments and commas before a closing bracket (outside strings), and turns
// typographic double quotes into plain ones. Sets `what` to the fixes made.
std::string relax_json(std::string_view text, std::vector<std::string>& what)
{
    std::string quoted = std::string(text);
    for (const char* curly : {"\xe2\x80\x9c", "\xe2\x80\x9d"}) // “ ”
        if (quoted.find(curly) != std::string::npos) {
            quoted = replace_all(quoted, curly, "\"");
            what.push_back("typographic quotes");
        }
    std::string out;
    bool in_string = false, comments = false, commas = false;
    for (size_t i = 0; i < quoted.size(); ++i) {
        char c = quoted[i];
        if (in_string) {
            out += c;
            if (c == '\\' && i + 1 < quoted.size())
                out += quoted[++i];
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
            out += c;
        } else if (c == '/' && i + 1 < quoted.size() && quoted[i + 1] == '/') {
            while (i < quoted.size() && quoted[i] != '\n')
                ++i;
            out += '\n';
            comments = true;
        } else if (c == '/' && i + 1 < quoted.size() && quoted[i + 1] == '*') {
            size_t end = quoted.find("*/", i + 2);
            i = end == std::string::npos ? quoted.size() : end + 1;
            comments = true;
        } else if (c == ',') {
            size_t next = quoted.find_first_not_of(" \t\r\n", i + 1);
            if (next != std::string::npos && (quoted[next] == '}' || quoted[next] == ']'))
                commas = true;
            else
                out += c;
        } else {
            out += c;
        }
    }
    if (comments)
        what.push_back("comments");
    if (commas)
        what.push_back("trailing commas");
    return out;
}

// Where the plan's JSON may be: fenced json (or untagged) blocks holding an object, then the first
// balanced object of the whole reply.
std::vector<std::string> json_candidates(std::string_view reply)
{
    std::vector<std::string> found;
    for (const auto& block : find_fenced_blocks(reply))
        if ((block.lang == "json" || block.lang.empty() || block.lang == "jsonc") &&
            !balanced_object(block.body).empty())
            found.emplace_back(balanced_object(block.body));
    if (std::string_view bare = balanced_object(reply); !bare.empty())
        found.emplace_back(bare);
    return found;
}

std::string normalise_words(std::string_view text)
{
    return technique_slug(text);
}

// A technique name as the planner wrote it, matched to the menu.
TechniqueChoice resolve_technique(const std::string& written, const Menu& menu, std::vector<std::string>& warnings)
{
    std::string name = trim(written);
    std::string lower = to_lower(name);
    if (lower.rfind("new:", 0) == 0 || lower.rfind("new :", 0) == 0) {
        std::string words = trim(name.substr(name.find(':') + 1));
        return {std::string(k_new_technique_prefix) + technique_slug(words), words, false};
    }
    if (const MenuItem* item = menu.find(name))
        return {item->id, item->title, true};
    std::string slug = normalise_words(name);
    std::vector<std::string> ids;
    for (const auto& item : menu.items) {
        ids.push_back(item.id);
        if (item.id == slug || normalise_words(item.title) == slug) {
            warnings.push_back(fmt::format("'{}' read as the menu's '{}'", name, item.id));
            return {item.id, item.title, true};
        }
    }
    std::string close = closest_match(slug, ids);
    if (!close.empty() && !slug.empty()) {
        warnings.push_back(fmt::format("'{}' read as the menu's '{}'", name, close));
        return {close, menu.find(close)->title, true};
    }
    std::string kept = std::string(k_new_technique_prefix) + slug;
    warnings.push_back(fmt::format("'{}' is not on the menu: kept as a new technique '{}'", name, kept));
    return {kept, name, false};
}

std::optional<double> read_speedup(const Json& value, std::vector<std::string>& warnings)
{
    double number = 0;
    if (value.is_number()) {
        number = value.get<double>();
    } else if (value.is_string()) {
        std::string text = trim(value.get<std::string>());
        if (!text.empty() && (text.back() == 'x' || text.back() == 'X'))
            text.pop_back();
        try {
            size_t used = 0;
            number = std::stod(text, &used);
            if (used != text.size())
                number = 0;
        } catch (const std::logic_error&) {
            number = 0;
        }
    }
    if (!(number > 0) || number > k_max_expected_speedup || !std::isfinite(number)) {
        warnings.push_back(fmt::format("expected_speedup {} is not a speedup between 0 and {}; left out", value.dump(),
                                       k_max_expected_speedup));
        return std::nullopt;
    }
    return number;
}

std::vector<std::string> read_text_list(const Json& value)
{
    std::vector<std::string> items;
    if (value.is_string() && !trim(value.get<std::string>()).empty())
        items.push_back(trim(value.get<std::string>()));
    if (value.is_array())
        for (const auto& item : value)
            if (item.is_string() && !trim(item.get<std::string>()).empty())
                items.push_back(trim(item.get<std::string>()));
    return items;
}

// The plan an object describes, or the problem with it.
std::optional<TechniquePlan> plan_from_object(const Json& json, const Menu& menu, std::string& problem)
{
    if (!json.is_object()) {
        problem = "the JSON is " + json_type_name(json) + ", not an object";
        return std::nullopt;
    }
    TechniquePlan plan;
    const Json& techniques = json.contains("techniques") ? json["techniques"] : Json();
    std::vector<std::string> names;
    if (techniques.is_string())
        names.push_back(techniques.get<std::string>());
    if (techniques.is_array())
        for (const auto& item : techniques) {
            if (item.is_string())
                names.push_back(item.get<std::string>());
            else if (item.is_object() && item.contains("id") && item["id"].is_string())
                names.push_back(item["id"].get<std::string>());
            else if (item.is_object() && item.contains("name") && item["name"].is_string())
                names.push_back(item["name"].get<std::string>());
        }
    std::erase_if(names, [](const std::string& name) { return trim(name).empty(); });
    if (names.empty()) {
        problem = "\"techniques\" must list one to three technique ids from the menu (or \"new: NAME\")";
        return std::nullopt;
    }
    if (names.size() > k_max_plan_techniques) {
        plan.warnings.push_back(fmt::format("{} techniques named; kept the first {}", names.size(), k_max_plan_techniques));
        names.resize(k_max_plan_techniques);
    }
    for (const auto& name : names) {
        TechniqueChoice choice = resolve_technique(name, menu, plan.warnings);
        bool seen = false;
        for (const auto& earlier : plan.techniques)
            seen = seen || earlier.id == choice.id;
        if (!seen)
            plan.techniques.push_back(std::move(choice));
    }
    plan.steps = read_text_list(json.contains("steps") ? json["steps"] : Json());
    if (plan.steps.empty()) {
        problem = "\"steps\" must list what to change in the kernel, in order (an array of strings)";
        return std::nullopt;
    }
    if (plan.steps.size() > k_max_steps) {
        plan.warnings.push_back(fmt::format("{} steps; kept the first {}", plan.steps.size(), k_max_steps));
        plan.steps.resize(k_max_steps);
    }
    if (json.contains("expected_speedup") && !json["expected_speedup"].is_null())
        plan.expected_speedup = read_speedup(json["expected_speedup"], plan.warnings);
    else
        plan.warnings.push_back("no expected_speedup given");
    for (const char* key : {"why", "rationale", "reason"})
        if (json.contains(key) && json[key].is_string()) {
            plan.rationale = trim(json[key].get<std::string>());
            break;
        }
    return plan;
}

} // namespace

std::string technique_slug(std::string_view words)
{
    std::string slug;
    bool gap = false;
    for (char c : words) {
        unsigned char u = static_cast<unsigned char>(c);
        if (std::isalnum(u)) {
            if (gap && !slug.empty())
                slug += '-';
            slug += static_cast<char>(std::tolower(u));
            gap = false;
        } else {
            gap = true;
        }
        if (slug.size() >= k_max_slug_chars)
            break;
    }
    while (!slug.empty() && slug.back() == '-')
        slug.pop_back();
    return slug;
}

PlanReading read_plan_reply(std::string_view reply, const Menu& menu)
{
    PlanReading reading;
    std::vector<std::string> candidates = json_candidates(reply);
    if (candidates.empty()) {
        reading.problem = "the reply holds no JSON object";
        return reading;
    }
    std::string first_problem;
    for (const auto& text : candidates) {
        std::string problem;
        Json json;
        std::vector<std::string> fixes;
        // The bounded reader: nesting past k_max_json_depth and numbers past a double (1e400) are
        // problems like a syntax error, never an exception out of a reader that must not throw.
        JsonParseFailure failure;
        if (auto parsed = try_parse_json(text, failure)) {
            json = std::move(*parsed);
        } else {
            problem = fmt::format("the JSON does not parse: {}{}", failure.path.empty() ? "" : "at " + failure.path + ": ",
                                  failure.message);
            JsonParseFailure relaxed_failure;
            if (auto relaxed = try_parse_json(relax_json(text, fixes), relaxed_failure)) {
                json = std::move(*relaxed);
                problem.clear();
            } else {
                fixes.clear();
            }
        }
        std::optional<TechniquePlan> plan;
        if (problem.empty())
            plan = plan_from_object(json, menu, problem);
        if (plan) {
            reading.plan = std::move(plan);
            if (!fixes.empty())
                reading.fixed = "removed " + join(fixes, ", ") + " to read the JSON";
            return reading;
        }
        if (first_problem.empty())
            first_problem = problem;
    }
    reading.problem = first_problem;
    return reading;
}

} // namespace kforge
