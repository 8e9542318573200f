// Test helpers; see the header.
#include "test_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <csignal>
#include <fstream>
#include <thread>
#include <random>
#include <sstream>

#include "kf_catch.hpp"
#include "util/torch_python.hpp"
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace kforge::test {

namespace {

std::string probe_gpu()
{
    // cuInit and cuDeviceGetCount are stable, unversioned driver symbols. The probe runs in a
    // forked child (nothing CUDA exists in this process yet) so the runner never holds a context.
    int fds[2];
    if (::pipe(fds) != 0)
        return "cannot create a pipe";
    pid_t pid = ::fork();
    if (pid == 0) {
        ::close(fds[0]);
        std::string why;
        void* lib = ::dlopen("libcuda.so.1", RTLD_NOW);
        if (!lib) {
            why = "no NVIDIA driver/GPU found (libcuda.so.1 cannot be loaded)";
        } else {
            using InitFn = int (*)(unsigned);
            using CountFn = int (*)(int*);
            auto init = reinterpret_cast<InitFn>(::dlsym(lib, "cuInit"));
            auto count = reinterpret_cast<CountFn>(::dlsym(lib, "cuDeviceGetCount"));
            int n = 0;
            if (!init || !count)
                why = "the NVIDIA driver library lacks cuInit/cuDeviceGetCount";
            else if (int rc = init(0); rc != 0)
                why = "cuInit failed with CUDA error " + std::to_string(rc) + " (no usable GPU)";
            else if (count(&n) != 0 || n == 0)
                why = "the driver reports no CUDA device";
        }
        (void)!::write(fds[1], why.data(), why.size());
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string why;
    char buffer[256];
    ssize_t n;
    while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0)
        why.append(buffer, static_cast<size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return why;
}

} // namespace

std::string gpu_unavailable_reason()
{
    // Probed once, before any test runs: a child forked after a test has initialised CUDA in this
    // process (the vendor library's tests do) cannot initialise it again (CUDA error 3).
    static const std::string reason = probe_gpu();
    return reason;
}

void require_gpu()
{
    std::string why = gpu_unavailable_reason();
    if (!why.empty())
        FAIL("this [gpu] test ran without a GPU (" << why << "); run it through ctest or with the [gpu] tag");
}

std::filesystem::path chromium_path() { return "/usr/bin/chromium"; }

std::string browser_unavailable_reason()
{
    if (std::filesystem::exists(chromium_path()))
        return "";
    return chromium_path().string() + " is not installed (apt-get install chromium; ./kf installs it)";
}

std::filesystem::path mpirun_path()
{
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "";
    for (size_t start = 0; start <= dirs.size();) {
        size_t end = std::min(dirs.find(':', start), dirs.size());
        std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / "mpirun";
        if (end > start && ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        start = end + 1;
    }
    return {};
}

std::string torch_unavailable_reason() { return torch_python().problem; }

std::string mpi_unavailable_reason()
{
    if (mpirun_path().empty())
        return "mpirun is not on the PATH (apt-get install openmpi-bin libopenmpi-dev; ./kf installs them)";
    auto library = kforge_binary().parent_path() / "libkforge_mpi.so";
    if (!std::filesystem::exists(library))
        return library.string() + " is missing: kforge was built without MPI (no libopenmpi-dev at configure)";
    return "";
}

std::vector<std::string> mpirun_env()
{
    if (::getuid() != 0)
        return {};
    return {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
}

std::vector<std::filesystem::path> recorded_archives()
{
    std::vector<std::filesystem::path> archives;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(fixtures_dir(), ec)) {
        auto extension = entry.path().extension();
        if (entry.is_regular_file() && (extension == ".kfa" || extension == ".kforge"))
            archives.push_back(entry.path());
    }
    std::sort(archives.begin(), archives.end());
    return archives;
}

std::string recorded_unavailable_reason()
{
    if (!recorded_archives().empty())
        return "";
    return "no recorded run archive (*.kfa, *.kforge) in " + fixtures_dir().string() + " yet";
}

// The build bakes in absolute paths; KFORGE_TEST_SOURCE_DIR and KFORGE_TEST_BINARY override them
// when the binaries run from another checkout (e.g. carried to a GPU machine).
std::filesystem::path source_dir()
{
    const char* dir = std::getenv("KFORGE_TEST_SOURCE_DIR");
    return dir && *dir ? dir : KFORGE_SOURCE_DIR;
}
std::filesystem::path fixtures_dir() { return source_dir() / "tests" / "fixtures"; }
std::filesystem::path kforge_binary()
{
    const char* binary = std::getenv("KFORGE_TEST_BINARY");
    return binary && *binary ? binary : KFORGE_BINARY_PATH;
}

TempDir::TempDir()
{
    std::random_device device;
    auto base = std::filesystem::temp_directory_path();
    for (int attempt = 0; attempt < 100; ++attempt) {
        auto candidate = base / ("kforge-test-" + std::to_string(device()));
        if (std::filesystem::create_directory(candidate)) {
            m_path = candidate;
            return;
        }
    }
    throw std::runtime_error("cannot create a temporary directory");
}

TempDir::~TempDir()
{
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

namespace {
std::string slurp(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}
} // namespace

CommandResult run_kforge(const std::vector<std::string>& args, const std::vector<std::string>& env)
{
    return run_program(kforge_binary(), args, env);
}

CommandResult run_program(const std::filesystem::path& executable, const std::vector<std::string>& args,
                          const std::vector<std::string>& env)
{
    return RunningProgram(executable, args, env).wait();
}

RunningProgram::RunningProgram(const std::filesystem::path& executable, const std::vector<std::string>& args,
                               const std::vector<std::string>& env)
    : m_io(std::make_unique<TempDir>())
{
    auto out_path = *m_io / "stdout";
    auto err_path = *m_io / "stderr";
    std::vector<std::string> argv_storage{executable.string()};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_storage)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_storage;
    for (char** e = environ; *e; ++e) {
        std::string entry = *e;
        bool overridden = false;
        for (const auto& extra : env)
            overridden = overridden || entry.substr(0, entry.find('=')) == extra.substr(0, extra.find('='));
        if (!overridden)
            env_storage.push_back(entry);
    }
    env_storage.insert(env_storage.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (auto& e : env_storage)
        envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = ::posix_spawn(&m_pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        throw std::runtime_error("cannot run " + argv_storage[0]);
}

RunningProgram::~RunningProgram()
{
    if (m_pid > 0) {
        ::kill(m_pid, SIGKILL);
        ::waitpid(m_pid, nullptr, 0);
    }
}

std::string RunningProgram::stderr_so_far() const
{
    return slurp(*m_io / "stderr");
}

CommandResult RunningProgram::ended(int status)
{
    m_pid = -1;
    CommandResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = slurp(*m_io / "stdout");
    result.err = slurp(*m_io / "stderr");
    return result;
}

CommandResult RunningProgram::wait()
{
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    return ended(status);
}

std::optional<CommandResult> RunningProgram::poll()
{
    int status = 0;
    if (m_pid > 0 && ::waitpid(m_pid, &status, WNOHANG) == m_pid)
        return ended(status);
    return std::nullopt;
}

std::optional<CommandResult> RunningProgram::wait_for(std::chrono::seconds limit)
{
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
        int status = 0;
        if (::waitpid(m_pid, &status, WNOHANG) == m_pid)
            return ended(status);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(m_pid, SIGTERM);
    auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < grace && ::waitpid(m_pid, nullptr, WNOHANG) != m_pid)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return std::nullopt; // the destructor kills and reaps what is left
}

void write_text(const std::filesystem::path& path, const std::string& text)
{
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
}

std::string slurp_file(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

bool process_alive(int pid)
{
    if (::kill(pid, 0) != 0)
        return false;
    std::string stat = slurp_file("/proc/" + std::to_string(pid) + "/stat");
    std::size_t after_name = stat.rfind(')');
    if (after_name == std::string::npos || after_name + 2 >= stat.size())
        return true; // no /proc to ask: kill() said it exists
    char state = stat[after_name + 2];
    return state != 'Z' && state != 'X';
}

bool wait_process_gone(int pid, std::chrono::milliseconds limit)
{
    auto give_up = std::chrono::steady_clock::now() + limit;
    while (process_alive(pid)) {
        if (std::chrono::steady_clock::now() >= give_up)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

} // namespace kforge::test
