// The CPUs and memory a process may use, from cgroup trees built in a temporary folder the way
// cgroup v2, cgroup v1 and a container's view of either lay them out.
#include "kf_catch.hpp"

#include <fstream>
#include <thread>

#include <sched.h>

#include "test_support.hpp"
#include "util/host_resources.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

namespace fs = std::filesystem;

constexpr uint64_t gib = uint64_t{1} << 30;

void put(const fs::path& path, const std::string& text)
{
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

} // namespace

TEST_CASE("cgroup v2: the tightest CPU quota and memory limit of the group and its ancestors", "[util]")
{
    TempDir root;
    // A SLURM-like job: the job's group limits memory, its step's group the CPUs; the node is open.
    put(root / "cpu.max", "max 100000\n");
    put(root / "memory.max", "max\n");
    put(root / "job_7" / "cpu.max", "max 100000\n");
    put(root / "job_7" / "memory.max", std::to_string(32 * gib) + "\n");
    put(root / "job_7" / "memory.current", std::to_string(12 * gib) + "\n");
    put(root / "job_7" / "memory.stat", "anon 1000\ninactive_file " + std::to_string(2 * gib) + "\nactive_file 5\n");
    put(root / "job_7" / "step_0" / "cpu.max", "1600000 100000\n");
    put(root / "job_7" / "step_0" / "memory.max", "max\n");

    CgroupLimits limits = read_cgroup_limits("0::/job_7/step_0\n", root.path());
    REQUIRE(limits.cpus);
    CHECK(*limits.cpus == Approx(16.0));
    REQUIRE(limits.free_bytes);
    CHECK(*limits.free_bytes == 22 * gib); // 32 GiB less 12 in use, of which 2 are reclaimable page cache

    // No quota anywhere: nothing is limited.
    CgroupLimits open = read_cgroup_limits("0::/\n", root.path());
    CHECK_FALSE(open.cpus);
    CHECK_FALSE(open.free_bytes);

    // A fractional quota stays fractional (callers round up).
    put(root / "half" / "cpu.max", "50000 100000\n");
    CHECK(*read_cgroup_limits("0::/half\n", root.path()).cpus == Approx(0.5));
}

TEST_CASE("cgroup v1: cpu and memory controllers, and a container that sees only its own subtree", "[util]")
{
    TempDir root;
    std::string self = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n";
    // The container's view: its group is the mount's root, the host's path is not there.
    put(root / "cpu,cpuacct" / "cpu.cfs_quota_us", "400000\n");
    put(root / "cpu,cpuacct" / "cpu.cfs_period_us", "100000\n");
    put(root / "memory" / "memory.limit_in_bytes", std::to_string(8 * gib) + "\n");
    put(root / "memory" / "memory.usage_in_bytes", std::to_string(3 * gib) + "\n");
    put(root / "memory" / "memory.stat", "cache 7\ntotal_inactive_file " + std::to_string(gib) + "\n");
    CgroupLimits limits = read_cgroup_limits(self, root.path());
    REQUIRE(limits.cpus);
    CHECK(*limits.cpus == Approx(4.0));
    REQUIRE(limits.free_bytes);
    CHECK(*limits.free_bytes == 6 * gib);

    // Unlimited as v1 writes it (2^63 rounded down to a page) and a quota of -1: no limits.
    TempDir open;
    put(open / "cpu" / "cpu.cfs_quota_us", "-1\n");
    put(open / "cpu" / "cpu.cfs_period_us", "100000\n");
    put(open / "memory" / "memory.limit_in_bytes", "9223372036854771712\n");
    put(open / "memory" / "memory.usage_in_bytes", "3303428096\n");
    CgroupLimits none = read_cgroup_limits("4:memory:/process_api/x\n1:cpu:/\n", open.path());
    CHECK_FALSE(none.cpus);
    CHECK_FALSE(none.free_bytes);
}

TEST_CASE("garbage in the cgroup files or in /proc/self/cgroup limits nothing and throws nothing", "[util]")
{
    TempDir root;
    put(root / "cpu.max", "lots 0\n");
    put(root / "memory.max", "-5\n");
    put(root / "g" / "cpu.max", "\n");
    put(root / "g" / "memory.max", "99999999999999999999999999\n");
    for (const char* self : {"0::/g\n", "0::\n", "garbage\n", "", "::::\n", "0::/../../etc\n"}) {
        INFO(self);
        CgroupLimits limits;
        REQUIRE_NOTHROW(limits = read_cgroup_limits(self, root.path()));
        CHECK_FALSE(limits.cpus);
        CHECK_FALSE(limits.free_bytes);
    }
}

TEST_CASE("this process's usable CPUs and memory are within what the host has", "[util]")
{
    size_t cpus = usable_cpus();
    CHECK(cpus >= 1);
    CHECK(cpus <= std::max(1u, std::thread::hardware_concurrency()));
    CHECK(usable_memory_bytes() > 0); // Linux has MemAvailable
}

TEST_CASE("usable CPUs follow the affinity mask, as under taskset or SLURM's --cpus-per-task", "[util]")
{
    cpu_set_t saved;
    REQUIRE(sched_getaffinity(0, sizeof(saved), &saved) == 0); // this thread's mask
    int first = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE && first < 0; ++cpu)
        if (CPU_ISSET(cpu, &saved))
            first = cpu;
    REQUIRE(first >= 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
    size_t cpus = usable_cpus();
    sched_setaffinity(0, sizeof(saved), &saved);
    CHECK(cpus == 1);
}
