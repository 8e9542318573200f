// The run archive: one SQLite file per run holding everything the run produced (DESIGN.md §8).
//
// Invariants:
// - One writer at a time. Opening for writing takes an exclusive lock on `<archive>.lock` that the
//   kernel drops when the holder exits, kill -9 included; a second writer is refused with the
//   holder's pid, host and start time. Readers take no lock and may run beside the writer.
// - Every write method is one transaction: a candidate, its inspirations and all its measurements
//   commit together or not at all, so a crash never leaves half a candidate. atomically() groups
//   several writes (a candidate, its elite placement, the RNG state) into one transaction.
// - WAL mode with synchronous=FULL: a commit survives the process and the machine dying right
// after.
// - Each read query is its own read transaction, so a read-only Archive sees every commit the
// writer
//   made before the query started, without reopening.
// - Every archive holds its run record from the moment it is created.
//
// Not thread-safe: one thread uses an Archive (the controller). Errors that stop the command throw
// kforge::Error naming the archive file: bad_input for a file that is not a usable kforge archive,
// runtime for I/O, locks and SQLite failures.
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

#include "archive/rows.hpp"
#include "archive/schema.hpp"
#include "archive/writer_lock.hpp"
#include "core/candidate.hpp"
#include "core/records.hpp"
#include "core/technique.hpp"
#include "util/error.hpp"

namespace kforge {

class Database;

// A kforge archive that lacks a table or column its schema version has (a file damaged or edited
// by hand): bad input, "FILE: damaged archive: table 'candidate' is missing". Thrown by open() for
// writing, and by any query that needs what is missing on an archive opened read-only, so a
// reader can show what is still there.
class DamagedArchive : public Error
{
public:
    explicit DamagedArchive(const std::string& message) : Error(ErrorKind::bad_input, message) {}
};

enum class OpenMode
{
    write,
    read_only
};
enum class CallText
{
    omit,
    include
}; // whether LLM call queries load request and reply
enum class MetaPromptFilter
{
    active,
    all
};

class Archive
{
public:
    // Creates a new archive at `path` holding `run`, and opens it for writing. Fails if the file
    // exists (a run is resumed with open(), never overwritten). `migrations` is the schema to
    // build; tests pass their own list to exercise upgrades.
    static Archive create(const std::filesystem::path& path, const RunInfo& run,
                          const std::vector<Migration>& migrations = schema_migrations());
    // Opens an existing archive. OpenMode::write takes the writer lock and upgrades an older
    // schema; OpenMode::read_only takes no lock and refuses an archive whose schema needs an
    // upgrade. Either refuses a file that is missing, not SQLite, not a kforge archive, or newer
    // than `migrations`.
    static Archive open(const std::filesystem::path& path, OpenMode mode,
                        const std::vector<Migration>& migrations = schema_migrations());
    // Opens an existing archive to continue its run without changing the file yet: takes the writer
    // lock and checks everything open() checks, but reads through a read-only connection at the
    // file's own schema version. begin_writing() then upgrades the schema and allows writes; until
    // then every write is refused. `kforge resume` reads the run with it, starts the session, and
    // only then touches the archive, so a session that cannot start leaves it as it was.
    static Archive open_for_resume(const std::filesystem::path& path,
                                   const std::vector<Migration>& migrations = schema_migrations());
    // After open_for_resume(): reopens the file for writing (WAL, migrations to the newest schema).
    void begin_writing();
    // Tables the archive's schema version has that the file lacks (a read-only open allows them;
    // queries that need one throw DamagedArchive). Empty for a sound archive.
    const std::vector<std::string>& missing_tables() const { return m_missing_tables; }

    Archive(Archive&&) noexcept;
    Archive& operator=(Archive&&) noexcept;
    ~Archive();

