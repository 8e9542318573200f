// Shared helpers of the benchmarks: where things are, and running a child for its output.
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"
#include "util/subprocess.hpp"
#include "util/text.hpp"

extern char** environ;

namespace kforge::bench {

std::string default_kforge_binary()
{
    auto beside = std::filesystem::path(self_executable()).parent_path() / "kforge";
    if (std::filesystem::exists(beside))
        return beside.string();
    return KFORGE_BINARY_PATH;
}

Task load_bundled_task(const BenchOptions& options, const std::string& name)
{
    return load_task(std::filesystem::path(options.tasks_dir) / (name + ".json"));
}

std::string first_line_of(const std::string& text)
{
    return text.substr(0, std::min(text.find('\n'), size_t{300}));
}

std::string spawn_capture(const std::vector<std::string>& argv, int& exit_code, CaptureStream streams,
                          const std::string& stderr_path)
{
    char path[] = "/tmp/kforge-bench-XXXXXX";
    int fd = ::mkstemp(path);
    if (fd < 0)
        fail_runtime("cannot create a temporary file");
    std::vector<std::string> storage = argv;
    std::vector<char*> args;
    for (auto& a : storage)
        args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fd, 1);
    if (streams == CaptureStream::both)
        posix_spawn_file_actions_adddup2(&actions, fd, 2);
    else
        posix_spawn_file_actions_addopen(&actions, 2, stderr_path.empty() ? "/dev/null" : stderr_path.c_str(),
                                         O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fd);
    if (rc != 0) {
        ::unlink(path);
        fail_runtime("cannot run {}", argv[0]);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::string output = read_file(path);
    ::unlink(path);
    return output;
}

} // namespace kforge::bench
