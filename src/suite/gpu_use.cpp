// A suite GPU's busy, waiting and held time from its measuring log and its runs' sessions; see
// gpu_use.hpp. The holds' union is kept merged as lines arrive (they come in time order, the
// lock serialising them, so a new one almost always extends the end), so the shares the progress
// line asks for several times a second cost one pass over disjoint intervals.
#include "suite/gpu_use.hpp"

#include <algorithm>
#include <fstream>

#include "evaluator/worker/share.hpp"

namespace kforge {

double covered_seconds(std::vector<std::pair<double, double>> intervals, double from, double to)
{
    std::sort(intervals.begin(), intervals.end());
    double covered = 0, reach = from;
    for (const auto& [begin, end] : intervals) {
        double a = std::max(begin, reach), b = std::min(end, to);
        if (b > a) {
            covered += b - a;
            reach = b;
        }
    }
    return covered;
}

SuiteGpuUse::SuiteGpuUse(std::filesystem::path measuring_log) : m_log(std::move(measuring_log)) {}

void SuiteGpuUse::refresh()
{
    std::ifstream in(m_log, std::ios::binary);
    if (!in)
        return; // nothing measured on this GPU yet
    in.seekg(static_cast<std::streamoff>(m_offset));
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    m_offset += chunk.size();
    m_partial += chunk;
    size_t start = 0;
    for (size_t newline; (newline = m_partial.find('\n', start)) != std::string::npos; start = newline + 1) {
        auto hold = parse_measuring_hold(std::string_view(m_partial).substr(start, newline - start));
        if (!hold)
            continue;
        ++m_holds;
        add_hold(hold->begin_s, hold->end_s);
        (hold->what == "variant" ? m_candidate_hold_s : m_other_hold_s) += std::max(0.0, hold->end_s - hold->begin_s);
        m_waited_s += std::max(0.0, hold->waited_s);
        if (hold->waited_s > 0)
            m_waits.emplace_back(hold->begin_s, hold->waited_s);
    }
    m_partial.erase(0, start);
}

void SuiteGpuUse::add_hold(double begin, double end)
{
    if (m_busy.empty() || begin > m_busy.back().second) {
        m_busy.emplace_back(begin, end);
        return;
    }
    if (begin >= m_busy.back().first) {
        m_busy.back().second = std::max(m_busy.back().second, end);
        return;
    }
    // Out of order (another shard's worker on this GPU, a clock step): merge again from scratch.
    m_busy.emplace_back(begin, end);
    std::sort(m_busy.begin(), m_busy.end());
    std::vector<std::pair<double, double>> merged;
    for (const auto& interval : m_busy) {
        if (!merged.empty() && interval.first <= merged.back().second)
            merged.back().second = std::max(merged.back().second, interval.second);
        else
            merged.push_back(interval);
    }
    m_busy = std::move(merged);
}

void SuiteGpuUse::run_started(const std::string& id, double at)
{
    m_running[id] = at;
}

void SuiteGpuUse::run_ended(const std::string& id, double at)
{
    auto it = m_running.find(id);
    if (it == m_running.end())
        return;
    m_sessions.emplace_back(it->second, std::max(it->second, at));
    m_running.erase(it);
}

double SuiteGpuUse::busy_s(double from, double to) const
{
    double busy = 0;
    for (const auto& [begin, end] : m_busy)
        busy += std::max(0.0, std::min(end, to) - std::max(begin, from));
    return busy;
}

double SuiteGpuUse::lock_wait_s(double from, double to) const
{
    double waited = 0;
    for (const auto& [begin, seconds] : m_waits)
        if (begin >= from && begin <= to)
            waited += seconds;
    return waited;
}

double SuiteGpuUse::run_seconds(double to) const
{
    double total = 0;
    for (const auto& [begin, end] : m_sessions)
        total += end - begin;
    for (const auto& [id, start] : m_running)
        total += std::max(0.0, to - start);
    return total;
}

double SuiteGpuUse::held_s(double from, double to) const
{
    std::vector<std::pair<double, double>> sessions = m_sessions;
    for (const auto& [id, start] : m_running)
        sessions.emplace_back(start, to);
    return covered_seconds(std::move(sessions), from, to);
}

} // namespace kforge
