// Fuzz target: a candidate's plan block, as the evaluator reads a model's reply: extraction from
// the source, parsing, validation against the softmax task, param points and resolution on a test
// and a bench shape. Every failure must be a PlanError (a plan_error verdict), nothing else.
#include <cstddef>
#include <cstdint>

#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace kforge;
    const Task& task = fuzz::softmax_task();
    std::string source(fuzz::as_text(data, size));
    try {
        std::optional<Json> json = extract_plan_json(source);
        if (!json)
            return 0;
        Plan plan = parse_plan(*json, "plan");
        (void)format_plan_json(plan.json);
        std::vector<std::string> kernels = find_kernel_names(source);
        for (const auto& launch : plan.launches)
            kernels.push_back(launch.kernel);
        validate_plan(task, plan, kernels);
        (void)count_param_points(plan);
        for (const auto& point : enumerate_param_points(plan, static_cast<size_t>(task.limits.max_param_points))) {
            for (const Shape* shape : {&task.tests.front(), &task.bench.front()}) {
                ResolvedPlan resolved = resolve_plan(task, plan, *shape, point);
                for (const auto& launch : resolved.launches)
                    for (const auto& arg : launch.args)
                        (void)scalar_bytes(arg);
            }
        }
    } catch (const PlanError&) {
    }
    return 0;
}
