// The simulated GPU worker; see worker/simulator.hpp for the landscape and why it exists.
#include "evaluator/worker/simulator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "core/plan.hpp"
#include "core/plan_check.hpp"
#include "core/task.hpp"
#include "evaluator/compile/compile_cache.hpp"
#include "evaluator/compile/cubin_info.hpp"
#include "evaluator/worker/share.hpp"
#include "evaluator/worker/roofline.hpp"
#include "evaluator/worker/worker_protocol.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/interrupt.hpp"
#include "util/subprocess.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

std::string env_text(const char* name)
{
    const char* value = std::getenv(name);
    return value ? trim(value) : std::string();
}

DeviceFacts simulated_facts(const std::string& name, size_t position)
{
    DeviceFacts facts;
    facts.name = name;
    facts.uuid = fmt::format("GPU-5140a7ed-0000-4000-8000-{:012x}", position);
    facts.ordinal = static_cast<int>(position);
    facts.cc_major = 9;
    facts.cc_minor = 0;
    facts.sm_count = 132;
    facts.max_threads_per_sm = 2048;
    facts.max_threads_per_block = 1024;
    facts.max_smem_per_block_optin = 232448;
    facts.smem_per_sm = 233472;
    facts.regs_per_sm = 65536;
    facts.l2_bytes = 50 << 20;
    facts.clock_khz = 1980000;
    facts.memory_clock_khz = 2619000;
    facts.memory_bus_bits = 5120;
    facts.total_memory = int64_t{80} << 30;
    facts.driver_version = 13000;
    return facts;
}

// The devices a worker sees: the simulated machine under CUDA_VISIBLE_DEVICES, as the driver reads it.
std::vector<DeviceFacts> visible_devices()
{
    const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
    return cuda_visible_devices(simulated_devices(env_text(k_simulate_gpus_env)),
                                mask ? std::optional<std::string>(mask) : std::nullopt);
}

Measurement timed(const Shape& shape, const std::string& subject, double median_ns, bool confirmed)
{
    Measurement m;
    m.shape_set = "bench";
    m.shape_label = shape.label;
    m.subject = subject;
    m.median_ns = median_ns;
    m.q1_ns = median_ns * 0.995;
    m.q3_ns = median_ns * 1.005;
    m.min_ns = median_ns * 0.99;
    m.samples = confirmed ? 100 : 30;
    m.sm_clock_mhz = 1980;
    m.confirmed = confirmed;
    return m;
}

// As the real worker does (worker/serve.cpp): the reference compiled for the device, through the
// CUBIN cache, so that the controller's memo answers the reference candidate's timing with the
// baselines, as on a GPU. "" when it does not compile (the controller then finds out itself).
std::string reference_behaviour_hash(const Task& task, const std::string& arch, const std::filesystem::path& cache_dir)
{
    CompileResult compiled = compile_through_cache(reference_compile_request(task, arch), cache_dir);
    return compiled.ok ? cubin_behaviour_hash(compiled.cubin) : "";
}

bool landscape_from_plan()
{
    std::string landscape = env_text(k_simulate_gpu_landscape_env);
    if (landscape.empty() || landscape == "cubin")
        return false;
    if (landscape == "plan")
        return true;
    fail(ErrorKind::usage, "{}={}: expected cubin (the default) or plan", k_simulate_gpu_landscape_env, landscape);
}

class SimulatedGpu
{
public:
    explicit SimulatedGpu(ParentChannel& channel) : m_channel(channel) {}
    Json serve(const Json& request);
    MeasuringLock& share() { return m_share; }

private:
    Json device();
    Json setup(const Json& request);
    Json time_reference(const Json& request);
    Json run_variant(const Json& request);
    // The real runner's plan checks at every shape it would run: "" or the plan error.
    std::string plan_problem(const Json& request) const;
    double reference_ns(const Shape& shape) const;
    // `ns` with this worker's noise: a draw within +-noise, a quarter of it for a confirmation.
    double noisy(double ns, bool confirmed);
    void spend(double units) const;

