// `kforge suite run` and `kforge suite report`: many problems in one command. Here are their
// options, the checks of the settings a suite stores (optimize's own, since each problem runs as
// `kforge optimize`), and the calls into the suite room (src/suite/suite.hpp), which runs the
// problems (runner.hpp), reads the results (results.hpp) and keeps the suite folder (manifest.hpp).
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "agents/model_spec.hpp"
#include "cli/app.hpp"
#include "cli/cmd_optimize_common.hpp"
#include "cli/option_checks.hpp"
#include "suite/plan.hpp"
#include "suite/suite.hpp"
#include "util/error.hpp"
#include "util/limits.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

struct SuiteRunOptions {
    std::vector<std::string> paths;
    std::string output;
    std::string budget, time, max_cost;
    std::vector<std::string> models;
    std::string optimize_args;
    std::string gpus = "all";
    int per_gpu = k_default_runs_per_gpu;
    std::string shard;
    bool retry_failed = false;
    std::optional<int> parallel;
    std::string knowledge;
    bool no_knowledge = false;
    std::string progress = "auto";
    bool json = false;
    std::optional<size_t> import_jobs;
    double import_time_limit_s = 600;
};

// Flags the suite sets on each child itself; --optimize-args may not repeat them.
const std::vector<std::string> k_suite_owned_flags = {"-o", "--output", "--archive", "--gpus", "--budget", "--time",
                                                      "--max-cost", "--max-calls", "-m", "--model", "--progress",
                                                      "--json", "--parallel", "--knowledge", "--no-knowledge",
                                                      "--gpu-share"};

// "I/N" -> (I, N).
std::pair<int, int> parse_shard(const std::string& text)
{
    auto parts = split(text, '/');
    try {
        if (parts.size() == 2) {
            size_t a = 0, b = 0;
            int index = std::stoi(parts[0], &a), count = std::stoi(parts[1], &b);
            if (a == parts[0].size() && b == parts[1].size() && count >= 1 && index >= 0 && index < count)
                return {index, count};
        }
    } catch (const std::logic_error&) {
    }
    fail(ErrorKind::usage, "--shard '{}': expected I/N with 0 <= I < N, e.g. 0/4", text);
}

// The optimize flags to pass through, checked by optimize's own parser.
std::vector<std::string> checked_optimize_args(const std::string& text)
{
    std::vector<std::string> args;
    for (const auto& word : split(replace_all(replace_all(text, "\t", " "), "\n", " "), ' '))
        if (!word.empty())
            args.push_back(word);
    for (const auto& arg : args) {
        std::string flag = arg.substr(0, arg.find('='));
        if (std::find(k_suite_owned_flags.begin(), k_suite_owned_flags.end(), flag) != k_suite_owned_flags.end())
            fail(ErrorKind::usage, "--optimize-args: {} is set by the suite itself (use suite run's own flag)", flag);
    }
    try {
        check_optimize_flags(args);
    } catch (const Error& e) {
        fail(ErrorKind::usage, "--optimize-args '{}': {}", text, e.what());
    }
    return args;
}

// The flags every new problem's `kforge optimize` gets from `settings` (a resumed problem gets what
// is left of the same budgets), less the per-problem ones (archive, GPU, a replay folder's file).
// The suite's --max-cost stands in for each run's share of it, which is never more.
std::vector<std::string> child_flags(const SuiteSettings& settings)
{
    std::vector<std::string> flags = settings.optimize_args;
    if (settings.budget)
        flags.insert(flags.end(), {"--budget", std::to_string(*settings.budget)});
    if (settings.time)
        flags.insert(flags.end(), {"--time", *settings.time});
    if (settings.max_cost)
        flags.insert(flags.end(), {"--max-cost", fmt::format("{}", *settings.max_cost)});
    if (settings.parallel)
        flags.insert(flags.end(), {"--parallel", std::to_string(*settings.parallel)});
    // The default knowledge base's folder is created when optimize runs, not while checking.
    flags.push_back("--no-knowledge");
    return flags;
}

