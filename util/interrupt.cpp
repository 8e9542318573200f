// Async-signal-safe interrupt flag; see the header.
//
// The handler only reads the monotonic clock (clock_gettime is async-signal-safe), touches
// lock-free atomics and writes to stderr.
#include "util/interrupt.hpp"

#include <atomic>
#include <csignal>
#include <ctime>

#include <unistd.h>

namespace kforge {
namespace {
std::atomic<int> g_interrupts{0};
// When the first SIGTERM came (monotonic nanoseconds; 0: none yet).
std::atomic<long long> g_first_term_ns{0};

long long monotonic_ns()
{
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

// A SIGTERM or SIGINT within the window after the first SIGTERM: one request told twice.
bool repeated_term(int signal)
{
    long long now = monotonic_ns();
    long long expected = 0;
    if (signal == SIGTERM && g_first_term_ns.compare_exchange_strong(expected, now))
        return false;
    expected = g_first_term_ns.load();
    if (expected == 0)
        return false;
    auto window_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(k_duplicate_term_window).count();
    return now - expected < window_ns;
}

void on_signal(int signal)
{
    if (repeated_term(signal))
        return;
    if (g_interrupts.fetch_add(1) >= 1) {
        static const char message[] = "\nkforge: interrupted twice, stopping now\n";
        (void)!::write(2, message, sizeof message - 1);
        ::_exit(130);
    }
    static const char message[] =
        "\nkforge: stopping after in-flight work (press Ctrl-C again to stop now)\n";
    (void)!::write(2, message, sizeof message - 1);
}
} // namespace

void install_interrupt_handler()
{
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

void leave_interrupts_to_controller()
{
    std::signal(SIGINT, SIG_IGN);
    std::signal(SIGTERM, SIG_IGN);
}

bool interrupt_requested() { return g_interrupts.load() > 0; }
void request_interrupt() { g_interrupts.store(1); }
void clear_interrupt()
{
    g_interrupts.store(0);
    g_first_term_ns.store(0);
}

} // namespace kforge
