// The user-level knowledge base; see knowledge_base.hpp.
//
// Opening for writing creates the file and its schema (or upgrades an older one: version 1 held
// lessons only, version 2 adds technique tries and schedules) under BEGIN IMMEDIATE, so two runs
// starting at the same moment cannot both create it: the second waits for the first and then finds
// the schema in place. A read-only view of a version-1 file simply holds no technique data. A file that exists is identified before anything is written (SQLite header,
// application id, schema version), as the run archive does.
#include "archive/knowledge_base.hpp"

#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "archive/sqlite.hpp"
#include "archive/store_detail.hpp"
#include "util/error.hpp"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "0.0.0"
#endif

namespace kforge {
namespace {

namespace fs = std::filesystem;

constexpr int k_knowledge_busy_timeout_ms = 30000; // several runs may add lessons at the same moment
constexpr int k_schema_version = 2;

// Version 1: lessons.
constexpr const char* k_kb_schema_v1 = R"sql(
CREATE TABLE kb_version (
    version        INTEGER PRIMARY KEY,
    applied_at     REAL NOT NULL,
    kforge_version TEXT NOT NULL
);
CREATE TABLE lesson (
    id           INTEGER PRIMARY KEY,
    task_name    TEXT NOT NULL,
    category     TEXT NOT NULL,
    tags         TEXT NOT NULL,      -- JSON array of strings
    text         TEXT NOT NULL,
    evidence     TEXT NOT NULL,      -- JSON
    run_id       TEXT NOT NULL,      -- the run that learnt it
    candidate_id INTEGER,            -- a candidate of that run (not a foreign key here)
    created_at   REAL NOT NULL,
    UNIQUE (task_name, text)
);
)sql";

// Version 2: techniques tried by two-phase proposals, and the schedules runs followed to their best.
constexpr const char* k_kb_schema_v2 = R"sql(
-- One row per technique a planned candidate showed: the statistics are sums over these rows.
CREATE TABLE technique_try (
    run_id       TEXT NOT NULL,
    candidate_id INTEGER NOT NULL,   -- a candidate of that run
    technique    TEXT NOT NULL,      -- a menu item id, or 'new:<slug>'
    task_name    TEXT NOT NULL,
    category     TEXT NOT NULL,
    correct      INTEGER NOT NULL,
    improved     INTEGER NOT NULL,   -- its fitness beat its parent's
    gain         REAL,               -- fitness / parent fitness (correct candidates)
    predicted    REAL,               -- the plan's expected speedup
    created_at   REAL NOT NULL,
    PRIMARY KEY (run_id, candidate_id, technique)
) WITHOUT ROWID;
CREATE INDEX technique_try_by_category ON technique_try(category, technique);

-- Each run's chain from its starting kernel to its best, kept current as the best improves.
CREATE TABLE schedule (
    run_id     TEXT PRIMARY KEY,
    task_name  TEXT NOT NULL,
    category   TEXT NOT NULL,
    speedup    REAL NOT NULL,        -- the best over the starting kernel
    steps      TEXT NOT NULL,        -- JSON array of {candidate_id, origin, techniques, note, speedup}
    updated_at REAL NOT NULL
);
)sql";

constexpr const char* k_insert_lesson =
    "INSERT INTO lesson (task_name, category, tags, text, evidence, run_id, candidate_id, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (task_name, text) DO NOTHING";

// Runs k_insert_lesson for `lesson`; false when the knowledge base holds its text for its task already.
bool insert_lesson(Statement& insert, const Lesson& lesson, std::string_view run_id)
{
    insert.bind_text(lesson.task_name).bind_text(lesson.category).bind_json(Json(lesson.tags));
    insert.bind_text(lesson.text).bind_json(lesson.evidence).bind_text(run_id);
    insert.bind_optional_int(lesson.candidate_id).bind_real(time_or_now(lesson.created_at));
    insert.run();
    return sqlite3_changes(insert.database().handle()) > 0;
}

bool is_empty_file(const fs::path& path)
{
    std::error_code ec;
    return fs::file_size(path, ec) == 0 && !ec;
}

void check_header(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    char header[16] = {};
    in.read(header, sizeof header);
    if (!in || std::memcmp(header, "SQLite format 3", 16) != 0)
        fail_input("{}: not a kforge knowledge base (not an SQLite database)", path.string());
}

// 0 for a database without a schema yet; the version for a knowledge base; throws otherwise.
int identify(Database& db)
{
    int64_t id = db.query_int("PRAGMA application_id");
    bool has_tables = db.query_int("SELECT count(*) FROM sqlite_master") > 0;
    if (id == 0 && !has_tables)
        return 0;
    if (id != k_knowledge_application_id)
        fail_input("{}: an SQLite database, but not a kforge knowledge base (application id {:#x})", db.path(), id);
    int version = static_cast<int>(db.query_int("SELECT coalesce(max(version), 0) FROM kb_version"));
    if (version > k_schema_version)
        fail_input("{}: the knowledge base has schema version {}, newer than this kforge knows ({})", db.path(),
                   version, k_schema_version);
    return version;
}

