// The sample softmax run; see sample_run.hpp.
#include "archive/sample_run.hpp"

#include <cmath>

#include "archive/archive.hpp"
#include "archive/run_task.hpp"
#include "core/source.hpp"
#include "core/task.hpp"
#include "test_support.hpp"

namespace kforge::test {
namespace {

const Task& softmax_task()
{
    static const Task task = load_task(source_dir() / "tasks" / "softmax_f32.json");
    return task;
}

Candidate make_candidate(const std::string& source, std::optional<int64_t> parent, Origin origin,
                         VerdictKind verdict, std::string message)
{
    Candidate c;
    c.source = source;
    c.source_hash = normalized_source_hash(source);
    c.parent_id = parent;
    c.origin = origin;
    c.evaluation.verdict = {verdict, std::move(message)};
    c.evaluation.eval_seconds = 1.5;
    return c;
}

Candidate correct_candidate(const std::string& source, std::optional<int64_t> parent, Origin origin,
                            double speedup, int64_t block)
{
    Candidate c = make_candidate(source, parent, origin, VerdictKind::correct, "");
    c.evaluation.fitness = speedup;
    c.evaluation.best_params = {{"BLOCK", block}};
    c.evaluation.measurements = bench_measurements("candidate", speedup);
    c.evaluation.descriptors = {{"memory", "plain"}, {"compute", "shfl"}};
    c.evaluation.metrics = {{"registers", 32}, {"spills", 0}};
    c.evaluation.compile_info = {
        {"BLOCK=" + std::to_string(block), {{"seconds", 0.4}, {"cache_hit", false}}}};
    return c;
}

LlmCallRecord make_call(const std::string& provider, const std::string& model,
                        const std::string& status, int64_t in, int64_t out, double cost)
{
    LlmCallRecord call;
    call.provider = provider;
    call.model = model;
    call.status = status;
    call.error = status == "ok" ? "" : "HTTP 500: internal server error";
    call.input_tokens = in;
    call.output_tokens = out;
    call.cost_usd = cost;
    call.latency_s = 12.5;
    call.request = {
        {"messages", Json::array({{{"role", "user"}, {"content", "make softmax faster"}}})}};
    call.reply = status == "ok" ? "```cuda\n" + softmax_candidate_source() + "```" : "";
    return call;
}

} // namespace

RunInfo softmax_run_info()
{
    const Task& task = softmax_task();
    RunInfo run;
    run.run_id = "softmax_f32-20261121-220815";
    run.task_name = task.name;
    run.task_spec = task.spec_text;
    run.task_hash = task.spec_hash;
    run.task_files = snapshot_task_files(task);
    run.config = {{"search", {{"islands", 2}, {"budgets", {{"candidates", 200}}}}}}; // RunConfig's shape
    run.device = {
        {"name", "NVIDIA H100 80GB HBM3"}, {"driver_version", "580.65.06"}, {"sm_count", 132}};
    run.toolkit_version = "13.0";
    run.kforge_version = "0.1.0";
    run.seed = 18446744073709551557ull; // above INT64_MAX: must survive the trip through SQLite
    run.started_at = 1763762895.0;
    return run;
}

std::string softmax_candidate_source()
{
    return R"cu(// Row-wise softmax: one block per row, one online (max, sum) pass, then the output pass.
/* kforge:plan
{ "params":   {"BLOCK": [128, 256, 512]},
  "launches": [{"kernel": "softmax_rows", "grid": ["M", 1, 1], "block": ["BLOCK", 1, 1],
                "smem": "BLOCK / 32 * 8", "args": ["x", "y", "M", "N"]}] }
*/
struct MaxSum {
    float max;
    float sum;
    // This pair's sum rescaled to a larger maximum.
    float rescaled(float new_max) const { return max == -INFINITY ? 0.0f : sum * expf(max - new_max); }
};

MaxSum combine(MaxSum a, MaxSum b)
{
    float m = fmaxf(a.max, b.max);
    if (m == -INFINITY)
        return MaxSum{m, 0.0f};
    return MaxSum{m, a.rescaled(m) + b.rescaled(m)};
}

template <int WIDTH>
MaxSum warp_reduce(MaxSum v)
{
    for (int offset = WIDTH / 2; offset > 0; offset /= 2) {
        MaxSum other{__shfl_xor_sync(0xffffffffu, v.max, offset), __shfl_xor_sync(0xffffffffu, v.sum, offset)};
        v = combine(v, other);
    }
    return v;
}

extern "C" __global__ void softmax_rows(const float* x, float* y, int M, int N)
{
    extern __shared__ MaxSum partial[];
    const float* in = x + (int64_t)blockIdx.x * N;
    float* out = y + (int64_t)blockIdx.x * N;
    MaxSum acc{-INFINITY, 0.0f};
    for (int i = threadIdx.x; i < N; i += BLOCK)
        acc = combine(acc, MaxSum{in[i], 1.0f});
    acc = warp_reduce<32>(acc);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0)
        partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < BLOCK / 32 ? partial[lane] : MaxSum{-INFINITY, 0.0f};
        acc = warp_reduce<32>(acc);
        if (lane == 0)
            partial[0] = acc;
    }
    __syncthreads();
    const MaxSum row = partial[0];
    const float inv = 1.0f / row.sum;
    for (int i = threadIdx.x; i < N; i += BLOCK)
        out[i] = expf(in[i] - row.max) * inv;
}
)cu";
}

