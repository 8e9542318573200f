// The hardware's ceilings, and the roofline floor of a task at a shape.
//
// Peak rates come from the device's own facts (SM count, clock, memory clock and bus width) and a
// per-architecture table of per-SM, per-clock throughput, so they are optimistic upper bounds: the
// floor they give is a time no correct kernel can beat, which is what flagging needs. The measured
// copy bandwidth (calibrated in the worker) gives the realistic "% of roofline" users expect.
#pragma once

#include <string>

#include "core/task.hpp"
#include "util/json_reader.hpp"

namespace kforge {

struct DeviceFacts;

struct DevicePeaks {
    double dram_bytes_per_s = 0;          // theoretical: memory clock x bus width x 2 (DDR)
    double measured_dram_bytes_per_s = 0; // a device-to-device copy, read + write bytes
    double fp32_flops = 0;
    double fp64_flops = 0;
    double tf32_tc_flops = 0;
    double fp16_tc_flops = 0;
    double bf16_tc_flops = 0;
    double int_ops = 0;

    double compute_peak(const std::string& peak_name) const; // "fp32", "bf16_tc", ... ; 0 for "none"
    Json to_json() const;
    static DevicePeaks from_json(const Json& json);
};

DevicePeaks theoretical_peaks(const DeviceFacts& facts);

struct RooflinePoint {
    double flops = 0;
    double bytes = 0;
    double floor_ns = 0;           // max(bytes / theoretical bandwidth, flops / peak)
    double measured_floor_ns = 0;  // same with the measured bandwidth
};

// Evaluates the task's roofline expressions at `shape`.
RooflinePoint roofline_at(const Task& task, const Shape& shape, const DevicePeaks& peaks);

} // namespace kforge
