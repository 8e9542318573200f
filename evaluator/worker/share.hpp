// Sharing one GPU between several runs (`kforge suite run --per-gpu N`, docs/suite.md).
//
// Why: a run spends its first seconds, for a PyTorch problem tens of them, starting up — its
// processes, CUDA contexts, torch's import, NVRTC and torch.compile compiles — with the GPU idle.
// Two or more runs on one GPU hide one run's start-up behind another's search. Their measurements
// must never overlap: a kernel timed while another process's kernels run on the same GPU is timed
// wrong (the GPU time-slices between contexts, and bandwidth and L2 are shared). So:
//
// - The *measuring lock* (DIR/<uuid>.measure.lock, flock) is held by a GPU worker for every piece
//   of work that runs on the GPU: verifying, timing and profiling a candidate, timing the
//   baselines, the copy-bandwidth probe of its setup, and the requests of its PyTorch reference
//   process that compute or time (which that process serves while the worker waits for it, holding
//   the lock). CPU work — starting processes, importing torch, compiling — is done outside it. A
//   worker holds it one request at a time, so two runs' requests interleave and neither starves.
// - Each hold is appended to DIR/<uuid>.measuring when it ends, as one line
//   "pid begin end waited what" (begin and end in seconds since the epoch, waited the seconds the
//   worker waited for the lock before begin), written while the lock is still held, so lines never
//   interleave and appear in time order. `kforge suite run` computes each GPU's busy share as the
//   union of these intervals; the waits are kept apart (waiting is not measuring).
// - *Search turns* (DIR/<uuid>.search.lock, DIR/<uuid>.search.K.lock for K = 1..N-1), only when a
//   run is told to search in turns (`--gpu-searches N`, suite run's --searches-per-gpu): a run's
//   controller holds one of the N from the end of its start-up (baselines timed) until it ends, so
//   at most N runs search on the GPU at once. By default there are no turns: every run on the GPU
//   searches, since a search spends most of its time waiting for its model, and the measuring lock
//   alone keeps the measurements apart. A run's --time counts its own time less what it waited for
//   the measuring lock, so sharing buys it neither more nor less search than it would get alone.
//
// flock locks die with their process (kill -9 included) and are opened close-on-exec, so neither
// lock outlives its holder nor leaks into the processes a worker starts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "util/file_lock.hpp"

namespace kforge {

enum class GpuShareFile {
    measure_lock,  // <uuid>.measure.lock
    search_turn,   // <uuid>.search.lock (the first turn; search_turn_path for the others)
    measuring_log, // <uuid>.measuring
};

// DIR/<uuid>.<suffix> for `file`.
std::filesystem::path gpu_share_path(const std::filesystem::path& dir, const std::string& uuid, GpuShareFile file);

// The lock file of search turn `k` (0-based) of GPU `uuid`.
std::filesystem::path search_turn_path(const std::filesystem::path& dir, const std::string& uuid, int k);

// One line of the measuring log.
struct MeasuringHold {
    int64_t pid = 0;
    double begin_s = 0;   // seconds since the epoch
    double end_s = 0;
    double waited_s = 0;  // waited for the lock before begin_s
    std::string what;     // "variant", "baselines", "setup", "check_program"
};

std::string format_measuring_hold(const MeasuringHold& hold); // the line, with its newline
// nullopt for a line that is not one (a torn last line of a process killed mid-write, say).
std::optional<MeasuringHold> parse_measuring_hold(std::string_view line);

// The GPU worker's side: holds of the measuring lock, logged. Inert (holds nothing, logs nothing)
// until configure() names a folder; one object per worker process, used from its one thread.
class MeasuringLock
{
public:
    // Told "waiting" just before a hold blocks on another process and "holding" once it holds, so
    // the worker can tell its controller that the time between is no work of its own (the
    // controller's deadlines do not run while it waits).
    using Notice = std::function<void(std::string_view event)>;

    class Hold
    {
    public:
        Hold() = default;
        ~Hold();
        Hold(Hold&& other) noexcept;
        Hold& operator=(Hold&&) = delete;
        Hold(const Hold&) = delete;
        Hold& operator=(const Hold&) = delete;

    private:
        friend class MeasuringLock;
        MeasuringLock* m_owner = nullptr;
        FileLock m_lock;
        MeasuringHold m_record;
    };

    MeasuringLock() = default;
    MeasuringLock(const MeasuringLock&) = delete;
    MeasuringLock& operator=(const MeasuringLock&) = delete;

    // Shares the GPU `uuid` through the files in `dir` (created when missing). Throws
    // Error(runtime) when the folder cannot be made.
    void configure(const std::filesystem::path& dir, const std::string& uuid, Notice notice);
    bool configured() const { return !m_dir.empty(); }

    // Blocks until this process holds the GPU's measuring lock; released (and logged) when the
    // Hold is destroyed. Inside another hold of this object it holds nothing more (a nested hold
    // is free), so callers may take one around any step without knowing what their caller holds.
    Hold hold(std::string what);

    // Seconds spent waiting for the lock since the last call (a reply reports them).
    double take_waited_s();

private:
    void end(Hold& hold);

    std::filesystem::path m_dir;
    std::string m_uuid;
    Notice m_notice;
    int m_depth = 0;
    double m_waited_s = 0;
};

// Seconds since the epoch, with sub-microsecond resolution.
double epoch_seconds();

} // namespace kforge
