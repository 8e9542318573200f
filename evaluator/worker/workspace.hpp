// The data a candidate runs on: guarded buffers, seeded inputs and the reference's outputs.
//
// Every tensor lives in its own allocation with a guard band of seeded bytes on each side, so a
// write past either end is caught. Inputs are generated on the device from a seed that mixes the
// shape's public seed, the trial number and the run's secret; their checksums are kept so a
// candidate that writes into an input is caught. The reference writes into *separate* buffers, is
// computed once per (shape, trial) and kept, and its outputs are checksummed too, so no candidate
// can reach them. Outputs are poisoned (NaN for floats, a fresh random pattern for integers) before
// every candidate run, so an element the candidate never writes is always wrong.
//
// When the task's reference is a PyTorch program, the program (through the worker's TorchReference
// process) makes the inputs and parameters under the same seeds and writes the expected outputs;
// everything else (guards, checksums, poison, caching) is the same.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/task.hpp"
#include "evaluator/worker/internal.hpp"
#include "evaluator/worker/plan.hpp"
#include "evaluator/worker/torch_reference.hpp"

namespace kforge {

inline constexpr size_t k_guard_bytes = 64 * 1024;

class GuardedBuffer
{
public:
    GuardedBuffer() = default;
    GuardedBuffer(size_t bytes, uint64_t pattern_seed, const InternalKernels& kernels);
    CUdeviceptr ptr() const { return m_memory.get() + k_guard_bytes; }
    size_t bytes() const { return m_bytes; }
    // The whole allocation, guards included (ptr() is k_guard_bytes into it).
    const DeviceMemory& allocation() const { return m_memory; }
    // Writes the guard patterns (again).
    void arm(const InternalKernels& kernels) const;
    // "" when both guards are intact; otherwise where they were overwritten. Synchronous.
    std::string check_guards(const std::string& label) const;

private:
    DeviceMemory m_memory;
    size_t m_bytes = 0;
    uint64_t m_seed = 0;
};

// One tensor argument at one shape.
struct TensorData {
    const ArgSpec* spec = nullptr;
    uint64_t count = 0;
    size_t bytes = 0;
    std::vector<int64_t> dims;
    GuardedBuffer buffer;        // what the candidate sees
    DeviceMemory pristine;       // inout: the generated initial contents
    uint64_t input_checksum = 0; // in/inout: checksum of the generated contents
};

// The reference's outputs and the tolerances derived from them, for one (shape, trial).
struct ReferenceOutputs {
    std::map<std::string, DeviceMemory, std::less<>> outputs;
    std::map<std::string, uint64_t, std::less<>> checksums;
    std::map<std::string, std::pair<double, double>, std::less<>> tolerance; // atol, rtol per output
    std::map<std::string, uint64_t, std::less<>> input_checksums; // the inputs they were computed from
};

class Workspace
{
public:
    // `reference` (with its plan and params) computes the expected outputs of a CUDA-reference
    // task; `program` those of a PyTorch-program task (then `reference` is null).
    Workspace(const Task& task, const GpuContext& context, const InternalKernels& kernels, uint64_t run_secret,
              const LoadedKernels* reference, const Plan& reference_plan, ParamPoint reference_params,
              TorchReference* program = nullptr);

    // Loads `shape` at `trial`: allocates buffers if the shape is new, generates the inputs, and
    // computes (or reuses) the reference outputs. Returns the candidate-facing tensors.
    std::map<std::string, TensorData, std::less<>>& prepare(const Shape& shape, int trial);
    const ReferenceOutputs& reference(const Shape& shape, int trial);
    // The tensors of the loaded shape, as the last prepare() left them.
    std::map<std::string, TensorData, std::less<>>& prepare_view() { return m_tensors; }

    // Poisons every output and restores every inout tensor; asynchronous.
    void reset_outputs(uint64_t poison_seed);
    // Checks guards and input checksums of the loaded shape; "" or what the candidate damaged.
    std::string check_integrity();
    // Checks the reference outputs of (shape, trial) are untouched; "" or the damage.
    std::string check_reference_integrity(const Shape& shape, int trial);
    // PyTorch-program tasks: writes the program's own outputs (in its dtypes) for the loaded
    // (shape, trial) into the candidate-facing output buffers, as a candidate would; for checking
    // that the program passes its own task's check.
    void write_program_outputs();

    const Shape* loaded_shape() const { return m_shape; }
    int loaded_trial() const { return m_trial; }
    uint64_t input_seed(const Shape& shape, int trial) const;
    // Drops cached reference outputs and buffers (e.g. under memory pressure).
    void clear();

private:
    void allocate(const Shape& shape);
    void generate_inputs(const Shape& shape, int trial);
    void run_reference(const Shape& shape, int trial);
    // PyTorch-program tasks: inputs (from the pristine cache or the program) and, when missing,
    // the expected outputs of (shape, trial).
    void prepare_from_program(const Shape& shape, int trial);
    // Checksums and tolerances of freshly computed reference outputs, then keeps them.
    void keep_reference(const Shape& shape, int trial, ReferenceOutputs ref);
    void checksum_inputs();
    // The generated contents of a CSR tensor at (shape, trial), built once and kept on the device.
    const DeviceMemory& csr_tensor(const Shape& shape, int trial, const ArgSpec& arg);

    const Task& m_task;
    const GpuContext& m_context;
    const InternalKernels& m_kernels;
    uint64_t m_secret;
    const LoadedKernels* m_reference;
    const Plan& m_reference_plan;
    ParamPoint m_reference_params;
    TorchReference* m_program;

    const Shape* m_shape = nullptr;
    int m_trial = -1;
    std::map<std::string, TensorData, std::less<>> m_tensors;
    std::map<std::string, ReferenceOutputs, std::less<>> m_references; // key: shape label + trial
    // Expected outputs are kept for reuse up to a share of the device's memory, least recently
    // used first out: a task whose outputs are gigabytes (KernelBench's sizes) must not fill the
    // GPU with copies for every (shape, trial). An evicted one is computed again when needed.
    uint64_t m_reference_budget = 0;
    uint64_t m_reference_bytes = 0;
    uint64_t m_use_clock = 0;
    std::map<std::string, uint64_t, std::less<>> m_reference_last_use;
    void touch_reference(const std::string& key);
    void evict_references(const std::string& keep);
    std::map<std::string, DeviceMemory, std::less<>> m_csr_cache;      // key: shape label + trial + arg
    // PyTorch-program tasks: the program's inputs of small (shape, trial)s, kept so that the many
    // runs on test shapes need no round trip to the program. Key: shape label + trial + arg.
    std::map<std::string, DeviceMemory, std::less<>> m_program_inputs;
};

// Where the reference process finds a buffer of this worker (an IPC handle of its allocation).
TensorLocation device_location(const DeviceMemory& allocation, uint64_t offset, uint64_t bytes);

// Bytes of one element of `type` holding `value`.
uint64_t element_bits(double value, DType type);
// "[3, 17]" for a flat index into a tensor of `dims`.
std::string format_index(uint64_t flat, const std::vector<int64_t>& dims);

} // namespace kforge
