// The suite's GPU lanes: one lane per GPU of this process, with places for --per-gpu runs at once
// or, by default, as many as auto estimates (runner.hpp says why runs share a GPU, concurrency.hpp
// how many). This file decides which lane gets the next problem (level by level, so that with
// fewer problems ready than places every GPU gets its share, and only while the run fits in the
// host's and the GPU's memory), starts a problem's run on a lane (its claim, its launch plan, its
// share of --max-cost, --gpu-share SUITE_DIR/gpus, under which its workers take the GPU's measuring
// lock, --gpu-searches K when runs search in turns, and a child environment sized for the runs
// sharing this host), ends
// it (the lane's search time, the manifest's outcome) and accounts each lane's use: busy (the union
// of the measuring lock's logged holds, gpu_use.hpp), the time its runs searched and held it,
// each over the lane's window, until it found no problem left to take.
//
// The order of writes is the one runner.cpp states: a problem is claimed before the
// manifest says it runs, and the manifest says how it ended before the claim is released.
#include "suite/runner.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>
#include <unistd.h>

#include "evaluator/compile/compile.hpp"
#include "evaluator/worker/share.hpp"
#include "search/progress.hpp"
#include "suite/child_outputs.hpp"
#include "suite/problems.hpp"
#include "util/error.hpp"
#include "util/host_resources.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr uint64_t k_host_reserve_bytes = uint64_t{1} << 30; // left to the suite itself and the OS
constexpr double k_gpu_memory_share = 0.9;                    // of a GPU's memory its runs may take
// A run younger than this may not have grown to its size yet: its estimate still counts against
// the host's available memory.
constexpr auto k_growing = std::chrono::seconds(90);
constexpr auto k_memory_retry = std::chrono::seconds(2); // after memory held a run back

std::string gib(uint64_t bytes)
{
    return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / static_cast<double>(uint64_t{1} << 30));
}

} // namespace

SuiteRunner::Lane::Lane(VisibleGpu gpu_, const fs::path& share_dir)
    : gpu(std::move(gpu_)), label(fmt::format("gpu{}", gpu.index)),
      use(gpu_share_path(share_dir, gpu.facts.uuid, GpuShareFile::measuring_log))
{
}

// ---------------------------------------------------------------------------------------------
// Starting and ending runs on the lanes.

void SuiteRunner::start_runs()
{
    // Level by level, so that with fewer problems ready than places every GPU gets its share.
    size_t places = this->places();
    for (size_t level = 1; level <= places; ++level)
        for (auto& lane : m_lanes)
            if (lane.runs.size() < level && start_run_on(lane)) {
                lane.window_end.reset();
                m_most_runs = std::max(m_most_runs, lane.runs.size());
            }
    bool remaining = std::any_of(m_manifest.problems.begin(), m_manifest.problems.end(),
                                 [&](const SuiteProblem& p) { return may_start(p); });
    for (auto& lane : m_lanes)
        if (lane.runs.size() < places && !remaining && !lane.window_end)
            lane.window_end = since_start();
}

