// The suite's run options (suite_options.hpp): their flags, checks and the request they make.
#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "agents/model_spec.hpp"
#include "cli/cmd_optimize_common.hpp"
#include "cli/option_checks.hpp"
#include "cli/suite_options.hpp"
#include "suite/plan.hpp"
#include "util/error.hpp"
#include "util/limits.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;


// Flags the suite sets on each child itself; --optimize-args may not repeat them.
const std::vector<std::string> k_suite_owned_flags = {"-o", "--output", "--archive", "--gpus", "--budget", "--time",
                                                      "--max-cost", "--max-calls", "-m", "--model", "--progress",
                                                      "--json", "--parallel", "--knowledge", "--no-knowledge",
                                                      "--gpu-share", "--gpu-searches"};

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
                model = "replay:" + file.string() + (fs::is_directory(file, ec) ? "/" : "") + spec.replay_latency.text();
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

} // namespace

SuiteRunRequest suite_run_request(const SuiteRunOptions& o)
{
    SuiteRunRequest request;
    if (!o.shard.empty())
        request.shard = parse_shard(o.shard);
    request.paths = o.paths;
    request.output = o.output;
    request.gpus = o.gpus;
    if (o.per_gpu != "auto") {
        int n = 0;
        auto [end, ec] = std::from_chars(o.per_gpu.data(), o.per_gpu.data() + o.per_gpu.size(), n);
        if (ec != std::errc() || end != o.per_gpu.data() + o.per_gpu.size() || n < 1 || n > k_most_runs_per_gpu)
            fail(ErrorKind::usage, "--per-gpu {}: expected auto or a whole number from 1 to {}", o.per_gpu,
                 k_most_runs_per_gpu);
        request.per_gpu = n;
    }
    request.searches_per_gpu = o.searches_per_gpu;
    request.retry_failed = o.retry_failed;
    request.progress = progress_mode(o.progress);
    request.json = o.json;
    request.import_jobs = o.import_jobs;
    request.import_time_limit_s = o.import_time_limit_s;
    // A copy: the request may outlive the options it was made from.
    request.merge_settings = [o](const SuiteSettings& stored) { return merged_settings(stored, o); };
    return request;
}


void add_suite_run_options(CLI::App* cmd, SuiteRunOptions& o)
{
    // Empty texts are refused here: merged_settings reads an empty one as "not given".
    cmd->add_option("--budget", o.budget, "candidates per problem (default: optimize's 100; with replay:DIR/, the "
                                           "replies + seeds + 1)")
        ->check(non_empty());
    cmd->add_option("--time", o.time, "search time per problem, e.g. 20s, 10m (a resumed problem gets what is left)")
        ->check(non_empty());
    cmd->add_option("--max-cost", o.max_cost, "US dollars of model calls for the whole suite, shared out as problems "
                                               "start")
        ->check(non_empty());
    cmd->add_option("-m,--model", o.models, "as for optimize, for every problem; replay:DIR/ gives each problem "
                                             "DIR/<stem>.jsonl (default: builtin)");
    cmd->add_option("--gpus", o.gpus, "GPUs to use: all (default), N (the first N) or indices 0,2,5")
        ->check(non_empty())
        ->capture_default_str();
    cmd->add_option("--per-gpu", o.per_gpu, "runs at once on one GPU, all searching while their models think: auto "
                                              "(from the model's latency and the GPU time per candidate, bounded by "
                                              "memory) or N; 1 runs each GPU's problems one after another "
                                              "(docs/suite.md)")
        ->check(non_empty())
        ->capture_default_str();
    cmd->add_option("--searches-per-gpu", o.searches_per_gpu, "at most K of a GPU's runs search at once, each in a "
                                                                "turn held to its end (1: one search per GPU, the "
                                                                "others only start up; default: all of them)")
        ->check(whole_number(1, 16));
    cmd->add_option("--shard", o.shard, "run only the problems whose index is I modulo N (I/N, e.g. 0/4)")
        ->check(non_empty());
    cmd->add_flag("--retry-failed", o.retry_failed, "run this shard's failed problems again");
    add_parallel_option(cmd, o.parallel, "model calls in flight per problem (optimize's --parallel)");
    cmd->add_option("--knowledge", o.knowledge, "knowledge base of lessons for every run");
    cmd->add_flag("--no-knowledge", o.no_knowledge, "runs neither read nor write the user-level knowledge base");
    cmd->add_option("--optimize-args", o.optimize_args, "more `kforge optimize` flags for every new run, in one "
                                                         "string, e.g. \"--islands 2 --no-repair\"");
    cmd->add_option("--import-jobs", o.import_jobs, "PyTorch programs imported at once, 1 to 64 (default: cores / 2, "
                                                     "1 to 8)")
        ->check(whole_number(1, 64));
    cmd->add_option("--import-time-limit", o.import_time_limit_s, "seconds one import may take (task import's "
                                                                   "--time-limit)")
        ->check(real_number(0, k_max_import_seconds, true))
        ->capture_default_str();
    cmd->add_option("--progress", o.progress, "auto (a live line on a terminal, [k/N] lines otherwise), live, lines, "
                                               "quiet")
        ->check(CLI::IsMember({"auto", "live", "lines", "quiet"}))
        ->capture_default_str();
    cmd->add_flag("--json", o.json, "print the final report (and this run's GPU use) as JSON");
}

} // namespace kforge
