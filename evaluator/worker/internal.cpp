// Compiling, caching and launching kforge's internal kernels.
#include "evaluator/worker/internal.hpp"

#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "evaluator/compile/compile.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

// Mirrors of the device structs in kernels/internal.cu.
struct CompareResultHost {
    uint64_t mismatches;
    uint64_t first_index;
    uint64_t not_finite;
    uint64_t max_abs_err_bits;
};
struct AbsStatsHost {
    double sum_abs;
    uint64_t max_abs_bits;
};

std::string load_or_compile(const std::string& arch, const std::filesystem::path& cache_dir, double& seconds)
{
    CompileRequest request;
    request.source = k_internal_kernels_source;
    request.arch = arch;
    request.kernels = {"kforge_generate", "kforge_fill_pattern", "kforge_checksum", "kforge_compare",
                       "kforge_abs_stats", "kforge_clock_probe", "kforge_flush_read"};
    std::filesystem::path cached;
    if (!cache_dir.empty()) {
        cached = cache_dir / fmt::format("internal-{}.cubin", compile_cache_key(request));
        std::error_code ec;
        if (std::filesystem::is_regular_file(cached, ec)) {
            try {
                return read_file(cached);
            } catch (const Error&) {
                // An unreadable cache entry is recompiled below.
            }
        }
    }
    auto start = std::chrono::steady_clock::now();
    CompileResult result = compile_with_nvrtc(request);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok)
        fail_runtime("kforge's internal kernels do not compile for {} (a kforge bug or a toolkit problem):\n{}", arch,
                     result.log);
    if (!cached.empty()) {
        try {
            std::filesystem::create_directories(cached.parent_path());
            write_file_atomic(cached, result.cubin);
        } catch (const Error&) {
            // The cache is an optimisation; a read-only cache folder is not an error.
        }
    }
    return result.cubin;
}

} // namespace

InternalKernels::InternalKernels(const GpuContext& context, const std::filesystem::path& cache_dir)
    : m_context(context),
      m_module(load_or_compile(context.facts().arch(), cache_dir, m_compile_seconds)),
      m_generate(m_module.function("kforge_generate")), m_fill(m_module.function("kforge_fill_pattern")),
      m_checksum(m_module.function("kforge_checksum")), m_compare(m_module.function("kforge_compare")),
      m_abs_stats(m_module.function("kforge_abs_stats")), m_clock(m_module.function("kforge_clock_probe")),
      m_flush_read(m_module.function("kforge_flush_read")),
      m_result(64)
{
}

void InternalKernels::launch_grid_stride(CUfunction f, uint64_t count, void** args) const
{
    constexpr unsigned k_threads = 256;
    uint64_t wanted = (count + k_threads - 1) / k_threads;
    uint64_t cap = static_cast<uint64_t>(m_context.facts().sm_count) * 8;
    unsigned blocks = static_cast<unsigned>(std::max<uint64_t>(1, std::min(wanted, cap)));
    KF_CU_CHECK(driver().cuLaunchKernel(f, blocks, 1, 1, k_threads, 1, 1, 0, m_context.stream(), args, nullptr));
}

void InternalKernels::generate(CUdeviceptr out, uint64_t count, const KfGenParams& params) const
{
    KfGenParams copy = params;
    void* args[] = {&out, &count, &copy};
    launch_grid_stride(m_generate, count, args);
}

void InternalKernels::fill_pattern(CUdeviceptr data, uint64_t bytes, uint64_t seed) const
{
    void* args[] = {&data, &bytes, &seed};
    launch_grid_stride(m_fill, bytes, args);
}

uint64_t InternalKernels::checksum(CUdeviceptr data, uint64_t bytes) const
{
    const auto& cu = driver();
    CUdeviceptr result = m_result.get();
    KF_CU_CHECK(cu.cuMemsetD8Async(result, 0, sizeof(uint64_t), m_context.stream()));
    void* args[] = {&data, &bytes, &result};
    launch_grid_stride(m_checksum, std::max<uint64_t>(bytes / 8, 1), args);
    KF_CU_CHECK(cu.cuStreamSynchronize(m_context.stream()));
    uint64_t value = 0;
    KF_CU_CHECK(cu.cuMemcpyDtoH(&value, result, sizeof value));
    return value;
}

CompareOutcome InternalKernels::compare(CUdeviceptr got, CUdeviceptr expected, uint64_t count, int dtype,
                                        bool exact, double atol, double rtol) const
{
    const auto& cu = driver();
    CUdeviceptr result = m_result.get();
    CompareResultHost init{0, ~uint64_t{0}, 0, 0};
    KF_CU_CHECK(cu.cuMemcpyHtoDAsync(result, &init, sizeof init, m_context.stream()));
    int exact_flag = exact ? 1 : 0;
    void* args[] = {&got, &expected, &count, &dtype, &exact_flag, &atol, &rtol, &result};
    launch_grid_stride(m_compare, count, args);
    KF_CU_CHECK(cu.cuStreamSynchronize(m_context.stream()));
    CompareResultHost host{};
    KF_CU_CHECK(cu.cuMemcpyDtoH(&host, result, sizeof host));
    CompareOutcome outcome;
    outcome.mismatches = host.mismatches;
    outcome.first_index = host.first_index;
    outcome.not_finite = host.not_finite;
    std::memcpy(&outcome.max_abs_error, &host.max_abs_err_bits, sizeof(double));
    return outcome;
}

std::pair<double, double> InternalKernels::abs_stats(CUdeviceptr data, uint64_t count, int dtype) const
{
    const auto& cu = driver();
    CUdeviceptr result = m_result.get();
    KF_CU_CHECK(cu.cuMemsetD8Async(result, 0, sizeof(AbsStatsHost), m_context.stream()));
    void* args[] = {&data, &count, &dtype, &result};
    launch_grid_stride(m_abs_stats, count, args);
    KF_CU_CHECK(cu.cuStreamSynchronize(m_context.stream()));
    AbsStatsHost host{};
    KF_CU_CHECK(cu.cuMemcpyDtoH(&host, result, sizeof host));
    double max_abs;
    std::memcpy(&max_abs, &host.max_abs_bits, sizeof max_abs);
    return {host.sum_abs, max_abs};
}

void InternalKernels::flush_read(CUdeviceptr data, uint64_t bytes) const
{
    uint64_t words = bytes / 8;
    CUdeviceptr sink = m_result.get();
    void* args[] = {&data, &words, &sink};
    launch_grid_stride(m_flush_read, words, args);
}

void InternalKernels::clock_probe(CUdeviceptr slot) const
{
    void* args[] = {&slot};
    unsigned blocks = static_cast<unsigned>(m_context.facts().sm_count * 4);
    KF_CU_CHECK(driver().cuLaunchKernel(m_clock, blocks, 1, 1, 32, 1, 1, 0, m_context.stream(), args, nullptr));
}

} // namespace kforge
