// kemu: runs CUDA kernels on the CPU (emulate.cpp, cuda_emu.hpp) on a task's shapes, for every param
// point, and checks every output with the task's own check expressions.
//
// Where the expected outputs come from depends on the task. A task with a CUDA reference gets its
// inputs from the spec's generators and an fp64 ground truth written independently of the reference
// (emu_data.cpp); its reference and seeds are run, plus any files named. A PyTorch-program task
// (`kforge task import`) gets its inputs, parameters and fp64 expected outputs from the program
// itself, through the GPU worker's reference-process client on the CPU (torch_data.cpp); the files
// named are run. The ladder follows the GPU worker's where the CPU can show it: the plan is
// validated and the task's forbid rules screened first, outputs are poisoned, canaries (64 KiB, the
// worker's guard band) surround every buffer, inputs must come back unchanged, and each shape runs
// on input set 1, then twice on input set 2 (a kernel that keeps results in __device__ state fails
// the second set; runs that differ bit for bit are reported, not failed). Shapes run in the order
// tests, extra (--shape), held-out. Races between warps mostly do not show: fibers switch only at
// barriers and warp operations. Library steps (cuBLASLt, cuDNN) run on the CPU between the kernels
// (emu_library.cpp), after the checks the worker and the vendor library make before they run.
//
// usage: emulate TASK.json [FILE.cu ...] [--shapes tests|held|all] [--shape k=v,k=v]... [--only SUBSTR]
//                [--points N] [--trials N] [--json OUT.json]
// Build and run: see tasks/tools/README.md. Exit status 0 when every file is correct at every point.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/source.hpp"
#include "emu_library.hpp"
#include "emu_runtime.hpp"
#include "torch_data.hpp"
#include "util/contain.hpp"
#include "util/text.hpp"

using namespace kforge;

namespace {

struct Options {
    std::string task_path;
    std::vector<std::string> files;
    std::string which = "tests";
    std::vector<std::string> extra_shapes;
    std::string only;
    size_t max_points = 1000;
    int trials = 0;              // 0: 2 for a PyTorch task, 1 otherwise
    std::string json_path;
};

Options parse_options(int argc, char** argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--shapes") o.which = value();
        else if (a == "--shape") o.extra_shapes.push_back(value());
        else if (a == "--only") o.only = value();
        else if (a == "--points") o.max_points = std::stoul(value());
        else if (a == "--trials") o.trials = std::stoi(value());
        else if (a == "--json") o.json_path = value();
        else if (a.rfind("--", 0) == 0) throw std::runtime_error("unknown option " + a);
        else if (o.task_path.empty()) o.task_path = a;
        else o.files.push_back(a);
    }
    if (o.task_path.empty())
        throw std::runtime_error("usage: emulate TASK.json [FILE.cu ...] [--shapes tests|held|all] [--shape k=v,...] "
                                 "[--only SUBSTR] [--points N] [--trials N] [--json OUT]");
    if (o.which != "tests" && o.which != "held" && o.which != "all")
        throw std::runtime_error("--shapes takes tests, held or all");
    return o;
}

// "k=v,k=v": every free symbol bound, derived symbols computed, checked like a spec's shape.
Shape parse_extra_shape(const Task& task, const std::string& text, size_t index)
{
    Shape shape;
    for (const auto& part : split(text, ',')) {
        auto eq = part.find('=');
        if (eq == std::string::npos)
            throw std::runtime_error("--shape " + text + ": expected name=value pairs");
        shape.sizes[part.substr(0, eq)] = std::stoll(part.substr(eq + 1));
    }
    for (const auto& symbol : task.symbols)
        if (!shape.sizes.count(symbol.name))
            throw std::runtime_error("--shape " + text + ": no value for symbol " + symbol.name);
    for (const auto& derived : task.derived_symbols)
        shape.sizes[derived.name] = derived.value.eval_int(task.scope_for(shape));
    if (std::string problem = check_shape(task, shape); !problem.empty())
        throw std::runtime_error("--shape " + text + ": " + problem);
    shape.label = text;
    shape.seed = 5000 + index;
    return shape;
}

