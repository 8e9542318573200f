// `kforge eval RUN.kforge --candidate ID [--held-out] [--accept]`: one candidate of a run measured
// again, against the run's own task (its snapshot) with the run's input secret, on this machine's
// GPU; with --accept, a flagged candidate is accepted on that evidence.
//
// Why acceptance exists. The search never counts a time below the roofline floor (roofline.hpp):
// the floor already grants every write the L2 can hold, so a correct kernel under it means that the
// task's roofline overstates what a kernel must move, or that the device facts are wrong. Either
// way kforge's model failed, not necessarily the kernel; the user who has looked may accept it. The
// evidence is kforge's own, gathered here and stored with the candidate: every test shape and every
// held-out shape verified again, the bench shapes timed to the confirmation standard interleaved
// with the reference, on a GPU of the model the run measured (speedups of different models are not
// comparable). The candidate's fitness becomes the re-measured one, the evidence goes into its
// metrics ("accepted": times, floors, GPU, date, whether it is still under the floor), and the
// re-measurement joins its measurements. `inspect`, `report` and `export --best` count it at once;
// `kforge resume` places it in its island's grid, and as the run's best when it is the fittest.
#include <chrono>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/run_task.hpp"
#include "cli/app.hpp"
#include "cli/eval_command.hpp"
#include "evaluator/worker/roofline.hpp"
#include "search/run_record.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "0.0.0"
#endif

namespace kforge {
namespace {

bool is_flagged(const Candidate& candidate)
{
    return candidate.evaluation.verdict.is_correct() && candidate.evaluation.metrics.value("suspicious", false);
}

// Per bench shape of the re-measurement: its median against the roofline and the floor.
Json shape_evidence(const Task& task, const EvalRun& result)
{
    DevicePeaks peaks = DevicePeaks::from_json(result.environment.value("peaks", Json::object()));
    Json shapes = Json::array();
    for (const auto& m : result.evaluation.measurements) {
        if (m.subject != "candidate" || m.shape_set != "bench")
            continue;
        Json row{{"shape", m.shape_label}, {"median_ns", m.median_ns}, {"below_floor", m.below_roofline}};
        for (const auto& shape : task.bench)
            if (shape.label == m.shape_label) {
                RooflinePoint roof = roofline_at(task, shape, peaks);
                row["floor_ns"] = roof.floor_ns;
                row["roofline_ns"] = roof.roofline_ns;
            }
        shapes.push_back(row);
    }
    return shapes;
}

// Accepts candidate `id` of the run at `path` on the evidence in `result`, or says why not.
Json accept_on_evidence(const std::string& path, const RunInfo& run, int64_t id, const Task& task,
                        const EvalRun& result)
{
    const Evaluation& e = result.evaluation;
    std::string run_gpu = run.device.value("name", "");
    std::string this_gpu = result.environment.value("device", Json::object()).value("name", "");
    std::string refusal;
    if (!e.verdict.is_correct())
        refusal = fmt::format("the re-measurement's verdict is {}", verdict_name(e.verdict.kind));
    else if (!e.fitness)
        refusal = "the re-measurement has no fitness";
    else if (!run_gpu.empty() && run_gpu != this_gpu)
        refusal = fmt::format("the run measured on {} and this GPU is {}: speedups on different GPU models are not "
                              "comparable; re-measure on a {}",
                              run_gpu, this_gpu, run_gpu);
    if (!refusal.empty())
        return Json{{"accepted", false},
                    {"message", fmt::format("candidate #{} is NOT accepted: {}", id, refusal)}};

    Json shapes = shape_evidence(task, result);
    int still_below = 0;
    for (const auto& shape : shapes)
        still_below += shape.value("below_floor", false) ? 1 : 0;
    Json evidence{{"accepted_at", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()},
                  {"by", "kforge eval --candidate --held-out --accept"},
                  {"kforge_version", KFORGE_VERSION},
                  {"gpu", this_gpu},
                  {"gpu_uuid", result.environment.value("device", Json::object()).value("uuid", "")},
                  {"fitness", *e.fitness},
                  {"held_out", "passed"},
                  {"timing", "confirm"},
                  {"shapes_still_below_floor", still_below},
                  {"shapes", shapes}};
    Archive archive = Archive::open(path, OpenMode::write);
    archive.accept_flagged_candidate(id, *e.fitness, evidence, e.measurements);
    return Json{{"accepted", true},
                {"fitness", *e.fitness},
                {"evidence", evidence},
                {"message",
                 fmt::format("accepted candidate #{} of {} at {:.3f}x (re-measured on {}, held-out shapes passed, {} "
                             "bench shape{} still under the floor): inspect, report and export count it now, and "
                             "`kforge resume` places it in its island's grid",
                             id, path, *e.fitness, this_gpu, still_below, still_below == 1 ? "" : "s")}};
}

} // namespace

int run_eval_candidate(const EvalCommandOptions& options)
{
    if (!options.file.empty())
        fail(ErrorKind::usage, "--candidate re-measures a run's own source: kforge eval RUN.kforge --candidate ID "
                               "(without FILE)");
    if (options.compile_only)
        fail(ErrorKind::usage, "--candidate runs the candidate on the GPU; --compile-only takes TASK FILE");
    if (options.accept && (!options.held_out || options.quick))
        fail(ErrorKind::usage, "--accept needs --held-out and the confirmation standard (no --quick): a flagged "
                               "candidate is accepted on full evidence only");
    const std::string& path = options.task_path;
    int64_t id = *options.candidate;
    Archive archive = Archive::open(path, OpenMode::read_only);
    RunInfo run = archive.run_info();
    std::optional<Candidate> candidate = archive.candidate(id);
    if (!candidate)
        fail_input("{}: no candidate {} (the archive holds {})", path, id, archive.candidate_count());
    if (candidate->source.empty())
        fail_input("{}: candidate {} has no source (its proposal carried no code)", path, id);
    bool flagged = is_flagged(*candidate);
    if (options.accept && !flagged)
        fail_input("{}: candidate {} is not flagged as faster than the roofline floor; --accept is only for flagged "
                   "candidates (its verdict: {})",
                   path, id, verdict_name(candidate->evaluation.verdict.kind));
    if (options.accept && candidate->evaluation.metrics.contains("accepted"))
        fail_input("{}: candidate {} was accepted already", path, id);

    ScratchFolder folder;
    Task task = materialize_run_task(run, path, folder.path());
    EvalCommandOptions run_options = options;
    run_options.secret = stored_run_secret(archive);
    run_options.file = fmt::format("{} candidate #{}", path, id);
    EvalRun result = evaluate_source(task, candidate->source, run_options);

    Json extra{{"run", path}, {"candidate", id}, {"flagged_in_run", flagged}};
    if (flagged && !candidate->evaluation.metrics.contains("accepted") && !options.accept)
        extra["acceptance"] = Json{{"accepted", false},
                                   {"message", fmt::format("the run flagged #{} and does not count it; to accept it on "
                                                           "this evidence: kforge eval {} --candidate {} --held-out "
                                                           "--accept",
                                                           id, path, id)}};
    if (options.accept)
        extra["acceptance"] = accept_on_evidence(path, run, id, task, result);
    int code = print_evaluation(task, result, run_options, extra);
    if (options.accept && !extra["acceptance"].value("accepted", false))
        return k_exit_negative;
    return code;
}

} // namespace kforge
