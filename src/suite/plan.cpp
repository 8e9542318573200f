// The next session of one problem; see plan.hpp. Everything here is decided from files (the
// spec, the archive, the reply file), so the same suite folder gives the same plan on any host.
#include "suite/plan.hpp"

#include <algorithm>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "agents/model_spec.hpp"
#include "archive/archive.hpp"
#include "core/task.hpp"
#include "core/task/memory.hpp"
#include "search/budget.hpp"
#include "search/loop_state.hpp"
#include "search/run_config.hpp"
#include "suite/problems.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// How much of its budgets a resumed run has used.
struct RunUse {
    int64_t candidates = 0;
    bool pending = false;   // work scheduled and not recorded (resume starts it again)
    int64_t calls = 0;
    double search_s = 0;    // what --time counted over its sessions (LoopState::searched_s; in older
                            // archives the longest GPU wall time, lock waits included)
};

std::vector<std::string> reply_lines(const fs::path& file)
{
    std::vector<std::string> lines;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
        if (!trim(line).empty())
            lines.push_back(line);
    return lines;
}

// The recorded replies of `file` that the archive does not hold yet, in file order (a reply the
// archive holds k times accounts for its first k copies in the file).
std::vector<std::string> unserved_replies(const fs::path& file, const Archive& archive)
{
    std::map<std::string, int> served;
    archive.for_each_llm_call(CallText::include, [&](const LlmCallRecord& call) {
        if (call.provider == "replay")
            ++served[call.reply];
    });
    std::vector<std::string> rest;
    for (const auto& line : reply_lines(file)) {
        Json record = Json::parse(line, nullptr, false);
        std::string reply = record.is_object() && record.contains("reply") && record["reply"].is_string()
                                ? record["reply"].get<std::string>()
                                : std::string();
        auto it = served.find(reply);
        if (it != served.end() && it->second > 0)
            --it->second;
        else
            rest.push_back(line);
    }
    return rest;
}

void remove_archive_files(const fs::path& archive)
{
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) {
        fs::path file = archive;
        file += suffix;
        fs::remove(file, ec);
    }
}

// What proposes the problem's kernels: fills models (the --model arguments), label, priced and the
// replay file; sets skip reasons.
struct ModelChoice {
    std::vector<std::string> models;
    std::string label;
    bool priced = false;
    fs::path replay_file;            // per-problem replies (empty otherwise)
    std::string latency;             // their ?latency= (model_spec.hpp), "" for none
    std::string skip;                // why nothing can run it
};

ModelChoice choose_models(const SuiteProblem& problem, const Task& task, const SuiteSettings& settings)
{
    ModelChoice choice;
    auto builtin_or_skip = [&](const std::string& why_no_model) {
        if (task.seeds.empty()) {
            choice.skip = fmt::format("{}, and task '{}' has no seed kernels for the builtin proposer", why_no_model,
                                      task.name);
        } else {
            choice.models = {"builtin"};
            choice.label = "builtin";
        }
    };
    bool builtin = settings.models.empty() ||
                   std::all_of(settings.models.begin(), settings.models.end(),
                               [](const std::string& m) { return parse_model_spec(m).is_builtin(); });
    if (builtin) {
        builtin_or_skip("no --model names a language model");
        return choice;
    }
    if (settings.models.size() == 1 && is_replay_folder_model(settings.models[0])) {
        ModelSpec folder = parse_model_spec(settings.models[0]);
        fs::path file = fs::path(folder.model) / (source_stem(problem) + ".jsonl");
        std::error_code ec;
        if (fs::is_regular_file(file, ec)) {
            choice.replay_file = file;
            choice.latency = folder.replay_latency.text();
            choice.models = {"replay:" + file.string() + choice.latency};
            choice.label = choice.models[0];
        } else {
            builtin_or_skip(fmt::format("no recorded replies {}", file.string()));
        }
        return choice;
    }
    choice.models = settings.models;
    choice.label = join(settings.models, ", ");
    for (const auto& text : settings.models) {
        ModelSpec spec = parse_model_spec(text);
        choice.priced = choice.priced || (!spec.is_builtin() && spec.provider != "replay");
    }
    return choice;
}

void add_common_flags(std::vector<std::string>& args, const SuiteSettings& settings, const ModelChoice& models,
                      std::optional<int64_t> budget, const std::optional<std::string>& time, std::optional<int64_t> max_calls)
{
    args.insert(args.end(), {"--progress", "lines", "--json"});
    for (const auto& model : models.models)
        args.insert(args.end(), {"--model", model});
    if (budget)
        args.insert(args.end(), {"--budget", std::to_string(*budget)});
    if (time)
        args.insert(args.end(), {"--time", *time});
    if (max_calls)
        args.insert(args.end(), {"--max-calls", std::to_string(*max_calls)});
    if (settings.parallel)
        args.insert(args.end(), {"--parallel", std::to_string(*settings.parallel)});
    if (settings.no_knowledge)
        args.push_back("--no-knowledge");
    else if (settings.knowledge)
        args.insert(args.end(), {"--knowledge", *settings.knowledge});
}

ProblemLaunch finished(std::string reason)
{
    ProblemLaunch launch;
    launch.outcome = ProblemLaunch::Outcome::finished;
    launch.reason = std::move(reason);
    return launch;
}

} // namespace

bool is_replay_folder_model(const std::string& text)
{
    ModelSpec spec;
    try {
        spec = parse_model_spec(text);
    } catch (const Error&) {
        return false;
    }
    std::error_code ec;
    return spec.provider == "replay" && fs::is_directory(spec.model, ec);
}