bool SuiteRunner::start_run_on(Lane& lane)
{
    // Memory held the last run back: planning a launch reads its spec and archive, so it is not
    // tried again on every turn of the loop, only after a while or once a run has ended.
    if (!lane.runs.empty() && Clock::now() < m_memory_retry_at)
        return false;
    for (size_t i = 0; i < m_manifest.problems.size(); ++i) {
        SuiteProblem problem = m_manifest.problems[i]; // a copy: updates replace the manifest
        if (!may_start(problem) || is_active(problem.id) || !problem_spec_ready(m_folder, problem))
            continue;
        FileLock claim = FileLock::acquire(m_folder.claim_path(problem.id), LockWait::try_once);
        if (!claim.held()) {
            m_settled.insert(problem.id); // another process works on it
            continue;
        }
        ProblemLaunch launch = plan_launch(m_folder, problem, m_manifest.settings);
        if (launch.outcome != ProblemLaunch::Outcome::run) {
            ProblemState state = launch.outcome == ProblemLaunch::Outcome::finished  ? ProblemState::finished
                                 : launch.outcome == ProblemLaunch::Outcome::skipped ? ProblemState::skipped
                                                                                     : ProblemState::failed;
            settle(problem.id, state, launch.reason, false);
            if (state == ProblemState::finished)
                claim.remove_and_release(); // as end_run does, once the manifest says so
            continue;
        }
        if (!memory_fits(lane, launch))
            return false; // the claim goes with this scope; the problem waits for memory
        std::optional<double> cap;
        bool broke = false;
        ProblemSession session;
        session.command = launch.command;
        session.host = m_config.host;
        session.gpu = lane.gpu.index;
        session.started_at = epoch_now();
        m_manifest = m_folder.update([&](SuiteManifest& m) {
            SuiteProblem* p = m.find(problem.id);
            if (!p)
                fail_runtime("{}: problem {} vanished from the manifest", m_folder.manifest_path().string(), problem.id);
            if (launch.priced && m.settings.max_cost) {
                cap = suite_cost_cap(m, p->id, *m.settings.max_cost);
                if (!cap) {
                    broke = true;
                    return;
                }
            }
            session.cost_cap = cap;
            p->state = ProblemState::running;
            p->reason.clear();
            p->model = launch.model_label;
            p->sessions.push_back(session);
        });
        if (broke) {
            settle(problem.id, ProblemState::skipped,
                   fmt::format("less than a cent of the suite's --max-cost ${:.2f} is left for it",
                               m_manifest.settings.max_cost.value_or(0)),
                   false);
            continue;
        }
        auto active = std::make_unique<Active>();
        active->id = problem.id;
        active->command = launch.command;
        active->lane = &lane;
        active->claim = std::move(claim);
        fs::path log = m_folder.resolve(problem.log);
        std::vector<std::string> args = launch_arguments(launch, lane.gpu.index, cap);
        args.insert(args.end(), {"--gpu-share", share_dir().string()});
        if (m_config.searches_per_gpu > 0)
            args.insert(args.end(), {"--gpu-searches", std::to_string(m_config.searches_per_gpu)});
        append_to_log(log, fmt::format("\n== kforge suite, {}: {} {} ==\n", format_local_time(epoch_now()),
                                       m_config.kforge, join(args, " ")));
        active->log_offset = file_size_or_zero(log);
        active->before = read_archive_use(m_folder.resolve(problem.archive));
        active->now = active->before;
        ChildSpec spec{m_config.kforge, args, child_environment(), m_folder.root() / "logs" / (problem.id + ".out"),
                       log};
        try {
            active->child = ChildProcess::start(spec);
        } catch (const Error& e) {
            m_manifest = m_folder.update([&](SuiteManifest& m) {
                if (SuiteProblem* p = m.find(problem.id)) {
                    p->state = ProblemState::failed;
                    p->reason = e.what();
                    p->sessions.back().ended_at = epoch_now();
                    p->sessions.back().exit = "did not start";
                }
            });
            report_done(problem.id, "failed to start");
            continue;
        }
        active->started = Clock::now();
        active->gpu_bytes = run_gpu_bytes(launch.torch_program, launch.task_bytes);
        active->host_bytes = run_host_bytes(launch.torch_program);
        active->models = launch.model_label != "builtin";
        lane.runs.push_back(active.get());
        lane.use.run_started(problem.id, epoch_now());
        ++lane.problems;
        m_progress.event(fmt::format("{}: {} on {} with {}{}", problem.id, launch.command, lane.label,
                                     launch.model_label, cap ? fmt::format(", up to ${:.2f}", *cap) : ""));
        m_active.push_back(std::move(active));
        return true;
    }
    return false;
}

