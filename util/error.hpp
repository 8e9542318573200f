// Errors that stop a command, and the exit codes they map to.
//
// Expected failures of a candidate (a compile error, a wrong answer) are *data* (core/verdict.hpp),
// never exceptions. Exceptions are for what stops the command: a bad task spec, an archive that
// cannot be opened, a missing GPU. The CLI entry point catches `kforge::Error`, prints its message
// and exits with the code of its kind; see `kforge --help` for the table.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace kforge {

enum class ErrorKind {
    usage,       // the command line itself is wrong
    bad_input,   // a file the user gave us is wrong: task spec, candidate, archive, config
    runtime,     // the environment failed: GPU, driver, disk, network
    interrupted, // the user pressed Ctrl-C
};

// Exit codes. 1 is reserved for "ran fine, but the answer is no" (doctor found a missing piece,
// eval's verdict is not correct, a task's self-test failed).
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_negative = 1;
inline constexpr int k_exit_usage = 2;
inline constexpr int k_exit_bad_input = 3;
inline constexpr int k_exit_runtime = 4;
inline constexpr int k_exit_interrupted = 130;

int exit_code_of(ErrorKind kind);

class Error : public std::runtime_error
{
public:
    Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
    ErrorKind kind() const { return m_kind; }

private:
    ErrorKind m_kind;
};

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> format, Args&&... args)
{
    throw Error(kind, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_input(fmt::format_string<Args...> format, Args&&... args)
{
    throw Error(ErrorKind::bad_input, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_runtime(fmt::format_string<Args...> format, Args&&... args)
{
    throw Error(ErrorKind::runtime, fmt::format(format, std::forward<Args>(args)...));
}

} // namespace kforge
