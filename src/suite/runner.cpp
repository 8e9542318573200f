// The suite supervisor's loop; see runner.hpp for what it promises and why it is built so.
//
// Order of writes, which other processes rely on: a problem is claimed (its flock) before the
// manifest says it runs, and the manifest says how it ended before the claim is released; so a
// problem the manifest calls running with a free claim was left by a process that died.
//
// Starting, ending and accounting the runs on the suite's GPUs (the lanes that --per-gpu shares)
// is runner_lanes.cpp.
#include "suite/runner.hpp"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "search/progress.hpp"
#include "suite/child_outputs.hpp"
#include "suite/problems.hpp"
#include "suite/results.hpp"
#include "util/error.hpp"
#include "util/host_resources.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr auto k_loop_period = std::chrono::milliseconds(100);
constexpr auto k_usage_period = std::chrono::seconds(2);
constexpr double k_min_cost_share_usd = 0.01; // below a cent, a share buys nothing: the problem is skipped

double seconds_between(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

std::string random_token()
{
    std::random_device device;
    return fmt::format("{:08x}{:08x}", device(), device());
}

} // namespace

std::optional<double> suite_cost_cap(const SuiteManifest& manifest, const std::string& id, double total_usd)
{
    const SuiteProblem* problem = manifest.find(id);
    if (!problem)
        return std::nullopt;
    double left = total_usd - problem->cost_usd;
    int64_t waiting = 1; // itself
    for (const auto& q : manifest.problems) {
        if (q.id == id)
            continue;
        if (q.state == ProblemState::running)
            left -= q.sessions.empty() ? q.cost_usd : std::max(q.cost_usd, q.sessions.back().cost_cap.value_or(q.cost_usd));
        else
            left -= q.cost_usd;
        waiting += q.state == ProblemState::waiting;
    }
    double share = left / static_cast<double>(waiting);
    if (share < k_min_cost_share_usd)
        return std::nullopt;
    return problem->cost_usd + share;
}

SuiteRunner::SuiteRunner(const SuiteFolder& folder, SuiteRunConfig config)
    : m_folder(folder), m_config(std::move(config)), m_progress(m_config.progress)
{
    if (m_config.per_gpu < 0)
        fail(ErrorKind::usage, "--per-gpu: expected auto or at least 1 run per GPU");
    m_lanes.reserve(m_config.gpus.size()); // Active keeps a Lane*
    for (const auto& gpu : m_config.gpus)
        m_lanes.emplace_back(gpu, share_dir());
    m_token = random_token();
}

SuiteRunner::~SuiteRunner() = default;

// ---------------------------------------------------------------------------------------------
// The table of contents.

int SuiteRunner::run()
{
    m_start = Clock::now();
    m_started_epoch = epoch_now();
    take_stock();
    refresh_usage(true); // auto's first choice, before any run starts
    while (true) {
        if (interrupt_requested() && !m_stopping)
            begin_stop();
        reap();
        if (!m_stopping) {
            start_imports();
            start_runs();
        }
        refresh_usage(false);
        if (m_active.empty() && (m_stopping || nothing_left()))
            break;
        m_progress.tick(status());
        std::this_thread::sleep_for(k_loop_period);
    }
    m_progress.finish();
    refresh_usage(true);
    save_run_record();
    if (m_stopping)
        return k_exit_interrupted;
    for (const auto& p : m_manifest.problems)
        if (in_shard(p) && p.state == ProblemState::failed)
            return k_exit_negative;
    return k_exit_ok;
}

// ---------------------------------------------------------------------------------------------
// The steps.

