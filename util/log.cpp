// The logger: one atomic level, one mutex so concurrent lines never interleave.
#include "util/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

namespace kforge {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::info)};
std::mutex g_write_mutex;
std::string g_status; // guarded by g_write_mutex
constexpr std::string_view k_clear_line = "\r\033[K";
} // namespace

double log_clock_s()
{
    static const auto start = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }

bool parse_log_level(std::string_view text, LogLevel& out)
{
    if (text == "error") out = LogLevel::error;
    else if (text == "warn" || text == "warning") out = LogLevel::warn;
    else if (text == "info") out = LogLevel::info;
    else if (text == "debug") out = LogLevel::debug;
    else return false;
    return true;
}

void log_line(LogLevel level, std::string_view message)
{
    if (static_cast<int>(level) > g_level.load())
        return;
    std::string_view prefix;
    switch (level) {
    case LogLevel::error: prefix = "error: "; break;
    case LogLevel::warn: prefix = "warning: "; break;
    case LogLevel::info: prefix = ""; break;
    case LogLevel::debug: prefix = "debug: "; break;
    }
    std::string line = fmt::format("{}{}\n", prefix, message);
    std::lock_guard lock(g_write_mutex);
    if (!g_status.empty())
        line = fmt::format("{}{}{}", k_clear_line, line, g_status);
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
}

void set_status_line(std::string_view text)
{
    std::lock_guard lock(g_write_mutex);
    if (text.empty() && g_status.empty())
        return;
    g_status = text;
    std::string out = fmt::format("{}{}", k_clear_line, g_status);
    std::fwrite(out.data(), 1, out.size(), stderr);
    std::fflush(stderr);
}

} // namespace kforge
