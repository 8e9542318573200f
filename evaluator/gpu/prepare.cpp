// Stage 1 of the GPU evaluator: plan extraction and validation, source screening, and the NVRTC
// compiles of every param point, once per distinct arch among the session's GPUs (GPUs of one model
// share every compile); see gpu/prepare.hpp. Runs on the evaluator's "prepare" threads while the
// GPUs work on earlier jobs.
#include "evaluator/gpu/prepare.hpp"

#include <algorithm>
#include <future>
#include <map>

#include <fmt/format.h>

#include "core/param_sweep.hpp"
#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "evaluator/compile/compile_cache.hpp"
#include "evaluator/compile/launch_args.hpp"
#include "evaluator/measurement_memo.hpp"

namespace kforge {
namespace {

// The compiles of `points` once per arch, in the order prepare_job() reads them back.
std::vector<CompileRequest> variant_requests(const std::string& source, const std::vector<std::string>& kernels,
                                             const std::vector<ParamPoint>& points,
                                             const std::vector<std::string>& arches)
{
    std::vector<CompileRequest> requests;
    for (const auto& arch : arches)
        for (const auto& point : points) {
            CompileRequest request;
            request.source = source;
            request.arch = arch;
            request.params = params_for_compile(source, point);
            request.kernels = kernels;
            requests.push_back(std::move(request));
        }
    return requests;
}

// The source's plan (its own, else the task's default), validated, and the kernels it launches;
// the verdict instead where the plan is wrong or screening refuses the source (the task's own code,
// `task_code`, is screened without the task's forbid list).
std::optional<Verdict> plan_and_screen(const Task& task, const std::string& source, bool task_code, Plan& plan,
                                       std::vector<std::string>& kernels)
{
    try {
        plan = source_plan(task, source);
        validate_plan(task, plan, find_kernel_names(source));
    } catch (const PlanError& e) {
        return Verdict{VerdictKind::plan_error, e.what()};
    }
    kernels = launched_kernels(plan);
    if (!task_code)
        return screen_source(task, source, kernels);
    Task unbound = task;
    unbound.forbid.clear();
    return screen_source(unbound, source, kernels);
}

} // namespace

void prefetch_compiles(const Task& task, const std::string& source, bool task_code, CompilePool& pool,
                       const std::vector<std::string>& arches)
{
    Plan plan;
    std::vector<std::string> kernels;
    if (plan_and_screen(task, source, task_code, plan, kernels))
        return; // its job says so when it is prepared
    auto points = sweep_param_points(plan, static_cast<size_t>(task.limits.max_param_points)).points;
    for (const auto& request : variant_requests(source, kernels, points, arches))
        pool.prefetch(request);
}

PreparedJob prepare_job(const Task& task, EvalJob job, CompilePool& pool, const std::vector<std::string>& arches,
                        std::atomic<int64_t>& compiling)
{
    PreparedJob prepared;
    prepared.started = EvalClock::now();
    prepared.job = std::move(job);
    const std::string& source = prepared.job.source;
    std::vector<std::string> kernels;
    if (auto failure = plan_and_screen(task, source, prepared.job.options.task_code, prepared.plan, kernels)) {
        prepared.early_failure = *failure;
        return prepared;
    }
    std::vector<ParamPoint> points;
    if (prepared.job.options.only_params) {
        points.push_back(*prepared.job.options.only_params);
    } else {
        ParamSweep sweep = sweep_param_points(prepared.plan, static_cast<size_t>(task.limits.max_param_points));
        prepared.param_points = sweep.to_json();
        points = std::move(sweep.points);
    }
    // Points that differ only in params the code does not read are one compile (params_for_compile).
    std::vector<std::shared_future<CompileResult>> futures;
    std::map<std::string, std::shared_future<CompileResult>> by_key;
    for (auto& request : variant_requests(source, kernels, points, arches)) {
        ++compiling;
        auto [it, fresh] = by_key.try_emplace(compile_cache_key(request));
        if (fresh)
            it->second = std::async(std::launch::async, [&pool, request = std::move(request)] {
                             return pool.compile(request);
                         }).share();
        futures.push_back(it->second);
    }
    Json origin{{"ticket", prepared.job.ticket}};
    if (!prepared.job.label.empty())
        origin["label"] = prepared.job.label;
    size_t next = 0;
    for (const auto& arch : arches)
        for (const auto& point : points) {
            Variant variant{point, futures[next++].get(), "", origin};
            --compiling;
            if (variant.compiled.ok)
                variant.memo_key = MeasurementMemo::key_for(variant.compiled.cubin, prepared.plan.json, variant.params);
            // The plan's arguments against the kernels as compiled, before any GPU work: a launch
            // with the wrong count or sizes would run on whatever lies beyond what was passed.
            if (std::string mismatch = check_launch_arguments(task, prepared.plan, variant.compiled);
                !mismatch.empty() && !prepared.early_failure)
                prepared.early_failure = Verdict{
                    VerdictKind::plan_error,
                    point.empty() ? mismatch : fmt::format("with {}: {}", describe_param_point(point), mismatch)};
            prepared.variants[arch].push_back(std::move(variant));
        }
    return prepared;
}

} // namespace kforge
