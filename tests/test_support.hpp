// Helpers shared by tests: paths, temporary folders, running the real binary, GPU detection.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <memory>
#include <string>
#include <vector>

namespace kforge::test {

// The whole contents of a file (empty when it cannot be read).
std::string slurp_file(const std::filesystem::path& path);

// Whether a process still runs. A killed process whose parent died stays a zombie until whatever
// adopted it reaps it, and in a container whose first process reaps nothing that is forever; a
// zombie has ended, so only its /proc state can tell (kill(pid, 0) succeeds on it).
bool process_alive(int pid);
// Waits up to `limit` for `pid` to be gone; true when it is.
bool wait_process_gone(int pid, std::chrono::milliseconds limit);

// "" when a CUDA device is usable here; otherwise why not. Probed in a child process so the test
// process itself never initialises CUDA.
std::string gpu_unavailable_reason();
// Tests tagged [gpu] call this first; it fails the test (never skips it silently) when run without
// a GPU, which only happens if someone bypasses the gate in main().
void require_gpu();

// Debian's chromium, which the [browser] tests drive headless.
std::filesystem::path chromium_path();
// "" when chromium_path() exists; otherwise why the [browser] tests cannot run.
std::string browser_unavailable_reason();

// mpirun on the PATH ("" when there is none).
std::filesystem::path mpirun_path();
// "" when the [mpi] tests can run here: mpirun exists and libkforge_mpi.so is beside the kforge
// binary (kforge was built with MPI); otherwise why not.
std::string mpi_unavailable_reason();
// "" when a python3 here imports torch (util/torch_python.hpp), for the [torch] tests; else why not.
std::string torch_unavailable_reason();
// The environment mpirun needs here: as root, Open MPI refuses to run without these.
std::vector<std::string> mpirun_env();

// Run archives recorded on a GPU and committed as tests/fixtures/*.kfa (or *.kforge), sorted by
// name; tests tagged [recorded] read them.
std::vector<std::filesystem::path> recorded_archives();
// "" when recorded_archives() is not empty; otherwise why the [recorded] tests cannot run.
std::string recorded_unavailable_reason();

std::filesystem::path source_dir();
std::filesystem::path fixtures_dir();
std::filesystem::path kforge_binary();

// A fresh folder under the system temp dir, removed when the object dies.
class TempDir
{
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return m_path; }
    std::filesystem::path operator/(const std::string& name) const { return m_path / name; }

private:
    std::filesystem::path m_path;
};

struct CommandResult {
    int exit_code = -1;
    std::string out;   // stdout
    std::string err;   // stderr
};

// Runs the kforge binary with `args` (no shell), capturing stdout and stderr. `env` entries are
// "NAME=value" added to (or overriding) the environment.
CommandResult run_kforge(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
// The same for any program, given by its absolute path (no PATH lookup, no shell).
CommandResult run_program(const std::filesystem::path& executable, const std::vector<std::string>& args,
                          const std::vector<std::string>& env = {});

// A program started in the background with its stdout and stderr going to files, for tests that
// act on it while it runs (kill its workers, interrupt it). The destructor kills one still running.
class RunningProgram
{
public:
    RunningProgram(const std::filesystem::path& executable, const std::vector<std::string>& args,
                   const std::vector<std::string>& env = {});
    ~RunningProgram();
    RunningProgram(const RunningProgram&) = delete;
    RunningProgram& operator=(const RunningProgram&) = delete;
    int pid() const { return m_pid; }
    // What it has written to stderr so far.
    std::string stderr_so_far() const;
    // Waits for it to end.
    CommandResult wait();
    // Its result if it has ended, without waiting; nullopt while it runs.
    std::optional<CommandResult> poll();
    // Waits up to `limit` for it to end; nullopt when it is still running then, after which it is
    // asked to stop (SIGTERM, which mpirun forwards to its ranks) and, 10 s later, killed.
    std::optional<CommandResult> wait_for(std::chrono::seconds limit);

private:
    CommandResult ended(int status); // the result of the process reaped with `status`

    std::unique_ptr<TempDir> m_io;
    int m_pid = -1;
};

// Writes `text` to `path`.
void write_text(const std::filesystem::path& path, const std::string& text);

} // namespace kforge::test
