// `kforge export ARCHIVE (--best | --candidate ID) -o FILE [--launcher | --torch]` (the command is
// src/cli/cmd_export.cpp): one candidate as a standalone .cu.
//
// The file carries its provenance in a header comment (task and hash, versions, device, verdict,
// fitness, params, per-shape medians beside the reference's, and the launch plan resolved for every
// bench shape against the task snapshot stored in the run), then the measured params as guarded
// #defines, the toolkit headers that stand in for kforge's NVRTC prelude, and the candidate source
// with __device__ added where NVRTC's -default-device made it implicit. `nvcc -c` compiles it as
// is. --launcher adds the host code that runs the plan (host_code.hpp) and writes FILE.h beside;
// --torch adds a PyTorch operator over it and writes FILE_load.py, which builds it.
#include "export/export.hpp"

#include <ctime>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/run_task.hpp"
#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "export/host_code.hpp"
#include "export/source.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "0.0.0"
#endif

namespace kforge {
namespace {

using Align = TextTable::Align;

// Every line prefixed with "// " (blank lines with "//").
std::string as_comment(const std::string& text)
{
    std::string out;
    for (const auto& line : split(text, '\n'))
        out += line.empty() ? "//\n" : "// " + line + "\n";
    return out;
}

std::string shape_labels(const std::vector<Shape>& shapes)
{
    std::vector<std::string> labels;
    for (const auto& shape : shapes)
        labels.push_back(shape.label);
    return labels.empty() ? "none" : join(labels, "; ");
}

std::string describe_arg(const ResolvedArg& arg)
{
    switch (arg.kind) {
    case ResolvedArg::Kind::tensor:
        return fmt::format("{} ({} tensor)", arg.name, dtype_cuda_name(arg.dtype));
    case ResolvedArg::Kind::scratch:
        return fmt::format("{} (scratch)", arg.name);
    case ResolvedArg::Kind::tensor_map: {
        std::vector<std::string> box;
        for (auto it = arg.map_box.rbegin(); it != arg.map_box.rend(); ++it)
            box.push_back(std::to_string(*it));
        return fmt::format("tensor_map({}: {} box {}, swizzle {} B)", arg.name, dtype_cuda_name(arg.dtype),
                           join(box, "x"), arg.map_swizzle);
    }
    case ResolvedArg::Kind::scalar:
        break;
    }
    if (dtype_is_float(arg.dtype))
        return fmt::format("{} = {} ({})", arg.name, arg.real_value, dtype_cuda_name(arg.dtype));
    return fmt::format("{} = {} ({})", arg.name, arg.int_value, dtype_cuda_name(arg.dtype));
}

std::string launch_plan_text(const Task& task, const Candidate& candidate, const ParamPoint& point)
{
    std::string out =
        "launch plan resolved for each bench shape (kforge's host side makes these launches; this "
        "file holds the device code)\n";
    try {
        Plan plan = source_plan(task, candidate.source);
        validate_plan(task, plan, find_kernel_names(candidate.source));
        for (const auto& shape : task.bench) {
            ResolvedPlan resolved = resolve_plan(task, plan, shape, point);
            out += fmt::format("  {}\n", shape.label);
            for (const auto& launch : resolved.launches) {
                if (launch.library) {
                    out += fmt::format("    {}\n", describe_library_step(*launch.library));
                    continue;
                }
                std::vector<std::string> args;
                for (const auto& arg : launch.args)
                    args.push_back(describe_arg(arg));
                out += fmt::format(
                    "    {}  grid ({}, {}, {})  block ({}, {}, {})  smem {} B\n      args: {}\n",
                    launch.kernel, launch.grid[0], launch.grid[1], launch.grid[2], launch.block[0],
                    launch.block[1], launch.block[2], launch.smem, join(args, ", "));
            }
            for (const auto& scratch : resolved.scratch)
                out += fmt::format("    scratch {}: {} bytes\n", scratch.name, scratch.bytes);
        }
    } catch (const PlanError& e) {
        out += fmt::format("  cannot be resolved: {}\n", e.what());
    }
    return out;
}

std::string timing_text(const Candidate& candidate, const std::vector<Measurement>& baselines)
{
    TextTable table({{"set"},
                     {"shape"},
                     {"candidate", Align::right},
                     {"reference", Align::right},
                     {"speedup", Align::right},
                     {"candidate IQR", Align::right},
                     {"samples", Align::right},
                     {"confirmed"}});
    const auto& measured = candidate.evaluation.measurements;
    for (const auto& m : measured) {
        if (m.subject != "candidate" || find_timing(measured, "candidate", m) != &m)
            continue;
        // The reference timed beside this candidate, else the run's baseline.
        const Measurement* reference = find_timing(measured, "reference", m);
        if (!reference)
            reference = find_timing(baselines, "reference", m);
        table.add_row(
            {m.shape_set, m.shape_label, format_duration_ns(m.median_ns),
             reference ? format_duration_ns(reference->median_ns) : "-",
             reference && m.median_ns > 0
                 ? fmt::format("{:.2f}x", reference->median_ns / m.median_ns)
                 : "-",
             fmt::format("{} - {}", format_duration_ns(m.q1_ns), format_duration_ns(m.q3_ns)),
             std::to_string(m.samples), m.confirmed ? "yes" : "no (quick screen)"});
    }
    return "median times (the candidate and the task's reference kernel on the run's device)\n" +
           (table.empty() ? "  none: this candidate was never timed\n" : table.render());
}

std::string device_text(const RunInfo& run)
{
    std::string name = run.device.value("name", std::string("an unrecorded device"));
    std::string driver = run.device.value("driver_version", std::string("unrecorded"));
    return fmt::format("{}, driver {}, CUDA toolkit {}, by kforge {}", name, driver,
                       run.toolkit_version.empty() ? "unrecorded" : run.toolkit_version,
                       run.kforge_version);
}

// What the export needs beside the candidate, gathered once.
struct ExportParts
{
    RunInfo run;
    std::optional<Task> task; // rebuilt from the run's snapshot
    std::string task_problem; // why `task` is missing
    ParamPoint point;         // the params the file defines
    std::string params_note;
    DeviceAnnotation nvcc;
    std::optional<Plan> plan; // the launch plan, validated (host-code exports only)
    std::vector<std::string> link_flags; // what the host code's library steps need
};

ExportParts gather_parts(const Archive& archive, const Candidate& candidate)
{
    ExportParts parts;
    parts.run = archive.run_info();
    try {
        parts.task = load_run_task(parts.run, archive.path().string());
    } catch (const Error& e) {
        parts.task_problem = e.what();
        log_warn("{}", e.what());
    }
    // The params the times were measured with; a candidate never timed gets its plan's first point.
    parts.point = candidate.evaluation.best_params;
    parts.params_note = "the point the times below were measured with; override with -DNAME=value";
    if (parts.point.empty() && parts.task) {
        try {
            auto points = enumerate_param_points(source_plan(*parts.task, candidate.source), 1);
            if (!points.front().empty()) {
                parts.point = points.front();
                parts.params_note = "none were measured; this is the plan's first point";
            }
        } catch (const PlanError&) {
            // The launch plan section reports the plan's problem.
        }
    }
    parts.nvcc = annotate_default_device(candidate.source);
    return parts;
}

std::string header_text(const Archive& archive, const Candidate& candidate,
                        const ExportParts& parts)
{
    const RunInfo& run = parts.run;
    const Evaluation& eval = candidate.evaluation;
    std::string fitness = eval.fitness ? fmt::format(", fitness {:.3f}x (geometric mean over bench "
                                                     "shapes of reference time / candidate time)",
                                                     *eval.fitness)
                                       : "";
    std::string parent = candidate.parent_id ? fmt::format("#{}", *candidate.parent_id) : "none";
    std::string params = parts.point.empty() ? "none" : describe_param_point(parts.point);

    std::string out = fmt::format("kforge export of candidate #{} from run {} ({})\n\n",
                                  candidate.id, run.run_id, archive.path().filename().string());
    out += fmt::format("  task         {}, spec hash {}\n", run.task_name, run.task_hash);
    out += fmt::format("  verdict      {}{}\n", verdict_name(eval.verdict.kind), fitness);
    if (!eval.verdict.is_correct())
        out += fmt::format("  WARNING      this candidate is NOT correct: {}\n",
                           first_line(eval.verdict.message, 200));
    out +=
        fmt::format("  origin       {}, parent {}, island {}, generation {}\n",
                    origin_name(candidate.origin), parent, candidate.island, candidate.generation);
    out += fmt::format("  measured on  {}\n", device_text(run));
    out += fmt::format("  exported by  kforge {} on {}\n", KFORGE_VERSION,
                       format_local_time(static_cast<double>(std::time(nullptr))));
    out += fmt::format("  params       {} ({})\n\n", params, parts.params_note);
    if (parts.task)
        out += fmt::format("shapes\n  tests        {}\n  bench        {}\n  held out     {}\n\n",
                           shape_labels(parts.task->tests), shape_labels(parts.task->bench),
                           shape_labels(parts.task->held_out));
    out += timing_text(candidate, archive.baselines()) + "\n";
    if (parts.task)
        out += launch_plan_text(*parts.task, candidate, parts.point);
    else
        out +=
            fmt::format("launch plan: not available; the run's task snapshot does not load: {}\n",
                        parts.task_problem);
    // Not -arch=sm_90a: nvcc 13 then also embeds compute_90 PTX, which cannot hold Hopper-only
    // instructions (wgmma, setmaxnreg) and fails to assemble.
    out += "\ncompile with: nvcc -c -gencode arch=compute_90a,code=sm_90a FILE\n";
    if (!parts.link_flags.empty())
        out += fmt::format("link with:    {} (the plan's library steps; nvcc finds them in the toolkit's lib64, "
                           "cuDNN where it is installed)\n",
                           join(parts.link_flags, " "));
    if (!parts.nvcc.annotated.empty())
        out +=
            fmt::format("kforge compiles candidates with NVRTC -default-device, where code without "
                        "an execution space\nis device code; for nvcc these are marked __device__: "
                        "{}\n",
                        join(parts.nvcc.annotated, ", "));
    out += fmt::format("\ndevice facts recorded by the run: {}\n", run.device.dump());
    return out;
}

// The plan host code runs: validated as kforge validates it before compiling, with every param
// bound by the exported point.
Plan checked_plan(const ExportParts& parts, const Candidate& candidate)
{
    if (!parts.task)
        fail_input("candidate #{}: host code needs the run's task, which does not load: {}",
                   candidate.id, parts.task_problem);
    try {
        Plan plan = source_plan(*parts.task, candidate.source);
        validate_plan(*parts.task, plan, find_kernel_names(candidate.source));
        for (const auto& [name, values] : plan.params)
            if (!parts.point.count(name))
                throw PlanError(fmt::format("no value for param '{}'", name));
        for (const auto& launch : plan.launches)
            for (const auto& arg : launch.args)
                if (arg.tensor_map)
                    throw PlanError(fmt::format("launch '{}' passes {}: generated host code does not build "
                                                "tensor maps yet (export without --launcher/--torch)",
                                                launch.kernel, arg.text));
        return plan;
    } catch (const PlanError& e) {
        fail_input("candidate #{}: its launch plan cannot be exported as host code: {}",
                   candidate.id, e.what());
    }
}

// The files an export writes: the .cu, and beside it the header or the loader.
struct ExportFiles
{
    std::string cu;
    std::string header; // --launcher
    std::string loader; // --torch
    // --torch on a task imported from a PyTorch program: the program, beside the loader's ModelNew.
    std::string problem_name;
    std::string problem;
    std::vector<std::string> link_flags; // the library steps': "-lcublasLt", "-lcudnn"
};

ExportFiles build_export(const Archive& archive, const Candidate& candidate,
                         const ExportOptions& options)
{
    ExportParts parts = gather_parts(archive, candidate);
    std::optional<LauncherSource> host;
    if (options.host != HostCode::none) {
        parts.plan = checked_plan(parts, candidate);
        parts.link_flags = library_link_flags(*parts.plan);
        host.emplace(LauncherSource{*parts.task, *parts.plan,
                                    describe_launcher(*parts.task, *parts.plan), parts.point});
    }
    std::filesystem::path cu_path = options.output;
    std::string cu_name = cu_path.filename().string();
    std::string header_name = cu_path.stem().string() + ".h";
    std::string loader_name = cu_path.stem().string() + "_load.py";

    std::string comment = header_text(archive, candidate, parts);
    if (options.host == HostCode::launcher)
        comment += fmt::format("\nhost code (kforge export --launcher; declared in {}):\n\n{}",
                               header_name, launcher_contract(*host));
    if (options.host == HostCode::torch)
        comment += fmt::format("\nPyTorch operator (kforge export --torch): kforge::{}\nbuild and "
                               "load it with {} (python3 {} builds it and prints the schema)\n",
                               torch_schema(*host), loader_name, loader_name);
    ExportFiles files;
    files.link_flags = parts.link_flags;
    std::string& out = files.cu;
    out = as_comment(comment) + "\n";
    if (options.host == HostCode::torch)
        out += torch_prologue();
    for (const auto& [name, value] : parts.point)
        out += fmt::format("#ifndef {0}\n#define {0} {1}\n#endif\n", name, value);
    if (host)
        out += "\n" + generate_resolve_code(*host) +
               "\n// KFORGE_RESOLVE_ONLY keeps only the host arithmetic above (any C++ "
               "compiler takes it).\n#ifndef KFORGE_RESOLVE_ONLY\n";
    out += "\n// What kforge's NVRTC prelude gives candidates, from the toolkit's headers.\n";
    out += nvcc_prelude();
    out += fmt::format("\n// ---- candidate #{} ----\n", candidate.id) + parts.nvcc.source;
    if (out.back() != '\n')
        out += '\n';
    if (host) {
        out += "\n" + generate_launcher_code(*host);
        if (options.host == HostCode::torch)
            out += "\n" + generate_torch_op(*host);
        out += "\n#endif // KFORGE_RESOLVE_ONLY\n";
    }
    if (options.host == HostCode::launcher)
        files.header = generate_launcher_header(*host, cu_name, header_name);
    if (options.host == HostCode::torch) {
        files.loader = generate_torch_loader(*host, cu_name, loader_name);
        if (parts.task->is_torch()) {
            files.problem_name = parts.task->reference.path.filename().string();
            files.problem = parts.task->reference.source;
            // Before the loader's `if __name__ == "__main__":` block, so it reads top to bottom.
            std::string model_new = generate_model_new(*host, files.problem_name);
            auto main_block = files.loader.rfind("\n\nif __name__ ==");
            files.loader.insert(main_block == std::string::npos ? files.loader.size() : main_block, model_new);
        }
    }
    return files;
}

} // namespace

int run_export(const ExportOptions& options)
{
    // Every file this export would write must be a regular file (or new) before anything is read:
    // a FIFO or a device named by -o is refused, never replaced.
    if (options.output != "-") {
        std::filesystem::path cu_path = options.output;
        output_file_target(cu_path);
        if (options.host == HostCode::launcher)
            output_file_target(std::filesystem::path(cu_path).replace_extension(".h"));
        if (options.host == HostCode::torch)
            output_file_target(cu_path.parent_path() / (cu_path.stem().string() + "_load.py"));
    }
    Archive archive = Archive::open(options.archive_path, OpenMode::read_only);
    std::optional<Candidate> candidate;
    if (options.best) {
        candidate = archive.best_candidate();
        if (!candidate)
            fail_input("{}: no correct candidate yet ({} candidates stored); `kforge inspect` "
                       "shows what failed",
                       options.archive_path, archive.candidate_count());
    } else {
        candidate = archive.candidate(*options.candidate_id);
        if (!candidate)
            fail_input("{}: no candidate {} (the archive holds {})", options.archive_path,
                       *options.candidate_id, archive.candidate_count());
    }
    if (!candidate->evaluation.verdict.is_correct())
        log_warn("candidate #{} is not correct ({}); exporting it anyway", candidate->id,
                 verdict_name(candidate->evaluation.verdict.kind));
    ExportFiles files = build_export(archive, *candidate, options);
    // Every read above succeeded: a table the archive lacks is one the export does not need.
    for (const auto& table : archive.missing_tables())
        log_warn("{}: damaged archive: table '{}' is missing (the export does not need it)", options.archive_path,
                 table);
    if (options.output == "-") {
        fmt::print("{}", files.cu);
        return k_exit_ok;
    }
    std::filesystem::path cu_path = options.output;
    std::error_code ec; // a folder that cannot be made is reported by the first write, naming the path
    std::filesystem::create_directories(std::filesystem::absolute(cu_path).parent_path(), ec);
    std::vector<std::string> beside;
    if (!files.header.empty()) {
        auto path = std::filesystem::path(cu_path).replace_extension(".h");
        write_file_atomic(path, files.header);
        beside.push_back(path.string());
    }
    if (!files.loader.empty()) {
        auto path = cu_path.parent_path() / (cu_path.stem().string() + "_load.py");
        write_file_atomic(path, files.loader);
        beside.push_back(path.string());
    }
    if (!files.problem.empty()) {
        // ModelNew subclasses the program's Model: the program goes beside the loader, unless a
        // file of that name is already there (the user's own copy, which must be the same program).
        auto path = cu_path.parent_path() / files.problem_name;
        if (!std::filesystem::exists(path, ec)) {
            write_file_atomic(path, files.problem);
            beside.push_back(path.string());
        } else if (read_file(path) != files.problem) {
            log_warn("{} exists and differs from the program the task was imported from; ModelNew will subclass "
                     "that file's Model", path.string());
        }
    }
    write_file_atomic(options.output, files.cu);
    log_info("wrote {}{}: candidate #{} ({}{})", options.output,
             beside.empty() ? "" : " and " + join(beside, ", "), candidate->id,
             verdict_name(candidate->evaluation.verdict.kind),
             candidate->evaluation.fitness
                 ? fmt::format(", fitness {:.2f}x", *candidate->evaluation.fitness)
                 : "");
    if (!files.link_flags.empty())
        log_info("its library steps call cuBLASLt/cuDNN: link with {}{}", join(files.link_flags, " "),
                 options.host == HostCode::torch ? " (the loader passes them)" : "");
    return k_exit_ok;
}

} // namespace kforge