    ParentChannel& m_channel;
    MeasuringLock m_share;
    std::vector<DeviceFacts> m_visible = visible_devices();
    SimulatedCosts m_costs = parse_simulated_costs(env_text(k_simulate_gpu_costs_env));
    double m_noise = parse_simulated_noise(env_text(k_simulate_gpu_noise_env));
    bool m_plan_landscape = landscape_from_plan();
    std::mt19937_64 m_rng{std::random_device{}()};
    std::unique_ptr<Task> m_task;
    DevicePeaks m_peaks;
};

Json SimulatedGpu::serve(const Json& request)
{
    std::string op = request.value("op", "");
    if (op == "devices") {
        Json devices = Json::array();
        for (const auto& facts : m_visible)
            devices.push_back(facts.to_json());
        return Json{{"ok", true}, {"devices", devices}};
    }
    if (op == "device")
        return device();
    if (op == "probe_counters")
        return Json{{"ok", true}, {"counters", "a simulated GPU has no hardware counters"}};
    if (op == "setup")
        return setup(request);
    if (op == "time_reference")
        return time_reference(request);
    if (op == "check_program")
        return Json{{"ok", false}, {"error", "a simulated GPU runs no PyTorch program"}};
    if (op == "run_variant")
        return run_variant(request);
    return Json{{"ok", false}, {"error", "unknown op '" + op + "'"}};
}

Json SimulatedGpu::device()
{
    if (m_visible.empty())
        return Json{{"ok", false},
                    {"error", "no usable NVIDIA GPU: CUDA_VISIBLE_DEVICES hides every simulated GPU"},
                    {"no_gpu", true}};
    return Json{{"ok", true}, {"device", m_visible.front().to_json()}, {"cupti", ""}};
}

Json SimulatedGpu::setup(const Json& request)
{
    if (m_visible.empty())
        return device();
    auto begin = std::chrono::steady_clock::now();
    if (std::string dir = request.value("gpu_share_dir", ""); !dir.empty()) {
        ParentChannel* channel = &m_channel;
        m_share.configure(dir, m_visible.front().uuid, [channel](std::string_view event) {
            channel->send(encode_message(Json{{"interim", fmt::format("gpu_lock_{}", event)}}));
        });
    }
    m_task = std::make_unique<Task>(load_task(request.at("task_path").get<std::string>()));
    // Start-up off the GPU (a real worker's context, compiles, a PyTorch reference process), then
    // the copy-bandwidth probe, on it.
    std::string startup = env_text(k_simulate_gpu_setup_ms_env);
    if (double ms = startup.empty() ? 0.0 : std::atof(startup.c_str()); ms > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(1000 * ms)));
    {
        MeasuringLock::Hold hold = m_share.hold("setup");
        spend(0.1);
    }
    m_peaks = theoretical_peaks(m_visible.front());
    m_peaks.measured_dram_bytes_per_s = 0.9 * m_peaks.dram_bytes_per_s;
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    Json reply{{"ok", true}, {"peaks", m_peaks.to_json()}, {"setup_seconds", seconds}, {"counters", "simulated"}};
    if (!m_task->is_torch())
        reply["reference_behaviour_hash"] =
            reference_behaviour_hash(*m_task, m_visible.front().arch(), request.value("cache_dir", ""));
    return reply;
}

double SimulatedGpu::reference_ns(const Shape& shape) const
{
    return 2000.0 + 1.6 * roofline_at(*m_task, shape, m_peaks).roofline_ns;
}

double SimulatedGpu::noisy(double ns, bool confirmed)
{
    double spread = confirmed ? m_noise / 4 : m_noise;
    if (spread <= 0)
        return ns;
    return ns * std::uniform_real_distribution<double>(1 - spread, 1 + spread)(m_rng);
}

