// A CandidateEvaluator with a known fitness landscape, for testing the search without a GPU.
//
// The landscape is a pure function of the source (so equal sources get equal results, as duplicates
// must):
//   - sources with `#define KF_SPEED n` (the scripted model's kernels): fitness n / 100, cell from
//     `#define KF_CELL c` (0..15: one bit per descriptor axis, choosing between its first two bins),
//     verdict from `#define KF_VERDICT k` (a VerdictKind number, correct when absent),
//     `#define KF_SUSPICIOUS 1` flags a time below the roofline, `#define KF_HELD_OUT 0` fails the
//     held-out shapes;
//   - the task's reference: fitness 1 exactly;
//   - anything else (the seeds and the builtin proposer's variants): every param point of its plan
//     gets a fitness in [0.5, 3) from a hash of the kernel names and the point, the best point wins,
//     and the cell comes from a hash of that point.
// Confirmation runs return the fitness times a deterministic factor within +-2%. Jobs take a
// deterministic pseudo-random time up to max_delay and several run at once, so they finish out of
// order, as the real pipeline's do. Waiting jobs are taken lowest ticket first, as the contract says.
#pragma once

#include <stdexcept>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/task.hpp"
#include "evaluator/evaluator.hpp"

namespace kforge::test {

struct FakeSettings {
    std::chrono::milliseconds max_delay{0};
    // When set, each job takes this long instead (a test that needs some jobs to be slow).
    std::function<std::chrono::milliseconds(const EvalJob&)> delay_of;
    int workers = 3;
    double confirm_noise = 0.02;
};

// What the landscape says about one source (before any confirmation noise).
struct FakeOutcome {
    Verdict verdict{VerdictKind::correct, ""};
    double fitness = 0;
    ParamPoint best_params;
    Json descriptors = Json::object();
    bool suspicious = false;
    bool fails_held_out = false;
};
FakeOutcome fake_landscape(const Task& task, const std::string& source);

class FakeEvaluator final : public CandidateEvaluator
{
public:
    FakeEvaluator(const Task& task, FakeSettings settings = {});
    ~FakeEvaluator() override;

    void submit(EvalJob job) override;
    std::vector<EvalResult> collect(std::chrono::milliseconds wait) override;
    size_t pending() const override;
    double gpu_busy_fraction() const override;
    Json environment() const override;
    std::vector<Measurement> baselines() const override;
    // The fake landscape has no program to check.
    std::string check_program(const std::vector<std::string>&) override
    {
        throw std::logic_error("the fake evaluator runs no PyTorch program");
    }

    // Every job submitted so far, in submission order.
    std::vector<EvalJob> jobs() const;

private:
    void work();
    Evaluation evaluate(const EvalJob& job) const;

    const Task& m_task;
    FakeSettings m_settings;
    mutable std::mutex m_mutex;
    std::condition_variable m_job_ready;
    std::condition_variable m_done_ready;
    std::deque<EvalJob> m_queue;
    std::vector<EvalResult> m_done;
    std::vector<EvalJob> m_history;
    size_t m_pending = 0;
    bool m_stopping = false;
    std::vector<std::thread> m_threads;
    std::chrono::steady_clock::time_point m_created = std::chrono::steady_clock::now();
    std::atomic<int64_t> m_busy_us{0};
};

} // namespace kforge::test
