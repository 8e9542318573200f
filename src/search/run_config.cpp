// The run configuration's JSON form and the --time text it stores; see run_config.hpp.
#include "search/run_config.hpp"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/limits.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

// The provider's or evaluator's settings: an object, whose members src/cli reads with defaults.
// Absent or null (what an older kforge or a hand edit may leave) reads as no settings, and a null
// member as an absent one.
Json settings_object(const JsonReader& reader, std::string_view key)
{
    auto field = reader.find(key);
    if (!field)
        return Json::object();
    if (!field->is_object())
        field->fail(fmt::format("expected an object of settings, found {}", json_type_name(field->json())));
    Json settings = Json::object();
    for (const auto& [name, value] : field->json().items())
        if (!value.is_null())
            settings[name] = value;
    return settings;
}

} // namespace

Json RunConfig::to_json() const
{
    auto entries = [](const std::vector<ModelEntry>& list) {
        Json json = Json::array();
        for (const auto& m : list)
            json.push_back(Json{{"spec", m.spec},
                                {"weight", m.weight},
                                {"temperature", m.temperature ? Json(*m.temperature) : Json()},
                                {"max_output_tokens", m.max_output_tokens}});
        return json;
    };
    return Json{{"search", search.to_json()},
                {"models", entries(models)},
                {"planner_models", entries(planner_models)},
                {"knowledge", knowledge ? Json(*knowledge) : Json()},
                {"provider", provider},
                {"evaluator", evaluator}};
}

RunConfig RunConfig::from_json(const Json& json, const std::string& what)
{
    RunConfig config;
    JsonReader reader(json, what);
    if (!reader.is_object() || !reader.has("search"))
        reader.fail("not the configuration of a `kforge optimize` run (no search settings)");
    config.search = SearchConfig::from_json(reader.at("search").json(), what + ": search");
    auto read_models = [&](std::string_view key, std::vector<ModelEntry>& into) {
        if (!reader.has(key))
            return;
        for (const auto& m : reader.at(key).items()) {
            ModelEntry entry;
            entry.spec = m.at("spec").as_string();
            entry.weight = m.get_number("weight", 1);
            if (m.has("temperature") && !m.at("temperature").json().is_null())
                entry.temperature = m.at("temperature").as_number();
            entry.max_output_tokens = m.get_int("max_output_tokens", 8192);
            into.push_back(entry);
        }
    };
    read_models("models", config.models);
    read_models("planner_models", config.planner_models);
    if (reader.has("knowledge") && !reader.at("knowledge").json().is_null())
        config.knowledge = reader.at("knowledge").as_string();
    config.provider = settings_object(reader, "provider");
    config.evaluator = settings_object(reader, "evaluator");
    config.origin = what;
    return config;
}

double parse_duration(const std::string& text)
{
    std::string body = trim(text);
    double total = 0;
    size_t i = 0;
    bool any = false;
    while (i < body.size()) {
        size_t start = i;
        while (i < body.size() && (std::isdigit(static_cast<unsigned char>(body[i])) || body[i] == '.'))
            ++i;
        if (start == i)
            fail(ErrorKind::usage, "--time '{}': expected a duration such as 90m, 2h, 1h30m or 3600", text);
        double value = 0;
        auto [end, ec] = std::from_chars(body.data() + start, body.data() + i, value);
        if (ec != std::errc() || end != body.data() + i)
            fail(ErrorKind::usage, "--time '{}': '{}' is not a number", text, body.substr(start, i - start));
        double unit = 1;
        if (i < body.size()) {
            char c = body[i++];
            unit = c == 'h' ? 3600 : c == 'm' ? 60 : c == 's' ? 1 : -1;
            if (unit < 0)
                fail(ErrorKind::usage, "--time '{}': unknown unit '{}' (use h, m or s)", text, c);
        }
        total += value * unit;
        any = true;
    }
    if (!any || !(total > 0))
        fail(ErrorKind::usage, "--time '{}': expected a positive duration such as 90m, 2h or 3600", text);
    if (total > k_max_session_seconds)
        fail(ErrorKind::usage, "--time '{}': at most a year ({:.0f} s)", text, k_max_session_seconds);
    return total;
}

} // namespace kforge