// A file and its plan (its own, else the task's default); a plan that does not parse is the
// file's plan_error (`plan_problem`), as the evaluator makes it, not the end of the run.
KernelFile read_candidate(const Task& task, const std::string& path, std::string& plan_problem)
{
    KernelFile file;
    file.path = path;
    file.source = read_file(path);
    try {
        file.plan = source_plan(task, file.source);
    } catch (const PlanError& e) {
        plan_problem = e.what();
    }
    return file;
}

// The checks before anything compiles, in the evaluator's order: the plan against the task (a
// plan_error: names, kernels the source lacks, a library step's operands and dtypes), then the
// task's forbid rules on the source without comments and strings (a compile_error). Sets `verdict`.
std::string screen(const Task& task, const KernelFile& file, std::string& verdict)
{
    try {
        validate_plan(task, file.plan, find_kernel_names(file.source));
    } catch (const PlanError& e) {
        verdict = "plan_error";
        return e.what();
    }
    std::string code = strip_comments_and_strings(file.source);
    for (const auto& rule : task.forbid)
        if (std::regex_search(code, std::regex(rule.regex))) {
            verdict = "compile_error";
            return "forbidden: " + rule.reason;
        }
    return "";
}

// The first line of a compiler log with an error (": error:"), else its first line.
std::string first_error(const std::string& log)
{
    for (const auto& line : split(log, '\n'))
        if (line.find(": error:") != std::string::npos)
            return line;
    return log.substr(0, log.find('\n'));
}

// The verdict ladder of core/verdict.hpp, for the summary of a file over its points.
int rank(const std::string& verdict)
{
    static const std::vector<std::string> ladder = {"plan_error", "compile_error", "runtime_error",
                                                    "incorrect", "held_out_failed", "correct"};
    for (size_t i = 0; i < ladder.size(); ++i)
        if (ladder[i] == verdict || (verdict == "timeout" && ladder[i] == "runtime_error"))
            return static_cast<int>(i);
    return -1;
}

struct PointOutcome {
    std::string verdict = "correct"; // as the GPU would say it, where the CPU can show it
    std::string message;
    double worst = 0;                // largest error / tolerance over the outputs checked
    std::vector<std::string> notes;  // input set 2 differed between its two runs, ...
};

struct FileOutcome {
    std::string path;
    std::string screen_problem;
    std::string screen_verdict;                 // plan_error or compile_error, with screen_problem
    std::map<std::string, PointOutcome> points; // by describe_param_point
};

// One shape's data, per input set.
struct ShapeData {
    std::vector<std::map<std::string, Buffer>> pristine;
    std::vector<std::map<std::string, std::vector<double>>> truth;
};

ShapeData shape_data(const Task& task, const Shape& shape, int trials, TorchReference* program)
{
    ShapeData data;
    uint64_t secret = getenv("SECRET") ? std::stoull(getenv("SECRET")) : 0;
    for (int trial = 0; trial < trials; ++trial) {
        if (program) {
            auto scratch = std::filesystem::temp_directory_path() / ("kemu-" + std::to_string(getpid()));
            ProgramData made = prepare_program_data(*program, task, shape, program_input_seed(shape, secret, trial), scratch);
            std::filesystem::remove_all(scratch);
            if (made.precision != "fp64")
                printf("[%s] note: expected outputs in the program's own dtype: %s\n", shape.label.c_str(), made.note.c_str());
            data.pristine.push_back(std::move(made.buffers));
            data.truth.push_back(std::move(made.expected));
        } else {
            uint64_t seed = shape.seed * 1000003 + secret + 7919 * static_cast<uint64_t>(trial);
            auto inputs = make_inputs(task, shape, seed);
            std::map<std::string, std::vector<double>> truth;
            for (const auto& arg : task.args)
                if (arg.is_tensor && arg.intent != Intent::in)
                    truth[arg.name] = ground_truth(task, shape, inputs);
            data.pristine.push_back(std::move(inputs));
            data.truth.push_back(std::move(truth));
        }
    }
    return data;
}

