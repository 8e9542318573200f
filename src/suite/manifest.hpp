// A suite folder (`kforge suite run ... -o SUITE_DIR`) and its manifest, suite.json.
//
//   SUITE_DIR/suite.json          the manifest: the suite's settings and its problems, each with its
//                                 source, kind, spec, archive, state and why, and its sessions
//   SUITE_DIR/problems/<id>/      imported problems: the spec with the program beside it
//   SUITE_DIR/runs/<id>.kforge    one run archive per problem (what `resume`, `inspect` read)
//   SUITE_DIR/logs/<id>.log       everything the problem's imports and runs wrote to stderr
//
// Several processes may work on one suite at once (`--shard I/N` on a cluster, each on its own
// problems), so the manifest is never written from a stale copy: every change takes the manifest's
// file lock (suite.json.lock, flock), reads the current file, applies the change and replaces the
// file atomically. Readers (`suite report`) take no lock: the rename means they see a whole file.
// A process working on a problem also holds that problem's claim (runs/<id>.claim, flock) for as
// long as it works on it, so a problem the manifest calls running whose claim is free was left by a
// process that died, and another one may take it over. A finished problem's claim file is removed.
//
// Paths inside the suite folder are stored relative to it, so a suite folder can be moved or read
// from another host; sources and specs outside it are stored absolute, and each source also relative
// to the suite folder, which is what a problem is known by once its folder and sources have moved or
// been copied together (a model folder's regions/ and suite/, say: problems.hpp).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "util/json_reader.hpp"

namespace kforge {

inline constexpr const char* k_suite_schema = "kforge.suite/1";

enum class ProblemKind
{
    python, // a PyTorch program, imported into problems/<id>/
    spec    // a kforge.task/1 spec, used where it is
};
enum class ProblemState
{
    waiting,  // not started, being imported, or interrupted: the next `suite run` takes it
    running,  // a process works on it now (or did, and died: see the claim)
    finished, // its run ended normally (budget, time, patience, nothing new to try)
    failed,   // its import or run failed; `reason` says how (retried with --retry-failed)
    skipped   // nothing to run it with (no replies and no seeds, no money left); reconsidered each run
};
std::string_view problem_kind_name(ProblemKind kind);
std::string_view problem_state_name(ProblemState state);

// One run of a problem's archive by `kforge optimize` or `kforge resume`.
struct ProblemSession {
    std::string command;           // "optimize" or "resume"
    std::string host;
    int gpu = -1;                  // device index on that host
    double started_at = 0;         // seconds since the epoch
    std::optional<double> ended_at;
    std::optional<int> exit_code;  // 128 + N when killed by signal N
    std::string exit;              // "exited with status 0"
    double busy_s = 0;             // GPU busy time the run recorded in this session
    double search_s = 0;           // of its time held, how long the search ran (after the run's startup)
    std::optional<double> cost_cap; // the --max-cost it was given (dollars, whole run)

    Json to_json() const;
    static ProblemSession from_json(const JsonReader& reader);
};

struct SuiteProblem {
    std::string id;                // unique in the suite, stable: the source's stem (-2, -3 on clashes)
    std::string source;            // absolute path of the .py or .json that was given
    std::string source_relative;   // the same from the suite folder ("../regions/x.py"); empty in
                                   // manifests written before it was kept, until their next run
    ProblemKind kind = ProblemKind::spec;
    std::string spec;              // imported: relative to the suite folder; else absolute
    std::string archive;           // relative: runs/<id>.kforge
    std::string log;               // relative: logs/<id>.log
    ProblemState state = ProblemState::waiting;
    std::string reason;            // why it is in its state (the stop reason, the error, ...)
    std::string model;             // what proposes its kernels: "builtin", "replay:FILE", the --model list
    double cost_usd = 0;           // model dollars its archive holds, as of its last session's end
    std::string source_hash;       // of the source's text when it was added (or imported)
    std::vector<ProblemSession> sessions;

    bool running_now() const { return state == ProblemState::running; }
    Json to_json() const;
    static SuiteProblem from_json(const JsonReader& reader);
};

// The settings of the suite, as `suite run` was last given them (a flag not given keeps the stored
// value).
struct SuiteSettings {
    std::optional<int64_t> budget;          // candidates per problem
    std::optional<std::string> time;        // wall time per problem, as written ("20s", "1h")
    std::optional<double> max_cost;         // dollars for the whole suite
    std::vector<std::string> models;        // --model values as given; empty: builtin
    std::vector<std::string> optimize_args; // passed to every new `kforge optimize`
    std::optional<int> parallel;            // --parallel of every run
    std::optional<std::string> knowledge;   // --knowledge PATH
    bool no_knowledge = false;

    Json to_json() const;
    static SuiteSettings from_json(const JsonReader& reader);
};

struct SuiteManifest {
    double created_at = 0;
    double updated_at = 0;
    SuiteSettings settings;
    std::vector<SuiteProblem> problems; // sorted by id: the order of --shard's indices
    Json runs = Json::array();          // one record per `suite run` process (host, shard, GPUs' use)

    SuiteProblem* find(const std::string& id);
    const SuiteProblem* find(const std::string& id) const;
    // Index of `id` in the sorted problem list (what --shard I/N takes modulo N); -1 if absent.
    int index_of(const std::string& id) const;

    Json to_json() const;
    // Throws Error(bad_input) naming `what` and the field for a manifest kforge cannot read.
    static SuiteManifest from_json(const Json& json, const std::string& what);
};

class SuiteFolder
{
public:
    // The suite at `root`; creates its folders (and nothing else) when `create`, else requires
    // suite.json to exist (Error(bad_input) "... is not a kforge suite folder").
    SuiteFolder(std::filesystem::path root, bool create);

    const std::filesystem::path& root() const { return m_root; }
    std::filesystem::path manifest_path() const { return m_root / "suite.json"; }
    // A path stored in the manifest, made usable: relative ones are relative to the suite folder.
    std::filesystem::path resolve(const std::string& stored) const;
    // The lock file a process holds while it works on problem `id`.
    std::filesystem::path claim_path(const std::string& id) const;

    // The manifest as it is now, without locking (nullopt while there is none).
    std::optional<SuiteManifest> read() const;
    // Locks the manifest, reads it (or starts an empty one), applies `change`, writes it back
    // atomically and returns what was written. `change` may throw; then nothing is written.
    SuiteManifest update(const std::function<void(SuiteManifest&)>& change) const;

private:
    std::filesystem::path m_root;
};

// Seconds since the epoch, now.
double epoch_now();

} // namespace kforge
