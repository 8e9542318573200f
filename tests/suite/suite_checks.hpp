// What the suite tests check of a suite folder, shared by the tests that run suites on one machine
// (test_suite_run.cpp) and as a SLURM job array (test_suite_array.cpp): the manifest as it is now,
// how many problems are in a state, how far a problem's run has got, and the report against each
// problem's archive.
#pragma once

#include <filesystem>
#include <cstdint>
#include <optional>
#include <string>

#include "suite/manifest.hpp"

namespace kforge::test {

// The manifest of the suite at `root` as it is now; nullopt while none is written yet.
std::optional<SuiteManifest> suite_manifest_now(const std::filesystem::path& root);

// How many of the suite's problems are in `state`.
int64_t suite_count(const SuiteManifest& manifest, ProblemState state);

// The candidates problem `id`'s archive holds so far; nullopt while it cannot be read yet (not
// created, or mid-creation).
std::optional<int64_t> candidates_so_far(const std::filesystem::path& root, const std::string& id);

// Every problem of `kforge suite report ROOT --json` is finished, and its row (candidates,
// verdicts, best, speedup) equals what `kforge inspect --json` says of its archive; the summary's
// candidates are their sum. Fails the test (Catch2 checks) where not.
void check_report_matches_archives(const std::filesystem::path& root);

} // namespace kforge::test
