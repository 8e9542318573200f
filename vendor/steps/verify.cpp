// kforge_vendor_step_selftest: every step problem through the C interface, for every allowed
// algorithm.
//
// Per problem and algorithm index (0, 1, ... until prepare says there are no more): prepare, then
// twice: fill the workspace with 0xFF (it is a candidate's scratch, garbage before every run),
// NaN-poison the output (or restore its starting contents when C is D), run, synchronize, and
// compare the output with the host answer; the inputs must come back unchanged. Running every
// allowed algorithm matters because `algo` is a tunable: each index a sweep may pick must compute
// the same product. The first failure is reported with the problem, the algorithm (what
// kforge_vendor_step_chosen says), the run and the element.
#include <memory>

#include <fmt/format.h>

#include "step.hpp"
#include "verify.hpp"
#include "vendor_routine.hpp"

namespace kforge::vendor {
namespace {

// A bound on the indexes tried per problem, above the 32 results asked of cuBLASLt's heuristic;
// a longer cuDNN list than this would be tested only in part.
constexpr long long k_max_algorithms = 64;

// A prepared step, released at scope exit.
struct PreparedStep {
    void* state = nullptr;
    ~PreparedStep() { kforge_vendor_step_release(state); }
};

// The device side of one problem: a buffer per present operand, plus the workspace.
struct ProblemBuffers {
    std::vector<std::unique_ptr<DeviceBuffer>> buffers; // null for absent or shared operands
    std::unique_ptr<DeviceBuffer> workspace;
    std::vector<unsigned long long> addresses;          // the run's operands, workspace last
};

ProblemBuffers upload(const StepProblem& problem)
{
    ProblemBuffers device;
    for (size_t i = 0; i < problem.operands.size(); ++i) {
        const HostTensor& t = problem.operands[i];
        if (t.count == 0 || static_cast<int>(i) == problem.shares_output) {
            device.buffers.push_back(nullptr);
            continue;
        }
        device.buffers.push_back(std::make_unique<DeviceBuffer>(t.count * element_bytes(t.dtype)));
        if (!t.is_output)
            KF_CUDART_CHECK(
                cudaMemcpy(device.buffers.back()->get(), t.data.data(), t.data.size(), cudaMemcpyHostToDevice));
    }
    for (size_t i = 0; i < problem.operands.size(); ++i) {
        const auto& buffer = device.buffers[static_cast<int>(i) == problem.shares_output ? problem.output : i];
        device.addresses.push_back(buffer ? reinterpret_cast<uintptr_t>(buffer->get()) : 0);
    }
    if (problem.step.workspace_bytes > 0)
        device.workspace = std::make_unique<DeviceBuffer>(problem.step.workspace_bytes);
    device.addresses.push_back(device.workspace ? reinterpret_cast<uintptr_t>(device.workspace->get()) : 0);
    return device;
}

// Two runs of the prepared step; throws VendorFailure (mismatch or the failing call's status).
void run_twice(const StepProblem& problem, ProblemBuffers& device, void* state, const std::string& where)
{
    SelftestStream stream;
    const HostTensor& out = problem.operands[problem.output];
    DeviceBuffer& out_buffer = *device.buffers[problem.output];
    char error[2048] = {};
    for (int trial = 1; trial <= 2; ++trial) {
        std::string run = fmt::format("{} (run {})", where, trial);
        if (device.workspace)
            KF_CUDART_CHECK(cudaMemsetAsync(device.workspace->get(), 0xff, device.workspace->bytes(), stream.get()));
        if (out.data.empty())
            KF_CUDART_CHECK(cudaMemsetAsync(out_buffer.get(), 0xff, out_buffer.bytes(), stream.get()));
        else
            KF_CUDART_CHECK(cudaMemcpyAsync(out_buffer.get(), out.data.data(), out.data.size(), cudaMemcpyHostToDevice,
                                            stream.get()));
        check_call(kforge_vendor_step_run(state, device.addresses.data(), device.addresses.size(), stream.get(), error,
                                          sizeof error),
                   error, run + ": run");
        KF_CUDART_CHECK(cudaStreamSynchronize(stream.get()));
        for (size_t i = 0; i < problem.operands.size(); ++i) {
            const HostTensor& t = problem.operands[i];
            if (!device.buffers[i])
                continue;
            std::vector<uint8_t> got(device.buffers[i]->bytes());
            KF_CUDART_CHECK(cudaMemcpy(got.data(), device.buffers[i]->get(), got.size(), cudaMemcpyDeviceToHost));
            if (!t.is_output && got != t.data)
                fail(Status::mismatch, fmt::format("{}: the input '{}' was modified", run, t.name));
            if (t.is_output)
                if (std::string problem_text = compare_output(t, got); !problem_text.empty())
                    fail(Status::mismatch, fmt::format("{}: {}", run, problem_text));
        }
    }
}

// Every allowed algorithm of one problem; returns how many there were.
long long run_problem(const StepProblem& problem)
{
    ProblemBuffers device = upload(problem);
    char error[4096] = {};
    for (long long algo = 0; algo < k_max_algorithms; ++algo) {
        KforgeStep step = problem.step;
        step.algo = algo;
        PreparedStep prepared;
        int status = kforge_vendor_step_prepare(&step, &prepared.state, error, sizeof error);
        if (status == KFORGE_VENDOR_NO_ALGORITHM && algo > 0)
            return algo;
        check_call(status, error, fmt::format("{}: prepare algo {}", problem.label, algo));
        run_twice(problem, device, prepared.state,
                  fmt::format("{} with algo {} = {}", problem.label, algo, kforge_vendor_step_chosen(prepared.state)));
    }
    return k_max_algorithms;
}

std::string run_all(const char* kind, const std::vector<StepProblem>& problems)
{
    long long algorithms = 0;
    for (const auto& problem : problems)
        algorithms += run_problem(problem);
    return fmt::format("{} {} problems ok ({} algorithms run)", problems.size(), kind, algorithms);
}

} // namespace
} // namespace kforge::vendor

using namespace kforge::vendor;

extern "C" int kforge_vendor_step_selftest(char* report, size_t report_len)
{
    std::string summary;
    int status = guarded(report, report_len, [&] {
        attach_to_primary_context();
        summary = fmt::format("library steps: {} ({}); {} ({})", run_all("matmul", matmul_step_problems()),
                              cublaslt_version(), run_all("conv", conv_step_problems()), cudnn_loaded_version());
    });
    if (status == KFORGE_VENDOR_OK)
        copy_text(summary, report, report_len);
    return status;
}
