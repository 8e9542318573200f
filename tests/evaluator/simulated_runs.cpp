// Simulated multi-GPU runs of the real binary; see simulated_runs.hpp.
#include "evaluator/simulated_runs.hpp"

#include <chrono>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "evaluator/describe.hpp"
#include "kf_catch.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

// Lives as long as the test process: the CUBIN cache and the reference archive.
const TempDir& process_dir()
{
    static TempDir dir;
    return dir;
}

// A /proc file, or "" when its process is gone.
std::string read_proc_file(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

} // namespace

std::vector<std::string> replayed_softmax_args(const std::filesystem::path& archive, int budget)
{
    return {"optimize",
            (source_dir() / "tasks" / "softmax_f32.json").string(),
            "-o",
            archive.string(),
            "--model",
            "replay:" + (fixtures_dir() / "replay" / "softmax_f32.jsonl").string(),
            "--seed",
            "11",
            "--islands",
            "2",
            "--budget",
            std::to_string(budget),
            "--parallel",
            "1",
            "--window", // the same on any number of GPUs: see SearchConfig::window
            "6",
            "--no-knowledge",
            "--progress",
            "lines"};
}

std::vector<std::string> simulated_env(const std::string& gpus, int gpu_ms)
{
    return {"KFORGE_SIMULATE_GPUS=" + gpus,
            fmt::format("KFORGE_SIMULATE_GPU_MS={}", gpu_ms),
            "XDG_CACHE_HOME=" + (process_dir() / "cache").string(),
            "XDG_DATA_HOME=" + (process_dir() / "data").string(),
            "OPENAI_API_KEY=",
            "ANTHROPIC_API_KEY="};
}

std::vector<std::string> with_debug_log(const std::vector<std::string>& kforge_args)
{
    std::vector<std::string> args{"--log-level", "debug"};
    args.insert(args.end(), kforge_args.begin(), kforge_args.end());
    return args;
}

namespace {

// What each proposal's choices were drawn from, as a debug log says it.
std::string choice_trace(const std::string& debug_log)
{
    std::string trace;
    for (const auto& line : split(debug_log, '\n'))
        if (line.find("debug: schedule item ") != std::string::npos)
            trace += line + "\n";
    return trace;
}

struct ReferenceRun {
    std::filesystem::path archive;
    std::string choices;
};

const ReferenceRun& reference_run()
{
    static const ReferenceRun run = [] {
        auto archive = process_dir() / "one-gpu.kforge";
        CommandResult result = run_kforge(with_debug_log(replayed_softmax_args(archive)), simulated_env("1"));
        INFO(result.out << result.err);
        REQUIRE(result.exit_code == 0);
        return ReferenceRun{archive, choice_trace(result.err)};
    }();
    return run;
}

} // namespace

const std::filesystem::path& one_gpu_reference_archive()
{
    return reference_run().archive;
}

const std::string& one_gpu_reference_choices()
{
    return reference_run().choices;
}

std::vector<std::string> recorded_candidates(const std::filesystem::path& path)
{
    Archive archive = Archive::open(path, OpenMode::read_only);
    std::vector<std::string> rows;
    for (int64_t id = 1; id <= archive.candidate_count(); ++id) {
        auto c = archive.candidate(id);
        REQUIRE(c);
        const Evaluation& e = c->evaluation;
        rows.push_back(fmt::format("#{} {} {} island {} gen {} parent {} {} fitness {} cell {}", id, c->source_hash,
                                   origin_name(c->origin), c->island, c->generation,
                                   c->parent_id ? std::to_string(*c->parent_id) : "-", verdict_name(e.verdict.kind),
                                   e.fitness ? fmt::format("{:.17g}", *e.fitness) : "-",
                                   e.descriptors.empty() ? "-" : descriptor_cell(e.descriptors)));
    }
    return rows;
}

std::vector<int> child_processes(int parent, const std::string& word, const std::string& kind)
{
    std::vector<int> pids;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::string stat = read_proc_file(entry.path() / "stat");
        auto close = stat.rfind(')');
        if (close == std::string::npos)
            continue;
        auto fields = split(stat.substr(close + 2), ' '); // state, ppid, ...
        if (fields.size() < 2 || fields[1] != std::to_string(parent))
            continue;
        std::string cmdline = read_proc_file(entry.path() / "cmdline");
        auto args = split(cmdline, '\0');
        if (std::find(args.begin(), args.end(), word) != args.end() &&
            std::find(args.begin(), args.end(), kind) != args.end())
            pids.push_back(std::stoi(name));
    }
    return pids;
}

bool wait_for_stderr(const RunningProgram& program, const std::string& text, int seconds)
{
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < until) {
        if (program.stderr_so_far().find(text) != std::string::npos)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

} // namespace kforge::test
