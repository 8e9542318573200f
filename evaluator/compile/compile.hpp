// Compiling candidates with NVRTC (DESIGN.md §6.1).
//
// A candidate is compiled once per param point, to a CUBIN for the exact target arch (sm_90a on
// Hopper). Before NVRTC sees anything, screen_source() refuses what must never compile: an
// #include outside the toolkit's own headers (so a candidate can never read a host file), a pattern
// the task forbids, a plan naming kernels the source lacks. NVRTC's front end cannot be cancelled,
// so compiles run in worker processes (`kforge __worker compile`) that CompilePool kills at a
// deadline. Results are cached on disk by a hash of everything that can change the CUBIN.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/plan.hpp"
#include "core/task.hpp"
#include "core/verdict.hpp"
#include "util/json_reader.hpp"

namespace kforge {

// Resource use of one kernel as reported by ptxas (-Xptxas=-v), or, when NVRTC's log carries no
// report for it, as read from the CUBIN (cubin_info.hpp: registers, stack frame and static shared
// memory; spill byte counts are then unknown and left 0). Sizes are bytes per thread (stack,
// spills) or per block (static shared memory), as ptxas reports them.
struct KernelResources {
    std::string kernel;                 // the name the plan uses (the symbol when it maps to none)
    int registers = 0;
    int spill_store_bytes = 0;
    int spill_load_bytes = 0;
    int stack_frame_bytes = 0;
    int static_smem_bytes = 0;
    int const_bytes = 0;
    int barriers = 0;
    bool from_cubin = false;            // read from the CUBIN, not a ptxas report: spills unknown
};

struct CompileRequest {
    std::string source;                 // the candidate's file as written (plan block included)
    std::string arch = "sm_90a";        // NVRTC -arch value; always a real arch, so a CUBIN comes out
    ParamPoint params;                  // injected as -DNAME=value
    std::vector<std::string> kernels;   // extern "C" kernel names the plan launches
    std::vector<std::string> extra_options; // kforge-internal only (never from a candidate)
};

struct CompileResult {
    bool ok = false;
    VerdictKind failure = VerdictKind::compile_error; // compile_error or timeout when !ok
    std::string message;                // trimmed log for the model (never a host path)
    std::string log;                    // the whole NVRTC log
    std::string cubin;                  // bytes
    std::vector<KernelResources> resources;
    // Each requested kernel name -> its symbol in the CUBIN (for cuModuleGetFunction). Equal for
    // extern "C" kernels; the mangled name otherwise.
    std::map<std::string, std::string> lowered_names;
    double seconds = 0;                 // NVRTC wall time (0 for a cache hit)
    bool cache_hit = false;
    std::string cache_key;
};

// Checks a source before compiling: includes, forbidden patterns, presence of the plan's kernels,
// constructs that defeat the harness (device-side launches, clock reads). Every problem found is
// listed, each with its line. Returns the verdict to store (plan_error when a kernel is missing,
// otherwise compile_error) when the source must not be compiled. evaluator/compile/screen.hpp documents
// each rule and the reward hack it defeats.
std::optional<Verdict> screen_source(const Task& task, const std::string& source,
                                     const std::vector<std::string>& plan_kernels);

// "" when `arch` names a real GPU architecture NVRTC can make a CUBIN for (sm_80, sm_90a,
// sm_100f, ...), otherwise why not. The CLI checks --arch with it (a usage error).
std::string check_arch_name(std::string_view arch);

// The fixed prelude every candidate sees (fixed-width ints, INFINITY, FLT_MAX, ...), given to NVRTC
// as a pre-included header so that the candidate's own line numbers stay its own.
const std::string& candidate_prelude();

// NVRTC in this process. Used by the compile worker and by `kforge doctor`; the GPU worker also
// uses it for kforge's own internal kernels. Never throws for a bad source: the include screen
// (toolkit headers and kforge's shims only) runs here too, so no caller can skip it. Throws
// Error(runtime) only when the toolkit's headers cannot be found or NVRTC itself fails.
// Thread-safe (each call owns its NVRTC program).
CompileResult compile_with_nvrtc(const CompileRequest& request);

// The cache key: source, options (arch, params, include folders, pinned flags), kernel names,
// NVRTC version, a fingerprint of the toolkit headers, the prelude and the shim headers.
std::string compile_cache_key(const CompileRequest& request);

// The folders NVRTC searches, in order: <cuda>/include/cccl, <cuda>/include, where <cuda> is
// $CUDA_HOME when set, else the toolkit kforge was built against. Throws Error(runtime) naming the
// folder when its headers are missing.
std::vector<std::filesystem::path> toolkit_include_dirs();

// "13.0" from nvrtcVersion.
std::string nvrtc_version();

// Parses ptxas -v output in an NVRTC log.
std::vector<KernelResources> parse_ptxas_report(const std::string& log);

struct CompilePoolConfig {
    size_t workers = 0;                               // 0: default_compile_workers(gpus)
    size_t gpus = 1;                                  // GPUs the pool's compiles feed
    std::chrono::milliseconds deadline{60000};        // per compile, from when a worker takes it
    std::filesystem::path cache_dir;                  // empty: no disk cache
    std::string worker_executable;                    // empty: this binary
    // Added to the workers' environment (tests set KFORGE_COMPILE_TEST_HOOKS=1 here).
    std::vector<std::pair<std::string, std::string>> worker_env;
};

// How many compiles may run at once on a host of `cores` cores and `memory_bytes` available (0:
// unknown) whose compiles feed `gpus` GPUs: 4 per GPU, at least 16, at most one per core and as
// many as fit in half the memory (a header-heavy NVRTC compile takes ~250 MB), at least one.
// Why not one per core: compiles slow the processes that drive the GPUs. On 4 x H200 with 64 cores
// one confirmation took 8.7 s on an idle host, 9.2 s beside 63 busy loops and 14.8 s beside NVRTC
// compiles on 63 cores (scripts/gpu/checks/compile-workers.sh). With 64 workers a four-GPU search did 13-14%
// more GPU work than one GPU did (15-20% on 4 x H100) and reached 3.50x; with 16, 0-4% more, and
// 3.82x, its GPUs 94-97% busy, the one-GPU row no slower than with 64
// (bench/results/nvidia-h200-2026-11-26-scale-4gpu-workers.md).
size_t compile_workers_for(size_t cores, size_t memory_bytes, size_t gpus);

// The most workers a pool may be asked for (each is a process and a preparing thread).
constexpr size_t k_max_compile_workers = 1024;

// The default here: $KFORGE_COMPILE_WORKERS when set (a suite gives each of its runs its share of
// the host that way), else compile_workers_for(the CPUs and memory this process may use, gpus):
// util/host_resources.hpp, so a SLURM allocation or a container counts, not the whole node.
size_t default_compile_workers(size_t gpus = 1);

// K compile processes, each a long-lived `kforge __worker compile` that is killed and respawned
// when a compile passes its deadline or the process dies. Thread-safe: several threads may call
// compile() at once; each call blocks until its result (or its deadline). Results come from the
// disk cache when it holds the key; compile errors are cached, timeouts and crashes are not.
// A compile past the deadline yields `timeout`; a worker that dies yields compile_error "the
// compiler crashed (...)"; either way the worker is replaced and the pool keeps serving.
// Destroy the pool only when no compile() is running; the destructor waits for the prefetches
// still running (cancel() first to end them at once) and lets idle workers exit.
class CompilePool
{
public:
    explicit CompilePool(CompilePoolConfig config);
    ~CompilePool();
    CompilePool(const CompilePool&) = delete;
    CompilePool& operator=(const CompilePool&) = delete;

    CompileResult compile(const CompileRequest& request);
    // Starts compiling `request` on a thread of its own and returns at once; a later compile() of
    // the same request takes that result (waiting for it if need be) instead of compiling again.
    // For work known before anyone asks for it: the task's reference and seeds, compiled while the
    // GPUs start and time their baselines. Does nothing when the disk cache holds the result.
    void prefetch(const CompileRequest& request);
    // Stops serving for good: compiles waiting for a worker and compiles in progress end at once
    // (their workers killed) with a compile_error saying kforge is stopping; later calls do the
    // same. For shutdown, when no result will be used: an interrupted session must not wait for
    // NVRTC to finish work nobody will record. Thread-safe.
    void cancel();
    size_t workers() const;
    // Worker processes started so far (the initial ones plus every respawn); for tests and logs.
    size_t spawned() const;
    // Compiles waiting for a free worker now: more than none means the pool is the bottleneck.
    size_t queued() const;

private:
    CompileResult compile_now(const CompileRequest& request, const std::string& key);

    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// The body of `kforge __worker compile`: serves CompileRequests on fds 3/4 until EOF.
int run_compile_worker();

} // namespace kforge
