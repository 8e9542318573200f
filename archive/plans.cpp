// The plans behind two-phase candidates (schema version 3): candidate_plan holds the plan, its
// status, the planner's calls and the predicted and measured speedups; candidate_technique the
// techniques it claimed, in order, with what the code shows of each. Both rows of a plan are
// written in one transaction, normally inside the search's recording transaction of the candidate,
// so a candidate never exists without the plan that made it. On an archive older than version 3,
// opened read-only, the queries return nothing.
#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sqlite.hpp"
#include "archive/store_detail.hpp"
#include "util/error.hpp"

namespace kforge {
namespace {

constexpr const char* k_plan_columns =
    "candidate_id, menu, status, problem, plan, calls, focus, predicted_speedup, measured_speedup, followed";

CandidatePlan plan_row(const Statement& row)
{
    CandidatePlan plan;
    plan.candidate_id = row.column_int(0);
    std::string what = fmt::format("the plan of candidate {}", plan.candidate_id);
    plan.menu = row.column_text(1);
    std::string status = row.column_text(2);
    auto parsed = parse_plan_status(status);
    if (!parsed)
        fail_input("{}: {}: unknown plan status '{}' (written by a newer kforge?)", row.database().path(), what, status);
    plan.status = *parsed;
    plan.problem = row.column_text(3);
    Json body = row.column_json(4, what);
    if (!body.is_null())
        plan.plan = TechniquePlan::from_json(body, row.database().path() + ": " + what);
    Json calls = row.column_json(5, what + " calls");
    if (calls.is_array())
        for (const auto& id : calls)
            if (id.is_number_integer())
                plan.call_ids.push_back(id.get<int64_t>());
    plan.focus = row.column_text(6);
    plan.predicted_speedup = row.column_optional_real(7);
    plan.measured_speedup = row.column_optional_real(8);
    if (auto followed = row.column_optional_int(9))
        plan.followed = *followed != 0;
    return plan;
}

void read_techniques(Database& db, CandidatePlan& plan)
{
    Statement query(db, "SELECT technique, title, on_menu, applied FROM candidate_technique WHERE candidate_id = ? "
                        "ORDER BY position");
    query.bind_int(plan.candidate_id);
    while (query.step()) {
        ClaimedTechnique claimed;
        claimed.choice = {query.column_text(0), query.column_text(1), query.column_int(2) != 0};
        std::string applied = query.column_text(3);
        auto parsed = parse_applied(applied);
        if (!parsed)
            fail_input("{}: the plan of candidate {}: unknown technique state '{}' (written by a newer kforge?)",
                       db.path(), plan.candidate_id, applied);
        claimed.applied = *parsed;
        plan.techniques.push_back(std::move(claimed));
    }
}

} // namespace

void Archive::insert_candidate_plan(const CandidatePlan& plan)
{
    require_writer("store a plan");
    Transaction transaction(*m_db);
    Statement insert(*m_db, fmt::format("INSERT INTO candidate_plan ({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                        k_plan_columns));
    insert.bind_int(plan.candidate_id).bind_text(plan.menu).bind_text(plan_status_name(plan.status));
    insert.bind_text(plan.problem).bind_json(plan.plan ? plan.plan->to_json() : Json()).bind_json(Json(plan.call_ids));
    insert.bind_text(plan.focus).bind_optional_real(plan.predicted_speedup).bind_optional_real(plan.measured_speedup);
    insert.bind_optional_int(plan.followed ? std::optional<int64_t>(*plan.followed ? 1 : 0) : std::nullopt);
    insert.run();
    for (size_t i = 0; i < plan.techniques.size(); ++i) {
        const ClaimedTechnique& claimed = plan.techniques[i];
        Statement technique(*m_db, "INSERT INTO candidate_technique (candidate_id, position, technique, title, on_menu, "
                                   "applied) VALUES (?, ?, ?, ?, ?, ?)");
        technique.bind_int(plan.candidate_id).bind_int(static_cast<int64_t>(i)).bind_text(claimed.choice.id);
        technique.bind_text(claimed.choice.title).bind_int(claimed.choice.on_menu ? 1 : 0);
        technique.bind_text(applied_name(claimed.applied));
        technique.run();
    }
    transaction.commit();
}

std::optional<CandidatePlan> Archive::candidate_plan(int64_t candidate_id) const
{
    if (!has_plan_tables())
        return std::nullopt;
    Statement query(*m_db, fmt::format("SELECT {} FROM candidate_plan WHERE candidate_id = ?", k_plan_columns));
    query.bind_int(candidate_id);
    if (!query.step())
        return std::nullopt;
    CandidatePlan plan = plan_row(query);
    read_techniques(*m_db, plan);
    return plan;
}

std::vector<CandidatePlan> Archive::candidate_plans() const
{
    std::vector<CandidatePlan> plans;
    if (!has_plan_tables())
        return plans;
    Statement query(*m_db, fmt::format("SELECT {} FROM candidate_plan ORDER BY candidate_id", k_plan_columns));
    while (query.step())
        plans.push_back(plan_row(query));
    for (auto& plan : plans)
        read_techniques(*m_db, plan);
    return plans;
}

} // namespace kforge
