// Candidates, their measurements and the run's baselines.
//
// insert_candidate() is the archive's central transaction: the candidate row, its inspirations,
// every measurement and the GPU that measured it (archive/gpus.cpp) commit together, so a reader
// (or a resumed run after kill -9) sees a candidate with all of its timings or does not see it at
// all.
#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sqlite.hpp"
#include "archive/store_detail.hpp"
#include "util/error.hpp"

namespace kforge {
namespace {

constexpr const char* k_measurement_columns =
    "shape_set, shape_label, subject, median_ns, q1_ns, q3_ns, min_ns, samples, discarded, "
    "sm_clock_mhz, confirmed, below_roofline, roofline_ns";

constexpr const char* k_candidate_columns =
    "id, source, source_hash, parent_id, island, generation, origin, llm_call_id, note, verdict, "
    "message, fitness, best_params, descriptors, metrics, compile_info, eval_seconds, created_at";

void insert_measurement(Database& db, std::optional<int64_t> candidate_id, const Measurement& m,
                        double now)
{
    Statement insert(db, fmt::format("INSERT INTO measurement (candidate_id, {}, measured_at) "
                                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                     k_measurement_columns));
    insert.bind_optional_int(candidate_id)
        .bind_text(m.shape_set)
        .bind_text(m.shape_label)
        .bind_text(m.subject);
    insert.bind_real(m.median_ns).bind_real(m.q1_ns).bind_real(m.q3_ns).bind_real(m.min_ns);
    insert.bind_int(m.samples).bind_int(m.discarded).bind_real(m.sm_clock_mhz);
    insert.bind_int(m.confirmed ? 1 : 0)
        .bind_int(m.below_roofline ? 1 : 0)
        .bind_real(m.roofline_ns);
    insert.bind_real(now);
    insert.run();
}

// Reads the measurement columns starting at `first`.
Measurement read_measurement(const Statement& row, int first)
{
    Measurement m;
    m.shape_set = row.column_text(first);
    m.shape_label = row.column_text(first + 1);
    m.subject = row.column_text(first + 2);
    m.median_ns = row.column_real(first + 3);
    m.q1_ns = row.column_real(first + 4);
    m.q3_ns = row.column_real(first + 5);
    m.min_ns = row.column_real(first + 6);
    m.samples = static_cast<int>(row.column_int(first + 7));
    m.discarded = static_cast<int>(row.column_int(first + 8));
    m.sm_clock_mhz = row.column_real(first + 9);
    m.confirmed = row.column_int(first + 10) != 0;
    m.below_roofline = row.column_int(first + 11) != 0;
    m.roofline_ns = row.column_real(first + 12);
    return m;
}

// Reads a full candidate row (k_candidate_columns, in order).
Candidate read_candidate_row(const Statement& row)
{
    Candidate c;
    c.id = row.column_int(0);
    std::string what = fmt::format("candidate {}", c.id);
    c.source = row.column_text(1);
    c.source_hash = row.column_text(2);
    c.parent_id = row.column_optional_int(3);
    c.island = static_cast<int>(row.column_int(4));
    c.generation = static_cast<int>(row.column_int(5));
    c.origin = origin_column(row, 6, what);
    c.llm_call_id = row.column_optional_int(7);
    c.note = row.column_text(8);
    c.evaluation.verdict.kind = verdict_column(row, 9, what);
    c.evaluation.verdict.message = row.column_text(10);
    c.evaluation.fitness = row.column_optional_real(11);
    c.evaluation.best_params = params_column(row, 12, what + " best_params");
    c.evaluation.descriptors = row.column_json(13, what + " descriptors");
    c.evaluation.metrics = row.column_json(14, what + " metrics");
    c.evaluation.compile_info = row.column_json(15, what + " compile_info");
    c.evaluation.eval_seconds = row.column_real(16);
    c.created_at = row.column_real(17);
    return c;
}

// A candidate row with its inspirations and measurements.
Candidate read_full_candidate(Database& db, const Archive& archive, const Statement& row)
{
    Candidate c = read_candidate_row(row);
    Statement links(db, "SELECT inspiration_id FROM candidate_inspiration WHERE candidate_id = ? "
                        "ORDER BY position");
    links.bind_int(c.id);
    while (links.step())
        c.inspiration_ids.push_back(links.column_int(0));
    c.evaluation.measurements = archive.measurements(c.id);
    c.evaluation.gpu = archive.candidate_gpu(c.id);
    return c;
}

// Correct candidates whose metrics say "suspicious", oldest first. Read here, not with SQLite's
// json_extract, which fails the whole query in its own words on one malformed value; column_json
// names the candidate and column instead (stored_json.cpp says why the SQL never parses JSON).
std::vector<int64_t> flagged_ids(Database& db)
{
    Statement query(db, "SELECT id, metrics FROM candidate WHERE verdict = 'correct' ORDER BY id");
    std::vector<int64_t> ids;
    while (query.step()) {
        int64_t id = query.column_int(0);
        Json metrics = query.column_json(1, fmt::format("candidate {} metrics", id));
        if (!metrics.is_object())
            continue;
        auto flag = metrics.find("suspicious");
        // What json_extract(...) = 1 matched: true, or the number 1.
        if (flag != metrics.end() && ((flag->is_boolean() && flag->get<bool>()) || (flag->is_number() && *flag == 1)))
            ids.push_back(id);
    }
    return ids;
}

} // namespace

int64_t Archive::insert_candidate(const Candidate& candidate)
{
    require_writer("store a candidate");
    const Evaluation& eval = candidate.evaluation;
    Transaction transaction(*m_db);
    Statement insert(
        *m_db, "INSERT INTO candidate (source, source_hash, parent_id, island, generation, origin, "
               "llm_call_id, note, verdict, message, fitness, best_params, descriptors, metrics, "
               "compile_info, eval_seconds, created_at) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind_text(candidate.source)
        .bind_text(candidate.source_hash)
        .bind_optional_int(candidate.parent_id);
    insert.bind_int(candidate.island)
        .bind_int(candidate.generation)
        .bind_text(origin_name(candidate.origin));
    insert.bind_optional_int(candidate.llm_call_id).bind_text(candidate.note);
    insert.bind_text(verdict_name(eval.verdict.kind)).bind_text(eval.verdict.message);
    insert.bind_optional_real(eval.fitness).bind_json(params_to_json(eval.best_params));
    insert.bind_json(eval.descriptors).bind_json(eval.metrics).bind_json(eval.compile_info);
    insert.bind_real(eval.eval_seconds).bind_real(time_or_now(candidate.created_at));
    insert.run();
    int64_t id = m_db->last_insert_id();

    for (size_t i = 0; i < candidate.inspiration_ids.size(); ++i) {
        Statement link(*m_db,
                       "INSERT INTO candidate_inspiration (candidate_id, position, inspiration_id) "
                       "VALUES (?, ?, ?)");
        link.bind_int(id).bind_int(static_cast<int64_t>(i)).bind_int(candidate.inspiration_ids[i]);
        link.run();
    }
    double now = now_seconds();
    for (const auto& m : eval.measurements)
        insert_measurement(*m_db, id, m, now);
    if (eval.gpu && has_gpu_tables()) {
        Statement measured(*m_db, "INSERT INTO candidate_gpu (candidate_id, gpu_id) VALUES (?, ?)");
        measured.bind_int(id).bind_int(gpu_row(*eval.gpu));
        measured.run();
    }
    transaction.commit();
    return id;
}

std::optional<Candidate> Archive::candidate(int64_t id) const
{
    Statement query(*m_db,
                    fmt::format("SELECT {} FROM candidate WHERE id = ?", k_candidate_columns));
    query.bind_int(id);
    if (!query.step())
        return std::nullopt;
    return read_full_candidate(*m_db, *this, query);
}

void Archive::for_each_candidate(const std::function<void(const Candidate&)>& visit) const
{
    Statement query(*m_db, fmt::format("SELECT {} FROM candidate ORDER BY id", k_candidate_columns));
    while (query.step())
        visit(read_full_candidate(*m_db, *this, query));
}

std::optional<GpuIdentity> Archive::candidate_gpu(int64_t id) const
{
    if (!has_gpu_tables())
        return std::nullopt;
    Statement gpu(*m_db, "SELECT g.host, g.mpi_rank, g.device_index, g.uuid, g.name FROM candidate_gpu c "
                         "JOIN gpu g ON g.id = c.gpu_id WHERE c.candidate_id = ?");
    gpu.bind_int(id);
    if (!gpu.step())
        return std::nullopt;
    return GpuIdentity{gpu.column_text(0), static_cast<int>(gpu.column_int(1)), static_cast<int>(gpu.column_int(2)),
                       gpu.column_text(3), gpu.column_text(4)};
}

std::optional<int64_t> Archive::find_candidate_by_hash(std::string_view source_hash) const
{
    Statement query(*m_db, "SELECT id FROM candidate WHERE source_hash = ? ORDER BY id LIMIT 1");
    query.bind_text(source_hash);
    if (!query.step())
        return std::nullopt;
    return query.column_int(0);
}

int64_t Archive::candidate_count() const
{
    Statement query(*m_db, "SELECT count(*) FROM candidate");
    query.step();
    return query.column_int(0);
}

std::vector<Measurement> Archive::measurements(int64_t candidate_id) const
{
    Statement query(*m_db,
                    fmt::format("SELECT {} FROM measurement WHERE candidate_id = ? ORDER BY id",
                                k_measurement_columns));
    query.bind_int(candidate_id);
    std::vector<Measurement> result;
    while (query.step())
        result.push_back(read_measurement(query, 0));
    return result;
}

std::vector<Candidate> Archive::flagged_candidates() const
{
    std::vector<Candidate> result;
    for (int64_t id : flagged_ids(*m_db))
        if (auto flagged = candidate(id))
            result.push_back(std::move(*flagged));
    return result;
}

int64_t Archive::flagged_count() const
{
    return static_cast<int64_t>(flagged_ids(*m_db).size());
}

void Archive::accept_flagged_candidate(int64_t id, double fitness, const Json& evidence,
                                       const std::vector<Measurement>& measurements)
{
    require_writer("accept a flagged candidate");
    Transaction transaction(*m_db);
    std::optional<Candidate> stored = candidate(id);
    if (!stored)
        fail_input("{}: no candidate {} (the archive holds {})", m_path.string(), id, candidate_count());
    const Evaluation& e = stored->evaluation;
    if (!e.verdict.is_correct() || !e.metrics.value("suspicious", false))
        fail_input("{}: candidate {} is not flagged as faster than the roofline floor; only flagged candidates "
                   "are accepted",
                   m_path.string(), id);
    if (e.metrics.contains("accepted"))
        fail_input("{}: candidate {} was accepted already", m_path.string(), id);
    Json metrics = e.metrics;
    metrics["accepted"] = evidence;
    Statement update(*m_db, "UPDATE candidate SET fitness = ?, metrics = ? WHERE id = ?");
    update.bind_real(fitness).bind_json(metrics).bind_int(id);
    update.run();
    double now = now_seconds();
    for (const auto& m : measurements)
        insert_measurement(*m_db, id, m, now);
    transaction.commit();
}

void Archive::insert_baselines(const std::vector<Measurement>& baselines)
{
    require_writer("store baselines");
    Transaction transaction(*m_db);
    double now = now_seconds();
    for (const auto& m : baselines)
        insert_measurement(*m_db, std::nullopt, m, now);
    transaction.commit();
}

std::vector<Measurement> Archive::baselines() const
{
    // The newest row of each (set, label, subject), listed in the order the key first appeared.
    Statement query(*m_db, fmt::format("SELECT {} FROM measurement JOIN ("
                                       "  SELECT max(id) AS newest, min(id) AS first FROM "
                                       "measurement WHERE candidate_id IS NULL"
                                       "  GROUP BY shape_set, shape_label, subject) AS latest ON "
                                       "measurement.id = latest.newest "
                                       "ORDER BY latest.first",
                                       k_measurement_columns));
    std::vector<Measurement> result;
    while (query.step())
        result.push_back(read_measurement(query, 0));
    return result;
}

} // namespace kforge