void SuiteRunner::end_run(Active& active)
{
    Lane& lane = *active.lane;
    std::erase(lane.runs, &active);
    m_memory_retry_at = {}; // its memory is free
    lane.use.run_ended(active.id, epoch_now());
    const SuiteProblem* before = m_manifest.find(active.id);
    fs::path log = m_folder.resolve(before->log);
    active.now = read_archive_use(m_folder.resolve(before->archive));
    double busy = std::max(0.0, active.now.busy_s - active.before.busy_s);
    double search = std::max(0.0, active.now.wall_s - active.before.wall_s);
    double held = std::chrono::duration<double>(Clock::now() - active.started).count();
    lane.search_done += search;
    m_ended.candidates += std::max<int64_t>(0, active.now.candidates - active.before.candidates);
    m_ended.model_calls += std::max<int64_t>(0, active.now.model_calls - active.before.model_calls);
    m_ended.models = m_ended.models || active.models;
    m_ended.model_latency_s += std::max(0.0, active.now.model_latency_s - active.before.model_latency_s);
    int code = active.child.exit_code();
    ProblemState state = ProblemState::failed;
    std::string reason;
    if (code == k_exit_ok) {
        state = ProblemState::finished;
        reason = stop_text(m_folder.root() / "logs" / (active.id + ".out"));
    } else if (code == k_exit_interrupted) {
        state = ProblemState::waiting;
        reason = "interrupted";
        if (!m_stopping)
            m_settled.insert(active.id); // stopped by someone else: not restarted by this process
    } else {
        std::string why = last_error_in_log(log, active.log_offset);
        reason = fmt::format("kforge {} {}{}", active.command, active.child.exit_description(),
                             why.empty() ? "" : ": " + why);
    }
    m_manifest = m_folder.update([&](SuiteManifest& m) {
        SuiteProblem* p = m.find(active.id);
        if (!p)
            return;
        p->state = state;
        p->reason = reason;
        p->cost_usd = active.now.cost_usd;
        if (!p->sessions.empty()) {
            ProblemSession& session = p->sessions.back();
            session.ended_at = epoch_now();
            session.exit_code = code;
            session.exit = active.child.exit_description();
            session.busy_s = busy;
            session.search_s = search;
        }
    });
    // Only now: the manifest says how it ended. A finished problem's claim file goes with it, so
    // a finished suite leaves nothing but archives in runs/ (util/file_lock.hpp: why removing it
    // under the lock is safe, and why only once nobody will run the problem again).
    if (state == ProblemState::finished)
        active.claim.remove_and_release();
    else
        active.claim.release();
    if (state == ProblemState::waiting) {
        m_progress.event(fmt::format("{}: interrupted on {} after {}; `kforge suite run` resumes it", active.id,
                                     lane.label, format_elapsed(held)));
        return;
    }
    m_settled.insert(active.id);
    report_done(active.id, fmt::format("{} on {} after {}", problem_state_name(state), lane.label, format_elapsed(held)));
}

// ---------------------------------------------------------------------------------------------
// How many runs a GPU holds.

SuiteDemand SuiteRunner::demand() const
{
    SuiteDemand d = m_ended;
    for (const auto& model : m_manifest.settings.models)
        d.models = d.models || model != "builtin"; // before any run starts
    for (const auto& active : m_active) {
        if (active->import)
            continue;
        d.models = d.models || active->models;
        d.candidates += std::max<int64_t>(0, active->now.candidates - active->before.candidates);
        d.model_calls += std::max<int64_t>(0, active->now.model_calls - active->before.model_calls);
        d.model_latency_s += std::max(0.0, active->now.model_latency_s - active->before.model_latency_s);
    }
    double now = epoch_now();
    for (const auto& lane : m_lanes) {
        d.candidate_s += lane.use.candidate_hold_s();
        d.other_s += lane.use.other_hold_s();
        d.waited_s += lane.use.waited_s();
        d.run_s += lane.use.run_seconds(now);
    }
    return d;
}

size_t SuiteRunner::places() const
{
    if (m_config.per_gpu > 0)
        return static_cast<size_t>(m_config.per_gpu);
    return static_cast<size_t>(m_auto.runs);
}

bool SuiteRunner::memory_fits(const Lane& lane, const ProblemLaunch& launch)
{
    if (m_active.empty() || lane.runs.empty())
        return true; // a lane always gets its first run: something must make progress
    std::string why;
    uint64_t gpu_need = run_gpu_bytes(launch.torch_program, launch.task_bytes);
    uint64_t gpu_held = 0;
    for (const Active* run : lane.runs)
        gpu_held += run->gpu_bytes;
    auto gpu_limit = static_cast<uint64_t>(k_gpu_memory_share * static_cast<double>(lane.gpu.facts.total_memory));
    if (lane.gpu.facts.total_memory > 0 && gpu_held + gpu_need > gpu_limit)
        why = fmt::format("{}'s runs are expected to take {} of its memory and one more {} (the limit is {})",
                          lane.label, gib(gpu_held), gib(gpu_need), gib(gpu_limit));
    if (uint64_t available = usable_memory_bytes(); why.empty() && available > 0) {
        uint64_t growing = 0;
        for (const auto& active : m_active)
            if (!active->import && Clock::now() - active->started < k_growing)
                growing += active->host_bytes;
        uint64_t need = run_host_bytes(launch.torch_program) + k_host_reserve_bytes + growing;
        if (available < need)
            why = fmt::format("the host has {} available and one more run needs about {}", gib(available), gib(need));
    }
    if (why.empty())
        return true;
    if (why != m_memory_note)
        m_progress.event(fmt::format("not starting another run on {} yet: {}", lane.label, why));
    m_memory_note = why;
    m_memory_retry_at = Clock::now() + k_memory_retry;
    return false;
}

