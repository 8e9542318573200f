// What a suite's child runs leave behind (their archives, logs and --json summaries), read by the
// suite supervisor while and after they run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace kforge {

// The GPU busy time and model dollars a run archive records so far (zeros while it has none).
struct ArchiveUse {
    double busy_s = 0;
    double wall_s = 0;   // the GPU's time in the run's sessions, from its start after the baselines
    double cost_usd = 0;
    int64_t candidates = 0;      // measured on the GPU (busy_s is their time)
    int64_t model_calls = 0;     // language-model calls, and
    double model_latency_s = 0;  // their latency, summed
};

// Reads `path` read-only; an archive that is missing or not readable yet gives zeros.
ArchiveUse read_archive_use(const std::filesystem::path& path);

uintmax_t file_size_or_zero(const std::filesystem::path& path);

// The last "error: ..." line the child wrote to `log` after `offset` (its text after "error: "),
// else its last line; "" when it wrote nothing.
std::string last_error_in_log(const std::filesystem::path& log, uintmax_t offset);

// Why a run that exited 0 stopped: the stop text of its --json summary in `out`, else "finished".
std::string stop_text(const std::filesystem::path& out);

void append_to_log(const std::filesystem::path& log, const std::string& text);

} // namespace kforge
