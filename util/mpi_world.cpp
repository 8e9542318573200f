// MpiWorld: libkforge_mpi.so loaded on demand and driven from one thread; see mpi_world.hpp.
//
// The MPI thread loops: start the sends other threads queued, send heartbeats, test sends in
// flight, take every message that has arrived (matched probe, then a nonblocking receive into a
// buffer of its size), hand finished receives to their mailboxes, and declare lost any watched
// peer silent past the limit. When a round does nothing it sleeps on a condition variable that
// send() wakes: 100 us while messages came or went in the last two seconds, since MPI says nothing
// when a message arrives and every request relayed to another rank's GPU crosses two such sleeps
// (at the earlier 8 ms, a remote GPU lost about 3% of its time to them); then longer, up to 8 ms,
// so that an idle rank costs next to no CPU. A buffer MPI may still write (a receive from a rank that died mid-message)
// is never freed while MPI lives.
#include "util/mpi_world.hpp"

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "kforge_mpi.h"
#include "util/dynlib.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/subprocess.hpp"
#include "util/text.hpp"

#ifndef KFORGE_MPI_BUILD_NOTE
#define KFORGE_MPI_BUILD_NOTE ""
#endif

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int k_heartbeat_tag = 1;
constexpr const char* k_library_name = "libkforge_mpi.so";
constexpr size_t k_probes_per_round = 64;

std::string env(const char* name)
{
    const char* value = std::getenv(name);
    return value ? trim(value) : std::string();
}

int env_int(const char* name, int fallback)
{
    std::string text = env(name);
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 9)
        return fallback;
    return std::stoi(text);
}

std::chrono::milliseconds peer_timeout()
{
    return std::chrono::milliseconds(1000 * std::max(1, env_int("KFORGE_MPI_PEER_TIMEOUT_S", 10)));
}

struct Api {
    std::unique_ptr<DynamicLibrary> library;
    decltype(&kforge_mpi_abi_version) abi_version = nullptr;
    decltype(&kforge_mpi_init) init = nullptr;
    decltype(&kforge_mpi_isend) isend = nullptr;
    decltype(&kforge_mpi_test) test = nullptr;
    decltype(&kforge_mpi_abandon) abandon = nullptr;
    decltype(&kforge_mpi_probe) probe = nullptr;
    decltype(&kforge_mpi_receive) receive = nullptr;
    decltype(&kforge_mpi_finalize) finalize = nullptr;
    decltype(&kforge_mpi_error_text) error_text = nullptr;

    std::string describe(int code) const
    {
        char text[512] = {};
        error_text(code, text, sizeof text);
        return text;
    }
};

template <typename Function>
void resolve(const DynamicLibrary& library, const char* name, Function& out, const std::string& path)
{
    out = reinterpret_cast<Function>(library.symbol(name));
    if (!out)
        fail_runtime("{} lacks {}: it is not the library this kforge was built with", path, name);
}

Api load_api()
{
    std::string path = env("KFORGE_MPI_LIB");
    if (path.empty())
        path = (std::filesystem::path(self_executable()).parent_path() / k_library_name).string();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        std::string note = KFORGE_MPI_BUILD_NOTE;
        if (!note.empty())
            fail_runtime("this kforge was built without MPI ({}), so it cannot run under an MPI launcher; rebuild it "
                         "with MPI, or start it without mpirun/srun",
                         note);
        fail_runtime("{} is missing: kforge needs it beside the binary (or named by KFORGE_MPI_LIB) to run under an MPI "
                     "launcher",
                     path);
    }
    Api api;
    // Global symbols: Open MPI loads its components with dlopen and they resolve MPI's own symbols
    // through the global scope; never unloaded, since MPI cannot be initialised twice.
    api.library = std::make_unique<DynamicLibrary>(std::initializer_list<const char*>{path.c_str()},
                                                   DynamicLibrary::Scope::global_resident);
    if (!api.library->loaded())
        fail_runtime("cannot load {}: {} (is the MPI runtime it was built against installed?)", path,
                     api.library->error());
    resolve(*api.library, "kforge_mpi_abi_version", api.abi_version, path);
    if (api.abi_version() != KFORGE_MPI_ABI_VERSION)
        fail_runtime("{} has interface version {}, this kforge needs {}: it comes from another build", path,
                     api.abi_version(), KFORGE_MPI_ABI_VERSION);
    resolve(*api.library, "kforge_mpi_init", api.init, path);
    resolve(*api.library, "kforge_mpi_isend", api.isend, path);
    resolve(*api.library, "kforge_mpi_test", api.test, path);
    resolve(*api.library, "kforge_mpi_abandon", api.abandon, path);
    resolve(*api.library, "kforge_mpi_probe", api.probe, path);
    resolve(*api.library, "kforge_mpi_receive", api.receive, path);
    resolve(*api.library, "kforge_mpi_finalize", api.finalize, path);
    resolve(*api.library, "kforge_mpi_error_text", api.error_text, path);
    return api;
}

} // namespace

