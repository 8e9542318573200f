// Location-aware JSON access; see the header for the idea.
#include "util/json_reader.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {

namespace {

// "line L, column C" of byte `offset` (1-based, as editors count).
std::string line_and_column(std::string_view text, size_t offset)
{
    offset = std::min(offset, text.size());
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return fmt::format("line {}, column {}", line, column);
}

// Builds the document from nlohmann's SAX events, keeping the JSON path of the value being read
// (for messages) and refusing nesting past the limit before it is built: nlohmann's parser is
// iterative, but its printer and the code that walks documents recurse.
class BoundedDomBuilder
{
public:
    BoundedDomBuilder(std::string_view text, Json& root, JsonParseFailure& failure)
        : m_text(text), m_root(root), m_failure(failure)
    {
    }

    bool null() { return put(Json(nullptr)); }
    bool boolean(bool value) { return put(Json(value)); }
    bool number_integer(Json::number_integer_t value) { return put(Json(value)); }
    bool number_unsigned(Json::number_unsigned_t value) { return put(Json(value)); }
    bool number_float(Json::number_float_t value, const Json::string_t&) { return put(Json(value)); }
    bool string(Json::string_t& value) { return put(Json(std::move(value))); }
    bool binary(Json::binary_t& value) { return put(Json::binary(std::move(value))); }
    bool start_object(std::size_t) { return open(Json::object()); }
    bool start_array(std::size_t) { return open(Json::array()); }
    bool key(Json::string_t& name)
    {
        m_open.back().key = std::move(name);
        return true;
    }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& e)
    {
        std::string message = e.what();
        if (auto at = message.find("] "); at != std::string::npos)
            message = message.substr(at + 2);
        // nlohmann reports an overflowing number as out_of_range 406 with no position.
        if (e.id == 406)
            message = fmt::format("the number {} does not fit in a double, at {}",
                                  last_token.size() <= 40
                                      ? last_token
                                      : fmt::format("{}... ({} characters)", last_token.substr(0, 20), last_token.size()),
                                  line_and_column(m_text, position));
        fail(message);
        return false;
    }

private:
    struct Frame {
        Json* value;
        std::string key; // objects: the key whose value is being read
    };

    std::string path() const
    {
        std::string out;
        for (size_t i = 0; i < m_open.size(); ++i) {
            const Frame& frame = m_open[i];
            // An array's open child is already its last element; a scalar being read is not yet one.
            if (frame.value->is_array())
                out += fmt::format("[{}]", frame.value->size() - (i + 1 < m_open.size() ? 1 : 0));
            else if (!frame.key.empty())
                out += (out.empty() ? "" : ".") + frame.key;
        }
        return out;
    }

    void fail(std::string message)
    {
        if (m_failed)
            return;
        m_failed = true;
        m_failure.path = path();
        m_failure.message = std::move(message);
    }

    Json* put(Json value)
    {
        if (m_open.empty()) {
            m_root = std::move(value);
            return &m_root;
        }
        Json& parent = *m_open.back().value;
        if (parent.is_array()) {
            parent.push_back(std::move(value));
            return &parent.back();
        }
        Json& slot = parent[m_open.back().key];
        slot = std::move(value);
        return &slot;
    }

    bool open(Json container)
    {
        if (m_open.size() >= k_max_json_depth) {
            fail(fmt::format("arrays and objects nested more than {} levels deep", k_max_json_depth));
            return false;
        }
        Json* placed = put(std::move(container));
        m_open.push_back({placed, {}});
        return true;
    }

    bool close()
    {
        m_open.pop_back();
        return true;
    }

    std::string_view m_text;
    Json& m_root;
    JsonParseFailure& m_failure;
    std::vector<Frame> m_open;
    bool m_failed = false;
};

} // namespace

std::optional<Json> try_parse_json(std::string_view text, JsonParseFailure& failure)
{
    Json root;
    BoundedDomBuilder builder(text, root, failure);
    bool ok = false;
    try {
        ok = Json::sax_parse(text.begin(), text.end(), &builder);
    } catch (const Json::exception& e) {
        failure.message = e.what();
    }
    if (!ok) {
        if (failure.message.empty())
            failure.message = "the text is not JSON";
        return std::nullopt;
    }
    return root;
}

Json parse_json_text(std::string_view text, std::string_view file_label)
{
    JsonParseFailure failure;
    std::optional<Json> json = try_parse_json(text, failure);
    if (!json) {
        if (failure.path.empty())
            fail_input("{}: invalid JSON: {}", file_label, failure.message);
        fail_input("{}: invalid JSON at {}: {}", file_label, failure.path, failure.message);
    }
    return std::move(*json);
}

Json parse_json_file(const std::string& path, uint64_t max_bytes)
{
    return parse_json_text(read_file(path, max_bytes, "JSON file"), path);
}

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
