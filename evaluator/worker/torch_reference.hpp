// The PyTorch reference process of a GPU worker (docs/torch-tasks.md).
//
// When a task's reference is a PyTorch program, the GPU worker keeps a python3 process beside it on
// the same GPU that runs python/kforge_torch/reference.py. For a shape and a pair of seeds it makes
// the inputs exactly as the program's get_inputs() does, builds the model from get_init_inputs(),
// and writes inputs, parameters and (when asked) the expected outputs straight into the worker's
// own allocations, which it opens through CUDA IPC handles: nothing crosses the host. The worker
// keeps every check it has (guards, checksums, poisoned outputs): the reference process only fills
// buffers the worker then owns and verifies, and it never sees a candidate.
//
// The process speaks frames of JSON over fds 3/4 (util/subprocess.hpp). It is started on first use,
// killed at a deadline, and started again after a crash or a hang; its failures are Error(runtime)
// with what it said, because a reference that cannot run is the task's problem, not a candidate's.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/task.hpp"
#include "util/json_reader.hpp"
#include "util/subprocess.hpp"

namespace kforge {

// Where the reference process finds one buffer: an IPC handle of a device allocation and the
// tensor's offset in it, or (tests without a GPU) a host file.
struct TensorLocation {
    std::string ipc_handle;      // hex of a CUipcMemHandle; or
    std::string file;            // a file holding the bytes
    uint64_t offset = 0;
    uint64_t bytes = 0;
    Json to_json() const;
};

using TensorLocations = std::map<std::string, TensorLocation, std::less<>>;

// What a prepare request writes besides the inputs and parameters.
enum class ProgramOutputs {
    none,                        // inputs and parameters only
    expected,                    // the outputs computed in fp64 where the program allows it
    program,                     // the outputs of the program in its own dtypes (its own check)
};

// One timed mode of the program on one shape ("eager", "compile").
struct ProgramTiming {
    std::string mode;
    std::string problem;         // non-empty: not timed (a compile failure, a time limit)
    double median_ns = 0, q1_ns = 0, q3_ns = 0, min_ns = 0;
    int samples = 0;
    double compile_seconds = 0;
    std::string method;          // "cuda events, L2 flushed by reading"
};

// How long the process may take to answer each kind of request before it counts as hung: it is
// then killed with everything it started (it runs under a keeper, util/contain.hpp) and the call
// throws. Building a model and computing a big shape's outputs in fp64 takes seconds, rarely
// minutes; torch.compile of one shape can take minutes (the process also limits each compile).
struct TorchLimits {
    std::chrono::milliseconds setup{std::chrono::minutes(3)};
    std::chrono::milliseconds prepare{std::chrono::minutes(5)};
    std::chrono::milliseconds time{std::chrono::minutes(15)};
};

class TorchReference
{
public:
    // `device` is "cuda" for the worker's GPU, "cpu" for tests without one.
    TorchReference(const Task& task, std::string device, TorchLimits limits = {});
    ~TorchReference();
    TorchReference(const TorchReference&) = delete;
    TorchReference& operator=(const TorchReference&) = delete;

    // The seeds of the program's parameters for an input seed: distinct from the inputs' so the
    // two draws are independent, and a function of the input seed so a (shape, trial) is one draw.
    static uint64_t param_seed(uint64_t input_seed);

    // Fills `buffers` (by argument name) for `shape`: every input and parameter named there, and
    // the outputs named there as `outputs` says. The caller has finished its own work on the
    // buffers (stream synchronized); on return the writes are complete. Returns the reply
    // ("precision": "fp64" or "own", "note", "seconds"). Throws Error(runtime).
    Json prepare(const Shape& shape, uint64_t input_seed, ProgramOutputs outputs, const TensorLocations& buffers);

    // Times the program on `shape` in the modes asked for (eager, and torch.compile when
    // `compile`), with an L2 flush of `flush_bytes` before every sample. Throws Error(runtime)
    // when eager timing fails; a compile failure is reported in its ProgramTiming.
    std::vector<ProgramTiming> time(const Shape& shape, uint64_t input_seed, bool compile, uint64_t flush_bytes);

    // torch.compile's CPU work for `shape`, done ahead on stand-in tensors without running anything
    // on the GPU (python/kforge_torch/timing.py: warm_compile), so that the compile time() makes
    // next finds torch's caches warm. Advice only: returns why it did not warm ("" when it did),
    // and never throws for the program's sake (a process that fails is restarted by the next call).
    std::string warm_compile(const Shape& shape, uint64_t input_seed);

    // Starts and sets up the process now (it is otherwise started on first use), so that a
    // missing python3 or torch, or a program that cannot be loaded, shows at once. Throws.
    void ensure_running();

    // What the process said when it was set up ("torch", "device").
    const Json& setup_reply() const { return m_setup; }

private:
    void start();
    // One request and its reply; a crash, a hang or a closed pipe restarts the process on the
    // next call and throws here with what happened.
    Json call(const Json& request, std::chrono::milliseconds limit);

    const Task& m_task;
    std::string m_device;
    TorchLimits m_limits;
    Subprocess m_process;
    Json m_setup = Json::object();
};

// The setup request for `task` (its program, symbols and arguments), shared with tests.
Json torch_setup_request(const Task& task, const std::string& device);

} // namespace kforge
