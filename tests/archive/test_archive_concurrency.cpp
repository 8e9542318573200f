// One writer, many readers, and crashes: a second writer is refused naming the holder, a reader
// sees the writer's commits as they happen, and a writer killed with SIGKILL mid-stream leaves an
// archive that is intact, holds only whole candidates, and can be opened by the next writer.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "core/source.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace kforge::test {
namespace {

constexpr int k_measurements_per_candidate = 12;

Candidate numbered_candidate(int n)
{
    Candidate c;
    c.source = softmax_candidate_source() + "#define VARIANT " + std::to_string(n) + "\n";
    c.source_hash = normalized_source_hash(c.source);
    c.evaluation.verdict = {VerdictKind::correct, ""};
    c.evaluation.fitness = 1.0 + n * 1e-3;
    for (int i = 0; i < k_measurements_per_candidate / 3; ++i)
        for (auto& m : bench_measurements("candidate", 1.0 + n * 1e-3))
            c.evaluation.measurements.push_back(m);
    c.evaluation.metrics = {
        {"padding", std::string(2000, 'x')}}; // make each transaction span pages
    return c;
}

// In a forked child: opens `path` for writing, stores candidates as fast as it can and writes one
// byte to `progress` after each commit, until it is killed. Never returns.
[[noreturn]] void write_until_killed(const std::filesystem::path& path, int progress)
{
    try {
        Archive archive = Archive::open(path, OpenMode::write);
        for (int n = 0;; ++n) {
            archive.insert_candidate(numbered_candidate(n));
            char byte = 1;
            if (::write(progress, &byte, 1) != 1)
                ::_exit(3);
        }
    } catch (...) {
        ::_exit(2);
    }
}

// In a forked child: creates archive-0, archive-1, ... in `dir` as fast as it can, writing one
// byte to `progress` after each, until it is killed. Never returns.
[[noreturn]] void create_until_killed(const std::filesystem::path& dir, int progress)
{
    try {
        for (int n = 0;; ++n) {
            Archive::create(dir / fmt::format("archive-{}.kforge", n), softmax_run_info());
            char byte = 1;
            if (::write(progress, &byte, 1) != 1)
                ::_exit(3);
        }
    } catch (...) {
        ::_exit(2);
    }
}

} // namespace

TEST_CASE("a second writer is refused with a message naming the holder", "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    build_sample_archive(path);
    Archive writer = Archive::open(path, OpenMode::write);
    try {
        Archive::open(path, OpenMode::write);
        FAIL("a second writer opened the archive");
    } catch (const Error& e) {
        std::string message = e.what();
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        CHECK_THAT(message,
                   Catch::Contains(path.string() + ": another kforge is writing this archive"));
        CHECK_THAT(message, Catch::Contains("pid " + std::to_string(::getpid()) + " on " + host +
                                            ", since "));
        CHECK_THAT(message, Catch::Contains("only one writer at a time"));
        CHECK_THAT(message, Catch::Contains("run.kforge.lock"));
    }
    CHECK_THROWS_WITH(Archive::create(path, softmax_run_info()),
                      Catch::Contains("another kforge is writing"));
    // Readers are welcome meanwhile.
    CHECK(Archive::open(path, OpenMode::read_only).candidate_count() == 7);
}

TEST_CASE("the writer lock is released when the writer closes", "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    build_sample_archive(path);
    {
        Archive first = Archive::open(path, OpenMode::write);
    }
    Archive second = Archive::open(path, OpenMode::write);
    CHECK(second.mode() == OpenMode::write);
}

TEST_CASE("a reader sees rows the writer commits after the reader opened", "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    build_sample_archive(path);
    Archive writer = Archive::open(path, OpenMode::write);
    Archive reader = Archive::open(path, OpenMode::read_only);
    CHECK(reader.candidate_count() == 7);

    int64_t id = writer.insert_candidate(numbered_candidate(1));
    writer.set_run_state("running");
    CHECK(reader.candidate_count() == 8);
    auto seen = reader.candidate(id);
    REQUIRE(seen);
    CHECK(seen->evaluation.measurements.size() == k_measurements_per_candidate);
    CHECK(reader.run_info().state == "running");

    // A write in progress stays invisible until it commits.
    writer.atomically([&] {
        writer.insert_candidate(numbered_candidate(2));
        CHECK(reader.candidate_count() == 8);
    });
    CHECK(reader.candidate_count() == 9);
}