ProblemLaunch plan_launch(const SuiteFolder& folder, const SuiteProblem& problem, const SuiteSettings& settings)
{
    ProblemLaunch launch;
    Task task;
    try {
        task = load_task(folder.resolve(problem.spec));
    } catch (const Error& e) {
        launch.outcome = ProblemLaunch::Outcome::failed;
        launch.reason = e.what();
        return launch;
    }
    launch.torch_program = task.is_torch();
    for (const auto& shape : task_memory(task))
        launch.task_bytes = std::max(launch.task_bytes, shape.bytes);
    ModelChoice models = choose_models(problem, task, settings);
    if (!models.skip.empty()) {
        launch.outcome = ProblemLaunch::Outcome::skipped;
        launch.reason = models.skip;
        return launch;
    }
    launch.model_label = models.label;
    launch.priced = models.priced;

    std::optional<int64_t> budget = settings.budget;
    std::optional<int64_t> max_calls;
    if (!models.replay_file.empty()) {
        max_calls = static_cast<int64_t>(reply_lines(models.replay_file).size());
        if (!budget)
            budget = *max_calls + static_cast<int64_t>(task.seeds.size()) + 1;
    }
    std::optional<double> seconds;
    if (settings.time)
        seconds = parse_duration(*settings.time);

    fs::path archive_path = folder.resolve(problem.archive);
    std::error_code ec;
    // An empty file is what a child killed inside the archive's creation left before creation
    // became atomic (an older kforge): nothing was recorded, so the problem starts afresh.
    if (fs::exists(archive_path, ec) && fs::is_regular_file(archive_path, ec) && fs::file_size(archive_path, ec) == 0)
        remove_archive_files(archive_path);
    if (fs::exists(archive_path, ec)) {
        RunUse used;
        std::string state;
        std::string stopped = "its run had finished"; // what stopped a finished run, when it says
        bool started = true;
        std::vector<std::string> rest;
        try {
            Archive archive = Archive::open(archive_path, OpenMode::read_only);
            archive.atomically([&] {
                RunInfo run = archive.run_info();
                state = run.state;
                auto saved = archive.search_state(k_loop_state_key);
                started = saved.has_value() || archive.candidate_count() > 0;
                if (saved) {
                    RunConfig config = RunConfig::from_json(run.config, archive_path.string() + ": run config");
                    LoopState loop = LoopState::from_json(*saved, config.search.islands, archive_path.string());
                    used.candidates = loop.recorded_candidates;
                    if (loop.stop != StopReason::none)
                        stopped = describe_stop(loop.stop, config.search.budgets);
                    used.pending = !loop.pending.empty();
                    used.search_s = loop.searched_s.value_or(-1);
                }
                used.calls = archive.llm_usage_total().calls;
                if (used.search_s < 0 || !saved)
                    for (const auto& gpu : archive.gpu_totals())
                        used.search_s = std::max(used.search_s, gpu.usage.wall_s);
                used.search_s = std::max(0.0, used.search_s);
                if (!models.replay_file.empty())
                    rest = unserved_replies(models.replay_file, archive);
            });
        } catch (const Error& e) {
            launch.outcome = ProblemLaunch::Outcome::failed;
            launch.reason = e.what();
            return launch;
        }
        if (!started) {
            remove_archive_files(archive_path); // killed before its search began: nothing to keep
        } else {
            if (state == "finished")
                return finished(stopped); // killed after its run ended, before the suite heard of it
            if (budget && used.candidates >= *budget && !used.pending)
                return finished(fmt::format("its budget of {} candidates is used", *budget));
            if (max_calls && used.calls >= *max_calls)
                return finished(fmt::format("its {} recorded replies are used", *max_calls));
            if (seconds && *seconds - used.search_s < 1)
                return finished(fmt::format("its time of {} is used", *settings.time));
            if (!models.replay_file.empty()) {
                if (rest.empty())
                    return finished("its recorded replies are used");
                fs::path trimmed = folder.root() / "runs" / (problem.id + ".replay.jsonl");
                write_file_atomic(trimmed, join(rest, "\n") + "\n");
                models.models = {"replay:" + trimmed.string() + models.latency};
            }
            launch.command = "resume";
            launch.args = {"resume", archive_path.string()};
            // What is left is at least a second (above), so one decimal never rounds it to 0.
            add_common_flags(launch.args, settings, models, budget,
                             seconds ? std::optional<std::string>(fmt::format("{:.1f}s", *seconds - used.search_s))
                                     : std::nullopt,
                             max_calls);
            return launch;
        }
    }
    launch.command = "optimize";
    launch.args = {"optimize", folder.resolve(problem.spec).string(), "-o", archive_path.string()};
    // The time as written, which merged_settings checked with optimize's own checks.
    add_common_flags(launch.args, settings, models, budget, settings.time, max_calls);
    launch.args.insert(launch.args.end(), settings.optimize_args.begin(), settings.optimize_args.end());
    return launch;
}

std::vector<std::string> launch_arguments(const ProblemLaunch& launch, int gpu, std::optional<double> cost_cap)
{
    std::vector<std::string> args = launch.args;
    args.insert(args.end(), {"--gpus", fmt::format("{},", gpu)});
    if (launch.priced && cost_cap)
        args.insert(args.end(), {"--max-cost", fmt::format("{:.6f}", *cost_cap)});
    return args;
}

} // namespace kforge
