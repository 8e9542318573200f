// The hardware's ceilings, and the roofline of a task at a shape.
//
// Peak rates come from the device's own facts (SM count, clock, memory clock and bus width) and a
// per-architecture table of per-SM, per-clock throughput, so they are optimistic upper bounds. Two
// times follow from them, for two jobs:
//
// - The roofline (bytes / bandwidth, flops / peak) is what "% of roofline" is measured against,
//   with the theoretical bandwidth or the measured copy bandwidth (calibrated in the worker).
// - The floor is a time no correct kernel can beat; a time below it is flagged. It is lower than
//   the roofline by what the memory system can defer past the kernel's end: timing flushes L2
//   before each sample, so every byte read comes from DRAM while the kernel runs, but a write
//   lands in L2 and reaches DRAM when the line is evicted, after the kernel has ended. Up to the
//   L2's size of output bytes may therefore cost the kernel nothing in DRAM time, and the floor
//   counts them as free: max((bytes - min(output bytes, L2 size)) / theoretical bandwidth,
//   flops / peak). A kernel whose output fits in L2 (a bf16 GELU at 2^24 elements on an H100)
//   legitimately beats the roofline; nothing correct beats the floor unless the task's roofline
//   overstates the bytes a kernel must move, which is the task's mistake (`may_exceed`).
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
    double l2_bytes = 0;                  // the L2's capacity (DeviceFacts::l2_bytes): output bytes it can absorb

    double compute_peak(const std::string& peak_name) const; // "fp32", "bf16_tc", ... ; 0 for "none"
    Json to_json() const;
    static DevicePeaks from_json(const Json& json);
};

DevicePeaks theoretical_peaks(const DeviceFacts& facts);

struct RooflinePoint {
    double flops = 0;
    double bytes = 0;
    double output_bytes = 0;         // bytes of the task's out and inout tensors at the shape
    double l2_absorbed_bytes = 0;    // min(output bytes, L2 size, bytes): writes that may reach DRAM late
    double compute_ns = 0;           // flops / peak (0 for peak "none")
    double roofline_ns = 0;          // max(bytes / theoretical bandwidth, compute_ns)
    double measured_roofline_ns = 0; // max(bytes / measured bandwidth, compute_ns); roofline_ns when unmeasured
    double floor_ns = 0;             // max((bytes - l2_absorbed_bytes) / theoretical bandwidth, compute_ns)
};

// Evaluates the task's roofline expressions at `shape`, and its output bytes from the task's
// tensors. Zero peaks give zero times (nothing is flagged against an unknown device).
RooflinePoint roofline_at(const Task& task, const Shape& shape, const DevicePeaks& peaks);

// Whether a measured median is flagged: below a known floor, for a task whose roofline does not say
// a legitimate kernel may beat it (`may_exceed`).
bool is_below_floor(const Task& task, const RooflinePoint& point, double median_ns);

// Why a median is below the floor, in a line for users: "19.07 us is under the floor of 10.02 us
// (32.0 MiB of the 64.0 MiB moved may stay in L2; the roofline is 20.03 us)". Times in ns.
std::string describe_below_floor(double median_ns, const RooflinePoint& point);

} // namespace kforge