    const std::filesystem::path& path() const { return m_path; }
    OpenMode mode() const { return m_mode; }
    int schema_version() const;
    // Runs `work` in one transaction: every write it makes commits together, or none does when it
    // throws (the exception is rethrown). Nests. On a read-only archive every query inside sees the
    // same snapshot, however much the writer commits meanwhile.
    void atomically(const std::function<void()>& work);
    // "ok", or SQLite's list of problems (PRAGMA integrity_check).
    std::string integrity_check() const;
    // Every stored JSON value that does not parse (a file damaged or edited by hand), each as the
    // DamagedArchive message its reader throws ("FILE: damaged archive: candidate 24 metrics:
    // invalid JSON ..."), at most `limit`: column by column, rows in key order. Reads every JSON
    // column of every row, model requests included (archive/stored_json.cpp). Empty when sound.
    std::vector<std::string> damaged_json(size_t limit) const;

    // --- run ---
    RunInfo run_info() const;
    // Replaces the stored run record (resume: new config, device, versions); updated_at is set now.
    void update_run(const RunInfo& run);
    // running | interrupted | finished | failed (anything else is refused); updated_at is set now.
    void set_run_state(std::string_view state);

    // --- candidates (archive/candidates.cpp) ---
    // Stores the candidate with its evaluation, inspirations, every measurement and the GPU that
    // measured it in one transaction and returns its id (candidate.id is ignored; created_at 0
    // means now). The parent, inspirations and LLM call must already be stored.
    int64_t insert_candidate(const Candidate& candidate);
    // The full record with its measurements, or nullopt when no candidate has that id.
    std::optional<Candidate> candidate(int64_t id) const;
    // The GPU that measured candidate `id`; nullopt for one never measured, or an archive written
    // before GPUs were recorded.
    std::optional<GpuIdentity> candidate_gpu(int64_t id) const;
    // The id of a stored candidate with this source hash (the oldest), for duplicate rejection.
    std::optional<int64_t> find_candidate_by_hash(std::string_view source_hash) const;
    int64_t candidate_count() const;
    // Every candidate in full (inspirations and measurements included), in id order, handed to
    // `visit` one at a time so that a long run is never all in memory. `visit` may run other
    // queries on this archive; wrap the walk in atomically() to see one snapshot of a live run.
    void for_each_candidate(const std::function<void(const Candidate&)>& visit) const;
    // Measurements of one candidate, in the order they were stored.
    std::vector<Measurement> measurements(int64_t candidate_id) const;
    // Correct candidates timed below the roofline floor (metrics "suspicious"), accepted or not, in
    // full, oldest first. The search stores their would-be fitness in metrics "suspicious_fitness"
    // and none in the fitness column until a user accepts one.
    std::vector<Candidate> flagged_candidates() const;
    int64_t flagged_count() const;
    // A user's acceptance of flagged candidate `id` after re-measuring it (`kforge eval RUN
    // --candidate ID --held-out --accept`): its fitness becomes `fitness`, its metrics gain
    // "accepted" = `evidence`, and `measurements` (the re-measurement) are added to its own, in one
    // transaction. From then on it ranks like any correct candidate (best_candidate, top_candidates)
    // and a resumed search places it. Throws Error(bad_input) naming the archive when `id` is not a
    // flagged candidate, or is one accepted already.
    void accept_flagged_candidate(int64_t id, double fitness, const Json& evidence,
                                  const std::vector<Measurement>& measurements);
    // Baseline timings of the run (reference, vendor libraries), stored without a candidate.
    void insert_baselines(const std::vector<Measurement>& baselines);
    // The latest baseline per (shape set, shape label, subject), in the order first stored.
    std::vector<Measurement> baselines() const;

    // --- queries (archive/queries.cpp) ---
    // The correct candidate with the highest fitness (the oldest among equals), in full.
    std::optional<Candidate> best_candidate() const;
    // Correct candidates by fitness, best first, at most `limit`.
    std::vector<CandidateSummary> top_candidates(size_t limit) const;
    std::map<VerdictKind, int64_t> verdict_counts() const;
    // Non-correct candidates, newest first, at most `limit`; messages cut to `max_message_chars`.
    std::vector<FailureRow> failures(size_t limit, size_t max_message_chars) const;
    // The candidate and its ancestors, the candidate first and the oldest ancestor last. Empty when
    // `id` is unknown.
    std::vector<CandidateSummary> lineage(int64_t id) const;
    // Every candidate in id order, for fitness-over-time plots.
    std::vector<FitnessPoint> fitness_series() const;

