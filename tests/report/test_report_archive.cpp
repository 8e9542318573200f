// The synthetic search of the report tests; see test_report_archive.hpp.
//
// Fitness follows a bounded random walk from parent to child (a child is 0.8 to 1.22 times its
// parent, squashed below 6x), parents are drawn from all correct candidates, and descriptor cells
// favour the simpler strategies, so the grids fill unevenly the way a real search's do. Everything
// is written in one transaction, which keeps 10,000 candidates to a second or two.
#include "report/test_report_archive.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "core/source.hpp"
#include "evaluator/describe.hpp"
#include "util/rng.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

std::string synthetic_source(int index)
{
    return fmt::format(R"cu(// variant {}: one block per row
extern "C" __global__ void softmax_rows(const float* x, float* y, int M, int N)
{{
    const int row = blockIdx.x;
    if (row < M && N > 0) {{
        float m = -INFINITY;
        for (int i = threadIdx.x; i < N; i += blockDim.x)
            m = fmaxf(m, x[(int64_t)row * N + i]);
        y[(int64_t)row * N + threadIdx.x] = m > 0.0f ? 1.0f : 0.0f;
    }}
}}
)cu",
                       index);
}

// A bin index in [0, 4), the low bins more likely when `skewed`.
int draw_bin(Rng& rng, bool skewed)
{
    int a = static_cast<int>(rng.below(4));
    return skewed ? std::min(a, static_cast<int>(rng.below(4))) : a;
}

Json draw_descriptors(Rng& rng)
{
    const auto& axes = descriptor_axes();
    Json descriptors = Json::object();
    for (size_t axis = 0; axis < axes.size(); ++axis)
        descriptors[axes[axis].first] = axes[axis].second[draw_bin(rng, axis < 2)];
    return descriptors;
}

struct Failure
{
    VerdictKind kind;
    const char* message;
};

const std::vector<Failure>& failures()
{
    static const std::vector<Failure> list{
        {VerdictKind::compile_error,
         "kernel.cu(12): error: no operator \"<\" matches these operands & types\n1 error"},
        {VerdictKind::compile_error, "kernel.cu(40): error: identifier \"warp_sum\" is undefined"},
        {VerdictKind::incorrect,
         "output y at shape M=3,N=1000: first mismatch at index 999: expected 0.0421, got 0.0398"},
        {VerdictKind::runtime_error, "CUDA_ERROR_ILLEGAL_ADDRESS in softmax_rows at shape M=65536,N=1024"},
        {VerdictKind::timeout, "a timed run did not finish within 2.0 s on shape M=8192,N=16384"},
        {VerdictKind::plan_error, "plan: launch 0: block 2048 exceeds the device's 1024 threads"},
        {VerdictKind::no_code, "the reply holds no ```cuda block"},
    };
    return list;
}

LlmCallRecord synthetic_call(Rng& rng, int index, double started_at)
{
    LlmCallRecord call;
    bool openai = index % 3 != 0;
    call.provider = openai ? "openai" : "anthropic";
    call.model = openai ? "gpt-5" : "claude-sonnet-4-5";
    call.input_tokens = 8000 + static_cast<int64_t>(rng.below(4000));
    call.output_tokens = 1500 + static_cast<int64_t>(rng.below(1500));
    call.cost_usd = static_cast<double>(call.input_tokens) * 1.25e-6 +
                    static_cast<double>(call.output_tokens) * 10e-6;
    call.latency_s = 20 + 10 * rng.uniform();
    call.request = {{"messages", Json::array({{{"role", "user"}, {"content", "faster, please"}}})}};
    call.started_at = started_at;
    if (index % 97 == 5) {
        call.status = "http_error";
        call.error = "HTTP 429: rate limited";
    }
    return call;
}

} // namespace

double synthetic_roofline_ns(size_t shape)
{
    return reference_bench_ns()[shape] / 8;
}

size_t count_occurrences(const std::string& text, const std::string& needle)
{
    size_t count = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
        ++count;
    return count;
}

void keep_for_review(const std::filesystem::path& file)
{
    const char* folder = std::getenv("KFORGE_REPORT_SCREENSHOTS");
    if (!folder || !*folder)
        return;
    std::filesystem::create_directories(folder);
    std::filesystem::copy_file(file, std::filesystem::path(folder) / file.filename(),
                               std::filesystem::copy_options::overwrite_existing);
}

