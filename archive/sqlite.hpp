// SQLite handles owned by RAII types, and the one macro that checks every SQLite call.
//
// Internal to archive/: the rest of kforge uses archive.hpp and never sees SQL. A Database owns one
// sqlite3 connection; a Statement owns one prepared statement, binds its parameters left to right
// and reads columns by index. Every call that returns a result code goes through KF_SQLITE_CHECK,
// which throws kforge::Error naming the archive file, the failed call, where in our code it was
// made and SQLite's own message. A Transaction is a SAVEPOINT, so transactions nest: a write method
// that opens one joins the caller's when the caller already holds one (Archive::atomically).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <sqlite3.h>

#include "util/json_reader.hpp"

namespace kforge {

// Throws Error for a failed SQLite call: "FILE: SQLite error in CALL (at SRC:LINE): MESSAGE".
// A file that is not a database (SQLITE_NOTADB) or is damaged (SQLITE_CORRUPT) is bad input; every
// other failure is a runtime failure (disk, locks, our own bug).
[[noreturn]] void throw_sqlite_error(sqlite3* db, int rc, const char* call, const char* file,
                                     int line);

// Evaluates a SQLite call and throws unless it returned SQLITE_OK, SQLITE_ROW or SQLITE_DONE.
#define KF_SQLITE_CHECK(db, call)                                                                  \
    do {                                                                                           \
        int kf_sqlite_rc_ = (call);                                                                \
        if (kf_sqlite_rc_ != SQLITE_OK && kf_sqlite_rc_ != SQLITE_ROW &&                           \
            kf_sqlite_rc_ != SQLITE_DONE)                                                          \
            ::kforge::throw_sqlite_error((db), kf_sqlite_rc_, #call, __FILE__, __LINE__);          \
    } while (0)

enum class DbAccess
{
    read_only,
    read_write,
    read_write_create
};

// One connection. Not thread-safe: one thread uses it at a time (the archive's owner).
class Database
{
public:
    // Opens `path`; throws Error naming the path when SQLite cannot open it.
    Database(const std::string& path, DbAccess access);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    sqlite3* handle() const { return m_db; }
    const std::string& path() const { return m_path; }
    // What the file is, in messages about its damage: "archive" unless set otherwise.
    const std::string& kind() const { return m_kind; }
    void set_kind(std::string kind) { m_kind = std::move(kind); }
    // Runs statements that return no rows (schema, pragmas); `sql` may hold several.
    void execute(const std::string& sql);
    // The integer in the first column of the first row of a query (pragmas, counts).
    int64_t query_int(std::string_view sql);
    int64_t last_insert_id() const;

private:
    sqlite3* m_db = nullptr;
    std::string m_path;
    std::string m_kind = "archive";
};

// One prepared statement. Parameters are bound in order with the bind_* calls; step() runs it.
class Statement
{
public:
    Statement(Database& db, std::string_view sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    // Binders, each taking the next parameter position.
    Statement& bind_int(int64_t value);
    Statement& bind_real(double value);
    Statement& bind_text(std::string_view value);
    Statement& bind_json(const Json& value); // invalid UTF-8 in strings is stored as U+FFFD
    Statement& bind_null();
    Statement& bind_optional_int(const std::optional<int64_t>& value);
    Statement& bind_optional_real(const std::optional<double>& value);

    // Advances to the next row: true when there is one, false when the statement is done.
    bool step();
    // Makes the statement ready to run again with new bindings (from the first parameter).
    void reset();
    // Runs a statement that returns no rows.
    void run();

    bool is_null(int column) const;
    int64_t column_int(int column) const;
    double column_real(int column) const;
    std::string column_text(int column) const;
    std::optional<int64_t> column_optional_int(int column) const;
    std::optional<double> column_optional_real(int column) const;
    // Parses a JSON column. Malformed text throws DamagedArchive (bad input) "FILE: damaged
    // archive: WHAT: invalid JSON ...", `what` naming the row and column ("candidate 24 metrics"),
    // so a reader can step over the damaged part and a writer refuses it.
    Json column_json(int column, std::string_view what) const;

    const Database& database() const { return m_db; }

private:
    Database& m_db;
    sqlite3_stmt* m_stmt = nullptr;
    int m_next_param = 1;
};

// A SAVEPOINT: commits when commit() is called, rolls back if destroyed before. Nests.
class Transaction
{
public:
    explicit Transaction(Database& db);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

private:
    Database& m_db;
    bool m_done = false;
};

} // namespace kforge