// Sleeps `units` times KFORGE_SIMULATE_GPU_MS (20 ms unless set).
void SimulatedGpu::spend(double units) const
{
    std::string text = env_text(k_simulate_gpu_ms_env);
    double unit_ms = text.empty() ? 20.0 : std::atof(text.c_str());
    if (unit_ms * units > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(1000 * unit_ms * units)));
}

Json SimulatedGpu::time_reference(const Json& request)
{
    if (!m_task)
        return Json{{"ok", false}, {"error", "time_reference before setup"}};
    {
        MeasuringLock::Hold hold = m_share.hold("baselines");
        spend(m_costs.baselines);
    }
    bool confirmed = request.value("level", "quick") == "confirm";
    Json measurements = Json::array();
    for (const auto& shape : m_task->bench)
        measurements.push_back(measurement_to_json(timed(shape, "reference", noisy(reference_ns(shape), confirmed), confirmed)));
    Json vendor = Json::array();
    for (const auto& routine : m_task->vendor_baselines)
        vendor.push_back(vendor_status_to_json(
            {routine, std::string(vendor_baseline_library(routine)), false, "a simulated GPU has no vendor libraries"}));
    // A PyTorch program's second baseline, torch.compile, simulated 1.25x faster than eager when asked.
    if (m_task->is_torch()) {
        bool compile = request.value("vendor", false);
        if (compile)
            for (const auto& shape : m_task->bench)
                measurements.push_back(
                    measurement_to_json(timed(shape, "torch_compile", reference_ns(shape) / 1.25, confirmed)));
        vendor.push_back(vendor_status_to_json(
            {"torch_compile", "PyTorch", compile, compile ? "" : "switched off for this session"}));
    }
    return Json{{"ok", true}, {"measurements", measurements}, {"vendor", vendor}, {"vendor_library", Json::object()}};
}

std::string SimulatedGpu::plan_problem(const Json& request) const
{
    try {
        Plan plan = parse_plan(request.at("plan"), "plan");
        ParamPoint params;
        for (const auto& [name, value] : request.at("params").items())
            params[name] = value.get<int64_t>();
        std::vector<const std::vector<Shape>*> lists{&m_task->tests, &m_task->stress, &m_task->bench};
        if (request.value("verify_held_out", false))
            lists.push_back(&m_task->held_out);
        for (const auto* list : lists)
            for (const auto& shape : *list)
                resolve_plan(*m_task, plan, shape, params);
    } catch (const PlanError& e) {
        return e.what();
    }
    return "";
}