ExpectedPage expected_page(const std::filesystem::path& path)
{
    Archive archive = Archive::open(path, OpenMode::read_only);
    ExpectedPage page;
    RunInfo run = archive.run_info();
    page.title = fmt::format("kforge report: {} ({})", run.task_name, run.run_id);
    std::optional<Candidate> best = archive.best_candidate();
    page.best_speedup = best ? fmt::format("{:.2f}x", *best->evaluation.fitness) : "none";
    const auto& axes = descriptor_axes();
    for (const Elite& elite : archive.elites()) {
        page.islands = std::max(page.islands, static_cast<size_t>(elite.island) + 1);
        std::vector<std::string> bins = split(elite.cell, '/');
        bool on_grid = bins.size() == axes.size();
        for (size_t axis = 0; on_grid && axis < axes.size(); ++axis)
            on_grid = std::count(axes[axis].second.begin(), axes[axis].second.end(), bins[axis]) == 1;
        page.grid_elites += on_grid;
    }
    return page;
}

SyntheticRun build_synthetic_run(const std::filesystem::path& path, const SyntheticRunSpec& spec)
{
    RunInfo info = softmax_run_info();
    info.run_id = fmt::format("softmax_f32-synthetic-{}", spec.candidates);
    // The shape `kforge optimize` stores (RunConfig: the search settings under "search").
    info.config = {{"search", {{"islands", spec.islands}, {"budgets", {{"candidates", spec.candidates}}}}}};
    // Candidates arrive every 1 to 5 s, and the run ends about now (its last write is the real
    // time of the final state change).
    info.started_at = static_cast<double>(std::time(nullptr)) - 3.0 * spec.candidates;
    Archive archive = Archive::create(path, info);
    Rng rng(spec.seed);
    SyntheticRun result;
    std::map<std::pair<int, std::string>, double> cells; // current elites' fitness
    archive.atomically([&] {
        archive.insert_baselines(bench_measurements("reference", 1.0));
        archive.insert_baselines(bench_measurements(k_vendor_subject, k_vendor_speedup));
        std::vector<std::pair<int64_t, double>> correct; // (id, fitness), parents to draw from
        double clock = info.started_at;
        for (int i = 0; i < spec.candidates; ++i) {
            clock += 1 + 4 * rng.uniform();
            Candidate c;
            c.island = i % spec.islands;
            c.generation = i / (10 * spec.islands);
            bool seed = i < spec.islands || correct.empty();
            c.origin = seed ? Origin::seed : rng.below(5) == 0 ? Origin::tune : Origin::llm;
            double parent_fitness = 1.0;
            if (!seed) {
                const auto& parent = correct[rng.below(correct.size())];
                c.parent_id = parent.first;
                parent_fitness = parent.second;
            }
            if (spec.spending == Spending::llm && c.origin == Origin::llm) {
                LlmCallRecord call = synthetic_call(rng, i, clock - 25);
                c.llm_call_id = archive.insert_llm_call(call);
                ++result.calls;
                result.dollars += call.cost_usd;
            }
            c.source = synthetic_source(i);
            c.source_hash = normalized_source_hash(c.source);
            c.note = fmt::format("variant {}: <vector> loads & fewer syncs", i);
            c.created_at = clock;
            c.evaluation.eval_seconds = 1.2;
            if (seed || rng.uniform() < 0.55) {
                double fitness = seed ? 1.0 : parent_fitness * (0.8 + 0.42 * rng.uniform());
                fitness = 6 * std::tanh(fitness / 6);
                c.evaluation.verdict = {VerdictKind::correct, ""};
                c.evaluation.fitness = fitness;
                c.evaluation.best_params = {{"BLOCK", int64_t{128} << rng.below(3)}};
                c.evaluation.measurements = bench_measurements("candidate", fitness);
                for (size_t shape = 0; shape < c.evaluation.measurements.size(); ++shape)
                    c.evaluation.measurements[shape].roofline_ns = synthetic_roofline_ns(shape);
                c.evaluation.descriptors = draw_descriptors(rng);
                c.evaluation.metrics = {{"registers", 32}, {"spills", 0}};
            } else {
                const Failure& failure = failures()[rng.below(failures().size())];
                c.evaluation.verdict = {failure.kind, failure.message};
            }
            int64_t id = archive.insert_candidate(c);
            if (!c.evaluation.fitness)
                continue;
            double fitness = *c.evaluation.fitness;
            correct.push_back({id, fitness});
            ++result.correct;
            if (fitness > result.best_fitness) {
                result.best_fitness = fitness;
                result.best_id = id;
                result.best_source = c.source;
            }
            std::pair<int, std::string> key{c.island, descriptor_cell(c.evaluation.descriptors)};
            auto it = cells.find(key);
            if (it == cells.end() || fitness > it->second) {
                archive.set_elite({c.island, key.second, id, fitness});
                cells[key] = fitness;
            }
        }
        archive.set_run_state("finished");
    });
    result.elites = static_cast<int64_t>(cells.size());
    return result;
}

} // namespace kforge::test
