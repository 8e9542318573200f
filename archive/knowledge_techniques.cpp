// Technique tries and schedules in the user-level knowledge base (its schema version 2).
//
// The knowledge base stores tries, not counters: one row per (run, candidate, technique). The
// statistics are sums computed when read, so they are exactly the sums of the runs' archives, a run
// handing its tries over twice (a resume after a crash between its archive commit and the knowledge
// base write) changes nothing, and leaving one run out (the run asking, whose own tries come from
// its archive in recorded order) is a WHERE clause.
#include <fmt/format.h>

#include <set>

#include "archive/knowledge_base.hpp"
#include "archive/sqlite.hpp"
#include "archive/store_detail.hpp"
#include "util/error.hpp"

namespace kforge {

void KnowledgeBase::require_writable(std::string_view action) const
{
    if (!m_db)
        fail_runtime("{}: internal error: cannot {}: the knowledge base is open read-only", m_path.string(), action);
}

size_t KnowledgeBase::add_technique_tries(const std::vector<TechniqueTry>& tries, std::string_view run_id)
{
    require_writable("store technique tries");
    if (tries.empty())
        return 0;
    size_t added = 0;
    Transaction transaction(*m_db);
    double now = now_seconds();
    for (const auto& one : tries) {
        Statement insert(*m_db, "INSERT OR IGNORE INTO technique_try (run_id, candidate_id, technique, task_name, "
                                "category, correct, improved, gain, predicted, created_at) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        insert.bind_text(run_id).bind_int(one.candidate_id).bind_text(one.technique).bind_text(one.task_name);
        insert.bind_text(one.category).bind_int(one.correct ? 1 : 0).bind_int(one.improved ? 1 : 0);
        insert.bind_optional_real(one.gain).bind_optional_real(one.predicted).bind_real(now);
        insert.run();
        added += static_cast<size_t>(sqlite3_changes(m_db->handle()));
    }
    transaction.commit();
    return added;
}

std::vector<std::pair<std::string, TechniqueTry>> KnowledgeBase::technique_tries() const
{
    std::vector<std::pair<std::string, TechniqueTry>> tries;
    if (!has_techniques())
        return tries;
    Statement query(*m_db, "SELECT run_id, candidate_id, technique, task_name, category, correct, improved, gain, "
                           "predicted FROM technique_try ORDER BY created_at, run_id, candidate_id, technique");
    while (query.step()) {
        TechniqueTry one;
        one.candidate_id = query.column_int(1);
        one.technique = query.column_text(2);
        one.task_name = query.column_text(3);
        one.category = query.column_text(4);
        one.correct = query.column_int(5) != 0;
        one.improved = query.column_int(6) != 0;
        one.gain = query.column_optional_real(7);
        one.predicted = query.column_optional_real(8);
        tries.emplace_back(query.column_text(0), std::move(one));
    }
    return tries;
}

std::map<std::string, TechniqueTally> KnowledgeBase::technique_tallies(std::string_view category,
                                                                       std::string_view exclude_run_id) const
{
    std::map<std::string, TechniqueTally> tallies;
    if (!has_techniques())
        return tallies;
    // Summed here rather than in SQL: the means are geometric and SQLite's log() is optional.
    Statement query(*m_db, "SELECT technique, correct, improved, gain, predicted FROM technique_try "
                           "WHERE category = ? AND run_id != ? ORDER BY run_id, candidate_id, technique");
    query.bind_text(category).bind_text(exclude_run_id);
    while (query.step()) {
        TechniqueTry one;
        one.technique = query.column_text(0);
        one.correct = query.column_int(1) != 0;
        one.improved = query.column_int(2) != 0;
        one.gain = query.column_optional_real(3);
        one.predicted = query.column_optional_real(4);
        tallies[one.technique].add(one);
    }
    return tallies;
}

void KnowledgeBase::put_schedule(const Schedule& schedule)
{
    require_writable("store a schedule");
    Statement upsert(*m_db, "INSERT OR REPLACE INTO schedule (run_id, task_name, category, speedup, steps, updated_at) "
                            "VALUES (?, ?, ?, ?, ?, ?)");
    upsert.bind_text(schedule.run_id).bind_text(schedule.task_name).bind_text(schedule.category);
    upsert.bind_real(schedule.speedup).bind_json(schedule.steps_json()).bind_real(now_seconds());
    upsert.run();
}

std::vector<Schedule> KnowledgeBase::schedules(std::string_view category, std::string_view exclude_run_id,
                                               size_t limit) const
{
    std::vector<Schedule> result;
    if (!has_techniques() || limit == 0)
        return result;
    Statement query(*m_db, "SELECT run_id, task_name, category, speedup, steps FROM schedule "
                           "WHERE category = ? AND run_id != ? ORDER BY speedup DESC, run_id");
    query.bind_text(category).bind_text(exclude_run_id);
    std::set<std::string> tasks;
    while (query.step() && result.size() < limit) {
        Schedule schedule;
        schedule.run_id = query.column_text(0);
        schedule.task_name = query.column_text(1);
        if (!tasks.insert(schedule.task_name).second)
            continue;
        schedule.category = query.column_text(2);
        schedule.speedup = query.column_real(3);
        std::string what = fmt::format("{}: the schedule of run {}", m_path.string(), schedule.run_id);
        schedule.steps = Schedule::steps_from_json(query.column_json(4, what), what);
        result.push_back(std::move(schedule));
    }
    return result;
}

} // namespace kforge
