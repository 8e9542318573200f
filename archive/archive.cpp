// Opening, creating and upgrading archives, and the run record.
//
// Opening checks, in order, before anything is written: the file exists and starts with SQLite's
// magic header (so an empty or foreign file is named as such, rather than silently becoming an
// empty database), its application_id says kforge, and its schema version is one this binary knows.
// Only then does a writer take the lock, switch to WAL and apply missing migrations.
#include "archive/archive.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>

#include <unistd.h>

#include <fmt/format.h>

#include "archive/sqlite.hpp"
#include "archive/store_detail.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "0.0.0"
#endif

namespace kforge {
namespace {

namespace fs = std::filesystem;

constexpr int k_archive_busy_timeout_ms = 10000;
constexpr const char* k_run_columns =
    "run_id, task_name, task_spec, task_hash, task_files, config, device, toolkit_version, "
    "kforge_version, seed, state, started_at, updated_at";

void check_sqlite_file(const fs::path& path)
{
    std::error_code ec;
    if (!fs::exists(path, ec))
        fail_input("{}: no such archive", path.string());
    if (!fs::is_regular_file(path, ec))
        fail_input("{}: not a kforge archive (not a regular file)", path.string());
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail_input("{}: cannot read the archive: {}", path.string(), std::strerror(errno));
    char header[16] = {};
    in.read(header, sizeof header);
    if (in.gcount() == 0)
        fail_input("{}: not a kforge archive (the file is empty)", path.string());
    if (in.gcount() < 16 || std::memcmp(header, "SQLite format 3", 16) != 0)
        fail_input("{}: not a kforge archive (not an SQLite database)", path.string());
}

// The schema version of a kforge archive; throws for anything else.
int identify_archive(Database& db)
{
    auto id = db.query_int("PRAGMA application_id");
    if (id != k_archive_application_id)
        fail_input("{}: an SQLite database, but not a kforge archive (application id {:#x})",
                   db.path(), id);
    if (db.query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
                       "'schema_version'") == 0)
        fail_input("{}: damaged kforge archive: it has no schema_version table", db.path());
    return static_cast<int>(db.query_int("SELECT coalesce(max(version), 0) FROM schema_version"));
}

// The tables an archive at `version` must hold: those its steps create and no later step of them
// drops. Read off the steps' SQL, so a new step needs no list kept beside it.
std::vector<std::string> tables_of_version(const std::vector<Migration>& migrations, int version)
{
    std::vector<std::string> tables;
    auto names_after = [](const std::string& sql, std::string_view keyword) {
        std::vector<std::string> names;
        for (size_t at = sql.find(keyword); at != std::string::npos; at = sql.find(keyword, at + 1)) {
            size_t begin = at + keyword.size();
            size_t end = sql.find_first_of(" (\n;", begin);
            names.push_back(sql.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
        }
        return names;
    };
    for (const auto& step : migrations) {
        if (step.version > version)
            break;
        for (auto& name : names_after(step.sql, "CREATE TABLE "))
            if (std::find(tables.begin(), tables.end(), name) == tables.end())
                tables.push_back(std::move(name));
        for (const auto& name : names_after(step.sql, "DROP TABLE "))
            tables.erase(std::remove(tables.begin(), tables.end(), name), tables.end());
    }
    return tables;
}

std::vector<std::string> find_missing_tables(Database& db, int version, const std::vector<Migration>& migrations)
{
    std::vector<std::string> missing;
    for (const auto& table : tables_of_version(migrations, version)) {
        Statement query(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
        query.bind_text(table);
        query.step();
        if (query.column_int(0) == 0)
            missing.push_back(table);
    }
    return missing;
}

[[noreturn]] void fail_missing_tables(const fs::path& path, const std::vector<std::string>& missing)
{
    std::vector<std::string> quoted;
    for (const auto& table : missing)
        quoted.push_back("'" + table + "'");
    throw DamagedArchive(fmt::format("{}: damaged archive: table{} {} {} missing; a run cannot continue from it "
                                     "(`kforge inspect` shows what is left)",
                                     path.string(), missing.size() == 1 ? "" : "s", join(quoted, ", "),
                                     missing.size() == 1 ? "is" : "are"));
}

// A run continues only from what it recorded: a writer (resume, eval --accept) refuses an archive
// whose stored JSON does not parse before it changes anything, where a reader reads around it.
void refuse_damaged_json(Database& db)
{
    std::vector<std::string> damage = find_damaged_json(db, 1);
    if (!damage.empty())
        throw DamagedArchive(damage.front() + "; a run cannot continue from it (`kforge inspect` shows what is left)");
}

std::string writer_of_version(Database& db, int version)
{
    Statement query(db, "SELECT kforge_version FROM schema_version WHERE version = ?");
    query.bind_int(version);
    return query.step() ? query.column_text(0) : "unknown";
}

void configure_writer(Database& db)
{
    KF_SQLITE_CHECK(db.handle(), sqlite3_busy_timeout(db.handle(), k_archive_busy_timeout_ms));
    Statement wal(db, "PRAGMA journal_mode = WAL");
    wal.step();
    if (wal.column_text(0) != "wal")
        fail_runtime(
            "{}: cannot switch the archive to WAL mode (journal mode stays '{}'); is it on a "
            "file system without shared-memory support?",
            db.path(), wal.column_text(0));
    db.execute("PRAGMA synchronous = FULL");
}

// How a reader connects: read-write where this process may write the file and its folder, kept
// from writing by query_only. SQLite removes a WAL database's -wal and -shm files when its last
// connection closes, but a read-only connection creates them and cannot remove them, so every
// `inspect` of a closed archive (and the suite's reads of its runs' archives after they ended)
// left two empty files beside it. The last connection's close checkpoints first, moving pages a
// killed writer committed into the file, as any writer's close would: the content stays the same.
DbAccess reader_access(const fs::path& path)
{
    fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
    bool writable = ::access(path.c_str(), W_OK) == 0 && ::access(folder.c_str(), W_OK) == 0;
    return writable ? DbAccess::read_write : DbAccess::read_only;
}

void configure_reader(Database& db)
{
    KF_SQLITE_CHECK(db.handle(), sqlite3_busy_timeout(db.handle(), k_archive_busy_timeout_ms));
    db.execute("PRAGMA query_only = ON");
}

// Applies the steps after `from`, each in its own transaction with its schema_version row.
void apply_migrations(Database& db, int from, const std::vector<Migration>& migrations)
{
    db.execute("PRAGMA foreign_keys = OFF"); // a step may rebuild tables; checked after each step
    for (const auto& step : migrations) {
        if (step.version <= from)
            continue;
        Transaction transaction(db);
        try {
            db.execute(step.sql);
        } catch (const Error& e) {
            // Additive steps create what the recorded version lacks: finding it there means the
            // schema_version rows and the tables disagree, which kforge never writes (a file edited
            // or put together by hand). The step's transaction leaves the file as it was.
            if (std::string_view(e.what()).find("already exists") != std::string_view::npos)
                throw DamagedArchive(fmt::format("{}: damaged archive: it records schema version {} but already holds "
                                                 "what version {} adds ({}): {}; it was left as it was",
                                                 db.path(), step.version - 1, step.version, step.summary, e.what()));
            fail_runtime("{}: upgrading the archive to schema version {} ({}) failed: {}",
                         db.path(), step.version, step.summary, e.what());
        }
        Statement record(
            db, "INSERT INTO schema_version (version, summary, applied_at, kforge_version) "
                "VALUES (?, ?, ?, ?)");
        record.bind_int(step.version)
            .bind_text(step.summary)
            .bind_real(now_seconds())
            .bind_text(KFORGE_VERSION);
        record.run();
        Statement fk(db, "PRAGMA foreign_key_check");
        if (fk.step())
            fail_runtime("{}: schema version {} ({}) leaves table {} violating a foreign key",
                         db.path(), step.version, step.summary, fk.column_text(0));
        transaction.commit();
    }
    db.execute("PRAGMA foreign_keys = ON");
}

void bind_run(Statement& statement, const RunInfo& run, double updated_at)
{
    statement.bind_text(run.run_id)
        .bind_text(run.task_name)
        .bind_text(run.task_spec)
        .bind_text(run.task_hash);
    statement.bind_json(run.task_files).bind_json(run.config).bind_json(run.device);
    statement.bind_text(run.toolkit_version)
        .bind_text(run.kforge_version)
        .bind_text(std::to_string(run.seed));
    statement.bind_text(run.state).bind_real(time_or_now(run.started_at)).bind_real(updated_at);
}

void remove_archive_files(const fs::path& path)
{
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
        fs::remove(fs::path(path.string() + suffix), ec);
}

} // namespace

Archive::Archive(fs::path path, OpenMode mode, WriterLock lock, std::unique_ptr<Database> db, int version)
    : m_path(std::move(path)), m_mode(mode), m_lock(std::move(lock)), m_db(std::move(db)), m_version(version)
{
}

Archive::Archive(Archive&&) noexcept = default;
Archive& Archive::operator=(Archive&&) noexcept = default;
Archive::~Archive() = default;

Archive Archive::create(const fs::path& path, const RunInfo& run,
                        const std::vector<Migration>& migrations)
{
    check_migration_list(migrations);
    WriterLock lock(path);
    std::error_code ec;
    if (fs::exists(path, ec))
        fail_input(
            "{}: already exists; continue that run with `kforge resume` or choose another name",
            path.string());
    for (const char* suffix : {"-wal", "-shm", "-journal"})
        if (fs::exists(fs::path(path.string() + suffix), ec))
            fail_input("{}: a leftover {}{} exists without its archive; remove it first",
                       path.string(), path.filename().string(), suffix);
    // Built under a side name and renamed into place once its run record is in: a process killed
    // part way (a suite's child under kill -9) leaves no empty or half-made archive at `path`,
    // which would otherwise refuse both a fresh `optimize` and a `resume`.
    fs::path building(path.string() + ".creating");
    remove_archive_files(building); // a leftover of a killed create; the lock makes it ours
    try {
        Database db(building.string(), DbAccess::read_write_create);
        // WAL from the start: switching a renamed archive later would write a rollback journal
        // beside it, and a kill inside that switch leaves a hot journal that readers cannot open.
        configure_writer(db);
        Transaction transaction(db);
        db.execute(fmt::format("PRAGMA application_id = {}", k_archive_application_id));
        db.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, summary TEXT NOT NULL, "
            "applied_at REAL NOT NULL, kforge_version TEXT NOT NULL)");
        transaction.commit();
        apply_migrations(db, 0, migrations);
        Statement insert(
            db, fmt::format(
                    "INSERT INTO run (id, {}) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    k_run_columns));
        bind_run(insert, run, now_seconds());
        insert.run();
    } catch (...) {
        remove_archive_files(building);
        throw;
    }
    fs::rename(building, path, ec);
    if (ec) {
        remove_archive_files(building);
        fail_runtime("{}: cannot move the new archive into place: {}", path.string(), ec.message());
    }
    auto db = std::make_unique<Database>(path.string(), DbAccess::read_write);
    configure_writer(*db);
    return Archive(path, OpenMode::write, std::move(lock), std::move(db), migrations.back().version);
}

Archive Archive::open(const fs::path& path, OpenMode mode, const std::vector<Migration>& migrations)
{
    check_migration_list(migrations);
    check_sqlite_file(path);
    bool writing = mode == OpenMode::write;
    auto db = std::make_unique<Database>(path.string(), writing ? DbAccess::read_write : reader_access(path));
    KF_SQLITE_CHECK(db->handle(), sqlite3_busy_timeout(db->handle(), k_archive_busy_timeout_ms));
    int version = identify_archive(*db);
    int known = migrations.back().version;
    if (version > known)
        fail_input(
            "{}: the archive has schema version {}, newer than this kforge knows ({}); it was "
            "written by kforge {}, so use that version or a later one",
            path.string(), version, known, writer_of_version(*db, version));
    std::vector<std::string> missing = find_missing_tables(*db, version, migrations);
    if (!writing) {
        bool additive_only = std::all_of(migrations.begin(), migrations.end(), [&](const Migration& step) {
            return step.version <= version || step.kind == MigrationKind::additive;
        });
        if (version < known && !additive_only)
            fail_input(
                "{}: the archive has schema version {}, older than this kforge's {}; open it for "
                "writing once (`kforge resume`) to upgrade it",
                path.string(), version, known);
        configure_reader(*db);
        Archive archive(path, mode, WriterLock(), std::move(db), version);
        archive.m_missing_tables = std::move(missing);
        return archive;
    }
    if (!missing.empty())
        fail_missing_tables(path, missing);
    refuse_damaged_json(*db);
    WriterLock lock(path);
    configure_writer(*db);
    apply_migrations(*db, version, migrations);
    return Archive(path, mode, std::move(lock), std::move(db), known);
}

Archive Archive::open_for_resume(const fs::path& path, const std::vector<Migration>& migrations)
{
    check_migration_list(migrations);
    check_sqlite_file(path);
    WriterLock lock(path); // first: another writer is refused before anything is read
    auto db = std::make_unique<Database>(path.string(), DbAccess::read_only);
    KF_SQLITE_CHECK(db->handle(), sqlite3_busy_timeout(db->handle(), k_archive_busy_timeout_ms));
    int version = identify_archive(*db);
    int known = migrations.back().version;
    if (version > known)
        fail_input(
            "{}: the archive has schema version {}, newer than this kforge knows ({}); it was "
            "written by kforge {}, so use that version or a later one",
            path.string(), version, known, writer_of_version(*db, version));
    if (std::vector<std::string> missing = find_missing_tables(*db, version, migrations); !missing.empty())
        fail_missing_tables(path, missing);
    refuse_damaged_json(*db);
    configure_reader(*db);
    Archive archive(path, OpenMode::write, std::move(lock), std::move(db), version);
    archive.m_pending = migrations;
    archive.m_writes_deferred = true;
    return archive;
}

void Archive::begin_writing()
{
    if (!m_writes_deferred)
        return;
    int version = m_version;
    m_db.reset();
    auto db = std::make_unique<Database>(m_path.string(), DbAccess::read_write);
    configure_writer(*db);
    apply_migrations(*db, version, m_pending);
    m_db = std::move(db);
    m_version = m_pending.back().version;
    m_pending.clear();
    m_writes_deferred = false;
}

int Archive::schema_version() const
{
    return static_cast<int>(m_db->query_int("SELECT max(version) FROM schema_version"));
}

void Archive::atomically(const std::function<void()>& work)
{
    Transaction transaction(*m_db);
    work();
    transaction.commit();
}

std::string Archive::integrity_check() const
{
    Statement check(*m_db, "PRAGMA integrity_check");
    std::string report;
    while (check.step()) {
        if (!report.empty())
            report += '\n';
        report += check.column_text(0);
    }
    return report;
}

void Archive::require_writer(std::string_view action) const
{
    if (m_mode != OpenMode::write)
        fail_runtime("{}: cannot {}: the archive is open read-only", m_path.string(), action);
    if (m_writes_deferred)
        fail_runtime("{}: internal error: cannot {} before begin_writing()", m_path.string(), action);
}

RunInfo Archive::run_info() const
{
    Statement query(*m_db, fmt::format("SELECT {} FROM run WHERE id = 1", k_run_columns));
    if (!query.step())
        fail_input("{}: damaged kforge archive: it has no run record", m_path.string());
    RunInfo run;
    run.run_id = query.column_text(0);
    run.task_name = query.column_text(1);
    run.task_spec = query.column_text(2);
    run.task_hash = query.column_text(3);
    run.task_files = query.column_json(4, "run task_files");
    run.config = query.column_json(5, "run config");
    run.device = query.column_json(6, "run device");
    run.toolkit_version = query.column_text(7);
    run.kforge_version = query.column_text(8);
    std::string seed = query.column_text(9);
    try {
        size_t used = 0;
        run.seed = std::stoull(seed, &used);
        if (used != seed.size())
            throw std::invalid_argument(seed);
    } catch (const std::exception&) {
        fail_input("{}: run seed '{}' is not an unsigned integer", m_path.string(), seed);
    }
    run.state = query.column_text(10);
    run.started_at = query.column_real(11);
    run.updated_at = query.column_real(12);
    return run;
}

void Archive::update_run(const RunInfo& run)
{
    require_writer("update the run record");
    Statement update(
        *m_db, "UPDATE run SET run_id = ?, task_name = ?, task_spec = ?, task_hash = ?, "
               "task_files = ?, config = ?, device = ?, toolkit_version = ?, kforge_version = ?, "
               "seed = ?, state = ?, started_at = ?, updated_at = ? WHERE id = 1");
    bind_run(update, run, now_seconds());
    update.run();
}

void Archive::set_run_state(std::string_view state)
{
    require_writer("set the run state");
    if (state != "running" && state != "interrupted" && state != "finished" && state != "failed")
        fail_runtime(
            "{}: internal error: '{}' is not a run state (running, interrupted, finished, failed)",
            m_path.string(), state);
    Statement update(*m_db, "UPDATE run SET state = ?, updated_at = ? WHERE id = 1");
    update.bind_text(state).bind_real(now_seconds());
    update.run();
}

} // namespace kforge
