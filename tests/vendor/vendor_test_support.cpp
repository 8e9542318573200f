// Helpers for the vendor-baseline tests; see the header.
#include "vendor_test_support.hpp"

#include <algorithm>
#include <csignal>

#include <sys/wait.h>
#include <unistd.h>

#include "test_support.hpp"

namespace kforge::test {

std::filesystem::path vendor_library_file() { return kforge_binary().parent_path() / "libkforge_vendor.so"; }

std::vector<Task> tasks_with_vendor_baselines()
{
    std::vector<std::filesystem::path> specs;
    for (const auto& entry : std::filesystem::directory_iterator(source_dir() / "tasks"))
        if (entry.path().extension() == ".json")
            specs.push_back(entry.path());
    std::sort(specs.begin(), specs.end());
    std::vector<Task> tasks;
    for (const auto& spec : specs) {
        Task task = load_task(spec);
        if (!task.vendor_baselines.empty())
            tasks.push_back(std::move(task));
    }
    return tasks;
}

std::map<std::string, uint64_t, std::less<>> fake_addresses(const Task& task)
{
    std::map<std::string, uint64_t, std::less<>> addresses;
    uint64_t next = uint64_t{1} << 40;
    for (const auto& arg : task.args)
        if (arg.is_tensor)
            addresses[arg.name] = next += uint64_t{1} << 32;
    return addresses;
}

std::string run_in_child(const std::function<std::string()>& body)
{
    int fds[2];
    if (::pipe(fds) != 0)
        return "FAIL cannot create a pipe";
    pid_t pid = ::fork();
    if (pid < 0)
        return "FAIL cannot fork";
    if (pid == 0) {
        ::close(fds[0]);
        std::string result;
        try {
            result = body();
        } catch (const std::exception& e) {
            result = std::string("FAIL exception: ") + e.what();
        }
        for (size_t done = 0; done < result.size();) {
            ssize_t n = ::write(fds[1], result.data() + done, result.size() - done);
            if (n <= 0)
                break;
            done += static_cast<size_t>(n);
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string result;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0)
        result.append(buffer, static_cast<size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        result += "\nFAIL the child process died of signal " + std::to_string(WTERMSIG(status));
    return result;
}

} // namespace kforge::test
