// The vendor baselines on a real GPU: each routine against a host computation (the library's own
// self-test), and each against its task's reference kernel on the task's test and bench shapes,
// driven as the GPU worker drives it: driver-API primary context and stream, kforge's workspace
// (guarded buffers, generated inputs, NaN-poisoned outputs), stage + run, then the task's check.
// Each runs in a child process, so the test process never initialises CUDA.
#include "kf_catch.hpp"

#include <sstream>

#include <fmt/format.h>

#include "evaluator/compile/compile.hpp"
#include "evaluator/worker/internal.hpp"
#include "evaluator/worker/plan.hpp"
#include "evaluator/worker/workspace.hpp"
#include "evaluator/worker/vendor_baseline.hpp"
#include "test_support.hpp"
#include "vendor_test_support.hpp"

using namespace kforge;

namespace {

// "ok ..." / "FAIL ..." lines of a child's report.
std::vector<std::string> report_lines(const std::string& report)
{
    std::vector<std::string> lines;
    std::istringstream in(report);
    for (std::string line; std::getline(in, line);)
        if (!line.empty())
            lines.push_back(line);
    return lines;
}

std::string describe_element(CUdeviceptr base, uint64_t index, DType dtype)
{
    uint64_t bits = 0;
    driver().cuMemcpyDtoH(&bits, base + index * dtype_size(dtype), dtype_size(dtype));
    return fmt::format("{:.9g}", kf_bits_to_value(bits, static_cast<int>(dtype)));
}

// Every output of the loaded shape against the reference; "" or the first mismatch.
std::string compare_with_reference(Workspace& workspace, const InternalKernels& kernels, const Shape& shape, int trial)
{
    const ReferenceOutputs& reference = workspace.reference(shape, trial);
    for (auto& [name, data] : workspace.prepare_view()) {
        if (data.spec->intent == Intent::in)
            continue;
        auto [atol, rtol] = reference.tolerance.at(name);
        bool exact = data.spec->check->metric == CheckSpec::Metric::exact;
        CUdeviceptr expected = reference.outputs.at(name).get();
        CompareOutcome cmp = kernels.compare(data.buffer.ptr(), expected, data.count, static_cast<int>(data.spec->dtype),
                                             exact, atol, rtol);
        if (cmp.mismatches > 0)
            return fmt::format("'{}': {} of {} elements differ, first at {} (flat {}): expected {}, got {} ({})", name,
                               cmp.mismatches, data.count, format_index(cmp.first_index, data.dims), cmp.first_index,
                               describe_element(expected, cmp.first_index, data.spec->dtype),
                               describe_element(data.buffer.ptr(), cmp.first_index, data.spec->dtype),
                               exact ? "exact" : fmt::format("atol {:.3g}, rtol {:.3g}", atol, rtol));
    }
    return "";
}

// One task: its reference compiled and loaded, and each vendor baseline checked on every test and
// bench shape with two input sets (the second reuses the prepared state: new contents, same buffers).
std::string check_task(const Task& task, const GpuContext& context, const InternalKernels& kernels,
                       const VendorLibrary& library)
{
    CompileRequest compile;
    compile.source = task.reference.source;
    compile.arch = context.facts().arch();
    compile.params = enumerate_param_points(task.reference.plan, 1).front();
    for (const auto& launch : task.reference.plan.launches)
        compile.kernels.push_back(launch.kernel);
    CompileResult compiled = compile_with_nvrtc(compile);
    if (!compiled.ok)
        return "FAIL " + task.name + ": the reference does not compile: " + compiled.message + "\n";
    LoadedKernels reference(compiled.cubin, compile.kernels);
    Workspace workspace(task, context, kernels, 0x5eed, &reference, task.reference.plan, compile.params);

    std::string report;
    std::vector<const Shape*> shapes;
    for (const auto* list : {&task.tests, &task.bench})
        for (const auto& shape : *list)
            shapes.push_back(&shape);
    for (const auto& routine : task.vendor_baselines) {
        for (const Shape* shape : shapes) {
            std::string where = fmt::format("{} {} at {}", task.name, routine, shape->label);
            VendorBaseline baseline;
            std::map<std::string, uint64_t, std::less<>> prepared_for;
            std::string failure;
            for (int trial = 0; trial < 2 && failure.empty(); ++trial) {
                std::map<std::string, uint64_t, std::less<>> addresses;
                for (auto& [name, data] : workspace.prepare(*shape, trial))
                    addresses[name] = data.buffer.ptr();
                if (!baseline.ready() || addresses != prepared_for) {
                    baseline = library.prepare(routine, bind_vendor_operands(task, *shape, addresses));
                    prepared_for = addresses;
                }
                if (!baseline.ready()) {
                    failure = "prepare: " + baseline.problem();
                    break;
                }
                workspace.reset_outputs(0xbad0 + static_cast<uint64_t>(trial));
                std::string error = baseline.stage(context.stream());
                if (error.empty())
                    error = baseline.run(context.stream());
                if (!error.empty()) {
                    failure = error;
                    break;
                }
                if (wait_for_stream(context.stream(), std::chrono::steady_clock::now() + std::chrono::seconds(60)) ==
                    WaitStatus::timeout)
                    return report + "FAIL " + where + ": did not finish within 60 s\n";
                failure = workspace.check_integrity();
                if (failure.empty())
                    failure = compare_with_reference(workspace, kernels, *shape, trial);
                if (!failure.empty())
                    failure = fmt::format("input set {}: {}", trial + 1, failure);
            }
            report += (failure.empty() ? "ok   " + where : "FAIL " + where + ": " + failure) + "\n";
        }
    }
    return report;
}

} // namespace

TEST_CASE("each vendor routine matches a host computation on small and odd problems", "[gpu][vendor]")
{
    test::require_gpu();
    REQUIRE(vendor_library_build_note() == "");
    std::string report = test::run_in_child([] {
        VendorLibrary library(test::vendor_library_file());
        if (!library.available())
            return "FAIL " + library.reason();
        std::string lines;
        for (const auto& routine : known_vendor_baselines()) {
            VendorLibrary::SelfTest result = library.selftest(routine);
            lines += (result.passed ? "ok   " : "FAIL ") + result.report + "\n";
        }
        return lines;
    });
    std::vector<std::string> lines = report_lines(report);
    CHECK(lines.size() == known_vendor_baselines().size());
    for (const auto& line : lines) {
        INFO(line);
        CHECK(line.rfind("ok   ", 0) == 0);
    }
}

TEST_CASE("each vendor baseline computes its task's reference on the task's shapes, in the worker's context and "
          "stream",
          "[gpu][vendor]")
{
    test::require_gpu();
    REQUIRE(vendor_library_build_note() == "");
    std::string report = test::run_in_child([] {
        if (std::string why = load_cuda_driver(); !why.empty())
            return "FAIL " + why;
        GpuContext context;
        test::TempDir cache;
        InternalKernels kernels(context, cache.path());
        VendorLibrary library(test::vendor_library_file());
        if (!library.available())
            return "FAIL " + library.reason();
        std::string lines;
        for (const auto& task : test::tasks_with_vendor_baselines()) {
            try {
                lines += check_task(task, context, kernels, library);
            } catch (const CudaError& e) {
                lines += "FAIL " + task.name + ": " + e.what() + "\n";
                if (e.sticky())
                    break;
            }
        }
        return lines;
    });
    std::vector<std::string> lines = report_lines(report);
    CHECK(lines.size() >= 8);
    for (const auto& line : lines) {
        INFO(line);
        CHECK(line.rfind("ok   ", 0) == 0);
    }
}
