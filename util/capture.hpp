// Running a helper program to completion and keeping what it printed.
//
// Some of kforge's work is done by programs it runs and waits for (the PyTorch importer under the
// user's python3). Such a program is untrusted in the ways that matter here: it may print without
// end, never return, or spawn children of its own, daemons included. run_captured() runs it under a
// keeper (util/contain.hpp: every process it starts ends when it ends or is stopped), reads stdout
// and stderr as they come (so a full pipe never blocks it), keeps at most `max_bytes` of each, and
// stops the whole tree at the time limit or when the user interrupts. The wall time is bounded by
// the limit and a few seconds, whatever the program does. The calling binary's main() must hand
// keeper arguments to run_keeper_if_asked().
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace kforge {

struct CaptureResult {
    int exit_code = -1;             // the exit status; 128 + N when killed by signal N
    bool timed_out = false;         // killed at the time limit
    bool interrupted = false;       // killed because the user asked kforge to stop
    std::string out;                // stdout, at most max_bytes of it
    std::string err;                // stderr, likewise
    // "exited with status 1", "killed after its 120 s limit", "killed by signal 9".
    std::string describe(std::chrono::milliseconds limit) const;
};

// Runs `executable` (a path, or a name looked up on PATH) with `args`, the environment plus `env`,
// stdin from /dev/null. Throws Error(runtime) only when the program cannot be started.
CaptureResult run_captured(const std::string& executable, const std::vector<std::string>& args,
                           const std::vector<std::pair<std::string, std::string>>& env,
                           std::chrono::milliseconds limit, size_t max_bytes = size_t{64} << 20);

// The full path of `name` on PATH ("" when absent); a name with a slash is returned as it is
// when that file is executable.
std::string find_on_path(const std::string& name);

} // namespace kforge
