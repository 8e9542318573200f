// Running a program so that everything it starts ends with it.
//
// Programs kforge runs on a user's behalf — the PyTorch importer and the GPU worker's reference
// process, both executing a problem file someone handed us — may fork, daemonise (setsid, a double
// fork) or start servers. A process group does not hold those: a daemon leaves the group, is
// re-parented to init and keeps whatever it inherited, a pipe kforge waits on for instance.
//
// So such a program runs under a *keeper*: this very binary started as `SELF __keep EXE ARGS...`
// (every kforge binary's main() hands those arguments to run_keeper() before anything else). The
// keeper makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so each orphan of the program's
// tree is re-parented to the keeper instead of init, however it detached; it runs the program and
// waits. When the program ends, when the keeper is asked to stop (SIGTERM, SIGINT, SIGHUP) or when
// its parent dies (PR_SET_PDEATHSIG), it kills every process left in the tree — its children, then
// the orphans they leave, until none is left — and exits with the program's status (128 + N for a
// signal N; 128 + SIGTERM when stopped before the program ended).
//
// A keeper must be stopped with SIGTERM (stop_keeper below): SIGKILL would end it before it ends
// the tree. Signals the keeper's parent ignores (GPU workers ignore SIGINT and SIGTERM, leaving
// stops to the controller) stay ignored in the program.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace kforge {

// argv[1] of a keeper.
inline constexpr const char* k_keeper_arg = "__keep";

// The argv (after argv[0]) that runs `executable` with `args` under a keeper of this binary.
std::vector<std::string> keeper_args(const std::string& executable, const std::vector<std::string>& args);

// For main(): runs the keeper when argv asks for one and returns its exit status; nullopt otherwise.
std::optional<int> run_keeper_if_asked(int argc, char** argv);

// Asks the keeper `pid` (a child of the caller) to end its tree and waits up to `grace` for it to
// exit, reaping it; SIGKILLs it after that. Returns its wait status (as waitpid gives it), or -1
// when it could not be reaped (not our child).
int stop_keeper(pid_t pid, std::chrono::milliseconds grace);

} // namespace kforge
