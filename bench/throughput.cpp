// `kforge_bench throughput`: how many candidates kforge evaluates per minute on one GPU.
//
// Distinct candidates (the task's seed kernels, each at one param point and with a unique comment,
// so nothing comes from the CUBIN cache) go through the whole evaluator: screen, NVRTC compile in
// the worker pool, verification on every test shape (three runs each), quick timing on every bench
// shape with the output re-checks. Reported: evaluations per minute, and the split by stage.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "bench/bench.hpp"
#include "evaluator/evaluator.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge::bench {

Json run_throughput(const BenchOptions& options, const std::string& name, int candidates)
{
    Task task = load_bundled_task(options, name);
    if (task.seeds.empty())
        fail_input("task {} has no seed kernels to evaluate", name);
    EvaluatorConfig config;
    config.worker_executable = options.kforge;
    config.cache_dir = options.cache_dir;
    config.run_secret = 0x7468726f;
    config.reuse_measurements = false; // every candidate is one seed with a comment added: measure each, as distinct kernels would be
    auto setup_start = std::chrono::steady_clock::now();
    auto evaluator = make_gpu_evaluator(task, config);
    double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();

    std::vector<std::pair<const KernelFile*, ParamPoint>> pool;
    for (const auto& seed : task.seeds)
        for (const auto& point : enumerate_param_points(seed.plan, 1000))
            pool.emplace_back(&seed, point);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < candidates; ++i) {
        const auto& [seed, point] = pool[static_cast<size_t>(i) % pool.size()];
        EvalJob job;
        job.ticket = static_cast<uint64_t>(i);
        job.source = seed->source + fmt::format("\n// throughput candidate {}\n", i);
        job.options.only_params = point;
        evaluator->submit(job);
    }
    int done = 0, correct = 0;
    Json verdicts = Json::object();
    double compile_s = 0, eval_s = 0;
    while (done < candidates) {
        for (auto& result : evaluator->collect(std::chrono::seconds(5))) {
            ++done;
            correct += result.evaluation.verdict.is_correct();
            std::string kind(verdict_name(result.evaluation.verdict.kind));
            if (!verdicts.contains(kind))
                verdicts[kind] = Json{{"count", 0}, {"example", first_line_of(result.evaluation.verdict.message)}};
            verdicts[kind]["count"] = verdicts[kind]["count"].get<int>() + 1;
            for (const auto& v : result.evaluation.compile_info.value("variants", Json::array()))
                compile_s += v.value("seconds", 0.0);
            eval_s += result.evaluation.eval_seconds;
        }
    }
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Json environment = evaluator->environment();
    double busy = evaluator->gpu_busy_fraction();
    return Json{{"task", name},
                {"device", environment.value("device", Json::object()).value("name", "unknown GPU")},
                {"bench_shapes", task.bench.size()},
                {"test_shapes", task.tests.size()},
                {"candidates", candidates},
                {"correct", correct},
                {"verdicts", verdicts},
                {"wall_seconds", wall},
                {"per_minute", candidates / wall * 60},
                {"setup_seconds", setup_s},
                {"compile_seconds_total", compile_s},
                {"compile_seconds_mean", compile_s / candidates},
                {"compile_workers", environment.value("compile_workers", 0)},
                {"gpu_busy_fraction", busy},
                {"gpu_seconds_per_candidate", busy * (wall + setup_s) / candidates},
                {"latency_seconds_mean", eval_s / candidates}};
}

std::string throughput_markdown(const Json& t)
{
    std::string verdicts;
    const Json& counts = t.at("verdicts");
    for (const auto& [kind, entry] : counts.items())
        verdicts += fmt::format("- {}: {}{}\n", kind, entry.at("count").get<int>(),
                                kind == "correct" ? "" : fmt::format(" (e.g. {})", entry.at("example").get<std::string>()));
    return verdicts + "\n" + fmt::format(
        "| task | candidates | correct | wall | evaluations / min | compile (mean, {} workers) | GPU busy | GPU s / candidate | "
        "setup |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n| {} ({} test + {} bench shapes) | {} | {} | {:.1f} s | "
        "**{:.0f}** | {:.0f} ms | {:.0f}% | {:.2f} s | {:.1f} s |\n",
        t.at("compile_workers").get<int>(), t.at("task").get<std::string>(), t.at("test_shapes").get<int>(),
        t.at("bench_shapes").get<int>(), t.at("candidates").get<int>(), t.at("correct").get<int>(),
        t.at("wall_seconds").get<double>(), t.at("per_minute").get<double>(), 1e3 * t.at("compile_seconds_mean").get<double>(),
        100 * t.at("gpu_busy_fraction").get<double>(), t.at("gpu_seconds_per_candidate").get<double>(),
        t.at("setup_seconds").get<double>());
}

} // namespace kforge::bench
