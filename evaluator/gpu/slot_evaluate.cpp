// The evaluation of one candidate on one GPU: the param sweep, the final timing, the fitness
// against this GPU's baselines, descriptors and metrics (gpu/slot.hpp).
//
// Every param point that compiled is verified and screen-timed; the best correct one is timed
// again to the requested standard (quick, or confirmation interleaved with the reference),
// optionally checked on held-out shapes. A candidate with one point skips the sweep. Every failure
// on the way is a verdict in the result, never an exception — except a lost GPU, which is not the
// candidate's doing (GpuLostError).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/plan_check.hpp"
#include "evaluator/compile/compile_record.hpp"
#include "evaluator/describe.hpp"
#include "evaluator/gpu/slot.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

Json params_json(const ParamPoint& point)
{
    Json params = Json::object();
    for (const auto& [name, value] : point)
        params[name] = value;
    return params;
}

} // namespace

double geomean_speedup(const std::vector<Measurement>& candidate, const std::vector<Measurement>& baseline,
                       const std::string& subject)
{
    double log_sum = 0;
    int count = 0;
    for (const auto& m : candidate) {
        if (m.subject != "candidate" || m.shape_set != "bench" || m.median_ns <= 0)
            continue;
        auto ref = std::find_if(baseline.begin(), baseline.end(), [&](const Measurement& b) {
            return b.subject == subject && b.shape_label == m.shape_label && b.median_ns > 0;
        });
        if (ref == baseline.end())
            return 0;
        log_sum += std::log(ref->median_ns / m.median_ns);
        ++count;
    }
    return count ? std::exp(log_sum / count) : 0;
}

VariantResult GpuSlot::screen_variant(const Variant& variant, const Plan& plan)
{
    return run_variant(variant, plan, true, "sweep", false);
}

GpuSlot::CompiledVariants GpuSlot::compiled_variants(const PreparedJob& prepared) const
{
    CompiledVariants out;
    auto own = prepared.variants.find(m_arch);
    if (own == prepared.variants.end()) {
        out.failure = Verdict{VerdictKind::runtime_error,
                              fmt::format("kforge could not evaluate this candidate: it was not compiled for {}", m_arch)};
        return out;
    }
    const std::vector<Variant>& variants = own->second;
    Json info = Json::array();
    std::optional<Verdict> compile_failure;
    for (const auto& variant : variants) {
        info.push_back(Json{{"params", params_json(variant.params)},
                            {"ok", variant.compiled.ok},
                            {"seconds", variant.compiled.seconds},
                            {"cache_hit", variant.compiled.cache_hit}});
        if (variant.compiled.ok)
            out.compiled.push_back(&variant);
        else if (!compile_failure)
            compile_failure = Verdict{variant.compiled.failure,
                                      fmt::format("{}{}", variants.size() > 1
                                                              ? fmt::format("with {}: ", describe_param_point(variant.params))
                                                              : "",
                                                  variant.compiled.message)};
    }
    out.info = Json{{"variants", info}};
    if (out.compiled.empty())
        out.failure = compile_failure.value_or(Verdict{VerdictKind::compile_error, "nothing compiled"});
    return out;
}

std::optional<Evaluation> GpuSlot::evaluate(const PreparedJob& prepared, const std::function<void()>& between_variants,
                                            const std::function<void(const std::shared_ptr<SweepBoard>&)>& offer_sweep)
{
    Evaluation evaluation;
    if (prepared.early_failure) {
        evaluation.verdict = *prepared.early_failure;
        return evaluation;
    }
    CompiledVariants variants = compiled_variants(prepared);
    if (variants.failure) {
        evaluation.verdict = *variants.failure;
        if (!variants.info.is_null())
            evaluation.compile_info = variants.info;
        return evaluation;
    }
    ++m_evaluations;
    const std::vector<const Variant*>& compiled = variants.compiled;
    if (compiled.size() == 1) {
        // One point: no sweep; its run is the final one.
        const EvalOptions& options = prepared.job.options;
        std::vector<VariantResult> results{run_variant(*compiled[0], prepared.plan, true, options.confirm ? "confirm" : "quick",
                                                       options.held_out, options.profile)};
        bool correct = results.back().verdict.is_correct();
        double fitness = correct ? geomean_speedup(results.back().measurements, m_baselines) : 0;
        return complete(prepared, variants, std::move(results), correct ? compiled[0] : nullptr, fitness);
    }
    // Sweep: verify and screen-time every point, idle GPUs of this model taking some of them
    // (sweep_board.hpp), then time the winner properly, here or, when this GPU is away on an
    // earlier job as the last variant ends, on a helper.
    auto board = std::make_shared<SweepBoard>(compiled, prepared, m_identity.name, prepared.job.ticket);
    if (offer_sweep)
        offer_sweep(board);
    try {
        bool first = true;
        for (;;) {
            if (!first && between_variants && board->has_unclaimed()) {
                board->set_owner_away(true);
                between_variants();
                board->set_owner_away(false);
            }
            if (auto i = board->claim()) {
                first = false;
                board->finish(*i, run_variant(*compiled[*i], prepared.plan, true, "sweep", false), false);
                continue;
            }
            if (board->wait_done_or_released())
                break;
        }
    } catch (const GpuLostError& e) {
        throw GpuLostError(e.what(), board->abandon());
    } catch (...) {
        board->abandon();
        throw;
    }
    if (board->helped() > 0)
        log_debug("{}: {} of the {} variants of job {} ran on other GPUs", m_identity.label(), board->helped(),
                  compiled.size(), prepared.job.ticket);
    if (!board->take_final_step()) {
        log_debug("{}: job {} was finished on another GPU while this one ran an earlier job", m_identity.label(),
                  prepared.job.ticket);
        return std::nullopt;
    }
    return time_winner(prepared, variants, board->results());
}

