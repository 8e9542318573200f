// Which GPU measured what, and each GPU's busy time per session (schema version 2).
//
// A GPU row is its identity (host, MPI rank, device index, UUID) and name, stored the first time a
// candidate or a session names it. A candidate's GPU is written in its own insert_candidate()
// transaction, so a candidate is never without the GPU that measured it. Session rows are
// rewritten as the session goes (with each recorded candidate), so a run killed mid-session keeps
// its GPUs' busy time up to its last record. On an archive older than version 2, opened read-only,
// the queries here return nothing.
#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sqlite.hpp"
#include "archive/store_detail.hpp"
#include "util/error.hpp"

namespace kforge {

int64_t Archive::gpu_row(const GpuIdentity& gpu)
{
    Statement insert(*m_db, "INSERT OR IGNORE INTO gpu (host, mpi_rank, device_index, uuid, name) VALUES (?, ?, ?, ?, ?)");
    insert.bind_text(gpu.host).bind_int(gpu.rank).bind_int(gpu.device_index).bind_text(gpu.uuid).bind_text(gpu.name);
    insert.run();
    Statement query(*m_db, "SELECT id FROM gpu WHERE host = ? AND mpi_rank = ? AND device_index = ? AND uuid = ?");
    query.bind_text(gpu.host).bind_int(gpu.rank).bind_int(gpu.device_index).bind_text(gpu.uuid);
    if (!query.step())
        fail_runtime("{}: internal error: the row of {} is missing right after it was stored", m_path.string(), gpu.label());
    return query.column_int(0);
}

int Archive::next_gpu_session() const
{
    if (!has_gpu_tables())
        return 1;
    Statement query(*m_db, "SELECT coalesce(max(session), 0) + 1 FROM gpu_session");
    query.step();
    return static_cast<int>(query.column_int(0));
}

void Archive::record_gpu_usage(int session, const std::vector<GpuUsage>& usage)
{
    require_writer("record GPU usage");
    Transaction transaction(*m_db);
    double now = now_seconds();
    for (const auto& gpu : usage) {
        Statement upsert(*m_db, "INSERT OR REPLACE INTO gpu_session (session, gpu_id, busy_s, wall_s, evaluations, "
                                "restarts, lost, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
        upsert.bind_int(session).bind_int(gpu_row(gpu.gpu)).bind_real(gpu.busy_s).bind_real(gpu.wall_s);
        upsert.bind_int(gpu.evaluations).bind_int(gpu.restarts).bind_int(gpu.lost ? 1 : 0).bind_real(now);
        upsert.run();
    }
    transaction.commit();
}

std::vector<GpuTotals> Archive::gpu_totals() const
{
    std::vector<GpuTotals> totals;
    if (!has_gpu_tables())
        return totals;
    Statement query(*m_db,
                    "SELECT g.host, g.mpi_rank, g.device_index, g.uuid, g.name,"
                    "  (SELECT count(*) FROM candidate_gpu c WHERE c.gpu_id = g.id),"
                    "  coalesce(sum(s.busy_s), 0), coalesce(sum(s.wall_s), 0), coalesce(sum(s.evaluations), 0),"
                    "  coalesce(sum(s.restarts), 0), count(s.session),"
                    "  coalesce((SELECT lost FROM gpu_session l WHERE l.gpu_id = g.id ORDER BY session DESC LIMIT 1), 0) "
                    "FROM gpu g LEFT JOIN gpu_session s ON s.gpu_id = g.id GROUP BY g.id ORDER BY g.id");
    while (query.step()) {
        GpuTotals row;
        GpuUsage& u = row.usage;
        u.gpu = GpuIdentity{query.column_text(0), static_cast<int>(query.column_int(1)),
                            static_cast<int>(query.column_int(2)), query.column_text(3), query.column_text(4)};
        row.candidates = query.column_int(5);
        u.busy_s = query.column_real(6);
        u.wall_s = query.column_real(7);
        u.evaluations = query.column_int(8);
        u.restarts = static_cast<int>(query.column_int(9));
        row.sessions = static_cast<int>(query.column_int(10));
        u.lost = query.column_int(11) != 0;
        totals.push_back(std::move(row));
    }
    return totals;
}

} // namespace kforge
