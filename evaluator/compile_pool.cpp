// CompilePool and the compile worker process (`kforge __worker compile`).
//
// NVRTC's front end cannot be cancelled and its memory and crashes are its own, so compiles run in
// long-lived child processes, one request at a time each, spoken to with framed CBOR over the
// pipes of util/subprocess.hpp. A caller's thread takes an idle worker (starting it on first use),
// sends the request and waits for the reply until the deadline. A worker that misses the deadline
// is SIGKILLed and the result is `timeout`; one that dies mid-compile yields compile_error "the
// compiler crashed (...)". Either way the dead worker is replaced on its next use, so the pool
// keeps serving. The cache is consulted before a worker is taken and filled after it answers.
//
// Workers are started from one thread the pool owns. util/subprocess makes a child die with its
// parent through PR_SET_PDEATHSIG, which Linux ties to the *thread* that spawned the child: a
// worker started by a caller's short-lived thread would be SIGKILLed when that thread ends.
//
// The worker blames nothing on the candidate that is not the candidate's: an exception inside it
// (toolkit headers missing, NVRTC refusing to start) comes back as an internal error, which the
// pool throws as Error(runtime), since every later compile would fail the same way.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/compile_cache.hpp"
#include "evaluator/compile/cubin_info.hpp"
#include "evaluator/compile/compile_record.hpp"
#include "util/error.hpp"
#include "util/host_resources.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"
#include "util/subprocess.hpp"
#include "util/text.hpp"

namespace kforge {

namespace {

// Set to 1 in a worker's environment to honour test hooks: a source containing
// k_crash_marker makes the worker kill itself mid-compile, as a compiler crash would, and one
// containing k_hang_marker makes it hang, as a compile that never ends would, without a core
// spent on it.
constexpr const char* k_test_hooks_env = "KFORGE_COMPILE_TEST_HOOKS";
constexpr std::string_view k_crash_marker = "kforge-test-hook: crash";
constexpr std::string_view k_hang_marker = "kforge-test-hook: hang";

// The niceness compile workers run at. The GPU workers drive the scarce GPUs from the CPU (launches,
// the timing loop's syncs and L2 flushes) and should not wait for a core behind a burst of compiles;
// compiles still take every core nothing else wants. Niceness alone did not stop compiles on every
// core from slowing a four-GPU search: what slows the GPU workers is how many compiles run at once,
// not whether they take the CPU first (compile_workers_for in compile.hpp).
constexpr int k_worker_niceness = 10;

// Memory one worker may need: NVRTC on header-heavy code (cub) peaks near 250 MB.
constexpr size_t k_worker_memory_bytes = size_t{400} << 20;

std::string to_frame(const Json& json)
{
    std::vector<std::uint8_t> bytes = Json::to_cbor(json);
    return std::string(bytes.begin(), bytes.end());
}

// A frame from the other side of the pipe, never trusted: throws std::invalid_argument naming what
// is wrong rather than recursing into whatever nesting it claims.
Json from_frame(const std::string& frame)
{
    std::string problem;
    std::optional<Json> json = try_parse_cbor(frame, problem);
    if (!json)
        throw std::invalid_argument("a compile worker frame is not readable CBOR: " + problem);
    return std::move(*json);
}

// NVRTC looks for a quoted include next to the including file, and the candidate has no folder:
// the working directory stands in. compile_with_nvrtc rewrites the candidate's quoted includes to
// angled ones, and the worker works in "/" besides, where no header names resolve. (Not in a
// deleted temporary folder: NVRTC 13.0 reads past the end of its own buffer when getcwd fails,
// which AddressSanitizer caught.)
void enter_root_directory()
{
    if (::chdir("/") != 0)
        log_warn("compile worker: cannot change to the root directory");
}

// What a worker produced, and whether it may be cached: only what the compiler itself said; a
// timeout or a crash says more about the machine than about the source.
struct WorkerOutcome {
    CompileResult result;
    bool from_compiler = false;
};

WorkerOutcome lost(VerdictKind kind, std::string message)
{
    WorkerOutcome outcome;
    outcome.result.failure = kind;
    outcome.result.message = std::move(message);
    return outcome;
}

// Runs Subprocess::spawn on its own long-lived thread (see the note at the top).
class SpawnThread
{
public:
    SpawnThread() : m_thread([this] { serve(); }) {}
    ~SpawnThread()
    {
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
        }
        m_wake.notify_one();
        m_thread.join();
    }
    SpawnThread(const SpawnThread&) = delete;
    SpawnThread& operator=(const SpawnThread&) = delete;

    // Throws what Subprocess::spawn throws.
    Subprocess spawn(const SpawnSpec& spec)
    {
        std::packaged_task<Subprocess()> task([&spec] { return Subprocess::spawn(spec); });
        auto child = task.get_future();
        {
            std::lock_guard lock(m_mutex);
            m_tasks.push_back(std::move(task));
        }
        m_wake.notify_one();
        return child.get();
    }

private:
    void serve()
    {
        for (;;) {
            std::packaged_task<Subprocess()> task;
            {
                std::unique_lock lock(m_mutex);
                m_wake.wait(lock, [&] { return m_stop || !m_tasks.empty(); });
                if (m_tasks.empty())
                    return;
                task = std::move(m_tasks.front());
                m_tasks.pop_front();
            }
            task();
        }
    }

    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<std::packaged_task<Subprocess()>> m_tasks;
    bool m_stop = false;
    std::thread m_thread;
};

std::string describe_seconds(std::chrono::milliseconds ms) { return fmt::format("{:g} s", ms.count() / 1000.0); }

} // namespace

