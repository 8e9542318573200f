// Peak throughput per architecture, the roofline, and the floor that flags impossible times; the
// header says why the floor counts the output bytes L2 can absorb as free.
#include "evaluator/worker/roofline.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "evaluator/worker/context.hpp"

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
                {"int_ops", int_ops},
                {"l2_bytes", l2_bytes}};
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
    peaks.l2_bytes = json.value("l2_bytes", 0.0);
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
    peaks.l2_bytes = facts.l2_bytes;
    return peaks;
}

RooflinePoint roofline_at(const Task& task, const Shape& shape, const DevicePeaks& peaks)
{
    RooflinePoint point;
    ExprScope scope = task.scope_for(shape);
    point.flops = shape.flops ? *shape.flops : task.roofline.flops.eval_real(scope);
    point.bytes = task.roofline.bytes.eval_real(scope);
    for (const auto& arg : task.args)
        if (arg.is_tensor && arg.intent != Intent::in)
            point.output_bytes += static_cast<double>(task.element_count(arg, shape)) * dtype_size(arg.dtype);
    point.l2_absorbed_bytes = std::max(0.0, std::min({point.output_bytes, peaks.l2_bytes, point.bytes}));
    double peak = peaks.compute_peak(task.roofline.peak);
    point.compute_ns = peak > 0 ? point.flops / peak * 1e9 : 0;
    auto memory_ns = [&](double bytes, double rate) { return rate > 0 ? bytes / rate * 1e9 : 0; };
    point.roofline_ns = std::max(point.compute_ns, memory_ns(point.bytes, peaks.dram_bytes_per_s));
    point.measured_roofline_ns = peaks.measured_dram_bytes_per_s > 0
                                     ? std::max(point.compute_ns, memory_ns(point.bytes, peaks.measured_dram_bytes_per_s))
                                     : point.roofline_ns;
    point.floor_ns =
        std::max(point.compute_ns, memory_ns(point.bytes - point.l2_absorbed_bytes, peaks.dram_bytes_per_s));
    return point;
}

bool is_below_floor(const Task& task, const RooflinePoint& point, double median_ns)
{
    return point.floor_ns > 0 && median_ns < point.floor_ns && !task.roofline.may_exceed;
}

std::string describe_below_floor(double median_ns, const RooflinePoint& point)
{
    auto us = [](double ns) { return fmt::format("{:.2f} us", ns / 1000); };
    auto mib = [](double bytes) { return fmt::format("{:.1f} MiB", bytes / (1 << 20)); };
    std::string why = point.compute_ns >= point.floor_ns
                          ? fmt::format("{:.3g} FLOP at the device's peak rate", point.flops)
                          : fmt::format("{} of the {} moved may stay in L2", mib(point.l2_absorbed_bytes), mib(point.bytes));
    return fmt::format("{} is under the floor of {} ({}; the roofline is {})", us(median_ns), us(point.floor_ns), why,
                       us(point.roofline_ns));
}

} // namespace kforge
