// Reading user-written JSON with errors that say where.
//
// A JsonReader is a view of one value inside a document plus its location: the file name and the
// JSON path ("args[2].shape[1]"). Every accessor that finds the wrong thing throws
// Error(bad_input) with "FILE: PATH: what was expected", so validation code reads like a schema and
// never builds a message by hand.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/limits.hpp"

namespace kforge {

using Json = nlohmann::json;

// Why a JSON text was refused: `path` is the JSON path of the value being read ("args[2].gen.std";
// empty at the top level), `message` says what was wrong and where (line and column).
struct JsonParseFailure {
    std::string path;
    std::string message;
};

// Parses untrusted JSON text: syntax errors, numbers that do not fit a double (1e400, a
// 5000-digit integer) and nesting deeper than k_max_json_depth (util/limits.hpp) fill `failure`
// and return nullopt. Never throws for any input; linear in the text.
std::optional<Json> try_parse_json(std::string_view text, JsonParseFailure& failure);
// Same, throwing Error(bad_input) "FILE: invalid JSON at PATH: ... at line L, column C".
Json parse_json_text(std::string_view text, std::string_view file_label);
// Decodes one CBOR item (a worker frame) that another process wrote: truncated or malformed
// frames, trailing bytes and nesting deeper than k_max_json_depth fill `problem` and return
// nullopt, before nlohmann's recursive reader sees them. Never throws; linear in the frame.
std::optional<Json> try_parse_cbor(std::string_view bytes, std::string& problem);
// Reads (at most `max_bytes`, a regular file only) and parses a file.
Json parse_json_file(const std::string& path, uint64_t max_bytes = k_max_read_bytes);

class JsonReader
{
public:
    JsonReader(const Json& value, std::string file, std::string path = "")
        : m_value(&value), m_file(std::move(file)), m_path(std::move(path))
    {
    }

    const Json& json() const { return *m_value; }
    const std::string& file() const { return m_file; }
    // "args[2].shape" or "(top level)".
    std::string where() const { return m_path.empty() ? "(top level)" : m_path; }

    // Throws Error(bad_input) "FILE: PATH: message".
    [[noreturn]] void fail(std::string_view message) const;

    bool is_object() const { return m_value->is_object(); }
    bool is_array() const { return m_value->is_array(); }
    bool is_string() const { return m_value->is_string(); }
    bool is_number() const { return m_value->is_number(); }

    // Object access. `at` requires the key; `find` returns nullopt when it is absent.
    bool has(std::string_view key) const;
    JsonReader at(std::string_view key) const;
    std::optional<JsonReader> find(std::string_view key) const;
    // Fails with "unknown field 'x' (did you mean 'y'?)" for keys outside `allowed`.
    void allow_only(std::initializer_list<std::string_view> allowed) const;
    std::vector<std::string> keys() const;

    // Array access.
    size_t size() const;
    JsonReader at(size_t index) const;
    std::vector<JsonReader> items() const;

    // Scalars; each fails naming the type it found.
    std::string as_string() const;
    int64_t as_int() const;
    double as_number() const;
    bool as_bool() const;
    // A number or a string (expression text), rendered as text: 256 -> "256".
    std::string as_expr_text() const;

    // Convenience for optional fields with defaults.
    std::string get_string(std::string_view key, std::string_view fallback) const;
    int64_t get_int(std::string_view key, int64_t fallback) const;
    double get_number(std::string_view key, double fallback) const;
    bool get_bool(std::string_view key, bool fallback) const;

private:
    JsonReader child(const Json& value, std::string path) const;
    void require(bool ok, std::string_view expected) const;

    const Json* m_value;
    std::string m_file;
    std::string m_path;
};

// A short name of a JSON value's type for messages: "a string", "an array", ...
std::string json_type_name(const Json& value);

} // namespace kforge
