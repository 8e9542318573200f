// Searches sharing one GPU while their models think (`kforge suite run`'s default, docs/suite.md
// "Several runs per GPU"): on a simulated GPU, with replies served after a latency, the runs' model
// calls overlap in time, their measurements never do, and each run's --time buys the search it gets
// alone (its time less what it waited for the measuring lock).
#include "kf_catch.hpp"

#include <set>

#include "archive/archive.hpp"
#include "search/loop_state.hpp"
#include "evaluator/worker/share.hpp"
#include "suite/suite_checks.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

namespace fs = std::filesystem;

struct RunFigures {
    std::string stop;
    std::optional<double> searched_s; // what the archive's saved state says --time counted
    double elapsed_s = 0;
    double search_s = 0;
    double lock_wait_s = 0;
    std::vector<std::pair<double, double>> calls; // [started, answered] of each model call
};

// What `id`'s run said of itself (the child's --json summary) and the calls its archive holds.
RunFigures run_figures(const fs::path& root, const std::string& id)
{
    RunFigures f;
    std::string out = slurp_file(root / "logs" / (id + ".out"));
    Json summary = Json::parse(out.substr(std::min(out.find('{'), out.size())));
    f.stop = summary.at("stop").at("reason").get<std::string>();
    f.elapsed_s = summary.at("elapsed_s").get<double>();
    f.search_s = summary.at("search_s").get<double>();
    for (const auto& gpu : summary.at("gpus"))
        f.lock_wait_s += gpu.at("lock_wait_s").get<double>();
    Archive archive = Archive::open(root / "runs" / (id + ".kforge"), OpenMode::read_only);
    if (auto state = archive.search_state(k_loop_state_key))
        f.searched_s = state->at("searched_s").get<double>();
    archive.for_each_llm_call(CallText::omit, [&](const LlmCallRecord& call) {
        if (call.provider != "builtin")
            f.calls.emplace_back(call.started_at, call.started_at + call.latency_s);
    });
    return f;
}

std::vector<std::string> suite_args(const std::vector<std::string>& tasks, const fs::path& root,
                                    const fs::path& replies, const std::string& per_gpu)
{
    std::vector<std::string> args{"suite", "run"};
    for (const auto& task : tasks)
        args.push_back((source_dir() / "tasks" / (task + ".json")).string());
    args.insert(args.end(), {"-o", root.string(), "--model", "replay:" + replies.string() + "/?latency=1s", "--time",
                             "5s", "--budget", "60", "--parallel", "2", "--per-gpu", per_gpu, "--no-knowledge", "--progress", "lines",
                             "--json"});
    return args;
}

} // namespace

