// Talking to python/kforge_torch/reference.py: start, set up, prepare, time; restart after failures.
#include "evaluator/worker/torch_reference.hpp"

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/rng.hpp"
#include "util/torch_python.hpp"

namespace kforge {
namespace {

// The program's size variables at `shape`: its free symbols only. A shape also holds the derived
// symbols of the spec (`out_d2 = height - 2`), which are no module variables of the program, and the
// reference process refuses sizes that are not exactly the setup's symbols.
Json sizes_json(const Task& task, const Shape& shape)
{
    Json sizes = Json::object();
    for (const auto& symbol : task.symbols)
        sizes[symbol.name] = shape.sizes.at(symbol.name);
    return sizes;
}

std::string_view outputs_name(ProgramOutputs outputs)
{
    switch (outputs) {
    case ProgramOutputs::expected: return "expected";
    case ProgramOutputs::program: return "program";
    case ProgramOutputs::none: break;
    }
    return "inputs";
}

ProgramTiming timing_from_json(const std::string& mode, const Json& json)
{
    ProgramTiming timing;
    timing.mode = mode;
    if (!json.is_object()) {
        timing.problem = "not timed";
        return timing;
    }
    timing.problem = json.value("error", "");
    timing.median_ns = json.value("median_ns", 0.0);
    timing.q1_ns = json.value("q1_ns", 0.0);
    timing.q3_ns = json.value("q3_ns", 0.0);
    timing.min_ns = json.value("min_ns", 0.0);
    timing.samples = json.value("samples", 0);
    timing.compile_seconds = json.value("compile_seconds", 0.0);
    timing.method = json.value("method", "");
    if (timing.problem.empty() && !(timing.median_ns > 0))
        timing.problem = "no samples";
    return timing;
}

} // namespace

Json TensorLocation::to_json() const
{
    Json json{{"offset", offset}, {"bytes", bytes}};
    if (!ipc_handle.empty())
        json["ipc"] = ipc_handle;
    else
        json["file"] = file;
    return json;
}

Json torch_setup_request(const Task& task, const std::string& device)
{
    Json args = Json::array();
    for (const auto& arg : task.args) {
        if (arg.from.kind == ProgramSlot::Kind::none)
            continue;
        Json entry{{"name", arg.name}, {"kind", arg.is_tensor ? "tensor" : "scalar"},
                   {"dtype", std::string(dtype_name(arg.dtype))}};
        switch (arg.from.kind) {
        case ProgramSlot::Kind::input: entry["role"] = "input", entry["index"] = arg.from.index; break;
        case ProgramSlot::Kind::output: entry["role"] = "output", entry["index"] = arg.from.index; break;
        case ProgramSlot::Kind::param: entry["role"] = "param", entry["key"] = arg.from.key; break;
        case ProgramSlot::Kind::none: break;
        }
        args.push_back(std::move(entry));
    }
    Json symbols = Json::array();
    for (const auto& symbol : task.symbols)
        symbols.push_back(symbol.name);
    return Json{{"op", "setup"},
                {"problem", std::filesystem::absolute(task.reference.path).string()},
                {"symbols", symbols},
                {"args", args},
                {"device", device}};
}

TorchReference::TorchReference(const Task& task, std::string device, TorchLimits limits)
    : m_task(task), m_device(std::move(device)), m_limits(limits)
{
}

TorchReference::~TorchReference() { m_process.finish(std::chrono::seconds(5)); }

uint64_t TorchReference::param_seed(uint64_t input_seed) { return splitmix64(input_seed ^ 0x706172616d73ULL); }

void TorchReference::start()
{
    const TorchPython& python = torch_python();
    if (python.executable.empty())
        fail_runtime("the task's reference is a PyTorch program, but {}", python.problem);
    SpawnSpec spec;
    spec.executable = python.executable;
    spec.args = {"-m", "kforge_torch.reference"};
    spec.env = python.env();
    spec.contained = true; // the program is code someone handed us: what it starts ends with it
    m_process = Subprocess::spawn(spec);
    Json request = torch_setup_request(m_task, m_device);
    std::string frame = request.dump();
    if (!m_process.send(frame))
        fail_runtime("the PyTorch reference process ({}) exited at once: {}", python.executable,
                     m_process.exit_description());
    std::string reply_text;
    ReceiveStatus status = m_process.receive(reply_text, m_limits.setup);
    if (status != ReceiveStatus::ok) {
        m_process.kill();
        fail_runtime("the PyTorch reference process did not set up ({}): {}",
                     status == ReceiveStatus::timeout
                         ? fmt::format("no reply within {:.0f} s", m_limits.setup.count() / 1000.0)
                         : "it stopped",
                     m_process.exit_description());
    }
    Json reply = Json::parse(reply_text, nullptr, false);
    if (!reply.is_object() || !reply.value("ok", false)) {
        m_process.kill();
        fail_runtime("the PyTorch program could not be set up: {}",
                     reply.is_object() ? reply.value("error", "no reason given") : "a malformed reply");
    }
    m_setup = reply;
    log_debug("PyTorch reference process: torch {} on {}", reply.value("torch", "?"), reply.value("device", "?"));
}

void TorchReference::ensure_running()
{
    if (!m_process.running())
        start();
}

Json TorchReference::call(const Json& request, std::chrono::milliseconds limit)
{
    if (!m_process.running())
        start();
    if (!m_process.send(request.dump())) {
        m_process.kill();
        fail_runtime("the PyTorch reference process stopped: {}", m_process.exit_description());
    }
    std::string reply_text;
    ReceiveStatus status = m_process.receive(reply_text, limit);
    if (status != ReceiveStatus::ok) {
        m_process.kill(); // the next call starts a fresh one
        fail_runtime("the PyTorch reference process {} during '{}'{}",
                     status == ReceiveStatus::timeout
                         ? fmt::format("gave no reply within {:.0f} s", limit.count() / 1000.0)
                         : "stopped",
                     request.value("op", ""),
                     m_process.exit_description().empty() ? "" : ": " + m_process.exit_description());
    }
    Json reply = Json::parse(reply_text, nullptr, false);
    if (!reply.is_object()) {
        m_process.kill();
        fail_runtime("the PyTorch reference process sent a malformed reply to '{}'", request.value("op", ""));
    }
    if (!reply.value("ok", false))
        fail_runtime("the PyTorch program failed ({}): {}", request.value("op", ""), reply.value("error", "no reason given"));
    return reply;
}

Json TorchReference::prepare(const Shape& shape, uint64_t input_seed, ProgramOutputs outputs,
                             const TensorLocations& buffers)
{
    Json locations = Json::object();
    for (const auto& [name, location] : buffers)
        locations[name] = location.to_json();
    Json request{{"op", "prepare"},
                 {"sizes", sizes_json(m_task, shape)},
                 {"input_seed", input_seed},
                 {"param_seed", param_seed(input_seed)},
                 {"what", outputs_name(outputs)},
                 {"buffers", locations}};
    return call(request, m_limits.prepare);
}

std::vector<ProgramTiming> TorchReference::time(const Shape& shape, uint64_t input_seed, bool compile,
                                                uint64_t flush_bytes)
{
    Json modes = compile ? Json::array({"eager", "compile"}) : Json::array({"eager"});
    Json request{{"op", "time"},
                 {"sizes", sizes_json(m_task, shape)},
                 {"input_seed", input_seed},
                 {"param_seed", param_seed(input_seed)},
                 {"modes", modes},
                 {"flush_bytes", flush_bytes},
                 {"min_samples", 20},
                 {"max_samples", 400},
                 {"target_seconds", 0.5},
                 {"compile_limit_seconds", 300}};
    Json reply = call(request, m_limits.time);
    std::vector<ProgramTiming> out;
    for (const auto& mode : modes)
        out.push_back(timing_from_json(mode.get<std::string>(), reply.value(mode.get<std::string>(), Json())));
    return out;
}

std::string TorchReference::warm_compile(const Shape& shape, uint64_t input_seed)
{
    Json request{{"op", "warm_compile"},
                 {"sizes", sizes_json(m_task, shape)},
                 {"input_seed", input_seed},
                 {"param_seed", param_seed(input_seed)},
                 {"limit_seconds", 300}};
    try {
        Json reply = call(request, m_limits.time);
        if (reply.value("warmed", false)) {
            log_debug("torch.compile warmed ahead on {} in {:.1f} s", shape.label, reply.value("seconds", 0.0));
            return "";
        }
        return reply.value("note", std::string("not warmed"));
    } catch (const Error& e) {
        return e.what();
    }
}

} // namespace kforge
