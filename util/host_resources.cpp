// Affinity, MemAvailable and cgroup limits; see the header.
#include "util/host_resources.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <sched.h>

#include "util/text.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// A limit at or above this is "no limit" (cgroup v1 writes 2^63 rounded down to a page).
constexpr uint64_t k_unlimited_bytes = uint64_t{1} << 60;

std::optional<std::string> read_text(const fs::path& path)
{
    std::ifstream in(path);
    if (!in)
        return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::optional<uint64_t> read_number(const fs::path& path)
{
    auto text = read_text(path);
    if (!text)
        return std::nullopt;
    std::string value = trim(*text);
    if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt; // "max", "-1" and the like: no limit
    try {
        return std::stoull(value);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// A key's value in a "key value" per line file (memory.stat).
uint64_t stat_value(const fs::path& path, const std::string& key)
{
    std::ifstream in(path);
    std::string name;
    uint64_t value = 0;
    while (in >> name >> value)
        if (name == key)
            return value;
    return 0;
}

// The group's folder for `path` under `mount`, then each ancestor's, that exists.
std::vector<fs::path> group_folders(const fs::path& mount, const std::string& path)
{
    std::vector<fs::path> folders;
    fs::path group = fs::path(path.empty() ? "/" : path).lexically_normal();
    for (;;) {
        fs::path folder = mount / group.relative_path();
        std::error_code ec;
        if (fs::is_directory(folder, ec))
            folders.push_back(folder);
        if (group == group.root_path() || group.empty())
            break;
        group = group.parent_path();
    }
    return folders;
}

void tighten_cpus(CgroupLimits& limits, double cpus)
{
    if (cpus > 0)
        limits.cpus = limits.cpus ? std::min(*limits.cpus, cpus) : cpus;
}

void tighten_memory(CgroupLimits& limits, uint64_t limit, uint64_t used, uint64_t reclaimable)
{
    if (limit >= k_unlimited_bytes)
        return;
    uint64_t in_use = used > reclaimable ? used - reclaimable : 0;
    uint64_t free = limit > in_use ? limit - in_use : 0;
    limits.free_bytes = limits.free_bytes ? std::min(*limits.free_bytes, free) : free;
}

void read_v2(CgroupLimits& limits, const fs::path& root, const std::string& path)
{
    for (const auto& folder : group_folders(root, path)) {
        if (auto cpu_max = read_text(folder / "cpu.max")) {
            std::istringstream in(*cpu_max);
            std::string quota;
            double period = 0;
            if (in >> quota >> period && quota != "max" && period > 0)
                try {
                    tighten_cpus(limits, std::stod(quota) / period);
                } catch (const std::exception&) {
                }
        }
        if (auto max = read_number(folder / "memory.max"))
            tighten_memory(limits, *max, read_number(folder / "memory.current").value_or(0),
                           stat_value(folder / "memory.stat", "inactive_file"));
    }
}

void read_v1(CgroupLimits& limits, const fs::path& root, const std::string& controllers, const std::string& path)
{
    std::vector<std::string> names = split(controllers, ',');
    // The controllers' mount: "cpu,cpuacct" as listed, or one per controller (often symlinks).
    std::vector<fs::path> mounts{root / controllers};
    for (const auto& name : names)
        mounts.push_back(root / name);
    bool cpu = std::find(names.begin(), names.end(), "cpu") != names.end();
    bool memory = std::find(names.begin(), names.end(), "memory") != names.end();
    for (const auto& mount : mounts) {
        std::error_code ec;
        if (!fs::is_directory(mount, ec))
            continue;
        for (const auto& folder : group_folders(mount, path)) {
            if (cpu) {
                auto quota = read_number(folder / "cpu.cfs_quota_us"), period = read_number(folder / "cpu.cfs_period_us");
                if (quota && period && *period > 0)
                    tighten_cpus(limits, static_cast<double>(*quota) / static_cast<double>(*period));
            }
            if (memory)
                if (auto limit = read_number(folder / "memory.limit_in_bytes"))
                    tighten_memory(limits, *limit, read_number(folder / "memory.usage_in_bytes").value_or(0),
                                   stat_value(folder / "memory.stat", "total_inactive_file"));
        }
        break; // the first mount found is the controllers' own
    }
}

} // namespace

CgroupLimits read_cgroup_limits(const std::string& self_cgroup, const fs::path& root)
{
    CgroupLimits limits;
    std::istringstream lines(self_cgroup);
    std::string line;
    while (std::getline(lines, line)) {
        // hierarchy-ID:controller-list:cgroup-path
        size_t first = line.find(':'), second = first == std::string::npos ? first : line.find(':', first + 1);
        if (second == std::string::npos)
            continue;
        std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
        if (line.substr(0, first) == "0" && controllers.empty())
            read_v2(limits, root, path);
        else if (!controllers.empty())
            read_v1(limits, root, controllers, path);
    }
    return limits;
}

size_t usable_cpus()
{
    size_t cpus = std::max(1u, std::thread::hardware_concurrency());
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof(mask), &mask) == 0 && CPU_COUNT(&mask) > 0)
        cpus = static_cast<size_t>(CPU_COUNT(&mask));
    if (auto self = read_text("/proc/self/cgroup"))
        if (auto quota = read_cgroup_limits(*self, "/sys/fs/cgroup").cpus)
            cpus = std::min(cpus, static_cast<size_t>(std::ceil(*quota)));
    return std::max<size_t>(1, cpus);
}

uint64_t usable_memory_bytes()
{
    uint64_t available = 0;
    std::ifstream meminfo("/proc/meminfo");
    std::string key, unit;
    uint64_t kib = 0;
    while (meminfo >> key >> kib >> unit)
        if (key == "MemAvailable:") {
            available = kib * 1024;
            break;
        }
    if (auto self = read_text("/proc/self/cgroup"))
        if (auto free = read_cgroup_limits(*self, "/sys/fs/cgroup").free_bytes)
            available = std::max<uint64_t>(1, available == 0 ? *free : std::min(available, *free)); // 0 means unknown
    return available;
}

} // namespace kforge