// The built-in bad candidates (all zeros, a copy of an input) must fail at this shape.
void report_bad_candidates(const Task& task, const Shape& shape, ShapeData& data)
{
    auto& pristine = data.pristine.front();
    for (const auto& arg : task.args) {
        if (!arg.is_tensor || arg.intent == Intent::in)
            continue;
        auto& truth = data.truth.front().at(arg.name);
        Buffer zeros = make_buffer(arg.dtype, pristine[arg.name].count, 0);
        CheckResult z = check_output(task, shape, arg, zeros, truth, pristine);
        std::string copy_note;
        for (const auto& src : task.args)
            if (src.is_tensor && src.intent == Intent::in && src.dtype == arg.dtype &&
                pristine[src.name].count == pristine[arg.name].count) {
                CheckResult c = check_output(task, shape, arg, pristine[src.name], truth, pristine);
                copy_note += " copy(" + src.name + ")=" + (c.ok ? "PASSES(!)" : "rejected");
            }
        printf("[%s] bad candidates for %s: zeros=%s%s\n", shape.label.c_str(), arg.name.c_str(),
               z.ok ? "PASSES(!)" : "rejected", copy_note.c_str());
    }
}

// One run of `file` at `point` on input set `trial`; fills `bufs` with what the kernels wrote.
PointOutcome run_once(const Task& task, const Shape& shape, bool held_out, const KernelFile& file,
                      const ParamPoint& point, ShapeData& data, int trial, std::map<std::string, Buffer>& bufs)
{
    PointOutcome outcome;
    bufs = data.pristine[trial];
    std::string so = so_path(file, point);
    std::string problem;
    try {
        ResolvedPlan plan = resolve_plan(task, file.plan, shape, point);
        // The worker prepares every library step before the first run; the vendor library's
        // refusal is the plan's error there too.
        for (size_t i = 0; i < plan.launches.size(); ++i)
            if (const auto& step = plan.launches[i].library)
                if (std::string why = vendor_refusal(*step); !why.empty())
                    throw PlanError("launches[" + std::to_string(i) + "] (" + std::string(library_op_name(step->op)) +
                                    "): " + why);
        problem = run_plan(task, plan, bufs, [&](size_t k) { return kernel_copy(so, k); });
        if (!problem.empty())
            outcome.verdict = "runtime_error";
    } catch (const PlanError& e) {
        outcome.verdict = "plan_error";
        problem = e.what();
    } catch (const std::exception& e) {
        problem = e.what();
        bool hang = problem.find("deadlock") != std::string::npos || problem.find("livelock") != std::string::npos;
        outcome.verdict = hang ? "timeout" : "runtime_error";
    }
    std::string where = " on " + shape.label + (held_out ? " (held-out)" : "") + " (input set " +
                        std::to_string(trial + 1) + ")";
    if (!problem.empty()) {
        outcome.message = problem + where;
        return outcome;
    }
    for (const auto& arg : task.args) {
        if (!arg.is_tensor || arg.intent != Intent::in)
            continue;
        if (bufs[arg.name].bytes != data.pristine[trial][arg.name].bytes) {
            outcome.verdict = "runtime_error";
            outcome.message = "modified the input '" + arg.name + "'" + where;
            return outcome;
        }
    }
    for (const auto& arg : task.args) {
        if (!arg.is_tensor || arg.intent == Intent::in)
            continue;
        CheckResult r = check_output(task, shape, arg, bufs[arg.name], data.truth[trial].at(arg.name), data.pristine[trial]);
        outcome.worst = std::max(outcome.worst, r.worst);
        if (!r.ok && outcome.message.empty()) {
            outcome.verdict = held_out ? "held_out_failed" : "incorrect";
            outcome.message = "output '" + arg.name + "' is wrong" + where + ": " + r.first;
        }
    }
    return outcome;
}