MpiLaunch detect_mpi_launch()
{
    MpiLaunch launch;
    std::string off = env("KFORGE_MPI");
    if (off == "off" || off == "0")
        return launch;
    if (!env("OMPI_COMM_WORLD_SIZE").empty()) {
        launch.launcher = "Open MPI's mpirun";
        launch.expected_size = env_int("OMPI_COMM_WORLD_SIZE", 0);
        launch.expected_rank = env_int("OMPI_COMM_WORLD_RANK", -1);
        launch.survives_rank_loss = env("OMPI_MCA_orte_enable_recovery") == "1";
        if (!launch.survives_rank_loss)
            launch.rank_loss_warning =
                fmt::format("mpirun was started without --enable-recovery: if one rank dies, Open MPI ends every rank "
                            "(the archive stays resumable). To let the run go on without it: mpirun --enable-recovery "
                            "-n {} kforge ...",
                            launch.expected_size);
    } else if (!env("PMIX_RANK").empty()) {
        launch.launcher = "a PMIx launcher";
        launch.expected_size = env_int("SLURM_STEP_NUM_TASKS", 0);
        launch.expected_rank = env_int("PMIX_RANK", -1);
        if (!env("SLURM_STEP_ID").empty()) {
            launch.launcher = "SLURM's srun --mpi=pmix";
            launch.survives_rank_loss = false;
            launch.rank_loss_warning =
                "under srun --mpi=pmix, SLURM ends the whole job step if one task dies (its PMIx plugin kills the step; "
                "--kill-on-bad-exit=0 does not prevent that). The archive stays resumable: srun ... kforge resume "
                "ARCHIVE. For a run that outlives a lost host, start it inside the allocation with mpirun "
                "--enable-recovery --bind-to none (docs/cluster.md)";
        }
    } else if (!env("PMI_SIZE").empty()) {
        launch.launcher = "a PMI launcher";
        launch.expected_size = env_int("PMI_SIZE", 0);
        launch.expected_rank = env_int("PMI_RANK", -1);
    } else if (!env("SLURM_PROCID").empty() && env_int("SLURM_STEP_NUM_TASKS", 0) > 1) {
        launch.launcher = "SLURM's srun";
        launch.expected_size = env_int("SLURM_STEP_NUM_TASKS", 0);
        launch.expected_rank = env_int("SLURM_PROCID", -1);
    } else {
        return launch;
    }
    // One rank is a plain run: nothing to coordinate, so MPI stays untouched.
    launch.detected = launch.expected_size != 1;
    return launch;
}

struct MpiWorld::Impl {
    struct Transfer {
        int64_t request = 0;
        int peer = 0;
        int tag = 0;
        std::unique_ptr<std::string> bytes;
    };
    struct Outgoing {
        int dest = 0;
        int tag = 0;
        std::string bytes;
    };

    Api api;
    kforge_mpi_world facts{};
    std::string host = host_name();
    std::string library;
    std::chrono::milliseconds timeout = peer_timeout();
    std::chrono::milliseconds beat_interval = std::min<std::chrono::milliseconds>(std::chrono::seconds(1), timeout / 4);
    std::thread thread;