void SuiteRunner::take_stock()
{
    Json record = run_record();
    m_manifest = m_folder.update([&](SuiteManifest& m) {
        for (auto& p : m.problems) {
            if (p.state == ProblemState::running && !file_lock_is_held(m_folder.claim_path(p.id))) {
                p.state = ProblemState::waiting;
                p.reason = "interrupted: the process that ran it ended";
                if (!p.sessions.empty() && !p.sessions.back().ended_at)
                    p.sessions.back().exit = "ended with the process that ran it";
                p.cost_usd = std::max(p.cost_usd, read_archive_use(m_folder.resolve(p.archive)).cost_usd);
            }
            if (in_shard(p) && m_config.retry_failed && p.state == ProblemState::failed) {
                p.state = ProblemState::waiting;
                p.reason = "retried after: " + p.reason;
            }
        }
        m.runs.push_back(record);
    });
    int64_t mine = 0;
    for (const auto& p : m_manifest.problems) {
        if (!in_shard(p))
            continue;
        ++mine;
        if (p.state == ProblemState::finished || p.state == ProblemState::failed) {
            ProblemResult result = read_problem_result(m_folder, p, epoch_now());
            m_results[p.id] = DoneResult{result.correct(), result.correct() && result.vs_reference > 1.0};
        }
    }
    std::string shard = m_config.shards > 1 ? fmt::format(" (shard {}/{})", m_config.shard, m_config.shards) : "";
    m_progress.event(fmt::format("suite {}: {} problem{}{} on {} GPU{}", m_folder.root().string(), mine,
                                 mine == 1 ? "" : "s", shard, m_lanes.size(), m_lanes.size() == 1 ? "" : "s"));
}

