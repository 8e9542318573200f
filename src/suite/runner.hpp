// The supervisor of `kforge suite run`: works through one shard of a suite's problems with one
// child process per problem at a time, each on one GPU, up to --per-gpu children per GPU.
//
// Why children: each problem is an ordinary run archive made by the real `kforge optimize` (or
// continued by `kforge resume`), so a crash of one problem's run never takes the suite down and
// each archive keeps every guarantee `resume` gives. With more problems than GPUs, each GPU works
// on problems of its own; no GPU waits for another problem's model calls.
//
// Sharing a GPU (--per-gpu N|auto, default auto): a search spends most of its time waiting for its
// model, and a run's start-up (its processes, CUDA contexts, the PyTorch reference process and
// torch.compile, its baselines) leaves the GPU idle too, so several runs work on one GPU at once,
// all of them searching. Every child gets --gpu-share SUITE_DIR/gpus, under which its GPU work is
// done holding the GPU's measuring lock (no two runs ever measure at once, so every reported time
// is what the run alone would measure), and its --time counts its own time less what it waited for
// that lock (so sharing buys it the search it would get alone); evaluator/worker/share.hpp.
// With --searches-per-gpu K a run searches only in one of the GPU's K search turns (K = 1: runs
// start up side by side but search one at a time, as before). auto picks the number of runs per
// GPU from what the runs measure (concurrency.hpp) and starts a run only when its memory fits the
// host's and the GPU's. Lanes are filled level by level (every GPU its first run, then its
// second, ...).
//
// The loop (run()) is: take stock of the manifest (problems whose process died become waiting
// again); then, until nothing is left: reap children that ended and record how; import PyTorch
// programs ahead of need (a few at a time, on the CPU, while the GPUs run other problems); give
// every idle GPU the next problem it can run; refresh the progress. Ctrl-C forwards a stop to the
// runs (each records what finishes within its grace period and exits resumable), kills imports,
// and returns 130; a second Ctrl-C leaves at once, and the children die with the suite
// (PR_SET_PDEATHSIG), as they do when it is killed.
//
// Money: with --max-cost, a child for a problem with priced models gets --max-cost = what it has
// spent so far plus (the suite's total less what every other problem has spent or holds as the cap
// of its running session) divided by the problems still waiting for money, itself included. Every
// running child's cap is in the manifest, so the caps and the spending never add up past the
// total, across shards too; money a problem leaves unspent goes back to those that come after.
//
// GPU use (gpu_use.hpp): each GPU's busy share is the union of the holds of its measuring
// lock that its runs' workers logged (verifying, timing, profiling, baselines) over the time from
// the suite's start until that GPU found no problem left to take ("while problems remained"). The
// time workers waited for the lock is kept apart, as are the time the runs searched and the time
// at least one run held the GPU, startup included.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "evaluator/gpu/devices.hpp"
#include "suite/child_outputs.hpp"
#include "suite/concurrency.hpp"
#include "suite/gpu_use.hpp"
#include "suite/manifest.hpp"
#include "suite/plan.hpp"
#include "suite/progress.hpp"
#include "util/child_process.hpp"
#include "util/file_lock.hpp"

namespace kforge {

// The --max-cost cap of problem `id`'s next session (dollars, over its whole run): what it has
// spent plus an equal share, among it and every waiting problem, of what the suite's `total_usd`
// leaves after every other problem's spending (or, while it runs, its session's cap). nullopt when
// the share is below a cent: the problem cannot usefully run.
std::optional<double> suite_cost_cap(const SuiteManifest& manifest, const std::string& id, double total_usd);

struct SuiteRunConfig {
    std::string kforge;              // the kforge binary the children run
    std::vector<VisibleGpu> gpus;    // the GPUs this process uses
    int per_gpu = 0;                 // children at once on one GPU (1: each GPU one problem at a time;
                                     // 0: auto, from what the runs measure)
    int searches_per_gpu = 0;        // runs searching at once on one GPU, in turns (0: all of them)
    std::string host;
    int shard = 0;                   // this process runs the problems whose index % shards == shard
    int shards = 1;
    bool retry_failed = false;       // failed problems of the shard run again
    ProgressMode progress = ProgressMode::automatic;
    size_t import_jobs = 1;          // imports at once
    double import_time_limit_s = 600;
};

class SuiteRunner
{
public:
    SuiteRunner(const SuiteFolder& folder, SuiteRunConfig config);
    ~SuiteRunner();
    SuiteRunner(const SuiteRunner&) = delete;
    SuiteRunner& operator=(const SuiteRunner&) = delete;

