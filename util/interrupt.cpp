// Async-signal-safe interrupt flag; see the header.
#include "util/interrupt.hpp"

#include <atomic>
#include <csignal>

#include <unistd.h>

namespace kforge {
namespace {
std::atomic<int> g_interrupts{0};

void on_signal(int)
{
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

bool interrupt_requested() { return g_interrupts.load() > 0; }
void request_interrupt() { g_interrupts.store(1); }
void clear_interrupt() { g_interrupts.store(0); }

} // namespace kforge
