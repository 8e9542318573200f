// A helper process that crashes says where, and still dies of the signal its parent expects.
#include "kf_catch.hpp"

#include <csignal>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "util/crash_trace.hpp"

using namespace kforge;

TEST_CASE("a fatal signal prints the process name and return addresses, then kills the process", "[util][crash]")
{
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::dup2(pipe_fds[1], STDERR_FILENO);
        ::close(pipe_fds[0]);
        install_crash_trace("crash test child");
        volatile int* nowhere = nullptr;
        *nowhere = 1; // a real fault, handled on the alternate stack
        ::_exit(0);   // not reached
    }
    ::close(pipe_fds[1]);
    std::string text;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0)
        text.append(buffer, static_cast<size_t>(n));
    ::close(pipe_fds[0]);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    INFO(text);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGSEGV);
    CHECK(text.find("crash test child: fatal signal SEGV") != std::string::npos);
    CHECK(text.find("(+0x") != std::string::npos); // binary-relative offsets, for addr2line
}
