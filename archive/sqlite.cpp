// The SQLite owners and the checking macro's error path. Statements are prepared per use and
// finalized by their owner, so no read transaction outlives the query that needed it: a read-only
// connection sees each commit of a concurrent writer at its next query.
#include "archive/sqlite.hpp"

#include "archive/archive.hpp"

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/log.hpp"

namespace kforge {

void throw_sqlite_error(sqlite3* db, int rc, const char* call, const char* file, int line)
{
    const char* filename = db ? sqlite3_db_filename(db, "main") : nullptr;
    std::string where = filename && *filename ? filename : "(archive)";
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    // "archive/candidates.cpp" rather than the build machine's absolute path.
    std::string_view source = file;
    if (size_t slash = source.rfind('/'); slash != std::string_view::npos && slash > 0)
        if (size_t parent = source.rfind('/', slash - 1); parent != std::string_view::npos)
            source.remove_prefix(parent + 1);
    int primary = rc & 0xff;
    if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) // the file's fault, said first
        throw Error(ErrorKind::bad_input, fmt::format("{}: damaged file: SQLite says \"{}\" (code {}, in {} at {}:{})",
                                                      where, message, rc, call, source, line));
    throw Error(ErrorKind::runtime, fmt::format("{}: SQLite error in {} (at {}:{}): {} (code {})", where, call,
                                                source, line, message, rc));
}

Database::Database(const std::string& path, DbAccess access) : m_path(path)
{
    int flags = access == DbAccess::read_only    ? SQLITE_OPEN_READONLY
                : access == DbAccess::read_write ? SQLITE_OPEN_READWRITE
                                                 : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(path.c_str(), &m_db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        std::string message = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
        sqlite3_close_v2(m_db);
        m_db = nullptr;
        fail_runtime("{}: cannot open the archive: {}", path, message);
    }
    KF_SQLITE_CHECK(m_db, sqlite3_extended_result_codes(m_db, 1));
}

Database::~Database()
{
    if (m_db && sqlite3_close_v2(m_db) != SQLITE_OK)
        log_warn("{}: closing the archive failed: {}", m_path, sqlite3_errmsg(m_db));
}

void Database::execute(const std::string& sql)
{
    KF_SQLITE_CHECK(m_db, sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, nullptr));
}

int64_t Database::query_int(std::string_view sql)
{
    Statement query(*this, sql);
    query.step();
    return query.column_int(0);
}

int64_t Database::last_insert_id() const
{
    return sqlite3_last_insert_rowid(m_db);
}

Statement::Statement(Database& db, std::string_view sql) : m_db(db)
{
    int rc = sqlite3_prepare_v2(db.handle(), sql.data(), static_cast<int>(sql.size()), &m_stmt, nullptr);
    if (rc == SQLITE_OK)
        return;
    // A query naming a table or column the file lacks: the archive was damaged or edited by hand
    // (the schema's own statements, run by Database::execute, never come here).
    std::string message = sqlite3_errmsg(db.handle());
    for (std::string_view what : {"table", "column"}) {
        std::string prefix = fmt::format("no such {}: ", what);
        if (message.rfind(prefix, 0) == 0)
            throw DamagedArchive(fmt::format("{}: damaged archive: {} '{}' is missing", db.path(), what,
                                             message.substr(prefix.size())));
    }
    throw_sqlite_error(db.handle(), rc, "sqlite3_prepare_v2(db.handle(), sql.data(), ...)", __FILE__, __LINE__);
}

Statement::~Statement()
{
    sqlite3_finalize(m_stmt);
}

Statement& Statement::bind_int(int64_t value)
{
    KF_SQLITE_CHECK(m_db.handle(), sqlite3_bind_int64(m_stmt, m_next_param++, value));
    return *this;
}

Statement& Statement::bind_real(double value)
{
    KF_SQLITE_CHECK(m_db.handle(), sqlite3_bind_double(m_stmt, m_next_param++, value));
    return *this;
}

Statement& Statement::bind_text(std::string_view value)
{
    KF_SQLITE_CHECK(m_db.handle(),
                    sqlite3_bind_text64(m_stmt, m_next_param++, value.data(), value.size(),
                                        SQLITE_TRANSIENT, SQLITE_UTF8));
    return *this;
}

Statement& Statement::bind_json(const Json& value)
{
    // Text from outside (a model's reply, carried into the next prompt and its record) may hold
    // bytes that are not UTF-8; nlohmann throws on them by default, which would end the run.
    // They are stored as U+FFFD instead.
    return bind_text(value.dump(-1, ' ', false, Json::error_handler_t::replace));
}

Statement& Statement::bind_null()
{
    KF_SQLITE_CHECK(m_db.handle(), sqlite3_bind_null(m_stmt, m_next_param++));
    return *this;
}

Statement& Statement::bind_optional_int(const std::optional<int64_t>& value)
{
    return value ? bind_int(*value) : bind_null();
}

Statement& Statement::bind_optional_real(const std::optional<double>& value)
{
    return value ? bind_real(*value) : bind_null();
}

bool Statement::step()
{
    int rc = sqlite3_step(m_stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        std::string call = fmt::format("sqlite3_step({})", sqlite3_sql(m_stmt));
        throw_sqlite_error(m_db.handle(), rc, call.c_str(), __FILE__, __LINE__);
    }
    return rc == SQLITE_ROW;
}

void Statement::reset()
{
    sqlite3_reset(m_stmt); // its result repeats the last step's, already reported
    KF_SQLITE_CHECK(m_db.handle(), sqlite3_clear_bindings(m_stmt));
    m_next_param = 1;
}

void Statement::run()
{
    while (step()) {
    }
}

bool Statement::is_null(int column) const
{
    return sqlite3_column_type(m_stmt, column) == SQLITE_NULL;
}

int64_t Statement::column_int(int column) const
{
    return sqlite3_column_int64(m_stmt, column);
}

double Statement::column_real(int column) const
{
    return sqlite3_column_double(m_stmt, column);
}

std::string Statement::column_text(int column) const
{
    const auto* text = sqlite3_column_text(m_stmt, column);
    if (!text)
        return {};
    return std::string(reinterpret_cast<const char*>(text),
                       static_cast<size_t>(sqlite3_column_bytes(m_stmt, column)));
}

std::optional<int64_t> Statement::column_optional_int(int column) const
{
    if (is_null(column))
        return std::nullopt;
    return column_int(column);
}

std::optional<double> Statement::column_optional_real(int column) const
{
    if (is_null(column))
        return std::nullopt;
    return column_real(column);
}

Json Statement::column_json(int column, std::string_view what) const
{
    if (is_null(column))
        return Json();
    JsonParseFailure failure;
    if (std::optional<Json> json = try_parse_json(column_text(column), failure))
        return std::move(*json);
    throw DamagedArchive(fmt::format("{}: damaged {}: {}: invalid JSON{}: {}", m_db.path(), m_db.kind(), what,
                                     failure.path.empty() ? "" : " at " + failure.path, failure.message));
}

Transaction::Transaction(Database& db) : m_db(db)
{
    m_db.execute("SAVEPOINT kf");
}

Transaction::~Transaction()
{
    if (m_done)
        return;
    int rc = sqlite3_exec(m_db.handle(), "ROLLBACK TO kf; RELEASE kf", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK)
        log_warn("{}: rolling back a transaction failed: {}", m_db.path(),
                 sqlite3_errmsg(m_db.handle()));
}

void Transaction::commit()
{
    m_db.execute("RELEASE kf");
    m_done = true;
}

} // namespace kforge
