// kforge_vendor_selftest: each problem through the C interface, as the GPU worker drives it.
//
// Per problem: copy the inputs to the device, prepare, then twice poison the outputs with 0xFF
// bytes (NaN for floats), stage, run and synchronize, and compare every output with the host
// answer under the task's tolerance; the inputs must come back unchanged. The first failure is
// reported with the problem, the trial, the element (as [row, column] for matrices), the expected
// and the actual value.
#include <cmath>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "selftest.hpp"
#include "vendor_routine.hpp"

namespace kforge::vendor {

double decode_element(const std::string& dtype, const uint8_t* bytes)
{
    if (dtype == "f32") {
        float v = 0;
        std::memcpy(&v, bytes, sizeof v);
        return v;
    }
    if (dtype == "bf16" || dtype == "f16") {
        uint16_t bits = static_cast<uint16_t>(bytes[0] | (bytes[1] << 8));
        return dtype == "bf16" ? from_bf16(bits) : from_f16(bits);
    }
    if (dtype == "u32") {
        uint32_t v = 0;
        std::memcpy(&v, bytes, sizeof v);
        return v;
    }
    return bytes[0];
}

namespace {

std::string element_name(const HostTensor& t, uint64_t index)
{
    if (t.row_length > 0)
        return fmt::format("{}[{}, {}]", t.name, index / t.row_length, index % t.row_length);
    return fmt::format("{}[{}]", t.name, index);
}

} // namespace

std::string compare_output(const HostTensor& t, const std::vector<uint8_t>& got)
{
    size_t width = element_bytes(t.dtype);
    uint64_t mismatches = 0, first = 0;
    for (uint64_t i = 0; i < t.count; ++i) {
        double value = decode_element(t.dtype, &got[i * width]);
        double want = t.expected[i];
        bool ok = t.exact ? value == want : std::isfinite(value) && std::fabs(value - want) <= t.atol + t.rtol * std::fabs(want);
        if (!ok && mismatches++ == 0)
            first = i;
    }
    if (mismatches == 0)
        return "";
    std::string rule = t.exact ? "exact match required" : fmt::format("allowed {:.3g} + {:.3g}*|expected|", t.atol, t.rtol);
    return fmt::format("{} of {} elements of '{}' differ; first {}: expected {:.9g}, got {:.9g} ({})", mismatches,
                       t.count, t.name, element_name(t, first), t.expected[first],
                       decode_element(t.dtype, &got[first * width]), rule);
}

void check_call(int status, const char* error, const std::string& where)
{
    if (status != KFORGE_VENDOR_OK)
        fail(static_cast<Status>(status), fmt::format("{}: {}", where, error));
}

SelftestStream::SelftestStream() { KF_CUDART_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking)); }

SelftestStream::~SelftestStream() { cudaStreamDestroy(m_stream); }

namespace {

// A prepared state, released at scope exit.
struct PreparedState {
    void* state = nullptr;
    ~PreparedState() { kforge_vendor_release(state); }
};

// Runs one problem; throws VendorFailure (mismatch or the failing call's status).
void run_problem(const std::string& routine, const Problem& problem)
{
    SelftestStream stream;
    std::vector<std::unique_ptr<DeviceBuffer>> buffers;
    std::vector<KforgeVendorTensor> tensors;
    for (const auto& t : problem.tensors) {
        size_t bytes = t.count * element_bytes(t.dtype);
        buffers.push_back(std::make_unique<DeviceBuffer>(bytes));
        if (!t.is_output)
            KF_CUDART_CHECK(cudaMemcpy(buffers.back()->get(), t.data.data(), bytes, cudaMemcpyHostToDevice));
        tensors.push_back(KforgeVendorTensor{t.name.c_str(), reinterpret_cast<uintptr_t>(buffers.back()->get()),
                                             t.dtype.c_str(), t.count});
    }
    std::vector<KforgeVendorValue> values;
    for (const auto& v : problem.values)
        values.push_back(KforgeVendorValue{v.name.c_str(), v.int_value, v.real_value});
    KforgeVendorBindings bindings{tensors.data(), tensors.size(), values.data(), values.size()};

    char error[1024] = {};
    PreparedState prepared;
    check_call(kforge_vendor_prepare(routine.c_str(), &bindings, &prepared.state, error, sizeof error), error,
               problem.label + ": prepare");
    for (int trial = 1; trial <= 2; ++trial) {
        std::string where = fmt::format("{} (run {})", problem.label, trial);
        for (size_t i = 0; i < problem.tensors.size(); ++i)
            if (problem.tensors[i].is_output)
                KF_CUDART_CHECK(cudaMemsetAsync(buffers[i]->get(), 0xff, buffers[i]->bytes(), stream.get()));
        check_call(kforge_vendor_stage(prepared.state, stream.get(), error, sizeof error), error, where + ": stage");
        check_call(kforge_vendor_run(prepared.state, stream.get(), error, sizeof error), error, where + ": run");
        KF_CUDART_CHECK(cudaStreamSynchronize(stream.get()));
        for (size_t i = 0; i < problem.tensors.size(); ++i) {
            const HostTensor& t = problem.tensors[i];
            std::vector<uint8_t> got(buffers[i]->bytes());
            KF_CUDART_CHECK(cudaMemcpy(got.data(), buffers[i]->get(), got.size(), cudaMemcpyDeviceToHost));
            if (!t.is_output && got != t.data)
                fail(Status::mismatch, fmt::format("{}: the input '{}' was modified", where, t.name));
            if (t.is_output)
                if (std::string problem_text = compare_output(t, got); !problem_text.empty())
                    fail(Status::mismatch, fmt::format("{}: {}", where, problem_text));
        }
    }
}

} // namespace
} // namespace kforge::vendor

using namespace kforge::vendor;

extern "C" int kforge_vendor_selftest(const char* name, char* report, size_t report_len)
{
    std::string routine = name ? name : "";
    try {
        if (int status = kforge_vendor_routine_status(name, report, report_len); status != KFORGE_VENDOR_OK)
            return status;
        std::vector<Problem> problems = selftest_problems(routine);
        if (problems.empty())
            fail(Status::unavailable, routine + ": no self-test problems");
        attach_to_primary_context();
        for (const auto& problem : problems)
            run_problem(routine, problem);
        std::string labels;
        for (const auto& problem : problems)
            labels += (labels.empty() ? "" : "; ") + problem.label;
        copy_text(fmt::format("{}: {} problems ok ({})", routine, problems.size(), labels), report, report_len);
        return KFORGE_VENDOR_OK;
    } catch (const VendorFailure& e) {
        copy_text(fmt::format("{}: {}", routine, e.what()), report, report_len);
        return static_cast<int>(e.status());
    } catch (const std::exception& e) {
        copy_text(fmt::format("{}: {}", routine, e.what()), report, report_len);
        return KFORGE_VENDOR_LIBRARY_ERROR;
    }
}
