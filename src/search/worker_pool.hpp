// A small pool of threads for the search's slow calls: proposals (and the two phases of planned
// ones), lesson and meta-prompt calls.
//
// Jobs start in the order they are posted (the search posts them in schedule order) and their
// results come back tagged with the item's sequence number, in whatever order they finish; the
// search never lets that order matter. A job's exception (a rejected API key) travels with its
// result and is rethrown on the controller. The destructor waits for running jobs: model calls
// give up promptly once the interrupt flag is set, which the search sets before leaving early.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "agents/llm_ops.hpp"
#include "agents/plan_code.hpp"
#include "agents/proposer.hpp"

namespace kforge {

struct PoolResult {
    uint64_t seq = 0;
    std::variant<Proposal, MetaPromptResult, LessonResult, PlanOutcome> value;
    std::exception_ptr error; // set when the job threw; `value` is then meaningless
};

class WorkerPool
{
public:
    using Job = std::function<std::variant<Proposal, MetaPromptResult, LessonResult, PlanOutcome>()>;

    explicit WorkerPool(int threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    void post(uint64_t seq, Job job);
    // Finished results, waiting up to `wait` for one when none is ready.
    std::vector<PoolResult> take(std::chrono::milliseconds wait);
    // Jobs posted and not yet taken.
    size_t outstanding() const;

private:
    void work();

    mutable std::mutex m_mutex;
    std::condition_variable m_job_ready;
    std::condition_variable m_result_ready;
    std::deque<std::pair<uint64_t, Job>> m_jobs;
    std::vector<PoolResult> m_results;
    size_t m_outstanding = 0;
    bool m_stopping = false;
    std::vector<std::thread> m_threads;
};

} // namespace kforge