// The settings this invocation names, over the stored ones.
SuiteSettings merged_settings(SuiteSettings settings, const SuiteRunOptions& o)
{
    // optimize's own parsers, so the suite stores only what its children will take.
    if (!o.budget.empty()) {
        auto budget = static_cast<int64_t>(parse_amount(o.budget, "--budget", 0, Amount::count));
        if (budget < 1)
            fail(ErrorKind::usage, "--budget '{}': expected at least 1 candidate per problem", o.budget);
        settings.budget = budget;
    }
    if (!o.time.empty()) {
        parse_duration(o.time);
        settings.time = o.time;
    }
    if (!o.max_cost.empty()) {
        double cost = parse_amount(o.max_cost, "--max-cost", 0, Amount::dollars);
        if (!(cost > 0))
            fail(ErrorKind::usage, "--max-cost '{}': expected US dollars for the whole suite, above 0", o.max_cost);
        settings.max_cost = cost;
    }
    if (!o.models.empty()) {
        settings.models.clear();
        for (const auto& text : o.models) {
            ModelSpec spec = parse_model_spec(text); // refuses a malformed one now
            std::string model = text;
            if (spec.provider == "replay") {
                std::error_code ec;
                fs::path file = fs::absolute(spec.model).lexically_normal();
                if (!fs::exists(file, ec))
                    fail(ErrorKind::usage, "--model {}: no such file or folder", text);
                if (!file.has_filename())
                    file = file.parent_path(); // "replies/" -> "replies"
                model = "replay:" + file.string() + (fs::is_directory(file, ec) ? "/" : "");
            }
            settings.models.push_back(model);
        }
        bool folder = std::any_of(settings.models.begin(), settings.models.end(), is_replay_folder_model);
        if (folder && settings.models.size() > 1)
            fail(ErrorKind::usage, "--model replay:DIR/ (recorded replies per problem) cannot be mixed with other models");
    }
    if (!o.optimize_args.empty())
        settings.optimize_args = checked_optimize_args(o.optimize_args);
    if (o.parallel)
        settings.parallel = *o.parallel;
    if (o.no_knowledge) {
        settings.no_knowledge = true;
        settings.knowledge.reset();
    } else if (!o.knowledge.empty()) {
        settings.no_knowledge = false;
        settings.knowledge = fs::absolute(o.knowledge).string();
    }
    // Each value given here passed its own check; together with the stored ones they must pass
    // optimize's, or every problem would fail with the same usage error.
    try {
        check_optimize_flags(child_flags(settings));
    } catch (const Error& e) {
        fail(ErrorKind::usage, "the suite's settings (these flags over those in suite.json) would give every problem's "
                               "`kforge optimize` flags it refuses: {}",
             e.what());
    }
    return settings;
}

ProgressMode progress_mode(const std::string& text)
{
    return text == "live" ? ProgressMode::live : text == "lines" ? ProgressMode::lines
                                             : text == "quiet"   ? ProgressMode::quiet
                                                                 : ProgressMode::automatic;
}

// The options as the suite room's request; the shard is read first, as before anything else.
int run_suite_command(const SuiteRunOptions& o)
{
    SuiteRunRequest request;
    if (!o.shard.empty())
        request.shard = parse_shard(o.shard);
    request.paths = o.paths;
    request.output = o.output;
    request.gpus = o.gpus;
    request.per_gpu = o.per_gpu;
    request.retry_failed = o.retry_failed;
    request.progress = progress_mode(o.progress);
    request.json = o.json;
    request.import_jobs = o.import_jobs;
    request.import_time_limit_s = o.import_time_limit_s;
    request.merge_settings = [&o](const SuiteSettings& stored) { return merged_settings(stored, o); };
    return run_suite(request);
}