    // Runs the shard to its end or to Ctrl-C; returns 0 (every problem of the shard finished or
    // skipped), 1 (some failed) or 130 (interrupted).
    int run();
    // This process's record: {"host", "pid", "shard", "per_gpu" (a number or "auto"), "searches_per_gpu",
    // "runs_per_gpu" (the most runs a GPU held at once), "auto" (auto's last choice and why), "started_at", "ended_at",
    // "interrupted", "problems_done", "gpus": [{"index", "label", "name", "uuid", "busy_s",
    // "lock_wait_s", "search_s", "held_s", "window_s", "busy", "search", "held", "problems"}]}, also
    // kept in the manifest's "runs". Per GPU: busy is the union of its runs' measuring (the
    // measuring lock's holds), lock_wait_s what their workers waited for the lock, search the time
    // their searches ran (a run's startup, its baselines included, and its ending are not search),
    // held the time at least one run held the GPU; each over window_s, the time until the GPU found
    // no problem left.
    Json run_record() const;

private:
    struct Active;
    struct Lane;
    // What the progress line needs of a problem that is done.
    struct DoneResult {
        bool correct = false;
        bool fast1 = false; // correct and faster than its first baseline (torch eager, or its reference)
    };

    // --- the steps of run() (runner.cpp) ---
    void take_stock();
    void reap();
    void start_imports();
    void refresh_usage(bool force);
    void begin_stop();
    bool nothing_left() const;
    SuiteStatus status() const;

    // --- helpers (runner.cpp) ---
    bool in_shard(const SuiteProblem& problem) const;
    bool is_active(const std::string& id) const;
    bool may_start(const SuiteProblem& problem) const;
    void start_import(const SuiteProblem& problem, FileLock claim);
    std::vector<std::pair<std::string, std::string>> import_environment() const;
    void end_import(Active& active);
    // Records an outcome decided without a child (finished, skipped or failed at planning).
    // `id` by value: it is often read from the manifest, which this replaces.
    void settle(std::string id, ProblemState state, const std::string& reason, bool ran);
    void report_done(const std::string& id, const std::string& how);
    void save_run_record();
    double since_start() const;

    // --- the runs on the GPU lanes (runner_lanes.cpp) ---
    // A step of run(): gives every lane with a free place the next problem it can run, level by
    // level; a lane with a free place ends its window once no problem is left to start.
    void start_runs();
    // Starts the first problem `lane` can run; false when there is none.
    bool start_run_on(Lane& lane);
    // A run's child ended: the lane's accounting and the manifest's outcome, then the claim goes.
    void end_run(Active& active);
    // Runs a lane may hold now: --per-gpu N, or auto's estimate from what the runs measured.
    size_t places() const;
    // Whether one more run of `launch` fits in memory beside those running (host) and on `lane`'s GPU.
    bool memory_fits(const Lane& lane, const ProblemLaunch& launch);
    SuiteDemand demand() const;
    std::filesystem::path share_dir() const; // SUITE_DIR/gpus: the GPUs' shared locks and logs
    std::vector<std::pair<std::string, std::string>> child_environment() const;

    const SuiteFolder& m_folder;
    SuiteRunConfig m_config;
    SuiteManifest m_manifest;
    SuiteProgress m_progress;
    std::vector<std::unique_ptr<Active>> m_active;
    std::vector<Lane> m_lanes;
    std::set<std::string> m_settled;  // decided this session: not reconsidered until the next
    std::map<std::string, DoneResult> m_results; // of the shard's problems that are done
    std::chrono::steady_clock::time_point m_start;
    std::chrono::steady_clock::time_point m_last_usage{};
    double m_started_epoch = 0;
    std::string m_token;               // tells this process's record in "runs" from others
    bool m_stopping = false;
    int64_t m_done_here = 0;           // problems this process settled
    SuiteDemand m_ended;               // the calls and candidates of the runs that ended (auto's input)
    RunsPerGpu m_auto;                 // auto's last choice
    size_t m_most_runs = 0;            // the most runs a lane held at once
    std::string m_memory_note;         // the last "not starting: memory" reason said (said once)
    std::chrono::steady_clock::time_point m_memory_retry_at{}; // no run starts beside others before it
};

// A child of the runner: a problem's run or its import (shared by the runner's two files).
struct SuiteRunner::Active {
    std::string id;
    bool import = false;
    ChildProcess child;
    FileLock claim;
    Lane* lane = nullptr;
    std::string command;
    std::chrono::steady_clock::time_point started;
    ArchiveUse before;   // what the archive held when this session started
    ArchiveUse now;
    uint64_t gpu_bytes = 0;  // what it is expected to take on its GPU (concurrency.hpp)
    uint64_t host_bytes = 0; // and in host memory
    bool models = false;     // it asks a language model (replayed or not)
    uintmax_t log_offset = 0;
};

// One GPU of this process and the runs on it (runner_lanes.cpp).
struct SuiteRunner::Lane {
    Lane(VisibleGpu gpu_, const std::filesystem::path& share_dir);
    VisibleGpu gpu;
    std::string label;             // "gpu1"
    std::vector<Active*> runs;     // its children now, at most per_gpu
    double search_done = 0;        // the searches' time of its sessions that ended
    std::optional<double> window_end; // seconds after the start when it found no problem left
    int64_t problems = 0;
    SuiteGpuUse use;
};

} // namespace kforge
