// Location-aware JSON access; see the header for the idea.
#include "util/json_reader.hpp"

#include <cmath>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {

Json parse_json_text(std::string_view text, std::string_view file_label)
{
    try {
        return Json::parse(text.begin(), text.end());
    } catch (const Json::parse_error& e) {
        // nlohmann's message already carries "at line L, column C"; keep only that part.
        std::string message = e.what();
        if (auto at = message.find("] "); at != std::string::npos)
            message = message.substr(at + 2);
        fail_input("{}: invalid JSON: {}", file_label, message);
    }
}

Json parse_json_file(const std::string& path) { return parse_json_text(read_file(path), path); }

std::string json_type_name(const Json& value)
{
    switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return fmt::format("a string (\"{}\")", truncate_text(value.get<std::string>(), 40));
    case Json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return fmt::format("the number {}", value.dump());
    default: return "an unsupported value";
    }
}

void JsonReader::fail(std::string_view message) const
{
    fail_input("{}: {}: {}", m_file, where(), message);
}

void JsonReader::require(bool ok, std::string_view expected) const
{
    if (!ok)
        fail(fmt::format("expected {}, found {}", expected, json_type_name(*m_value)));
}

JsonReader JsonReader::child(const Json& value, std::string path) const
{
    return JsonReader(value, m_file, std::move(path));
}

bool JsonReader::has(std::string_view key) const
{
    return m_value->is_object() && m_value->contains(key);
}

JsonReader JsonReader::at(std::string_view key) const
{
    require(m_value->is_object(), "an object");
    auto it = m_value->find(key);
    if (it == m_value->end())
        fail(fmt::format("missing required field '{}'", key));
    return child(*it, m_path.empty() ? std::string(key) : fmt::format("{}.{}", m_path, key));
}

std::optional<JsonReader> JsonReader::find(std::string_view key) const
{
    require(m_value->is_object(), "an object");
    auto it = m_value->find(key);
    if (it == m_value->end() || it->is_null())
        return std::nullopt;
    return child(*it, m_path.empty() ? std::string(key) : fmt::format("{}.{}", m_path, key));
}

void JsonReader::allow_only(std::initializer_list<std::string_view> allowed) const
{
    require(m_value->is_object(), "an object");
    std::vector<std::string> names(allowed.begin(), allowed.end());
    for (const auto& [key, value] : m_value->items()) {
        bool known = false;
        for (auto name : allowed)
            known = known || key == name;
        if (known)
            continue;
        std::string hint = closest_match(key, names);
        fail(fmt::format("unknown field '{}'{} (allowed: {})", key,
                         hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                         join(names, ", ")));
    }
}

std::vector<std::string> JsonReader::keys() const
{
    require(m_value->is_object(), "an object");
    std::vector<std::string> out;
    for (const auto& [key, value] : m_value->items())
        out.push_back(key);
    return out;
}

size_t JsonReader::size() const
{
    require(m_value->is_array(), "an array");
    return m_value->size();
}

JsonReader JsonReader::at(size_t index) const
{
    require(m_value->is_array(), "an array");
    if (index >= m_value->size())
        fail(fmt::format("index {} is past the end ({} elements)", index, m_value->size()));
    return child((*m_value)[index], fmt::format("{}[{}]", m_path, index));
}

std::vector<JsonReader> JsonReader::items() const
{
    std::vector<JsonReader> out;
    for (size_t i = 0; i < size(); ++i)
        out.push_back(at(i));
    return out;
}

std::string JsonReader::as_string() const
{
    require(m_value->is_string(), "a string");
    return m_value->get<std::string>();
}

int64_t JsonReader::as_int() const
{
    if (m_value->is_number_integer())
        return m_value->get<int64_t>();
    if (m_value->is_number_unsigned()) {
        uint64_t v = m_value->get<uint64_t>();
        if (v > static_cast<uint64_t>(INT64_MAX))
            fail(fmt::format("the integer {} does not fit in 64 bits", v));
        return static_cast<int64_t>(v);
    }
    if (m_value->is_number_float()) {
        double v = m_value->get<double>();
        if (std::floor(v) == v && std::fabs(v) < 9.0e18)
            return static_cast<int64_t>(v);
    }
    require(false, "an integer");
    return 0;
}

double JsonReader::as_number() const
{
    require(m_value->is_number(), "a number");
    return m_value->get<double>();
}

bool JsonReader::as_bool() const
{
    require(m_value->is_boolean(), "true or false");
    return m_value->get<bool>();
}

std::string JsonReader::as_expr_text() const
{
    if (m_value->is_string())
        return m_value->get<std::string>();
    if (m_value->is_number_integer() || m_value->is_number_unsigned())
        return m_value->dump();
    if (m_value->is_number_float())
        return fmt::format("{}", m_value->get<double>());
    require(false, "a number or an expression string");
    return {};
}

std::string JsonReader::get_string(std::string_view key, std::string_view fallback) const
{
    auto field = find(key);
    return field ? field->as_string() : std::string(fallback);
}

int64_t JsonReader::get_int(std::string_view key, int64_t fallback) const
{
    auto field = find(key);
    return field ? field->as_int() : fallback;
}

double JsonReader::get_number(std::string_view key, double fallback) const
{
    auto field = find(key);
    return field ? field->as_number() : fallback;
}

bool JsonReader::get_bool(std::string_view key, bool fallback) const
{
    auto field = find(key);
    return field ? field->as_bool() : fallback;
}

} // namespace kforge