void add_suite_run_command(CLI::App& suite, CommandSlot& slot)
{
    auto o = std::make_shared<SuiteRunOptions>();
    auto* cmd = suite.add_subcommand("run", "optimize many problems, one run archive each, every GPU on a problem of its "
                                            "own; resumable");
    cmd->footer(
        "PATH: PyTorch programs (.py, imported into SUITE_DIR/problems/), task specs (.json, used in place) or folders "
        "of them (their top level, sorted). SUITE_DIR gets suite.json (the manifest), runs/<id>.kforge, logs/<id>.log.\n"
        "Each problem runs as its own `kforge optimize` (or `kforge resume`) child on one GPU; with more problems than "
        "GPUs each GPU works on problems of its own, up to --per-gpu at once: the next ones start up (processes, torch, "
        "compiles, baselines) while one searches; no two ever measure at once (SUITE_DIR/gpus/ holds each GPU's "
        "measuring lock) and they search one at a time. Run it again on the same SUITE_DIR (PATHs optional) to resume: "
        "finished problems are skipped, interrupted ones resumed.\n"
        "--model replay:DIR/ gives each problem DIR/<stem>.jsonl (the builtin proposer where there is none and the task "
        "has seeds, else the problem is skipped).\n"
        "Clusters: --shard I/N runs the problems whose index in the sorted list is I modulo N; several shards may share "
        "one SUITE_DIR (under mpirun or srun each rank is a shard: one rank per host).\n"
        "Exit codes: 0 every problem finished or skipped, 1 some failed, 2 usage, 3 bad input, 4 runtime failure (no "
        "GPU), 130 interrupted (run it again to resume).");
    cmd->add_option("PATH", o->paths, "problem files or folders (optional when SUITE_DIR holds a suite)");
    cmd->add_option("-o,--output", o->output, "the suite folder (created, or resumed when it holds a suite)")->required();
    // Empty texts are refused here: merged_settings reads an empty one as "not given".
    cmd->add_option("--budget", o->budget, "candidates per problem (default: optimize's 100; with replay:DIR/, the "
                                           "replies + seeds + 1)")
        ->check(non_empty());
    cmd->add_option("--time", o->time, "search time per problem, e.g. 20s, 10m (a resumed problem gets what is left)")
        ->check(non_empty());
    cmd->add_option("--max-cost", o->max_cost, "US dollars of model calls for the whole suite, shared out as problems "
                                               "start")
        ->check(non_empty());
    cmd->add_option("-m,--model", o->models, "as for optimize, for every problem; replay:DIR/ gives each problem "
                                             "DIR/<stem>.jsonl (default: builtin)");
    cmd->add_option("--gpus", o->gpus, "GPUs to use: all (default), N (the first N) or indices 0,2,5")
        ->check(non_empty())
        ->capture_default_str();
    cmd->add_option("--per-gpu", o->per_gpu, "runs at once on one GPU: one searches while the others start up; 1 "
                                              "runs each GPU's problems one after another (docs/suite.md)")
        ->check(whole_number(1, 16))
        ->capture_default_str();
    cmd->add_option("--shard", o->shard, "run only the problems whose index is I modulo N (I/N, e.g. 0/4)")
        ->check(non_empty());
    cmd->add_flag("--retry-failed", o->retry_failed, "run this shard's failed problems again");
    add_parallel_option(cmd, o->parallel, "model calls in flight per problem (optimize's --parallel)");
    cmd->add_option("--knowledge", o->knowledge, "knowledge base of lessons for every run");
    cmd->add_flag("--no-knowledge", o->no_knowledge, "runs neither read nor write the user-level knowledge base");
    cmd->add_option("--optimize-args", o->optimize_args, "more `kforge optimize` flags for every new run, in one "
                                                         "string, e.g. \"--islands 2 --no-repair\"");
    cmd->add_option("--import-jobs", o->import_jobs, "PyTorch programs imported at once, 1 to 64 (default: cores / 4, "
                                                     "1 to 4)")
        ->check(whole_number(1, 64));
    cmd->add_option("--import-time-limit", o->import_time_limit_s, "seconds one import may take (task import's "
                                                                   "--time-limit)")
        ->check(real_number(0, k_max_import_seconds, true))
        ->capture_default_str();
    cmd->add_option("--progress", o->progress, "auto (a live line on a terminal, [k/N] lines otherwise), live, lines, "
                                               "quiet")
        ->check(CLI::IsMember({"auto", "live", "lines", "quiet"}))
        ->capture_default_str();
    cmd->add_flag("--json", o->json, "print the final report (and this run's GPU use) as JSON");
    cmd->callback([o, &slot] { slot = [o] { return run_suite_command(*o); }; });
}

void add_suite_report_command(CLI::App& suite, CommandSlot& slot)
{
    auto o = std::make_shared<SuiteReportOptions>();
    auto* cmd = suite.add_subcommand("report", "one row per problem and the suite's correctness rate, fast_p against "
                                               "torch eager and torch.compile, geometric-mean speedup, dollars, GPU "
                                               "hours (read-only, also while it runs)");
    cmd->footer("Without -o, a table on stdout. fast_p: problems correct and more than p times faster than the "
                "baseline, over the problems that have it; problems without a correct kernel count as not correct.");
    cmd->add_option("SUITE_DIR", o->folder, "the suite folder (what `suite run -o` made)")->required();
    cmd->add_flag("--json", o->json, "the rows and the summary as one JSON document");
    cmd->add_option("-o,--output", o->output, "write a self-contained HTML page, and each problem's report page beside "
                                              "its archive");
    cmd->add_option("--title", o->title, "the page's title (default: \"kforge suite: FOLDER\")");
    cmd->callback([o, &slot] { slot = [o] { return run_suite_report(*o); }; });
}

} // namespace

void add_suite_command(CLI::App& app, CommandSlot& slot)
{
    auto* suite = app.add_subcommand("suite", "many problems in one command: run them over every GPU, resumable, and "
                                              "report the field's metrics (correctness, fast_p)");
    suite->require_subcommand(1);
    add_suite_run_command(*suite, slot);
    add_suite_report_command(*suite, slot);
}

} // namespace kforge