Evaluation GpuSlot::finish_sweep(const SweepBoard& board)
{
    const PreparedJob& prepared = board.job();
    CompiledVariants variants = compiled_variants(prepared);
    if (variants.failure || variants.compiled != board.variants())
        fail_runtime("internal: {} cannot finish the sweep of job {}: its variants differ from the board's",
                     m_identity.label(), prepared.job.ticket);
    return time_winner(prepared, variants, board.results());
}

Evaluation GpuSlot::time_winner(const PreparedJob& prepared, const CompiledVariants& variants,
                                std::vector<VariantResult> results)
{
    const std::vector<const Variant*>& compiled = variants.compiled;
    const Variant* best = nullptr;
    double best_fitness = 0;
    for (size_t i = 0; i < results.size(); ++i) {
        double fitness = results[i].verdict.is_correct() ? geomean_speedup(results[i].measurements, m_baselines) : 0;
        if (fitness > best_fitness) {
            best_fitness = fitness;
            best = compiled[i];
        }
    }
    if (best) {
        const EvalOptions& options = prepared.job.options;
        results.push_back(run_variant(*best, prepared.plan, false, options.confirm ? "confirm" : "quick",
                                      options.held_out, options.profile));
        best_fitness = results.back().verdict.is_correct() ? geomean_speedup(results.back().measurements, m_baselines) : 0;
    }
    return complete(prepared, variants, std::move(results), best, best_fitness);
}

// The evaluation of a job whose runs are `results` (the last one the winner's final run when
// `best` is set), on this GPU.
Evaluation GpuSlot::complete(const PreparedJob& prepared, const CompiledVariants& variants,
                             std::vector<VariantResult> results, const Variant* best, double best_fitness) const
{
    const EvalOptions& options = prepared.job.options;
    Evaluation evaluation;
    evaluation.compile_info = variants.info;
    evaluation.gpu = m_identity;
    Json sweep = Json::array();
    for (const auto& r : results)
        sweep.push_back(Json{{"params", params_json(r.params)},
                             {"verdict", verdict_name(r.verdict.kind)},
                             {"fitness", r.verdict.is_correct() ? geomean_speedup(r.measurements, m_baselines) : 0}});
    evaluation.metrics["sweep"] = sweep;
    evaluation.metrics["runs"] = variant_runs_to_json(results);

    const VariantResult& last = results.back();
    if (best && !last.verdict.is_correct()) {
        // The winner of the sweep failed its final run (held-out shapes, or on closer timing).
        evaluation.verdict = last.verdict;
        if (results.size() > 1)
            evaluation.verdict.message = fmt::format("with {}: {}", describe_param_point(last.params), last.verdict.message);
        evaluation.metrics["resources"] = last.resources;
        return evaluation;
    }
    if (!best) {
        // No point is correct: report the failure that got furthest up the ladder.
        const VariantResult* furthest = &results.front();
        for (const auto& r : results)
            if (verdict_rank(r.verdict.kind) > verdict_rank(furthest->verdict.kind))
                furthest = &r;
        evaluation.verdict = furthest->verdict;
        if (results.size() > 1)
            evaluation.verdict.message = fmt::format("with {}: {}", describe_param_point(furthest->params),
                                                     furthest->verdict.message);
        evaluation.metrics["resources"] = furthest->resources;
        return evaluation;
    }

    evaluation.verdict = last.verdict;
    evaluation.best_params = best->params;
    evaluation.measurements = last.measurements;
    // Fitness uses the reference timed in the same interleaved run when there is one.
    double fitness = options.confirm ? geomean_speedup(last.measurements, last.measurements) : 0;
    evaluation.fitness = fitness > 0 ? fitness : best_fitness;
    evaluation.metrics["resources"] = last.resources;
    evaluation.metrics["notes"] = last.notes;
    evaluation.metrics["baseline"] = baseline_summary(evaluation);
    if (!last.profile.empty())
        evaluation.metrics["profile"] = last.profile;
    evaluation.metrics["ptxas"] = kernel_resources_metrics(best->compiled.resources, last.resources);
    if (last.notes.contains("below_roofline"))
        evaluation.metrics["suspicious"] = true;
    describe(prepared, *best, last.resources, evaluation);
    return evaluation;
}

// Descriptors at the largest bench shape, with the occupancy of the launch that runs most threads.
void GpuSlot::describe(const PreparedJob& prepared, const Variant& best, const Json& resources,
                       Evaluation& evaluation) const
{
    const Shape& largest = m_task.bench.back();
    DescriptorInputs inputs;
    inputs.source = prepared.job.source;
    inputs.plan = resolve_plan(m_task, prepared.plan, largest, best.params);
    for (const auto& arg : m_task.args)
        if (arg.is_tensor && arg.intent != Intent::in)
            inputs.output_elements += m_task.element_count(arg, largest);
    size_t heaviest = 0;
    double most_threads = 0;
    for (size_t i = 0; i < inputs.plan.launches.size(); ++i) {
        const auto& l = inputs.plan.launches[i];
        if (l.library)
            continue; // a library step's kernels are the library's: no occupancy of ours to describe
        double threads = 1.0 * l.grid[0] * l.grid[1] * l.grid[2] * l.block[0] * l.block[1] * l.block[2];
        if (threads > most_threads) {
            most_threads = threads;
            heaviest = i;
        }
    }
    const Json& occupancy = resources.value("theoretical_occupancy", Json::array());
    if (heaviest < occupancy.size() && occupancy[heaviest].is_number())
        inputs.occupancy = occupancy[heaviest].get<double>();
    evaluation.descriptors = describe_candidate(inputs);
}

} // namespace kforge
