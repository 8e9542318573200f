// Peak throughput per architecture and roofline floors.
#include "evaluator/worker/roofline.hpp"

#include <algorithm>

#include "evaluator/worker/gpu_context.hpp"

namespace kforge {
namespace {

// Dense operations per clock per SM (an FMA counts as two), by compute capability. Sources: NVIDIA
// architecture whitepapers (Ampere GA100, Hopper GH100, Ada AD102, Blackwell B200).
struct PerSmRates {
    int major, minor;
    double fp32, fp64, tf32_tc, fp16_tc, bf16_tc;
};
constexpr PerSmRates k_rates[] = {
    {8, 0, 128, 64, 1024, 2048, 2048},   // A100
    {8, 6, 256, 4, 512, 1024, 1024},     // GA10x
    {8, 9, 256, 4, 512, 1024, 1024},     // Ada
    {9, 0, 256, 128, 2048, 4096, 4096},  // H100 / H200
    {10, 0, 256, 128, 4096, 8192, 8192}, // B200
};

} // namespace

double DevicePeaks::compute_peak(const std::string& peak_name) const
{
    if (peak_name == "fp32")
        return fp32_flops;
    if (peak_name == "fp64")
        return fp64_flops;
    if (peak_name == "tf32_tc")
        return tf32_tc_flops;
    if (peak_name == "fp16_tc")
        return fp16_tc_flops;
    if (peak_name == "bf16_tc")
        return bf16_tc_flops;
    if (peak_name == "int")
        return int_ops;
    return 0;
}

Json DevicePeaks::to_json() const
{
    return Json{{"dram_bytes_per_s", dram_bytes_per_s},
                {"measured_dram_bytes_per_s", measured_dram_bytes_per_s},
                {"fp32_flops", fp32_flops},
                {"fp64_flops", fp64_flops},
                {"tf32_tc_flops", tf32_tc_flops},
                {"fp16_tc_flops", fp16_tc_flops},
                {"bf16_tc_flops", bf16_tc_flops},
                {"int_ops", int_ops}};
}

DevicePeaks DevicePeaks::from_json(const Json& json)
{
    DevicePeaks peaks;
    peaks.dram_bytes_per_s = json.value("dram_bytes_per_s", 0.0);
    peaks.measured_dram_bytes_per_s = json.value("measured_dram_bytes_per_s", 0.0);
    peaks.fp32_flops = json.value("fp32_flops", 0.0);
    peaks.fp64_flops = json.value("fp64_flops", 0.0);
    peaks.tf32_tc_flops = json.value("tf32_tc_flops", 0.0);
    peaks.fp16_tc_flops = json.value("fp16_tc_flops", 0.0);
    peaks.bf16_tc_flops = json.value("bf16_tc_flops", 0.0);
    peaks.int_ops = json.value("int_ops", 0.0);
    return peaks;
}

DevicePeaks theoretical_peaks(const DeviceFacts& facts)
{
    DevicePeaks peaks;
    peaks.dram_bytes_per_s = 2.0 * facts.memory_clock_khz * 1e3 * facts.memory_bus_bits / 8.0;
    PerSmRates rates{0, 0, 256, 128, 2048, 4096, 4096};
    for (const auto& r : k_rates)
        if (r.major == facts.cc_major && r.minor == facts.cc_minor)
            rates = r;
    double clocks = static_cast<double>(facts.sm_count) * facts.clock_khz * 1e3;
    peaks.fp32_flops = clocks * rates.fp32;
    peaks.fp64_flops = clocks * rates.fp64;
    peaks.tf32_tc_flops = clocks * rates.tf32_tc;
    peaks.fp16_tc_flops = clocks * rates.fp16_tc;
    peaks.bf16_tc_flops = clocks * rates.bf16_tc;
    peaks.int_ops = clocks * rates.fp32 / 2; // one integer op per lane per clock
    return peaks;
}

RooflinePoint roofline_at(const Task& task, const Shape& shape, const DevicePeaks& peaks)
{
    RooflinePoint point;
    ExprScope scope = task.scope_for(shape);
    point.flops = shape.flops ? *shape.flops : task.roofline.flops.eval_real(scope);
    point.bytes = task.roofline.bytes.eval_real(scope);
    double peak = peaks.compute_peak(task.roofline.peak);
    double compute_ns = peak > 0 ? point.flops / peak * 1e9 : 0;
    double memory_ns = peaks.dram_bytes_per_s > 0 ? point.bytes / peaks.dram_bytes_per_s * 1e9 : 0;
    double measured_memory_ns =
        peaks.measured_dram_bytes_per_s > 0 ? point.bytes / peaks.measured_dram_bytes_per_s * 1e9 : memory_ns;
    point.floor_ns = std::max(compute_ns, memory_ns);
    point.measured_floor_ns = std::max(compute_ns, measured_memory_ns);
    return point;
}

} // namespace kforge
