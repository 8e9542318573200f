// What one GPU of a `kforge suite run` did, for the shares the suite reports per GPU.
//
// Busy is measured where it happens: every GPU worker of the suite's runs logs each hold of the
// GPU's measuring lock (evaluator/worker/share.hpp), and the GPU's busy time is the union of
// those holds — however many runs share the GPU, time two of them were "busy" at once is counted
// once (under the lock that cannot happen, and the union does not rely on it). The time workers
// waited for the lock is kept apart: waiting is not measuring. Held is the union of the runs'
// sessions on the GPU: the time at least one run had it.
//
// Times are seconds since the epoch, the log's clock; the log is read as it grows, whole lines only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kforge {

// Seconds of [from, to] covered by the union of `intervals` ([begin, end] pairs, any order,
// overlapping or not).
double covered_seconds(std::vector<std::pair<double, double>> intervals, double from, double to);

class SuiteGpuUse
{
public:
    // `measuring_log`: the GPU's log (gpu_share_path(..., measuring_log)); it need not exist yet.
    explicit SuiteGpuUse(std::filesystem::path measuring_log);

    // Reads the lines appended to the log since the last call. A line that does not parse is
    // skipped (a process killed in mid-write leaves at most one).
    void refresh();

    // A run of the suite took the GPU at `at` (epoch seconds) / gave it back.
    void run_started(const std::string& id, double at);
    void run_ended(const std::string& id, double at);

    // Within [from, to]: the union of the holds; the seconds holders waited before holds that began
    // in it; the union of the runs' sessions (a running one counts until `to`).
    double busy_s(double from, double to) const;
    double lock_wait_s(double from, double to) const;
    double held_s(double from, double to) const;
    // Holds read so far.
    size_t holds() const { return m_holds; }
    // Since the start: seconds held by candidates' work ("variant" holds) and by everything else
    // (set-up, baselines, program checks), seconds waited for the lock, and run-seconds (the sum of
    // the runs' times on the GPU, a running one counting until `to`): suite/concurrency.hpp's inputs.
    double candidate_hold_s() const { return m_candidate_hold_s; }
    double other_hold_s() const { return m_other_hold_s; }
    double waited_s() const { return m_waited_s; }
    double run_seconds(double to) const;

private:
    void add_hold(double begin, double end);

    std::filesystem::path m_log;
    uintmax_t m_offset = 0;
    std::string m_partial;                     // a line read without its newline yet
    size_t m_holds = 0;
    double m_candidate_hold_s = 0;
    double m_other_hold_s = 0;
    double m_waited_s = 0;
    std::vector<std::pair<double, double>> m_busy;       // the holds' union: sorted, disjoint
    std::vector<std::pair<double, double>> m_waits;      // (begin of a hold, seconds waited for it)
    std::vector<std::pair<double, double>> m_sessions;   // ended ones
    std::map<std::string, double> m_running;             // started, not ended: id -> start
};

} // namespace kforge
