// `kforge suite run PATH... -o SUITE_DIR [--budget N] [--time T] [--max-cost USD] [--model M]...
// [--gpus ...] [--shard I/N]` (the command is src/cli/cmd_suite.cpp): many problems in one command
// (runner.hpp says how).
//
// Everything that can be refused without running anything is refused first, in the order a user
// fixes things: the flags (the caller's merge_settings, which applies optimize's own checks), the
// problem files, the GPUs. Only then is the suite folder created or
// its manifest changed, so a typo or a machine without a GPU leaves nothing behind. A re-run on the
// same folder adds the PATHs it names to the problems already there (none is needed) and replaces
// the settings it names; finished problems are skipped and interrupted ones resumed.
#include "suite/suite.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "evaluator/gpu/devices.hpp"
#include "suite/manifest.hpp"
#include "suite/problems.hpp"
#include "suite/results.hpp"
#include "suite/runner.hpp"
#include "util/error.hpp"
#include "util/host_resources.hpp"
#include "util/log.hpp"
#include "util/mpi_world.hpp"
#include "util/subprocess.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// True for an empty folder, or one holding only what a suite's creation makes (problems/, runs/,
// logs/, the manifest, its lock, an atomic write's temporary): another shard starting the same
// suite at this moment, whose manifest may not be written yet.
bool holds_only_suite_layout(const fs::path& root)
{
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
        std::string name = entry.path().filename().string();
        if (name != "problems" && name != "runs" && name != "logs" && name != "suite.json" &&
            name.rfind("suite.json.", 0) != 0)
            return false;
    }
    return !ec;
}

std::string busy_lines(const Json& record)
{
    std::string text;
    for (const auto& gpu : record.at("gpus"))
        text += fmt::format("{}: busy {:.0f}% while problems remained ({} of {}; runs waited {} for the measuring "
                            "lock); searching {:.0f}%, held by a run {:.0f}%; {} problem{}, up to {} at once\n",
                            gpu.at("label").get<std::string>(), 100 * gpu.at("busy").get<double>(),
                            format_elapsed(gpu.at("busy_s").get<double>()), format_elapsed(gpu.at("window_s").get<double>()),
                            format_elapsed(gpu.at("lock_wait_s").get<double>()), 100 * gpu.at("search").get<double>(),
                            100 * gpu.at("held").get<double>(), gpu.at("problems").get<int64_t>(),
                            gpu.at("problems").get<int64_t>() == 1 ? "" : "s", record.at("runs_per_gpu").get<int64_t>());
    return text;
}

} // namespace

int run_suite(const SuiteRunRequest& o)
{
    SuiteRunConfig config;
    std::tie(config.shard, config.shards) = o.shard.value_or(std::pair<int, int>{0, 1});
    MpiLaunch mpi = detect_mpi_launch();
    if (mpi.detected && !o.shard && mpi.expected_size > 1 && mpi.expected_rank >= 0) {
        config.shard = mpi.expected_rank;
        config.shards = mpi.expected_size;
        log_info("{} started {} ranks: this one runs shard {}/{} (run one rank per host: ranks on one host would share "
                 "its GPUs)",
                 mpi.launcher, mpi.expected_size, config.shard, config.shards);
    }
    config.per_gpu = o.per_gpu;
    config.searches_per_gpu = o.searches_per_gpu;
    fs::path root = fs::absolute(o.output).lexically_normal();
    std::error_code ec;
    bool resuming = fs::exists(root / "suite.json", ec);
    if (!resuming && fs::exists(root, ec) && !fs::is_directory(root, ec))
        fail(ErrorKind::usage, "-o {}: exists and is not a folder", o.output);
    if (!resuming && fs::exists(root, ec) && !holds_only_suite_layout(root))
        fail(ErrorKind::usage, "-o {}: a folder that is not empty and holds no suite (suite.json); choose a new or "
                               "empty folder",
             o.output);

    // What to run: the stored settings and problems, with this invocation's on top.
    SuiteSettings stored;
    if (resuming)
        stored = SuiteFolder(root, false).read()->settings;
    SuiteSettings settings = o.merge_settings(stored);
    std::vector<FoundProblem> found = find_problem_sources(o.paths);
    if (!resuming && found.empty())
        fail(ErrorKind::usage, "no problems: name PyTorch programs (.py), task specs (.json) or folders of them");

    // Where to run it.
    config.kforge = self_executable();
    config.host = host_name();
    config.gpus = select_gpus(list_visible_gpus(config.kforge), parse_gpu_selection(o.gpus), config.host);
    config.retry_failed = o.retry_failed;
    config.progress = o.progress;
    // Imports are what a suite's runs wait for first (10-40 s of CPU each on a 16-core H200 host), and
    // runs sharing a GPU take few cores while their models think.
    config.import_jobs = o.import_jobs.value_or(std::clamp<size_t>(usable_cpus() / 2, 1, 8));
    config.import_time_limit_s = o.import_time_limit_s;

    SuiteFolder folder(root, true);
    size_t added = 0;
    SuiteManifest manifest = folder.update([&](SuiteManifest& m) {
        // Under the manifest's lock: a shard that created the suite meanwhile keeps its settings
        // where this invocation names none.
        m.settings = o.merge_settings(m.settings);
        added = add_new_problems(m, found, root);
    });
    log_info("suite {}: {} problem{} ({} new), {}", root.string(), manifest.problems.size(),
             manifest.problems.size() == 1 ? "" : "s", added,
             settings.models.empty() ? std::string("the builtin proposer") : join(settings.models, ", "));

    SuiteRunner runner(folder, config);
    int code = runner.run();
    // The table covers every problem of the suite (all shards), as `suite report` does.
    std::optional<SuiteManifest> now = folder.read();
    std::vector<ProblemResult> results;
    for (const auto& p : now->problems)
        results.push_back(read_problem_result(folder, p, epoch_now()));
    SuiteSummary summary = summarize_suite(results);
    // A problem of this shard whose archive cannot be read (damaged, removed) has no result to give.
    if (code == k_exit_ok)
        for (size_t i = 0; i < results.size(); ++i)
            if (!results[i].error.empty() && static_cast<int>(i) % config.shards == config.shard)
                code = k_exit_negative;
    Json record = runner.run_record();
    if (o.json)
        fmt::print("{}\n", Json{{"report", suite_report_json(root.string(), results, summary)}, {"run", record}}.dump(2));
    else
        fmt::print("{}{}", render_suite_text(results, summary), busy_lines(record));
    std::fflush(stdout);
    return code;
}

} // namespace kforge
