// Finding malformed JSON in an archive; see Archive::damaged_json.
//
// The archive's SQL never parses the JSON it stores (no json_extract, no json_each): SQLite's JSON
// functions fail a whole query on one malformed value, in their own words ("malformed JSON"), where
// a reader needs to know which row and column is damaged and to read the rest. So every stored
// JSON value is parsed by Statement::column_json, and this scan walks the same columns with the
// same words its readers use: what it reports is exactly what a reader of that value would throw.
#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sqlite.hpp"
#include "archive/store_detail.hpp"
#include "util/error.hpp"

namespace kforge {
namespace {

// A JSON column, with the row key its readers name a value by and the words they use ("{}": the key).
struct JsonColumn {
    const char* table;
    const char* key;
    const char* column;
    const char* what;
};

// Every JSON column of schema.cpp, in table order.
constexpr JsonColumn k_json_columns[] = {
    {"run", "id", "task_files", "run task_files"},
    {"run", "id", "config", "run config"},
    {"run", "id", "device", "run device"},
    {"llm_call", "id", "request", "llm_call {} request"},
    {"candidate", "id", "best_params", "candidate {} best_params"},
    {"candidate", "id", "descriptors", "candidate {} descriptors"},
    {"candidate", "id", "metrics", "candidate {} metrics"},
    {"candidate", "id", "compile_info", "candidate {} compile_info"},
    {"lesson", "id", "tags", "lesson {} tags"},
    {"lesson", "id", "evidence", "lesson {} evidence"},
    {"search_state", "key", "value", "search_state '{}'"},
    {"candidate_plan", "candidate_id", "plan", "the plan of candidate {}"},
    {"candidate_plan", "candidate_id", "calls", "the plan of candidate {} calls"},
};

bool has_table(Database& db, const char* table)
{
    Statement query(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
    query.bind_text(table);
    query.step();
    return query.column_int(0) > 0;
}

} // namespace

std::vector<std::string> find_damaged_json(Database& db, size_t limit)
{
    std::vector<std::string> found;
    for (const auto& c : k_json_columns) {
        if (found.size() >= limit)
            break;
        // A table the file's schema version does not have yet (an older archive) holds nothing to
        // check; one it should have is reported by open() as missing.
        if (!has_table(db, c.table))
            continue;
        try {
            Statement query(db, fmt::format("SELECT {0}, {1} FROM {2} ORDER BY {0}", c.key, c.column, c.table));
            while (query.step() && found.size() < limit) {
                std::string what = fmt::format(fmt::runtime(c.what), query.column_text(0));
                try {
                    (void)query.column_json(1, what);
                } catch (const DamagedArchive& e) {
                    found.push_back(e.what());
                }
            }
        } catch (const Error& e) {
            // A missing column (DamagedArchive) or a damaged page (SQLite's "malformed" database
            // image, bad input): said, and the other columns still checked. A failure of the
            // environment (I/O, locks) is not damage and ends the scan.
            if (e.kind() != ErrorKind::bad_input)
                throw;
            found.push_back(e.what());
        }
    }
    return found;
}

std::vector<std::string> Archive::damaged_json(size_t limit) const
{
    return find_damaged_json(*m_db, limit);
}

} // namespace kforge