size_t compile_workers_for(size_t cores, size_t memory_bytes, size_t gpus)
{
    size_t by_memory = memory_bytes == 0 ? cores : memory_bytes / 2 / k_worker_memory_bytes;
    size_t by_gpus = std::max<size_t>(16, 4 * gpus);
    return std::max<size_t>(1, std::min({cores, by_memory, by_gpus}));
}

size_t default_compile_workers(size_t gpus)
{
    if (const char* chosen = std::getenv("KFORGE_COMPILE_WORKERS"); chosen && *chosen) {
        size_t workers = 0;
        std::string_view text(chosen);
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), workers);
        if (ec != std::errc() || end != text.data() + text.size() || workers == 0 || workers > k_max_compile_workers)
            fail(ErrorKind::usage, "KFORGE_COMPILE_WORKERS is '{}': it must be a whole number of workers, 1 to {}",
                 chosen, k_max_compile_workers);
        return workers;
    }
    return compile_workers_for(usable_cpus(), usable_memory_bytes(), gpus);
}

struct CompilePool::Impl {
    SpawnThread spawner; // declared first, so it outlives every worker
    CompilePoolConfig config;
    std::optional<CompileCache> cache;
    std::mutex mutex;
    std::condition_variable released;
    std::vector<std::unique_ptr<Subprocess>> idle;
    std::atomic<size_t> spawned{0};
    std::atomic<size_t> queued{0}; // compile() calls waiting in acquire()
    std::atomic<bool> cancelled{false};
    std::mutex prefetch_mutex;
    std::map<std::string, std::shared_future<CompileResult>> prefetched; // by cache key, kept for the pool's life

    // A free worker, or null once the pool is cancelled.
    std::unique_ptr<Subprocess> acquire()
    {
        std::unique_lock lock(mutex);
        ++queued;
        released.wait(lock, [&] { return !idle.empty() || cancelled; });
        --queued;
        if (cancelled)
            return nullptr;
        auto worker = std::move(idle.back());
        idle.pop_back();
        return worker;
    }

    void release(std::unique_ptr<Subprocess> worker)
    {
        {
            std::lock_guard lock(mutex);
            idle.push_back(std::move(worker));
        }
        released.notify_one();
    }

    void start(Subprocess& worker)
    {
        SpawnSpec spec;
        spec.executable = config.worker_executable;
        spec.args = {"__worker", "compile"};
        spec.env = config.worker_env;
        worker = spawner.spawn(spec);
        ++spawned;
        log_debug("compile pool: started worker {}", worker.pid());
    }

    WorkerOutcome run(Subprocess& worker, const CompileRequest& request)
    {
        std::string frame = to_frame(compile_request_to_json(request));
        if (!worker.running())
            start(worker);
        if (!worker.send(frame)) {
            // It died while idle (e.g. the OOM killer); a fresh one gets the request.
            worker.kill();
            start(worker);
            if (!worker.send(frame))
                return crashed(worker, "it would not take the request");
        }
        // Waits for the reply in short slices, so a cancelled pool stops at once.
        auto deadline = std::chrono::steady_clock::now() + config.deadline;
        for (;;) {
            if (cancelled) {
                worker.kill();
                return lost(VerdictKind::compile_error, "not compiled: kforge is stopping");
            }
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0 || worker.wait_readable(std::min(left, std::chrono::milliseconds(100))))
                break;
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        std::string reply;
        switch (worker.receive(reply, std::max(left, std::chrono::milliseconds(1)))) {
        case ReceiveStatus::ok:
            break;
        case ReceiveStatus::timeout:
            worker.kill();
            return lost(VerdictKind::timeout,
                        fmt::format("the compile did not finish within {} and was stopped; very large unrolled loops "
                                    "or deep template recursion make NVRTC slow",
                                    describe_seconds(config.deadline)));
        case ReceiveStatus::closed:
            return crashed(worker, worker.exit_description());
        case ReceiveStatus::corrupt:
            return crashed(worker, "its reply was unreadable");
        }
        Json json;
        try {
            json = from_frame(reply);
        } catch (const std::exception&) {
            return crashed(worker, "its reply was unreadable");
        }
        if (auto it = json.find("internal_error"); it != json.end())
            fail_runtime("the compile worker failed: {}", it->get<std::string>());
        try {
            return {compile_result_from_json(json), true};
        } catch (const std::exception&) {
            return crashed(worker, "its reply was unreadable");
        }
    }

    WorkerOutcome crashed(Subprocess& worker, const std::string& how)
    {
        worker.kill();
        return lost(VerdictKind::compile_error,
                    fmt::format("the compiler crashed ({}); this is usually an NVRTC bug triggered by the source: "
                                "rewrite the construct changed last",
                                how.empty() ? "no reason given" : how));
    }
};

