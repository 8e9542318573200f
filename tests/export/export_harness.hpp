// Checking generated launchers against kforge itself: the CPU half of `kforge export --launcher`'s
// tests. A generated .cu compiled with -DKFORGE_RESOLVE_ONLY is plain C++; a small harness calls
// its kforge_<task>_resolve() on many sizes and prints the plans, which are compared with what
// resolve_plan() (and the launcher's share of check_shape()) say for the same sizes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/candidate.hpp"
#include "core/records.hpp"
#include "core/task.hpp"
#include "export/host_code.hpp"

namespace kforge::test {

// The run record optimize would store for `task`.
RunInfo run_info_for(const Task& task);

// An archive for `task` holding each seed as a correct candidate with its plan's first param
// point; the first seed has the highest fitness (the --best). Returns the candidates' ids.
std::vector<int64_t> build_seed_archive(const std::filesystem::path& path, const Task& task);

// The plan a seed runs with (its own block or the task's default plan).
Plan seed_plan(const Task& task, const KernelFile& seed);

// Free-symbol values in the order of LauncherSignature::sizes.
using SizeValues = std::vector<int64_t>;

// The sizes of a shape, in signature order.
SizeValues sizes_of(const LauncherSignature& sig, const Shape& shape);

// Sizes meant to break things: each size in turn (and all at once) at 0, 1, odd values, 2^31 - 1,
// 2^31, 2^40, 2^62, INT64_MAX and -1, the others at the first bench shape's values.
std::vector<SizeValues> hostile_sizes(const Task& task, const LauncherSignature& sig);

// What kforge says for these sizes, in the harness's text form: "refused <reason>" or the plan.
struct Expected
{
    bool refused = false;
    std::string reason; // kforge's message when refused
    std::string plan;   // the plan as the harness prints it, when not refused
};
Expected kforge_resolution(const Task& task, const Plan& plan, const LauncherSignature& sig,
                           const ParamPoint& point, const SizeValues& sizes);

// Compiles `cu` with g++ -DKFORGE_RESOLVE_ONLY into a harness and runs it on every entry of
// `cases`; returns one answer per case ("refused <reason>" or the plan). Empty when g++ is missing
// (after a visible WARN); a compile error fails the test.
std::vector<std::string> run_resolve_harness(const std::filesystem::path& cu, const Plan& plan,
                                             const LauncherSignature& sig,
                                             const std::vector<SizeValues>& cases,
                                             const std::string& extra_flags = "");

// Compares every case; returns how many were refused for an integer overflow on both sides.
int compare_resolutions(const Task& task, const Plan& plan, const LauncherSignature& sig,
                        const ParamPoint& point, const std::vector<SizeValues>& cases,
                        const std::vector<std::string>& answers);

// nvcc -c -gencode arch=compute_90a,code=sm_90a on `file` (with `flags`); false with a visible WARN when nvcc is missing.
bool check_nvcc_compiles_file(const std::filesystem::path& file, const std::string& flags = "");


} // namespace kforge::test
