// Helpers shared by the archive's source files: the clock, and turning stored names back into
// enums with errors that name the archive and the row. Internal to archive/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "archive/sqlite.hpp"
#include "core/candidate.hpp"
#include "core/records.hpp"
#include "core/verdict.hpp"

namespace kforge {

// Seconds since the epoch, with sub-second resolution.
double now_seconds();
// `value` unless it is 0, in which case now.
double time_or_now(double value);

// Each reads a name stored in `column` and throws Error(bad_input) "FILE: WHAT: unknown ... 'x'"
// when this kforge does not know it.
VerdictKind verdict_column(const Statement& row, int column, std::string_view what);
Origin origin_column(const Statement& row, int column, std::string_view what);
CallPurpose purpose_column(const Statement& row, int column, std::string_view what);
// {"BLOCK": 256} -> ParamPoint; a non-integer value is an error naming the file and `what`.
ParamPoint params_column(const Statement& row, int column, std::string_view what);
Json params_to_json(const ParamPoint& params);
// Archive::damaged_json on a connection (archive/stored_json.cpp), for open() before the Archive exists.
std::vector<std::string> find_damaged_json(Database& db, size_t limit);

} // namespace kforge