TEST_CASE("searches share a simulated GPU while their replies wait: calls overlap, measurements never do, and each "
          "run's --time buys the search it gets alone",
          "[cli][suite][e2e][slow][extended]")
{
    TempDir dir;
    fs::path replies = dir / "replies";
    fs::create_directories(replies);
    std::vector<std::string> tasks{"axpy_f32", "transpose_f32", "reduce_sum_f32"};
    // Fourteen recorded replies each (written for softmax: on the simulator any kernel is measured).
    for (const auto& task : tasks)
        fs::copy_file(source_dir() / "tests" / "fixtures" / "replay" / "softmax_f32.jsonl", replies / (task + ".jsonl"));
    // A candidate's confirmation takes 24 x 40 ms of simulated GPU: three searches asking at once
    // wait for each other's measurements.
    std::vector<std::string> env{"KFORGE_SIMULATE_GPUS=1", "KFORGE_SIMULATE_GPU_MS=40"};

    fs::path alone = dir / "alone";
    CommandResult lone = run_kforge(suite_args({"axpy_f32"}, alone, replies, "1"), env);
    INFO(lone.err);
    REQUIRE(lone.exit_code == 0);
    RunFigures by_itself = run_figures(alone, "axpy_f32");

    fs::path root = dir / "shared";
    CommandResult run = run_kforge(suite_args(tasks, root, replies, "3"), env);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    Json record = Json::parse(run.out).at("run");
    CHECK(record.at("runs_per_gpu") == 3);
    CHECK(record.at("searches_per_gpu") == 0);

    std::map<std::string, RunFigures> runs;
    for (const auto& task : tasks)
        runs[task] = run_figures(root, task);

    // Every run searched for its 5 s: its time less its waits for the measuring lock, as alone.
    double waited = 0;
    for (const auto& [id, f] : runs) {
        INFO(id << ": elapsed " << f.elapsed_s << " s, search " << f.search_s << " s, waited " << f.lock_wait_s
                << " s; alone: search " << by_itself.search_s << " s");
        CHECK(f.stop == "time");
        CHECK(f.search_s == Approx(f.elapsed_s - f.lock_wait_s).margin(0.05));
        // Kept in the archive, so that a resumed problem is given what is left of its own time.
        REQUIRE(f.searched_s);
        CHECK(*f.searched_s == Approx(f.search_s).margin(0.25));
        CHECK(f.search_s >= 5.0);
        CHECK(std::abs(f.search_s - by_itself.search_s) < 2.5);
        waited += f.lock_wait_s;
    }
    CHECK(by_itself.stop == "time");
    CHECK(by_itself.lock_wait_s == Approx(0).margin(0.05));
    CHECK(waited > 0.2); // they did share: some measurement waited for another run's

    // The runs' model calls were in flight at the same time: searches overlapped while replies waited.
    int overlapping = 0;
    for (auto a = runs.begin(); a != runs.end(); ++a)
        for (auto b = std::next(a); b != runs.end(); ++b)
            for (const auto& x : a->second.calls)
                for (const auto& y : b->second.calls)
                    overlapping += x.first < y.second && y.first < x.second ? 1 : 0;
    for (const auto& [id, f] : runs)
        CHECK(f.calls.size() >= 4); // 1 s each, two at a time, for 5 s
    CHECK(overlapping >= 3);

    // No search waited for a turn, and no two measurements overlapped.
    std::string logs;
    for (const auto& task : tasks)
        logs += slurp_file(root / "logs" / (task + ".log"));
    CHECK_THAT(logs, !Catch::Contains("search turn"));
    CHECK_THAT(logs, !Catch::Contains("--gpu-searches"));
    std::string uuid = record.at("gpus").at(0).at("uuid").get<std::string>();
    std::vector<MeasuringHold> holds;
    for (const auto& line : split(slurp_file(root / "gpus" / (uuid + ".measuring")), '\n'))
        if (auto hold = parse_measuring_hold(line))
            holds.push_back(*hold);
    std::set<int64_t> pids;
    for (const auto& hold : holds)
        pids.insert(hold.pid);
    CHECK(pids.size() >= 3);
    std::sort(holds.begin(), holds.end(), [](const auto& a, const auto& b) { return a.begin_s < b.begin_s; });
    for (size_t i = 1; i < holds.size(); ++i) {
        INFO("hold " << i << " of pid " << holds[i].pid << " began before hold " << i - 1 << " ended");
        CHECK(holds[i].begin_s >= holds[i - 1].end_s);
    }
}

TEST_CASE("--per-gpu auto starts with its prior, then sizes the GPU's runs from what they measured",
          "[cli][suite][e2e][slow]")
{
    TempDir dir;
    fs::path replies = dir / "replies";
    fs::create_directories(replies);
    std::vector<std::string> tasks{"axpy_f32", "transpose_f32", "reduce_sum_f32", "scan_u32", "softmax_f32",
                                   "layernorm_f32"};
    for (const auto& task : tasks)
        fs::copy_file(source_dir() / "tests" / "fixtures" / "replay" / "softmax_f32.jsonl", replies / (task + ".jsonl"));
    fs::path root = dir / "suite";
    std::vector<std::string> args = suite_args(tasks, root, replies, "auto");
    CommandResult run = run_kforge(args, {"KFORGE_SIMULATE_GPUS=1", "KFORGE_SIMULATE_GPU_MS=5"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    Json record = Json::parse(run.out).at("run");
    CHECK(record.at("per_gpu") == "auto");
    // Until the first reply, the prior for runs that ask a model; then, replies taking 1 s and a
    // candidate a fraction of a second of GPU, a run keeps the GPU a small share busy, so auto wants
    // more runs than the prior (all six problems at once).
    CHECK_THAT(run.err, Catch::Contains("--per-gpu auto: 16 runs per GPU (16 before the model's first reply)"));
    CHECK_THAT(run.err, Catch::Contains("model 1.0 s/call"));
    CHECK(record.at("runs_per_gpu").get<int>() == 6);
    CHECK(suite_count(*suite_manifest_now(root), ProblemState::finished) == 6);
}
