// The CPUs and memory this process may use, which on a cluster or in a container is less than the
// host has: SLURM's --cpus-per-task shows as the affinity mask, its --mem and a container's --cpus
// and --memory as cgroup limits. Pools sized from std::thread::hardware_concurrency() and
// /proc/meminfo alone would start a worker per host core on a 16-CPU allocation of a 128-core node,
// or be killed by the cgroup's OOM killer hours in.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace kforge {

struct CgroupLimits {
    std::optional<double> cpus;          // CPU quota in CPUs (quota / period); none: no quota
    std::optional<uint64_t> free_bytes;  // memory limit less what the group uses (reclaimable page cache
                                         // counted free); none: no limit
};

// The tightest limits of the cgroup that `self_cgroup` (the text of /proc/self/cgroup) names and of
// every group above it, read under `root` (normally /sys/fs/cgroup): cgroup v2's cpu.max, memory.max,
// memory.current and memory.stat, or v1's cpu and memory controllers. A group path that is not under
// `root` (a container sees only its own subtree) is looked up from its nearest ancestor that is.
CgroupLimits read_cgroup_limits(const std::string& self_cgroup, const std::filesystem::path& root);

// CPUs this process may run on: its affinity mask, capped by its cgroup's quota (rounded up); at
// least one.
size_t usable_cpus();

// Bytes this process may still allocate: MemAvailable, capped by its cgroup's limit less its use;
// 0 when neither can be read.
uint64_t usable_memory_bytes();

} // namespace kforge
