// The search's resumable state: MAP-Elites placements (with their history) and key/value state such
// as the RNG and generation counters. Callers that must keep these in step with a candidate (the
// new elite and the RNG state after it) group the writes with Archive::atomically().
#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sqlite.hpp"
#include "archive/store_detail.hpp"

namespace kforge {
namespace {

Elite read_elite(const Statement& row)
{
    Elite elite;
    elite.island = static_cast<int>(row.column_int(0));
    elite.cell = row.column_text(1);
    elite.candidate_id = row.column_int(2);
    elite.fitness = row.column_real(3);
    return elite;
}

} // namespace

void Archive::set_elite(const Elite& elite)
{
    require_writer("place an elite");
    Transaction transaction(*m_db);
    double now = now_seconds();
    Statement retire(
        *m_db,
        "UPDATE elite SET replaced_at = ? WHERE island = ? AND cell = ? AND replaced_at IS NULL");
    retire.bind_real(now).bind_int(elite.island).bind_text(elite.cell);
    retire.run();
    Statement place(*m_db, "INSERT INTO elite (island, cell, candidate_id, fitness, placed_at) "
                           "VALUES (?, ?, ?, ?, ?)");
    place.bind_int(elite.island)
        .bind_text(elite.cell)
        .bind_int(elite.candidate_id)
        .bind_real(elite.fitness);
    place.bind_real(now);
    place.run();
    transaction.commit();
}

std::vector<Elite> Archive::elites(std::optional<int> island) const
{
    Statement query(
        *m_db, "SELECT island, cell, candidate_id, fitness FROM elite "
               "WHERE replaced_at IS NULL AND (?1 IS NULL OR island = ?1) ORDER BY island, cell");
    query.bind_optional_int(island ? std::optional<int64_t>(*island) : std::nullopt);
    std::vector<Elite> result;
    while (query.step())
        result.push_back(read_elite(query));
    return result;
}

std::vector<ElitePlacement> Archive::elite_history() const
{
    Statement query(*m_db, "SELECT island, cell, candidate_id, fitness, placed_at, replaced_at "
                           "FROM elite ORDER BY id");
    std::vector<ElitePlacement> result;
    while (query.step())
        result.push_back({read_elite(query), query.column_real(4), query.column_optional_real(5)});
    return result;
}

std::optional<Json> Archive::search_state(std::string_view key) const
{
    Statement query(*m_db, "SELECT value FROM search_state WHERE key = ?");
    query.bind_text(key);
    if (!query.step())
        return std::nullopt;
    return query.column_json(0, fmt::format("search_state '{}'", key));
}

void Archive::set_search_state(std::string_view key, const Json& value)
{
    require_writer("store search state");
    Statement upsert(
        *m_db,
        "INSERT INTO search_state (key, value, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at");
    upsert.bind_text(key).bind_json(value).bind_real(now_seconds());
    upsert.run();
}

} // namespace kforge
