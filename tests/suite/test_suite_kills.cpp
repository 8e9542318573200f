// A suite killed with SIGKILL at one moment after another of its life, each time resumed by a plain
// `suite run -o ROOT`: right after its manifest is written, after a resumed process takes stock,
// inside a run's archive creation, between a model call and its candidate, as a run ends before
// the suite hears of it, ... Every restart must read whatever the kill left (fields absent or
// null, half-made archives, claims and writer locks left behind) and go on; at the end every
// problem is finished and the report equals what `inspect` says of each archive.
#include "kf_catch.hpp"

#include <csignal>
#include <thread>

#include "suite/suite_checks.hpp"
#include "test_support.hpp"
#include "util/file_lock.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

namespace fs = std::filesystem;

// What a kill could change in the suite folder: the manifest's text, and the name and size of every
// file under runs/ and problems/ (an archive's -wal grows with each commit).
std::string suite_folder_state(const fs::path& root)
{
    std::error_code ec;
    std::string state = fs::exists(root / "suite.json", ec) ? slurp_file(root / "suite.json") : "";
    for (const char* sub : {"runs", "problems"}) {
        fs::recursive_directory_iterator it(root / sub, ec), end;
        for (; !ec && it != end; it.increment(ec)) {
            state += it->path().string();
            if (it->is_regular_file(ec))
                state += " " + std::to_string(fs::file_size(it->path(), ec));
            state += "\n";
        }
        ec.clear();
    }
    return state;
}

// Waits (up to a minute) until no process holds a problem's claim or its archive's writer lock:
// the runs of a killed suite die with it.
bool runs_let_go(const fs::path& root)
{
    for (int i = 0; i < 600; ++i) {
        bool held = false;
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(root / "runs", ec)) {
            std::string ext = entry.path().extension().string();
            held = held || ((ext == ".claim" || ext == ".lock") && file_lock_is_held(entry.path()));
        }
        if (!held)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

std::string spec_of(const std::string& task)
{
    return (source_dir() / "tasks" / (task + ".json")).string();
}

} // namespace

TEST_CASE("a suite killed at each next step of its life resumes every time and ends with its archives' counts",
          "[cli][suite][e2e]")
{
    TempDir dir;
    fs::path root = dir / "suite";
    // softmax_f32 replays its recorded replies (tests/fixtures/replay/softmax_f32.jsonl); the other
    // two have none, so the builtin proposer runs their seeds.
    const std::vector<std::string> start{"suite", "run", spec_of("axpy_f32"), spec_of("softmax_f32"),
                                         spec_of("transpose_f32"), "-o", root.string(), "--model",
                                         "replay:" + (fixtures_dir() / "replay").string() + "/", "--budget", "5",
                                         "--no-knowledge", "--progress", "lines"};
    const std::vector<std::string> resume{"suite", "run", "-o", root.string(), "--progress", "lines"};
    const std::vector<std::string> env{"KFORGE_SIMULATE_GPUS=2"};
    // Session k is killed at the (1 + 7k mod 40)-th change it makes to the folder: 1, 8, 15, ... 36,
    // 3, 10, ..., spread over a session's life (an uninterrupted run of this suite makes about 50:
    // taking stock, claims, archives, their commits, the ends of runs). Each session makes some
    // progress before its kill, so the suite ends; past the twelfth, a session runs to its end.
    constexpr int k_kill_sessions = 12;
    int kills = 0;
    std::optional<CommandResult> finished;
    for (int session = 0; !finished; ++session) {
        INFO("session " << session << " after " << kills << " kills");
        std::string state = suite_folder_state(root);
        RunningProgram suite(kforge_binary(), session == 0 ? start : resume, env);
        int changes = 0;
        bool kill_it = false;
        auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(5);
        while (!(finished = suite.poll()) && !kill_it && std::chrono::steady_clock::now() < give_up) {
            std::string now = suite_folder_state(root);
            if (now != state) {
                state = now;
                kill_it = session < k_kill_sessions && ++changes >= 1 + (7 * session) % 40;
            }
            if (!kill_it)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        if (finished)
            break;
        INFO(suite.stderr_so_far());
        REQUIRE(kill_it); // not past the five minutes
        ::kill(suite.pid(), SIGKILL);
        CommandResult killed = suite.wait();
        if (killed.exit_code != 128 + SIGKILL) { // it ended by itself just before the kill
            finished = killed;
            break;
        }
        ++kills;
        REQUIRE(runs_let_go(root));
    }
    INFO(finished->err);
    REQUIRE(finished->exit_code == 0);
    CHECK(kills >= 3); // many moments (all twelve, unless the suite ended sooner)
    SuiteManifest done = *suite_manifest_now(root);
    CHECK(suite_count(done, ProblemState::finished) == static_cast<int64_t>(done.problems.size()));
    check_report_matches_archives(root);
}