    // --- LLM calls, meta-prompts, lessons (archive/calls.cpp) ---
    // Stores one call and returns its id (record.id is ignored).
    int64_t insert_llm_call(const LlmCallRecord& record);
    std::optional<LlmCallRecord> llm_call(int64_t id) const;
    // The newest calls first, at most `limit`; with CallText::omit, request and reply stay empty.
    std::vector<LlmCallRecord> llm_calls(size_t limit, CallText text) const;
    // Every call (the builtin proposer's records included), oldest first, handed to `visit` one at a
    // time; with CallText::omit, request and reply stay empty.
    void for_each_llm_call(CallText text, const std::function<void(const LlmCallRecord&)>& visit) const;
    // Totals over calls to language models. The builtin proposer's records (provider "builtin",
    // no model, no cost) are not model calls and are left out; llm_usage_by_model() lists them.
    LlmUsage llm_usage_total() const;
    // Per provider and model, the most expensive first.
    std::vector<LlmUsage> llm_usage_by_model() const;
    int64_t insert_meta_prompt(const MetaPrompt& prompt);
    // Rewrites text, uses, improvements and active of the stored prompt `prompt.id`.
    void update_meta_prompt(const MetaPrompt& prompt);
    std::vector<MetaPrompt> meta_prompts(MetaPromptFilter filter) const;
    int64_t insert_lesson(const Lesson& lesson);
    std::vector<Lesson> lessons() const;

    // --- two-phase plans (archive/plans.cpp); empty on archives older than k_schema_plan_tables ---
    // Stores the plan of candidate `plan.candidate_id` (already stored, or stored in the same
    // atomically() group) with its claimed techniques, in one transaction. A candidate has one plan.
    void insert_candidate_plan(const CandidatePlan& plan);
    // The plan behind candidate `candidate_id`; nullopt for a candidate proposed in one phase.
    std::optional<CandidatePlan> candidate_plan(int64_t candidate_id) const;
    // Every stored plan, in candidate id order.
    std::vector<CandidatePlan> candidate_plans() const;

    // --- elites and search state (archive/state.cpp) ---
    // Places `elite` in its cell; the previous occupant, if any, stays in the history as replaced.
    void set_elite(const Elite& elite);
    // Current occupants, by island then cell; `island` nullopt means all islands.
    std::vector<Elite> elites(std::optional<int> island = std::nullopt) const;
    // Every placement ever made, oldest first.
    std::vector<ElitePlacement> elite_history() const;
    // JSON value stored under `key`, or nullopt.
    std::optional<Json> search_state(std::string_view key) const;
    void set_search_state(std::string_view key, const Json& value);

    // --- GPUs (archive/gpus.cpp); empty on archives older than k_schema_gpu_tables ---
    // The number the next session's GPU rows use (1 + the highest so far).
    int next_gpu_session() const;
    // Stores (or brings up to date) the rows of `session`, one per GPU.
    void record_gpu_usage(int session, const std::vector<GpuUsage>& usage);
    // Every GPU the run used, in the order first recorded, with its totals over all sessions.
    std::vector<GpuTotals> gpu_totals() const;

private:
    Archive(std::filesystem::path path, OpenMode mode, WriterLock lock,
            std::unique_ptr<Database> db, int version);
    // The id of `gpu`'s row, stored now when new.
    int64_t gpu_row(const GpuIdentity& gpu);
    bool has_gpu_tables() const { return m_version >= k_schema_gpu_tables; }
    bool has_plan_tables() const { return m_version >= k_schema_plan_tables; }
    // Throws Error(runtime) naming the file and `action` when this archive is read-only.
    void require_writer(std::string_view action) const;

    std::filesystem::path m_path;
    OpenMode m_mode = OpenMode::read_only;
    WriterLock m_lock; // declared before m_db: released only after the connection closes
    std::unique_ptr<Database> m_db;
    int m_version = 0; // the schema version this object reads and writes
    std::vector<std::string> m_missing_tables;
    std::vector<Migration> m_pending; // open_for_resume(): the steps begin_writing() applies
    bool m_writes_deferred = false;   // open_for_resume() until begin_writing()
};

} // namespace kforge
