// Read queries over candidates: the best, the top N, verdict counts, failures, lineage, and the
// fitness series. They return summaries (no sources or blobs) except best_candidate(), which the
// export needs in full.
#include <set>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sqlite.hpp"
#include "archive/store_detail.hpp"

namespace kforge {
namespace {

constexpr const char* k_summary_columns = "candidate.id, parent_id, island, generation, origin, "
                                          "verdict, fitness, best_params, note, created_at";

CandidateSummary read_summary(const Statement& row)
{
    CandidateSummary s;
    s.id = row.column_int(0);
    std::string what = fmt::format("candidate {}", s.id);
    s.parent_id = row.column_optional_int(1);
    s.island = static_cast<int>(row.column_int(2));
    s.generation = static_cast<int>(row.column_int(3));
    s.origin = origin_column(row, 4, what);
    s.verdict = verdict_column(row, 5, what);
    s.fitness = row.column_optional_real(6);
    s.best_params = params_column(row, 7, what + " best_params");
    s.note = row.column_text(8);
    s.created_at = row.column_real(9);
    return s;
}

} // namespace

std::optional<Candidate> Archive::best_candidate() const
{
    Statement query(*m_db,
                    "SELECT id FROM candidate WHERE verdict = 'correct' AND fitness IS NOT NULL "
                    "ORDER BY fitness DESC, id ASC LIMIT 1");
    if (!query.step())
        return std::nullopt;
    return candidate(query.column_int(0));
}

std::vector<CandidateSummary> Archive::top_candidates(size_t limit) const
{
    Statement query(
        *m_db,
        fmt::format("SELECT {} FROM candidate WHERE verdict = 'correct' AND fitness IS NOT NULL "
                    "ORDER BY fitness DESC, id ASC LIMIT ?",
                    k_summary_columns));
    query.bind_int(static_cast<int64_t>(limit));
    std::vector<CandidateSummary> result;
    while (query.step())
        result.push_back(read_summary(query));
    return result;
}

std::map<VerdictKind, int64_t> Archive::verdict_counts() const
{
    Statement query(*m_db, "SELECT verdict, count(*) FROM candidate GROUP BY verdict");
    std::map<VerdictKind, int64_t> counts;
    while (query.step())
        counts[verdict_column(query, 0, "candidate verdicts")] = query.column_int(1);
    return counts;
}

std::vector<FailureRow> Archive::failures(size_t limit, size_t max_message_chars) const
{
    Statement query(
        *m_db,
        "SELECT id, verdict, substr(message, 1, ?), origin, island, created_at FROM candidate "
        "WHERE verdict != 'correct' ORDER BY id DESC LIMIT ?");
    query.bind_int(static_cast<int64_t>(max_message_chars)).bind_int(static_cast<int64_t>(limit));
    std::vector<FailureRow> result;
    while (query.step()) {
        FailureRow row;
        row.candidate_id = query.column_int(0);
        std::string what = fmt::format("candidate {}", row.candidate_id);
        row.verdict = verdict_column(query, 1, what);
        row.message = query.column_text(2);
        row.origin = origin_column(query, 3, what);
        row.island = static_cast<int>(query.column_int(4));
        row.created_at = query.column_real(5);
        result.push_back(std::move(row));
    }
    return result;
}

std::vector<CandidateSummary> Archive::lineage(int64_t id) const
{
    // One candidate at a time, parent after child. Parents are stored before their children, so a
    // sound archive never loops; a hand-edited or damaged one can (two candidates each other's
    // parent), and the walk stops at the first candidate it has already listed.
    Statement query(*m_db, fmt::format("SELECT {} FROM candidate WHERE id = ?", k_summary_columns));
    std::vector<CandidateSummary> result;
    std::set<int64_t> seen;
    std::optional<int64_t> next = id;
    while (next && seen.insert(*next).second) {
        query.reset();
        query.bind_int(*next);
        if (!query.step())
            break;
        result.push_back(read_summary(query));
        next = result.back().parent_id;
    }
    return result;
}

std::vector<FitnessPoint> Archive::fitness_series() const
{
    Statement query(*m_db, "SELECT id, created_at, verdict, fitness FROM candidate ORDER BY id");
    std::vector<FitnessPoint> result;
    while (query.step()) {
        FitnessPoint point;
        point.candidate_id = query.column_int(0);
        point.created_at = query.column_real(1);
        point.verdict = verdict_column(query, 2, fmt::format("candidate {}", point.candidate_id));
        point.fitness = query.column_optional_real(3);
        result.push_back(point);
    }
    return result;
}

} // namespace kforge
