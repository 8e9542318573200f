// Shared helpers of the archive's source files; see store_detail.hpp.
#include "archive/store_detail.hpp"

#include <chrono>

#include "util/error.hpp"

namespace kforge {

double now_seconds()
{
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

double time_or_now(double value)
{
    return value == 0 ? now_seconds() : value;
}

VerdictKind verdict_column(const Statement& row, int column, std::string_view what)
{
    std::string name = row.column_text(column);
    if (auto kind = parse_verdict(name))
        return *kind;
    fail_input("{}: {}: unknown verdict '{}' (written by a newer kforge?)", row.database().path(),
               what, name);
}

Origin origin_column(const Statement& row, int column, std::string_view what)
{
    std::string name = row.column_text(column);
    if (auto origin = parse_origin(name))
        return *origin;
    fail_input("{}: {}: unknown origin '{}' (written by a newer kforge?)", row.database().path(),
               what, name);
}

CallPurpose purpose_column(const Statement& row, int column, std::string_view what)
{
    std::string name = row.column_text(column);
    if (auto purpose = parse_call_purpose(name))
        return *purpose;
    fail_input("{}: {}: unknown call purpose '{}' (written by a newer kforge?)",
               row.database().path(), what, name);
}

ParamPoint params_column(const Statement& row, int column, std::string_view what)
{
    Json json = row.column_json(column, what);
    ParamPoint params;
    if (json.is_null())
        return params;
    if (!json.is_object())
        fail_input("{}: {}: expected an object of params, found {}", row.database().path(), what,
                   json_type_name(json));
    for (const auto& [name, value] : json.items()) {
        if (!value.is_number_integer())
            fail_input("{}: {}: param '{}' is not an integer", row.database().path(), what, name);
        params[name] = value.get<int64_t>();
    }
    return params;
}

Json params_to_json(const ParamPoint& params)
{
    Json json = Json::object();
    for (const auto& [name, value] : params)
        json[name] = value;
    return json;
}

} // namespace kforge
