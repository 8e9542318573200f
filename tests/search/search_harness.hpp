// Running the search in tests: a scripted model, a fake evaluator, a temporary archive, and a
// fingerprint of everything a run chose, to compare two runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agents/provider.hpp"
#include "archive/archive.hpp"
#include "search/fake_evaluator.hpp"
#include "search/search.hpp"

namespace kforge::test {

// A model whose every reply is a pure function of its request: proposals get a kernel whose
// KF_* markers (speed, cell, verdict, ...) come from a hash of the prompt, reduced to `variants`
// distinct kernels so that duplicates happen; analyst requests get a LESSON line, meta-prompt
// requests a strategy note. Calls take a deterministic pseudo-random time up to max_delay.
struct ScriptedSettings {
    std::chrono::milliseconds max_delay{0};
    int variants = 60;
    double cost_per_call = 0;        // dollars per call (cost_known)
    int incorrect_percent = 20;      // share of kernels with a failing verdict
    int no_code_percent = 5;         // share of replies without a code block
    int suspicious_percent = 3;      // share of kernels timed below the roofline floor
    int held_out_fail_percent = 5;   // share of kernels wrong on the held-out shapes
    // > 0: model calls that finish out of order. Each proposal call waits until this many are
    // waiting (or 10 s have passed), then they return newest first, 20 ms apart.
    int release_newest_first = 0;
};

class ScriptedProvider : public Provider
{
public:
    explicit ScriptedProvider(ScriptedSettings settings);
    int calls() const { return m_calls.load(); }
    int max_concurrent() const { return m_max_concurrent.load(); }

protected:
    ChatResult exchange(const ChatRequest& request) override;

private:
    void wait_for_release();

    ScriptedSettings m_settings;
    std::mutex m_gate_mutex;
    std::condition_variable m_gate;
    std::vector<uint64_t> m_held;    // arrival numbers of the held calls, oldest first
    uint64_t m_arrivals = 0;
    std::chrono::steady_clock::time_point m_last_release;
    std::atomic<int> m_calls{0};
    std::atomic<int> m_running{0};
    std::atomic<int> m_max_concurrent{0};
};

// The reply the scripted model gives to a proposal prompt (exposed for replay-file tests).
std::string scripted_kernel_reply(const std::string& prompt, const ScriptedSettings& settings);
// The reply it gives to a planner prompt: a JSON plan naming one technique of the softmax task's
// menu (or a new one), or, for one prompt in nine that is not a repair prompt, an unreadable plan.
std::string scripted_plan_reply(const std::string& prompt);

struct HarnessOptions {
    SearchConfig config;             // progress forced quiet
    bool builtin = false;            // the builtin proposer instead of the scripted model
    ScriptedSettings scripted;
    FakeSettings fake;
    std::vector<LlmCallRecord> replay; // non-empty: a replay provider over these records instead
    KnowledgeBase* knowledge = nullptr;
    CostModel cost;                  // cost.models is set for model runs
    std::function<void(const Candidate&)> on_recorded;
    std::function<void(uint64_t)> on_plan_stored;          // SearchHooks::on_plan_stored
    std::function<void(FakeEvaluator&)> inspect_evaluator; // called after the session
    // With config.plan_share > 0: the replies of the planner, when it is not the main model.
    std::vector<LlmCallRecord> planner_replay;
};

// The task every search test uses (tasks/softmax_f32.json).
const Task& softmax_task();
// The bundled menu the softmax task gets (rowwise).
const Menu& softmax_menu();

// Creates the archive at `path` when it does not exist (with a run record and a run secret), else
// opens it for writing, and runs one session of the search on it.
SearchOutcome run_session(const std::filesystem::path& path, const HarnessOptions& options);
// The same on another task (its own fake landscape; the menu picked by its category and tags).
SearchOutcome run_session(const std::filesystem::path& path, const HarnessOptions& options, const Task& task);

// A resumable run of the builtin proposer on softmax_f32 (2 islands, a budget of 20) at `path`,
// interrupted after `recorded` candidates: an archive `kforge resume` continues.
void run_interrupted_builtin(const std::filesystem::path& path, int recorded = 6);

// Everything the run chose, one line per recorded candidate, elite placement, strategy text,
// lesson and plan, in record order, without ids of model calls or times: two runs that made the
// same choices have equal fingerprints.
std::vector<std::string> run_fingerprint(const std::filesystem::path& path);

// The first index where two fingerprints differ (or the shorter length), for failure messages.
std::string first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b);

} // namespace kforge::test
