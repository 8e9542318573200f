// DeviceFacts to and from JSON.
#include "evaluator/worker/device_facts.hpp"

#include <fmt/format.h>

namespace kforge {

std::string DeviceFacts::arch() const
{
    // sm_90a unlocks wgmma and setmaxnreg; the "a" variants exist for 9.0 and later major versions.
    if (cc_major == 9 && cc_minor == 0)
        return "sm_90a";
    return fmt::format("sm_{}{}", cc_major, cc_minor);
}

Json DeviceFacts::to_json() const
{
    return Json{{"name", name},
                {"uuid", uuid},
                {"ordinal", ordinal},
                {"compute_capability", fmt::format("{}.{}", cc_major, cc_minor)},
                {"arch", arch()},
                {"sm_count", sm_count},
                {"max_threads_per_sm", max_threads_per_sm},
                {"max_threads_per_block", max_threads_per_block},
                {"max_smem_per_block_optin", max_smem_per_block_optin},
                {"smem_per_sm", smem_per_sm},
                {"regs_per_sm", regs_per_sm},
                {"warp_size", warp_size},
                {"l2_bytes", l2_bytes},
                {"clock_mhz", clock_khz / 1000.0},
                {"memory_clock_mhz", memory_clock_khz / 1000.0},
                {"memory_bus_bits", memory_bus_bits},
                {"total_memory_bytes", total_memory},
                {"driver_version", fmt::format("{}.{}", driver_version / 1000, driver_version % 1000 / 10)}};
}

DeviceFacts DeviceFacts::from_json(const Json& json)
{
    DeviceFacts facts;
    facts.name = json.value("name", "");
    facts.uuid = json.value("uuid", "");
    facts.ordinal = json.value("ordinal", 0);
    std::string cc = json.value("compute_capability", "0.0");
    if (auto dot = cc.find('.'); dot != std::string::npos) {
        facts.cc_major = std::stoi(cc.substr(0, dot));
        facts.cc_minor = std::stoi(cc.substr(dot + 1));
    }
    facts.sm_count = json.value("sm_count", 0);
    facts.max_threads_per_sm = json.value("max_threads_per_sm", 0);
    facts.max_threads_per_block = json.value("max_threads_per_block", 0);
    facts.max_smem_per_block_optin = json.value("max_smem_per_block_optin", 0);
    facts.smem_per_sm = json.value("smem_per_sm", 0);
    facts.regs_per_sm = json.value("regs_per_sm", 0);
    facts.warp_size = json.value("warp_size", 32);
    facts.l2_bytes = json.value("l2_bytes", 0);
    facts.clock_khz = static_cast<int>(json.value("clock_mhz", 0.0) * 1000);
    facts.memory_clock_khz = static_cast<int>(json.value("memory_clock_mhz", 0.0) * 1000);
    facts.memory_bus_bits = json.value("memory_bus_bits", 0);
    facts.total_memory = json.value("total_memory_bytes", int64_t{0});
    std::string driver = json.value("driver_version", "0.0"); // "13.0" from 13000
    if (auto dot = driver.find('.'); dot != std::string::npos)
        facts.driver_version = std::stoi(driver.substr(0, dot)) * 1000 + std::stoi(driver.substr(dot + 1)) * 10;
    return facts;
}

} // namespace kforge
