// The user-level knowledge base: lessons learnt by every run on this machine, for later runs on any
// task (DESIGN.md §7, "Knowledge").
//
// One small SQLite file (default `$XDG_DATA_HOME/kforge/knowledge.sqlite`), separate from the run
// archives: a run archive is one run's record, the knowledge base is the user's memory across runs.
// Several runs may write it at once (WAL, a busy timeout, one short transaction per lesson), and a
// lesson is stored once per task however often it is learnt (the same text for the same task is a
// duplicate). Like the run archive, it is written only through this class.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/records.hpp"
#include "core/technique.hpp"

namespace kforge {

class Database;

// SQLite's application_id of a knowledge base ("kfkb"), telling it from run archives.
inline constexpr int32_t k_knowledge_application_id = 0x6b666b62;

// A lesson as the knowledge base keeps it: Lesson::id is the knowledge base's own id, and
// candidate_id refers to a candidate of run `run_id` (not of the reader's run).
struct KnowledgeLesson {
    Lesson lesson;
    std::string run_id; // the run that learnt it ("" for imported lessons without one)
};

// What KnowledgeBase::add_lessons did.
struct LessonImport {
    size_t added = 0;     // stored
    size_t known = 0;     // the knowledge base (or an earlier lesson of the list) held the same text for the task
    bool stopped = false; // `stop` said so before the last lesson: nothing was stored
};

enum class KnowledgeAccess
{
    read_only,  // never creates or writes; a missing file reads as empty
    read_write, // creates the file (and its folder) when missing
};

class KnowledgeBase
{
public:
    // Opens the knowledge base at `path`. Throws Error(bad_input) for a file that is not a kforge
    // knowledge base (or is newer than this kforge), Error(runtime) for I/O and SQLite failures.
    static KnowledgeBase open(const std::filesystem::path& path, KnowledgeAccess access);

    KnowledgeBase(KnowledgeBase&&) noexcept;
    KnowledgeBase& operator=(KnowledgeBase&&) noexcept;
    ~KnowledgeBase();

    const std::filesystem::path& path() const { return m_path; }
    // Stores a lesson of run `run_id` in one transaction; returns its id, or nullopt when the
    // knowledge base holds the same text for the same task already. created_at 0 means now.
    std::optional<int64_t> add(const Lesson& lesson, std::string_view run_id);
    // Stores `lessons` (each with the run that learnt it) in one transaction: every new one, or none
    // at all when `stop` (asked before each lesson) returns true or a write fails, so an import cut
    // short by Ctrl-C, an error or kill -9 leaves the knowledge base as it was.
    LessonImport add_lessons(const std::vector<KnowledgeLesson>& lessons, const std::function<bool()>& stop);
    // Every lesson, oldest first (the file stays small: lessons are a few hundred bytes each).
    std::vector<KnowledgeLesson> lessons() const;
    int64_t count() const;

    // --- techniques (knowledge_techniques.cpp; a read-only view of a version-1 file has none) ---
    // Stores run `run_id`'s tries in one transaction. A try already held (same run, candidate and
    // technique) is left alone, so a run may hand over all its tries again (on resume) and only the
    // new ones count; returns how many were new.
    size_t add_technique_tries(const std::vector<TechniqueTry>& tries, std::string_view run_id);
    // Per technique, the tally of the tries on tasks of `category`, leaving out those of run
    // `exclude_run_id` ("" leaves out none). A run's own tries come from its archive instead.
    std::map<std::string, TechniqueTally> technique_tallies(std::string_view category,
                                                            std::string_view exclude_run_id = "") const;
    // Every try with the run it belongs to, oldest first.
    std::vector<std::pair<std::string, TechniqueTry>> technique_tries() const;
    // Stores run `schedule.run_id`'s schedule, replacing the one it had.
    void put_schedule(const Schedule& schedule);
    // Schedules of runs on tasks of `category`, the highest speedup first, at most one per task and
    // `limit` in all, leaving out run `exclude_run_id`'s.
    std::vector<Schedule> schedules(std::string_view category, std::string_view exclude_run_id, size_t limit) const;

private:
    KnowledgeBase(std::filesystem::path path, std::unique_ptr<Database> db, int version);
    bool has_techniques() const { return m_db && m_version >= 2; }
    void require_writable(std::string_view action) const;

    std::filesystem::path m_path;
    std::unique_ptr<Database> m_db; // null: read-only view of a file that does not exist yet
    int m_version = 0;              // the file's schema version
};

} // namespace kforge
