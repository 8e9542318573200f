// The interrupt flag's signal handling, tried in a forked child (the handler would otherwise
// replace the test runner's own): one request to stop, told twice by SLURM within a moment, is one
// request; a second request means "now".
#include "kf_catch.hpp"

#include <chrono>
#include <csignal>
#include <thread>

#include "util/interrupt.hpp"

#include <sys/wait.h>
#include <unistd.h>

using namespace kforge;

namespace {

// Runs `body` in a child with the interrupt handler installed; the child's exit status (or 128 +
// the signal that ended it).
template <typename Body>
int in_child(Body body)
{
    pid_t pid = ::fork();
    if (pid == 0) {
        ::close(2); // the handler's "interrupted twice" line is not the test's output
        install_interrupt_handler();
        ::_exit(body());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

TEST_CASE("a SIGTERM and a SIGTERM or SIGINT within a moment (SLURM and a parent telling one stop) ask once to stop",
          "[util][interrupt]")
{
    for (int second : {SIGTERM, SIGINT}) {
        int code = in_child([second] {
            std::raise(SIGTERM);
            std::raise(second);
            return interrupt_requested() ? 0 : 1;
        });
        CHECK(code == 0);
    }
}

TEST_CASE("a second Ctrl-C, or a SIGTERM after the window, stops at once with 130", "[util][interrupt]")
{
    CHECK(in_child([] {
              std::raise(SIGINT);
              std::raise(SIGINT);
              return 0;
          }) == 130);
    CHECK(in_child([] {
              std::raise(SIGTERM);
              std::this_thread::sleep_for(k_duplicate_term_window + std::chrono::milliseconds(100));
              std::raise(SIGTERM);
              return 0;
          }) == 130);
}