const std::vector<double>& reference_bench_ns()
{
    static const std::vector<double> times{41000, 198000, 305000};
    return times;
}

const std::vector<std::string>& bench_labels()
{
    static const std::vector<std::string> labels = [] {
        std::vector<std::string> result;
        for (const auto& shape : softmax_task().bench)
            result.push_back(shape.label);
        return result;
    }();
    return labels;
}

std::vector<Measurement> bench_measurements(const std::string& subject, double speedup)
{
    std::vector<Measurement> result;
    for (size_t i = 0; i < bench_labels().size(); ++i) {
        Measurement m;
        m.shape_set = "bench";
        m.shape_label = bench_labels()[i];
        m.subject = subject;
        m.median_ns = reference_bench_ns()[i] / speedup;
        m.q1_ns = m.median_ns * 0.99;
        m.q3_ns = m.median_ns * 1.02;
        m.min_ns = m.median_ns * 0.98;
        m.samples = 40;
        m.discarded = 1;
        m.sm_clock_mhz = 1755;
        m.confirmed = subject == "candidate" && speedup > 2;
        m.roofline_ns = 4 * 8.0 * 1e6 / 3.35;
        result.push_back(m);
    }
    return result;
}

SampleIds build_sample_archive(const std::filesystem::path& path)
{
    Archive archive = Archive::create(path, softmax_run_info());
    SampleIds ids;
    archive.insert_baselines(bench_measurements("reference", 1.0));
    ids.calls.push_back(
        archive.insert_llm_call(make_call("openai", "gpt-5", "ok", 12000, 3000, 0.045)));
    ids.calls.push_back(archive.insert_llm_call(
        make_call("anthropic", "claude-sonnet-4-5", "ok", 9000, 2500, 0.0645)));
    ids.calls.push_back(
        archive.insert_llm_call(make_call("openai", "gpt-5", "http_error", 0, 0, 0)));

    const std::string source = softmax_candidate_source();
    ids.seed = archive.insert_candidate(correct_candidate(source + "#define VARIANT_SEED 1\n",
                                                          std::nullopt, Origin::seed, 1.0, 256));
    Candidate improved = correct_candidate(source, ids.seed, Origin::llm, 2.0, 512);
    improved.llm_call_id = ids.calls[0];
    improved.note = "one online max/sum pass instead of two";
    improved.generation = 1;
    ids.improved = archive.insert_candidate(improved);

    Candidate compile_a =
        make_candidate(source + "foo();\n", ids.improved, Origin::llm, VerdictKind::compile_error,
                       "kernel.cu(61): error: identifier \"foo\" is undefined\n1 error detected");
    compile_a.llm_call_id = ids.calls[1];
    ids.compile_error_a = archive.insert_candidate(compile_a);
    Candidate compile_b = make_candidate(
        source + "foo(1);\n", ids.improved, Origin::repair, VerdictKind::compile_error,
        "kernel.cu(61): error: identifier \"foo\" is undefined\n2 errors detected");
    compile_b.island = 1;
    ids.compile_error_b = archive.insert_candidate(compile_b);
    ids.incorrect = archive.insert_candidate(make_candidate(
        source + "#define VARIANT_WRONG 1\n", ids.improved, Origin::llm, VerdictKind::incorrect,
        "output y at shape M=3,N=1000: first mismatch at index 999: expected 0.0421, got 0.0398 "
        "(rtol 2e-05)"));

    Candidate best = correct_candidate(source + "#define VARIANT_TUNED 1\n", ids.improved,
                                       Origin::tune, k_best_fitness, 128);
    best.inspiration_ids = {ids.seed};
    best.generation = 2;
    ids.best = archive.insert_candidate(best);
    ids.runtime_error = archive.insert_candidate(make_candidate(
        source + "#define VARIANT_FAULT 1\n", ids.best, Origin::llm, VerdictKind::runtime_error,
        "CUDA_ERROR_ILLEGAL_ADDRESS in softmax_rows at shape M=65536,N=1024"));

    archive.set_elite({0, "plain/shfl", ids.improved, 2.0});
    archive.set_elite({0, "plain/shfl", ids.best, k_best_fitness});
    archive.set_elite({1, "plain/shfl", ids.seed, 1.0});
    archive.insert_meta_prompt({0, 0, "Prefer one pass over the row.", 0, 3, 1, true, 0});
    archive.insert_lesson({0,
                           "softmax_f32",
                           "memory",
                           {"online-softmax"},
                           "An online max/sum pass halved the time.",
                           {{"before", ids.seed}, {"after", ids.improved}},
                           ids.improved,
                           0});
    archive.set_search_state("rng", {{"state", "12345678901234567890"}});
    archive.set_run_state("finished");
    return ids;
}

} // namespace kforge::test
