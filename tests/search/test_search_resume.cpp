// The determinism contract (search.hpp): an interrupted run plus resume, a killed run plus resume,
// and a replayed run all record exactly what one uninterrupted run records.
#include "kf_catch.hpp"

#include <csignal>
#include <set>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "search/search_harness.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

HarnessOptions resume_run(int budget)
{
    HarnessOptions options;
    options.config.islands = 3;
    options.config.parallel = 3;
    options.config.generation_size = 3;
    options.config.migrate_every = 1;
    options.config.meta_every = 2;
    options.config.budgets.candidates = budget;
    options.config.seed = 1234;
    options.scripted.max_delay = std::chrono::milliseconds(12);
    options.scripted.variants = 300;
    options.fake.max_delay = std::chrono::milliseconds(8);
    return options;
}

HarnessOptions builtin_run(int budget)
{
    HarnessOptions options;
    options.builtin = true;
    options.config.islands = 2;
    options.config.generation_size = 3;
    options.config.budgets.candidates = budget;
    options.config.seed = 99;
    options.fake.max_delay = std::chrono::milliseconds(6);
    return options;
}

// Runs `options` once with an interrupt after `after` recorded candidates, then resumes it.
std::vector<std::string> interrupted_then_resumed(const std::filesystem::path& path, HarnessOptions options, int after)
{
    clear_interrupt();
    int recorded = 0;
    HarnessOptions first = options;
    first.on_recorded = [&](const Candidate&) {
        if (++recorded == after)
            request_interrupt();
    };
    SearchOutcome stopped = run_session(path, first);
    clear_interrupt();
    REQUIRE(stopped.reason == StopReason::interrupted);
    {
        Archive archive = Archive::open(path, OpenMode::read_only);
        CHECK(archive.run_info().state == "interrupted");
        CHECK(archive.candidate_count() < options.config.budgets.candidates);
    }
    SearchOutcome resumed = run_session(path, options);
    CHECK(resumed.reason == StopReason::budget);
    return run_fingerprint(path);
}

} // namespace

TEST_CASE("an interrupted run plus resume records what an uninterrupted run records (model proposals)", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = resume_run(45);
    run_session(dir / "whole.kforge", options);
    auto whole = run_fingerprint(dir / "whole.kforge");
    for (int after : {5, 17}) {
        auto pieces = interrupted_then_resumed(dir / ("pieces-" + std::to_string(after) + ".kforge"), options, after);
        INFO("interrupted after " << after << "; first difference: " << first_difference(whole, pieces));
        CHECK(pieces == whole);
    }
    // Lessons, strategy rewrites, migrations, repairs and duplicates all took part.
    Archive archive = Archive::open(dir / "whole.kforge", OpenMode::read_only);
    CHECK_FALSE(archive.lessons().empty());
    CHECK(archive.meta_prompts(MetaPromptFilter::all).size() > 3);
    bool repaired = false;
    for (const auto& point : archive.fitness_series())
        repaired = repaired || archive.candidate(point.candidate_id)->origin == Origin::repair;
    CHECK(repaired);
}

TEST_CASE("an interrupted run plus resume records what an uninterrupted run records (builtin proposer)", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = builtin_run(40);
    run_session(dir / "whole.kforge", options);
    auto whole = run_fingerprint(dir / "whole.kforge");
    auto pieces = interrupted_then_resumed(dir / "pieces.kforge", options, 9);
    INFO("first difference: " << first_difference(whole, pieces));
    CHECK(pieces == whole);
}

TEST_CASE("a run replayed from its recorded model calls makes the same choices, interrupted or not", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = resume_run(36);
    run_session(dir / "recorded.kforge", options);
    auto recorded = run_fingerprint(dir / "recorded.kforge");
    HarnessOptions replay = options;
    {
        Archive archive = Archive::open(dir / "recorded.kforge", OpenMode::read_only);
        auto calls = archive.llm_calls(100000, CallText::include);
        replay.replay.assign(calls.rbegin(), calls.rend()); // oldest first
    }
    run_session(dir / "replayed.kforge", replay);
    auto replayed = run_fingerprint(dir / "replayed.kforge");
    INFO("first difference: " << first_difference(recorded, replayed));
    CHECK(replayed == recorded);
    auto pieces = interrupted_then_resumed(dir / "replayed-pieces.kforge", replay, 11);
    INFO("first difference after resume: " << first_difference(recorded, pieces));
    CHECK(pieces == recorded);
}

TEST_CASE("kill -9 then resume loses only the work in flight and records what an uninterrupted run records",
          "[search][slow]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = resume_run(60);
    options.scripted.max_delay = std::chrono::milliseconds(40);
    options.fake.max_delay = std::chrono::milliseconds(25);
    run_session(dir / "whole.kforge", options);
    auto whole = run_fingerprint(dir / "whole.kforge");

    std::filesystem::path path = dir / "killed.kforge";
    std::fflush(nullptr);
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        try {
            run_session(path, options);
        } catch (...) {
            ::_exit(3);
        }
        ::_exit(0);
    }
    // Watch the archive as a reader does and kill the writer in the middle of the run.
    std::map<int64_t, std::string> seen;
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (seen.size() < 15 && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (!std::filesystem::exists(path))
            continue;
        try {
            Archive reader = Archive::open(path, OpenMode::read_only);
            for (const auto& point : reader.fitness_series())
                seen[point.candidate_id] = reader.candidate(point.candidate_id)->source_hash;
        } catch (const Error&) {
            // the archive is still being created
        }
    }
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(seen.size() >= 15);

    int64_t before_resume = 0;
    {
        Archive archive = Archive::open(path, OpenMode::write); // the lock died with the writer
        CHECK(archive.integrity_check() == "ok");
        CHECK(archive.run_info().state == "running");
        before_resume = archive.candidate_count();
        for (const auto& [id, hash] : seen) {
            auto candidate = archive.candidate(id);
            INFO("candidate #" << id << " was committed before the kill");
            REQUIRE(candidate);
            CHECK(candidate->source_hash == hash);
        }
    }
    CHECK(before_resume < 60);
    run_session(path, options);
    auto resumed = run_fingerprint(path);
    INFO("first difference: " << first_difference(whole, resumed));
    CHECK(resumed == whole);
}
