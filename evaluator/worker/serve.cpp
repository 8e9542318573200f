// `kforge __worker gpu`: the process that owns a GPU. It serves requests from the controller over
// fds 3/4 (worker_protocol.hpp) until the controller closes the pipe, and exits after any reply that
// says its context is unusable, so the controller can start a clean one.
//
// On a GPU shared with other runs (the setup names a "gpu_share_dir", worker/share.hpp) every step that
// runs on the GPU holds the GPU's measuring lock: the copy-bandwidth probe of the setup, the
// baselines (after torch.compile's CPU work, done ahead), a program check and each variant; the
// setup's compiles and the PyTorch reference process's start are done without it. A request that
// has to wait for the lock says so with an interim frame before and after the wait, and its reply
// gives the seconds waited ("gpu_lock_wait_s").
#include <chrono>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "core/task.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/compile_cache.hpp"
#include "evaluator/compile/cubin_info.hpp"
#include "evaluator/worker/cupti_activity.hpp"
#include "evaluator/worker/share.hpp"
#include "evaluator/worker/simulator.hpp"
#include "evaluator/worker/runner.hpp"
#include "evaluator/worker/vendor_baseline.hpp"
#include "evaluator/worker/worker_protocol.hpp"
#include "util/crash_trace.hpp"
#include "util/interrupt.hpp"
#include "util/subprocess.hpp"