void SuiteRunner::reap()
{
    for (size_t i = 0; i < m_active.size();) {
        Active& active = *m_active[i];
        if (!active.child.poll()) {
            ++i;
            continue;
        }
        if (active.import)
            end_import(active);
        else
            end_run(active);
        m_active.erase(m_active.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

void SuiteRunner::start_imports()
{
    size_t importing = std::count_if(m_active.begin(), m_active.end(), [](const auto& a) { return a->import; });
    for (const auto& p : m_manifest.problems) {
        if (importing >= m_config.import_jobs)
            return;
        if (!in_shard(p) || p.kind != ProblemKind::python || p.state != ProblemState::waiting || is_active(p.id) ||
            m_settled.count(p.id) || problem_spec_ready(m_folder, p))
            continue;
        FileLock claim = FileLock::acquire(m_folder.claim_path(p.id), LockWait::try_once);
        if (!claim.held()) {
            m_settled.insert(p.id); // another process works on it
            continue;
        }
        start_import(p, std::move(claim));
        ++importing;
    }
}

void SuiteRunner::refresh_usage(bool force)
{
    auto now = Clock::now();
    if (!force && now - m_last_usage < k_usage_period)
        return;
    m_last_usage = now;
    for (auto& active : m_active)
        if (!active->import)
            active->now = read_archive_use(m_folder.resolve(m_manifest.find(active->id)->archive));
    for (auto& lane : m_lanes)
        lane.use.refresh();
    if (m_config.per_gpu == 0) {
        RunsPerGpu chosen = estimate_runs_per_gpu(demand());
        if (chosen.runs != m_auto.runs || chosen.measured != m_auto.measured || m_auto.why.empty())
            m_progress.event(fmt::format("--per-gpu auto: {} run{} per GPU ({})", chosen.runs,
                                         chosen.runs == 1 ? "" : "s", chosen.why));
        m_auto = chosen;
    }
}

void SuiteRunner::begin_stop()
{
    m_stopping = true;
    size_t runs = 0;
    for (auto& active : m_active) {
        if (active->import) {
            active->child.kill(); // an import is cheap to redo; reap() records it
        } else {
            active->child.signal(SIGINT);
            ++runs;
        }
    }
    m_progress.event(fmt::format("stopping: {} run{} record{} what finishes within its grace period (up to 30 s); "
                                 "Ctrl-C again leaves at once, resumable all the same",
                                 runs, runs == 1 ? "" : "s", runs == 1 ? "s" : ""));
}

bool SuiteRunner::nothing_left() const
{
    return std::none_of(m_manifest.problems.begin(), m_manifest.problems.end(),
                        [&](const SuiteProblem& p) { return may_start(p); });
}

SuiteStatus SuiteRunner::status() const
{
    SuiteStatus s;
    s.elapsed_s = since_start();
    s.stopping = m_stopping;
    for (const auto& p : m_manifest.problems) {
        bool active = is_active(p.id);
        s.cost_usd += active ? 0 : p.cost_usd;
        if (!in_shard(p))
            continue;
        ++s.total;
        if (p.state == ProblemState::finished || p.state == ProblemState::failed ||
            (p.state == ProblemState::skipped && m_settled.count(p.id))) {
            ++s.done;
            s.failed += p.state == ProblemState::failed;
        } else if (!active) {
            ++s.waiting;
        }
    }
    for (const auto& active : m_active) {
        s.running += !active->import;
        s.importing += active->import;
        s.cost_usd += active->now.cost_usd;
    }
    for (const auto& [id, result] : m_results) {
        s.correct += result.correct;
        s.fast1 += result.fast1;
    }
    double elapsed = since_start();
    for (const auto& lane : m_lanes) {
        SuiteLaneStatus l;
        l.gpu = lane.label;
        for (const Active* run : lane.runs)
            l.runs.push_back({run->id, seconds_between(run->started, Clock::now())});
        double window = lane.window_end.value_or(elapsed);
        l.busy = window > 0 ? lane.use.busy_s(m_started_epoch, m_started_epoch + window) / window : 0;
        s.lanes.push_back(l);
    }
    return s;
}

// ---------------------------------------------------------------------------------------------
// Which problems this process may start; imports; outcomes.

bool SuiteRunner::in_shard(const SuiteProblem& problem) const
{
    int index = m_manifest.index_of(problem.id);
    return index >= 0 && index % m_config.shards == m_config.shard;
}

bool SuiteRunner::is_active(const std::string& id) const
{
    return std::any_of(m_active.begin(), m_active.end(), [&](const auto& a) { return a->id == id; });
}

// Whether this process could still start `problem`, now or once it is imported.
bool SuiteRunner::may_start(const SuiteProblem& problem) const
{
    if (!in_shard(problem) || m_settled.count(problem.id))
        return false;
    if (problem.state != ProblemState::waiting && problem.state != ProblemState::skipped)
        return false;
    return !std::any_of(m_active.begin(), m_active.end(), [&](const auto& a) { return a->id == problem.id && !a->import; });
}

// An import's environment: no MPI, and its share of the cores for torch's CPU threads (unless set):
// torch starts a thread per core in each process, so eight imports at once on a 16-core host would
// run 128 threads beside the runs' own.
std::vector<std::pair<std::string, std::string>> SuiteRunner::import_environment() const
{
    std::vector<std::pair<std::string, std::string>> env{{"KFORGE_MPI", "off"}};
    if (!std::getenv("OMP_NUM_THREADS"))
        env.emplace_back("OMP_NUM_THREADS",
                         std::to_string(std::max<size_t>(1, usable_cpus() / std::max<size_t>(1, m_config.import_jobs))));
    return env;
}

void SuiteRunner::start_import(const SuiteProblem& problem, FileLock claim)
{
    fs::path spec = m_folder.resolve(problem.spec);
    std::error_code ec;
    fs::create_directories(spec.parent_path(), ec);
    fs::path log = m_folder.resolve(problem.log);
    std::vector<std::string> args{"task", "import", problem.source, "-o", spec.string(), "--force", "--time-limit",
                                  fmt::format("{}", m_config.import_time_limit_s)};
    append_to_log(log, fmt::format("\n== kforge suite, {}: {} {} ==\n", format_local_time(epoch_now()),
                                   m_config.kforge, join(args, " ")));
    auto active = std::make_unique<Active>();
    active->id = problem.id;
    active->import = true;
    active->command = "import";
    active->claim = std::move(claim);
    active->log_offset = file_size_or_zero(log);
    try {
        active->child = ChildProcess::start(ChildSpec{m_config.kforge, args, import_environment(), log, log});
    } catch (const Error& e) {
        settle(problem.id, ProblemState::failed, e.what(), false);
        return;
    }
    active->started = Clock::now();
    m_progress.event(fmt::format("{}: importing {}", problem.id, problem.source));
    m_active.push_back(std::move(active));
}

void SuiteRunner::end_import(Active& active)
{
    const SuiteProblem* problem = m_manifest.find(active.id);
    fs::path log = m_folder.resolve(problem->log);
    double seconds = seconds_between(active.started, Clock::now());
    if (active.child.exit_code() == 0 && problem_spec_ready(m_folder, *problem)) {
        m_progress.event(fmt::format("{}: imported in {:.1f} s", active.id, seconds));
        return;
    }
    if (m_stopping) {
        m_progress.event(fmt::format("{}: import stopped", active.id));
        return; // still waiting: the next run imports it again
    }
    std::string why = last_error_in_log(log, active.log_offset);
    settle(problem->id, ProblemState::failed,
           fmt::format("import {}{}", active.child.exit_description(), why.empty() ? "" : ": " + why), false);
}

void SuiteRunner::settle(std::string id, ProblemState state, const std::string& reason, bool ran)
{
    m_manifest = m_folder.update([&](SuiteManifest& m) {
        if (SuiteProblem* p = m.find(id)) {
            p->state = state;
            p->reason = reason;
        }
    });
    m_settled.insert(id);
    std::string how = state == ProblemState::finished && !ran ? std::string("finished earlier")
                                                              : std::string(problem_state_name(state));
    report_done(id, how);
}

void SuiteRunner::report_done(const std::string& id, const std::string& how)
{
    ++m_done_here;
    const SuiteProblem* problem = m_manifest.find(id);
    ProblemResult result = read_problem_result(m_folder, *problem, epoch_now());
    m_results[id] = DoneResult{result.correct(), result.correct() && result.vs_reference > 1.0};
    int64_t done = 0, total = 0;
    for (const auto& p : m_manifest.problems) {
        if (!in_shard(p))
            continue;
        ++total;
        done += p.state == ProblemState::finished || p.state == ProblemState::failed ||
                (p.state == ProblemState::skipped && m_settled.count(p.id));
    }
    std::string text = fmt::format("{} {}", id, how);
    if (problem->state == ProblemState::failed || problem->state == ProblemState::skipped) {
        text += ": " + first_line(problem->reason, 300);
    } else {
        std::vector<std::string> parts;
        if (result.correct()) {
            parts.push_back(fmt::format("correct, {} {}", format_speedup(result.vs_reference),
                                        result.torch ? "torch eager" : "the reference"));
            if (result.vs_compile)
                parts.push_back(fmt::format("{} torch.compile", format_speedup(result.vs_compile)));
        } else {
            parts.push_back(result.verdict.empty() ? "no candidate" : "no correct kernel (furthest: " + result.verdict + ")");
        }
        parts.push_back(fmt::format("{} candidate{}", result.candidates, result.candidates == 1 ? "" : "s"));
        parts.push_back(fmt::format("${:.3f}", result.cost_usd));
        text += ": " + join(parts, ", ");
        if (!problem->reason.empty())
            text += " (" + problem->reason + ")";
    }
    m_progress.done(done, total, text);
}

// ---------------------------------------------------------------------------------------------
// The record of this process.

double SuiteRunner::since_start() const
{
    return seconds_between(m_start, Clock::now());
}

void SuiteRunner::save_run_record()
{
    Json record = run_record();
    m_manifest = m_folder.update([&](SuiteManifest& m) {
        for (auto& run : m.runs)
            if (run.is_object() && run.contains("token") && run["token"] == m_token) {
                run = record;
                return;
            }
        m.runs.push_back(record);
    });
}

} // namespace kforge