    // Shared with other threads, guarded by `mutex`.
    std::mutex mutex;
    std::condition_variable changed; // init done, a message delivered, a peer lost, finalized
    std::condition_variable wake;    // something to send
    bool init_done = false;
    std::string init_error;
    bool stopping = false;
    bool finalized = false;
    std::chrono::milliseconds grace{2000};
    std::deque<Outgoing> outbox;
    std::map<std::pair<int, int>, std::deque<std::string>> mailboxes;
    std::vector<bool> lost;

    // The MPI thread's own.
    std::vector<Transfer> sends, receives;
    std::vector<int> watched;
    std::vector<Clock::time_point> last_heard, last_beat;
    std::vector<bool> beat_in_flight;
    std::vector<std::unique_ptr<std::string>> graveyard;
    std::string beat_byte = std::string(1, '\0');
    Clock::time_point last_traffic = Clock::now(); // a message (not a heartbeat) sent or arriving

    void run();
    bool round(bool heartbeats);
    bool start_sends();
    void send_heartbeats(Clock::time_point now);
    bool finish_transfers(std::vector<Transfer>& transfers, bool receiving);
    bool take_arrivals();
    void notice_silence(Clock::time_point now);
    void declare_lost(int peer, const std::string& why);
    bool is_lost(int peer)
    {
        std::lock_guard lock(mutex);
        return lost[static_cast<size_t>(peer)];
    }
};

