// The shared body of the [gpu] verdict tests; see gpu_verdict_cases.hpp.
#include "gpu_verdict_cases.hpp"

#include "kf_catch.hpp"

#include "util/text.hpp"

namespace kforge::test {

std::map<uint64_t, Evaluation> evaluate_all(CandidateEvaluator& evaluator, const std::vector<EvalJob>& jobs)
{
    for (const auto& job : jobs)
        evaluator.submit(job);
    std::map<uint64_t, Evaluation> results;
    while (results.size() < jobs.size()) {
        for (auto& r : evaluator.collect(std::chrono::seconds(5)))
            results[r.ticket] = std::move(r.evaluation);
    }
    return results;
}

std::vector<VerdictCase> hack_kernel_cases(const std::string& input, const std::string& output)
{
    return {
        {"good_block_row.cu", VerdictKind::correct, ""},
        {"bad_compile_error.cu", VerdictKind::compile_error, "error"},
        {"bad_illegal_address.cu", VerdictKind::runtime_error, "ILLEGAL_ADDRESS"},
        {"good_block_row.cu", VerdictKind::correct, ""},
        {"bad_infinite_loop.cu", VerdictKind::timeout, "did not finish"},
        {"bad_out_of_bounds.cu", VerdictKind::runtime_error, "past the end of '" + output + "'"},
        {"bad_writes_input.cu", VerdictKind::runtime_error, "modified the input '" + input + "'"},
        {"bad_partial_output.cu", VerdictKind::incorrect, "never written"},
        {"bad_data_race.cu", VerdictKind::incorrect, "output '" + output + "' is wrong"},
        {"bad_device_state_cache.cu", VerdictKind::incorrect, "input set 2"},
        {"bad_device_launch.cu", VerdictKind::compile_error, ""},
        {"bad_tests_only.cu", VerdictKind::incorrect, "after the timed runs"},
        {"bad_held_out_only.cu", VerdictKind::held_out_failed, "held-out", true},
        {"bad_half_precision.cu", VerdictKind::compile_error, "reduced-precision"},
        {"bad_truncated_precision.cu", VerdictKind::incorrect, "output '" + output + "' is wrong"},
        {"bad_all_zeros.cu", VerdictKind::incorrect, "expected"},
        {"bad_only_first_launch.cu", VerdictKind::incorrect, "after the timed runs"},
        {"good_block_row.cu", VerdictKind::correct, "", true},
    };
}

void check_verdicts(const Task& task, const std::filesystem::path& kernel_dir, const std::vector<VerdictCase>& cases,
                    const EvaluatorConfig& config)
{
    auto evaluator = make_gpu_evaluator(task, config);
    std::vector<EvalJob> jobs;
    for (size_t i = 0; i < cases.size(); ++i) {
        EvalJob job;
        job.ticket = i;
        job.source = read_file(kernel_dir / cases[i].file);
        job.options.held_out = cases[i].held_out;
        jobs.push_back(job);
    }
    auto results = evaluate_all(*evaluator, jobs);
    for (size_t i = 0; i < cases.size(); ++i) {
        const Evaluation& e = results.at(i);
        INFO(cases[i].file << " -> " << verdict_name(e.verdict.kind) << ": " << e.verdict.message);
        CHECK(e.verdict.kind == cases[i].expected);
        if (!cases[i].message_contains.empty())
            CHECK(e.verdict.message.find(cases[i].message_contains) != std::string::npos);
        if (cases[i].expected == VerdictKind::correct) {
            REQUIRE(e.fitness.has_value());
            CHECK(*e.fitness > 0);
            CHECK(e.measurements.size() == task.bench.size());
        } else {
            CHECK_FALSE(e.fitness.has_value());
        }
    }
}

} // namespace kforge::test
