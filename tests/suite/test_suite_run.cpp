// `kforge suite run`, end to end through the real binary on simulated GPUs (KFORGE_SIMULATE_GPUS):
// more problems than GPUs, a kill -9 of the suite in the middle (its runs must die with it and
// leave resumable archives), a re-run that resumes, and a report whose counts equal what `kforge
// inspect --json` says of each archive. Also: two shards on one folder, replies per problem, and
// the refusals that come before anything is run, and runs sharing a GPU (--per-gpu). The PyTorch variant ([torch]) imports fixture
// problems and replays their recorded replies.
#include "kf_catch.hpp"

#include <chrono>
#include <csignal>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "evaluator/worker/share.hpp"
#include "suite/gpu_use.hpp"
#include "suite/suite_checks.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/file_lock.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

namespace fs = std::filesystem;

// The spec file of the bundled task `name`. (Named apart from tests/tasks' bundled_task(), which the
// unity build may join with this file.)
std::string bundled_task_spec(const std::string& name)
{
    return (source_dir() / "tasks" / (name + ".json")).string();
}

// Waits until the suite has finished at least one problem and runs at least one; with a candidate
// budget, until a running problem is inside it (some candidates recorded, fewer than the budget),
// so that a kill then interrupts a run that a resume must continue. False on timeout.
bool wait_for_mid_run(const fs::path& root, std::chrono::seconds limit, int64_t budget)
{
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (auto m = suite_manifest_now(root); m && suite_count(*m, ProblemState::finished) >= 1)
            for (const auto& p : m->problems) {
                if (p.state != ProblemState::running)
                    continue;
                if (budget == 0)
                    return true;
                auto recorded = candidates_so_far(root, p.id);
                if (recorded && *recorded >= 1 && *recorded < budget)
                    return true;
            }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

// Starts `args` as a suite run, kills it with SIGKILL in the middle, checks that its runs died with
// it, resumes it with a plain `suite run -o ROOT`, and checks the result against the archives.
// Returns whether an interrupted archive was continued by `kforge resume` (not so when every run
// the kill interrupted had already used its budget: then the re-run records it as finished).
// `budget`: the suite's candidate budget per problem, 0 for a time budget.
bool kill_and_resume(const fs::path& root, const std::vector<std::string>& args, const std::vector<std::string>& env,
                     int64_t budget)
{
    {
        RunningProgram suite(kforge_binary(), args, env);
        bool mid_run = wait_for_mid_run(root, std::chrono::seconds(240), budget);
        INFO(suite.stderr_so_far());
        REQUIRE(mid_run);
        ::kill(suite.pid(), SIGKILL);
        CommandResult killed = suite.wait();
        CHECK(killed.exit_code == 128 + SIGKILL);
    }
    SuiteManifest after_kill = *suite_manifest_now(root);
    std::vector<std::string> interrupted;
    for (const auto& p : after_kill.problems)
        if (p.state == ProblemState::running)
            interrupted.push_back(p.id);
    REQUIRE_FALSE(interrupted.empty());
    // Its runs died with it: every archive's writer lock and every claim comes free.
    for (const auto& id : interrupted) {
        bool free = false;
        for (int i = 0; i < 100 && !free; ++i) {
            free = !file_lock_is_held(root / "runs" / (id + ".kforge.lock")) &&
                   !file_lock_is_held(root / "runs" / (id + ".claim"));
            if (!free)
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        INFO(id);
        CHECK(free);
    }

    CommandResult resumed = run_kforge({"suite", "run", "-o", root.string(), "--progress", "lines"}, env);
    INFO(resumed.err);
    std::string states;
    if (std::optional<SuiteManifest> now = suite_manifest_now(root))
        for (const auto& p : now->problems)
            states += fmt::format("{}: {} ({})\n", p.id, problem_state_name(p.state), p.reason);
    INFO("after the resume:\n" << states);
    REQUIRE(resumed.exit_code == 0);
    CHECK_THAT(resumed.out, Catch::Contains("correct: "));
    CHECK_THAT(resumed.out, Catch::Contains("gpu0: busy "));
    SuiteManifest done = *suite_manifest_now(root);
    CHECK(suite_count(done, ProblemState::finished) == static_cast<int64_t>(done.problems.size()));
    bool resumed_some = false;
    for (const auto& p : done.problems)
        for (const auto& session : p.sessions)
            resumed_some = resumed_some || session.command == "resume";
    for (const auto& p : done.problems) {
        INFO(p.id);
        CHECK_FALSE(p.sessions.empty());
        if (std::find(interrupted.begin(), interrupted.end(), p.id) == interrupted.end() &&
            after_kill.find(p.id)->state == ProblemState::finished)
            CHECK(p.sessions.size() == after_kill.find(p.id)->sessions.size()); // finished ones are skipped
    }
    REQUIRE(done.runs.size() == 2);
    CHECK(done.runs[1]["gpus"].size() == 3);
    check_report_matches_archives(root);
    return resumed_some;
}

} // namespace

TEST_CASE("a suite of bundled tasks on three simulated GPUs survives kill -9 and resumes to its archives' counts",
          "[cli][suite][e2e][slow][extended]")
{
    TempDir dir;
    fs::path root = dir / "suite";
    std::vector<std::string> args{"suite", "run", bundled_task_spec("axpy_f32"), bundled_task_spec("transpose_f32"),
                                  bundled_task_spec("reduce_sum_f32"), bundled_task_spec("softmax_f32"),
                                  bundled_task_spec("histogram_u8"), "-o", root.string(), "--budget", "4",
                                  "--no-knowledge", "--progress", "lines"};
    CHECK(kill_and_resume(root, args, {"KFORGE_SIMULATE_GPUS=3"}, 4)); // an interrupted archive was continued
    SuiteManifest m = *suite_manifest_now(root);
    for (const auto& p : m.problems) {
        CHECK(p.kind == ProblemKind::spec);
        CHECK(p.model == "builtin");
        CHECK_THAT(p.reason, Catch::Contains("budget of 4 candidates")); // "is used up", or "is used" by a re-run
    }
}

TEST_CASE("an imported PyTorch suite with recorded replies survives kill -9 and resumes to its archives' counts",
          "[torch][suite][e2e][slow][extended]")
{
    TempDir dir;
    fs::path root = dir / "suite";
    fs::path torch = fixtures_dir() / "torch";
    std::vector<std::string> args{"suite", "run", (torch / "quick_gelu.py").string(), (torch / "sum_squares.py").string(),
                                  bundled_task_spec("axpy_f32"), bundled_task_spec("transpose_f32"), "-o", root.string(),
                                  "--model", "replay:" + (torch / "replies").string() + "/", "--time", "20s",
                                  "--no-knowledge", "--progress", "lines"};
    kill_and_resume(root, args, {"KFORGE_SIMULATE_GPUS=3"}, 0);
    SuiteManifest m = *suite_manifest_now(root);
    const SuiteProblem* gelu = m.find("quick_gelu");
    REQUIRE(gelu);
    CHECK(gelu->kind == ProblemKind::python);
    CHECK(fs::exists(root / "problems" / "quick_gelu" / "quick_gelu.json"));
    CHECK(fs::exists(root / "problems" / "quick_gelu" / "quick_gelu.py"));
    CHECK_THAT(gelu->model, Catch::Contains("quick_gelu.jsonl"));
    CHECK(m.find("axpy_f32")->model == "builtin"); // no replies of its own, but seeds
    CommandResult report = run_kforge({"suite", "report", root.string()});
    CHECK_THAT(report.out, Catch::Contains("vs torch eager (2 problems)"));
    CHECK_THAT(report.out, Catch::Contains("vs own reference (2 problems)"));
}

TEST_CASE("runs sharing a simulated GPU in one search turn never measure at once, search one at a time, and its busy "
          "share is the union of their measuring",
          "[cli][suite][e2e][slow]")
{
    TempDir dir;
    fs::path root = dir / "suite";
    // A start-up of 400 ms off the GPU (a real worker's context, a torch import) in each run's setup.
    CommandResult run = run_kforge({"suite", "run", bundled_task_spec("axpy_f32"), bundled_task_spec("transpose_f32"),
                                    bundled_task_spec("reduce_sum_f32"), "-o", root.string(), "--budget", "3",
                                    "--per-gpu", "2", "--searches-per-gpu", "1", "--no-knowledge", "--progress",
                                    "lines", "--json"},
                                   {"KFORGE_SIMULATE_GPUS=1", "KFORGE_SIMULATE_GPU_SETUP_MS=400"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    Json record = Json::parse(run.out).at("run");
    CHECK(record["per_gpu"] == 2);
    const Json& gpu = record.at("gpus").at(0);
    SuiteManifest m = *suite_manifest_now(root);
    CHECK(suite_count(m, ProblemState::finished) == 3);

    // Two runs were on the GPU at once: some two sessions overlap in time.
    std::vector<std::pair<double, double>> sessions;
    for (const auto& p : m.problems)
        for (const auto& session : p.sessions)
            sessions.emplace_back(session.started_at, session.ended_at.value_or(session.started_at));
    bool overlapped = false;
    for (size_t i = 0; i < sessions.size(); ++i)
        for (size_t j = i + 1; j < sessions.size(); ++j)
            overlapped = overlapped || (sessions[i].first < sessions[j].second && sessions[j].first < sessions[i].second);
    CHECK(overlapped);

    // Their workers' holds of the measuring lock, as logged: from several processes, never at once.
    std::vector<MeasuringHold> holds;
    for (const auto& line : split(slurp_file(root / "gpus" / (gpu.at("uuid").get<std::string>() + ".measuring")), '\n'))
        if (auto hold = parse_measuring_hold(line))
            holds.push_back(*hold);
    std::set<int64_t> pids;
    std::set<std::string> what;
    for (const auto& hold : holds) {
        pids.insert(hold.pid);
        what.insert(hold.what);
    }
    CHECK(pids.size() >= 3); // one worker per run at least
    CHECK(what == std::set<std::string>{"setup", "baselines", "variant"});
    std::sort(holds.begin(), holds.end(), [](const auto& a, const auto& b) { return a.begin_s < b.begin_s; });
    for (size_t i = 1; i < holds.size(); ++i) {
        INFO("hold " << i << " of pid " << holds[i].pid << " began before hold " << i - 1 << " of pid "
                     << holds[i - 1].pid << " ended");
        CHECK(holds[i].begin_s >= holds[i - 1].end_s);
    }

    // The busy share is the union of the holds inside the window, the waits are apart.
    double from = record.at("started_at").get<double>(), to = from + gpu.at("window_s").get<double>();
    std::vector<std::pair<double, double>> intervals;
    for (const auto& hold : holds)
        intervals.emplace_back(hold.begin_s, hold.end_s);
    CHECK(gpu.at("busy_s").get<double>() == Approx(covered_seconds(intervals, from, to)).margin(1e-6));
    CHECK(gpu.at("busy").get<double>() <= 1.0);
    CHECK(gpu.at("lock_wait_s").get<double>() >= 0);

    // The second run to finish starting up waited for the first one's search to end.
    std::string logs;
    for (const auto& p : m.problems)
        logs += slurp_file(root / "logs" / (p.id + ".log"));
    CHECK_THAT(logs, Catch::Contains("waiting for its search turn"));
    CHECK_THAT(logs, Catch::Contains("--gpu-share " + (root / "gpus").string() + " --gpu-searches 1"));
}

TEST_CASE("two shards share one suite folder: each problem runs once and one report covers them all",
          "[cli][suite][e2e][slow]")
{
    TempDir dir;
    fs::path root = dir / "suite";
    std::vector<std::string> common{bundled_task_spec("axpy_f32"), bundled_task_spec("transpose_f32"),
                                    bundled_task_spec("reduce_sum_f32"), bundled_task_spec("scan_u32"),
                                    "-o", root.string(), "--budget", "2", "--no-knowledge", "--progress", "lines"};
    auto shard_args = [&](const std::string& shard) {
        std::vector<std::string> args{"suite", "run"};
        args.insert(args.end(), common.begin(), common.end());
        args.insert(args.end(), {"--shard", shard});
        return args;
    };
    RunningProgram first(kforge_binary(), shard_args("0/2"), {"KFORGE_SIMULATE_GPUS=1"});
    RunningProgram second(kforge_binary(), shard_args("1/2"), {"KFORGE_SIMULATE_GPUS=1"});
    CommandResult a = first.wait();
    CommandResult b = second.wait();
    INFO(a.err);
    INFO(b.err);
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    SuiteManifest m = *suite_manifest_now(root);
    REQUIRE(m.problems.size() == 4);
    for (const auto& p : m.problems) {
        INFO(p.id);
        CHECK(p.state == ProblemState::finished);
        CHECK(p.sessions.size() == 1);
    }
    REQUIRE(m.runs.size() == 2);
    std::set<std::string> shards{m.runs[0]["shard"].get<std::string>(), m.runs[1]["shard"].get<std::string>()};
    CHECK(shards == std::set<std::string>{"0/2", "1/2"});
    // Problems 0 and 2 of the sorted list are shard 0's.
    CHECK(m.runs[m.runs[0]["shard"] == "0/2" ? 0 : 1]["problems_done"] == 2);
    check_report_matches_archives(root);
}

TEST_CASE("replay:DIR/ gives each problem its own replies; without them a task with seeds runs the builtin proposer "
          "and one without is skipped",
          "[cli][suite][e2e][slow]")
{
    TempDir dir;
    // A copy of the axpy task without seed kernels, beside its reference file.
    fs::path seedless = dir / "specs" / "axpy_noseeds.json";
    Json spec = Json::parse(read_file(bundled_task_spec("axpy_f32")));
    spec.erase("seeds");
    spec["name"] = "axpy_noseeds";
    fs::create_directories(seedless.parent_path());
    fs::copy(source_dir() / "tasks" / "axpy_f32", dir / "specs" / "axpy_f32", fs::copy_options::recursive);
    write_text(seedless, spec.dump(2));
    // Two of the recorded softmax replies (the whole file takes minutes of compiling here).
    std::vector<std::string> lines = split(read_file(fixtures_dir() / "replay" / "softmax_f32.jsonl"), '\n');
    write_text(dir / "replies" / "softmax_f32.jsonl", lines.at(0) + "\n" + lines.at(1) + "\n");
    fs::path root = dir / "suite";
    CommandResult run = run_kforge({"suite", "run", bundled_task_spec("softmax_f32"), bundled_task_spec("transpose_f32"),
                                    seedless.string(), "-o", root.string(), "--model",
                                    "replay:" + (dir / "replies").string(), "--no-knowledge", "--time", "6s",
                                    "--optimize-args", "--islands 2 --no-repair", "--progress", "lines"},
                                   {"KFORGE_SIMULATE_GPUS=2"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    SuiteManifest m = *suite_manifest_now(root);
    const SuiteProblem* softmax = m.find("softmax_f32");
    REQUIRE(softmax);
    CHECK_THAT(softmax->model, Catch::EndsWith("replies/softmax_f32.jsonl"));
    CHECK(softmax->state == ProblemState::finished);
    CHECK_THAT(slurp_file(root / "logs" / "softmax_f32.log"), Catch::Contains("--max-calls 2") &&
                                                                   Catch::Contains("--budget 5") &&
                                                                   Catch::Contains("--islands 2 --no-repair"));
    CHECK(m.find("transpose_f32")->model == "builtin");
    const SuiteProblem* skipped = m.find("axpy_noseeds");
    REQUIRE(skipped);
    CHECK(skipped->state == ProblemState::skipped);
    CHECK_THAT(skipped->reason, Catch::Contains("axpy_noseeds.jsonl") && Catch::Contains("no seed kernels"));
    CHECK_FALSE(fs::exists(root / "runs" / "axpy_noseeds.kforge"));
    CHECK_THAT(run.err, Catch::Contains("axpy_noseeds skipped"));

    // A second run finds nothing to do: finished problems are skipped, the skipped one stays so.
    CommandResult again = run_kforge({"suite", "run", "-o", root.string(), "--progress", "lines"},
                                     {"KFORGE_SIMULATE_GPUS=2"});
    INFO(again.err);
    CHECK(again.exit_code == 0);
    SuiteManifest after = *suite_manifest_now(root);
    CHECK(after.find("softmax_f32")->sessions.size() == 1);
    CHECK(after.find("axpy_noseeds")->state == ProblemState::skipped);
}

TEST_CASE("suite run refuses bad flags and bad problem files before it runs or writes anything", "[cli][suite][e2e]")
{
    TempDir dir;
    fs::path root = dir / "suite";
    std::string task = bundled_task_spec("axpy_f32");
    std::vector<std::string> sim{"KFORGE_SIMULATE_GPUS=1"};
    auto refused = [&](std::vector<std::string> args, int code, const std::string& message,
                       const std::vector<std::string>& env) {
        std::vector<std::string> full{"suite", "run"};
        full.insert(full.end(), args.begin(), args.end());
        CommandResult result = run_kforge(full, env);
        INFO(join(args, " "));
        INFO(result.err);
        CHECK(result.exit_code == code);
        CHECK_THAT(result.err, Catch::Contains(message));
        CHECK_FALSE(fs::exists(root));
    };
    refused({"-o", root.string()}, 2, "no problems", sim);
    write_text(dir / "notes.txt", "hello");
    refused({(dir / "notes.txt").string(), "-o", root.string()}, 3, "not a problem file", sim);
    write_text(dir / "data.json", "{\"rows\": 3}");
    refused({(dir / "data.json").string(), "-o", root.string()}, 3, "not a kforge.task/1 task spec", sim);
    refused({(dir / "absent.py").string(), "-o", root.string()}, 3, "no such file or folder", sim);
    refused({task, "-o", root.string(), "--shard", "2/2"}, 2, "--shard '2/2'", sim);
    refused({task, "-o", root.string(), "--optimize-args", "--budget 3"}, 2, "--budget is set by the suite", sim);
    refused({task, "-o", root.string(), "--optimize-args", "--no-such-flag"}, 2, "--optimize-args", sim);
    refused({task, "-o", root.string(), "--model", "replay:" + (fixtures_dir() / "replay").string(), "--model",
             "builtin"},
            2, "cannot be mixed", sim);
    refused({task, "-o", root.string(), "--time", "soon"}, 2, "--time 'soon'", sim);
    refused({task, "-o", root.string(), "--max-cost", "-3"}, 2, "--max-cost '-3'", sim);
    // Without a GPU (nothing simulated, and none on this machine), nothing is written either.
    if (!gpu_unavailable_reason().empty())
        refused({task, "-o", root.string()}, 4, "GPU", {"KFORGE_SIMULATE_GPUS="});
    write_text(dir / "busy" / "file.txt", "x");
    CommandResult full = run_kforge({"suite", "run", task, "-o", (dir / "busy").string()}, sim);
    CHECK(full.exit_code == 2);
    CHECK_THAT(full.err, Catch::Contains("not empty and holds no suite"));
}

// A problem whose import fails (get_inputs() returns None) is settled as failed, naming why, and the
// suite goes on with the others. The import's end once handed settle() a problem inside the manifest
// that settle() itself replaces: `internal error: basic_string::_M_create` and rc 4 at the first such
// problem of a suite.
TEST_CASE("a problem whose import fails is marked failed with the importer's reason and the suite carries on",
          "[torch][suite][e2e]")
{
    TempDir dir;
    write_text(dir / "no_inputs.py", "import torch\n"
                                     "class Model(torch.nn.Module):\n"
                                     "    def forward(self, x):\n"
                                     "        return x * 2\n"
                                     "def get_inputs():\n"
                                     "    return None\n"
                                     "def get_init_inputs():\n"
                                     "    return []\n");
    fs::path root = dir / "suite";
    for (bool with_good : {false, true}) {
        fs::remove_all(root);
        std::vector<std::string> args{"suite", "run", (dir / "no_inputs.py").string()};
        if (with_good)
            args.push_back(bundled_task_spec("axpy_f32"));
        args.insert(args.end(), {"-o", root.string(), "--budget", "1", "--no-knowledge", "--progress", "lines"});
        CommandResult run = run_kforge(args, {"KFORGE_SIMULATE_GPUS=1"});
        INFO(run.err);
        CHECK(run.exit_code == 1); // ran, and a problem failed (docs/suite.md's exit codes)
        CHECK_THAT(run.err, !Catch::Contains("internal error"));
        SuiteManifest m = *suite_manifest_now(root);
        const SuiteProblem* bad = m.find("no_inputs");
        REQUIRE(bad);
        CHECK(bad->state == ProblemState::failed);
        CHECK_THAT(bad->reason, Catch::Contains("import") && Catch::Contains("get_inputs"));
        if (with_good)
            CHECK(m.find("axpy_f32")->state == ProblemState::finished);
    }
}

// A problem that ran has an archive; one removed since leaves no result, and the suite says so and
// exits 1 rather than showing the problem as finished with nothing in it.
TEST_CASE("a suite whose finished problem's archive was removed says so and exits 1", "[cli][suite][e2e]")
{
    TempDir dir;
    fs::path root = dir / "suite";
    std::vector<std::string> sim{"KFORGE_SIMULATE_GPUS=1"};
    CommandResult first = run_kforge({"suite", "run", bundled_task_spec("axpy_f32"), "-o", root.string(), "--budget", "1",
                                      "--no-knowledge", "--progress", "lines"},
                                     sim);
    REQUIRE(first.exit_code == 0);
    fs::remove(root / "runs" / "axpy_f32.kforge");
    CommandResult again = run_kforge({"suite", "run", "-o", root.string(), "--progress", "lines"}, sim);
    INFO(again.out << again.err);
    CHECK(again.exit_code == 1);
    CHECK_THAT(again.out, Catch::Contains("axpy_f32.kforge: no such archive, though the problem ran 1 time"));
}
