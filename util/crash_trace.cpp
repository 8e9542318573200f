// Fatal-signal backtraces for helper processes (the GPU worker). The handler runs on its own stack
// (a segfault may come from a blown stack) and uses only async-signal-safe calls once installed:
// backtrace() is called once at install so that its lazy loading of libgcc happens outside the
// handler. The addresses are printed as offsets into the binary, which stay valid for a stripped
// copy of the same build (scripts/pack-gpu.sh carries stripped binaries).
#include "util/crash_trace.hpp"

#include <csignal>
#include <cstring>
#include <execinfo.h>
#include <unistd.h>

namespace kforge {
namespace {

const char* g_process = "kforge";
constexpr int k_fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

void write_text(const char* text) { (void)!::write(STDERR_FILENO, text, std::strlen(text)); }

void on_fatal_signal(int signal_number)
{
    write_text("\n");
    write_text(g_process);
    write_text(": fatal signal ");
    const char* name = sigabbrev_np(signal_number);
    write_text(name ? name : "?");
    write_text("; return addresses (addr2line -f -C -e BINARY +OFFSET):\n");
    void* frames[64];
    int count = ::backtrace(frames, 64);
    ::backtrace_symbols_fd(frames, count, STDERR_FILENO);
    // Default action, re-raised: the parent reads "killed by signal N" as before.
    std::signal(signal_number, SIG_DFL);
    ::raise(signal_number);
}

} // namespace

void install_crash_trace(const char* process)
{
    static bool installed = false;
    if (installed)
        return;
    installed = true;
    g_process = process;
    void* warm[1];
    (void)::backtrace(warm, 1);
    static char alternate_stack[64 * 1024];
    stack_t stack{};
    stack.ss_sp = alternate_stack;
    stack.ss_size = sizeof alternate_stack;
    ::sigaltstack(&stack, nullptr);
    struct sigaction action {};
    action.sa_handler = on_fatal_signal;
    action.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    for (int signal_number : k_fatal_signals)
        ::sigaction(signal_number, &action, nullptr);
}

} // namespace kforge
