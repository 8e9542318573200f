// A flagged candidate added to the sample run (sample_run.hpp): correct, timed below the roofline
// floor on one bench shape, stored as the search stores one (no fitness; its would-be fitness in
// metrics "suspicious_fitness", the worker's reason in metrics "notes"). Archive, inspect and eval
// tests share it.
#pragma once

#include <cstdint>
#include <filesystem>

namespace kforge::test {

inline constexpr double k_flagged_fitness = 3.9; // what it measured, above the sample run's best

// Adds the flagged candidate to the archive at `path` (built by build_sample_archive) and returns
// its id.
int64_t add_flagged_candidate(const std::filesystem::path& path);

} // namespace kforge::test
