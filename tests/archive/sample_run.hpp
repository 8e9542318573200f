// A small but complete softmax run, built through the archive API (no GPU): the run record with the
// real task snapshot, baselines, LLM calls, candidates of several verdicts with measurements,
// elites, a meta-prompt, a lesson and search state. Archive, inspect and export tests share it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/candidate.hpp"
#include "core/records.hpp"

namespace kforge::test {

// The run record of tasks/softmax_f32.json: spec text, hash and reference snapshot as optimize
// would store them.
RunInfo softmax_run_info();

// A correct-looking softmax kernel written the way an LLM writes for NVRTC: a plan with a BLOCK
// param, helper functions, a template and a member function without __device__, fixed-width ints.
std::string softmax_candidate_source();

// Bench measurements of `subject` whose medians are `reference_ns[i] / speedup`.
std::vector<Measurement> bench_measurements(const std::string& subject, double speedup);
// The reference's bench medians, in the order of the task's bench shapes.
const std::vector<double>& reference_bench_ns();
const std::vector<std::string>& bench_labels();

// The ids of what build_sample_archive() stored.
struct SampleIds
{
    int64_t seed = 0;            // correct, fitness 1.0
    int64_t improved = 0;        // correct, fitness 2.0, child of seed
    int64_t best = 0;            // correct, fitness 2.5, child of improved (the run's best)
    int64_t compile_error_a = 0; // two compile errors sharing a first line
    int64_t compile_error_b = 0;
    int64_t incorrect = 0;
    int64_t runtime_error = 0;
    std::vector<int64_t> calls; // openai ok, anthropic ok, openai http_error
};

inline constexpr double k_best_fitness = 2.5;

// Creates `path` and fills it; the archive is closed on return.
SampleIds build_sample_archive(const std::filesystem::path& path);

} // namespace kforge::test
