// The GPU half of `kforge task check`: the task's reference must pass as a candidate and every
// built-in bad candidate (evaluator/self_test.hpp) must fail, or the spec's checks cannot tell
// wrong from right.
#include "task/selftest.hpp"

#include <map>

#include <fmt/format.h>

#include "evaluator/evaluator.hpp"
#include "evaluator/self_test.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {

SelfTestOutcome run_gpu_self_tests(const Task& task)
{
    SelfTestOutcome outcome;
    EvaluatorConfig config;
    config.cache_dir = cache_dir() / "cubin";
    config.run_secret = 0x73656c66;
    config.launch_deadline = std::chrono::milliseconds(10000);
    // torch.compile takes minutes and proves nothing about the checks.
    config.time_vendor_baselines = !task.is_torch();
    std::unique_ptr<CandidateEvaluator> evaluator;
    try {
        evaluator = make_gpu_evaluator(task, config);
    } catch (const Error& e) {
        outcome.skipped_reason = e.what();
        return outcome;
    }
    outcome.ran = true;
    std::vector<SelfTestCandidate> candidates = make_self_tests(task);
    for (size_t i = 0; i < candidates.size(); ++i) {
        EvalJob job;
        job.ticket = i;
        job.source = candidates[i].source;
        job.options.task_code = true;
        job.options.held_out = candidates[i].must_pass;
        evaluator->submit(job);
    }
    std::map<uint64_t, Evaluation> results;
    while (results.size() < candidates.size())
        for (auto& r : evaluator->collect(std::chrono::seconds(5)))
            results[r.ticket] = std::move(r.evaluation);

    TextTable table({{"self-test"}, {"must"}, {"verdict"}, {"result"}, {"message"}});
    outcome.passed = true;
    if (task.is_torch()) {
        // The program, in its own dtypes, must pass its own task's check on every shape: else the
        // tolerance is too tight for the very program it came from.
        std::string problem = evaluator->check_program({"tests", "held_out", "bench"});
        outcome.passed = problem.empty();
        table.add_row({"program (PyTorch, own dtypes)", "pass", problem.empty() ? "correct" : "incorrect",
                       problem.empty() ? "ok" : "WRONG",
                       problem.empty() ? "passes the check on every test, held-out and bench shape"
                                       : first_line(problem, 100)});
    }
    for (size_t i = 0; i < candidates.size(); ++i) {
        const Evaluation& e = results.at(i);
        bool ok = candidates[i].must_pass ? e.verdict.is_correct() : !e.verdict.is_correct();
        outcome.passed = outcome.passed && ok;
        table.add_row({candidates[i].name, candidates[i].must_pass ? "pass" : "fail",
                       std::string(verdict_name(e.verdict.kind)), ok ? "ok" : "WRONG",
                       first_line(e.verdict.message, 100)});
    }
    outcome.table = table.render();
    return outcome;
}

} // namespace kforge
