// Progress of a long search on stderr (DESIGN.md §1).
//
// On a terminal: one live line at the bottom (candidates done of the budget and in flight, verdict
// counts, best speedup, dollars spent, elapsed time, ETA, how busy the GPU is — with several GPUs,
// each one's busy share and candidates), redrawn at most four times a second and kept below log lines (util/log's status line); new bests and other events
// still get their own lines above it. Elsewhere (a pipe, a file, CI): one `[k/N]` line per recorded
// candidate, and a `[k/N] waiting for: ...` line when nothing was recorded for a while, so a log
// says what a slow start or a stall waits on. Quiet mode prints neither.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/records.hpp"
#include "core/verdict.hpp"
#include "search/search_config.hpp"

namespace kforge {

// One GPU of the session: its usage, and the candidates recorded with its numbers this session.
struct GpuShare {
    GpuUsage usage;
    int64_t candidates = 0;
};

struct ProgressSnapshot {
    int64_t done = 0;          // candidates recorded (what --budget counts, less those in flight)
    int64_t budget = 0;
    size_t in_flight = 0;      // scheduled and not yet recorded
    std::map<VerdictKind, int64_t> verdicts; // recorded candidates of the whole run
    int64_t duplicates = 0;
    int64_t flagged = 0;       // correct but timed below the roofline floor: not counted (kforge inspect lists them)
    std::optional<double> best;
    double cost_usd = 0;
    double elapsed_s = 0;      // this session
    std::optional<double> eta_s;
    double gpu_busy = 0;       // share of this session's wall time
    std::vector<GpuShare> gpus; // per GPU, when the session has more than one
    // What the next record waits for: "screening the reference (compiling 6 variants)"; "" when
    // nothing is in flight.
    std::string waiting_for;
};

class ProgressReporter
{
public:
    explicit ProgressReporter(ProgressMode mode);
    ~ProgressReporter();
    ProgressReporter(const ProgressReporter&) = delete;
    ProgressReporter& operator=(const ProgressReporter&) = delete;

    bool live() const { return m_mode == ProgressMode::live; }
    // One recorded candidate, described by `line` (its number, island, origin and verdict, as the search records it).
    void recorded(const ProgressSnapshot& snapshot, std::string_view line);
    // Something worth its own line whatever the mode (a new best, a migration, a stop).
    void event(std::string_view text);
    // Redraws the live line when due (no-op otherwise).
    void tick(const ProgressSnapshot& snapshot);
    // Removes the live line.
    void finish();

private:
    ProgressMode m_mode;
    std::chrono::steady_clock::time_point m_last_draw{};
    std::chrono::steady_clock::time_point m_last_line = std::chrono::steady_clock::now(); // lines mode
};

// "1h02m", "12m03s", "45s".
std::string format_elapsed(double seconds);
// The live line's text (also used by tests).
std::string render_progress_line(const ProgressSnapshot& snapshot);

} // namespace kforge