// ---------------------------------------------------------------------------------------------
// What the runs share, and the lanes' record.

fs::path SuiteRunner::share_dir() const
{
    return m_folder.root() / "gpus";
}

// A child's environment: no MPI of its own, and each run's share of this host's compiles, since up
// to places() runs per GPU may compile at once: torch.compile's workers (TORCHINDUCTOR_COMPILE_THREADS,
// unless set; a host whose cores are all busy compiling delays the launches of a PyTorch program's
// eager timing, and events around the forward include launch gaps) and kforge's NVRTC workers
// (KFORGE_COMPILE_WORKERS, unless set: the host's default for all the suite's GPUs, as one search on
// those GPUs would have, split among the GPUs: the searches sharing a GPU compile a candidate only as
// their model's replies come, so a GPU's runs together compile about what one search fed at the
// GPU's pace would; compiles at once slow the GPU workers, compile.hpp).
std::vector<std::pair<std::string, std::string>> SuiteRunner::child_environment() const
{
    std::vector<std::pair<std::string, std::string>> env{{"KFORGE_MPI", "off"}};
    if (!std::getenv("TORCHINDUCTOR_COMPILE_THREADS")) {
        size_t runs = std::max<size_t>(1, m_lanes.size() * places());
        size_t threads = std::max<size_t>(1, usable_cpus() / runs);
        env.emplace_back("TORCHINDUCTOR_COMPILE_THREADS", std::to_string(threads));
    }
    if (!std::getenv("KFORGE_COMPILE_WORKERS")) {
        size_t gpus = std::max<size_t>(1, m_lanes.size());
        size_t workers = std::max<size_t>(1, default_compile_workers(gpus) / gpus);
        env.emplace_back("KFORGE_COMPILE_WORKERS", std::to_string(workers));
    }
    return env;
}

Json SuiteRunner::run_record() const
{
    Json gpus = Json::array();
    double elapsed = m_start == Clock::time_point{} ? 0 : since_start();
    for (const auto& lane : m_lanes) {
        double search = lane.search_done;
        for (const Active* run : lane.runs)
            search += std::max(0.0, run->now.wall_s - run->before.wall_s);
        double window = lane.window_end.value_or(elapsed);
        double from = m_started_epoch, to = m_started_epoch + window;
        double busy = lane.use.busy_s(from, to), held = lane.use.held_s(from, to);
        auto share = [window](double part) { return window > 0 ? std::min(1.0, part / window) : 0.0; };
        gpus.push_back(Json{{"index", lane.gpu.index},
                            {"label", lane.label},
                            {"name", lane.gpu.facts.name},
                            {"uuid", lane.gpu.facts.uuid},
                            {"lock_wait_s", lane.use.lock_wait_s(from, to)},
                            {"busy_s", busy},
                            {"search_s", search},
                            {"held_s", held},
                            {"window_s", window},
                            {"busy", share(busy)},
                            {"search", share(search)},
                            {"held", share(held)},
                            {"problems", lane.problems}});
    }
    return Json{{"token", m_token},
                {"host", m_config.host},
                {"pid", static_cast<int64_t>(::getpid())},
                {"shard", fmt::format("{}/{}", m_config.shard, m_config.shards)},
                {"per_gpu", m_config.per_gpu > 0 ? Json(m_config.per_gpu) : Json("auto")},
                {"searches_per_gpu", m_config.searches_per_gpu},
                {"runs_per_gpu", m_most_runs},
                {"auto", m_config.per_gpu > 0 ? Json() : Json{{"runs", m_auto.runs}, {"why", m_auto.why}}},
                {"started_at", m_started_epoch},
                {"ended_at", m_start == Clock::time_point{} ? Json() : Json(epoch_now())},
                {"elapsed_s", elapsed},
                {"interrupted", m_stopping},
                {"problems_done", m_done_here},
                {"gpus", gpus}};
}

} // namespace kforge