// Input set 1, then input set 2 twice (GPU worker order); the first failure is the outcome.
PointOutcome run_point(const Task& task, const Shape& shape, bool held_out, const KernelFile& file,
                       const ParamPoint& point, ShapeData& data)
{
    int trials = static_cast<int>(data.pristine.size());
    std::map<std::string, Buffer> bufs, again;
    PointOutcome last;
    for (int trial = 0; trial < trials; ++trial) {
        last = run_once(task, shape, held_out, file, point, data, trial, bufs);
        if (last.verdict != "correct")
            return last;
    }
    if (trials > 1) {
        PointOutcome second = run_once(task, shape, held_out, file, point, data, trials - 1, again);
        if (second.verdict != "correct")
            return second;
        for (const auto& arg : task.args)
            if (arg.is_tensor && arg.intent != Intent::in && again[arg.name].bytes != bufs[arg.name].bytes)
                last.notes.push_back("output '" + arg.name + "' differs bit for bit between two runs on input set " +
                                     std::to_string(trials) + " (nondeterministic; not a failure)");
        last.worst = std::max(last.worst, second.worst);
    }
    return last;
}

std::string summary_verdict(const FileOutcome& f, std::string& message)
{
    if (!f.screen_problem.empty()) {
        message = f.screen_problem;
        return f.screen_verdict;
    }
    std::set<std::string> verdicts;
    const PointOutcome* furthest = nullptr;
    for (const auto& [name, p] : f.points) {
        verdicts.insert(p.verdict);
        if (p.verdict != "correct" && (!furthest || rank(p.verdict) > rank(furthest->verdict)))
            furthest = &p;
    }
    if (!furthest)
        return "correct";
    message = furthest->message;
    return verdicts.count("correct") ? "mixed" : furthest->verdict;
}

} // namespace