namespace kforge {
namespace {

TimingLevel parse_level(const std::string& name)
{
    if (name == "none")
        return TimingLevel::none;
    if (name == "sweep")
        return TimingLevel::sweep;
    if (name == "confirm")
        return TimingLevel::confirm;
    return TimingLevel::quick;
}

// Copy bandwidth: the best of a few device-to-device copies of 1 GiB, counting read + write bytes.
double measure_copy_bandwidth(const GpuContext& context)
{
    const auto& cu = driver();
    size_t bytes = size_t{1} << 30;
    size_t free_bytes = 0, total = 0;
    KF_CU_CHECK(cu.cuMemGetInfo(&free_bytes, &total));
    if (free_bytes < 4 * bytes)
        bytes = free_bytes / 8;
    DeviceMemory a(bytes), b(bytes);
    CUevent start, stop;
    KF_CU_CHECK(cu.cuEventCreate(&start, CU_EVENT_DEFAULT));
    KF_CU_CHECK(cu.cuEventCreate(&stop, CU_EVENT_DEFAULT));
    float best_ms = 0;
    for (int i = 0; i < 6; ++i) {
        KF_CU_CHECK(cu.cuEventRecord(start, context.stream()));
        KF_CU_CHECK(cu.cuMemcpyDtoDAsync(b.get(), a.get(), bytes, context.stream()));
        KF_CU_CHECK(cu.cuEventRecord(stop, context.stream()));
        KF_CU_CHECK(cu.cuEventSynchronize(stop));
        float ms = 0;
        KF_CU_CHECK(cu.cuEventElapsedTime(&ms, start, stop));
        if (i > 0 && (best_ms == 0 || ms < best_ms))
            best_ms = ms;
    }
    cu.cuEventDestroy(start);
    cu.cuEventDestroy(stop);
    return best_ms > 0 ? 2.0 * static_cast<double>(bytes) / (best_ms * 1e-3) : 0;
}

struct WorkerState {
    ParentChannel* channel = nullptr;
    MeasuringLock share;  // inert unless the setup shares the GPU
    std::unique_ptr<GpuContext> context;
    std::string cupti_problem;
    std::unique_ptr<InternalKernels> kernels;
    std::unique_ptr<Task> task;
    std::unique_ptr<LoadedKernels> reference;
    std::unique_ptr<TorchReference> program;  // tasks whose reference is a PyTorch program
    ParamPoint reference_params;
    std::unique_ptr<Workspace> workspace;
    std::unique_ptr<Timer> timer;
    DevicePeaks peaks;
    std::unique_ptr<RangeProfiler> profiler;
    std::unique_ptr<CandidateRunner> runner;
};

Json handle_device(WorkerState& state)
{
    if (std::string problem = load_cuda_driver(); !problem.empty())
        return Json{{"ok", false}, {"error", problem}, {"no_gpu", true}};
    if (!state.context) {
        try {
            state.context = std::make_unique<GpuContext>();
        } catch (const CudaError& e) {
            return Json{{"ok", false}, {"error", fmt::format("no usable NVIDIA GPU: {}", e.what())}, {"no_gpu", true}};
        }
        state.cupti_problem = ActivityTracer::start();
    }
    return Json{{"ok", true}, {"device", state.context->facts().to_json()}, {"cupti", state.cupti_problem}};
}

// Every device the driver shows this process, in the driver's order, without creating a context:
// how the controller learns which GPUs a host has (evaluator/gpu/devices.hpp).
Json handle_devices()
{
    if (std::string problem = load_cuda_driver(); !problem.empty())
        return Json{{"ok", false}, {"error", problem}, {"no_gpu", true}};
    const auto& cu = driver();
    Json devices = Json::array();
    try {
        KF_CU_CHECK(cu.cuInit(0));
        int count = 0;
        KF_CU_CHECK(cu.cuDeviceGetCount(&count));
        for (int ordinal = 0; ordinal < count; ++ordinal) {
            CUdevice device = 0;
            KF_CU_CHECK(cu.cuDeviceGet(&device, ordinal));
            DeviceFacts facts = read_device_facts(device);
            facts.ordinal = ordinal;
            devices.push_back(facts.to_json());
        }
    } catch (const CudaError& e) {
        return Json{{"ok", false}, {"error", fmt::format("no usable NVIDIA GPU: {}", e.what())}, {"no_gpu", true}};
    }
    return Json{{"ok", true}, {"devices", devices}};
}

// Can this process read hardware counters? Profiles one small internal kernel.
Json handle_probe_counters(WorkerState& state)
{
    if (!state.context)
        if (Json device = handle_device(state); !device["ok"].get<bool>())
            return device;
    InternalKernels kernels(*state.context, "");
    DeviceMemory memory(1 << 20);
    RangeProfiler profiler(*state.context);
    std::string problem;
    auto values = profiler.profile([] {}, [&] { kernels.fill_pattern(memory.get(), memory.bytes(), 1); }, problem);
    if (!problem.empty())
        return Json{{"ok", true}, {"counters", problem}};
    return Json{{"ok", true}, {"counters", ""}, {"dram_bytes_written", values["dram_bytes_written"]}};
}

// What every task's worker needs after its workspace: the timer, the device's peaks, the
// profiler and the runner.
void make_runner(WorkerState& state)
{
    MeasuringLock::Hold hold = state.share.hold("setup"); // the copy-bandwidth probe runs kernels
    const Task& task = *state.task;
    size_t flush = std::max<size_t>(size_t{256} << 20, 4 * static_cast<size_t>(state.context->facts().l2_bytes));
    state.timer = std::make_unique<Timer>(*state.context, *state.kernels, flush);
    state.peaks = theoretical_peaks(state.context->facts());
    state.peaks.measured_dram_bytes_per_s = measure_copy_bandwidth(*state.context);
    state.profiler = std::make_unique<RangeProfiler>(*state.context);
    state.runner = std::make_unique<CandidateRunner>(task, *state.context, *state.kernels, *state.workspace,
                                                     *state.timer, state.peaks, state.reference.get(),
                                                     task.reference.plan, state.reference_params, *state.profiler,
                                                     state.program.get());
}

// A task whose reference is a PyTorch program: its reference process instead of a compiled kernel.
Json setup_program(WorkerState& state, uint64_t secret, std::chrono::steady_clock::time_point begin)
{
    const Task& task = *state.task;
    state.program = std::make_unique<TorchReference>(task, "cuda");
    try {
        state.program->ensure_running();
    } catch (const Error& e) {
        return Json{{"ok", false}, {"error", e.what()}};
    }
    state.workspace = std::make_unique<Workspace>(task, *state.context, *state.kernels, secret, nullptr,
                                                  task.reference.plan, ParamPoint{}, state.program.get());
    make_runner(state);
    const Json& program = state.program->setup_reply();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    return Json{{"ok", true},
                {"peaks", state.peaks.to_json()},
                {"setup_seconds", seconds},
                {"internal_compile_seconds", state.kernels->compile_seconds()},
                {"reference_compile_seconds", 0.0},
                {"torch", program.value("torch", "")},
                {"counters", state.profiler->problem()}};
}

Json handle_setup(WorkerState& state, const Json& request)
{
    if (!state.context)
        if (Json device = handle_device(state); !device["ok"].get<bool>())
            return device;
    if (!state.cupti_problem.empty())
        return Json{{"ok", false}, {"error", "CUPTI activity tracing is unavailable, so kforge cannot time kernels: " +
                                                 state.cupti_problem}};
    auto begin = std::chrono::steady_clock::now();
    if (std::string dir = request.value("gpu_share_dir", ""); !dir.empty()) {
        ParentChannel* channel = state.channel;
        state.share.configure(dir, state.context->facts().uuid, [channel](std::string_view event) {
            channel->send(encode_message(Json{{"interim", fmt::format("gpu_lock_{}", event)}}));
        });
    }
    std::filesystem::path cache_dir = request.value("cache_dir", "");
    state.task = std::make_unique<Task>(load_task(request.at("task_path").get<std::string>()));
    state.kernels = std::make_unique<InternalKernels>(*state.context, cache_dir);

    const Task& task = *state.task;
    uint64_t secret = request.value("run_secret", uint64_t{0});
    if (task.is_torch())
        return setup_program(state, secret, begin);
    CompileRequest compile = reference_compile_request(task, state.context->facts().arch());
    state.reference_params = compile.params;
    // Through the CUBIN cache when there is one: a run's first second matters (time to first result).
    CompileResult compiled = compile_through_cache(compile, cache_dir);
    if (!compiled.ok)
        return Json{{"ok", false}, {"error", fmt::format("the task's reference does not compile:\n{}", compiled.message)}};
    state.reference = std::make_unique<LoadedKernels>(compiled.cubin, compile.kernels);
    state.workspace = std::make_unique<Workspace>(task, *state.context, *state.kernels, secret, state.reference.get(),
                                                  task.reference.plan, state.reference_params);
    make_runner(state);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    return Json{{"ok", true},
                {"peaks", state.peaks.to_json()},
                {"setup_seconds", seconds},
                {"internal_compile_seconds", state.kernels->compile_seconds()},
                {"reference_compile_seconds", compiled.seconds},
                {"reference_behaviour_hash", cubin_behaviour_hash(compiled.cubin)},
                {"counters", state.profiler->problem()}};
}

// The session's baselines: the reference and, when asked, the task's vendor routines.
Json handle_time_reference(WorkerState& state, const Json& request)
{
    if (!state.runner)
        return Json{{"ok", false}, {"error", "time_reference before setup"}};
    const VendorLibrary* library = nullptr;
    Json library_json = Json::object();
    if (request.value("vendor", false) && !state.task->vendor_baselines.empty()) {
        library = &VendorLibrary::shared();
        library_json = Json{{"path", library->path().string()}, {"versions", library->versions()},
                            {"reason", library->reason()}};
    }
    bool compile = request.value("vendor", false);
    if (state.task->is_torch() && compile && state.share.configured())
        state.runner->warm_program_compile(); // its CPU work, before the lock
    MeasuringLock::Hold hold = state.share.hold("baselines");
    BaselineTimings timings =
        state.task->is_torch()
            ? state.runner->time_program_baselines(compile)
            : state.runner->time_baselines(parse_level(request.value("level", "quick")), library,
                                           std::chrono::milliseconds(request.value("deadline_ms", 60000)));
    if (!timings.problem.empty())
        return Json{{"ok", false}, {"error", timings.problem}};
    Json list = Json::array();
    for (const auto& m : timings.measurements)
        list.push_back(measurement_to_json(m));
    Json vendor = Json::array();
    for (const auto& status : timings.vendor)
        vendor.push_back(vendor_status_to_json(status));
    return Json{{"ok", true}, {"measurements", list}, {"vendor", vendor}, {"vendor_library", library_json}};
}

// PyTorch-program tasks: does the program itself pass the task's check on these shape sets?
Json handle_check_program(WorkerState& state, const Json& request)
{
    if (!state.runner || !state.task->is_torch())
        return Json{{"ok", false}, {"error", "check_program needs a PyTorch-program task set up"}};
    std::vector<const Shape*> shapes;
    for (const auto& set : request.value("sets", Json::array({"tests"}))) {
        const std::string name = set.get<std::string>();
        const auto& list = name == "bench" ? state.task->bench : name == "held_out" ? state.task->held_out : state.task->tests;
        for (const auto& shape : list)
            shapes.push_back(&shape);
    }
    MeasuringLock::Hold hold = state.share.hold("check_program");
    return Json{{"ok", true}, {"problem", state.runner->check_program(shapes)}};
}

Json handle_run_variant(WorkerState& state, const Json& request)
{
    if (!state.runner)
        return Json{{"ok", false}, {"error", "run_variant before setup"}};
    VariantRequest variant;
    const auto& binary = request.at("cubin").get_binary();
    variant.cubin.assign(binary.begin(), binary.end());
    try {
        variant.plan = parse_plan(request.at("plan"), "plan");
    } catch (const PlanError& e) {
        return Json{{"ok", true}, {"verdict", {{"kind", "plan_error"}, {"message", e.what()}}}, {"restart", false}};
    }
    for (const auto& [name, value] : request.at("params").items())
        variant.params[name] = value.get<int64_t>();
    variant.verify_tests = request.value("verify_tests", true);
    variant.verify_held_out = request.value("verify_held_out", false);
    variant.timing = parse_level(request.value("timing", "quick"));
    variant.launch_deadline = std::chrono::milliseconds(request.value("deadline_ms", 10000));
    variant.profile = request.value("profile", false);
    VariantOutcome outcome = [&] {
        MeasuringLock::Hold hold = state.share.hold("variant");
        return state.runner->run(variant);
    }();
    Json measurements = Json::array();
    for (const auto& m : outcome.measurements)
        measurements.push_back(measurement_to_json(m));
    return Json{{"ok", true},
                {"verdict", {{"kind", verdict_name(outcome.verdict.kind)}, {"message", outcome.verdict.message}}},
                {"restart", outcome.restart_worker},
                {"measurements", measurements},
                {"resources", outcome.resources},
                {"notes", outcome.notes},
                {"profile", outcome.profile}};
}

} // namespace

int run_gpu_worker()
{
    if (simulated_gpus_requested())
        return run_simulated_gpu_worker();
    ParentChannel channel = ParentChannel::adopt();
    install_crash_trace("kforge GPU worker");
    leave_interrupts_to_controller();
    WorkerState state;
    state.channel = &channel;
    while (auto frame = channel.receive()) {
        Json reply;
        try {
            Json request = decode_message(*frame);
            std::string op = request.value("op", "");
            if (op == "devices")
                reply = handle_devices();
            else if (op == "device")
                reply = handle_device(state);
            else if (op == "probe_counters")
                reply = handle_probe_counters(state);
            else if (op == "setup")
                reply = handle_setup(state, request);
            else if (op == "time_reference")
                reply = handle_time_reference(state, request);
            else if (op == "run_variant")
                reply = handle_run_variant(state, request);
            else if (op == "check_program")
                reply = handle_check_program(state, request);
            else
                reply = Json{{"ok", false}, {"error", "unknown op '" + op + "'"}};
        } catch (const CudaError& e) {
            reply = Json{{"ok", false}, {"error", e.what()}, {"restart", e.sticky()}};
        } catch (const std::exception& e) {
            reply = Json{{"ok", false}, {"error", e.what()}};
        }
        if (state.share.configured())
            reply["gpu_lock_wait_s"] = state.share.take_waited_s();
        if (!channel.send(encode_message(reply)))
            return 1;
        // A lost context may still run a spinning kernel: leave without destructors or atexit
        // handlers (which would synchronize with it); process exit tears the context down.
        if (reply.value("restart", false) || context_lost())
            std::_Exit(0);
    }
    return 0;
}

} // namespace kforge