void MpiWorld::Impl::run()
{
    int rc = api.init(&facts);
    {
        std::lock_guard lock(mutex);
        if (rc != 0)
            init_error = api.describe(rc);
        library = facts.library;
        lost.assign(static_cast<size_t>(std::max(facts.size, 1)), false);
        init_done = true;
    }
    changed.notify_all();
    if (rc != 0)
        return;
    auto size = static_cast<size_t>(facts.size);
    last_heard.assign(size, Clock::now());
    last_beat.assign(size, Clock::time_point{});
    beat_in_flight.assign(size, false);
    if (facts.rank == 0)
        for (int peer = 1; peer < facts.size; ++peer)
            watched.push_back(peer);
    else
        watched.push_back(0);

    constexpr auto k_brisk = std::chrono::seconds(2);        // after traffic: poll briskly this long
    constexpr auto k_brisk_nap = std::chrono::microseconds(100);
    auto idle = std::chrono::milliseconds(1);
    for (;;) {
        {
            std::lock_guard lock(mutex);
            if (stopping)
                break;
        }
        if (round(true)) {
            idle = std::chrono::milliseconds(1);
            continue;
        }
        bool brisk = Clock::now() - last_traffic < k_brisk;
        std::unique_lock lock(mutex);
        wake.wait_for(lock, brisk ? std::chrono::duration_cast<std::chrono::microseconds>(k_brisk_nap)
                                  : std::chrono::duration_cast<std::chrono::microseconds>(idle),
                      [this] { return stopping || !outbox.empty(); });
        if (!brisk)
            idle = std::min(idle * 2, std::chrono::milliseconds(8));
    }
    // Deliver what was queued before the stop, giving slow peers `grace`; then let go of the rest.
    auto until = Clock::now() + grace;
    while ((!sends.empty() || !outbox.empty()) && Clock::now() < until) {
        if (!round(false))
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (auto* transfers : {&sends, &receives})
        for (auto& transfer : *transfers) {
            api.abandon(transfer.request);
            graveyard.push_back(std::move(transfer.bytes));
        }
    rc = api.finalize();
    if (rc != 0)
        log_warn("MPI_Finalize failed on rank {}: {}", facts.rank, api.describe(rc));
    {
        std::lock_guard lock(mutex);
        finalized = true;
    }
    changed.notify_all();
}

bool MpiWorld::Impl::round(bool heartbeats)
{
    auto now = Clock::now();
    bool busy = start_sends();
    if (heartbeats)
        send_heartbeats(now);
    busy |= finish_transfers(sends, false);
    busy |= take_arrivals();
    busy |= finish_transfers(receives, true);
    if (heartbeats)
        notice_silence(now);
    return busy;
}

bool MpiWorld::Impl::start_sends()
{
    std::deque<Outgoing> queued;
    {
        std::lock_guard lock(mutex);
        queued.swap(outbox);
    }
    if (!queued.empty())
        last_traffic = Clock::now();
    for (auto& message : queued) {
        if (is_lost(message.dest))
            continue;
        Transfer transfer{0, message.dest, message.tag, std::make_unique<std::string>(std::move(message.bytes))};
        int rc = api.isend(transfer.peer, transfer.tag, transfer.bytes->data(), transfer.bytes->size(), &transfer.request);
        if (rc != 0)
            declare_lost(transfer.peer, "sending to it failed: " + api.describe(rc));
        else
            sends.push_back(std::move(transfer));
    }
    return !queued.empty();
}

void MpiWorld::Impl::send_heartbeats(Clock::time_point now)
{
    for (int peer : watched) {
        auto p = static_cast<size_t>(peer);
        if (beat_in_flight[p] || now - last_beat[p] < beat_interval || is_lost(peer))
            continue;
        Transfer transfer{0, peer, k_heartbeat_tag, nullptr};
        if (api.isend(peer, k_heartbeat_tag, beat_byte.data(), beat_byte.size(), &transfer.request) != 0)
            continue; // silence will tell
        beat_in_flight[p] = true;
        last_beat[p] = now;
        sends.push_back(std::move(transfer));
    }
}

bool MpiWorld::Impl::finish_transfers(std::vector<Transfer>& transfers, bool receiving)
{
    bool busy = false;
    for (size_t i = 0; i < transfers.size();) {
        Transfer& transfer = transfers[i];
        int done = 0;
        int rc = api.test(transfer.request, &done);
        if (rc != 0) {
            declare_lost(transfer.peer, fmt::format("a transfer with it failed: {}", api.describe(rc)));
            graveyard.push_back(std::move(transfer.bytes));
            transfers.erase(transfers.begin() + static_cast<std::ptrdiff_t>(i));
            continue;
        }
        if (!done) {
            ++i;
            continue;
        }
        busy = true;
        if (transfer.tag == k_heartbeat_tag && !receiving)
            beat_in_flight[static_cast<size_t>(transfer.peer)] = false;
        if (receiving) {
            last_heard[static_cast<size_t>(transfer.peer)] = Clock::now();
            if (transfer.tag != k_heartbeat_tag) {
                {
                    std::lock_guard lock(mutex);
                    mailboxes[{transfer.peer, transfer.tag}].push_back(std::move(*transfer.bytes));
                }
                changed.notify_all();
            }
        }
        transfers.erase(transfers.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return busy;
}

bool MpiWorld::Impl::take_arrivals()
{
    bool busy = false;
    for (size_t n = 0; n < k_probes_per_round; ++n) {
        int found = 0, source = 0, tag = 0;
        size_t size = 0;
        int64_t message = 0;
        int rc = api.probe(&found, &source, &tag, &size, &message);
        if (rc != 0) {
            log_warn("MPI rank {}: probing for messages failed: {}", facts.rank, api.describe(rc));
            break;
        }
        if (!found)
            break;
        busy = true;
        last_heard[static_cast<size_t>(source)] = Clock::now();
        if (tag != k_heartbeat_tag)
            last_traffic = last_heard[static_cast<size_t>(source)];
        Transfer transfer{0, source, tag, std::make_unique<std::string>(size, '\0')};
        rc = api.receive(message, transfer.bytes->data(), size, &transfer.request);
        if (rc != 0)
            declare_lost(source, "receiving from it failed: " + api.describe(rc));
        else
            receives.push_back(std::move(transfer));
    }
    return busy;
}

void MpiWorld::Impl::notice_silence(Clock::time_point now)
{
    for (int peer : watched)
        if (!is_lost(peer) && now - last_heard[static_cast<size_t>(peer)] > timeout)
            declare_lost(peer, fmt::format("nothing came from it for {} s", timeout.count() / 1000));
}

void MpiWorld::Impl::declare_lost(int peer, const std::string& why)
{
    {
        std::lock_guard lock(mutex);
        if (lost[static_cast<size_t>(peer)])
            return;
        lost[static_cast<size_t>(peer)] = true;
    }
    log_warn("MPI rank {} is lost ({}); nothing more is sent to it or awaited from it", peer, why);
    for (auto* transfers : {&sends, &receives})
        for (size_t i = 0; i < transfers->size();) {
            Transfer& transfer = (*transfers)[i];
            if (transfer.peer != peer) {
                ++i;
                continue;
            }
            api.abandon(transfer.request);
            graveyard.push_back(std::move(transfer.bytes));
            transfers->erase(transfers->begin() + static_cast<std::ptrdiff_t>(i));
        }
    changed.notify_all();
}

std::unique_ptr<MpiWorld> MpiWorld::join(const MpiLaunch& launch)
{
    auto impl = std::make_unique<Impl>();
    impl->api = load_api();
    Impl* raw = impl.get();
    impl->thread = std::thread([raw] { raw->run(); });
    std::unique_lock lock(impl->mutex);
    impl->changed.wait(lock, [raw] { return raw->init_done; });
    if (!impl->init_error.empty()) {
        lock.unlock();
        impl->thread.join();
        fail_runtime("MPI could not be initialised under {}: {}", launch.launcher, impl->init_error);
    }
    lock.unlock();
    return std::unique_ptr<MpiWorld>(new MpiWorld(std::move(impl)));
}

MpiWorld::MpiWorld(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

MpiWorld::~MpiWorld()
{
    finalize();
}

void MpiWorld::finalize(std::chrono::milliseconds grace)
{
    {
        std::lock_guard lock(m_impl->mutex);
        if (m_impl->stopping)
            return;
        m_impl->stopping = true;
        m_impl->grace = grace;
    }
    m_impl->wake.notify_all();
    if (m_impl->thread.joinable())
        m_impl->thread.join();
}

int MpiWorld::rank() const { return m_impl->facts.rank; }
int MpiWorld::size() const { return m_impl->facts.size; }
int MpiWorld::local_rank() const { return m_impl->facts.local_rank; }
int MpiWorld::local_size() const { return m_impl->facts.local_size; }
const std::string& MpiWorld::host() const { return m_impl->host; }
const std::string& MpiWorld::library() const { return m_impl->library; }

bool MpiWorld::send(int dest, int tag, std::string bytes)
{
    {
        std::lock_guard lock(m_impl->mutex);
        if (m_impl->stopping || dest < 0 || dest >= size() || m_impl->lost[static_cast<size_t>(dest)])
            return false;
        m_impl->outbox.push_back(Impl::Outgoing{dest, tag, std::move(bytes)});
    }
    m_impl->wake.notify_all();
    return true;
}

MpiReceive MpiWorld::receive(int source, int tag, std::string& bytes, std::chrono::milliseconds wait)
{
    std::unique_lock lock(m_impl->mutex);
    auto& box = m_impl->mailboxes[{source, tag}];
    auto lost = [&] {
        return source < 0 || source >= size() || m_impl->lost[static_cast<size_t>(source)] || m_impl->finalized;
    };
    m_impl->changed.wait_for(lock, wait, [&] { return !box.empty() || lost(); });
    if (!box.empty()) {
        bytes = std::move(box.front());
        box.pop_front();
        return MpiReceive::ok;
    }
    return lost() ? MpiReceive::lost : MpiReceive::timeout;
}

bool MpiWorld::alive(int peer) const
{
    std::lock_guard lock(m_impl->mutex);
    return peer >= 0 && peer < size() && !m_impl->lost[static_cast<size_t>(peer)];
}

} // namespace kforge
