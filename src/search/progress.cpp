// Live progress line and [k/N] lines; see progress.hpp.
#include "search/progress.hpp"

#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr auto k_redraw_interval = std::chrono::milliseconds(250);
constexpr auto k_waiting_line_interval = std::chrono::seconds(5); // lines mode: silence before a note

size_t terminal_width()
{
    winsize size{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 10)
        return size.ws_col;
    return 100;
}

ProgressMode resolve(ProgressMode mode)
{
    if (mode != ProgressMode::automatic)
        return mode;
    return ::isatty(STDERR_FILENO) ? ProgressMode::live : ProgressMode::lines;
}

} // namespace

std::string format_elapsed(double seconds)
{
    auto total = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
    if (total >= 3600)
        return fmt::format("{}h{:02}m", total / 3600, total % 3600 / 60);
    if (total >= 60)
        return fmt::format("{}m{:02}s", total / 60, total % 60);
    return fmt::format("{}s", total);
}

std::string render_progress_line(const ProgressSnapshot& s)
{
    int64_t correct = 0, failed = 0;
    for (const auto& [kind, count] : s.verdicts)
        (kind == VerdictKind::correct ? correct : failed) += count;
    std::vector<std::string> parts;
    parts.push_back(fmt::format("{}/{} done, {} in flight", s.done, s.budget, s.in_flight));
    std::string verdicts = fmt::format("{} correct, {} failed", correct, failed);
    if (s.flagged)
        verdicts += fmt::format(", {} flagged", s.flagged);
    if (s.duplicates)
        verdicts += fmt::format(", {} dup", s.duplicates);
    parts.push_back(verdicts);
    parts.push_back(s.best ? fmt::format("best {:.3f}x", *s.best) : std::string("best -"));
    parts.push_back(fmt::format("${:.2f}", s.cost_usd));
    parts.push_back(format_elapsed(s.elapsed_s) + (s.eta_s ? " ETA " + format_elapsed(*s.eta_s) : ""));
    std::string gpu = fmt::format("GPU {:.0f}%", 100 * s.gpu_busy);
    if (!s.gpus.empty()) {
        std::vector<std::string> each;
        for (const auto& share : s.gpus)
            each.push_back(fmt::format("{} {}{:.0f}%/{}", share.usage.gpu.label(), share.usage.lost ? "lost " : "",
                                       share.usage.wall_s > 0 ? 100 * share.usage.busy_s / share.usage.wall_s : 0.0,
                                       share.candidates));
        gpu = fmt::format("{} GPUs {:.0f}% [{}]", s.gpus.size(), 100 * s.gpu_busy, join(each, " "));
    }
    parts.push_back(gpu);
    if (!s.waiting_for.empty())
        parts.push_back("waiting for: " + s.waiting_for);
    return "kforge: " + join(parts, " | ");
}

ProgressReporter::ProgressReporter(ProgressMode mode) : m_mode(resolve(mode)) {}

ProgressReporter::~ProgressReporter()
{
    finish();
}

void ProgressReporter::recorded(const ProgressSnapshot& snapshot, std::string_view line)
{
    m_last_line = std::chrono::steady_clock::now();
    if (m_mode == ProgressMode::lines)
        log_info("[{}/{}] {}", snapshot.done, snapshot.budget, line);
    else if (m_mode == ProgressMode::live) {
        m_last_draw = {};
        tick(snapshot);
    }
}

void ProgressReporter::event(std::string_view text)
{
    if (m_mode != ProgressMode::quiet)
        log_info("{}", text);
}

void ProgressReporter::tick(const ProgressSnapshot& snapshot)
{
    auto now = std::chrono::steady_clock::now();
    if (m_mode == ProgressMode::lines && !snapshot.waiting_for.empty() && now - m_last_line >= k_waiting_line_interval) {
        m_last_line = now;
        log_info("[{}/{}] {}: waiting for: {}", snapshot.done, snapshot.budget, format_elapsed(snapshot.elapsed_s),
                 snapshot.waiting_for);
    }
    if (m_mode != ProgressMode::live)
        return;
    if (now - m_last_draw < k_redraw_interval)
        return;
    m_last_draw = now;
    std::string line = render_progress_line(snapshot);
    size_t width = terminal_width() - 1;
    if (line.size() > width)
        line.resize(width);
    set_status_line(line);
}

void ProgressReporter::finish()
{
    if (m_mode == ProgressMode::live)
        set_status_line("");
}

} // namespace kforge