int main(int argc, char** argv)
try {
    if (auto keeper = kforge::run_keeper_if_asked(argc, argv)) // the PyTorch reference runs contained
        return *keeper;
    Options options = parse_options(argc, argv);
#ifdef EMU_VENDOR_LIB
    setenv("KFORGE_VENDOR_LIB", EMU_VENDOR_LIB, 0); // the dev build's library, unless the caller names one
#endif
    std::filesystem::create_directories(cache_dir());
    Task task = load_task(options.task_path);
    int trials = options.trials > 0 ? options.trials : task.is_torch() ? 2 : 1;

    struct Planned {
        Shape shape;
        bool held_out;
    };
    std::vector<Planned> shapes;
    if (options.which == "tests" || options.which == "all")
        for (const auto& s : task.tests) shapes.push_back({s, false});
    for (size_t i = 0; i < options.extra_shapes.size(); ++i)
        shapes.push_back({parse_extra_shape(task, options.extra_shapes[i], i), false});
    if (options.which == "held" || options.which == "all")
        for (const auto& s : task.held_out) shapes.push_back({s, true});

    std::vector<KernelFile> files;
    std::map<std::string, std::string> plan_problems; // by path: plans that do not parse
    if (!task.is_torch()) {
        files.push_back(task.reference);
        files.insert(files.end(), task.seeds.begin(), task.seeds.end());
    }
    for (const auto& path : options.files) {
        std::string problem;
        files.push_back(read_candidate(task, path, problem));
        if (!problem.empty())
            plan_problems[path] = problem;
    }
    if (files.empty())
        throw std::runtime_error("a PyTorch-program task has no kernels of its own: name the .cu files to run");

    std::vector<FileOutcome> outcomes;
    std::vector<std::pair<const KernelFile*, ParamPoint>> jobs;
    for (const auto& f : files) {
        if (!options.only.empty() && f.path.string().find(options.only) == std::string::npos)
            continue;
        FileOutcome outcome;
        outcome.path = f.path.string();
        if (auto bad = plan_problems.find(f.path.string()); bad != plan_problems.end()) {
            outcome.screen_problem = bad->second;
            outcome.screen_verdict = "plan_error";
        } else if (task.is_torch() || &f != &files.front()) {
            outcome.screen_problem = screen(task, f, outcome.screen_verdict);
        }
        if (outcome.screen_problem.empty())
            for (const auto& p : enumerate_param_points(f.plan, options.max_points))
                jobs.push_back({&f, p});
        outcomes.push_back(outcome);
    }
    auto failed_compiles = compile_all(jobs);
    for (const auto& [file, point] : jobs)
        if (auto failed = failed_compiles.find(so_path(*file, point)); failed != failed_compiles.end())
            for (auto& o : outcomes)
                if (o.path == file->path.string() && o.screen_problem.empty()) {
                    o.screen_problem = "compile error (as C++ under the emulator): " + first_error(failed->second);
                    o.screen_verdict = "compile_error";
                }

    std::unique_ptr<TorchReference> program;
    if (task.is_torch())
        program = std::make_unique<TorchReference>(task, "cpu");
    for (const auto& [shape, held_out] : shapes) {
        auto t0 = std::chrono::steady_clock::now();
        ShapeData data = shape_data(task, shape, trials, program.get());
        report_bad_candidates(task, shape, data);
        for (const auto& [file, point] : jobs) {
            FileOutcome& outcome = *std::find_if(outcomes.begin(), outcomes.end(),
                                                 [&](const FileOutcome& o) { return o.path == file->path.string(); });
            if (!outcome.screen_problem.empty())
                continue;
            std::string name = describe_param_point(point);
            PointOutcome& recorded = outcome.points[name];
            if (recorded.verdict != "correct")
                continue; // a point is judged by its first failure, as on the GPU
            PointOutcome now = run_point(task, shape, held_out, *file, point, data);
            printf("%s [%s] %s %s: %s (worst err/tol %.3g)\n", now.verdict == "correct" ? "ok  " : "FAIL",
                   shape.label.c_str(), file->path.filename().c_str(), name.c_str(),
                   now.verdict == "correct" ? "correct" : (now.verdict + ": " + now.message).c_str(), now.worst);
            for (const auto& note : now.notes)
                printf("     note: %s\n", note.c_str());
            now.worst = std::max(now.worst, recorded.worst);
            now.notes.insert(now.notes.begin(), recorded.notes.begin(), recorded.notes.end());
            recorded = now;
        }
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        fprintf(stderr, "[%s] %.1f s\n", shape.label.c_str(), secs);
    }

    int failures = 0;
    Json summary = Json::array();
    for (const auto& o : outcomes) {
        std::string message;
        std::string verdict = summary_verdict(o, message);
        failures += verdict != "correct";
        printf("%-16s %s%s%s\n", verdict.c_str(), std::filesystem::path(o.path).filename().c_str(),
               message.empty() ? "" : ": ", message.c_str());
        Json points = Json::object();
        for (const auto& [name, p] : o.points)
            points[name] = Json{{"verdict", p.verdict}, {"message", p.message}, {"worst", p.worst}, {"notes", p.notes}};
        summary.push_back(Json{{"file", o.path}, {"verdict", verdict}, {"message", message}, {"points", points}});
    }
    if (!options.json_path.empty())
        std::ofstream(options.json_path) << summary.dump(1) << "\n";
    printf("%s: %d file(s) not correct\n", task.name.c_str(), failures);
    return failures ? 1 : 0;
} catch (const std::exception& e) {
    fprintf(stderr, "emulate: %s\n", e.what());
    return 2;
}
