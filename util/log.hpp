// A small leveled logger on stderr. Results go to stdout; everything a human reads while waiting
// (progress, warnings, debug traces) goes here. The level is one of the two process-wide globals the
// style guide allows (the other is the interrupt flag).
#pragma once

#include <string_view>

#include <fmt/format.h>

namespace kforge {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
// Parses "error", "warn", "info", "debug"; returns false for anything else.
bool parse_log_level(std::string_view text, LogLevel& out);

// Writes one line to stderr with a level prefix ("warning: ", "error: ") when the level is enabled.
// Thread-safe: a line is written with one call.
void log_line(LogLevel level, std::string_view message);

// Seconds on a steady clock since the process's first log call or static start, for debug lines
// that place events of several threads on one timeline ("timeline T ..." lines: what each GPU ran
// when, what the search recorded when; scripts/timeline.py draws them).
double log_clock_s();

// A status line kept at the bottom of a terminal (the search's live progress): each log line first
// clears it and then draws it again below itself, so the two never garble each other. "" removes
// it. Only for a terminal; a caller writing to a file or pipe never sets one.
void set_status_line(std::string_view text);

template <typename... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args)
{
    log_line(LogLevel::error, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args)
{
    if (log_level() >= LogLevel::warn)
        log_line(LogLevel::warn, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args)
{
    if (log_level() >= LogLevel::info)
        log_line(LogLevel::info, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_debug(fmt::format_string<Args...> format, Args&&... args)
{
    if (log_level() >= LogLevel::debug)
        log_line(LogLevel::debug, fmt::format(format, std::forward<Args>(args)...));
}

} // namespace kforge