Json SimulatedGpu::run_variant(const Json& request)
{
    if (!m_task)
        return Json{{"ok", false}, {"error", "run_variant before setup"}};
    std::string timing = request.value("timing", "quick");
    const auto& cubin = request.at("cubin").get_binary();
    std::string identity = m_plan_landscape ? request.at("plan").dump() : std::string(cubin.begin(), cubin.end());
    uint64_t h = hash64(identity, hash64(request.at("params").dump()));
    double confirm = m_costs.confirm * (1 + m_costs.confirm_spread * static_cast<double>(hash64(identity, 7) % 1000) / 1000.0);
    MeasuringLock::Hold hold = m_share.hold("variant");
    spend((request.value("verify_tests", false) ? m_costs.verify : 0.0) +
          (timing == "confirm" ? confirm : timing == "none" ? 0.0 : m_costs.screen) +
          (request.value("profile", false) ? m_costs.profile : 0.0) +
          (request.value("verify_held_out", false) ? m_costs.held_out : 0.0));
    auto verdict = [](const char* kind, const std::string& message) {
        return Json{{"kind", kind}, {"message", message}};
    };
    // As the real runner does first: a plan that does not fit some shape (a library step that would
    // overrun an operand, a launch past the limits) is a plan error before anything runs.
    if (std::string problem = plan_problem(request); !problem.empty())
        return Json{{"ok", true}, {"restart", false}, {"measurements", Json::array()},
                    {"verdict", verdict("plan_error", problem)}};
    if (h % 100 < 5)
        return Json{{"ok", true}, {"restart", false}, {"measurements", Json::array()},
                    {"verdict", verdict("incorrect", "output differs at index 17: expected 0.125, got 0.25 (simulated)")}};
    if (h % 100 < 7)
        return Json{{"ok", true}, {"restart", true}, {"measurements", Json::array()},
                    {"verdict", verdict("runtime_error", "CUDA_ERROR_ILLEGAL_ADDRESS (simulated fault)")}};
    if (request.value("verify_held_out", false) && (h >> 24) % 16 == 0)
        return Json{{"ok", true}, {"restart", false}, {"measurements", Json::array()},
                    {"verdict", verdict("held_out_failed", "wrong on a held-out shape (simulated)")}};
    std::string level = request.value("timing", "quick");
    bool confirmed = level == "confirm";
    double speed = 0.5 + static_cast<double>((h >> 8) % 1000) / 1000.0;
    Json measurements = Json::array();
    if (level != "none")
        for (size_t i = 0; i < m_task->bench.size(); ++i) {
            const Shape& shape = m_task->bench[i];
            double shape_factor = 0.9 + 0.2 * static_cast<double>((h >> (12 + 4 * (i % 8))) % 16) / 15.0;
            measurements.push_back(
                measurement_to_json(timed(shape, "candidate", noisy(reference_ns(shape) / (speed * shape_factor), confirmed), confirmed)));
            if (confirmed)
                measurements.push_back(measurement_to_json(timed(shape, "reference", noisy(reference_ns(shape), true), true)));
        }
    Json occupancy = Json::array();
    for (size_t i = 0; i < request.at("plan").value("launches", Json::array()).size(); ++i)
        occupancy.push_back(0.25 * static_cast<double>(1 + (h >> (40 + 2 * (i % 8))) % 4));
    return Json{{"ok", true},
                {"restart", false},
                {"verdict", verdict("correct", "")},
                {"measurements", measurements},
                {"resources", Json{{"theoretical_occupancy", occupancy}}},
                {"notes", Json::object()},
                {"profile", Json::object()}};
}

} // namespace

bool simulated_gpus_requested()
{
    return !env_text(k_simulate_gpus_env).empty();
}

SimulatedCosts parse_simulated_costs(const std::string& spec)
{
    SimulatedCosts costs;
    std::map<std::string, double*> fields{{"verify", &costs.verify},   {"screen", &costs.screen},
                                          {"confirm", &costs.confirm}, {"profile", &costs.profile},
                                          {"held_out", &costs.held_out}, {"baselines", &costs.baselines},
                                          {"confirm_spread", &costs.confirm_spread}};
    for (const auto& pair : split(trim(spec), ',')) {
        if (trim(pair).empty())
            continue;
        auto equals = pair.find('=');
        std::string name = trim(pair.substr(0, equals));
        auto field = fields.find(name);
        if (equals == std::string::npos || field == fields.end())
            fail(ErrorKind::usage, "{}={}: '{}' is not NAME=UNITS with NAME one of verify, screen, confirm, profile, "
                 "held_out, baselines, confirm_spread", k_simulate_gpu_costs_env, spec, trim(pair));
        std::string value = trim(pair.substr(equals + 1));
        char* end = nullptr;
        double units = value.empty() ? -1 : std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !(units >= 0 && units <= 1000))
            fail(ErrorKind::usage, "{}={}: {} must be a number of units from 0 to 1000, got '{}'", k_simulate_gpu_costs_env,
                 spec, name, value);
        *field->second = units;
    }
    return costs;
}

double parse_simulated_noise(const std::string& spec)
{
    std::string text = trim(spec);
    if (text.empty())
        return 0;
    char* end = nullptr;
    double noise = std::strtod(text.c_str(), &end);
    if (*end != '\0' || !(noise >= 0 && noise <= 0.5))
        fail(ErrorKind::usage, "{}={}: expected a relative spread from 0 to 0.5 (0.01: times off by up to 1%)",
             k_simulate_gpu_noise_env, spec);
    return noise;
}

