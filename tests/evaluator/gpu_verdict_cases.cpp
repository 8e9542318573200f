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
