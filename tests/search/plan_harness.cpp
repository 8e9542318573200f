// The two-phase search tests' helpers; see plan_harness.hpp.
#include "search/plan_harness.hpp"

#include <csignal>

#include <sys/wait.h>
#include <unistd.h>

#include "kf_catch.hpp"

namespace kforge::test {

void run_killed_after_plan(const std::filesystem::path& path, const HarnessOptions& options, int nth)
{
    std::fflush(nullptr);
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        HarnessOptions doomed = options;
        int stored = 0;
        doomed.on_plan_stored = [&](uint64_t) {
            if (++stored == nth)
                ::raise(SIGKILL);
        };
        try {
            run_session(path, doomed);
        } catch (...) {
            ::_exit(3);
        }
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(WTERMSIG(status) == SIGKILL);
}

std::vector<std::string> pending_plan_prompts(const std::filesystem::path& path)
{
    Archive archive = Archive::open(path, OpenMode::read_only);
    std::vector<std::string> prompts;
    auto state = archive.search_state("loop");
    REQUIRE(state);
    for (const auto& item : (*state)["pending"]) {
        const Json& done = item.value("plan_done", Json());
        if (done.is_null())
            continue;
        auto call = archive.llm_call(done["calls"].front().get<int64_t>());
        REQUIRE(call);
        prompts.push_back(call->request.dump());
    }
    return prompts;
}

int64_t count_plan_prompt(const std::filesystem::path& path, const std::string& request)
{
    Archive archive = Archive::open(path, OpenMode::read_only);
    int64_t count = 0;
    for (const auto& call : archive.llm_calls(100000, CallText::include))
        count += call.purpose == CallPurpose::plan && call.request.dump() == request;
    return count;
}

} // namespace kforge::test
