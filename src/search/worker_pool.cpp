// The search's call threads; see worker_pool.hpp.
#include "search/worker_pool.hpp"

namespace kforge {

WorkerPool::WorkerPool(int threads)
{
    for (int i = 0; i < threads; ++i)
        m_threads.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
        m_jobs.clear(); // jobs not started never start
    }
    m_job_ready.notify_all();
    for (auto& thread : m_threads)
        thread.join();
}

void WorkerPool::post(uint64_t seq, Job job)
{
    {
        std::lock_guard lock(m_mutex);
        m_jobs.emplace_back(seq, std::move(job));
        ++m_outstanding;
    }
    m_job_ready.notify_one();
}

std::vector<PoolResult> WorkerPool::take(std::chrono::milliseconds wait)
{
    std::unique_lock lock(m_mutex);
    m_result_ready.wait_for(lock, wait, [this] { return !m_results.empty() || m_outstanding == 0; });
    std::vector<PoolResult> out;
    out.swap(m_results);
    m_outstanding -= out.size();
    return out;
}

size_t WorkerPool::outstanding() const
{
    std::lock_guard lock(m_mutex);
    return m_outstanding;
}

void WorkerPool::work()
{
    for (;;) {
        std::pair<uint64_t, Job> job;
        {
            std::unique_lock lock(m_mutex);
            m_job_ready.wait(lock, [this] { return m_stopping || !m_jobs.empty(); });
            if (m_stopping)
                return;
            job = std::move(m_jobs.front());
            m_jobs.pop_front();
        }
        PoolResult result;
        result.seq = job.first;
        try {
            result.value = job.second();
        } catch (...) {
            result.error = std::current_exception();
        }
        {
            std::lock_guard lock(m_mutex);
            m_results.push_back(std::move(result));
        }
        m_result_ready.notify_all();
    }
}

} // namespace kforge