CompilePool::CompilePool(CompilePoolConfig config) : m_impl(std::make_unique<Impl>())
{
    if (config.workers == 0)
        config.workers = default_compile_workers(config.gpus);
    toolkit_include_dirs(); // fail now, not on the first compile, when the headers are missing
    if (!config.cache_dir.empty())
        m_impl->cache.emplace(config.cache_dir);
    for (size_t i = 0; i < config.workers; ++i)
        m_impl->idle.push_back(std::make_unique<Subprocess>());
    log_debug("compile pool: up to {} compile{} at once, for {} GPU{}", config.workers, config.workers == 1 ? "" : "s",
              config.gpus, config.gpus == 1 ? "" : "s");
    m_impl->config = std::move(config);
}

CompilePool::~CompilePool()
{
    std::map<std::string, std::shared_future<CompileResult>> prefetched;
    {
        std::lock_guard lock(m_impl->prefetch_mutex);
        prefetched.swap(m_impl->prefetched);
    }
    for (auto& [key, result] : prefetched)
        result.wait(); // each holds a worker until it is done
    for (auto& worker : m_impl->idle)
        worker->finish(std::chrono::milliseconds(1000));
}

void CompilePool::cancel()
{
    m_impl->cancelled = true;
    {
        std::lock_guard lock(m_impl->mutex); // a waiter checks `cancelled` under the lock
    }
    m_impl->released.notify_all();
}

size_t CompilePool::workers() const { return m_impl->config.workers; }

size_t CompilePool::spawned() const { return m_impl->spawned; }

size_t CompilePool::queued() const { return m_impl->queued; }

void CompilePool::prefetch(const CompileRequest& request)
{
    std::string key = compile_cache_key(request);
    if (m_impl->cache && m_impl->cache->load(key))
        return;
    std::lock_guard lock(m_impl->prefetch_mutex);
    if (m_impl->prefetched.count(key))
        return;
    m_impl->prefetched.emplace(key, std::async(std::launch::async, [this, request, key] {
                                        return compile_now(request, key);
                                    }).share());
}

CompileResult CompilePool::compile(const CompileRequest& request)
{
    std::string key = compile_cache_key(request);
    std::shared_future<CompileResult> prefetched;
    {
        std::lock_guard lock(m_impl->prefetch_mutex);
        if (auto it = m_impl->prefetched.find(key); it != m_impl->prefetched.end())
            prefetched = it->second;
    }
    if (prefetched.valid()) {
        // Said so the wiring can be checked without timing it: this compile began before it was asked.
        log_debug("compile pool: {} (kernels {}) taken from its compile begun ahead", key.substr(0, 12),
                  join(request.kernels, ", "));
        return prefetched.get();
    }
    return compile_now(request, key);
}

CompileResult CompilePool::compile_now(const CompileRequest& request, const std::string& key)
{
    if (m_impl->cache)
        if (auto hit = m_impl->cache->load(key)) {
            add_cubin_resources(*hit, request.kernels); // entries cached without a ptxas report
            return *hit;
        }
    struct Lease {
        Impl& pool;
        std::unique_ptr<Subprocess> worker;
        ~Lease()
        {
            if (worker)
                pool.release(std::move(worker));
        }
    } lease{*m_impl, m_impl->acquire()};
    if (!lease.worker) {
        CompileResult stopped;
        stopped.failure = VerdictKind::compile_error;
        stopped.message = "not compiled: kforge is stopping";
        stopped.cache_key = key;
        return stopped;
    }
    WorkerOutcome outcome = m_impl->run(*lease.worker, request);
    outcome.result.cache_key = key;
    if (m_impl->cache && outcome.from_compiler)
        m_impl->cache->store(key, outcome.result);
    return outcome.result;
}

int run_compile_worker()
{
    ParentChannel channel = ParentChannel::adopt();
    leave_interrupts_to_controller();
    // Raising one's own niceness needs no privilege; should it fail, compiles run as before.
    if (::setpriority(PRIO_PROCESS, 0, k_worker_niceness) != 0)
        log_debug("compile worker: could not lower its CPU priority: {}", std::strerror(errno));
    enter_root_directory();
    const char* hooks = std::getenv(k_test_hooks_env);
    bool test_hooks = hooks && std::string_view(hooks) == "1";
    while (auto frame = channel.receive()) {
        Json reply;
        try {
            CompileRequest request = compile_request_from_json(from_frame(*frame));
            if (test_hooks && request.source.find(k_crash_marker) != std::string::npos)
                ::kill(::getpid(), SIGKILL);
            while (test_hooks && request.source.find(k_hang_marker) != std::string::npos)
                ::pause();
            reply = compile_result_to_json(compile_with_nvrtc(request), CubinEncoding::binary);
        } catch (const std::exception& e) {
            reply = {{"internal_error", e.what()}};
        }
        if (!channel.send(to_frame(reply)))
            return k_exit_runtime;
    }
    return k_exit_ok;
}

} // namespace kforge
