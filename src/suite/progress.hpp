// Progress of `kforge suite run` on stderr. On a terminal: one live line at the bottom (problems
// done, running and waiting, each GPU's busy share and the runs on it, the running fast_1, dollars,
// elapsed time), redrawn at most four times a second below the log lines. Elsewhere: a `[k/N]`
// line when a problem is done and a status line after a minute without one, so a log says what
// the suite waits on. Starting a problem, an import and a stop are lines of their own in both.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "search/search_config.hpp"

namespace kforge {

struct SuiteLaneRun {
    std::string problem;
    double running_s = 0;     // how long it has run
};

struct SuiteLaneStatus {
    std::string gpu;          // "gpu1"
    std::vector<SuiteLaneRun> runs; // what it runs now, oldest first (none when idle)
    double busy = 0;          // measured busy share since the suite started (while problems remained)
};

struct SuiteStatus {
    int64_t total = 0;        // this shard's problems
    int64_t done = 0;         // finished, failed or skipped
    int64_t failed = 0;
    int64_t running = 0;
    int64_t importing = 0;
    int64_t waiting = 0;
    int64_t fast1 = 0;        // done, correct and faster than their first baseline (eager, or reference)
    int64_t correct = 0;      // done and correct
    double cost_usd = 0;      // the whole suite's model dollars so far
    double elapsed_s = 0;
    bool stopping = false;
    std::vector<SuiteLaneStatus> lanes;
};

// The live line's text (also what lines mode prints when it has been quiet).
std::string render_suite_status(const SuiteStatus& status);

class SuiteProgress
{
public:
    explicit SuiteProgress(ProgressMode mode);
    ~SuiteProgress();
    SuiteProgress(const SuiteProgress&) = delete;
    SuiteProgress& operator=(const SuiteProgress&) = delete;

    // A line of its own whatever the mode (except quiet): a start, an import, a stop.
    void event(std::string_view text);
    // A problem is done: "[k/N] text".
    void done(int64_t k, int64_t n, std::string_view text);
    // Redraws the live line when due; in lines mode prints the status after a quiet minute.
    void tick(const SuiteStatus& status);
    // Removes the live line.
    void finish();

private:
    ProgressMode m_mode;
    std::chrono::steady_clock::time_point m_last_draw{};
    std::chrono::steady_clock::time_point m_last_line = std::chrono::steady_clock::now();
};

} // namespace kforge
