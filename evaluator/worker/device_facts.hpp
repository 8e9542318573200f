// Facts about a GPU that the controller and the worker share (no CUDA calls here: the controller
// only ever sees them as JSON from the worker).
#pragma once

#include <cstdint>
#include <string>

#include "util/json_reader.hpp"

namespace kforge {

// What kforge needs to know about the device, read once at start.
struct DeviceFacts {
    std::string name;
    std::string uuid;
    int ordinal = 0;
    int cc_major = 0, cc_minor = 0;
    int sm_count = 0;
    int max_threads_per_sm = 0;
    int max_threads_per_block = 0;
    int max_smem_per_block_optin = 0;
    int smem_per_sm = 0;
    int regs_per_sm = 0;
    int warp_size = 32;
    int l2_bytes = 0;
    int clock_khz = 0;          // the nominal maximum SM clock
    int memory_clock_khz = 0;
    int memory_bus_bits = 0;
    int64_t total_memory = 0;
    int driver_version = 0;     // e.g. 13000

    std::string arch() const;   // "sm_90a" for compute capability 9.0, else "sm_<major><minor>"
    Json to_json() const;
    static DeviceFacts from_json(const Json& json);
};

} // namespace kforge