// Brings the file to k_schema_version under BEGIN IMMEDIATE (another run may be doing the same);
// returns the version it has then.
int upgrade_schema(Database& db)
{
    db.execute("BEGIN IMMEDIATE");
    try {
        int version = identify(db);
        if (version == 0)
            db.execute(fmt::format("PRAGMA application_id = {}", k_knowledge_application_id));
        for (int step = version + 1; step <= k_schema_version; ++step) {
            db.execute(step == 1 ? k_kb_schema_v1 : k_kb_schema_v2);
            Statement row(db, "INSERT INTO kb_version (version, applied_at, kforge_version) VALUES (?, ?, ?)");
            row.bind_int(step).bind_real(now_seconds()).bind_text(KFORGE_VERSION);
            row.run();
        }
        db.execute("COMMIT");
        return k_schema_version;
    } catch (...) {
        db.execute("ROLLBACK");
        throw;
    }
}

} // namespace

KnowledgeBase::KnowledgeBase(fs::path path, std::unique_ptr<Database> db, int version)
    : m_path(std::move(path)), m_db(std::move(db)), m_version(version)
{
}

KnowledgeBase::KnowledgeBase(KnowledgeBase&&) noexcept = default;
KnowledgeBase& KnowledgeBase::operator=(KnowledgeBase&&) noexcept = default;
KnowledgeBase::~KnowledgeBase() = default;

KnowledgeBase KnowledgeBase::open(const fs::path& path, KnowledgeAccess access)
{
    std::error_code ec;
    bool exists = fs::exists(path, ec);
    if (access == KnowledgeAccess::read_only) {
        if (!exists)
            return KnowledgeBase(path, nullptr, 0);
        if (is_empty_file(path))
            return KnowledgeBase(path, nullptr, 0);
        check_header(path);
        auto db = std::make_unique<Database>(path.string(), DbAccess::read_only);
        db->set_kind("knowledge base");
        KF_SQLITE_CHECK(db->handle(), sqlite3_busy_timeout(db->handle(), k_knowledge_busy_timeout_ms));
        int version = identify(*db);
        if (version == 0)
            return KnowledgeBase(path, nullptr, 0);
        return KnowledgeBase(path, std::move(db), version);
    }
    if (exists && !is_empty_file(path))
        check_header(path);
    if (path.has_parent_path()) {
        fs::create_directories(path.parent_path(), ec);
        if (ec)
            fail_runtime("{}: cannot create its folder: {}", path.string(), ec.message());
    }
    auto db = std::make_unique<Database>(path.string(), DbAccess::read_write_create);
    db->set_kind("knowledge base");
    KF_SQLITE_CHECK(db->handle(), sqlite3_busy_timeout(db->handle(), k_knowledge_busy_timeout_ms));
    identify(*db); // refuses a foreign database before anything is written
    {
        // A row-returning pragma: finalized before create_schema() commits.
        Statement wal(*db, "PRAGMA journal_mode = WAL");
        wal.step();
    }
    int version = upgrade_schema(*db);
    return KnowledgeBase(path, std::move(db), version);
}

std::optional<int64_t> KnowledgeBase::add(const Lesson& lesson, std::string_view run_id)
{
    if (!m_db)
        fail_runtime("{}: internal error: the knowledge base is open read-only", m_path.string());
    Statement insert(*m_db, k_insert_lesson);
    if (!insert_lesson(insert, lesson, run_id))
        return std::nullopt;
    return m_db->last_insert_id();
}

LessonImport KnowledgeBase::add_lessons(const std::vector<KnowledgeLesson>& lessons, const std::function<bool()>& stop)
{
    if (!m_db)
        fail_runtime("{}: internal error: the knowledge base is open read-only", m_path.string());
    LessonImport result;
    // IMMEDIATE: the write lock is taken (or waited for) now, not at the first insert.
    m_db->execute("BEGIN IMMEDIATE");
    try {
        Statement insert(*m_db, k_insert_lesson);
        for (const auto& item : lessons) {
            if (stop()) {
                m_db->execute("ROLLBACK");
                return LessonImport{0, 0, true};
            }
            (insert_lesson(insert, item.lesson, item.run_id) ? result.added : result.known) += 1;
            insert.reset();
        }
    } catch (...) {
        m_db->execute("ROLLBACK");
        throw;
    }
    m_db->execute("COMMIT");
    return result;
}

std::vector<KnowledgeLesson> KnowledgeBase::lessons() const
{
    std::vector<KnowledgeLesson> result;
    if (!m_db)
        return result;
    Statement query(*m_db, "SELECT id, task_name, category, tags, text, evidence, run_id, candidate_id, created_at "
                           "FROM lesson ORDER BY id");
    while (query.step()) {
        KnowledgeLesson item;
        Lesson& lesson = item.lesson;
        lesson.id = query.column_int(0);
        std::string what = fmt::format("lesson {}", lesson.id);
        lesson.task_name = query.column_text(1);
        lesson.category = query.column_text(2);
        Json tags = query.column_json(3, what + " tags");
        if (tags.is_array())
            for (const auto& tag : tags)
                lesson.tags.push_back(tag.is_string() ? tag.get<std::string>() : tag.dump());
        lesson.text = query.column_text(4);
        lesson.evidence = query.column_json(5, what + " evidence");
        item.run_id = query.column_text(6);
        lesson.candidate_id = query.column_optional_int(7);
        lesson.created_at = query.column_real(8);
        result.push_back(std::move(item));
    }
    return result;
}

int64_t KnowledgeBase::count() const
{
    return m_db ? m_db->query_int("SELECT count(*) FROM lesson") : 0;
}

} // namespace kforge
