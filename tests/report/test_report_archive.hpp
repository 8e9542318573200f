// A synthetic search for the report tests, stored through the archive API in one transaction: any
// number of candidates over several islands, with verdicts, bench measurements, vendor baselines,
// LLM calls and elites on the real 4 x 4 x 4 x 4 descriptor grid. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace kforge::test {

enum class Spending
{
    llm,    // every non-seed candidate comes from a priced LLM call
    builtin // no LLM calls at all: the builtin proposer
};

struct SyntheticRunSpec
{
    int candidates = 300;
    int islands = 4;
    Spending spending = Spending::llm;
    uint64_t seed = 7;
};

// What was stored, for the tests to compare the report against.
struct SyntheticRun
{
    int64_t best_id = 0;
    double best_fitness = 0;
    int64_t elites = 0;  // current occupants, all islands
    int64_t correct = 0;
    int64_t calls = 0;
    double dollars = 0;  // sum of the calls' costs
    std::string best_source;
};

// The vendor baseline stored beside the reference (its medians are the reference's / 1.25).
inline constexpr const char* k_vendor_subject = "cudnn";
inline constexpr double k_vendor_speedup = 1.25;

// The roofline floor stored with the candidates' bench measurements: an eighth of the reference's
// median on each bench shape (in the order of bench_labels()).
double synthetic_roofline_ns(size_t shape);

// How often `needle` occurs in `text` (overlapping occurrences count).
size_t count_occurrences(const std::string& text, const std::string& needle);

// Copies `file` into the folder named by KFORGE_REPORT_SCREENSHOTS, when that is set (CI keeps the
// folder as an artifact to look at the pages and their screenshots).
void keep_for_review(const std::filesystem::path& file);

// Creates `path` (which must not exist) and fills it; the archive is closed on return.
SyntheticRun build_synthetic_run(const std::filesystem::path& path, const SyntheticRunSpec& spec);

// What the report of any archive (synthetic or recorded on a GPU) must show, read through the
// archive API rather than the report's own code.
struct ExpectedPage
{
    std::string title;        // the default title: "kforge report: TASK (RUN_ID)"
    std::string best_speedup; // the headline value: "2.50x", or "none" without a correct candidate
    size_t grid_elites = 0;   // elites whose cell is on the 4 x 4 x 4 x 4 descriptor grid
    size_t islands = 0;       // at least this many islands are drawn (the highest elite island + 1)
};
ExpectedPage expected_page(const std::filesystem::path& archive);

} // namespace kforge::test