TEST_CASE("a writer killed with SIGKILL mid-write leaves whole candidates and no stale lock",
          "[archive][slow]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    build_sample_archive(path);
    int64_t stored_before = 7;
    for (int round = 0; round < 3; ++round) {
        INFO("round " << round);
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            ::close(fds[0]);
            write_until_killed(path, fds[1]);
        }
        ::close(fds[1]);
        // Let it commit a few candidates, then kill it at a moment that varies per round.
        int commits = 0;
        char byte;
        while (commits < 5 + 10 * round && ::read(fds[0], &byte, 1) == 1)
            ++commits;
        std::this_thread::sleep_for(std::chrono::microseconds(700 * round + 150));
        ::kill(child, SIGKILL);
        while (::read(fds[0], &byte, 1) == 1)
            ++commits;
        ::close(fds[0]);
        int status = 0;
        ::waitpid(child, &status, 0);
        REQUIRE(WIFSIGNALED(status));
        REQUIRE(WTERMSIG(status) == SIGKILL);

        // A reader copes with the WAL the killed writer left behind, before any writer recovers it.
        int64_t seen_by_reader = Archive::open(path, OpenMode::read_only).candidate_count();
        Archive archive = Archive::open(path, OpenMode::write); // the lock died with the child
        CHECK(archive.candidate_count() == seen_by_reader);
        CHECK(archive.integrity_check() == "ok");
        int64_t count = archive.candidate_count();
        // Every commit the child reported is there; at most the one it was writing is not.
        CHECK(count >= stored_before + commits);
        CHECK(count <= stored_before + commits + 1);
        for (const auto& point : archive.fitness_series()) {
            if (point.candidate_id <= 7)
                continue;
            INFO("candidate " << point.candidate_id);
            CHECK(archive.measurements(point.candidate_id).size() == k_measurements_per_candidate);
        }
        stored_before = count;
    }
}

// A suite kills its children with SIGKILL, and one may die while it creates its archive: what it
// leaves at the archive's name must be nothing or a whole archive, never an empty or half-made
// file that refuses both a fresh run and a resume.
TEST_CASE("a create killed at any moment leaves no archive or a whole one, and the name stays usable",
          "[archive][slow]")
{
    for (int round = 0; round < 6; ++round) {
        INFO("round " << round);
        TempDir dir;
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            ::close(fds[0]);
            create_until_killed(dir.path(), fds[1]);
        }
        ::close(fds[1]);
        // Kill it a varying while after some creates, so the kill lands at different points of one.
        char byte;
        for (int created = 0; created < 2 + round && ::read(fds[0], &byte, 1) == 1;)
            ++created;
        std::this_thread::sleep_for(std::chrono::microseconds(200 + 1700 * round));
        ::kill(child, SIGKILL);
        ::close(fds[0]);
        int status = 0;
        ::waitpid(child, &status, 0);
        REQUIRE(WIFSIGNALED(status));

        int whole = 0;
        for (;; ++whole) {
            auto path = dir / fmt::format("archive-{}.kforge", whole);
            if (!std::filesystem::exists(path))
                break;
            Archive archive = Archive::open(path, OpenMode::read_only);
            CHECK(archive.run_info().task_name == "softmax_f32");
        }
        CHECK(whole >= 2 + round);
        // The name the child was creating when it died takes a new archive.
        auto next = dir / fmt::format("archive-{}.kforge", whole);
        Archive::create(next, softmax_run_info());
        CHECK(Archive::open(next, OpenMode::read_only).run_info().task_name == "softmax_f32");
    }
}

} // namespace kforge::test
