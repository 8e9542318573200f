// The suite's progress on stderr; see progress.hpp. The live line goes through util/log's
// status line, so log lines (a start, a `[k/N]`) scroll above it without garbling it.
#include "suite/progress.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "search/progress.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr auto k_suite_redraw = std::chrono::milliseconds(250);
constexpr auto k_suite_quiet_line = std::chrono::seconds(60); // lines mode: silence before a status line

size_t suite_terminal_width()
{
    winsize size{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 10)
        return size.ws_col;
    return 100;
}

ProgressMode resolve_suite_mode(ProgressMode mode)
{
    if (mode != ProgressMode::automatic)
        return mode;
    return ::isatty(STDERR_FILENO) ? ProgressMode::live : ProgressMode::lines;
}

} // namespace

std::string render_suite_status(const SuiteStatus& s)
{
    std::vector<std::string> parts;
    std::string counts = fmt::format("{}/{} done", s.done, s.total);
    if (s.failed)
        counts += fmt::format(" ({} failed)", s.failed);
    counts += fmt::format(", {} running, {} waiting", s.running, s.waiting);
    if (s.importing)
        counts += fmt::format(" ({} importing)", s.importing);
    parts.push_back(counts);
    std::vector<std::string> lanes;
    for (const auto& lane : s.lanes) {
        std::vector<std::string> runs;
        for (const auto& run : lane.runs)
            runs.push_back(fmt::format("{} {}", run.problem, format_elapsed(run.running_s)));
        lanes.push_back(fmt::format("{} {:.0f}% {}", lane.gpu, 100 * lane.busy, runs.empty() ? "idle" : join(runs, " + ")));
    }
    if (!lanes.empty())
        parts.push_back(join(lanes, ", "));
    parts.push_back(fmt::format("fast_1 {}/{} ({} correct)", s.fast1, s.done, s.correct));
    parts.push_back(fmt::format("${:.2f}", s.cost_usd));
    parts.push_back(format_elapsed(s.elapsed_s));
    std::string line = "suite: " + join(parts, " | ");
    if (s.stopping)
        line += " | stopping (Ctrl-C again to leave at once)";
    return line;
}

SuiteProgress::SuiteProgress(ProgressMode mode) : m_mode(resolve_suite_mode(mode)) {}

SuiteProgress::~SuiteProgress()
{
    finish();
}

void SuiteProgress::event(std::string_view text)
{
    if (m_mode == ProgressMode::quiet)
        return;
    m_last_line = std::chrono::steady_clock::now();
    log_info("{}", text);
}

void SuiteProgress::done(int64_t k, int64_t n, std::string_view text)
{
    if (m_mode == ProgressMode::quiet)
        return;
    m_last_line = std::chrono::steady_clock::now();
    m_last_draw = {};
    log_info("[{}/{}] {}", k, n, text);
}

void SuiteProgress::tick(const SuiteStatus& status)
{
    auto now = std::chrono::steady_clock::now();
    if (m_mode == ProgressMode::lines && now - m_last_line >= k_suite_quiet_line) {
        m_last_line = now;
        log_info("[{}/{}] {}", status.done, status.total, render_suite_status(status));
    }
    if (m_mode != ProgressMode::live || now - m_last_draw < k_suite_redraw)
        return;
    m_last_draw = now;
    std::string line = render_suite_status(status);
    size_t width = suite_terminal_width() - 1;
    if (line.size() > width)
        line.resize(width);
    set_status_line(line);
}

void SuiteProgress::finish()
{
    if (m_mode == ProgressMode::live)
        set_status_line("");
}

} // namespace kforge