std::vector<DeviceFacts> simulated_devices(const std::string& spec)
{
    std::vector<std::string> names;
    std::string text = trim(spec);
    bool count = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    if (count) {
        int n = text.size() <= 2 ? std::stoi(text) : 0;
        if (n < 1 || n > 64)
            fail(ErrorKind::usage, "{}={}: expected 1 to 64 GPUs, or their names separated by commas",
                 k_simulate_gpus_env, spec);
        names.assign(static_cast<size_t>(n), "kforge simulated GPU");
    } else {
        for (const auto& name : split(text, ','))
            names.push_back(trim(name).empty() ? "kforge simulated GPU" : trim(name));
    }
    std::vector<DeviceFacts> devices;
    for (size_t i = 0; i < names.size(); ++i)
        devices.push_back(simulated_facts(names[i], i));
    return devices;
}

std::vector<DeviceFacts> cuda_visible_devices(const std::vector<DeviceFacts>& machine, const std::optional<std::string>& mask)
{
    if (!mask)
        return machine;
    std::vector<std::string> entries = split(*mask, ',');
    for (auto& entry : entries)
        entry = trim(entry);
    // UUIDs, none a simulated GPU's (not even in part): the value is about the machine's real GPUs.
    auto names_uuid = [](const std::string& entry) { return entry.rfind("GPU-", 0) == 0 || entry.rfind("MIG-", 0) == 0; };
    auto names_simulated = [&](const std::string& entry) {
        return std::any_of(machine.begin(), machine.end(),
                           [&](const DeviceFacts& facts) { return facts.uuid.rfind(entry, 0) == 0; });
    };
    if (std::any_of(entries.begin(), entries.end(), names_uuid) &&
        std::none_of(entries.begin(), entries.end(),
                     [&](const std::string& entry) { return names_uuid(entry) && names_simulated(entry); }))
        return machine;
    // The device an entry names: an index of the machine, or a UUID or a prefix of exactly one.
    auto named = [&](const std::string& entry) -> std::optional<size_t> {
        bool index = !entry.empty() && entry.size() <= 4 && entry.find_first_not_of("0123456789") == std::string::npos;
        if (index) {
            auto position = static_cast<size_t>(std::stoi(entry));
            return position < machine.size() ? std::optional<size_t>(position) : std::nullopt;
        }
        if (entry.rfind("GPU-", 0) != 0)
            return std::nullopt;
        std::optional<size_t> found;
        for (size_t i = 0; i < machine.size(); ++i)
            if (machine[i].uuid.rfind(entry, 0) == 0) {
                if (found)
                    return std::nullopt; // a prefix of several names none
                found = i;
            }
        return found;
    };
    std::vector<DeviceFacts> shown;
    std::vector<size_t> taken;
    for (const auto& entry : entries) {
        std::optional<size_t> position = named(entry);
        if (!position || std::find(taken.begin(), taken.end(), *position) != taken.end())
            break;
        taken.push_back(*position);
        shown.push_back(machine[*position]);
        shown.back().ordinal = static_cast<int>(shown.size() - 1);
    }
    return shown;
}

int run_simulated_gpu_worker()
{
    ParentChannel channel = ParentChannel::adopt();
    leave_interrupts_to_controller();
    SimulatedGpu gpu(channel);
    while (auto frame = channel.receive()) {
        Json reply;
        try {
            reply = gpu.serve(decode_message(*frame));
        } catch (const std::exception& e) {
            reply = Json{{"ok", false}, {"error", e.what()}};
        }
        if (gpu.share().configured())
            reply["gpu_lock_wait_s"] = gpu.share().take_waited_s();
        if (!channel.send(encode_message(reply)))
            return 1;
        if (reply.value("restart", false))
            return 0;
    }
    return 0;
}

} // namespace kforge
